#include "algorithms.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model.h"

namespace infrabench::collectives {
namespace {

namespace k = kernels::cpu;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + ": " + text);
}

void wait_all(std::vector<MPI_Request>& reqs) {
  if (reqs.empty()) return;
  check(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
  reqs.clear();
}

}  // namespace

std::size_t ring_scratch_bytes(std::size_t count, std::size_t elem, int n) {
  // Two segments: the reduce-scatter receives of step s+1 are posted while step s is reduced.
  const std::size_t seg = (count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  return 2 * seg * elem;
}

std::size_t rd_scratch_bytes(std::size_t count, std::size_t elem) {
  return count * elem;
}

namespace {

// One ring all-reduce in flight: its buffers, neighbours and outstanding requests, shared by the
// steps below so each step is a function of its own rather than a lambda over all of them.
struct ring_run {
  const std::byte* in;
  std::byte* out;
  std::size_t count, es, chunk;
  k::reduce_dtype t;
  bool in_place;
  int n, me, left, right, steps;
  std::byte* tmp[2];
  MPI_Comm comm;
  std::vector<std::vector<MPI_Request>> recv_req, send_req;

  void post_recvs(int s);
  void send_chunk(int s, std::size_t c);
  void send_first_segment();
  void reduce_chunk(int s, const span_elems& seg, std::size_t c);
  void run_steps();
};

// Posts step s's receives: into the scratch segment (reduce-scatter) or the result (all-gather).
void ring_run::post_recvs(int s) {
  if (s >= n - 1) {
    // The all-gather receives straight into the buffer: the reduce-scatter step that sent from
    // that segment must be done first.
    wait_all(send_req[static_cast<std::size_t>(s - (n - 1))]);
  }
  const auto seg = ring_segment(count, n, ring_recv_segment(me, n, s));
  auto& reqs = recv_req[static_cast<std::size_t>(s)];
  reqs.resize(chunk_count(seg.length, chunk));
  for (std::size_t c = 0; c < reqs.size(); ++c) {
    const std::size_t off = c * chunk, len = std::min(chunk, seg.length - off);
    std::byte* dst = s < n - 1 ? tmp[s % 2] + off * es : out + (seg.offset + off) * es;
    check(MPI_Irecv(dst, static_cast<int>(len * es), MPI_BYTE, left, s, comm, &reqs[c]),
          "MPI_Irecv");
  }
}

// Sends chunk c of step s's outgoing segment to the right neighbour.
void ring_run::send_chunk(int s, std::size_t c) {
  const auto seg = ring_segment(count, n, ring_send_segment(me, n, s));
  const std::size_t off = c * chunk, len = std::min(chunk, seg.length - off);
  const std::byte* src = (s == 0 && !in_place ? in : out) + (seg.offset + off) * es;
  auto& reqs = send_req[static_cast<std::size_t>(s)];
  reqs.emplace_back();
  check(MPI_Isend(src, static_cast<int>(len * es), MPI_BYTE, right, s, comm, &reqs.back()),
        "MPI_Isend");
}

// Step 0 sends from the input as a whole; every later step's chunks are sent as they arrive.
void ring_run::send_first_segment() {
  const auto seg0 = ring_segment(count, n, ring_send_segment(me, n, 0));
  for (std::size_t c = 0; c < chunk_count(seg0.length, chunk); ++c) send_chunk(0, c);
}

// Reduce-scatter: add the neighbour's partial sum to ours (out of place: to our input).
void ring_run::reduce_chunk(int s, const span_elems& seg, std::size_t c) {
  const std::size_t off = c * chunk, len = std::min(chunk, seg.length - off);
  std::byte* dst = out + (seg.offset + off) * es;
  const std::byte* got = tmp[s % 2] + off * es;
  if (in_place) {
    k::reduce_accumulate(t, dst, got, len);
  } else {
    k::reduce_add(t, dst, in + (seg.offset + off) * es, got, len);
  }
}

void ring_run::run_steps() {
  for (int s = 0; s < steps; ++s) {
    if (s + 1 < steps) post_recvs(s + 1);
    const auto seg = ring_segment(count, n, ring_recv_segment(me, n, s));
    auto& reqs = recv_req[static_cast<std::size_t>(s)];
    for (std::size_t c = 0; c < reqs.size(); ++c) {
      check(MPI_Wait(&reqs[c], MPI_STATUS_IGNORE), "MPI_Wait");
      if (s < n - 1) reduce_chunk(s, seg, c);
      // The chunk just completed is the next step's outgoing chunk: pipeline it on at once.
      if (s + 1 < steps) send_chunk(s + 1, c);
    }
  }
  for (auto& reqs : send_req) wait_all(reqs);
}

}  // namespace

void ring_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, k::reduce_dtype t,
                    std::size_t chunk_bytes, void* scratch, MPI_Comm comm) {
  int n = 1, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  const std::size_t es = k::dtype_size(t);
  const auto* in = static_cast<const std::byte*>(sendbuf);
  auto* out = static_cast<std::byte*>(recvbuf);
  const bool in_place = sendbuf == recvbuf;
  if (n == 1) {
    if (!in_place) std::memcpy(out, in, count * es);
    return;
  }
  const std::size_t chunk = std::max<std::size_t>(1, chunk_bytes / es);
  const int steps = 2 * (n - 1);
  const std::size_t seg_max =
      (count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  ring_run r{
      .in = in,
      .out = out,
      .count = count,
      .es = es,
      .chunk = chunk,
      .t = t,
      .in_place = in_place,
      .n = n,
      .me = me,
      .left = ring_mod(me - 1, n),
      .right = ring_mod(me + 1, n),
      .steps = steps,
      .tmp = {static_cast<std::byte*>(scratch), static_cast<std::byte*>(scratch) + seg_max * es},
      .comm = comm,
      .recv_req = std::vector<std::vector<MPI_Request>>(static_cast<std::size_t>(steps)),
      .send_req = std::vector<std::vector<MPI_Request>>(static_cast<std::size_t>(steps))};
  r.post_recvs(0);
  r.send_first_segment();
  r.run_steps();
}

void recursive_doubling_allreduce(const void* sendbuf, void* recvbuf, std::size_t count,
                                  k::reduce_dtype t, std::size_t chunk_bytes, void* scratch,
                                  MPI_Comm comm) {
  int n = 1, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  const std::size_t es = k::dtype_size(t);
  auto* out = static_cast<std::byte*>(recvbuf);
  auto* tmp = static_cast<std::byte*>(scratch);
  if (sendbuf != recvbuf) std::memcpy(out, sendbuf, count * es);
  if (n == 1) return;
  const std::size_t chunk = std::max<std::size_t>(1, chunk_bytes / es);
  const std::size_t nch = chunk_count(count, chunk);
  enum class mode { send_only, recv_reduce, exchange_reduce, recv_copy };

  // Chunked so that the reduction of chunk c overlaps the transfer of the chunks after it.
  auto transfer = [&](int partner, mode m, int tag) {
    std::vector<MPI_Request> rreq, sreq;
    const bool recv = m != mode::send_only,
               send = m == mode::send_only || m == mode::exchange_reduce;
    for (std::size_t c = 0; c < nch && recv; ++c) {
      const std::size_t off = c * chunk, len = std::min(chunk, count - off);
      std::byte* dst = (m == mode::recv_copy ? out : tmp) + off * es;
      rreq.emplace_back();
      check(MPI_Irecv(dst, static_cast<int>(len * es), MPI_BYTE, partner, tag, comm, &rreq.back()),
            "MPI_Irecv");
    }
    for (std::size_t c = 0; c < nch && send; ++c) {
      const std::size_t off = c * chunk, len = std::min(chunk, count - off);
      sreq.emplace_back();
      check(MPI_Isend(out + off * es, static_cast<int>(len * es), MPI_BYTE, partner, tag, comm,
                      &sreq.back()),
            "MPI_Isend");
    }
    if (m == mode::recv_reduce || m == mode::exchange_reduce) {
      for (std::size_t c = 0; c < nch; ++c) {
        const std::size_t off = c * chunk, len = std::min(chunk, count - off);
        check(MPI_Wait(&rreq[c], MPI_STATUS_IGNORE), "MPI_Wait");
        // Our chunk c may still be on its way to the partner: wait before adding into it.
        if (send) check(MPI_Wait(&sreq[c], MPI_STATUS_IGNORE), "MPI_Wait");
        k::reduce_accumulate(t, out + off * es, tmp + off * es, len);
      }
    }
    wait_all(rreq);
    wait_all(sreq);
  };

  const rd_plan plan = make_rd_plan(me, n);
  if (me < 2 * plan.rem)
    transfer(me % 2 == 0 ? me + 1 : me - 1, me % 2 == 0 ? mode::send_only : mode::recv_reduce, 1);
  if (plan.newrank >= 0) {
    int tag = 2;
    for (int mask = 1; mask < plan.pof2; mask <<= 1, ++tag) {
      transfer(plan.real_rank(plan.newrank ^ mask), mode::exchange_reduce, tag);
    }
  }
  if (me < 2 * plan.rem)
    transfer(me % 2 == 0 ? me + 1 : me - 1, me % 2 == 0 ? mode::recv_copy : mode::send_only, 100);
}

}  // namespace infrabench::collectives
