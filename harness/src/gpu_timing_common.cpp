// The parts of GPU timing that need no GPU (both builds): the SM clock arithmetic of a timed
// window and the bounded, abortable wait. Unit-tested with stamps and a fake wait target.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "infrabench/gpu_timing.h"

namespace infrabench {

namespace {
// Operations one held stream may queue: CUDA's launch queue holds about 1000 entries before a
// launch blocks the host (which would then wait for the blocking kernel to give up); a library
// call may enqueue several kernels (cuBLAS, a split-k reduction), hence the margin.
constexpr std::int64_t max_held_operations = 256;
// With an L2 flush every launch queues a memset and two events besides its own work.
constexpr std::int64_t max_flushed_launches = 64;
// Unheld streams (pageable copies, NCCL) can queue as many as the host issues.
constexpr std::int64_t max_free_launches = 1'000'000;
}  // namespace

std::int64_t held_launch_cap(bool block, bool flush_l2, int operations_per_launch) {
  const std::int64_t ops = std::max(1, operations_per_launch);
  if (flush_l2) return std::max<std::int64_t>(1, max_flushed_launches / ops);
  if (!block) return max_free_launches;
  return std::max<std::int64_t>(1, max_held_operations / ops);
}

std::optional<double> sm_clock_mhz(const sm_clock_stamp& start, const sm_clock_stamp& end) {
  // A zero stamp is a slot no probe block wrote (no block ran on that SM).
  if (start.ns == 0 || end.ns == 0 || start.cycles == 0 || end.cycles == 0) return std::nullopt;
  if (end.ns <= start.ns || end.cycles <= start.cycles) return std::nullopt;
  const unsigned long long ns = end.ns - start.ns;
  if (ns < min_clock_window_ns) return std::nullopt;
  // cycles per nanosecond = GHz; x 1000 = MHz.
  return static_cast<double>(end.cycles - start.cycles) / static_cast<double>(ns) * 1e3;
}

std::optional<double> window_sm_clock_mhz(const std::vector<sm_clock_stamp>& start,
                                          const std::vector<sm_clock_stamp>& end) {
  std::vector<double> mhz;
  const std::size_t n = std::min(start.size(), end.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (const auto v = sm_clock_mhz(start[i], end[i])) mhz.push_back(*v);
  }
  if (mhz.empty()) return std::nullopt;
  std::sort(mhz.begin(), mhz.end());
  const std::size_t m = mhz.size();
  return m % 2 ? mhz[m / 2] : 0.5 * (mhz[m / 2 - 1] + mhz[m / 2]);
}

void wait_polling(gpu_wait_target& target, double timeout_s, std::string_view what) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto fail = [&](const std::string& error) {
    target.abort();
    throw std::runtime_error(std::string(what) + ": " + error + "; aborted");
  };
  while (true) {
    bool done = false;
    try {
      done = target.finished();
    } catch (const std::exception& e) {
      // The library's own error says more than the CUDA error of a kernel it killed.
      const std::string lib = target.async_error();
      fail(lib.empty() ? std::string(e.what()) : lib + " (" + e.what() + ")");
    }
    if (done) return;
    if (std::string error = target.async_error(); !error.empty()) fail(error);
    if (timeout_s > 0 && std::chrono::duration<double>(clock::now() - t0).count() > timeout_s) {
      fail("not finished after " + std::to_string(timeout_s) + " s");
    }
    // Busy polling as nccl-tests does (a collective of microseconds), but leaving the core to
    // another thread of this process that has work.
    std::this_thread::yield();
  }
}

}  // namespace infrabench
