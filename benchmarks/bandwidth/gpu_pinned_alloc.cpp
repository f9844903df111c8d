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

void pinned_alloc(infrabench::state& st) {
  const bool alloc = st.get_string("api") == "host_alloc";
  const auto size = static_cast<std::size_t>(st.get_int64("size"));
  const int count = gpu::device_count();
  const auto g = st.get_int64("gpu");
  if (g >= count) st.skip(topo::missing_index_reason("GPU", g, count));
  const gpu::device_scope scope(static_cast<int>(g));
  IB_CUDA(cudaFree(nullptr));  // create the context outside the timed region

  // host_register pins this buffer again and again; allocated and touched once.
  std::unique_ptr<bw::node_memory> buffer;
  if (!alloc) buffer = std::make_unique<bw::node_memory>(size, -1);

  std::vector<double> first_half, second_half;
  st.add_items(static_cast<double>((size + 4095) / 4096), "page");
  st.exec_timed(
      [&] {
        const auto t0 = clock_type::now();
        void* p = nullptr;
        if (alloc) {
          IB_CUDA(cudaHostAlloc(&p, size, cudaHostAllocPortable | cudaHostAllocMapped));
        } else {
          IB_CUDA(cudaHostRegister(buffer->data(), size,
                                   cudaHostRegisterPortable | cudaHostRegisterMapped));
        }
        const auto t1 = clock_type::now();
        if (alloc) {
          IB_CUDA(cudaFreeHost(p));
        } else {
          IB_CUDA(cudaHostUnregister(buffer->data()));
        }
        const auto t2 = clock_type::now();
        first_half.push_back(since(t0, t1));
        second_half.push_back(since(t1, t2));
        return since(t0, t2);
      },
      "cpu_steady_clock");

  // The pinned memory works: one allocation, a copy through it, checked.
  void* p = nullptr;
  if (alloc) {
    IB_CUDA(cudaHostAlloc(&p, size, cudaHostAllocPortable | cudaHostAllocMapped));
  } else {
    p = buffer->data();
    IB_CUDA(cudaHostRegister(p, size, cudaHostRegisterPortable | cudaHostRegisterMapped));
  }
  std::string problem;
  try {
    const std::size_t n = std::min<std::size_t>(size, std::size_t{1} << 20);
    topo::fill_pattern(p, n, 77);
    const gpu::device_buffer dev(static_cast<int>(g), n);
    IB_CUDA(cudaMemcpy(dev.get(), p, n, cudaMemcpyHostToDevice));
    if (auto mismatch = topo::compare_checksum(
            topo::pattern_checksum(77, n), gpu::checksum_device(static_cast<int>(g), dev.get(), n),
            "copy through the pinned buffer")) {
      problem = *mismatch;
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (alloc) {
    (void)cudaFreeHost(p);
  } else {
    (void)cudaHostUnregister(p);
  }
  st.check(problem.empty(), problem);

  // Drop the warm-up call, as the harness does for its own samples.
  if (first_half.size() > 1) first_half.erase(first_half.begin());
  if (second_half.size() > 1) second_half.erase(second_half.begin());
  const std::string a = alloc ? "cudaHostAlloc" : "cudaHostRegister";
  const std::string f = alloc ? "cudaFreeHost" : "cudaHostUnregister";
  st.add_metric("alloc_us", "us", topo::summarize_cell(first_half).median * 1e6, false,
                "median time of " + a + " of " + bw::format_gib(static_cast<double>(size)));
  st.add_metric("free_us", "us", topo::summarize_cell(second_half).median * 1e6, false,
                "median time of " + f);
}

INFRABENCH_REGISTER(pinned_alloc, "bandwidth/pinned_alloc")
    .describe(
        "cost of pinning host memory: cudaHostAlloc+cudaFreeHost or cudaHostRegister+"
        "cudaHostUnregister of `size` bytes (alloc_us, free_us, ns_per_page)")
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
