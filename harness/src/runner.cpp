#include "infrabench/runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "infrabench/cli_extension.h"
#include "infrabench/communicator.h"
#include "infrabench/error.h"
#include "infrabench/stats.h"

namespace infrabench {
namespace {

using json = nlohmann::json;

std::regex compile_regex(const std::string& pattern, const std::string& what) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw user_error(what + " '" + pattern + "' is not a valid regular expression: " + e.what());
  }
}

json value_to_json(const axis_value& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

std::string describe_config(const benchmark& bench, const config& cfg) {
  std::string out = bench.name();
  for (const auto& [name, value] : cfg) {
    const axis* ax = bench.find_axis(name);
    out += " " + name + "=" + (ax ? format_axis_value(*ax, value) : "?");
  }
  return out;
}

}  // namespace

std::size_t run_plan::total_configs() const {
  std::size_t n = 0;
  for (const auto& it : items) n += it.configs.size();
  return n;
}

run_plan make_plan(const registry& reg, const selection& sel, const capabilities& caps) {
  run_plan plan;
  const suite& su = sel.selected_suite;

  std::vector<std::regex> entry_regex;
  for (const auto& e : su.entries) entry_regex.push_back(compile_regex(e.filter, "suite filter"));
  std::optional<std::regex> filter;
  if (sel.filter) filter = compile_regex(*sel.filter, "--filter");

  for (const auto& owned : reg.all()) {
    const benchmark& bench = *owned;
    bool in_suite = false;
    for (const auto& re : entry_regex) in_suite = in_suite || std::regex_search(bench.name(), re);
    bool selected;
    if (sel.suite_explicit || !filter) {
      selected = in_suite && (!filter || std::regex_search(bench.name(), *filter));
    } else {
      // --filter without --suite: every matching benchmark, with the default suite's axis
      // values where that suite covers it and the code defaults where not.
      selected = std::regex_search(bench.name(), *filter);
    }
    if (!selected) continue;

    planned_benchmark item;
    item.bench = &bench;
    item.axes = bench.axes();
    for (std::size_t i = 0; i < su.entries.size(); ++i) {
      const auto& e = su.entries[i];
      if (!std::regex_search(bench.name(), entry_regex[i])) continue;
      for (const auto& [name, values] : e.axes) {
        for (auto& ax : item.axes) {
          if (ax.name != name) continue;
          try {
            ax.values = parse_axis_values(ax, suite_axis_text(values));
          } catch (const user_error& err) {
            throw user_error("suite " + su.source + ": " + bench.name() + ": " + err.what());
          }
        }
      }
    }
    plan.items.push_back(std::move(item));
  }

  // A suite axis that no benchmark matching its entry has is a typo; say so rather than silently
  // ignore it. Checked against every compiled-in benchmark the entry matches, not only those
  // --filter kept: an entry may narrow axes that only some of its benchmarks have.
  for (std::size_t i = 0; i < su.entries.size(); ++i) {
    const auto& e = su.entries[i];
    bool entry_matches_selected = false;
    for (const auto& it : plan.items) {
      entry_matches_selected =
          entry_matches_selected || std::regex_search(it.bench->name(), entry_regex[i]);
    }
    if (!entry_matches_selected) continue;
    for (const auto& [name, values] : e.axes) {
      bool known = false;
      for (const auto& owned : reg.all()) {
        known = known || (std::regex_search(owned->name(), entry_regex[i]) &&
                          owned->find_axis(name) != nullptr);
      }
      if (!known) {
        throw user_error("suite " + su.source + ": no benchmark matching '" + e.filter +
                         "' has an axis '" + name + "'");
      }
    }
  }

  if (plan.items.empty()) {
    if (sel.filter) {
      throw user_error("--filter '" + *sel.filter + "' matches no benchmark" +
                       (sel.suite_explicit ? " in suite '" + su.name + "'" : std::string()) +
                       " (see 'infrabench list')");
    }
    throw user_error("suite '" + su.name + "' selects no benchmark compiled into this binary");
  }

  // (item index, axis) pairs -a set, so an axis option naming the same axis is a clash.
  std::set<std::pair<std::size_t, std::string>> set_by_axis_flag;
  for (const auto& text : sel.axis_overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw user_error("-a '" + text + "': expected axis=value[,value...]");
    }
    const std::string name = text.substr(0, eq);
    const std::string values = text.substr(eq + 1);
    bool applied = false;
    std::string known;
    for (std::size_t k = 0; k < plan.items.size(); ++k) {
      for (auto& ax : plan.items[k].axes) {
        if (known.find(" " + ax.name + ",") == std::string::npos) known += " " + ax.name + ",";
        if (ax.name != name) continue;
        ax.values = parse_axis_values(ax, values);
        set_by_axis_flag.emplace(k, name);
        applied = true;
      }
    }
    if (!applied) {
      if (!known.empty()) known.pop_back();
      throw user_error("-a " + name + ": no selected benchmark has an axis '" + name +
                       "' (axes:" + known + ")");
    }
  }

  // Axis options (--isa avx2): -a <axis>=... restricted to the benchmarks of one group. Given
  // together with -a for the same axis of the same benchmark, neither is obviously meant, so
  // refuse rather than pick one silently.
  for (const auto& o : sel.option_axes) {
    bool applied = false;
    for (std::size_t k = 0; k < plan.items.size(); ++k) {
      auto& it = plan.items[k];
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

  exec_settings& st = plan.settings;
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

  json bench_json = json::array();
  for (auto& it : plan.items) {
    it.configs = cartesian_product(it.axes);
    for (const auto& cfg : it.configs) {
      const auto need = it.bench->memory_needed(cfg);
      if (caps.memory_available_bytes > 0 && need > caps.memory_available_bytes) {
        throw user_error(describe_config(*it.bench, cfg) + " needs " +
                         gib(static_cast<double>(need)) + " of memory; " +
                         gib(static_cast<double>(caps.memory_available_bytes)) + " is available");
      }
    }
    json axes = json::object();
    for (const auto& ax : it.axes) {
      json vals = json::array();
      for (const auto& v : ax.values) vals.push_back(value_to_json(v));
      axes[ax.name] = vals;
    }
    bench_json.push_back({{"name", it.bench->name()}, {"axes", axes}});
  }
  plan.effective_suite = {{"name", su.name},
                          {"source", su.source},
                          {"filter", sel.filter ? json(*sel.filter) : json(nullptr)},
                          {"axis_overrides", sel.axis_overrides},
                          {"benchmarks", bench_json}};
  return plan;
}

result run_one(const benchmark& bench, const config& cfg, const capabilities& caps,
               communicator& comm, const exec_settings& settings) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto fill_identity = [&](result& r) {
    r.benchmark = bench.name();
    r.axes.clear();
    r.axis_display.clear();
    for (const auto& [name, value] : cfg) {
      r.axes.emplace_back(name, value_to_json(value));
      const axis* ax = bench.find_axis(name);
      r.axis_display.push_back(ax ? format_axis_value(*ax, value) : "?");
    }
    r.rank = comm.rank();
    r.host = comm.hostname();
  };

  if (auto unmet = bench.unmet_requirements(caps); !unmet.empty()) {
    result r;
    fill_identity(r);
    r.st = status::skipped;
    r.reason = unmet;
    return r;
  }

  state st(cfg, caps, comm, settings);
  std::string error;
  try {
    bench.run(st);
  } catch (const state_exit&) {
    // skip() or fail() recorded the status and reason.
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  result r = st.finish(elapsed());
  fill_identity(r);
  for (std::size_t i = 0; i < r.axes.size(); ++i) {
    if (const auto it = st.axis_display().find(r.axes[i].first); it != st.axis_display().end())
      r.axis_display[i] = it->second;
  }
  if (!error.empty()) {
    r.st = status::failed;
    r.reason = error;
  }
  if (r.st == status::passed && r.samples_s.empty() && r.metrics.empty()) {
    r.st = status::failed;
    r.reason = "the benchmark returned without measuring anything";
  }
  if (r.st != status::passed) r.metrics.clear();
  return r;
}

std::optional<result> runner::run_multi(const benchmark& bench, const config& cfg,
                                        const exec_settings& settings) {
  const int me = m_comm.rank();
  const auto hosts = m_comm.hostnames();
  auto who = [&](int r) {
    return "rank " + std::to_string(r) + " (" +
           (r < static_cast<int>(hosts.size()) ? hosts[static_cast<std::size_t>(r)] : "?") + ")";
  };
  auto skipped = [&](std::string reason) {
    result r;
    r.benchmark = bench.name();
    for (const auto& [name, value] : cfg) {
      r.axes.emplace_back(name, value_to_json(value));
      const axis* ax = bench.find_axis(name);
      r.axis_display.push_back(ax ? format_axis_value(*ax, value) : "?");
    }
    r.rank = me;
    r.host = m_comm.hostname();
    r.st = status::skipped;
    r.reason = std::move(reason);
    return r;
  };

  if (bench.scope() == rank_scope::node) {
    if (me != m_comm.node_leader()) {
      return skipped("node-local: measured once per host, on " + m_comm.hostname() + " by rank " +
                     std::to_string(m_comm.node_leader()));
    }
    return run_one(bench, cfg, m_caps, m_comm, settings);
  }

  // Every rank must take part or none: a rank that skipped would leave the others waiting.
  const std::string unmet = bench.unmet_requirements(m_caps);
  if (m_comm.allreduce_max(unmet.empty() ? 0.0 : 1.0) > 0) {
    const auto all = m_comm.gather_strings(unmet);
    std::string reason;
    if (me == 0) {
      std::string first;
      std::vector<int> ranks;
      for (std::size_t r = 0; r < all.size(); ++r) {
        if (all[r].empty()) continue;
        if (first.empty()) first = all[r];
        if (all[r] == first) ranks.push_back(static_cast<int>(r));
      }
      reason =
          ranks.size() == all.size()
              ? first
              : who(ranks.front()) +
                    (ranks.size() > 1 ? " and " + std::to_string(ranks.size() - 1) + " more" : "") +
                    ": " + first + " (every rank must take part)";
    }
    return skipped(m_comm.broadcast_string(reason));
  }

  // The benchmark checks the configuration's time limit itself, consistently on every rank
  // (communicator::config_timeout); the local check between samples is only a backstop, later,
  // so that no rank leaves the sampling loop while the others go on into the next collective.
  exec_settings own = settings;
  own.timeout_s = settings.timeout_s * 1.25 + 5;
  result r = run_one(bench, cfg, m_caps, m_comm, own);
  if (bench.scope() == rank_scope::every_rank) return r;

  // A collective: rank 0 records it; other ranks' failures and failed checks fold into it.
  nlohmann::json mine = {{"status", std::string(to_string(r.st))},
                         {"reason", r.reason},
                         {"invalid", r.invalid_reasons}};
  const auto all = m_comm.gather_strings(mine.dump());
  if (me != 0) return std::nullopt;
  for (std::size_t k = 1; k < all.size(); ++k) {
    const auto other = nlohmann::json::parse(all[k]);
    const std::string prefix = who(static_cast<int>(k)) + ": ";
    if (other["status"] == "failed" && r.st != status::failed) {
      r.st = status::failed;
      r.reason = prefix + other["reason"].get<std::string>();
      r.metrics.clear();
    }
    for (const auto& why : other["invalid"]) {
      // The samples are the same on every rank (the max over ranks): so is their noise verdict.
      const auto text = why.get<std::string>();
      if (std::find(r.invalid_reasons.begin(), r.invalid_reasons.end(), text) !=
          r.invalid_reasons.end())
        continue;
      r.valid = false;
      r.invalid_reasons.push_back(prefix + text);
    }
  }
  return r;
}

std::vector<result> runner::run(const run_plan& plan, const run_callbacks& cb,
                                const std::atomic<bool>* interrupted) {
  std::vector<result> results;
  exec_settings settings = plan.settings;
  settings.interrupted = interrupted;
  settings.earlier = &results;
  const bool multi = m_comm.size() > 1;

  // The watchdog: a benchmark stuck inside one call (a hung syscall, a dead peer) never reaches
  // the cooperative timeout check between samples. Past timeout + grace it reports the hang.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  const planned_benchmark* current_item = nullptr;
  const config* current_cfg = nullptr;
  auto current_start = std::chrono::steady_clock::now();
  const double grace = std::max(5.0, 0.5 * settings.timeout_s);
  std::thread watchdog;
  if (cb.on_hung) {
    watchdog = std::thread([&] {
      std::unique_lock lock(mu);
      while (!done) {
        cv.wait_for(lock, std::chrono::milliseconds(200));
        if (done || !current_item) continue;
        const double running =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - current_start).count();
        if (running > settings.timeout_s + grace) {
          cb.on_hung(*current_item, *current_cfg, running);
          return;
        }
      }
    });
  }
  // How long a rank may wait for the others at the start of a configuration: they may still be
  // running the previous one (up to its timeout and the watchdog's grace).
  const double sync_wait =
      settings.timeout_s * 1.25 + 5 + grace + std::max(10.0, m_comm.op_timeout());

  std::size_t index = 0;
  const std::size_t total = plan.total_configs();
  bool stopped = false;
  for (const auto& item : plan.items) {
    for (const auto& cfg : item.configs) {
      const bool stop = interrupted && *interrupted;
      if (multi) {
        const std::string label = describe_config(*item.bench, cfg);
        m_comm.set_activity(label, settings.timeout_s);
        try {
          stopped = m_comm.sync_config(std::hash<std::string>{}(label), sync_wait, stop);
          m_comm.set_activity(label, settings.timeout_s);  // the configuration's clock starts now
        } catch (const std::exception& e) {
          m_comm.fail_job(std::string("before ") + label + ": " + e.what());
        }
      } else {
        stopped = stop;
      }
      if (stopped) break;
      if (cb.on_start) cb.on_start(item, cfg, index, total);
      {
        std::lock_guard lock(mu);
        current_item = &item;
        current_cfg = &cfg;
        current_start = std::chrono::steady_clock::now();
      }
      std::optional<result> r;
      if (!multi) {
        r = run_one(*item.bench, cfg, m_caps, m_comm, settings);
      } else {
        try {
          r = run_multi(*item.bench, cfg, settings);
        } catch (const std::exception& e) {
          // The harness's own agreement steps failed (an MPI error): the ranks can no longer be
          // kept in step, so the job ends, naming this rank.
          m_comm.fail_job(describe_config(*item.bench, cfg) + ": " + e.what());
        }
      }
      {
        std::lock_guard lock(mu);
        current_item = nullptr;
      }
      if (r) {
        if (cb.on_finished) cb.on_finished(*r);
        if (cb.on_result) cb.on_result(*r);
        results.push_back(std::move(*r));
      }
      ++index;
    }
    if (stopped) break;
  }
  if (multi) {
    // Finish together: the gather that follows must not time out while a host still measures.
    m_comm.set_activity("end of run", settings.timeout_s);
    try {
      (void)m_comm.sync_config(std::hash<std::string>{}("end of run"), sync_wait, false);
    } catch (const std::exception& e) {
      m_comm.fail_job(std::string("at the end of the run: ") + e.what());
    }
  }
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  if (watchdog.joinable()) watchdog.join();
  return results;
}

}  // namespace infrabench

// ---- multi-rank run options --------------------------------------------------------------------

namespace infrabench {
namespace {

INFRABENCH_RUN_OPTION(
    g_opt_op_timeout, "op-timeout", "30",
    "multi-rank runs: seconds one communicating operation (a collective, a message, a "
    "synchronisation) may take before the run fails, naming the rank that stopped answering "
    "(0 = no limit)");
INFRABENCH_RUN_OPTION(
    g_opt_outlier_z, "outlier-z", "3.5",
    "multi-host runs: robust z-score (median/MAD) beyond which a host's result or a link is "
    "flagged as an outlier");
INFRABENCH_RUN_OPTION(
    g_opt_outlier_dev, "outlier-min-dev", "0.2",
    "multi-host runs: least distance from the median of the hosts, as a fraction of it, for an "
    "outlier to be flagged");

double number_option(const option_values& opts, const std::string& name,
                     const std::string& fallback, double low, bool low_inclusive) {
  const auto it = opts.find(name);
  const std::string text = it == opts.end() ? fallback : it->second;
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v) || v < low ||
      (!low_inclusive && v == low)) {
    char bound[64];
    std::snprintf(bound, sizeof(bound), "%s %g", low_inclusive ? ">=" : ">", low);
    throw user_error("--" + name + " '" + text + "': expected a number " + bound);
  }
  return v;
}

[[maybe_unused]] const bool g_validate_options =
    register_pre_run_hook([](const option_values& opts) {
      (void)op_timeout_option(opts);
      (void)outlier_options(opts);
    });

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

std::string fmt(double v) {
  char buf[32];
  const double a = std::fabs(v);
  std::snprintf(buf, sizeof(buf),
                a >= 100  ? "%.0f"
                : a >= 10 ? "%.1f"
                : a >= 1  ? "%.2f"
                          : "%.3g",
                v);
  return buf;
}

std::string axes_text(const json& r) {
  std::string out;
  const json disp = r.value("axes_display", json::object());
  for (const auto& [k, v] : r.at("axes").items()) {
    out += " " + k + "=" +
           (disp.contains(k) ? disp[k].get<std::string>()
            : v.is_string()  ? v.get<std::string>()
                             : v.dump());
  }
  return out;
}

bool is_outlier(double v, double median, double z, bool higher_is_better,
                const outlier_settings& s) {
  if (higher_is_better) return z < -s.z_threshold && v < median * (1 - s.min_deviation);
  return z > s.z_threshold && v > median * (1 + s.min_deviation);
}

std::string percent_off(double v, double median) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f%%",
                median != 0 ? std::fabs(v - median) / std::fabs(median) * 100 : 0.0);
  return buf;
}

constexpr const char* pairwise_name = "collectives/pairwise";
constexpr const char* pairwise_bw = "bandwidth_gbps_to_rank_";
constexpr const char* pairwise_lat = "latency_us_to_rank_";

// Directed host-to-host values of one pairwise configuration: (from, to) -> values over rank pairs.
using link_map = std::map<std::pair<std::string, std::string>, std::vector<double>>;

void collect_pairwise(const std::vector<const json*>& rs, const std::string& prefix,
                      link_map& out) {
  std::map<int, std::string> host_of;
  for (const auto* r : rs) host_of[r->at("rank").get<int>()] = r->at("host").get<std::string>();
  for (const auto* r : rs) {
    const std::string from = r->at("host").get<std::string>();
    for (const auto& m : r->at("metrics")) {
      const auto name = m.at("name").get<std::string>();
      if (name.rfind(prefix, 0) != 0) continue;
      const int peer = std::atoi(name.c_str() + prefix.size());
      const auto it = host_of.find(peer);
      if (it == host_of.end() || it->second == from) continue;
      out[{from, it->second}].push_back(m.at("value").get<double>());
    }
  }
}

void analyse_links(const link_map& directed, bool higher_is_better, const std::string& metric,
                   const std::string& unit, const json& sample, const outlier_settings& s,
                   json& findings) {
  // A link's value: its worse direction (a shaper or a bad cable may slow one direction only).
  std::map<std::pair<std::string, std::string>, double> links;
  std::set<std::string> host_set;
  for (const auto& [ab, vals] : directed) {
    const auto key = ab.first < ab.second ? ab : std::make_pair(ab.second, ab.first);
    const double v = median_of(vals);
    auto [it, fresh] = links.emplace(key, v);
    if (!fresh) it->second = higher_is_better ? std::min(it->second, v) : std::max(it->second, v);
    host_set.insert(ab.first);
    host_set.insert(ab.second);
  }
  if (host_set.size() < 3) return;
  const std::string what = sample.at("benchmark").get<std::string>() + axes_text(sample);
  // A host's best link: when even that is slow, the host (its NIC, its cable, its switch port) is
  // the likely culprit, not each of its links.
  std::map<std::string, double> best;
  for (const auto& [ab, v] : links) {
    for (const auto& h : {ab.first, ab.second}) {
      auto [it, fresh] = best.emplace(h, v);
      if (!fresh) it->second = higher_is_better ? std::max(it->second, v) : std::min(it->second, v);
    }
  }
  std::vector<double> scores;
  for (const auto& [h, v] : best) scores.push_back(v);
  const double median_best = median_of(scores);
  std::set<std::string> culprits;
  for (const auto& [h, v] : best) {
    const double z = robust_z(v, scores);
    if (!is_outlier(v, median_best, z, higher_is_better, s)) continue;
    culprits.insert(h);
    findings.push_back(
        {{"kind", "culprit_host"},
         {"host", h},
         {"benchmark", sample.at("benchmark")},
         {"axes", sample.at("axes")},
         {"metric", metric},
         {"unit", unit},
         {"value", v},
         {"median", median_best},
         {"robust_z", z},
         {"text", h + ": " + what + ": every link of " + h + " is " +
                      (higher_is_better ? "slow" : "slow to answer") + " (its best link " + fmt(v) +
                      " " + unit + " vs " + fmt(median_best) + " " + unit +
                      ", the median host's best; robust z " + fmt(z) + "): likely the culprit"}});
  }
  std::vector<double> reference;
  for (const auto& [ab, v] : links) {
    if (!culprits.count(ab.first) && !culprits.count(ab.second)) reference.push_back(v);
  }
  if (reference.size() < 3) return;
  const double median_link = median_of(reference);
  for (const auto& [ab, v] : links) {
    if (culprits.count(ab.first) || culprits.count(ab.second)) continue;
    const double z = robust_z(v, reference);
    if (!is_outlier(v, median_link, z, higher_is_better, s)) continue;
    findings.push_back(
        {{"kind", "slow_link"},
         {"host", ab.first},
         {"peer", ab.second},
         {"benchmark", sample.at("benchmark")},
         {"axes", sample.at("axes")},
         {"metric", metric},
         {"unit", unit},
         {"value", v},
         {"median", median_link},
         {"robust_z", z},
         {"text", ab.first + "-" + ab.second + ": " + what + ": link " + metric + " " + fmt(v) +
                      " " + unit + " is " + percent_off(v, median_link) +
                      (higher_is_better ? " below" : " above") + " the median link (" +
                      fmt(median_link) + " " + unit + "; robust z " + fmt(z) + ")"}});
  }
}

}  // namespace

double op_timeout_option(const option_values& opts) {
  return number_option(opts, "op-timeout", "30", 0, true);
}

outlier_settings outlier_options(const option_values& opts) {
  outlier_settings s;
  s.z_threshold = number_option(opts, "outlier-z", "3.5", 0, false);
  s.min_deviation = number_option(opts, "outlier-min-dev", "0.2", 0, true);
  return s;
}

double robust_z(double x, const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double med = median_of(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values) dev.push_back(std::fabs(v - med));
  const double mad = std::max(median_of(dev), 0.01 * std::fabs(med));
  if (mad == 0) return 0;
  return (x - med) / (1.4826 * mad);
}

json find_outliers(const json& results, const outlier_settings& s) {
  json findings = json::array();
  // Passed results grouped by configuration, in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> groups;
  for (const auto& r : results) {
    if (r.at("status") != "passed") continue;
    const std::string key = r.at("benchmark").get<std::string>() + " " + r.at("axes").dump();
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  for (const auto& key : order) {
    const auto& rs = groups[key];
    const json& sample = *rs.front();
    if (sample.at("benchmark") == pairwise_name) {
      link_map bw, lat;
      collect_pairwise(rs, pairwise_bw, bw);
      collect_pairwise(rs, pairwise_lat, lat);
      analyse_links(bw, true, "bandwidth_gbps", "GB/s", sample, s, findings);
      analyse_links(lat, false, "latency_us", "us", sample, s, findings);
      continue;
    }
    // Per host: the median over its ranks of each metric.
    std::map<std::string, std::map<std::string, std::vector<double>>>
        per_metric;  // metric -> host -> values
    std::map<std::string, const json*> metric_info;
    for (const auto* r : rs) {
      for (const auto& m : r->at("metrics")) {
        const auto name = m.at("name").get<std::string>();
        per_metric[name][r->at("host").get<std::string>()].push_back(m.at("value").get<double>());
        metric_info.emplace(name, &m);
      }
    }
    for (const auto& [name, by_host] : per_metric) {
      if (by_host.size() < 3) continue;
      std::vector<double> values;
      for (const auto& [h, v] : by_host) values.push_back(median_of(v));
      const double med = median_of(values);
      const json& info = *metric_info[name];
      const bool higher = info.at("better") == "higher";
      const std::string unit = info.at("unit").get<std::string>();
      for (const auto& [h, v] : by_host) {
        const double x = median_of(v);
        const double z = robust_z(x, values);
        if (!is_outlier(x, med, z, higher, s)) continue;
        findings.push_back(
            {{"kind", "host_metric"},
             {"host", h},
             {"benchmark", sample.at("benchmark")},
             {"axes", sample.at("axes")},
             {"metric", name},
             {"unit", unit},
             {"value", x},
             {"median", med},
             {"robust_z", z},
             {"text", h + ": " + sample.at("benchmark").get<std::string>() + axes_text(sample) +
                          ": " + name + " " + fmt(x) + " " + unit + " is " + percent_off(x, med) +
                          (higher ? " below" : " above") + " the median of " +
                          std::to_string(by_host.size()) + " hosts (" + fmt(med) + " " + unit +
                          "; robust z " + fmt(z) + ")"}});
      }
    }
  }
  return findings;
}

void print_cluster_summary(std::ostream& out, const json& results, const json& findings,
                           const outlier_settings& s) {
  // Hosts in rank order, with their ranks and what they measured.
  std::vector<std::string> hosts;
  std::map<std::string, std::set<int>> ranks;
  std::map<std::string, std::array<int, 4>> counts;  // passed, invalid, failed, findings
  for (const auto& r : results) {
    const auto h = r.at("host").get<std::string>();
    if (!ranks.count(h)) hosts.push_back(h);
    ranks[h].insert(r.at("rank").get<int>());
    auto& c = counts[h];
    const auto st = r.at("status").get<std::string>();
    c[0] += st == "passed";
    c[1] += st == "passed" && !r.at("valid").get<bool>();
    c[2] += st == "failed";
  }
  for (const auto& f : findings) {
    ++counts[f.at("host").get<std::string>()][3];
    if (f.contains("peer")) ++counts[f.at("peer").get<std::string>()][3];
  }
  std::size_t world = 0;
  for (const auto& [h, rs] : ranks) world += rs.size();
  out << "cluster: " << hosts.size() << (hosts.size() == 1 ? " host, " : " hosts, ") << world
      << " ranks with results\n";
  std::vector<std::vector<std::string>> rows{
      {"host", "ranks", "passed", "invalid", "failed", "outliers"}};
  for (const auto& h : hosts) {
    std::string rl;
    for (int r : ranks[h]) rl += (rl.empty() ? "" : ",") + std::to_string(r);
    const auto& c = counts[h];
    rows.push_back({h, rl, std::to_string(c[0]), std::to_string(c[1]), std::to_string(c[2]),
                    std::to_string(c[3])});
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string line = " ";
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      const auto& cell = rows[i][c];
      line += " " + (c == 0 ? cell + std::string(width[c] - cell.size(), ' ')
                            : std::string(width[c] - cell.size(), ' ') + cell);
    }
    out << line << "\n";
    if (i == 0) {
      std::string rule = " ";
      for (auto w : width) rule += " " + std::string(w, '-');
      out << rule << "\n";
    }
  }
  char crit[160];
  std::snprintf(crit, sizeof(crit),
                "robust z beyond %g and at least %.0f%% from the median of the hosts",
                s.z_threshold, s.min_deviation * 100);
  if (hosts.size() < 3) {
    out << "outliers: not analysed (needs at least 3 hosts)\n";
  } else if (findings.empty()) {
    out << "outliers: none (" << crit << ")\n";
  } else {
    out << "outliers (" << crit << "):\n";
    for (const auto& f : findings) out << "  " << f.at("text").get<std::string>() << "\n";
  }

  // Pairwise: the host-to-host bandwidth matrix (row sends to column), median over rank pairs.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> groups;
  for (const auto& r : results) {
    if (r.at("benchmark") != pairwise_name || r.at("status") != "passed") continue;
    const std::string key = r.at("axes").dump();
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  for (const auto& key : order) {
    link_map bw;
    collect_pairwise(groups[key], pairwise_bw, bw);
    std::vector<std::string> hs;
    for (const auto& [ab, v] : bw) {
      for (const auto& h : {ab.first, ab.second}) {
        if (std::find(hs.begin(), hs.end(), h) == hs.end()) hs.push_back(h);
      }
    }
    if (hs.size() < 2 || hs.size() > 16) continue;
    std::sort(hs.begin(), hs.end(), [&](const std::string& a, const std::string& b) {
      return std::find(hosts.begin(), hosts.end(), a) < std::find(hosts.begin(), hosts.end(), b);
    });
    out << "pairwise bandwidth, GB/s (row sends to column):" << axes_text(*groups[key].front())
        << "\n";
    std::size_t w = 6;
    for (const auto& h : hs) w = std::max(w, h.size());
    auto cell = [&](const std::string& t) {
      return std::string(w + 2 - std::min(w + 2, t.size()), ' ') + t;
    };
    std::string head = "  " + std::string(w, ' ');
    for (const auto& h : hs) head += cell(h);
    out << head << "\n";
    for (const auto& a : hs) {
      std::string line = "  " + a + std::string(w - a.size(), ' ');
      for (const auto& b : hs) {
        const auto it = bw.find({a, b});
        line += cell(a == b ? "-" : it == bw.end() ? "?" : fmt(median_of(it->second)));
      }
      out << line << "\n";
    }
  }
}

}  // namespace infrabench
