#include "infrabench/repetitions.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/reason.h"
#include "infrabench/result.h"
#include "infrabench/stats.h"

namespace infrabench {
namespace {

using json = nlohmann::json;
using group = std::vector<const json*>;  // one configuration's repetitions, in run order

std::string repetition_name(std::size_t index, std::size_t planned) {
  return "repetition " + std::to_string(index + 1) + " of " + std::to_string(planned);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

// Noise says the samples of one repetition spread (or were cut short by an interrupt): another
// repetition may well be fine, so it counts against the result only when most repetitions have
// it. Any other invalid reason is a check the benchmark failed (a verification): once is enough.
bool is_noise(const std::string& code) {
  return code == to_string(reason_code::noisy) || code == to_string(reason_code::interrupted);
}

// What compare and history need of one repetition besides its values.
json repetition_record(const json& r) {
  json rec = {{"status", r.value("status", std::string("passed"))},
              {"valid", r.value("valid", true)},
              {"invalid_reasons", r.value("invalid_reasons", json::array())},
              {"invalid_reason_codes", r.value("invalid_reason_codes", json::array())},
              {"elapsed_s", r.value("elapsed_s", 0.0)}};
  if (r.contains("stop_reason")) rec["stop_reason"] = r["stop_reason"];
  if (r.contains("reason")) rec["reason"] = r["reason"];
  return rec;
}

void add_warning(json& out, const std::string& text) {
  auto& w = out["warnings"];
  if (!w.is_array()) w = json::array();
  if (std::find(w.begin(), w.end(), json(text)) == w.end()) w.push_back(text);
}

// One metric over the repetitions that reported it: the median of their values, the best of
// their bests, the samples pooled in run order.
json merge_metric(const std::string& name, const group& passed) {
  json merged;
  std::vector<double> values;
  json samples = json::array();
  std::optional<double> best;
  for (const json* r : passed) {
    const auto& ms = (*r)["metrics"];
    const auto m = std::find_if(ms.begin(), ms.end(), [&](const json& x) {
      return x.value("name", std::string()) == name;
    });
    if (m == ms.end()) continue;  // withheld in this repetition (state::withhold_metric)
    if (merged.is_null()) merged = *m;
    if ((*m)["value"].is_number()) values.push_back((*m)["value"].get<double>());
    for (const auto& s : (*m)["samples"]) samples.push_back(s);
    if ((*m)["best"].is_number()) {
      const double b = (*m)["best"].get<double>();
      const bool higher = m->value("better", std::string("higher")) == "higher";
      best = !best ? b : higher ? std::max(*best, b) : std::min(*best, b);
    }
  }
  merged["value"] = values.empty() ? json(nullptr) : json(median_of(values));
  merged["best"] = best ? json(*best) : json(nullptr);
  merged["samples"] = samples;
  merged["repetitions"] = values;
  return merged;
}

json merge_metrics(const group& passed) {
  std::vector<std::string> names;  // in order of first appearance
  for (const json* r : passed) {
    for (const auto& m : (*r)["metrics"]) {
      const std::string name = m.value("name", std::string());
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  json out = json::array();
  for (const auto& name : names) out.push_back(merge_metric(name, passed));
  return out;
}

// The samples of every passed repetition in run order, their statistics, and how sampling
// stopped (one reason when all agree, else each distinct one).
void merge_samples(json& out, const group& passed) {
  std::vector<double> pooled;
  std::vector<std::string> stops;
  for (const json* r : passed) {
    for (const auto& s : r->value("samples_s", json::array()))
      if (s.is_number()) pooled.push_back(s.get<double>());
    const std::string stop = r->value("stop_reason", std::string());
    if (!stop.empty() && std::find(stops.begin(), stops.end(), stop) == stops.end())
      stops.push_back(stop);
    // The busiest repetition's load explains noise best.
    if (r->contains("sampling_load") && (*r)["sampling_load"].value("busy", false))
      out["sampling_load"] = (*r)["sampling_load"];
  }
  if (pooled.empty()) return;
  out["samples_s"] = pooled;
  out["time_s"] = summarize(pooled).to_json();
  std::string stop;
  for (const auto& s : stops) stop += (stop.empty() ? "" : ", ") + s;
  out["stop_reason"] = stop;
}

// Validity over the passed repetitions (see merge_repetitions); `index` maps each to its place in
// the run's order of repetitions.
void merge_validity(json& out, const group& passed, const std::vector<std::size_t>& index,
                    std::size_t planned) {
  std::size_t valid = 0;
  for (const json* r : passed) valid += r->value("valid", true) ? 1 : 0;
  const bool noise_counts = valid * 2 < passed.size();
  out["valid"] = true;
  out["invalid_reasons"] = json::array();
  out["invalid_reason_codes"] = json::array();
  for (std::size_t i = 0; i < passed.size(); ++i) {
    const auto reasons = passed[i]->value("invalid_reasons", json::array());
    const auto codes = passed[i]->value("invalid_reason_codes", json::array());
    for (std::size_t k = 0; k < reasons.size(); ++k) {
      const std::string code = k < codes.size() ? codes[k].get<std::string>()
                                                : std::string(to_string(reason_code::check_failed));
      const std::string text =
          repetition_name(index[i], planned) + ": " + reasons[k].get<std::string>();
      if (!is_noise(code) || noise_counts) {
        out["valid"] = false;
        out["invalid_reasons"].push_back(text);
        out["invalid_reason_codes"].push_back(code);
      } else {
        add_warning(out, text + " (not held against the result: " + std::to_string(valid) + " of " +
                             std::to_string(passed.size()) + " repetitions valid)");
      }
    }
  }
}

// The result of a configuration none of whose repetitions failed and some passed.
json merge_passed(const group& reps, std::size_t planned) {
  group passed;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i]->value("status", std::string()) == "passed") {
      passed.push_back(reps[i]);
      index.push_back(i);
    }
  }
  json out = *passed.front();
  merge_samples(out, passed);
  out["metrics"] = merge_metrics(passed);
  merge_validity(out, passed, index, planned);
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i]->value("status", std::string()) == "skipped")
      add_warning(out, repetition_name(i, planned) +
                           " skipped: " + reps[i]->value("reason", std::string()));
  }
  return out;
}

// A failed repetition fails the configuration: the first one's reason, naming it.
json merge_failed(const group& reps, std::size_t planned) {
  std::size_t first = reps.size(), count = 0;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i]->value("status", std::string()) != "failed") continue;
    if (first == reps.size()) first = i;
    ++count;
  }
  json out = *reps[first];
  out["reason"] = repetition_name(first, planned) +
                  (count > 1 ? " (and " + std::to_string(count - 1) + " more)" : std::string()) +
                  ": " + out.value("reason", std::string());
  return out;
}

// A repetition the interrupt stopped before it measured anything is not a failure of the
// configuration: the run ended, and the repetitions that finished are what it has.
group without_unstarted(const group& all) {
  group reps;
  for (const json* r : all) {
    const bool unstarted =
        r->value("status", std::string()) == "failed" &&
        r->value("reason_code", std::string()) == to_string(reason_code::interrupted);
    if (!unstarted) reps.push_back(r);
  }
  return reps.empty() ? all : reps;
}

json merge_group(const group& all, std::size_t planned) {
  const group reps = without_unstarted(all);
  const auto has = [&](const char* st) {
    return std::any_of(reps.begin(), reps.end(),
                       [&](const json* r) { return r->value("status", std::string()) == st; });
  };
  json out = has("failed")   ? merge_failed(reps, planned)
             : has("passed") ? merge_passed(reps, planned)
                             : *reps.front();  // skipped every time: the first one's reason
  double elapsed = 0;
  json records = json::array();
  for (const json* r : reps) {
    elapsed += r->value("elapsed_s", 0.0);
    records.push_back(repetition_record(*r));
    for (const auto& w : r->value("warnings", json::array()))
      add_warning(out, w.get<std::string>());
  }
  out["elapsed_s"] = elapsed;
  out["repetitions"] = records;
  if (reps.size() < planned) {
    add_warning(out, "ran " + std::to_string(reps.size()) + " of " + std::to_string(planned) +
                         " repetitions: the run stopped before the others");
  }
  return out;
}

}  // namespace

json merge_repetitions(const json& results, std::size_t planned) {
  if (planned <= 1 || !results.is_array()) return results;
  std::vector<std::string> order;  // identities in order of first appearance
  std::map<std::string, group> groups;
  for (const auto& r : results) {
    const std::string key = result_identity(r, true);
    auto& g = groups[key];
    if (g.empty()) order.push_back(key);
    g.push_back(&r);
  }
  json out = json::array();
  for (const auto& key : order) out.push_back(merge_group(groups[key], planned));
  return out;
}

}  // namespace infrabench
