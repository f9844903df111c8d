// Communicators of the simulated NCCL. ncclGetUniqueId opens a bootstrap listener and serves it
// from a thread (as NCCL's root does): each rank joins with its own listener's port, its host and
// GPU; once all `nranks` joined, every rank gets the table of all (the address each was seen
// from) and the ranks connect to each other. A rank that never joins is named by number after
// SIMNCCL_TIMEOUT_S; a rank that joined but does not connect, by number, host and GPU.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "shim.h"

namespace simnccl {
namespace {

constexpr char id_tag[8] = {'S', 'N', 'C', 'C', 'L', 'i', 'd', '1'};
constexpr int max_addrs = 24;

struct id_layout {
  char tag[8];
  std::uint64_t nonce;
  std::uint16_t port;  // network order
  std::uint8_t count;
  std::uint8_t pad[5];
  std::uint32_t addrs[max_addrs];  // network order; non-loopback first
};
static_assert(sizeof(id_layout) <= sizeof(ncclUniqueId));

struct join {
  std::uint64_t nonce;
  std::int32_t nranks, rank, gpu;
  std::uint16_t port;
  char host[64];
};
struct entry {
  std::uint32_t addr;
  std::uint16_t port;
  std::int32_t gpu;
  char host[64];
};
struct reply {
  std::int32_t status;  // 0: the table follows; 1: a text of text_len bytes
  std::int32_t text_len;
};

std::vector<std::uint32_t> own_addresses() {
  std::vector<std::uint32_t> out, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      if ((i->ifa_flags & IFF_UP) == 0) continue;
      const auto a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
      ((i->ifa_flags & IFF_LOOPBACK) ? loopback : out).push_back(a);
    }
    freeifaddrs(list);
  }
  out.insert(out.end(), loopback.begin(), loopback.end());
  if (out.empty()) out.push_back(htonl(INADDR_LOOPBACK));
  if (out.size() > max_addrs) out.resize(max_addrs);
  return out;
}

// What the root tells the joined ranks when not all came: "ranks 3, 7 of 16 never joined ...".
std::string missing_text(const std::vector<int>& fds, int nranks) {
  std::string list;
  int missing = 0;
  for (int r = 0; r < nranks; ++r) {
    if (fds[r] >= 0) continue;
    if (missing++ < 16) list += (list.empty() ? "" : ", ") + std::to_string(r);
  }
  return (missing == 1 ? "rank " : "ranks ") + list + (missing > 16 ? ", ..." : "") + " of " +
         std::to_string(nranks) + " never joined the communicator within " +
         std::to_string(static_cast<int>(timeout_s())) +
         " s (dead before init, hung, or never called ncclCommInitRank)";
}

void answer_all(std::vector<int>& fds, const std::vector<entry>& table, const std::string& text) {
  const auto deadline = steady::now() + std::chrono::seconds(5);
  reply head{text.empty() ? 0 : 1, static_cast<std::int32_t>(text.size())};
  for (int& fd : fds) {
    if (fd < 0) continue;
    try {
      write_all(fd, &head, sizeof head, deadline, "a joining rank");
      if (text.empty())
        write_all(fd, table.data(), table.size() * sizeof(entry), deadline, "a joining rank");
      else
        write_all(fd, text.data(), text.size(), deadline, "a joining rank");
    } catch (const failure&) {
    }
    close_fd(fd);
  }
}

// The root's thread: collects the joins of one communicator, answers, ends. Bounded: it ends
// SIMNCCL_TIMEOUT_S after the first join (telling who is missing), or 10 x that without one.
void serve_root(int listener, std::uint64_t nonce) {
  const auto started = steady::now();
  const auto limit =
      std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(timeout_s()));
  steady::time_point deadline = started + 10 * limit;
  std::vector<int> fds;
  std::vector<entry> table;
  int joined = 0;
  while (steady::now() < deadline && (fds.empty() || joined < static_cast<int>(fds.size()))) {
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    join j{};
    sockaddr_in from{};
    socklen_t len = sizeof from;
    try {
      read_all(fd, &j, sizeof j, steady::now() + std::chrono::seconds(5), "a joining rank");
      (void)getpeername(fd, reinterpret_cast<sockaddr*>(&from), &len);
    } catch (const failure&) {
      close_fd(fd);
      continue;
    }
    const bool first = fds.empty();
    if (j.nonce != nonce || j.nranks <= 0 || j.rank < 0 || j.rank >= j.nranks ||
        (!first && (j.nranks != static_cast<int>(fds.size()) || fds[j.rank] >= 0))) {
      close_fd(fd);  // not this communicator's, or a second rank j: it fails on its own deadline
      continue;
    }
    if (first) {
      fds.assign(j.nranks, -1);
      table.resize(j.nranks);
      deadline = steady::now() + limit;
    }
    fds[j.rank] = fd;
    entry& e = table[j.rank];
    e.addr = from.sin_addr.s_addr;
    e.port = j.port;
    e.gpu = j.gpu;
    std::memcpy(e.host, j.host, sizeof e.host);
    ++joined;
  }
  const bool all = !fds.empty() && joined == static_cast<int>(fds.size());
  answer_all(fds, table, all ? std::string() : missing_text(fds, static_cast<int>(fds.size())));
  close_fd(listener);
}

// Connects `c` to every other rank: to those above it, then accepts those below.
void connect_mesh(ncclComm& c, steady::time_point deadline) {
  for (int j = c.rank + 1; j < c.nranks; ++j) {
    peer& p = c.peers[j];
    p.fd = connect_to(p.addr, p.port, deadline, describe_rank(c.peers, j), &c.aborted);
    send_handshake(p.fd, c.id, c.rank, deadline);
  }
  for (int j = 0; j < c.rank; ++j)
    c.peers[j].fd = accept_from(c.id, j, deadline, describe_rank(c.peers, j), &c.aborted);
}

int join_root(const id_layout& id, const std::atomic<bool>* stop, steady::time_point deadline) {
  std::string last;
  while (steady::now() < deadline) {
    for (int i = 0; i < id.count; ++i) {
      const auto attempt = std::min(deadline, steady::now() + std::chrono::seconds(1));
      try {
        return connect_to(id.addrs[i], id.port, attempt, "the root (the rank that made the id)",
                          stop);
      } catch (const failure& f) {
        if (stop && stop->load()) throw;
        last = f.what();
      }
    }
  }
  throw failure(ncclRemoteError, last.empty() ? "could not reach the root" : last);
}

}  // namespace

void make_unique_id(ncclUniqueId* out) {
  id_layout id{};
  std::memcpy(id.tag, id_tag, sizeof id.tag);
  std::random_device rd;
  id.nonce = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
             static_cast<std::uint64_t>(getpid()) ^
             static_cast<std::uint64_t>(steady::now().time_since_epoch().count());
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1024) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) (void)close(fd);
    throw failure(ncclSystemError, std::string("bootstrap listener: ") + std::strerror(errno));
  }
  id.port = a.sin_port;
  const auto addrs = own_addresses();
  id.count = static_cast<std::uint8_t>(addrs.size());
  std::copy(addrs.begin(), addrs.end(), id.addrs);
  std::thread(serve_root, fd, id.nonce).detach();
  std::memset(out, 0, sizeof *out);
  std::memcpy(out, &id, sizeof id);
}

void init_comm(ncclComm& c, const ncclUniqueId& raw) {
  id_layout id{};
  std::memcpy(&id, &raw, sizeof id);
  if (std::memcmp(id.tag, id_tag, sizeof id.tag) != 0 || id.count == 0)
    throw failure(ncclInvalidArgument,
                  "the ncclUniqueId was not made by the simulated NCCL's "
                  "ncclGetUniqueId (a real NCCL's id, or garbage)");
  if (c.gpu < 0) c.gpu = current_gpu();
  fault_at_init(c);
  const auto limit =
      std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(timeout_s()));
  join j{};
  j.nonce = id.nonce;
  j.nranks = c.nranks;
  j.rank = c.rank;
  j.gpu = c.gpu;
  j.port = listener_port();
  std::strncpy(j.host, host_name().c_str(), sizeof j.host - 1);
  int fd = join_root(id, &c.aborted, steady::now() + limit);
  reply head{};
  std::vector<entry> table(c.nranks);
  try {
    write_all(fd, &j, sizeof j, steady::now() + limit, "the root");
    // The root answers within the limit after the first rank joined, which was no later than us.
    const auto answer = steady::now() + limit + std::chrono::seconds(5);
    read_all(fd, &head, sizeof head, answer, "the root (the rank that made the id)", &c.aborted);
    if (head.status != 0) {
      std::string text(std::clamp(head.text_len, 0, 4096), '\0');
      read_all(fd, text.data(), text.size(), answer, "the root");
      throw failure(ncclRemoteError, text);
    }
    read_all(fd, table.data(), table.size() * sizeof(entry), answer, "the root");
  } catch (...) {
    close_fd(fd);
    throw;
  }
  close_fd(fd);
  c.id = id.nonce;
  c.peers.resize(c.nranks);
  for (int r = 0; r < c.nranks; ++r) {
    c.peers[r] = {-1,
                  std::string(table[r].host, strnlen(table[r].host, sizeof table[r].host)),
                  table[r].gpu,
                  table[r].addr,
                  table[r].port,
                  false};
  }
  connect_mesh(c, steady::now() + limit);
}

void split_comm(ncclComm& parent, int color, int key, ncclComm& child) {
  const int n = parent.nranks;
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(n));
  all[2 * parent.rank] = color;
  all[2 * parent.rank + 1] = key;
  std::vector<transfer> ts;
  for (int p = 0; p < n; ++p) {
    if (p == parent.rank) continue;
    ts.push_back({p, true, reinterpret_cast<std::byte*>(&all[2 * parent.rank]), 8});
    ts.push_back({p, false, reinterpret_cast<std::byte*>(&all[2 * p]), 8});
  }
  exchange(parent, ts, "ncclCommSplit", parent.ops++);
  const std::uint64_t split_number = ++parent.splits;
  child.nranks = 0;
  if (color == NCCL_SPLIT_NOCOLOR) return;
  std::vector<int> members;
  for (int r = 0; r < n; ++r) {
    if (all[2 * r] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  child.id = parent.id * 0x9e3779b97f4a7c15ull + split_number * 0xbf58476d1ce4e5b9ull +
             static_cast<std::uint64_t>(static_cast<std::uint32_t>(color));
  child.nranks = static_cast<int>(members.size());
  child.gpu = parent.gpu;
  for (int i = 0; i < child.nranks; ++i) {
    peer p = parent.peers[members[i]];
    p.fd = -1;
    p.msg_done = p.msg_size = 0;
    child.peers.push_back(p);
    if (members[i] == parent.rank) child.rank = i;
  }
  const auto limit =
      std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(timeout_s()));
  connect_mesh(child, steady::now() + limit);
}

}  // namespace simnccl
