// STREAM's four kernels (McCalpin) on double arrays, over an index range [begin, end) so a thread
// pool can give each thread its own chunk. Each kernel comes as a scalar reference and as SSE2,
// AVX2 and AVX-512 variants, with regular or non-temporal stores; the variant is chosen at run
// time.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace infrabench::kernels::cpu {

// The arrays STREAM names a, b and c. Each kernel reads one or two of them and writes another, and
// never writes an array it reads, so a kernel run alone gives the same result every time.
struct stream_arrays {
  double* a = nullptr;
  double* b = nullptr;
  double* c = nullptr;
};

enum class stream_op {
  copy,   // c = a
  scale,  // b = s * c
  add,    // c = a + b
  triad,  // a = b + s * c
};

enum class store_kind {
  regular,      // ordinary stores: the written line is read into the cache first
  nontemporal,  // streaming stores that bypass the caches; fenced before the kernel returns
};

enum class simd_isa {
  scalar,  // the reference: not vectorised, regular stores only
  sse2,    // baseline x86-64
  avx2,
  avx512,  // AVX-512F
};

// One kernel variant: runs the operation on elements [begin, end) of the arrays with scalar `s`
// (ignored by copy and add).
using stream_kernel = void (*)(const stream_arrays& arrays, double s, std::size_t begin,
                               std::size_t end);

[[nodiscard]] std::string_view to_string(stream_op op);
[[nodiscard]] std::string_view to_string(store_kind stores);
[[nodiscard]] std::string_view to_string(simd_isa isa);
[[nodiscard]] std::optional<stream_op> parse_stream_op(std::string_view name);
[[nodiscard]] std::optional<store_kind> parse_store_kind(std::string_view name);
[[nodiscard]] std::optional<simd_isa> parse_simd_isa(std::string_view name);

// Arrays read and written per element, as STREAM counts them: copy and scale move two arrays
// (1 read + 1 write), add and triad three (2 reads + 1 write). Write-allocate traffic is not
// counted.
[[nodiscard]] int stream_arrays_read(stream_op op);
[[nodiscard]] int stream_arrays_written(stream_op op);

// Whether this CPU and OS can run `isa` (CPUID and XCR0, via __builtin_cpu_supports).
[[nodiscard]] bool simd_isa_supported(simd_isa isa);
// The widest vector ISA this CPU supports (never scalar).
[[nodiscard]] simd_isa best_simd_isa();

// The variant for (op, stores, isa). Throws std::invalid_argument when the CPU lacks `isa` or for
// scalar with non-temporal stores (the reference has none).
[[nodiscard]] stream_kernel select_stream_kernel(stream_op op, store_kind stores, simd_isa isa);

// Runs `op` on [begin, end) with the widest supported ISA.
void stream_run(stream_op op, store_kind stores, const stream_arrays& arrays, double s,
                std::size_t begin, std::size_t end);

}  // namespace infrabench::kernels::cpu
