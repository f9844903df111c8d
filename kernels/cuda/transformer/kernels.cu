// The transformer's GPU kernels: thin launches of the shared per-element/per-row code (ops.h).
#include <algorithm>

#include "cuda/transformer/cuda_support.h"
#include "cuda/transformer/kernels.h"

namespace infrabench::kernels::cuda::transformer {

namespace {

constexpr int warp = 32;
constexpr int block = 256;

// The lanes of one warp share a row: reductions by butterfly shuffles (every lane gets the
// result). Host versions exist only so the type is usable in host/device templates; kernels are
// its only callers.
struct warp_lanes {
  int m_lane;
  __host__ __device__ int lane() const { return m_lane; }
  __host__ __device__ int count() const { return warp; }
  __host__ __device__ float sum(float x) const {
#if defined(__CUDA_ARCH__)
    for (int o = warp / 2; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
#endif
    return x;
  }
  __host__ __device__ float max(float x) const {
#if defined(__CUDA_ARCH__)
    for (int o = warp / 2; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
#endif
    return x;
  }
};

struct add_op {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};
struct max_op {
  __host__ __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

// A whole block shares a row (the vocabulary-wide softmax): warp reductions, then the warps'
// partials through shared memory. Every thread of the block must call each reduction.
struct block_lanes {
  float* m_shared;  // warp-count floats
  __host__ __device__ int lane() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  __host__ __device__ int count() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(blockDim.x);
#else
    return 1;
#endif
  }
  template <typename Op>
  __host__ __device__ float reduce(float x, Op op) const {
#if defined(__CUDA_ARCH__)
    for (int o = warp / 2; o > 0; o /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
    const int warps = static_cast<int>(blockDim.x) / warp;
    if (threadIdx.x % warp == 0) m_shared[threadIdx.x / warp] = x;
    __syncthreads();
    float r = m_shared[0];
    for (int i = 1; i < warps; ++i) r = op(r, m_shared[i]);
    __syncthreads();  // the slots are reused by the next reduction
    return r;
#else
    (void)op;
    return x;
#endif
  }
  __host__ __device__ float sum(float x) const {
    return reduce(x, add_op{});
  }
  __host__ __device__ float max(float x) const {
    return reduce(x, max_op{});
  }
};

[[nodiscard]] unsigned grid_for(std::size_t n, int per_block = block) {
  const std::size_t blocks = (n + static_cast<std::size_t>(per_block) - 1) / per_block;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(blocks, 1), 1u << 20));
}

// Grid-stride loop bounds.
#define IB_FOR_EACH(i, n)                                                                        \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

// ---- kernels
// ---------------------------------------------------------------------------------------

template <typename T>
__global__ void encoder_forward_k(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,
                                  int rows, int seq, int C) {
  IB_FOR_EACH(e, static_cast<std::size_t>(rows) * C) {
    const std::size_t r = e / C, i = e % C;
    const float v = tf::to_float(wte[static_cast<std::size_t>(tokens[r]) * C + i]) +
                    tf::to_float(wpe[(r % seq) * C + i]);
    out[e] = tf::from_float<T>(v);
  }
}

template <typename T>
__global__ void encoder_backward_k(float* dwte, float* dwpe, const T* dout,
                                   const std::int32_t* tokens, int rows, int seq, int C) {
  IB_FOR_EACH(e, static_cast<std::size_t>(rows) * C) {
    const std::size_t r = e / C, i = e % C;
    const float d = tf::to_float(dout[e]);
    atomicAdd(dwte + static_cast<std::size_t>(tokens[r]) * C + i, d);
    atomicAdd(dwpe + (r % seq) * C + i, d);
  }
}

template <typename T>
__global__ void layernorm_forward_k(T* out, float* mean, float* rstd, const T* x, const T* w,
                                    const T* b, int rows, int C) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / warp);
  if (row >= rows) return;  // whole warps leave together
  const std::size_t at = static_cast<std::size_t>(row) * C;
  tf::layernorm_forward_row(x + at, w, b, out + at, mean + row, rstd + row, C,
                            warp_lanes{static_cast<int>(threadIdx.x % warp)});
}

// A block's warps take rows in turn and sum the weight/bias gradients of their rows in shared
// memory; one atomic per element per block then adds them to the global gradient (rather than
// one per element per row: thousands of rows on the same C addresses would serialise).
template <typename T>
__global__ void layernorm_backward_k(T* dx, float* dw, float* db, const T* dout, const T* x,
                                     const T* w, const float* mean, const float* rstd, int rows,
                                     int C) {
  extern __shared__ float partial[];  // [2 * C]
  for (int i = static_cast<int>(threadIdx.x); i < 2 * C; i += static_cast<int>(blockDim.x)) {
    partial[i] = 0.0f;
  }
  __syncthreads();
  float* pw = partial;
  float* pb = partial + C;
  const int warps = static_cast<int>(blockDim.x) / warp;
  const warp_lanes lanes{static_cast<int>(threadIdx.x % warp)};
  for (int row = static_cast<int>(blockIdx.x) * warps + static_cast<int>(threadIdx.x) / warp;
       row < rows; row += static_cast<int>(gridDim.x) * warps) {
    const std::size_t at = static_cast<std::size_t>(row) * C;
    tf::layernorm_backward_row(dout + at, x + at, w, mean[row], rstd[row], dx + at, C, lanes,
                               [&](int i, float dwi, float dbi) {
                                 atomicAdd(pw + i, dwi);
                                 atomicAdd(pb + i, dbi);
                               });
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < C; i += static_cast<int>(blockDim.x)) {
    atomicAdd(dw + i, pw[i]);
    atomicAdd(db + i, pb[i]);
  }
}

template <typename T>
__global__ void attention_softmax_k(T* att, int rows, int n, float scale, bool causal) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / warp);
  if (row >= rows) return;
  T* p = att + static_cast<std::size_t>(row) * n;
  const int t = row % n;
  tf::attention_softmax_row(p, p, n, causal ? t + 1 : n, scale,
                            warp_lanes{static_cast<int>(threadIdx.x % warp)});
}

template <typename T>
__global__ void attention_softmax_backward_k(T* dp, const T* att, int rows, int n, float scale,
                                             bool causal) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / warp);
  if (row >= rows) return;
  const std::size_t at = static_cast<std::size_t>(row) * n;
  const int t = row % n;
  tf::attention_softmax_backward_row(att + at, dp + at, dp + at, n, causal ? t + 1 : n, scale,
                                     warp_lanes{static_cast<int>(threadIdx.x % warp)});
}

template <typename T>
__global__ void gelu_forward_k(T* out, const T* in, std::size_t n) {
  IB_FOR_EACH(i, n) {
    out[i] = tf::from_float<T>(tf::gelu_forward(tf::to_float(in[i])));
  }
}

template <typename T>
__global__ void gelu_backward_k(T* din, const T* in, const T* dout, std::size_t n) {
  IB_FOR_EACH(i, n) {
    din[i] = tf::from_float<T>(tf::gelu_backward(tf::to_float(in[i]), tf::to_float(dout[i])));
  }
}

template <typename T>
__global__ void cross_entropy_k(T* logits, float* losses, const std::int32_t* targets, int V,
                                float dloss) {
  __shared__ float shared[32];
  const std::size_t row = blockIdx.x;
  const float loss =
      tf::cross_entropy_row(logits + row * V, V, targets[row], dloss, block_lanes{shared});
  if (threadIdx.x == 0) losses[row] = loss;
}

// Threads own columns (coalesced reads of a row); each block sums a chunk of rows and adds it.
template <typename T>
__global__ void bias_backward_k(float* db, const T* dout, int rows, int OC, int rows_per_block) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= OC) return;
  const int r0 = static_cast<int>(blockIdx.y) * rows_per_block;
  const int r1 = min(rows, r0 + rows_per_block);
  float s = 0.0f;
  for (int r = r0; r < r1; ++r) s += tf::to_float(dout[static_cast<std::size_t>(r) * OC + j]);
  atomicAdd(db + j, s);
}

template <typename T>
__global__ void adamw_fused_k(float* master, T* compute, const float* grads, float* m, float* v,
                              const tf::adamw_block* blocks, tf::adamw_hyper h) {
  const tf::adamw_block b = blocks[blockIdx.x];
  const bool decay = b.decay != 0;
  for (std::uint64_t i = b.first + threadIdx.x; i < b.end; i += blockDim.x) {
    float mi = m[i], vi = v[i];
    const float p = tf::adamw_update(master[i], grads[i], mi, vi, h, decay);
    m[i] = mi;
    v[i] = vi;
    master[i] = p;
    if (compute != nullptr) compute[i] = tf::from_float<T>(p);
  }
}

template <typename T>
__global__ void convert_k(T* dst, const float* src, std::size_t n) {
  IB_FOR_EACH(i, n) {
    dst[i] = tf::from_float<T>(src[i]);
  }
}

template <typename T>
__global__ void patch_extract_k(T* patches, const float* images, std::size_t n, int image,
                                int patch, int channels) {
  IB_FOR_EACH(e, n) {
    patches[e] = tf::from_float<T>(
        images[tf::patch_source_index(static_cast<std::int64_t>(e), image, patch, channels)]);
  }
}

template <typename T>
__global__ void vit_assemble_k(T* out, const T* patch_out, const T* patch_bias, const T* cls,
                               const T* pos, int B, int P, int C) {
  const std::size_t seq = static_cast<std::size_t>(P) + 1;
  IB_FOR_EACH(e, static_cast<std::size_t>(B) * seq * C) {
    const std::size_t i = e % C, r = e / C, t = r % seq, b = r / seq;
    float v = tf::to_float(pos[t * C + i]);
    if (t == 0) {
      v += tf::to_float(cls[i]);
    } else {
      v += tf::to_float(patch_out[(b * P + t - 1) * C + i]) + tf::to_float(patch_bias[i]);
    }
    out[e] = tf::from_float<T>(v);
  }
}

template <typename T>
__global__ void vit_assemble_backward_k(T* dpatch_out, float* dpatch_bias, float* dcls, float* dpos,
                                        const T* dout, int B, int P, int C) {
  const std::size_t seq = static_cast<std::size_t>(P) + 1;
  IB_FOR_EACH(e, static_cast<std::size_t>(B) * seq * C) {
    const std::size_t i = e % C, r = e / C, t = r % seq, b = r / seq;
    const float d = tf::to_float(dout[e]);
    atomicAdd(dpos + t * C + i, d);
    if (t == 0) {
      atomicAdd(dcls + i, d);
    } else {
      dpatch_out[(b * P + t - 1) * C + i] = dout[e];
      atomicAdd(dpatch_bias + i, d);
    }
  }
}

template <typename T>
__global__ void gather_class_tokens_k(T* rows, const T* x, int B, int seq, int C) {
  IB_FOR_EACH(e, static_cast<std::size_t>(B) * C) {
    const std::size_t b = e / C, i = e % C;
    rows[e] = x[b * seq * C + i];
  }
}

template <typename T>
__global__ void scatter_class_tokens_k(T* dx, const T* drows, int B, int seq, int C) {
  IB_FOR_EACH(e, static_cast<std::size_t>(B) * C) {
    const std::size_t b = e / C, i = e % C;
    T* d = dx + b * seq * C + i;
    *d = tf::from_float<T>(tf::to_float(*d) + tf::to_float(drows[e]));
  }
}

// One warp per row (these kernels do not loop over rows, so the grid is not capped).
[[nodiscard]] unsigned warps_grid(int rows) {
  const std::size_t threads = static_cast<std::size_t>(std::max(rows, 1)) * warp;
  return static_cast<unsigned>((threads + block - 1) / block);
}

}  // namespace

// ---- launchers
// -------------------------------------------------------------------------------------

template <typename T>
void encoder_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, int rows,
                     int seq, int C, cudaStream_t s) {
  encoder_forward_k<<<grid_for(static_cast<std::size_t>(rows) * C), block, 0, s>>>(
      out, tokens, wte, wpe, rows, seq, C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void encoder_backward(float* dwte, float* dwpe, const T* dout, const std::int32_t* tokens, int rows,
                      int seq, int C, cudaStream_t s) {
  encoder_backward_k<<<grid_for(static_cast<std::size_t>(rows) * C), block, 0, s>>>(
      dwte, dwpe, dout, tokens, rows, seq, C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* x, const T* w, const T* b,
                       int rows, int C, cudaStream_t s) {
  layernorm_forward_k<<<warps_grid(rows), block, 0, s>>>(out, mean, rstd, x, w, b, rows, C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void layernorm_backward(T* dx, float* dw, float* db, const T* dout, const T* x, const T* w,
                        const float* mean, const float* rstd, int rows, int C, cudaStream_t s) {
  // Enough blocks to fill the GPU (a few per SM), each taking many rows.
  const unsigned blocks = std::min<unsigned>(warps_grid(rows), 1024);
  const std::size_t shared = 2 * static_cast<std::size_t>(C) * sizeof(float);
  layernorm_backward_k<<<blocks, block, shared, s>>>(dx, dw, db, dout, x, w, mean, rstd, rows, C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void attention_softmax(T* att, int rows, int n, float scale, bool causal, cudaStream_t s) {
  attention_softmax_k<<<warps_grid(rows), block, 0, s>>>(att, rows, n, scale, causal);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void attention_softmax_backward(T* dp, const T* att, int rows, int n, float scale, bool causal,
                                cudaStream_t s) {
  attention_softmax_backward_k<<<warps_grid(rows), block, 0, s>>>(dp, att, rows, n, scale, causal);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void gelu_forward(T* out, const T* in, std::size_t n, cudaStream_t s) {
  gelu_forward_k<<<grid_for(n), block, 0, s>>>(out, in, n);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void gelu_backward(T* din, const T* in, const T* dout, std::size_t n, cudaStream_t s) {
  gelu_backward_k<<<grid_for(n), block, 0, s>>>(din, in, dout, n);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void cross_entropy(T* logits, float* losses, const std::int32_t* targets, int rows, int V,
                   float dloss, cudaStream_t s) {
  // A block per row: up to 1024 threads, fewer for a small head (ViT's classes).
  const int threads = std::clamp((V + warp - 1) / warp * warp, warp, 1024);
  cross_entropy_k<<<static_cast<unsigned>(rows), threads, 0, s>>>(logits, losses, targets, V,
                                                                  dloss);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void bias_backward(float* db, const T* dout, int rows, int OC, cudaStream_t s) {
  constexpr int rows_per_block = 256;
  const dim3 grid(static_cast<unsigned>((OC + block - 1) / block),
                  static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block));
  bias_backward_k<<<grid, block, 0, s>>>(db, dout, rows, OC, rows_per_block);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void adamw_fused(float* master, T* compute, const float* grads, float* m, float* v,
                 const tf::adamw_block* blocks, std::size_t count, const tf::adamw_hyper& h,
                 cudaStream_t s) {
  if (count == 0) return;
  adamw_fused_k<<<static_cast<unsigned>(count), block, 0, s>>>(master, compute, grads, m, v, blocks,
                                                               h);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void convert(T* dst, const float* src, std::size_t n, cudaStream_t s) {
  convert_k<<<grid_for(n), block, 0, s>>>(dst, src, n);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void patch_extract(T* patches, const float* images, int B, int image, int patch, int channels,
                   cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(B) * channels * image * image;
  patch_extract_k<<<grid_for(n), block, 0, s>>>(patches, images, n, image, patch, channels);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void vit_assemble(T* out, const T* patch_out, const T* patch_bias, const T* cls, const T* pos,
                  int B, int P, int C, cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(B) * (P + 1) * C;
  vit_assemble_k<<<grid_for(n), block, 0, s>>>(out, patch_out, patch_bias, cls, pos, B, P, C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void vit_assemble_backward(T* dpatch_out, float* dpatch_bias, float* dcls, float* dpos,
                           const T* dout, int B, int P, int C, cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(B) * (P + 1) * C;
  vit_assemble_backward_k<<<grid_for(n), block, 0, s>>>(dpatch_out, dpatch_bias, dcls, dpos, dout,
                                                        B, P, C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void gather_class_tokens(T* rows, const T* x, int B, int seq, int C, cudaStream_t s) {
  gather_class_tokens_k<<<grid_for(static_cast<std::size_t>(B) * C), block, 0, s>>>(rows, x, B, seq,
                                                                                    C);
  IB_CUDA_LAUNCHED();
}

template <typename T>
void scatter_class_tokens(T* dx, const T* drows, int B, int seq, int C, cudaStream_t s) {
  scatter_class_tokens_k<<<grid_for(static_cast<std::size_t>(B) * C), block, 0, s>>>(dx, drows, B,
                                                                                     seq, C);
  IB_CUDA_LAUNCHED();
}

// ---- the two storage types
// ---------------------------------------------------------------------------

#define IB_INSTANTIATE(T)                                                                         \
  template void encoder_forward<T>(T*, const std::int32_t*, const T*, const T*, int, int, int,    \
                                   cudaStream_t);                                                 \
  template void encoder_backward<T>(float*, float*, const T*, const std::int32_t*, int, int, int, \
                                    cudaStream_t);                                                \
  template void layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*, int, int,  \
                                     cudaStream_t);                                               \
  template void layernorm_backward<T>(T*, float*, float*, const T*, const T*, const T*,           \
                                      const float*, const float*, int, int, cudaStream_t);        \
  template void attention_softmax<T>(T*, int, int, float, bool, cudaStream_t);                    \
  template void attention_softmax_backward<T>(T*, const T*, int, int, float, bool, cudaStream_t); \
  template void gelu_forward<T>(T*, const T*, std::size_t, cudaStream_t);                         \
  template void gelu_backward<T>(T*, const T*, const T*, std::size_t, cudaStream_t);              \
  template void cross_entropy<T>(T*, float*, const std::int32_t*, int, int, float, cudaStream_t); \
  template void bias_backward<T>(float*, const T*, int, int, cudaStream_t);                       \
  template void adamw_fused<T>(float*, T*, const float*, float*, float*, const tf::adamw_block*,  \
                               std::size_t, const tf::adamw_hyper&, cudaStream_t);                \
  template void convert<T>(T*, const float*, std::size_t, cudaStream_t);                          \
  template void patch_extract<T>(T*, const float*, int, int, int, int, cudaStream_t);             \
  template void vit_assemble<T>(T*, const T*, const T*, const T*, const T*, int, int, int,        \
                                cudaStream_t);                                                    \
  template void vit_assemble_backward<T>(T*, float*, float*, float*, const T*, int, int, int,     \
                                         cudaStream_t);                                           \
  template void gather_class_tokens<T>(T*, const T*, int, int, int, cudaStream_t);                \
  template void scatter_class_tokens<T>(T*, const T*, int, int, int, cudaStream_t);

IB_INSTANTIATE(float)
IB_INSTANTIATE(tf::bf16)

}  // namespace infrabench::kernels::cuda::transformer
