// JSON in and out, in one place: every JSON text infrabench reads from its user (a suite, a
// report, a baseline, compare's --meta) is parsed here, with one-line errors and bounds, and every
// JSON text it writes (the report, a baseline, --format json) is made here, so that a byte that is
// not UTF-8 (Linux paths and arguments are bytes) can never throw a finished run away.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace infrabench {

// The deepest nesting of arrays and objects a JSON input may have. infrabench's own files nest
// under 10 levels (report > results > metric > samples). nlohmann's parser is iterative, but
// copying, comparing, dumping and freeing a value recurse once per level: a file nested 150,000
// deep would overflow the stack there instead of being refused.
inline constexpr std::size_t max_json_depth = 64;

// Parses `text` as JSON; `origin` names it in messages (a path, "suite builtin:quick"). Throws
// user_error, one line starting with origin, for an empty text, a syntax error (with its line and
// column), nesting deeper than max_json_depth, or a number beyond a double's range (1e999).
[[nodiscard]] nlohmann::json parse_json_text(std::string_view text, const std::string& origin);

// For JSON infrabench wrote itself and reads back (the history database's columns): the value, or
// a discarded one (is_discarded()) where parse_json_text would throw.
[[nodiscard]] nlohmann::json parse_json_or_discarded(std::string_view text);

// `j` as JSON text, indented by `indent` spaces (-1: one line). The bytes of a string that are
// not UTF-8 (a path typed in Latin-1) are written as U+FFFD instead of failing the whole dump.
[[nodiscard]] std::string json_text(const nlohmann::json& j, int indent = -1);

// `s` with each byte that does not belong to a valid UTF-8 sequence replaced by U+FFFD (for
// formats that must be UTF-8 to be read at all: XML).
[[nodiscard]] std::string valid_utf8(std::string_view s);

}  // namespace infrabench
