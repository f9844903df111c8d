#include "job.h"

#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "infrabench/communicator.h"
#include "infrabench/json_io.h"
#include "infrabench/result.h"

namespace infrabench::storage_bench {
namespace {

using nlohmann::json;

json axes_of(const config& cfg) {
  json axes = json::object();
  for (const auto& [name, value] : cfg) {
    std::visit([&](const auto& v) { axes[name] = v; }, value);
  }
  return axes;
}

// This rank's row of the workload's same configuration, as JSON for rank 0.
json my_row(const state& st, const std::string& workload) {
  json row = {{"rank", st.comm().rank()},
              {"host", st.comm().hostname()},
              {"leader", st.comm().rank() == st.comm().node_leader()}};
  const result* r = st.find_earlier(workload, axes_of(st.get_config()));
  if (r == nullptr) {
    row["status"] = "missing";
    row["reason"] = workload + " did not run this configuration in this run";
    return row;
  }
  row["status"] = std::string(to_string(r->st));
  row["reason"] = r->reason;
  row["invalid"] = r->invalid_reasons;
  json metrics = json::object();
  for (const auto& m : r->metrics) metrics[m.name] = m.value;
  row["metrics"] = metrics;
  return row;
}

job_input_row parse_row(const std::string& text) {
  const json j = json::parse(text);
  job_input_row row;
  row.rank = j.at("rank").get<int>();
  row.host = j.at("host").get<std::string>();
  row.status = j.at("status").get<std::string>();
  row.reason = j.value("reason", "");
  row.leader = j.value("leader", true);
  if (j.contains("invalid")) row.invalid_reasons = j["invalid"].get<std::vector<std::string>>();
  if (j.contains("metrics")) {
    for (const auto& [k, v] : j["metrics"].items()) row.metrics[k] = v.get<double>();
  }
  return row;
}

bool node_local_skip(const job_input_row& r) {
  // A rank that does not measure its host: another rank (its host's leader) does.
  return r.status == "skipped" && !r.leader;
}

void job_body(state& st, const std::string& workload, const job_combine_fn& combine) {
  const auto all = st.comm().gather_strings(json_text(my_row(st, workload)));
  // A collective: rank 0 records the job's row (the runner keeps only its result).
  if (st.comm().rank() != 0)
    st.skip(infrabench::reason_code::node_local, "the job's row is rank 0's");
  std::vector<job_input_row> rows, passed;
  for (const auto& text : all) rows.push_back(parse_row(text));
  for (const auto& r : rows) {
    if (r.status == "failed") st.fail(r.who() + ": " + workload + " failed: " + r.reason);
  }
  for (const auto& r : rows) {
    if (r.status == "passed") passed.push_back(r);
  }
  if (passed.empty()) {
    for (const auto& r : rows) {
      if (!node_local_skip(r)) st.skip(r.who() + ": " + r.reason);
    }
    st.skip("no rank measured " + workload);
  }
  for (const auto& r : passed) {
    for (const auto& why : r.invalid_reasons) st.check(false, r.who() + ": " + why);
  }
  combine(st, passed);
}

}  // namespace

double job_input_row::metric(const std::string& name) const {
  const auto it = metrics.find(name);
  return it == metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

std::string job_input_row::who() const {
  return "rank " + std::to_string(rank) + " (" + host + ")";
}

std::vector<double> values_of(const std::vector<job_input_row>& rows, const std::string& metric) {
  std::vector<double> out;
  for (const auto& r : rows) {
    const double v = r.metric(metric);
    if (!std::isnan(v)) out.push_back(v);
  }
  return out;
}

benchmark& register_job_row(const benchmark& workload, const std::string& description,
                            job_combine_fn combine) {
  const std::string name = workload.name();
  auto& b =
      registry::instance()
          .add(name + "_job",
               [name, combine = std::move(combine)](state& st) { job_body(st, name, combine); })
          .describe(description)
          .scope(rank_scope::collective)
          .min_ranks(2)
          .uses(name);  // combines the workload's results, measured first
  // The same axes (and values) as the workload: each job row matches one of its configurations.
  for (const axis& ax : workload.axes()) {
    switch (ax.kind) {
      case axis_kind::int64: {
        std::vector<std::int64_t> v;
        for (const auto& x : ax.values) v.push_back(std::get<std::int64_t>(x));
        b.add_int64_axis(ax.name, v, ax.options);
        break;
      }
      case axis_kind::float64: {
        std::vector<double> v;
        for (const auto& x : ax.values) v.push_back(std::get<double>(x));
        b.add_float64_axis(ax.name, v, ax.options);
        break;
      }
      case axis_kind::string: {
        std::vector<std::string> v;
        for (const auto& x : ax.values) v.push_back(std::get<std::string>(x));
        b.add_string_axis(ax.name, v, ax.options);
        break;
      }
    }
  }
  return b;
}

}  // namespace infrabench::storage_bench
