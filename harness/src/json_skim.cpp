// The skimmer (json_skim.h): RFC 8259's grammar as nlohmann's parser applies it, recursive descent
// over bytes with a position and a depth. Every branch that meets something it does not accept
// with certainty returns "not sure", never "malformed": the parser has the last word on errors.
#include "json_skim.h"

#include <cstdint>

namespace infrabench::model::detail {
namespace {

// Digits before an exponent plus the exponent: a number above 10^300 may overflow a double, which
// the parser refuses (it holds 1.8e308). Those few are left to it.
constexpr long max_decimal_magnitude = 300;

class skimmer {
 public:
  skimmer(std::string_view text, std::string_view key, std::size_t max_depth)
      : m_text(text), m_key(key), m_max_depth(max_depth) {}

  // The members after a value (or after the brace), up to the closing brace.
  bool object_rest(bool after_brace, skimmed_object& out) {
    space();
    if (after_brace && peek() == '}') return close_at(out);
    if (!after_brace) {
      if (peek() == '}') return close_at(out);
      if (!take(',')) return false;
    }
    while (true) {
      if (!member(&out.found)) return false;
      space();
      if (peek() == '}') return close_at(out);
      if (!take(',')) return false;
    }
  }

 private:
  [[nodiscard]] int peek() const {
    return m_at < m_text.size() ? static_cast<unsigned char>(m_text[m_at]) : -1;
  }
  bool take(char c) {
    if (peek() != static_cast<unsigned char>(c)) return false;
    ++m_at;
    return true;
  }
  void space() {
    while (m_at < m_text.size()) {
      const char c = m_text[m_at];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++m_at;
    }
  }
  bool close_at(skimmed_object& out) const {
    out.end = m_at;
    return true;
  }

  // One member: "key": value, its value's text kept when the key is `key` (found != nullptr: a
  // member of the object skimmed, not of one nested in it).
  bool member(std::vector<std::string_view>* found) {
    space();
    const std::size_t key_start = m_at;
    bool escaped = false;
    if (!string(&escaped)) return false;
    const std::string_view raw = m_text.substr(key_start + 1, m_at - key_start - 2);
    space();
    if (!take(':')) return false;
    space();
    const std::size_t value_start = m_at;
    if (!value()) return false;
    if (found == nullptr) return true;
    // A key spelled with an escape may still be `key` ("h\u006fst"): only the parser can say.
    if (escaped) return false;
    if (raw == m_key) found->push_back(m_text.substr(value_start, m_at - value_start));
    return true;
  }

  bool value() {
    switch (peek()) {
      case '{':
        return container('}');
      case '[':
        return container(']');
      case '"':
        return string(nullptr);
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  bool container(char closing) {
    if (++m_depth > m_max_depth) return false;
    ++m_at;
    space();
    if (!take(closing)) {
      while (true) {
        if (!(closing == '}' ? member(nullptr) : value())) return false;
        space();
        if (take(closing)) break;
        if (!take(',')) return false;
        space();
      }
    }
    --m_depth;
    return true;
  }

  bool literal(std::string_view word) {
    if (m_text.substr(m_at, word.size()) != word) return false;
    m_at += word.size();
    return true;
  }

  std::size_t digits() {
    const std::size_t start = m_at;
    while (peek() >= '0' && peek() <= '9') ++m_at;
    return m_at - start;
  }

  bool number() {
    take('-');
    std::size_t whole = 0;
    if (take('0')) {
      whole = 1;
    } else {
      if (peek() < '1' || peek() > '9') return false;
      whole = digits();
    }
    if (take('.') && digits() == 0) return false;
    long exponent = 0;
    if (take('e') || take('E')) {
      const bool negative = take('-');
      if (!negative) take('+');
      const std::size_t start = m_at, n = digits();
      if (n == 0 || n > 3) return false;  // 1e1000 and its like: the parser's call
      for (std::size_t i = start; i < m_at; ++i) exponent = exponent * 10 + (m_text[i] - '0');
      if (negative) exponent = 0;
    }
    return static_cast<long>(whole) + exponent <= max_decimal_magnitude;
  }

  // A string from its opening quote; *escaped (when given) says whether it held an escape.
  bool string(bool* escaped) {
    if (!take('"')) return false;
    while (m_at < m_text.size()) {
      const auto c = static_cast<unsigned char>(m_text[m_at]);
      if (c == '"') {
        ++m_at;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (escaped != nullptr) *escaped = true;
        if (!escape()) return false;
        continue;
      }
      if (c >= 0x80) {
        if (!utf8()) return false;
        continue;
      }
      ++m_at;
    }
    return false;  // the bytes end inside it
  }

  bool escape() {
    ++m_at;
    switch (peek()) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        ++m_at;
        return true;
      case 'u':
        break;
      default:
        return false;
    }
    ++m_at;
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const int c = peek();
      unsigned d = 0;
      if (c >= '0' && c <= '9')
        d = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = static_cast<unsigned>(c - 'A' + 10);
      else
        return false;
      code = code * 16 + d;
      ++m_at;
    }
    return code < 0xD800 || code > 0xDFFF;  // a surrogate (pair or not): the parser's call
  }

  // One UTF-8 sequence of two to four bytes, as RFC 3629 allows them (no overlong form, no
  // surrogate, nothing above U+10FFFF): what the parser accepts in a string.
  bool utf8() {
    const auto lead = static_cast<unsigned char>(m_text[m_at]);
    unsigned char lo = 0x80, hi = 0xBF;
    std::size_t more = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      more = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      more = 2;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      more = 3;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    ++m_at;
    for (std::size_t i = 0; i < more; ++i, ++m_at) {
      const int c = peek();
      if (c < (i == 0 ? lo : 0x80) || c > (i == 0 ? hi : 0xBF)) return false;
    }
    return true;
  }

  std::string_view m_text, m_key;
  std::size_t m_max_depth, m_depth = 0, m_at = 0;
};

}  // namespace

std::optional<skimmed_object> skim_object_rest(std::string_view text, std::string_view key,
                                               std::size_t max_depth, bool after_brace) {
  if (key.empty()) return std::nullopt;
  skimmed_object out;
  skimmer s(text, key, max_depth);
  if (!s.object_rest(after_brace, out)) return std::nullopt;
  return out;
}

}  // namespace infrabench::model::detail
