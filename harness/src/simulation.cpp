// The harness's side of the simulated GPU node: loading the shims when asked, and the sim query.
#include "infrabench/simulation.h"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "infrabench/backend_loader.h"

namespace infrabench::simulation {

namespace {

template <class Fn>
Fn* query(const char* name) {
  // RTLD_DEFAULT: the shims are global; the vendor's libraries export no such symbol.
  return reinterpret_cast<Fn*>(::dlsym(RTLD_DEFAULT, name));
}

// The fake NVML reads the same node file, so NVML and CUDA describe the same GPUs (unless the
// user chose an NVML of their own).
void point_nvml_at_node(const std::string& node) {
  if (std::getenv("INFRABENCH_FAKE_NVML") == nullptr) {
    ::setenv("INFRABENCH_FAKE_NVML", node.c_str(), 0);
  }
  if (std::getenv("INFRABENCH_NVML_LIBRARY") == nullptr) {
    if (const auto nvml = backends::locate_file("libinfrabench_fake_nvml.so")) {
      ::setenv("INFRABENCH_NVML_LIBRARY", nvml->c_str(), 0);
    }
  }
}

}  // namespace

bool requested() {
  const char* v = std::getenv(node_variable);
  return v != nullptr && *v != '\0';
}

namespace {
// A simulation asked for that cannot be made: one line and exit 2 before anything runs, never a
// quiet run on whatever the vendor's libraries find instead.
[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "infrabench: error: %s\n", why.c_str());
  std::fflush(stderr);
  std::exit(2);
}
}  // namespace

void load_shims() {
  static bool done = false;  // the loader asks from main's thread, before any other starts
  if (done) return;
  done = true;
  // In the order their users need them: cuBLAS(Lt) need cudart, NCCL needs cudart.
  static constexpr std::array<const char*, 3> required = {"libcudart.so.13", "libcublasLt.so.13",
                                                          "libcublas.so.13"};
  for (const char* file : required) {
    const auto path = backends::locate_file(std::string("sim/") + file);
    if (!path) {
      refuse(std::string("a simulated GPU node was asked for (") + node_variable + ") but sim/" +
             file + " was not built beside the executable (a build with CUDA builds it)");
    }
    if (::dlopen(path->c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* e = ::dlerror();
      refuse(std::string("the simulated ") + file + " did not load: " + (e ? e : "dlopen failed"));
    }
  }
  // NCCL's shim is optional: without it the NCCL module binds to the real NCCL, whose calls then
  // fail on the simulated devices and its benchmarks say so. One that is there but does not load
  // is refused: the module would bind the vendor's NCCL inside a simulated run.
  if (const auto nccl = backends::locate_file("sim/libnccl.so.2")) {
    if (::dlopen(nccl->c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* e = ::dlerror();
      refuse(std::string("the simulated libnccl.so.2 did not load: ") + (e ? e : "dlopen failed"));
    }
  }
  // Read the node file now, before anything runs: a bad one ends the process with one line.
  (void)node_file();
  point_nvml_at_node(std::getenv(node_variable));
}

bool active() {
  return query<const char*()>("infrabench_sim_node") != nullptr;
}

std::string node_file() {
  auto* fn = query<const char*()>("infrabench_sim_node");
  return fn != nullptr ? std::string(fn()) : std::string();
}

std::uint64_t noop_launches() {
  auto* fn = query<unsigned long long()>("infrabench_sim_noop_launches");
  return fn != nullptr ? fn() : 0;
}

}  // namespace infrabench::simulation
