// GPU timing (CUDA builds): the blocking kernel, the event brackets, the L2 flush, the SM clock
// probes and the clock readings behind state::exec_gpu. Host code only: the blocking kernel is
// kernels/cuda/spin.cu, the clock probe kernels/cuda/sm_clock.cu.
#include "infrabench/gpu_timing.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "cuda/sm_clock.h"
#include "cuda/spin.h"
#include "cuda/support.h"
#include "infrabench/state.h"
#include "topology/nvml.h"

namespace infrabench {
namespace {

namespace kcu = kernels::cuda;
namespace topo = kernels::topology;
using clock_type = std::chrono::steady_clock;

[[nodiscard]] double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// How long the blocking kernel holds a stream at most, so a release that never comes (an
// exception between block and release) cannot hang the GPU.
constexpr std::uint64_t block_timeout_ns = 2'000'000'000;
// The event pairs of a flushed batch: one per launch, as many as a flushed batch may hold.
const std::int64_t max_flushed_launches = held_launch_cap(true, true, 1);

[[nodiscard]] float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  IB_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// The wait for a batch's last event, polled (gpu_exec_options::health).
class event_wait final : public gpu_wait_target {
 public:
  event_wait(cudaEvent_t e, const gpu_exec_options& o) : m_event(e), m_opts(o) {}
  bool finished() override {
    const cudaError_t rc = cudaEventQuery(m_event);
    if (rc == cudaErrorNotReady) return false;
    IB_CUDA(rc);
    return true;
  }
  std::string async_error() override { return m_opts.health ? m_opts.health() : std::string(); }
  void abort() noexcept override {
    if (!m_opts.abort) return;
    try {
      m_opts.abort();
    } catch (...) {
      // Already failing with the error that made us abort: that one is reported.
    }
  }

 private:
  cudaEvent_t m_event;
  const gpu_exec_options& m_opts;
};

// Host-mapped pinned memory for the SM clock probes' stamps: two sets (window start and end).
struct clock_stamps {
  explicit clock_stamps(int device) {
    const kcu::device_scope scope(device);
    void* p = nullptr;
    IB_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    host = static_cast<unsigned long long*>(p);
    IB_CUDA(cudaHostGetDevicePointer(&on_device, p, 0));
    IB_CUDA(cudaDeviceGetAttribute(&blocks, cudaDevAttrMultiProcessorCount, device));
  }
  ~clock_stamps() { (void)cudaFreeHost(host); }
  clock_stamps(const clock_stamps&) = delete;
  clock_stamps& operator=(const clock_stamps&) = delete;

  [[nodiscard]] unsigned long long* start_on_device() const {
    return static_cast<unsigned long long*>(on_device);
  }
  [[nodiscard]] unsigned long long* end_on_device() const {
    return start_on_device() + 2 * kcu::sm_clock_slots;
  }
  // Read only once the stream has passed the end probe.
  [[nodiscard]] std::optional<double> mhz() const {
    std::vector<sm_clock_stamp> a(kcu::sm_clock_slots), b(kcu::sm_clock_slots);
    const unsigned long long* end = host + 2 * kcu::sm_clock_slots;
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = {host[2 * i], host[2 * i + 1]};
      b[i] = {end[2 * i], end[2 * i + 1]};
    }
    return window_sm_clock_mhz(a, b);
  }

  static constexpr std::size_t bytes = 4 * kcu::sm_clock_slots * sizeof(unsigned long long);
  unsigned long long* host = nullptr;
  void* on_device = nullptr;
  int blocks = 1;
};

}  // namespace

struct gpu_batch_timer::impl {
  gpu_stream_ref main;
  gpu_exec_options opts;
  kcu::event start, stop;
  kcu::event done;  // after the stop event and the end probe: what the host waits for
  std::unique_ptr<clock_stamps> stamps;  // read_clocks
  std::optional<double> last_mhz;
  std::vector<std::unique_ptr<kcu::event>> pair_start, pair_stop;  // flush_l2: one pair per launch
  std::unique_ptr<kcu::event> fork;                                // joined streams wait on it
  std::vector<std::unique_ptr<kcu::event>> joins;                  // one per joined stream
  kcu::device_buffer flush;
  volatile int* flag = nullptr;  // pinned, mapped: the blocking kernel spins until it is non-zero
  void* flag_on_device = nullptr;
  int expired = 0;
  bool warmed = false;  // the first call ran (unheld)

  impl(gpu_stream_ref m, gpu_exec_options o)
      : main(m), opts(std::move(o)), start(m.device, true), stop(m.device, true), done(m.device) {
    const kcu::device_scope scope(main.device);
    if (opts.read_clocks) stamps = std::make_unique<clock_stamps>(main.device);
    if (opts.flush_l2) {
      if (!opts.joined.empty()) {
        throw std::logic_error("gpu timing: flush_l2 with joined streams is not supported");
      }
      // Writing twice the L2's size evicts whatever the previous launch left there.
      const kcu::device_info d = kcu::query_device(main.device);
      flush = kcu::device_buffer(main.device, std::max<std::size_t>(2 * d.l2_bytes, 1 << 20));
      for (std::int64_t i = 0; i < max_flushed_launches; ++i) {
        pair_start.push_back(std::make_unique<kcu::event>(main.device, true));
        pair_stop.push_back(std::make_unique<kcu::event>(main.device, true));
      }
    }
    if (opts.flush_l2 && !opts.interfering.empty()) {
      throw std::logic_error("gpu timing: flush_l2 with interfering streams is not supported");
    }
    if (!opts.joined.empty() || !opts.interfering.empty()) {
      fork = std::make_unique<kcu::event>(main.device);
      for (const auto& j : opts.joined) joins.push_back(std::make_unique<kcu::event>(j.device));
    }
    if (opts.block) {
      void* p = nullptr;
      // Portable and mapped: the kernel reads the flag straight from host memory.
      IB_CUDA(cudaHostAlloc(&p, sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
      flag = static_cast<volatile int*>(p);
      *flag = 1;
      IB_CUDA(cudaHostGetDevicePointer(&flag_on_device, p, 0));
    }
  }
  ~impl() {
    if (flag) (void)cudaFreeHost(const_cast<int*>(flag));
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  [[nodiscard]] cudaStream_t s() const { return static_cast<cudaStream_t>(main.stream); }

  [[nodiscard]] std::int64_t cap() const {
    return held_launch_cap(opts.block, opts.flush_l2, opts.operations_per_launch);
  }

  void hold() {
    *flag = 0;
    IB_CUDA(kcu::launch_spin(static_cast<volatile int*>(flag_on_device), block_timeout_ns, s()));
  }
  void release(clock_type::time_point held_at) {
    if (seconds_since(held_at) * 1e9 >= static_cast<double>(block_timeout_ns)) ++expired;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *flag = 1;
  }

  // Start event, fork to the joined streams, the launches, join, stop event.
  void bracket(std::int64_t n, const std::function<void()>& launch) {
    IB_CUDA(cudaEventRecord(start.get(), s()));
    if (fork) {
      IB_CUDA(cudaEventRecord(fork->get(), s()));
      for (const auto* list : {&opts.joined, &opts.interfering}) {
        for (const auto& j : *list) {
          IB_CUDA(cudaStreamWaitEvent(static_cast<cudaStream_t>(j.stream), fork->get(), 0));
        }
      }
    }
    for (std::int64_t i = 0; i < n; ++i) launch();
    for (std::size_t k = 0; k < joins.size(); ++k) {
      const auto& j = opts.joined[k];
      const kcu::device_scope other(j.device);
      IB_CUDA(cudaEventRecord(joins[k]->get(), static_cast<cudaStream_t>(j.stream)));
      IB_CUDA(cudaStreamWaitEvent(s(), joins[k]->get(), 0));
    }
    IB_CUDA(cudaEventRecord(stop.get(), s()));
  }

  // One flush and one event pair per launch; returns nothing, the pairs are read after the wait.
  void flushed(std::int64_t n, const std::function<void()>& launch) {
    for (std::int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      IB_CUDA(cudaMemsetAsync(flush.get(), static_cast<int>(i & 0xff), flush.bytes(), s()));
      IB_CUDA(cudaEventRecord(pair_start[k]->get(), s()));
      launch();
      IB_CUDA(cudaEventRecord(pair_stop[k]->get(), s()));
    }
    IB_CUDA(cudaEventRecord(stop.get(), s()));
  }

  // The stop event (or the end probe after it) has passed: blocking, or polled with the health
  // check and the bound when the work can fail on its own (NCCL).
  void wait_done() {
    if (!opts.health && opts.wait_timeout_s <= 0) {
      IB_CUDA(cudaEventSynchronize(done.get()));
      return;
    }
    event_wait w(done.get(), opts);
    wait_polling(w, opts.wait_timeout_s, "waiting for a batch of " + opts.timer_name);
  }

  batch_timing run(std::int64_t n, const std::function<void()>& launch,
                   const std::function<void()>* while_running) {
    n = std::clamp<std::int64_t>(n, 1, cap());
    const auto t0 = clock_type::now();
    const kcu::device_scope scope(main.device);
    // The first call never holds the stream: with lazy module loading (CUDA's default) the first
    // launch of a kernel may synchronise the context, which would wait for the blocking kernel
    // while the blocking kernel waits for the host (CUDA programming guide, lazy loading).
    const bool held = opts.block && warmed;
    warmed = true;
    last_mhz.reset();
    // The previous call waited for its end probe: no probe writes these any more.
    if (stamps) std::fill_n(stamps->host, 4 * kcu::sm_clock_slots, 0ULL);
    if (held) hold();
    const auto held_at = clock_type::now();
    try {
      // The probes stand outside the event pair (their few microseconds are not the work's), one
      // right before the start event and one right after the stop event: behind a held stream
      // they run when the window opens and when it closes.
      if (stamps) {
        IB_CUDA(kcu::launch_sm_clock_probe(stamps->start_on_device(), stamps->blocks, s()));
      }
      if (opts.flush_l2) {
        flushed(n, launch);
      } else {
        bracket(n, launch);
      }
      if (stamps) {
        IB_CUDA(kcu::launch_sm_clock_probe(stamps->end_on_device(), stamps->blocks, s()));
      }
      IB_CUDA(cudaEventRecord(done.get(), s()));
    } catch (...) {
      if (held) *flag = 1;  // never leave the stream held behind an error
      throw;
    }
    if (held) release(held_at);
    if (while_running != nullptr && *while_running) (*while_running)();
    wait_done();
    for (const auto& j : opts.interfering) {
      IB_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(j.stream)));
    }
    double gpu_ms = 0;
    if (opts.flush_l2) {
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        gpu_ms += elapsed_ms(pair_start[k]->get(), pair_stop[k]->get());
      }
    } else {
      gpu_ms = elapsed_ms(start.get(), stop.get());
    }
    if (stamps) last_mhz = stamps->mhz();
    return {gpu_ms * 1e-3 / static_cast<double>(n), seconds_since(t0)};
  }
};

void gpu_wait_polled(gpu_stream_ref stream, const gpu_exec_options& options,
                     std::string_view what) {
  const kcu::device_scope scope(stream.device);
  const kcu::event queued(stream.device);
  IB_CUDA(cudaEventRecord(queued.get(), static_cast<cudaStream_t>(stream.stream)));
  if (!options.health && options.wait_timeout_s <= 0) {
    IB_CUDA(cudaEventSynchronize(queued.get()));
    return;
  }
  event_wait w(queued.get(), options);
  wait_polling(w, options.wait_timeout_s, what);
}

gpu_batch_timer::gpu_batch_timer(gpu_stream_ref main, gpu_exec_options options)
    : m(std::make_unique<impl>(main, std::move(options))) {}

gpu_batch_timer::~gpu_batch_timer() = default;

batch_timing gpu_batch_timer::run(std::int64_t n, const std::function<void()>& launch) {
  return m->run(n, launch, nullptr);
}

batch_timing gpu_batch_timer::run(std::int64_t n, const std::function<void()>& launch,
                                  const std::function<void()>& while_running) {
  return m->run(n, launch, &while_running);
}

std::optional<double> gpu_batch_timer::last_sm_clock_mhz() const {
  return m->last_mhz;
}

std::int64_t gpu_batch_timer::max_launches() const {
  return m->cap();
}

int gpu_batch_timer::blocking_timeouts() const {
  return m->expired;
}

namespace {

[[nodiscard]] double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// NVML readings while the samples' batches run, at most one per 10 ms of wall time (an NVML
// query costs tens of microseconds, taken while the GPU is busy with the batch just released):
// the memory clock and the throttle reasons. The SM clock comes from the probes instead.
class clock_sampler {
 public:
  explicit clock_sampler(int device) {
    const kcu::device_info d = kcu::query_device(device);
    m_bus_id = d.bus_id;
    if (m_bus_id.empty()) m_reason = "PCI bus id of GPU " + std::to_string(device) + " unknown";
  }

  void maybe_read() {
    if (m_bus_id.empty() || m_gave_up) return;
    if (m_readings > 0 && seconds_since(m_last) < 0.01) return;
    m_last = clock_type::now();
    const topo::clock_report c = topo::clocks_of(m_bus_id);
    if (!c.known) {
      m_reason = c.reason;
      m_gave_up = true;  // NVML absent or refusing: no point asking after every sample
      return;
    }
    ++m_readings;
    m_mem.push_back(c.mem_mhz);
    if (c.reasons_known) {
      m_reasons_known = true;
      m_reasons |= c.reasons;
    }
  }

  void fill(gpu_exec_report& r) const {
    r.clock_readings = m_readings;
    if (m_readings == 0) {
      r.mem_clock_reason = m_reason.empty() ? "no clock reading" : m_reason;
      return;
    }
    r.mem_clock_known = true;
    r.mem_clock_mhz_median = median(m_mem);
    r.reasons_known = m_reasons_known;
    r.clock_event_reasons = m_reasons;
    topo::clock_report names;
    names.reasons = m_reasons;
    r.clock_event_names = names.reason_names();
    r.slowed_down = names.slowed_down();
  }

 private:
  std::string m_bus_id, m_reason;
  bool m_gave_up = false;
  int m_readings = 0;
  clock_type::time_point m_last{};
  std::vector<double> m_mem;
  bool m_reasons_known = false;
  unsigned long long m_reasons = 0;
};

}  // namespace

gpu_exec_report state::exec_gpu(gpu_stream_ref stream, const std::function<void()>& launch,
                                const gpu_exec_options& options) {
  gpu_batch_timer timer(stream, options);
  std::optional<clock_sampler> clocks;
  if (options.read_clocks) clocks.emplace(stream.device);
  std::vector<double> window_mhz;
  // Readings and windows of the samples only: the warm-up's are the clocks ramping up.
  const std::function<void()> read_nvml = [&] {
    if (clocks && sampling()) clocks->maybe_read();
  };
  const auto batch = [&](std::int64_t n) {
    batch_timing t = timer.run(n, launch, read_nvml);
    if (options.agree) t = options.agree(t);
    if (sampling()) {
      if (const auto mhz = timer.last_sm_clock_mhz()) window_mhz.push_back(*mhz);
    }
    return t;
  };
  warm_up_gpu(batch, timer.max_launches());
  exec_gpu_batched(batch, timer.max_launches(), options.timer_name);
  gpu_exec_report report;
  report.launches_per_sample = m_result.iterations_per_sample;
  report.blocking_timeouts = timer.blocking_timeouts();
  if (clocks) {
    clocks->fill(report);
    report.clock_windows = static_cast<int>(window_mhz.size());
    if (window_mhz.empty()) {
      report.clocks_reason = "no timed window of at least " +
                             std::to_string(min_clock_window_ns / 1000) +
                             " us had its SM clock probed at both ends";
    } else {
      report.clocks_known = true;
      report.sm_clock_mhz_median = median(window_mhz);
      report.sm_clock_mhz_min = *std::min_element(window_mhz.begin(), window_mhz.end());
      report.sm_clock_mhz_max = *std::max_element(window_mhz.begin(), window_mhz.end());
    }
  } else {
    report.clocks_reason = report.mem_clock_reason = "not read (gpu_exec_options::read_clocks)";
  }
  check(report.blocking_timeouts == 0,
        std::to_string(report.blocking_timeouts) +
            " samples: the blocking kernel gave up before all launches were queued; their "
            "timing includes queueing gaps");
  return report;
}

}  // namespace infrabench
