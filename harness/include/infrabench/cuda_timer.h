// A CUDA-event timer for GPU benchmarks (compiled only with INFRABENCH_WITH_CUDA). Use it inside
// state::exec_timed: record start, enqueue the work, record stop, return seconds(). CUDA types stay
// out of this header so host-only code can include the harness without the toolkit.
#pragma once

namespace infrabench {

class cuda_event_timer {
 public:
  // `stream` is a cudaStream_t (nullptr = the legacy default stream).
  explicit cuda_event_timer(void* stream = nullptr);
  ~cuda_event_timer();
  cuda_event_timer(const cuda_event_timer&) = delete;
  cuda_event_timer& operator=(const cuda_event_timer&) = delete;

  void start();
  void stop();
  // Waits for the stop event; the GPU time between the two events in seconds.
  [[nodiscard]] double seconds();

 private:
  void* m_stream;
  void* m_start = nullptr;
  void* m_stop = nullptr;
};

}  // namespace infrabench
