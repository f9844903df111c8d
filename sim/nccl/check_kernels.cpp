// Host versions of the two kernels the NCCL collectives launch around each verified operation
// (kernels/cuda/reduce_check.cu: fill_kernel<T> writes a rank's inputs, check_kernel<T> counts the
// elements of a result that differ from what the reduction must give), from the same host/device
// pattern code (kernels/cpu/reduce_pattern.h). The simulated CUDA runtime runs our kernels only
// where it has a host version; it asks this library for these by their device symbol
// (infrabench_sim_emulate_nccl_kernel), so that a simulated collective's result check checks the
// data this NCCL really moved, and a wrong exchange fails as on hardware.
#include <cstdint>
#include <cstring>
#include <string>

#include "cpu/float8.h"
#include "cpu/reduce_pattern.h"
#include "shim.h"

namespace simnccl {
namespace {

namespace pattern = infrabench::kernels::pattern;
namespace f8 = infrabench::kernels::fp8;
using pattern::elem_type;

template <class T>
T arg(void** args, int i) {
  T v;
  std::memcpy(&v, args[i], sizeof v);
  return v;
}

// Element i of a buffer of type t, as a double, and back (rounding as the device code does).
double load(const void* buf, elem_type t, std::size_t i) {
  const auto* b = static_cast<const unsigned char*>(buf);
  switch (t) {
    case elem_type::float64:
      return reinterpret_cast<const double*>(b)[i];
    case elem_type::float16:
      return half_to_float(reinterpret_cast<const std::uint16_t*>(b)[i]);
    case elem_type::bfloat16:
      return bf16_to_float(reinterpret_cast<const std::uint16_t*>(b)[i]);
    case elem_type::int32:
      return reinterpret_cast<const std::int32_t*>(b)[i];
    case elem_type::float8_e4m3:
      return f8::decode(b[i], f8::e4m3());
    case elem_type::float8_e5m2:
      return f8::decode(b[i], f8::e5m2());
    default:
      return reinterpret_cast<const float*>(b)[i];
  }
}
void store(void* buf, elem_type t, std::size_t i, double v) {
  auto* b = static_cast<unsigned char*>(buf);
  const auto f = static_cast<float>(v);
  switch (t) {
    case elem_type::float64:
      reinterpret_cast<double*>(b)[i] = v;
      return;
    case elem_type::float16:
      reinterpret_cast<std::uint16_t*>(b)[i] = float_to_half(f);
      return;
    case elem_type::bfloat16:
      reinterpret_cast<std::uint16_t*>(b)[i] = float_to_bf16(f);
      return;
    case elem_type::int32:
      reinterpret_cast<std::int32_t*>(b)[i] = static_cast<std::int32_t>(v);
      return;
    case elem_type::float8_e4m3:
      b[i] = f8::encode(f, f8::e4m3());
      return;
    case elem_type::float8_e5m2:
      b[i] = f8::encode(f, f8::e5m2());
      return;
    default:
      reinterpret_cast<float*>(b)[i] = f;
      return;
  }
}

// fill_kernel<T>(T* buf, elem_type t, size_t count, size_t base, int rank, int ranks)
void fill(void** args) {
  void* buf = arg<void*>(args, 0);
  const auto t = arg<elem_type>(args, 1);
  const auto count = arg<std::size_t>(args, 2), base = arg<std::size_t>(args, 3);
  const int rank = arg<int>(args, 4), ranks = arg<int>(args, 5);
  for (std::size_t i = 0; i < count; ++i)
    store(buf, t, i, pattern::reduction_input(t, rank, ranks, base + i));
}

// The element type of check_kernel<T> from its template argument in the mangled name.
bool type_of_check(const std::string& m, elem_type& t) {
  const auto at = m.find("12check_kernelI");
  if (at == std::string::npos) return false;
  const std::string rest = m.substr(at + 15);
  if (rest.rfind("f", 0) == 0)
    t = elem_type::float32;
  else if (rest.rfind("d", 0) == 0)
    t = elem_type::float64;
  else if (rest.rfind("i", 0) == 0)
    t = elem_type::int32;
  else if (rest.rfind("6__half", 0) == 0)
    t = elem_type::float16;
  else if (rest.rfind("13__nv_bfloat16", 0) == 0)
    t = elem_type::bfloat16;
  else if (rest.find("fp8_byteILi0E") != std::string::npos)
    t = elem_type::float8_e4m3;
  else if (rest.find("fp8_byteILi1E") != std::string::npos)
    t = elem_type::float8_e5m2;
  else
    return false;
  return true;
}

// check_kernel<T>(const T* buf, size_t count, result_rule rule, int me, int n, size_t block,
//                 reduction r, double tol, unsigned long long* bad)
void check(void** args, elem_type t) {
  const void* buf = arg<const void*>(args, 0);
  const auto count = arg<std::size_t>(args, 1);
  const auto rule = arg<pattern::result_rule>(args, 2);
  const int me = arg<int>(args, 3), n = arg<int>(args, 4);
  const auto block = arg<std::size_t>(args, 5);
  const auto r = arg<pattern::reduction>(args, 6);
  const double tol = arg<double>(args, 7);
  auto* bad = arg<unsigned long long*>(args, 8);
  unsigned long long wrong = 0;
  for (std::size_t i = 0; i < count; ++i)
    wrong +=
        pattern::matches(load(buf, t, i), pattern::expected(rule, me, n, block, i, r), tol) ? 0 : 1;
  *bad += wrong;  // the kernel adds into *bad (atomicAdd)
}

}  // namespace
}  // namespace simnccl

// 1 when `mangled` (a kernel's device symbol) is one of the two and it ran on the host, else 0.
extern "C" __attribute__((visibility("default"))) int infrabench_sim_emulate_nccl_kernel(
    const char* mangled, void** args) {
  if (mangled == nullptr || args == nullptr) return 0;
  const std::string m(mangled);
  if (m.find("10infrabench7kernels4cuda") == std::string::npos) return 0;
  if (m.find("11fill_kernelI") != std::string::npos) {
    simnccl::fill(args);
    return 1;
  }
  simnccl::pattern::elem_type t{};
  if (!simnccl::type_of_check(m, t)) return 0;
  simnccl::check(args, t);
  return 1;
}
