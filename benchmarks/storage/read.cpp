// storage/read: reads a file or block device with an engine (io_uring or psync), a pattern
// (sequential or random), a block size, a queue depth and a number of jobs (threads, each
// with its own descriptor, ring and region of the target), the way fio's read/randread jobs do,
// so the numbers compare with fio's (benchmarks/storage/compare_fio.sh runs both).
#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "job.h"
#include "shared/storage_cluster.h"
#include "shared/storage_scratch.h"
#include "storage/engine.h"
#include "storage/io_plan.h"
#include "storage/latency_histogram.h"

namespace {

namespace ks = infrabench::kernels::storage;
namespace sb = infrabench::storage_bench;

// io_uring's ring limit (IORING_MAX_ENTRIES).
constexpr std::int64_t max_queue_depth = 32768;

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// Reads each job completes per timed call: about 8 MiB and at least 16 queues' worth, so a call
// lasts milliseconds. A multiple of `chunks_per_call`: jobs report progress chunk by chunk.
constexpr std::uint64_t chunks_per_call = 8;
std::uint64_t ios_per_call(std::uint64_t block_size, std::uint64_t queue_depth) {
  const std::uint64_t by_bytes =
      std::clamp<std::uint64_t>((std::uint64_t{8} << 20) / block_size, 1, 1024);
  const std::uint64_t ios = std::max(by_bytes, 16 * queue_depth);
  return (ios + chunks_per_call - 1) / chunks_per_call * chunks_per_call;
}

struct job {
  ks::unique_fd fd;
  std::unique_ptr<ks::io_plan> plan;
  std::unique_ptr<ks::read_engine> engine;
  ks::latency_histogram hist;
};

// Engines are created, run and destroyed on their job's thread (io_uring rings are set up
// single-issuer: only that thread may reap them). Destroying them here, also when the benchmark
// leaves by an exception, guarantees no read is still in flight into freed memory.
class job_set {
 public:
  explicit job_set(infrabench::thread_pool& pool) : m_pool(pool), m_jobs(pool.size()) {}
  job_set(const job_set&) = delete;
  job_set& operator=(const job_set&) = delete;
  ~job_set() {
    try {
      m_pool.run([&](std::size_t j) { m_jobs[j].engine.reset(); });
    } catch (...) {
      // An engine that cannot drain keeps its buffers (see read_engine); nothing else to do.
    }
  }
  [[nodiscard]] std::vector<job>& jobs() { return m_jobs; }

 private:
  infrabench::thread_pool& m_pool;
  std::vector<job> m_jobs;
};

// The jobs run free for the whole measurement, each on its own pool thread, reaping chunk after
// chunk. Handing each call to the job threads and back (as thread_pool::run does) would leave the
// device idle between calls while the threads wake up (on a busy machine, several percent of a
// drive's throughput); fio's jobs never pause either. So a call's time is taken from the jobs'
// own clocks, not from when the harness thread woke: each job stamps the moment it completed each
// call's share of reads, and call n lasts from the moment the last job completed share n - 1 to
// the moment the last job completed share n. The calls tile the run, whenever the harness thread
// looks. A job runs at most `ring` - 2 calls ahead of the harness (a bound it reaches only if the
// harness thread is starved for that long).
class free_running_jobs {
 public:
  free_running_jobs(infrabench::thread_pool& pool, std::vector<job>& jobs, std::uint64_t per_call)
      : m_pool(pool),
        m_jobs(jobs),
        m_per_call(per_call),
        m_chunk(per_call / chunks_per_call),
        m_progress(std::make_unique<std::atomic<std::uint64_t>[]>(jobs.size())),
        m_stamps(std::make_unique<std::atomic<std::uint64_t>[]>(jobs.size() * ring)) {
    for (std::size_t j = 0; j < jobs.size(); ++j) m_progress[j].store(0);
  }
  free_running_jobs(const free_running_jobs&) = delete;
  free_running_jobs& operator=(const free_running_jobs&) = delete;
  ~free_running_jobs() { stop(); }

  // Waits until every job completed `calls` calls' worth of reads and returns how long call
  // `calls` took, in seconds (the first call: from the start of the jobs). Starts the jobs on the
  // first call; after the first (warm-up) call's share each job restarts its histogram and
  // counters. Rethrows the first job's error.
  double wait_for_call(std::uint64_t calls) {
    if (!m_driver.joinable()) {
      m_start_ns = ks::detail::now_ns();
      m_driver = std::thread([this] {
        try {
          m_pool.run([this](std::size_t j) { job_loop(j); });
        } catch (...) {
          std::lock_guard lock(m_mu);
          if (!m_error) m_error = std::current_exception();
        }
      });
    }
    m_calls.store(calls);
    m_calls.notify_all();  // a job waiting at the run-ahead bound may go on
    const std::uint64_t target = calls * m_per_call;
    std::uint64_t end_ns = 0;
    for (std::size_t j = 0; j < m_jobs.size(); ++j) {
      std::uint64_t seen = m_progress[j].load();
      while (seen < target) {
        m_progress[j].wait(seen);
        seen = m_progress[j].load();
      }
      end_ns = std::max(end_ns, m_stamps[j * ring + calls % ring].load());
    }
    if (m_failed.load()) {
      stop();
      std::lock_guard lock(m_mu);
      if (m_error) std::rethrow_exception(m_error);
      throw std::runtime_error("storage/read: a job stopped without an error");
    }
    const std::uint64_t begin_ns = calls == 1 ? m_start_ns : m_last_end_ns;
    m_last_end_ns = end_ns;
    return static_cast<double>(end_ns - begin_ns) * 1e-9;
  }

  // Rethrows the first job's error, also one after the last measured call.
  void rethrow_if_failed() {
    std::lock_guard lock(m_mu);
    if (m_error) std::rethrow_exception(m_error);
  }

  // Stops the jobs after their current chunk and waits for them (idempotent).
  void stop() {
    m_stop.store(true);
    m_calls.fetch_add(1);  // wakes a job waiting at the run-ahead bound
    m_calls.notify_all();
    if (m_driver.joinable()) m_driver.join();
  }

 private:
  static constexpr std::uint64_t ring = 256;  // call stamps kept per job

  void job_loop(std::size_t j) {
    job& jb = m_jobs[j];
    try {
      std::uint64_t done = 0;
      while (!m_stop.load(std::memory_order_relaxed)) {
        // Share n's stamp overwrites share n - ring's: stay within ring - 2 calls of the harness.
        for (std::uint64_t c = m_calls.load();
             !m_stop.load() && (done + m_chunk) / m_per_call + 2 > c + ring; c = m_calls.load()) {
          m_calls.wait(c);
        }
        if (m_stop.load()) break;
        jb.engine->run(*jb.plan, m_chunk, jb.hist);
        done += m_chunk;
        if (done % m_per_call == 0) {
          m_stamps[j * ring + (done / m_per_call) % ring].store(ks::detail::now_ns());
          if (done == m_per_call) {  // the warm-up call's share is done: measure from here
            jb.hist.reset();
            jb.engine->counters().reset();
          }
        }
        m_progress[j].store(done);
        if (done >= m_calls.load() * m_per_call) m_progress[j].notify_all();
      }
    } catch (...) {
      m_failed.store(true);
      m_stop.store(true);
      release(j);
      throw;
    }
    release(j);
  }

  // A job that stopped makes no more progress: let a waiting call through.
  void release(std::size_t j) {
    m_progress[j].store(~std::uint64_t{0});
    m_progress[j].notify_all();
  }

  infrabench::thread_pool& m_pool;
  std::vector<job>& m_jobs;
  const std::uint64_t m_per_call;
  const std::uint64_t m_chunk;
  std::unique_ptr<std::atomic<std::uint64_t>[]> m_progress;  // reads completed, per job
  std::unique_ptr<std::atomic<std::uint64_t>[]> m_stamps;    // [job][call % ring]: share done
  std::atomic<std::uint64_t> m_calls{0};                     // the call the harness waits for
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_failed{false};
  std::uint64_t m_start_ns = 0;
  std::uint64_t m_last_end_ns = 0;
  std::mutex m_mu;
  std::exception_ptr m_error;
  std::thread m_driver;
};

// Each job's region: of this host's part of the data set when every host reads one shared data
// set (disjoint parts), else of the whole target.
std::vector<ks::io_region> job_regions(infrabench::state& st, const sb::read_target& t,
                                       std::uint64_t bs, std::uint32_t jobs,
                                       const sb::cluster_view& view, sb::scratch_sharing sharing) {
  const bool shared = sharing == sb::scratch_sharing::shared;
  const std::uint32_t parts = shared ? view.hosts : 1;
  std::vector<ks::io_region> all;
  try {
    all = ks::split_regions(t.bytes, bs, std::uint64_t{parts} * jobs);
  } catch (const std::invalid_argument& e) {
    st.fail(t.path + ": " + e.what() +
            (shared ? " (shared by " + std::to_string(parts) + " hosts)" : ""));
  }
  const auto first = all.begin() + static_cast<std::ptrdiff_t>(shared ? view.host * jobs : 0);
  std::vector<ks::io_region> mine(first, first + jobs);
  if (shared) {
    st.add_warning("--scratch is shared by the " + std::to_string(parts) +
                   " hosts: one data set of " + ks::format_gib(t.bytes) + ", of which this host (" +
                   std::to_string(view.host + 1) + " of " + std::to_string(parts) +
                   ") reads its own part, bytes " + std::to_string(mine.front().begin) + ".." +
                   std::to_string(mine.back().begin + mine.back().blocks * bs));
  }
  return mine;
}

// One configuration's axes, as the steps of storage_read use them.
struct read_axes {
  std::string engine;
  ks::access_pattern pattern = ks::access_pattern::sequential;
  std::uint64_t bs = 0;
  std::uint32_t qd = 0;
  std::uint32_t jobs = 0;
  bool direct = false;
  std::string target;
  std::uint64_t size = 0;
  ks::engine_options opts;  // verify is set once the target is known
};

read_axes read_axes_of(infrabench::state& st) {
  read_axes a;
  a.engine = st.get_string("engine");
  const auto pattern = ks::parse_access_pattern(st.get_string("pattern"));
  a.bs = static_cast<std::uint64_t>(st.get_int64("block_size"));
  a.qd = static_cast<std::uint32_t>(st.get_int64("queue_depth"));
  a.jobs = static_cast<std::uint32_t>(st.get_int64("jobs"));
  a.direct = st.get_int64("direct") != 0;
  a.target = st.get_string("target");
  a.size = static_cast<std::uint64_t>(st.get_int64("size"));
  if (!pattern) st.fail("unknown pattern");  // the axis choices prevent it
  a.pattern = *pattern;
  a.opts.queue_depth = a.qd;
  a.opts.block_size = a.bs;
  a.opts.direct = a.direct;
  sb::read_engine_options(st, a.opts);
  return a;
}

// What this host reads: the target agreed on and each job's region of it.
struct host_target {
  sb::read_target t;
  std::vector<ks::io_region> regions;
  infrabench::storage_location where;
};

// Under mpirun/srun every rank takes part in agreeing on the data; one rank per host reads.
// Ranks that do not measure leave here (skipped), after the agreement.
host_target agree_on_target(infrabench::state& st, const read_axes& a) {
  const sb::cluster_view view = sb::view_of(st.comm());
  const sb::scratch_sharing sharing = !view.multi || view.hosts < 2
                                          ? sb::scratch_sharing::single_host
                                      : a.target == "scratch" ? sb::sharing_of_scratch(st)
                                                              : sb::scratch_sharing::node_local;
  // Also refuses a block size O_DIRECT cannot use, before any scratch data is written.
  host_target h;
  const sb::scratch_data made = sb::agree_on_scratch(st, view, sharing, [&] {
    h.t = sb::resolve_read_target(st, a.target, a.size, a.direct, a.bs);
    return sb::scratch_data{h.t.path, h.t.seed};
  });
  if (!view.measures) st.skip(infrabench::reason_code::node_local, view.not_measuring);
  if (h.t.path.empty()) h.t = sb::shared_read_target(made, a.size, a.direct, a.bs);
  h.regions = job_regions(st, h.t, a.bs, a.jobs, view, sharing);
  // Where it reads: --scratch (or the directory given) holding the scratch file, else the file
  // or device itself.
  const std::string given = a.target == "scratch" ? st.option("scratch") : a.target;
  h.where = sb::record_location(st, given, given, h.t.scratch ? h.t.path : "");
  return h;
}

// Opens each job's descriptor, plan and engine on its own pool thread (see job_set).
void open_jobs(infrabench::state& st, infrabench::thread_pool& pool, std::vector<job>& js,
               const read_axes& a, const host_target& h) {
  if (a.jobs > infrabench::allowed_cpus().size()) {
    st.add_warning(std::to_string(a.jobs) + " jobs share " +
                   std::to_string(infrabench::allowed_cpus().size()) + " CPUs");
  }
  try {
    pool.run([&](std::size_t j) {
      js[j].fd = ks::open_read_only(h.t.path, a.direct);
      // Buffered reads start cold too: drop what earlier configurations left in the page cache.
      if (!a.direct) (void)posix_fadvise(js[j].fd.get(), 0, 0, POSIX_FADV_DONTNEED);
      js[j].plan = std::make_unique<ks::io_plan>(a.pattern, h.regions[j], a.bs, 0x5eed0000 + j);
      js[j].engine = ks::make_read_engine(a.engine, js[j].fd.get(), a.opts);
    });
  } catch (const ks::unsupported_error& e) {
    st.skip(e.what());
  }
}

struct measured_calls {
  std::uint64_t calls = 0;  // the harness's calls, its warm-up included
  double cpu = 0;           // process CPU seconds after the warm-up call
};

// The harness's first call is its warm-up: the jobs restart their statistics after it.
measured_calls measure_jobs(infrabench::state& st, infrabench::thread_pool& pool,
                            std::vector<job>& js, const read_axes& a) {
  const std::uint64_t per_call = ios_per_call(a.bs, a.qd);
  st.add_bytes_read(static_cast<double>(per_call * a.bs * a.jobs));
  st.add_items(static_cast<double>(per_call * a.jobs), "io");
  measured_calls m;
  double cpu_start = 0;
  free_running_jobs runner(pool, js, per_call);
  try {
    st.exec_timed(
        [&] {
          const double took = runner.wait_for_call(++m.calls);
          if (m.calls == 1) cpu_start = cpu_seconds();
          return took;
        },
        "job_clocks_end_to_end");
    runner.stop();
    runner.rethrow_if_failed();
  } catch (const ks::unsupported_error& e) {
    st.skip(e.what());  // e.g. IOPOLL refused by the device at the first read
  }
  m.cpu = cpu_seconds() - cpu_start;
  return m;
}

// The jobs' measured reads, merged (nothing when no call was measured).
struct job_totals {
  ks::latency_histogram hist;
  ks::engine_counters counters;
  double qd_sum = 0;  // of the jobs' mean queue depths
};

job_totals sum_jobs(const std::vector<job>& js, std::uint64_t calls) {
  job_totals t;
  for (const auto& j : js) {
    if (calls < 2) break;
    t.hist.merge(j.hist);
    const auto& c = j.engine->counters();
    t.counters.ios += c.ios;
    t.counters.bytes += c.bytes;
    t.counters.verify_failures += c.verify_failures;
    if (t.counters.first_verify_failure.empty())
      t.counters.first_verify_failure = c.first_verify_failure;
    t.qd_sum += c.mean_queue_depth();
  }
  return t;
}

void report_latency(infrabench::state& st, const job_totals& t, double cpu, std::uint32_t jobs,
                    const ks::read_engine& engine) {
  const ks::latency_histogram& hist = t.hist;
  const std::string hist_method =
      "completion latency (read handed to the kernel -> completion reaped, fio's clat) of every "
      "measured read, from a log-linear histogram (relative error <= 0.39%)";
  const std::pair<const char*, double> percentiles[] = {{"latency_us_p50", 50},
                                                        {"latency_us_p90", 90},
                                                        {"latency_us_p99", 99},
                                                        {"latency_us_p99_9", 99.9},
                                                        {"latency_us_p99_99", 99.99}};
  st.add_metric("latency_us_min", "us", static_cast<double>(hist.min()) / 1e3, false,
                "fastest measured read (exact)");
  st.add_metric("latency_us_mean", "us", hist.mean() / 1e3, false,
                "mean completion latency of every measured read (exact)");
  st.add_metric("latency_us_stdev", "us", hist.stdev() / 1e3, false,
                "sample standard deviation (n - 1, as fio's) of the completion latency of every "
                "measured read, from running sums of the latencies and their squares (exact, not "
                "from the histogram's buckets)");
  for (const auto& [name, p] : percentiles)
    st.add_metric(name, "us", hist.percentile(p) / 1e3, false, hist_method);
  st.add_metric("latency_us_max", "us", static_cast<double>(hist.max()) / 1e3, false,
                "slowest measured read");
  st.add_metric(
      "cpu_us_per_io", "us", cpu / static_cast<double>(t.counters.ios) * 1e6, false,
      "process CPU time (user + system, getrusage) over the measured calls / reads completed");
  st.add_metric("queue_depth_mean", "reads", t.qd_sum / jobs, true,
                "reads in flight per job, time-weighted mean over the measured calls (the queue "
                "depth actually reached; a read is in flight from the return of the submitting "
                "call to its reaping, as for fio's clat); engine as set up: " +
                    engine.describe(),
                infrabench::metric_role::information);
}

void storage_read(infrabench::state& st) {
  read_axes a = read_axes_of(st);
  // What can be refused without touching the disk is refused before any scratch data is made:
  // the engine table's refusals (not compiled in, unavailable here, an option it does not have).
  (void)sb::require_engine(st, "engine", a.opts);
  const host_target h = agree_on_target(st, a);
  if (!a.direct) {
    st.add_warning(
        "direct=0: buffered reads through the page cache (a page-cache measurement, not the "
        "device's)");
  }
  a.opts.verify = sb::verify_requested(st) && h.t.scratch;
  a.opts.verify_seed = h.t.seed;
  if (a.opts.verify) st.add_warning("--verify: every byte read is checked, inside the timed loop");

  infrabench::thread_pool pool(a.jobs, st.get_int64("pin") != 0);
  job_set set(pool);
  open_jobs(st, pool, set.jobs(), a, h);
  const infrabench::disk_busy_meter busy(h.where);
  const measured_calls m = measure_jobs(st, pool, set.jobs(), a);
  const job_totals t = sum_jobs(set.jobs(), m.calls);
  if (t.hist.count() > 0) {
    report_latency(st, t, m.cpu, a.jobs, *set.jobs().front().engine);
    sb::report_disk_util(st, busy, h.where);
  }
  if (a.opts.verify) {
    st.check(t.counters.verify_failures == 0,
             "verify: " + std::to_string(t.counters.verify_failures) + " of " +
                 std::to_string(t.counters.ios) + " reads differed from the data written; first: " +
                 t.counters.first_verify_failure);
  }
}

// The job's row: the hosts read at the same time (started together after agreeing on the data),
// so their rates add up; the slowest host decides how long a job that needs every host's data
// waits.
void combine_hosts(infrabench::state& st, const std::vector<sb::job_input_row>& hosts) {
  using infrabench::metric_role;
  const auto gbps = sb::values_of(hosts, "bandwidth_gbps");
  const auto iops = sb::values_of(hosts, "ios_per_s");
  const std::size_t slowest = static_cast<std::size_t>(
      std::min_element(hosts.begin(), hosts.end(),
                       [](const auto& a, const auto& b) {
                         return a.metric("bandwidth_gbps") < b.metric("bandwidth_gbps");
                       }) -
      hosts.begin());
  const std::string n = std::to_string(hosts.size()) + " hosts";
  double sum_gbps = 0, sum_iops = 0;
  for (double v : gbps) sum_gbps += v;
  for (double v : iops) sum_iops += v;
  st.add_metric("aggregate_gbps", "GB/s", sum_gbps, true,
                "sum of the " + n +
                    "' median GB/s, measured at the same time (each host's "
                    "sampling stops by its own rule), GB = 1e9 B");
  st.add_metric("aggregate_ios_per_s", "IO/s", sum_iops, true,
                "sum of the " + n + "' median reads per second, measured at the same time");
  st.add_metric("slowest_host_gbps", "GB/s", hosts[slowest].metric("bandwidth_gbps"), true,
                "the slowest host's median GB/s: " + hosts[slowest].who());
  const auto p99 = sb::values_of(hosts, "latency_us_p99");
  if (!p99.empty()) {
    st.add_metric("worst_host_latency_us_p99", "us", *std::max_element(p99.begin(), p99.end()),
                  false, "the highest p99 completion latency of the " + n);
  }
  st.add_metric("hosts", "hosts", static_cast<double>(hosts.size()), true,
                "hosts that measured (one rank each)", metric_role::information);
}

// What each host's row reports, beside the bytes and I/Os the work counts.
infrabench::benchmark& declare_read_metrics(infrabench::benchmark& b) {
  return b.produces_work(infrabench::work_kind::bytes)
      .headline("bandwidth_gbps")
      .measures(infrabench::data_hop::storage_read)  // the roofline's storage hop
      .produces_items("io")
      // One timing: I/Os per second are the bytes per second at this block size.
      .relate("ios_per_s", infrabench::relation_kind::view_of, "bandwidth_gbps")
      .produces("latency_us_min", "us", infrabench::better::lower)
      .produces("latency_us_mean", "us", infrabench::better::lower)
      .produces("latency_us_stdev", "us", infrabench::better::lower)
      .produces("latency_us_p*", "us",
                infrabench::better::lower)  // p50, p90, p99, p99_9, p99_99
      .produces("latency_us_max", "us", infrabench::better::lower)
      .produces("cpu_us_per_io", "us", infrabench::better::lower)
      .produces("queue_depth_mean", "reads", infrabench::better::higher,
                infrabench::metric_role::information);
}

// How the reads are issued, fio's knobs: order, size, depth, threads, pinning and O_DIRECT.
infrabench::benchmark& add_read_access_axes(infrabench::benchmark& b) {
  return b
      .add_string_axis(
          "pattern", {"seq", "rand"},
          infrabench::choice_axis("seq: each job's region in order; rand: a random permutation "
                                  "of its blocks each pass",
                                  {"seq", "rand"}))
      .add_int64_axis("block_size", {4096, 128 << 10, 1 << 20},
                      infrabench::bytes_axis("bytes per read", 1, 1 << 30))
      .add_int64_axis("queue_depth", {1, 32},
                      infrabench::int_axis("reads in flight per job (the engine's limit applies)",
                                           1, max_queue_depth))
      .add_int64_axis(
          "jobs", {1},
          infrabench::thread_count_axis("threads, each with its own descriptor, ring and region", 1,
                                        infrabench::io_threads_per_cpu))
      .add_int64_axis(
          "pin", {0},
          infrabench::switch_axis(
              "pin job j to the j-th allowed CPU (fio's default is unpinned; pinning away from "
              "the device's interrupt CPU costs a cross-CPU wake-up per read)"))
      .add_int64_axis("direct", {1},
                      infrabench::switch_axis("O_DIRECT; 0 = buffered, a page-cache measurement"));
}

// What is read: a scratch file, a directory to make one in, or an existing file or device.
infrabench::benchmark& add_read_target_axes(infrabench::benchmark& b) {
  return b
      .add_string_axis(
          "target", {"scratch"},
          infrabench::choice_axis("scratch (a file under --scratch), a directory (a scratch file "
                                  "made there), or an existing file or block device, read only",
                                  {}))
      .add_int64_axis("size", {std::int64_t{1} << 30},
                      infrabench::bytes_axis("scratch file size; for an existing file or device "
                                             "the bytes read from its start (0 = all)",
                                             0, 1e18));
}

// The read buffers: a block per read in flight, per job.
std::int64_t read_buffer_memory(const infrabench::config& cfg) {
  return infrabench::config_int64(cfg, "block_size", 0) *
         infrabench::config_int64(cfg, "queue_depth", 0) * infrabench::config_int64(cfg, "jobs", 0);
}

// storage/read_job, registered after the workload's axes are complete (it copies them).
void register_read_job(const infrabench::benchmark& b) {
  sb::register_job_row(b,
                       "storage/read across the hosts of an mpirun/srun job: aggregate GB/s and "
                       "IOPS of the hosts reading at the same time, the slowest host named",
                       combine_hosts)
      .produces("aggregate_gbps", "GB/s", infrabench::better::higher)
      .headline("aggregate_gbps")
      .produces("aggregate_ios_per_s", "IO/s", infrabench::better::higher)
      .relate("aggregate_ios_per_s", infrabench::relation_kind::view_of, "aggregate_gbps")
      .produces("slowest_host_gbps", "GB/s", infrabench::better::higher)
      .produces("worst_host_latency_us_p99", "us", infrabench::better::lower)
      .produces("hosts", "hosts", infrabench::better::higher, infrabench::metric_role::information);
}

[[maybe_unused]] const bool registered_read = [] {
  auto& b = infrabench::registry::instance()
                .add("storage/read", storage_read)
                .scope(infrabench::rank_scope::every_rank)  // one rank per host reads
                                                            // (shared/storage_cluster.h)
                .describe(
                    "reads a scratch file, a file or a block device (read-only) with an engine of "
                    "the table (io_uring, psync), sequential or random, fio-style; GB/s, IOPS, "
                    "completion-latency percentiles, CPU per I/O");
  declare_read_metrics(b);
  sb::declare_disk_util(b);
  sb::add_engine_axis(b, "engine", {"io_uring", "psync"});
  add_read_access_axes(b);
  // One axis per engine option, generated from the engine table.
  sb::add_engine_option_axes(b);
  add_read_target_axes(b).memory_estimate(read_buffer_memory);
  register_read_job(b);
  return true;
}();

}  // namespace
