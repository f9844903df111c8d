#include "infrabench/state.h"
#include "infrabench/elapsed.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "infrabench/error.h"
#include "infrabench/metric_decl.h"
#include "infrabench/simulation.h"
#include "infrabench/thread_pool.h"

namespace infrabench {
namespace {

using clock_type = std::chrono::steady_clock;

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", fraction * 100.0);
  return buf;
}

// Why samples spread: the machine when it was busy, else the benchmark itself.
std::string noise_cause(const std::optional<sampling_load>& load) {
  if (!load || !load->known) return "the machine's load is unknown";
  if (load->busy()) return "the machine was busy: " + load->describe();
  return "the machine was quiet (" + load->describe() + "): the spread is the benchmark's own";
}

}  // namespace

state::state(const config& cfg, const capabilities& caps, communicator& comm,
             exec_settings settings)
    : m_config(cfg), m_caps(caps), m_comm(comm), m_settings(settings) {
  m_start = clock_type::now();
  m_noop_launches_at_start = simulation::noop_launches();
}

const axis_value& state::find(std::string_view axis) const {
  if (const axis_value* v = find_axis(m_config, axis)) return *v;
  throw std::logic_error("benchmark asked for axis '" + std::string(axis) + "' it did not declare");
}

std::int64_t state::get_int64(std::string_view axis) const {
  return std::get<std::int64_t>(find(axis));
}
double state::get_float64(std::string_view axis) const {
  return std::get<double>(find(axis));
}
const std::string& state::get_string(std::string_view axis) const {
  return std::get<std::string>(find(axis));
}

void state::set_axis_display(std::string_view axis, std::string text) {
  (void)find(axis);  // a typo in the axis name is a bug in the benchmark: throws logic_error
  m_axis_display[std::string(axis)] = std::move(text);
}

std::string state::option(std::string_view name) const {
  if (m_settings.options) {
    if (auto it = m_settings.options->find(std::string(name)); it != m_settings.options->end())
      return it->second;
  }
  for (const auto& o : option_registry::instance().all()) {
    if (o->name == name) return o->default_value;
  }
  throw std::logic_error("benchmark asked for run option --" + std::string(name) +
                         " nobody registered");
}

void state::set_dependencies(std::string self, std::vector<std::string> uses) {
  m_self = std::move(self);
  m_uses = std::move(uses);
}

const result* state::find_earlier(std::string_view benchmark, const nlohmann::json& axes) const {
  if (m_uses && benchmark != m_self &&
      std::find(m_uses->begin(), m_uses->end(), benchmark) == m_uses->end()) {
    throw std::logic_error(m_self + " reads " + std::string(benchmark) +
                           "'s result without declaring it: add .uses(\"" + std::string(benchmark) +
                           "\") to its registration");
  }
  if (!m_settings.earlier) return nullptr;
  const auto& earlier = *m_settings.earlier;
  const auto matches = [&](const result& r) {
    if (r.benchmark != benchmark) return false;
    bool all = true;
    for (const auto& [k, v] : axes.items()) {
      bool match = false;
      for (const auto& [name, value] : r.axes) match = match || (name == k && value == v);
      all = all && match;
    }
    return all;
  };
  const auto first = std::find_if(earlier.begin(), earlier.end(), matches);
  if (first == earlier.end()) return nullptr;
  // The same configuration's latest repetition (run --repetitions): measured next to this one.
  const result* latest = &*first;
  for (auto it = first; it != earlier.end(); ++it) {
    if (it->benchmark == first->benchmark && it->axes == first->axes) latest = &*it;
  }
  return latest;
}

void state::add_items(double items, std::string item_name) {
  m_work.items += items;
  m_work.item_name = std::move(item_name);
}

void state::exec(const std::function<void()>& fn) {
  sample_loop(
      [&](std::int64_t iters) {
        const auto t0 = clock_type::now();
        for (std::int64_t i = 0; i < iters; ++i) fn();
        const double wall = seconds_since(t0);
        return batch_timing{wall / static_cast<double>(iters), wall};
      },
      "cpu_steady_clock");
}

void state::exec_timed(const std::function<double()>& fn, std::string timer_name) {
  sample_loop(
      [&](std::int64_t iters) {
        const auto t0 = clock_type::now();
        double total = 0;
        for (std::int64_t i = 0; i < iters; ++i) total += fn();
        return batch_timing{total / static_cast<double>(iters), seconds_since(t0)};
      },
      std::move(timer_name));
}

void state::exec_batched(const std::function<double(std::int64_t)>& run_batch,
                         std::string timer_name) {
  // The returned time is all the ranks agree on, so it stands for the wall time too.
  sample_loop(
      [&](std::int64_t iters) {
        const double t = run_batch(iters);
        return batch_timing{t, t * static_cast<double>(iters)};
      },
      std::move(timer_name));
}

void state::exec_batched(const std::function<batch_timing(std::int64_t)>& run_batch,
                         std::string timer_name) {
  sample_loop(run_batch, std::move(timer_name));
}

void state::exec_gpu_batched(const std::function<batch_timing(std::int64_t)>& run_batch,
                             std::int64_t max_iters, std::string timer_name) {
  (void)run_batch(1);  // lazy module loading, first touch: not a measurement
  const batch_timing one = run_batch(1);
  const std::int64_t n = std::min<std::int64_t>(16, std::max<std::int64_t>(max_iters, 2));
  const batch_timing many = run_batch(n);
  sample_loop(run_batch, std::move(timer_name),
              gpu_launches_per_sample(one, 1, many, n, m_settings.min_sample_time_s, max_iters));
}

void state::warm_up_gpu(const std::function<batch_timing(std::int64_t)>& run_batch,
                        std::int64_t max_iters) {
  const double goal = std::max(m_settings.warm_up_s, m_settings.gpu_warm_up_s);
  max_iters = std::max<std::int64_t>(max_iters, 1);
  double spent = 0;
  std::int64_t n = 1;  // the first call may load modules lazily: one launch
  // Bounded in calls too, so a timer that reports no time at all cannot loop for ever.
  for (int calls = 0; calls < 10'000 && (calls == 0 || spent < goal); ++calls) {
    if (m_settings.interrupted && *m_settings.interrupted) return;
    const batch_timing t = run_batch(n);
    const double cost = std::max(t.per_iteration_s * static_cast<double>(n), t.wall_s);
    spent += cost;
    // The next batch holds what is left of the warm-up at this call's cost per launch, growing
    // at most 16x per call: one call's cost is a noisy estimate of the next one's.
    const double per_launch = cost / static_cast<double>(n);
    const double want = per_launch > 0 ? std::ceil((goal - spent) / per_launch) : 16.0 * n;
    n = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::min(want, 16.0 * static_cast<double>(n))), 1, max_iters);
  }
}

batch_timing state::warm_up(const std::function<batch_timing(std::int64_t)>& run_batch) const {
  // Caches, page faults, lazy initialisation, and the clock: cores that sat idle take tens of
  // milliseconds to reach their running frequency, and on a many-core node a threads=0 run starts
  // on many idle cores. Single calls repeat until warm_up_s has passed (one call when it is
  // slower), and the fastest, free of first-call costs and of a preemption that hit one call on a
  // busy machine, sizes the batches. The decision uses only the calls' times, which a multi-rank
  // run_batch makes the same on every rank. A call costs the larger of measured and wall time (a
  // GPU call's host overhead).
  auto cost = [](const batch_timing& t) { return std::max(t.per_iteration_s, t.wall_s); };
  batch_timing fastest = run_batch(1);
  double total = cost(fastest);
  for (int calls = 1; total < m_settings.warm_up_s && calls < 1000; ++calls) {
    const batch_timing t = run_batch(1);
    total += cost(t);
    if (cost(t) < cost(fastest)) fastest = t;
  }
  return fastest;
}

// Samples of `iters` iterations until the stopping rule says stop, an interruption, or the
// timeout (thrown).
stopping_rule::verdict state::take_samples(
    const std::function<batch_timing(std::int64_t)>& run_batch, std::int64_t iters) {
  // The budget (min/max time) counts the wall time samples cost, never less than their measured
  // time: with measured time alone a GPU benchmark whose calls cost 100x their GPU time in host
  // overhead ran 100x its max-time.
  auto& samples = m_result.samples_s;
  double spent = 0;
  stopping_rule::verdict v = stopping_rule::verdict::go_on;
  std::size_t next_check = 1;
  while (true) {
    if (m_settings.interrupted && *m_settings.interrupted) {
      m_result.stop_reason = "interrupted";
      break;
    }
    if (seconds_since(m_start) > m_settings.timeout_s) {
      throw timeout_error("timed out after " + std::to_string(m_settings.timeout_s) + " s with " +
                          std::to_string(samples.size()) + " samples (--timeout)");
    }
    const batch_timing t = run_batch(iters);
    samples.push_back(t.per_iteration_s);
    spent += std::max(t.wall_s, t.per_iteration_s * static_cast<double>(iters));
    // Re-evaluating the CI costs O(n log n); past 64 samples check every n/16 samples.
    if (samples.size() >= next_check) {
      v = m_settings.rule.decide(samples, spent);
      if (v != stopping_rule::verdict::go_on) break;
      next_check = samples.size() < 64 ? samples.size() + 1 : samples.size() + samples.size() / 16;
    }
  }
  return v;
}

void state::sample_loop(const std::function<batch_timing(std::int64_t)>& run_batch,
                        std::string timer_name, std::int64_t fixed_iters) {
  if (m_executed) throw std::logic_error("state::exec called twice for one configuration");
  m_executed = true;
  m_result.timer = std::move(timer_name);

  // Batches sized by the warm-up's last call, by the larger of measured and wall time, so a
  // per-call overhead the timer does not see (a GPU benchmark's gate and synchronise) cannot make
  // one sample take 100x min_sample_time_s. GPU work (fixed_iters) was warmed and calibrated by
  // exec_gpu_batched: one batch of its size settles the queue.
  std::int64_t iters = fixed_iters;
  if (fixed_iters > 0) {
    (void)run_batch(fixed_iters);
  } else {
    iters = iterations_per_sample(warm_up(run_batch), 1, m_settings.min_sample_time_s);
  }

  // The machine's load over the samples (not the warm-up): the cause of noise when it is busy.
  const std::vector<int> cpus = allowed_cpus();
  const load_snapshot load_before = take_load_snapshot(cpus);
  m_sampling = true;
  auto& samples = m_result.samples_s;
  // The energy window is the samples' alone, so the work in it is samples x iters iterations.
  std::optional<energy::reading> energy_before;
  if (m_settings.energy) energy_before = m_settings.energy->read();
  // The samples taken and the load over them are kept when sampling fails (a timeout, an error in
  // the benchmark's call): the failed result still shows what was measured and how busy the
  // machine was meanwhile.
  auto record = [&] {
    m_result.iterations_per_sample = iters;
    m_result.load =
        load_between(load_before, take_load_snapshot(cpus), static_cast<int>(cpus.size()),
                     static_cast<double>(sysconf(_SC_CLK_TCK)));
    if (!samples.empty()) m_result.time = summarize(samples);
  };
  stopping_rule::verdict v = stopping_rule::verdict::go_on;
  try {
    v = take_samples(run_batch, iters);
  } catch (...) {
    record();
    throw;
  }
  if (energy_before && !samples.empty()) {
    m_energy = energy::window{std::move(*energy_before), m_settings.energy->read(),
                              static_cast<double>(samples.size()) * static_cast<double>(iters)};
  }
  record();
  if (m_result.stop_reason.empty()) m_result.stop_reason = to_string(v);
  if (samples.empty()) throw interrupted_error("interrupted before the first sample");
}

void state::skip(reason_code code, std::string reason) {
  m_result.set_status(status::skipped, code, std::move(reason));
  throw state_exit{};
}

void state::fail(reason_code code, std::string reason) {
  m_result.set_status(status::failed, code, std::move(reason));
  throw state_exit{};
}

std::uint64_t state::simulated_noop_launches() const {
  return simulation::noop_launches() - m_noop_launches_at_start;
}

void state::check(bool ok, reason_code code, std::string reason) {
  // On the simulated node our kernels launch but do not compute: a check of their output is of
  // garbage, so it neither passes nor fails the result. It says it could not verify.
  if (simulation::active()) {
    if (simulated_noop_launches() > 0) {
      auto& list = m_result.not_verified;
      const std::string text = reason + " (simulated: kernel launches do not compute)";
      if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
      return;
    }
  }
  if (ok) return;
  m_result.mark_invalid(code, std::move(reason));
}

void state::add_metric(std::string name, std::string unit, double value, bool higher_is_better,
                       std::string method, metric_role role) {
  metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.value = value;
  m.best = value;
  m.higher_is_better = higher_is_better;
  m.method = std::move(method);
  m.role = role;
  m_custom_metrics.push_back(std::move(m));
}

void state::set_metric_hint(std::string_view name, metric_hint hint) {
  for (auto* list : {&m_custom_metrics, &m_result.metrics}) {
    for (auto& m : *list) {
      if (m.name == name) {
        m.hint = hint;
        return;
      }
    }
  }
  throw std::logic_error("set_metric_hint(" + std::string(name) + "): no such metric");
}

void state::set_metric_gpus(std::string_view name, std::vector<int> gpus) {
  for (auto* list : {&m_custom_metrics, &m_result.metrics}) {
    for (auto& m : *list) {
      if (m.name == name) {
        m.gpus = std::move(gpus);
        return;
      }
    }
  }
  throw std::logic_error("set_metric_gpus(" + std::string(name) + "): no such metric");
}

void state::set_metric_samples(std::string_view name, std::vector<double> samples) {
  for (auto* list : {&m_custom_metrics, &m_result.metrics}) {
    for (auto& m : *list) {
      if (m.name != name) continue;
      for (double v : samples) {
        if (std::isfinite(v) && (m.higher_is_better ? v > m.best : v < m.best)) m.best = v;
      }
      m.samples = std::move(samples);
      return;
    }
  }
  throw std::logic_error("set_metric_samples(" + std::string(name) + "): no such metric");
}

void state::add_time_metric(std::string name, std::string unit, bool higher_is_better,
                            std::string method, const std::function<double(double)>& of_seconds) {
  if (m_result.samples_s.empty()) {
    throw std::logic_error("add_time_metric(" + name + ") before exec/exec_timed took samples");
  }
  metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.higher_is_better = higher_is_better;
  m.method = std::move(method);
  m.value = of_seconds(m_result.time.median);
  m.best = of_seconds(m_result.time.min);
  m.samples.reserve(m_result.samples_s.size());
  for (double t : m_result.samples_s) m.samples.push_back(of_seconds(t));
  m_result.metrics.push_back(std::move(m));
}

result state::finish(double elapsed_s) {
  result r = std::move(m_result);
  r.elapsed_s = elapsed_s;
  r.work = m_work;
  const auto& s = r.samples_s;
  if (!s.empty()) {
    const double median = r.time.median, best = r.time.min;
    auto derive = [&](std::string name, std::string unit, double work, double scale, bool rate,
                      std::string method) {
      metric m;
      m.name = std::move(name);
      m.unit = std::move(unit);
      m.higher_is_better = rate;
      m.method = std::move(method);
      // A rate is work / time (higher is better); a cost is time / work (lower is better).
      auto f = [&](double t) { return t <= 0 ? 0.0 : rate ? work / t / scale : t / work / scale; };
      m.value = f(median);
      m.best = f(best);
      m.samples.reserve(s.size());
      for (double t : s) m.samples.push_back(f(t));
      r.metrics.push_back(std::move(m));
    };
    const double bytes = m_work.bytes_read + m_work.bytes_written;
    if (bytes > 0) {
      const auto d = derived_metric(work_kind::bytes);  // the name and unit declared for it
      derive(d.name, d.unit, bytes, 1e9, true,
             "(bytes read + bytes written per iteration) / median time per iteration, GB = 1e9 B");
    }
    if (m_work.flops > 0) {
      const auto d = derived_metric(work_kind::flops);
      derive(d.name, d.unit, m_work.flops, 1e9, true,
             "floating-point operations per iteration / median time per iteration");
    }
    if (m_work.items > 0) {
      const auto& item = m_work.item_name;
      const auto d = derived_item_metrics(item);  // the rate, then the cost
      derive(d[0].name, d[0].unit, m_work.items, 1, true,
             item + "s per iteration / median time per iteration");
      derive(d[1].name, d[1].unit, m_work.items, 1e-9, false,
             "median time per iteration / " + item + "s per iteration");
    }
    if (r.time.robust_cv > m_settings.max_cv && s.size() > 2) {
      r.mark_invalid(reason_code::noisy, "noisy: robust CV " + percent(r.time.robust_cv) + " > " +
                                             percent(m_settings.max_cv) + " over " +
                                             std::to_string(s.size()) + " samples; " +
                                             noise_cause(r.load));
    }
    const double half = r.time.median_rel_ci_halfwidth();
    if (r.stop_reason != "converged" && half > m_settings.rule.target_rel_ci) {
      r.warnings.push_back("median CI95 +-" + percent(half) + " > target +-" +
                           percent(m_settings.rule.target_rel_ci) + " (" + r.stop_reason + ")");
    }
  }
  for (auto& m : m_custom_metrics) r.metrics.push_back(std::move(m));
  return r;
}

}  // namespace infrabench
