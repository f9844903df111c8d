// The transformer's operations (kernels/cpu/transformer/cpu_ops, ops.h), one by one: each
// backward against central finite differences of its forward, the loss L = sum(r * out) with a
// fixed random r, so every output's gradient is r. Also: the bf16 rounding against the GEMM's
// conversion, AdamW against the formula in double, the patch gather as a bijection, and the
// row functions split across several lanes (as a GPU warp runs them) against one lane.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/transformer/cpu_ops.h"
#include "cpu/transformer/ops.h"

namespace tf = infrabench::kernels::transformer;
namespace kc = infrabench::kernels::cpu;

namespace {

std::vector<float> random_vector(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Checks analytic[i] against (L(x + h e_i) - L(x - h e_i)) / 2h for every i of x; `loss`
// recomputes the forward from the current x.
void expect_gradient(std::vector<float>& x, const std::vector<float>& analytic,
                     const std::function<double()>& loss, const char* what, float h = 1e-2f,
                     double rel = 1e-2, double abs_floor = 2e-3) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double scale = 0;
  for (float g : analytic) scale = std::max(scale, std::fabs(static_cast<double>(g)));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double down = loss();
    x[i] = keep;
    const double fd = (up - down) / (2.0 * h);
    EXPECT_NEAR(analytic[i], fd, rel * std::fabs(fd) + abs_floor * std::max(scale, 1.0))
        << what << "[" << i << "]";
  }
}

tf::cpu_exec serial() {
  tf::cpu_exec ex;
  ex.threads = 1;
  ex.isa = kc::best_gemm_isa(kc::gemm_dtype::fp32);
  return ex;
}

// Runs the parts on real threads, three at a time, as the benchmark's pool does.
tf::cpu_exec threaded(std::size_t threads) {
  tf::cpu_exec ex = serial();
  ex.threads = threads;
  ex.run = [](std::size_t parts, const std::function<void(std::size_t)>& fn) {
    std::vector<std::thread> ts;
    for (std::size_t p = 0; p < parts; ++p) ts.emplace_back([&fn, p] { fn(p); });
    for (auto& t : ts) t.join();
  };
  return ex;
}

}  // namespace

TEST(TrainingOps, GeluBackwardIsTheDerivative) {
  for (float x = -5.0f; x <= 5.0f; x += 0.37f) {
    const float h = 1e-3f;
    const double fd =
        (static_cast<double>(tf::gelu_forward(x + h)) - tf::gelu_forward(x - h)) / (2.0 * h);
    EXPECT_NEAR(tf::gelu_backward(x, 1.0f), fd, 2e-3) << x;
    EXPECT_FLOAT_EQ(tf::gelu_backward(x, 3.0f), 3.0f * tf::gelu_backward(x, 1.0f));
  }
  for (float x = -50.0f; x <= 50.0f; x += 0.013f) {
    EXPECT_NEAR(tf::ib_tanh(x), std::tanh(static_cast<double>(x)), 2e-7) << x;
  }
  EXPECT_EQ(tf::ib_tanh(1e30f), 1.0f);
  EXPECT_EQ(tf::ib_tanh(-1e30f), -1.0f);
  EXPECT_FLOAT_EQ(tf::gelu_forward(0.0f), 0.0f);
  EXPECT_NEAR(tf::gelu_forward(1.0f), 0.8411920f, 1e-6);  // PyTorch gelu(1, approximate="tanh")
}

TEST(TrainingOps, LayerNormForwardAndBackward) {
  const int rows = 3, C = 16;
  auto x = random_vector(rows * C, 1, 2.0f);
  auto w = random_vector(C, 2);
  auto b = random_vector(C, 3);
  const auto r = random_vector(rows * C, 4);
  std::vector<float> out(rows * C), mean(rows), rstd(rows);
  const auto ex = serial();
  const auto loss = [&] {
    tf::layernorm_forward(ex, out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                          rows, C);
    return dot(out, r);
  };
  (void)loss();
  // The normalised row has mean 0 and variance 1 (before the affine part).
  for (int i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int j = 0; j < C; ++j) m += x[i * C + j];
    m /= C;
    for (int j = 0; j < C; ++j) v += (x[i * C + j] - m) * (x[i * C + j] - m);
    v /= C;
    EXPECT_NEAR(mean[i], m, 1e-5);
    EXPECT_NEAR(rstd[i], 1.0 / std::sqrt(v + 1e-5), 1e-4);
  }
  // dx accumulates: start it at 1 and subtract that afterwards.
  std::vector<float> dx(rows * C, 1.0f), dw(C, 0.0f), db(C, 0.0f);
  tf::layernorm_backward(ex, dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(),
                         mean.data(), rstd.data(), rows, C);
  for (auto& g : dx) g -= 1.0f;
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dw");
  expect_gradient(b, db, loss, "db");
}

TEST(TrainingOps, LinearForwardAndBackward) {
  const int rows = 5, IC = 7, OC = 6;
  auto in = random_vector(rows * IC, 5);
  auto w = random_vector(OC * IC, 6);
  auto bias = random_vector(OC, 7);
  auto res = random_vector(rows * OC, 8);
  const auto r = random_vector(rows * OC, 9);
  std::vector<float> out(rows * OC);
  const auto ex = serial();
  const auto loss = [&] {
    tf::linear_forward(ex, out.data(), in.data(), w.data(), bias.data(), res.data(), rows, IC, OC);
    return dot(out, r);
  };
  (void)loss();
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < OC; ++j) {
      double e = res[i * OC + j] + bias[j];
      for (int k = 0; k < IC; ++k) e += static_cast<double>(in[i * IC + k]) * w[j * IC + k];
      EXPECT_NEAR(out[i * OC + j], e, 1e-5);
    }
  }
  std::vector<float> din(rows * IC), dw(OC * IC, 0.0f), db(OC, 0.0f);
  tf::linear_backward(ex, din.data(), false, dw.data(), db.data(), r.data(), in.data(), w.data(),
                      rows, IC, OC);
  expect_gradient(in, din, loss, "din");
  expect_gradient(w, dw, loss, "dw");
  expect_gradient(bias, db, loss, "db");
  expect_gradient(res, r, loss, "dresidual");  // the residual passes its gradient through
  // accumulate_din adds to what is there.
  std::vector<float> din2(rows * IC, 2.0f);
  tf::linear_backward(ex, din2.data(), true, dw.data(), nullptr, r.data(), in.data(), w.data(),
                      rows, IC, OC);
  for (std::size_t i = 0; i < din.size(); ++i) EXPECT_NEAR(din2[i], din[i] + 2.0f, 1e-5);
}

class TrainingAttention : public ::testing::TestWithParam<bool> {};

TEST_P(TrainingAttention, ForwardAndBackward) {
  const bool causal = GetParam();
  const int B = 2, T = 5, C = 8, NH = 2;
  auto qkv = random_vector(B * T * 3 * C, 10, 1.5f);
  const auto r = random_vector(B * T * C, 11);
  std::vector<float> out(B * T * C), att(B * NH * T * T);
  const auto ex = serial();
  const auto loss = [&] {
    tf::attention_forward(ex, out.data(), att.data(), qkv.data(), B, T, C, NH, causal);
    return dot(out, r);
  };
  (void)loss();
  // Rows of probabilities: sum 1, zero past the query under the mask.
  for (int row = 0; row < B * NH * T; ++row) {
    const int t = row % T;
    double s = 0;
    for (int j = 0; j < T; ++j) {
      const float p = att[row * T + j];
      s += p;
      if (causal && j > t) {
        EXPECT_EQ(p, 0.0f);
      }
    }
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
  // Against a plain loop in double for one (b, h, t).
  {
    const int b = 1, h = 1, t = 3, hs = C / NH;
    const int visible = causal ? t + 1 : T;
    std::vector<double> s(visible);
    double mx = -1e300, sum = 0;
    for (int j = 0; j < visible; ++j) {
      double d = 0;
      for (int i = 0; i < hs; ++i) {
        d += static_cast<double>(qkv[(b * T + t) * 3 * C + h * hs + i]) *
             qkv[(b * T + j) * 3 * C + C + h * hs + i];
      }
      s[j] = d / std::sqrt(static_cast<double>(hs));
      mx = std::max(mx, s[j]);
    }
    for (auto& v : s) sum += (v = std::exp(v - mx));
    for (int i = 0; i < hs; ++i) {
      double y = 0;
      for (int j = 0; j < visible; ++j)
        y += s[j] / sum * qkv[(b * T + j) * 3 * C + 2 * C + h * hs + i];
      EXPECT_NEAR(out[(b * T + t) * C + h * hs + i], y, 1e-5);
    }
  }
  std::vector<float> dqkv(qkv.size(), 7.0f), datt(att.size());
  tf::attention_backward(ex, dqkv.data(), datt.data(), r.data(), att.data(), qkv.data(), B, T, C,
                         NH, causal);
  expect_gradient(qkv, dqkv, loss, "dqkv");
}

INSTANTIATE_TEST_SUITE_P(CausalAndNot, TrainingAttention, ::testing::Values(true, false));

TEST(TrainingOps, CrossEntropyLossAndGradient) {
  const int rows = 4, V = 11;
  auto logits = random_vector(rows * V, 12, 3.0f);
  const std::vector<std::int32_t> targets = {0, 10, 5, 5};
  std::vector<float> work(logits.size()), losses(rows);
  const auto ex = serial();
  const auto loss = [&] {
    work = logits;
    return tf::cross_entropy(ex, work.data(), losses.data(), targets.data(), rows, V, 1.0f / rows) /
           rows;
  };
  const double mean = loss();
  const std::vector<float> grad = work;  // the logits were overwritten with dL/dlogits
  double expect = 0;
  for (int i = 0; i < rows; ++i) {
    double mx = -1e300, s = 0;
    for (int j = 0; j < V; ++j) mx = std::max<double>(mx, logits[i * V + j]);
    for (int j = 0; j < V; ++j) s += std::exp(logits[i * V + j] - mx);
    const double li = std::log(s) + mx - logits[i * V + targets[i]];
    EXPECT_NEAR(losses[i], li, 1e-5);
    expect += li / rows;
  }
  EXPECT_NEAR(mean, expect, 1e-5);
  expect_gradient(logits, grad, loss, "dlogits", 1e-2f, 1e-2, 1e-3);
}

TEST(TrainingOps, EncoderGathersAndScatters) {
  const int B = 2, T = 3, C = 4, V = 5;
  auto wte = random_vector(V * C, 13);
  auto wpe = random_vector(T * C, 14);
  const std::vector<std::int32_t> tokens = {4, 1, 4, 0, 4, 2};  // repeats must accumulate
  const auto r = random_vector(B * T * C, 15);
  std::vector<float> out(B * T * C);
  const auto ex = serial();
  const auto loss = [&] {
    tf::encoder_forward(ex, out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return dot(out, r);
  };
  (void)loss();
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  tf::encoder_backward(threaded(3), dwte.data(), dwpe.data(), r.data(), tokens.data(), B, T, C);
  expect_gradient(wte, dwte, loss, "dwte");
  expect_gradient(wpe, dwpe, loss, "dwpe");
}

TEST(TrainingOps, PatchGatherIsABijection) {
  const int B = 2, image = 8, patch = 4, ch = 3;
  const std::int64_t n = std::int64_t{B} * ch * image * image;
  std::set<std::int64_t> seen;
  for (std::int64_t e = 0; e < n; ++e) {
    const auto s = tf::patch_source_index(e, image, patch, ch);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, n);
    seen.insert(s);
  }
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n);
  // Row 1 = image 0, patch (0, 1); column 0 = channel 0, (0, 0): pixel (y 0, x 4) of channel 0.
  EXPECT_EQ(tf::patch_source_index(1 * 48 + 0, image, patch, ch), 4);
  // Column 16 = channel 1, (0, 0) of patch 0: channel 1's first pixel.
  EXPECT_EQ(tf::patch_source_index(16, image, patch, ch), 64);
  // Last row (image 1, patch (1, 1)), last column (channel 2, (3, 3)): the batch's last pixel.
  EXPECT_EQ(tf::patch_source_index(n - 1, image, patch, ch), n - 1);
}

TEST(TrainingOps, VitAssembleForwardAndBackward) {
  const int B = 2, P = 3, C = 4, T = P + 1;
  auto po = random_vector(B * P * C, 16);
  auto pb = random_vector(C, 17);
  auto cls = random_vector(C, 18);
  auto pos = random_vector(T * C, 19);
  const auto r = random_vector(B * T * C, 20);
  std::vector<float> out(B * T * C);
  const auto ex = serial();
  const auto loss = [&] {
    tf::vit_assemble(ex, out.data(), po.data(), pb.data(), cls.data(), pos.data(), B, P, C);
    return dot(out, r);
  };
  (void)loss();
  std::vector<float> dpo(po.size()), dpb(C, 0.0f), dcls(C, 0.0f), dpos(pos.size(), 0.0f);
  tf::vit_assemble_backward(threaded(2), dpo.data(), dpb.data(), dcls.data(), dpos.data(), r.data(),
                            B, P, C);
  expect_gradient(po, dpo, loss, "dpatch_out");
  expect_gradient(pb, dpb, loss, "dpatch_bias");
  expect_gradient(cls, dcls, loss, "dcls");
  expect_gradient(pos, dpos, loss, "dpos");
}

TEST(TrainingOps, AdamWMatchesTheFormula) {
  tf::adamw_hyper h;
  h.lr = 0.01f;
  h.weight_decay = 0.1f;
  float m = 0.0f, v = 0.0f, p = 0.5f;
  double md = 0, vd = 0, pd = 0.5;
  for (int t = 1; t <= 5; ++t) {
    const float g = 0.3f - 0.1f * t;
    h.correction1 = static_cast<float>(1.0 - std::pow(0.9, t));
    h.correction2 = static_cast<float>(1.0 - std::pow(0.95, t));
    p = tf::adamw_update(p, g, m, v, h, true);
    md = 0.9 * md + 0.1 * g;
    vd = 0.95 * vd + 0.05 * g * g;
    const double mh = md / (1 - std::pow(0.9, t)), vh = vd / (1 - std::pow(0.95, t));
    pd -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * pd);
    EXPECT_NEAR(p, pd, 1e-6) << t;
  }
  // Not decayed: a zero gradient leaves the parameter alone.
  float m0 = 0, v0 = 0;
  h.correction1 = h.correction2 = 1.0f;
  EXPECT_EQ(tf::adamw_update(2.0f, 0.0f, m0, v0, h, false), 2.0f);
  EXPECT_LT(tf::adamw_update(2.0f, 0.0f, m0, v0, h, true), 2.0f);
  // grad_scale: a summed gradient of two ranks at scale 1/2 is their mean.
  float ma = 0, va = 0, mb = 0, vb = 0;
  const float direct = tf::adamw_update(1.0f, 0.25f, ma, va, h, true);
  h.grad_scale = 0.5f;
  EXPECT_EQ(tf::adamw_update(1.0f, 0.5f, mb, vb, h, true), direct);
  EXPECT_EQ(ma, mb);
}

TEST(TrainingOps, Bf16RoundingMatchesTheGemmConversion) {
  EXPECT_EQ(tf::from_float<tf::bf16>(1.0f).bits, 0x3f80);
  EXPECT_EQ(tf::to_float(tf::bf16{0x3f80}), 1.0f);
  // 1 + 2^-8 is halfway between two bf16 values: ties to even (down to 1.0).
  EXPECT_EQ(tf::from_float<tf::bf16>(1.00390625f).bits, 0x3f80);
  EXPECT_EQ(tf::from_float<tf::bf16>(1.01171875f).bits, 0x3f82);  // 1 + 3 * 2^-8: up, to even
  EXPECT_TRUE(std::isnan(tf::to_float(tf::from_float<tf::bf16>(NAN))));
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<float> u(-1e4f, 1e4f);
  for (int i = 0; i < 100000; ++i) {
    const float x = u(rng) * std::pow(10.0f, static_cast<float>(i % 20 - 10));
    ASSERT_EQ(tf::from_float<tf::bf16>(x).bits, kc::float_to_bf16(x)) << x;
  }
}

// ---- the row functions split across lanes, as a GPU warp runs them ------------------------------

namespace {

// `n` threads in lockstep at each reduction, like the lanes of a warp: each publishes its
// partial, all wait, all read every partial, all wait again before the slot is reused.
class thread_lanes {
 public:
  thread_lanes(int lane, int n, std::vector<float>& slots, std::barrier<>& sync)
      : m_lane(lane), m_n(n), m_slots(slots), m_sync(sync) {}
  [[nodiscard]] int lane() const { return m_lane; }
  [[nodiscard]] int count() const { return m_n; }
  [[nodiscard]] float sum(float x) const {
    return reduce(x, [](float a, float b) { return a + b; });
  }
  [[nodiscard]] float max(float x) const {
    return reduce(x, [](float a, float b) { return std::max(a, b); });
  }

 private:
  template <typename Op>
  float reduce(float x, Op op) const {
    m_slots[static_cast<std::size_t>(m_lane)] = x;
    m_sync.arrive_and_wait();
    float r = m_slots[0];
    for (int i = 1; i < m_n; ++i) r = op(r, m_slots[static_cast<std::size_t>(i)]);
    m_sync.arrive_and_wait();
    return r;
  }
  int m_lane, m_n;
  std::vector<float>& m_slots;
  std::barrier<>& m_sync;
};

void on_lanes(int n, const std::function<void(const thread_lanes&)>& fn) {
  std::vector<float> slots(static_cast<std::size_t>(n));
  std::barrier<> sync(n);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] { fn(thread_lanes(i, n, slots, sync)); });
  }
  for (auto& t : ts) t.join();
}

}  // namespace

TEST(TrainingOps, RowFunctionsGiveTheSameResultOnSeveralLanes) {
  const int C = 37, lanes = 4;
  const auto x = random_vector(C, 22, 2.0f);
  const auto w = random_vector(C, 23);
  const auto b = random_vector(C, 24);
  const auto dout = random_vector(C, 25);
  // LayerNorm forward and backward.
  std::vector<float> y1(C), y4(C), dx1(C, 0.0f), dx4(C, 0.0f), dw1(C), dw4(C);
  float m1, r1, m4 = 0, r4 = 0;
  tf::layernorm_forward_row(x.data(), w.data(), b.data(), y1.data(), &m1, &r1, C, tf::one_lane{});
  tf::layernorm_backward_row(dout.data(), x.data(), w.data(), m1, r1, dx1.data(), C, tf::one_lane{},
                             [&](int i, float dw, float) { dw1[i] = dw; });
  on_lanes(lanes, [&](const thread_lanes& l) {
    tf::layernorm_forward_row(x.data(), w.data(), b.data(), y4.data(), &m4, &r4, C, l);
  });
  on_lanes(lanes, [&](const thread_lanes& l) {
    tf::layernorm_backward_row(dout.data(), x.data(), w.data(), m4, r4, dx4.data(), C, l,
                               [&](int i, float dw, float) { dw4[i] = dw; });
  });
  for (int i = 0; i < C; ++i) {
    EXPECT_NEAR(y1[i], y4[i], 1e-5) << i;
    EXPECT_NEAR(dx1[i], dx4[i], 1e-5) << i;
    EXPECT_NEAR(dw1[i], dw4[i], 1e-5) << i;
  }
  // Cross-entropy in place: every lane must read the target's logit before any lane writes.
  for (int target : {0, 5, C - 1}) {
    std::vector<float> l1 = x, l4 = x;
    const float loss1 = tf::cross_entropy_row(l1.data(), C, target, 0.5f, tf::one_lane{});
    std::vector<float> loss4(lanes);
    on_lanes(lanes, [&](const thread_lanes& l) {
      loss4[static_cast<std::size_t>(l.lane())] =
          tf::cross_entropy_row(l4.data(), C, target, 0.5f, l);
    });
    for (float v : loss4) EXPECT_NEAR(v, loss1, 1e-5);
    for (int i = 0; i < C; ++i) EXPECT_NEAR(l1[i], l4[i], 1e-6) << i;
  }
  // Attention softmax, in place, with a mask, forward and backward.
  std::vector<float> p1 = x, p4 = x, d1 = dout, d4 = dout;
  tf::attention_softmax_row(p1.data(), p1.data(), C, 20, 0.3f, tf::one_lane{});
  on_lanes(lanes, [&](const thread_lanes& l) {
    tf::attention_softmax_row(p4.data(), p4.data(), C, 20, 0.3f, l);
  });
  tf::attention_softmax_backward_row(p1.data(), d1.data(), d1.data(), C, 20, 0.3f, tf::one_lane{});
  on_lanes(lanes, [&](const thread_lanes& l) {
    tf::attention_softmax_backward_row(p4.data(), d4.data(), d4.data(), C, 20, 0.3f, l);
  });
  for (int i = 0; i < C; ++i) {
    EXPECT_NEAR(p1[i], p4[i], 1e-6) << i;
    EXPECT_NEAR(d1[i], d4[i], 1e-6) << i;
  }
}

TEST(TrainingOps, Bf16StorageStaysCloseToFp32) {
  // The same LayerNorm row with bf16 inputs and outputs (the GPU's mixed-precision path): within
  // bf16's 2^-8 relative rounding of the fp32 result.
  const int C = 64;
  const auto x = random_vector(C, 26, 3.0f);
  const auto w = random_vector(C, 27);
  const auto b = random_vector(C, 28);
  std::vector<tf::bf16> xb(C), wb(C), bb(C), yb(C);
  std::vector<float> xr(C), wr(C), br(C), y(C);
  for (int i = 0; i < C; ++i) {
    xb[i] = tf::from_float<tf::bf16>(x[i]);
    wb[i] = tf::from_float<tf::bf16>(w[i]);
    bb[i] = tf::from_float<tf::bf16>(b[i]);
    xr[i] = tf::to_float(xb[i]);
    wr[i] = tf::to_float(wb[i]);
    br[i] = tf::to_float(bb[i]);
  }
  float m = 0, r = 0;
  tf::layernorm_forward_row(xb.data(), wb.data(), bb.data(), yb.data(), &m, &r, C, tf::one_lane{});
  tf::layernorm_forward_row(xr.data(), wr.data(), br.data(), y.data(), &m, &r, C, tf::one_lane{});
  for (int i = 0; i < C; ++i) {
    EXPECT_NEAR(tf::to_float(yb[i]), y[i], std::fabs(y[i]) * (1.0 / 256) + 1e-6) << i;
  }
}
