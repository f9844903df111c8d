// Fleet acceptance: many node reports read, several at once, into one report of many hosts,
// holding per node only what a verdict reads (fleet.h).
#include "infrabench/reports/fleet.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "infrabench/error.h"
#include "infrabench/thread_pool.h"

namespace infrabench::reports {

namespace fs = std::filesystem;

namespace {

// The *.json files directly in `dir`, in name order (a job array's node0001.json, ...).
std::vector<std::string> json_files_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && it->is_regular_file(ec)) out.push_back(it->path());
  }
  if (ec) throw user_error("cannot list " + dir + ": " + ec.message());
  if (out.empty()) throw user_error(dir + " holds no report (*.json)");
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T>
void release(std::vector<T>& v) {
  std::vector<T>().swap(v);  // clear() keeps the capacity: the memory is the point
}

// The hosts a node report speaks for: its results' (those the reader skipped included) and its
// inventories'.
std::set<std::string> hosts_of(const report_view& r) {
  std::set<std::string> out = r.skipped.hosts;
  for (const auto& x : r.results) {
    if (!x.host.empty()) out.insert(x.host);
  }
  for (const auto& h : r.inventories) {
    if (!h.hostname.empty()) out.insert(h.hostname);
  }
  return out;
}

// A node report as a worker read and reduced it, with the hosts it spoke for before that.
struct node_read {
  report_view report;
  std::set<std::string> hosts;
};

// Reads one node report and keeps of it what `o` says: its results' hosts filled in (a result
// that names none is its report's node: an older single-node run), then what no rule judges and
// the raw samples dropped. Runs on a reading thread: touches nothing but its own report.
node_read read_node(const std::string& path, const fleet_options& o) {
  node_read n{o.read ? load_report(path, *o.read) : load_report(path), {}};
  report_view& r = n.report;
  n.hosts = hosts_of(r);
  const std::string own = r.primary_hostname().empty() ? r.label : r.primary_hostname();
  for (auto& x : r.results) {
    if (x.host.empty()) x.host = own;
  }
  if (o.keep_result) {
    std::erase_if(r.results, [&](const result_view& x) { return !o.keep_result(x); });
    r.results.shrink_to_fit();
  }
  if (o.keep == fleet_keep::summaries) keep_summaries(r);
  return n;
}

// What the fleet's report collects while the node reports are read.
struct fleet_builder {
  report_view fleet;
  std::map<std::string, std::string> host_file;  // host -> the report that has it
  std::map<std::string, std::size_t> notes;      // note -> how many reports carry it
  std::vector<std::string> interrupted;          // "a.json (signal 2 (SIGINT))"
  std::set<std::string> suites;
  std::size_t reports = 0;

  void claim_hosts(const std::set<std::string>& hosts, const std::string& path) {
    for (const auto& h : hosts) {
      const auto [it, fresh] = host_file.emplace(h, path);
      if (!fresh) {
        throw user_error("host " + h + " is in two reports, " + it->second + " and " + path +
                         ": give each node's report once");
      }
    }
  }

  void add(node_read n, const std::string& path) {
    claim_hosts(n.hosts, path);
    report_view& r = n.report;
    if (r.interrupted) interrupted.push_back(path + " (" + r.run_info.interrupted_reason + ")");
    if (r.run_info.suite) suites.insert(r.run_info.suite->name());
    if (reports++ == 0) first(r);  // moves its run settings: read above what is needed of them
    fleet.world_size += std::max(1, r.world_size);
    if (!r.started_utc.empty() && (fleet.started_utc.empty() || r.started_utc < fleet.started_utc))
      fleet.started_utc = r.started_utc;
    fleet.finished_utc = std::max(fleet.finished_utc, r.finished_utc);
    for (auto& note : r.notes) ++notes[note];
    for (auto& [name, meta] : r.benchmarks) fleet.benchmarks.try_emplace(name, std::move(meta));
    for (auto& x : r.results) fleet.results.push_back(std::move(x));
    for (auto& h : r.inventories) fleet.inventories.push_back(std::move(h));
  }

  // The first report gives what a fleet has one of: its schema, capabilities and run settings.
  void first(report_view& r) {
    fleet.schema_version = r.schema_version;
    fleet.caps = std::move(r.caps);
    fleet.run_info = std::move(r.run_info);
    fleet.world_size = 0;
  }

  report_view finish() && {
    fleet.label = std::to_string(reports) + " node report" + (reports == 1 ? "" : "s");
    for (const auto& [text, n] : notes) {
      fleet.notes.push_back(n == reports ? text
                                         : text + " (" + std::to_string(n) + " of " +
                                               std::to_string(reports) + " reports)");
    }
    if (suites.size() > 1) {
      std::string names;
      for (const auto& s : suites) names += (names.empty() ? "" : ", ") + s;
      fleet.notes.push_back("the node reports ran different suites (" + names +
                            "): a rule of one suite is judged only where it ran");
    }
    if (!interrupted.empty()) {
      fleet.interrupted = true;
      fleet.run_info.interrupted_reason =
          std::to_string(interrupted.size()) + " of " + std::to_string(reports) +
          " node reports are of interrupted runs, first " + interrupted.front();
    }
    return std::move(fleet);
  }
};

// Reads the node reports on several threads and adds each to the fleet in path order: the report
// at paths[i] is added once every earlier one is, by whichever thread delivers the last of them.
// At most one report per thread is held whole (while it is read), and at most `window` reduced
// ones wait for an earlier one. The first failure in path order (a report that cannot be read,
// `each`'s refusal, a host an earlier report named) stops it and is the one thrown; what other
// threads read after it is dropped. So the fleet and its errors are those of one at a time.
class ordered_reads {
 public:
  ordered_reads(const std::vector<std::string>& paths, const fleet_options& o, fleet_builder& b,
                std::size_t window)
      : m_paths(paths), m_o(o), m_builder(b), m_slots(window) {}

  // One reading thread's loop: it never throws (what fails is kept for its turn).
  void work() {
    while (const auto i = claim()) {
      slot s;
      try {
        s.node = read_node(m_paths[*i], m_o);
      } catch (...) {
        s.error = std::current_exception();
      }
      deliver(*i, std::move(s));
    }
  }

  // After every thread is joined: the first failure in path order, if any.
  void rethrow_failure() const {
    if (m_failure) std::rethrow_exception(m_failure);
  }

 private:
  struct slot {
    std::optional<node_read> node;
    std::exception_ptr error;
  };

  // The next report to read, once it is within the window of the next one to add; none when all
  // are claimed or one failed. The wait ends: the report the window waits for was claimed by a
  // thread that is reading it, and a read waits for nothing.
  std::optional<std::size_t> claim() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] {
      return m_failure || m_next_read == m_paths.size() ||
             m_next_read < m_next_add + m_slots.size();
    });
    if (m_failure || m_next_read == m_paths.size()) return std::nullopt;
    return m_next_read++;
  }

  void deliver(std::size_t i, slot s) {
    std::lock_guard lock(m_mutex);
    if (m_failure) return;  // an earlier report failed: nothing after it counts
    m_slots[i % m_slots.size()] = std::move(s);
    add_ready();
    m_cv.notify_all();
  }

  // Adds the reports that are next in path order and read (under the lock).
  void add_ready() {
    while (!m_failure && m_next_add < m_paths.size()) {
      slot& s = m_slots[m_next_add % m_slots.size()];
      if (!s.node && !s.error) return;  // still being read
      slot ready = std::exchange(s, {});
      const std::string& path = m_paths[m_next_add++];
      try {
        if (ready.error) std::rethrow_exception(ready.error);
        if (m_o.each) m_o.each(ready.node->report);
        m_builder.add(std::move(*ready.node), path);
      } catch (...) {
        m_failure = std::current_exception();
      }
    }
  }

  const std::vector<std::string>& m_paths;
  const fleet_options& m_o;
  fleet_builder& m_builder;   // guarded by m_mutex, as everything below
  std::vector<slot> m_slots;  // paths[i]'s at i % size, from its read to its turn
  std::size_t m_next_read = 0, m_next_add = 0;
  std::exception_ptr m_failure;
  std::mutex m_mutex;
  std::condition_variable m_cv;
};

std::size_t readers_for(const fleet_options& o, std::size_t reports) {
  const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
  return std::min(o.readers == 0 ? cores : o.readers, std::max<std::size_t>(reports, 1));
}

}  // namespace

std::vector<std::string> report_paths(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      for (auto& f : json_files_in(a)) out.push_back(std::move(f));
    } else {
      out.push_back(a);  // load_report says what is wrong with a file that is not one
    }
  }
  return out;
}

void keep_summaries(report_view& r) {
  for (auto& x : r.results) {
    release(x.samples_s);
    // An INVALID (noisy) result's verdict may rest on its samples' interval (a rule it straddles
    // is INCONCLUSIVE): those stay, the few they are.
    if (x.valid) {
      for (auto& m : x.metrics) release(m.samples);
    }
  }
  r.telemetry.reset();
  r.roofline.reset();
  for (auto& h : r.inventories) {
    release(h.fields);
    h.inventory = nullptr;
  }
}

report_view load_fleet(const std::vector<std::string>& paths, const fleet_options& o) {
  fleet_builder b;
  const std::size_t readers = readers_for(o, paths.size());
  // Twice the readers: a thread that finished need not wait for a slower one's report to be added
  // before it reads the next, and the reduced reports waiting stay few (~2 MB each, full suite).
  ordered_reads reads(paths, o, b, 2 * readers);
  {
    // Unpinned: the readers are not timed, and the scheduler knows better where they fit. The
    // pool joins its threads however this block is left.
    thread_pool pool(readers, /*pin=*/false);
    pool.run([&](std::size_t) { reads.work(); });
  }
  reads.rethrow_failure();
  return std::move(b).finish();
}

}  // namespace infrabench::reports
