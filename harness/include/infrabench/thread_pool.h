// A fixed pool of worker threads, each pinned to one CPU this process may use, for benchmarks that
// need the same threads across samples (first-touch memory, no thread start-up in timed regions).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace infrabench {

// CPUs this process may run on, in order (sched_getaffinity).
[[nodiscard]] std::vector<int> allowed_cpus();

class thread_pool {
 public:
  // threads == 0 means one per allowed CPU. Thread i is pinned to allowed_cpus()[i % count] when
  // `pin` is set. Throws std::system_error (the OS's error, which thread could not be created)
  // when the threads cannot all be created; those made are joined first.
  explicit thread_pool(std::size_t threads, bool pin = true);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  [[nodiscard]] std::size_t size() const { return m_workers.size(); }
  // How long a worker that finished a task watches for the next one before it sleeps (0 when the
  // pool has more threads than CPUs: a spinning worker would take a CPU from a working one).
  [[nodiscard]] std::chrono::nanoseconds spin_time() const { return m_spin; }

  // Runs fn(thread_index) on every worker and returns when all have finished. The first
  // exception thrown by any worker is rethrown here.
  //
  // Why workers spin before they sleep: a timed loop calls run() back to back, and waking a
  // sleeping thread costs a futex call and, on a VM whose idle vCPUs halt, an inter-processor
  // interrupt through the hypervisor: ~8 us for one thread and ~20 us (p99 50 us) for two on a
  // 2-vCPU KVM guest, paid on every call and varying with the host's load. A worker that watches
  // for the next task for a short while takes it within a fraction of a microsecond.
  void run(const std::function<void(std::size_t)>& fn);

 private:
  void worker_loop(std::size_t index, int cpu);
  // Waits for a generation other than `seen` (spinning first, then on the condition variable);
  // false when the pool stops.
  bool wait_for_work(std::size_t seen);
  void finish_task(std::exception_ptr error);
  void stop_and_join();

  std::vector<std::thread> m_workers;
  std::chrono::nanoseconds m_spin{0};
  std::mutex m_mutex;
  std::condition_variable m_start_cv, m_done_cv;
  // Written by run() before it publishes a new generation; read by workers after they see it.
  std::atomic<const std::function<void(std::size_t)>*> m_task{nullptr};
  std::atomic<std::size_t> m_generation{0};
  std::atomic<std::size_t> m_pending{0};
  std::atomic<bool> m_stop{false};
  std::size_t m_sleeping = 0;  // workers blocked on m_start_cv (guarded by m_mutex)
  std::exception_ptr m_error;  // guarded by m_mutex
};

}  // namespace infrabench
