// The GPU trainer: gpu_model on this rank's GPU (local rank modulo the devices), the batch copied
// on a stream of its own from pinned memory while the previous step computes, the gradients
// all-reduced with NCCL on a third stream, in buckets as the backward pass finalises them
// (dp=overlap, as PyTorch DDP) or at once after it (dp=sync). Phases timed with CUDA events on the
// compute stream. With several ranks each step's wait polls NCCL's asynchronous error
// (gpu_allreduce_wait.h), so a rank that died fails the others with NCCL's text.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "cpu/gemm_model.h"
#include "cpu/transformer/cpu_model.h"
#include "cuda/transformer/cuda_support.h"
#include "cuda/transformer/gpu_model.h"
#include "gpu_allreduce.h"
#include "gpu_allreduce_wait.h"
#include "hardware/gpu.h"
#include "infrabench/gpu_timing.h"
#include "trainer.h"

namespace infrabench::training_bench {

namespace {

namespace kcu = infrabench::kernels::cuda::transformer;
namespace hw = infrabench::kernels::hardware;
namespace cuda_rt = infrabench::kernels::cuda;

class single_allreduce final : public gpu_allreduce {
 public:
  void sum(float*, std::size_t, cudaStream_t) override {}
  [[nodiscard]] std::string describe() const override {
    return "single process: nothing to all-reduce";
  }
};

// This rank's GPU: its place among the ranks on its host, modulo the host's GPUs.
int select_device(communicator& comm) {
  int count = 0;
  IB_CUDA(cudaGetDeviceCount(&count));
  if (count < 1) throw std::runtime_error("no CUDA device");
  const int device = comm.local_rank() % count;
  IB_CUDA(cudaSetDevice(device));
  return device;
}

kcu::gpu_model_options model_options(const trainer_options& o) {
  kcu::gpu_model_options m;
  m.model = o.model;
  m.batch = o.batch;
  m.seq = o.seq;
  m.bf16 = o.bf16;
  m.attention = o.attention == attention_mode::flash          ? kcu::attention_kind::flash
                : o.attention == attention_mode::materialized ? kcu::attention_kind::materialized
                                                              : kcu::attention_kind::automatic;
  return m;
}

class gpu_trainer final : public trainer {
 public:
  // This rank's part only: its GPU, the model's memory, the parameters. The communicator, which
  // every rank must make together, is connect()'s.
  gpu_trainer(const trainer_options& o, communicator& comm)
      : m_opt(o),
        m_device(select_device(comm)),
        m_model(kcu::gpu_model::create(model_options(o))),
        m_ranks(comm.size()),
        m_group(comm) {
    m_model->init_parameters(o.seed);
    m_opt.optimizer.grad_scale = 1.0f / static_cast<float>(m_ranks);
    for (std::size_t b = 0; b < m_model->buckets().size(); ++b) {
      m_bucket_ready.push_back(std::make_unique<kcu::event>(false));
    }
  }

  ~gpu_trainer() override { (void)cudaDeviceSynchronize(); }

  void connect() override {
    m_allreduce = make_gpu_allreduce(m_group);
    m_wait = step_wait_options(
        m_ranks, [this] { return m_allreduce->async_error(); }, [this] { m_allreduce->abort(); });
  }

  float step(const tf::batch_view& batch, const tf::batch_view* next, tf::phase_times& t) override {
    const cudaStream_t s = m_model->stream();
    m_ev_start.record(s);
    // This step's batch: already on the device when the previous step prefetched it.
    if (m_prefetched != identity(batch)) {
      m_model->upload(batch, m_slot, m_copy.get());
      m_copied[m_slot]->record(m_copy.get());
    }
    IB_CUDA(cudaStreamWaitEvent(s, m_copied[m_slot]->get()));
    m_ev_h2d.record(s);
    // The next batch goes to the other slot while this one computes (that slot's previous batch
    // was used by the previous step, which has finished).
    m_prefetched = nullptr;
    if (next != nullptr) {
      m_model->upload(*next, 1 - m_slot, m_copy.get());
      m_copied[1 - m_slot]->record(m_copy.get());
      m_prefetched = identity(*next);
    }
    m_model->forward(m_slot);
    m_ev_fwd.record(s);
    const bool overlap = m_opt.dp == dp_mode::overlap && m_ranks > 1;
    m_model->backward(m_slot, [&](std::size_t b) {
      if (!overlap) return;
      // This bucket's gradients are final once the compute stream gets here.
      m_bucket_ready[b]->record(s);
      IB_CUDA(cudaStreamWaitEvent(m_comm.get(), m_bucket_ready[b]->get()));
      const auto [first, last] = m_model->buckets()[b];
      m_allreduce->sum(m_model->grads() + first, last - first, m_comm.get());
    });
    m_ev_bwd.record(s);
    if (m_ranks > 1) {
      if (!overlap) {
        IB_CUDA(cudaStreamWaitEvent(m_comm.get(), m_ev_bwd.get()));
        m_allreduce->sum(m_model->grads(), m_model->params_layout().total, m_comm.get());
      }
      m_comm_done.record(m_comm.get());
      IB_CUDA(cudaStreamWaitEvent(s, m_comm_done.get()));
    }
    m_ev_allreduce.record(s);
    m_model->adamw(m_opt.optimizer, ++m_steps);
    m_ev_opt.record(s);
    wait_for_step(s);
    t.h2d += kcu::elapsed_s(m_ev_start, m_ev_h2d);
    t.forward += kcu::elapsed_s(m_ev_h2d, m_ev_fwd);
    t.backward += kcu::elapsed_s(m_ev_fwd, m_ev_bwd);
    t.allreduce += kcu::elapsed_s(m_ev_bwd, m_ev_allreduce);
    t.optimizer += kcu::elapsed_s(m_ev_allreduce, m_ev_opt);
    m_slot = 1 - m_slot;
    double sum = 0;
    const float* losses = m_model->host_losses();
    for (int r = 0; r < m_model->loss_rows(); ++r) sum += losses[r];
    return static_cast<float>(sum / m_model->loss_rows());
  }

  std::vector<float> parameters() override { return m_model->download_params(); }
  [[nodiscard]] std::size_t param_count() const override { return m_model->params_layout().total; }
  std::uint64_t memory_bytes() override { return m_model->device_bytes(); }
  [[nodiscard]] std::string describe() const override {
    cudaDeviceProp p{};
    (void)cudaGetDeviceProperties(&p, m_device);
    return std::string("GPU ") + std::to_string(m_device) + " (" + p.name + "), " +
           m_model->describe();
  }
  [[nodiscard]] std::string allreduce_method() const override {
    if (m_ranks == 1) return m_allreduce->describe();
    return m_allreduce->describe() +
           (m_opt.dp == dp_mode::overlap
                ? ", " + std::to_string(m_model->buckets().size()) +
                      " buckets (a block's gradients each) launched as the backward pass "
                      "finalises them; the time after the backward until the last one is done"
                : ", one call after the backward pass");
  }
  void* host_alloc(std::size_t bytes) override {
    void* p = nullptr;
    IB_CUDA(cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocDefault));
    return p;
  }
  void host_free(void* p) override { (void)cudaFreeHost(p); }

 private:
  // Waits for the step queued on `s`. One rank synchronises. Several poll: a peer that died
  // leaves this rank's NCCL kernels waiting for it for good, and a blocked wait would never
  // return, or return only the CUDA error of a kernel NCCL killed; the poll aborts the
  // communicator and throws with NCCL's own error, or after the bound.
  void wait_for_step(cudaStream_t s) {
    if (!m_wait) {
      IB_CUDA(cudaEventSynchronize(m_ev_opt.get()));
      return;
    }
    m_wait->wait_timeout_s =
        step_wait_timeout_s(m_group.config_timeout(), m_group.config_elapsed());
    gpu_wait_polled({s, m_device}, *m_wait, step_wait_what);
  }

  // A host batch's identity: its (pinned, per-slot) buffer.
  static const void* identity(const tf::batch_view& b) {
    return b.tokens != nullptr ? static_cast<const void*>(b.tokens) : b.images;
  }

  trainer_options m_opt;
  int m_device;
  std::unique_ptr<kcu::gpu_model> m_model;
  std::unique_ptr<gpu_allreduce> m_allreduce;
  int m_ranks;
  communicator& m_group;  // the ranks (outlives the trainer): the configuration's clock
  std::optional<gpu_exec_options> m_wait;  // a step's polled wait; none for one rank
  kcu::stream m_copy, m_comm;
  kcu::event m_ev_start, m_ev_h2d, m_ev_fwd, m_ev_bwd, m_ev_allreduce, m_ev_opt;
  kcu::event m_comm_done{false};
  std::unique_ptr<kcu::event> m_copied[2] = {std::make_unique<kcu::event>(false),
                                             std::make_unique<kcu::event>(false)};
  std::vector<std::unique_ptr<kcu::event>> m_bucket_ready;
  int m_slot = 0;
  const void* m_prefetched = nullptr;
  std::int64_t m_steps = 0;
};

// The tiny model of the run's family at the run's precision.
trainer_options tiny_of(const trainer_options& o) {
  trainer_options t = o;
  t.model = *tf::find_preset(o.model.family == tf::model_family::gpt2 ? "gpt2-tiny" : "vit-tiny");
  t.batch = 2;
  t.seq = tf::resolve_seq(t.model, 0);
  return t;
}

// One block of the run's own width and heads, with a small vocabulary (GPT-2) or small images
// (ViT), on sequences that end inside a second 64-row attention tile: the head size the timed run
// uses goes through the same attention kernels (tails and, for GPT-2, the causal mask included),
// at a size the CPU reference checks in a second.
trainer_options block_of(const trainer_options& o) {
  trainer_options t = o;
  t.model.name = o.model.name + " (1 block)";
  t.model.layers = 1;
  if (o.model.family == tf::model_family::gpt2) {
    t.model.vocab = 512;
    t.seq = std::min(100, o.model.max_seq);
  } else {
    t.model.image = 8 * o.model.patch;  // 64 patches + the class token: 65 tokens
    t.model.classes = 10;
    t.seq = tf::resolve_seq(t.model, 0);
  }
  t.batch = 2;
  return t;
}

// One forward/backward of `t` on the GPU and on the CPU fp32 reference from the same parameters
// and batch: empty when they agree within `tolerance`, else what differs.
std::string compare_with_cpu(const trainer_options& t, double tolerance, double& worst) {
  const check_batch in(t.model, t.batch, t.seq, 23);
  auto gpu = kcu::gpu_model::create(model_options(t));
  gpu->init_parameters(t.seed);
  gpu->upload(in.view, 0, gpu->stream());
  gpu->forward(0);
  gpu->backward(0, {});
  IB_CUDA(cudaStreamSynchronize(gpu->stream()));
  double gpu_loss = 0;
  for (int r = 0; r < gpu->loss_rows(); ++r) gpu_loss += gpu->host_losses()[r];
  gpu_loss /= gpu->loss_rows();
  const std::vector<float> g = gpu->download_grads();
  tf::cpu_model cpu(t.model, t.batch, t.seq, 1);
  cpu.init_parameters(t.seed);
  const float cpu_loss = cpu.forward_backward(in.view);
  const auto cmp = tf::compare_gradients(cpu.params_layout(), g.data(), cpu.grads(), tolerance);
  worst = std::max(worst, cmp.worst.relative);
  std::string out;
  if (!(std::fabs(gpu_loss - cpu_loss) <= tolerance * std::fabs(cpu_loss))) {
    out = "loss " + std::to_string(gpu_loss) + " against " + std::to_string(cpu_loss) + "; ";
  }
  for (const auto& f : cmp.failed) {
    out += f.name + " (||g_gpu - g_cpu|| / ||g_cpu|| = " + std::to_string(f.relative) + ") ";
  }
  if (!out.empty()) {
    out = t.model.name + (t.bf16 ? " bf16" : " fp32") +
          (gpu->flash_attention() ? ", fused attention" : "") + ": " + out;
  }
  return out;
}

}  // namespace

std::unique_ptr<gpu_allreduce> make_single_gpu_allreduce() {
  return std::make_unique<single_allreduce>();
}

std::string gpu_trainer_unavailable_reason() {
  return {};
}

std::unique_ptr<trainer> make_gpu_trainer(const trainer_options& o, communicator& comm) {
  return std::make_unique<gpu_trainer>(o, comm);
}

std::string gpu_gradient_check(const trainer_options& o, communicator& comm, double tolerance,
                               double& worst) {
  // This rank's GPU before any allocation: every rank checking on GPU 0 would put N contexts on
  // it (and fail every rank but one in EXCLUSIVE_PROCESS mode).
  (void)select_device(comm);
  worst = 0;
  std::string out = compare_with_cpu(tiny_of(o), tolerance, worst);
  if (out.empty()) out = compare_with_cpu(block_of(o), tolerance, worst);
  return out;
}

// The GPU's dense peak for the dtype: the SKU's datasheet figure (kernels/hardware/gpu.h's table),
// the figure users hold MFU against; the clock-derived one only for a GPU not in that table.
double gpu_peak_flops(const trainer_options& o, std::string& source) {
  const auto d = cuda_rt::query_device(cuda_rt::current_device());
  const auto dtype = o.bf16 ? hw::gpu_dtype::bf16 : hw::gpu_dtype::fp32;
  // The datasheet's dense peak of this SKU (H100 SXM bf16: 989.4 TFLOP/s), else the figure at the
  // maximum SM clock, which the source then says.
  const auto peak =
      hw::dense_peak(d.name, d.sm_count, d.cc_major, d.cc_minor, d.max_sm_clock_mhz, dtype);
  if (!peak) {
    source = d.name + " (sm_" + std::to_string(d.cc_major * 10 + d.cc_minor) +
             ") is not in the peak table";
    return 0;
  }
  source = d.name + " " + std::string(hw::to_string(dtype)) + " dense peak: " + peak->source;
  return peak->value * 1e12;
}

}  // namespace infrabench::training_bench
