// bandwidth/host_memory: STREAM's copy, scale, add and triad over three arrays in host memory,
// split across pinned threads. Bandwidth counts bytes as STREAM does, so the numbers compare with
// McCalpin's stream.c (benchmarks/bandwidth/compare_stream.sh runs both).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cpu/huge_page_buffer.h"
#include "cpu/stream.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"

namespace {

namespace kc = infrabench::kernels::cpu;

struct index_range {
  std::size_t begin;
  std::size_t end;
};

// Thread t of `threads` owns elements [begin, end) of every array. Boundaries fall on 4 KiB page
// boundaries so each thread first-touches (and so places, on a NUMA machine) the pages it later
// streams, and no two threads write the same cache line. With huge pages, at most the one 2 MiB
// page that straddles a boundary is shared.
[[nodiscard]] index_range thread_chunk(std::size_t n, std::size_t t, std::size_t threads) {
  constexpr std::size_t page_elements = 4096 / sizeof(double);
  const auto bound = [&](std::size_t k) {
    if (k >= threads) return n;
    return std::min(n, n * k / threads / page_elements * page_elements);
  };
  return {bound(t), bound(t + 1)};
}

// Initial values. STREAM starts c at 0; 0.5 makes scale's result (1.5) show that the multiply
// happened rather than zeros being written. Every value here and in every result is exact.
constexpr double init_a = 1.0;
constexpr double init_b = 2.0;
constexpr double init_c = 0.5;
constexpr double scalar = 3.0;

// a, b and c after one run of `op` from the initial values: each kernel writes an array it does not
// read, so this is also the state after any number of runs.
[[nodiscard]] std::array<double, 3> expected_after(kc::stream_op op) {
  double a = init_a, b = init_b, c = init_c;
  switch (op) {
    case kc::stream_op::copy:
      c = a;
      break;
    case kc::stream_op::scale:
      b = scalar * c;
      break;
    case kc::stream_op::add:
      c = a + b;
      break;
    case kc::stream_op::triad:
      a = b + scalar * c;
      break;
  }
  return {a, b, c};
}

struct mismatch {
  std::size_t index = 0;
  char array = 0;
  double value = 0;
  double expected = 0;
};

// The kernel for `op` and `stores` in the variant the isa axis asks for (auto: the widest this CPU
// has); skips a variant this CPU cannot run or that does not exist.
[[nodiscard]] kc::stream_kernel select_host_kernel(infrabench::state& st, kc::stream_op op,
                                                   kc::store_kind stores) {
  kc::simd_isa isa = kc::best_simd_isa();
  if (const std::string& name = st.get_string("isa"); name != "auto") {
    const auto requested = kc::parse_simd_isa(name);
    if (!requested) st.fail("unknown isa " + name);
    if (!kc::simd_isa_supported(*requested)) st.skip("this CPU does not support " + name);
    isa = *requested;
  }
  if (isa == kc::simd_isa::scalar && stores == kc::store_kind::nontemporal) {
    st.skip("the scalar reference has no non-temporal variant");
  }
  return kc::select_stream_kernel(op, stores, isa);
}

// Fills the arrays with their initial values, each thread its own chunk, so the pages are placed
// where the thread that streams them runs (first touch).
void fill_host_arrays(infrabench::thread_pool& pool, const kc::stream_arrays& arrays,
                      std::size_t n) {
  const std::size_t threads = pool.size();
  pool.run([&](std::size_t t) {
    const auto r = thread_chunk(n, t, threads);
    std::fill(arrays.a + r.begin, arrays.a + r.end, init_a);
    std::fill(arrays.b + r.begin, arrays.b + r.end, init_b);
    std::fill(arrays.c + r.begin, arrays.c + r.end, init_c);
  });
}

// Verify every element of all three arrays: the written one holds the result, the others are
// unchanged. Each thread reports the first mismatch in its chunk; the first thread's is checked.
void verify_host_arrays(infrabench::state& st, infrabench::thread_pool& pool,
                        const kc::stream_arrays& arrays, std::size_t n, kc::stream_op op) {
  const std::size_t threads = pool.size();
  const auto expected = expected_after(op);
  std::vector<std::optional<mismatch>> found(threads);
  pool.run([&](std::size_t t) {
    const auto r = thread_chunk(n, t, threads);
    const std::array<const double*, 3> data{arrays.a, arrays.b, arrays.c};
    for (std::size_t k = 0; k < data.size(); ++k) {
      for (std::size_t i = r.begin; i < r.end; ++i) {
        if (data[k][i] != expected[k]) {
          found[t] = mismatch{i, static_cast<char>('a' + k), data[k][i], expected[k]};
          return;
        }
      }
    }
  });
  for (const auto& m : found) {
    if (!m) continue;
    st.check(false, std::string(kc::to_string(op)) + ": " + m->array + "[" +
                        std::to_string(m->index) + "]=" + std::to_string(m->value) + ", expected " +
                        std::to_string(m->expected));
    break;
  }
}

void host_memory(infrabench::state& st) {
  const auto op = kc::parse_stream_op(st.get_string("kernel"));
  const auto stores = kc::parse_store_kind(st.get_string("stores"));
  if (!op || !stores) st.fail("unknown kernel or stores value");  // the axes' choices prevent it
  const kc::stream_kernel kernel = select_host_kernel(st, *op, *stores);

  const auto n = static_cast<std::size_t>(st.get_int64("array_size")) / sizeof(double);
  infrabench::thread_pool pool(static_cast<std::size_t>(st.get_int64("threads")));
  const std::size_t threads = pool.size();
  if (threads > infrabench::allowed_cpus().size()) {
    st.add_warning(std::to_string(threads) + " threads share " +
                   std::to_string(infrabench::allowed_cpus().size()) + " CPUs");
  }

  const kc::huge_page_buffer a(n * sizeof(double)), b(n * sizeof(double)), c(n * sizeof(double));
  const kc::stream_arrays arrays{static_cast<double*>(a.data()), static_cast<double*>(b.data()),
                                 static_cast<double*>(c.data())};
  fill_host_arrays(pool, arrays, n);

  // STREAM's count: the bytes the kernel names, not the write-allocate reads of regular stores.
  const double array_bytes = static_cast<double>(n * sizeof(double));
  st.add_bytes_read(kc::stream_arrays_read(*op) * array_bytes);
  st.add_bytes_written(kc::stream_arrays_written(*op) * array_bytes);

  // Built once: pool.run takes a std::function, and the timed loop should not build one per call.
  const std::function<void(std::size_t)> run_chunk = [&](std::size_t t) {
    const auto r = thread_chunk(n, t, threads);
    kernel(arrays, scalar, r.begin, r.end);
  };
  st.exec([&] { pool.run(run_chunk); });

  verify_host_arrays(st, pool, arrays, n, *op);
}

INFRABENCH_REGISTER(host_memory, "bandwidth/host_memory")
    .describe(
        "STREAM copy/scale/add/triad on three arrays of array_size bytes over pinned threads; "
        "GB/s counted as STREAM counts (write-allocate traffic not included)")
    .produces_work(infrabench::work_kind::bytes)
    .headline("bandwidth_gbps")
    .add_string_axis("kernel", {"copy", "scale", "add", "triad"},
                     infrabench::choice_axis("copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c",
                                             {"copy", "scale", "add", "triad"}))
    .add_int64_axis(
        "array_size", {std::int64_t{256} << 20},
        infrabench::bytes_axis("bytes per array (STREAM: at least 4x the last-level cache)", 64))
    .add_int64_axis("threads", {1, 0}, infrabench::thread_count_axis("0 = all allowed CPUs"))
    .add_string_axis("stores", {"regular"},
                     infrabench::choice_axis("regular, or non-temporal (streaming) stores",
                                             {"regular", "nontemporal"}))
    .add_string_axis(
        "isa", {"auto"},
        infrabench::choice_axis("kernel variant: auto = widest vector ISA this CPU has",
                                {"auto", "scalar", "sse2", "avx2", "avx512"}))
    .memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
      for (const auto& [name, value] : cfg) {
        if (name == "array_size") {
          const auto bytes = static_cast<std::size_t>(std::get<std::int64_t>(value));
          return static_cast<std::int64_t>(3 * kc::huge_page_rounded(bytes));
        }
      }
      return 0;
    });

}  // namespace
