#include "infrabench/runner.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <thread>

#include "infrabench/communicator.h"
#include "infrabench/error.h"

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

  std::vector<bool> entry_axis_used;
  for (const auto& e : su.entries)
    entry_axis_used.insert(entry_axis_used.end(), e.axes.size(), false);

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
    std::size_t flat = 0;
    for (std::size_t i = 0; i < su.entries.size(); ++i) {
      const auto& e = su.entries[i];
      const bool matches = std::regex_search(bench.name(), entry_regex[i]);
      for (const auto& [name, values] : e.axes) {
        const std::size_t k = flat++;
        if (!matches) continue;
        for (auto& ax : item.axes) {
          if (ax.name != name) continue;
          try {
            ax.values = parse_axis_values(ax, suite_axis_text(values));
          } catch (const user_error& err) {
            throw user_error("suite " + su.source + ": " + bench.name() + ": " + err.what());
          }
          entry_axis_used[k] = true;
        }
      }
    }
    plan.items.push_back(std::move(item));
  }

  // A suite axis no benchmark it selects has is a typo; say so rather than silently ignore it.
  {
    std::size_t flat = 0;
    for (const auto& e : su.entries) {
      bool entry_matches_selected = false;
      for (const auto& it : plan.items) {
        entry_matches_selected =
            entry_matches_selected ||
            std::regex_search(it.bench->name(), compile_regex(e.filter, "suite filter"));
      }
      for (const auto& [name, values] : e.axes) {
        if (entry_matches_selected && !entry_axis_used[flat]) {
          throw user_error("suite " + su.source + ": no benchmark matching '" + e.filter +
                           "' has an axis '" + name + "'");
        }
        ++flat;
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

  for (const auto& text : sel.axis_overrides) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw user_error("-a '" + text + "': expected axis=value[,value...]");
    }
    const std::string name = text.substr(0, eq);
    const std::string values = text.substr(eq + 1);
    bool applied = false;
    std::string known;
    for (auto& it : plan.items) {
      for (auto& ax : it.axes) {
        if (known.find(" " + ax.name + ",") == std::string::npos) known += " " + ax.name + ",";
        if (ax.name != name) continue;
        ax.values = parse_axis_values(ax, values);
        applied = true;
      }
    }
    if (!applied) {
      if (!known.empty()) known.pop_back();
      throw user_error("-a " + name + ": no selected benchmark has an axis '" + name +
                       "' (axes:" + known + ")");
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

std::vector<result> runner::run(const run_plan& plan, const run_callbacks& cb,
                                const std::atomic<bool>* interrupted) {
  std::vector<result> results;
  exec_settings settings = plan.settings;
  settings.interrupted = interrupted;
  settings.earlier = &results;

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

  std::size_t index = 0;
  const std::size_t total = plan.total_configs();
  for (const auto& item : plan.items) {
    for (const auto& cfg : item.configs) {
      if (interrupted && *interrupted) break;
      if (cb.on_start) cb.on_start(item, cfg, index, total);
      {
        std::lock_guard lock(mu);
        current_item = &item;
        current_cfg = &cfg;
        current_start = std::chrono::steady_clock::now();
      }
      result r = run_one(*item.bench, cfg, m_caps, m_comm, settings);
      {
        std::lock_guard lock(mu);
        current_item = nullptr;
      }
      if (cb.on_result) cb.on_result(r);
      results.push_back(std::move(r));
      ++index;
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
