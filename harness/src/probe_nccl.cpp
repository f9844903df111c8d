// NCCL probe, in the NCCL module (libinfrabench_nccl.so, built with INFRABENCH_WITH_NCCL=ON), which
// sets the core's hook to it when it loads (probe_nccl_none.cpp calls it). Runs after the CUDA
// probe: NCCL is usable only with a device, but its version is known either way and belongs in
// the report.
#include <string>

#include <nccl.h>

#include <cstdint>

#include "infrabench/modules/cuda_api.h"
#include "infrabench/probe_detail.h"

namespace infrabench::detail {
namespace {

// NCCL changed its encoding at 2.9: 2.8.4 is 2804, 2.28.9 is 22809 (see NCCL_VERSION in nccl.h).
std::string nccl_version_string(int v) {
  const bool old_encoding = v < 10000;
  const int major = old_encoding ? v / 1000 : v / 10000;
  const int minor = old_encoding ? (v % 1000) / 100 : (v % 10000) / 100;
  const int patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

void probe_nccl_module(capabilities& caps) {
  int v = 0;
  // ncclGetVersion touches no device, so it answers on a machine without a GPU.
  if (const ncclResult_t rc = ncclGetVersion(&v); rc == ncclSuccess) {
    caps.nccl.version = nccl_version_string(v);
  } else {
    caps.nccl.available = false;
    caps.nccl.reason = std::string("ncclGetVersion: ") + ncclGetErrorString(rc);
    return;
  }
  caps.nccl.available = caps.cuda.available;
  if (caps.nccl.available) {
    caps.nccl.reason.clear();
  } else {
    // NCCL itself is there (its version is in the report): what is missing is CUDA's, in CUDA's
    // words, so a benchmark needing both gives one reason, grouped with the other GPU skips.
    caps.nccl.reason = caps.cuda.reason.empty() ? std::string("no CUDA device") : caps.cuda.reason;
  }
}

namespace {

[[maybe_unused]] const bool hook_set = [] {
  backends::provide(probe_nccl_hook, &probe_nccl_module);
  return true;
}();

const char* module_version() {
  static const std::string text = [] {
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? "NCCL " + nccl_version_string(v)
                                             : std::string("NCCL ?");
  }();
  return text.c_str();
}

}  // namespace

}  // namespace infrabench::detail

extern "C" __attribute__((visibility("default"))) const infrabench_module_header*
infrabench_module_entry(std::uint32_t abi_version) {
  if (abi_version != INFRABENCH_NCCL_ABI_VERSION) return nullptr;
  static const infrabench_module_header header = {INFRABENCH_NCCL_ABI_VERSION,
                                                  sizeof(infrabench_module_header), "nccl",
                                                  infrabench::detail::module_version(), nullptr};
  return &header;
}
