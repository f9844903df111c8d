// libinfrabench_onednn.so: oneDNN's matmul primitive behind the C table of onednn_api.h. Linking
// libdnnl brings in its OpenMP runtime (libgomp), whose threads and allocations only a run of
// gemm/onednn_* should pay for: hence a module.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "infrabench/modules/onednn_api.h"

// libgomp, as libdnnl brought it in (this module does not link it itself): weak, so a oneDNN on
// another threading runtime still loads, and the table says which calls are missing.
extern "C" {
__attribute__((weak)) void omp_set_num_threads(int);
__attribute__((weak)) int omp_get_thread_num(void);
// libgomp's entry point for `#pragma omp parallel` (GCC >= 4.9): fn(data) on every thread.
__attribute__((weak)) void GOMP_parallel(void (*)(void*), void*, unsigned, unsigned);
}

struct infrabench_onednn_matmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::optional<dnnl::matmul> prim;
  std::unordered_map<int, dnnl::memory> args;
  std::string impl;
};

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

void set_error(char* error, std::size_t size, const char* what) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", what);
}

int set_num_threads(int threads) {
  if (omp_set_num_threads == nullptr) return 0;
  omp_set_num_threads(threads);
  return 1;
}

struct team {
  std::vector<int> cpus;
  std::atomic<int> wrong{0};
  bool check = false;
};

void pin_member(void* p) {
  auto* tm = static_cast<team*>(p);
  const auto id = static_cast<std::size_t>(omp_get_thread_num());
  cpu_set_t want;
  CPU_ZERO(&want);
  CPU_SET(tm->cpus[id % tm->cpus.size()], &want);
  if (tm->check) {
    cpu_set_t got;
    CPU_ZERO(&got);
    if (pthread_getaffinity_np(pthread_self(), sizeof(got), &got) != 0 || !CPU_EQUAL(&want, &got))
      ++tm->wrong;
  } else if (pthread_setaffinity_np(pthread_self(), sizeof(want), &want) != 0) {
    ++tm->wrong;
  }
}

// libgomp keeps its threads and gives a team of the same size the same threads in the same
// order, so pinning them in one region pins them for oneDNN's; a second region checks that.
int pin_team(int threads, const int* cpus, std::size_t ncpus) {
  if (GOMP_parallel == nullptr || omp_get_thread_num == nullptr || ncpus == 0) return -1;
  team t;
  t.cpus.assign(cpus, cpus + ncpus);
  GOMP_parallel(pin_member, &t, static_cast<unsigned>(threads), 0);
  t.check = true;
  GOMP_parallel(pin_member, &t, static_cast<unsigned>(threads), 0);
  return t.wrong.load();
}

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, const dnnl::memory::desc& a,
                                     const dnnl::memory::desc& b, const dnnl::memory::desc& c) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul::primitive_desc(eng, a, b, c);
#else
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), eng);
#endif
}

infrabench_onednn_matmul* matmul_create(int bf16, std::int64_t m, std::int64_t n, std::int64_t k,
                                        int trans_a, int trans_b, const void* a, const void* b,
                                        float* c, char* error, std::size_t error_size) {
  try {
    auto mm = std::make_unique<infrabench_onednn_matmul>();
    const dt in = bf16 != 0 ? dt::bf16 : dt::f32;
    const dnnl::memory::desc a_md({m, k}, in, trans_a != 0 ? tag::ba : tag::ab);
    const dnnl::memory::desc b_md({k, n}, in, trans_b != 0 ? tag::ba : tag::ab);
    const dnnl::memory::desc c_md({m, n}, dt::f32, tag::ab);
    const auto pd = make_pd(mm->eng, a_md, b_md, c_md);
    mm->impl = pd.impl_info_str();
    mm->prim.emplace(pd);
    // oneDNN's memory objects take non-const handles; it only reads SRC and WEIGHTS.
    mm->args.insert({DNNL_ARG_SRC, dnnl::memory(a_md, mm->eng, const_cast<void*>(a))});
    mm->args.insert({DNNL_ARG_WEIGHTS, dnnl::memory(b_md, mm->eng, const_cast<void*>(b))});
    mm->args.insert({DNNL_ARG_DST, dnnl::memory(c_md, mm->eng, c)});
    return mm.release();
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
  } catch (...) {
    set_error(error, error_size, "unknown exception from oneDNN");
  }
  return nullptr;
}

const char* matmul_impl(const infrabench_onednn_matmul* mm) {
  return mm->impl.c_str();
}

int matmul_execute(infrabench_onednn_matmul* mm, char* error, std::size_t error_size) {
  try {
    mm->prim->execute(mm->strm, mm->args);
    mm->strm.wait();
    return 0;
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
  } catch (...) {
    set_error(error, error_size, "unknown exception from oneDNN");
  }
  return 1;
}

void matmul_destroy(infrabench_onednn_matmul* mm) {
  delete mm;
}

std::string version_text() {
  const dnnl_version_t* v = dnnl_version();
  if (v == nullptr) return "";
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const infrabench_module_header*
infrabench_module_entry(uint32_t abi_version) {
  if (abi_version != INFRABENCH_ONEDNN_ABI_VERSION) return nullptr;
  static const std::string version = version_text();
  static const infrabench_onednn_api api = [] {
    infrabench_onednn_api a{};
    a.header = {INFRABENCH_ONEDNN_ABI_VERSION, sizeof(a), "onednn", version.c_str(), nullptr};
    a.set_num_threads = set_num_threads;
    a.pin_team = pin_team;
    a.matmul_create = matmul_create;
    a.matmul_impl = matmul_impl;
    a.matmul_execute = matmul_execute;
    a.matmul_destroy = matmul_destroy;
    return a;
  }();
  return &api.header;
}
