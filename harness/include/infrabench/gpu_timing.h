// GPU timing, owned by the harness as CPU timing is (nvbench's state.exec with its blocking
// kernel; nccl-tests' BenchTime): a blocking kernel holds the stream while N launches are
// queued, one CUDA event pair brackets the N, the time per launch is the bracket / N. With
// `flush_l2` every launch gets its own event pair after an L2 flush (cold cache). A probe kernel
// at both ends of the window measures the SM clock the work ran at. Compiled with
// CUDA (harness/src/gpu_timing.cpp); without it every entry point throws, except the pure
// functions (gpu_timing_common.cpp), which the unit tests run on any machine. CUDA types stay out
// of this header (streams are void*) so host-only code can include the harness without the toolkit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "infrabench/sampling.h"

namespace infrabench {

// A stream (cudaStream_t) and the device it belongs to.
struct gpu_stream_ref {
  void* stream = nullptr;
  int device = 0;
};

struct gpu_exec_options {
  // Hold the stream with a blocking kernel while the launches are queued, so they run back to
  // back with no launch gaps in the timed interval. Off for work the host drives while it runs:
  // pageable copies (the calling thread stages them, so behind a held stream they would
  // deadlock) and NCCL collectives (each rank's kernels wait for the other ranks'); the event
  // pair then brackets the launches as they are issued, as nccl-tests times them.
  bool block = true;
  // Flush the L2 cache before every launch (cold-cache numbers): each launch gets its own event
  // pair after a write over a buffer twice the L2's size; the sample is the mean of the pairs.
  bool flush_l2 = false;
  // Operations one launch queues behind the held stream, its own work included: a cell of a
  // many-to-one pattern issues a copy on each of up to 7 streams (forked from the held one) per
  // launch. The launches per call are capped by these, not by launches (held_launch_cap).
  int operations_per_launch = 1;
  // Streams that take part in every launch besides the main one (a bidirectional copy): they
  // wait for the start event, and the main stream waits for them before the stop event.
  std::vector<gpu_stream_ref> joined;
  // Streams that load the same links while the main stream is measured (nvbandwidth's
  // interfering traffic): they start with the start event but the stop event does not wait for
  // them; the call waits for them before it returns, so samples never overlap.
  std::vector<gpu_stream_ref> interfering;
  // Multi-rank work: turns this rank's batch timing into the one every rank agrees on (the
  // slowest rank's per-launch and wall time, one reduction per sample). Empty: this process
  // alone decides.
  std::function<batch_timing(const batch_timing&)> agree;
  // Measure the SM clock over every timed window (a probe kernel at each end: cycles over
  // nanoseconds) and read the memory clock and throttle reasons (NVML) while the batch runs.
  bool read_clocks = true;
  std::string timer_name = "cuda_event_batch";
  // Work that can fail while the host waits for it (NCCL): `health` returns "" while it is
  // healthy, else its error (ncclCommGetAsyncError, ncclGetLastError). With it, or with
  // wait_timeout_s, the wait for a batch polls (cudaEventQuery, then `health`) instead of
  // blocking in cudaEventSynchronize, and on an error or after wait_timeout_s it calls `abort`
  // (ncclCommAbort: the other ranks' kernels would wait forever) and throws with the error, as
  // nccl-tests' testStreamSynchronize does. A blocked wait would only ever end with the CUDA
  // error of a kernel that NCCL killed, or never.
  std::function<std::string()> health;
  std::function<void()> abort;
  double wait_timeout_s = 0;  // 0: no bound
};

// ---- The SM clock over a timed window (pure, host-tested)

// One SM's cycle counter (clock64) and the global nanosecond timer (%globaltimer), read together.
struct sm_clock_stamp {
  unsigned long long cycles = 0;
  unsigned long long ns = 0;
};
// Shorter windows are not measured: %globaltimer ticks every microsecond on some GPUs.
inline constexpr unsigned long long min_clock_window_ns = 20'000;
// The clock an SM ran at between two stamps of that SM: cycles / nanoseconds, in MHz. Nothing
// for a stamp never written (zero), a window shorter than min_clock_window_ns, or counters that
// went backwards.
[[nodiscard]] std::optional<double> sm_clock_mhz(const sm_clock_stamp& start,
                                                 const sm_clock_stamp& end);
// The median over SMs stamped at both ends (slot i: SM i) of sm_clock_mhz: one clock domain, so
// the SMs agree; the median keeps one SM whose probe block ran late from moving it.
[[nodiscard]] std::optional<double> window_sm_clock_mhz(const std::vector<sm_clock_stamp>& start,
                                                        const std::vector<sm_clock_stamp>& end);

// ---- How many launches one held batch may queue (pure, host-tested)

// The most launches one batch queues: behind a held stream CUDA's launch queue (~1000 entries;
// past it a launch blocks the host, which would then wait for the blocking kernel to give up
// after 2 s) must hold every operation the batch queues, `operations_per_launch` a launch
// (its copies on each forked stream; with flush_l2 also a memset and two events). At least 1.
[[nodiscard]] std::int64_t held_launch_cap(bool block, bool flush_l2, int operations_per_launch);

// ---- Waiting for work that can fail on its own (NCCL), testable with a fake

// What a bounded wait polls: the awaited work, its library's asynchronous error, the abort.
class gpu_wait_target {
 public:
  virtual ~gpu_wait_target() = default;
  // Whether the awaited work has finished (cudaEventQuery); throws on a CUDA error.
  [[nodiscard]] virtual bool finished() = 0;
  // The library's asynchronous error, "" while there is none (ncclCommGetAsyncError).
  [[nodiscard]] virtual std::string async_error() = 0;
  // Ends the work for good (ncclCommAbort), so no kernel of it waits forever for a peer.
  virtual void abort() noexcept = 0;
};
// Polls `target` until it has finished. On an asynchronous error, a query that throws, or after
// `timeout_s` (> 0; 0 waits as long as it takes) calls abort() once and throws
// std::runtime_error "<what>: <error>; aborted".
void wait_polling(gpu_wait_target& target, double timeout_s, std::string_view what);

// What a GPU timing saw besides the times.
struct gpu_exec_report {
  std::int64_t launches_per_sample = 0;
  int blocking_timeouts = 0;  // samples whose blocking kernel gave up before the release
  // The SM clock over the samples' timed windows (window_sm_clock_mhz, one value per sample).
  bool clocks_known = false;
  std::string clocks_reason;  // why not, when !clocks_known
  double sm_clock_mhz_median = 0, sm_clock_mhz_min = 0, sm_clock_mhz_max = 0;
  int clock_windows = 0;
  // NVML, read while the samples' batches ran, at most every 10 ms of wall time: the memory
  // clock and the clock event (throttle) reasons.
  bool mem_clock_known = false;
  std::string mem_clock_reason;  // why not, when !mem_clock_known
  double mem_clock_mhz_median = 0;
  int clock_readings = 0;
  bool reasons_known = false;
  unsigned long long clock_event_reasons = 0;  // OR of nvmlClocksEventReason bits over readings
  std::string clock_event_names;               // "sw_power_cap"; "none"
  bool slowed_down = false;                    // a power, thermal or hardware reason was seen
};

// Waits for the work queued on `stream` so far (one event): with options.health or
// options.wait_timeout_s, polled as exec_gpu's batches are (on an error: options.abort, then
// throws "<what>: <error>; aborted"); else blocking. For work outside exec_gpu that can fail on
// its own (a collective verified after the timing).
void gpu_wait_polled(gpu_stream_ref stream, const gpu_exec_options& options, std::string_view what);

// The building block of exec_gpu, for benchmarks that time several streams as one row (the
// cells of a copy matrix, each on its own GPU) and sample them with state::exec_gpu_batched.
class gpu_batch_timer {
 public:
  gpu_batch_timer(gpu_stream_ref main, gpu_exec_options options);
  ~gpu_batch_timer();
  gpu_batch_timer(const gpu_batch_timer&) = delete;
  gpu_batch_timer& operator=(const gpu_batch_timer&) = delete;

  // Queues `n` calls of `launch` (each enqueues one unit of work on the main stream, and on the
  // joined ones) between the events, releases the stream, waits for the stop event; returns the
  // GPU time per launch and the wall time of this call. The main stream's device is current
  // while `launch` runs. `n` is clamped to max_launches(). The first call does not hold the
  // stream (kernels load lazily on first launch, which may synchronise the context): it is the
  // unmeasured warm-up of exec_gpu_batched.
  batch_timing run(std::int64_t n, const std::function<void()>& launch);
  // The same; `while_running` is called once the batch is queued (and released), before the
  // wait: the GPU is busy with the batch while it runs (a clock reading during the work).
  batch_timing run(std::int64_t n, const std::function<void()>& launch,
                   const std::function<void()>& while_running);
  // The SM clock over the last call's window (read_clocks), when it could be measured.
  [[nodiscard]] std::optional<double> last_sm_clock_mhz() const;
  // The most launches one call queues: a held stream must hold them all (CUDA's launch queue
  // holds ~1000 entries before a launch blocks the host, which would wait for the blocking kernel
  // to give up); with flush_l2 every launch also queues a flush and two events.
  [[nodiscard]] std::int64_t max_launches() const;
  [[nodiscard]] int blocking_timeouts() const;

 private:
  struct impl;
  std::unique_ptr<impl> m;
};

}  // namespace infrabench
