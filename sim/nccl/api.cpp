// The NCCL API of the simulated NCCL (sim/nccl/shim.h says how it works). Every collective
// completes before it returns; a failure is recorded on the communicator (ncclCommGetAsyncError
// then returns it, as NCCL's does), the peers are told why (so they fail at once, naming the
// origin) and the text is ncclGetLastError's. Collectives inside ncclGroupStart/End run when
// called; sends and receives wait for ncclGroupEnd and then move together.
#include <algorithm>
#include <cstring>
#include <map>

#include "shim.h"

#define SIMNCCL_API extern "C" __attribute__((visibility("default")))

using namespace simnccl;

namespace {

thread_local std::string last_error;

ncclResult_t record(ncclComm* c, ncclResult_t code, const std::string& text) {
  last_error = text;
  if (c != nullptr) {
    {
      std::lock_guard<std::mutex> lock(c->error_mu);
      c->error = text;
    }
    c->async.store(code);
  }
  return code;
}

// Marks the communicator busy while a call uses it, so that ncclCommAbort from another thread
// waits for the call to see the abort instead of freeing it underneath.
struct busy_scope {
  ncclComm& c;
  explicit busy_scope(ncclComm& comm) : c(comm) { c.busy.fetch_add(1); }
  ~busy_scope() { c.busy.fetch_sub(1); }
  busy_scope(const busy_scope&) = delete;
  busy_scope& operator=(const busy_scope&) = delete;
};

// Whether `c` can run an operation now; the error to return if not.
ncclResult_t usable(ncclComm* c) {
  if (c == nullptr) return record(nullptr, ncclInvalidArgument, "null communicator");
  if (c->aborted.load()) return record(nullptr, ncclInvalidUsage, "the communicator was aborted");
  const ncclResult_t state = c->async.load();
  if (state == ncclInProgress)
    return record(nullptr, ncclInvalidUsage, "the communicator is still being initialised");
  if (state != ncclSuccess) {
    std::lock_guard<std::mutex> lock(c->error_mu);
    last_error = "the communicator failed earlier: " + c->error;
    return state;
  }
  return ncclSuccess;
}

template <class Body>
ncclResult_t run(ncclComm* c, const char* op, Body&& body) {
  if (const ncclResult_t u = usable(c); u != ncclSuccess) return u;
  busy_scope busy(*c);
  try {
    fault_at_collective(*c, op);
    body(*c);
    return ncclSuccess;
  } catch (const failure& f) {
    const std::string text =
        std::string(op) + " on rank " + std::to_string(c->rank) + ": " + f.what();
    give_up(*c, text);
    return record(c, f.code, text);
  } catch (const std::exception& e) {
    give_up(*c, e.what());
    return record(c, ncclInternalError, std::string(op) + ": " + e.what());
  }
}

std::size_t size_of(ncclDataType_t t) {
  const std::size_t s = type_size(t);
  if (s == 0)
    throw failure(ncclInvalidArgument, "unknown data type " + std::to_string(static_cast<int>(t)));
  // The 8-bit float types came with NCCL 2.24: an older NCCL (the version this one reports)
  // refuses them as unknown, as the real one does.
  if ((t == ncclFloat8e4m3 || t == ncclFloat8e5m2) && reported_version() < NCCL_VERSION(2, 24, 0))
    throw failure(ncclInvalidArgument, "unknown data type " + std::to_string(static_cast<int>(t)) +
                                           " (fp8 needs NCCL 2.24; this is " +
                                           std::to_string(reported_version()) + ")");
  return s;
}

std::byte* at(const void* p, std::size_t elems, std::size_t es) {
  return static_cast<std::byte*>(const_cast<void*>(p)) + elems * es;
}

// The reduction, in rank order (the same on every rank), of `count` elements from each rank's
// source into `out` (which may alias a source: the result is built aside).
void reduce_ranks(const std::vector<const std::byte*>& src, void* out, std::size_t count,
                  ncclDataType_t t, ncclRedOp_t op) {
  const std::size_t es = size_of(t), bytes = count * es;
  const int n = static_cast<int>(src.size());
  const ncclRedOp_t base = op == ncclAvg ? ncclSum : op;
  std::vector<std::byte> acc(src[0], src[0] + bytes), scratch(bytes);
  if (op == ncclAvg) scale_input(acc.data(), count, t, n);
  for (int r = 1; r < n; ++r) {
    const void* x = src[r];
    if (op == ncclAvg) {
      std::memcpy(scratch.data(), src[r], bytes);
      scale_input(scratch.data(), count, t, n);
      x = scratch.data();
    }
    reduce_into(acc.data(), x, count, t, base);
  }
  if (op == ncclAvg) divide_result(acc.data(), count, t, n);
  std::memcpy(out, acc.data(), bytes);
}

void check_op(ncclRedOp_t op) {
  if (op < ncclSum || op > ncclAvg)
    throw failure(ncclInvalidArgument,
                  "reduction " + std::to_string(static_cast<int>(op)) +
                      " is not one the simulated NCCL has (sum, prod, max, min, avg)");
}

// All-reduce as a reduce-scatter of n near-equal chunks followed by an all-gather of them.
void all_reduce(ncclComm& c, const void* send, void* recv, std::size_t count, ncclDataType_t t,
                ncclRedOp_t op) {
  check_op(op);
  const std::size_t es = size_of(t);
  const int n = c.nranks, me = c.rank;
  auto lo = [&](int j) { return count * static_cast<std::size_t>(j) / n; };
  auto len = [&](int j) { return lo(j + 1) - lo(j); };
  std::vector<std::vector<std::byte>> got(n);
  std::vector<transfer> ts;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    got[p].resize(len(me) * es);
    ts.push_back({p, true, at(send, lo(p), es), len(p) * es});
    ts.push_back({p, false, got[p].data(), len(me) * es});
  }
  exchange(c, ts, "ncclAllReduce", c.ops++);
  std::vector<const std::byte*> src(n);
  for (int r = 0; r < n; ++r) src[r] = r == me ? at(send, lo(me), es) : got[r].data();
  reduce_ranks(src, at(recv, lo(me), es), len(me), t, op);
  ts.clear();
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    ts.push_back({p, true, at(recv, lo(me), es), len(me) * es});
    ts.push_back({p, false, at(recv, lo(p), es), len(p) * es});
  }
  exchange(c, ts, "ncclAllReduce", c.ops++);
}

void reduce_to_root(ncclComm& c, const void* send, void* recv, std::size_t count, ncclDataType_t t,
                    ncclRedOp_t op, int root) {
  check_op(op);
  const std::size_t es = size_of(t);
  const int n = c.nranks, me = c.rank;
  std::vector<transfer> ts;
  std::vector<std::vector<std::byte>> got(n);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    if (me == root) {
      got[p].resize(count * es);
      ts.push_back({p, false, got[p].data(), count * es});
    } else if (p == root) {
      ts.push_back({p, true, at(send, 0, es), count * es});
    }
  }
  exchange(c, ts, "ncclReduce", c.ops++);
  if (me != root) return;
  std::vector<const std::byte*> src(n);
  for (int r = 0; r < n; ++r) src[r] = r == me ? at(send, 0, es) : got[r].data();
  reduce_ranks(src, recv, count, t, op);
}

void reduce_scatter(ncclComm& c, const void* send, void* recv, std::size_t count, ncclDataType_t t,
                    ncclRedOp_t op) {
  check_op(op);
  const std::size_t es = size_of(t);
  const int n = c.nranks, me = c.rank;
  std::vector<std::vector<std::byte>> got(n);
  std::vector<transfer> ts;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    got[p].resize(count * es);
    ts.push_back({p, true, at(send, count * p, es), count * es});
    ts.push_back({p, false, got[p].data(), count * es});
  }
  exchange(c, ts, "ncclReduceScatter", c.ops++);
  std::vector<const std::byte*> src(n);
  for (int r = 0; r < n; ++r) src[r] = r == me ? at(send, count * me, es) : got[r].data();
  reduce_ranks(src, recv, count, t, op);
}

void all_gather(ncclComm& c, const void* send, void* recv, std::size_t count, ncclDataType_t t) {
  const std::size_t es = size_of(t);
  const int n = c.nranks, me = c.rank;
  std::byte* own = at(recv, count * me, es);
  if (own != send) std::memmove(own, send, count * es);
  std::vector<transfer> ts;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    ts.push_back({p, true, own, count * es});
    ts.push_back({p, false, at(recv, count * p, es), count * es});
  }
  exchange(c, ts, "ncclAllGather", c.ops++);
}

void broadcast(ncclComm& c, const void* send, void* recv, std::size_t count, ncclDataType_t t,
               int root) {
  const std::size_t es = size_of(t);
  if (root < 0 || root >= c.nranks) throw failure(ncclInvalidArgument, "root out of range");
  std::vector<transfer> ts;
  if (c.rank == root) {
    if (send != recv) std::memmove(recv, send, count * es);
    for (int p = 0; p < c.nranks; ++p) {
      if (p != root) ts.push_back({p, true, at(recv, 0, es), count * es});
    }
  } else {
    ts.push_back({root, false, at(recv, 0, es), count * es});
  }
  exchange(c, ts, "ncclBroadcast", c.ops++);
}

// ---- groups: sends and receives wait for the outermost ncclGroupEnd --------------------------
struct p2p {
  ncclComm* comm;
  transfer t;
};
thread_local int group_depth = 0;
thread_local std::vector<p2p> queued;

void move_p2p(ncclComm& c, std::vector<transfer> ts) {
  // To and from itself: the k-th send pairs with the k-th receive.
  std::vector<transfer> self_send, self_recv, net;
  for (const transfer& t : ts) {
    if (t.peer != c.rank)
      net.push_back(t);
    else
      (t.send ? self_send : self_recv).push_back(t);
  }
  if (self_send.size() != self_recv.size())
    throw failure(ncclInvalidUsage, "sends to itself and receives from itself do not pair up");
  for (std::size_t i = 0; i < self_send.size(); ++i) {
    if (self_send[i].bytes != self_recv[i].bytes)
      throw failure(ncclInvalidUsage, "a send to itself and its receive differ in size");
    std::memmove(self_recv[i].data, self_send[i].data, self_send[i].bytes);
  }
  exchange(c, net, "ncclSend/ncclRecv", any_seq);
}

ncclResult_t flush_group() {
  std::vector<p2p> ops;
  ops.swap(queued);
  std::vector<ncclComm*> comms;
  for (const p2p& o : ops) {
    if (std::find(comms.begin(), comms.end(), o.comm) == comms.end()) comms.push_back(o.comm);
  }
  ncclResult_t result = ncclSuccess;
  for (ncclComm* c : comms) {
    std::vector<transfer> ts;
    for (const p2p& o : ops) {
      if (o.comm == c) ts.push_back(o.t);
    }
    const ncclResult_t rc =
        run(c, "ncclSend/ncclRecv", [&](ncclComm& comm) { move_p2p(comm, ts); });
    if (result == ncclSuccess) result = rc;
  }
  return result;
}

ncclResult_t point_to_point(const void* buf, std::size_t count, ncclDataType_t t, int peer,
                            ncclComm* comm, bool send) {
  if (const ncclResult_t u = usable(comm); u != ncclSuccess) return u;
  const std::size_t es = type_size(t);
  if (es == 0 || peer < 0 || peer >= comm->nranks)
    return record(nullptr, ncclInvalidArgument, "ncclSend/ncclRecv: bad type or peer");
  queued.push_back({comm, {peer, send, at(buf, 0, es), count * es}});
  return group_depth > 0 ? ncclSuccess : flush_group();
}

void close_all(ncclComm& c) {
  for (peer& p : c.peers) close_fd(p.fd);
}

// Ends a communicator: stops what runs on it (an init thread, a call in another thread) first.
void finish(ncclComm* c, const char* why) {
  c->aborted.store(true);
  if (c->init_thread.joinable()) c->init_thread.join();
  const auto until = steady::now() + std::chrono::seconds(5);
  while (c->busy.load() > 0 && steady::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (why != nullptr) give_up(*c, why);
  close_all(*c);
  if (c->busy.load() == 0) delete c;  // else leaked: a call that ignores the abort still holds it
}

void init_now(ncclComm* c, const ncclUniqueId& id) {
  try {
    init_comm(*c, id);
    c->async.store(ncclSuccess);
  } catch (const failure& f) {
    close_all(*c);
    record(c, f.code,
           std::string("ncclCommInitRank on rank ") + std::to_string(c->rank) + ": " + f.what());
  } catch (const std::exception& e) {
    close_all(*c);
    record(c, ncclInternalError, std::string("ncclCommInitRank: ") + e.what());
  }
}

}  // namespace

// ---- the API ------------------------------------------------------------------------------------
SIMNCCL_API ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = reported_version();
  return ncclSuccess;
}

SIMNCCL_API const char* ncclGetErrorString(ncclResult_t rc) {
  switch (rc) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

// The communicator's error when it has one (it may have come from another thread: a non-blocking
// init's), else this thread's last.
SIMNCCL_API const char* ncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->error_mu);
    if (!comm->error.empty()) last_error = comm->error;
  }
  return last_error.c_str();
}

SIMNCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return record(nullptr, ncclInvalidArgument, "ncclGetUniqueId: null id");
  try {
    make_unique_id(id);
    return ncclSuccess;
  } catch (const failure& f) {
    return record(nullptr, f.code, std::string("ncclGetUniqueId: ") + f.what());
  }
}

SIMNCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                int rank, ncclConfig_t* config) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks)
    return record(nullptr, ncclInvalidArgument, "ncclCommInitRank: bad communicator, size or rank");
  auto* c = new ncclComm;
  c->rank = rank;
  c->nranks = nranks;
  c->blocking =
      config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  *comm = c;
  // The device current on the calling thread, as NCCL takes it: a non-blocking init runs on a
  // thread of its own, whose current device is 0 (every rank would say "GPU 0").
  c->gpu = current_gpu();
  if (!c->blocking) {
    c->async.store(ncclInProgress);
    c->init_thread = std::thread(init_now, c, id);
    return ncclInProgress;
  }
  init_now(c, id);
  if (c->async.load() != ncclSuccess) {
    std::lock_guard<std::mutex> lock(c->error_mu);
    last_error = c->error;
  }
  return c->async.load();
}

SIMNCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

SIMNCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* result) {
  if (comm == nullptr || result == nullptr) return ncclInvalidArgument;
  *result = comm->async.load();
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                       ncclConfig_t* config) {
  if (newcomm == nullptr)
    return record(nullptr, ncclInvalidArgument, "ncclCommSplit: null newcomm");
  *newcomm = nullptr;
  auto* child = new ncclComm;
  child->blocking =
      config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  const ncclResult_t rc =
      run(comm, "ncclCommSplit", [&](ncclComm& parent) { split_comm(parent, color, key, *child); });
  if (rc != ncclSuccess || child->nranks == 0) {
    close_all(*child);
    delete child;
    return rc;
  }
  *newcomm = child;
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  finish(comm, nullptr);
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  finish(comm, ("rank " + std::to_string(comm->rank) + " aborted its communicator").c_str());
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = comm->gpu;
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}

SIMNCCL_API ncclResult_t ncclGroupEnd() {
  if (group_depth == 0)
    return record(nullptr, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  return flush_group();
}

SIMNCCL_API ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count,
                                       ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t) {
  return run(comm, "ncclAllReduce",
             [&](ncclComm& c) { all_reduce(c, send, recv, count, type, op); });
}

SIMNCCL_API ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t) {
  return run(comm, "ncclReduce",
             [&](ncclComm& c) { reduce_to_root(c, send, recv, count, type, op, root); });
}

SIMNCCL_API ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount,
                                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t) {
  return run(comm, "ncclReduceScatter",
             [&](ncclComm& c) { reduce_scatter(c, send, recv, recvcount, type, op); });
}

SIMNCCL_API ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount,
                                       ncclDataType_t type, ncclComm_t comm, cudaStream_t) {
  return run(comm, "ncclAllGather",
             [&](ncclComm& c) { all_gather(c, send, recv, sendcount, type); });
}

SIMNCCL_API ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count,
                                       ncclDataType_t type, int root, ncclComm_t comm,
                                       cudaStream_t) {
  return run(comm, "ncclBroadcast",
             [&](ncclComm& c) { broadcast(c, send, recv, count, type, root); });
}

SIMNCCL_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t type, int root,
                                   ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, type, root, comm, stream);
}

SIMNCCL_API ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type, int peer,
                                  ncclComm_t comm, cudaStream_t) {
  return point_to_point(buf, count, type, peer, comm, true);
}

SIMNCCL_API ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer,
                                  ncclComm_t comm, cudaStream_t) {
  return point_to_point(buf, count, type, peer, comm, false);
}
