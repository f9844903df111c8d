// NCCL collectives on device buffers, one GPU per rank (chosen by the rank's place on its host),
// the communicator bootstrapped through MPI (rank 0's ncclUniqueId broadcast). Every collective of
// model.h's table is registered here as collectives/nccl_<name>; this file adds only the NCCL call
// of each. Timed by the harness (state::exec_gpu): a batch of operations between one event pair,
// as nccl-tests' BenchTime does, with the slowest rank's time per operation (and wall time)
// agreed in one MPI reduction per sample, not per operation; the data verified on the device.
// Waits poll NCCL's asynchronous error as nccl-tests does: a failing rank aborts its
// communicator and reports NCCL's own error instead of hanging or a CUDA error. The communicator
// is a run resource, destroyed when the run ends (before MPI and the CUDA runtime go).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "cpu/reduce_pattern.h"
#include "cuda/reduce_check.h"
#include "cuda/support.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "model.h"
#include "mpi_util.h"
#include "registration.h"
#include "shared_gpu.h"

namespace {

using namespace infrabench;
using namespace infrabench::collectives;
namespace kcu = infrabench::kernels::cuda;

// NCCL's error for `rc`: the code's text and the last error NCCL logged (which names the peer,
// the transport or the system call), when it logged one.
std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm) {
  std::string text = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(comm);  // NCCL's last error on this thread; comm may be null
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  return text;
}

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + nccl_error_text(rc, nullptr));
}

// What one operation works on: this rank's buffers and the communicator.
struct nccl_operation {
  const void* send = nullptr;
  void* recv = nullptr;   // where the result lands (a reduce-scatter in place: the own block)
  void* whole = nullptr;  // the whole receive buffer (a broadcast's buffer, all-to-all's base)
  std::size_t block = 0;  // elements per rank (the whole count for whole-buffer collectives)
  std::size_t elem = 4;
  ncclDataType_t type = ncclFloat;
  int ranks = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};
using nccl_call = void (*)(const nccl_operation&);

// The one thing this backend adds per collective: its NCCL call.
const std::map<coll_op, nccl_call>& nccl_calls() {
  static const std::map<coll_op, nccl_call> calls = {
      {coll_op::allreduce,
       [](const nccl_operation& o) {
         check_nccl(ncclAllReduce(o.send, o.recv, o.block, o.type, ncclSum, o.comm, o.stream),
                    "ncclAllReduce");
       }},
      {coll_op::allgather,
       [](const nccl_operation& o) {
         check_nccl(ncclAllGather(o.send, o.recv, o.block, o.type, o.comm, o.stream),
                    "ncclAllGather");
       }},
      {coll_op::reduce_scatter,
       [](const nccl_operation& o) {
         check_nccl(ncclReduceScatter(o.send, o.recv, o.block, o.type, ncclSum, o.comm, o.stream),
                    "ncclReduceScatter");
       }},
      {coll_op::broadcast,
       [](const nccl_operation& o) {
         check_nccl(ncclBroadcast(o.whole, o.whole, o.block, o.type, 0, o.comm, o.stream),
                    "ncclBroadcast");
       }},
      {coll_op::alltoall,
       [](const nccl_operation& o) {
         // NCCL has no all-to-all primitive: grouped sends and receives, as nccl-tests does it.
         check_nccl(ncclGroupStart(), "ncclGroupStart");
         const auto* s = static_cast<const std::byte*>(o.send);
         auto* r = static_cast<std::byte*>(o.whole);
         for (int peer = 0; peer < o.ranks; ++peer) {
           const std::size_t off = static_cast<std::size_t>(peer) * o.block * o.elem;
           check_nccl(ncclSend(s + off, o.block, o.type, peer, o.comm, o.stream), "ncclSend");
           check_nccl(ncclRecv(r + off, o.block, o.type, peer, o.comm, o.stream), "ncclRecv");
         }
         check_nccl(ncclGroupEnd(), "ncclGroupEnd");
       }},
  };
  return calls;
}

// One NCCL communicator for the whole run: creating one costs a second or more and every
// configuration would pay it. A run resource (state::resource), destroyed when the run ends: a
// function-local static was destroyed after main returned, after MPI_Finalize and the CUDA
// runtime's teardown that ncclCommDestroy needs.
struct nccl_context {
  ncclComm_t comm = nullptr;
  std::unique_ptr<kcu::stream> stream;
  int device = -1;
  std::string aborted;  // why the communicator was aborted (later configurations fail with it)
  nccl_context() = default;
  nccl_context(const nccl_context&) = delete;
  nccl_context& operator=(const nccl_context&) = delete;
  ~nccl_context() {
    if (comm) (void)ncclCommDestroy(comm);
  }

  // NCCL's asynchronous error, "" while there is none (ncclInProgress: still connecting).
  [[nodiscard]] std::string async_error() const {
    if (comm == nullptr) return aborted;
    ncclResult_t rc = ncclSuccess;
    if (const ncclResult_t q = ncclCommGetAsyncError(comm, &rc); q != ncclSuccess) rc = q;
    if (rc == ncclSuccess || rc == ncclInProgress) return {};
    return "NCCL asynchronous error: " + nccl_error_text(rc, comm);
  }
  // Ends the communicator for good (its kernels stop waiting for peers): nccl-tests' abort.
  void abort(const std::string& why) {
    if (comm == nullptr) return;
    (void)ncclCommAbort(comm);
    comm = nullptr;
    aborted = "the NCCL communicator was aborted earlier in this run: " + why;
  }
  // What exec_gpu needs to poll a batch: the error check, the abort and the bound (a batch
  // taking longer than one operation's timeout is stuck).
  void poll(gpu_exec_options& o, double timeout_s) {
    o.health = [this] { return async_error(); };
    o.abort = [this] { abort(async_error().empty() ? "a wait timed out" : async_error()); };
    o.wait_timeout_s = timeout_s;
  }
};

// Made on the first configuration that asks; every step is agreed by all ranks, so a skip or
// failure (which leaves nothing kept: the next configuration tries again) is the same on each.
std::unique_ptr<nccl_context> make_context(state& st) {
  auto ctx = std::make_unique<nccl_context>();
  communicator& comm = st.comm();
  ctx->device = device_for_local_rank(comm.local_rank(), st.caps().cuda_device_count);
  if (const std::string skip = shared_gpu_check(comm, ctx->device); !skip.empty()) st.skip(skip);
  ncclUniqueId id{};
  std::string error;
  try {
    IB_CUDA(cudaSetDevice(ctx->device));
    ctx->stream = std::make_unique<kcu::stream>(ctx->device);
    if (comm.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  } catch (const std::exception& e) {
    error = e.what();
  }
  {
    op_scope scope(comm);
    check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast (ncclUniqueId)");
  }
  agree_or_fail(st, error.empty(), error);
  {
    op_scope scope(comm);  // ncclCommInitRank waits for every rank
    const ncclResult_t rc = ncclCommInitRank(&ctx->comm, comm.size(), id, comm.rank());
    if (rc != ncclSuccess) {
      error = "ncclCommInitRank: " + nccl_error_text(rc, ctx->comm);
      if (ctx->comm != nullptr) (void)ncclCommAbort(ctx->comm);
      ctx->comm = nullptr;
    }
  }
  agree_or_fail(st, error.empty(), error);
  return ctx;
}

nccl_context& context(state& st) {
  nccl_context& ctx =
      st.resource<nccl_context>("collectives/nccl", [&] { return make_context(st); });
  agree_or_fail(st, ctx.aborted.empty(), ctx.aborted);
  return ctx;
}

// Waits for what `ctx`'s stream has queued, polling NCCL's error (gpu_wait_polled).
void sync_polled(nccl_context& ctx, double timeout_s) {
  gpu_exec_options o;
  ctx.poll(o, timeout_s);
  gpu_wait_polled({ctx.stream->get(), ctx.device}, o, "waiting for the verification collective");
}

void add_metrics(state& st, double bytes, double factor) {
  st.add_time_metric("algbw_gbps", "GB/s", true,
                     "bytes / time, time = slowest rank's CUDA-event time per operation over a "
                     "batch (nccl-tests algbw)",
                     [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; });
  st.add_time_metric("busbw_gbps", "GB/s", true,
                     "algbw x the collective's bus factor (nccl-tests busbw)",
                     [&](double t) { return t > 0 ? bytes / t / 1e9 * factor : 0.0; });
  st.add_time_metric("latency_us", "us", false,
                     "CUDA-event time per operation over a batch, slowest rank, microseconds",
                     [](double t) { return t * 1e6; });
}

// One reduction per sample makes every rank take the same decisions: the slowest rank's time per
// operation and wall time, and the configuration's elapsed time, so --timeout ends it on every
// rank at the same sample.
batch_timing agree_over_ranks(communicator& comm, const batch_timing& mine) {
  double v[3] = {mine.per_iteration_s, mine.wall_s, comm.config_elapsed()};
  {
    op_scope scope(comm);
    comm.allreduce_max(v, 3);
  }
  if (comm.config_timeout() > 0 && v[2] > comm.config_timeout()) {
    throw std::runtime_error("timed out after " + std::to_string(static_cast<int>(v[2])) +
                             " s on the slowest rank (--timeout " +
                             std::to_string(comm.config_timeout()) + " s)");
  }
  return {v[0], v[1]};
}

void run_nccl(state& st, coll_op op) {
  const collective& spec = describe(op);
  communicator& comm = st.comm();
  const int n = comm.size(), me = comm.rank();
  const bool is_double = spec.reduces && st.get_string("dtype") == "float64";
  const std::size_t es = is_double ? 8 : 4;
  const bool in_place = !spec.rooted && st.get_string("placement") == "in_place";
  const auto l = make_layout(op, st.get_int64("size"), es, n);
  if (!l) st.skip("size is less than one element per rank");

  nccl_context& ctx = context(st);
  kcu::device_buffer send, recv, bad;
  std::string alloc_error;
  try {
    IB_CUDA(cudaSetDevice(ctx.device));
    recv = kcu::device_buffer(ctx.device, std::max(l->send_count, l->recv_count) * es);
    if (!in_place) send = kcu::device_buffer(ctx.device, l->send_count * es);
    bad = kcu::device_buffer(ctx.device, sizeof(unsigned long long));
  } catch (const std::exception& e) {
    alloc_error = e.what();
  }
  agree_or_fail(st, alloc_error.empty(), alloc_error);

  nccl_operation o;
  o.whole = recv.get();
  o.send = in_place ? recv.data() + in_place_send_offset(op, me, *l) * es : send.data();
  o.recv = recv.data() + result_offset(op, me, *l, in_place) * es;
  o.block = l->block;
  o.elem = es;
  o.type = is_double ? ncclDouble : ncclFloat;
  o.ranks = n;
  o.comm = ctx.comm;
  o.stream = ctx.stream->get();
  const nccl_call call = nccl_calls().at(op);

  auto set_inputs = [&] {
    if (spec.rooted) {
      IB_CUDA(cudaMemsetAsync(o.whole, 0, l->recv_count * es, o.stream));
      if (me == 0) {
        IB_CUDA(kcu::launch_fill_pattern(o.whole, is_double, l->recv_count, 0, me, o.stream));
      }
    } else {
      IB_CUDA(kcu::launch_fill_pattern(const_cast<void*>(o.send), is_double, input_count(op, *l), 0,
                                       me, o.stream));
    }
    ctx.stream->sync();
  };

  set_inputs();
  // NCCL's kernels wait for the other ranks', so the stream is not held by a blocking kernel:
  // the events bracket the batch as it is issued (nccl-tests' method).
  gpu_exec_options opts;
  opts.block = false;
  opts.read_clocks = false;
  opts.agree = [&](const batch_timing& t) { return agree_over_ranks(comm, t); };
  opts.timer_name = "cuda_event_batch_max_over_ranks";
  ctx.poll(opts, comm.op_timeout());
  {
    // Waiting for a batch waits for the other ranks: one operation for the liveness monitor,
    // bounded by the configuration's own time limit rather than one operation's.
    op_scope scope(comm, std::max(comm.config_timeout(), 0.0) + comm.op_timeout());
    (void)st.exec_gpu(
        {o.stream, ctx.device}, [&] { call(o); }, opts);
  }
  add_metrics(st, l->bytes, bus_factor(op, n));

  // Verification on the device: fresh inputs, one operation, count wrong elements.
  set_inputs();
  {
    op_scope scope(comm);
    call(o);
    sync_polled(ctx, comm.op_timeout());
  }
  auto* counter = bad.as<unsigned long long>();
  IB_CUDA(cudaMemsetAsync(counter, 0, sizeof(*counter), o.stream));
  IB_CUDA(kcu::launch_count_mismatches(o.recv, is_double, l->recv_count, spec.result, me, n,
                                       l->block, kernels::pattern::rank_sum(n), counter, o.stream));
  unsigned long long wrong = 0;
  IB_CUDA(cudaMemcpyAsync(&wrong, counter, sizeof(wrong), cudaMemcpyDeviceToHost, o.stream));
  ctx.stream->sync();
  st.check(wrong == 0, "verification failed on rank " + std::to_string(me) + " (GPU " +
                           std::to_string(ctx.device) + "): " + std::to_string(wrong) + " of " +
                           std::to_string(l->recv_count) + " elements wrong");
}

std::string nccl_description(const collective& c) {
  return std::string(c.nccl_call) + " on device buffers, one GPU per rank: " + bus_text(c) +
         ", latency; verified on the device";
}

// Every row of the table, registered with its NCCL call (registration.h).
[[maybe_unused]] const bool registered = [] {
  register_collectives({.name = "NCCL",
                        .prefix = "nccl_",
                        .dtype_text = "element type",
                        .placement_text = "separate buffers or NCCL's in-place form",
                        .has_call = [](coll_op op) { return nccl_calls().count(op) > 0; },
                        .describe = nccl_description,
                        .run = run_nccl,
                        .finish =
                            [](benchmark& b, const collective&) {
                              b.require(req::cuda).require(req::nccl).memory_estimate(
                                  [](const config&) -> std::int64_t { return 64 << 20; });
                            }});
  return true;
}();

}  // namespace
