// Helpers shared by the MPI collective benchmarks: error checks, aligned buffers, the per-iteration
// max-over-ranks timer and agreement steps that keep every rank on the same path.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "infrabench/communicator.h"
#include "infrabench/state.h"

namespace infrabench::collectives {

inline void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + ": " + text);
}

// Page-aligned host buffer, every page touched (first touch outside the timed region).
class host_buffer {
 public:
  host_buffer() = default;
  explicit host_buffer(std::size_t bytes) : m_bytes(bytes) {
    if (bytes == 0) return;
    const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
    m_ptr.reset(static_cast<std::byte*>(std::aligned_alloc(4096, rounded)));
    if (!m_ptr) throw std::bad_alloc();
    std::memset(m_ptr.get(), 0, bytes);
  }
  [[nodiscard]] std::byte* data() const { return m_ptr.get(); }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }

 private:
  struct free_deleter {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, free_deleter> m_ptr;
  std::size_t m_bytes = 0;
};

// Every rank learns whether `ok` held on all ranks. When not, every rank leaves the benchmark
// (skip or fail) together: a rank that left alone would leave the others waiting in a collective.
inline void agree_or_fail(state& st, bool ok, const std::string& why, bool skip = false) {
  int mine = ok ? 1 : 0, all = 0;
  {
    op_scope scope(st.comm());
    check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  }
  if (all) return;
  const std::string reason = ok ? "another rank could not take part (see its reason)" : why;
  if (skip) st.skip(reason);
  st.fail(reason);
}

// Every rank's verification (`wrong`: empty, or what this rank found wrong) agreed: when any rank
// received a wrong result, every rank fails the configuration with the first such rank's finding,
// so that the recorded result (rank 0's) names it and no number of a wrong result is kept.
inline void agree_verified(state& st, const std::string& wrong) {
  communicator& comm = st.comm();
  std::string first;
  {
    op_scope scope(comm);
    const std::vector<std::string> all = comm.gather_strings(wrong);
    for (std::size_t r = 0; r < all.size() && first.empty(); ++r) {
      if (!all[r].empty())
        first = "verification failed on rank " + std::to_string(r) + ": " + all[r];
    }
    first = comm.broadcast_string(first);
  }
  if (!first.empty()) st.fail(reason_code::verify_failed, first);
}

// A barrier that waits off the CPU (ranks with nothing to do must not steal cycles).
inline void quiet_barrier(communicator& comm, double limit_s) {
  op_scope scope(comm, limit_s);
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
  int done = 0;
  auto pause = std::chrono::microseconds(20);
  while (true) {
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

// Returns the slowest rank's time for one operation that this rank timed (`timed_op` returns its
// seconds), by an MPI_MAX all-reduce outside the timed region: a collective is as fast as its
// slowest rank. The same reduction carries each rank's time in the configuration, so that the
// configuration's time limit (--timeout) ends it on every rank at the same iteration.
inline double max_over_ranks_timed(communicator& comm, const std::function<double()>& timed_op) {
  double t = 0;
  {
    op_scope scope(comm);
    t = timed_op();
  }
  double in[2] = {t, comm.config_elapsed()}, out[2] = {0, 0};
  {
    op_scope scope(comm);
    check_mpi(MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
              "MPI_Allreduce (timing)");
  }
  if (comm.config_timeout() > 0 && out[1] > comm.config_timeout()) {
    throw std::runtime_error("timed out after " + std::to_string(static_cast<int>(out[1])) +
                             " s on the slowest rank (--timeout " +
                             std::to_string(comm.config_timeout()) + " s)");
  }
  return out[0];
}

// Times `iters` back-to-back iterations of `op` on this rank (no synchronisation between them),
// then returns the slowest rank's mean per iteration: OSU's method (each rank's average over a
// loop, then the maximum over ranks). One reduction per batch instead of per iteration: with a
// reduction after every iteration, a small message's time included waiting for the other rank to
// leave the previous reduction (2-8x OSU's numbers at 8-64 B here). The same reduction carries
// each rank's time in the configuration, so that --timeout ends it on every rank at the same batch.
inline double batch_max_over_ranks(communicator& comm, std::int64_t iters,
                                   const std::function<void()>& op) {
  return max_over_ranks_timed(comm, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < iters; ++i) op();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s / static_cast<double>(iters);
  });
}

// The timer name recorded in the report for batch_max_over_ranks.
inline constexpr const char* batch_max_timer_name = "steady_clock_batch_mean_max_over_ranks";

}  // namespace infrabench::collectives
