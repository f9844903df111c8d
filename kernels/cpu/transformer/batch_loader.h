// Prepares the training step's batches ahead of the step on a loader thread: step g's batch goes
// into slot g % slots; the step waits for it (that wait is the step's "data wait": what
// prefetching did not hide) and hands the slot back when the batch has been consumed (copied to
// the GPU, or used by the CPU model). Without a thread, acquire() produces the batch itself (the
// CPU path's decoding shares the compute threads, so it cannot run beside them).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace infrabench::kernels::transformer {

class batch_loader {
 public:
  // produce(step, slot) fills the slot with step's batch; it may throw (the error reaches the
  // step through acquire()).
  using produce_fn = std::function<void(std::uint64_t step, std::size_t slot)>;
  batch_loader(std::size_t slots, produce_fn produce, bool thread);
  ~batch_loader();
  batch_loader(const batch_loader&) = delete;
  batch_loader& operator=(const batch_loader&) = delete;

  // The slot holding step `step`'s batch, once produced. Steps are acquired in order 0, 1, 2, ...
  // and each released before the one `slots` later is acquired. Rethrows the producer's error.
  [[nodiscard]] std::size_t acquire(std::uint64_t step);
  void release(std::uint64_t step);
  [[nodiscard]] std::size_t slots() const { return m_slots; }

 private:
  void loop();

  std::size_t m_slots;
  produce_fn m_produce;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::uint64_t m_produced = 0;  // steps [0, m_produced) are ready
  std::uint64_t m_released = 0;  // steps [0, m_released) were handed back
  std::exception_ptr m_error;
  bool m_stop = false;
  std::thread m_thread;
};

}  // namespace infrabench::kernels::transformer
