// See shared_gpu.h.
#include "shared/shared_gpu.h"

#include <exception>
#include <string>
#include <vector>

#include "cuda/support.h"

namespace infrabench::collectives {

std::string shared_gpu_check(communicator& comm, int device, std::vector<std::string>* places) {
  std::string id;
  try {
    id = kernels::cuda::query_device(device).bus_id;
  } catch (const std::exception&) {
    id.clear();  // the index stands for the GPU
  }
  std::vector<std::string> all;
  {
    op_scope scope(comm);
    all = comm.gather_strings(comm.hostname() + '\t' + id + '\t' + std::to_string(device));
  }
  std::string reason;
  if (comm.rank() == 0) {
    std::vector<rank_gpu> ranks;
    for (const auto& s : all) {
      const auto a = s.find('\t'), b = s.find('\t', a + 1);
      ranks.push_back({s.substr(0, a), s.substr(a + 1, b - a - 1), std::stoi(s.substr(b + 1))});
      if (places != nullptr)
        places->push_back("host " + ranks.back().host + ", GPU " +
                          std::to_string(ranks.back().device));
    }
    reason = shared_gpu_reason(ranks);
  }
  op_scope scope(comm);
  return comm.broadcast_string(reason);
}

}  // namespace infrabench::collectives
