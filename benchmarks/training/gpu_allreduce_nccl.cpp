// The GPU all-reduce over NCCL.
#include <nccl.h>

#include <cstring>
#include <map>
#include <stdexcept>

#include "gpu_allreduce.h"

namespace infrabench::training_bench {

namespace {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(rc));
  }
}

// One communicator per device for the whole run: creating one costs a second or more, and every
// configuration of the run would pay it. Destroyed at exit.
struct nccl_comm {
  ncclComm_t comm = nullptr;
  ~nccl_comm() {
    if (comm != nullptr) (void)ncclCommDestroy(comm);
  }
};

class nccl_allreduce final : public gpu_allreduce {
 public:
  nccl_allreduce(ncclComm_t c, int ranks) : m_comm(c), m_ranks(ranks) {}
  void sum(float* data, std::size_t n, cudaStream_t s) override {
    check_nccl(ncclAllReduce(data, data, n, ncclFloat, ncclSum, m_comm, s), "ncclAllReduce");
  }
  [[nodiscard]] std::string describe() const override {
    int v = 0;
    (void)ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
           " all-reduce (sum, fp32) across " + std::to_string(m_ranks) + " ranks";
  }

 private:
  ncclComm_t m_comm;
  int m_ranks;
};

}  // namespace

std::unique_ptr<gpu_allreduce> make_gpu_allreduce(communicator& comm) {
  if (comm.size() == 1) return make_single_gpu_allreduce();
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) throw std::runtime_error("cudaGetDevice failed");
  static std::map<int, nccl_comm> comms;
  auto& c = comms[device];
  if (c.comm == nullptr) {
    // Rank 0's unique id reaches every rank through the harness's communicator (MPI); an empty
    // string says rank 0 could not make one, and every rank fails alike.
    ncclUniqueId id{};
    std::string mine;
    if (comm.rank() == 0 && ncclGetUniqueId(&id) == ncclSuccess) {
      mine.assign(reinterpret_cast<const char*>(&id), sizeof(id));
    }
    const std::string got = comm.broadcast_string(mine);
    if (got.size() != sizeof(id)) throw std::runtime_error("ncclGetUniqueId failed on rank 0");
    std::memcpy(&id, got.data(), sizeof(id));
    op_scope scope(comm);  // ncclCommInitRank waits for every rank: the operation timeout applies
    check_nccl(ncclCommInitRank(&c.comm, comm.size(), id, comm.rank()), "ncclCommInitRank");
  }
  return std::make_unique<nccl_allreduce>(c.comm, comm.size());
}

}  // namespace infrabench::training_bench
