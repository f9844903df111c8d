// NCCL collectives on device buffers, one GPU per rank (chosen by the rank's place on its host),
// the communicator bootstrapped through MPI (rank 0's ncclUniqueId broadcast). Same sweep and
// bandwidth model as the MPI collectives; timed with CUDA events on the operation's stream, the
// slowest rank's time kept per iteration; the data verified on the device.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "cpu/reduce_pattern.h"
#include "cuda/reduce_check.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "model.h"
#include "mpi_util.h"

namespace {

using namespace infrabench;
using namespace infrabench::collectives;
namespace kcu = infrabench::kernels::cuda;

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc));
}
void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(rc));
}

// One NCCL communicator for the whole run: creating one costs a second or more and every
// configuration would pay it. Destroyed at exit.
struct nccl_context {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = -1;
  std::string error;  // set when creation failed on this rank
  ~nccl_context() {
    if (comm) ncclCommDestroy(comm);
    if (stream) cudaStreamDestroy(stream);
  }
};

nccl_context& context(state& st) {
  static std::unique_ptr<nccl_context> ctx;
  if (ctx) {
    agree_or_fail(st, ctx->error.empty(), ctx->error);
    return *ctx;
  }
  ctx = std::make_unique<nccl_context>();
  communicator& comm = st.comm();
  ncclUniqueId id{};
  try {
    ctx->device = device_for_local_rank(comm.local_rank(), st.caps().cuda_device_count);
    check_cuda(cudaSetDevice(ctx->device), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    if (comm.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  } catch (const std::exception& e) {
    ctx->error = e.what();
  }
  {
    op_scope scope(comm);
    check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast (ncclUniqueId)");
  }
  agree_or_fail(st, ctx->error.empty(), ctx->error);
  try {
    op_scope scope(comm);  // ncclCommInitRank waits for every rank
    check_nccl(ncclCommInitRank(&ctx->comm, comm.size(), id, comm.rank()), "ncclCommInitRank");
  } catch (const std::exception& e) {
    ctx->error = e.what();
  }
  agree_or_fail(st, ctx->error.empty(), ctx->error);
  return *ctx;
}

class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) {
    if (bytes) check_cuda(cudaMalloc(&m_ptr, bytes), "cudaMalloc");
  }
  ~device_buffer() {
    if (m_ptr) cudaFree(m_ptr);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  [[nodiscard]] std::byte* data() const { return static_cast<std::byte*>(m_ptr); }

 private:
  void* m_ptr = nullptr;
};

class event_pair {
 public:
  event_pair() {
    check_cuda(cudaEventCreate(&m_start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&m_stop), "cudaEventCreate");
  }
  ~event_pair() {
    cudaEventDestroy(m_start);
    cudaEventDestroy(m_stop);
  }
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;
  cudaEvent_t start() const { return m_start; }
  cudaEvent_t stop() const { return m_stop; }

 private:
  cudaEvent_t m_start{}, m_stop{};
};

void add_metrics(state& st, double bytes, double factor) {
  st.add_time_metric(
      "algbw_gbps", "GB/s", true,
      "bytes / time, time = slowest rank's CUDA-event time per iteration (nccl-tests algbw)",
      [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; });
  st.add_time_metric("busbw_gbps", "GB/s", true,
                     "algbw x the collective's bus factor (nccl-tests busbw)",
                     [&](double t) { return t > 0 ? bytes / t / 1e9 * factor : 0.0; });
  st.add_time_metric("latency_us", "us", false,
                     "CUDA-event time per operation, slowest rank, microseconds",
                     [](double t) { return t * 1e6; });
}

kcu::check_kind kind_of(coll_op op) {
  switch (op) {
    case coll_op::allreduce:
      return kcu::check_kind::allreduce;
    case coll_op::allgather:
      return kcu::check_kind::allgather;
    case coll_op::reduce_scatter:
      return kcu::check_kind::reduce_scatter;
    case coll_op::broadcast:
      return kcu::check_kind::broadcast;
    case coll_op::alltoall:
      return kcu::check_kind::alltoall;
  }
  return kcu::check_kind::allreduce;
}

void run_nccl(state& st, coll_op op) {
  communicator& comm = st.comm();
  const int n = comm.size(), me = comm.rank();
  const bool is_double = (op == coll_op::allreduce || op == coll_op::reduce_scatter) &&
                         st.get_string("dtype") == "float64";
  const std::size_t es = is_double ? 8 : 4;
  const ncclDataType_t dt = is_double ? ncclDouble : ncclFloat;
  const bool in_place = op != coll_op::broadcast && st.get_string("placement") == "in_place";
  const auto l = make_layout(op, st.get_int64("size"), es, n);
  if (!l) st.skip("size is less than one element per rank");

  nccl_context& ctx = context(st);
  std::unique_ptr<device_buffer> send, recv, bad;
  std::string alloc_error;
  try {
    check_cuda(cudaSetDevice(ctx.device), "cudaSetDevice");
    const std::size_t big = std::max(l->send_count, l->recv_count) * es;
    recv = std::make_unique<device_buffer>(big);
    if (!in_place) send = std::make_unique<device_buffer>(l->send_count * es);
    bad = std::make_unique<device_buffer>(sizeof(unsigned long long));
  } catch (const std::exception& e) {
    alloc_error = e.what();
  }
  agree_or_fail(st, alloc_error.empty(), alloc_error);

  std::byte* rbuf = recv->data();
  // NCCL's in-place forms: the same pointer, or this rank's block of the larger buffer.
  std::byte* sbuf = !in_place                  ? send->data()
                    : op == coll_op::allgather ? rbuf + static_cast<std::size_t>(me) * l->block * es
                                               : rbuf;
  std::byte* out = op == coll_op::reduce_scatter && in_place
                       ? rbuf + static_cast<std::size_t>(me) * l->block * es
                       : rbuf;
  void* stream = ctx.stream;

  auto set_inputs = [&] {
    if (op == coll_op::broadcast) {
      check_cuda(cudaMemsetAsync(rbuf, 0, l->recv_count * es, ctx.stream), "cudaMemsetAsync");
      if (me == 0)
        check_cuda(static_cast<cudaError_t>(
                       kcu::launch_fill_pattern(rbuf, is_double, l->recv_count, 0, me, stream)),
                   "fill");
    } else {
      const std::size_t count = op == coll_op::allgather ? l->block : l->send_count;
      check_cuda(
          static_cast<cudaError_t>(kcu::launch_fill_pattern(sbuf, is_double, count, 0, me, stream)),
          "fill");
    }
    check_cuda(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  };
  auto enqueue = [&] {
    const std::size_t c = l->block;
    switch (op) {
      case coll_op::allreduce:
        check_nccl(ncclAllReduce(sbuf, rbuf, c, dt, ncclSum, ctx.comm, ctx.stream),
                   "ncclAllReduce");
        break;
      case coll_op::allgather:
        check_nccl(ncclAllGather(sbuf, rbuf, c, dt, ctx.comm, ctx.stream), "ncclAllGather");
        break;
      case coll_op::reduce_scatter:
        check_nccl(ncclReduceScatter(sbuf, out, c, dt, ncclSum, ctx.comm, ctx.stream),
                   "ncclReduceScatter");
        break;
      case coll_op::broadcast:
        check_nccl(ncclBroadcast(rbuf, rbuf, c, dt, 0, ctx.comm, ctx.stream), "ncclBroadcast");
        break;
      case coll_op::alltoall:
        // NCCL has no all-to-all primitive: grouped sends and receives, as nccl-tests does it.
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < n; ++r) {
          const std::size_t off = static_cast<std::size_t>(r) * c * es;
          check_nccl(ncclSend(sbuf + off, c, dt, r, ctx.comm, ctx.stream), "ncclSend");
          check_nccl(ncclRecv(rbuf + off, c, dt, r, ctx.comm, ctx.stream), "ncclRecv");
        }
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        break;
    }
  };

  set_inputs();
  event_pair ev;
  st.exec_timed(
      [&] {
        return max_over_ranks_timed(comm, [&] {
          check_cuda(cudaEventRecord(ev.start(), ctx.stream), "cudaEventRecord");
          enqueue();
          check_cuda(cudaEventRecord(ev.stop(), ctx.stream), "cudaEventRecord");
          check_cuda(cudaEventSynchronize(ev.stop()), "cudaEventSynchronize");
          float ms = 0;
          check_cuda(cudaEventElapsedTime(&ms, ev.start(), ev.stop()), "cudaEventElapsedTime");
          return ms * 1e-3;
        });
      },
      "cuda_event_max_over_ranks_per_iteration");
  add_metrics(st, l->bytes, bus_factor(op, n));

  // Verification on the device: fresh inputs, one operation, count wrong elements.
  set_inputs();
  {
    op_scope scope(comm);
    enqueue();
    check_cuda(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  }
  auto* counter = reinterpret_cast<unsigned long long*>(bad->data());
  check_cuda(cudaMemsetAsync(counter, 0, sizeof(*counter), ctx.stream), "cudaMemsetAsync");
  check_cuda(static_cast<cudaError_t>(kcu::launch_count_mismatches(
                 out, is_double, l->recv_count, kind_of(op), me, n, l->block,
                 kernels::pattern::rank_sum(n), counter, stream)),
             "count_mismatches");
  unsigned long long wrong = 0;
  check_cuda(cudaMemcpyAsync(&wrong, counter, sizeof(wrong), cudaMemcpyDeviceToHost, ctx.stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  st.check(wrong == 0, "verification failed on rank " + std::to_string(me) + " (GPU " +
                           std::to_string(ctx.device) + "): " + std::to_string(wrong) + " of " +
                           std::to_string(l->recv_count) + " elements wrong");
}

std::vector<std::int64_t> sweep() {
  std::vector<std::int64_t> v;
  for (std::int64_t s = 8; s <= (1ll << 30); s *= 2) v.push_back(s);
  return v;
}
const axis_options size_opts{
    .description = "message size (nccl-tests convention: the larger buffer)",
    .bytes = true,
    .pow2 = true,
    .min = 8,
    .max = 8.0 * (1ll << 30)};
const axis_options dtype_opts{.description = "element type", .choices = {"float32", "float64"}};
const axis_options placement_opts{.description = "separate buffers or NCCL's in-place form",
                                  .choices = {"out_of_place", "in_place"}};
std::int64_t device_memory(const config&) {
  return 64 << 20;
}  // host memory only: buffers are on the GPU

void nccl_allreduce(state& st) {
  run_nccl(st, coll_op::allreduce);
}
void nccl_allgather(state& st) {
  run_nccl(st, coll_op::allgather);
}
void nccl_reduce_scatter(state& st) {
  run_nccl(st, coll_op::reduce_scatter);
}
void nccl_broadcast(state& st) {
  run_nccl(st, coll_op::broadcast);
}
void nccl_alltoall(state& st) {
  run_nccl(st, coll_op::alltoall);
}

}  // namespace

#define INFRABENCH_NCCL_COMMON(fn, name, text) \
  INFRABENCH_REGISTER(fn, name)                \
      .describe(text)                          \
      .require(req::cuda)                      \
      .require(req::nccl)                      \
      .scope(rank_scope::collective)           \
      .min_ranks(2)                            \
      .memory_estimate(device_memory)

INFRABENCH_NCCL_COMMON(
    nccl_allreduce, "collectives/nccl_allreduce",
    "ncclAllReduce (sum) on device buffers, one GPU per rank: algbw, busbw = algbw x 2(n-1)/n, "
    "latency; verified on the device")
    .add_string_axis("dtype", {"float32", "float64"}, dtype_opts)
    .add_string_axis("placement", {"out_of_place", "in_place"}, placement_opts)
    .add_int64_axis("size", sweep(), size_opts);
INFRABENCH_NCCL_COMMON(
    nccl_allgather, "collectives/nccl_allgather",
    "ncclAllGather on device buffers: busbw = algbw x (n-1)/n; verified on the device")
    .add_string_axis("placement", {"out_of_place"}, placement_opts)
    .add_int64_axis("size", sweep(), size_opts);
INFRABENCH_NCCL_COMMON(
    nccl_reduce_scatter, "collectives/nccl_reduce_scatter",
    "ncclReduceScatter (sum) on device buffers: busbw = algbw x (n-1)/n; verified on the device")
    .add_string_axis("dtype", {"float32"}, dtype_opts)
    .add_string_axis("placement", {"out_of_place"}, placement_opts)
    .add_int64_axis("size", sweep(), size_opts);
INFRABENCH_NCCL_COMMON(
    nccl_broadcast, "collectives/nccl_broadcast",
    "ncclBroadcast from rank 0 on device buffers: busbw = algbw; verified on the device")
    .add_int64_axis("size", sweep(), size_opts);
INFRABENCH_NCCL_COMMON(
    nccl_alltoall, "collectives/nccl_alltoall",
    "all-to-all on device buffers (grouped ncclSend/ncclRecv): busbw = algbw x (n-1)/n; verified")
    .add_string_axis("placement", {"out_of_place"}, placement_opts)
    .add_int64_axis("size", sweep(), size_opts);
