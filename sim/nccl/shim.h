// The simulated NCCL (libnccl.so.2 of the simulated GPU node, issue 38): the internals its API
// (api.cpp) is built from. Ranks are processes (possibly on different hosts) joined by TCP: one
// connection between every pair of a communicator, made through rank 0's bootstrap listener whose
// addresses travel in the ncclUniqueId. Buffers are host memory (the simulated CUDA runtime makes
// device pointers host pointers) and every collective completes before its call returns (the
// simulated streams are host-ordered), so a result check after it sees real data moved between
// real processes. Every wait is bounded (SIMNCCL_TIMEOUT_S) and names the peer that did not answer.
#pragma once

#include <nccl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace simnccl {

using steady = std::chrono::steady_clock;

// A failure with NCCL's code for it: the text becomes ncclGetLastError's.
struct failure : std::runtime_error {
  ncclResult_t code;
  failure(ncclResult_t c, const std::string& what) : std::runtime_error(what), code(c) {}
};

// ---- settings (environment; see docs/simulation.md) -------------------------------------------
[[nodiscard]] double timeout_s();       // SIMNCCL_TIMEOUT_S, default 20
[[nodiscard]] int reported_version();   // SIMNCCL_VERSION ("2.18.5" or 21805), default the header's
[[nodiscard]] std::string host_name();  // gethostname
[[nodiscard]] int current_gpu();        // cudaGetDevice of the CUDA runtime loaded, -1 if none

// ---- one peer of a communicator ----------------------------------------------------------------
struct peer {
  int fd = -1;  // -1: this rank itself, or closed
  std::string host;
  int gpu = -1;
  std::uint32_t addr = 0;  // IPv4, network order: where its listener is
  std::uint16_t port = 0;  // network order
  // The message in flight to it, so that a rank giving up can finish it (header, zeros for the
  // rest of the data, a trailer saying "aborted") and then send its reason: a peer never reads a
  // bare close in the middle of a message, which would name this rank and not the cause.
  std::size_t msg_done = 0;           // bytes of it sent; 0: none in flight
  std::size_t msg_size = 0;           // header + data + trailer
  std::array<char, 64> msg_header{};  // its header
};
// "rank 3 (host h1, GPU 3)"
[[nodiscard]] std::string describe_rank(const std::vector<peer>& peers, int rank);

}  // namespace simnccl

// The communicator (ncclComm_t points at one).
struct ncclComm {
  std::uint64_t id = 0;  // the same on every rank of it
  int rank = 0, nranks = 0;
  int gpu = -1;
  std::vector<simnccl::peer> peers;
  bool blocking = true;
  std::atomic<ncclResult_t> async{ncclSuccess};  // ncclInProgress while a non-blocking init runs
  std::atomic<bool> aborted{false};
  std::mutex error_mu;
  std::string error;      // the text of `async` when it is an error
  std::uint64_t ops = 0;  // collectives issued, for the wire check (every rank issues the same)
  std::uint64_t splits = 0;
  std::atomic<int> busy{0};  // calls running on it (ncclCommAbort waits for them)
  std::thread init_thread;   // a non-blocking init's
};

namespace simnccl {

// ---- sockets (net.cpp) -------------------------------------------------------------------------
// This process' listener for its communicators' connections (made on first use).
[[nodiscard]] std::uint16_t listener_port();
// A connection to addr:port, retried until `deadline` (then throws, naming `who`).
[[nodiscard]] int connect_to(std::uint32_t addr, std::uint16_t port, steady::time_point deadline,
                             const std::string& who, const std::atomic<bool>* stop);
// The connection rank `from` of communicator `comm_id` made to this process' listener.
[[nodiscard]] int accept_from(std::uint64_t comm_id, int from, steady::time_point deadline,
                              const std::string& who, const std::atomic<bool>* stop);
// Sends the handshake that accept_from expects.
void send_handshake(int fd, std::uint64_t comm_id, int from, steady::time_point deadline);
// Whole-buffer blocking I/O with a deadline (bootstrap only).
void write_all(int fd, const void* p, std::size_t n, steady::time_point deadline,
               const std::string& who);
void read_all(int fd, void* p, std::size_t n, steady::time_point deadline, const std::string& who,
              const std::atomic<bool>* stop = nullptr);
void close_fd(int& fd);

// One message of an operation: to or from one peer, in order per peer and direction.
struct transfer {
  int peer = 0;
  bool send = false;
  std::byte* data = nullptr;  // const for a send
  std::size_t bytes = 0;
  // filled by the engine
  std::size_t done = 0;    // bytes of header + data + trailer moved
  std::uint64_t tail = 0;  // the trailer received
};
// Moves every transfer of `ts` (all at once, so that no pair waits on the other's send), each
// framed with the operation's name and number and checked on arrival. Throws a failure naming
// the peers that sent nothing for timeout_s() (or that closed, or sent another operation).
constexpr std::uint64_t any_seq = ~0ull;  // point-to-point: no collective number to check
void exchange(ncclComm& c, std::vector<transfer>& ts, const char* op, std::uint64_t seq);
// Tells the peers (best effort) why this rank gives up, then closes its connections.
void give_up(ncclComm& c, const std::string& why);

// ---- communicators (comm.cpp) ------------------------------------------------------------------
void make_unique_id(ncclUniqueId* id);
void init_comm(ncclComm& c, const ncclUniqueId& id);  // c.rank, c.nranks set; throws failure
void split_comm(ncclComm& parent, int color, int key, ncclComm& child);

// ---- element types and reductions (reduce.cpp) ------------------------------------------------
// IEEE half and bfloat16, rounding to nearest even (as __float2half_rn, __float2bfloat16_rn).
[[nodiscard]] float half_to_float(std::uint16_t h);
[[nodiscard]] std::uint16_t float_to_half(float f);
[[nodiscard]] float bf16_to_float(std::uint16_t h);
[[nodiscard]] std::uint16_t float_to_bf16(float f);
[[nodiscard]] std::size_t type_size(ncclDataType_t t);  // 0: not a type
[[nodiscard]] const char* type_name(ncclDataType_t t);
// acc[i] = acc[i] op x[i] in the type, rounded to it per step as NCCL's hops do.
void reduce_into(void* acc, const void* x, std::size_t count, ncclDataType_t t, ncclRedOp_t op);
// avg's steps: floating types pre-multiply each input by 1/n (NCCL's pre-multiplied sum);
// integers sum, then divide.
void scale_input(void* data, std::size_t count, ncclDataType_t t, int n);
void divide_result(void* data, std::size_t count, ncclDataType_t t, int n);

// ---- faults on demand (faults.cpp) -------------------------------------------------------------
// SIMNCCL_FAULT="kind@rank[:after=N][:exit]", comma-separated: dead_before_init, dead_after_init,
// hang (see docs/simulation.md). `rank`: the rank of this process' first communicator.
void fault_at_init(ncclComm& c);
void fault_at_collective(ncclComm& c, const char* op);  // counts the process' collectives

}  // namespace simnccl
