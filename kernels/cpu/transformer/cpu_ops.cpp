#include "cpu/transformer/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/compiler_attributes.h"
#include "cpu/transformer/cpu_rows.h"

namespace infrabench::kernels::transformer {

namespace {

[[nodiscard]] std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// Items of element-wise work per part, and GEMM flops per part: a part must outweigh handing
// it to another thread. On a 2-vCPU KVM guest shared with other work that hand-off (the pool's
// wake-up and the caller's, through the hypervisor) measured 50-150 us per operation, so a part
// is ~100-200 us of work: the tiny models then run most operations on one thread, where finer
// parts (10 us) made their 2-thread step slower than the 1-thread one.
constexpr std::size_t element_grain = 1 << 17;
constexpr double gemm_grain_flops = 16e6;

// (batch row, head) pairs of attention per part.
[[nodiscard]] std::size_t pair_grain(double pair_flops) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(gemm_grain_flops / pair_flops));
}

[[nodiscard]] std::size_t row_grain(int C) {
  return std::max<std::size_t>(1, element_grain / static_cast<std::size_t>(std::max(C, 1)));
}

// One GEMM split into up to `threads` parts on ex's runner.
void gemm_parallel(const cpu_exec& ex, const sgemm_args& a) {
  const double flops = 2.0 * static_cast<double>(a.m) * a.n * a.k;
  if (ex.flops != nullptr) *ex.flops += flops;
  const auto parts = std::min<std::size_t>(
      std::max<std::size_t>(ex.threads, 1),
      ex.fine_grained ? ex.threads : 1 + static_cast<std::size_t>(flops / gemm_grain_flops));
  gemm_plan plan(a, ex.isa, parts);
  ex.parts(plan.threads(), [&](std::size_t t) { plan.run(t); });
}

// One GEMM on the calling thread (attention runs one per batch row and head, in parallel).
void gemm_here(gemm_isa isa, const sgemm_args& a) {
  gemm_plan plan(a, isa, 1);
  plan.run_all();
}

sgemm_args args(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                std::int64_t ldc) {
  sgemm_args g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = lda;
  g.b = b;
  g.ldb = ldb;
  g.beta = beta;
  g.c = c;
  g.ldc = ldc;
  return g;
}

}  // namespace

void cpu_exec::parts(std::size_t n, const std::function<void(std::size_t)>& fn) const {
  if (!run || n <= 1) {
    for (std::size_t p = 0; p < n; ++p) fn(p);
    return;
  }
  run(n, fn);
}

void cpu_exec::ranges(std::size_t count, const std::function<void(std::size_t, std::size_t)>& fn,
                      std::size_t grain) const {
  if (fine_grained) grain = 1;
  const std::size_t most = std::max<std::size_t>(1, count / std::max<std::size_t>(grain, 1));
  const std::size_t n = std::max<std::size_t>(1, std::min(std::max<std::size_t>(threads, 1), most));
  parts(n, [&](std::size_t p) {
    const std::size_t begin = count * p / n, end = count * (p + 1) / n;
    if (begin < end) fn(begin, end);
  });
}

void encoder_forward(const cpu_exec& ex, float* out, const std::int32_t* tokens, const float* wte,
                     const float* wpe, int B, int T, int C) {
  ex.ranges(
      sz(B) * sz(T),
      [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const float* e = wte + sz(tokens[r]) * sz(C);
          const float* p = wpe + (r % sz(T)) * sz(C);
          float* o = out + r * sz(C);
          for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
        }
      },
      row_grain(C));
}

void encoder_backward(const cpu_exec& ex, float* dwte, float* dwpe, const float* dout,
                      const std::int32_t* tokens, int B, int T, int C) {
  // Split by channels: rows with the same token or position then never race.
  const std::size_t rows = sz(B) * sz(T);
  ex.ranges(
      sz(C),
      [&](std::size_t c0, std::size_t c1) {
        for (std::size_t r = 0; r < rows; ++r) {
          float* e = dwte + sz(tokens[r]) * sz(C);
          float* p = dwpe + (r % sz(T)) * sz(C);
          const float* d = dout + r * sz(C);
          for (std::size_t i = c0; i < c1; ++i) {
            e[i] += d[i];
            p[i] += d[i];
          }
        }
      },
      std::max<std::size_t>(1, element_grain / std::max<std::size_t>(rows, 1)));
}

void layernorm_forward(const cpu_exec& ex, float* out, float* mean, float* rstd, const float* x,
                       const float* w, const float* b, int rows, int C) {
  ex.ranges(
      sz(rows),
      [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          layernorm_forward_row(x + r * sz(C), w, b, out + r * sz(C), mean + r, rstd + r, C,
                                one_lane{});
        }
      },
      row_grain(C));
}

void layernorm_backward(const cpu_exec& ex, float* dx, float* dw, float* db, const float* dout,
                        const float* x, const float* w, const float* mean, const float* rstd,
                        int rows, int C) {
  // Each part sums its rows' weight/bias gradients privately; the parts are added in order
  // afterwards (deterministic for a given thread count).
  const std::size_t n = std::max<std::size_t>(
      1, std::min(ex.threads, sz(rows) / (ex.fine_grained ? 1 : row_grain(C))));
  std::vector<float> partial(n * 2 * sz(C), 0.0f);
  ex.parts(n, [&](std::size_t p) {
    float* pw = partial.data() + p * 2 * sz(C);
    float* pb = pw + C;
    const auto acc = [&](int i, float dwi, float dbi) {
      pw[i] += dwi;
      pb[i] += dbi;
    };
    for (std::size_t r = sz(rows) * p / n; r < sz(rows) * (p + 1) / n; ++r) {
      layernorm_backward_row(dout + r * sz(C), x + r * sz(C), w, mean[r], rstd[r], dx + r * sz(C),
                             C, one_lane{}, acc);
    }
  });
  for (std::size_t p = 0; p < n; ++p) {
    const float* pw = partial.data() + p * 2 * sz(C);
    for (int i = 0; i < C; ++i) {
      dw[i] += pw[i];
      db[i] += pw[C + i];
    }
  }
}

void linear_forward(const cpu_exec& ex, float* out, const float* in, const float* w,
                    const float* bias, const float* residual, int rows, int IC, int OC) {
  const bool init = bias != nullptr || residual != nullptr;
  if (init) {
    ex.ranges(
        sz(rows),
        [&](std::size_t r0, std::size_t r1) {
          for (std::size_t r = r0; r < r1; ++r) {
            float* o = out + r * sz(OC);
            const float* res = residual != nullptr ? residual + r * sz(OC) : nullptr;
            for (int j = 0; j < OC; ++j) {
              o[j] = (res != nullptr ? res[j] : 0.0f) + (bias != nullptr ? bias[j] : 0.0f);
            }
          }
        },
        row_grain(OC));
  }
  gemm_parallel(ex, args(false, true, rows, OC, IC, in, IC, w, IC, init ? 1.0f : 0.0f, out, OC));
}

void linear_backward(const cpu_exec& ex, float* din, bool accumulate_din, float* dw, float* db,
                     const float* dout, const float* in, const float* w, int rows, int IC, int OC) {
  if (din != nullptr) {
    gemm_parallel(ex, args(false, false, rows, IC, OC, dout, OC, w, IC,
                           accumulate_din ? 1.0f : 0.0f, din, IC));
  }
  gemm_parallel(ex, args(true, false, OC, IC, rows, dout, OC, in, IC, 1.0f, dw, IC));
  if (db != nullptr) {
    // Column sums, split by columns (each column summed in row order by one part).
    ex.ranges(
        sz(OC),
        [&](std::size_t c0, std::size_t c1) {
          for (std::size_t r = 0; r < sz(rows); ++r) {
            const float* d = dout + r * sz(OC);
            for (std::size_t j = c0; j < c1; ++j) db[j] += d[j];
          }
        },
        std::max<std::size_t>(1, element_grain / std::max<std::size_t>(sz(rows), 1)));
  }
}

// Attention works on (batch, head) pairs, each `gemms` T x T x hs GEMMs (2 forward, 4 backward):
// the head size, the softmax scale, the pair count and each pair's FLOPs, counted once here.
namespace {
struct head_pairs {
  int hs;
  float scale;
  std::size_t pairs;
  double pair_flops;
};
head_pairs count_head_pairs(const cpu_exec& ex, int B, int T, int C, int NH, int gemms) {
  const int hs = C / NH;
  const head_pairs hp{hs, 1.0f / std::sqrt(static_cast<float>(hs)), sz(B) * sz(NH),
                      gemms * (2.0 * T * T * hs)};
  if (ex.flops != nullptr) *ex.flops += static_cast<double>(hp.pairs) * hp.pair_flops;
  return hp;
}
}  // namespace

void attention_forward(const cpu_exec& ex, float* out, float* att, const float* qkv, int B, int T,
                       int C, int NH, bool causal) {
  const head_pairs hp = count_head_pairs(ex, B, T, C, NH, 2);
  const int hs = hp.hs;
  const float scale = hp.scale;
  ex.ranges(
      hp.pairs,
      [&](std::size_t p0, std::size_t p1) {
        for (std::size_t pr = p0; pr < p1; ++pr) {
          const std::size_t b = pr / sz(NH), h = pr % sz(NH);
          const float* q = qkv + b * sz(T) * 3 * sz(C) + h * sz(hs);
          const float* k = q + C;
          const float* v = q + 2 * C;
          float* s = att + pr * sz(T) * sz(T);
          gemm_here(ex.isa, args(false, true, T, T, hs, q, 3 * C, k, 3 * C, 0.0f, s, T));
          for (int t = 0; t < T; ++t) {
            float* row = s + sz(t) * sz(T);
            softmax_row(row, row, T, causal ? t + 1 : T, scale);
          }
          float* y = out + b * sz(T) * sz(C) + h * sz(hs);
          gemm_here(ex.isa, args(false, false, T, hs, T, s, T, v, 3 * C, 0.0f, y, C));
        }
      },
      pair_grain(hp.pair_flops));
}

void attention_backward(const cpu_exec& ex, float* dqkv, float* datt, const float* dout,
                        const float* att, const float* qkv, int B, int T, int C, int NH,
                        bool causal) {
  const head_pairs hp = count_head_pairs(ex, B, T, C, NH, 4);
  const int hs = hp.hs;
  const float scale = hp.scale;
  ex.ranges(
      hp.pairs,
      [&](std::size_t p0, std::size_t p1) {
        for (std::size_t pr = p0; pr < p1; ++pr) {
          const std::size_t b = pr / sz(NH), h = pr % sz(NH);
          const std::size_t base = b * sz(T) * 3 * sz(C) + h * sz(hs);
          const float* q = qkv + base;
          const float* k = q + C;
          const float* v = q + 2 * C;
          float* dq = dqkv + base;
          float* dk = dq + C;
          float* dv = dq + 2 * C;
          const float* p = att + pr * sz(T) * sz(T);
          float* dp = datt + pr * sz(T) * sz(T);
          const float* dy = dout + b * sz(T) * sz(C) + h * sz(hs);
          // y = P v: dP = dy v^T, dv = P^T dy.
          gemm_here(ex.isa, args(false, true, T, T, hs, dy, C, v, 3 * C, 0.0f, dp, T));
          gemm_here(ex.isa, args(true, false, T, hs, T, p, T, dy, C, 0.0f, dv, 3 * C));
          for (int t = 0; t < T; ++t) {
            float* row = dp + sz(t) * sz(T);
            softmax_backward_row(p + sz(t) * sz(T), row, row, T, causal ? t + 1 : T, scale);
          }
          // S = q k^T: dq = dS k, dk = dS^T q.
          gemm_here(ex.isa, args(false, false, T, hs, T, dp, T, k, 3 * C, 0.0f, dq, 3 * C));
          gemm_here(ex.isa, args(true, false, T, hs, T, dp, T, q, 3 * C, 0.0f, dk, 3 * C));
        }
      },
      pair_grain(hp.pair_flops));
}

void gelu_forward(const cpu_exec& ex, float* out, const float* in, std::size_t n) {
  ex.ranges(
      n, [&](std::size_t i0, std::size_t i1) { gelu_forward_range(out + i0, in + i0, i1 - i0); },
      element_grain / 4);
}

void gelu_backward(const cpu_exec& ex, float* din, const float* in, const float* dout,
                   std::size_t n) {
  ex.ranges(
      n,
      [&](std::size_t i0, std::size_t i1) {
        gelu_backward_range(din + i0, in + i0, dout + i0, i1 - i0);
      },
      element_grain / 4);
}

double cross_entropy(const cpu_exec& ex, float* logits, float* losses, const std::int32_t* targets,
                     int rows, int V, float dloss) {
  ex.ranges(
      sz(rows),
      [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          losses[r] = cross_entropy_vector_row(logits + r * sz(V), V, targets[r], dloss);
        }
      },
      row_grain(V) / 4 + 1);
  double sum = 0;
  for (int r = 0; r < rows; ++r) sum += losses[r];
  return sum;
}

void patch_extract(const cpu_exec& ex, float* patches, const float* images, int B, int image,
                   int patch, int channels) {
  const std::size_t n = sz(B) * sz(channels) * sz(image) * sz(image);
  ex.ranges(
      n,
      [&](std::size_t e0, std::size_t e1) {
        for (std::size_t e = e0; e < e1; ++e) {
          patches[e] =
              images[patch_source_index(static_cast<std::int64_t>(e), image, patch, channels)];
        }
      },
      element_grain);
}

void vit_assemble(const cpu_exec& ex, float* out, const float* patch_out, const float* patch_bias,
                  const float* cls, const float* pos, int B, int P, int C) {
  const std::size_t T = sz(P) + 1;
  ex.ranges(
      sz(B) * T,
      [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
          const std::size_t b = r / T, t = r % T;
          float* o = out + r * sz(C);
          const float* p = pos + t * sz(C);
          if (t == 0) {
            for (int i = 0; i < C; ++i) o[i] = cls[i] + p[i];
          } else {
            const float* x = patch_out + (b * sz(P) + t - 1) * sz(C);
            for (int i = 0; i < C; ++i) o[i] = x[i] + patch_bias[i] + p[i];
          }
        }
      },
      row_grain(C));
}

void vit_assemble_backward(const cpu_exec& ex, float* dpatch_out, float* dpatch_bias, float* dcls,
                           float* dpos, const float* dout, int B, int P, int C) {
  const std::size_t T = sz(P) + 1;
  ex.ranges(
      sz(C),
      [&](std::size_t c0, std::size_t c1) {
        for (std::size_t b = 0; b < sz(B); ++b) {
          for (std::size_t t = 0; t < T; ++t) {
            const float* d = dout + (b * T + t) * sz(C);
            float* dp = dpos + t * sz(C);
            for (std::size_t i = c0; i < c1; ++i) dp[i] += d[i];
            if (t == 0) {
              for (std::size_t i = c0; i < c1; ++i) dcls[i] += d[i];
            } else {
              float* dx = dpatch_out + (b * sz(P) + t - 1) * sz(C);
              for (std::size_t i = c0; i < c1; ++i) {
                dx[i] = d[i];
                dpatch_bias[i] += d[i];
              }
            }
          }
        }
      },
      std::max<std::size_t>(1, element_grain / (sz(B) * T)));
}

void gather_class_tokens(const cpu_exec&, float* rows, const float* x, int B, int T, int C) {
  for (std::size_t b = 0; b < sz(B); ++b) {
    std::memcpy(rows + b * sz(C), x + b * sz(T) * sz(C), sz(C) * sizeof(float));
  }
}

void scatter_class_tokens(const cpu_exec&, float* dx, const float* drows, int B, int T, int C) {
  for (std::size_t b = 0; b < sz(B); ++b) {
    float* d = dx + b * sz(T) * sz(C);
    for (int i = 0; i < C; ++i) d[i] += drows[b * sz(C) + sz(i)];
  }
}

namespace {

// One range of AdamW, compiled for AVX-512, AVX2 and baseline x86-64 and picked at run time (the
// shipped binary has no -march). The optimizer touches every parameter four times a step: for a
// small batch on the CPU it is a visible share of the step. Vectorising the square root needs
// -fno-math-errno (kernels/transformer.cmake); the hyperparameters are copied so that they cannot
// alias the arrays.
#if defined(__x86_64__) && !defined(INFRABENCH_ASAN) && !defined(INFRABENCH_TSAN)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void adamw_range(float* __restrict p, const float* __restrict g, float* __restrict m,
                 float* __restrict v, std::size_t n, adamw_hyper h, bool decay) {
  for (std::size_t i = 0; i < n; ++i) p[i] = adamw_update(p[i], g[i], m[i], v[i], h, decay);
}

}  // namespace

void adamw(const cpu_exec& ex, float* params, const float* grads, float* m, float* v, std::size_t n,
           const adamw_hyper& h, bool decay) {
  ex.ranges(
      n,
      [&](std::size_t i0, std::size_t i1) {
        adamw_range(params + i0, grads + i0, m + i0, v + i0, i1 - i0, h, decay);
      },
      element_grain);
}

}  // namespace infrabench::kernels::transformer
