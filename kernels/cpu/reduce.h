// Element-wise sums for reductions (our own all-reduce algorithms): dst += src and dst = a + b on
// float or double arrays. A scalar reference and AVX2 / AVX-512 variants chosen at run time.
#pragma once

#include <cstddef>

#include "cpu/stream.h"  // simd_isa, simd_isa_supported, best_simd_isa

namespace infrabench::kernels::cpu {

enum class reduce_dtype { float32, float64 };

[[nodiscard]] std::size_t dtype_size(reduce_dtype t);

// dst[i] += src[i] for i < count. dst and src do not overlap.
using reduce_accumulate_fn = void (*)(void* dst, const void* src, std::size_t count);
// dst[i] = a[i] + b[i] for i < count. dst may be a or b; otherwise no overlap.
using reduce_add_fn = void (*)(void* dst, const void* a, const void* b, std::size_t count);

// The variant for (dtype, isa); throws std::invalid_argument when the CPU lacks `isa`.
[[nodiscard]] reduce_accumulate_fn select_reduce_accumulate(reduce_dtype t, simd_isa isa);
[[nodiscard]] reduce_add_fn select_reduce_add(reduce_dtype t, simd_isa isa);

// With the widest ISA this CPU has (sse2 means the compiler's baseline vectorisation).
void reduce_accumulate(reduce_dtype t, void* dst, const void* src, std::size_t count);
void reduce_add(reduce_dtype t, void* dst, const void* a, const void* b, std::size_t count);

}  // namespace infrabench::kernels::cpu
