// Builders of small reports for the reports/ unit tests.
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/model/report.h"

namespace ib_test {

using json = nlohmann::json;

// A typed metric for tests that build a report_view directly (the roofline's, the scorecard's).
inline infrabench::model::metric_view metric_view_of(const std::string& name,
                                                     const std::string& unit, double value) {
  infrabench::model::metric_view v;
  v.name = name;
  v.unit = unit;
  v.value = value;
  return v;
}

struct m {
  std::string name, unit;
  double value;
  bool higher = true;
  std::vector<double> samples = {};
  std::string role = "";  // "" leaves "role" out, as reports written before roles did
};

inline json result(const std::string& bench, json axes, std::vector<m> metrics,
                   const std::string& host = "node1", int rank = 0,
                   const std::string& status = "passed", bool valid = true) {
  json ms = json::array();
  for (const auto& x : metrics) {
    std::vector<double> s = x.samples.empty()
                                ? std::vector<double>{x.value * 0.99, x.value, x.value * 1.01}
                                : x.samples;
    ms.push_back({{"name", x.name},
                  {"unit", x.unit},
                  {"value", x.value},
                  {"best", x.value},
                  {"better", x.higher ? "higher" : "lower"},
                  {"method", "test"},
                  {"samples", s}});
    if (!x.role.empty()) ms.back()["role"] = x.role;
  }
  json disp = json::object();
  for (const auto& [k, v] : axes.items()) disp[k] = v.is_string() ? v.get<std::string>() : v.dump();
  json r = {{"benchmark", bench},
            {"axes", axes},
            {"axes_display", disp},
            {"status", status},
            {"valid", valid},
            {"invalid_reasons", valid ? json::array() : json::array({"noisy: test"})},
            {"warnings", json::array()},
            {"rank", rank},
            {"host", host},
            {"elapsed_s", 0.1},
            {"work_per_iteration",
             {{"bytes_read", 0},
              {"bytes_written", 0},
              {"flops", 0},
              {"items", 0},
              {"item_name", "item"}}},
            {"metrics", status == "passed" ? ms : json::array()}};
  if (status != "passed") r["reason"] = status == "skipped" ? "no CUDA device: test" : "it broke";
  return r;
}

inline json host(const std::string& name, const std::string& cpu = "Test CPU",
                 const std::string& kernel = "6.1.0") {
  return {{"hostname", name},
          {"cpu", {{"model", cpu}, {"cores", 2}}},
          {"memory", {{"total_bytes", 1 << 30}, {"available_bytes", 12345}}},
          {"os", {{"name", "Debian"}, {"kernel", kernel}}},
          {"build", {{"git_commit", "abc123"}, {"compiler", "GNU 12.2.0"}}},
          {"timestamp_utc", "2026-01-01T00:00:00.000Z"}};
}

inline json report(json results, json hosts = json::array({host("node1")}),
                   const std::string& version = "1.0.0",
                   const std::string& started = "2026-01-01T00:00:00.000Z") {
  std::size_t passed = 0, skipped = 0, failed = 0;
  for (const auto& r : results) {
    passed += r["status"] == "passed";
    skipped += r["status"] == "skipped";
    failed += r["status"] == "failed";
  }
  return {{"schema_version", version},
          {"tool", "infrabench"},
          {"units", "decimal"},
          {"run",
           {{"command_line", json::array({"infrabench", "run"})},
            {"started_utc", started},
            {"finished_utc", started},
            {"launcher", "single"},
            {"world_size", 1},
            {"interrupted", false},
            {"suite", {{"name", "test"}, {"source", "test"}, {"benchmarks", json::array()}}},
            {"settings",
             {{"min_samples", 5},
              {"min_time_s", 0.1},
              {"max_time_s", 1},
              {"target_rel_ci", 0.02},
              {"timeout_s", 60},
              {"min_sample_time_s", 0.001},
              {"max_cv", 0.1}}}}},
          {"capabilities",
           {{"isa", json::object()},
            {"cuda", {{"available", false}}},
            {"nccl", {{"available", false}}},
            {"io_uring", {{"available", true}}},
            {"mpi", {{"available", false}}}}},
          {"hosts", hosts},
          {"summary",
           {{"configurations", results.size()},
            {"passed", passed},
            {"skipped", skipped},
            {"failed", failed},
            {"invalid", 0}}},
          {"results", results}};
}

// Adds run.benchmark_metadata for `bench`: its requirements and, per axis, {bytes, pow2}.
inline json& with_metadata(json& report, const std::string& bench,
                           std::vector<std::string> requires_,
                           const std::vector<std::tuple<std::string, bool, bool>>& axes) {
  json ax = json::object();
  for (const auto& [name, bytes, pow2] : axes)
    ax[name] = {{"kind", "int64"}, {"bytes", bytes}, {"pow2", pow2}, {"description", name}};
  report["run"]["benchmark_metadata"][bench] = {{"requires", requires_}, {"axes", ax}};
  return report;
}

}  // namespace ib_test
