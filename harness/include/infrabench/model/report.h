// The one report model (issue 25): a report's results, metrics, axes, hosts, ranks, telemetry and
// run, typed, with its JSON reading (parse, check the schema version: refuse newer, read older;
// validate the fields downstream code relies on) and writing (to_json) in one place. It is the
// harness's lowest layer, below the run pipeline and below reports/: both work on these views, so a
// corrupt report fails here with one clear message and nothing else indexes a report's raw JSON.
// (It is not a library of its own: it is built from the harness's result, metric declaration and
// JSON reading types, which the harness's other layers also need.)
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/canary.h"
#include "infrabench/collective_layout.h"
#include "infrabench/json_io.h"
#include "infrabench/metric_decl.h"
#include "infrabench/result.h"
#include "infrabench/text_file.h"

namespace infrabench::model {

struct metric_view {
  std::string name;
  std::string unit;
  double value = 0;  // NaN when the report holds null (a value the writer could not compute)
  double best = 0;
  bool higher_is_better = true;
  std::string method;
  std::vector<double> samples;  // per-sample values (finite ones only)
  // Each repetition's value of this metric (`run --repetitions N`, interleaved runs of the same
  // configuration), in the order they ran; `value` is then their median. Empty for a report of
  // one repetition: the between-run variation is unknown.
  std::vector<double> repetitions;
  // What the metric is for; a report written before roles existed reads as performance.
  metric_role role = metric_role::performance;
  // The GPUs whose readings set this value (a health check's fewest links up: the GPU with the
  // fewest), so per-GPU verdicts name them; empty when the value is not a GPU's (schema 1.6.0).
  std::vector<int> gpus;
  [[nodiscard]] bool is_performance() const { return role == metric_role::performance; }
};

// What a benchmark said about one of its axes (run.benchmark_metadata): readers use it instead of
// guessing from the axis name.
struct axis_meta {
  std::string kind;  // int64 | float64 | string
  bool bytes = false;
  bool pow2 = false;
  std::string unit, description;
};

struct benchmark_meta {
  std::vector<std::string> requires_;  // requirement names: "cuda", "nccl", "avx2"
  std::map<std::string, axis_meta> axes;
  // What the benchmark declared about its metrics (metric_decl.h): unit, direction, role, kind,
  // relation, which one is the headline. Empty for a report written before schema 1.5.
  std::vector<metric_decl> metrics;
  // The benchmarks whose results it reads (benchmark::uses: a peak it is a fraction of, a
  // reference); empty for a report that does not say.
  std::vector<std::string> uses;
  // How its results read as nccl-tests prints them (collective_layout.h); unset for a benchmark
  // that runs no collective, and in reports written before it was declared.
  std::optional<collective_layout> collective;
};

// One repetition of a configuration (`run --repetitions N`) as its result records it: what compare
// and history need besides the values (those are in each metric_view::repetitions).
struct repetition_view {
  std::string status;  // passed | skipped | failed
  std::string reason;  // for skipped/failed
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  std::vector<std::string> invalid_reason_codes;  // one per reason: "noisy", "verify_failed", ...
  std::string stop_reason;
  double elapsed_s = 0;
};

// A result's timing summary (its "time_s"): what the console table shows beside the metrics.
struct time_view {
  double median = 0;
  double ci95_lo = 0, ci95_hi = 0;  // the median's confidence interval
  double cv = 0, robust_cv = 0;     // robust_cv is cv in a report that does not carry it
  std::size_t n = 0;
};

// What the CPUs a result could use did while it sampled (the record's "sampling_load",
// machine_load.h), as CPUs: those it could use, what its own threads and what other processes took
// of them. (Outside result_view: clang 14 refuses an optional of a nested type with default
// member initializers inside its enclosing class.)
struct cpu_load_view {
  double cpus = 0, own_cpus = 0, other_cpus = 0;
  // CPUs' worth of time its threads waited, runnable, for a CPU (NaN: the report does not say).
  double waiting_cpus = std::numeric_limits<double>::quiet_NaN();
  bool throttled = false;  // its cgroup's CPU quota throttled it (the run's own making)
};

struct result_view {
  std::string benchmark;  // group/name
  // Axis name -> value as written (number or string), and its display form ("256MiB").
  std::map<std::string, nlohmann::json> axes;
  std::map<std::string, std::string> axes_display;
  // Parsed once by the reader (an unknown status is refused there): code compares the enum, and
  // to_string(status) gives the report's word back.
  infrabench::status status = infrabench::status::passed;
  std::string reason;
  // The code of a skip or failure (reason.h), parsed once by the reader; none when the report does
  // not say. A name this version does not know (another version's report) reads as none, so
  // nothing matches it, and is kept in unknown_reason_code so that to_json writes it back.
  infrabench::reason_code reason_code = infrabench::reason_code::none;
  std::string unknown_reason_code;
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  // One code per invalid reason ("noisy", "verify_failed", ...; reason.h); empty in a report that
  // does not say (older than the codes).
  std::vector<std::string> invalid_reason_codes;
  std::vector<std::string> warnings;
  // Metric -> why the benchmark withheld it (the result's "withheld" object); empty in a report
  // older than 1.5.0, whose warnings say it instead.
  std::map<std::string, std::string> withheld_metrics;
  // Set for a report older than 1.5.0: withheld metrics are then found in the warnings' one form.
  bool withheld_in_warnings = false;
  int rank = 0;
  std::string host;
  std::optional<int> gpu;         // the GPU a per-GPU result measured; nullopt for a node-wide one
  std::vector<int> failed_gpus;   // the GPUs a failed node-wide check blames (schema 1.6.0)
  std::optional<time_view> time;  // absent for a result that did not sample (skipped, failed)
  std::vector<double> samples_s;
  double elapsed_s = 0;  // wall seconds the configuration took (warm-up and sampling); 0 if absent
  std::vector<metric_view> metrics;
  // Each repetition in run order (run --repetitions N); empty for a report of one repetition. A
  // metric's repetitions hold one value per passed repetition that reported it.
  std::vector<repetition_view> repetitions;
  // Where a storage benchmark measured (schema 1.9.0); unset for other results and older reports.
  std::optional<infrabench::storage_location> storage;
  // What the CPUs it could use did while it sampled (cpu_load_view). Unset for a result without
  // it (older reports, nothing sampled).
  std::optional<cpu_load_view> load;

  // The code the report gives: nullopt when it gives none (a report older than the codes), none
  // when it names one this version does not know.
  [[nodiscard]] std::optional<infrabench::reason_code> given_reason_code() const;
  [[nodiscard]] const metric_view* find_metric(std::string_view name) const;
  // The metrics a declared name stands for: the one of that name, or every one a family pattern
  // (bandwidth_gbps_*, a cell per GPU) matches.
  [[nodiscard]] std::vector<const metric_view*> metrics_named(std::string_view name) const;
  // Why the benchmark withheld `metric` from this result (state::withhold_metric: a fraction of a
  // peak the GEMM beat, a clock it could not read): that warning, or "" when none says so.
  [[nodiscard]] std::string withheld(std::string_view metric) const;
  [[nodiscard]] std::string group() const;  // "bandwidth" of "bandwidth/host_memory"
  // Benchmark and axes, canonical (axes sorted by name): the key that matches a configuration
  // across reports (result_identity without a rank).
  [[nodiscard]] std::string config_key() const;
  // "bandwidth/host_memory kernel=triad threads=0" (display forms of the axes).
  [[nodiscard]] std::string config_label() const;
  // The axes alone: "kernel=triad threads=0" ("" when none); only those in `only` when given.
  [[nodiscard]] std::string axes_label(const std::set<std::string>* only = nullptr) const;
  // The axes with the values they were set to, not their display forms ("isa=auto", not "isa=auto
  // (avx512)"): a label that stays the same across machines and runs (openmetrics series).
  [[nodiscard]] std::string axes_values_label() const;
  // Whether every axis in `want` has this value here (JSON-equal, or equal to the display form,
  // or the same number written as a string: "256MiB", "268435456", 268435456 all match).
  [[nodiscard]] bool axes_match(const nlohmann::json& want) const;
};

// One GPU of a host's device inventory (hosts[i].devices.gpus[j], devices.h): its identity and
// settings, each nullopt when the GPU does not say (or says it in another type).
struct gpu_device_view {
  std::optional<int> index;
  std::optional<std::string> name, vbios;
  std::optional<double> power_limit_w, memory_total_mib, applications_sm_clock_mhz;
  std::optional<bool> persistence_mode, ecc_enabled, mig_enabled;
  std::optional<int> nvlinks_active;  // NVLinks up
  // A property by its inventory key ("vbios", "power_limit_w"), as a JSON scalar; null for a key
  // the GPU does not say or this view does not hold: what a baseline's `expect` compares with.
  [[nodiscard]] nlohmann::json property(std::string_view key) const;
};
// An InfiniBand/RoCE port, an NVMe drive and a network interface of the inventory.
struct ib_port_view {
  std::string device, state, link_layer;  // "mlx5_0", "ACTIVE", "InfiniBand"
  int port = 0;
  std::optional<double> rate_gbps;
};
struct nvme_view {
  std::string name, model, serial, firmware;
};
struct net_interface_view {
  std::string name, operstate;
  std::optional<double> speed_mbps;  // nullopt: the driver does not say
};
// The figures a baseline's `expect` judges (devices::counts_of, the one place that derives them):
// GPUs, the fewest active NVLinks of any GPU, active IB ports and the slowest one's rate, NVMe
// drives, and per GPU property whether every GPU has the same value (nullopt: no GPU says).
struct device_counts {
  int gpus = 0;
  std::optional<int> nvlinks_per_gpu;
  int ib_ports_active = 0;
  std::optional<double> ib_rate_gbps;
  int nvme_drives = 0;
  std::map<std::string, std::optional<bool>> same_across_gpus;
  // A count by its `expect` key ("gpus", "ib_rate_gbps"); nullopt when unknown or not a count.
  [[nodiscard]] std::optional<double> count(std::string_view key) const;
};
// A host's "devices" inventory, typed.
struct devices_view {
  std::vector<gpu_device_view> gpus;
  std::vector<ib_port_view> ib_ports;
  std::vector<nvme_view> nvme;
  std::vector<net_interface_view> net_interfaces;
  device_counts counts;
};

// One host's inventory (the report's "hosts"): its name, the build it ran, and every field as
// dotted key -> text ("cpu.model" -> "EPYC 9654", "gpus[0].name" -> "H100"), in key order.
struct host_view {
  std::string hostname;  // "" when the inventory does not say
  std::string git_commit;
  std::vector<std::pair<std::string, std::string>> fields;
  nlohmann::json inventory;  // the whole inventory as written: what history archives per run
  // Its device inventory; nullopt for a report written before it had one (or one unreadable).
  std::optional<devices_view> devices;
};

// What the run probed on rank 0 (the report's "capabilities").
struct capabilities_view {
  std::optional<int> cuda_device_count;  // nullopt when the report does not say
  // The section as written: what to_json writes back (the ISA flags, each feature's reason).
  nlohmann::json as_written = nlohmann::json::object();
};

// What the suite of a run selected (run.suite): its benchmarks and the axis values each ran with.
struct suite_benchmark_view {
  std::string name;
  std::map<std::string, nlohmann::json> axes;  // axis -> its values as written
};
struct suite_view {
  std::vector<suite_benchmark_view> benchmarks;
  // Everything else the suite section says (name, source, filter, overrides), as written.
  nlohmann::json other = nlohmann::json::object();
  [[nodiscard]] std::string name() const;
  // Where the suite came from: "builtin" for a shipped suite, else what the report says ("").
  [[nodiscard]] std::string source() const;
};

// How the run was made (the report's "run" section beyond its times and metadata).
// run.canary (harness canary.h): the machine's one-thread FMA peak and memory stream measured with
// the run, so that readers can tell a machine that ran slower from code that did.
struct canary_view {
  double fma_gflops = std::nan("");   // NaN: not said
  double stream_gbps = std::nan("");  // NaN: not said
  double cache_gbps = std::nan("");   // NaN: not said (reports before schema 1.11.0)
  double cache_bytes = 0;             // its working set (0: not said)
  // Per CPU on all_cpus CPUs at once (schema 1.12.0; NaN / 0: not said, as in multi-rank runs).
  double all_fma_gflops = std::nan("");
  double all_cache_gbps = std::nan("");
  double all_cpus = 0;
  std::string fma_isa;
  // Each number's length (schema 1.13.0; before it every canary ran canary_full_seconds).
  double seconds_each = canary_full_seconds;
  nlohmann::json as_written;  // kept for writing the report back

  // Whether it ran long enough to say the machine moved: a brief one (a run of --min-time under
  // 0.2 s) is as noisy as that run's own numbers, and would excuse a regression by its noise.
  [[nodiscard]] bool judges_the_machine() const { return seconds_each >= canary_full_seconds; }
};

struct run_view {
  std::optional<canary_view> canary;  // absent in reports without one (before schema 1.7.0)
  std::string interrupted_reason;     // "signal 2 (SIGINT)"; "" when not interrupted or not said
  nlohmann::json settings;            // the run's settings as written; null when absent
  std::optional<suite_view> suite;
  std::optional<std::vector<std::string>> command_line;  // its string arguments, as typed
  nlohmann::json launcher;                               // as written; null when absent
  bool world_size_given = false;
};

// A sampled trace (telemetry): every series drawn over t_s. A series that is not an array is kept
// (is_series false) so a renderer can say why it is not drawn.
struct trace_series_view {
  std::string name;
  bool is_series = true;
  std::vector<std::optional<double>> values;  // nullopt: no number recorded at that sample
};
struct trace_view {
  bool given = false;     // a trace was written (not null)
  bool drawable = false;  // it is an object with a t_s array
  std::vector<std::optional<double>> t_s;
  std::vector<trace_series_view> series;  // in name order
};
// One telemetry source (a GPU, the CPU): its trace and its counters before and after the run,
// each flattened to JSON-pointer key -> value (nlohmann's flatten).
struct telemetry_source_view {
  nlohmann::json index;  // a GPU's index as written; null when not said
  nlohmann::json name;   // null when not said
  trace_view trace;
  bool has_counters = false;  // both counters_before and counters_after are objects
  std::map<std::string, nlohmann::json> counters_before, counters_after;
  std::vector<std::pair<std::string, nlohmann::json>> sources;  // CPU: what it could read
};
struct telemetry_event_view {
  nlohmann::json t_s, kind, gpu, source, text;  // each as written; null when absent
  bool on_gpu = false;                          // the event names a GPU
};
struct nvml_view {
  bool available = false;
  nlohmann::json driver_version, reason;
};
// The report's "telemetry": per GPU and for the CPU a trace and counters, NVML, events. Read
// leniently: a part of the wrong shape is left out (telemetry never makes a report unreadable).
struct telemetry_data {
  std::vector<telemetry_source_view> gpus;
  std::optional<telemetry_source_view> cpu;
  std::optional<nvml_view> nvml;
  std::vector<telemetry_event_view> events;
  nlohmann::json other = nlohmann::json::object();  // fields not modelled (interval_s), as written
};
// The one reader of a "telemetry" object.
[[nodiscard]] telemetry_data telemetry_from_json(const nlohmann::json& t);

// The report's "roofline" section (`infrabench roofline --into-report`, docs/roofline.md) as
// `report` and `compare` show it: each hop's rate in the job's samples/s with its sources, the
// limit, the prediction, the measured rate and the what-ifs' outcomes.
struct roofline_view {
  struct source {
    std::string benchmark, configuration, metric, unit;
    double value = 0;
  };
  struct hop {
    std::string name, status, why, formula;  // status: measured | not measured | not applicable
    bool in_step = false, beside = false;
    double per_gpu = 0, per_job = 0, headroom = 0;  // samples/s; 0 where the section has null
    std::vector<source> sources;
    std::string invalid;  // why a result it reads is INVALID; empty when all are valid
  };
  struct outcome {  // one what-if: what it changed and the limit it then has
    std::string what_if, limit;
    double predicted_per_job = 0;
  };
  std::string model, data, device, limit, step_model;  // limit "none": no hop measured
  int batch = 0, seq = 0, ranks_per_node = 1, nodes = 1;
  double predicted_per_job = 0;
  std::vector<hop> hops;
  bool measured = false;  // training/step's rate is in the report
  double measured_per_job = 0, predicted_over_measured = 0;
  source measured_source;
  std::string measured_why;  // when not measured
  std::vector<std::string> notes;
  std::vector<outcome> what_ifs;
  // What of the section as written the fields above do not reproduce (tokens/s, per-GPU
  // predictions, the job's other facts, the what-ifs' hops): to_json writes it back over them,
  // so the section round-trips whole (roofline_difference's form, report_model.cpp).
  nlohmann::json unmodelled = nlohmann::json::object();
};

// Which results a read builds (load_report(path, filter)). A fleet check judges a few percent of
// a node report's results (the configurations its baseline's rules name), and typing the rest was
// most of its work after the parser's own (docs/scale.md).
struct result_filter {
  // The benchmarks whose results are built, by name, as a baseline's rule names one. Any other
  // result is still scanned by the parser (its JSON must be well formed) but is neither built nor
  // checked, but for its host, which report_view::skipped keeps.
  std::set<std::string, std::less<>> benchmarks;
  [[nodiscard]] bool keeps(std::string_view benchmark) const {
    return benchmarks.find(benchmark) != benchmarks.end();
  }
  // Whether a result left out is skimmed past (checked well formed byte by byte, its bytes not
  // lexed) rather than parsed: the same read either way, several times faster (docs/scale.md).
  // Off only to check just that (the unit tests, the fuzzer).
  bool skim = true;
};

// What a read with a result_filter left out of a report's results; empty for any other read.
struct skipped_results {
  std::size_t count = 0;
  std::set<std::string> hosts;  // the hosts they named (a fleet claims each node's hosts)
  // The host of the report's first result, when that one was left out: primary_hostname falls
  // back to it for a report without inventories, as the whole report's first result would.
  std::optional<std::string> first_host;
};

struct report_view {
  std::string path;   // where it was read from ("" for text)
  std::string label;  // short name for tables (file stem unless given)
  std::string schema_version;
  std::string started_utc, finished_utc;
  int world_size = 1;
  bool interrupted = false;
  // Of a simulated GPU node (docs/simulation.md): no evidence about hardware.
  bool simulated = false;
  std::vector<result_view> results;
  std::vector<host_view> inventories;  // the hosts' inventories, typed
  run_view run_info;
  capabilities_view caps;          // the report's "capabilities"
  std::vector<std::string> notes;  // what reading it had to assume (older version, nulls dropped)
  // Per benchmark, its axes and requirements; empty for reports written before it existed.
  std::map<std::string, benchmark_meta> benchmarks;
  std::optional<telemetry_data> telemetry;  // absent when the report has none
  std::optional<roofline_view> roofline;    // absent when the report has none
  skipped_results skipped;                  // what a filtered read did not build

  // The metadata of `axis` of `bench`, or nullptr when the report does not say.
  [[nodiscard]] const axis_meta* axis_info(const std::string& bench, const std::string& axis) const;
  // The declaration of `metric` of `bench` as the report carries it; null when the report does
  // not carry declarations (older than 1.5) or this metric's.
  [[nodiscard]] const metric_decl* declaration(const std::string& bench,
                                               std::string_view metric) const;
  // The headline declaration of `bench`; null when the report does not say.
  [[nodiscard]] const metric_decl* headline_of(const std::string& bench) const;
  // Whether the report carries metric declarations for `bench` at all.
  [[nodiscard]] bool declares_metrics(const std::string& bench) const;
  // Whether the report says `bench` runs on a GPU, as its declared requirements say (cuda or nccl);
  // nullopt when the report does not carry them.
  [[nodiscard]] std::optional<bool> runs_on_gpu(const std::string& bench) const;

  // Distinct hosts (or ranks) that produced results, in first-seen order: more than one makes it
  // a multi-node report. Computed once per set of results.
  [[nodiscard]] const std::vector<std::string>& nodes() const;
  // What those nodes are: distinct hosts and distinct ranks ("1 host, 2 ranks").
  [[nodiscard]] std::size_t host_count() const { return node_facts().hosts; }
  [[nodiscard]] std::size_t rank_count() const { return node_facts().ranks; }
  // "1 host, 2 ranks", "4 hosts" (one rank each), "1 host".
  [[nodiscard]] std::string hosts_and_ranks() const;
  // The node a result belongs to: its host, or "rank N" when hosts repeat.
  [[nodiscard]] std::string node_of(const result_view& r) const;
  [[nodiscard]] bool multi_node() const { return node_facts().count > 1; }
  // A result's identity in this report (result_identity): benchmark and axes, and its rank when
  // several ranks produced results.
  [[nodiscard]] std::string identity(const result_view& r) const;
  [[nodiscard]] std::string git_commit() const;

 private:
  // What node_of and multi_node need from all the results, computed once per set of results
  // (they are asked once per result: a check of a 25,000-result report took minutes).
  struct node_summary {
    const result_view* data = nullptr;  // the results it was computed for
    std::size_t size = 0;
    bool by_rank = false;  // ranks outnumber hosts: a node is named by its rank
    std::size_t count = 0;
    std::size_t hosts = 0, ranks = 0;
    std::vector<std::string> names;  // nodes(), first-seen order
  };
  [[nodiscard]] const node_summary& node_facts() const;
  mutable node_summary m_nodes;

 public:
  [[nodiscard]] std::string primary_hostname() const;
};

// What this build's benchmarks declare they produce (benchmark::produces): name -> declarations.
// Filled from the registry by the CLI (registry_metric_catalog); tests pass their own.
using metric_catalog = std::map<std::string, std::vector<metric_decl>>;

// The declarations of `bench`, as headline_gate asks for them: the first of `reports` that carries
// them (what the build that measured it declared, schema 1.5.0 on), else `catalog`'s (this build's;
// null: not asked); null when declared nowhere.
[[nodiscard]] const std::vector<metric_decl>* declarations_of(std::span<const report_view> reports,
                                                              const std::string& bench,
                                                              const metric_catalog* catalog);

// One result as the harness writes it (result::to_json(), a rank's record of the live run), read
// as a report's results are; `where` names it in messages. Throws user_error.
[[nodiscard]] result_view result_from_json(const nlohmann::json& r, const std::string& where);
// One host's inventory (sysinfo's, or a report's hosts[i]), read leniently as a report's are.
[[nodiscard]] host_view host_from_json(const nlohmann::json& inventory);
// An array of them ("results[i]" in messages).
[[nodiscard]] std::vector<result_view> results_from_json(const nlohmann::json& results);
// A run's benchmark metadata as written (run.benchmark_metadata); empty for null.
[[nodiscard]] std::map<std::string, benchmark_meta> benchmark_metadata_from_json(
    const nlohmann::json& metadata);
// A report already parsed (the live run's, as written): what parse_report gives for its text (its
// results are read by the same reader, handed each value as the parser would have).
[[nodiscard]] report_view report_from_json(nlohmann::json doc, const std::string& origin);

// "1.2.3" -> {1,2,3}; nullopt when not of that form.
[[nodiscard]] std::optional<std::vector<int>> parse_version(std::string_view v);

// Parses report text in one streaming pass (each result read straight into its view, never built
// as a JSON value: report_reader.cpp). `origin` names it in messages (a path). `reader_version` is
// the newest schema this code understands (the harness's report_schema_version); a newer report is
// refused, an older 1.x one read with defaults for fields it lacks. Throws user_error with one line
// on any problem.
[[nodiscard]] report_view parse_report(std::string_view text, const std::string& origin,
                                       std::string_view reader_version);
[[nodiscard]] report_view parse_report(std::string_view text, const std::string& origin);
// The same, building only the results `filter` keeps (as load_report(path, filter) does).
[[nodiscard]] report_view parse_report(std::string_view text, const std::string& origin,
                                       const result_filter& filter);
// Reads and parses a file, streamed from it in chunks (a pipe is read whole, bounded); the label
// is the file's stem. At most max_report_bytes.
[[nodiscard]] report_view load_report(const std::string& path);
// The same, building only the results `filter` keeps: the others are scanned, not typed, and only
// their hosts are kept (report_view::skipped). Its kept results are those of the whole read; the
// checks a result's members get (and the one against a configuration given twice) are made only of
// them and of what of a skipped one came before its benchmark's name.
[[nodiscard]] report_view load_report(const std::string& path, const result_filter& filter);

// The most a baseline or metadata file may hold (read_text_file's bound; a regular file is
// refused by its size before it is read). Those are parsed whole as JSON documents, which take
// about 4.5x their text at the peak (about 12x for text made of tiny objects): the bound keeps a
// hostile one under 2 GB.
inline constexpr std::size_t max_input_bytes = std::size_t{128} << 20;
// The most a report may hold (load_report; refused by its size before it is read). A report is
// streamed (report_reader.cpp), never held whole, so memory follows the typed model, not the
// text: `report` of a 64-rank full-suite report (209 MB) peaks at 402 MB, of a 128-rank one
// (418 MB) at 791 MB (docs/reports.md, "Speed"). 512 MiB admits the 128-rank one with room.
inline constexpr std::size_t max_report_bytes = std::size_t{512} << 20;
// A report's inventories (hosts[]): at most this many hosts, and this many fields among them (a
// host lists a few hundred, its devices included). A hostile "hosts" of tiny objects took 150
// times its text once read (100 MB: 15 GB) before these bounds.
inline constexpr std::size_t max_hosts = 65536;
inline constexpr std::size_t max_inventory_fields = std::size_t{1} << 22;
// The most a report's results may take in memory once read, as the reader counts it while it
// reads (2.4x a real report's size: 508 MB for the 64-rank one). A hostile file of tiny objects
// ("repetitions": [{}, {}, ...]) types into 50 times its size, which the bound on the text alone
// would let reach 25 GB; this one stops it near 2 GB, refused with one line like a file too
// large. (Its other sections are bounded by max_input_bytes, as a baseline file is.)
inline constexpr std::size_t max_report_results_bytes = std::size_t{2} << 30;

// The report as JSON, for the fields the model holds (what parse_report reads back to an equal
// view): results, run times and metadata, hosts, capabilities, telemetry, roofline.
[[nodiscard]] nlohmann::json to_json(const report_view& r);

// Per benchmark, the axes that take more than one value across these reports' results (the ones
// worth showing in a table: a constant axis says nothing about the row).
[[nodiscard]] std::map<std::string, std::set<std::string>> varying_axes(
    const std::vector<const report_view*>& reports);

// Unique labels for several reports: file stems, made distinct with their parent directory or an
// index when stems repeat.
void assign_labels(std::vector<report_view>& reports);

}  // namespace infrabench::model
