#include "cpu/gemm_peak.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "hardware/cpu.h"

namespace infrabench::kernels::cpu {
namespace {

// Chains per variant: FMA latency (4-5 cycles) x pipes (2 on current cores) is at most ~10, so
// 24 chains in the 32 zmm registers (12 in the 16 ymm registers of AVX2) keep every pipe busy
// without spills. The accumulator is the addend (acc = x*y + acc): on some cores the addend input
// has a shorter forwarding latency than the multiplicands.
constexpr int zmm_chains = 24;
constexpr int ymm_chains = 12;

// The operands pass through an empty asm each iteration so the compiler cannot fold the
// arithmetic (y is zero, so the accumulators stay bounded whatever the iteration count).
#define INFRABENCH_OPAQUE(v) asm volatile("" : "+v"(v))

__attribute__((target("avx2,fma"))) float chains_avx2(std::int64_t iterations) {
  __m256 acc[ymm_chains];
  for (int i = 0; i < ymm_chains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 x = _mm256_set1_ps(1.0f);
  __m256 y = _mm256_setzero_ps();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
#pragma GCC unroll 12
    for (int i = 0; i < ymm_chains; ++i) acc[i] = _mm256_fmadd_ps(x, y, acc[i]);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < ymm_chains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm_cvtss_f32(_mm256_castps256_ps128(sum));
}

__attribute__((target("avx512f"))) float chains_avx512(std::int64_t iterations) {
  __m512 acc[zmm_chains];
  for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 x = _mm512_set1_ps(1.0f);
  __m512 y = _mm512_setzero_ps();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
#pragma GCC unroll 24
    for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_fmadd_ps(x, y, acc[i]);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < zmm_chains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

__attribute__((target("avx512f,avx512bf16"))) float chains_bf16(std::int64_t iterations) {
  __m512 acc[zmm_chains];
  for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512i x = _mm512_set1_epi32(0x3f803f80);  // a pair of bf16 1.0
  __m512i y = _mm512_setzero_si512();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
    const auto bx = reinterpret_cast<__m512bh>(x);
    const auto by = reinterpret_cast<__m512bh>(y);
#pragma GCC unroll 24
    for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], bx, by);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < zmm_chains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

__attribute__((target("avx512f,avx512fp16"))) float chains_fp16(std::int64_t iterations) {
  __m512h acc[zmm_chains];
  for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_set1_ph(static_cast<_Float16>(i));
  __m512h x = _mm512_set1_ph(static_cast<_Float16>(1.0f));
  __m512h y = _mm512_setzero_ph();
  for (std::int64_t it = 0; it < iterations; ++it) {
    INFRABENCH_OPAQUE(x);
    INFRABENCH_OPAQUE(y);
#pragma GCC unroll 24
    for (int i = 0; i < zmm_chains; ++i) acc[i] = _mm512_fmadd_ph(x, y, acc[i]);
  }
  __m512h sum = acc[0];
  for (int i = 1; i < zmm_chains; ++i) sum = _mm512_add_ph(sum, acc[i]);
  return static_cast<float>(_mm512_cvtsh_h(sum));
}

// ---- AMX --------------------------------------------------------------------------------------

// Linux hands out the AMX tile data state (8 KiB per thread) only on request: without
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) the first tile instruction raises SIGILL.
// The permission is per process and idempotent, so asking again is harmless.
constexpr long arch_req_xcomp_perm = 0x1023;
constexpr long xfeature_xtiledata = 18;

std::string amx_permission_refused() {
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0) return {};
  return std::string("the kernel refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM: ") +
         std::strerror(errno) + ")";
}

// The palette-1 tile configuration (64 bytes, as LDTILECFG reads it): tiles 0-7 all 16 rows of
// 64 bytes, the largest shape, so one instruction does the most work.
struct alignas(64) tile_config {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

tile_config full_tiles() {
  tile_config cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  return cfg;
}

// Four accumulator tiles (0-3) fed by two A tiles (4, 5) and two B tiles (6, 7): four independent
// dot products per iteration, enough to cover the tile unit's latency (~50 cycles at one
// instruction per 16 cycles). The inputs are zero, so the accumulators stay bounded.
#define INFRABENCH_AMX_LOOP(op)                                      \
  do {                                                               \
    const tile_config cfg = full_tiles();                            \
    alignas(64) static constexpr std::uint8_t zeros[16 * 64] = {};   \
    _tile_loadconfig(&cfg);                                          \
    _tile_zero(0);                                                   \
    _tile_zero(1);                                                   \
    _tile_zero(2);                                                   \
    _tile_zero(3);                                                   \
    _tile_loadd(4, zeros, 64);                                       \
    _tile_loadd(5, zeros, 64);                                       \
    _tile_loadd(6, zeros, 64);                                       \
    _tile_loadd(7, zeros, 64);                                       \
    for (std::int64_t it = 0; it < iterations; ++it) {               \
      op(0, 4, 6);                                                   \
      op(1, 4, 7);                                                   \
      op(2, 5, 6);                                                   \
      op(3, 5, 7);                                                   \
    }                                                                \
    alignas(64) std::int32_t out[4][16 * 16];                        \
    _tile_stored(0, out[0], 64);                                     \
    _tile_stored(1, out[1], 64);                                     \
    _tile_stored(2, out[2], 64);                                     \
    _tile_stored(3, out[3], 64);                                     \
    _tile_release();                                                 \
    float sum = 0;                                                   \
    for (const auto& tile : out) sum += static_cast<float>(tile[0]); \
    return sum;                                                      \
  } while (0)

__attribute__((target("amx-tile,amx-bf16"))) float tiles_bf16(std::int64_t iterations) {
  INFRABENCH_AMX_LOOP(_tile_dpbf16ps);
}

__attribute__((target("amx-tile,amx-int8"))) float tiles_int8(std::int64_t iterations) {
  INFRABENCH_AMX_LOOP(_tile_dpbssd);
}

#undef INFRABENCH_AMX_LOOP

// Instructions (or tile operations) per iteration of each variant's loop.
constexpr int amx_tiles_per_iteration = 4;

}  // namespace

const std::vector<peak_isa>& all_peak_isas() {
  static const std::vector<peak_isa> all = {peak_isa::avx2_fp32,   peak_isa::avx512_fp32,
                                            peak_isa::avx512_bf16, peak_isa::avx512_fp16,
                                            peak_isa::amx_bf16,    peak_isa::amx_int8};
  return all;
}

bool is_amx(peak_isa isa) {
  return isa == peak_isa::amx_bf16 || isa == peak_isa::amx_int8;
}

std::string_view to_string(peak_isa isa) {
  switch (isa) {
    case peak_isa::avx2_fp32:
      return "avx2_fp32";
    case peak_isa::avx512_fp32:
      return "avx512_fp32";
    case peak_isa::avx512_bf16:
      return "avx512_bf16";
    case peak_isa::avx512_fp16:
      return "avx512_fp16";
    case peak_isa::amx_bf16:
      return "amx_bf16";
    case peak_isa::amx_int8:
      return "amx_int8";
  }
  return "?";
}

std::optional<peak_isa> parse_peak_isa(std::string_view name) {
  for (const auto isa : all_peak_isas()) {
    if (to_string(isa) == name) return isa;
  }
  return std::nullopt;
}

std::string peak_isa_unsupported_reason(peak_isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case peak_isa::avx2_fp32:
      if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        return "this CPU lacks AVX2/FMA";
      }
      return {};
    case peak_isa::avx512_fp32:
      if (!__builtin_cpu_supports("avx512f")) return "this CPU lacks AVX-512F";
      return {};
    case peak_isa::avx512_bf16:
      if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) {
        return "this CPU lacks AVX512_BF16 (vdpbf16ps; CPUID.(7,1):EAX[5])";
      }
      return {};
    case peak_isa::avx512_fp16:
      if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512fp16")) {
        return "this CPU lacks AVX512_FP16 (vfmadd231ph; CPUID.(7,0):EDX[23])";
      }
      return {};
    case peak_isa::amx_bf16:
      if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) {
        return "this CPU lacks AMX-BF16 tiles (tdpbf16ps; CPUID.(7,0):EDX[22,24])";
      }
      return amx_permission_refused();
    case peak_isa::amx_int8:
      if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-int8")) {
        return "this CPU lacks AMX-INT8 tiles (tdpbssd; CPUID.(7,0):EDX[24,25])";
      }
      return amx_permission_refused();
  }
  return "unknown variant";
}

double peak_flops_per_instruction(peak_isa isa) {
  // The figures live in the hardware-figures module, with their source.
  namespace hw = infrabench::kernels::hardware;
  switch (isa) {
    case peak_isa::avx2_fp32:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx2_fma_fp32);
    case peak_isa::avx512_fp32:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_fma_fp32);
    case peak_isa::avx512_bf16:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_dpbf16_fp32);
    case peak_isa::avx512_fp16:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::avx512_fma_fp16);
    case peak_isa::amx_bf16:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::amx_tdpbf16ps);
    case peak_isa::amx_int8:
      return hw::cpu_flops_per_instruction(hw::cpu_vector_op::amx_tdpbssd);
  }
  return 0;
}

double peak_flops_per_iteration(peak_isa isa) {
  const int per_iteration = isa == peak_isa::avx2_fp32 ? ymm_chains
                            : is_amx(isa)              ? amx_tiles_per_iteration
                                                       : zmm_chains;
  return per_iteration * peak_flops_per_instruction(isa);
}

float run_peak_chains(peak_isa isa, std::int64_t iterations) {
  if (const auto why = peak_isa_unsupported_reason(isa); !why.empty()) {
    throw std::invalid_argument(why);
  }
  switch (isa) {
    case peak_isa::avx2_fp32:
      return chains_avx2(iterations);
    case peak_isa::avx512_fp32:
      return chains_avx512(iterations);
    case peak_isa::avx512_bf16:
      return chains_bf16(iterations);
    case peak_isa::avx512_fp16:
      return chains_fp16(iterations);
    case peak_isa::amx_bf16:
      return tiles_bf16(iterations);
    case peak_isa::amx_int8:
      return tiles_int8(iterations);
  }
  return 0;
}

std::uint64_t run_add_chain(std::int64_t iterations) {
  std::uint64_t x = 0;
  std::uint64_t one = 1;
  asm volatile("" : "+r"(one));  // a register the compiler cannot see is 1
  for (std::int64_t i = 0; i < iterations; ++i) {
    // Eight dependent register-register adds: the loop counter's own add, compare and branch run
    // beside them. Not `add $1`: Golden Cove and later cores (Sapphire/Emerald Rapids) fold chains
    // of immediate adds at rename, and such a chain read 10 GHz on a 2.1 GHz Emerald Rapids.
    asm volatile(
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
        : "+r"(x)
        : "r"(one));
  }
  return x;
}

// ---- clock x width ------------------------------------------------------------------------------

cpu_model this_cpu_model() {
  cpu_model m;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return m;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  m.vendor = vendor;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return m;
  const int base_family = static_cast<int>((eax >> 8) & 0xf);
  const int base_model = static_cast<int>((eax >> 4) & 0xf);
  m.family = base_family == 0xf ? base_family + static_cast<int>((eax >> 20) & 0xff) : base_family;
  m.model = (base_family == 0x6 || base_family == 0xf)
                ? base_model + (static_cast<int>((eax >> 16) & 0xf) << 4)
                : base_model;
  return m;
}

namespace {

// Vector issue per core per cycle of one microarchitecture: FMA instructions of each width, and
// the dot-product units where they are known. 0 = not in the table (no guess).
struct core_figures {
  const char* core;
  double ymm_fma;     // vfmadd231ps ymm
  double zmm_fma;     // vfmadd231ps zmm
  double zmm_bf16;    // vdpbf16ps zmm
  double amx;         // tdpbf16ps / tdpbssd (one TMUL per core: one tile op per 16 cycles)
  const char* basis;  // where the figures come from
};

constexpr const char* amd_zen_basis =
    "AMD Software Optimization Guide for the family: FMA pipes x datapath width";
constexpr const char* intel_basis =
    "Intel Optimization Reference Manual: FMA units on ports 0 and 5 (Xeon Gold/Platinum; some "
    "Silver/Bronze Skylake/Cascade Lake SKUs have one 512-bit unit)";

// Zen 4 executes a 512-bit operation as two halves on its two 256-bit FMA pipes: one zmm FMA
// (or vdpbf16ps) per cycle, the same flops per cycle as two ymm FMAs. Zen 5 desktop/server cores
// have 512-bit pipes; the Zen 5 mobile parts (Strix, models 0x20-0x2f) keep 256-bit ones.
std::optional<core_figures> amd_core(int family, int model) {
  if (family == 0x17) {
    if (model < 0x30) return core_figures{"Zen / Zen+", 1, 0, 0, 0, amd_zen_basis};
    return core_figures{"Zen 2", 2, 0, 0, 0, amd_zen_basis};
  }
  if (family == 0x19) {
    const bool zen4 = (model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
                      (model >= 0xa0 && model <= 0xaf);
    if (zen4) return core_figures{"Zen 4", 2, 1, 1, 0, amd_zen_basis};
    return core_figures{"Zen 3", 2, 0, 0, 0, amd_zen_basis};
  }
  if (family == 0x1a) {
    if (model >= 0x20 && model <= 0x2f)
      return core_figures{"Zen 5 (mobile)", 2, 1, 0, 0, amd_zen_basis};
    return core_figures{"Zen 5", 2, 2, 0, 0, amd_zen_basis};
  }
  return std::nullopt;
}

std::optional<core_figures> intel_core(int family, int model) {
  if (family != 6) return std::nullopt;
  switch (model) {
    case 0x55:  // Skylake-SP, Cascade Lake, Cooper Lake
    case 0x6a:  // Ice Lake-SP
    case 0x6c:
      return core_figures{"Skylake-SP .. Ice Lake-SP", 2, 2, 0, 0, intel_basis};
    case 0x8f:  // Sapphire Rapids
    case 0xcf:  // Emerald Rapids
    case 0xad:  // Granite Rapids
    case 0xae:
      return core_figures{"Sapphire Rapids .. Granite Rapids",
                          2,
                          2,
                          0,
                          1.0 / 16,
                          "Intel Optimization Reference Manual: FMA units on ports 0 and 5; AMX: "
                          "one TMUL per core, 1024 bf16 flops (2048 int8 ops) per cycle"};
    case 0x7d:  // Ice Lake client
    case 0x7e:
    case 0x8c:  // Tiger Lake
    case 0x8d:
    case 0xa7:  // Rocket Lake
      return core_figures{"Ice Lake .. Rocket Lake (client)",
                          2,
                          1,
                          0,
                          0,
                          "Intel Optimization Reference Manual: ports 0+1 fused for 512-bit, one "
                          "zmm FMA per cycle"};
    case 0x3c:  // Haswell
    case 0x3f:
    case 0x45:
    case 0x46:
    case 0x3d:  // Broadwell
    case 0x47:
    case 0x4f:
    case 0x56:
    case 0x4e:  // Skylake .. Comet Lake (client)
    case 0x5e:
    case 0x8e:
    case 0x9e:
    case 0xa5:
    case 0xa6:
      return core_figures{"Haswell .. Comet Lake",
                          2,
                          0,
                          0,
                          0,
                          "Intel Optimization Reference Manual: two 256-bit FMA units"};
    default:
      // Hybrid parts (Alder Lake and later) mix P-cores (two FMA units) and E-cores (one): which
      // core a thread ran on is not known here.
      return std::nullopt;
  }
}

}  // namespace

std::optional<issue_rate> peak_issue_rate(peak_isa isa, const cpu_model& cpu) {
  std::optional<core_figures> f;
  if (cpu.vendor == "AuthenticAMD") f = amd_core(cpu.family, cpu.model);
  if (cpu.vendor == "GenuineIntel") f = intel_core(cpu.family, cpu.model);
  if (!f) return std::nullopt;
  double rate = 0;
  switch (isa) {
    case peak_isa::avx2_fp32:
      rate = f->ymm_fma;
      break;
    case peak_isa::avx512_fp32:
      rate = f->zmm_fma;
      break;
    case peak_isa::avx512_bf16:
      rate = f->zmm_bf16;
      break;
    case peak_isa::avx512_fp16:
      break;  // not in the table
    case peak_isa::amx_bf16:
    case peak_isa::amx_int8:
      rate = f->amx;
      break;
  }
  if (rate <= 0) return std::nullopt;
  return issue_rate{rate, f->core, f->basis};
}

double clock_x_width_gflops(peak_isa isa, double clock_ghz, double cores, double per_cycle) {
  return clock_ghz * cores * per_cycle * peak_flops_per_instruction(isa);
}

}  // namespace infrabench::kernels::cpu
