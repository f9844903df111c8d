#include "infrabench/runner.h"
#include "infrabench/elapsed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/model/rank_messages.h"
#include "infrabench/names.h"
#include "infrabench/probe_detail.h"
#include "infrabench/simulation.h"

namespace infrabench {
namespace {

using json = nlohmann::json;

json value_to_json(const axis_value& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

// ---- plan steps -------------------------------------------------------------------------------

// The suite entries' filters, compiled once.
std::vector<std::regex> entry_regexes(const suite& su) {
  std::vector<std::regex> out;
  for (const auto& e : su.entries) out.push_back(compile_filter(e.filter, "suite filter"));
  return out;
}

bool is_selected(const benchmark& bench, const selection& sel,
                 const std::vector<std::regex>& entry_regex,
                 const std::optional<std::regex>& filter) {
  bool in_suite = false;
  for (const auto& re : entry_regex) in_suite = in_suite || std::regex_search(bench.name(), re);
  if (sel.suite_explicit || !filter) {
    return in_suite && (!filter || std::regex_search(bench.name(), *filter));
  }
  // --filter without --suite: every matching benchmark, with the default suite's axis values
  // where that suite covers it and the code defaults where not.
  return std::regex_search(bench.name(), *filter);
}

// The benchmark's axes with one suite entry's values over the code defaults.
planned_benchmark with_entry_axes(const benchmark& bench, const suite& su, const suite_entry* e) {
  planned_benchmark item;
  item.bench = &bench;
  item.axes = bench.axes();
  if (e == nullptr) return item;
  for (const auto& [name, values] : e->axes) {
    for (auto& ax : item.axes) {
      if (ax.name != name) continue;
      try {
        ax.values = parse_axis_values(ax, suite_axis_text(values));
      } catch (const user_error& err) {
        throw user_error("suite " + su.source + ": " + bench.name() + ": " + err.what());
      }
    }
  }
  return item;
}

// One item per suite entry that matches the benchmark and sets axes: each is its own set of
// configurations, as a fio job section is (two entries for training/step, one per model and
// batch, run both; a later entry used to replace the earlier one's values silently). Entries
// without axes only select: a benchmark they alone select runs its code defaults.
std::vector<planned_benchmark> with_suite_axes(const benchmark& bench, const suite& su,
                                               const std::vector<std::regex>& entry_regex) {
  std::vector<planned_benchmark> items;
  for (std::size_t i = 0; i < su.entries.size(); ++i) {
    if (!su.entries[i].axes.empty() && std::regex_search(bench.name(), entry_regex[i]))
      items.push_back(with_entry_axes(bench, su, &su.entries[i]));
  }
  if (items.empty()) items.push_back(with_entry_axes(bench, su, nullptr));
  return items;
}

// A suite axis that no benchmark matching its entry has is a typo; say so rather than silently
// ignore it. Checked against every compiled-in benchmark the entry matches, not only those
// --filter kept: an entry may narrow axes that only some of its benchmarks have.
void check_suite_axes_exist(const registry& reg, const suite& su,
                            const std::vector<std::regex>& entry_regex,
                            const std::vector<planned_benchmark>& items) {
  for (std::size_t i = 0; i < su.entries.size(); ++i) {
    const auto& e = su.entries[i];
    const bool entry_selected = std::any_of(items.begin(), items.end(), [&](const auto& it) {
      return std::regex_search(it.bench->name(), entry_regex[i]);
    });
    if (!entry_selected) continue;
    for (const auto& [name, values] : e.axes) {
      const bool known = std::any_of(reg.all().begin(), reg.all().end(), [&](const auto& b) {
        return std::regex_search(b->name(), entry_regex[i]) && b->find_axis(name) != nullptr;
      });
      if (!known) {
        throw user_error("suite " + su.source + ": no benchmark matching '" + e.filter +
                         "' has an axis '" + name + "'");
      }
    }
  }
}

void check_something_selected(const std::vector<planned_benchmark>& items, const selection& sel) {
  if (!items.empty()) return;
  const suite& su = sel.selected_suite;
  if (sel.filter) {
    throw user_error("--filter '" + *sel.filter + "' matches no benchmark" +
                     (sel.suite_explicit ? " in suite '" + su.name + "'" : std::string()) +
                     " (see 'infrabench list')");
  }
  throw user_error("suite '" + su.name + "' selects no benchmark compiled into this binary");
}

// Axis options (--isa avx2): -a <axis>=... restricted to the benchmarks of one group. Given
// together with -a for the same axis of the same benchmark, neither is obviously meant, so
// refuse rather than pick one silently.
void apply_option_axes(std::vector<planned_benchmark>& items,
                       const std::vector<selection::option_axis>& option_axes,
                       const std::set<std::pair<std::size_t, std::string>>& set_by_axis_flag) {
  for (const auto& o : option_axes) {
    bool applied = false;
    for (std::size_t k = 0; k < items.size(); ++k) {
      auto& it = items[k];
      if (it.bench->name().rfind(o.scope, 0) != 0) continue;
      for (auto& ax : it.axes) {
        if (ax.name != o.axis) continue;
        if (set_by_axis_flag.count({k, o.axis}) != 0) {
          throw user_error(o.option + " " + o.values + " and -a " + o.axis + "=... both set the " +
                           o.axis + " of " + it.bench->name() + ": give one of them");
        }
        try {
          ax.values = parse_axis_values(ax, o.values);
        } catch (const user_error& err) {
          throw user_error(o.option + ": " + err.what());
        }
        applied = true;
      }
    }
    if (!applied) {
      throw user_error(o.option + ": no selected benchmark under " + o.scope + " has an axis '" +
                       o.axis + "'");
    }
  }
}

// Every configuration of every item; refuses one that needs more memory than is available.
void expand_configs(std::vector<planned_benchmark>& items, const capabilities& caps) {
  std::set<std::string> planned;  // a configuration two entries both give runs once
  for (auto& it : items) {
    it.configs = cartesian_product(it.axes);
    std::erase_if(it.configs, [&](const config& cfg) {
      return !planned.insert(describe_config(*it.bench, cfg)).second;
    });
    for (const auto& cfg : it.configs) {
      const auto need = it.bench->memory_needed(cfg);
      if (caps.memory_available_bytes > 0 && need > caps.memory_available_bytes) {
        throw user_error(describe_config(*it.bench, cfg) + " needs " +
                         gib(static_cast<double>(need)) + " of memory; " +
                         gib(static_cast<double>(caps.memory_available_bytes)) + " is available");
      }
    }
  }
}

// What was run, as the report's run.suite.
json effective_suite_json(const std::vector<planned_benchmark>& items, const selection& sel) {
  json bench_json = json::array();
  for (const auto& it : items) {
    json axes = json::object();
    for (const auto& ax : it.axes) {
      json vals = json::array();
      for (const auto& v : ax.values) vals.push_back(value_to_json(v));
      axes[ax.name] = vals;
    }
    bench_json.push_back({{"name", it.bench->name()}, {"axes", axes}});
  }
  const suite& su = sel.selected_suite;
  return {{"name", su.name},
          {"source", su.source},
          {"filter", sel.filter ? json(*sel.filter) : json(nullptr)},
          {"axis_overrides", sel.axis_overrides},
          {"benchmarks", bench_json}};
}

}  // namespace

std::string describe_config(const benchmark& bench, const config& cfg) {
  std::string out = bench.name();
  for (const auto& [name, value] : cfg) {
    const axis* ax = bench.find_axis(name);
    out += " " + name + "=" + (ax ? format_axis_value(*ax, value) : "?");
  }
  return out;
}

std::size_t run_plan::total_configs() const {
  std::size_t n = 0;
  for (const auto& it : items) n += it.configs.size();
  return n;
}

std::set<std::pair<std::size_t, std::string>> apply_axis_overrides(
    std::vector<planned_benchmark>& items, const std::vector<std::string>& overrides) {
  std::set<std::pair<std::size_t, std::string>> set_by_flag;
  for (const auto& text : overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw user_error("-a " + shown_name(text) + ": expected axis=value[,value...]");
    }
    const std::string name = text.substr(0, eq);
    const std::string values = text.substr(eq + 1);
    check_name(name, "-a: axis");  // shown in messages: bounded, one line
    bool applied = false;
    std::string known;
    for (std::size_t k = 0; k < items.size(); ++k) {
      for (auto& ax : items[k].axes) {
        if (known.find(" " + ax.name + ",") == std::string::npos) known += " " + ax.name + ",";
        if (ax.name != name) continue;
        ax.values = parse_axis_values(ax, values);
        set_by_flag.emplace(k, name);
        applied = true;
      }
    }
    if (!applied) {
      if (!known.empty()) known.pop_back();
      throw user_error("-a " + name + ": no selected benchmark has an axis '" + name +
                       "' (axes:" + known + ")");
    }
  }
  return set_by_flag;
}

exec_settings effective_settings(const suite& su, const selection& sel) {
  exec_settings st;
  if (su.min_time_s) st.rule.min_time_s = *su.min_time_s;
  if (su.max_time_s) st.rule.max_time_s = *su.max_time_s;
  if (su.timeout_s) st.timeout_s = *su.timeout_s;
  if (su.target_rel_ci) st.rule.target_rel_ci = *su.target_rel_ci;
  if (sel.min_time_s) st.rule.min_time_s = *sel.min_time_s;
  if (sel.max_time_s) st.rule.max_time_s = *sel.max_time_s;
  if (sel.timeout_s) st.timeout_s = *sel.timeout_s;
  if (sel.target_rel_ci) st.rule.target_rel_ci = *sel.target_rel_ci;
  // One bound given on the command line wins over the suite's other bound.
  if (sel.max_time_s && !sel.min_time_s)
    st.rule.min_time_s = std::min(st.rule.min_time_s, st.rule.max_time_s);
  if (sel.min_time_s && !sel.max_time_s)
    st.rule.max_time_s = std::max(st.rule.min_time_s, st.rule.max_time_s);
  if (st.rule.min_time_s > st.rule.max_time_s) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "--min-time (%g s) is above --max-time (%g s)",
                  st.rule.min_time_s, st.rule.max_time_s);
    throw user_error(buf);
  }
  return st;
}

std::vector<planned_benchmark> order_by_uses(std::vector<planned_benchmark> items) {
  // Kahn's algorithm, always taking the earliest item whose used benchmarks are placed: items
  // without declarations keep their order (the registry's, by name). A benchmark that is not
  // selected does not hold anything back.
  std::vector<planned_benchmark> out;
  std::vector<bool> placed(items.size(), false);
  auto ready = [&](std::size_t i) {
    // Every item of a used benchmark (a suite can give one several) is placed first.
    for (const auto& used : items[i].bench->uses()) {
      for (std::size_t j = 0; j < items.size(); ++j) {
        if (items[j].bench->name() == used && !placed[j]) return false;
      }
    }
    return true;
  };
  while (out.size() < items.size()) {
    std::size_t next = items.size();
    for (std::size_t i = 0; i < items.size() && next == items.size(); ++i) {
      if (!placed[i] && ready(i)) next = i;
    }
    if (next == items.size()) {
      std::string cycle;
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!placed[i]) cycle += (cycle.empty() ? "" : ", ") + items[i].bench->name();
      }
      throw std::logic_error("benchmarks use each other's results in a cycle: " + cycle);
    }
    placed[next] = true;
    out.push_back(std::move(items[next]));
  }
  return out;
}

run_plan make_plan(const registry& reg, const selection& sel, const capabilities& caps) {
  const suite& su = sel.selected_suite;
  const std::vector<std::regex> entry_regex = entry_regexes(su);
  std::optional<std::regex> filter;
  if (sel.filter) filter = compile_filter(*sel.filter, "--filter");

  run_plan plan;
  for (const auto& owned : reg.all()) {
    if (!is_selected(*owned, sel, entry_regex, filter)) continue;
    for (auto& item : with_suite_axes(*owned, su, entry_regex))
      plan.items.push_back(std::move(item));
  }
  check_suite_axes_exist(reg, su, entry_regex, plan.items);
  check_something_selected(plan.items, sel);
  const auto set_by_axis_flag = apply_axis_overrides(plan.items, sel.axis_overrides);
  apply_option_axes(plan.items, sel.option_axes, set_by_axis_flag);
  plan.settings = effective_settings(su, sel);
  plan.items = order_by_uses(std::move(plan.items));
  expand_configs(plan.items, caps);
  plan.effective_suite = effective_suite_json(plan.items, sel);
  plan.repetitions = sel.repetitions;
  return plan;
}

// ---- one configuration ------------------------------------------------------------------------

result make_result(const benchmark& bench, const config& cfg, int rank, std::string host) {
  result r;
  r.benchmark = bench.name();
  for (const auto& [name, value] : cfg) {
    r.axes.emplace_back(name, value_to_json(value));
    const axis* ax = bench.find_axis(name);
    r.axis_display.push_back(ax ? format_axis_value(*ax, value) : "?");
  }
  r.rank = rank;
  r.host = std::move(host);
  r.simulated = simulation::active();
  return r;
}

namespace {

// Runs the body; returns the failure an exception stands for (empty when it returned, or left
// through skip()/fail(), which recorded their own reason).
coded_reason run_body(const benchmark& bench, state& st) {
  try {
    bench.run(st);
  } catch (const state_exit&) {
  } catch (const timeout_error& e) {
    return {reason_code::timeout, e.what()};
  } catch (const interrupted_error& e) {
    return {reason_code::interrupted, e.what()};
  } catch (const std::exception& e) {
    return {reason_code::error, e.what()};
  } catch (...) {
    return {reason_code::error, "unknown exception"};
  }
  return {};
}

// The result of a body that ran: its identity (with the benchmark's own display of axis values),
// the exception's failure, and a failure when it measured nothing. A failed result keeps the
// metrics and the sampling load it recorded before failing.
result finish_result(state& st, double elapsed_s, const coded_reason& error,
                     const result& identity) {
  result r = st.finish(elapsed_s);
  r.benchmark = identity.benchmark;
  r.axes = identity.axes;
  r.axis_display = identity.axis_display;
  r.rank = identity.rank;
  r.host = identity.host;
  if (identity.gpu >= 0) r.gpu = identity.gpu;  // else what the benchmark said (ran_on_rank_gpu)
  r.simulated = simulation::active();
  if (const std::uint64_t noops = st.simulated_noop_launches(); noops > 0) {
    // Whatever the benchmark concluded from its kernels' output (checks of its own included),
    // that output was never computed: said once per result, whatever the checks said.
    r.not_verified.push_back("simulated: " + std::to_string(noops) +
                             " kernel launches did not compute, so what they produce is not "
                             "verified");
  }
  for (std::size_t i = 0; i < r.axes.size(); ++i) {
    if (const auto it = st.axis_display().find(r.axes[i].first); it != st.axis_display().end())
      r.axis_display[i] = it->second;
  }
  if (!error.empty()) r.set_status(status::failed, error.code, error.text);
  if (r.st == status::passed && r.samples_s.empty() && r.metrics.empty()) {
    r.set_status(status::failed, reason_code::no_measurement,
                 "the benchmark returned without measuring anything");
  }
  // A failure keeps what was measured before it (a stress that sagged still counted its wrong
  // results, and a baseline rule on one is judged on its value); a skip measured nothing worth
  // keeping: it is the configuration's absence; and a failed verification's rates are rates of
  // wrong output (a collective that reduced wrongly has no bus bandwidth), not measurements.
  const bool wrong_output = r.st == status::failed && r.code == reason_code::verify_failed;
  if (r.st == status::skipped || wrong_output) r.metrics.clear();
  return r;
}

// A metric the benchmark did not declare (or declared otherwise) is a programming error: the
// configuration fails naming it, so the benchmark's smoke test catches it, rather than a
// baseline rule or a reader later meeting a metric nobody described.
void fail_undeclared_metrics(const benchmark& bench, result& r) {
  for (const auto& m : r.metrics) {
    const std::string why = undeclared_problem(bench.metrics(), m);
    if (why.empty()) continue;
    r.set_status(status::failed, reason_code::error,
                 bench.name() + ": " + why + " (declare it where the benchmark registers)");
    r.metrics.clear();
    return;
  }
}

}  // namespace

result run_one(const benchmark& bench, const config& cfg, const capabilities& caps,
               communicator& comm, const exec_settings& settings) {
  const auto t0 = std::chrono::steady_clock::now();
  result identity = make_result(bench, cfg, comm.rank(), comm.hostname());
  for (const auto& req : bench.requirements()) {
    if (req.check == req::cuda.check) identity.gpu = caps.rank_gpu;
  }
  if (const auto unmet = bench.unmet(caps); !unmet.empty()) {
    result r = identity;
    r.set_status(status::skipped, unmet.code, unmet.text);
    return r;
  }
  // The rank's GPU is made current (its context opened) here, before the first benchmark that
  // needs it, not when the run starts: a rank that never runs GPU work holds no context.
  if (identity.gpu >= 0 && detail::bind_rank_gpu(caps, comm.local_rank()) < 0) {
    result r = identity;
    r.set_status(status::skipped, reason_code::no_device,
                 "GPU " + std::to_string(identity.gpu) +
                     " cannot be made current (cudaSetDevice): busy, or in exclusive-process or "
                     "prohibited compute mode (nvidia-smi -q -d COMPUTE)");
    return r;
  }
  state st(cfg, caps, comm, settings);
  st.set_dependencies(bench.name(), bench.uses());
  const coded_reason error = run_body(bench, st);
  result r = finish_result(st, seconds_since(t0), error, identity);
  fail_undeclared_metrics(bench, r);
  // After the check: the energy metrics are the harness's (telemetry_metric_decls), not the
  // benchmark's declarations.
  if (settings.energy && st.energy_window()) settings.energy->account(*st.energy_window(), r);
  return r;
}

// ---- multi-rank configurations ----------------------------------------------------------------

namespace {

// "rank 3 (h2)".
std::string rank_name(int r, const std::vector<std::string>& hosts) {
  return "rank " + std::to_string(r) + " (" +
         (r < static_cast<int>(hosts.size()) ? hosts[static_cast<std::size_t>(r)] : "?") + ")";
}

// Rank 0's reason for skipping on every rank, from each rank's unmet requirements (empty where
// met): the reason itself when every rank gave it, else the first rank's, named.
coded_reason skip_everywhere_reason(const std::vector<std::string>& gathered,
                                    const std::vector<std::string>& hosts) {
  coded_reason first;
  std::vector<int> ranks;
  for (std::size_t r = 0; r < gathered.size(); ++r) {
    const coded_reason unmet = model::decode_reason(gathered[r]);
    if (unmet.empty()) continue;
    if (first.empty()) first = unmet;
    if (unmet.text == first.text) ranks.push_back(static_cast<int>(r));
  }
  if (ranks.size() == gathered.size()) return first;
  return {reason_code::not_on_every_rank,
          rank_name(ranks.front(), hosts) +
              (ranks.size() > 1 ? " and " + std::to_string(ranks.size() - 1) + " more" : "") +
              ": " + first.text + " (every rank must take part)"};
}

// A collective's result on rank 0, with every other rank's failure and failed checks folded in.
void fold_other_ranks(result& r, const std::vector<std::string>& gathered,
                      const std::vector<std::string>& hosts) {
  for (std::size_t k = 1; k < gathered.size(); ++k) {
    const model::rank_outcome other = model::decode_outcome(gathered[k]);
    const std::string prefix = rank_name(static_cast<int>(k), hosts) + ": ";
    if (other.st == status::failed && r.st != status::failed) {
      r.set_status(status::failed, reason_code::rank_failed, prefix + other.reason);
      r.metrics.clear();
    }
    for (std::size_t i = 0; i < other.invalid_reasons.size(); ++i) {
      // The samples are the same on every rank (the max over ranks): so is their noise verdict.
      const std::string& text = other.invalid_reasons[i];
      if (std::find(r.invalid_reasons.begin(), r.invalid_reasons.end(), text) !=
          r.invalid_reasons.end())
        continue;
      r.mark_invalid(other.invalid_codes[i], prefix + text);
    }
  }
}

}  // namespace

std::optional<result> runner::run_multi(const benchmark& bench, const config& cfg,
                                        const exec_settings& settings) {
  const int me = m_comm.rank();
  if (bench.scope() == rank_scope::node) {
    if (me == m_comm.node_leader()) return run_one(bench, cfg, m_caps, m_comm, settings);
    result r = make_result(bench, cfg, me, m_comm.hostname());
    r.set_status(status::skipped, reason_code::node_local,
                 "node-local: measured once per host, on " + m_comm.hostname() + " by rank " +
                     std::to_string(m_comm.node_leader()));
    return r;
  }

  // Every rank must take part or none: a rank that skipped would leave the others waiting.
  const coded_reason unmet = bench.unmet(m_caps);
  const auto agreed = std::chrono::steady_clock::now();
  const bool any_unmet = m_comm.allreduce_max(unmet.empty() ? 0.0 : 1.0) > 0;
  m_coordination.outcomes_s += seconds_since(agreed);
  if (any_unmet) {
    const auto all = m_comm.gather_strings(model::encode_reason(unmet));
    const coded_reason why =
        me == 0 ? skip_everywhere_reason(all, m_comm.hostnames()) : coded_reason{};
    const coded_reason shared =
        model::decode_reason(m_comm.broadcast_string(model::encode_reason(why)));
    result r = make_result(bench, cfg, me, m_comm.hostname());
    r.set_status(status::skipped, shared.code, shared.text);
    return r;
  }

  // The benchmark checks the configuration's time limit itself, consistently on every rank
  // (communicator::config_timeout); the local check between samples is only a backstop, later,
  // so that no rank leaves the sampling loop while the others go on into the next collective.
  exec_settings own = settings;
  own.timeout_s = settings.timeout_s * 1.25 + 5;
  result r = run_one(bench, cfg, m_caps, m_comm, own);
  if (bench.scope() == rank_scope::every_rank) return r;

  // A collective: rank 0 records it; other ranks' failures and failed checks fold into it.
  const auto gathered = std::chrono::steady_clock::now();
  const auto all = m_comm.gather_strings(model::encode_outcome(model::outcome_of(r)));
  m_coordination.outcomes_s += seconds_since(gathered);
  if (me != 0) return std::nullopt;
  fold_other_ranks(r, all, m_comm.hostnames());
  return r;
}

// ---- the run ----------------------------------------------------------------------------------

namespace {

// A benchmark stuck inside one call (a hung syscall, a dead peer) never reaches the cooperative
// timeout check between samples. This thread notices when one configuration has run past its
// timeout + grace and calls on_hung (which ends the process).
class hang_watchdog {
 public:
  hang_watchdog(const run_callbacks& cb, double limit_s) : m_cb(cb), m_limit_s(limit_s) {
    if (m_cb.on_hung) m_thread = std::thread([this] { watch(); });
  }
  hang_watchdog(const hang_watchdog&) = delete;
  hang_watchdog& operator=(const hang_watchdog&) = delete;
  ~hang_watchdog() {
    {
      std::lock_guard lock(m_mu);
      m_done = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
  }

  void begin(const planned_benchmark& item, const config& cfg) {
    std::lock_guard lock(m_mu);
    m_item = &item;
    m_cfg = &cfg;
    m_start = std::chrono::steady_clock::now();
  }
  void end() {
    std::lock_guard lock(m_mu);
    m_item = nullptr;
  }

 private:
  void watch() {
    std::unique_lock lock(m_mu);
    while (!m_done) {
      m_cv.wait_for(lock, std::chrono::milliseconds(200));
      if (m_done || !m_item) continue;
      const double running = seconds_since(m_start);
      if (running > m_limit_s) {
        m_cb.on_hung(*m_item, *m_cfg, running);
        return;
      }
    }
  }

  const run_callbacks& m_cb;
  double m_limit_s;
  std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_done = false;
  const planned_benchmark* m_item = nullptr;
  const config* m_cfg = nullptr;
  std::chrono::steady_clock::time_point m_start;
  std::thread m_thread;
};

}  // namespace

bool runner::start_together(const std::string& label, double timeout_s, double wait_s, bool stop) {
  m_comm.set_activity(label, timeout_s);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const bool stopped = m_comm.sync_config(std::hash<std::string>{}(label), wait_s, stop);
    m_coordination.start_s += seconds_since(t0);
    ++m_coordination.steps;
    m_comm.set_activity(label, timeout_s);  // the configuration's clock starts now
    return stopped;
  } catch (const std::exception& e) {
    m_comm.fail_job(std::string("before ") + label + ": " + e.what());
  }
  return true;
}

void runner::finish_together(double timeout_s, double wait_s) {
  // The gather that follows must not time out while a host still measures.
  m_comm.set_activity("end of run", timeout_s);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    (void)m_comm.sync_config(std::hash<std::string>{}("end of run"), wait_s, false);
    m_coordination.start_s += seconds_since(t0);
  } catch (const std::exception& e) {
    m_comm.fail_job(std::string("at the end of the run: ") + e.what());
  }
}

std::optional<result> runner::run_config(const planned_benchmark& item, const config& cfg,
                                         const exec_settings& settings) {
  if (m_comm.size() == 1) return run_one(*item.bench, cfg, m_caps, m_comm, settings);
  try {
    return run_multi(*item.bench, cfg, settings);
  } catch (const std::exception& e) {
    // The harness's own agreement steps failed (an MPI error): the ranks can no longer be kept
    // in step, so the job ends, naming this rank.
    m_comm.fail_job(describe_config(*item.bench, cfg) + ": " + e.what());
  }
  return std::nullopt;
}

namespace {

// A configuration that measured something before a signal stopped it ends "passed" with fewer
// samples than its stopping rule asked for: its numbers are kept but marked INVALID, so a
// baseline or a check never takes a cut-short run for a complete one.
void mark_cut_short(result& r) {
  if (r.st != status::passed) return;
  r.mark_invalid(reason_code::interrupted,
                 "interrupted while measuring (" + std::to_string(r.samples_s.size()) +
                     " samples): cut short before its stopping rule was met");
}

}  // namespace

// What the configuration runs of one run() share.
struct run_loop {
  const run_callbacks& cb;
  const std::atomic<bool>* interrupted;
  exec_settings settings;
  hang_watchdog& watchdog;
  double sync_wait;
  std::size_t index = 0, total = 0;
  std::vector<result>& results;
};

bool runner::run_step(const planned_benchmark& item, const config& cfg, const std::string& label,
                      run_loop& loop) {
  const bool stop = loop.interrupted && *loop.interrupted;
  const bool stopped = m_comm.size() > 1
                           ? start_together(label, loop.settings.timeout_s, loop.sync_wait, stop)
                           : stop;
  if (stopped) return false;
  if (loop.cb.on_start) loop.cb.on_start(item, cfg, loop.index, loop.total);
  loop.watchdog.begin(item, cfg);
  std::optional<result> r = run_config(item, cfg, loop.settings);
  loop.watchdog.end();
  if (r && loop.interrupted && *loop.interrupted) mark_cut_short(*r);
  if (r) {
    if (loop.cb.on_finished) loop.cb.on_finished(*r);
    if (loop.cb.on_result) loop.cb.on_result(*r);
    loop.results.push_back(std::move(*r));
  }
  ++loop.index;
  return true;
}

std::vector<result> runner::run(const run_plan& plan, const run_callbacks& cb,
                                const std::atomic<bool>* interrupted) {
  m_coordination = {};
  std::vector<result> results;
  run_resources resources;  // destroyed when the run ends, before the results are reported
  exec_settings settings = plan.settings;
  settings.interrupted = interrupted;
  settings.earlier = &results;
  settings.resources = &resources;
  settings.energy = energy::meter_for_run(settings.options);

  const double grace = std::max(5.0, 0.5 * settings.timeout_s);
  hang_watchdog watchdog(cb, settings.timeout_s + grace);
  // How long a rank may wait for the others at the start of a configuration: they may still be
  // running the previous one (up to its timeout and the watchdog's grace).
  const double sync_wait =
      settings.timeout_s * 1.25 + 5 + grace + std::max(10.0, m_comm.op_timeout());
  run_loop loop{cb, interrupted, settings, watchdog, sync_wait, 0, plan.total_runs(), results};

  // Repetitions interleave (every configuration once, then again): a drift of the machine over
  // the run (heat, another tenant) then falls on every configuration alike, not on the last ones.
  // Every rank walks the same order; the label it starts each run with says which repetition.
  bool go_on = true;
  for (std::size_t rep = 0; rep < plan.repetitions && go_on; ++rep) {
    for (std::size_t i = 0; i < plan.items.size() && go_on; ++i) {
      const auto& item = plan.items[i];
      for (std::size_t c = 0; c < item.configs.size() && go_on; ++c) {
        std::string label = describe_config(*item.bench, item.configs[c]);
        if (plan.repetitions > 1)
          label += " (repetition " + std::to_string(rep + 1) + " of " +
                   std::to_string(plan.repetitions) + ")";
        go_on = run_step(item, item.configs[c], label, loop);
      }
    }
  }
  if (m_comm.size() > 1) finish_together(settings.timeout_s, sync_wait);
  return results;
}

}  // namespace infrabench
