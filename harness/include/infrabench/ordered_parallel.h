// Work done on several threads and delivered in order: produce(i) for every index on worker
// threads, consume(i) for each in index order, one at a time. For readers of many independent
// inputs (a fleet's node reports) whose result must not depend on which thread finished first.
#pragma once

#include <cstddef>
#include <functional>

namespace infrabench {

struct ordered_parallel_plan {
  std::size_t count = 0;    // indices 0 .. count - 1
  std::size_t workers = 0;  // threads (0: one per allowed CPU), never more than count
  // At most this many indices produced and not yet consumed (>= 1): the caller keeps a slot per
  // index modulo `window`, which bounds its memory.
  std::size_t window = 1;
};

// Calls produce(i, i % window) on the worker threads and consume(i, i % window) in index order,
// under one lock, once produce(i) has returned; produce may write only its slot, consume reads and
// clears it (every consume happens before any later produce of the same slot). The first failure in
// index order (an exception from produce(i), or from consume(i)) stops the work: no later index is
// consumed, and it is rethrown once every thread is joined. So what is consumed, and what is
// thrown, is what one thread doing it all in order would consume and throw. Every wait ends: an
// index the window waits for is being produced, and producing waits for nothing.
void ordered_parallel(const ordered_parallel_plan& plan,
                      const std::function<void(std::size_t index, std::size_t slot)>& produce,
                      const std::function<void(std::size_t index, std::size_t slot)>& consume);

// The worker count plan.workers means for plan.count indices (at least 1).
[[nodiscard]] std::size_t ordered_parallel_workers(const ordered_parallel_plan& plan);

}  // namespace infrabench
