#include "infrabench/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <string>
#include <system_error>
#include <utility>

namespace infrabench {
namespace {

// A spinning worker's pause between looks: it lets the SMT sibling run and saves power.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Long enough to bridge the gap between two calls of a timed loop and between two samples (the
// harness's bookkeeping takes microseconds), short enough that workers of a finished benchmark
// go to sleep at once.
constexpr std::chrono::microseconds worker_spin{100};

}  // namespace

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
  if (threads <= cpus.size()) m_spin = worker_spin;
  m_workers.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    const int cpu = pin ? cpus[i % cpus.size()] : -1;
    try {
      m_workers.emplace_back([this, i, cpu] { worker_loop(i, cpu); });
    } catch (const std::system_error& e) {
      // The process or user thread limit (ulimit -u, pid_max, cgroup pids.max) or memory for the
      // stacks ran out. The threads made so far must be joined here: the destructor does not run
      // for a constructor that throws, and a joinable std::thread destroyed ends the process.
      stop_and_join();
      throw std::system_error(e.code(), "cannot create thread " + std::to_string(i + 1) + " of " +
                                            std::to_string(threads) +
                                            " (a process, user or cgroup thread limit: ulimit -u, "
                                            "pids.max; or memory for its stack)");
    }
  }
}

thread_pool::~thread_pool() {
  stop_and_join();
}

void thread_pool::stop_and_join() {
  {
    std::lock_guard lock(m_mutex);
    m_stop.store(true);
  }
  m_start_cv.notify_all();
  for (auto& t : m_workers) t.join();
  m_workers.clear();
}

void thread_pool::run(const std::function<void(std::size_t)>& fn) {
  std::unique_lock lock(m_mutex);
  m_task.store(&fn, std::memory_order_relaxed);
  m_pending.store(m_workers.size(), std::memory_order_relaxed);
  m_error = nullptr;
  // Publishes the task: a spinning worker sees the new generation without the lock.
  m_generation.fetch_add(1, std::memory_order_release);
  if (m_sleeping > 0) m_start_cv.notify_all();
  m_done_cv.wait(lock, [this] { return m_pending.load(std::memory_order_acquire) == 0; });
  m_task.store(nullptr, std::memory_order_relaxed);
  if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
}

bool thread_pool::wait_for_work(std::size_t seen) {
  if (m_spin.count() > 0) {
    const auto deadline = std::chrono::steady_clock::now() + m_spin;
    for (unsigned i = 1;; ++i) {
      if (m_stop.load(std::memory_order_relaxed)) return false;
      if (m_generation.load(std::memory_order_acquire) != seen) return true;
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) break;
      cpu_relax();
    }
  }
  std::unique_lock lock(m_mutex);
  ++m_sleeping;
  m_start_cv.wait(lock, [&] {
    return m_stop.load(std::memory_order_relaxed) ||
           m_generation.load(std::memory_order_relaxed) != seen;
  });
  --m_sleeping;
  return !m_stop.load(std::memory_order_relaxed);
}

void thread_pool::finish_task(std::exception_ptr error) {
  if (error) {
    std::lock_guard lock(m_mutex);
    if (!m_error) m_error = error;
  }
  if (m_pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // Under the lock, so run() cannot miss the notification between its check and its wait.
    std::lock_guard lock(m_mutex);
    m_done_cv.notify_one();
  }
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
  while (wait_for_work(seen)) {
    // run() starts no new generation before every worker finished this one, so the task read
    // after the generation is this generation's.
    seen = m_generation.load(std::memory_order_acquire);
    const auto* task = m_task.load(std::memory_order_relaxed);
    std::exception_ptr error;
    try {
      (*task)(index);
    } catch (...) {
      error = std::current_exception();
    }
    finish_task(error);
  }
}

}  // namespace infrabench
