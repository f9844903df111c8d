// storage/checkpoint: MLPerf Storage v2.0's checkpointing workload, measured for real. Every rank
// writes its shard of a model's checkpoint (a Llama 3 preset scaled to the run, or a size) as new
// files in a directory this run created under --scratch, synced (fsync/fdatasync inside the
// time), with an engine of the table; the ranks then read their shards back past the page cache
// (O_DIRECT, or after dropping the files' pages) and every byte is checked; the files are removed
// before the next cycle. Ranks save at the same time and restore at the same time (an agreement
// between the phases), so the job's figure is MLPerf's: total bytes / the slowest rank's time.
// Each rank reports its own row; storage/checkpoint_job (job.cpp) the job's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "infrabench/benchmark.h"
#include "infrabench/communicator.h"
#include "infrabench/options.h"
#include "infrabench/state.h"
#include "infrabench/stats.h"
#include "job.h"
#include "shared/storage_scratch.h"
#include "storage/checkpoint.h"
#include "storage/engine.h"

namespace {

namespace ks = infrabench::kernels::storage;
namespace sb = infrabench::storage_bench;

struct checkpoint_config {
  std::uint64_t job_bytes = 0;  // asked for; the plan rounds it to whole writes
  std::string what;             // "llama3-8b x 0.001"
  std::uint32_t shards = 1;
  ks::checkpoint_options opts;
};

checkpoint_config read_config(infrabench::state& st) {
  checkpoint_config c;
  const std::string model = st.get_string("model");
  if (model == "custom") {
    c.job_bytes = static_cast<std::uint64_t>(st.get_int64("size"));
    c.what = "custom " + infrabench::format_bytes(st.get_int64("size"));
  } else {
    const ks::model_preset* p = ks::find_model_preset(model);
    if (p == nullptr) st.fail("unknown model '" + model + "'");  // the axis choices prevent it
    const double scale = st.get_float64("scale");
    c.job_bytes =
        static_cast<std::uint64_t>(std::llround(static_cast<double>(p->checkpoint_bytes) * scale));
    char text[96];
    std::snprintf(text, sizeof(text), "%s (%.4g GB) x %g", model.c_str(),
                  static_cast<double>(p->checkpoint_bytes) / 1e9, scale);
    c.what = text;
  }
  c.shards = static_cast<std::uint32_t>(st.get_int64("shards_per_rank"));
  c.opts.engine = st.get_string("engine");
  c.opts.io.queue_depth = static_cast<std::uint32_t>(st.get_int64("queue_depth"));
  c.opts.io.block_size = static_cast<std::uint64_t>(st.get_int64("write_size"));
  c.opts.io.direct = st.get_int64("direct") != 0;
  sb::read_engine_options(st, c.opts.io);
  c.opts.sync = *ks::parse_sync_mode(st.get_string("sync"));  // the axis choices
  c.opts.cancel = st.interrupted_flag();
  return c;
}

// This rank's directory and shard, or the reason it cannot have them (no disk touched beyond a
// new empty directory and, for O_DIRECT, an empty probe file in it).
struct rank_setup {
  std::unique_ptr<ks::run_directory> dir;
  std::unique_ptr<ks::checkpoint_shard> shard;
  ks::shard_plan plan;
};

std::string prepare(infrabench::state& st, const checkpoint_config& c, rank_setup& out) {
  infrabench::communicator& comm = st.comm();
  try {
    out.plan =
        ks::plan_shards(c.job_bytes, static_cast<std::uint32_t>(comm.size()),
                        static_cast<std::uint32_t>(comm.rank()), c.shards, c.opts.io.block_size);
    const std::string parent = st.option("scratch");
    const ks::target_info where = ks::inspect_target(parent);
    if (where.kind != ks::target_kind::directory) {
      return "scratch location " + parent + " is not a directory";
    }
    if (auto refusal = ks::check_free_space(parent, ks::filesystem_space(parent),
                                            out.plan.rank_bytes(), sb::scratch_reserve(st));
        !refusal.empty()) {
      return refusal;
    }
    out.dir = std::make_unique<ks::run_directory>(parent);
    if (!st.option_flag("keep-scratch")) infrabench::register_cleanup_path(out.dir->path());
    if (c.opts.io.direct) {
      sb::check_direct_block_size(c.opts.io.block_size, ks::inspect_new_file(out.dir->path()),
                                  parent);
    }
    ks::checkpoint_options o = c.opts;
    o.seed = 0x636b7074ull * 1000003 + static_cast<std::uint64_t>(comm.rank());
    out.shard = std::make_unique<ks::checkpoint_shard>(*out.dir, out.plan.file_bytes, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// Runs `fn` (this rank's `count` values), then takes the element-wise maximum over the ranks of
// them, of each rank's time in the configuration and of an error flag: every rank learns the
// slowest rank's figures, and a rank's error (or the time limit) ends the configuration on every
// rank at the same point, with its reason, rather than leaving the others waiting.
std::vector<double> agreed_phase(infrabench::state& st, std::size_t count,
                                 const std::function<std::vector<double>()>& fn) {
  std::vector<double> v(count, 0.0);
  std::string error;
  try {
    v = fn();
  } catch (const std::exception& e) {
    error = e.what();
  }
  v.resize(count, 0.0);
  v.push_back(st.comm().config_elapsed());
  v.push_back(error.empty() ? 0.0 : 1.0);
  sb::max_over_ranks(st, v);
  if (v[count + 1] > 0) {
    const std::string first = sb::first_problem(st, error);
    throw ks::storage_error(error.empty() ? "stopped because " + first : error);
  }
  const double timeout = st.comm().config_timeout();
  if (st.comm().size() > 1 && timeout > 0 && v[count] > timeout) {
    throw ks::storage_error("timed out after " + std::to_string(static_cast<int>(v[count])) +
                            " s on the slowest rank (--timeout)");
  }
  v.resize(count);
  return v;
}

// One checkpoint cycle on this rank, with the job's slowest save and restore. The save phase's
// agreement is also the barrier between saving and restoring: every rank finished writing before
// any rank reads back (MLPerf: save, then restore).
struct cycle {
  ks::save_result save;
  ks::restore_result restore;
  double job_save_s = 0;
  double job_restore_s = 0;
};

cycle run_cycle(infrabench::state& st, ks::checkpoint_shard& shard) {
  cycle c;
  c.job_save_s = agreed_phase(st, 1, [&] {
                   c.save = shard.save();
                   return std::vector<double>{c.save.seconds};
                 }).front();
  c.job_restore_s = agreed_phase(st, 1, [&] {
                      (void)shard.prepare_restore();
                      c.restore = shard.restore();
                      shard.remove();
                      return std::vector<double>{c.restore.seconds};
                    }).front();
  return c;
}

struct totals {
  std::vector<double> save_s, restore_s, sync_s, verify_s;
  ks::latency_histogram write_latency;
  std::uint64_t verify_failures = 0;
  std::string first_failure;
  ks::cache_state cache;
  std::string engine_text;
};

void add_metrics(infrabench::state& st, const checkpoint_config& c, const rank_setup& s,
                 const totals& t) {
  using infrabench::metric_role;
  const auto bytes = static_cast<double>(s.plan.rank_bytes());
  const double save = infrabench::summarize(t.save_s).median;
  const double restore = infrabench::summarize(t.restore_s).median;
  const std::string n = std::to_string(t.save_s.size());
  st.add_metric("write_gbps", "GB/s", bytes / save / 1e9, true,
                "this rank's shard bytes / its median time to save (" + n +
                    " cycles; files created, written and fsync'ed/fdatasync'ed), GB = 1e9 B");
  st.add_metric("read_gbps", "GB/s", bytes / restore / 1e9, true,
                "this rank's shard bytes / its median time to restore (read back past the page "
                "cache, every byte checked), GB = 1e9 B");
  st.add_metric("save_s", "s", save, false, "median time to save this rank's shard");
  st.add_metric("restore_s", "s", restore, false, "median time to restore this rank's shard");
  st.add_metric("sync_s", "s", infrabench::summarize(t.sync_s).median, false,
                "median time in fsync/fdatasync (inside save_s)", metric_role::information);
  st.add_metric("verify_s", "s", infrabench::summarize(t.verify_s).median, false,
                "median CPU time checking the bytes read (inside restore_s)",
                metric_role::information);
  const std::string hist_method =
      "completion latency of every write (handed to the kernel -> completed) of the measured "
      "cycles, from a log-linear histogram (relative error <= 0.39%); " +
      t.engine_text;
  const std::pair<const char*, double> percentiles[] = {
      {"write_latency_us_p50", 50}, {"write_latency_us_p99", 99}, {"write_latency_us_p99_9", 99.9}};
  for (const auto& [name, p] : percentiles) {
    st.add_metric(name, "us", t.write_latency.percentile(p) / 1e3, false, hist_method);
  }
  st.add_metric("write_latency_us_min", "us", static_cast<double>(t.write_latency.min()) / 1e3,
                false, "fastest write of the measured cycles (exact)");
  st.add_metric("write_latency_us_max", "us", static_cast<double>(t.write_latency.max()) / 1e3,
                false, "slowest write of the measured cycles");
  st.add_metric("write_latency_us_stdev", "us", t.write_latency.stdev() / 1e3, false,
                "sample standard deviation (n - 1, as fio's) of the write latencies of the "
                "measured cycles, from running sums of the latencies and their squares (exact, "
                "not from the histogram's buckets)");
  st.add_metric("shard_bytes", "B", bytes, true,
                "this rank's shard: " + std::to_string(s.plan.file_bytes.size()) + " file(s)",
                metric_role::information);
  st.add_metric("checkpoint_bytes", "B", static_cast<double>(s.plan.job_bytes), true,
                "the job's checkpoint: " + c.what + ", rounded to whole writes",
                metric_role::information);
  st.add_metric("page_cache_resident_percent", "%",
                t.cache.pages > 0 ? 100.0 * static_cast<double>(t.cache.resident) /
                                        static_cast<double>(t.cache.pages)
                                  : 0.0,
                false, "last restore: " + t.cache.describe(), metric_role::information);
}

// The engine table's refusals, agreed by every rank (a rank that skipped alone would leave the
// others waiting).
void require_writer(infrabench::state& st, const checkpoint_config& c) {
  const ks::engine_ops* ops = ks::find_engine(c.opts.engine);
  if (ops == nullptr) st.fail("unknown engine '" + c.opts.engine + "'");
  std::string refusal = sb::engine_refusal(st, *ops, c.opts.io);
  if (refusal.empty() && ops->make_writer == nullptr) refusal = c.opts.engine + " cannot write";
  if (auto why = sb::first_problem(st, refusal); !why.empty()) {
    st.skip(refusal.empty() ? why : refusal);
  }
}

void add_to(totals& t, const cycle& one, bool measured) {
  if (measured) {
    t.save_s.push_back(one.save.seconds);
    t.restore_s.push_back(one.restore.seconds);
    t.sync_s.push_back(one.save.sync_seconds);
    t.verify_s.push_back(one.restore.verify_seconds);
    t.write_latency.merge(one.save.write_latency);
  }
  t.verify_failures += one.restore.verify_failures;
  if (t.first_failure.empty()) t.first_failure = one.restore.first_failure;
  t.cache = one.restore.cache;
}

// The harness's cycles. exec_batched, not exec_timed: every cycle meets the other ranks twice, so
// every rank must make the same decisions (warm-up, batch size, when to stop) from the times they
// all agree on. exec_timed also counts this rank's own wall time, which differs between ranks by
// scheduling noise: one rank stopped while another began a cycle and waited for it in vain.
totals measure_cycles(infrabench::state& st, rank_setup& s) {
  totals t;
  try {
    st.exec_batched(
        [&](std::int64_t iters) {
          double total = 0;
          for (std::int64_t i = 0; i < iters; ++i) {
            const cycle one = run_cycle(st, *s.shard);
            add_to(t, one, st.sampling());  // the warm-up cycles are not counted
            total += one.job_save_s + one.job_restore_s;
          }
          return total / static_cast<double>(iters);
        },
        st.comm().size() > 1 ? "checkpoint_cycle_slowest_rank" : "checkpoint_cycle");
  } catch (const ks::storage_error& e) {
    s.shard->remove();
    st.fail(e.what());
  }
  return t;
}

void storage_checkpoint(infrabench::state& st) {
  checkpoint_config c = read_config(st);
  require_writer(st, c);
  rank_setup s;
  if (auto why = sb::first_problem(st, prepare(st, c, s)); !why.empty()) st.fail(why);
  if (st.option_flag("keep-scratch")) {
    s.dir->keep();
    st.add_warning("--keep-scratch: the directory " + s.dir->path() +
                   " is kept (the shard files are removed after each cycle all the same)");
  }
  if (!c.opts.io.direct) {
    st.add_warning(
        "direct=0: buffered writes (the time includes fsync), read back after dropping the "
        "files' pages from the page cache");
  }
  const std::string scratch = st.option("scratch");
  const infrabench::storage_location where =
      sb::record_location(st, scratch, scratch, s.dir->path());
  const infrabench::disk_busy_meter busy(where);
  totals t = measure_cycles(st, s);
  t.engine_text = "engine " + c.opts.engine;
  if (auto left = s.dir->remove_all(); !left.empty()) {
    st.add_warning("not removed: " + left);
  } else if (!st.option_flag("keep-scratch")) {
    infrabench::unregister_cleanup_path(s.dir->path());
  }
  st.check(t.verify_failures == 0,
           "verify: " + std::to_string(t.verify_failures) +
               " blocks read back differed from the data written; first: " + t.first_failure);
  if (t.save_s.empty()) return;  // interrupted during the warm-up
  add_metrics(st, c, s, t);
  sb::report_disk_util(st, busy, where);
}

// The job's row: the ranks saved at the same time and restored at the same time (an agreement
// between the phases), so the job's figure is its total bytes over its slowest rank's time.
void combine_ranks(infrabench::state& st, const std::vector<sb::job_input_row>& ranks) {
  using infrabench::metric_role;
  std::vector<ks::rank_times> times;
  for (const auto& r : ranks) {
    times.push_back({static_cast<std::uint64_t>(r.metric("shard_bytes")), r.metric("save_s"),
                     r.metric("restore_s")});
  }
  if (ranks.size() != static_cast<std::size_t>(st.comm().size())) {
    st.fail("only " + std::to_string(ranks.size()) + " of " + std::to_string(st.comm().size()) +
            " ranks saved a shard");
  }
  const ks::job_figures j = ks::job_figures_of(times);
  const std::string n = std::to_string(ranks.size()) + " ranks";
  st.add_metric("write_gbps", "GB/s", j.write_gbps, true,
                "MLPerf Storage's checkpoint write figure: the " + n +
                    "' shard bytes / the slowest rank's median save time (" +
                    ranks[j.slowest_save].who() + "), GB = 1e9 B");
  st.add_metric("read_gbps", "GB/s", j.read_gbps, true,
                "the " + n + "' shard bytes / the slowest rank's median restore time (" +
                    ranks[j.slowest_restore].who() + "), GB = 1e9 B");
  st.add_metric("save_s", "s", j.save_s, false,
                "time to save the job's checkpoint: the slowest rank's median");
  st.add_metric("restore_s", "s", j.restore_s, false,
                "time to restore the job's checkpoint: the slowest rank's median");
  st.add_metric("checkpoint_bytes", "B", static_cast<double>(j.bytes), true,
                "every rank's shard together", metric_role::information);
  st.add_metric("ranks", "ranks", static_cast<double>(ranks.size()), true,
                "ranks that wrote a shard", metric_role::information);
}

// The save and restore rates and times, the same on a rank's row and the job's row.
infrabench::benchmark& declare_checkpoint_rates(infrabench::benchmark& b) {
  return b.produces("write_gbps", "GB/s", infrabench::better::higher)
      .headline("write_gbps")
      .produces("read_gbps", "GB/s", infrabench::better::higher)
      .produces("save_s", "s", infrabench::better::lower)
      .produces("restore_s", "s", infrabench::better::lower)
      // A save's and a restore's time are their rates inverted (one timing each).
      .relate("save_s", infrabench::relation_kind::inverse_of, "write_gbps")
      .relate("restore_s", infrabench::relation_kind::inverse_of, "read_gbps");
}

// What each rank's row reports (add_metrics, report_disk_util), in the order the listing shows it.
infrabench::benchmark& declare_checkpoint_metrics(infrabench::benchmark& b) {
  return declare_checkpoint_rates(b)
      .produces("sync_s", "s", infrabench::better::lower, infrabench::metric_role::information)
      .produces("verify_s", "s", infrabench::better::lower, infrabench::metric_role::information)
      .produces("write_latency_us_p*", "us", infrabench::better::lower)  // p50, p99, p99_9
      .produces("write_latency_us_min", "us", infrabench::better::lower)
      .produces("write_latency_us_max", "us", infrabench::better::lower)
      .produces("write_latency_us_stdev", "us", infrabench::better::lower)
      .produces("shard_bytes", "B", infrabench::better::higher,
                infrabench::metric_role::information)
      .produces("checkpoint_bytes", "B", infrabench::better::higher,
                infrabench::metric_role::information)
      .produces("page_cache_resident_percent", "%", infrabench::better::lower,
                infrabench::metric_role::information)
      .produces("disk_util_percent", "%", infrabench::better::higher,
                infrabench::metric_role::information);
}

// The checkpoint's size and how it is cut: which model, how much of it, into how many files and
// writes (read_config reads these).
infrabench::benchmark& add_checkpoint_size_axes(infrabench::benchmark& b,
                                                const std::vector<std::string>& models) {
  return b
      .add_string_axis("model", {"llama3-8b"},
                       infrabench::choice_axis("checkpoint of MLPerf Storage v2.0's model (105 GB, "
                                               "912 GB, 5.29 TB, 18 TB), or custom (size)",
                                               models))
      .add_float64_axis("scale", {0.001},
                        infrabench::float_axis(
                            "fraction of the model's checkpoint the whole job writes", 1e-9, 1))
      .add_int64_axis("size", {std::int64_t{1} << 30},
                      infrabench::bytes_axis("the job's checkpoint when model=custom", 1))
      .add_int64_axis(
          "shards_per_rank", {1},
          infrabench::int_axis("files each rank writes its shard as (each held open until removed)",
                               1, 256))
      .add_int64_axis("write_size", {1 << 20},
                      infrabench::bytes_axis("bytes per write (and per read back)", 512, 1 << 30));
}

// How the bytes reach the disk: the engine and its options, its depth, O_DIRECT and the sync, and
// the memory the engine's buffers take.
void add_checkpoint_io_axes(infrabench::benchmark& b) {
  sb::add_engine_axis(b, "engine", {"psync"});
  b.add_int64_axis(
       "queue_depth", {1},
       infrabench::int_axis("writes/reads in flight (the engine's limit applies)", 1, 32768))
      .add_int64_axis("direct", {0},
                      infrabench::switch_axis("O_DIRECT; 0 = buffered writes + sync, buffered "
                                              "reads after dropping the files' cached pages"))
      .add_string_axis("sync", {"fsync"},
                       infrabench::choice_axis("how each file is made durable (inside the time)",
                                               {"fsync", "fdatasync"}));
  sb::add_engine_option_axes(b);
  b.memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
    // The pattern's template and the engine's buffers: (queue depth + 1) writes.
    return infrabench::config_int64(cfg, "write_size", 0) *
           (infrabench::config_int64(cfg, "queue_depth", 0) + 1);
  });
}

// storage/checkpoint_job, registered after the workload's axes are complete (it copies them).
void register_checkpoint_job(const infrabench::benchmark& b) {
  declare_checkpoint_rates(
      sb::register_job_row(b,
                           "storage/checkpoint for the whole mpirun/srun job, as MLPerf Storage "
                           "defines it: every rank's shard bytes / the slowest rank's time to "
                           "save (restore), the slowest rank named",
                           combine_ranks))
      .produces("checkpoint_bytes", "B", infrabench::better::higher,
                infrabench::metric_role::information)
      .produces("ranks", "ranks", infrabench::better::higher, infrabench::metric_role::information);
}

[[maybe_unused]] const bool registered_checkpoint = [] {
  std::vector<std::string> models;
  for (const auto& p : ks::model_presets()) models.emplace_back(p.name);
  models.emplace_back("custom");
  auto& b = infrabench::registry::instance()
                .add("storage/checkpoint", storage_checkpoint)
                .describe(
                    "MLPerf Storage checkpointing: every rank writes its shard of a Llama 3 "
                    "checkpoint (fsync in the time), reads it back past the page cache and checks "
                    "every byte; write/read GB/s per rank (the job's in storage/checkpoint_job), "
                    "save/restore time, write latency percentiles")
                .scope(infrabench::rank_scope::every_rank);
  add_checkpoint_size_axes(declare_checkpoint_metrics(b), models);
  add_checkpoint_io_axes(b);
  register_checkpoint_job(b);
  return true;
}();

}  // namespace
