// The kernels' per-function code-generation attributes, spelled for the compiler at hand. The
// shipped build is GCC's; the sanitizer builds are clang's (their compiles take half GCC's time,
// docs/development.md), and clang has neither GCC's optimize() attribute nor the
// "prefer-vector-width" target option:
// - INFRABENCH_OPTIMIZE(...): GCC's optimize("...") (no FMA contraction, no memcpy idiom, no
//   vectoriser for a scalar reference); nothing under clang, whose builds pass -ffp-contract=off
//   instead (CMakePresets.json), so variants still agree bit for bit there; clang does not
//   reassociate a floating-point reduction to vectorise it either.
// - INFRABENCH_TARGET_WIDE("features"): the target features with 512-bit vectors preferred (GCC's
//   generic tuning picks 256 bits even where AVX-512 is enabled; clang's min_vector_width).
#pragma once

#if defined(__clang__)
#define INFRABENCH_OPTIMIZE(...)
#define INFRABENCH_TARGET_WIDE(features) __attribute__((target(features), min_vector_width(512)))
#else
#define INFRABENCH_OPTIMIZE(...) __attribute__((optimize(__VA_ARGS__)))
#define INFRABENCH_TARGET_WIDE(features) \
  __attribute__((target(features ",prefer-vector-width=512")))
#endif

// Whether this translation unit is built under AddressSanitizer or ThreadSanitizer: GCC says so
// with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define INFRABENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INFRABENCH_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define INFRABENCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define INFRABENCH_TSAN 1
#endif
#endif
