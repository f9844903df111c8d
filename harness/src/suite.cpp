#include "infrabench/suite.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/names.h"
#include "infrabench/text_file.h"

namespace infrabench {
namespace detail {
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_suites();
}

namespace {

using json = nlohmann::json;

std::string type_name(const json& j) {
  return j.type_name();
}

double positive_number(const json& j, const std::string& where, const std::string& key) {
  if (!j.is_number()) {
    throw user_error(where + ": \"" + key + "\" must be a number, not " + type_name(j));
  }
  const double v = j.get<double>();
  if (!(v > 0)) throw user_error(where + ": \"" + key + "\" must be positive");
  return v;
}

void check_keys(const json& obj, std::initializer_list<std::string_view> allowed,
                const std::string& where) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw user_error(where + ": unknown key \"" + key + "\" (allowed: " + list + ")");
    }
  }
}

// libstdc++'s default matcher backtracks: `(.*)*(.*)*...x` takes exponential time on a name. Its
// polynomial one (a Thompson NFA) does not, and refuses only back-references, which a filter on
// benchmark names has no use for.
#if defined(__GLIBCXX__)
constexpr auto filter_syntax = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
constexpr auto filter_syntax = std::regex::ECMAScript;
#endif

// A pattern for a message: whole when short, else its start and its length.
std::string shown_pattern(const std::string& pattern) {
  if (pattern.size() <= 80) return "'" + pattern + "'";
  return "'" + pattern.substr(0, 60) + "...' (" + std::to_string(pattern.size()) + " characters)";
}

// How deep the pattern's groups nest: '(' not escaped; a parenthesis in a bracket expression
// counts too, which can only overstate.
std::size_t group_nesting(const std::string& pattern) {
  std::size_t depth = 0, deepest = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      ++i;
    } else if (pattern[i] == '(') {
      deepest = std::max(deepest, ++depth);
    } else if (pattern[i] == ')' && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// A repeat count ("x{n}", "{n,m}") is read by libstdc++ into an int that wraps: 'x{2147483648}'
// matched every benchmark. A name is at most max_name_length (names.h) characters. (Here, not in
// suite.h: a constant there rebuilds everything that includes the runner.)
constexpr std::size_t max_filter_repeat = 1000;

// The number written from `i` on (i moves past it), saturated at SIZE_MAX.
std::size_t read_count(const std::string& pattern, std::size_t& i) {
  std::size_t n = 0;
  for (; i < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[i])); ++i) {
    const auto digit = static_cast<std::size_t>(pattern[i] - '0');
    n = n > (SIZE_MAX - digit) / 10 ? SIZE_MAX : n * 10 + digit;
  }
  return n;
}

// The largest repeat count ("{n}", "{n,}", "{n,m}") outside a bracket expression, saturated at
// SIZE_MAX. libstdc++ reads the count into an int that wraps: 'x{2147483648}' matched every name.
std::size_t largest_repeat(const std::string& pattern) {
  std::size_t largest = 0;
  bool in_bracket = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (in_bracket) {
      in_bracket = c != ']';
    } else if (c == '[') {
      in_bracket = true;
    } else if (c == '{') {
      std::size_t j = i + 1;
      largest = std::max(largest, read_count(pattern, j));
      if (j < pattern.size() && pattern[j] == ',')
        largest = std::max(largest, read_count(pattern, ++j));
    }
  }
  return largest;
}

// libstdc++'s polynomial matcher is linear in the name but slow in the states inside a repeated
// group: `(.?){1000}x` took 14 s on a 256-character name under ASan, `(.{0,30}){32}x` 7 s, while
// `.{0,1000}x` took 0.08 s, and 16 nested groups around `.*x` 0.04 s. What a filter's groups
// weigh: each repeated group's states (bounded repeats expanded) times the repeats around it. At
// the bound below the slowest pattern found takes ~3 s on a longest name under ASan, ~0.3 s
// without; a filter on names needs a few groups.
constexpr std::size_t max_filter_group_weight = 256;
constexpr std::size_t max_filter_groups = 64;

std::size_t saturating_mul(std::size_t a, std::size_t b) {
  return a != 0 && b > SIZE_MAX / a ? SIZE_MAX : a * b;
}
std::size_t saturating_add(std::size_t a, std::size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

// A pattern item's cost: its states once bounded repeats are expanded, its repeated groups' weight,
// and, for a group not yet quantified, its states (they weigh only once the group repeats: nested
// groups alone cost the matcher little).
struct filter_cost {
  std::size_t states = 0;
  std::size_t weight = 0;
  std::size_t group_states = 0;
  void add(const filter_cost& item) {
    states = saturating_add(states, item.states);
    weight = saturating_add(weight, item.weight);
  }
};

// The repeat a quantifier at `i` applies (1 for * + ?), moving i to its last character; 0 when
// there is none at i.
std::size_t quantifier_at(const std::string& pattern, std::size_t& i) {
  const char c = pattern[i];
  if (c == '*' || c == '+' || c == '?') return 1;
  if (c != '{' || i + 1 >= pattern.size() ||
      !std::isdigit(static_cast<unsigned char>(pattern[i + 1])))
    return 0;
  std::size_t j = i + 1;
  std::size_t n = read_count(pattern, j);
  if (j < pattern.size() && pattern[j] == ',') {
    const bool open = j + 1 < pattern.size() && pattern[j + 1] == '}';
    const std::size_t m = read_count(pattern, ++j);
    n = open ? saturating_add(n, 1) : std::max(n, m);
  }
  i = j;  // at the closing '}' (or wherever the count ended: regex_error will say)
  return std::max<std::size_t>(n, 1);
}

// The weight of the pattern's groups and how many there are (see max_filter_group_weight). An
// overestimate where the pattern is unusual (a parenthesis in a bracket, a lazy quantifier).
std::pair<std::size_t, std::size_t> group_weight(const std::string& pattern) {
  std::vector<filter_cost> frames(1);
  filter_cost item;  // the last atom or group, not yet added to its frame
  std::size_t groups = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (const std::size_t k = quantifier_at(pattern, i); k != 0) {
      item.states = saturating_mul(item.states, k);
      item.weight = saturating_mul(saturating_add(item.weight, item.group_states), k);
      item.group_states = 0;
      continue;
    }
    frames.back().add(item);
    item = {};
    if (c == '(') {
      ++groups;
      frames.emplace_back();
    } else if (c == ')' && frames.size() > 1) {
      const filter_cost inner = frames.back();
      frames.pop_back();
      item = {saturating_add(inner.states, 2), inner.weight, inner.states};
    } else if (c != '|' && c != '^' && c != '$') {
      if (c == '\\') ++i;
      if (c == '[') i = std::min(pattern.find(']', i + 2), pattern.size());
      item = {1, 0, 0};
    }
  }
  frames.back().add(item);
  while (frames.size() > 1) {
    const filter_cost inner = frames.back();
    frames.pop_back();
    frames.back().add(inner);
  }
  return {frames.back().weight, groups};
}

}  // namespace

std::regex compile_filter(const std::string& pattern, const std::string& what) {
  if (pattern.size() > max_filter_length) {
    throw user_error(what + " " + shown_pattern(pattern) + ": longer than the " +
                     std::to_string(max_filter_length) + " characters a filter may have");
  }
  if (const auto depth = group_nesting(pattern); depth > max_filter_nesting) {
    throw user_error(what + " " + shown_pattern(pattern) + ": groups nested " +
                     std::to_string(depth) + " deep, deeper than the " +
                     std::to_string(max_filter_nesting) + " a filter may have");
  }
  if (const auto repeat = largest_repeat(pattern); repeat > max_filter_repeat) {
    throw user_error(what + " " + shown_pattern(pattern) + ": a repeat count of " +
                     (repeat == SIZE_MAX ? std::string("more than 2^64") : std::to_string(repeat)) +
                     ", more than the " + std::to_string(max_filter_repeat) + " a filter may have");
  }
  if (const auto [weight, groups] = group_weight(pattern);
      weight > max_filter_group_weight || groups > max_filter_groups) {
    throw user_error(what + " " + shown_pattern(pattern) + ": " + std::to_string(groups) +
                     " group(s) weighing " +
                     (weight == SIZE_MAX ? std::string("more than 2^64") : std::to_string(weight)) +
                     " states with their repeats, more than the " +
                     std::to_string(max_filter_groups) + " groups and " +
                     std::to_string(max_filter_group_weight) +
                     " a filter may have (its match time grows with them)");
  }
  try {
    return std::regex(pattern, filter_syntax);
  } catch (const std::regex_error& e) {
    throw user_error(what + " " + shown_pattern(pattern) +
                     " is not a valid regular expression: " + e.what());
  }
}

std::vector<std::string> builtin_suite_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::builtin_suites()) names.emplace_back(name);
  return names;
}

namespace {

std::string optional_string(const json& doc, const char* key, const std::string& where) {
  if (!doc.contains(key)) return {};
  if (!doc[key].is_string()) throw user_error(where + ": \"" + key + "\" must be a string");
  return doc[key].get<std::string>();
}

void parse_settings(const json& st, const std::string& where, suite& s) {
  if (!st.is_object()) throw user_error(where + ": \"settings\" must be an object");
  check_keys(st, {"min_time_s", "max_time_s", "timeout_s", "target_rel_ci"}, where + " settings");
  if (st.contains("min_time_s"))
    s.min_time_s = positive_number(st["min_time_s"], where, "min_time_s");
  if (st.contains("max_time_s"))
    s.max_time_s = positive_number(st["max_time_s"], where, "max_time_s");
  if (st.contains("timeout_s")) s.timeout_s = positive_number(st["timeout_s"], where, "timeout_s");
  if (st.contains("target_rel_ci"))
    s.target_rel_ci = positive_number(st["target_rel_ci"], where, "target_rel_ci");
}

// One entry of "benchmarks": {"filter": regex, "axes": {name: value or list}}; `ew` names it.
suite_entry parse_entry(const json& e, const std::string& ew) {
  if (!e.is_object()) throw user_error(ew + ": must be an object");
  check_keys(e, {"filter", "axes", "estimate_s"}, ew);
  if (!e.contains("filter") || !e["filter"].is_string()) {
    throw user_error(ew + ": \"filter\" (a regex string) is required");
  }
  suite_entry entry;
  entry.filter = e["filter"].get<std::string>();
  (void)compile_filter(entry.filter, ew + ": \"filter\"");  // refused with the suite
  if (e.contains("estimate_s")) {
    if (!e["estimate_s"].is_number() || !(e["estimate_s"].get<double>() > 0))
      throw user_error(ew + ": \"estimate_s\" must be a number of seconds > 0");
    entry.estimate_s = e["estimate_s"].get<double>();
  }
  if (!e.contains("axes")) return entry;
  if (!e["axes"].is_object()) throw user_error(ew + ": \"axes\" must be an object");
  for (const auto& [name, values] : e["axes"].items()) {
    check_name(name, ew + ": axis");
    const bool scalar = values.is_number() || values.is_string();
    bool list_ok = values.is_array() && !values.empty();
    if (list_ok) {
      for (const auto& v : values) list_ok = list_ok && (v.is_number() || v.is_string());
    }
    if (!scalar && !list_ok) {
      throw user_error(ew + ": axis \"" + name +
                       "\" must be a number, a string or a non-empty list of them");
    }
    entry.axes.emplace_back(name, values);
  }
  return entry;
}

}  // namespace

suite parse_suite(const std::string& text, const std::string& source) {
  const std::string where = "suite " + source;
  const json doc = parse_json_text(text, where);
  if (!doc.is_object()) throw user_error(where + ": the top level must be an object");
  check_keys(doc, {"$schema", "name", "description", "settings", "benchmarks"}, where);
  suite s;
  s.source = source;
  if (doc.contains("name")) s.name = optional_string(doc, "name", where);
  s.description = optional_string(doc, "description", where);
  if (doc.contains("settings")) parse_settings(doc["settings"], where, s);
  if (!doc.contains("benchmarks"))
    throw user_error(where + ": missing \"benchmarks\" (a list of {\"filter\": ...})");
  const auto& list = doc["benchmarks"];
  if (!list.is_array()) throw user_error(where + ": \"benchmarks\" must be an array");
  if (list.empty()) throw user_error(where + ": \"benchmarks\" is empty");
  for (std::size_t i = 0; i < list.size(); ++i) {
    s.entries.push_back(parse_entry(list[i], where + " benchmarks[" + std::to_string(i) + "]"));
  }
  return s;
}

namespace {

suite load_suite_file(const std::string& arg) {
  std::error_code ec;
  if (!std::filesystem::exists(arg, ec)) throw user_error("suite file " + arg + ": does not exist");
  if (std::filesystem::is_directory(arg, ec))
    throw user_error("suite file " + arg + ": is a directory");
  const std::string text = read_text_file(arg, "suite file", std::size_t{16} << 20);
  suite s = parse_suite(text, arg);
  if (s.name.empty()) s.name = std::filesystem::path(arg).stem().string();
  return s;
}

}  // namespace

// A path (a '/' or .json) is a file; any other name is a built-in suite first, and a file of that
// name in the working directory only when no built-in has it: a directory ./acceptance or a file
// ./quick once shadowed the built-in suites (give ./quick for the file).
suite load_suite(std::string_view name_or_path) {
  const std::string arg(name_or_path);
  if (arg.find('/') != std::string::npos || arg.ends_with(".json")) return load_suite_file(arg);
  for (const auto& [name, text] : detail::builtin_suites()) {
    if (name == arg) {
      suite s = parse_suite(std::string(text), "builtin:" + arg);
      s.source = "builtin";
      if (s.name.empty()) s.name = arg;
      return s;
    }
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) return load_suite_file(arg);
  std::string names;
  for (const auto& n : builtin_suite_names()) names += (names.empty() ? "" : ", ") + n;
  throw user_error("no suite named '" + arg + "' (built-in: " + names +
                   ") and no such file (give a path, ./" + arg + ", for a file)");
}

std::string suite_axis_text(const nlohmann::json& values) {
  auto one = [](const json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    return json_text(v);
  };
  if (!values.is_array()) return one(values);
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + one(v);
  return out;
}

}  // namespace infrabench
