// MPI collectives on host buffers: every collective of model.h's table (all-reduce, with our own
// ring and recursive doubling next to MPI_Allreduce, all-gather, reduce-scatter, broadcast,
// all-to-all, reduce, gather, scatter and a sendrecv ring) registered as collectives/mpi_<name>;
// this file adds the MPI call of each, the 2-byte types' reductions MPI lacks and the split
// groups (MPI_Comm_split). nccl-tests' and OSU's method: a size sweep, a batch of iterations timed
// on every rank and the slowest rank's mean kept, algbw = bytes / time, busbw = algbw x the
// collective's bus factor, and the data verified afterwards from known per-rank inputs (a wrong
// result fails the configuration).
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "algorithms.h"
#include "cpu/reduce.h"
#include "elements.h"
#include "infrabench/benchmark.h"
#include "infrabench/error.h"
#include "infrabench/options.h"
#include "infrabench/state.h"
#include "model.h"
#include "mpi_util.h"
#include "registration.h"

namespace {

using namespace infrabench;
using namespace infrabench::collectives;
namespace kc = infrabench::kernels::cpu;

// Pipelining granularity of our algorithms. `auto`: half a ring segment (two chunks in flight per
// step), between 256 KiB and 4 MiB: large enough that per-message costs (a rendezvous round trip
// over TCP) are amortised, small enough that transfer and addition overlap. Measured over TCP
// between namespaces (2 hosts): fixed 256 KiB chunks reached ~80% of MPI_Allreduce at 16 MiB,
// 1-4 MiB chunks 95-130%; 128 KiB chunks at 1 MiB ~80%, 256 KiB ~95%.
INFRABENCH_RUN_OPTION(
    g_chunk_option, "allreduce-chunk", "auto",
    "collectives/mpi_allreduce: chunk size of our ring and recursive doubling (bytes, or "
    "auto: half a ring segment, 256KiB..4MiB)");

std::size_t chunk_bytes_of(state& st, std::size_t bytes, int n) {
  const std::string text = st.option("allreduce-chunk");
  if (text == "auto") {
    const std::size_t half = bytes / static_cast<std::size_t>(n) / 2;
    return std::clamp<std::size_t>(half, 256 * 1024, 4 * 1024 * 1024);
  }
  const std::int64_t v = parse_bytes(text);
  if (v < 4) throw user_error("--allreduce-chunk must be at least 4 bytes or auto");
  return static_cast<std::size_t>(v);
}

// algbw, busbw and latency from the samples (each the slowest rank's mean over a batch).
void add_bandwidth_metrics(state& st, double bytes, double factor, int n, int groups) {
  st.add_time_metric("algbw_gbps", "GB/s", true,
                     "bytes / time, time = slowest rank's mean per operation over a batch "
                     "(nccl-tests algbw)",
                     [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; });
  char method[200];
  std::snprintf(method, sizeof(method),
                "algbw x %.4g, the collective's bus factor for %d ranks%s (nccl-tests busbw)",
                factor, n,
                groups > 1 ? (" in each of " + std::to_string(groups) + " groups").c_str() : "");
  st.add_time_metric("busbw_gbps", "GB/s", true, method,
                     [&](double t) { return t > 0 ? bytes / t / 1e9 * factor : 0.0; });
  st.add_time_metric("latency_us", "us", false,
                     "microseconds per operation: each rank times a batch of back-to-back "
                     "operations (>= 1 ms) and takes the mean, a sample is the maximum of these "
                     "means over ranks (OSU's method per batch), the value the median sample",
                     [](double t) { return t * 1e6; });
}

// ---- element types and reductions ------------------------------------------------------------

// MPI has no float16 or bfloat16: both travel as MPI_UINT16_T and are reduced by operations of
// our own (MPI_Op_create, commutative), which add, compare in float and round once (elements.h's
// reduce_16bit, what a GPU's half-precision reduction does). avg is MPI_SUM followed by a
// division by the rank count on the ranks that hold a result (divide_by_ranks), as ncclAvg.
template <elem_type T, red_op O>
void reduce_16bit_op(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  reduce_16bit<T>(O, static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout),
                  static_cast<std::size_t>(*len));
}

MPI_Datatype mpi_type(elem_type t) {
  switch (t) {
    case elem_type::float64:
      return MPI_DOUBLE;
    case elem_type::int32:
      return MPI_INT32_T;
    case elem_type::float16:
    case elem_type::bfloat16:
      return MPI_UINT16_T;
    default:
      return MPI_FLOAT;
  }
}

// Made on first use, after MPI_Init, and kept for the process (MPI frees them at MPI_Finalize).
MPI_Op make_16bit_op(elem_type t, red_op op) {
  using fn = MPI_User_function*;
  static const fn table[2][3] = {{reduce_16bit_op<elem_type::float16, red_op::sum>,
                                  reduce_16bit_op<elem_type::float16, red_op::max>,
                                  reduce_16bit_op<elem_type::float16, red_op::min>},
                                 {reduce_16bit_op<elem_type::bfloat16, red_op::sum>,
                                  reduce_16bit_op<elem_type::bfloat16, red_op::max>,
                                  reduce_16bit_op<elem_type::bfloat16, red_op::min>}};
  static MPI_Op ops[2][3];
  static bool made[2][3] = {};
  const int ti = t == elem_type::float16 ? 0 : 1;
  const int oi = op == red_op::max ? 1 : op == red_op::min ? 2 : 0;
  if (!made[ti][oi]) {
    check_mpi(MPI_Op_create(table[ti][oi], 1, &ops[ti][oi]), "MPI_Op_create");
    made[ti][oi] = true;
  }
  return ops[ti][oi];
}

MPI_Op mpi_op(elem_type t, red_op op) {
  if (t == elem_type::float16 || t == elem_type::bfloat16) return make_16bit_op(t, op);
  return op == red_op::max ? MPI_MAX : op == red_op::min ? MPI_MIN : MPI_SUM;
}

// ---- split groups --------------------------------------------------------------------------

// The communicator of this rank's group (MPI_Comm_split of the world by group_colors), made once
// per run and group (a run resource, freed before MPI_Finalize). MPI_COMM_NULL: this rank is in
// no group (inter_node, not its host's first rank) and waits while the others run.
struct mpi_group {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0;
  group_shape shape;
  mpi_group() = default;
  mpi_group(const mpi_group&) = delete;
  mpi_group& operator=(const mpi_group&) = delete;
  ~mpi_group() {
    if (comm != MPI_COMM_NULL && comm != MPI_COMM_WORLD) (void)MPI_Comm_free(&comm);
  }
};

// Skips (on every rank alike: the colors come from every rank's hostname) a split that cannot run.
mpi_group& group_of(state& st) {
  const std::string name = st.get_string("group");
  const rank_group g = parse_rank_group(name).value_or(rank_group::world);
  communicator& comm = st.comm();
  const std::vector<int> colors = group_colors(g, comm.hostnames());
  const group_shape shape = shape_of(g, colors);
  if (!shape.problem.empty()) st.skip(shape.problem);
  return st.resource<mpi_group>("collectives/mpi_group_" + name, [&] {
    auto made = std::make_unique<mpi_group>();
    made->shape = shape;
    if (g == rank_group::world) {
      made->comm = MPI_COMM_WORLD;
    } else {
      const int color = colors.at(static_cast<std::size_t>(comm.rank()));
      op_scope scope(comm);
      check_mpi(MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, comm.rank(),
                               &made->comm),
                "MPI_Comm_split");
    }
    if (made->comm != MPI_COMM_NULL) {
      check_mpi(MPI_Comm_rank(made->comm, &made->rank), "MPI_Comm_rank");
      check_mpi(MPI_Comm_size(made->comm, &made->size), "MPI_Comm_size");
    }
    return made;
  });
}

// ---- the calls ---------------------------------------------------------------------------------

// What one operation works on, for the backend's call.
struct mpi_operation {
  const void* send = nullptr;  // MPI_IN_PLACE in place (a rooted collective's root only)
  void* recv = nullptr;        // MPI_IN_PLACE for an in-place scatter's root
  int count = 0;               // elements per rank (the whole count for whole-buffer collectives)
  MPI_Datatype type = MPI_FLOAT;
  MPI_Op op = MPI_SUM;
  MPI_Comm comm = MPI_COMM_WORLD;
  int me = 0, ranks = 1;
};
using mpi_call = int (*)(const mpi_operation&);

// The one thing this backend adds per collective of model.h's table: its MPI call.
const std::map<coll_op, mpi_call>& mpi_calls() {
  using O = const mpi_operation&;
  static const std::map<coll_op, mpi_call> calls = {
      {coll_op::allreduce,
       [](O o) { return MPI_Allreduce(o.send, o.recv, o.count, o.type, o.op, o.comm); }},
      {coll_op::allgather,
       [](O o) { return MPI_Allgather(o.send, o.count, o.type, o.recv, o.count, o.type, o.comm); }},
      {coll_op::reduce_scatter,
       [](O o) { return MPI_Reduce_scatter_block(o.send, o.recv, o.count, o.type, o.op, o.comm); }},
      {coll_op::broadcast, [](O o) { return MPI_Bcast(o.recv, o.count, o.type, 0, o.comm); }},
      {coll_op::alltoall,
       [](O o) { return MPI_Alltoall(o.send, o.count, o.type, o.recv, o.count, o.type, o.comm); }},
      {coll_op::reduce,
       [](O o) { return MPI_Reduce(o.send, o.recv, o.count, o.type, o.op, 0, o.comm); }},
      {coll_op::gather,
       [](O o) { return MPI_Gather(o.send, o.count, o.type, o.recv, o.count, o.type, 0, o.comm); }},
      {coll_op::scatter,
       [](O o) {
         return MPI_Scatter(o.send, o.count, o.type, o.recv, o.count, o.type, 0, o.comm);
       }},
      {coll_op::sendrecv,
       [](O o) {
         return MPI_Sendrecv(o.send, o.count, o.type, (o.me + 1) % o.ranks, 0, o.recv, o.count,
                             o.type, (o.me + o.ranks - 1) % o.ranks, 0, o.comm, MPI_STATUS_IGNORE);
       }},
  };
  return calls;
}

// The send and receive pointers of one operation. In place, MPI takes MPI_IN_PLACE on every rank
// of an all-to-all-like collective but only on a rooted one's root: the other ranks pass where
// their input lies in the receive buffer (model.h's in_place_send_offset).
void place_buffers(mpi_operation& o, coll_op op, bool in_place, const layout& l, std::byte* send,
                   std::byte* recv, std::size_t es) {
  o.send = send;
  o.recv = recv;
  if (!in_place) return;
  if (op == coll_op::scatter) {  // the root's block stays where it is in its send buffer
    o.send = recv;
    if (o.me == 0) o.recv = MPI_IN_PLACE;
  } else if (op == coll_op::reduce || op == coll_op::gather) {
    o.send = o.me == 0 ? MPI_IN_PLACE : recv + in_place_send_offset(op, o.me, l) * es;
  } else {
    o.send = MPI_IN_PLACE;
  }
}

// ---- one configuration
// ---------------------------------------------------------------------------

// The axes of one configuration, read once.
struct mpi_config {
  elem_type type = elem_type::float32;
  red_op rop = red_op::sum;
  bool in_place = false;
  std::string algorithm = "mpi";  // our own all-reduce algorithms: ring, recursive_doubling
};
mpi_config config_of(state& st, const collective& spec) {
  mpi_config c;
  if (spec.reduces) {
    c.type = parse_elem_type(st.get_string("dtype")).value_or(elem_type::float32);
    c.rop = parse_red_op(st.get_string("op")).value_or(red_op::sum);
  }
  c.in_place = !spec.placements.empty() && st.get_string("placement") == "in_place";
  if (spec.op == coll_op::allreduce) c.algorithm = st.get_string("algorithm");
  const bool float_type = c.type == elem_type::float32 || c.type == elem_type::float64;
  if (c.algorithm != "mpi" && (!float_type || c.rop != red_op::sum)) {
    st.skip("algorithm " + c.algorithm + ": our own all-reduce sums float32 and float64 only");
  }
  return c;
}

// Buffers, allocated and first-touched outside the timed region; every rank or none.
struct mpi_buffers {
  host_buffer send, recv, scratch;
};
mpi_buffers allocate(state& st, const mpi_config& c, const layout& l, std::size_t es, int n) {
  mpi_buffers b;
  std::string alloc_error;
  try {
    if (!c.in_place) b.send = host_buffer(l.send_count * es);
    b.recv = host_buffer(std::max(l.recv_count, l.send_count) * es);
    if (c.algorithm == "ring") b.scratch = host_buffer(ring_scratch_bytes(l.recv_count, es, n));
    if (c.algorithm == "recursive_doubling")
      b.scratch = host_buffer(rd_scratch_bytes(l.recv_count, es));
  } catch (const std::bad_alloc&) {
    alloc_error = "cannot allocate the buffers (" + std::to_string(3 * l.bytes) + " B)";
  }
  agree_or_fail(st, alloc_error.empty(), alloc_error);
  return b;
}

// Inputs: a broadcast's root fills the one buffer and the others clear it; in place, the input
// lives where MPI reads it from in the receive buffer.
void set_inputs_of(coll_op op, const mpi_config& c, const layout& l, int me, mpi_buffers& buf) {
  const std::size_t es = kernels::pattern::elem_size(c.type);
  if (describe(op).root_buffer) {
    if (me == 0)
      fill_input(c.type, buf.recv.data(), l.recv_count, 0, me);
    else
      std::memset(buf.recv.data(), 0, l.recv_count * es);
    return;
  }
  std::byte* src =
      c.in_place ? buf.recv.data() + in_place_send_offset(op, me, l) * es : buf.send.data();
  fill_input(c.type, src, input_count(op, l), 0, me);
}

mpi_operation operation_of(coll_op op, const mpi_config& c, const mpi_group& g, const layout& l,
                           mpi_buffers& buf) {
  mpi_operation o;
  o.count = static_cast<int>(l.block);
  o.type = mpi_type(c.type);
  o.op = mpi_op(c.type, c.rop);
  o.comm = g.comm;
  o.me = g.rank;
  o.ranks = g.shape.ranks;
  place_buffers(o, op, c.in_place, l, buf.send.data(), buf.recv.data(),
                kernels::pattern::elem_size(c.type));
  return o;
}

void run_collective(state& st, coll_op op) {
  const collective& spec = describe(op);
  const mpi_config c = config_of(st, spec);
  mpi_group& g = group_of(st);
  const bool member = g.comm != MPI_COMM_NULL;
  const int n = g.shape.ranks, me = g.rank;
  const std::int64_t size = st.get_int64("size");
  const std::size_t es = kernels::pattern::elem_size(c.type);
  const auto l = make_layout(op, size, es, n);
  if (!l)
    st.skip("size " + std::to_string(size) + " B is less than one element per rank (" +
            std::to_string(n) + " ranks)");
  const std::size_t chunk_bytes = chunk_bytes_of(st, l->recv_count * es, n);
  mpi_buffers buf = allocate(st, c, *l, es, n);

  auto set_inputs = [&] {
    if (member) set_inputs_of(op, c, *l, me, buf);
  };
  const mpi_operation o = operation_of(op, c, g, *l, buf);
  const mpi_call call = mpi_calls().at(op);
  const bool divides = c.rop == red_op::avg && receives_result(op, me);
  void* rbuf = buf.recv.data();
  const void* sbuf = c.in_place ? rbuf : buf.send.data();
  const auto rtype =
      c.type == elem_type::float64 ? kc::reduce_dtype::float64 : kc::reduce_dtype::float32;
  auto do_op = [&] {
    if (!member) return;  // not in any group of this split: waits for the others
    if (c.algorithm == "ring") {
      ring_allreduce(sbuf, rbuf, l->recv_count, rtype, chunk_bytes, buf.scratch.data(), g.comm);
    } else if (c.algorithm == "recursive_doubling") {
      recursive_doubling_allreduce(sbuf, rbuf, l->recv_count, rtype, chunk_bytes,
                                   buf.scratch.data(), g.comm);
    } else {
      check_mpi(call(o), spec.mpi_call.data());
      if (divides) divide_by_ranks(c.type, rbuf, l->recv_count, n);
    }
  };

  communicator& comm = st.comm();
  set_inputs();
  st.exec_batched([&](std::int64_t iters) { return batch_max_over_ranks(comm, iters, do_op); },
                  batch_max_timer_name);
  add_bandwidth_metrics(st, l->bytes, bus_factor(op, n), n, g.shape.groups);

  // Verification: fresh inputs (in place, the timed iterations summed into them), one operation,
  // every rank that holds a result checked; a wrong result on any rank fails the configuration.
  set_inputs();
  {
    op_scope scope(comm);
    do_op();
  }
  std::string wrong;
  if (member && receives_result(op, me)) {
    wrong = verify_elements(c.type, rbuf, l->recv_count, spec.result, me, n, l->block,
                            kernels::pattern::make_reduction(c.rop, c.type, n));
  }
  agree_verified(st, wrong);
}

// Buffers of one configuration: the receive buffer, a separate send buffer (not rooted), the
// ring's scratch (all-reduce), each up to `size` bytes; plus the process's own.
std::int64_t memory_for(const config& c, int buffers) {
  return buffers * config_int64(c, "size", 0) + (64 << 20);
}

std::string mpi_description(const collective& c) {
  const bool ours = c.op == coll_op::allreduce;
  return std::string(c.mpi_call) + (c.reduces ? " (sum, max, min, avg)" : "") + " on host buffers" +
         (ours ? " next to our own pipelined ring and recursive doubling over MPI point-to-point"
               : "") +
         ": algbw, " + bus_text(c) + ", latency; data verified";
}

// After the shared axes: our own all-reduce algorithms, and the buffers a configuration holds.
void add_mpi_axes(benchmark& b, const collective& c) {
  const bool ours = c.op == coll_op::allreduce;  // our ring and recursive doubling
  if (ours) {
    b.add_string_axis(
        "algorithm", {"mpi", "ring", "recursive_doubling"},
        choice_axis("MPI_Allreduce (the library's choice) or our own over MPI_Isend/Irecv",
                    {"mpi", "ring", "recursive_doubling"}));
  }
  const int buffers = (c.root_buffer ? 1 : 2) + (ours ? 1 : 0);
  b.memory_estimate([buffers](const config& cfg) { return memory_for(cfg, buffers); });
}

// Every row of the table, registered with its MPI call (registration.h).
[[maybe_unused]] const bool registered_mpi = [] {
  register_collectives({.name = "MPI",
                        .prefix = "mpi_",
                        .dtype_text =
                            "element type (float16 and bfloat16: reduced in float by our own "
                            "MPI_Op_create operations; no 8-bit floats: MPI has no such type, "
                            "collectives/nccl_* offer float8_e4m3 and float8_e5m2)",
                        .dtypes = {std::begin(mpi_dtypes), std::end(mpi_dtypes)},
                        .placement_text = "separate send and receive buffers, or MPI_IN_PLACE",
                        .has_call = [](coll_op op) { return mpi_calls().count(op) > 0; },
                        .describe = mpi_description,
                        .run = run_collective,
                        .finish = add_mpi_axes});
  return true;
}();

}  // namespace
