// The transformer on one GPU (see gpu_model.h). Row-major tensors as on the CPU; cuBLAS is
// column-major, so each row-major product C = A B is computed as C^T = B^T A^T (the same buffers,
// read as their transposes): the comment at each call gives the row-major product.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>

#include "cpu/transformer/gpu_gemm_args.h"
#include "cuda/transformer/cuda_support.h"
#include "cuda/transformer/flash_attention.h"
#include "cuda/transformer/flash_tiling.h"
#include "cuda/transformer/gpu_model.h"
#include "cuda/transformer/kernels.h"

namespace infrabench::kernels::cuda::transformer {

namespace {

constexpr std::size_t lt_workspace_bytes = 32u << 20;  // cuBLASLt's recommendation for Hopper

template <typename T>
constexpr cudaDataType_t cuda_type() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

// The largest power of two (up to 256) dividing the address: what cuBLASLt may assume.
[[nodiscard]] std::uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// Fused or materialised attention, and why not fused.
struct attention_choice {
  bool flash = false;
  std::string note;  // why attention is materialised
};

// One cuBLASLt matmul shape, its descriptor and the heuristic's algorithm, made once and reused
// (the shapes of a step are fixed).
struct lt_key {
  cublasOperation_t ta, tb;
  int m, n, k, lda, ldb, ldd;
  cudaDataType_t ab, d;
  cublasLtEpilogue_t epilogue;
  bool accumulate;
  std::uint32_t align_a, align_b, align_d, align_e;
  [[nodiscard]] auto tie() const {
    return std::tie(ta, tb, m, n, k, lda, ldb, ldd, ab, d, epilogue, accumulate, align_a, align_b,
                    align_d, align_e);
  }
  bool operator<(const lt_key& o) const { return tie() < o.tie(); }
};

class lt_matmul {
 public:
  lt_matmul() {
    IB_CUBLAS(cublasLtCreate(&m_handle));
    m_workspace = device_buffer<std::byte>(lt_workspace_bytes);
  }
  ~lt_matmul() {
    for (auto& [key, p] : m_plans) {
      (void)cublasLtMatrixLayoutDestroy(p.a);
      (void)cublasLtMatrixLayoutDestroy(p.b);
      (void)cublasLtMatrixLayoutDestroy(p.c);
      (void)cublasLtMatrixLayoutDestroy(p.d);
      (void)cublasLtMatmulDescDestroy(p.desc);
    }
    if (m_handle != nullptr) (void)cublasLtDestroy(m_handle);
  }
  lt_matmul(const lt_matmul&) = delete;
  lt_matmul& operator=(const lt_matmul&) = delete;

  // Whether this cuBLASLt has an algorithm for the shape (false for an unsupported epilogue).
  bool supported(const lt_key& k) { return plan(k) != nullptr; }

  // D = op(A) op(B) (+ C when accumulate) with the key's epilogue; bias and aux as it needs.
  void run(const lt_key& k, const void* a, const void* b, const void* c, void* d, const void* bias,
           void* aux, std::int64_t aux_ld, cudaStream_t s) {
    const auto* p = plan(k);
    if (p == nullptr) {
      throw std::runtime_error("cuBLASLt has no algorithm for a " + std::to_string(k.m) + "x" +
                               std::to_string(k.n) + "x" + std::to_string(k.k) +
                               " matmul with epilogue " +
                               std::to_string(static_cast<int>(k.epilogue)));
    }
    if (bias != nullptr) {
      IB_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                               sizeof(bias)));
    }
    if (aux != nullptr) {
      IB_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                               &aux, sizeof(aux)));
      IB_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                               &aux_ld, sizeof(aux_ld)));
    }
    const float alpha = 1.0f, beta = k.accumulate ? 1.0f : 0.0f;
    IB_CUBLAS(cublasLtMatmul(m_handle, p->desc, &alpha, a, p->a, b, p->b, &beta,
                             k.accumulate ? c : d, p->c, d, p->d, &p->algo, m_workspace.get(),
                             lt_workspace_bytes, s));
  }

  [[nodiscard]] std::size_t workspace_bytes() const { return lt_workspace_bytes; }

 private:
  struct lt_plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };

  const lt_plan* plan(const lt_key& k) {
    auto it = m_plans.find(k);
    if (it == m_plans.end()) it = m_plans.emplace(k, make(k)).first;
    return it->second.ok ? &it->second : nullptr;
  }

  lt_plan make(const lt_key& k) {
    lt_plan p;
    IB_CUBLAS(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    IB_CUBLAS(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &k.ta, sizeof(k.ta)));
    IB_CUBLAS(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &k.tb, sizeof(k.tb)));
    IB_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &k.epilogue,
                                             sizeof(k.epilogue)));
    const bool ta = k.ta == CUBLAS_OP_T, tb = k.tb == CUBLAS_OP_T;
    IB_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, k.ab, ta ? k.k : k.m, ta ? k.m : k.k, k.lda));
    IB_CUBLAS(cublasLtMatrixLayoutCreate(&p.b, k.ab, tb ? k.n : k.k, tb ? k.k : k.n, k.ldb));
    IB_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, k.d, k.m, k.n, k.ldd));
    IB_CUBLAS(cublasLtMatrixLayoutCreate(&p.d, k.d, k.m, k.n, k.ldd));
    cublasLtMatmulPreference_t pref = nullptr;
    IB_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = lt_workspace_bytes;
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, k.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, k.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, k.align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, k.align_d}};
    cublasStatus_t rc = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    for (const auto& [attr, value] : aligns) {
      if (rc == CUBLAS_STATUS_SUCCESS) {
        rc = cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value));
      }
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (rc == CUBLAS_STATUS_SUCCESS) {
      rc = cublasLtMatmulAlgoGetHeuristic(m_handle, p.desc, p.a, p.b, p.c, p.d, pref, 1, &result,
                                          &found);
    }
    (void)cublasLtMatmulPreferenceDestroy(pref);
    // NOT_SUPPORTED (or no result): this shape/epilogue has no kernel here; the caller decides.
    p.ok = rc == CUBLAS_STATUS_SUCCESS && found > 0;
    if (rc != CUBLAS_STATUS_SUCCESS && rc != CUBLAS_STATUS_NOT_SUPPORTED) {
      IB_CUBLAS(rc);
    }
    p.algo = result.algo;
    return p;
  }

  cublasLtHandle_t m_handle = nullptr;
  device_buffer<std::byte> m_workspace;
  std::map<lt_key, lt_plan> m_plans;
};

template <typename T>
class model_impl final : public gpu_model {
 public:
  explicit model_impl(const gpu_model_options& o)
      : m_cfg(o.model),
        m_p(tf::make_param_layout(o.model)),
        m_choice(choose_attention(o)),
        // The [T, T] matrices only where attention is materialised: fused attention never
        // writes them (issue 38), so they are neither allocated nor counted in device_bytes().
        m_a(tf::make_activation_layout(
            o.model, o.batch, o.seq,
            m_choice.flash ? tf::attention_scores::none : tf::attention_scores::planned)) {
    IB_CUBLAS(cublasCreate(&m_blas));
    IB_CUBLAS(cublasSetStream(m_blas, m_stream.get()));
    const std::size_t n = m_p.total;
    m_master = device_buffer<float>(n);
    m_grads = device_buffer<float>(n);
    m_m = device_buffer<float>(n);
    m_v = device_buffer<float>(n);
    if constexpr (!std::is_same_v<T, float>) m_compute = device_buffer<T>(n);
    m_acts = device_buffer<T>(m_a.total);
    m_stats = device_buffer<float>(m_a.stats_total);
    const std::size_t rows = static_cast<std::size_t>(m_a.rows);
    for (auto& in : m_inputs) {
      if (gpt2()) {
        in.tokens = device_buffer<std::int32_t>(rows);
        in.targets = device_buffer<std::int32_t>(rows);
      } else {
        in.images = device_buffer<float>(static_cast<std::size_t>(m_a.batch) * 3 * m_cfg.image *
                                         m_cfg.image);
        in.targets = device_buffer<std::int32_t>(static_cast<std::size_t>(m_a.batch));
      }
    }
    IB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m_host_losses),
                           static_cast<std::size_t>(m_a.head_rows) * sizeof(float)));
    if (m_choice.flash)
      plan_flash();
    else
      make_attention_pointers();
    make_buckets();
    make_adamw_blocks();
    probe_fused_gelu();
  }

  ~model_impl() override {
    if (m_host_losses != nullptr) (void)cudaFreeHost(m_host_losses);
    if (m_blas != nullptr) (void)cublasDestroy(m_blas);
  }

  [[nodiscard]] const tf::param_layout& params_layout() const override { return m_p; }
  [[nodiscard]] cudaStream_t stream() const override { return m_stream.get(); }
  [[nodiscard]] std::uint64_t device_bytes() const override {
    std::uint64_t b = m_master.bytes() + m_grads.bytes() + m_m.bytes() + m_v.bytes() +
                      m_compute.bytes() + m_acts.bytes() + m_stats.bytes() + m_attn_ptrs.bytes() +
                      m_lt.workspace_bytes() + m_lse.bytes() + m_dq_acc.bytes() + m_delta.bytes();
    for (const auto& in : m_inputs) b += in.tokens.bytes() + in.targets.bytes() + in.images.bytes();
    return b;
  }
  [[nodiscard]] std::string describe() const override {
    return std::string("cuBLASLt ") + (std::is_same_v<T, float> ? "fp32" : "bf16") +
           " GEMMs (fp32 accumulation, bias epilogue" +
           (m_fused_gelu ? ", GELU forward/backward epilogues"
                         : "; GELU in our kernels: this "
                           "cuBLASLt has no GELU epilogue "
                           "for these shapes") +
           "), " + attention_text() +
           ", our LayerNorm, embedding, cross-entropy and fused (multi-tensor) AdamW kernels";
  }
  [[nodiscard]] bool flash_attention() const override { return m_choice.flash; }

  void init_parameters(std::uint64_t seed) override {
    std::vector<float> host(m_p.total);
    tf::init_parameters(m_cfg, m_p, seed, host.data());
    IB_CUDA(cudaMemcpyAsync(m_master.get(), host.data(), host.size() * sizeof(float),
                            cudaMemcpyHostToDevice, stream()));
    if constexpr (!std::is_same_v<T, float>) {
      convert(m_compute.get(), m_master.get(), m_p.total, stream());
    }
    IB_CUDA(cudaMemsetAsync(m_m.get(), 0, m_m.bytes(), stream()));
    IB_CUDA(cudaMemsetAsync(m_v.get(), 0, m_v.bytes(), stream()));
    IB_CUDA(cudaStreamSynchronize(stream()));  // `host` goes out of scope
  }

  void upload(const tf::batch_view& h, int slot, cudaStream_t copy) override {
    check_range(h);
    auto& in = m_inputs.at(static_cast<std::size_t>(slot));
    const auto put = [&](void* dst, const void* src, std::size_t bytes) {
      IB_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy));
    };
    if (gpt2()) {
      put(in.tokens.get(), h.tokens, in.tokens.bytes());
      put(in.targets.get(), h.targets, in.targets.bytes());
    } else {
      put(in.images.get(), h.images, in.images.bytes());
      put(in.targets.get(), h.labels, in.targets.bytes());
    }
  }

  void forward(int slot) override {
    const auto& in = m_inputs.at(static_cast<std::size_t>(slot));
    embed(in);
    for (int l = 0; l < m_cfg.layers; ++l) block_forward(l);
    head_forward();
    const int rows = m_a.head_rows;
    cross_entropy(act(m_a.logits), stat(m_a.losses), in.targets.get(), rows, m_cfg.outputs(),
                  1.0f / static_cast<float>(rows), stream());
    IB_CUDA(cudaMemcpyAsync(m_host_losses, stat(m_a.losses), static_cast<std::size_t>(rows) * 4,
                            cudaMemcpyDeviceToHost, stream()));
  }

  void backward(int slot, const std::function<void(std::size_t)>& ready) override {
    const auto& in = m_inputs.at(static_cast<std::size_t>(slot));
    IB_CUDA(cudaMemsetAsync(m_grads.get(), 0, m_grads.bytes(), stream()));
    std::size_t bucket = 0;
    head_backward();
    if (ready) ready(bucket++);
    for (int l = m_cfg.layers - 1; l >= 0; --l) {
      block_backward(l);
      if (ready) ready(bucket++);
    }
    embed_backward(in);
    if (ready) ready(bucket++);
  }

  [[nodiscard]] const std::vector<std::pair<std::size_t, std::size_t>>& buckets() const override {
    return m_buckets;
  }
  [[nodiscard]] float* grads() override { return m_grads.get(); }

  void adamw(const tf::adamw_hyper& hyper, std::int64_t step) override {
    tf::adamw_hyper h = hyper;
    tf::set_adamw_step(h, step);
    T* compute = nullptr;
    if constexpr (!std::is_same_v<T, float>) compute = m_compute.get();
    adamw_fused<T>(m_master.get(), compute, m_grads.get(), m_m.get(), m_v.get(),
                   m_adamw_blocks.get(), m_adamw_blocks.size(), h, stream());
  }

  [[nodiscard]] const float* host_losses() const override { return m_host_losses; }
  [[nodiscard]] int loss_rows() const override { return m_a.head_rows; }

  std::vector<float> download_params() override { return download(m_master.get()); }
  std::vector<float> download_grads() override { return download(m_grads.get()); }

 private:
  struct inputs {
    device_buffer<std::int32_t> tokens, targets;  // targets: GPT-2's next tokens, ViT's labels
    device_buffer<float> images;
  };

  [[nodiscard]] bool gpt2() const { return m_cfg.family == tf::model_family::gpt2; }
  [[nodiscard]] T* act(std::size_t off) const { return m_acts.get() + off; }
  [[nodiscard]] float* stat(std::size_t off) const { return m_stats.get() + off; }
  // The parameters the compute reads (the bf16 copy, or the fp32 master itself).
  [[nodiscard]] const T* param(std::size_t off) const {
    if constexpr (std::is_same_v<T, float>) {
      return m_master.get() + off;
    } else {
      return m_compute.get() + off;
    }
  }
  [[nodiscard]] float* grad(std::size_t off) const { return m_grads.get() + off; }
  [[nodiscard]] const T* block_input(int l) const {
    return act(l == 0 ? m_a.encoded : m_a.layers[static_cast<std::size_t>(l) - 1].res3);
  }

  std::vector<float> download(const float* d) {
    std::vector<float> h(m_p.total);
    IB_CUDA(cudaStreamSynchronize(stream()));
    IB_CUDA(cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

  void check_range(const tf::batch_view& h) const {
    const auto check = [](const std::int32_t* ids, std::size_t n, int limit, const char* what) {
      for (std::size_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= limit) {
          throw std::invalid_argument(std::string(what) + " " + std::to_string(ids[i]) +
                                      " is outside 0.." + std::to_string(limit - 1));
        }
      }
    };
    if (gpt2()) {
      check(h.tokens, static_cast<std::size_t>(m_a.rows), m_cfg.vocab, "token");
      check(h.targets, static_cast<std::size_t>(m_a.rows), m_cfg.vocab, "target");
    } else {
      check(h.labels, static_cast<std::size_t>(m_a.batch), m_cfg.classes, "label");
    }
  }

  // ---- GEMMs
  // ---------------------------------------------------------------------------------------

  // `c`: the matrix added (null when none); `extra`: the epilogue's aux matrix or bias.
  lt_key key(const tf::colmajor_gemm& g, cudaDataType_t d, cublasLtEpilogue_t ep, const void* a,
             const void* b, const void* c, const void* dp, const void* extra) const {
    lt_key x{};
    x.ta = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    x.tb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    x.m = g.m;
    x.n = g.n;
    x.k = g.k;
    x.lda = g.lda;
    x.ldb = g.ldb;
    x.ldd = g.ldd;
    x.ab = cuda_type<T>();
    x.d = d;
    x.epilogue = ep;
    x.accumulate = c != nullptr;
    x.align_a = alignment_of(a);
    x.align_b = alignment_of(b);
    x.align_d = std::min(alignment_of(dp), c != nullptr ? alignment_of(c) : 256u);
    x.align_e = extra != nullptr ? alignment_of(extra) : 256u;
    return x;
  }

  // out[rows, OC] = in[rows, IC] . w[OC, IC]^T (+ bias) (+ residual), and with `gelu_aux`:
  // out = gelu(that), gelu_aux = that (the pre-activation the backward needs).
  void linear_forward(T* out, const T* in, const T* w, const T* bias, const T* residual, int rows,
                      int IC, int OC, T* gelu_aux = nullptr) {
    cublasLtEpilogue_t ep = bias != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (gelu_aux != nullptr) ep = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    // Column-major: out^T [OC x rows] = w (read as [IC x OC], transposed) . in^T [IC x rows].
    const auto k = key(tf::linear_forward_gemm(rows, IC, OC), cuda_type<T>(), ep, w, in, residual,
                       out, gelu_aux != nullptr ? gelu_aux : bias);
    m_lt.run(k, w, in, residual, out, bias, gelu_aux, OC, stream());
  }

  // din = dout . w (with `dgelu_aux`: times gelu'(aux), the GELU's backward fused); dw += dout^T
  // . in (fp32); db += column sums of dout. din, db may be null.
  void linear_backward(T* din, float* dw, float* db, const T* dout, const T* in, const T* w,
                       int rows, int IC, int OC, const T* dgelu_aux = nullptr) {
    if (din != nullptr) {
      const cublasLtEpilogue_t ep =
          dgelu_aux != nullptr ? CUBLASLT_EPILOGUE_DGELU : CUBLASLT_EPILOGUE_DEFAULT;
      // din^T [IC x rows] = w^T [IC x OC] . dout^T [OC x rows]
      const auto k = key(tf::linear_input_grad_gemm(rows, IC, OC), cuda_type<T>(), ep, w, dout,
                         nullptr, din, dgelu_aux);
      m_lt.run(k, w, dout, nullptr, din, nullptr, const_cast<T*>(dgelu_aux), IC, stream());
    }
    // dw^T [IC x OC] += in^T [IC x rows] . dout [rows x OC], fp32 output
    const auto k = key(tf::linear_weight_grad_gemm(rows, IC, OC), CUDA_R_32F,
                       CUBLASLT_EPILOGUE_DEFAULT, in, dout, dw, dw, nullptr);
    m_lt.run(k, in, dout, dw, dw, nullptr, nullptr, 0, stream());
    if (db != nullptr) bias_backward(db, dout, rows, OC, stream());
  }

  // Whether this cuBLASLt fuses GELU (and its gradient) into the MLP's GEMMs for our shapes; if
  // not, GELU runs in our kernels.
  void probe_fused_gelu() {
    const int R = m_a.rows, C = m_cfg.width;
    const auto& y = m_a.layers[0];
    const auto& w = m_p.blocks[0];
    const auto fwd =
        key(tf::linear_forward_gemm(R, C, 4 * C), cuda_type<T>(), CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
            param(w.fcw), act(y.ln2), nullptr, act(y.fch_gelu), act(y.fch));
    const auto bwd =
        key(tf::linear_input_grad_gemm(R, 4 * C, C), cuda_type<T>(), CUBLASLT_EPILOGUE_DGELU,
            param(w.fcprojw), act(m_a.dres), nullptr, act(m_a.dfch), act(y.fch));
    m_fused_gelu = m_lt.supported(fwd) && m_lt.supported(bwd);
  }

  // Attention's batched GEMMs: one (batch row, head) pair per GEMM, through pointer arrays made
  // once (the buffers never move), so Q, K, V are read in place inside qkv without a permute.
  // The GEMMs' arguments and the pairs' offsets come from gpu_gemm_args.h (tested on the CPU).
  enum ptr_kind { q_k, k_k, v_k, s_k, y_k, kinds };
  void make_attention_pointers() {
    const int B = m_a.batch, NH = m_cfg.heads, Tn = m_a.seq, C = m_cfg.width;
    const std::size_t pairs = static_cast<std::size_t>(B) * NH;
    // Per layer: q, k, v, s, y; then the backward's shared scratch: dq, dk, dv, ds, dy.
    const std::size_t sets = static_cast<std::size_t>(m_cfg.layers) + 1;
    std::vector<const void*> host(sets * kinds * pairs);
    const auto fill = [&](std::size_t set, T* qkv, T* att, T* y) {
      for (std::size_t i = 0; i < pairs; ++i) {
        const auto at = tf::attention_pair_offsets(i, NH, Tn, C);
        T* q = qkv + at.qkv;
        const void* v[kinds] = {q, q + C, q + 2 * C, att + at.scores, y + at.out};
        for (int kd = 0; kd < kinds; ++kd) host[(set * kinds + kd) * pairs + i] = v[kd];
      }
    };
    for (int l = 0; l < m_cfg.layers; ++l) {
      const auto& y = m_a.layers[static_cast<std::size_t>(l)];
      fill(static_cast<std::size_t>(l), act(y.qkv), act(y.att), act(y.atty));
    }
    fill(static_cast<std::size_t>(m_cfg.layers), act(m_a.dqkv), act(m_a.datt), act(m_a.datty));
    m_attn_ptrs = device_buffer<const void*>(host.size());
    IB_CUDA(cudaMemcpy(m_attn_ptrs.get(), host.data(), host.size() * sizeof(void*),
                       cudaMemcpyHostToDevice));
    m_pairs = pairs;
  }
  [[nodiscard]] const void* const* ptrs(std::size_t set, int kind) const {
    return m_attn_ptrs.get() + (set * kinds + static_cast<std::size_t>(kind)) * m_pairs;
  }

  void batched(const tf::colmajor_gemm& g, const void* const* a, const void* const* b,
               const void* const* d) {
    const float alpha = 1.0f, beta = 0.0f;
    IB_CUBLAS(cublasGemmBatchedEx(
        m_blas, g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k,
        &alpha, a, cuda_type<T>(), g.lda, b, cuda_type<T>(), g.ldb, &beta,
        const_cast<void* const*>(d), cuda_type<T>(), g.ldd, static_cast<int>(m_pairs),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  [[nodiscard]] static flash_shape attention_shape(const gpu_model_options& o) {
    flash_shape f;
    f.batch = o.batch;
    f.heads = o.model.heads;
    f.seq = tf::resolve_seq(o.model, o.seq);
    f.head_size = o.model.width / o.model.heads;
    f.causal = o.model.causal();
    f.scale = 1.0f / std::sqrt(static_cast<float>(f.head_size));
    return f;
  }
  [[nodiscard]] flash_shape attention_shape() const {
    gpu_model_options o;
    o.model = m_cfg;
    o.batch = m_a.batch;
    o.seq = m_a.seq;
    return attention_shape(o);
  }

  // Fused attention where it runs (bf16, a head size it has kernels for, the shared memory its
  // blocks need), else the materialised path; asked for explicitly and impossible, the
  // configuration is refused. Decided before the memory plan: only materialised attention plans
  // the [T, T] matrices.
  static attention_choice choose_attention(const gpu_model_options& o) {
    if (o.attention == attention_kind::materialized) return {false, "asked for"};
    std::string why;
    if constexpr (std::is_same_v<T, float>) {
      why = "flash attention is bf16 only";
    } else {
      const auto d = query_device(current_device());
      why = flash_tiling::device_unsupported(attention_shape(o).head_size, d.cc_major,
                                             d.shared_optin_bytes);
      if (why.empty()) return {true, ""};
    }
    if (o.attention == attention_kind::flash) throw std::invalid_argument(why);
    return {false, why};
  }

  // Fused attention's statistics and scratch. The plan's 256-byte offsets give the 16-byte rows
  // the kernels load; checked here all the same, as the kernels' own condition.
  void plan_flash() {
    const auto f = attention_shape();
    const auto d = query_device(current_device());
    std::string why = flash_attention_unsupported(f, act(m_a.dqkv), act(m_a.datty), d.cc_major,
                                                  d.shared_optin_bytes);
    for (int l = 0; l < m_cfg.layers && why.empty(); ++l) {
      const auto& y = m_a.layers[static_cast<std::size_t>(l)];
      why =
          flash_attention_unsupported(f, act(y.qkv), act(y.atty), d.cc_major, d.shared_optin_bytes);
    }
    if (!why.empty()) throw std::logic_error("the memory plan broke fused attention: " + why);
    const std::size_t rows = flash_row_elements(f);
    m_lse = device_buffer<float>(rows * static_cast<std::size_t>(m_cfg.layers));
    m_delta = device_buffer<float>(rows);
    m_dq_acc = device_buffer<float>(flash_dq_accumulator_elements(f));
  }

  [[nodiscard]] std::string attention_text() const {
    if (m_choice.flash) {
      return "fused attention (our flash kernels: mma.sync bf16, FlashAttention-2 tiling, the "
             "score matrix never written)";
    }
    return "cuBLAS batched QK^T/PV around our causal softmax (materialised attention: " +
           m_choice.note + ")";
  }

  [[nodiscard]] float* layer_lse(int l) const {
    return m_lse.get() + static_cast<std::size_t>(l) * flash_row_elements(attention_shape());
  }

  void attention_forward(int l) {
    if constexpr (!std::is_same_v<T, float>) {
      if (m_choice.flash) {
        const auto& y = m_a.layers[static_cast<std::size_t>(l)];
        flash_attention_forward(act(y.atty), layer_lse(l), act(y.qkv), attention_shape(), stream());
        return;
      }
    }
    const auto L = static_cast<std::size_t>(l);
    const int Tn = m_a.seq, C = m_cfg.width, hs = C / m_cfg.heads;
    batched(tf::attention_scores_gemm(Tn, hs, C), ptrs(L, k_k), ptrs(L, q_k), ptrs(L, s_k));
    attention_softmax(act(m_a.layers[L].att), static_cast<int>(m_pairs) * Tn, Tn,
                      1.0f / std::sqrt(static_cast<float>(hs)), m_cfg.causal(), stream());
    batched(tf::attention_values_gemm(Tn, hs, C), ptrs(L, v_k), ptrs(L, s_k), ptrs(L, y_k));
  }

  void attention_backward(int l) {
    if constexpr (!std::is_same_v<T, float>) {
      if (m_choice.flash) {
        const auto& y = m_a.layers[static_cast<std::size_t>(l)];
        flash_attention_backward(act(m_a.dqkv), m_dq_acc.get(), m_delta.get(), act(m_a.datty),
                                 act(y.atty), layer_lse(l), act(y.qkv), attention_shape(),
                                 stream());
        return;
      }
    }
    const auto L = static_cast<std::size_t>(l);
    const auto D = static_cast<std::size_t>(m_cfg.layers);  // the gradient scratch's pointers
    const int Tn = m_a.seq, C = m_cfg.width, hs = C / m_cfg.heads;
    batched(tf::attention_dprobs_gemm(Tn, hs, C), ptrs(L, v_k), ptrs(D, y_k), ptrs(D, s_k));
    batched(tf::attention_dvalues_gemm(Tn, hs, C), ptrs(D, y_k), ptrs(L, s_k), ptrs(D, v_k));
    attention_softmax_backward(act(m_a.datt), act(m_a.layers[L].att),
                               static_cast<int>(m_pairs) * Tn, Tn,
                               1.0f / std::sqrt(static_cast<float>(hs)), m_cfg.causal(), stream());
    batched(tf::attention_dqueries_gemm(Tn, hs, C), ptrs(L, k_k), ptrs(D, s_k), ptrs(D, q_k));
    batched(tf::attention_dkeys_gemm(Tn, hs, C), ptrs(L, q_k), ptrs(D, s_k), ptrs(D, k_k));
  }

  // ---- the model, as cpu_model.cpp
  // ---------------------------------------------------------------

  void embed(const inputs& in) {
    const int C = m_cfg.width;
    if (gpt2()) {
      encoder_forward(act(m_a.encoded), in.tokens.get(), param(m_p.wte), param(m_p.wpe), m_a.rows,
                      m_a.seq, C, stream());
      return;
    }
    const int P = m_cfg.patches(), pp = 3 * m_cfg.patch * m_cfg.patch;
    patch_extract(act(m_a.patches), in.images.get(), m_a.batch, m_cfg.image, m_cfg.patch, 3,
                  stream());
    linear_forward(act(m_a.patch_out), act(m_a.patches), param(m_p.patchw), nullptr, nullptr,
                   m_a.batch * P, pp, C);
    vit_assemble(act(m_a.encoded), act(m_a.patch_out), param(m_p.patchb), param(m_p.cls),
                 param(m_p.pos), m_a.batch, P, C, stream());
  }

  void block_forward(int l) {
    const auto& y = m_a.layers[static_cast<std::size_t>(l)];
    const auto& w = m_p.blocks[static_cast<std::size_t>(l)];
    const int R = m_a.rows, C = m_cfg.width;
    const T* x = block_input(l);
    layernorm_forward(act(y.ln1), stat(y.ln1_mean), stat(y.ln1_rstd), x, param(w.ln1w),
                      param(w.ln1b), R, C, stream());
    linear_forward(act(y.qkv), act(y.ln1), param(w.qkvw), param(w.qkvb), nullptr, R, C, 3 * C);
    attention_forward(l);
    linear_forward(act(y.res2), act(y.atty), param(w.projw), param(w.projb), x, R, C, C);
    layernorm_forward(act(y.ln2), stat(y.ln2_mean), stat(y.ln2_rstd), act(y.res2), param(w.ln2w),
                      param(w.ln2b), R, C, stream());
    if (m_fused_gelu) {
      linear_forward(act(y.fch_gelu), act(y.ln2), param(w.fcw), param(w.fcb), nullptr, R, C, 4 * C,
                     act(y.fch));
    } else {
      linear_forward(act(y.fch), act(y.ln2), param(w.fcw), param(w.fcb), nullptr, R, C, 4 * C);
      gelu_forward(act(y.fch_gelu), act(y.fch), static_cast<std::size_t>(R) * 4 * C, stream());
    }
    linear_forward(act(y.res3), act(y.fch_gelu), param(w.fcprojw), param(w.fcprojb), act(y.res2), R,
                   4 * C, C);
  }

  void head_forward() {
    const int C = m_cfg.width, V = m_cfg.outputs();
    const T* x = block_input(m_cfg.layers);
    if (!gpt2()) {
      gather_class_tokens(act(m_a.head_in), x, m_a.batch, m_a.seq, C, stream());
      x = act(m_a.head_in);
    }
    layernorm_forward(act(m_a.lnf), stat(m_a.lnf_mean), stat(m_a.lnf_rstd), x, param(m_p.lnfw),
                      param(m_p.lnfb), m_a.head_rows, C, stream());
    if (gpt2()) {
      linear_forward(act(m_a.logits), act(m_a.lnf), param(m_p.wte), nullptr, nullptr, m_a.head_rows,
                     C, V);
    } else {
      linear_forward(act(m_a.logits), act(m_a.lnf), param(m_p.headw), param(m_p.headb), nullptr,
                     m_a.head_rows, C, V);
    }
  }

  void head_backward() {
    const int C = m_cfg.width, V = m_cfg.outputs();
    if (gpt2()) {
      linear_backward(act(m_a.dln), grad(m_p.wte), nullptr, act(m_a.logits), act(m_a.lnf),
                      param(m_p.wte), m_a.head_rows, C, V);
    } else {
      linear_backward(act(m_a.dln), grad(m_p.headw), grad(m_p.headb), act(m_a.logits), act(m_a.lnf),
                      param(m_p.headw), m_a.head_rows, C, V);
    }
    IB_CUDA(cudaMemsetAsync(act(m_a.dres), 0, static_cast<std::size_t>(m_a.rows) * C * sizeof(T),
                            stream()));
    if (gpt2()) {
      layernorm_backward(act(m_a.dres), grad(m_p.lnfw), grad(m_p.lnfb), act(m_a.dln),
                         block_input(m_cfg.layers), param(m_p.lnfw), stat(m_a.lnf_mean),
                         stat(m_a.lnf_rstd), m_a.head_rows, C, stream());
    } else {
      IB_CUDA(cudaMemsetAsync(act(m_a.dhead_in), 0,
                              static_cast<std::size_t>(m_a.head_rows) * C * sizeof(T), stream()));
      layernorm_backward(act(m_a.dhead_in), grad(m_p.lnfw), grad(m_p.lnfb), act(m_a.dln),
                         act(m_a.head_in), param(m_p.lnfw), stat(m_a.lnf_mean), stat(m_a.lnf_rstd),
                         m_a.head_rows, C, stream());
      scatter_class_tokens(act(m_a.dres), act(m_a.dhead_in), m_a.batch, m_a.seq, C, stream());
    }
  }

  void block_backward(int l) {
    const auto& y = m_a.layers[static_cast<std::size_t>(l)];
    const auto& w = m_p.blocks[static_cast<std::size_t>(l)];
    const int R = m_a.rows, C = m_cfg.width;
    T* dres = act(m_a.dres);
    if (m_fused_gelu) {
      linear_backward(act(m_a.dfch), grad(w.fcprojw), grad(w.fcprojb), dres, act(y.fch_gelu),
                      param(w.fcprojw), R, 4 * C, C, act(y.fch));
    } else {
      linear_backward(act(m_a.dfch), grad(w.fcprojw), grad(w.fcprojb), dres, act(y.fch_gelu),
                      param(w.fcprojw), R, 4 * C, C);
      gelu_backward(act(m_a.dfch), act(y.fch), act(m_a.dfch), static_cast<std::size_t>(R) * 4 * C,
                    stream());
    }
    linear_backward(act(m_a.dln), grad(w.fcw), grad(w.fcb), act(m_a.dfch), act(y.ln2), param(w.fcw),
                    R, C, 4 * C);
    layernorm_backward(dres, grad(w.ln2w), grad(w.ln2b), act(m_a.dln), act(y.res2), param(w.ln2w),
                       stat(y.ln2_mean), stat(y.ln2_rstd), R, C, stream());
    linear_backward(act(m_a.datty), grad(w.projw), grad(w.projb), dres, act(y.atty), param(w.projw),
                    R, C, C);
    attention_backward(l);
    linear_backward(act(m_a.dln), grad(w.qkvw), grad(w.qkvb), act(m_a.dqkv), act(y.ln1),
                    param(w.qkvw), R, C, 3 * C);
    layernorm_backward(dres, grad(w.ln1w), grad(w.ln1b), act(m_a.dln), block_input(l),
                       param(w.ln1w), stat(y.ln1_mean), stat(y.ln1_rstd), R, C, stream());
  }

  void embed_backward(const inputs& in) {
    const int C = m_cfg.width;
    if (gpt2()) {
      encoder_backward(grad(m_p.wte), grad(m_p.wpe), act(m_a.dres), in.tokens.get(), m_a.rows,
                       m_a.seq, C, stream());
      return;
    }
    const int P = m_cfg.patches(), pp = 3 * m_cfg.patch * m_cfg.patch;
    vit_assemble_backward(act(m_a.dln), grad(m_p.patchb), grad(m_p.cls), grad(m_p.pos),
                          act(m_a.dres), m_a.batch, P, C, stream());
    linear_backward(nullptr, grad(m_p.patchw), nullptr, act(m_a.dln), act(m_a.patches),
                    param(m_p.patchw), m_a.batch * P, pp, C);
  }

  void make_buckets() { m_buckets = tf::gradient_buckets(m_p); }

  // The fused AdamW's plan: 256 threads x 8 elements per block.
  void make_adamw_blocks() {
    const auto plan = tf::adamw_blocks(m_p, 2048);
    m_adamw_blocks = device_buffer<tf::adamw_block>(plan.size());
    IB_CUDA(cudaMemcpy(m_adamw_blocks.get(), plan.data(), plan.size() * sizeof(tf::adamw_block),
                       cudaMemcpyHostToDevice));
  }

  tf::model_config m_cfg;
  tf::param_layout m_p;
  attention_choice m_choice;  // before m_a: the plan depends on it
  tf::activation_layout m_a;
  transformer::stream m_stream;
  cublasHandle_t m_blas = nullptr;
  lt_matmul m_lt;
  bool m_fused_gelu = false;
  device_buffer<float> m_lse, m_delta, m_dq_acc;  // flash attention's statistics and scratch
  device_buffer<float> m_master, m_grads, m_m, m_v;
  device_buffer<T> m_compute;
  device_buffer<T> m_acts;
  device_buffer<float> m_stats;
  std::array<inputs, 2> m_inputs;
  device_buffer<const void*> m_attn_ptrs;
  device_buffer<tf::adamw_block> m_adamw_blocks;
  std::size_t m_pairs = 0;
  float* m_host_losses = nullptr;
  std::vector<std::pair<std::size_t, std::size_t>> m_buckets;
};

}  // namespace

std::unique_ptr<gpu_model> gpu_model::create(const gpu_model_options& o) {
  tf::check_config(o.model);
  if (o.bf16) return std::make_unique<model_impl<tf::bf16>>(o);
  return std::make_unique<model_impl<float>>(o);
}

}  // namespace infrabench::kernels::cuda::transformer
