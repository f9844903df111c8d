// Sockets of the simulated NCCL: this process' listener, the connections between the ranks of a
// communicator, and the engine that moves an operation's messages over them. Every socket is
// non-blocking and every wait is a poll with a deadline, so nothing here waits for ever.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "shim.h"

namespace simnccl {
namespace {

constexpr char hello_tag[8] = {'S', 'N', 'C', 'C', 'L', 'c', 'o', 'n'};
constexpr std::uint32_t frame_magic = 0x5343434eu;  // "NCCS"
constexpr std::uint32_t frame_data = 0, frame_abort = 1;

struct hello {
  char tag[8];
  std::uint64_t comm_id;
  std::int32_t from;
  std::int32_t pad;
};
struct frame {
  std::uint32_t magic = frame_magic;
  std::uint32_t kind = frame_data;
  std::uint64_t seq = 0;
  std::uint64_t bytes = 0;
  char op[24] = {};
};
static_assert(sizeof(frame) <= sizeof(peer::msg_header));
// Every data message ends with a trailer: "complete", or "aborted" when its sender gave up in the
// middle of it (the data before it is then zeros, and the sender's reason follows as an abort
// frame).
constexpr std::uint64_t trailer_ok = 0x4b4f4c4343534eull, trailer_aborted = 0x5442414c4343534eull;
constexpr std::size_t message_size(std::size_t bytes) {
  return sizeof(frame) + bytes + sizeof(std::uint64_t);
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

void set_socket_options(int fd) {
  const int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int ms_until(steady::time_point deadline, int cap_ms) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(left < cap_ms ? left : cap_ms);
}

// The process-wide listener and the connections it accepted for communicators that have not
// asked for them yet (another communicator's init may be faster than this one's).
struct lobby {
  std::mutex mu;
  int fd = -1;
  std::uint16_t port = 0;
  std::map<std::pair<std::uint64_t, int>, int> parked;
};
lobby& the_lobby() {
  static lobby* l = new lobby;  // never destroyed: communicators may outlive static teardown
  return *l;
}

void open_listener(lobby& l) {
  l.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l.fd < 0) throw failure(ncclSystemError, errno_text("socket"));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  if (bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(l.fd, 512) != 0 ||
      getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw failure(ncclSystemError, errno_text("listener"));
  set_socket_options(l.fd);
  l.port = a.sin_port;
}

// Accepts one connection and reads its handshake into the lobby (the lock is held).
void accept_one(lobby& l, int wait_ms) {
  pollfd p{l.fd, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return;
  int fd = accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  set_socket_options(fd);
  hello h{};
  try {
    read_all(fd, &h, sizeof h, steady::now() + std::chrono::seconds(5), "a connecting rank");
  } catch (const failure&) {
    close_fd(fd);
    return;
  }
  if (std::memcmp(h.tag, hello_tag, sizeof h.tag) != 0) {
    close_fd(fd);  // not ours
    return;
  }
  const auto key = std::make_pair(h.comm_id, static_cast<int>(h.from));
  if (auto it = l.parked.find(key); it != l.parked.end()) close_fd(it->second);
  l.parked[key] = fd;
}

}  // namespace

void close_fd(int& fd) {
  if (fd >= 0) (void)close(fd);
  fd = -1;
}

std::uint16_t listener_port() {
  lobby& l = the_lobby();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.fd < 0) open_listener(l);
  return l.port;
}

void write_all(int fd, const void* p, std::size_t n, steady::time_point deadline,
               const std::string& who) {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      b += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      throw failure(ncclRemoteError, who + ": " + errno_text("send"));
    pollfd q{fd, POLLOUT, 0};
    if (steady::now() >= deadline) throw failure(ncclRemoteError, who + " took no data in time");
    (void)poll(&q, 1, ms_until(deadline, 100));
  }
}

void read_all(int fd, void* p, std::size_t n, steady::time_point deadline, const std::string& who,
              const std::atomic<bool>* stop) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = recv(fd, b, n, MSG_DONTWAIT);
    if (r > 0) {
      b += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) throw failure(ncclRemoteError, who + " closed the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      throw failure(ncclRemoteError, who + ": " + errno_text("recv"));
    pollfd q{fd, POLLIN, 0};
    if (stop != nullptr && stop->load())
      throw failure(ncclInvalidUsage, "the communicator was aborted");
    if (steady::now() >= deadline) throw failure(ncclRemoteError, who + " sent nothing in time");
    (void)poll(&q, 1, ms_until(deadline, 100));
  }
}

int connect_to(std::uint32_t addr, std::uint16_t port, steady::time_point deadline,
               const std::string& who, const std::atomic<bool>* stop) {
  std::string last = "no attempt";
  while (steady::now() < deadline && !(stop && stop->load())) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw failure(ncclSystemError, errno_text("socket"));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = addr;
    a.sin_port = port;
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd q{fd, POLLOUT, 0};
      if (poll(&q, 1, ms_until(deadline, 2000)) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      set_socket_options(fd);
      return fd;
    }
    last = errno_text("connect");
    close_fd(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_until(deadline, 100)));
  }
  if (stop && stop->load()) throw failure(ncclInvalidUsage, "the communicator was aborted");
  char text[INET_ADDRSTRLEN] = "?";
  (void)inet_ntop(AF_INET, &addr, text, sizeof text);
  throw failure(ncclRemoteError, "could not connect to " + who + " at " + text + ":" +
                                     std::to_string(ntohs(port)) + " within " +
                                     std::to_string(static_cast<int>(timeout_s())) +
                                     " s (last: " + last + ")");
}

void send_handshake(int fd, std::uint64_t comm_id, int from, steady::time_point deadline) {
  hello h{};
  std::memcpy(h.tag, hello_tag, sizeof h.tag);
  h.comm_id = comm_id;
  h.from = from;
  write_all(fd, &h, sizeof h, deadline, "the connecting peer");
}

int accept_from(std::uint64_t comm_id, int from, steady::time_point deadline,
                const std::string& who, const std::atomic<bool>* stop) {
  lobby& l = the_lobby();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(l.mu);
      if (l.fd < 0) open_listener(l);
      if (auto it = l.parked.find({comm_id, from}); it != l.parked.end()) {
        const int fd = it->second;
        l.parked.erase(it);
        return fd;
      }
      if (steady::now() >= deadline)
        throw failure(ncclRemoteError, who + " did not connect within " +
                                           std::to_string(static_cast<int>(timeout_s())) +
                                           " s (dead, hung, or not in this communicator)");
      if (stop && stop->load()) throw failure(ncclInvalidUsage, "the communicator was aborted");
      accept_one(l, ms_until(deadline, 50));
    }
    std::this_thread::yield();
  }
}

// ---- the exchange engine -----------------------------------------------------------------------
namespace {

struct engine {
  ncclComm& c;
  std::vector<transfer>& ts;
  const char* op;
  std::uint64_t seq;
  std::vector<frame> headers;            // per transfer: what it sends, or what arrived
  std::vector<steady::time_point> last;  // per peer: when it last moved a byte

  frame expected(const transfer& t) const {
    frame f;
    f.seq = seq;
    f.bytes = t.bytes;
    std::strncpy(f.op, op, sizeof f.op - 1);
    return f;
  }
  // The first unfinished transfer to (send) or from (recv) each peer: messages go in order.
  std::vector<int> active(bool send) const {
    std::vector<int> a(c.peers.size(), -1);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const transfer& t = ts[i];
      if (t.send == send && t.done < message_size(t.bytes) && a[t.peer] < 0)
        a[t.peer] = static_cast<int>(i);
    }
    return a;
  }
  [[noreturn]] void peer_gave_up(int peer, const frame& f) {
    std::string why(std::min<std::uint64_t>(f.bytes, 4096), '\0');
    try {
      read_all(c.peers[peer].fd, why.data(), why.size(), steady::now() + std::chrono::seconds(2),
               describe_rank(c.peers, peer));
    } catch (const failure&) {
      why = "(its reason did not arrive)";
    }
    throw failure(ncclRemoteError, describe_rank(c.peers, peer) + " gave up: " + why);
  }
  void check_header(int i) {
    const transfer& t = ts[i];
    const frame& got = headers[i];
    if (got.magic != frame_magic)
      throw failure(ncclInternalError, "garbled message from " + describe_rank(c.peers, t.peer));
    if (got.kind == frame_abort) peer_gave_up(t.peer, got);
    const frame want = expected(t);
    const bool same_op = std::strncmp(got.op, want.op, sizeof got.op) == 0;
    const bool same_seq = seq == any_seq || got.seq == want.seq;
    if (same_op && same_seq && got.bytes == want.bytes) return;
    throw failure(ncclInvalidUsage,
                  describe_rank(c.peers, t.peer) + " sent operation " + std::to_string(got.seq) +
                      " (" + std::string(got.op, strnlen(got.op, sizeof got.op)) + ", " +
                      std::to_string(got.bytes) + " bytes) where rank " + std::to_string(c.rank) +
                      " expects operation " + std::to_string(want.seq) + " (" + op + ", " +
                      std::to_string(want.bytes) +
                      " bytes): the ranks called different "
                      "collectives or counts");
  }
  // The trailer of a message from `peer` said it was aborted: its reason follows.
  [[noreturn]] void aborted_mid_message(int peer) {
    frame f;
    try {
      read_all(c.peers[peer].fd, &f, sizeof f, steady::now() + std::chrono::seconds(2),
               describe_rank(c.peers, peer));
    } catch (const failure&) {
      f.magic = 0;
    }
    if (f.magic == frame_magic && f.kind == frame_abort) peer_gave_up(peer, f);
    throw failure(ncclRemoteError, describe_rank(c.peers, peer) + " gave up in " + op +
                                       " (its reason did not arrive)");
  }
  // A send to `peer` found its connection closed. A peer that gave up (another rank died, say)
  // sent its reason before closing, and it may wait unread on the receiving side: reading it names
  // the rank that failed first, where blaming the peer would name only the last link of the
  // cascade (seen: rank 3 naming rank 0, which had closed on rank 2's death). The reason follows
  // the message in flight from the peer, if any: the peer finished it (zeros, an "aborted"
  // trailer) before sending the reason, so the rest of that message is read past first. Briefly,
  // as all of it was sent before the close.
  void look_for_reason(int peer) {
    const int i = active(false)[peer];
    frame f;
    char* h = reinterpret_cast<char*>(&f);
    std::size_t have = 0, rest_of_message = 0;
    if (i >= 0 && ts[i].done >= sizeof(frame)) {
      rest_of_message = message_size(ts[i].bytes) - ts[i].done;
    } else if (i >= 0) {
      have = ts[i].done;
      std::memcpy(h, &headers[i], have);
    }
    const auto deadline = steady::now() + std::chrono::milliseconds(500);
    const std::string who = describe_rank(c.peers, peer);
    try {
      std::vector<char> discard(std::min<std::size_t>(rest_of_message, std::size_t{1} << 16));
      while (rest_of_message > 0) {
        const std::size_t n = std::min(discard.size(), rest_of_message);
        read_all(c.peers[peer].fd, discard.data(), n, deadline, who);
        rest_of_message -= n;
      }
      read_all(c.peers[peer].fd, h + have, sizeof(frame) - have, deadline, who);
    } catch (const failure&) {
      return;  // nothing more arrived: the peer is blamed as it closed
    }
    if (f.magic == frame_magic && f.kind == frame_abort) peer_gave_up(peer, f);
  }
  // Where the next bytes of transfer t go (or come from), and how many are left in that part: the
  // header, the data, the trailer.
  std::pair<char*, std::size_t> region(transfer& t, int i) {
    const std::size_t data_end = sizeof(frame) + t.bytes;
    if (t.done < sizeof(frame))
      return {reinterpret_cast<char*>(&headers[i]) + t.done, sizeof(frame) - t.done};
    if (t.done < data_end)
      return {reinterpret_cast<char*>(t.data) + (t.done - sizeof(frame)), data_end - t.done};
    static const std::uint64_t ok = trailer_ok;
    char* tail = t.send ? const_cast<char*>(reinterpret_cast<const char*>(&ok))
                        : reinterpret_cast<char*>(&t.tail);
    return {tail + (t.done - data_end), message_size(t.bytes) - t.done};
  }
  // Moves what the socket takes or has now; false when it would block.
  bool step(int i) {
    transfer& t = ts[i];
    peer& p = c.peers[t.peer];
    const std::size_t before = t.done;
    const auto [at, want] = region(t, i);
    const ssize_t n = t.send ? send(p.fd, at, want, MSG_NOSIGNAL | MSG_DONTWAIT)
                             : recv(p.fd, at, want, MSG_DONTWAIT);
    if ((n == 0 && !t.send) || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
      if (t.send) look_for_reason(t.peer);
      throw failure(ncclRemoteError, describe_rank(c.peers, t.peer) + " closed the connection in " +
                                         op + ": its process died or it aborted its communicator");
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
      throw failure(ncclRemoteError, describe_rank(c.peers, t.peer) + " in " + op + ": " +
                                         errno_text(t.send ? "send" : "recv"));
    }
    t.done += static_cast<std::size_t>(n);
    last[t.peer] = steady::now();
    const std::size_t size = message_size(t.bytes);
    if (t.send) {
      if (before == 0) std::memcpy(p.msg_header.data(), &headers[i], sizeof(frame));
      p.msg_done = t.done < size ? t.done : 0;
      p.msg_size = t.done < size ? size : 0;
    }
    if (!t.send && before < sizeof(frame) && t.done == sizeof(frame)) check_header(i);
    if (!t.send && t.done == size && t.tail != trailer_ok) {
      if (t.tail == trailer_aborted) aborted_mid_message(t.peer);
      throw failure(ncclInternalError, "garbled message from " + describe_rank(c.peers, t.peer));
    }
    return true;
  }
  void check_stalled() {
    const auto now = steady::now();
    const auto limit = std::chrono::duration<double>(timeout_s());
    std::string late;
    for (bool send : {false, true}) {
      for (int i : active(send)) {
        if (i < 0 || now - last[ts[i].peer] < limit) continue;
        if (!late.empty()) late += ", ";
        late += describe_rank(c.peers, ts[i].peer) + (send ? " (took no data)" : " (sent nothing)");
      }
    }
    if (!late.empty())
      throw failure(ncclRemoteError, "no progress for " +
                                         std::to_string(static_cast<int>(timeout_s())) + " s in " +
                                         op + " (operation " + std::to_string(seq) + ") with " +
                                         late + ": dead, hung, or in another collective");
  }
  bool finished() const {
    for (const transfer& t : ts) {
      if (t.done < message_size(t.bytes)) return false;
    }
    return true;
  }
  void run() {
    headers.resize(ts.size());
    for (std::size_t i = 0; i < ts.size(); ++i) {
      if (ts[i].send) headers[i] = expected(ts[i]);
    }
    last.assign(c.peers.size(), steady::now());
    while (!finished()) {
      if (c.aborted.load()) throw failure(ncclInvalidUsage, "the communicator was aborted");
      bool moved = false;
      const std::vector<int> sends = active(true), recvs = active(false);
      std::vector<pollfd> fds;
      for (std::size_t p = 0; p < c.peers.size(); ++p) {
        short ev = 0;
        if (sends[p] >= 0) ev |= POLLOUT;
        if (recvs[p] >= 0) ev |= POLLIN;
        if (ev == 0) continue;
        if (c.peers[p].fd < 0)
          throw failure(ncclRemoteError,
                        "no connection to " + describe_rank(c.peers, static_cast<int>(p)));
        if (sends[p] >= 0) moved |= step(sends[p]);
        if (recvs[p] >= 0) moved |= step(recvs[p]);
        fds.push_back({c.peers[p].fd, ev, 0});
      }
      if (!moved && !fds.empty()) {
        (void)poll(fds.data(), fds.size(), 100);
        check_stalled();
      }
    }
  }
};

}  // namespace

void exchange(ncclComm& c, std::vector<transfer>& ts, const char* op, std::uint64_t seq) {
  for (transfer& t : ts) t.done = 0;
  engine{c, ts, op, seq, {}, {}}.run();
}

namespace {

// Sends the rest of the message in flight to `p`: its header, zeros for its data, the "aborted"
// trailer (or the rest of the "complete" one, when only that was left: the data then went whole).
void finish_in_flight(peer& p, steady::time_point deadline, const std::string& who) {
  const std::size_t size = p.msg_size, data_end = size - sizeof(std::uint64_t);
  std::size_t done = p.msg_done;
  if (done < sizeof(frame)) {
    write_all(p.fd, p.msg_header.data() + done, sizeof(frame) - done, deadline, who);
    done = sizeof(frame);
  }
  const std::vector<char> zeros(std::size_t{1} << 16);
  while (done < data_end) {
    const std::size_t n = std::min(zeros.size(), data_end - done);
    write_all(p.fd, zeros.data(), n, deadline, who);
    done += n;
  }
  const std::uint64_t tail = done == data_end ? trailer_aborted : trailer_ok;
  const std::size_t from = done - data_end;
  write_all(p.fd, reinterpret_cast<const char*>(&tail) + from, sizeof tail - from, deadline, who);
  p.msg_done = p.msg_size = 0;
}

}  // namespace

void give_up(ncclComm& c, const std::string& why) {
  frame f;
  f.kind = frame_abort;
  f.bytes = std::min<std::size_t>(why.size(), 4096);
  // Bounded, best effort: a peer that reads nothing (dead, or stuck elsewhere) costs at most this.
  const auto deadline = steady::now() + std::chrono::seconds(2);
  for (std::size_t r = 0; r < c.peers.size(); ++r) {
    peer& p = c.peers[r];
    if (p.fd < 0) continue;
    try {
      const std::string who = describe_rank(c.peers, static_cast<int>(r));
      if (p.msg_size > 0) finish_in_flight(p, deadline, who);
      write_all(p.fd, &f, sizeof f, deadline, who);
      write_all(p.fd, why.data(), f.bytes, deadline, who);
    } catch (const failure&) {
      // the peer closed or took nothing: it sees the close
    }
    close_fd(p.fd);
  }
}

}  // namespace simnccl
