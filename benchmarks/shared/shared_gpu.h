// Before NCCL is called: whether two ranks would drive one GPU. ncclCommInitRank fails on that
// ("Duplicate GPU detected" in nccl-tests, "invalid usage" here), and in EXCLUSIVE_PROCESS mode the
// second context fails first, so the collectives and the training all-reduce ask here first.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "infrabench/communicator.h"

namespace infrabench::collectives {

// The GPU one rank would drive: its host, the physical GPU (PCI bus id; with per-rank
// CUDA_VISIBLE_DEVICES two ranks may both use "device 0" of different GPUs) and its index.
struct rank_gpu {
  std::string host;
  std::string gpu_id;  // PCI bus id, or "" when unknown (then the index stands for it)
  int device = -1;
};
// Why NCCL cannot run because two ranks would drive the same GPU ("ranks 0 and 1 on host vm share
// GPU 0 (0000:3b:00.0): NCCL needs one GPU per rank; ..."), or empty. `ranks[r]` is rank r's.
[[nodiscard]] inline std::string shared_gpu_reason(const std::vector<rank_gpu>& ranks) {
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    std::vector<std::size_t> same{a};
    for (std::size_t b = a + 1; b < ranks.size(); ++b) {
      const bool same_gpu = ranks[b].gpu_id.empty() || ranks[a].gpu_id.empty()
                                ? ranks[b].device == ranks[a].device
                                : ranks[b].gpu_id == ranks[a].gpu_id;
      if (ranks[b].host == ranks[a].host && same_gpu) same.push_back(b);
    }
    if (same.size() < 2) continue;
    std::string who = "ranks ";
    for (std::size_t k = 0; k < same.size(); ++k) {
      who += (k == 0 ? "" : k + 1 == same.size() ? " and " : ", ") + std::to_string(same[k]);
    }
    const rank_gpu& g = ranks[a];
    return who + " on host " + g.host + " share GPU " + std::to_string(g.device) +
           (g.gpu_id.empty() ? "" : " (" + g.gpu_id + ")") +
           ": NCCL needs one GPU per rank; start at most as many ranks per host as it has GPUs";
  }
  return {};
}

// Gathers every rank's host, GPU bus id and device index on rank 0, which judges them
// (shared_gpu_reason, above); every rank gets the same answer: empty, or why not. A collective
// call: every rank must make it. `places`, when given, receives on rank 0 each rank's "host H, GPU
// G" (what a failure naming a rank adds, where NCCL knows only the rank).
[[nodiscard]] std::string shared_gpu_check(communicator& comm, int device,
                                           std::vector<std::string>* places = nullptr);

}  // namespace infrabench::collectives
