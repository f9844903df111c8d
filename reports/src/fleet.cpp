// Fleet acceptance: many node reports read, several at once, into one report of many hosts,
// holding per node only what a verdict reads (fleet.h).
#include "infrabench/reports/fleet.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "infrabench/error.h"
#include "infrabench/ordered_parallel.h"

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
  ordered_parallel_plan plan{paths.size(), o.readers, 1};
  // Twice the readers: a thread that finished need not wait for a slower one's report to be added
  // before it reads the next, and the reduced reports waiting stay few (~2 MB each, full suite).
  plan.window = 2 * ordered_parallel_workers(plan);
  std::vector<std::optional<node_read>> slots(plan.window);
  // Read on the worker threads (read_node touches only its own report); added in path order, one
  // at a time, so the fleet and the first error are those of reading one report after another.
  ordered_parallel(
      plan, [&](std::size_t i, std::size_t slot) { slots[slot] = read_node(paths[i], o); },
      [&](std::size_t i, std::size_t slot) {
        node_read n = std::move(*std::exchange(slots[slot], std::nullopt));
        if (o.each) o.each(n.report);
        b.add(std::move(n), paths[i]);
      });
  return std::move(b).finish();
}

}  // namespace infrabench::reports
