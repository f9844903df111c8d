// An NCCL communicator made without blocking (issue 38): ncclCommInitRank blocks until every rank
// has joined, so a rank that died or hangs before NCCL's set-up held the others inside NCCL with
// no way to abort. ncclCommInitRankConfig with blocking = 0 returns at once; the set-up is then
// polled (ncclCommGetAsyncError) as the collectives' own waits are (wait_polling), aborted on
// NCCL's error or past the bound, and the caller's agreement names what each rank saw. The bound
// runs a few seconds past the operation timeout, so that the harness's liveness monitor, which
// names a rank that ended or went silent, speaks first where it can.
#pragma once

#include <nccl.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "infrabench/gpu_timing.h"

namespace infrabench::collectives {

// The poll of one communicator's non-blocking set-up.
class nccl_init_wait final : public gpu_wait_target {
 public:
  explicit nccl_init_wait(ncclComm_t comm) : m_comm(comm) {}
  bool finished() override { return state() != ncclInProgress; }
  std::string async_error() override {
    const ncclResult_t rc = state();
    if (rc == ncclSuccess || rc == ncclInProgress) return {};
    std::string text = ncclGetErrorString(rc);
    const char* last = ncclGetLastError(m_comm);
    if (last != nullptr && *last != '\0') text += ": " + std::string(last);
    return text;
  }
  void abort() noexcept override {
    if (m_comm != nullptr) (void)ncclCommAbort(m_comm);
    m_comm = nullptr;
  }

 private:
  ncclResult_t state() {
    ncclResult_t rc = ncclSuccess;
    if (m_comm == nullptr) return ncclInvalidArgument;
    if (const ncclResult_t q = ncclCommGetAsyncError(m_comm, &rc); q != ncclSuccess) return q;
    return rc;
  }
  ncclComm_t m_comm;
};

// A call on a non-blocking communicator may return ncclInProgress (a group's end, a collective
// that sets up its connections on first use, a split, a destroy): waits, polled and bounded by
// `bound_s`, until the communicator has finished it, and returns its final result (still
// ncclInProgress past the bound).
[[nodiscard]] inline ncclResult_t settle(ncclResult_t rc, ncclComm_t comm, double bound_s = 600) {
  if (rc != ncclInProgress || comm == nullptr) return rc;
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t q = ncclCommGetAsyncError(comm, &state); q != ncclSuccess) return q;
    if (state != ncclInProgress) return state;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > bound_s)
      return ncclInProgress;
    std::this_thread::yield();
  }
}

// Frees a non-blocking communicator: ncclCommFinalize (collective: it flushes what the peers
// still need) polled for up to `bound_s`, then ncclCommDestroy; a finalize that does not finish
// (a peer gone) is aborted instead, which frees without waiting for anyone.
inline void release_comm(ncclComm_t comm, double bound_s = 30) noexcept {
  if (comm == nullptr) return;
  if (settle(ncclCommFinalize(comm), comm, bound_s) == ncclSuccess)
    (void)ncclCommDestroy(comm);
  else
    (void)ncclCommAbort(comm);
}

// How long a rank waits for the others to join NCCL's set-up: past the operation timeout (the
// monitor's, which names the rank), never unbounded.
[[nodiscard]] inline double nccl_init_bound_s(double op_timeout_s) {
  return op_timeout_s > 0 ? op_timeout_s + 5 : 600;
}

// Rank `rank` of `ranks`' communicator on the current device; throws std::runtime_error
// "ncclCommInitRank on rank R of N: <NCCL's error, or not finished after S s>; aborted".
[[nodiscard]] inline ncclComm_t init_comm_polled(int ranks, const ncclUniqueId& id, int rank,
                                                 double bound_s) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const std::string what =
      "ncclCommInitRank on rank " + std::to_string(rank) + " of " + std::to_string(ranks);
  const ncclResult_t rc = ncclCommInitRankConfig(&comm, ranks, id, rank, &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    std::string text = ncclGetErrorString(rc);
    if (comm != nullptr) (void)ncclCommAbort(comm);
    throw std::runtime_error(what + ": " + text);
  }
  nccl_init_wait wait(comm);
  wait_polling(wait, bound_s, what + " (waiting for every rank to join)");
  return comm;
}

}  // namespace infrabench::collectives
