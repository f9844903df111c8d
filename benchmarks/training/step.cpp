// training/step: a transformer trained data-parallel, fed from storage — the whole path of a
// training node at once. Each step, every rank
//   1. takes its batch from the loader: GPT-2 token sequences read from scratch shard files of a
//      synthetic Markov corpus (our storage engine: io_uring, O_DIRECT) by a loader thread that
//      reads ahead; or ViT images read as JPEG files, decoded and transformed by our preprocessing,
//   2. (GPU) copies it to the device,
//   3. runs the model forward and backward (GPT-2 or ViT on one transformer engine: on the CPU
//      the fp32 reference on our GEMM; on a GPU cuBLASLt and our kernels),
//   4. all-reduces the gradients with the other ranks (MPI on the CPU, NCCL on GPUs),
//   5. applies AdamW to their mean.
// Reported: tokens/s (ViT: images/s) of the job and per rank, MFU, the per-phase breakdown
// (adding up to the step), peak memory, and the loss of the first and last timed step. A step is
// as fast as its slowest rank: each batch of steps is timed on every rank and the maximum kept.
//
// Verified: before timing on a GPU, the tiny model's gradients against the CPU reference (on a
// CPU, the vectorised GEMM against the scalar one); after timing, every loss finite, the loss
// falling (given enough steps) and, on the Markov corpus, never below its entropy (a model that
// beats the entropy sees its targets), one transformed image against the unfused scalar stages
// (ViT), and bit-identical parameters on every rank.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/gemm_peak.h"
#include "cpu/transformer/batch_loader.h"
#include "cpu/transformer/cpu_model.h"
#include "cpu/transformer/model_config.h"
#include "cpu/transformer/step_metrics.h"
#include "image_data.h"
#include "infrabench/benchmark.h"
#include "infrabench/communicator.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"
#include "set_up.h"
#include "shared/gemm_support.h"
#include "shared/preprocess_data.h"
#include "storage/engine.h"
#include "storage/target.h"
#include "token_data.h"
#include "trainer.h"

namespace infrabench::training_bench {
namespace {

namespace kc = infrabench::kernels::cpu;
namespace ks = infrabench::kernels::storage;
namespace pb = infrabench::preprocess_bench;
namespace gb = infrabench::gemm_bench;

using clock_type = std::chrono::steady_clock;

// Untimed steps before the harness's own warm-up call: page faults, MPI's and NCCL's first
// large messages, cuBLASLt's heuristics and lazy module loading stay out of the timed steps.
// On the CPU the harness's warm-up call (one step) covers it: a gpt2-124m step takes seconds there.
constexpr int gpu_extra_warmup_steps = 2;
// The GPU gradients' tolerances against the CPU fp32 reference: tf::gpu_bf16_gradient_tolerance
// and tf::gpu_fp32_gradient_tolerance (step_metrics.h, where a test places them).
// The vectorised CPU GEMM against the scalar one: both fp32, only the summation order differs.
constexpr double cpu_gradient_tolerance = 1e-3;
// The scalar GEMM takes ~1 s per GFLOP: the CPU check runs for the small models only.
constexpr std::size_t cpu_check_max_params = 2000000;

// Ranks that share this rank's host (they share its CPUs).
[[nodiscard]] std::size_t ranks_on_this_host(const communicator& comm) {
  const auto hosts = comm.hostnames();
  const auto n = std::count(hosts.begin(), hosts.end(), comm.hostname());
  return static_cast<std::size_t>(std::max<std::ptrdiff_t>(n, 1));
}

// ---- the configuration ----------------------------------------------------------------------

struct setup {
  trainer_options opt;
  bool gpu = false;
  std::size_t threads = 1;
  std::uint64_t corpus_bytes = 0;
  std::size_t samples = 0;
};

// The device, dtype and data-parallel mode: auto values from what this node has, and the skips of
// what this node or build cannot run.
void resolve_device(state& st, setup& s) {
  std::string device = st.get_string("device");
  if (device == "auto") {
    device = st.caps().cuda.available ? "gpu" : "cpu";
    st.set_axis_display("device", "auto (" + device + ")");
  }
  s.gpu = device == "gpu";
  if (s.gpu && !gpu_trainer_unavailable_reason().empty())
    st.skip(infrabench::reason_code::no_device, gpu_trainer_unavailable_reason());
  if (s.gpu && !st.caps().cuda.available)
    st.skip(infrabench::reason_code::no_device, st.caps().cuda.reason);
  if (s.gpu) st.ran_on_rank_gpu();

  std::string dtype = st.get_string("dtype");
  if (dtype == "auto") {
    dtype = s.gpu ? "bf16" : "fp32";
    st.set_axis_display("dtype", "auto (" + dtype + ")");
  }
  s.opt.bf16 = dtype == "bf16";
  if (s.opt.bf16 && !s.gpu) {
    st.skip(
        "the CPU path trains in fp32 only (the CPU reference); bf16 mixed precision is the "
        "GPU path's");
  }

  std::string dp = st.get_string("dp");
  if (dp == "auto") {
    dp = s.gpu ? "overlap" : "sync";
    st.set_axis_display("dp", "auto (" + dp + ")");
  }
  s.opt.dp = dp == "overlap" ? dp_mode::overlap : dp_mode::sync;
}

// The attention kernel, the batch and sequence (auto sizes per path), the learning rate and the
// data's size; what cannot be run anywhere fails.
void resolve_shape(state& st, setup& s) {
  const std::string attention = st.get_string("attention");
  s.opt.attention = attention == "flash"          ? attention_mode::flash
                    : attention == "materialized" ? attention_mode::materialized
                                                  : attention_mode::automatic;
  if (attention == "flash" && !s.gpu) st.skip("attention=flash is the GPU path's");
  if (s.opt.dp == dp_mode::overlap && !s.gpu) {
    st.skip(
        "dp=overlap needs the GPU path: on the CPU the all-reduce would take the backward "
        "pass's own cores (use dp=sync)");
  }

  s.opt.batch = static_cast<int>(st.get_int64("batch"));
  if (s.opt.batch == 0) {
    // The GPU's headline configuration; on the CPU one sequence (a gpt2-124m step of 1024 tokens
    // takes ~10 s on two cores already).
    s.opt.batch = s.gpu ? 16 : 1;
    st.set_axis_display("batch", "auto (" + std::to_string(s.opt.batch) + ")");
  }
  try {
    s.opt.seq = tf::resolve_seq(s.opt.model, static_cast<int>(st.get_int64("seq")));
  } catch (const std::invalid_argument& e) {
    st.fail(e.what());
  }
  if (st.get_int64("seq") == 0) {
    st.set_axis_display("seq", "auto (" + std::to_string(s.opt.seq) + ")");
  }
  s.opt.optimizer.lr = static_cast<float>(st.get_float64("learning_rate"));
  s.corpus_bytes = static_cast<std::uint64_t>(st.get_int64("corpus_size"));
  s.samples = static_cast<std::size_t>(st.get_int64("samples"));
}

// Resolves the axes (auto values from what this node has); skips what this node or build cannot
// run, fails what cannot be run anywhere.
setup resolve(state& st) {
  setup s;
  const auto model = tf::find_preset(st.get_string("model"));
  if (!model) st.fail("unknown model " + st.get_string("model"));  // the axis choices prevent it
  s.opt.model = *model;
  resolve_device(st, s);
  resolve_shape(st, s);
  if (s.opt.model.family == tf::model_family::vit && !pp::jpeg_support().available) {
    st.skip(pp::jpeg_support().reason);
  }
  const std::uint64_t corpus_tokens = s.corpus_bytes / 2;
  if (s.opt.model.family == tf::model_family::gpt2 &&
      corpus_tokens < static_cast<std::uint64_t>(s.opt.seq) + 4096) {
    st.fail("corpus_size " + std::to_string(s.corpus_bytes) + " B cannot hold a sequence of " +
            std::to_string(s.opt.seq + 1) + " tokens in a shard (at least " +
            std::to_string(2 * (s.opt.seq + 4096)) + " B)");
  }
  return s;
}

// ---- the data -----------------------------------------------------------------------------------

// Host buffers for `slots` batches (pinned for a GPU: the trainer allocates them).
class batch_slots {
 public:
  batch_slots(trainer& tr, const tf::model_config& m, int batch, int seq, std::size_t slots)
      : m_tr(tr) {
    const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(seq);
    for (std::size_t i = 0; i < slots; ++i) {
      tf::batch_view v;
      if (m.family == tf::model_family::gpt2) {
        v.tokens = take<std::int32_t>(rows);
        v.targets = take<std::int32_t>(rows);
      } else {
        v.images = take<float>(static_cast<std::size_t>(batch) * 3 * m.image * m.image);
        v.labels = take<std::int32_t>(static_cast<std::size_t>(batch));
      }
      m_views.push_back(v);
    }
  }
  ~batch_slots() {
    for (void* p : m_memory) m_tr.host_free(p);
  }
  batch_slots(const batch_slots&) = delete;
  batch_slots& operator=(const batch_slots&) = delete;
  [[nodiscard]] const tf::batch_view& view(std::size_t slot) const { return m_views[slot]; }
  [[nodiscard]] std::int32_t* tokens(std::size_t s) {
    return const_cast<std::int32_t*>(m_views[s].tokens);
  }
  [[nodiscard]] std::int32_t* targets(std::size_t s) {
    return const_cast<std::int32_t*>(m_views[s].targets);
  }
  [[nodiscard]] float* images(std::size_t s) { return const_cast<float*>(m_views[s].images); }
  [[nodiscard]] std::int32_t* labels(std::size_t s) {
    return const_cast<std::int32_t*>(m_views[s].labels);
  }

 private:
  template <typename T>
  T* take(std::size_t n) {
    void* p = m_tr.host_alloc(n * sizeof(T));
    m_memory.push_back(p);
    std::memset(p, 0, n * sizeof(T));
    return static_cast<T*>(p);
  }
  trainer& m_tr;
  std::vector<void*> m_memory;
  std::vector<tf::batch_view> m_views;
};

// ---- the report ---------------------------------------------------------------------------------

struct timed_run {
  std::vector<tf::batch_record> batches;  // one per harness sample, in order
  std::uint64_t steps = 0;
  std::vector<float> losses;
};

void report_breakdown(state& st, const timed_run& run, const trainer& tr, bool gpu) {
  // The phases of the median batch, the statistic of step_ms and the rates: a mean over every
  // batch would put a few slow batches into the phases but not into the median step.
  const auto parts = tf::median_breakdown(run.batches);
  const std::string mean = " (rank 0's, per step of the median batch of the " +
                           std::to_string(run.batches.size()) +
                           " timed batches, as step_ms; the parts add up to step_ms)";
  for (const auto& p : parts) {
    std::string what;
    if (p.name == "data_wait") {
      what = "waiting for the loader's batch: the reads and decoding that prefetching did not hide";
    } else if (p.name == "h2d") {
      what = gpu ? "host -> device copy of the batch from pinned memory, not hidden behind compute"
                 : "no device copy on the CPU path";
    } else if (p.name == "forward") {
      what = gpu ? "forward pass incl. the loss, CUDA events" : "forward pass incl. the loss";
    } else if (p.name == "backward") {
      what = gpu ? "backward pass, CUDA events" : "backward pass";
    } else if (p.name == "allreduce") {
      what = "exposed gradient all-reduce: " + tr.allreduce_method();
    } else if (p.name == "optimizer") {
      what = "AdamW on the mean gradient (fp32 master weights)";
    } else {
      what = "the rest of the step: bookkeeping between phases, loss read-back";
    }
    st.add_metric(p.name + "_ms", "ms", p.ms_per_step, false, what + mean,
                  metric_role::information);
  }
}

// ---- one rank's run -----------------------------------------------------------------------------

// What one rank's run sets up and its steps share. The members are declared in the order they
// must be torn down in reverse: the loader reads into the slots, from the token reader or the
// image source; the slots are the trainer's host memory; the CPU trainer computes on the pool.
struct training_run {
  training_run(state& st_, setup s_, std::size_t here_)
      : st(st_),
        comm(st_.comm()),
        s(std::move(s_)),
        gpt2(s.opt.model.family == tf::model_family::gpt2),
        ranks(static_cast<std::size_t>(comm.size())),
        me(static_cast<std::size_t>(comm.rank())),
        here(here_),
        pool(s.threads, /*pin=*/here == 1 && !s.gpu),
        acts(tf::make_activation_layout(s.opt.model, s.opt.batch, s.opt.seq)),
        params(tf::make_param_layout(s.opt.model)) {
    s.opt.threads = pool.size();
  }

  state& st;
  communicator& comm;
  setup s;
  const bool gpt2;
  const std::size_t ranks, me;
  const std::size_t here;  // ranks on this host
  thread_pool pool;
  const tf::activation_layout acts;
  const tf::param_layout params;
  double check_error = 0;      // the gradient check's worst relative error
  bool check_verified = true;  // false: simulated, the GPU's gradients were not computed
  double entropy = 0;          // of the Markov corpus (GPT-2)
  std::unique_ptr<trainer> tr;
  std::unique_ptr<batch_slots> buffers;
  std::unique_ptr<token_reader> tokens;
  std::unique_ptr<image_source> images;
  std::unique_ptr<tf::batch_loader> loader;

  // The timed loop's.
  int extra_warmup_steps = 0;
  double tokens_per_step = 0, flops_per_token = 0;
  std::uint64_t next_step = 0;  // the step the next one_step runs
  std::size_t current = 0;      // the slot holding its batch
  timed_run run;
  bool finite = true;  // every step's loss so far
};

// Batches in flight: the one computed on, the next one (copied to a GPU meanwhile), one read ahead.
constexpr std::size_t batch_slot_count = 3;

// Threads: this host's CPUs shared by its ranks, unless set (CPU path: compute and decode;
// GPU path: decode).
[[nodiscard]] std::size_t threads_per_rank(state& st, std::size_t here) {
  const auto threads = static_cast<std::size_t>(st.get_int64("threads"));
  return threads != 0 ? threads : std::max<std::size_t>(allowed_cpus().size() / here, 1);
}

// ---- set-up -------------------------------------------------------------------------------------

// Empty when the CPU model fits in this node's available memory, else why not.
[[nodiscard]] std::string cpu_memory_shortfall(const training_run& r) {
  const double need = 4.0 * (4.0 * r.params.total + r.acts.total + r.acts.stats_total);
  const auto available = r.st.caps().memory_available_bytes;
  if (need <= 0.9 * static_cast<double>(available)) return {};
  return "the CPU model needs " + ks::format_gib(static_cast<std::uint64_t>(need)) +
         " (parameters, gradients, AdamW moments, activations) but " +
         ks::format_gib(static_cast<std::uint64_t>(available)) +
         " is available: a smaller batch, seq or model";
}

[[nodiscard]] double gradient_tolerance(const setup& s) {
  if (!s.gpu) return cpu_gradient_tolerance;
  return s.opt.bf16 ? tf::gpu_bf16_gradient_tolerance : tf::gpu_fp32_gradient_tolerance;
}

// Before timing: on a GPU, the GPU path against the CPU reference on the tiny model of this
// family; on the CPU, the vectorised GEMM against the scalar one (small models only). Empty when
// the gradients agree (or were not checked), else what differs.
[[nodiscard]] std::string check_gradients(training_run& r) {
  std::string wrong;
  if (r.s.gpu) {
    wrong = gpu_gradient_check(r.s.opt, r.comm, gradient_tolerance(r.s), r.check_error);
    if (!wrong.empty()) wrong = "GPU gradient check against the CPU fp32 reference: " + wrong;
    // On the simulated node the trainer's kernels launch but do not compute: its gradients are
    // no GPU's, so the check is not verified (said so in the result), not a faulty GPU.
    if (!wrong.empty() && r.st.simulated_noop_launches() > 0) {
      r.st.check(false, wrong);
      r.check_verified = false;
      wrong.clear();
    }
  } else if (r.params.total <= cpu_check_max_params) {
    wrong = cpu_gradient_check(r.s.opt, r.pool, cpu_gradient_tolerance, r.check_error);
    if (!wrong.empty()) wrong = "CPU gradient check: " + wrong;
  }
  return wrong;
}

// The trainer, its batch slots and the data source. Throws what they throw.
void build_trainer_and_data(training_run& r) {
  const auto& model = r.s.opt.model;
  r.tr = r.s.gpu ? make_gpu_trainer(r.s.opt, r.comm) : make_cpu_trainer(r.s.opt, r.comm, r.pool);
  r.buffers =
      std::make_unique<batch_slots>(*r.tr, model, r.s.opt.batch, r.s.opt.seq, batch_slot_count);
  // Data: the loader reads ahead on its own thread for GPT-2 (I/O only) and for ViT on a
  // GPU; ViT on the CPU decodes inside the step on the compute threads (there are no others).
  if (r.gpt2) {
    const token_corpus corpus = get_token_corpus(r.st, model.vocab, r.s.corpus_bytes);
    r.entropy = corpus.entropy_nats;
    r.tokens = std::make_unique<token_reader>(
        corpus, r.s.opt.batch, r.s.opt.seq, static_cast<int>(r.me), static_cast<int>(r.ranks),
        /*direct=*/true, ks::engine_compiled_in("io_uring") ? "io_uring" : "psync");
  } else {
    r.images =
        std::make_unique<image_source>(r.st, r.s.samples, model.image, static_cast<int>(r.me),
                                       static_cast<int>(r.ranks), pb::resolve_isa(r.st));
  }
}

// Set-up, where one rank can fail alone (memory, a faulty GPU, a full disk): every rank learns
// whether all succeeded before any goes on, so none waits for a rank that has left; the
// trainer's collective part (its communicator) only once every rank built its own (set_up.h).
void set_up(training_run& r) {
  const std::string why = agreed_set_up(
      r.comm,
      [&r] {
        if (std::string short_of = r.s.gpu ? std::string() : cpu_memory_shortfall(r);
            !short_of.empty())
          return short_of;
        if (std::string wrong = check_gradients(r); !wrong.empty()) return wrong;
        build_trainer_and_data(r);
        return std::string();
      },
      [&r] { r.tr->connect(); });
  if (!why.empty()) r.st.fail(why);
}

void start_loader(training_run& r) {
  const bool loader_thread = r.gpt2 || r.s.gpu;
  r.loader = std::make_unique<tf::batch_loader>(
      batch_slot_count,
      [&r](std::uint64_t step, std::size_t slot) {
        if (r.gpt2) {
          r.tokens->read(step, r.buffers->tokens(slot), r.buffers->targets(slot));
        } else {
          r.images->produce(step, r.s.opt.batch, r.buffers->images(slot), r.buffers->labels(slot),
                            r.pool);
        }
      },
      loader_thread);
}

// ---- timed steps --------------------------------------------------------------------------------

// Step g computes on batch g while holding batch g + 1 (a GPU copies it meanwhile): the wait
// for g + 1 is this step's data wait. Returns this rank's mean loss.
float one_step(training_run& r, tf::phase_times& t) {
  const std::uint64_t g = r.next_step++;
  const auto t0 = clock_type::now();
  const std::size_t next = r.loader->acquire(g + 1);
  t.data_wait += seconds_since(t0);
  const float loss = r.tr->step(r.buffers->view(r.current), &r.buffers->view(next), t);
  r.loader->release(g);
  r.current = next;
  r.finite = r.finite && std::isfinite(loss);
  return loss;
}

void warm_up(training_run& r) {
  r.current = r.loader->acquire(0);
  r.extra_warmup_steps = r.s.gpu ? gpu_extra_warmup_steps : 0;
  for (int i = 0; i < r.extra_warmup_steps; ++i) {
    tf::phase_times ignored;
    (void)one_step(r, ignored);
  }
}

// The work of one step of the whole job, from which the harness derives its rates.
void declare_work(training_run& r) {
  const double ranks = static_cast<double>(r.ranks);
  r.tokens_per_step = static_cast<double>(r.s.opt.batch) * r.s.opt.seq;
  if (r.gpt2) {
    r.st.add_items(r.tokens_per_step * ranks, "token");
  } else {
    r.st.add_items(static_cast<double>(r.s.opt.batch) * ranks, "image");
  }
  r.flops_per_token =
      tf::flops_per_token(r.s.opt.model, static_cast<std::int64_t>(r.params.total), r.s.opt.seq);
  r.st.add_flops(r.flops_per_token * r.tokens_per_step * ranks);
}

// `iters` steps, recorded in r.run; returns the slowest rank's mean step, seconds.
double timed_batch(training_run& r, std::int64_t iters) {
  const auto t0 = clock_type::now();
  tf::batch_record batch;
  for (std::int64_t i = 0; i < iters; ++i) {
    tf::phase_times t;
    r.run.losses.push_back(one_step(r, t));
    batch.phases += t;
    ++batch.steps;
    ++r.run.steps;
  }
  const double took = seconds_since(t0);
  // The slowest rank's mean step, and the configuration's elapsed time on the slowest
  // rank, so that --timeout ends every rank at the same batch.
  double v[2] = {took / static_cast<double>(iters), r.comm.config_elapsed()};
  r.comm.allreduce_max(v, 2);
  if (r.comm.config_timeout() > 0 && v[1] > r.comm.config_timeout()) {
    throw std::runtime_error("timed out after " + std::to_string(static_cast<int>(v[1])) +
                             " s on the slowest rank (--timeout)");
  }
  batch.sample_s = v[0];  // the harness's sample of this batch
  r.run.batches.push_back(batch);
  return v[0];
}

// The harness's warm-up calls and timed batches. False when interrupted during or right after the
// warm-up (nothing timed to report).
[[nodiscard]] bool time_steps(training_run& r) {
  bool recording = false;
  r.st.exec_batched(
      [&](std::int64_t iters) {
        // The run's record (steps, losses, phases) starts with the first sample.
        if (r.st.sampling() && !recording) {
          recording = true;
          r.run = timed_run{};
        }
        return timed_batch(r, iters);
      },
      "steady_clock_batch_mean_max_over_ranks");
  if (!recording || r.run.steps == 0) return false;
  r.loader.reset();  // no more reads in the background from here on
  return true;
}

// ---- metrics ------------------------------------------------------------------------------------

void report_rates(training_run& r) {
  const std::string warm =
      std::to_string(r.extra_warmup_steps + 1) + " warm-up step" +
      (r.extra_warmup_steps > 0 ? "s" : "") +
      " excluded (MPI/NCCL set-up, first reads, page faults, cuBLASLt heuristics)";
  const double ranks_d = static_cast<double>(r.ranks);
  const bool gpt2 = r.gpt2;
  const double tokens_per_step = r.tokens_per_step;
  const int batch = r.s.opt.batch;
  r.st.add_time_metric(gpt2 ? "tokens_per_s_per_rank" : "images_per_s_per_rank",
                       gpt2 ? "tokens/s" : "images/s", true,
                       "the job's rate / " + std::to_string(r.ranks) +
                           " rank(s) (one per GPU on the "
                           "GPU path); " +
                           warm,
                       [&](double sec) { return (gpt2 ? tokens_per_step : batch) / sec; });
  if (!gpt2) {
    r.st.add_time_metric("tokens_per_s", "tokens/s", true,
                         "images/s x " + std::to_string(r.s.opt.seq) +
                             " tokens per image (class token + patches), the whole job",
                         [&](double sec) { return tokens_per_step * ranks_d / sec; });
  }
  r.st.add_time_metric("step_ms", "ms", false, "median step time, slowest rank; " + warm,
                       [](double sec) { return sec * 1e3; });
}

// The dense peak of this rank's device, FLOP/s (0 when there is none to compare with), and where
// it comes from.
[[nodiscard]] double peak_flops(training_run& r, std::string& source) {
  if (r.s.gpu) return gpu_peak_flops(r.s.opt, source);
  const kc::gemm_isa isa = kc::best_gemm_isa(kc::gemm_dtype::fp32);
  if (isa != kc::gemm_isa::avx512 && isa != kc::gemm_isa::avx2) {
    source = "no vectorised fp32 GEMM on this CPU: no FMA peak to compare with";
    return 0;
  }
  const auto pisa =
      isa == kc::gemm_isa::avx512 ? kc::peak_isa::avx512_fp32 : kc::peak_isa::avx2_fp32;
  // Clock x width of the cores used, as on the GPU (its datasheet peak): a peak measured in the
  // run moved with the machine's load (MFU 36-57% for one 108-112 GFLOP/s, issue 40 item 17).
  auto pv = gb::clock_x_width_peak(pisa, r.pool);
  if (pv.gflops <= 0) {
    // A core the table does not know: the measured peak, which the source says moves with load.
    const std::string why = pv.method;
    pv = gb::cpu_peak(r.st, pisa,
                      r.st.get_int64("threads") == 0 && r.here == 1
                          ? 0
                          : static_cast<std::int64_t>(r.pool.size()),
                      r.pool);
    pv.method += " (" + why + "; a measured peak moves with the machine's load)";
  }
  source = pv.method;
  return pv.gflops * 1e9;
}

// MFU against the peak of this rank's device.
void report_mfu(training_run& r) {
  std::string peak_source;
  const double peak = peak_flops(r, peak_source);
  const double median = r.st.partial_result().time.median;
  if (peak > 0 && median > 0) {
    r.st.add_metric(
        "mfu_percent", "%",
        100.0 * tf::model_flops_utilization(r.flops_per_token, r.tokens_per_step / median, peak),
        true,
        tf::flops_formula_text() + " = " + std::to_string(r.flops_per_token / 1e6) +
            " MFLOP/token x tokens/s per rank / peak " + std::to_string(peak / 1e9) + " GFLOP/s (" +
            peak_source + ")");
    r.st.set_metric_hint("mfu_percent", metric_hint::fraction_of_peak);
  } else {
    r.st.withhold_metric("mfu_percent", peak_source);
  }
}

// Memory, the model's size and its loss.
void report_model(training_run& r) {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  r.st.add_metric("model_memory_mib", "MiB", static_cast<double>(r.tr->memory_bytes()) / (1 << 20),
                  false,
                  std::string(r.s.gpu ? "device" : "host") +
                      " memory of the training state: parameters, gradients, AdamW moments, "
                      "activations (the memory plan)",
                  metric_role::information);
  r.st.add_metric("peak_rss_mib", "MiB", static_cast<double>(ru.ru_maxrss) / 1024.0, false,
                  "the process's peak resident set (getrusage), rank 0", metric_role::information);
  r.st.add_metric("parameters", "count", static_cast<double>(r.params.total), false,
                  r.s.opt.model.name + ": every parameter (embeddings included)",
                  metric_role::information);
  r.st.add_metric("loss_first", "nats", r.run.losses.front(), false,
                  "mean loss of rank 0's batch at the first timed step", metric_role::information);
  r.st.add_metric("loss_last", "nats", r.run.losses.back(), false,
                  "mean loss of rank 0's batch at the last timed step", metric_role::information);
  if (r.gpt2) {
    r.st.add_metric("corpus_entropy_nats", "nats", r.entropy, false,
                    "entropy rate of the Markov corpus: the loss a perfect model approaches",
                    metric_role::information);
  }
}

// The gradient check's worst error, where one ran.
void report_gradient_check(training_run& r) {
  if (!r.check_verified) return;  // no error of garbage gradients (said not verified instead)
  if (r.s.gpu) {
    r.st.add_metric("gradient_error", "relative", r.check_error, false,
                    "largest per-tensor ||g_gpu - g_cpu|| / ||g_cpu|| before timing of the tiny "
                    "model and of one block of this width and heads, GPU path (this run's "
                    "attention) against the CPU fp32 reference (tolerance " +
                        std::to_string(gradient_tolerance(r.s)) + ")",
                    metric_role::verification);
  } else if (r.params.total <= cpu_check_max_params) {
    r.st.add_metric("gradient_error", "relative", r.check_error, false,
                    "largest per-tensor ||g - g_ref|| / ||g_ref|| before timing: this model on 2 "
                    "sequences with the vectorised GEMM against the scalar reference GEMM "
                    "(tolerance " +
                        std::to_string(cpu_gradient_tolerance) + ")",
                    metric_role::verification);
  }
}

void report_metrics(training_run& r) {
  report_rates(r);
  report_mfu(r);
  report_breakdown(r.st, r.run, *r.tr, r.s.gpu);
  report_model(r);
  report_gradient_check(r);
  r.st.add_warning(std::string("data: ") + (r.gpt2 ? r.tokens->describe() : r.images->describe()) +
                   "; model: " + r.tr->describe() + "; " + std::to_string(r.pool.size()) +
                   " thread(s)");
}

// ---- verification (after timing) ----------------------------------------------------------------

[[nodiscard]] std::string rank_prefix(const training_run& r) {
  return "rank " + std::to_string(r.me) + ": ";
}

// Every loss finite, the loss falling (given enough steps) and, on the Markov corpus, never below
// its entropy.
void verify_losses(training_run& r) {
  const std::string who = rank_prefix(r);
  r.st.check(r.finite, who + "a step's loss was not finite");
  const auto trend = tf::measure_loss_trend(r.run.losses);
  if (!trend.judged) {
    r.st.add_warning("loss trend not judged: " + std::to_string(r.run.steps) +
                     " timed steps (20 needed)");
    return;
  }
  r.st.check(trend.falling, who + "the loss did not fall over " + std::to_string(r.run.steps) +
                                " steps (first " + std::to_string(trend.window) + ": " +
                                std::to_string(trend.first_mean) +
                                ", last: " + std::to_string(trend.last_mean) + ")");
  if (r.gpt2) {
    const double floor = tf::loss_floor(r.entropy, r.tokens_per_step * trend.window);
    r.st.check(trend.last_mean >= floor,
               who + "the loss (" + std::to_string(trend.last_mean) +
                   ") fell below the corpus entropy (" + std::to_string(r.entropy) +
                   " nats): the model sees its targets (causal mask, target shift)");
  }
}

// ViT: one more batch, its first image against the unfused scalar stages.
void verify_transform(training_run& r) {
  r.images->produce(r.next_step, r.s.opt.batch, r.buffers->images(0), r.buffers->labels(0), r.pool);
  const std::string wrong = r.images->verify(r.next_step, r.s.opt.batch, 0, r.buffers->images(0));
  r.st.check(wrong.empty(), rank_prefix(r) + wrong);
}

// FNV-1a over the parameters' bits.
[[nodiscard]] std::uint64_t parameter_hash(const std::vector<float>& p) {
  std::uint64_t h = 1469598103934665603ull;
  for (float x : p) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof(u));
    h = (h ^ u) * 1099511628211ull;
  }
  return h;
}

// Identical parameters on every rank: a 63-bit hash in three exact 21-bit parts, compared by
// MAX of (h, -h) over ranks. Every rank takes part.
void verify_ranks_agree(training_run& r) {
  const std::uint64_t h = parameter_hash(r.tr->parameters());
  double parts[6];
  for (int i = 0; i < 3; ++i) {
    parts[2 * i] = static_cast<double>((h >> (21 * i)) & 0x1fffff);
    parts[2 * i + 1] = -parts[2 * i];
  }
  r.comm.allreduce_max(parts, 6);
  r.st.check(parts[0] == -parts[1] && parts[2] == -parts[3] && parts[4] == -parts[5],
             "the ranks' parameters differ after training: the gradients were not all-reduced "
             "consistently");
}

// ---- the benchmark ------------------------------------------------------------------------------

// Every step below runs on every rank, in this order: the collective ones (set-up's agreement,
// each timed batch's reduction, the parameters' comparison) meet on all of them.
void training_step(state& st) {
  setup s = resolve(st);
  const std::size_t here = ranks_on_this_host(st.comm());
  s.threads = threads_per_rank(st, here);
  training_run r(st, std::move(s), here);
  set_up(r);
  start_loader(r);
  warm_up(r);
  declare_work(r);
  if (!time_steps(r)) return;  // interrupted during or right after the warm-up
  report_metrics(r);
  verify_losses(r);
  if (!r.gpt2) verify_transform(r);
  verify_ranks_agree(r);
}

// Host memory: the CPU model's plan (the GPU path keeps only pinned batches and a parameter copy
// on the host), plus the ViT data set's pixels and JPEGs.
[[nodiscard]] std::int64_t step_memory(const config& cfg) {
  const auto* m = find_axis(cfg, "model");
  const auto* d = find_axis(cfg, "device");
  const auto model = tf::find_preset(m != nullptr ? std::get<std::string>(*m) : "gpt2-124m");
  if (!model) return 64 << 20;
  const bool cpu = d != nullptr && std::get<std::string>(*d) == "cpu";
  const std::int64_t params = static_cast<std::int64_t>(tf::make_param_layout(*model).total);
  std::int64_t bytes = (cpu ? 16 : 8) * params + (64 << 20);
  if (cpu) {
    try {
      const int batch = static_cast<int>(config_int64(cfg, "batch", 0));
      const auto a = tf::make_activation_layout(*model, batch == 0 ? 1 : batch,
                                                static_cast<int>(config_int64(cfg, "seq", 0)));
      bytes += 4 * static_cast<std::int64_t>(a.total + a.stats_total);
    } catch (const std::exception&) {
      // An impossible shape fails in the body with its reason.
    }
  }
  if (model->family == tf::model_family::vit) {
    bytes += config_int64(cfg, "samples", 256) * 500 * 375 * 4;
  }
  return bytes;
}

INFRABENCH_REGISTER(training_step, "training/step")
    .uses("gemm/cpu_peak")  // MFU on a CPU the clock x width table lacks: the measured peak
    .describe(
        "a transformer (GPT-2 or ViT) trained data-parallel through every hop: token shards read "
        "by a loader thread (io_uring, O_DIRECT) or JPEG files decoded + transformed, "
        "forward/backward on the GPU (cuBLASLt) or CPU (our GEMM), gradient all-reduce (NCCL or "
        "MPI), AdamW; tokens/s, MFU and the time of each phase")
    .scope(rank_scope::collective)
    .produces_items("token")  // GPT-2; tokens_per_s is also the ViT's (images x tokens per image)
    .produces_items("image")  // ViT
    .headline("tokens_per_s")
    .measures(infrabench::data_hop::step)  // the whole path: the roofline's measured job rate
    .produces_work(infrabench::work_kind::flops)  // model FLOPs per step
    .produces("tokens_per_s_per_rank", "tokens/s", infrabench::better::higher)
    .produces("images_per_s_per_rank", "images/s", infrabench::better::higher)
    .produces("step_ms", "ms", infrabench::better::lower)
    .produces("mfu_percent", "%", infrabench::better::higher)
    // One step's timing, seen per rank, per FLOP and per step: never a second measurement.
    .relate("gflops", infrabench::relation_kind::view_of, "tokens_per_s")
    .relate("images_per_s", infrabench::relation_kind::view_of, "tokens_per_s")
    .relate("tokens_per_s_per_rank", infrabench::relation_kind::per_thread_of, "tokens_per_s")
    .relate("images_per_s_per_rank", infrabench::relation_kind::per_thread_of, "images_per_s")
    .relate("step_ms", infrabench::relation_kind::inverse_of, "tokens_per_s")
    .relate("mfu_percent", infrabench::relation_kind::fraction_of, "the device's peak FLOP/s")
    .produces("data_wait_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    .produces("h2d_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    .produces("forward_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    .produces("backward_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    .produces("allreduce_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    .produces("optimizer_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    .produces("other_ms", "ms", infrabench::better::lower, infrabench::metric_role::information)
    // Which hop each phase time is, for the roofline: the step's own compute (the time no phase
    // accounts for is in the step too) and its exposed all-reduce.
    .phase("forward_ms", infrabench::data_hop::compute)
    .phase("backward_ms", infrabench::data_hop::compute)
    .phase("optimizer_ms", infrabench::data_hop::compute)
    .phase("other_ms", infrabench::data_hop::compute)
    .phase("allreduce_ms", infrabench::data_hop::allreduce)
    .produces("model_memory_mib", "MiB", infrabench::better::lower,
              infrabench::metric_role::information)
    .produces("peak_rss_mib", "MiB", infrabench::better::lower,
              infrabench::metric_role::information)
    .produces("parameters", "count", infrabench::better::lower,
              infrabench::metric_role::information)
    .produces("loss_first", "nats", infrabench::better::lower, infrabench::metric_role::information)
    .produces("loss_last", "nats", infrabench::better::lower, infrabench::metric_role::information)
    .produces("corpus_entropy_nats", "nats", infrabench::better::lower,
              infrabench::metric_role::information)
    .produces("gradient_error", "relative", infrabench::better::lower,
              infrabench::metric_role::verification)
    .add_string_axis("model", {"gpt2-124m"},
                     infrabench::choice_axis("gpt2-tiny (2 layers, width 64), gpt2-124m, "
                                             "gpt2-350m, vit-tiny (32 px), vit-b16 (224 px)",
                                             tf::preset_names()))
    .add_string_axis("device", {"auto"},
                     infrabench::choice_axis("auto (a GPU when there is one), gpu, cpu",
                                             {"auto", "gpu", "cpu"}))
    .add_string_axis("dtype", {"auto"},
                     infrabench::choice_axis("auto (bf16 on a GPU, fp32 on the CPU), bf16 (mixed "
                                             "precision, fp32 master weights), fp32",
                                             {"auto", "bf16", "fp32"}))
    .add_string_axis("dp", {"auto"},
                     infrabench::choice_axis("data parallel: sync (all-reduce after the backward), "
                                             "overlap (bucketed, during the backward; GPU), auto",
                                             {"auto", "sync", "overlap"}))
    .add_string_axis("attention", {"auto"},
                     infrabench::choice_axis("GPU attention: flash (fused, bf16), materialized "
                                             "(cuBLAS batched GEMMs around our softmax), auto "
                                             "(flash where it runs)",
                                             {"auto", "flash", "materialized"}))
    .add_int64_axis("batch", {0},
                    infrabench::int_axis("sequences (images) per rank per step; 0 = 16 on a GPU, "
                                         "1 on the CPU",
                                         0, 4096))
    .add_int64_axis("seq", {0},
                    infrabench::int_axis("tokens per sequence; 0 = the model's (GPT-2: its "
                                         "positions; ViT: 1 + patches)",
                                         0, 1 << 20))
    .add_int64_axis("threads", {0},
                    infrabench::thread_count_axis("CPU threads per rank: compute (CPU path) and "
                                                  "decoding (0 = this host's CPUs shared by its "
                                                  "ranks)"))
    .add_float64_axis("learning_rate", {1e-3}, infrabench::float_axis("AdamW learning rate", 0, 1))
    .add_int64_axis("corpus_size", {32 << 20},
                    infrabench::bytes_axis("GPT-2: the token corpus's size on disk (per rank)",
                                           1 << 16, static_cast<double>(std::int64_t{64} << 30)))
    .add_int64_axis("samples", {256},
                    infrabench::int_axis("ViT: JPEG files in the scratch data set (per rank)", 1,
                                         1 << 20))
    .add_string_axis("isa", {"auto"}, pb::isa_axis())
    .memory_estimate(step_memory);

}  // namespace
}  // namespace infrabench::training_bench
