#include "infrabench/metric_decl.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "infrabench/collective_layout.h"
#include "infrabench/error.h"

namespace infrabench {
namespace {

metric_decl energy_decl(std::string name, std::string unit) {
  const bool joules = unit == "J";
  metric_decl d{std::move(name), std::move(unit), joules ? better::lower : better::higher,
                metric_role::information, false};
  d.kind = joules ? metric_kind::energy : metric_kind::energy_efficiency;
  return d;
}

metric_decl info(std::string name, std::string unit) {
  return {std::move(name), std::move(unit), better::higher, metric_role::information, false};
}

constexpr std::array<std::pair<metric_kind, std::string_view>, 13> kind_names = {{
    {metric_kind::unspecified, "unspecified"},
    {metric_kind::rate, "rate"},
    {metric_kind::time, "time"},
    {metric_kind::size, "size"},
    {metric_kind::count, "count"},
    {metric_kind::ratio, "ratio"},
    {metric_kind::frequency, "frequency"},
    {metric_kind::power, "power"},
    {metric_kind::temperature, "temperature"},
    {metric_kind::energy, "energy"},
    {metric_kind::energy_efficiency, "energy_efficiency"},
    {metric_kind::verification, "verification"},
    {metric_kind::other, "other"},
}};

constexpr std::array<std::pair<relation_kind, std::string_view>, 5> relation_names = {{
    {relation_kind::none, "none"},
    {relation_kind::inverse_of, "inverse_of"},
    {relation_kind::per_thread_of, "per_thread_of"},
    {relation_kind::fraction_of, "fraction_of"},
    {relation_kind::view_of, "view_of"},
}};

constexpr std::array<std::pair<cell_kind, std::string_view>, 2> cell_names = {{
    {cell_kind::none, "none"},
    {cell_kind::peer_rank, "peer_rank"},
}};

constexpr std::array<std::pair<data_hop, std::string_view>, 7> hop_names = {{
    {data_hop::none, "none"},
    {data_hop::storage_read, "storage_read"},
    {data_hop::preprocess, "preprocess"},
    {data_hop::h2d, "h2d"},
    {data_hop::compute, "compute"},
    {data_hop::allreduce, "allreduce"},
    {data_hop::step, "step"},
}};

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& names, E e) {
  for (const auto& [k, n] : names) {
    if (k == e) return n;
  }
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> parse_name(const std::array<std::pair<E, std::string_view>, N>& names,
                            std::string_view text) {
  for (const auto& [k, n] : names) {
    if (n == text) return k;
  }
  return std::nullopt;
}

// Units by the kind of quantity they measure. A unit not listed is `other`: the table grows with
// the units benchmarks declare (tests/e2e/test_shipped_configs.py holds every declared metric but
// information to a kind other than `other`).
struct unit_kind {
  std::string_view unit;
  metric_kind kind;
};
constexpr unit_kind unit_kinds[] = {
    {"GB/s", metric_kind::rate},
    {"GFLOP/s", metric_kind::rate},
    {"TFLOP/s", metric_kind::rate},
    {"IO/s", metric_kind::rate},
    {"samples/s", metric_kind::rate},
    {"tokens/s", metric_kind::rate},
    {"images/s", metric_kind::rate},
    {"instr/cycle", metric_kind::rate},
    {"s", metric_kind::time},
    {"ms", metric_kind::time},
    {"us", metric_kind::time},
    {"ns", metric_kind::time},
    {"B", metric_kind::size},
    {"MiB", metric_kind::size},
    {"count", metric_kind::count},
    {"hosts", metric_kind::count},
    {"ranks", metric_kind::count},
    {"links", metric_kind::count},
    {"lanes", metric_kind::count},
    {"reads", metric_kind::count},
    {"accelerators", metric_kind::count},
    {"%", metric_kind::ratio},
    {"ratio", metric_kind::ratio},
    {"x", metric_kind::ratio},
    {"relative", metric_kind::ratio},
    {"fraction", metric_kind::ratio},
    {"SMs", metric_kind::count},
    {"GHz", metric_kind::frequency},
    {"MHz", metric_kind::frequency},
    {"W", metric_kind::power},
    {"J", metric_kind::energy},
    {"C", metric_kind::temperature},
};

}  // namespace

std::string_view to_string(better b) {
  return b == better::higher ? "higher" : "lower";
}

std::string_view to_string(metric_kind k) {
  return name_of(kind_names, k);
}

std::optional<metric_kind> parse_metric_kind(std::string_view text) {
  return parse_name(kind_names, text);
}

std::string_view to_string(cell_kind k) {
  return name_of(cell_names, k);
}

std::string_view to_string(data_hop h) {
  return name_of(hop_names, h);
}

std::optional<data_hop> parse_data_hop(std::string_view text) {
  return parse_name(hop_names, text);
}

std::string_view to_string(relation_kind k) {
  return name_of(relation_names, k);
}

std::optional<relation_kind> parse_relation_kind(std::string_view text) {
  return parse_name(relation_names, text);
}

metric_kind kind_for_unit(std::string_view unit, metric_role role) {
  if (role == metric_role::verification) return metric_kind::verification;
  for (const auto& u : unit_kinds) {
    if (u.unit == unit) return u.kind;
  }
  // "<item>s/s" of produces_items: a rate whatever the item is called.
  if (unit.size() > 2 && unit.substr(unit.size() - 2) == "/s") return metric_kind::rate;
  // GFLOP/J, GB/J, "<item>s/J" of the energy meter: work per joule.
  if (unit.size() > 2 && unit.substr(unit.size() - 2) == "/J")
    return metric_kind::energy_efficiency;
  return metric_kind::other;
}

nlohmann::json metric_decl_json(const metric_decl& d) {
  const metric_kind kind =
      d.kind == metric_kind::unspecified ? kind_for_unit(d.unit, d.role) : d.kind;
  nlohmann::json j = {{"name", d.name},
                      {"unit", d.unit},
                      {"better", to_string(d.direction)},
                      {"role", to_string(d.role)},
                      {"headline", d.headline},
                      {"kind", to_string(kind)}};
  if (d.relation.kind != relation_kind::none) {
    j["relation"] = {{"kind", to_string(d.relation.kind)}, {"of", d.relation.of}};
  }
  if (d.cell != cell_kind::none) j["cell"] = to_string(d.cell);
  if (d.hop != data_hop::none) j["hop"] = to_string(d.hop);
  return j;
}

namespace {

std::string decl_string(const nlohmann::json& j, const char* key, const std::string& where,
                        const char* fallback = nullptr) {
  const auto it = j.find(key);
  if (it == j.end() && fallback) return fallback;
  if (it == j.end() || !it->is_string())
    throw user_error(where + "." + key + ": expected a string");
  return it->get<std::string>();
}

}  // namespace

metric_decl metric_decl_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw user_error(where + ": expected an object");
  metric_decl d;
  d.name = decl_string(j, "name", where);
  if (d.name.empty()) throw user_error(where + ".name: empty metric name");
  d.unit = decl_string(j, "unit", where, "");
  const std::string dir = decl_string(j, "better", where, "higher");
  if (dir != "higher" && dir != "lower")
    throw user_error(where + ".better: expected \"higher\" or \"lower\", got \"" + dir + "\"");
  d.direction = dir == "higher" ? better::higher : better::lower;
  const auto role = parse_metric_role(decl_string(j, "role", where, "performance"));
  if (!role) throw user_error(where + ".role: not a metric role");
  d.role = *role;
  if (const auto it = j.find("headline"); it != j.end()) {
    if (!it->is_boolean()) throw user_error(where + ".headline: expected true or false");
    d.headline = it->get<bool>();
  }
  const auto kind = parse_metric_kind(decl_string(j, "kind", where, "unspecified"));
  if (!kind) throw user_error(where + ".kind: not a metric kind");
  d.kind = *kind == metric_kind::unspecified ? kind_for_unit(d.unit, d.role) : *kind;
  if (const auto it = j.find("relation"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) throw user_error(where + ".relation: expected an object");
    const auto rk = parse_relation_kind(decl_string(*it, "kind", where + ".relation"));
    if (!rk) throw user_error(where + ".relation.kind: not a relation");
    d.relation = {*rk, decl_string(*it, "of", where + ".relation", "")};
  }
  const auto cell = parse_name(cell_names, decl_string(j, "cell", where, "none"));
  if (!cell) throw user_error(where + ".cell: not a matrix cell kind");
  d.cell = *cell;
  // Absent in reports written before hops were declared: none (docs/roofline.md says how the
  // roofline reads those).
  const auto hop = parse_data_hop(decl_string(j, "hop", where, "none"));
  if (!hop) throw user_error(where + ".hop: not a data-path hop");
  d.hop = *hop;
  return d;
}

bool metric_decl::covers(std::string_view metric_name) const {
  return is_family() ? metric_pattern_matches(name, metric_name) : name == metric_name;
}

metric_decl derived_metric(work_kind kind) {
  if (kind == work_kind::bytes) return {"bandwidth_gbps", "GB/s"};
  return {"gflops", "GFLOP/s"};
}

std::vector<metric_decl> derived_item_metrics(std::string_view item) {
  const std::string i(item);
  metric_decl rate{i + "s_per_s", i + "s/s"};
  metric_decl time{"ns_per_" + i, "ns", better::lower};
  // One timing: the time per item is the rate inverted, not a second measurement.
  time.relation = {relation_kind::inverse_of, rate.name};
  return {rate, time};
}

const std::vector<metric_decl>& telemetry_metric_decls() {
  static const std::vector<metric_decl> decls = {
      info("gpu_sm_clock_mhz_min", "MHz"),
      info("gpu_sm_clock_mhz_median", "MHz"),
      info("gpu_sm_clock_mhz_max", "MHz"),
      info("gpu_temp_c_max", "C"),
      info("gpu_power_w_mean", "W"),
      info("gpu_throttled_fraction", "ratio"),
      info("gpu_throttle_*_fraction", "ratio"),
      info("cpu_freq_mhz_min", "MHz"),
      info("cpu_freq_mhz_median", "MHz"),
      info("cpu_freq_mhz_max", "MHz"),
      info("cpu_package_temp_c_max", "C"),
      info("cpu_package_power_w_mean", "W"),
      // The energy meter (energy.h): joules of the timed window, and work per joule of the
      // device the work ran on.
      energy_decl("gpu_energy_j", "J"),
      energy_decl("gpu_gflop_per_j", "GFLOP/J"),
      energy_decl("gpu_gb_per_j", "GB/J"),
      energy_decl("gpu_*s_per_j", "*s/J"),
      energy_decl("cpu_package_energy_j", "J"),
      energy_decl("cpu_package_gflop_per_j", "GFLOP/J"),
      energy_decl("cpu_package_gb_per_j", "GB/J"),
      energy_decl("cpu_package_*s_per_j", "*s/J"),
  };
  return decls;
}

const metric_decl* find_declaration(const std::vector<metric_decl>& decls,
                                    std::string_view metric_name) {
  // An exact declaration wins over a family that also covers the name.
  for (const auto& d : decls) {
    if (!d.is_family() && d.name == metric_name) return &d;
  }
  for (const auto& d : decls) {
    if (d.is_family() && d.covers(metric_name)) return &d;
  }
  return nullptr;
}

metric_gate headline_gate(const std::vector<metric_decl>* decls, std::string_view metric) {
  if (decls == nullptr || decls->empty())
    return {false, "not gated: the benchmark's metrics are declared nowhere"};
  const auto headline =
      std::find_if(decls->begin(), decls->end(), [](const metric_decl& d) { return d.headline; });
  if (headline == decls->end()) return {false, "not gated: the benchmark declares no headline"};
  const metric_decl* d = find_declaration(*decls, metric);
  if (d != nullptr && d->role != metric_role::performance)
    return {false, std::string(to_string(d->role))};
  if (d != nullptr && d->headline) return {true, ""};
  if (d != nullptr && d->relation.kind != relation_kind::none)
    return {false, std::string(to_string(d->relation.kind)) + " " + d->relation.of};
  return {false, "not the headline: " + headline->name};
}

std::string undeclared_problem(const std::vector<metric_decl>& decls, const metric& m) {
  const metric_decl* d = find_declaration(decls, m.name);
  if (!d)
    return "metric \"" + m.name + "\" is not declared (declared: " + declared_names(decls) + ")";
  const std::string who = "metric \"" + m.name + "\"" +
                          (d->is_family() ? " (declared as \"" + d->name + "\")" : std::string());
  if (d->unit != m.unit) return who + " is in \"" + m.unit + "\", declared \"" + d->unit + "\"";
  const better dir = m.higher_is_better ? better::higher : better::lower;
  if (d->direction != dir) {
    return who + ": " + std::string(to_string(dir)) + " is better, declared " +
           std::string(to_string(d->direction));
  }
  if (d->role != m.role) {
    return who + " has role " + std::string(to_string(m.role)) + ", declared " +
           std::string(to_string(d->role));
  }
  return "";
}

bool patterns_overlap(std::string_view a, std::string_view b) {
  // Whether the languages of two `*` globs intersect: a search over pairs of positions, where a
  // star may consume nothing or one character of the other side.
  std::set<std::pair<std::size_t, std::size_t>> seen;
  std::vector<std::pair<std::size_t, std::size_t>> todo = {{0, 0}};
  while (!todo.empty()) {
    const auto [i, j] = todo.back();
    todo.pop_back();
    if (!seen.insert({i, j}).second) continue;
    if (i == a.size() && j == b.size()) return true;
    const bool sa = i < a.size() && a[i] == '*', sb = j < b.size() && b[j] == '*';
    if (sa) todo.emplace_back(i + 1, j);  // the star matches nothing more
    if (sb) todo.emplace_back(i, j + 1);
    if (sa && j < b.size() && !sb) todo.emplace_back(i, j + 1);  // it takes b's character
    if (sb && i < a.size() && !sa) todo.emplace_back(i + 1, j);
    if (!sa && !sb && i < a.size() && j < b.size() && a[i] == b[j]) todo.emplace_back(i + 1, j + 1);
  }
  return false;
}

std::string declared_names(const std::vector<metric_decl>& decls) {
  std::string out;
  for (const auto& d : decls) out += (out.empty() ? "" : ", ") + d.name;
  return out.empty() ? "none" : out;
}

bool metric_pattern_matches(std::string_view pattern, std::string_view name) {
  // Glob with `*` only: greedy match with backtracking to the last star.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

long long collective_layout::count_of(long long bytes, const std::string& type) const {
  const auto it = type_bytes.find(type);
  return it == type_bytes.end() || it->second <= 0 ? -1 : bytes / it->second;
}

nlohmann::json collective_layout_json(const collective_layout& l) {
  return {{"size_axis", l.size_axis},      {"type_axis", l.type_axis},
          {"op_axis", l.op_axis},          {"placement_axis", l.placement_axis},
          {"in_place", l.in_place},        {"default_type", l.default_type},
          {"type_bytes", l.type_bytes},    {"root", l.root},
          {"time_metric", l.time_metric},  {"algbw_metric", l.algbw_metric},
          {"busbw_metric", l.busbw_metric}};
}

namespace {

// A string field of a collective layout ("" when absent).
std::string layout_string(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) return "";
  if (!it->is_string()) throw user_error(where + "." + key + ": expected a string");
  return it->get<std::string>();
}

}  // namespace

collective_layout collective_layout_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw user_error(where + ": expected an object");
  collective_layout l;
  std::string* fields[] = {&l.size_axis,      &l.type_axis,    &l.op_axis,
                           &l.placement_axis, &l.in_place,     &l.default_type,
                           &l.time_metric,    &l.algbw_metric, &l.busbw_metric};
  const char* keys[] = {"size_axis",    "type_axis",   "op_axis",      "placement_axis", "in_place",
                        "default_type", "time_metric", "algbw_metric", "busbw_metric"};
  for (std::size_t i = 0; i < std::size(keys); ++i) *fields[i] = layout_string(j, keys[i], where);
  const std::string root_key = "root", bytes_key = "type_bytes";
  if (const auto it = j.find(root_key); it != j.end()) {
    if (!it->is_number_integer()) throw user_error(where + ".root: expected an integer");
    l.root = it->get<int>();
  }
  if (const auto it = j.find(bytes_key); it != j.end()) {
    if (!it->is_object()) throw user_error(where + ".type_bytes: expected an object");
    for (const auto& [type, bytes] : it->items()) {
      if (!bytes.is_number_integer())
        throw user_error(where + ".type_bytes." + type + ": expected an integer");
      l.type_bytes[type] = bytes.get<int>();
    }
  }
  return l;
}

}  // namespace infrabench
