// The data-path roofline (docs/roofline.md): for one training job, every hop's sustainable rate
// read from one report's measurements, converted into the job's unit (samples/s per GPU and per
// job), the predicted job rate, the hop that limits it, each other hop's headroom, and the
// measured training/step rate beside the prediction. What-ifs scale a hop or change the node and
// name the next limit. Pure computation on a report_view: no benchmark runs here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infrabench/reports/report_io.h"

namespace infrabench::reports {

enum class data_format { tokens, jpeg };
enum class job_device { automatic, cpu, gpu };

// The job as the user states it (`infrabench roofline --job ...`).
struct roofline_job {
  std::string model;                  // a training/step preset: gpt2-tiny, gpt2-124m, vit-tiny, ...
  int batch = 8;                      // per GPU (per rank)
  int seq = 0;                        // GPT-2 tokens per sample; 0 = the preset's
  int image = 0;                      // ViT image side in pixels; 0 = the preset's
  std::optional<data_format> format;  // default: tokens for GPT-2, jpeg for ViT
  int ranks_per_node = 1;
  int nodes = 1;
  int cpu_threads = 0;  // per node; 0 = the report's host's usable CPUs
  job_device device = job_device::automatic;
};

// What the job moves and computes per sample, from the model preset (kernels/cpu/transformer).
struct job_facts {
  std::string family;  // gpt2 | vit
  data_format format = data_format::tokens;
  int seq = 0;                          // tokens per sample (ViT: 1 + patches)
  int image = 0;                        // ViT's side in pixels
  double parameters = 0;                // N
  double flops_per_sample = 0;          // (6 N + 12 L T d) x T
  double disk_bytes_per_sample = 0;     // what the device reads for one sample
  double logical_bytes_per_sample = 0;  // what the sample holds on disk
  double read_block_bytes = 0;          // one read's size at the loader's access pattern
  int read_queue_depth = 1;             // reads the loader keeps in flight
  double device_bytes_per_sample = 0;   // after preprocessing: what is copied to the GPU
  double gradient_bytes = 0;            // fp32 gradients all-reduced per step
};

// Where one input number came from.
struct roofline_source {
  std::string benchmark, configuration, metric;
  double value = 0;
  std::string unit;
};

// The status of a hop with a rate (the section's word, as the schema spells it).
inline constexpr std::string_view hop_measured = "measured";

struct roofline_hop {
  std::string name;  // storage, preprocess, h2d, compute, allreduce
  // measured | not measured (the report lacks it) | not applicable (this job has no such hop)
  std::string status;
  std::string why;       // for a hop without a rate: what was missing
  bool in_step = false;  // part of the step's serial time rather than a pipelined stage
  bool beside = false;   // shown beside the others, not part of the prediction (the GEMM model)
  double per_gpu = 0;    // samples/s per GPU this hop sustains alone
  double per_job = 0;    // samples/s across the job
  double headroom = 0;   // per_job over the predicted job rate
  std::string formula;   // how the rate was derived, with the numbers
  std::vector<roofline_source> sources;
  // Why a result this hop reads is INVALID ("training/step model=... : noisy ..."); empty when
  // every source is valid. The chart hatches such a bar grey, as the report pages mark INVALID.
  std::string invalid;
  [[nodiscard]] bool has_rate() const { return status == hop_measured; }
};

// A what-if: hops scaled (storage=2x), or the node changed (gpus=8, nodes=4, cpu_threads=32,
// nics=400Gb/s). Several in one scenario apply together.
struct what_if {
  std::string text;                     // as given: "storage=2x,gpus=8"
  std::map<std::string, double> scale;  // hop -> factor
  std::optional<int> gpus, nodes, cpu_threads;
  std::optional<double> nic_bytes_per_s;  // each node's network rate, bytes/s
};
// Parses "storage=2x", "nics=400Gb/s", "gpus=8", "cpu_threads=32" (comma-separated for one
// scenario); throws user_error naming what is wrong.
[[nodiscard]] what_if parse_what_if(const std::string& text);

struct roofline_measured {
  bool present = false;
  std::string why;  // when absent
  double per_job = 0, per_gpu = 0;
  roofline_source source;
  double ratio = 0;  // predicted / measured
};

struct roofline_result {
  roofline_job job;
  job_facts facts;
  std::string device;  // cpu | gpu, resolved
  std::vector<roofline_hop> hops;
  double predicted_per_job = 0, predicted_per_gpu = 0;  // samples/s
  std::string limit;                                    // the limiting hop
  std::string step_model;   // what overlaps: the formula of the prediction
  double step_per_gpu = 0;  // the step's serial parts together (0: none measured)
  int step_parts = 0;       // how many parts the step has (compute, all-reduce; storage and
                            // preprocess when the loader ran in series with it)
  roofline_measured measured;
  std::vector<std::string> notes;
};

struct roofline_scenario {
  what_if change;
  roofline_result result;
};

struct roofline_analysis {
  roofline_result base;
  std::vector<roofline_scenario> what_ifs;
};

// The job's per-sample facts from its preset; throws user_error for an unknown model or a shape
// the model cannot take.
[[nodiscard]] job_facts describe_job(const roofline_job& job);
// Checks the job's numbers (batch, ranks, nodes) and its model; throws user_error.
void check_job(const roofline_job& job);

// Whether the job computes on a GPU: --device, or (auto) the report has a passed result of a
// benchmark that requires one (its declared requirements, never its name).
[[nodiscard]] bool job_on_gpu(const report_view& report, const roofline_job& job);
// Refuses (user_error) a what-if the job's device cannot take: `gpus=N` on a CPU job.
void check_what_ifs(const report_view& report, const roofline_job& job,
                    const std::vector<what_if>& what_ifs);
// What one rank is on the job's device, for a per-rank rate's unit: "GPU" on a GPU, "node" for
// one CPU rank per node, else "rank" (a CPU process). From r.device and the job, never a name.
[[nodiscard]] std::string rank_unit(const roofline_result& r);

// The roofline of `job` from `report`, with `change` applied (an empty what_if for the base).
[[nodiscard]] roofline_result compute_roofline(const report_view& report, const roofline_job& job,
                                               const what_if& change = {});
[[nodiscard]] roofline_analysis analyse_roofline(const report_view& report, const roofline_job& job,
                                                 const std::vector<what_if>& what_ifs);

// The analysis a report's `roofline` section holds, read back (report_view::roofline), for the
// chart and the summary line: the job's facts beyond its model, batch, seq and ranks are not kept.
[[nodiscard]] roofline_analysis analysis_of(const roofline_view& v);

// The analysis as JSON (the report's `roofline` section), as a console table, and one line
// ("storage-bound at 1.2k samples/s") for compare.
[[nodiscard]] nlohmann::json roofline_json(const roofline_analysis& a);
[[nodiscard]] std::string roofline_text(const roofline_analysis& a);
[[nodiscard]] std::string roofline_summary(const roofline_result& r);
// The chart's rate axis (log10 of samples/s of the job, whole decades): one for every chart of a
// page, so that side-by-side reports are drawn on one scale.
struct roofline_scale {
  double lo = 0, hi = 1;
};
[[nodiscard]] roofline_scale roofline_common_scale(const std::vector<const roofline_result*>& rs);
// One analysis as an HTML <section> (chart, sources table, what-ifs); ids start with `prefix`;
// drawn on `scale` (default: its own rates').
[[nodiscard]] std::string roofline_section_html(const std::string& label,
                                                const roofline_analysis& a,
                                                const std::string& prefix,
                                                const std::optional<roofline_scale>& scale = {});
// A self-contained HTML page with the charts side by side (html_roofline.cpp).
[[nodiscard]] std::string roofline_html(
    const std::vector<std::pair<std::string, roofline_analysis>>& analyses);

}  // namespace infrabench::reports
