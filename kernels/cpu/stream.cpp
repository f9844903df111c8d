#include "cpu/stream.h"

#include "cpu/compiler_attributes.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace infrabench::kernels::cpu {
namespace {

// No FMA contraction: triad computes b + s*c with two roundings in every variant, as the scalar
// reference does, so variants agree bit for bit (GCC contracts by default in C++ wherever the
// target has FMA, intrinsics included).
#define INFRABENCH_NO_FMA INFRABENCH_OPTIMIZE("fp-contract=off")
// GCC turns a copy loop into a call to memcpy, and glibc's memcpy switches to non-temporal stores
// above a size threshold: a "regular" copy would then silently measure streaming stores.
#define INFRABENCH_PLAIN_LOOPS \
  INFRABENCH_OPTIMIZE("no-tree-loop-distribute-patterns", "fp-contract=off")
// The reference must stay scalar whatever the optimisation level, so tests compare against
// something the vectoriser did not produce.
#define INFRABENCH_SCALAR_LOOPS \
  INFRABENCH_OPTIMIZE("no-tree-vectorize", "no-tree-loop-distribute-patterns", "fp-contract=off")

// ---- plain loops -------------------------------------------------------------------------------
// Inlined into one wrapper per ISA, so GCC vectorises each copy for that ISA's vector width.
// __restrict: the arrays never overlap, so no run-time alias checks are needed.

[[gnu::always_inline]] inline void copy_loop(const stream_arrays& x, std::size_t begin,
                                             std::size_t end) {
  const double* __restrict a = x.a;
  double* __restrict c = x.c;
  for (std::size_t i = begin; i < end; ++i) c[i] = a[i];
}

[[gnu::always_inline]] inline void scale_loop(const stream_arrays& x, double s, std::size_t begin,
                                              std::size_t end) {
  const double* __restrict c = x.c;
  double* __restrict b = x.b;
  for (std::size_t i = begin; i < end; ++i) b[i] = s * c[i];
}

[[gnu::always_inline]] inline void add_loop(const stream_arrays& x, std::size_t begin,
                                            std::size_t end) {
  const double* __restrict a = x.a;
  const double* __restrict b = x.b;
  double* __restrict c = x.c;
  for (std::size_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
}

[[gnu::always_inline]] inline void triad_loop(const stream_arrays& x, double s, std::size_t begin,
                                              std::size_t end) {
  const double* __restrict b = x.b;
  const double* __restrict c = x.c;
  double* __restrict a = x.a;
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

// ---- scalar reference (also the head and tail of the non-temporal variants) --------------------

INFRABENCH_SCALAR_LOOPS void copy_scalar(const stream_arrays& x, double, std::size_t begin,
                                         std::size_t end) {
  copy_loop(x, begin, end);
}
INFRABENCH_SCALAR_LOOPS void scale_scalar(const stream_arrays& x, double s, std::size_t begin,
                                          std::size_t end) {
  scale_loop(x, s, begin, end);
}
INFRABENCH_SCALAR_LOOPS void add_scalar(const stream_arrays& x, double, std::size_t begin,
                                        std::size_t end) {
  add_loop(x, begin, end);
}
INFRABENCH_SCALAR_LOOPS void triad_scalar(const stream_arrays& x, double s, std::size_t begin,
                                          std::size_t end) {
  triad_loop(x, s, begin, end);
}

// ---- regular stores, vectorised by the compiler ------------------------------------------------

INFRABENCH_PLAIN_LOOPS void copy_sse2(const stream_arrays& x, double, std::size_t begin,
                                      std::size_t end) {
  copy_loop(x, begin, end);
}
INFRABENCH_PLAIN_LOOPS void scale_sse2(const stream_arrays& x, double s, std::size_t begin,
                                       std::size_t end) {
  scale_loop(x, s, begin, end);
}
INFRABENCH_PLAIN_LOOPS void add_sse2(const stream_arrays& x, double, std::size_t begin,
                                     std::size_t end) {
  add_loop(x, begin, end);
}
INFRABENCH_PLAIN_LOOPS void triad_sse2(const stream_arrays& x, double s, std::size_t begin,
                                       std::size_t end) {
  triad_loop(x, s, begin, end);
}

#define INFRABENCH_AVX2 __attribute__((target("avx2"))) INFRABENCH_PLAIN_LOOPS
INFRABENCH_AVX2 void copy_avx2(const stream_arrays& x, double, std::size_t begin, std::size_t end) {
  copy_loop(x, begin, end);
}
INFRABENCH_AVX2 void scale_avx2(const stream_arrays& x, double s, std::size_t begin,
                                std::size_t end) {
  scale_loop(x, s, begin, end);
}
INFRABENCH_AVX2 void add_avx2(const stream_arrays& x, double, std::size_t begin, std::size_t end) {
  add_loop(x, begin, end);
}
INFRABENCH_AVX2 void triad_avx2(const stream_arrays& x, double s, std::size_t begin,
                                std::size_t end) {
  triad_loop(x, s, begin, end);
}

// GCC's generic tuning prefers 256-bit vectors even where AVX-512 is enabled; ask for 512 bits so
// this variant differs from the AVX2 one.
#define INFRABENCH_AVX512 INFRABENCH_TARGET_WIDE("avx512f") INFRABENCH_PLAIN_LOOPS
INFRABENCH_AVX512 void copy_avx512(const stream_arrays& x, double, std::size_t begin,
                                   std::size_t end) {
  copy_loop(x, begin, end);
}
INFRABENCH_AVX512 void scale_avx512(const stream_arrays& x, double s, std::size_t begin,
                                    std::size_t end) {
  scale_loop(x, s, begin, end);
}
INFRABENCH_AVX512 void add_avx512(const stream_arrays& x, double, std::size_t begin,
                                  std::size_t end) {
  add_loop(x, begin, end);
}
INFRABENCH_AVX512 void triad_avx512(const stream_arrays& x, double s, std::size_t begin,
                                    std::size_t end) {
  triad_loop(x, s, begin, end);
}

// ---- non-temporal stores -----------------------------------------------------------------------
// Streaming stores need a destination aligned to the vector width. The range is split into a
// scalar head up to the first aligned destination element, an aligned vector body and a scalar
// tail; sources are loaded unaligned because their alignment relative to the destination is
// arbitrary. Each variant ends with an sfence: streaming stores are weakly ordered, and the thread
// that waits for this one must see every element once the kernel returns.

struct body_range {
  std::size_t begin;
  std::size_t end;
};

// The part of [begin, end) where `dst` is `bytes`-aligned and whole vectors of `bytes` fit.
[[nodiscard]] body_range aligned_body(const double* dst, std::size_t begin, std::size_t end,
                                      std::size_t bytes) {
  const auto misalign = reinterpret_cast<std::uintptr_t>(dst + begin) % bytes;
  const std::size_t head = misalign == 0 ? 0 : (bytes - misalign) / sizeof(double);
  const std::size_t lo = std::min(begin + head, end);
  const std::size_t width = bytes / sizeof(double);
  return {lo, lo + (end - lo) / width * width};
}

INFRABENCH_NO_FMA void copy_nt_sse2(const stream_arrays& x, double, std::size_t begin,
                                    std::size_t end) {
  const auto r = aligned_body(x.c, begin, end, 16);
  copy_scalar(x, 0, begin, r.begin);
  for (std::size_t i = r.begin; i < r.end; i += 2) _mm_stream_pd(x.c + i, _mm_loadu_pd(x.a + i));
  copy_scalar(x, 0, r.end, end);
  _mm_sfence();
}
INFRABENCH_NO_FMA void scale_nt_sse2(const stream_arrays& x, double s, std::size_t begin,
                                     std::size_t end) {
  const auto r = aligned_body(x.b, begin, end, 16);
  scale_scalar(x, s, begin, r.begin);
  const __m128d vs = _mm_set1_pd(s);
  for (std::size_t i = r.begin; i < r.end; i += 2) {
    _mm_stream_pd(x.b + i, _mm_mul_pd(vs, _mm_loadu_pd(x.c + i)));
  }
  scale_scalar(x, s, r.end, end);
  _mm_sfence();
}
INFRABENCH_NO_FMA void add_nt_sse2(const stream_arrays& x, double, std::size_t begin,
                                   std::size_t end) {
  const auto r = aligned_body(x.c, begin, end, 16);
  add_scalar(x, 0, begin, r.begin);
  for (std::size_t i = r.begin; i < r.end; i += 2) {
    _mm_stream_pd(x.c + i, _mm_add_pd(_mm_loadu_pd(x.a + i), _mm_loadu_pd(x.b + i)));
  }
  add_scalar(x, 0, r.end, end);
  _mm_sfence();
}
INFRABENCH_NO_FMA void triad_nt_sse2(const stream_arrays& x, double s, std::size_t begin,
                                     std::size_t end) {
  const auto r = aligned_body(x.a, begin, end, 16);
  triad_scalar(x, s, begin, r.begin);
  const __m128d vs = _mm_set1_pd(s);
  // mul then add, not FMA: the same two roundings as the scalar reference.
  for (std::size_t i = r.begin; i < r.end; i += 2) {
    _mm_stream_pd(x.a + i,
                  _mm_add_pd(_mm_loadu_pd(x.b + i), _mm_mul_pd(vs, _mm_loadu_pd(x.c + i))));
  }
  triad_scalar(x, s, r.end, end);
  _mm_sfence();
}

__attribute__((target("avx2"))) INFRABENCH_NO_FMA void copy_nt_avx2(const stream_arrays& x, double,
                                                                    std::size_t begin,
                                                                    std::size_t end) {
  const auto r = aligned_body(x.c, begin, end, 32);
  copy_scalar(x, 0, begin, r.begin);
  for (std::size_t i = r.begin; i < r.end; i += 4) {
    _mm256_stream_pd(x.c + i, _mm256_loadu_pd(x.a + i));
  }
  copy_scalar(x, 0, r.end, end);
  _mm_sfence();
}
__attribute__((target("avx2"))) INFRABENCH_NO_FMA void scale_nt_avx2(const stream_arrays& x,
                                                                     double s, std::size_t begin,
                                                                     std::size_t end) {
  const auto r = aligned_body(x.b, begin, end, 32);
  scale_scalar(x, s, begin, r.begin);
  const __m256d vs = _mm256_set1_pd(s);
  for (std::size_t i = r.begin; i < r.end; i += 4) {
    _mm256_stream_pd(x.b + i, _mm256_mul_pd(vs, _mm256_loadu_pd(x.c + i)));
  }
  scale_scalar(x, s, r.end, end);
  _mm_sfence();
}
__attribute__((target("avx2"))) INFRABENCH_NO_FMA void add_nt_avx2(const stream_arrays& x, double,
                                                                   std::size_t begin,
                                                                   std::size_t end) {
  const auto r = aligned_body(x.c, begin, end, 32);
  add_scalar(x, 0, begin, r.begin);
  for (std::size_t i = r.begin; i < r.end; i += 4) {
    _mm256_stream_pd(x.c + i, _mm256_add_pd(_mm256_loadu_pd(x.a + i), _mm256_loadu_pd(x.b + i)));
  }
  add_scalar(x, 0, r.end, end);
  _mm_sfence();
}
__attribute__((target("avx2"))) INFRABENCH_NO_FMA void triad_nt_avx2(const stream_arrays& x,
                                                                     double s, std::size_t begin,
                                                                     std::size_t end) {
  const auto r = aligned_body(x.a, begin, end, 32);
  triad_scalar(x, s, begin, r.begin);
  const __m256d vs = _mm256_set1_pd(s);
  for (std::size_t i = r.begin; i < r.end; i += 4) {
    _mm256_stream_pd(x.a + i, _mm256_add_pd(_mm256_loadu_pd(x.b + i),
                                            _mm256_mul_pd(vs, _mm256_loadu_pd(x.c + i))));
  }
  triad_scalar(x, s, r.end, end);
  _mm_sfence();
}

__attribute__((target("avx512f"))) INFRABENCH_NO_FMA void copy_nt_avx512(const stream_arrays& x,
                                                                         double, std::size_t begin,
                                                                         std::size_t end) {
  const auto r = aligned_body(x.c, begin, end, 64);
  copy_scalar(x, 0, begin, r.begin);
  for (std::size_t i = r.begin; i < r.end; i += 8) {
    _mm512_stream_pd(x.c + i, _mm512_loadu_pd(x.a + i));
  }
  copy_scalar(x, 0, r.end, end);
  _mm_sfence();
}
__attribute__((target("avx512f"))) INFRABENCH_NO_FMA void scale_nt_avx512(const stream_arrays& x,
                                                                          double s,
                                                                          std::size_t begin,
                                                                          std::size_t end) {
  const auto r = aligned_body(x.b, begin, end, 64);
  scale_scalar(x, s, begin, r.begin);
  const __m512d vs = _mm512_set1_pd(s);
  for (std::size_t i = r.begin; i < r.end; i += 8) {
    _mm512_stream_pd(x.b + i, _mm512_mul_pd(vs, _mm512_loadu_pd(x.c + i)));
  }
  scale_scalar(x, s, r.end, end);
  _mm_sfence();
}
__attribute__((target("avx512f"))) INFRABENCH_NO_FMA void add_nt_avx512(const stream_arrays& x,
                                                                        double, std::size_t begin,
                                                                        std::size_t end) {
  const auto r = aligned_body(x.c, begin, end, 64);
  add_scalar(x, 0, begin, r.begin);
  for (std::size_t i = r.begin; i < r.end; i += 8) {
    _mm512_stream_pd(x.c + i, _mm512_add_pd(_mm512_loadu_pd(x.a + i), _mm512_loadu_pd(x.b + i)));
  }
  add_scalar(x, 0, r.end, end);
  _mm_sfence();
}
__attribute__((target("avx512f"))) INFRABENCH_NO_FMA void triad_nt_avx512(const stream_arrays& x,
                                                                          double s,
                                                                          std::size_t begin,
                                                                          std::size_t end) {
  const auto r = aligned_body(x.a, begin, end, 64);
  triad_scalar(x, s, begin, r.begin);
  const __m512d vs = _mm512_set1_pd(s);
  for (std::size_t i = r.begin; i < r.end; i += 8) {
    _mm512_stream_pd(x.a + i, _mm512_add_pd(_mm512_loadu_pd(x.b + i),
                                            _mm512_mul_pd(vs, _mm512_loadu_pd(x.c + i))));
  }
  triad_scalar(x, s, r.end, end);
  _mm_sfence();
}

// ---- dispatch ----------------------------------------------------------------------------------

constexpr std::size_t op_count = 4;
constexpr std::size_t isa_count = 4;
using isa_row = std::array<stream_kernel, isa_count>;  // indexed by simd_isa

// [op][stores][isa]; nullptr where no variant exists (scalar non-temporal).
constexpr std::array<std::array<isa_row, 2>, op_count> kernel_table{{
    {{{copy_scalar, copy_sse2, copy_avx2, copy_avx512},
      {nullptr, copy_nt_sse2, copy_nt_avx2, copy_nt_avx512}}},
    {{{scale_scalar, scale_sse2, scale_avx2, scale_avx512},
      {nullptr, scale_nt_sse2, scale_nt_avx2, scale_nt_avx512}}},
    {{{add_scalar, add_sse2, add_avx2, add_avx512},
      {nullptr, add_nt_sse2, add_nt_avx2, add_nt_avx512}}},
    {{{triad_scalar, triad_sse2, triad_avx2, triad_avx512},
      {nullptr, triad_nt_sse2, triad_nt_avx2, triad_nt_avx512}}},
}};

constexpr std::array<std::string_view, op_count> op_names{"copy", "scale", "add", "triad"};
constexpr std::array<std::string_view, 2> store_names{"regular", "nontemporal"};
constexpr std::array<std::string_view, isa_count> isa_names{"scalar", "sse2", "avx2", "avx512"};

template <class Enum, std::size_t N>
[[nodiscard]] std::optional<Enum> parse_enum(const std::array<std::string_view, N>& names,
                                             std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(stream_op op) {
  return op_names.at(static_cast<std::size_t>(op));
}
std::string_view to_string(store_kind stores) {
  return store_names.at(static_cast<std::size_t>(stores));
}
std::string_view to_string(simd_isa isa) {
  return isa_names.at(static_cast<std::size_t>(isa));
}

std::optional<stream_op> parse_stream_op(std::string_view name) {
  return parse_enum<stream_op>(op_names, name);
}
std::optional<store_kind> parse_store_kind(std::string_view name) {
  return parse_enum<store_kind>(store_names, name);
}
std::optional<simd_isa> parse_simd_isa(std::string_view name) {
  return parse_enum<simd_isa>(isa_names, name);
}

int stream_arrays_read(stream_op op) {
  return op == stream_op::add || op == stream_op::triad ? 2 : 1;
}
int stream_arrays_written(stream_op) {
  return 1;
}

bool simd_isa_supported(simd_isa isa) {
  // Needed when this runs before libgcc's own constructor has filled in the CPU model, e.g. from
  // a static initialiser; a no-op afterwards.
  __builtin_cpu_init();
  switch (isa) {
    case simd_isa::scalar:
    case simd_isa::sse2:
      return true;  // part of x86-64
    case simd_isa::avx2:
      return __builtin_cpu_supports("avx2");
    case simd_isa::avx512:
      return __builtin_cpu_supports("avx512f");
  }
  return false;
}

simd_isa best_simd_isa() {
  // Computed once: the answer cannot change while the process runs.
  static const simd_isa best = [] {
    if (simd_isa_supported(simd_isa::avx512)) return simd_isa::avx512;
    if (simd_isa_supported(simd_isa::avx2)) return simd_isa::avx2;
    return simd_isa::sse2;
  }();
  return best;
}

stream_kernel select_stream_kernel(stream_op op, store_kind stores, simd_isa isa) {
  if (!simd_isa_supported(isa)) {
    throw std::invalid_argument("stream kernel: this CPU does not support " +
                                std::string(to_string(isa)));
  }
  const stream_kernel k = kernel_table.at(static_cast<std::size_t>(op))
                              .at(static_cast<std::size_t>(stores))
                              .at(static_cast<std::size_t>(isa));
  if (k == nullptr) {
    throw std::invalid_argument("stream kernel: no " + std::string(to_string(isa)) +
                                " variant with " + std::string(to_string(stores)) + " stores");
  }
  return k;
}

void stream_run(stream_op op, store_kind stores, const stream_arrays& arrays, double s,
                std::size_t begin, std::size_t end) {
  select_stream_kernel(op, stores, best_simd_isa())(arrays, s, begin, end);
}

}  // namespace infrabench::kernels::cpu
