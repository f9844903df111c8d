// A fast pass over JSON text nothing will build: the rest of an object the parser is inside of,
// checked to be well formed byte by byte (no token strings, no number conversion), so that the
// report reader can move past a result a fleet check does not judge at memory speed instead of
// lexing it (docs/scale.md: the lexer and strtod were 77% of a fleet check, on bytes it then threw
// away). It never decides that text is malformed: where it is not sure (a syntax error, a nesting
// too deep, a number that could overflow a double, a surrogate escape, text that goes on past the
// bytes it was given) it says so, and the caller lets the parser read the same bytes, which then
// accepts or refuses them exactly as it would have.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace infrabench::model::detail {

struct skimmed_object {
  std::size_t end = 0;                  // the offset of the object's closing brace in the text
  std::vector<std::string_view> found;  // the raw text of each value of a direct member `key`
};

// `text` starts right after a complete member value of an object (or right after its opening
// brace when `after_brace`), at nesting depth 1 of what it skims; values may nest at most
// `max_depth` levels below the object. Returns where the object closes and the values of its
// direct members named `key` (a key written with an escape is not matched: nullopt instead),
// or nullopt when the parser must read the text itself.
[[nodiscard]] std::optional<skimmed_object> skim_object_rest(std::string_view text,
                                                             std::string_view key,
                                                             std::size_t max_depth,
                                                             bool after_brace = false);

}  // namespace infrabench::model::detail
