// MPI communicator: the MPI module (libinfrabench_mpi.so, built with INFRABENCH_WITH_MPI), loaded
// by make_communicator (comm_single.cpp) when a launcher started this process.
//
// Besides MPI, every rank keeps one TCP connection to rank 0, the liveness channel, served by a
// monitor thread that never calls MPI (MPI runs FUNNELED on the main thread). Over it ranks send
// heartbeats (what they are doing, how long their current operation has run), the results they
// finish (so a partial report after a failure still has them) and trouble reports. The monitor
// enforces the per-operation timeout: MPI itself has none, and over TCP a dead link makes a
// collective wait for many minutes. Because the channel is independent of MPI's state, rank 0 can
// tell which rank stopped answering (connection closed = the process died; no heartbeat = its
// host or link is gone) while the main thread is stuck inside MPI.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "infrabench/communicator.h"
#include "infrabench/modules/mpi_api.h"

namespace infrabench {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + ": " + text);
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

// Frames on the liveness channel: 1 byte type, 4 bytes length (host order: every rank runs the
// same binary on the same architecture), payload.
constexpr char frame_hello = 'H';      // rank -> 0: "token rank pid"
constexpr char frame_heartbeat = 'B';  // both ways: "op_ms\tactivity" (op_ms -1 = not in one)
constexpr char frame_trouble = 'T';    // rank -> 0: why this rank gives up
constexpr char frame_quit = 'Q';       // both ways: finished normally, a close is not a failure
constexpr char frame_ending = 'X';     // 0 -> ranks: rank 0 ends the job (and wrote the report)

// Heartbeat period; a rank silent this long is named as not answering when a failure is analysed;
// silent this long while rank 0 waits in an operation fails the job by itself.
constexpr double heartbeat_s = 0.25;
constexpr double silent_s = 2.0;
constexpr double silent_fail_s = 15.0;
// How long a rank that gave up waits for rank 0 to end the job before exiting by itself.
constexpr double trouble_grace_s = 10.0;

std::string encode(char type, const std::string& payload) {
  std::string f(5, '\0');
  f[0] = type;
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::memcpy(&f[1], &n, 4);
  return f + payload;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// IPv4 addresses of this host's interfaces that are up, loopback last.
std::vector<std::string> local_addresses() {
  std::vector<std::string> out;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      if (i->ifa_flags & IFF_LOOPBACK) continue;
      char buf[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf,
                  sizeof(buf));
      out.emplace_back(buf);
    }
    ::freeifaddrs(ifs);
  }
  out.emplace_back("127.0.0.1");
  return out;
}

// Connects with a time limit; -1 on failure.
int connect_with_timeout(const std::string& ip, int port, int timeout_ms) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) return -1;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, timeout_ms) == 1 ? 0 : -1;
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc == 0 && (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)) rc = -1;
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Blocking best-effort write with a deadline (used at set-up and shutdown only).
bool write_all(int fd, const std::string& data, int timeout_ms) {
  std::size_t off = 0;
  const double end = steady_s() + timeout_ms / 1000.0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const double left = end - steady_s();
    if (left <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
  }
  return true;
}

struct peer {
  int rank = -1;
  int fd = -1;
  std::string in, out;
  double last_seen = 0, closed_at = 0;
  bool quit = false, closed = false;
  std::string state;  // last heartbeat payload
};

class mpi_communicator final : public communicator {
 public:
  mpi_communicator(int* argc, char*** argv) {
    int provided = 0;
    // FUNNELED: only the main thread calls MPI; worker threads of benchmarks and the liveness
    // monitor never do.
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes so they become failed results instead of aborting the job.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    m_host.assign(name, static_cast<std::size_t>(len));
    MPI_Comm local;
    check_mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
    MPI_Comm_rank(local, &m_local_rank);
    // The host's leader (local rank 0) and the number of hosts.
    m_leader = m_rank;
    check_mpi(MPI_Bcast(&m_leader, 1, MPI_INT, 0, local), "MPI_Bcast");
    MPI_Comm_free(&local);
    int is_leader = m_local_rank == 0 ? 1 : 0;
    check_mpi(MPI_Allreduce(&is_leader, &m_nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    // Every rank's hostname, for messages that name a rank.
    std::vector<char> names(static_cast<std::size_t>(m_size) * MPI_MAX_PROCESSOR_NAME, '\0');
    check_mpi(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                            MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD),
              "MPI_Allgather");
    for (int r = 0; r < m_size; ++r)
      m_hostnames.emplace_back(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    if (m_size > 1) start_liveness();
  }

  ~mpi_communicator() override {
    if (m_monitor.joinable()) {
      // Every rank got here: from now on a closed connection is a goodbye, not a failure.
      try {
        // No operation timeout here: rank 0 may still be writing the report and running hooks
        // (a dead rank 0 shows up as silence all the same).
        op_scope scope(*this, 1e9);
        MPI_Barrier(MPI_COMM_WORLD);
      } catch (...) {
      }
      m_finishing.store(true);
      m_stop.store(true);
      m_monitor.join();
      for (auto& p : m_peers) {
        if (p.fd < 0) continue;
        write_all(p.fd, p.out + encode(frame_quit, ""), 200);
        ::close(p.fd);
      }
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  [[nodiscard]] int rank() const override { return m_rank; }
  [[nodiscard]] int size() const override { return m_size; }
  [[nodiscard]] int local_rank() const override { return m_local_rank; }
  [[nodiscard]] const std::string& hostname() const override { return m_host; }
  [[nodiscard]] std::string backend() const override { return "mpi"; }
  [[nodiscard]] int node_count() const override { return m_nodes; }
  [[nodiscard]] int node_leader() const override { return m_leader; }
  [[nodiscard]] std::vector<std::string> hostnames() const override { return m_hostnames; }

  void barrier() override {
    op_scope scope(*this);
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

  [[nodiscard]] std::vector<std::string> gather_strings(const std::string& mine) override {
    op_scope scope(*this);
    const int len = static_cast<int>(mine.size());
    std::vector<int> lens(m_rank == 0 ? static_cast<std::size_t>(m_size) : 0);
    check_mpi(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
              "MPI_Gather");
    std::vector<int> displs;
    std::string all;
    if (m_rank == 0) {
      displs.resize(lens.size());
      long long total = 0;
      for (std::size_t i = 0; i < lens.size(); ++i) {
        displs[i] = static_cast<int>(total);
        total += lens[i];
      }
      all.resize(static_cast<std::size_t>(total));
    }
    check_mpi(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
                          MPI_CHAR, 0, MPI_COMM_WORLD),
              "MPI_Gatherv");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < lens.size(); ++i) {
      out.push_back(
          all.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(lens[i])));
    }
    return out;
  }

  [[nodiscard]] std::string broadcast_string(const std::string& from_root) override {
    op_scope scope(*this);
    int len = static_cast<int>(from_root.size());
    check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    std::string out = m_rank == 0 ? from_root : std::string(static_cast<std::size_t>(len), '\0');
    check_mpi(MPI_Bcast(out.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return out;
  }

  [[nodiscard]] double allreduce_max(double v) override {
    op_scope scope(*this);
    double out = v;
    check_mpi(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }

  void allreduce_sum(float* data, std::size_t n) override {
    op_scope scope(*this);
    // MPI counts are int: large buffers go in pieces.
    constexpr std::size_t piece = std::size_t{1} << 30;
    for (std::size_t at = 0; at < n; at += piece) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(piece, n - at)),
                              MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                "MPI_Allreduce");
    }
  }

  void allreduce_max(double* data, std::size_t n) override {
    op_scope scope(*this);
    check_mpi(
        MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce");
  }

  bool sync_config(std::uint64_t key, double wait_limit_s, bool stop) override {
    // MAX of (key, -key) gives the largest and the smallest key: equal only when all agree. A
    // non-blocking allreduce tested with growing sleeps: waiting ranks stay off the CPU.
    const auto k = static_cast<long long>(key >> 1);
    long long in[3] = {k, -k, stop ? 1 : 0};
    long long out[3] = {0, 0, 0};
    op_scope scope(*this, wait_limit_s);
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(in, out, 3, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD, &req),
              "MPI_Iallreduce");
    int done = 0;
    auto pause = std::chrono::microseconds(20);
    while (true) {
      check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
    if (out[0] != -out[1]) {
      throw std::runtime_error(
          "ranks reached different configurations (different binaries or arguments?)");
    }
    return out[2] != 0;
  }

  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

  [[noreturn]] void fail_job(const std::string& why) override {
    const std::string text = who(m_rank) + ": " + why;
    if (!m_monitor.joinable()) run_failure_handler(text);
    if (m_rank == 0 || !m_live) {
      // The monitor thread owns the peer table the diagnosis reads: hand it the failure.
      {
        std::lock_guard lock(m_out_mu);
        m_local_trouble = text;
      }
      enqueue(-1, "");
    } else {
      enqueue(0, encode(frame_trouble, text));
    }
    // Rank 0 names us, writes the partial report and ends the job; if it cannot, exit anyway.
    std::this_thread::sleep_for(std::chrono::duration<double>(trouble_grace_s));
    std::cerr << "infrabench: error: " << text << " (rank 0 did not end the job)" << std::endl;
    std::_Exit(1);
  }

  void publish(char kind, const std::string& payload) override {
    if (m_rank == 0 || !m_live) return;
    enqueue(0, encode(kind, payload));
  }

  [[nodiscard]] std::vector<std::pair<int, std::string>> published(char kind) const override {
    std::lock_guard lock(m_pub_mu);
    std::vector<std::pair<int, std::string>> out;
    for (const auto& [k, r, text] : m_published) {
      if (k == kind) out.emplace_back(r, text);
    }
    return out;
  }

 private:
  [[nodiscard]] std::string who(int r) const {
    const std::string host = r >= 0 && r < static_cast<int>(m_hostnames.size())
                                 ? m_hostnames[static_cast<std::size_t>(r)]
                                 : "?";
    return "rank " + std::to_string(r) + " (host " + host + ")";
  }

  // ---- liveness channel set-up
  // --------------------------------------------------------------------
  void start_liveness() {
    std::string why_not = m_rank == 0 ? liveness_on_root() : liveness_to_root();
    int ok = why_not.empty() ? 1 : 0, all_ok = 0;
    check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    if (!all_ok) {
      for (auto& p : m_peers) ::close(p.fd);
      m_peers.clear();
      if (m_rank == 0) {
        std::cerr << "infrabench: warning: liveness channel unavailable ("
                  << (why_not.empty() ? "another rank could not connect" : why_not)
                  << "): operation timeouts still end the run, but cannot name the rank that "
                     "stopped answering"
                  << std::endl;
      }
    } else {
      m_live = true;
      for (auto& p : m_peers) set_nonblocking(p.fd);
    }
    if (::pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
    m_monitor = std::thread([this] { monitor_loop(); });
  }

  // Rank 0: listens on a free port, tells every rank the token, port and its addresses, and
  // accepts them. Returns why not (empty when every rank connected).
  std::string liveness_on_root() {
    const std::uint64_t token =
        std::random_device{}() * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(::getpid());
    std::string why_not;
    int port = 0;
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t alen = sizeof(addr);
    if (m_listen < 0 || ::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(m_listen, m_size) != 0 ||
        ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) {
      why_not = std::string("cannot listen: ") + std::strerror(errno);
    } else {
      port = ntohs(addr.sin_port);
    }
    std::string info = std::to_string(token) + " " + std::to_string(port);
    for (const auto& a : local_addresses()) info += " " + a;
    (void)broadcast_string(info);
    if (port != 0) accept_peers(token, why_not);
    if (m_listen >= 0) ::close(m_listen);
    return why_not;
  }

  // Other ranks: connects to rank 0 (the first of its addresses that answers) and says hello
  // with the token, its rank and pid. Returns why not (empty when connected).
  std::string liveness_to_root() {
    std::istringstream in(broadcast_string(""));
    std::uint64_t token = 0;
    int port = 0;
    in >> token >> port;
    std::string ip;
    int fd = -1;
    while (port != 0 && fd < 0 && in >> ip) fd = connect_with_timeout(ip, port, 2000);
    if (fd < 0) return "rank " + std::to_string(m_rank) + " cannot reach rank 0 over TCP";
    const std::string hello =
        std::to_string(token) + " " + std::to_string(m_rank) + " " + std::to_string(::getpid());
    if (!write_all(fd, encode(frame_hello, hello), 2000)) {
      ::close(fd);
      return "rank " + std::to_string(m_rank) + " cannot write to rank 0";
    }
    peer p;
    p.rank = 0;
    p.fd = fd;
    p.last_seen = steady_s();
    m_peers.push_back(std::move(p));
    return {};
  }

  // Reads what arrived from a connection not yet identified: its hello frame names its rank
  // (then p.rank > 0), or it is rejected (p.closed: wrong token, rank taken or out of range).
  void read_hello(peer& p, std::uint64_t token, std::vector<bool>& seen) {
    char buf[256];
    const ssize_t n = ::recv(p.fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      p.closed = true;
      return;
    }
    p.in.append(buf, static_cast<std::size_t>(n));
    if (p.in.size() < 5) return;
    std::uint32_t len = 0;
    std::memcpy(&len, &p.in[1], 4);
    if (p.in[0] != frame_hello || len > 200) {
      p.closed = true;
      return;
    }
    if (p.in.size() < 5 + len) return;
    std::istringstream hello(p.in.substr(5, len));
    p.in.erase(0, 5 + len);
    std::uint64_t t = 0;
    int r = -1;
    hello >> t >> r;
    if (t != token || r <= 0 || r >= m_size || seen[static_cast<std::size_t>(r)]) {
      p.closed = true;
      return;
    }
    seen[static_cast<std::size_t>(r)] = true;
    p.rank = r;
    p.last_seen = steady_s();
  }

  // Identified peers move to m_peers; rejected ones are closed. Returns how many moved.
  std::size_t settle_pending(std::vector<peer>& pending) {
    std::size_t moved = 0;
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->closed) {
        ::close(it->fd);
        it = pending.erase(it);
      } else if (it->rank > 0) {
        m_peers.push_back(std::move(*it));
        it = pending.erase(it);
        ++moved;
      } else {
        ++it;
      }
    }
    return moved;
  }

  void accept_peers(std::uint64_t token, std::string& why_not) {
    const double deadline = steady_s() + 20.0;
    std::vector<peer> pending;
    std::vector<bool> seen(static_cast<std::size_t>(m_size), false);
    std::size_t identified = 0;
    while (identified + 1 < static_cast<std::size_t>(m_size) && steady_s() < deadline) {
      std::vector<pollfd> fds{{m_listen, POLLIN, 0}};
      for (const auto& p : pending) fds.push_back({p.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          peer p;
          p.fd = fd;
          pending.push_back(std::move(p));
        }
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_hello(pending[i - 1], token, seen);
      }
      identified += settle_pending(pending);
    }
    for (auto& p : pending) ::close(p.fd);
    if (identified + 1 < static_cast<std::size_t>(m_size)) {
      why_not = std::to_string(m_size - 1 - static_cast<int>(identified)) +
                " rank(s) did not connect to rank 0 within 20 s";
    }
  }

  // ---- the monitor thread
  // -------------------------------------------------------------------------
  void enqueue(int to_rank, std::string frame) {
    {
      std::lock_guard lock(m_out_mu);
      m_outbox.emplace_back(to_rank, std::move(frame));
    }
    const char c = 1;
    [[maybe_unused]] const auto n = ::write(m_wake[1], &c, 1);
  }

  void monitor_loop() {
    double next_heartbeat = 0;
    while (!m_stop.load()) {
      std::vector<pollfd> fds{{m_wake[0], POLLIN, 0}};
      for (const auto& p : m_peers) {
        const short ev = static_cast<short>(p.closed ? 0 : POLLIN | (p.out.empty() ? 0 : POLLOUT));
        fds.push_back({p.closed ? -1 : p.fd, ev, 0});
      }
      ::poll(fds.data(), fds.size(), 50);
      if (fds[0].revents & POLLIN) {
        char buf[64];
        while (::read(m_wake[0], buf, sizeof(buf)) > 0) {
        }
      }
      {
        std::lock_guard lock(m_out_mu);
        for (auto& [to, frame] : m_outbox) {
          for (auto& p : m_peers) {
            if (p.rank == to) p.out += frame;
          }
        }
        m_outbox.clear();
      }
      const double now = steady_s();
      if (now >= next_heartbeat) {
        next_heartbeat = now + heartbeat_s;
        const auto start = op_started_ns();
        const long long op_ms = start ? (now_ns() - start) / 1000000 : -1;
        const std::string hb = encode(frame_heartbeat, std::to_string(op_ms) + "\t" + activity());
        for (auto& p : m_peers) p.out += hb;
      }
      for (std::size_t i = 0; i < m_peers.size(); ++i) {
        peer& p = m_peers[i];
        if (p.closed) continue;
        if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) read_from(p, now);
        if (!p.closed && !p.out.empty()) {
          const ssize_t n = ::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          if (n > 0) p.out.erase(0, static_cast<std::size_t>(n));
          // A dead link shows up as silence (no heartbeats), not here; a full buffer is not news.
          if (p.out.size() > (8u << 20)) p.out.clear();
        }
      }
      check(now);
    }
  }

  void read_from(peer& p, double now) {
    char buf[65536];
    while (true) {
      const ssize_t n = ::recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        p.in.append(buf, static_cast<std::size_t>(n));
        p.last_seen = now;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      p.closed = true;
      p.closed_at = now;
      break;
    }
    while (p.in.size() >= 5) {
      std::uint32_t len = 0;
      std::memcpy(&len, &p.in[1], 4);
      if (p.in.size() < 5 + len) break;
      const char type = p.in[0];
      std::string payload = p.in.substr(5, len);
      p.in.erase(0, 5 + len);
      if (type == frame_heartbeat) {
        p.state = std::move(payload);
      } else if (type == frame_quit) {
        p.quit = true;
      } else if (type == frame_ending) {
        // Rank 0 named the culprit and writes the report; its exit is not news. Exit quietly.
        m_root_ending.store(true);
        p.quit = true;
      } else if (type == frame_trouble) {
        if (!m_finishing.load()) m_trouble.push_back(std::move(payload));
      } else {
        std::lock_guard lock(m_pub_mu);
        m_published.emplace_back(type, p.rank, std::move(payload));
      }
    }
  }

  void announce_failure(const std::string& diagnosis) override {
    if (m_rank != 0 || !m_monitor.joinable() || std::this_thread::get_id() != m_monitor.get_id())
      return;
    for (auto& p : m_peers) {
      if (!p.closed) write_all(p.fd, p.out + encode(frame_ending, diagnosis), 100);
      p.out.clear();
    }
  }

  // What every other rank is doing, for the diagnosis (rank 0). Names the rank(s) that stopped
  // answering first: that is what the user needs to know.
  [[nodiscard]] std::string diagnose(const std::string& headline) const {
    const double now = steady_s();
    std::string dead, silent, alive;
    for (const auto& p : m_peers) {
      if (p.closed && !p.quit) {
        dead += (dead.empty() ? "" : ", ") + who(p.rank) +
                " (its process ended: connection to rank 0 closed)";
      } else if (now - p.last_seen > silent_s) {
        silent += (silent.empty() ? "" : ", ") + who(p.rank) + " (no heartbeat for " +
                  seconds_text(now - p.last_seen) + ")";
      } else {
        const auto tab = p.state.find('\t');
        const long long op_ms =
            tab == std::string::npos ? -1 : std::atoll(p.state.substr(0, tab).c_str());
        alive += (alive.empty() ? "" : "; ") + who(p.rank) + ": " +
                 (op_ms >= 0 ? "waiting in an operation for " + seconds_text(op_ms / 1000.0)
                             : std::string("not in an operation")) +
                 (tab == std::string::npos ? "" : " [" + p.state.substr(tab + 1) + "]");
      }
    }
    std::string out = headline;
    if (!dead.empty() || !silent.empty()) {
      out += "; stopped answering: " + dead + (dead.empty() || silent.empty() ? "" : ", ") + silent;
    } else if (!m_live) {
      out += "; which rank stopped answering is unknown (no liveness channel)";
    } else if (!alive.empty()) {
      out += "; every rank answers heartbeats: " + alive;
    }
    return out;
  }

  void check(double now) {
    if (m_finishing.load()) return;
    std::string local_trouble;
    {
      std::lock_guard lock(m_out_mu);
      local_trouble = m_local_trouble;
    }
    if (!local_trouble.empty())
      run_failure_handler(m_rank == 0 ? diagnose(local_trouble) : local_trouble);
    const auto start = op_started_ns();
    op_state op;
    op.running = start != 0;
    op.limit = op_limit();
    op.timed_out =
        op.running && op.limit > 0 && static_cast<double>(now_ns() - start) * 1e-9 > op.limit;
    op.where = activity().empty() ? "" : " during " + activity();
    if (m_rank == 0) {
      check_as_root(now, op);
    } else {
      check_as_other(now, op);
    }
  }

  // The operation in progress, as the monitor sees it.
  struct op_state {
    bool running = false;    // a communicating operation is in progress
    bool timed_out = false;  // it has run past --op-timeout
    double limit = 0;
    std::string where;  // " during <activity>"
  };

  // Rank 0 ends the job, naming the culprit: a rank's trouble report, a rank that ended, its own
  // operation past the limit, or a rank silent during an operation.
  void check_as_root(double now, const op_state& op) {
    if (!m_trouble.empty()) run_failure_handler(diagnose(m_trouble.front()));
    for (const auto& p : m_peers) {
      if (p.closed && !p.quit) {
        run_failure_handler(diagnose("a rank ended without finishing the run" + op.where));
      }
    }
    if (op.timed_out) {
      run_failure_handler(diagnose("an operation on rank 0 did not complete within " +
                                   seconds_text(op.limit) + " (--op-timeout)" + op.where));
    }
    if (!op.running) return;
    for (const auto& p : m_peers) {
      if (now - p.last_seen > silent_fail_s) {
        run_failure_handler(diagnose("a rank stopped answering" + op.where));
      }
    }
  }

  // Another rank: rank 0 decides; this rank tells it what went wrong here, and gives up on its
  // own only when rank 0 is gone, silent, or does not end the job in time.
  void check_as_other(double now, const op_state& op) {
    const peer* root = m_peers.empty() ? nullptr : &m_peers.front();
    if (m_root_ending.load()) {
      if (root && root->closed) std::_Exit(1);  // rank 0 is gone; the launcher ends the job
      return;
    }
    auto give_up = [&](const std::string& text) {
      std::cerr << "infrabench: error: " << who(m_rank) << ": " << text << std::endl;
      std::_Exit(1);
    };
    if (root && root->closed && !root->quit)
      give_up(who(0) + " ended without finishing the run" + op.where);
    if (root && op.running && now - root->last_seen > silent_fail_s)
      give_up(who(0) + " stopped answering" + op.where);
    if (op.timed_out && m_gave_up_at == 0) {
      m_gave_up_at = now;
      const std::string text = who(m_rank) + ": an operation did not complete within " +
                               seconds_text(op.limit) + " (--op-timeout)" + op.where;
      if (!root) give_up(text);
      for (auto& p : m_peers) p.out += encode(frame_trouble, text);
    }
    if (m_gave_up_at > 0 && now - m_gave_up_at > trouble_grace_s) {
      give_up("an operation did not complete within " + seconds_text(op.limit) + op.where +
              " and rank 0 did not end the job");
    }
  }

  int m_rank = 0, m_size = 1, m_local_rank = 0, m_leader = 0, m_nodes = 1;
  std::string m_host;
  std::vector<std::string> m_hostnames;

  bool m_live = false;  // liveness channel connected on every rank
  int m_listen = -1;
  int m_wake[2] = {-1, -1};
  std::vector<peer> m_peers;  // rank 0: every other rank; others: rank 0
  std::thread m_monitor;
  std::atomic<bool> m_stop{false}, m_finishing{false}, m_root_ending{false};
  std::vector<std::string> m_trouble;  // monitor thread only
  double m_gave_up_at = 0;             // monitor thread only
  std::mutex m_out_mu;
  std::vector<std::pair<int, std::string>> m_outbox;
  std::string m_local_trouble;
  mutable std::mutex m_pub_mu;
  std::vector<std::tuple<char, int, std::string>> m_published;
};

}  // namespace

}  // namespace infrabench

// ---- the module's entry (modules/include/infrabench/modules/mpi_api.h) ------------------------
namespace {

void* make_mpi_communicator(int* argc, char*** argv) {
  return new infrabench::mpi_communicator(argc, argv);
}

// The library's name and version, first line only (Open MPI appends ", package: ..., ident: ...,
// repo rev: ..., <date>"). MPI_Get_library_version is one of the few calls allowed before
// MPI_Init.
const char* library_version() {
  static const std::string version = [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return std::string();
    std::string lib(text, static_cast<std::size_t>(len > 0 ? len : 0));
    if (const auto cut = lib.find_first_of(",\n"); cut != std::string::npos) lib.resize(cut);
    return lib;
  }();
  return version.c_str();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const infrabench_module_header*
infrabench_module_entry(std::uint32_t abi_version) {
  if (abi_version != INFRABENCH_MPI_ABI_VERSION) return nullptr;
  static const infrabench_mpi_api api = {
      {INFRABENCH_MPI_ABI_VERSION, sizeof(infrabench_mpi_api), "mpi", library_version(), nullptr},
      &make_mpi_communicator,
      MPI_VERSION,
      MPI_SUBVERSION};
  return &api.header;
}
