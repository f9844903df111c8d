// The order of a multi-rank training set-up (issue 38): one rank can fail alone while it builds
// (out of memory, a faulty GPU's gradient check), and the GPU trainer's communicator set-up is
// collective (the shared-GPU gather, rank 0's NCCL id broadcast, ncclCommInitRank). A rank that
// failed its own part and went to the agreement while the others were already inside those
// collectives left them waiting in mismatched operations until the operation timeout. So: each
// rank's local part, then the agreement, then the collective part only when every rank is ready,
// then a second agreement on how that went.
#pragma once

#include <exception>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "infrabench/communicator.h"

namespace infrabench::training_bench {

// What went wrong on this rank (its text), or on another (one line that says so): "" when every
// rank set up. `local` returns this rank's failure ("" for none) or throws it; `connect` (called
// on every rank or on none) throws its failure.
[[nodiscard]] inline std::string agreed_set_up(communicator& comm,
                                               const std::function<std::string()>& local,
                                               const std::function<void()>& connect) {
  const auto attempt = [](const std::function<std::string()>& part) {
    try {
      return part();
    } catch (const std::bad_alloc&) {
      return std::string("out of memory building the model's buffers");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  // On a failure every rank returns the first failing rank's reason, naming that rank and its
  // host: only rank 0's result reaches the report, and it must say which rank failed and why.
  const auto agree = [&comm](const std::string& mine) {
    if (comm.allreduce_max(mine.empty() ? 0.0 : 1.0) == 0) return std::string();
    const std::vector<std::string> all = comm.gather_strings(mine);  // rank 0's only
    const std::vector<std::string> hosts = comm.hostnames();
    std::string first;
    for (std::size_t r = 0; r < all.size() && first.empty(); ++r) {
      if (all[r].empty()) continue;
      first = "rank " + std::to_string(r) +
              (r < hosts.size() ? " (host " + hosts[r] + ")" : std::string()) + ": " + all[r];
    }
    first = comm.broadcast_string(first);
    if (!first.empty()) return first;
    return !mine.empty() ? mine : "another rank failed to set up (its reason is in its result)";
  };
  if (std::string why = agree(attempt(local)); !why.empty()) return why;
  return agree(attempt([&] {
    connect();
    return std::string();
  }));
}

}  // namespace infrabench::training_bench
