// The GPU all-reduce over NCCL. The communicator belongs to the all-reduce object (and with it to
// the trainer that made it), so it is destroyed when the configuration ends, before main returns:
// a function-local static outlived MPI_Finalize and the CUDA runtime's teardown.
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/support.h"
#include "gpu_allreduce.h"
#include "shared/nccl_init.h"
#include "shared/shared_gpu.h"

namespace infrabench::training_bench {

namespace {

namespace kcu = kernels::cuda;

// NCCL's text for `rc` and the last error it logged (the peer, transport or system call).
std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm) {
  std::string text = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(comm);  // comm may be null: the thread's last error
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  return text;
}

void check_nccl(ncclResult_t rc, const char* what, ncclComm_t comm) {
  rc = collectives::settle(rc, comm);  // a non-blocking communicator's ncclInProgress
  if (rc != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + nccl_error_text(rc, comm));
}

class nccl_allreduce final : public gpu_allreduce {
 public:
  nccl_allreduce(ncclComm_t c, int ranks) : m_comm(c), m_ranks(ranks) {}
  ~nccl_allreduce() override { collectives::release_comm(m_comm); }
  nccl_allreduce(const nccl_allreduce&) = delete;
  nccl_allreduce& operator=(const nccl_allreduce&) = delete;

  void sum(float* data, std::size_t n, cudaStream_t s) override {
    if (m_comm == nullptr) throw std::runtime_error("ncclAllReduce: " + m_aborted);
    check_nccl(ncclAllReduce(data, data, n, ncclFloat, ncclSum, m_comm, s), "ncclAllReduce",
               m_comm);
  }
  [[nodiscard]] std::string describe() const override {
    int v = 0;
    (void)ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
           " all-reduce (sum, fp32) across " + std::to_string(m_ranks) + " ranks";
  }
  [[nodiscard]] std::string async_error() override {
    if (m_comm == nullptr) return m_aborted;
    ncclResult_t rc = ncclSuccess;
    if (const ncclResult_t q = ncclCommGetAsyncError(m_comm, &rc); q != ncclSuccess) rc = q;
    if (rc == ncclSuccess || rc == ncclInProgress) return {};
    return "NCCL asynchronous error: " + nccl_error_text(rc, m_comm);
  }
  void abort() noexcept override {
    if (m_comm == nullptr) return;
    (void)ncclCommAbort(m_comm);
    m_comm = nullptr;
    m_aborted = "the NCCL communicator was aborted after an error";
  }

 private:
  ncclComm_t m_comm;
  int m_ranks;
  std::string m_aborted;
};

}  // namespace

std::unique_ptr<gpu_allreduce> make_gpu_allreduce(communicator& comm) {
  if (comm.size() == 1) return make_single_gpu_allreduce();
  int device = 0;
  IB_CUDA(cudaGetDevice(&device));
  if (const std::string shared = collectives::shared_gpu_check(comm, device); !shared.empty()) {
    throw std::runtime_error(shared);
  }
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
  ncclComm_t c = nullptr;
  {
    // Non-blocking and polled (nccl_init.h): a rank that never joins ends the wait, bounded.
    op_scope scope(comm);
    c = collectives::init_comm_polled(comm.size(), id, comm.rank(),
                                      collectives::nccl_init_bound_s(comm.op_timeout()));
  }
  return std::make_unique<nccl_allreduce>(c, comm.size());
}

}  // namespace infrabench::training_bench
