// The data-path roofline (docs/roofline.md): each hop's measured rate, converted into the job's
// samples/s, the predicted job rate and its limit. Pure computation on a report_view.
#include "infrabench/reports/roofline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>

#include "cpu/transformer/model_config.h"
#include "infrabench/error.h"

namespace infrabench::reports {
namespace {

namespace tf = infrabench::kernels::transformer;
using json = nlohmann::json;

// ---- where each hop is measured
// ------------------------------------------------------------------ Every benchmark declares, on
// its headline, which hop of a training job it measures (metric_decl.h: data_hop), and a whole-step
// benchmark declares which hop each of its phase times is: the roofline picks its inputs by these
// declarations, never by a benchmark's or a metric's name. A report written before the
// declarations existed declares no hop; every hop of it is "not measured", with a note saying why
// (docs/roofline.md).

// The benchmarks of the report whose headline declares `hop`, on the job's device when `gpu` says
// (a benchmark runs on a GPU when it requires one), by name (the order of the report's map).
std::vector<std::string> hop_benchmarks(const report_view& report, data_hop hop,
                                        std::optional<bool> gpu = std::nullopt) {
  std::vector<std::string> out;
  for (const auto& [bench, meta] : report.benchmarks) {
    const metric_decl* d = report.headline_of(bench);
    if (d == nullptr || d->hop != hop) continue;
    if (gpu && report.runs_on_gpu(bench).value_or(false) != *gpu) continue;
    out.push_back(bench);
  }
  return out;
}

// Whether any benchmark of the report declares a hop (a report of this build does).
bool declares_hops(const report_view& report) {
  for (const auto& [bench, meta] : report.benchmarks) {
    for (const auto& d : meta.metrics) {
      if (d.hop != data_hop::none) return true;
    }
  }
  return false;
}

// The declared metrics of `bench` that are `hop` and not its headline (phase times, a byte rate in
// that hop's unit), in declaration order; empty when none is.
std::vector<const metric_decl*> parts_of(const report_view& report, const std::string& bench,
                                         data_hop hop) {
  std::vector<const metric_decl*> out;
  const auto it = report.benchmarks.find(bench);
  if (it == report.benchmarks.end()) return out;
  for (const auto& d : it->second.metrics) {
    if (!d.headline && d.hop == hop) out.push_back(&d);
  }
  return out;
}

constexpr double token_align = 4096;  // the token loader's O_DIRECT read alignment (token_data.cpp)
constexpr int token_max_depth = 64;   // the token loader's reads in flight: min(batch, 64)

// Multiplier from a declared unit to base units (bytes/s, FLOP/s, s, items/s); nullopt when the
// unit is not one a hop can use.
std::optional<double> unit_scale(const std::string& unit) {
  static const std::map<std::string, double> scales = {
      {"B/s", 1},      {"KB/s", 1e3},   {"MB/s", 1e6},    {"GB/s", 1e9},
      {"TB/s", 1e12},  {"FLOP/s", 1},   {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12},
      {"s", 1},        {"ms", 1e-3},    {"us", 1e-6},     {"ns", 1e-9},
      {"images/s", 1}, {"tokens/s", 1}, {"samples/s", 1}, {"B", 1},
  };
  const auto it = scales.find(unit);
  if (it == scales.end()) return std::nullopt;
  return it->second;
}

std::optional<double> number_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      const double d = std::stod(v.get<std::string>(), &used);
      if (used == v.get<std::string>().size()) return d;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

std::optional<double> axis_number(const result_view& r, const std::string& axis) {
  const auto it = r.axes.find(axis);
  if (it == r.axes.end()) return std::nullopt;
  return number_of(it->second);
}

std::string fmt(double v) {
  char buf[64];
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (a >= 1e4)
    std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else if (a >= 100)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The usable CPUs of the report's first host (threads=0 means them), 0 when not said.
int host_cpus(const report_view& report) {
  if (report.inventories.empty()) return 0;
  for (const auto& [key, text] : report.inventories.front().fields) {
    if (key != "cpu.logical_cpus_usable") continue;
    const auto n = number_of(json(text));
    return n && *n >= 1 && *n == std::floor(*n) ? static_cast<int>(*n) : 0;
  }
  return 0;
}

// An axis's value when the result wrote it as text ("256", "4096x4096x4096"); nullopt otherwise.
std::optional<std::string> axis_text(const result_view& r, const std::string& axis) {
  const auto it = r.axes.find(axis);
  if (it == r.axes.end() || !it->second.is_string()) return std::nullopt;
  return it->second.get<std::string>();
}

// ---- choosing a configuration
// ----------------------------------------------------------------------

// What a hop wants of a benchmark's configuration: axes that must equal a value (when the result
// has the axis), and axes whose value should be as near as possible (log distance) to a target.
struct config_want {
  std::map<std::string, json> exact;
  std::map<std::string, double> near;
  int cpus = 0;  // resolves a `threads` of 0 (all CPUs) for nearness
  // A further distance for what axes cannot say directly (a GEMM's shape string).
  std::function<double(const result_view&)> extra;
};

double distance(const result_view& r, const config_want& want) {
  double d = 0;
  for (const auto& [axis, target] : want.near) {
    auto v = axis_number(r, axis);
    if (!v) continue;
    if (*v == 0 && axis == "threads" && want.cpus > 0) v = want.cpus;
    if (*v <= 0 || target <= 0) {
      d += 100;  // a value nearness cannot compare: last resort
      continue;
    }
    d += std::fabs(std::log2(*v / target));
  }
  return want.extra ? d + want.extra(r) : d;
}

// The value a hop reads from `r` for a declared metric: the metric itself or, for a declared family
// of cells (bandwidth_gbps_*: one per GPU of a copy matrix), the slowest cell, the GPU that holds a
// synchronous job back. Hop metrics are rates (headline_rate checks the unit), so slowest = lowest.
const metric_view* declared_metric(const result_view& r, const std::string& name) {
  const auto named = r.metrics_named(name);
  if (name.find('*') == std::string::npos) return named.empty() ? nullptr : named.front();
  const metric_view* slowest = nullptr;
  for (const metric_view* m : named) {
    if (!std::isfinite(m->value) || m->value <= 0) continue;
    if (slowest == nullptr || m->value < slowest->value) slowest = m;
  }
  return slowest;
}

// The passed result of `bench` nearest `want` that carries a finite value of `metric`; *best_d is
// its distance (lowered only when one is found nearer than it was).
const result_view* pick(const report_view& report, const std::string& bench,
                        const std::string& metric, const config_want& want, double* best_d) {
  const result_view* best = nullptr;
  for (const auto& r : report.results) {
    if (r.benchmark != bench || r.status != status::passed) continue;
    const metric_view* m = declared_metric(r, metric);
    if (m == nullptr || !std::isfinite(m->value) || m->value <= 0) continue;
    bool ok = true;
    for (const auto& [axis, value] : want.exact) {
      if (r.axes.count(axis) != 0 && !r.axes_match(json{{axis, value}})) ok = false;
    }
    if (!ok) continue;
    const double d = distance(r, want);
    if (d < *best_d) {
      *best_d = d;
      best = &r;
    }
  }
  return best;
}

// A hop's rate source: the declared headline of the benchmark that declares the hop, read at the
// configuration nearest `want` (of every such benchmark on the device), in base units. Sets `why`
// when the report cannot give it.
struct read_rate {
  const result_view* result = nullptr;
  roofline_source source;
  double base = 0;  // value x unit scale
  std::string why;
};

read_rate headline_rate(const report_view& report, data_hop hop, std::optional<bool> gpu,
                        const config_want& want) {
  read_rate out;
  const std::string hop_name(to_string(hop));
  const auto benches = hop_benchmarks(report, hop, gpu);
  if (benches.empty()) {
    out.why = "no benchmark in the report declares the " + hop_name + " hop" +
              (gpu ? (*gpu ? " on a GPU" : " on the CPU") : "");
    return out;
  }
  double best_d = std::numeric_limits<double>::infinity();
  const metric_decl* best_decl = nullptr;
  for (const auto& bench : benches) {
    const metric_decl* d = report.headline_of(bench);
    if (!unit_scale(d->unit)) {
      out.why = bench + "'s headline " + d->name + " is in " + d->unit + ", not a rate a hop uses";
      continue;
    }
    if (const result_view* r = pick(report, bench, d->name, want, &best_d)) {
      out.result = r;
      best_decl = d;
    }
  }
  if (out.result == nullptr) {
    if (out.why.empty()) out.why = "no passed result of " + hop_name + "'s benchmark in the report";
    return out;
  }
  const metric_view* m = declared_metric(*out.result, best_decl->name);
  out.source = {out.result->benchmark, out.result->config_label(), m->name, m->value,
                best_decl->unit};
  out.base = m->value * *unit_scale(best_decl->unit);
  out.why.clear();
  return out;
}

// ---- the job
// ----------------------------------------------------------------------------------------

tf::model_config preset_of(const roofline_job& job) {
  const auto cfg = tf::find_preset(job.model);
  if (!cfg) {
    std::string names;
    for (const auto& n : tf::preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw user_error("--job " + job.model + ": not a training/step model (one of " + names + ")");
  }
  return *cfg;
}

// ---- the hops
// -------------------------------------------------------------------------------------

// What every hop's computation reads: the report, the job as changed by the what-if, its facts.
struct context {
  const report_view& report;
  roofline_job job;
  job_facts facts;
  const what_if& change;
  bool gpu = false;
  int cpus = 0;  // per node
  [[nodiscard]] int ranks() const { return job.ranks_per_node * job.nodes; }
  [[nodiscard]] double threads_per_rank() const {
    return std::max(1.0, static_cast<double>(cpus) / job.ranks_per_node);
  }
  // What a rank is, for the formulas' words: a GPU, or a CPU process (rank_unit's choice).
  [[nodiscard]] std::string rank_word() const { return gpu ? "GPU" : "rank"; }
  [[nodiscard]] double scale(const std::string& hop) const {
    const auto it = change.scale.find(hop);
    return it == change.scale.end() ? 1.0 : it->second;
  }
};

roofline_hop missing(const std::string& name, const std::string& status, const std::string& why) {
  roofline_hop h;
  h.name = name;
  h.status = status;
  h.why = why;
  return h;
}

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

}  // namespace

void check_job(const roofline_job& job) {
  if (job.batch < 1) throw user_error("--batch must be at least 1");
  if (job.ranks_per_node < 1) throw user_error("--ranks-per-node must be at least 1");
  if (job.nodes < 1) throw user_error("--nodes must be at least 1");
  if (job.cpu_threads < 0) throw user_error("--cpu-threads must be 0 (the host's) or more");
  (void)describe_job(job);
}

job_facts describe_job(const roofline_job& job) {
  const tf::model_config cfg = preset_of(job);
  job_facts f;
  const bool gpt = cfg.family == tf::model_family::gpt2;
  f.family = gpt ? "gpt2" : "vit";
  if (!gpt && job.seq != 0)
    throw user_error("--seq is for GPT-2 models; " + job.model + " takes --image");
  if (gpt && job.image != 0)
    throw user_error("--image is for ViT models; " + job.model + " takes --seq");
  if (!gpt && job.image != 0 && job.image != cfg.image) {
    throw user_error("--image " + std::to_string(job.image) + ": " + job.model + " takes " +
                     std::to_string(cfg.image) + " px images (its patch grid is fixed)");
  }
  try {
    f.seq = tf::resolve_seq(cfg, gpt ? job.seq : 0);
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--seq: ") + e.what());
  }
  f.format = job.format.value_or(gpt ? data_format::tokens : data_format::jpeg);
  if (gpt && f.format == data_format::jpeg)
    throw user_error("--data jpeg: " + job.model + " trains on token shards (--data tokens)");
  if (!gpt && f.format == data_format::tokens)
    throw user_error("--data tokens: " + job.model + " trains on JPEG files (--data jpeg)");
  f.image = gpt ? 0 : cfg.image;
  f.parameters = static_cast<double>(tf::make_param_layout(cfg).total);
  f.flops_per_sample =
      tf::flops_per_token(cfg, static_cast<std::int64_t>(f.parameters), f.seq) * f.seq;
  f.gradient_bytes = f.parameters * 4;  // fp32 gradients, one buffer
  if (gpt) {
    // seq + 1 tokens of 16 bits at a random token offset, read as whole 4 KiB blocks (O_DIRECT):
    // a span of L bytes at an even offset touches 1 + (L - 2) / 4096 blocks on average.
    f.logical_bytes_per_sample = (f.seq + 1) * 2.0;
    f.disk_bytes_per_sample = token_align * (1 + (f.logical_bytes_per_sample - 2) / token_align);
    f.read_block_bytes = std::ceil(f.logical_bytes_per_sample / token_align) * token_align;
    f.read_queue_depth = std::min(job.batch, token_max_depth);
    f.device_bytes_per_sample = f.seq * 4.0 * 2;  // int32 inputs and targets
  } else {
    // Whole JPEG files, one pread each: the size comes from the report (preprocess/pipeline).
    f.read_queue_depth = 1;
    f.device_bytes_per_sample = 3.0 * cfg.image * cfg.image * 4 + 4;  // fp32 CHW + a label
  }
  return f;
}

what_if parse_what_if(const std::string& text) {
  what_if w;
  w.text = text;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw user_error("--what-if " + text + ": '" + item +
                       "' is not KEY=VALUE (storage=2x, "
                       "nics=400Gb/s, gpus=8, nodes=4, cpu_threads=32)");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto bad = [&](const std::string& want) {
      return user_error("--what-if " + item + ": " + want);
    };
    const auto positive = [&](const std::string& v) {
      const auto n = number_of(json(v));
      if (!n || !(*n > 0) || !std::isfinite(*n)) throw bad("'" + v + "' is not a positive number");
      return *n;
    };
    static const std::set<std::string> hops = {"storage", "preprocess", "h2d", "compute",
                                               "allreduce"};
    if (hops.count(key) != 0) {
      if (value.back() != 'x') throw bad("a hop takes a factor: " + key + "=2x");
      w.scale[key] = positive(value.substr(0, value.size() - 1));
    } else if (key == "gpus" || key == "nodes" || key == "cpu_threads") {
      const double n = positive(value);
      if (n != std::floor(n) || n > 1e6) throw bad("a whole number is needed");
      (key == "gpus" ? w.gpus : key == "nodes" ? w.nodes : w.cpu_threads) = static_cast<int>(n);
    } else if (key == "nics") {
      const std::size_t unit_at = value.find_first_not_of("0123456789.");
      const std::string unit = unit_at == std::string::npos ? "" : value.substr(unit_at);
      const double n = positive(value.substr(0, unit_at));
      if (unit == "Gb/s" || unit == "Gbit/s")
        w.nic_bytes_per_s = n * 1e9 / 8;
      else if (unit == "GB/s")
        w.nic_bytes_per_s = n * 1e9;
      else
        throw bad("give the rate with its unit: 400Gb/s or 50GB/s");
    } else {
      throw bad("unknown key '" + key +
                "' (storage|preprocess|h2d|compute|allreduce=Nx, nics=, "
                "gpus=, nodes=, cpu_threads=)");
    }
  }
  return w;
}

namespace {

bool report_runs_gpu(const report_view& report) {
  for (const auto& r : report.results) {
    if (r.status == status::passed && report.runs_on_gpu(r.benchmark).value_or(false)) return true;
  }
  return false;
}

}  // namespace

bool job_on_gpu(const report_view& report, const roofline_job& job) {
  return job.device == job_device::gpu ||
         (job.device == job_device::automatic && report_runs_gpu(report));
}

// A CPU job has no GPUs to add: `gpus=8` would multiply a rate measured on the node's cores
// (one thread, or all of them) by eight devices the node does not have. Scaling by what the run
// has instead (its CPUs) would be a different question than the one asked, silently answered;
// so it is refused, naming the what-ifs a CPU node can take (nodes=, cpu_threads=, a hop's factor).
void check_what_ifs(const report_view& report, const roofline_job& job,
                    const std::vector<what_if>& what_ifs) {
  if (job_on_gpu(report, job)) return;
  for (const auto& w : what_ifs) {
    if (w.gpus)
      throw user_error("--what-if " + w.text + ": the job computes on the CPU (" +
                       (job.device == job_device::cpu ? std::string("--device cpu")
                                                      : "the report has no passed GPU result") +
                       "): there are no GPUs to add; try nodes=N, cpu_threads=N or compute=2x");
  }
}

std::string rank_unit(const roofline_result& r) {
  if (r.device == "gpu") return "GPU";
  return r.job.ranks_per_node == 1 ? "node" : "rank";
}

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

namespace {

roofline_source source_of(const roofline_view::source& s) {
  return {s.benchmark, s.configuration, s.metric, s.value, s.unit};
}

}  // namespace

roofline_analysis analysis_of(const roofline_view& v) {
  roofline_analysis a;
  roofline_result& r = a.base;
  r.job.model = v.model;
  r.job.batch = v.batch;
  r.job.ranks_per_node = v.ranks_per_node;
  r.job.nodes = v.nodes;
  r.facts.seq = v.seq;
  r.facts.format = v.data == "jpeg" ? data_format::jpeg : data_format::tokens;
  r.device = v.device;
  r.limit = v.limit;
  r.step_model = v.step_model;
  r.predicted_per_job = v.predicted_per_job;
  for (const auto& h : v.hops) {
    roofline_hop hop{h.name,    h.status,   h.why,     h.in_step, h.beside, h.per_gpu,
                     h.per_job, h.headroom, h.formula, {},        h.invalid};
    for (const auto& s : h.sources) hop.sources.push_back(source_of(s));
    r.hops.push_back(std::move(hop));
  }
  r.measured.present = v.measured;
  r.measured.why = v.measured_why;
  r.measured.per_job = v.measured_per_job;
  r.measured.ratio = v.predicted_over_measured;
  r.measured.source = source_of(v.measured_source);
  r.notes = v.notes;
  for (const auto& w : v.what_ifs) {
    roofline_scenario s;
    s.change.text = w.what_if;
    s.result.limit = w.limit;
    s.result.predicted_per_job = w.predicted_per_job;
    a.what_ifs.push_back(std::move(s));
  }
  return a;
}

std::string roofline_summary(const roofline_result& r) {
  if (r.limit == "none") return "no hop measured";
  return r.limit + "-bound at " + fmt(r.predicted_per_job) + " samples/s";
}

namespace {

json source_json(const roofline_source& s) {
  return {{"benchmark", s.benchmark},
          {"configuration", s.configuration},
          {"metric", s.metric},
          {"value", s.value},
          {"unit", s.unit}};
}

json nullable(double v, bool present) {
  return present && std::isfinite(v) ? json(v) : json();
}

json result_json(const roofline_result& r) {
  json hops = json::array();
  for (const auto& h : r.hops) {
    json j = {{"hop", h.name},
              {"status", h.status},
              {"in_step", h.in_step},
              {"beside", h.beside},
              {"samples_per_s_per_gpu", nullable(h.per_gpu, h.has_rate())},
              {"samples_per_s_job", nullable(h.per_job, h.has_rate())},
              {"tokens_per_s_job", nullable(h.per_job * r.facts.seq, h.has_rate())},
              {"headroom", nullable(h.headroom, h.has_rate() && r.limit != "none")},
              {"formula", h.formula},
              {"sources", json::array()}};
    if (!h.why.empty()) j["why"] = h.why;
    if (!h.invalid.empty()) j["invalid"] = h.invalid;
    for (const auto& s : h.sources) j["sources"].push_back(source_json(s));
    hops.push_back(j);
  }
  const bool predicted = r.limit != "none";
  json out = {
      {"device", r.device},
      {"per_rank_unit", rank_unit(r)},  // what samples_per_s_per_gpu is per, on this device
      {"hops", hops},
      {"limit", r.limit},
      {"step_model", r.step_model},
      {"predicted_samples_per_s_job", nullable(r.predicted_per_job, predicted)},
      {"predicted_samples_per_s_per_gpu", nullable(r.predicted_per_gpu, predicted)},
      {"predicted_tokens_per_s_job", nullable(r.predicted_per_job * r.facts.seq, predicted)},
      {"notes", r.notes}};
  return out;
}

json job_json(const roofline_result& r) {
  const auto& j = r.job;
  const auto& f = r.facts;
  return {{"model", j.model},
          {"batch", j.batch},
          {"seq", f.seq},
          {"image", f.image},
          {"data", f.format == data_format::tokens ? "tokens" : "jpeg"},
          {"ranks_per_node", j.ranks_per_node},
          {"nodes", j.nodes},
          {"cpu_threads", j.cpu_threads},
          {"model_parameters", f.parameters},
          {"flops_per_sample", f.flops_per_sample},
          {"disk_bytes_per_sample", f.disk_bytes_per_sample},
          {"device_bytes_per_sample", f.device_bytes_per_sample},
          {"gradient_bytes", f.gradient_bytes}};
}

}  // namespace

json roofline_json(const roofline_analysis& a) {
  json out = result_json(a.base);
  out["job"] = job_json(a.base);
  const auto& m = a.base.measured;
  out["measured"] = m.present ? json{{"samples_per_s_job", m.per_job},
                                     {"samples_per_s_per_gpu", m.per_gpu},
                                     {"predicted_over_measured", m.ratio},
                                     {"source", source_json(m.source)}}
                              : json{{"why", m.why}};
  out["what_ifs"] = json::array();
  for (const auto& s : a.what_ifs) {
    json w = result_json(s.result);
    w["what_if"] = s.change.text;
    w["job"] = job_json(s.result);
    out["what_ifs"].push_back(w);
  }
  return out;
}

namespace {

std::string pad(const std::string& s, std::size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

std::string hop_line(const roofline_result& r, const roofline_hop& h) {
  std::string line = "  " + pad(h.name, 22);
  if (!h.has_rate()) return line + h.status + ": " + h.why + "\n";
  line += pad(fmt(h.per_gpu), 12, true) + pad(fmt(h.per_job), 12, true) +
          pad(fmt(h.per_job * r.facts.seq), 12, true);
  line += pad(h.beside ? "(beside)" : fmt(h.headroom) + "x", 10, true);
  if (h.name == r.limit) line += h.in_step ? "  <- limit (the step's largest part)" : "  <- limit";
  line += "\n";
  line += "      " + h.formula + "\n";
  // The sources, each configuration once: "from <configuration>: metric = value unit, ...".
  std::string config;
  for (const auto& s : h.sources) {
    if (s.configuration != config) {
      line += (config.empty() ? "" : "\n") + std::string("      from ") + s.configuration + ": ";
      config = s.configuration;
    } else {
      line += ", ";
    }
    line += s.metric + " = " + fmt(s.value) + " " + s.unit;
  }
  if (!config.empty()) line += "\n";
  return line;
}

}  // namespace

std::string roofline_text(const roofline_analysis& a) {
  const roofline_result& r = a.base;
  const auto& f = r.facts;
  std::string out = "roofline: " + r.job.model + ", batch " + std::to_string(r.job.batch) + " x " +
                    std::to_string(f.seq) + " tokens, " +
                    (f.format == data_format::tokens ? "token shards" : "JPEG files") + ", " +
                    std::to_string(r.job.nodes) + " node(s) x " +
                    std::to_string(r.job.ranks_per_node) + " rank(s) (" + r.device + ")\n";
  out += "  " + pad("hop", 22) + pad("samples/s/" + rank_unit(r), 12, true) +
         pad("samples/s", 12, true) + pad("tokens/s", 12, true) + pad("headroom", 10, true) + "\n";
  for (const auto& h : r.hops) out += hop_line(r, h);
  if (r.step_parts > 1) {
    // The in-step parts add up: the step's rate is theirs together, the limit its largest part.
    const double job = r.step_per_gpu * r.job.ranks_per_node * r.job.nodes;
    out += "  " + pad("step (parts in series)", 22) + pad(fmt(r.step_per_gpu), 12, true) +
           pad(fmt(job), 12, true) + pad(fmt(job * f.seq), 12, true) +
           pad(fmt(job / r.predicted_per_job) + "x", 10, true) + "\n";
  }
  out += "predicted: " + roofline_summary(r) + " (" + fmt(r.predicted_per_job * f.seq) +
         " tokens/s) = " + r.step_model + "\n";
  if (r.measured.present) {
    out += "measured:  " + fmt(r.measured.per_job) + " samples/s (" +
           r.measured.source.configuration + ": " + r.measured.source.metric + " = " +
           fmt(r.measured.source.value) + " " + r.measured.source.unit +
           "); predicted / measured = " + fmt(r.measured.ratio) + "\n";
  } else {
    out += "measured:  not measured (" + r.measured.why + ")\n";
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  for (const auto& s : a.what_ifs) {
    out += "what-if " + s.change.text + ": " + roofline_summary(s.result) + " (" +
           fmt(r.predicted_per_job > 0 ? s.result.predicted_per_job / r.predicted_per_job : 0) +
           "x)\n";
  }
  return out;
}

}  // namespace infrabench::reports
