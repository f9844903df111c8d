#include "infrabench/ordered_parallel.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "infrabench/thread_pool.h"

namespace infrabench {

namespace {

class ordered_work {
 public:
  ordered_work(const ordered_parallel_plan& plan,
               const std::function<void(std::size_t, std::size_t)>& produce,
               const std::function<void(std::size_t, std::size_t)>& consume)
      : m_plan(plan),
        m_produce(produce),
        m_consume(consume),
        m_state(plan.window),
        m_error(plan.window) {}

  // One worker's loop: it never throws (a failure is kept for its index's turn).
  void work() {
    while (const auto i = claim()) {
      std::exception_ptr error;
      try {
        m_produce(*i, *i % m_plan.window);
      } catch (...) {
        error = std::current_exception();
      }
      deliver(*i, error);
    }
  }

  void rethrow_failure() const {
    if (m_failure) std::rethrow_exception(m_failure);
  }

 private:
  enum class slot_state { empty, produced, failed };

  // The next index to produce, once it is within the window of the next to consume; none when all
  // are claimed or one failed.
  std::optional<std::size_t> claim() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] {
      return m_failure || m_next_claim == m_plan.count ||
             m_next_claim < m_next_consume + m_plan.window;
    });
    if (m_failure || m_next_claim == m_plan.count) return std::nullopt;
    return m_next_claim++;
  }

  void deliver(std::size_t i, std::exception_ptr error) {
    std::lock_guard lock(m_mutex);
    if (m_failure) return;  // an earlier index failed: nothing after it counts
    m_state[i % m_plan.window] = error ? slot_state::failed : slot_state::produced;
    m_error[i % m_plan.window] = error;
    consume_ready();
    m_cv.notify_all();
  }

  // Consumes the indices that are next in order and produced (under the lock).
  void consume_ready() {
    while (!m_failure && m_next_consume < m_plan.count) {
      const std::size_t i = m_next_consume, slot = i % m_plan.window;
      if (m_state[slot] == slot_state::empty) return;  // still being produced
      const bool failed = m_state[slot] == slot_state::failed;
      m_state[slot] = slot_state::empty;
      ++m_next_consume;
      try {
        if (failed) std::rethrow_exception(std::exchange(m_error[slot], nullptr));
        m_consume(i, slot);
      } catch (...) {
        m_failure = std::current_exception();
      }
    }
  }

  const ordered_parallel_plan& m_plan;
  const std::function<void(std::size_t, std::size_t)>& m_produce;
  const std::function<void(std::size_t, std::size_t)>& m_consume;
  std::vector<slot_state> m_state;          // per slot; guarded by m_mutex, as everything below
  std::vector<std::exception_ptr> m_error;  // per slot: why its index failed
  std::size_t m_next_claim = 0, m_next_consume = 0;
  std::exception_ptr m_failure;
  std::mutex m_mutex;
  std::condition_variable m_cv;
};

}  // namespace

std::size_t ordered_parallel_workers(const ordered_parallel_plan& plan) {
  const std::size_t cpus = std::max<std::size_t>(1, allowed_cpus().size());
  return std::min(plan.workers == 0 ? cpus : plan.workers, std::max<std::size_t>(plan.count, 1));
}

void ordered_parallel(const ordered_parallel_plan& plan,
                      const std::function<void(std::size_t, std::size_t)>& produce,
                      const std::function<void(std::size_t, std::size_t)>& consume) {
  if (plan.window == 0) throw std::invalid_argument("ordered_parallel: a window of 0");
  if (plan.count == 0) return;
  ordered_work work(plan, produce, consume);
  {
    // Unpinned: this work is not timed, and the scheduler knows better where it fits. The pool
    // joins its threads however this block is left.
    thread_pool pool(ordered_parallel_workers(plan), /*pin=*/false);
    pool.run([&](std::size_t) { work.work(); });
  }
  work.rethrow_failure();
}

}  // namespace infrabench
