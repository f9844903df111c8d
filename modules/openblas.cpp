// libinfrabench_openblas.so: links libopenblas.so.0 and hands its entry points to the executable.
// Loading this module loads OpenBLAS (its constructor picks the core type and starts its thread
// pool), which is why it is a module: only a run of gemm/openblas_* pays for it.
#include <cstddef>
#include <cstdint>

#include "infrabench/modules/openblas_api.h"

// OpenBLAS's own declarations (cblas.h is not needed, nor its enums: they are passed as ints).
// The weak ones are missing from some builds (no DYNAMIC_ARCH, older releases): null then.
extern "C" {
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                 float*, int);
void openblas_set_num_threads(int);
char* openblas_get_corename(void);
__attribute__((weak)) char* openblas_get_config(void);
__attribute__((weak)) int openblas_get_num_threads(void);
__attribute__((weak)) int openblas_setaffinity(int, std::size_t, void*);
__attribute__((weak)) int openblas_getaffinity(int, std::size_t, void*);
__attribute__((weak)) void gotoblas_dynamic_init(void);
__attribute__((weak)) void gotoblas_dynamic_quit(void);
}

namespace {

const char* corename() {
  return openblas_get_corename();
}

infrabench_openblas_api make_api() {
  infrabench_openblas_api api{};
  api.header.abi_version = INFRABENCH_OPENBLAS_ABI_VERSION;
  api.header.size = sizeof(api);
  api.header.id = "openblas";
  api.header.version = openblas_get_config != nullptr ? openblas_get_config() : "";
  api.header.error = nullptr;
  api.sgemm = &cblas_sgemm;
  api.set_num_threads = &openblas_set_num_threads;
  api.corename = &corename;
  api.get_num_threads = openblas_get_num_threads;
  api.set_affinity = openblas_setaffinity;
  api.get_affinity = openblas_getaffinity;
  api.dynamic_init = gotoblas_dynamic_init;
  api.dynamic_quit = gotoblas_dynamic_quit;
  return api;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const infrabench_module_header*
infrabench_module_entry(uint32_t abi_version) {
  if (abi_version != INFRABENCH_OPENBLAS_ABI_VERSION) return nullptr;
  static const infrabench_openblas_api api = make_api();
  return &api.header;
}
