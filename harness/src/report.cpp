#include "infrabench/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/model/result_record.h"
#include "infrabench/simulation.h"

namespace infrabench {

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

nlohmann::json benchmark_metadata_json(const benchmark& b) {
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& ax : b.axes()) {
    nlohmann::json a = {{"kind", std::string(to_string(ax.kind))},
                        {"bytes", ax.options.bytes},
                        {"pow2", ax.options.pow2},
                        {"description", ax.options.description}};
    if (ax.options.bytes) a["unit"] = "B";
    axes[ax.name] = std::move(a);
  }
  nlohmann::json requires_ = nlohmann::json::array();
  for (const auto& r : b.requirements()) requires_.emplace_back(r.name);
  // What its metrics are (unit, direction, role, kind, relations, the headline), so a reader of
  // the report (compare, baselines, the HTML) asks the declaration instead of guessing.
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : b.metrics()) metrics.push_back(metric_decl_json(m));
  // The benchmarks whose results it reads (a peak it is a fraction of, a reference), so the HTML
  // report finds a curve's peak benchmark by this declaration, not by its name.
  nlohmann::json meta = {
      {"requires", requires_}, {"axes", axes}, {"metrics", metrics}, {"uses", b.uses()}};
  // A collective's nccl-tests layout (collective_layout.h), for the console's table.
  if (b.collective()) meta.emplace("collective", collective_layout_json(*b.collective()));
  return meta;
}

report_summary summarize_results(std::span<const result> results) {
  report_summary s;
  s.configurations = results.size();
  for (const auto& r : results) {
    s.passed += r.st == status::passed;
    s.skipped += r.st == status::skipped;
    s.failed += r.st == status::failed;
    s.invalid += r.st == status::passed && !r.valid;
  }
  return s;
}

namespace {
// A report of a simulated node says so at the top (docs/simulation.md): whoever reads it, and
// every command that judges hardware, sees that its numbers are not measurements of hardware.
void add_simulation(nlohmann::json& report, std::span<const result> results) {
  const bool any =
      std::any_of(results.begin(), results.end(), [](const result& r) { return r.simulated; });
  if (!simulation::active() && !any) return;
  report.emplace("simulated", true);
  report.emplace("simulation",
                 nlohmann::json{{"node_file", simulation::node_file()},
                                {"note",
                                 "SIMULATED: a GPU node simulated on the CPU; no number here is "
                                 "a measurement of GPU hardware"}});
}
}  // namespace

nlohmann::json make_report(const report_context& ctx, std::span<const result> results) {
  const report_summary sum = summarize_results(results);
  nlohmann::json run = {{"command_line", ctx.command_line}, {"started_utc", ctx.started_utc},
                        {"finished_utc", ctx.finished_utc}, {"launcher", ctx.launcher},
                        {"world_size", ctx.world_size},     {"interrupted", ctx.interrupted},
                        {"suite", ctx.effective_suite},     {"settings", ctx.settings}};
  if (ctx.interrupted) run["interrupted_reason"] = ctx.interrupted_reason;
  if (!ctx.benchmark_metadata.empty()) run["benchmark_metadata"] = ctx.benchmark_metadata;
  if (!ctx.canary.is_null()) run["canary"] = ctx.canary;
  if (!ctx.coordination.is_null()) run["coordination"] = ctx.coordination;
  nlohmann::json report = {
      {"schema_version", report_schema_version},
      {"tool", "infrabench"},
      {"units",
       "decimal: GB = 1e9 bytes, GB/s = 1e9 bytes/s; sizes in axes are binary (KiB = 1024 B)"},
      {"run", run},
      {"capabilities", ctx.capabilities},
      {"hosts", ctx.hosts},
      {"summary",
       {{"configurations", sum.configurations},
        {"passed", sum.passed},
        {"skipped", sum.skipped},
        {"failed", sum.failed},
        {"invalid", sum.invalid}}},
      {"results", model::records_json(results)}};
  add_simulation(report, results);
  return report;
}

}  // namespace infrabench
