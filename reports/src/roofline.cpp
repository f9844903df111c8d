// The data-path roofline (docs/roofline.md): each hop's measured rate (roofline_hops.cpp), read
// from a report (roofline_read.cpp), put together into the predicted job rate and its limit: how
// the measured step was built (its loader in series or beside it), the what-ifs, and the notes on
// what the prediction rests on. Pure computation on a report_view.
#include "infrabench/reports/roofline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "roofline_internal.h"

namespace infrabench::reports {

using detail::allreduce_hop;
using detail::at_repetition;
using detail::compute_hop;
using detail::context;
using detail::declared_metric;
using detail::declares_hops;
using detail::fmt;
using detail::gemm_model_hop;
using detail::h2d_hop;
using detail::host_cpus;
using detail::median_repetition;
using detail::parts_of;
using detail::preprocess_hop;
using detail::storage_hop;
using detail::training_result;
using detail::unit_scale;

namespace {

roofline_job changed_job(roofline_job job, const what_if& change) {
  if (change.gpus) job.ranks_per_node = *change.gpus;
  if (change.nodes) job.nodes = *change.nodes;
  if (change.cpu_threads) job.cpu_threads = *change.cpu_threads;
  return job;
}

// training/step's job rate beside the prediction: its headline (tokens/s of the whole job) over
// the tokens in a sample.
roofline_measured measured_rate(const context& c, const result_view* train, double predicted) {
  roofline_measured m;
  if (train == nullptr) {
    m.why = "training/step did not run this job (model, batch and sequence) in the report";
    return m;
  }
  const metric_decl* d = c.report.headline_of(train->benchmark);
  const metric_view* v = declared_metric(*train, d->name);
  m.present = true;
  m.source = {train->benchmark, train->config_label(), d->name, v->value, d->unit};
  m.per_job = v->value / c.facts.seq;  // tokens/s of the job; a ViT image is seq tokens
  m.per_gpu = m.per_job / std::max(1, c.report.world_size);
  m.ratio = m.per_job > 0 ? predicted / m.per_job : 0;
  return m;
}

// The step's serial time per GPU from its parts, and which part is largest.
struct step_parts {
  double compute_s = 0, storage_s = 0, preprocess_s = 0, allreduce_s = 0;
  [[nodiscard]] double total() const { return compute_s + storage_s + preprocess_s + allreduce_s; }
  [[nodiscard]] int parts() const {
    return (compute_s > 0 ? 1 : 0) + (storage_s > 0 ? 1 : 0) + (preprocess_s > 0 ? 1 : 0) +
           (allreduce_s > 0 ? 1 : 0);
  }
  [[nodiscard]] std::string largest() const {
    const std::array<std::pair<double, const char*>, 4> all = {{{compute_s, "compute"},
                                                                {storage_s, "storage"},
                                                                {preprocess_s, "preprocess"},
                                                                {allreduce_s, "allreduce"}}};
    return std::max_element(all.begin(), all.end(),
                            [](const auto& a, const auto& b) { return a.first < b.first; })
        ->second;
  }
};

void predict(roofline_result& out, const step_parts& step, int batch) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& h : out.hops) {
    if (h.has_rate() && !h.in_step && !h.beside && h.per_gpu < best) {
      best = h.per_gpu;
      out.limit = h.name;
    }
  }
  if (step.total() > 0) out.step_per_gpu = batch / step.total();
  if (step.total() > 0 && batch / step.total() < best) {
    best = batch / step.total();
    out.limit = step.largest();
  }
  if (!std::isfinite(best)) {
    out.limit = "none";
    out.notes.push_back("no hop of this job is measured in the report: nothing to predict");
    return;
  }
  out.predicted_per_gpu = best;
  out.predicted_per_job = best * out.job.ranks_per_node * out.job.nodes;
  for (auto& h : out.hops) {
    if (h.has_rate()) h.headroom = h.per_job / out.predicted_per_job;
  }
}

// A hop of the loader's own work (storage, preprocess) with a measured rate, not yet placed in the
// step: the hops place_loader may put in series. h2d is a copy stream of its own either way.
bool is_loader_hop(const roofline_hop& h) {
  return h.has_rate() && !h.beside && !h.in_step && h.name != "h2d";
}

// How the measured step was built: whether its loader's work (reading the batch, decoding it)
// ran in series with the step or beside it on a thread of its own. Read from the step's own
// time, never from its device or a name: the step's wait for data is its wall time (the batch
// over its measured rate per rank) less the phases it declares compute and all-reduce, both of one
// repetition. A loader beside the step leaves a wait of max(0, loader - step's own work); one in
// series, the loader's whole work. The hops' rates measured alone predict both; the build is the
// one whose wait is nearer the measured one. The two differ by min(loader, step's work), which is
// also how far apart their predictions are, so a wait that cannot tell them apart chooses between
// nearly equal predictions.
struct loader_build {
  bool decided = false;  // false: the step's wait is not in the report; overlap is assumed
  bool in_series = false;
  std::string evidence;
};

// The step's wall time and its own work (the phases declared compute and all-reduce), seconds
// per step, both of the median repetition; nullopt when the result lacks either.
std::optional<std::pair<double, double>> step_wall_and_own(const context& c,
                                                           const result_view& train) {
  const metric_decl* head = c.report.headline_of(train.benchmark);
  const metric_view* rate = head != nullptr ? declared_metric(train, head->name) : nullptr;
  if (rate == nullptr) return std::nullopt;
  const int k = median_repetition(*rate);
  const double per_rank = at_repetition(*rate, k) / c.facts.seq / std::max(1, c.report.world_size);
  double own = 0;
  for (const data_hop hop : {data_hop::compute, data_hop::allreduce}) {
    for (const metric_decl* d : parts_of(c.report, train.benchmark, hop)) {
      const metric_view* m = declared_metric(train, d->name);
      const auto scale = unit_scale(d->unit);
      if (m != nullptr && scale && d->kind == metric_kind::time && std::isfinite(m->value))
        own += at_repetition(*m, k) * *scale;
    }
  }
  if (!(per_rank > 0) || !(own > 0)) return std::nullopt;
  return std::make_pair(c.job.batch / per_rank, own);
}

loader_build loader_in_series(const context& c, const result_view* train,
                              const std::vector<roofline_hop>& hops) {
  loader_build b;
  if (train == nullptr) return b;
  const auto step = step_wall_and_own(c, *train);
  if (!step) return b;
  const auto [wall, own] = *step;
  // The loader's work per batch (its hops one after another: each file is read, then decoded)
  // and the slowest pipelined stage, without the what-if's factors: the build is the measured
  // step's. h2d is a stage of its own either way (a copy stream).
  double loader = 0, stage = 0;
  for (const auto& h : hops) {
    if (!h.has_rate() || h.beside || h.in_step) continue;
    const double t = c.job.batch / (h.per_gpu / c.scale(h.name));
    stage = std::max(stage, t);
    if (h.name != "h2d") loader += t;  // the loader's own hops (storage, preprocess)
  }
  if (!(loader > 0)) return b;
  const double wait = std::max(0.0, wall - own);
  const double if_beside = std::max(0.0, stage - own);
  b.decided = true;
  b.in_series = std::fabs(wait - loader) < std::fabs(wait - if_beside);
  b.evidence = "the step waited " + fmt(wait * 1e3) + " ms per step for data (" + fmt(wall * 1e3) +
               " ms less " + fmt(own * 1e3) +
               " ms of compute and all-reduce); its loader's hops take " + fmt(loader * 1e3) +
               " ms per batch alone, which would leave " + fmt(if_beside * 1e3) +
               " ms of wait beside the step: the loader ran " +
               (b.in_series ? "in series with the step (read + decode + compute add up)"
                            : "beside the step (the pipeline's minimum)");
  return b;
}

// Puts the loader's hops into the step's series when the step was built that way.
void place_loader(roofline_result& out, const loader_build& b, step_parts& step, int batch) {
  const bool loader_measured = std::any_of(out.hops.begin(), out.hops.end(), is_loader_hop);
  if (!b.decided && !loader_measured) return;  // nothing the build would change
  if (!b.decided) {
    out.notes.push_back(
        "the step's wait for data is not in the report (no training/step of this job with its "
        "step time): the loader is taken to run beside the step");
    return;
  }
  out.notes.push_back(b.evidence);
  if (!b.in_series) return;
  for (auto& h : out.hops) {
    if (!is_loader_hop(h)) continue;
    h.in_step = true;
    (h.name == "storage" ? step.storage_s : step.preprocess_s) += batch / h.per_gpu;
  }
}

// Every (benchmark, configuration) the roofline read: each hop's sources and the measured step.
std::set<std::pair<std::string, std::string>> used_sources(const roofline_result& out) {
  std::set<std::pair<std::string, std::string>> used;
  for (const auto& h : out.hops) {
    for (const auto& s : h.sources) used.insert({s.benchmark, s.configuration});
  }
  if (out.measured.present)
    used.insert({out.measured.source.benchmark, out.measured.source.configuration});
  return used;
}

// Each hop whose sources include an INVALID result: the first such result and its first reason,
// for the chart's hatched bar and its tooltip.
void mark_invalid_hops(const report_view& report, roofline_result& out) {
  for (auto& h : out.hops) {
    for (const auto& r : report.results) {
      if (r.valid || !h.invalid.empty()) continue;
      const bool read = std::any_of(h.sources.begin(), h.sources.end(), [&](const auto& s) {
        return s.benchmark == r.benchmark && s.configuration == r.config_label();
      });
      if (read)
        h.invalid =
            r.benchmark + " " + r.config_label() + ": " +
            (r.invalid_reasons.empty() ? std::string("invalid") : r.invalid_reasons.front());
    }
  }
}

// A note for each result the roofline reads that is INVALID (noisy, unverified): its number is
// used as measured, so the output must say what it rests on, never present it as trusted.
void note_invalid_inputs(const report_view& report, roofline_result& out) {
  mark_invalid_hops(report, out);
  auto used = used_sources(out);
  for (const auto& r : report.results) {
    if (r.valid || !used.count({r.benchmark, r.config_label()})) continue;
    used.erase({r.benchmark, r.config_label()});  // one note per result, not per rank
    out.notes.push_back(
        "INVALID input: " + r.benchmark + " " + r.config_label() + " (" +
        (r.invalid_reasons.empty() ? std::string("invalid") : r.invalid_reasons.front()) +
        "): its number is used as measured; rerun it valid before trusting "
        "this prediction");
  }
}

// The prediction divides one benchmark's number by another's: when each ran once, one after
// another, a load that changed between them (other processes on the node) enters the ratio as if
// it were the hardware. Interleaved repetitions (run --repetitions N: ABCABC, the median) share it
// out; this note says when the report has none (docs/roofline.md, "Measured here").
void note_single_runs(const report_view& report, roofline_result& out) {
  auto used = used_sources(out);
  if (used.size() < 2) return;
  for (const auto& r : report.results) {
    if (!used.count({r.benchmark, r.config_label()})) continue;
    const bool repeated = std::any_of(r.metrics.begin(), r.metrics.end(), [](const metric_view& m) {
      return m.repetitions.size() > 1;
    });
    if (repeated) continue;
    out.notes.push_back(
        "the hops were measured once each, one after another: a load that changed between them "
        "is in the prediction; run them with --repetitions 3 (interleaved) to share it out");
    return;
  }
}

}  // namespace

namespace {

bool changes_anything(const what_if& w) {
  return !w.text.empty() || !w.scale.empty() || w.gpus || w.nodes || w.cpu_threads ||
         w.nic_bytes_per_s;
}

// The roofline of `job0` changed by `change`. The loader's build is the measured step's: decided
// on the unchanged job (`base`, when given) and kept under every what-if.
roofline_result build_roofline(const report_view& report, const roofline_job& job0,
                               const what_if& change, const loader_build* base,
                               loader_build* decided) {
  const roofline_job job = changed_job(job0, change);
  check_job(job);
  context c{report, job, describe_job(job), change};
  c.gpu = job_on_gpu(report, job);
  check_what_ifs(report, job0, {change});  // never a GPU count on a CPU job
  c.cpus = job.cpu_threads > 0 ? job.cpu_threads : std::max(1, host_cpus(report));
  roofline_result out;
  out.job = job;
  out.device = c.gpu ? "gpu" : "cpu";
  const result_view* train = training_result(c);
  step_parts step;
  out.hops.push_back(storage_hop(c));
  out.hops.push_back(preprocess_hop(c));
  out.hops.push_back(h2d_hop(c));
  out.hops.push_back(compute_hop(c, train, &step.compute_s));
  out.hops.push_back(gemm_model_hop(c));
  if (!out.hops[3].has_rate() && out.hops[4].has_rate()) {
    out.hops[4].beside = false;  // the FLOP model stands in for the unmeasured step
    out.hops[4].in_step = true;
    step.compute_s = job.batch / out.hops[4].per_gpu;
    out.notes.push_back("compute from the GEMM model: training/step did not run this job");
  }
  out.hops.push_back(allreduce_hop(c, train, &step.allreduce_s));
  out.facts = c.facts;
  const loader_build build = base != nullptr ? *base : loader_in_series(c, train, out.hops);
  if (decided != nullptr) *decided = build;
  place_loader(out, build, step, job.batch);
  const bool series = build.decided && build.in_series;
  out.step_model =
      series ? (c.gpu ? "min(h2d, batch / (storage + preprocess + compute + exposed allreduce))"
                      : "batch / (storage + preprocess + compute + exposed allreduce)")
             : (c.gpu ? "min(storage, preprocess, h2d, batch / (compute + exposed allreduce))"
                      : "min(storage, preprocess, batch / (compute + exposed allreduce))");
  predict(out, step, job.batch);
  out.step_parts = step.parts();
  if (!changes_anything(change)) {
    out.measured = measured_rate(c, train, out.predicted_per_job);
    if (out.measured.present && report.world_size != c.ranks())
      out.notes.push_back("training/step ran " + std::to_string(report.world_size) +
                          " ranks; the job has " + std::to_string(c.ranks()));
  }
  if (c.gpu && job.nodes > 1 && !report.multi_node())
    out.notes.push_back("the report is of one node: the all-reduce's bus bandwidth is intra-node");
  if (!declares_hops(report))
    out.notes.push_back(
        "the report declares no data-path hop (written before benchmarks declared the hop they "
        "measure): no hop is read from it; rerun its benchmarks with this build");
  note_invalid_inputs(report, out);
  note_single_runs(report, out);
  return out;
}

}  // namespace

roofline_result compute_roofline(const report_view& report, const roofline_job& job0,
                                 const what_if& change) {
  if (!changes_anything(change)) return build_roofline(report, job0, change, nullptr, nullptr);
  loader_build base;
  (void)build_roofline(report, job0, {}, nullptr, &base);
  return build_roofline(report, job0, change, &base, nullptr);
}

roofline_analysis analyse_roofline(const report_view& report, const roofline_job& job,
                                   const std::vector<what_if>& what_ifs) {
  check_what_ifs(report, job, what_ifs);  // before anything is computed
  roofline_analysis a;
  a.base = compute_roofline(report, job);
  for (const auto& w : what_ifs) a.what_ifs.push_back({w, compute_roofline(report, job, w)});
  return a;
}

}  // namespace infrabench::reports
