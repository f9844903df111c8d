// NCCL collectives on device buffers, one GPU per rank (chosen by the rank's place on its host),
// the communicator bootstrapped through MPI (rank 0's ncclUniqueId broadcast). Every collective of
// model.h's table is registered here as collectives/nccl_<name>; this file adds only the NCCL call
// of each (grouped ncclSend/ncclRecv where NCCL has no primitive) and ncclCommSplit for the split
// groups. Timed by the harness (state::exec_gpu): a batch of operations between one event pair,
// as nccl-tests' BenchTime does, with the slowest rank's time per operation (and wall time)
// agreed in one MPI reduction per sample, not per operation; the data verified on the device.
// Waits poll NCCL's asynchronous error as nccl-tests does: a failing rank aborts its
// communicator and reports NCCL's own error instead of hanging or a CUDA error. The communicator
// is a run resource, destroyed when the run ends (before MPI and the CUDA runtime go).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "cpu/reduce_pattern.h"
#include "cuda/reduce_check.h"
#include "cuda/support.h"
#include "elements.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "model.h"
#include "mpi_util.h"
#include "registration.h"
#include "shared/nccl_init.h"
#include "shared/shared_gpu.h"

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

// `comm`: the non-blocking communicator the call ran on, whose ncclInProgress is waited for
// (settle) before the result counts.
void check_nccl(ncclResult_t rc, const char* what, ncclComm_t comm = nullptr) {
  rc = settle(rc, comm);
  if (rc != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + nccl_error_text(rc, comm));
}

// What one operation works on: this rank's buffers and the communicator.
struct nccl_operation {
  const void* send = nullptr;
  void* recv = nullptr;   // where the result lands (a reduce-scatter in place: the own block)
  void* whole = nullptr;  // the whole receive buffer (a broadcast's buffer, all-to-all's base)
  std::size_t block = 0;  // elements per rank (the whole count for whole-buffer collectives)
  std::size_t elem = 4;
  ncclDataType_t type = ncclFloat;
  ncclRedOp_t op = ncclSum;
  int me = 0, ranks = 1;  // in the group's communicator
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};
using nccl_call = void (*)(const nccl_operation&);

// Blocks of `o` at block index k, for the grouped send/receive collectives.
const std::byte* send_block(const nccl_operation& o, int k) {
  return static_cast<const std::byte*>(o.send) + static_cast<std::size_t>(k) * o.block * o.elem;
}
std::byte* whole_block(const nccl_operation& o, int k) {
  return static_cast<std::byte*>(o.whole) + static_cast<std::size_t>(k) * o.block * o.elem;
}

// NCCL has no all-to-all, gather, scatter or ring exchange: grouped sends and receives, as
// nccl-tests composes them (alltoall.cu, gather.cu, scatter.cu, sendrecv.cu). Root: rank 0.
void grouped(const nccl_operation& o, coll_op op) {
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  const int n = o.ranks;
  auto send = [&](const void* p, int peer) {
    check_nccl(ncclSend(p, o.block, o.type, peer, o.comm, o.stream), "ncclSend", o.comm);
  };
  auto recv = [&](void* p, int peer) {
    check_nccl(ncclRecv(p, o.block, o.type, peer, o.comm, o.stream), "ncclRecv", o.comm);
  };
  for (int peer = 0; peer < n; ++peer) {
    if (op == coll_op::alltoall) {
      send(send_block(o, peer), peer);
      recv(whole_block(o, peer), peer);
    }
    if (op == coll_op::gather && o.me == 0) recv(whole_block(o, peer), peer);
    if (op == coll_op::scatter && o.me == 0) send(send_block(o, peer), peer);
  }
  if (op == coll_op::gather) send(o.send, 0);
  if (op == coll_op::scatter) recv(o.recv, 0);
  if (op == coll_op::sendrecv) {
    send(o.send, (o.me + 1) % n);
    recv(o.recv, (o.me + n - 1) % n);
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd", o.comm);
}

// The one thing this backend adds per collective: its NCCL call.
const std::map<coll_op, nccl_call>& nccl_calls() {
  using O = const nccl_operation&;
  static const std::map<coll_op, nccl_call> calls = {
      {coll_op::allreduce,
       [](O o) {
         check_nccl(ncclAllReduce(o.send, o.recv, o.block, o.type, o.op, o.comm, o.stream),
                    "ncclAllReduce", o.comm);
       }},
      {coll_op::allgather,
       [](O o) {
         check_nccl(ncclAllGather(o.send, o.recv, o.block, o.type, o.comm, o.stream),
                    "ncclAllGather", o.comm);
       }},
      {coll_op::reduce_scatter,
       [](O o) {
         check_nccl(ncclReduceScatter(o.send, o.recv, o.block, o.type, o.op, o.comm, o.stream),
                    "ncclReduceScatter", o.comm);
       }},
      {coll_op::broadcast,
       [](O o) {
         check_nccl(ncclBroadcast(o.whole, o.whole, o.block, o.type, 0, o.comm, o.stream),
                    "ncclBroadcast", o.comm);
       }},
      {coll_op::reduce,
       [](O o) {
         check_nccl(ncclReduce(o.send, o.recv, o.block, o.type, o.op, 0, o.comm, o.stream),
                    "ncclReduce", o.comm);
       }},
      {coll_op::alltoall, [](O o) { grouped(o, coll_op::alltoall); }},
      {coll_op::gather, [](O o) { grouped(o, coll_op::gather); }},
      {coll_op::scatter, [](O o) { grouped(o, coll_op::scatter); }},
      {coll_op::sendrecv, [](O o) { grouped(o, coll_op::sendrecv); }},
  };
  return calls;
}

ncclDataType_t nccl_type(elem_type t) {
  switch (t) {
    case elem_type::float64:
      return ncclDouble;
    case elem_type::float16:
      return ncclFloat16;
    case elem_type::bfloat16:
      return ncclBfloat16;
    case elem_type::int32:
      return ncclInt32;
    case elem_type::float8_e4m3:
      return ncclFloat8e4m3;
    case elem_type::float8_e5m2:
      return ncclFloat8e5m2;
    default:
      return ncclFloat32;
  }
}
ncclRedOp_t nccl_op(red_op op) {
  switch (op) {
    case red_op::max:
      return ncclMax;
    case red_op::min:
      return ncclMin;
    case red_op::avg:
      return ncclAvg;
    default:
      return ncclSum;
  }
}

// One NCCL communicator for the whole run: creating one costs a second or more and every
// configuration would pay it. A run resource (state::resource), destroyed when the run ends: a
// function-local static was destroyed after main returned, after MPI_Finalize and the CUDA
// runtime's teardown that ncclCommDestroy needs.
struct nccl_context {
  // A communicator split from the run's (ncclCommSplit) for a group of ranks; comm is null on a
  // rank in no group of the split.
  struct group_comm {
    ncclComm_t comm = nullptr;
    int rank = 0, size = 0;
  };
  ncclComm_t comm = nullptr;
  std::map<std::string, group_comm> groups;  // by the group axis' value, made on first use
  std::unique_ptr<kcu::stream> stream;
  int device = -1;
  std::string aborted;  // why the communicator was aborted (later configurations fail with it)
  nccl_context() = default;
  nccl_context(const nccl_context&) = delete;
  nccl_context& operator=(const nccl_context&) = delete;
  ~nccl_context() {
    // Non-blocking communicators (nccl_init.h): a destroy may still be in progress on return.
    for (auto& [name, g] : groups) {
      release_comm(g.comm);
    }
    release_comm(comm);
  }

  // NCCL's asynchronous error, "" while there is none (ncclInProgress: still connecting).
  [[nodiscard]] std::string async_error() const {
    if (comm == nullptr) return aborted;
    std::string error = async_error_of(comm);
    for (const auto& [name, g] : groups) {
      if (error.empty() && g.comm) error = async_error_of(g.comm);
    }
    return error;
  }
  static std::string async_error_of(ncclComm_t c) {
    ncclResult_t rc = ncclSuccess;
    if (const ncclResult_t q = ncclCommGetAsyncError(c, &rc); q != ncclSuccess) rc = q;
    if (rc == ncclSuccess || rc == ncclInProgress) return {};
    return "NCCL asynchronous error: " + nccl_error_text(rc, c);
  }
  // Ends the communicator for good (its kernels stop waiting for peers): nccl-tests' abort.
  void abort(const std::string& why) {
    if (comm == nullptr) return;
    for (auto& [name, g] : groups) {
      if (g.comm) (void)ncclCommAbort(g.comm);
    }
    groups.clear();
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

// Each rank's "host H, GPU G", on rank 0 (shared_gpu_check, when the communicator was made).
std::vector<std::string>& rank_places() {
  static std::vector<std::string> places;
  return places;
}

// `text` with each rank it names ("rank 11", "ranks 3, 7") followed by its host and GPU, which
// NCCL does not know of a peer ("rank 11 never joined" -> "rank 11 (host h2, GPU 3) never joined";
// issue 38, defect 10). Unchanged where it already says, and on ranks other than 0.
std::string with_places(const std::string& text) {
  const std::vector<std::string>& places = rank_places();
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool many = text.compare(i, 6, "ranks ") == 0;
    if (!many && text.compare(i, 5, "rank ") != 0) {
      out += text[i++];
      continue;
    }
    const std::size_t word = many ? 6 : 5;
    out += text.substr(i, word);
    i += word;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      std::size_t end = i;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      const std::string number = text.substr(i, end - i);
      out += number;
      i = end;
      const std::size_t r = number.size() < 7 ? std::stoul(number) : places.size();
      if (r < places.size() && text.compare(i, 6, " (host") != 0) out += " (" + places[r] + ")";
      if (!many || text.compare(i, 2, ", ") != 0) break;
      out += ", ";
      i += 2;
    }
  }
  return out;
}

// Made on the first configuration that asks; every step is agreed by all ranks, so a skip or
// failure (which leaves nothing kept: the next configuration tries again) is the same on each.
std::unique_ptr<nccl_context> make_context(state& st) {
  auto ctx = std::make_unique<nccl_context>();
  communicator& comm = st.comm();
  ctx->device = device_for_local_rank(comm.local_rank(), st.caps().cuda_device_count);
  rank_places().clear();
  if (const std::string skip = shared_gpu_check(comm, ctx->device, &rank_places()); !skip.empty())
    st.skip(skip);
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
  try {
    // Non-blocking and polled (nccl_init.h): a rank that never joins ends the wait, bounded.
    op_scope scope(comm);
    ctx->comm =
        init_comm_polled(comm.size(), id, comm.rank(), nccl_init_bound_s(comm.op_timeout()));
  } catch (const std::exception& e) {
    error = e.what();
    ctx->comm = nullptr;
  }
  agree_or_fail(st, error.empty(), with_places(error));
  return ctx;
}

nccl_context& context(state& st) {
  nccl_context& ctx =
      st.resource<nccl_context>("collectives/nccl", [&] { return make_context(st); });
  agree_or_fail(st, ctx.aborted.empty(), ctx.aborted);
  return ctx;
}

// This rank's communicator for the configuration's `group`: the run's own (world), or one split
// from it by group_colors (ncclCommSplit, made once per group and run; a null comm: this rank is
// in no group and waits). A split that cannot run is skipped alike on every rank.
nccl_context::group_comm group_of(state& st, nccl_context& ctx, group_shape& shape) {
  const std::string name = st.get_string("group");
  const rank_group g = parse_rank_group(name).value_or(rank_group::world);
  communicator& comm = st.comm();
  const std::vector<int> colors = group_colors(g, comm.hostnames());
  shape = shape_of(g, colors);
  if (!shape.problem.empty()) st.skip(shape.problem);
  if (g == rank_group::world) return {ctx.comm, comm.rank(), comm.size()};
  if (const auto it = ctx.groups.find(name); it != ctx.groups.end()) return it->second;
  const int color = colors.at(static_cast<std::size_t>(comm.rank()));
  nccl_context::group_comm made;
  std::string error;
  {
    op_scope scope(comm);  // ncclCommSplit waits for every rank of the run's communicator
    ncclResult_t rc = ncclCommSplit(ctx.comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, comm.rank(),
                                    &made.comm, nullptr);
    // The child inherits the parent's non-blocking set-up: wait for both, bounded.
    if (rc == ncclInProgress) {
      const double bound = nccl_init_bound_s(comm.op_timeout());
      rc = settle(rc, made.comm != nullptr ? made.comm : ctx.comm, bound);
      if (rc == ncclSuccess && made.comm != nullptr) rc = settle(ncclInProgress, ctx.comm, bound);
    }
    if (rc != ncclSuccess) error = "ncclCommSplit: " + nccl_error_text(rc, ctx.comm);
    if (error.empty() && made.comm != nullptr) {
      if (ncclCommUserRank(made.comm, &made.rank) != ncclSuccess ||
          ncclCommCount(made.comm, &made.size) != ncclSuccess)
        error = "ncclCommUserRank/ncclCommCount failed";
    }
  }
  try {
    agree_or_fail(st, error.empty(), error);
  } catch (...) {  // this rank's split may have worked where another's failed: not kept
    if (made.comm != nullptr) (void)ncclCommAbort(made.comm);
    throw;
  }
  ctx.groups[name] = made;
  return made;
}

// Waits for what `ctx`'s stream has queued, polling NCCL's error (gpu_wait_polled).
void sync_polled(nccl_context& ctx, double timeout_s) {
  gpu_exec_options o;
  ctx.poll(o, timeout_s);
  gpu_wait_polled({ctx.stream->get(), ctx.device}, o, "waiting for the verification collective");
}

void add_metrics(state& st, double bytes, double factor, const group_shape& shape) {
  st.add_time_metric("algbw_gbps", "GB/s", true,
                     "bytes / time, time = slowest rank's CUDA-event time per operation over a "
                     "batch (nccl-tests algbw)",
                     [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; });
  st.add_time_metric(
      "busbw_gbps", "GB/s", true,
      "algbw x the collective's bus factor for " + std::to_string(shape.ranks) + " ranks" +
          (shape.groups > 1 ? " in each of " + std::to_string(shape.groups) + " groups"
                            : std::string()) +
          " (nccl-tests busbw)",
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

// The axes of one configuration, read once.
struct nccl_config {
  elem_type type = elem_type::float32;
  red_op rop = red_op::sum;
  bool in_place = false;
};
nccl_config config_of(state& st, const collective& spec) {
  nccl_config c;
  if (spec.reduces) {
    c.type = parse_elem_type(st.get_string("dtype")).value_or(elem_type::float32);
    c.rop = parse_red_op(st.get_string("op")).value_or(red_op::sum);
  }
  c.in_place = !spec.placements.empty() && st.get_string("placement") == "in_place";
  return c;
}

// Skips an 8-bit float configuration on every rank when any rank's NCCL is too old for the type
// (fp8_nccl_version_reason: the library loaded, not the headers built against) or its GPU cannot
// reduce it (fp8_capability_reason), with the first such rank's reason.
void require_fp8_capability(state& st, const nccl_context& ctx, const nccl_config& c) {
  if (!kernels::pattern::owned_elements(c.type)) return;  // the same on every rank
  std::string mine;
  try {
    int version = 0;
    check_nccl(ncclGetVersion(&version), "ncclGetVersion");
    mine = fp8_nccl_version_reason(c.type, st.get_string("dtype"), version);
    if (mine.empty()) {
      const auto info = kcu::query_device(ctx.device);
      mine = fp8_capability_reason(c.type, st.get_string("dtype"), info.cc_major, info.cc_minor,
                                   ctx.device);
    }
    if (!mine.empty()) mine = "host " + st.comm().hostname() + ": " + mine;
  } catch (const std::exception& e) {
    mine = e.what();
  }
  communicator& comm = st.comm();
  std::string first;
  {
    op_scope scope(comm);
    for (const std::string& r : comm.gather_strings(mine)) {
      if (first.empty()) first = r;
    }
    first = comm.broadcast_string(first);
  }
  if (!first.empty()) st.skip(reason_code::no_device, first);
}

// Verification on the device: fresh inputs, one operation, count the wrong elements where this
// rank holds a result (pattern::expected within pattern::tolerance). Empty, or what is wrong.
std::string verify_on_device(nccl_context& ctx, const nccl_operation& o, const collective& spec,
                             const nccl_config& c, const layout& l, unsigned long long* counter) {
  IB_CUDA(cudaMemsetAsync(counter, 0, sizeof(*counter), o.stream));
  const auto r = kernels::pattern::make_reduction(c.rop, c.type, o.ranks);
  IB_CUDA(kcu::launch_count_mismatches(
      o.recv, c.type, l.recv_count, spec.result, o.me, o.ranks, l.block, r,
      kernels::pattern::tolerance(c.type, c.rop, o.ranks), counter, o.stream));
  unsigned long long wrong = 0;
  IB_CUDA(cudaMemcpyAsync(&wrong, counter, sizeof(wrong), cudaMemcpyDeviceToHost, o.stream));
  ctx.stream->sync();
  if (wrong == 0) return {};
  return std::to_string(wrong) + " of " + std::to_string(l.recv_count) + " elements wrong (GPU " +
         std::to_string(ctx.device) + ")";
}

// A configuration's device buffers, on every rank or none.
struct nccl_buffers {
  kcu::device_buffer send, recv, bad;
};
nccl_buffers allocate(state& st, nccl_context& ctx, const nccl_config& c, const layout& l) {
  const std::size_t es = kernels::pattern::elem_size(c.type);
  nccl_buffers b;
  std::string alloc_error;
  try {
    IB_CUDA(cudaSetDevice(ctx.device));
    b.recv = kcu::device_buffer(ctx.device, std::max(l.send_count, l.recv_count) * es);
    if (!c.in_place) b.send = kcu::device_buffer(ctx.device, l.send_count * es);
    b.bad = kcu::device_buffer(ctx.device, sizeof(unsigned long long));
  } catch (const std::exception& e) {
    alloc_error = e.what();
  }
  agree_or_fail(st, alloc_error.empty(), alloc_error);
  return b;
}

// The operation of rank g.rank: NCCL's in-place forms put the input (all-gather, gather) or the
// result (reduce-scatter, scatter) at the rank's block of the receive buffer.
nccl_operation operation_of(coll_op op, const nccl_config& c, nccl_context& ctx,
                            const nccl_context::group_comm& g, int n, const layout& l,
                            nccl_buffers& buf) {
  const std::size_t es = kernels::pattern::elem_size(c.type);
  nccl_operation o;
  o.whole = buf.recv.get();
  o.send =
      c.in_place ? buf.recv.data() + in_place_send_offset(op, g.rank, l) * es : buf.send.data();
  o.recv = buf.recv.data() + result_offset(op, g.rank, l, c.in_place) * es;
  o.block = l.block;
  o.elem = es;
  o.type = nccl_type(c.type);
  o.op = nccl_op(c.rop);
  o.me = g.rank;
  o.ranks = n;
  o.comm = g.comm;
  o.stream = ctx.stream->get();
  return o;
}

// Fresh inputs on this rank's buffers, before the timing and again before the verification: the
// pattern in rank 0's whole buffer (the collectives whose root holds the data), else in the input.
void set_inputs(nccl_context& ctx, const nccl_operation& o, coll_op op, const collective& spec,
                const nccl_config& c, const layout& l, bool member) {
  if (!member) return;
  const std::size_t es = kernels::pattern::elem_size(c.type);
  const int me = o.me, n = o.ranks;
  if (spec.root_buffer) {
    IB_CUDA(cudaMemsetAsync(o.whole, 0, l.recv_count * es, o.stream));
    if (me == 0)
      IB_CUDA(kcu::launch_fill_pattern(o.whole, c.type, l.recv_count, 0, me, n, o.stream));
  } else {
    IB_CUDA(kcu::launch_fill_pattern(const_cast<void*>(o.send), c.type, input_count(op, l), 0, me,
                                     n, o.stream));
  }
  ctx.stream->sync();
}

// The timed batches of `do_op`, every rank's time agreed per sample.
void time_batches(state& st, nccl_context& ctx, const nccl_operation& o,
                  const std::function<void()>& do_op) {
  communicator& comm = st.comm();
  // NCCL's kernels wait for the other ranks', so the stream is not held by a blocking kernel:
  // the events bracket the batch as it is issued (nccl-tests' method).
  gpu_exec_options opts;
  opts.block = false;
  opts.read_clocks = false;
  opts.agree = [&](const batch_timing& t) { return agree_over_ranks(comm, t); };
  opts.timer_name = "cuda_event_batch_max_over_ranks";
  ctx.poll(opts, comm.op_timeout());
  // Waiting for a batch waits for the other ranks: one operation for the liveness monitor,
  // bounded by the configuration's own time limit rather than one operation's.
  op_scope scope(comm, std::max(comm.config_timeout(), 0.0) + comm.op_timeout());
  (void)st.exec_gpu({o.stream, ctx.device}, do_op, opts);
}

void run_nccl(state& st, coll_op op) {
  const collective& spec = describe(op);
  communicator& comm = st.comm();
  const nccl_config c = config_of(st, spec);
  const std::size_t es = kernels::pattern::elem_size(c.type);
  nccl_context& ctx = context(st);
  require_fp8_capability(st, ctx, c);
  group_shape shape;
  const nccl_context::group_comm g = group_of(st, ctx, shape);
  const int n = shape.ranks, me = g.rank;
  const bool member = g.comm != nullptr;
  const auto l = make_layout(op, st.get_int64("size"), es, n);
  if (!l) st.skip("size is less than one element per rank");

  nccl_buffers buf = allocate(st, ctx, c, *l);
  const nccl_operation o = operation_of(op, c, ctx, g, n, *l, buf);
  const nccl_call call = nccl_calls().at(op);
  const std::function<void()> do_op = [&] {
    if (member) call(o);  // a rank in no group of the split waits for the others
  };

  set_inputs(ctx, o, op, spec, c, *l, member);
  time_batches(st, ctx, o, do_op);
  add_metrics(st, l->bytes, bus_factor(op, n), shape);

  set_inputs(ctx, o, op, spec, c, *l, member);
  {
    op_scope scope(comm);
    do_op();
    sync_polled(ctx, comm.op_timeout());
  }
  std::string wrong;
  if (member && receives_result(op, me))
    wrong = verify_on_device(ctx, o, spec, c, *l, buf.bad.as<unsigned long long>());
  agree_verified(st, wrong);
}

std::string nccl_description(const collective& c) {
  return std::string(c.nccl_call) + (c.reduces ? " (sum, max, min, avg)" : "") +
         " on device buffers, one GPU per rank: " + bus_text(c) +
         ", latency; verified on the device";
}

// Every row of the table, registered with its NCCL call (registration.h).
[[maybe_unused]] const bool registered_nccl = [] {
  register_collectives({.name = "NCCL",
                        .prefix = "nccl_",
                        .dtype_text = "element type (NCCL's own reductions for each; "
                                      "float8_e4m3 and float8_e5m2 need NCCL 2.24 or newer "
                                      "and compute capability 9.0 or newer, as NCCL reduces "
                                      "them)",
                        .dtypes = {std::begin(nccl_dtypes), std::end(nccl_dtypes)},
                        .placement_text = "separate buffers or NCCL's in-place form",
                        .has_call = [](coll_op op) { return nccl_calls().count(op) > 0; },
                        .describe = nccl_description,
                        .run =
                            [](state& st, coll_op op) {
                              try {
                                run_nccl(st, op);
                              } catch (const std::runtime_error& e) {
                                throw std::runtime_error(with_places(e.what()));
                              }
                            },
                        .finish =
                            [](benchmark& b, const collective&) {
                              b.require(req::cuda).require(req::nccl).memory_estimate(
                                  [](const config&) -> std::int64_t { return 64 << 20; });
                            }});
  return true;
}();

}  // namespace
