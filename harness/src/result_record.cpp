// The model's reader and writer of a result record (model/result_record.h): result::to_json and
// result_from_record, kept together so that what one writes the other reads back whole.
#include "infrabench/model/result_record.h"

#include <cmath>
#include <limits>
#include <string>

#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/stats.h"

namespace infrabench {

namespace {

using json = nlohmann::json;

json codes_json(const std::vector<std::string>& reasons, const std::vector<reason_code>& codes) {
  // One code per reason; a reason pushed without one (not through mark_invalid) is check_failed.
  json out = json::array();
  for (std::size_t i = 0; i < reasons.size(); ++i)
    out.push_back(to_string(i < codes.size() ? codes[i] : reason_code::check_failed));
  return out;
}

// The outcome: status, the reason and its code, validity with a code per invalid reason.
void outcome_to_json(const result& r, json& j) {
  j["status"] = to_string(r.st);
  if (!r.reason.empty()) {
    j["reason"] = r.reason;
    // A reason set without a code (directly on the struct) still gets one a reader can use.
    const reason_code fallback =
        r.st == status::skipped ? reason_code::unsupported : reason_code::error;
    j["reason_code"] = to_string(r.code == reason_code::none ? fallback : r.code);
  }
  j["valid"] = r.valid;
  j["invalid_reasons"] = r.invalid_reasons;
  j["invalid_reason_codes"] = codes_json(r.invalid_reasons, r.invalid_codes);
  j["warnings"] = r.warnings;
  if (!r.withheld.empty()) j["withheld"] = r.withheld;
  if (r.simulated) j["simulated"] = true;
  if (!r.not_verified.empty()) j["not_verified"] = r.not_verified;
  // With or without samples: a benchmark that measures over a set time (a stress) records the
  // load over it too.
  if (r.load && r.load->known) j["sampling_load"] = r.load->to_json();
  if (r.storage) j["storage_location"] = to_json(*r.storage);
}

// The samples and how they were taken (only when there are samples).
void samples_to_json(const result& r, json& j) {
  if (r.samples_s.empty()) return;
  j["timer"] = r.timer;
  j["iterations_per_sample"] = r.iterations_per_sample;
  j["stop_reason"] = r.stop_reason;
  // A configuration stopped early (timeout, failure) may have samples it never summarized.
  j["time_s"] = (r.time.n > 0 ? r.time : summarize(r.samples_s)).to_json();
  j["samples_s"] = r.samples_s;
}

json metric_to_json(const metric& m) {
  json j = {{"name", m.name},
            {"unit", m.unit},
            {"value", m.value},
            {"best", m.best},
            {"better", m.higher_is_better ? "higher" : "lower"},
            {"method", m.method},
            {"role", to_string(m.role)},
            {"samples", m.samples}};
  if (m.hint != metric_hint::none) j["hint"] = to_string(m.hint);
  if (m.repetitions) j["repetitions"] = *m.repetitions;
  if (!m.gpus.empty()) j["gpus"] = m.gpus;
  return j;
}

json repetition_to_json(const repetition_record& r) {
  json j = {{"status", to_string(r.st)},
            {"valid", r.valid},
            {"invalid_reasons", r.invalid_reasons},
            {"invalid_reason_codes", codes_json(r.invalid_reasons, r.invalid_codes)},
            {"elapsed_s", r.elapsed_s}};
  if (r.stop_reason) j["stop_reason"] = *r.stop_reason;
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

json cell_to_json(const result_cell& c) {
  json cell = {{"column", c.column}, {"status", c.measured ? "measured" : "n/a"}};
  if (!c.measured) {
    cell["reason"] = c.reason;
    cell["error"] = c.error;
  }
  return cell;
}

}  // namespace

nlohmann::json result::to_json() const {
  json j;
  j["benchmark"] = benchmark;
  json ax = json::object();
  for (const auto& [name, value] : axes) ax[name] = value;
  j["axes"] = ax;
  json disp = json::object();
  for (std::size_t i = 0; i < axes.size() && i < axis_display.size(); ++i)
    disp[axes[i].first] = axis_display[i];
  j["axes_display"] = disp;
  outcome_to_json(*this, j);
  j["rank"] = rank;
  j["host"] = host;
  if (gpu >= 0) j["gpu"] = gpu;
  if (!failed_gpus.empty()) j["failed_gpus"] = failed_gpus;
  j["elapsed_s"] = elapsed_s;
  samples_to_json(*this, j);
  j["work_per_iteration"] = {{"bytes_read", work.bytes_read},
                             {"bytes_written", work.bytes_written},
                             {"flops", work.flops},
                             {"items", work.items},
                             {"item_name", work.item_name}};
  json ms = json::array();
  for (const auto& m : metrics) ms.push_back(metric_to_json(m));
  j["metrics"] = ms;
  if (!cells.empty()) {
    json cs = json::array();
    for (const auto& c : cells) cs.push_back(cell_to_json(c));
    j["cells"] = cs;
  }
  if (repetitions) {
    json reps = json::array();
    for (const auto& rep : *repetitions) reps.push_back(repetition_to_json(rep));
    j["repetitions"] = reps;
  }
  return j;
}

}  // namespace infrabench

namespace infrabench {

namespace {

using json = nlohmann::json;

// The text members of the report's object, in the order written.
constexpr std::pair<const char*, std::string storage_location::*> text_members[] = {
    {"given", &storage_location::given},
    {"path", &storage_location::path},
    {"file", &storage_location::file},
    {"filesystem", &storage_location::filesystem},
    {"mount_point", &storage_location::mount_point},
    {"mount_source", &storage_location::mount_source},
    {"device", &storage_location::device},
    {"device_number", &storage_location::device_number},
    {"device_mapper_name", &storage_location::device_mapper_name},
    {"disk", &storage_location::disk},
    {"model", &storage_location::model},
    {"driver", &storage_location::driver}};

}  // namespace

json to_json(const storage_location& l) {
  json j = json::object();
  for (const auto& [name, member] : text_members) {
    if (!(l.*member).empty()) j[name] = l.*member;
  }
  if (l.kind) j["kind"] = std::string(to_string(*l.kind));
  if (l.rotational) j["rotational"] = *l.rotational;
  if (l.logical_block_size) j["logical_block_size"] = *l.logical_block_size;
  if (!l.unknown.empty()) j["unknown"] = l.unknown;
  return j;
}

storage_location storage_location_of(const json& j) {
  if (!j.is_object()) throw user_error("storage_location: expected an object");
  storage_location l;
  try {
    for (const auto& [name, member] : text_members) {
      if (const auto it = j.find(name); it != j.end()) l.*member = it->get<std::string>();
    }
    if (const auto it = j.find("kind"); it != j.end())
      l.kind = parse_location_kind(it->get<std::string>());  // another version's: unset
    if (const auto it = j.find("rotational"); it != j.end()) l.rotational = it->get<bool>();
    if (const auto it = j.find("logical_block_size"); it != j.end())
      l.logical_block_size = it->get<std::int64_t>();
    if (const auto it = j.find("unknown"); it != j.end())
      l.unknown = it->get<std::map<std::string, std::string>>();
  } catch (const json::exception& e) {
    throw user_error("storage_location: " + std::string(e.what()));
  }
  return l;
}

bool set_storage_location_member(storage_location& l, const std::string& name, const json& value) {
  for (const auto& [n, member] : text_members) {
    if (name != n) continue;
    if (!value.is_string()) return false;
    l.*member = value.get<std::string>();
    return true;
  }
  if (name == "kind" && value.is_string()) {
    l.kind = parse_location_kind(value.get<std::string>());
    return true;
  }
  if (name == "rotational" && value.is_boolean()) {
    l.rotational = value.get<bool>();
    return true;
  }
  if (name == "logical_block_size" && value.is_number_integer()) {
    l.logical_block_size = value.get<std::int64_t>();
    return true;
  }
  // Another version's member is ignored; a known one of the wrong type is refused.
  return name != "kind" && name != "rotational" && name != "logical_block_size";
}

}  // namespace infrabench

namespace infrabench::model {
namespace {

using json = nlohmann::json;

// A number as the writer wrote it: null stands for a value it could not compute (NaN).
double number(const json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

std::vector<double> numbers(const json& j) {
  std::vector<double> out;
  for (const auto& v : j) out.push_back(number(v));
  return out;
}

std::vector<std::string> strings(const json& j) {
  return j.get<std::vector<std::string>>();
}

status status_of(const std::string& text) {
  for (const auto s : {status::passed, status::skipped, status::failed})
    if (to_string(s) == text) return s;
  throw user_error("status \"" + text + "\" is not passed, skipped or failed");
}

reason_code code_of(const std::string& text) {
  const auto c = parse_reason_code(text);
  if (!c) throw user_error("reason code \"" + text + "\" is not one this infrabench knows");
  return *c;
}

std::vector<reason_code> codes_of(const json& codes) {
  std::vector<reason_code> out;
  for (const auto& c : codes) out.push_back(code_of(c.get<std::string>()));
  return out;
}

summary summary_of(const json& t) {
  summary s;
  s.n = t.at("n").get<std::size_t>();
  s.min = number(t.at("min"));
  s.max = number(t.at("max"));
  s.mean = number(t.at("mean"));
  s.median = number(t.at("median"));
  s.p90 = number(t.at("p90"));
  s.p99 = number(t.at("p99"));
  s.stdev = number(t.at("stdev"));
  s.cv = number(t.at("cv"));
  s.robust_cv = number(t.at("robust_cv"));
  s.median_ci_low = number(t.at("median_ci95").at(0));
  s.median_ci_high = number(t.at("median_ci95").at(1));
  s.mean_ci_low = number(t.at("mean_ci95").at(0));
  s.mean_ci_high = number(t.at("mean_ci95").at(1));
  return s;
}

sampling_load load_of(const json& l) {
  sampling_load s;
  s.wall_s = number(l.at("wall_s"));
  s.cpus = l.at("cpus").get<int>();
  s.own_cpus = number(l.at("own_cpus"));
  s.other_cpus = number(l.at("other_cpus"));
  s.steal_fraction = number(l.at("steal_fraction"));
  s.involuntary_switches = l.at("involuntary_switches").get<long>();
  s.known = true;  // written only when known
  if (const auto w = l.find("waiting_cpus"); w != l.end()) {
    s.waiting_known = true;
    s.waiting_cpus = number(*w);
  }
  if (const auto q = l.find("cgroup_quota_cpus"); q != l.end()) {
    s.cgroup_known = true;
    s.quota_cpus = number(*q);
    s.quota_periods = l.value("cgroup_periods", std::uint64_t{0});
    s.throttled_periods = l.value("cgroup_throttled_periods", std::uint64_t{0});
    s.throttled_s = l.value("cgroup_throttled_s", 0.0);
  }
  return s;
}

metric metric_of(const json& m) {
  metric out;
  out.name = m.at("name").get<std::string>();
  out.unit = m.at("unit").get<std::string>();
  out.value = number(m.at("value"));
  out.best = number(m.at("best"));
  out.higher_is_better = m.at("better").get<std::string>() == "higher";
  out.method = m.at("method").get<std::string>();
  out.role = parse_metric_role(m.at("role").get<std::string>()).value_or(metric_role::performance);
  out.samples = numbers(m.at("samples"));
  if (const auto h = m.find("hint"); h != m.end() && *h == to_string(metric_hint::fraction_of_peak))
    out.hint = metric_hint::fraction_of_peak;
  if (const auto r = m.find("repetitions"); r != m.end()) out.repetitions = numbers(*r);
  if (const auto g = m.find("gpus"); g != m.end()) out.gpus = g->get<std::vector<int>>();
  return out;
}

result_cell cell_of(const json& c) {
  result_cell out;
  out.column = c.at("column").get<std::string>();
  out.measured = c.at("status").get<std::string>() == "measured";
  if (!out.measured) {
    out.reason = c.at("reason").get<std::string>();
    out.error = c.at("error").get<bool>();
  }
  return out;
}

repetition_record repetition_of(const json& r) {
  repetition_record out;
  out.st = status_of(r.at("status").get<std::string>());
  if (const auto it = r.find("reason"); it != r.end()) out.reason = it->get<std::string>();
  out.valid = r.at("valid").get<bool>();
  out.invalid_reasons = strings(r.at("invalid_reasons"));
  out.invalid_codes = codes_of(r.at("invalid_reason_codes"));
  if (const auto it = r.find("stop_reason"); it != r.end())
    out.stop_reason = it->get<std::string>();
  out.elapsed_s = number(r.at("elapsed_s"));
  return out;
}

// Axes and their display forms. The writer writes the display of the first axes that have one
// (all of them, for a result the runner made): those come first here, so it writes the same.
void axes_of(const json& j, result& r) {
  const json& display = j.at("axes_display");
  std::vector<std::pair<std::string, json>> without;
  for (const auto& [name, value] : j.at("axes").items()) {
    if (const auto d = display.find(name); d != display.end()) {
      r.axes.emplace_back(name, value);
      r.axis_display.push_back(d->get<std::string>());
    } else {
      without.emplace_back(name, value);
    }
  }
  for (auto& a : without) r.axes.push_back(std::move(a));
}

void outcome_of(const json& j, result& r) {
  r.st = status_of(j.at("status").get<std::string>());
  if (const auto it = j.find("reason"); it != j.end()) {
    r.reason = it->get<std::string>();
    r.code = code_of(j.at("reason_code").get<std::string>());
  }
  r.valid = j.at("valid").get<bool>();
  r.invalid_reasons = strings(j.at("invalid_reasons"));
  r.invalid_codes = codes_of(j.at("invalid_reason_codes"));
  r.warnings = strings(j.at("warnings"));
  if (const auto it = j.find("withheld"); it != j.end())
    r.withheld = it->get<std::map<std::string, std::string>>();
  if (const auto it = j.find("simulated"); it != j.end()) r.simulated = it->get<bool>();
  if (const auto it = j.find("not_verified"); it != j.end())
    r.not_verified = it->get<std::vector<std::string>>();
  if (const auto it = j.find("storage_location"); it != j.end())
    r.storage = storage_location_of(*it);
}

void samples_of(const json& j, result& r) {
  const auto it = j.find("samples_s");
  if (it == j.end()) return;
  r.samples_s = numbers(*it);
  r.timer = j.at("timer").get<std::string>();
  r.iterations_per_sample = j.at("iterations_per_sample").get<std::int64_t>();
  r.stop_reason = j.at("stop_reason").get<std::string>();
  r.time = summary_of(j.at("time_s"));
  if (const auto l = j.find("sampling_load"); l != j.end()) r.load = load_of(*l);
}

void work_of(const json& w, work_counts& out) {
  out.bytes_read = number(w.at("bytes_read"));
  out.bytes_written = number(w.at("bytes_written"));
  out.flops = number(w.at("flops"));
  out.items = number(w.at("items"));
  out.item_name = w.at("item_name").get<std::string>();
}

result read_record(const json& j) {
  result r;
  r.benchmark = j.at("benchmark").get<std::string>();
  axes_of(j, r);
  outcome_of(j, r);
  r.rank = j.at("rank").get<int>();
  r.host = j.at("host").get<std::string>();
  if (const auto g = j.find("gpu"); g != j.end()) r.gpu = g->get<int>();
  if (const auto g = j.find("failed_gpus"); g != j.end())
    r.failed_gpus = g->get<std::vector<int>>();
  r.elapsed_s = number(j.at("elapsed_s"));
  samples_of(j, r);
  work_of(j.at("work_per_iteration"), r.work);
  for (const auto& m : j.at("metrics")) r.metrics.push_back(metric_of(m));
  if (const auto c = j.find("cells"); c != j.end()) {
    for (const auto& cell : *c) r.cells.push_back(cell_of(cell));
  }
  if (const auto reps = j.find("repetitions"); reps != j.end()) {
    r.repetitions.emplace();
    for (const auto& rep : *reps) r.repetitions->push_back(repetition_of(rep));
  }
  return r;
}

}  // namespace

result result_from_record(const json& record) {
  try {
    return read_record(record);
  } catch (const json::exception& e) {
    throw user_error("a result record: " + std::string(e.what()));
  } catch (const user_error& e) {
    throw user_error("a result record: " + std::string(e.what()));
  }
}

json records_json(std::span<const result> results) {
  json out = json::array();
  for (const auto& r : results) out.push_back(r.to_json());
  return out;
}

}  // namespace infrabench::model
