#include "cpu/reduce.h"

#include "cpu/compiler_attributes.h"

#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu {
namespace {

// No FMA contraction and no reassociation: every variant adds element by element, so all agree
// bit for bit with the reference (each element is one rounding of one addition).
#define INFRABENCH_REDUCE_SCALAR INFRABENCH_OPTIMIZE("no-tree-vectorize", "fp-contract=off")
#define INFRABENCH_REDUCE_VEC INFRABENCH_OPTIMIZE("tree-vectorize", "fp-contract=off")

template <typename T>
[[gnu::always_inline]] inline void accumulate_loop(void* dst, const void* src, std::size_t n) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < n; ++i) d[i] += s[i];
}

// dst may alias a or b exactly (in place), which element-wise code tolerates; no __restrict.
template <typename T>
[[gnu::always_inline]] inline void add_loop(void* dst, const void* a, const void* b,
                                            std::size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) d[i] = x[i] + y[i];
}

template <typename T>
INFRABENCH_REDUCE_SCALAR void acc_scalar(void* d, const void* s, std::size_t n) {
  accumulate_loop<T>(d, s, n);
}
template <typename T>
INFRABENCH_REDUCE_VEC void acc_sse2(void* d, const void* s, std::size_t n) {
  accumulate_loop<T>(d, s, n);
}
template <typename T>
INFRABENCH_REDUCE_VEC __attribute__((target("avx2"))) void acc_avx2(void* d, const void* s,
                                                                    std::size_t n) {
  accumulate_loop<T>(d, s, n);
}
template <typename T>
INFRABENCH_REDUCE_VEC INFRABENCH_TARGET_WIDE("avx512f") void acc_avx512(void* d, const void* s,
                                                                        std::size_t n) {
  accumulate_loop<T>(d, s, n);
}

template <typename T>
INFRABENCH_REDUCE_SCALAR void add_scalar(void* d, const void* a, const void* b, std::size_t n) {
  add_loop<T>(d, a, b, n);
}
template <typename T>
INFRABENCH_REDUCE_VEC void add_sse2(void* d, const void* a, const void* b, std::size_t n) {
  add_loop<T>(d, a, b, n);
}
template <typename T>
INFRABENCH_REDUCE_VEC __attribute__((target("avx2"))) void add_avx2(void* d, const void* a,
                                                                    const void* b, std::size_t n) {
  add_loop<T>(d, a, b, n);
}
template <typename T>
INFRABENCH_REDUCE_VEC INFRABENCH_TARGET_WIDE("avx512f") void add_avx512(void* d, const void* a,
                                                                        const void* b,
                                                                        std::size_t n) {
  add_loop<T>(d, a, b, n);
}

void require(simd_isa isa) {
  if (!simd_isa_supported(isa)) {
    throw std::invalid_argument("reduce: this CPU does not support " + std::string(to_string(isa)));
  }
}

template <typename T>
reduce_accumulate_fn pick_acc(simd_isa isa) {
  switch (isa) {
    case simd_isa::scalar:
      return &acc_scalar<T>;
    case simd_isa::sse2:
      return &acc_sse2<T>;
    case simd_isa::avx2:
      return &acc_avx2<T>;
    case simd_isa::avx512:
      return &acc_avx512<T>;
  }
  return &acc_scalar<T>;
}

template <typename T>
reduce_add_fn pick_add(simd_isa isa) {
  switch (isa) {
    case simd_isa::scalar:
      return &add_scalar<T>;
    case simd_isa::sse2:
      return &add_sse2<T>;
    case simd_isa::avx2:
      return &add_avx2<T>;
    case simd_isa::avx512:
      return &add_avx512<T>;
  }
  return &add_scalar<T>;
}

}  // namespace

std::size_t dtype_size(reduce_dtype t) {
  return t == reduce_dtype::float32 ? 4 : 8;
}

reduce_accumulate_fn select_reduce_accumulate(reduce_dtype t, simd_isa isa) {
  require(isa);
  return t == reduce_dtype::float32 ? pick_acc<float>(isa) : pick_acc<double>(isa);
}

reduce_add_fn select_reduce_add(reduce_dtype t, simd_isa isa) {
  require(isa);
  return t == reduce_dtype::float32 ? pick_add<float>(isa) : pick_add<double>(isa);
}

void reduce_accumulate(reduce_dtype t, void* dst, const void* src, std::size_t count) {
  static const reduce_accumulate_fn f32 =
      select_reduce_accumulate(reduce_dtype::float32, best_simd_isa());
  static const reduce_accumulate_fn f64 =
      select_reduce_accumulate(reduce_dtype::float64, best_simd_isa());
  (t == reduce_dtype::float32 ? f32 : f64)(dst, src, count);
}

void reduce_add(reduce_dtype t, void* dst, const void* a, const void* b, std::size_t count) {
  static const reduce_add_fn f32 = select_reduce_add(reduce_dtype::float32, best_simd_isa());
  static const reduce_add_fn f64 = select_reduce_add(reduce_dtype::float64, best_simd_isa());
  (t == reduce_dtype::float32 ? f32 : f64)(dst, a, b, count);
}

}  // namespace infrabench::kernels::cpu
