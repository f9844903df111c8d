// CPU versions of the data-moving kernels of kernels/cuda/copy_checksum.cu and copy_sm.cu, matched
// by their device symbol (infrabench::kernels::cuda::<anonymous>::NAME): what the GPU computes
// with the same pattern and checksum functions (kernels/topology/pattern.h), on the host.
#include "kernels.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "topology/pattern.h"

namespace infrabench::sim {
namespace {

namespace topo = infrabench::kernels::topology;

template <class T>
T arg(void** args, int i) {
  T v;
  std::memcpy(&v, args[i], sizeof v);
  return v;
}

void fill_pattern(void** args) {
  auto* dst = arg<unsigned char*>(args, 0);
  const auto bytes = arg<std::size_t>(args, 1);
  const auto seed = arg<std::uint64_t>(args, 2);
  topo::fill_pattern(dst, bytes, seed);
}

void checksum(void** args) {
  const auto* data = arg<const unsigned char*>(args, 0);
  const auto bytes = arg<std::size_t>(args, 1);
  auto* sum = arg<unsigned long long*>(args, 2);
  *sum += topo::checksum(data, bytes);  // the kernel adds into *sum (atomicAdd)
}

void copy_vec16(void** args) {
  std::memmove(arg<void*>(args, 0), arg<const void*>(args, 1), arg<std::size_t>(args, 2) * 16);
}

void copy_split_vec16(void** args) {
  const auto n = arg<std::size_t>(args, 4);
  std::memmove(arg<void*>(args, 0), arg<const void*>(args, 1), n * 16);
  std::memmove(arg<void*>(args, 2), arg<const void*>(args, 3), n * 16);
}

void copy_bytes(void** args) {
  std::memmove(arg<void*>(args, 0), arg<const void*>(args, 1), arg<std::size_t>(args, 2));
}

struct emulated {
  const char* name;
  void (*run)(void**);
};
constexpr emulated k_emulated[] = {
    {"fill_pattern_kernel", &fill_pattern},
    {"checksum_kernel", &checksum},
    {"copy_vec16", &copy_vec16},
    {"copy_split_vec16", &copy_split_vec16},
    {"copy_bytes", &copy_bytes},
};

// "...4cuda12_GLOBAL__N_119fill_pattern_kernelE...": the name as a whole mangled component of our
// kernels' namespace, so a kernel whose name merely contains it is not taken for it.
bool names(const std::string& mangled, const char* name) {
  const std::string component = std::to_string(std::strlen(name)) + name + "E";
  return mangled.find("10infrabench7kernels4cuda") != std::string::npos &&
         mangled.find(component) != std::string::npos;
}

}  // namespace

bool emulate_kernel(const char* mangled, void** args) {
  if (mangled == nullptr || args == nullptr) return false;
  const std::string m(mangled);
  for (const auto& e : k_emulated) {
    if (names(m, e.name)) {
      e.run(args);
      return true;
    }
  }
  // The NCCL benchmark's fill and check kernels (kernels/cuda/reduce_check.cu) have their host
  // versions in the simulated NCCL (sim/nccl/check_kernels.cpp), so that a simulated collective's
  // result check checks the data it moved. Absent (no libnccl.so.2 shim loaded): not emulated.
  using nccl_emulate_t = int (*)(const char*, void**);
  static const auto nccl =
      reinterpret_cast<nccl_emulate_t>(::dlsym(RTLD_DEFAULT, "infrabench_sim_emulate_nccl_kernel"));
  return nccl != nullptr && nccl(mangled, args) == 1;
}

}  // namespace infrabench::sim
