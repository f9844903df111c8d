// The job the roofline predicts (docs/roofline.md): its per-sample facts from the model preset,
// its checks, the what-ifs it can take (parsed and refused), and what a rank is on its device.
#include <cmath>
#include <set>
#include <stdexcept>

#include "infrabench/error.h"
#include "roofline_internal.h"

namespace infrabench::reports {
namespace {

namespace tf = infrabench::kernels::transformer;
using json = nlohmann::json;

constexpr double token_align = 4096;  // the token loader's O_DIRECT read alignment (token_data.cpp)
constexpr int token_max_depth = 64;   // the token loader's reads in flight: min(batch, 64)

}  // namespace

namespace detail {

tf::model_config preset_of(const roofline_job& job) {
  const auto cfg = tf::find_preset(job.model);
  if (!cfg) {
    std::string names;
    for (const auto& n : tf::preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw user_error("--job " + job.model + ": not a training/step model (one of " + names + ")");
  }
  return *cfg;
}

}  // namespace detail

using detail::number_of;
using detail::preset_of;

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

}  // namespace infrabench::reports
