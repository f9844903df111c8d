// bandwidth/pinned_alloc: what pinning host memory costs, for loaders that allocate staging
// buffers per batch. host_alloc: cudaHostAlloc + cudaFreeHost (the driver allocates, zeroes and
// pins); host_register: cudaHostRegister + cudaHostUnregister of memory already allocated and
// touched (pinning and mapping only). Host clock; pages_per_s and ns_per_page derived from the
// 4 KiB pages pinned per call, plus the medians of the two halves (alloc_us, free_us).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "gpu_common.h"
#include "gpu_shared.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "topology/matrix.h"
#include "topology/pattern.h"

namespace {

namespace topo = infrabench::kernels::topology;
namespace bw = infrabench::bw;
namespace gpu = infrabench::bw::gpu;

using clock_type = std::chrono::steady_clock;

[[nodiscard]] double since(clock_type::time_point t0, clock_type::time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

// One configuration, read from the axes.
struct pin_config {
  bool alloc = false;  // cudaHostAlloc (else cudaHostRegister of `buffer`)
  std::size_t size = 0;
  int gpu = 0;
  bw::node_memory* buffer = nullptr;  // host_register's memory, allocated and touched once
};

// The times of the two halves of every call, warm-up included.
struct pin_halves {
  std::vector<double> first, second;
};

// Pins `size` bytes: a new allocation, or the registered buffer.
[[nodiscard]] void* pin(const pin_config& cfg) {
  void* p = nullptr;
  if (cfg.alloc) {
    IB_CUDA(cudaHostAlloc(&p, cfg.size, cudaHostAllocPortable | cudaHostAllocMapped));
  } else {
    p = cfg.buffer->data();
    IB_CUDA(cudaHostRegister(p, cfg.size, cudaHostRegisterPortable | cudaHostRegisterMapped));
  }
  return p;
}

// One timed call: pin, then unpin, each half on the host clock.
[[nodiscard]] double pin_and_unpin(const pin_config& cfg, pin_halves& halves) {
  const auto t0 = clock_type::now();
  void* p = pin(cfg);
  const auto t1 = clock_type::now();
  if (cfg.alloc) {
    IB_CUDA(cudaFreeHost(p));
  } else {
    IB_CUDA(cudaHostUnregister(cfg.buffer->data()));
  }
  const auto t2 = clock_type::now();
  halves.first.push_back(since(t0, t1));
  halves.second.push_back(since(t1, t2));
  return since(t0, t2);
}

// The pinned memory works: one allocation, a copy through it, checked. Empty when it does.
[[nodiscard]] std::string copy_through_pinned(const pin_config& cfg) {
  void* p = pin(cfg);
  std::string problem;
  try {
    const std::size_t n = std::min<std::size_t>(cfg.size, std::size_t{1} << 20);
    topo::fill_pattern(p, n, 77);
    const gpu::device_buffer dev(cfg.gpu, n);
    IB_CUDA(cudaMemcpy(dev.get(), p, n, cudaMemcpyHostToDevice));
    if (auto mismatch = topo::compare_checksum(topo::pattern_checksum(77, n),
                                               gpu::checksum_device(cfg.gpu, dev.get(), n),
                                               "copy through the pinned buffer")) {
      problem = *mismatch;
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (cfg.alloc) {
    (void)cudaFreeHost(p);
  } else {
    (void)cudaHostUnregister(p);
  }
  return problem;
}

void report_halves(infrabench::state& st, const pin_config& cfg, pin_halves& halves) {
  // Drop the warm-up call, as the harness does for its own samples.
  if (halves.first.size() > 1) halves.first.erase(halves.first.begin());
  if (halves.second.size() > 1) halves.second.erase(halves.second.begin());
  const std::string a = cfg.alloc ? "cudaHostAlloc" : "cudaHostRegister";
  const std::string f = cfg.alloc ? "cudaFreeHost" : "cudaHostUnregister";
  st.add_metric("alloc_us", "us", topo::summarize_cell(halves.first).median * 1e6, false,
                "median time of " + a + " of " + bw::format_gib(static_cast<double>(cfg.size)));
  st.add_metric("free_us", "us", topo::summarize_cell(halves.second).median * 1e6, false,
                "median time of " + f);
}

void pinned_alloc(infrabench::state& st) {
  pin_config cfg;
  cfg.alloc = st.get_string("api") == "host_alloc";
  cfg.size = static_cast<std::size_t>(st.get_int64("size"));
  const int count = gpu::device_count();
  const auto g = st.get_int64("gpu");
  if (g >= count) st.skip(topo::missing_index_reason("GPU", g, count));
  cfg.gpu = static_cast<int>(g);
  const gpu::device_scope scope(cfg.gpu);
  IB_CUDA(cudaFree(nullptr));  // create the context outside the timed region

  // host_register pins this buffer again and again; allocated and touched once.
  std::unique_ptr<bw::node_memory> buffer;
  if (!cfg.alloc) buffer = std::make_unique<bw::node_memory>(cfg.size, -1);
  cfg.buffer = buffer.get();

  pin_halves halves;
  st.add_items(static_cast<double>((cfg.size + 4095) / 4096), "page");
  st.exec_timed([&] { return pin_and_unpin(cfg, halves); }, "cpu_steady_clock");
  const std::string problem = copy_through_pinned(cfg);
  st.check(problem.empty(), problem);
  report_halves(st, cfg, halves);
}

INFRABENCH_REGISTER(pinned_alloc, "bandwidth/pinned_alloc")
    .describe(
        "cost of pinning host memory: cudaHostAlloc+cudaFreeHost or cudaHostRegister+"
        "cudaHostUnregister of `size` bytes (alloc_us, free_us, ns_per_page)")
    .produces_items("page")
    .produces("alloc_us", "us", infrabench::better::lower)
    .produces("free_us", "us", infrabench::better::lower)
    .headline("ns_per_page")
    .require(infrabench::req::cuda)
    .add_string_axis(
        "api", {"host_alloc", "host_register"},
        infrabench::choice_axis("host_alloc: cudaHostAlloc; host_register: cudaHostRegister "
                                "of allocated, touched memory",
                                {"host_alloc", "host_register"}))
    .add_int64_axis("size",
                    {std::int64_t{4} << 10, std::int64_t{2} << 20, std::int64_t{64} << 20,
                     std::int64_t{1} << 30},
                    infrabench::bytes_axis("bytes pinned per call", 1))
    .add_int64_axis("gpu", {0}, infrabench::int_axis("GPU whose context is current", 0))
    .memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
      for (const auto& [name, value] : cfg) {
        if (name == "size") return 2 * std::get<std::int64_t>(value);
      }
      return 0;
    });

}  // namespace
