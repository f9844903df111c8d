#include "shared/storage_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "infrabench/communicator.h"
#include "shared/storage_scratch.h"
#include "storage/target.h"

namespace infrabench::storage_bench {
namespace {

namespace fs = std::filesystem;

std::string random_token() {
  std::random_device rd;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::to_string(rd()) + "-" + std::to_string(rd()) + "-" + std::to_string(now) + "-" +
         std::to_string(getpid());
}

// Rank 0's probe: a directory of this run's own under --scratch holding a token file. Returns
// "path\ntoken", or "" when it cannot be made (each host then makes its own data, and the
// reason, if it matters, surfaces there).
std::string make_probe(const std::string& parent, std::unique_ptr<ks::run_directory>& dir) {
  try {
    dir = std::make_unique<ks::run_directory>(parent);
    const std::string token = random_token();
    const ks::unique_fd fd = dir->create_file("shared-probe");
    if (write(fd.get(), token.data(), token.size()) != static_cast<ssize_t>(token.size())) {
      return {};
    }
    return dir->path() + "\n" + token;
  } catch (const std::exception&) {
    return {};
  }
}

// Does this host see rank 0's probe (the same token at the same path)?
bool sees_probe(const std::string& probe) {
  const auto nl = probe.find('\n');
  if (nl == std::string::npos) return false;
  const std::string token = probe.substr(nl + 1);
  try {
    const ks::unique_fd fd = ks::open_read_only(probe.substr(0, nl) + "/shared-probe", false);
    std::string got(token.size() + 1, '\0');
    const ssize_t n = read(fd.get(), got.data(), got.size());
    return n == static_cast<ssize_t>(token.size()) && got.compare(0, token.size(), token) == 0;
  } catch (const std::exception&) {
    return false;  // not there: another file system
  }
}

}  // namespace

cluster_view view_of(const communicator& comm) {
  cluster_view v;
  v.multi = comm.size() > 1;
  if (!v.multi) return v;
  const auto names = comm.hostnames();
  std::vector<std::string> order;
  for (const auto& h : names) {
    if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
  }
  v.hosts = static_cast<std::uint32_t>(order.size());
  v.host = static_cast<std::uint32_t>(std::find(order.begin(), order.end(), comm.hostname()) -
                                      order.begin());
  v.measures = comm.rank() == comm.node_leader();
  // The same words the runner uses for node-local benchmarks.
  v.not_measuring = "node-local: measured once per host, on " + comm.hostname() + " by rank " +
                    std::to_string(comm.node_leader());
  return v;
}

std::string to_string(scratch_sharing s) {
  switch (s) {
    case scratch_sharing::single_host:
      return "single host";
    case scratch_sharing::shared:
      return "shared by every host";
    case scratch_sharing::node_local:
      return "node-local";
  }
  return "?";
}

scratch_sharing sharing_of_scratch(infrabench::state& st) {
  const cluster_view view = view_of(st.comm());
  if (view.hosts < 2) return scratch_sharing::single_host;
  // Every rank keeps the same answers (they all take part in every probe), so every rank makes
  // the same decision to probe or not.
  static std::mutex mu;
  static std::map<std::string, scratch_sharing> known;
  const std::string parent = fs::absolute(st.option("scratch")).lexically_normal().string();
  {
    std::lock_guard lock(mu);
    if (auto it = known.find(parent); it != known.end()) return it->second;
  }
  communicator& comm = st.comm();
  std::unique_ptr<ks::run_directory> probe_dir;
  const std::string probe = comm.broadcast_string(
      comm.rank() == 0 ? make_probe(st.option("scratch"), probe_dir) : std::string());
  // A measuring rank on another host that does not see it: not shared.
  const bool other_host = view.host != 0 && view.measures;
  std::vector<double> missing = {probe.empty() || (other_host && !sees_probe(probe)) ? 1.0 : 0.0};
  max_over_ranks(st, missing);
  const scratch_sharing answer =
      missing[0] > 0 ? scratch_sharing::node_local : scratch_sharing::shared;
  probe_dir.reset();  // every host has looked: rank 0 removes its probe
  std::lock_guard lock(mu);
  known[parent] = answer;
  return answer;
}

scratch_data agree_on_scratch(infrabench::state& st, const cluster_view& view,
                              scratch_sharing sharing, const std::function<scratch_data()>& make) {
  if (!view.multi) return make();
  const bool maker = sharing == scratch_sharing::shared ? st.comm().rank() == 0 : view.measures;
  scratch_data data;
  std::string error;
  if (maker) {
    try {
      data = make();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (const std::string first = first_problem(st, error); !first.empty()) {
    st.fail(error.empty() ? first : error);
  }
  if (sharing != scratch_sharing::shared) return data;
  const std::string shared =
      st.comm().broadcast_string(data.path + "\n" + std::to_string(data.seed));
  const auto nl = shared.find('\n');
  data.path = shared.substr(0, nl);
  data.seed = std::stoull(shared.substr(nl + 1));
  return data;
}

}  // namespace infrabench::storage_bench
