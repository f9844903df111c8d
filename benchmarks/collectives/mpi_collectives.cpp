// MPI collectives on host buffers: every collective of model.h's table (all-reduce, with our own
// ring and recursive doubling next to MPI_Allreduce, all-gather, reduce-scatter, broadcast and
// all-to-all) registered as collectives/mpi_<name>; this file adds only the MPI call of each.
// nccl-tests' and OSU's method: a size sweep, a batch of iterations timed on every rank and the
// slowest rank's mean kept, algbw = bytes / time, busbw = algbw x the collective's bus factor, and
// the data verified afterwards from known per-rank inputs.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "algorithms.h"
#include "cpu/reduce.h"
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

kc::reduce_dtype dtype_of(const std::string& name) {
  return name == "float64" ? kc::reduce_dtype::float64 : kc::reduce_dtype::float32;
}
MPI_Datatype mpi_type(kc::reduce_dtype t) {
  return t == kc::reduce_dtype::float64 ? MPI_DOUBLE : MPI_FLOAT;
}

template <typename T>
void fill_typed(std::byte* buf, std::size_t count, std::size_t index_base, int rank) {
  auto* p = reinterpret_cast<T*>(buf);
  for (std::size_t i = 0; i < count; ++i)
    p[i] = static_cast<T>(kernels::pattern::input(rank, index_base + i));
}
void fill(kc::reduce_dtype t, std::byte* buf, std::size_t count, std::size_t index_base, int rank) {
  if (t == kc::reduce_dtype::float64) {
    fill_typed<double>(buf, count, index_base, rank);
  } else {
    fill_typed<float>(buf, count, index_base, rank);
  }
}

// Element-exact comparison with the expected result; the first mismatch, or empty.
template <typename T>
std::string verify_typed(const std::byte* buf, coll_op op, int me, int n, const layout& l) {
  const auto* p = reinterpret_cast<const T*>(buf);
  const double rs = kernels::pattern::rank_sum(n);
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < l.recv_count; ++i) {
    if (p[i] != static_cast<T>(expected_value(op, me, n, l.block, i, rs))) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return {};
  return std::to_string(bad) + " of " + std::to_string(l.recv_count) + " elements wrong; element " +
         std::to_string(first) + " = " + std::to_string(static_cast<double>(p[first])) +
         ", expected " + std::to_string(expected_value(op, me, n, l.block, first, rs));
}
std::string verify(kc::reduce_dtype t, const std::byte* buf, coll_op op, int me, int n,
                   const layout& l) {
  return t == kc::reduce_dtype::float64 ? verify_typed<double>(buf, op, me, n, l)
                                        : verify_typed<float>(buf, op, me, n, l);
}

// algbw, busbw and latency from the samples (each the slowest rank's mean over a batch).
void add_bandwidth_metrics(state& st, double bytes, double factor) {
  st.add_time_metric("algbw_gbps", "GB/s", true,
                     "bytes / time, time = slowest rank's mean per operation over a batch "
                     "(nccl-tests algbw)",
                     [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; });
  char method[160];
  std::snprintf(method, sizeof(method),
                "algbw x %.4g, the collective's bus factor for %d ranks (nccl-tests busbw)", factor,
                st.comm().size());
  st.add_time_metric("busbw_gbps", "GB/s", true, method,
                     [&](double t) { return t > 0 ? bytes / t / 1e9 * factor : 0.0; });
  st.add_time_metric("latency_us", "us", false,
                     "microseconds per operation: each rank times a batch of back-to-back "
                     "operations (>= 1 ms) and takes the mean, a sample is the maximum of these "
                     "means over ranks (OSU's method per batch), the value the median sample",
                     [](double t) { return t * 1e6; });
}

// What one operation works on, for the backend's call.
struct mpi_operation {
  const void* send = nullptr;  // MPI_IN_PLACE in place
  void* recv = nullptr;
  int count = 0;  // elements per rank (the whole count for whole-buffer collectives)
  MPI_Datatype type = MPI_FLOAT;
};
using mpi_call = int (*)(const mpi_operation&);

// The one thing this backend adds per collective of model.h's table: its MPI call.
const std::map<coll_op, mpi_call>& mpi_calls() {
  static const std::map<coll_op, mpi_call> calls = {
      {coll_op::allreduce,
       [](const mpi_operation& o) {
         return MPI_Allreduce(o.send, o.recv, o.count, o.type, MPI_SUM, MPI_COMM_WORLD);
       }},
      {coll_op::allgather,
       [](const mpi_operation& o) {
         return MPI_Allgather(o.send, o.count, o.type, o.recv, o.count, o.type, MPI_COMM_WORLD);
       }},
      {coll_op::reduce_scatter,
       [](const mpi_operation& o) {
         return MPI_Reduce_scatter_block(o.send, o.recv, o.count, o.type, MPI_SUM, MPI_COMM_WORLD);
       }},
      {coll_op::broadcast,
       [](const mpi_operation& o) {
         return MPI_Bcast(o.recv, o.count, o.type, 0, MPI_COMM_WORLD);
       }},
      {coll_op::alltoall,
       [](const mpi_operation& o) {
         return MPI_Alltoall(o.send, o.count, o.type, o.recv, o.count, o.type, MPI_COMM_WORLD);
       }},
  };
  return calls;
}

void run_collective(state& st, coll_op op) {
  const collective& spec = describe(op);
  communicator& comm = st.comm();
  const int n = comm.size(), me = comm.rank();
  const std::int64_t size = st.get_int64("size");
  const auto t = spec.reduces ? dtype_of(st.get_string("dtype")) : kc::reduce_dtype::float32;
  const std::size_t es = kc::dtype_size(t);
  const bool in_place = !spec.rooted && st.get_string("placement") == "in_place";
  // Our own algorithms exist for all-reduce only (the `algorithm` axis of mpi_allreduce).
  const std::string algorithm = op == coll_op::allreduce ? st.get_string("algorithm") : "mpi";

  const auto l = make_layout(op, size, es, n);
  if (!l)
    st.skip("size " + std::to_string(size) + " B is less than one element per rank (" +
            std::to_string(n) + " ranks)");
  const std::size_t chunk_bytes = chunk_bytes_of(st, l->recv_count * es, n);

  // Buffers, allocated and first-touched outside the timed region; every rank or none.
  host_buffer send, recv, scratch;
  std::string alloc_error;
  try {
    if (!in_place) send = host_buffer(l->send_count * es);
    recv = host_buffer(std::max(l->recv_count, l->send_count) * es);
    if (algorithm == "ring") scratch = host_buffer(ring_scratch_bytes(l->recv_count, es, n));
    if (algorithm == "recursive_doubling")
      scratch = host_buffer(rd_scratch_bytes(l->recv_count, es));
  } catch (const std::bad_alloc&) {
    alloc_error = "cannot allocate the buffers (" + std::to_string(3 * size) + " B)";
  }
  agree_or_fail(st, alloc_error.empty(), alloc_error);

  // Inputs. In place, the input lives where MPI reads it from in the receive buffer; a rooted
  // collective's root fills the buffer and the others clear it.
  auto set_inputs = [&] {
    if (spec.rooted) {
      if (me == 0)
        fill(t, recv.data(), l->recv_count, 0, me);
      else
        std::memset(recv.data(), 0, l->recv_count * es);
      return;
    }
    std::byte* src = in_place ? recv.data() + in_place_send_offset(op, me, *l) * es : send.data();
    fill(t, src, input_count(op, *l), 0, me);
  };
  mpi_operation o;
  o.send = in_place ? MPI_IN_PLACE : send.data();
  o.recv = recv.data();
  o.count = static_cast<int>(l->block);
  o.type = mpi_type(t);
  const mpi_call call = mpi_calls().at(op);
  void* rbuf = recv.data();
  auto do_op = [&] {
    if (algorithm == "ring") {
      ring_allreduce(in_place ? rbuf : send.data(), rbuf, l->recv_count, t, chunk_bytes,
                     scratch.data(), MPI_COMM_WORLD);
    } else if (algorithm == "recursive_doubling") {
      recursive_doubling_allreduce(in_place ? rbuf : send.data(), rbuf, l->recv_count, t,
                                   chunk_bytes, scratch.data(), MPI_COMM_WORLD);
    } else {
      check_mpi(call(o), spec.mpi_call.data());
    }
  };

  set_inputs();
  st.exec_batched([&](std::int64_t iters) { return batch_max_over_ranks(comm, iters, do_op); },
                  batch_max_timer_name);
  add_bandwidth_metrics(st, l->bytes, bus_factor(op, n));

  // Verification: fresh inputs (in place, the timed iterations summed into them), one operation.
  set_inputs();
  {
    op_scope scope(comm);
    do_op();
  }
  const std::string wrong = verify(t, recv.data(), op, me, n, *l);
  st.check(wrong.empty(), "verification failed on rank " + std::to_string(me) + ": " + wrong);
}

// Buffers of one configuration: the receive buffer, a separate send buffer (not rooted), the
// ring's scratch (all-reduce), each up to `size` bytes; plus the process's own.
std::int64_t memory_for(const config& c, int buffers) {
  return buffers * config_int64(c, "size", 0) + (64 << 20);
}

std::string mpi_description(const collective& c) {
  const bool ours = c.op == coll_op::allreduce;
  return std::string(c.mpi_call) + " on host buffers" +
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
  const int buffers = (c.rooted ? 1 : 2) + (ours ? 1 : 0);
  b.memory_estimate([buffers](const config& cfg) { return memory_for(cfg, buffers); });
}

// Every row of the table, registered with its MPI call (registration.h).
[[maybe_unused]] const bool registered = [] {
  register_collectives({.name = "MPI",
                        .prefix = "mpi_",
                        .dtype_text = "element type of the sum",
                        .placement_text = "separate send and receive buffers, or MPI_IN_PLACE",
                        .has_call = [](coll_op op) { return mpi_calls().count(op) > 0; },
                        .describe = mpi_description,
                        .run = run_collective,
                        .finish = add_mpi_axes});
  return true;
}();

}  // namespace
