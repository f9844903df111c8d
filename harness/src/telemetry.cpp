// The telemetry sampler thread, its traces, and the per-configuration summaries.
#include "infrabench/telemetry.h"
#include "infrabench/machine_load.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace infrabench::telemetry {

void detail_clear_active(const session* s);  // telemetry_run.cpp

namespace {

using json = nlohmann::json;
constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

// Rounded so that a long trace stays small in the report (and no false precision is shown).
double rounded(double v, double step) {
  return std::isnan(v) ? v : std::round(v / step) * step;
}

json series_json(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(std::isnan(x) ? json(nullptr) : json(x));
  return a;
}

json counters_json(const counter_set& c) {
  json o = json::object();
  for (const auto& [k, v] : c) o[k] = v;
  return o;
}

bool any_value(const std::vector<double>& v, std::size_t lo, std::size_t hi) {
  for (std::size_t i = lo; i < hi; ++i) {
    if (!std::isnan(v[i])) return true;
  }
  return false;
}

metric info_metric(std::string name, std::string unit, double value, std::string method) {
  metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.value = m.best = value;
  m.higher_is_better = true;
  m.method = std::move(method);
  m.role = metric_role::information;
  return m;
}

}  // namespace

series_stats stats_of(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return std::isnan(x); }),
               values.end());
  series_stats s;
  s.n = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  const std::size_t h = values.size() / 2;
  s.median = values.size() % 2 ? values[h] : (values[h - 1] + values[h]) / 2;
  double sum = 0;
  for (double x : values) sum += x;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

session::session(options o) : m_opt(std::move(o)) {
  m_t0 = std::chrono::steady_clock::now();
}

session::~session() {
  stop();
  detail_clear_active(this);
}

double session::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
}

void session::start() {
  if (m_started) return;
  m_started = true;
  m_cpu_source = std::make_unique<cpu_source>(m_opt.sysfs_root);
  m_cpu_sources = m_cpu_source->sources();
  m_cpu.before = m_cpu.last = m_cpu_source->counters();
  nvml::library* lib = m_opt.nvml;
  if (lib && lib->available()) {
    for (unsigned i = 0; i < lib->device_count(); ++i) {
      gpu_trace g;
      g.index = i;
      g.name = lib->name(i);
      g.before = g.last_ecc = lib->counters(i);
      m_gpus.push_back(std::move(g));
    }
    lib->watch_xids();
    m_xids_watched = lib->watching_xids();
    m_xid_reason = lib->xid_reason();
    if (!m_xids_watched && m_xid_reason.empty()) m_xid_reason = "no GPU to watch";
  } else {
    m_xid_reason = lib ? lib->reason() : "no NVML";
  }
  m_t0 = std::chrono::steady_clock::now();
  take_sample();
  m_thread = std::thread([this] { loop(); });
}

void session::stop() {
  {
    std::lock_guard lock(m_mu);
    if (!m_started || m_stop) return;
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
  take_sample();  // the last reading, so a trace always ends at the end of the run
  const counter_set cpu_after = m_cpu_source->counters();
  std::vector<counter_set> gpu_after;
  for (const auto& g : m_gpus) gpu_after.push_back(m_opt.nvml->counters(g.index));
  std::lock_guard lock(m_mu);
  m_cpu.after = cpu_after;
  for (std::size_t i = 0; i < m_gpus.size(); ++i) m_gpus[i].after = gpu_after[i];
  m_stopped_t = now_s();
}

void session::loop() {
  pthread_setname_np(pthread_self(), "ib-telemetry");
  const auto period = std::chrono::duration<double>(m_opt.interval_s);
  auto next = std::chrono::steady_clock::now();
  std::size_t ticks = 0;
  std::unique_lock lock(m_mu);
  while (!m_stop) {
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;  // fell behind (a stopped VM): no burst of catch-up samples
    m_cv.wait_until(lock, next, [&] { return m_stop || m_requested > m_taken; });
    if (m_stop) break;
    if (m_paused && m_requested <= m_taken) continue;
    const std::size_t target = m_requested;
    lock.unlock();
    take_sample();
    // Error counters once a second: cheap, and an event's time is then known to a second.
    if (++ticks % std::max<std::size_t>(1, static_cast<std::size_t>(1.0 / m_opt.interval_s)) == 0)
      poll_errors(now_s());
    m_sampler_cpu_s.store(thread_cpu_seconds());
    lock.lock();
    m_taken = std::max(m_taken, target);
    m_sampled.notify_all();
  }
}

void session::take_sample() {
  const double t = now_s();
  const cpu_source::reading c = m_cpu_source->read();
  std::vector<nvml::gpu_sample> gs;
  gs.reserve(m_gpus.size());
  for (const auto& g : m_gpus) gs.push_back(m_opt.nvml->sample(g.index));
  std::vector<nvml::xid_event> xids;
  if (m_xids_watched) xids = m_opt.nvml->poll_xids();
  std::lock_guard lock(m_mu);
  m_t.push_back(rounded(t, 0.001));
  m_cpu.freq_mean.push_back(rounded(c.freq_mhz_mean, 1));
  m_cpu.freq_min.push_back(rounded(c.freq_mhz_min, 1));
  m_cpu.freq_max.push_back(rounded(c.freq_mhz_max, 1));
  m_cpu.temp.push_back(rounded(c.package_temp_c, 0.1));
  m_cpu.power.push_back(rounded(c.package_power_w, 0.1));
  for (std::size_t i = 0; i < m_gpus.size(); ++i) {
    auto& g = m_gpus[i];
    g.sm.push_back(gs[i].sm_clock_mhz);
    g.mem.push_back(gs[i].mem_clock_mhz);
    g.power.push_back(rounded(gs[i].power_w, 0.1));
    g.temp.push_back(gs[i].temp_c);
    g.reasons.push_back(gs[i].throttle_reasons);
    g.pcie_gen.push_back(gs[i].pcie_gen);
    g.pcie_width.push_back(gs[i].pcie_width);
  }
  for (const auto& x : xids) {
    m_events.push_back({rounded(t, 0.001), "xid", static_cast<int>(x.gpu),
                        "XID " + describe_xid(x.xid), static_cast<double>(x.xid)});
  }
}

void session::poll_errors(double t) {
  const counter_set cpu_now = m_cpu_source->counters();
  std::vector<counter_set> gpu_now;
  for (const auto& g : m_gpus) gpu_now.push_back(m_opt.nvml->ecc_volatile(g.index));
  std::lock_guard lock(m_mu);
  auto grew = [&](const counter_set& last, const counter_set& now, const char* key,
                  const char* kind, int gpu, const char* what) {
    const auto a = last.find(key), b = now.find(key);
    if (a == last.end() || b == now.end() || b->second <= a->second) return;
    m_events.push_back({rounded(t, 0.001), kind, gpu,
                        std::string(what) + ": " +
                            std::to_string(static_cast<long long>(a->second)) + " -> " +
                            std::to_string(static_cast<long long>(b->second)),
                        b->second});
  };
  grew(m_cpu.last, cpu_now, "edac_ce", "edac_ce", -1, "EDAC corrected memory errors");
  grew(m_cpu.last, cpu_now, "edac_ue", "edac_ue", -1, "EDAC uncorrected memory errors");
  grew(m_cpu.last, cpu_now, "mce_events", "mce", -1, "machine-check exceptions");
  m_cpu.last = cpu_now;
  for (std::size_t i = 0; i < m_gpus.size(); ++i) {
    const int gpu = static_cast<int>(m_gpus[i].index);
    grew(m_gpus[i].last_ecc, gpu_now[i], "ecc_sbe_volatile", "ecc_sbe", gpu,
         "ECC single-bit errors (volatile)");
    grew(m_gpus[i].last_ecc, gpu_now[i], "ecc_dbe_volatile", "ecc_dbe", gpu,
         "ECC double-bit errors (volatile)");
    for (const auto& [k, v] : gpu_now[i]) m_gpus[i].last_ecc[k] = v;
  }
}

void session::begin_window() {
  std::lock_guard lock(m_mu);
  m_window_t0 = now_s();
  ++m_requested;  // a sample at the start, so that a short configuration still has one
  m_cv.notify_all();
}

void session::end_window(result& r) {
  double t0 = 0, t1 = 0;
  {
    std::unique_lock lock(m_mu);
    t0 = m_window_t0;
    if (!m_stop && m_thread.joinable()) {
      const std::size_t want = ++m_requested;
      m_cv.notify_all();
      // Bounded: a driver call that hangs must not hang the run with it.
      m_sampled.wait_for(lock, std::chrono::seconds(2), [&] { return m_taken >= want || m_stop; });
    }
    t1 = now_s();
  }
  summarize(r, t0, t1);
}

void session::set_paused(bool paused) {
  std::lock_guard lock(m_mu);
  m_paused = paused;
}

std::pair<std::size_t, std::size_t> session::window(double t0, double t1) const {
  const auto lo = std::lower_bound(m_t.begin(), m_t.end(), t0 - 0.0005);
  const auto hi = std::upper_bound(m_t.begin(), m_t.end(), t1 + 0.0005);
  return {static_cast<std::size_t>(lo - m_t.begin()), static_cast<std::size_t>(hi - m_t.begin())};
}

namespace {

// What the GPUs' samples in one configuration's window say (session::summarize_gpus).
struct gpu_window {
  // Clocks of busy GPUs only: an idle GPU beside the one a benchmark uses would otherwise be
  // its minimum. All samples when every GPU was idle.
  std::vector<double> sm_busy, sm_all, temp, power;
  std::size_t slowed = 0, known = 0;       // samples with a slowing reason, with any reason
  std::map<std::string, std::size_t> why;  // slowing reason -> samples
  std::vector<std::string> notes;          // GPUs in thermal or hardware slowdown
};

// One GPU's samples [lo, hi) into `w`.
void scan_gpu(unsigned index, const std::vector<double>& sm, const std::vector<double>& temp,
              const std::vector<double>& power, const std::vector<double>& reasons, std::size_t lo,
              std::size_t hi, gpu_window& w) {
  std::size_t serious_n = 0, known_n = 0;
  unsigned long long bits = 0;
  for (std::size_t i = lo; i < hi; ++i) {
    w.sm_all.push_back(sm[i]);
    w.temp.push_back(temp[i]);
    w.power.push_back(power[i]);
    if (std::isnan(reasons[i])) continue;
    const auto mask = static_cast<unsigned long long>(reasons[i]);
    if (!(mask & 0x1)) w.sm_busy.push_back(sm[i]);
    ++w.known;
    ++known_n;
    bool slow = false, serious = false;
    for (const auto& b : nvml::reason_bits()) {
      if (!(mask & b.bit) || !b.slows) continue;
      slow = true;
      serious = serious || b.serious;
      ++w.why[b.name];
      bits |= b.bit;
    }
    w.slowed += slow;
    serious_n += serious;
  }
  if (serious_n > 0) {
    w.notes.push_back("telemetry: GPU " + std::to_string(index) + " in thermal or hardware " +
                      "slowdown for " +
                      std::to_string(static_cast<int>(100.0 * serious_n / known_n + 0.5)) +
                      "% of this configuration (" + nvml::reason_names(bits) + ")");
  }
}

// The window's GPU metrics; `over` says what they are taken over.
void gpu_window_metrics(const gpu_window& w, const std::string& over, std::vector<metric>& ms) {
  const auto sm = stats_of(w.sm_busy.empty() ? w.sm_all : w.sm_busy);
  if (sm.n > 0) {
    const std::string which =
        w.sm_busy.empty() ? "all samples (every GPU idle)" : "samples of GPUs not idle";
    ms.push_back(info_metric("gpu_sm_clock_mhz_min", "MHz", sm.min,
                             "NVML SM clock, minimum " + over + ", " + which));
    ms.push_back(info_metric("gpu_sm_clock_mhz_median", "MHz", sm.median,
                             "NVML SM clock, median " + over + ", " + which));
    ms.push_back(info_metric("gpu_sm_clock_mhz_max", "MHz", sm.max,
                             "NVML SM clock, maximum " + over + ", " + which));
  }
  if (const auto t = stats_of(w.temp); t.n > 0)
    ms.push_back(
        info_metric("gpu_temp_c_max", "C", t.max, "NVML GPU temperature, hottest " + over));
  if (const auto p = stats_of(w.power); p.n > 0)
    ms.push_back(
        info_metric("gpu_power_w_mean", "W", p.mean, "NVML board power, mean per GPU " + over));
  if (w.known == 0) return;
  const auto known = static_cast<double>(w.known);
  ms.push_back(info_metric("gpu_throttled_fraction", "ratio", static_cast<double>(w.slowed) / known,
                           "share of GPU samples with a clock event reason that slows the "
                           "clock (power cap, thermal, hardware slowdown) " +
                               over));
  for (const auto& [name, count] : w.why) {
    ms.push_back(info_metric("gpu_throttle_" + name + "_fraction", "ratio",
                             static_cast<double>(count) / known,
                             "share of GPU samples with clock event reason " + name + " " + over));
  }
}

}  // namespace

void session::summarize_gpus(std::size_t lo, std::size_t hi, std::vector<metric>& ms,
                             std::vector<std::string>& notes) const {
  if (m_gpus.empty()) return;
  gpu_window w;
  for (const auto& g : m_gpus) scan_gpu(g.index, g.sm, g.temp, g.power, g.reasons, lo, hi, w);
  for (auto& n : w.notes) notes.push_back(std::move(n));
  gpu_window_metrics(w,
                     "over " + std::to_string(m_gpus.size()) + " GPU(s), " +
                         std::to_string(hi - lo) + " samples in this configuration's time window",
                     ms);
}

void session::summarize_cpu(std::size_t lo, std::size_t hi, std::vector<metric>& ms) const {
  auto slice = [&](const std::vector<double>& v) {
    return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(lo),
                               v.begin() + static_cast<std::ptrdiff_t>(hi));
  };
  const std::string n_text = std::to_string(hi - lo) + " samples";
  const std::string cpu_over = "over the cores, " + n_text + " in this configuration's window";
  if (any_value(m_cpu.freq_mean, lo, hi)) {
    const auto mean = stats_of(slice(m_cpu.freq_mean));
    ms.push_back(info_metric("cpu_freq_mhz_min", "MHz", stats_of(slice(m_cpu.freq_min)).min,
                             "cpufreq: slowest core at any sample, " + cpu_over));
    ms.push_back(info_metric("cpu_freq_mhz_median", "MHz", mean.median,
                             "cpufreq: median of the per-sample mean " + cpu_over));
    ms.push_back(info_metric("cpu_freq_mhz_max", "MHz", stats_of(slice(m_cpu.freq_max)).max,
                             "cpufreq: fastest core at any sample, " + cpu_over));
  }
  if (any_value(m_cpu.temp, lo, hi))
    ms.push_back(info_metric("cpu_package_temp_c_max", "C", stats_of(slice(m_cpu.temp)).max,
                             "hottest CPU package sensor, " + n_text));
  if (any_value(m_cpu.power, lo, hi))
    ms.push_back(info_metric("cpu_package_power_w_mean", "W", stats_of(slice(m_cpu.power)).mean,
                             "RAPL energy of all packages over time, mean of " + n_text));
}

void session::summarize(result& r, double t0, double t1) const {
  std::lock_guard lock(m_mu);
  const auto [lo, hi] = window(t0, t1);
  if (hi <= lo) return;
  std::vector<metric> ms;
  std::vector<std::string> notes;
  summarize_gpus(lo, hi, ms, notes);
  summarize_cpu(lo, hi, ms);
  // A failed or skipped result keeps no metrics (the runner's rule); the notes still help.
  if (r.st == status::passed) {
    for (auto& m : ms) r.metrics.push_back(std::move(m));
  }
  for (auto& n : notes) r.warnings.push_back(std::move(n));
}

std::size_t session::sample_count() const {
  std::lock_guard lock(m_mu);
  return m_t.size();
}

counter_set session::gpu_counters_before(unsigned gpu) const {
  std::lock_guard lock(m_mu);
  for (const auto& g : m_gpus) {
    if (g.index == gpu) return g.before;
  }
  return {};
}

counter_set session::cpu_counters_before() const {
  std::lock_guard lock(m_mu);
  return m_cpu.before;
}

std::vector<event> session::events_since(double t_s) const {
  std::lock_guard lock(m_mu);
  std::vector<event> out;
  for (const auto& e : m_events) {
    if (e.t_s >= t_s) out.push_back(e);
  }
  return out;
}

double session::gpu_trace_max(unsigned gpu, const std::string& series) const {
  std::lock_guard lock(m_mu);
  for (const auto& g : m_gpus) {
    if (g.index != gpu) continue;
    const std::vector<double>& v = series == "pcie_gen" ? g.pcie_gen : g.pcie_width;
    const auto s = stats_of(v);
    return s.n ? s.max : nan_v;
  }
  return nan_v;
}

double session::gpu_reason_fraction(unsigned gpu, unsigned long long mask, double t0,
                                    double t1) const {
  std::lock_guard lock(m_mu);
  const auto [lo, hi] = window(t0, t1);
  for (const auto& g : m_gpus) {
    if (g.index != gpu) continue;
    std::size_t hit = 0, known = 0;
    for (std::size_t i = lo; i < hi; ++i) {
      if (std::isnan(g.reasons[i])) continue;
      ++known;
      hit += (static_cast<unsigned long long>(g.reasons[i]) & mask) != 0;
    }
    return known ? static_cast<double>(hit) / static_cast<double>(known) : nan_v;
  }
  return nan_v;
}

namespace {

json events_json(const std::vector<event>& events) {
  json out = json::array();
  for (const auto& e : events) {
    json j = {{"t_s", e.t_s}, {"kind", e.kind}, {"text", e.text}, {"value", e.value}};
    j["gpu"] = e.gpu >= 0 ? json(e.gpu) : json(nullptr);
    out.push_back(j);
  }
  return out;
}

}  // namespace

json session::to_json() const {
  std::lock_guard lock(m_mu);
  json gpus = json::array();
  for (const auto& g : m_gpus) {
    json bits = json::object();
    for (const auto& b : nvml::reason_bits()) bits[std::to_string(b.bit)] = b.name;
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"trace",
                     {{"t_s", m_t},
                      {"sm_clock_mhz", series_json(g.sm)},
                      {"mem_clock_mhz", series_json(g.mem)},
                      {"power_w", series_json(g.power)},
                      {"temp_c", series_json(g.temp)},
                      {"throttle_reasons", series_json(g.reasons)},
                      {"pcie_gen", series_json(g.pcie_gen)},
                      {"pcie_width", series_json(g.pcie_width)}}},
                    {"throttle_reason_bits", bits},
                    {"counters_before", counters_json(g.before)},
                    {"counters_after", m_stopped_t < 0 ? json(nullptr) : counters_json(g.after)}});
  }
  const double wall = m_stopped_t >= 0 ? m_stopped_t : now_s();
  const double cpu_s = m_sampler_cpu_s.load();
  json out = {
      {"interval_s", m_opt.interval_s},
      {"host", m_opt.host},
      {"samples", m_t.size()},
      {"sampler",
       {{"cpu_s", cpu_s},
        {"wall_s", wall},
        {"cpu_fraction_of_one_core", wall > 0 ? cpu_s / wall : 0.0},
        {"method",
         "CPU time of the sampler thread (CLOCK_THREAD_CPUTIME_ID) over the run's "
         "wall time; health/telemetry_overhead measures its cost to a benchmark"}}},
      {"nvml",
       {{"available", m_opt.nvml && m_opt.nvml->available()},
        {"library", m_opt.nvml ? m_opt.nvml->path() : ""},
        {"reason", m_opt.nvml ? m_opt.nvml->reason() : "not loaded"},
        {"driver_version", m_opt.nvml ? m_opt.nvml->driver_version() : ""},
        {"xid_events", m_xids_watched ? json("watched") : json("not watched: " + m_xid_reason)}}},
      {"gpus", gpus},
      {"cpu",
       {{"sources", m_cpu_sources},
        {"trace",
         {{"t_s", m_t},
          {"freq_mhz_mean", series_json(m_cpu.freq_mean)},
          {"freq_mhz_min", series_json(m_cpu.freq_min)},
          {"freq_mhz_max", series_json(m_cpu.freq_max)},
          {"package_temp_c", series_json(m_cpu.temp)},
          {"package_power_w", series_json(m_cpu.power)}}},
        {"counters_before", counters_json(m_cpu.before)},
        {"counters_after", m_stopped_t < 0 ? json(nullptr) : counters_json(m_cpu.after)}}},
      {"events", events_json(m_events)}};
  return out;
}

}  // namespace infrabench::telemetry
