// GPU timing, owned by the harness as CPU timing is (nvbench's state.exec with its blocking
// kernel; nccl-tests' BenchTime): a blocking kernel holds the stream while N launches are
// queued, one CUDA event pair brackets the N, the time per launch is the bracket / N. With
// `flush_l2` every launch gets its own event pair after an L2 flush (cold cache). Compiled with
// CUDA (harness/src/gpu_timing.cu); without it every entry point throws. CUDA types stay out of
// this header (streams are void*) so host-only code can include the harness without the toolkit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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
  // Read SM and memory clocks (NVML) after the samples (exec_gpu only).
  bool read_clocks = true;
  std::string timer_name = "cuda_event_batch";
};

// What a GPU timing saw besides the times.
struct gpu_exec_report {
  std::int64_t launches_per_sample = 0;
  int blocking_timeouts = 0;  // samples whose blocking kernel gave up before the release
  // Clocks read (NVML) after the warm-up and after samples, at most every 10 ms of wall time.
  bool clocks_known = false;
  std::string clocks_reason;  // why not, when !clocks_known
  double sm_clock_mhz_median = 0, sm_clock_mhz_min = 0, sm_clock_mhz_max = 0;
  double mem_clock_mhz_median = 0;
  int clock_readings = 0;
  bool reasons_known = false;
  unsigned long long clock_event_reasons = 0;  // OR of nvmlClocksEventReason bits over readings
  std::string clock_event_names;               // "sw_power_cap"; "none"
  bool slowed_down = false;                    // a power, thermal or hardware reason was seen
};

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
