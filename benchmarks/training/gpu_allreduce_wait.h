// How a GPU training step waits for its work when the gradients are all-reduced across ranks:
// polled (gpu_wait_polled) with the all-reduce's health and abort, bounded, so a rank that died
// ends the others' step with NCCL's own error instead of leaving them blocked inside NCCL for
// good. Header-only and CUDA-free so the unit tests check the choice on any machine.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "infrabench/gpu_timing.h"

namespace infrabench::training_bench {

// The bound on one step's wait when the configuration has no time limit (--timeout 0). A peer
// that stops without closing its connections raises no asynchronous error, so only a bound ends
// that wait; a step of the largest model we run takes seconds, so this never cuts a healthy one.
inline constexpr double step_wait_unlimited_s = 600;

// How long after the configuration's --timeout a step's wait gives up. A step still running then
// fails the configuration anyway (step.cpp checks the elapsed time after every batch), and the
// runner's hang watchdog ends the whole job at the timeout plus max(5 s, half of it): aborting
// first lets this configuration fail with its reason and the run go on with the next one.
inline constexpr double step_wait_past_timeout_s = 2;

// What a failed or timed-out step's error starts with (wait_polling adds the error).
inline constexpr const char* step_wait_what =
    "training step (waiting for the GPU and the NCCL all-reduce, bounded by the configuration's "
    "--timeout)";

// The bound on one multi-rank step's wait, seconds: the time left before the configuration's
// timeout (communicator::config_timeout, config_elapsed) plus step_wait_past_timeout_s, and never
// less than that margin (a configuration already past its timeout still gets a short wait, not
// an unbounded one); step_wait_unlimited_s when the configuration has no limit.
[[nodiscard]] inline double step_wait_timeout_s(double config_timeout_s, double config_elapsed_s) {
  if (config_timeout_s <= 0) return step_wait_unlimited_s;
  return std::max(config_timeout_s - config_elapsed_s, 0.0) + step_wait_past_timeout_s;
}

// The options of a step's polled wait (health: the all-reduce's asynchronous error, abort: its
// ncclCommAbort), or nothing for one rank: without peers nothing fails asynchronously and
// cudaEventSynchronize is the cheapest wait. The caller sets wait_timeout_s before each wait
// (step_wait_timeout_s: the configuration's clock moves).
[[nodiscard]] inline std::optional<gpu_exec_options> step_wait_options(
    int ranks, std::function<std::string()> health, std::function<void()> abort) {
  if (ranks <= 1) return std::nullopt;
  gpu_exec_options o;
  o.health = std::move(health);
  o.abort = std::move(abort);
  o.wait_timeout_s = step_wait_unlimited_s;
  return o;
}

}  // namespace infrabench::training_bench
