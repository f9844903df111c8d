// storage/dataloader: can this storage feed training? A data set of sample files (110 KiB
// JPEG-like by default) is read each epoch in a new random order by reader threads (io_uring or
// psync) into a ring of host batch buffers; a simulated accelerator busy-waits compute_ms per
// batch and idles when its next batch is not complete. Accelerator utilisation AU = compute time
// / wall time with the first step excluded; the result is valid only if AU >= au_threshold (90%,
// as MLPerf Storage requires for ResNet-50 and U-Net3D). With search=1 it also finds, by
// bisection, the largest per-accelerator rate (samples/s) the storage sustains at that AU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "job.h"
#include "shared/storage_cluster.h"
#include "shared/storage_scratch.h"
#include "storage/dataloader.h"
#include "storage/engine.h"

namespace {

namespace ks = infrabench::kernels::storage;
namespace sb = infrabench::storage_bench;

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * f);
  return buf;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// What the steps of one configuration share: its axes, the data set agreed on, and the epochs
// run so far (each epoch, measured or probe, reads in the order of its own seed).
struct loader_run {
  std::string engine;
  ks::dataset_layout layout;
  std::uint32_t batch = 0;
  double compute_ms = 0;
  double compute_s = 0;
  double threshold = 0;
  bool direct = false;
  std::string root;        // the data set, once agreed on
  std::uint64_t seed = 0;  // its data pattern
  std::uint64_t epochs_run = 0;
  [[nodiscard]] std::uint64_t next_epoch_seed() { return seed + ++epochs_run; }
};

loader_run loader_axes(const infrabench::state& st) {
  loader_run run;
  run.engine = st.get_string("reader_engine");
  run.layout.sample_size = static_cast<std::uint64_t>(st.get_int64("sample_size"));
  run.layout.samples = static_cast<std::uint64_t>(st.get_int64("samples"));
  run.layout.files_per_dir = static_cast<std::uint64_t>(st.get_int64("files_per_dir"));
  run.batch = static_cast<std::uint32_t>(st.get_int64("batch_size"));
  run.compute_ms = st.get_float64("compute_ms");
  run.compute_s = run.compute_ms * 1e-3;
  run.threshold = st.get_float64("au_threshold");
  run.direct = st.get_int64("direct") != 0;
  return run;
}

// What can be refused before any data set is made. Every rank calls it (require_engine agrees).
void refuse_early(infrabench::state& st, const loader_run& run) {
  {
    // The engine table's refusals (not compiled in, unavailable here). The readers' depth is
    // the loader's own (a psync reader reads one sample piece at a time whatever it is).
    ks::engine_options probe;
    (void)sb::require_engine(st, "reader_engine", probe);
  }
  if (run.layout.samples / run.batch < 2) {
    st.fail(std::to_string(run.layout.samples) + " samples make fewer than 2 batches of " +
            std::to_string(run.batch) + " (the first step is excluded from AU)");
  }
}

// Which part of the data set this host reads: all of it, or its share of one shared data set.
struct host_part {
  std::uint64_t part = 0;
  std::uint64_t parts = 1;
  std::uint32_t direct_align = 512;  // of the data set's first sample
};

// Under mpirun/srun every rank takes part in agreeing on the data set; one rank per host reads
// (a shared --scratch: one data set, each host its own samples). Ranks that do not measure leave
// here (skipped), after the agreement.
host_part agree_on_dataset(infrabench::state& st, loader_run& run) {
  const sb::cluster_view view = sb::view_of(st.comm());
  const sb::scratch_sharing sharing =
      view.multi && view.hosts > 1 ? sb::sharing_of_scratch(st) : sb::scratch_sharing::single_host;
  const sb::scratch_data made = sb::agree_on_scratch(st, view, sharing, [&] {
    sb::scratch_data d;
    d.path = sb::resolve_dataset(st, run.layout, d.seed);
    return d;
  });
  if (!view.measures) st.skip(infrabench::reason_code::node_local, view.not_measuring);
  run.root = made.path;
  run.seed = made.seed;
  const bool shared = sharing == sb::scratch_sharing::shared;
  if (shared) {
    st.add_warning("--scratch is shared by the " + std::to_string(view.hosts) +
                   " hosts: one data set of " + std::to_string(run.layout.samples) +
                   " samples, of which this host (" + std::to_string(view.host + 1) + " of " +
                   std::to_string(view.hosts) + ") reads every " + std::to_string(view.hosts) +
                   "th");
  }
  const ks::target_info first = ks::inspect_target(run.layout.sample_path(run.root, 0));
  if (run.direct) {
    // Says so here if the data set's filesystem refuses O_DIRECT.
    (void)ks::open_read_only(run.layout.sample_path(run.root, 0), true);
  }
  if (!run.direct) {
    st.add_warning(
        "direct=0: buffered reads; after the first epoch the data set may come from the page "
        "cache");
  }
  return {shared ? view.host : 0, shared ? view.hosts : 1, first.direct_align};
}

ks::dataloader_options loader_options(infrabench::state& st, const loader_run& run,
                                      const host_part& mine) {
  ks::dataloader_options opts;
  opts.root = run.root;
  opts.layout = run.layout;
  opts.seed = run.seed;
  opts.engine = run.engine;
  opts.batch_size = run.batch;
  opts.prefetch = static_cast<std::uint32_t>(st.get_int64("prefetch"));
  opts.readers = static_cast<std::uint32_t>(st.get_int64("readers"));
  opts.reader_depth = static_cast<std::uint32_t>(st.get_int64("reader_depth"));
  opts.direct = run.direct;
  opts.direct_align = std::max<std::uint32_t>(mine.direct_align, 512);
  opts.max_read = std::max<std::uint64_t>(std::uint64_t{1} << 20, opts.direct_align);
  opts.verify = sb::verify_requested(st);
  opts.part = mine.part;
  opts.parts = mine.parts;
  if (opts.verify)
    st.add_warning("--verify: every sample is checked by its reader, inside the timed epochs");
  return opts;
}

// The loader's readers set up their rings here: an engine refused at set-up skips.
std::unique_ptr<ks::dataloader> start_loader(infrabench::state& st,
                                             const ks::dataloader_options& opts) {
  try {
    return std::make_unique<ks::dataloader>(opts);
  } catch (const ks::unsupported_error& e) {
    st.skip(e.what());
  } catch (const ks::storage_error& e) {
    st.fail(e.what());
  }
}

// The measured epochs' sums (the warm-up epoch left out, except for verification).
struct epoch_totals {
  double compute = 0, nominal = 0, window = 0, stall = 0, first_batch = 0;
  std::uint64_t verify_failures = 0, measured = 0;
  std::string first_failure;
};

// One call is one epoch; the harness's warm-up epoch (cold start) is not counted in AU.
epoch_totals measure_epochs(infrabench::state& st, loader_run& run, ks::dataloader& dl) {
  const std::uint64_t window_samples = (dl.steps_per_epoch() - 1) * run.batch;
  st.add_items(static_cast<double>(window_samples), "sample");
  st.add_bytes_read(static_cast<double>(window_samples * run.layout.sample_size));
  epoch_totals t;
  st.exec_timed(
      [&] {
        const ks::epoch_result r = dl.run_epoch(run.compute_s, run.next_epoch_seed());
        t.verify_failures += r.verify_failures;
        if (t.first_failure.empty()) t.first_failure = r.first_verify_failure;
        if (run.epochs_run > 1) {
          t.compute += r.compute_s;
          t.nominal += r.nominal_compute_s;
          t.window += r.window_s;
          t.stall += r.stall_s;
          t.first_batch += r.first_batch_s;
          ++t.measured;
        }
        return r.window_s;
      },
      "accelerator_window");
  return t;
}

void report_epochs(infrabench::state& st, const loader_run& run, const ks::dataloader& dl,
                   const epoch_totals& t, bool verify) {
  const double au = t.compute / t.window;
  if (t.compute > 1.05 * t.nominal) {
    st.add_warning("the simulated accelerator ran " + percent(t.compute / t.nominal - 1) +
                   " longer than asked (its busy-wait was preempted: CPU contention)");
  }
  st.add_metric("accelerator_utilization_percent", "%", 100 * au, true,
                "compute time / wall time of the simulated accelerator over the measured epochs, "
                "first step of each epoch excluded (MLPerf Storage AU)");
  st.add_metric("stall_ms_per_step", "ms",
                1e3 * t.stall / static_cast<double>(t.measured * (dl.steps_per_epoch() - 1)), false,
                "time the accelerator waited for its next batch, per step (first step excluded)");
  st.add_metric("first_batch_ms", "ms", 1e3 * t.first_batch / static_cast<double>(t.measured),
                false, "epoch start to first complete batch (pipeline fill; excluded from AU)");
  st.add_metric("accelerator_samples_per_s", "samples/s",
                static_cast<double>(run.batch) / std::max(run.compute_s, 1e-12), true,
                "the simulated accelerator's rate: batch_size / compute_ms");
  st.check(au >= run.threshold, "AU " + percent(au) + " < " + percent(run.threshold) +
                                    ": the storage cannot feed an accelerator computing " +
                                    number(run.compute_ms) + " ms per batch of " +
                                    std::to_string(run.batch));
  if (verify) {
    st.check(t.verify_failures == 0,
             "verify: " + std::to_string(t.verify_failures) +
                 " samples differed from the data written; first: " + t.first_failure);
  }
}

// The search's probes are partial epochs (`steps` batches, each in a new random order) measured
// after `warmup` = prefetch + 1 steps, so the batches the readers prepared ahead while the first
// ones computed do not flatter the loader: this is the rate it sustains.
struct probe_plan {
  std::uint64_t steps = 0;
  std::uint64_t warmup = 0;
  std::string text;  // how the probes were run, for the metrics' methods
};

probe_plan plan_probes(const ks::dataloader& dl, std::uint64_t prefetch) {
  probe_plan p;
  p.steps = std::min<std::uint64_t>(dl.steps_per_epoch(),
                                    std::max<std::uint64_t>(32, 4 * (prefetch + 1)));
  p.warmup = std::min<std::uint64_t>(prefetch + 1, p.steps / 2);
  p.text =
      std::to_string(p.steps) + "-step probes, the first " + std::to_string(p.warmup) + " excluded";
  return p;
}

ks::epoch_result probe(loader_run& run, ks::dataloader& dl, const probe_plan& plan, double c) {
  return dl.run_epoch(c, run.next_epoch_seed(), plan.steps, plan.warmup);
}

// The bisection's outcome: the compute-time bracket [lo, hi] per batch and the best rate fed.
struct fed_bracket {
  double best_rate = 0;  // samples/s of the best passing probe's accelerator; 0: none passed
  double lo = 0, hi = 0;
};

// Bisection on the compute time per batch: AU rises with it, and the smallest compute time with
// AU >= threshold is the fastest accelerator fed. Starts from the loader's own ceiling.
fed_bracket bisect_compute_time(loader_run& run, ks::dataloader& dl, const probe_plan& plan,
                                double loader_rate) {
  // The rate the accelerator actually ran at in the best passing probe: samples / its measured
  // busy time (below batch/compute_ms when CPU contention stretched the busy-wait).
  fed_bracket b;
  auto passes = [&](double c) {
    const ks::epoch_result r = probe(run, dl, plan, c);
    const bool ok = r.utilisation() >= run.threshold;
    if (ok)
      b.best_rate = std::max(b.best_rate, static_cast<double>(r.window_samples) / r.compute_s);
    return ok;
  };
  // AU = c * rate / batch when loader-bound.
  const double guess = run.threshold * run.batch / loader_rate;
  b.lo = guess * 0.5;
  b.hi = guess * 1.5;
  int probes = 0;
  while (!passes(b.hi) && probes++ < 4) b.hi *= 2;
  while (passes(b.lo) && probes++ < 8) b.lo /= 2;
  for (int i = 0; i < 4; ++i) {
    const double mid = 0.5 * (b.lo + b.hi);
    (passes(mid) ? b.hi : b.lo) = mid;
  }
  return b;
}

void report_search(infrabench::state& st, const loader_run& run, const probe_plan& plan,
                   const fed_bracket& b) {
  if (b.best_rate <= 0) {
    st.add_warning("search: no probed compute time reached AU >= au_threshold");
    return;
  }
  st.add_metric(
      "max_accelerator_samples_per_s_at_au", "samples/s", b.best_rate, true,
      "fastest simulated accelerator (samples / its measured compute time) fed with AU >= "
      "au_threshold: bisection over compute time per batch, " +
          plan.text + " (compute-time bracket +-" + percent(0.5 * (b.hi / b.lo - 1)) + ")");
  // MLPerf Storage's figure: how many accelerators of this kind the storage keeps busy.
  const double one = static_cast<double>(run.batch) / std::max(run.compute_s, 1e-12);
  st.add_metric("accelerators_at_au", "accelerators", std::floor(b.best_rate / one), true,
                "accelerators computing " + number(run.compute_ms) + " ms per batch of " +
                    std::to_string(run.batch) +
                    " this host's storage feeds at AU >= au_threshold: the fastest accelerator "
                    "fed / one accelerator's rate, rounded down (an estimate from one loader "
                    "pipeline, not a run with that many accelerators)");
}

// The loader's ceiling: its best rate over flat probes (no compute), at least three and until
// they add up to a tenth of a second, at most nine. A ceiling is a best case, and one short probe
// is a few milliseconds on a small data set: a single preemption of a reader halves it, and the
// bisection that starts from it (and the check below) would then be judged against a loader
// slower than the one it ran with.
struct loader_ceiling {
  double rate = 0;  // samples/s
  int probes = 0;
};

loader_ceiling measure_loader_ceiling(loader_run& run, ks::dataloader& dl, const probe_plan& plan) {
  loader_ceiling c;
  double seconds = 0;
  while (c.probes < 9 && (c.probes < 3 || seconds < 0.1)) {
    const ks::epoch_result flat = probe(run, dl, plan, 0);
    ++c.probes;
    seconds += flat.window_s;
    if (flat.window_s > 0)
      c.rate = std::max(c.rate, static_cast<double>(flat.window_samples) / flat.window_s);
  }
  return c;
}

// With search=1: the loader's own ceiling (no compute), then the fastest accelerator it feeds.
void search_fastest_fed(infrabench::state& st, loader_run& run, ks::dataloader& dl,
                        std::uint64_t prefetch) {
  const probe_plan plan = plan_probes(dl, prefetch);
  const loader_ceiling ceiling = measure_loader_ceiling(run, dl, plan);
  if (ceiling.rate <= 0) {
    st.add_warning("search: the flat probes delivered no samples in a measurable time");
    return;
  }
  const std::string probes = std::to_string(ceiling.probes);
  st.add_metric(
      "loader_max_samples_per_s", "samples/s", ceiling.rate, true,
      "samples delivered per second to an accelerator that computes nothing: the best of " +
          probes + " probes (" + plan.text + ")");
  const fed_bracket b = bisect_compute_time(run, dl, plan, ceiling.rate);
  report_search(st, run, plan, b);
  // An accelerator fed at AU >= threshold consumes at most the loader's rate / threshold; well
  // above that, the host ran faster during the bisection than during the ceiling's probes.
  if (b.best_rate * run.threshold > 1.5 * ceiling.rate) {
    st.add_warning("search: an accelerator of " + number(b.best_rate) +
                   " samples/s was fed at AU >= au_threshold, above what the loader's ceiling (" +
                   number(ceiling.rate) +
                   " samples/s) allows: the host's speed varied during the search");
  }
}

void storage_dataloader(infrabench::state& st) {
  loader_run run = loader_axes(st);
  refuse_early(st, run);
  const host_part mine = agree_on_dataset(st, run);
  const ks::dataloader_options opts = loader_options(st, run, mine);
  const std::unique_ptr<ks::dataloader> dl = start_loader(st, opts);
  const std::string scratch = st.option("scratch");
  const infrabench::storage_location where = sb::record_location(st, scratch, scratch, run.root);
  const infrabench::disk_busy_meter busy(where);
  const epoch_totals totals = measure_epochs(st, run, *dl);
  if (totals.measured == 0) return;  // interrupted after the warm-up epoch
  report_epochs(st, run, *dl, totals, opts.verify);
  sb::report_disk_util(st, busy, where);
  if (st.get_int64("search") == 0) return;
  if (st.interrupted_flag() != nullptr && st.interrupted_flag()->load()) return;
  search_fastest_fed(st, run, *dl, opts.prefetch);
}

// The job's row: the hosts loaded at the same time, so their sample rates add up; a synchronous
// data-parallel job waits for its slowest host, so the job's AU is the lowest host's.
void combine_loader_hosts(infrabench::state& st, const std::vector<sb::job_input_row>& hosts) {
  using infrabench::metric_role;
  const std::string n = std::to_string(hosts.size()) + " hosts";
  auto sum = [&](const std::string& metric) {
    double total = 0;
    for (double v : sb::values_of(hosts, metric)) total += v;
    return total;
  };
  const auto lowest =
      std::min_element(hosts.begin(), hosts.end(), [](const auto& a, const auto& b) {
        return a.metric("accelerator_utilization_percent") <
               b.metric("accelerator_utilization_percent");
      });
  st.add_metric(
      "accelerator_utilization_percent_min", "%", lowest->metric("accelerator_utilization_percent"),
      true,
      "the lowest host AU (a synchronous job runs at its slowest host's pace): " + lowest->who());
  st.check(
      lowest->metric("accelerator_utilization_percent") >= 100 * st.get_float64("au_threshold"),
      lowest->who() + ": AU below au_threshold");
  st.add_metric("aggregate_samples_per_s", "samples/s", sum("samples_per_s"), true,
                "sum of the " + n + "' median samples/s, loaded at the same time");
  st.add_metric("aggregate_gbps", "GB/s", sum("bandwidth_gbps"), true,
                "sum of the " + n + "' median GB/s, loaded at the same time, GB = 1e9 B");
  const auto accel = sb::values_of(hosts, "accelerators_at_au");
  if (accel.size() == hosts.size()) {
    st.add_metric("accelerators_at_au", "accelerators", sum("accelerators_at_au"), true,
                  "accelerators the whole cluster's storage feeds at AU >= au_threshold (MLPerf "
                  "Storage's figure): the sum of each host's accelerators_at_au, its search run "
                  "while the other hosts ran theirs");
  }
  st.add_metric("hosts", "hosts", static_cast<double>(hosts.size()), true,
                "hosts that measured (one rank each)", metric_role::information);
}

// What each host's row reports, beside the bytes and samples the work counts.
infrabench::benchmark& declare_loader_metrics(infrabench::benchmark& b) {
  return b.produces_items("sample")
      .produces_work(infrabench::work_kind::bytes)
      .relate("bandwidth_gbps", infrabench::relation_kind::view_of, "samples_per_s")
      .produces("accelerator_utilization_percent", "%", infrabench::better::higher)
      .headline("accelerator_utilization_percent")
      .produces("stall_ms_per_step", "ms", infrabench::better::lower)
      .produces("first_batch_ms", "ms", infrabench::better::lower)
      .produces("accelerator_samples_per_s", "samples/s", infrabench::better::higher)
      // search=1
      .produces("loader_max_samples_per_s", "samples/s", infrabench::better::higher)
      .produces("max_accelerator_samples_per_s_at_au", "samples/s", infrabench::better::higher)
      .produces("accelerators_at_au", "accelerators", infrabench::better::higher);
}

// The data set on disk: how big each sample file is, how many, and how they are spread over
// directories.
infrabench::benchmark& add_loader_data_set_axes(infrabench::benchmark& b) {
  return b
      .add_int64_axis("sample_size", {110 << 10},
                      infrabench::bytes_axis(
                          "bytes per sample file (110KiB: ImageNet JPEG; 140MiB: U-Net3D volume)",
                          1, std::int64_t{1} << 31))
      .add_int64_axis("samples", {1024},
                      infrabench::int_axis("sample files in the data set", 2, 1e9))
      .add_int64_axis("files_per_dir", {1024},
                      infrabench::int_axis("sample files per directory", 1, 1e9));
}

// The training loop it feeds and the readers feeding it: batches, the simulated step, the ring,
// the readers and their depth, then the AU target and its search.
infrabench::benchmark& add_loader_feed_axes(infrabench::benchmark& b) {
  return b
      .add_int64_axis("batch_size", {32},
                      infrabench::int_axis("samples per batch (per accelerator step)", 1, 1e6))
      .add_float64_axis(
          "compute_ms", {10.0},
          infrabench::float_axis("simulated accelerator time per batch, ms (busy-wait)", 0, 1e6))
      .add_int64_axis("prefetch", {4}, infrabench::int_axis("batches in the host ring", 1, 1024))
      .add_int64_axis("readers", {1},
                      infrabench::thread_count_axis("reader threads, each with its own ring", 1,
                                                    infrabench::io_threads_per_cpu))
      .add_int64_axis("reader_depth", {16},
                      infrabench::int_axis("reads in flight per reader", 1, 4096))
      .add_int64_axis("direct", {1},
                      infrabench::switch_axis("O_DIRECT; 0 = buffered, the page cache helps"))
      .add_float64_axis(
          "au_threshold", {0.9},
          infrabench::float_axis("AU a valid result needs (MLPerf Storage: 0.9)", 0, 1))
      .add_int64_axis(
          "search", {1},
          infrabench::switch_axis("also bisect for the fastest accelerator fed at au_threshold"));
}

// The host ring's memory: prefetch batches of batch_size samples, each in a 4 KiB-rounded slot.
std::int64_t loader_ring_memory(const infrabench::config& cfg) {
  const std::int64_t slot = (infrabench::config_int64(cfg, "sample_size", 0) + 4095) / 4096 * 4096;
  return slot * infrabench::config_int64(cfg, "batch_size", 0) *
         infrabench::config_int64(cfg, "prefetch", 0);
}

// storage/dataloader_job, registered after the workload's axes are complete (it copies them).
void register_loader_job(const infrabench::benchmark& b) {
  sb::register_job_row(b,
                       "storage/dataloader across the hosts of an mpirun/srun job: the "
                       "accelerators the whole cluster's storage feeds at the AU threshold "
                       "(MLPerf Storage's figure), the lowest host AU named",
                       combine_loader_hosts)
      .produces("accelerator_utilization_percent_min", "%", infrabench::better::higher)
      .headline("accelerator_utilization_percent_min")
      .produces("aggregate_samples_per_s", "samples/s", infrabench::better::higher)
      .produces("aggregate_gbps", "GB/s", infrabench::better::higher)
      .relate("aggregate_gbps", infrabench::relation_kind::view_of, "aggregate_samples_per_s")
      .produces("accelerators_at_au", "accelerators", infrabench::better::higher)
      .produces("hosts", "hosts", infrabench::better::higher, infrabench::metric_role::information);
}

[[maybe_unused]] const bool registered_dataloader = [] {
  auto& b = infrabench::registry::instance()
                .add("storage/dataloader", storage_dataloader)
                .scope(infrabench::rank_scope::every_rank);  // one rank per host reads
                                                             // (shared/storage_cluster.h)
  declare_loader_metrics(b).describe(
      "MLPerf-Storage-style data loading: sample files read in random order into "
      "host batches feeding a simulated accelerator; samples/s, GB/s, accelerator "
      "utilisation (valid if >= au_threshold), and the fastest accelerator fed at "
      "that AU");
  sb::declare_disk_util(b);
  sb::add_engine_axis(b, "reader_engine", {"io_uring"});
  add_loader_feed_axes(add_loader_data_set_axes(b)).memory_estimate(loader_ring_memory);
  register_loader_job(b);
  return true;
}();

}  // namespace
