#include "infrabench/json_io.h"

#include <optional>

#include "infrabench/error.h"

namespace infrabench {
namespace {

using json = nlohmann::json;

std::string position_text(std::string_view text, std::size_t byte_offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < text.size() && i < byte_offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// The byte offset of the first bracket that nests deeper than max_json_depth, if any. Brackets
// inside strings do not count; a text that is not JSON at all is left to the parser to refuse.
std::optional<std::size_t> too_deep_at(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, whatever it is
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_json_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at ..." prefix.
std::string reason_of(const json::exception& e) {
  std::string what = e.what();
  const auto close = what.find("] ");
  if (close != std::string::npos) what = what.substr(close + 2);
  return what;
}

// What a UTF-8 lead byte starts: the sequence's length (0: not a lead byte) and the range its
// second byte must be in, which rules out overlong forms, surrogates and code points above
// U+10FFFF (RFC 3629's table).
struct utf8_lead {
  std::size_t length = 0;
  unsigned char second_lo = 0x80, second_hi = 0xBF;
};

utf8_lead lead_of(unsigned char b) {
  if (b < 0x80) return {1};
  if (b >= 0xC2 && b <= 0xDF) return {2};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {};
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw user_error(origin + ": empty file, expected JSON");
  }
  if (const auto at = too_deep_at(text)) {
    throw user_error(origin + ": JSON nested deeper than " + std::to_string(max_json_depth) +
                     " levels at " + position_text(text, *at) + ": not an infrabench file");
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    const bool truncated = e.byte >= text.size();
    throw user_error(origin + ": " +
                     (truncated ? "truncated JSON (ends early), " : "invalid JSON at ") +
                     position_text(text, e.byte == 0 ? 0 : e.byte - 1) + ": " + reason_of(e));
  } catch (const json::exception& e) {
    // A number beyond double's range (1e999): syntactically JSON, but not a value we can hold.
    throw user_error(origin + ": unreadable JSON: " + reason_of(e));
  }
}

json parse_json_or_discarded(std::string_view text) {
  if (too_deep_at(text)) return json(json::value_t::discarded);
  try {
    return json::parse(text.begin(), text.end(), nullptr, false);
  } catch (const json::exception&) {
    return json(json::value_t::discarded);  // out of range: allow_exceptions does not cover it
  }
}

std::string json_text(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string valid_utf8(std::string_view s) {
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const utf8_lead lead = lead_of(static_cast<unsigned char>(s[i]));
    bool ok = lead.length > 0 && i + lead.length <= s.size();
    for (std::size_t k = 1; ok && k < lead.length; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      ok = k == 1 ? (c >= lead.second_lo && c <= lead.second_hi) : (c >= 0x80 && c <= 0xBF);
    }
    if (ok) {
      out.append(s.substr(i, lead.length));
      i += lead.length;
    } else {
      out += replacement;
      ++i;
    }
  }
  return out;
}

}  // namespace infrabench
