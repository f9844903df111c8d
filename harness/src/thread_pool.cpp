#include "infrabench/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <utility>

namespace infrabench {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

thread_pool::thread_pool(std::size_t threads, bool pin) {
  const auto cpus = allowed_cpus();
  if (threads == 0) threads = cpus.size();
  m_workers.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    const int cpu = pin ? cpus[i % cpus.size()] : -1;
    m_workers.emplace_back([this, i, cpu] { worker_loop(i, cpu); });
  }
}

thread_pool::~thread_pool() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_start_cv.notify_all();
  for (auto& t : m_workers) t.join();
}

void thread_pool::run(const std::function<void(std::size_t)>& fn) {
  std::unique_lock lock(m_mutex);
  m_task = &fn;
  m_pending = m_workers.size();
  m_error = nullptr;
  ++m_generation;
  m_start_cv.notify_all();
  m_done_cv.wait(lock, [this] { return m_pending == 0; });
  m_task = nullptr;
  if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
}

void thread_pool::worker_loop(std::size_t index, int cpu) {
  if (cpu >= 0) {
    // Pinning keeps a thread's first-touched memory and caches local across samples.
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  std::size_t seen = 0;
  while (true) {
    const std::function<void(std::size_t)>* task = nullptr;
    {
      std::unique_lock lock(m_mutex);
      m_start_cv.wait(lock, [&] { return m_stop || m_generation != seen; });
      if (m_stop) return;
      seen = m_generation;
      task = m_task;
    }
    std::exception_ptr error;
    try {
      (*task)(index);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(m_mutex);
      if (error && !m_error) m_error = error;
      if (--m_pending == 0) m_done_cv.notify_one();
    }
  }
}

}  // namespace infrabench
