// Before NCCL is called: whether two ranks would drive one GPU. ncclCommInitRank fails on that
// ("Duplicate GPU detected" in nccl-tests, "invalid usage" here), and in EXCLUSIVE_PROCESS mode the
// second context fails first, so the collectives and the training all-reduce ask here first.
#pragma once

#include <string>
#include <vector>

#include "infrabench/communicator.h"

namespace infrabench::collectives {

// Gathers every rank's host, GPU bus id and device index on rank 0, which judges them
// (shared_gpu_reason, model.h); every rank gets the same answer: empty, or why not. A collective
// call: every rank must make it. `places`, when given, receives on rank 0 each rank's "host H, GPU
// G" (what a failure naming a rank adds, where NCCL knows only the rank).
[[nodiscard]] std::string shared_gpu_check(communicator& comm, int device,
                                           std::vector<std::string>* places = nullptr);

}  // namespace infrabench::collectives
