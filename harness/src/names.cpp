#include "infrabench/names.h"

#include <cstdio>

#include "infrabench/error.h"

namespace infrabench {
namespace {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

std::string visible(char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
  return buf;
}

}  // namespace

bool has_control(std::string_view text) {
  for (const char c : text)
    if (is_control(c)) return true;
  return false;
}

std::string printable_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (is_control(c))
      out += visible(c);
    else
      out += c;
  }
  return out;
}

std::string name_problem(std::string_view name) {
  if (name.size() > max_name_length) {
    return "longer than the " + std::to_string(max_name_length) + " characters a name may have";
  }
  for (const char c : name)
    if (is_control(c)) return "holds a control character (" + visible(c) + ")";
  return {};
}

std::string shown_name(std::string_view name) {
  if (name.size() <= 80) return "'" + printable_line(name) + "'";
  return "'" + printable_line(name.substr(0, 60)) + "...' (" + std::to_string(name.size()) +
         " characters)";
}

void check_name(std::string_view name, const std::string& what) {
  const std::string problem = name_problem(name);
  if (!problem.empty()) throw user_error(what + " " + shown_name(name) + ": " + problem);
}

}  // namespace infrabench
