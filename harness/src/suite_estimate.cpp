#include "infrabench/suite_estimate.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "infrabench/json_io.h"
#include "infrabench/suite.h"

namespace infrabench {
namespace {

std::string seconds_text(double s) {
  char buf[64];
  if (s >= 90)
    std::snprintf(buf, sizeof(buf), "%.0f s (%.1f min)", s, s / 60);
  else
    std::snprintf(buf, sizeof(buf), "%.0f s", s);
  return buf;
}

}  // namespace

double default_config_estimate_s(const exec_settings& s) {
  // The runner warms up (warm_up_s), then samples until the median's CI meets the target once
  // min_time_s is measured, or until max_time_s (the stopping rule, stats.cpp). Which of the two
  // ends a configuration depends on its noise, unknown before it runs: on a quiet 2-vCPU VM 17-26
  // of 120 sampled quick-suite runs reached max_time_s (2026-11-28), on the same kind of VM
  // noisier (2026-12-01) 18 of 36, and a user's machine is rarely quiet. So the middle of the
  // window: the quick suite (max_time_s 1.0) 25 s estimated, 46 s measured on the noisy VM (13 s
  // of it one configuration's first touch of 768 MiB in huge pages, set-up no setting predicts).
  return s.warm_up_s + s.rule.min_time_s + (s.rule.max_time_s - s.rule.min_time_s) / 2;
}

std::vector<config_estimate> estimate_plan(const run_plan& plan, const suite& su,
                                           const capabilities& caps) {
  std::vector<config_estimate> out;
  for (const auto& item : plan.items) {
    // The largest estimate of the entries that select the benchmark.
    std::optional<double> per_config;
    for (const auto& e : su.entries) {
      // compile_filter: the bounded, non-backtracking matcher the plan selected the entry with.
      if (!e.estimate_s ||
          !std::regex_search(item.bench->name(), compile_filter(e.filter, "suite filter")))
        continue;
      per_config = std::max(per_config.value_or(0.0), *e.estimate_s);
    }
    const std::string unmet = item.bench->unmet_requirements(caps);
    for (const auto& cfg : item.configs) {
      config_estimate ce;
      ce.benchmark = item.bench->name();
      double duration = 0;
      for (const auto& [name, value] : cfg) {
        const axis* ax = item.bench->find_axis(name);
        ce.configuration += (ce.configuration.empty() ? "" : " ") + name + "=" +
                            (ax ? format_axis_value(*ax, value) : "?");
        if (name == "duration_s") {
          if (const auto* d = std::get_if<double>(&value)) duration = *d;
        }
      }
      ce.from_suite = per_config.has_value();
      ce.seconds = per_config.value_or(default_config_estimate_s(plan.settings)) + duration;
      ce.skip_reason = unmet;
      out.push_back(std::move(ce));
    }
  }
  return out;
}

std::vector<double> run_estimates_s(const std::vector<config_estimate>& est,
                                    std::size_t repetitions) {
  std::vector<double> out;
  out.reserve(est.size() * repetitions);
  // Repetitions run the plan again in the same order (interleaved): the estimates repeat with it.
  for (std::size_t k = 0; k < repetitions; ++k) {
    for (const auto& e : est) out.push_back(e.skip_reason.empty() ? e.seconds : 0.0);
  }
  return out;
}

void print_estimate(std::ostream& out, const suite& su, const std::vector<config_estimate>& est,
                    bool as_json) {
  double all = 0, here = 0;
  std::size_t runs_here = 0;
  for (const auto& e : est) {
    all += e.seconds;
    if (e.skip_reason.empty()) {
      here += e.seconds;
      ++runs_here;
    }
  }
  if (as_json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& e : est) {
      rows.push_back(
          {{"benchmark", e.benchmark},
           {"configuration", e.configuration},
           {"estimate_s", e.seconds},
           {"estimate_from",
            e.from_suite ? "suite"
                         : "default (warm_up_s + min_time_s + (max_time_s - min_time_s) / 2)"},
           {"runs_here", e.skip_reason.empty()},
           {"reason", e.skip_reason}});
    }
    out << json_text(nlohmann::json({{"suite", su.name},
                                     {"source", su.source},
                                     {"configurations", rows},
                                     {"total_s", all},
                                     {"here_s", here},
                                     {"configurations_here", runs_here}}),
                     2)
        << std::endl;
    return;
  }
  out << "suite " << su.name << " (" << su.source << "): " << est.size()
      << " configurations, time per configuration by design (estimate_s in the suite file)\n";
  for (const auto& e : est) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%7.0f s%s", e.seconds, e.from_suite ? " " : "*");
    out << "  " << buf << "  " << (e.skip_reason.empty() ? "runs here " : "skip here ")
        << e.benchmark << (e.configuration.empty() ? "" : " " + e.configuration) << "\n";
  }
  out << "total by design, every configuration of this build running (a node with all of its "
         "hardware): "
      << seconds_text(all) << "\n"
      << "here: " << seconds_text(here) << " for the " << runs_here << " configurations that run"
      << " (the others are skipped at once)\n";
  if (std::any_of(est.begin(), est.end(), [](const auto& e) { return !e.from_suite; }))
    out << "* no estimate_s in the suite: warm_up_s + min_time_s + (max_time_s - min_time_s) / 2 "
           "assumed (some configurations converge at min_time_s, some run to max_time_s)\n";
}

}  // namespace infrabench
