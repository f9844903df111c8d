// A fixed pool of worker threads, each pinned to one CPU this process may use, for benchmarks that
// need the same threads across samples (first-touch memory, no thread start-up in timed regions).
#pragma once

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
  // `pin` is set.
  explicit thread_pool(std::size_t threads, bool pin = true);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  [[nodiscard]] std::size_t size() const { return m_workers.size(); }

  // Runs fn(thread_index) on every worker and returns when all have finished. The first
  // exception thrown by any worker is rethrown here.
  void run(const std::function<void(std::size_t)>& fn);

 private:
  void worker_loop(std::size_t index, int cpu);

  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_start_cv, m_done_cv;
  const std::function<void(std::size_t)>* m_task = nullptr;
  std::size_t m_generation = 0;
  std::size_t m_pending = 0;
  bool m_stop = false;
  std::exception_ptr m_error;
};

}  // namespace infrabench
