// The CPU trainer: the fp32 reference engine as the training step of CPU-only nodes.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <new>

#include "cpu/gemm.h"

#include "trainer.h"

namespace infrabench::training_bench {

namespace {

namespace kc = infrabench::kernels::cpu;
using clock_type = std::chrono::steady_clock;

class cpu_trainer final : public trainer {
 public:
  cpu_trainer(const trainer_options& o, communicator& comm, thread_pool& pool)
      : m_comm(comm),
        m_opt(o.optimizer),
        m_model(o.model, o.batch, o.seq, pool.size(),
                [&pool](std::size_t parts, const std::function<void(std::size_t)>& fn) {
                  pool.run([&](std::size_t t) {
                    for (std::size_t p = t; p < parts; p += pool.size()) fn(p);
                  });
                }) {
    m_model.init_parameters(o.seed);
    // The all-reduce sums the ranks' batch-mean gradients; AdamW takes their mean.
    m_opt.grad_scale = 1.0f / static_cast<float>(comm.size());
  }

  float step(const tf::batch_view& batch, const tf::batch_view* /*next*/,
             tf::phase_times& t) override {
    auto t0 = clock_type::now();
    const float loss = m_model.forward(batch);
    t.forward += seconds_since(t0);
    t0 = clock_type::now();
    m_model.backward(batch);
    t.backward += seconds_since(t0);
    t0 = clock_type::now();
    if (m_comm.size() > 1) m_comm.allreduce_sum(m_model.grads(), m_model.param_count());
    t.allreduce += seconds_since(t0);
    t0 = clock_type::now();
    m_model.adamw_step(m_opt);
    t.optimizer += seconds_since(t0);
    return loss;
  }

  std::vector<float> parameters() override {
    return {m_model.params(), m_model.params() + m_model.param_count()};
  }
  [[nodiscard]] std::size_t param_count() const override { return m_model.param_count(); }
  std::uint64_t memory_bytes() override { return m_model.planned_bytes(); }
  [[nodiscard]] std::string describe() const override {
    return "cpu fp32, our GEMM (" + std::string(to_string(m_model.isa())) + ")";
  }
  [[nodiscard]] std::string allreduce_method() const override {
    return m_comm.size() > 1
               ? "MPI_Allreduce (sum) of " + std::to_string(m_model.param_count()) +
                     " fp32 gradients across " + std::to_string(m_comm.size()) +
                     " ranks after the backward pass (not overlapped: on the CPU it would take "
                     "the backward's cores), including the wait for the slowest rank"
               : "nothing to all-reduce in a single process";
  }

 private:
  communicator& m_comm;
  tf::adamw_hyper m_opt;
  tf::cpu_model m_model;
};

}  // namespace

check_batch::check_batch(const tf::model_config& m, int batch, int seq, std::uint64_t seed) {
  std::uint64_t state = seed;
  const auto next = [&state] {  // splitmix64: the same batch on every machine
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  if (m.family == tf::model_family::gpt2) {
    const std::size_t n = static_cast<std::size_t>(batch) * static_cast<std::size_t>(seq);
    for (std::size_t i = 0; i < n; ++i) {
      tokens.push_back(static_cast<std::int32_t>(next() % static_cast<std::uint64_t>(m.vocab)));
      targets.push_back(static_cast<std::int32_t>(next() % static_cast<std::uint64_t>(m.vocab)));
    }
    view.tokens = tokens.data();
    view.targets = targets.data();
  } else {
    images.resize(static_cast<std::size_t>(batch) * 3 * m.image * m.image);
    for (auto& v : images) v = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
    for (int b = 0; b < batch; ++b) {
      labels.push_back(static_cast<std::int32_t>(next() % static_cast<std::uint64_t>(m.classes)));
    }
    view.images = images.data();
    view.labels = labels.data();
  }
}

std::string cpu_gradient_check(const trainer_options& o, thread_pool& pool, double tolerance,
                               double& worst) {
  const auto best = kc::best_gemm_isa(kc::gemm_dtype::fp32);
  // Two sequences (images) of the run's model: every kernel shape the timed steps use, at a
  // fraction of a step's cost.
  const int batch = std::min(o.batch, 2);
  const check_batch in(o.model, batch, o.seq, 17);
  const auto run = [&](kc::gemm_isa isa, std::size_t threads) {
    tf::cpu_model m(
        o.model, batch, o.seq, threads,
        [&pool](std::size_t parts, const std::function<void(std::size_t)>& fn) {
          pool.run([&](std::size_t t) {
            for (std::size_t p = t; p < parts; p += pool.size()) fn(p);
          });
        },
        isa);
    m.init_parameters(o.seed);
    (void)m.forward_backward(in.view);
    return std::vector<float>(m.grads(), m.grads() + m.param_count());
  };
  const auto ref = run(kc::gemm_isa::scalar, pool.size());
  const auto got = run(best, pool.size());
  const auto cmp =
      tf::compare_gradients(tf::make_param_layout(o.model), got.data(), ref.data(), tolerance);
  worst = cmp.worst.relative;
  if (cmp.failed.empty()) return {};
  std::string out = std::string(to_string(best)) + " GEMM against the scalar one:";
  for (const auto& f : cmp.failed) out += " " + f.name + " (" + std::to_string(f.relative) + ")";
  return out;
}

void* trainer::host_alloc(std::size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void trainer::host_free(void* p) {
  std::free(p);
}

std::unique_ptr<trainer> make_cpu_trainer(const trainer_options& o, communicator& comm,
                                          thread_pool& pool) {
  return std::make_unique<cpu_trainer>(o, comm, pool);
}

}  // namespace infrabench::training_bench
