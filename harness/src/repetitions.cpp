#include "infrabench/repetitions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "infrabench/reason.h"
#include "infrabench/stats.h"

namespace infrabench {
namespace {

using group = std::vector<const result*>;  // one configuration's repetitions, in run order

constexpr double no_value = std::numeric_limits<double>::quiet_NaN();  // written as null

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
bool is_noise(reason_code code) {
  return code == reason_code::noisy || code == reason_code::interrupted;
}

// What compare and history need of one repetition besides its values.
repetition_record repetition_of(const result& r) {
  repetition_record rec;
  rec.st = r.st;
  rec.reason = r.reason;
  rec.valid = r.valid;
  rec.invalid_reasons = r.invalid_reasons;
  rec.invalid_codes = r.invalid_codes;
  rec.invalid_codes.resize(r.invalid_reasons.size(), reason_code::check_failed);
  if (!r.samples_s.empty()) rec.stop_reason = r.stop_reason;  // it sampled
  rec.elapsed_s = r.elapsed_s;
  return rec;
}

void add_warning(result& out, const std::string& text) {
  auto& w = out.warnings;
  if (std::find(w.begin(), w.end(), text) == w.end()) w.push_back(text);
}

// Each repetition's warnings: once when every repetition gave it, else naming the repetition
// ("median CI95 +-7% > target" differs in its numbers from one repetition to the next).
void merge_warnings(result& out, const group& reps, std::size_t planned) {
  const auto in_every = [&](const std::string& w) {
    return std::all_of(reps.begin(), reps.end(), [&](const result* r) {
      return std::find(r->warnings.begin(), r->warnings.end(), w) != r->warnings.end();
    });
  };
  for (std::size_t i = 0; i < reps.size(); ++i) {
    for (const auto& w : reps[i]->warnings)
      add_warning(out, in_every(w) ? w : repetition_name(i, planned) + ": " + w);
  }
}

// One metric over the repetitions that reported it: the median of their values, the best of
// their bests, the samples pooled in run order.
metric merge_metric(const std::string& name, const group& passed) {
  std::optional<metric> merged;
  std::vector<double> values, samples;
  std::optional<double> best;
  for (const result* r : passed) {
    const auto m = std::find_if(r->metrics.begin(), r->metrics.end(),
                                [&](const metric& x) { return x.name == name; });
    if (m == r->metrics.end()) continue;  // withheld in this repetition (state::withhold_metric)
    if (!merged) merged = *m;
    for (int g : m->gpus) {
      if (std::find(merged->gpus.begin(), merged->gpus.end(), g) == merged->gpus.end())
        merged->gpus.push_back(g);
    }
    if (std::isfinite(m->value)) values.push_back(m->value);
    samples.insert(samples.end(), m->samples.begin(), m->samples.end());
    if (std::isfinite(m->best)) {
      best = !best                 ? m->best
             : m->higher_is_better ? std::max(*best, m->best)
                                   : std::min(*best, m->best);
    }
  }
  merged->value = values.empty() ? no_value : median_of(values);
  merged->best = best.value_or(no_value);
  merged->samples = std::move(samples);
  merged->repetitions = std::move(values);
  return *merged;
}

std::vector<metric> merge_metrics(const group& passed) {
  std::vector<std::string> names;  // in order of first appearance
  for (const result* r : passed) {
    for (const auto& m : r->metrics) {
      if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    }
  }
  std::vector<metric> out;
  for (const auto& name : names) out.push_back(merge_metric(name, passed));
  return out;
}

// The load of the repetition whose median sample time is the repetitions' median (the lower of
// two): what the merged value, their median, was measured beside. Verdicts weigh the machine's
// load against that value (compare's and check's busy-machine rules, issue 44); the busiest
// repetition's load would excuse a median that ran on a quiet machine. Each repetition's own
// noise is explained in its INVALID reason, with its own load.
std::optional<sampling_load> typical_load(const group& passed) {
  std::vector<const result*> timed;
  for (const result* r : passed) {
    if (r->load && r->load->known && r->time.n > 0) timed.push_back(r);
  }
  if (timed.empty()) return std::nullopt;
  std::sort(timed.begin(), timed.end(),
            [](const result* a, const result* b) { return a->time.median < b->time.median; });
  return timed[(timed.size() - 1) / 2]->load;
}

// The samples of every passed repetition in run order, their statistics, and how sampling
// stopped (one reason when all agree, else each distinct one).
void merge_samples(result& out, const group& passed) {
  std::vector<double> pooled;
  std::vector<std::string> stops;
  for (const result* r : passed) {
    for (double s : r->samples_s)
      if (std::isfinite(s)) pooled.push_back(s);
    const std::string& stop = r->stop_reason;
    if (!r->samples_s.empty() && !stop.empty() &&
        std::find(stops.begin(), stops.end(), stop) == stops.end())
      stops.push_back(stop);
  }
  out.load = typical_load(passed);
  if (pooled.empty()) return;
  out.samples_s = pooled;
  out.time = summarize(pooled);
  std::string stop;
  for (const auto& s : stops) stop += (stop.empty() ? "" : ", ") + s;
  out.stop_reason = stop;
}

// Validity over the passed repetitions (see merge_repetitions); `index` maps each to its place in
// the run's order of repetitions.
void merge_validity(result& out, const group& passed, const std::vector<std::size_t>& index,
                    std::size_t planned) {
  std::size_t valid = 0;
  for (const result* r : passed) valid += r->valid ? 1 : 0;
  const bool noise_counts = valid * 2 < passed.size();
  out.valid = true;
  out.invalid_reasons.clear();
  out.invalid_codes.clear();
  for (std::size_t i = 0; i < passed.size(); ++i) {
    const result& r = *passed[i];
    for (std::size_t k = 0; k < r.invalid_reasons.size(); ++k) {
      const reason_code code =
          k < r.invalid_codes.size() ? r.invalid_codes[k] : reason_code::check_failed;
      const std::string text = repetition_name(index[i], planned) + ": " + r.invalid_reasons[k];
      if (!is_noise(code) || noise_counts) {
        out.mark_invalid(code, text);
      } else {
        add_warning(out, text + " (not held against the result: " + std::to_string(valid) + " of " +
                             std::to_string(passed.size()) + " repetitions valid)");
      }
    }
  }
}

// The result of a configuration none of whose repetitions failed and some passed.
result merge_passed(const group& reps, std::size_t planned) {
  group passed;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i]->st == status::passed) {
      passed.push_back(reps[i]);
      index.push_back(i);
    }
  }
  result out = *passed.front();
  out.warnings.clear();  // merge_warnings adds every repetition's
  merge_samples(out, passed);
  out.metrics = merge_metrics(passed);
  merge_validity(out, passed, index, planned);
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i]->st == status::skipped)
      add_warning(out, repetition_name(i, planned) + " skipped: " + reps[i]->reason);
  }
  return out;
}

// A failed repetition fails the configuration: the first one's reason, naming it.
result merge_failed(const group& reps, std::size_t planned) {
  std::size_t first = reps.size(), count = 0;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i]->st != status::failed) continue;
    if (first == reps.size()) first = i;
    ++count;
  }
  result out = *reps[first];
  out.warnings.clear();
  out.reason = repetition_name(first, planned) +
               (count > 1 ? " (and " + std::to_string(count - 1) + " more)" : std::string()) +
               ": " + out.reason;
  return out;
}

// A repetition the interrupt stopped before it measured anything is not a failure of the
// configuration: the run ended, and the repetitions that finished are what it has.
group without_unstarted(const group& all) {
  group reps;
  for (const result* r : all) {
    if (!(r->st == status::failed && r->code == reason_code::interrupted)) reps.push_back(r);
  }
  return reps.empty() ? all : reps;
}

result merge_group(const group& all, std::size_t planned) {
  const group reps = without_unstarted(all);
  const auto has = [&](status st) {
    return std::any_of(reps.begin(), reps.end(), [&](const result* r) { return r->st == st; });
  };
  result out;
  if (has(status::failed)) {
    out = merge_failed(reps, planned);
  } else if (has(status::passed)) {
    out = merge_passed(reps, planned);
  } else {
    out = *reps.front();  // skipped every time: the first one's reason
    out.warnings.clear();
  }
  double elapsed = 0;
  std::vector<repetition_record> records;
  for (const result* r : reps) {
    elapsed += r->elapsed_s;
    records.push_back(repetition_of(*r));
  }
  merge_warnings(out, reps, planned);
  out.elapsed_s = elapsed;
  out.repetitions = std::move(records);
  if (reps.size() < planned) {
    add_warning(out, "ran " + std::to_string(reps.size()) + " of " + std::to_string(planned) +
                         " repetitions: the run stopped before the others");
  }
  return out;
}

}  // namespace

std::vector<result> merge_repetitions(std::vector<result> results, std::size_t planned) {
  if (planned <= 1) return results;
  std::vector<std::string> order;  // identities in order of first appearance
  std::map<std::string, group> groups;
  for (const auto& r : results) {
    const std::string key = result_identity(r, true);
    auto& g = groups[key];
    if (g.empty()) order.push_back(key);
    g.push_back(&r);
  }
  std::vector<result> out;
  out.reserve(order.size());
  for (const auto& key : order) out.push_back(merge_group(groups[key], planned));
  return out;
}

}  // namespace infrabench
