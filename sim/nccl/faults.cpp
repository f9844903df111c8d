// Settings and faults on demand of the simulated NCCL. Faults (SIMNCCL_FAULT, comma-separated):
//   dead_before_init@K[:exit]    rank K's NCCL never joins its first communicator: the others are
//                                told "rank K ... never joined" (the root's bound); with :exit the
//                                process kills itself (SIGKILL) instead, as a crash would
//   dead_after_init@K[:after=N][:exit]  rank K's NCCL dies at its collective N+1 (N = 0: the
//                                first): its connections close without a word, so the peers see
//                                "rank K (host, GPU) closed the connection"; :exit kills the
//                                process
//   hang@K[:after=N][:op=ncclX]  rank K's operation N+1 (of ncclX only) never completes: it sends
//   nothing and
//                                returns only when aborted (or after 3 x SIMNCCL_TIMEOUT_S)
// K is the rank this process has in its first communicator. The node file's faults (read by the
// simulated CUDA runtime, asked through infrabench_sim_fault; /work/sim-interface.md) add
//   {"kind":"nccl_peer_dies","rank":K,"when":"before_init"|"after_init","after_calls":N,"exit":true}
//   {"kind":"nccl_hang","rank":K,"op":"AllReduce","after_calls":N}
// where the rank is the world rank the runtime names (infrabench_sim_rank) and "op" counts only
// that collective's calls.
#include <dlfcn.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "shim.h"

namespace simnccl {
namespace {

struct fault {
  std::string kind;
  int rank = -1;
  long after = 0;
  bool exit = false;
  std::string op;  // "" = every operation counts
  std::string text;
};

// The value after "key": in a flat JSON object's text: a string's contents or a bare word.
std::string json_value(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return {};
  at = json.find(':', at);
  if (at == std::string::npos) return {};
  at = json.find_first_not_of(" \t", at + 1);
  if (at == std::string::npos) return {};
  if (json[at] == '"') {
    const auto end = json.find('"', at + 1);
    return end == std::string::npos ? std::string() : json.substr(at + 1, end - at - 1);
  }
  const auto end = json.find_first_of(",} \t\n", at);
  return json.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The node file's NCCL faults for this rank, through the simulated CUDA runtime.
void add_node_faults(std::vector<fault>& out) {
  using query_t = int (*)(const char*, int, int, char*, std::size_t);
  using rank_t = int (*)();
  auto query = reinterpret_cast<query_t>(dlsym(RTLD_DEFAULT, "infrabench_sim_fault"));
  auto sim_rank = reinterpret_cast<rank_t>(dlsym(RTLD_DEFAULT, "infrabench_sim_rank"));
  if (query == nullptr || sim_rank == nullptr) return;
  const int rank = sim_rank();
  char text[2048] = {};
  for (const char* kind : {"nccl_peer_dies", "nccl_hang"}) {
    if (query(kind, -1, rank, text, sizeof text) != 1) continue;
    const std::string json(text);
    fault f;
    f.text = json;
    f.rank = -2;  // matched by the runtime: applies to this process
    f.after = std::atol(json_value(json, "after_calls").c_str());
    f.exit = json_value(json, "exit") == "true";
    const std::string op = json_value(json, "op");
    if (!op.empty()) f.op = op.rfind("nccl", 0) == 0 ? op : "nccl" + op;
    if (std::strcmp(kind, "nccl_hang") == 0)
      f.kind = "hang";
    else
      f.kind = json_value(json, "when") == "before_init" ? "dead_before_init" : "dead_after_init";
    out.push_back(f);
  }
}

std::vector<fault> parse_faults() {
  std::vector<fault> out;
  add_node_faults(out);
  const char* env = std::getenv("SIMNCCL_FAULT");
  if (env == nullptr) return out;
  std::stringstream all(env);
  std::string item;
  while (std::getline(all, item, ',')) {
    if (item.empty()) continue;
    fault f;
    f.text = item;
    std::stringstream parts(item);
    std::string part;
    std::getline(parts, part, ':');
    const auto at = part.find('@');
    f.kind = part.substr(0, at);
    if (at != std::string::npos) f.rank = std::atoi(part.c_str() + at + 1);
    while (std::getline(parts, part, ':')) {
      if (part == "exit") f.exit = true;
      if (part.rfind("after=", 0) == 0) f.after = std::atol(part.c_str() + 6);
      if (part.rfind("op=", 0) == 0) f.op = part.substr(3);
    }
    if (f.kind != "dead_before_init" && f.kind != "dead_after_init" && f.kind != "hang") {
      std::fprintf(stderr, "simnccl: unknown fault '%s' in SIMNCCL_FAULT (ignored)\n",
                   item.c_str());
      continue;
    }
    out.push_back(f);
  }
  return out;
}

const std::vector<fault>& faults() {
  static const std::vector<fault> f = parse_faults();
  return f;
}

std::atomic<int> process_rank{-1};  // this process' rank in its first communicator
std::mutex count_mu;
std::map<std::string, long> counts;  // operations so far, by name ("" = all)
std::atomic<bool> dead{false};       // a dead_after_init fault fired: every later call fails alike

const fault* find(const char* kind) {
  const int me = process_rank.load();
  for (const fault& f : faults()) {
    if (f.kind == kind && (f.rank == me || f.rank == -2)) return &f;
  }
  return nullptr;
}

[[noreturn]] void die_now(const fault& f) {
  std::fprintf(stderr, "simnccl: simulated fault %s: rank %d (host %s) kills itself\n",
               f.text.c_str(), process_rank.load(), host_name().c_str());
  std::fflush(stderr);
  (void)raise(SIGKILL);
  _exit(137);
}

// Waits until the communicator is aborted, or `limit` (so that even this wait is bounded).
void wait_aborted(ncclComm& c, double limit) {
  const auto until = steady::now() + std::chrono::duration_cast<steady::duration>(
                                         std::chrono::duration<double>(limit));
  while (!c.aborted.load() && steady::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

double timeout_s() {
  static const double t = [] {
    const char* e = std::getenv("SIMNCCL_TIMEOUT_S");
    const double v = e ? std::atof(e) : 0;
    return v > 0 ? v : 20.0;
  }();
  return t;
}

// The node file's "nccl_version" ("" if none): the file is the simulated runtime's
// (infrabench_sim_node); this flat key is read here.
std::string node_nccl_version() {
  using node_t = const char* (*)();
  auto node = reinterpret_cast<node_t>(dlsym(RTLD_DEFAULT, "infrabench_sim_node"));
  const char* path = node ? node() : nullptr;
  if (path == nullptr) return {};
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json_value(text.str(), "nccl_version");
}

int reported_version() {
  static const int v = [] {
    const char* e = std::getenv("SIMNCCL_VERSION");
    const std::string text = e != nullptr && *e != '\0' ? std::string(e) : node_nccl_version();
    if (text.empty()) return NCCL_VERSION_CODE;
    int major = 0, minor = 0, patch = 0;
    if (std::sscanf(text.c_str(), "%d.%d.%d", &major, &minor, &patch) >= 2)
      return NCCL_VERSION(major, minor, patch);
    return std::atoi(text.c_str());
  }();
  return v;
}

std::string host_name() {
  char h[256] = {};
  if (gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}

int current_gpu() {
  // The CUDA runtime the process has loaded (the simulated one, or the vendor's): never loads one.
  using get_device = int (*)(int*);
  void* fn = dlsym(RTLD_DEFAULT, "cudaGetDevice");
  if (fn == nullptr) {
    if (void* lib = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD))
      fn = dlsym(lib, "cudaGetDevice");
  }
  int d = -1;
  if (fn == nullptr || reinterpret_cast<get_device>(fn)(&d) != 0) return -1;
  return d;
}

std::string describe_rank(const std::vector<peer>& peers, int rank) {
  std::string s = "rank " + std::to_string(rank);
  if (rank < 0 || rank >= static_cast<int>(peers.size())) return s;
  const peer& p = peers[rank];
  return s + " (host " + (p.host.empty() ? "?" : p.host) + ", GPU " +
         (p.gpu < 0 ? "?" : std::to_string(p.gpu)) + ")";
}

void fault_at_init(ncclComm& c) {
  int unset = -1;
  (void)process_rank.compare_exchange_strong(unset, c.rank);
  if (c.rank != process_rank.load()) return;  // a later communicator: faults act on the first
  const fault* f = find("dead_before_init");
  if (f == nullptr) return;
  if (f->exit) die_now(*f);
  wait_aborted(c, timeout_s() + 5);
  throw failure(ncclSystemError, "simulated fault " + f->text + ": the NCCL of rank " +
                                     std::to_string(c.rank) + " (host " + host_name() + ", GPU " +
                                     std::to_string(c.gpu) + ") died before init");
}

void fault_at_collective(ncclComm& c, const char* op) {
  if (dead.load()) {
    for (peer& p : c.peers) close_fd(p.fd);
    throw failure(ncclSystemError, "simulated fault: the NCCL of this rank died earlier");
  }
  long all = 0, this_op = 0;
  {
    std::lock_guard<std::mutex> lock(count_mu);
    all = counts[""]++;
    this_op = counts[op]++;
  }
  for (const char* kind : {"dead_after_init", "hang"}) {
    const fault* f = find(kind);
    if (f == nullptr || (f->op.empty() ? all : f->op == op ? this_op : -1) != f->after) continue;
    const std::string where = "rank " + std::to_string(process_rank.load()) + " (host " +
                              host_name() + ", GPU " + std::to_string(c.gpu) + ")";
    if (f->kind == "hang") {
      c.async.store(ncclInProgress);  // as a kernel that never ends looks to a poller
      wait_aborted(c, 3 * timeout_s());
      throw failure(ncclSystemError,
                    "simulated fault " + f->text + ": " + op + " on " + where + " never completed");
    }
    if (f->exit) die_now(*f);
    dead.store(true);
    for (peer& p : c.peers) close_fd(p.fd);  // without a word, as a dead process
    throw failure(ncclSystemError,
                  "simulated fault " + f->text + ": the NCCL of " + where + " died in " + op);
  }
}

}  // namespace simnccl
