// The roofline's hops (docs/roofline.md): each hop's rate read from the report and converted into
// the job's samples/s per rank, with the formula and the sources it rests on.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "roofline_internal.h"

namespace infrabench::reports::detail {
namespace {

namespace tf = infrabench::kernels::transformer;
using json = nlohmann::json;

}  // namespace

roofline_hop missing(const std::string& name, const std::string& status, const std::string& why) {
  roofline_hop h;
  h.name = name;
  h.status = status;
  h.why = why;
  return h;
}

namespace {

// Sets a hop's per-GPU rate (and per job) with the what-if's factor for it.
void set_rate(roofline_hop& h, const context& c, double per_gpu) {
  const double s = c.scale(h.name);
  if (s != 1.0) h.formula += " x " + fmt(s) + " (what-if)";
  h.status = hop_measured;
  h.per_gpu = per_gpu * s;
  h.per_job = h.per_gpu * c.ranks();
}

// The JPEG file size, from the preprocessing benchmark's source=jpeg result (the same synthetic
// photographs training/step writes): a declared size metric when the result has one, else the
// byte rate it declares in the storage hop's unit (the JPEG bytes it decodes per second) over its
// images/s: the same timing, so the bytes decoded per image.
std::optional<roofline_source> jpeg_size(const context& c) {
  for (const auto& bench : hop_benchmarks(c.report, data_hop::preprocess)) {
    const metric_decl* head = c.report.headline_of(bench);
    const auto input = parts_of(c.report, bench, data_hop::storage_read);
    for (const auto& r : c.report.results) {
      if (r.benchmark != bench || r.status != status::passed ||
          !r.axes_match(json{{"source", "jpeg"}}))
        continue;
      for (const auto& m : r.metrics) {
        const metric_decl* d = c.report.declaration(r.benchmark, m.name);
        if (d != nullptr && d->kind == metric_kind::size && d->unit == "B" && m.value > 0)
          return roofline_source{r.benchmark, r.config_label(), m.name, m.value, d->unit};
      }
      const metric_view* images = declared_metric(r, head->name);
      for (const metric_decl* d : input) {
        const metric_view* in = declared_metric(r, d->name);
        const auto scale = unit_scale(d->unit);
        if (in != nullptr && images != nullptr && scale && d->kind == metric_kind::rate &&
            images->value > 0 && in->value > 0)
          return roofline_source{r.benchmark, r.config_label(), in->name + " / " + images->name,
                                 in->value * *scale / images->value, "B"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

roofline_hop storage_hop(context& c) {
  std::vector<roofline_source> extra;
  if (c.facts.format == data_format::jpeg) {
    const auto size = jpeg_size(c);
    if (!size)
      return missing("storage", "not measured",
                     "the JPEG files' size is not in the report (a preprocessing result with "
                     "source=jpeg)");
    c.facts.logical_bytes_per_sample = c.facts.disk_bytes_per_sample = size->value;
    c.facts.read_block_bytes = size->value;
    extra.push_back(*size);
  }
  config_want want;
  want.exact = {{"pattern", "rand"}, {"direct", 1}};
  want.near = {{"block_size", c.facts.read_block_bytes},
               {"queue_depth", static_cast<double>(c.facts.read_queue_depth)},
               {"jobs", 1.0}};
  const read_rate rate = headline_rate(c.report, data_hop::storage_read, std::nullopt, want);
  if (rate.result == nullptr) return missing("storage", "not measured", rate.why);
  roofline_hop h;
  h.name = "storage";
  h.sources = {rate.source};
  h.sources.insert(h.sources.end(), extra.begin(), extra.end());
  const double node = rate.base / c.facts.disk_bytes_per_sample;
  h.formula = fmt(rate.base / 1e6) + " MB/s / " + fmt(c.facts.disk_bytes_per_sample) +
              " B read per sample = " + fmt(node) + " samples/s per node, / " +
              std::to_string(c.job.ranks_per_node) + " " + c.rank_word() +
              "(s) per node (node-local scratch)";
  set_rate(h, c, node / c.job.ranks_per_node);
  return h;
}

// Decode + transform: images/s at the measured thread count nearest the threads each GPU gets,
// scaled linearly to that count. Whether it runs beside the step or inside it is decided later,
// from the step's own data wait (loader_in_series).
roofline_hop preprocess_hop(const context& c) {
  if (c.facts.format != data_format::jpeg)
    return missing("preprocess", "not applicable", "token shards need no decoding");
  config_want want;
  want.exact = {{"source", "jpeg"}};
  want.near = {{"threads", c.threads_per_rank()}, {"crop", static_cast<double>(c.facts.image)}};
  want.cpus = host_cpus(c.report);
  const read_rate rate = headline_rate(c.report, data_hop::preprocess, std::nullopt, want);
  if (rate.result == nullptr) return missing("preprocess", "not measured", rate.why);
  double threads = axis_number(*rate.result, "threads").value_or(1);
  if (threads == 0) threads = want.cpus > 0 ? want.cpus : 1;
  roofline_hop h;
  h.name = "preprocess";
  h.sources = {rate.source};
  const double per_gpu = rate.base / threads * c.threads_per_rank();
  h.formula = fmt(rate.base) + " images/s measured on " + fmt(threads) + " thread(s), x " +
              fmt(c.threads_per_rank()) + " thread(s) per " + c.rank_word() + " / " + fmt(threads);
  set_rate(h, c, per_gpu);
  return h;
}

roofline_hop h2d_hop(const context& c) {
  if (!c.gpu) return missing("h2d", "not applicable", "the CPU path copies nothing to a device");
  config_want want;
  want.exact = {{"memory", "pinned"}, {"copy", "ce"}};
  want.near = {{"size", c.facts.device_bytes_per_sample * c.job.batch}};
  const read_rate rate = headline_rate(c.report, data_hop::h2d, std::nullopt, want);
  if (rate.result == nullptr) return missing("h2d", "not measured", rate.why);
  roofline_hop h;
  h.name = "h2d";
  h.sources = {rate.source};
  h.formula = fmt(rate.base / 1e9) + " GB/s / " + fmt(c.facts.device_bytes_per_sample) +
              " B per sample after preprocessing";
  set_rate(h, c, rate.base / c.facts.device_bytes_per_sample);
  return h;
}

// The whole-step result (a benchmark declaring the `step` hop) of this job's model, batch and
// sequence, if the report has one.
const result_view* training_result(const context& c) {
  const auto steps = hop_benchmarks(c.report, data_hop::step);
  for (const auto& r : c.report.results) {
    if (r.status != status::passed ||
        std::find(steps.begin(), steps.end(), r.benchmark) == steps.end())
      continue;
    const metric_decl* d = c.report.headline_of(r.benchmark);
    if (!r.axes_match(json{{"model", c.job.model}, {"batch", c.job.batch}})) continue;
    // seq=0 is the preset's own length; ViT's is fixed by the image.
    const auto seq = axis_number(r, "seq");
    const double resolved = seq && *seq != 0 ? *seq : preset_of(c.job).max_seq;
    if (c.facts.family == "gpt2" && resolved != c.facts.seq) continue;
    if (declared_metric(r, d->name) != nullptr) return &r;
  }
  return nullptr;
}

// The repetition of `m` whose value is its median (the nearest one for an even count), so that a
// step's wall time and its phases are read from one run: with --repetitions the report merges
// each metric's median on its own, and those need not add up (docs/roofline.md, "Not
// modelled"). -1 when the metric has no repetitions.
int median_repetition(const metric_view& m) {
  int best = -1;
  for (std::size_t k = 0; k < m.repetitions.size(); ++k) {
    if (best < 0 || std::fabs(m.repetitions[k] - m.value) <
                        std::fabs(m.repetitions[static_cast<std::size_t>(best)] - m.value))
      best = static_cast<int>(k);
  }
  return best;
}

double at_repetition(const metric_view& m, int k) {
  return k >= 0 && static_cast<std::size_t>(k) < m.repetitions.size()
             ? m.repetitions[static_cast<std::size_t>(k)]
             : m.value;
}
namespace {

// The repetition of a step result whose rate is the median one (-1: none), from which its phase
// times are read so that they add up to the step the measured rate is.
int step_repetition(const context& c, const result_view& r) {
  const metric_decl* head = c.report.headline_of(r.benchmark);
  const metric_view* rate = head != nullptr ? declared_metric(r, head->name) : nullptr;
  return rate != nullptr ? median_repetition(*rate) : -1;
}

// A phase time of the training result in seconds (declared a time), of the repetition whose rate
// is the median, with its source.
std::optional<double> phase_s(const context& c, const result_view& r, const std::string& name,
                              std::vector<roofline_source>* sources) {
  const metric_view* m = declared_metric(r, name);
  const metric_decl* d = c.report.declaration(r.benchmark, name);
  if (m == nullptr || d == nullptr || d->kind != metric_kind::time || !std::isfinite(m->value))
    return std::nullopt;
  const auto s = unit_scale(d->unit);
  if (!s) return std::nullopt;
  const double v = at_repetition(*m, step_repetition(c, r));
  if (sources != nullptr) sources->push_back({r.benchmark, r.config_label(), name, v, d->unit});
  return v * *s;
}

// A GEMM shape axis ("256" square, "MxNxK") as its three sizes; nullopt for a named layer.
std::optional<std::array<double, 3>> gemm_shape(const result_view& r) {
  const auto text = axis_text(r, "shape");
  if (!text) return std::nullopt;
  const std::string& s = *text;
  std::array<double, 3> dims{};
  int n = 0;
  std::size_t start = 0;
  while (n < 3) {
    const std::size_t x = s.find('x', start);
    const auto v = number_of(json(s.substr(start, x == std::string::npos ? x : x - start)));
    if (!v || *v <= 0) return std::nullopt;
    dims[static_cast<std::size_t>(n++)] = *v;
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (n == 1)
    dims = {dims[0], dims[0], dims[0]};
  else if (n != 3)
    return std::nullopt;
  return dims;
}

}  // namespace

// Compute predicted from the model's FLOPs and the GEMM rate at the threads and shape nearest the
// model's linear layers (rows = batch x seq, width x 4 width): shown beside the measured compute,
// and used for the step when training/step did not run this job.
roofline_hop gemm_model_hop(const context& c) {
  const tf::model_config cfg = preset_of(c.job);
  const std::array<double, 3> want_dims = {static_cast<double>(c.job.batch) * c.facts.seq,
                                           4.0 * cfg.width, static_cast<double>(cfg.width)};
  config_want want;
  if (c.gpu)
    want.exact = {{"dtype", "bf16"}};
  else
    want.near = {{"threads", c.threads_per_rank()}};
  want.cpus = host_cpus(c.report);
  want.extra = [want_dims](const result_view& r) {
    const auto dims = gemm_shape(r);
    if (!dims) return 50.0;
    double d = 0;
    for (std::size_t i = 0; i < 3; ++i) d += std::fabs(std::log2((*dims)[i] / want_dims[i]));
    return d;
  };
  const read_rate rate = headline_rate(c.report, data_hop::compute, c.gpu, want);
  if (rate.result == nullptr) return missing("compute (GEMM model)", "not measured", rate.why);
  roofline_hop h;
  h.name = "compute (GEMM model)";
  h.beside = true;
  h.sources = {rate.source};
  h.formula = fmt(rate.base / 1e9) + " GFLOP/s / " + fmt(c.facts.flops_per_sample / 1e6) +
              " MFLOP per sample (6N + 12LTd per token); ignores all non-GEMM work";
  h.status = hop_measured;
  h.per_gpu = rate.base / c.facts.flops_per_sample * c.scale("compute");
  h.per_job = h.per_gpu * c.ranks();
  return h;
}
namespace {

// The step's time of `hop` in seconds: the sum of the phase times its benchmark declares that hop
// (sources added); nullopt when the result carries none of them.
std::optional<double> hop_time_s(const context& c, const result_view& r, data_hop hop,
                                 std::vector<roofline_source>* sources, std::string* names) {
  std::optional<double> total;
  for (const metric_decl* d : parts_of(c.report, r.benchmark, hop)) {
    const auto v = phase_s(c, r, d->name, sources);
    if (!v) continue;
    total = total.value_or(0) + *v;
    if (names != nullptr) *names += (names->empty() ? "" : " + ") + d->name;
  }
  return total;
}

// The CPU threads a training step result computed on: its `threads` axis, or for 0 (the CPUs
// its rank could use) the host's usable CPUs over the report's ranks per host; 0 when unknown.
double step_threads(const context& c, const result_view& train) {
  const double threads = axis_number(train, "threads").value_or(0);
  if (threads > 0) return threads;
  const double per_host = static_cast<double>(std::max<std::size_t>(c.report.rank_count(), 1)) /
                          static_cast<double>(std::max<std::size_t>(c.report.host_count(), 1));
  return host_cpus(c.report) / std::max(1.0, per_host);
}

}  // namespace

// Compute measured by the whole step: its phase times declared compute (forward, backward,
// optimizer, and the wall time no phase accounts for: it is in the step too). Sets *step_s to
// that time per step.
roofline_hop compute_hop(const context& c, const result_view* train, double* step_s) {
  if (train == nullptr)
    return missing("compute", "not measured",
                   "no passed training step result of " + c.job.model + " at batch " +
                       std::to_string(c.job.batch) + ", seq " + std::to_string(c.facts.seq));
  roofline_hop h;
  h.name = "compute";
  h.in_step = true;
  std::string names;
  const auto time = hop_time_s(c, *train, data_hop::compute, &h.sources, &names);
  if (!time || !(*time > 0))
    return missing("compute", "not measured",
                   train->benchmark + " declares no compute phase time this result carries");
  // A CPU job's ranks share the node's cores: the step measured on `measured` threads runs on
  // threads_per_rank() in each (scaled linearly, as the loader is), so N ranks on a node share its
  // rate rather than multiply it by N (issue 45 item 17).
  const double measured = c.gpu ? 0 : step_threads(c, *train);
  const double threads = measured > 0 ? c.threads_per_rank() / measured : 1;
  const double total = *time / c.scale("compute") / threads;
  *step_s = total;
  h.formula =
      std::to_string(c.job.batch) + " samples / " + fmt(total * 1e3) + " ms (" + names + ")";
  if (threads != 1)
    h.formula += ", its " + fmt(*time * 1e3) + " ms on " + fmt(measured) + " thread(s) scaled to " +
                 fmt(c.threads_per_rank()) + " per rank";
  if (const int k = step_repetition(c, *train); k >= 0)
    h.formula += ", of repetition " + std::to_string(k + 1) + " (the median rate's)";
  h.status = hop_measured;
  h.per_gpu = c.job.batch / total;
  h.per_job = h.per_gpu * c.ranks();
  return h;
}

// The gradient all-reduce: gradient bytes over the bus bandwidth measured nearest that message
// size, t = bytes x 2(n-1)/n / busbw; exposed in the step as the measured step exposed it (the
// overlap it achieved), or wholly when the report does not say. Sets *exposed_s.
roofline_hop allreduce_hop(const context& c, const result_view* train, double* exposed_s) {
  const int n = c.ranks();
  if (n < 2) return missing("allreduce", "not applicable", "one rank: no gradients to exchange");
  config_want want;
  want.exact = {{"dtype", "float32"}};
  want.near = {{"size", c.facts.gradient_bytes}};
  const read_rate rate = headline_rate(c.report, data_hop::allreduce, c.gpu, want);
  const double bus_bytes = c.facts.gradient_bytes * 2.0 * (n - 1) / n;
  roofline_hop h;
  h.name = "allreduce";
  h.in_step = true;
  // What the measured step left exposed, when it ran this many ranks.
  std::optional<double> shown;
  if (train != nullptr && c.report.world_size == n)
    shown = hop_time_s(c, *train, data_hop::allreduce, &h.sources, nullptr);
  double busbw = rate.base;
  if (c.change.nic_bytes_per_s && c.job.nodes > 1) {
    busbw = *c.change.nic_bytes_per_s;  // a ring's bus bandwidth reaches the slowest link's rate
    h.formula = "busbw " + fmt(busbw / 1e9) + " GB/s (the what-if's NICs); ";
  } else if (rate.result != nullptr) {
    h.sources.insert(h.sources.begin(), rate.source);
    h.formula = "busbw " + fmt(busbw / 1e9) + " GB/s; ";
  } else if (shown && *shown > 0) {
    // No collectives result: the step's own exposed all-reduce time is the measurement.
    *exposed_s = *shown / c.scale("allreduce");
    h.formula = "the step's exposed all-reduce time, " + fmt(*exposed_s * 1e3) + " ms";
    h.status = hop_measured;
    h.per_gpu = c.job.batch / *exposed_s;
    h.per_job = h.per_gpu * n;
    return h;
  } else {
    return missing("allreduce", "not measured", rate.why);
  }
  const double full = bus_bytes / busbw / c.scale("allreduce");
  // The overlap the measured step achieved against the collectives benchmark's time; none known:
  // none assumed (the CPU path's dp=sync hides nothing).
  double overlap = 0;
  if (shown && rate.base > 0) overlap = std::clamp(1 - *shown / (bus_bytes / rate.base), 0.0, 1.0);
  *exposed_s = full * (1 - overlap);
  h.formula += fmt(c.facts.gradient_bytes / 1e6) + " MB x 2(n-1)/n = " + fmt(full * 1e3) + " ms, " +
               fmt(overlap * 100) + "% hidden behind the backward (as measured)";
  h.status = hop_measured;
  h.per_gpu = c.job.batch / full;
  h.per_job = h.per_gpu * n;
  return h;
}

}  // namespace infrabench::reports::detail
