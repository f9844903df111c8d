// The GPU path's wiring, checked on the CPU: the column-major GEMM arguments it gives cuBLAS
// (kernels/cpu/transformer/gpu_gemm_args.h) run through a plain column-major GEMM here must give
// the CPU reference's linear and attention results, forward and backward; and the all-reduce
// buckets cover the gradients exactly once, in the order the backward pass finalises them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/transformer/cpu_ops.h"
#include "cpu/transformer/gpu_gemm_args.h"
#include "cpu/transformer/model_config.h"
#include "cpu/transformer/ops.h"

namespace tf = infrabench::kernels::transformer;
namespace kc = infrabench::kernels::cpu;

namespace {

// BLAS semantics: D = op(A) op(B) (+ D when accumulate), column-major, A's column j at a + j*lda.
void colmajor(const tf::colmajor_gemm& g, const float* a, const float* b, float* d,
              bool accumulate = false) {
  for (int j = 0; j < g.n; ++j) {
    for (int i = 0; i < g.m; ++i) {
      double s = accumulate ? d[i + static_cast<std::size_t>(j) * g.ldd] : 0.0;
      for (int p = 0; p < g.k; ++p) {
        const float av = g.ta ? a[p + static_cast<std::size_t>(i) * g.lda]
                              : a[i + static_cast<std::size_t>(p) * g.lda];
        const float bv = g.tb ? b[j + static_cast<std::size_t>(p) * g.ldb]
                              : b[p + static_cast<std::size_t>(j) * g.ldb];
        s += static_cast<double>(av) * bv;
      }
      d[i + static_cast<std::size_t>(j) * g.ldd] = static_cast<float>(s);
    }
  }
}

std::vector<float> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-4) << what << "[" << i << "]";
}

tf::cpu_exec serial() {
  tf::cpu_exec ex;
  ex.isa = kc::gemm_isa::scalar;
  return ex;
}

}  // namespace

TEST(TrainingGpuArgs, LinearGemmsComputeTheRowMajorProducts) {
  const int rows = 5, IC = 7, OC = 3;
  const auto in = random_vector(rows * IC, 1), w = random_vector(OC * IC, 2);
  const auto dout = random_vector(rows * OC, 3);
  std::vector<float> out(rows * OC), ref(rows * OC);
  colmajor(tf::linear_forward_gemm(rows, IC, OC), w.data(), in.data(), out.data());
  tf::linear_forward(serial(), ref.data(), in.data(), w.data(), nullptr, nullptr, rows, IC, OC);
  expect_close(out, ref, "out");

  std::vector<float> din(rows * IC), din_ref(rows * IC), dw(OC * IC, 0.5f), dw_ref(OC * IC, 0.5f);
  colmajor(tf::linear_input_grad_gemm(rows, IC, OC), w.data(), dout.data(), din.data());
  colmajor(tf::linear_weight_grad_gemm(rows, IC, OC), in.data(), dout.data(), dw.data(), true);
  tf::linear_backward(serial(), din_ref.data(), false, dw_ref.data(), nullptr, dout.data(),
                      in.data(), w.data(), rows, IC, OC);
  expect_close(din, din_ref, "din");
  expect_close(dw, dw_ref, "dw (accumulated)");
}

TEST(TrainingGpuArgs, AttentionGemmsComputeTheReference) {
  // Every (batch row, head) pair through the six batched GEMMs at the offsets the GPU's pointer
  // arrays use, with the shared softmax rows between them: the CPU reference's attention.
  const int B = 2, T = 5, C = 12, NH = 3, hs = C / NH;
  const bool causal = true;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const auto qkv = random_vector(B * T * 3 * C, 4), dy = random_vector(B * T * C, 5);
  std::vector<float> y(B * T * C), att(B * NH * T * T), dqkv(qkv.size(), 0.0f), datt(att.size());
  for (std::size_t i = 0; i < static_cast<std::size_t>(B * NH); ++i) {
    const auto at = tf::attention_pair_offsets(i, NH, T, C);
    const float* q = qkv.data() + at.qkv;
    float* s = att.data() + at.scores;
    colmajor(tf::attention_scores_gemm(T, hs, C), q + C, q, s);
    for (int t = 0; t < T; ++t) {
      tf::attention_softmax_row(s + t * T, s + t * T, T, causal ? t + 1 : T, scale, tf::one_lane{});
    }
    colmajor(tf::attention_values_gemm(T, hs, C), q + 2 * C, s, y.data() + at.out);
    // backward
    float* dp = datt.data() + at.scores;
    float* dq = dqkv.data() + at.qkv;
    colmajor(tf::attention_dprobs_gemm(T, hs, C), q + 2 * C, dy.data() + at.out, dp);
    colmajor(tf::attention_dvalues_gemm(T, hs, C), dy.data() + at.out, s, dq + 2 * C);
    for (int t = 0; t < T; ++t) {
      tf::attention_softmax_backward_row(s + t * T, dp + t * T, dp + t * T, T, causal ? t + 1 : T,
                                         scale, tf::one_lane{});
    }
    colmajor(tf::attention_dqueries_gemm(T, hs, C), q + C, dp, dq);
    colmajor(tf::attention_dkeys_gemm(T, hs, C), q, dp, dq + C);
  }
  std::vector<float> y_ref(y.size()), att_ref(att.size()), dqkv_ref(qkv.size()),
      datt_ref(att.size());
  tf::attention_forward(serial(), y_ref.data(), att_ref.data(), qkv.data(), B, T, C, NH, causal);
  tf::attention_backward(serial(), dqkv_ref.data(), datt_ref.data(), dy.data(), att_ref.data(),
                         qkv.data(), B, T, C, NH, causal);
  expect_close(att, att_ref, "probabilities");
  expect_close(y, y_ref, "out");
  expect_close(dqkv, dqkv_ref, "dqkv");
}

TEST(TrainingGpuArgs, BucketsCoverTheGradientsInBackwardOrder) {
  for (const char* name : {"gpt2-tiny", "vit-tiny", "gpt2-124m"}) {
    const auto p = tf::make_param_layout(*tf::find_preset(name));
    const auto buckets = tf::gradient_buckets(p);
    ASSERT_EQ(buckets.size(), p.blocks.size() + 2) << name;
    // First the final LayerNorm (and ViT's head), last the embeddings; contiguous, descending.
    EXPECT_EQ(buckets.front().first, p.find("lnf.weight").offset) << name;
    EXPECT_EQ(buckets.front().second, p.total) << name;
    EXPECT_EQ(buckets.back().first, 0u) << name;
    for (std::size_t i = 1; i < buckets.size(); ++i) {
      EXPECT_EQ(buckets[i].second, buckets[i - 1].first) << name << " bucket " << i;
    }
    // Bucket 1 is the last block, whole.
    const std::string last = "h" + std::to_string(p.blocks.size() - 1) + ".";
    EXPECT_EQ(buckets[1].first, p.find(last + "ln1.weight").offset) << name;
    EXPECT_EQ(buckets[1].second, p.find("lnf.weight").offset) << name;
  }
}

// The fused AdamW's plan: every parameter updated exactly once, each block inside one tensor and
// carrying that tensor's decay, no block longer than the chunk.
TEST(TrainingGpuArgs, AdamwBlocksCoverEveryParameterOnceWithItsTensorsDecay) {
  for (const char* name : {"gpt2-tiny", "vit-tiny", "gpt2-124m"}) {
    const auto cfg = *tf::find_preset(name);
    const auto layout = tf::make_param_layout(cfg);
    const std::uint64_t chunk = 2048;
    const auto blocks = tf::adamw_blocks(layout, chunk);
    std::vector<std::uint8_t> seen(layout.total, 0);
    for (const auto& b : blocks) {
      ASSERT_LT(b.first, b.end);
      ASSERT_LE(b.end - b.first, chunk);
      const auto t = std::find_if(layout.tensors.begin(), layout.tensors.end(), [&](const auto& x) {
        return b.first >= x.offset && b.first < x.offset + x.size;
      });
      ASSERT_NE(t, layout.tensors.end());
      EXPECT_LE(b.end, t->offset + t->size) << name << " " << t->name;
      EXPECT_EQ(b.decay != 0, t->decay) << name << " " << t->name;
      for (auto i = b.first; i < b.end; ++i) ++seen[i];
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](std::uint8_t s) { return s == 1; }))
        << name;
  }
}
