// Seconds on the steady clock since a point: the one helper the runner, the state and the
// progress line share (each had its own copy, which two copies in one unity batch refuse).
#pragma once

#include <chrono>

namespace infrabench {

[[nodiscard]] inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace infrabench
