// bandwidth/memory_latency: load-to-use latency of each level of the memory hierarchy, from a
// chain of dependent loads through a random cycle over working_set bytes (lmbench's lat_mem_rd
// idea, with a random rather than strided order so the prefetchers cannot follow).
#include <pthread.h>
#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cpu/huge_page_buffer.h"
#include "cpu/pointer_chase.h"
#include "infrabench/benchmark.h"
#include "infrabench/state.h"
#include "infrabench/thread_pool.h"

namespace {

namespace kc = infrabench::kernels::cpu;

// Loads per timed call: ~0.3 ms when every load hits L1 (~1 ns; the harness batches such calls
// into samples of at least 1 ms, far above the clock's resolution) and ~45 ms in DRAM, so even a
// 0.2 s sampling budget gets the five samples the stopping rule needs. A million loads would take
// ~0.2 s per call in DRAM and make the quick suite wait on too few, too long samples.
constexpr std::uint64_t loads_per_call = std::uint64_t{1} << 18;

// Pins the calling thread to one CPU for its lifetime and then restores its affinity. The chain is
// built (first touch: its NUMA node) and chased on the same CPU, so the latency is local-node
// latency and a migration cannot leave a cache-sized chain behind in another core's L1/L2. The
// benchmark thread does this itself rather than through a thread pool: waking a worker costs
// microseconds per call, a visible share of a 1 ms L1 measurement.
class scoped_pin {
 public:
  explicit scoped_pin(int cpu) {
    m_saved_ok = pthread_getaffinity_np(pthread_self(), sizeof(m_saved), &m_saved) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    m_pinned = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
  }
  ~scoped_pin() {
    if (m_pinned && m_saved_ok) pthread_setaffinity_np(pthread_self(), sizeof(m_saved), &m_saved);
  }
  scoped_pin(const scoped_pin&) = delete;
  scoped_pin& operator=(const scoped_pin&) = delete;
  [[nodiscard]] bool pinned() const { return m_pinned; }

 private:
  cpu_set_t m_saved{};
  bool m_saved_ok = false;
  bool m_pinned = false;
};

[[nodiscard]] std::size_t slots_for(std::int64_t working_set) {
  return static_cast<std::size_t>(working_set) / sizeof(kc::chase_slot);
}

void memory_latency(infrabench::state& st) {
  const std::size_t slots = slots_for(st.get_int64("working_set"));
  const auto seed = static_cast<std::uint64_t>(st.get_int64("seed"));

  const scoped_pin pin(infrabench::allowed_cpus().front());
  if (!pin.pinned()) st.add_warning("could not pin the benchmark thread; it may migrate");

  const kc::huge_page_buffer buffer(slots * sizeof(kc::chase_slot));
  const std::span chain(static_cast<kc::chase_slot*>(buffer.data()), slots);
  kc::build_chase_cycle(chain, seed);
  // Also the warm-up for cache-sized chains: it loads every line once.
  st.check(kc::is_single_cycle(chain),
           "the chain is not one cycle through all " + std::to_string(slots) + " slots");

  st.add_items(static_cast<double>(loads_per_call), "load");
  // Each call continues where the last one stopped, so large chains are walked along rather than
  // over the same first 2^18 slots again.
  const kc::chase_slot* at = chain.data();
  st.exec([&] { at = kc::chase(at, loads_per_call); });
  // Using the end point keeps the loads observable; it must still be inside the chain.
  st.check(std::less_equal<>{}(chain.data(), at) && std::less<>{}(at, chain.data() + slots),
           "the chase left the buffer");
}

INFRABENCH_REGISTER(memory_latency, "bandwidth/memory_latency")
    .describe(
        "dependent loads through a random cycle of 64-byte lines over working_set bytes "
        "(2 MiB pages where THP allows): ns per load at each cache level and in DRAM")
    .produces_items("load")
    .headline("ns_per_load")
    .add_int64_axis("working_set",
                    {std::int64_t{16} << 10, std::int64_t{64} << 10, std::int64_t{256} << 10,
                     std::int64_t{1} << 20, std::int64_t{4} << 20, std::int64_t{16} << 20,
                     std::int64_t{64} << 20, std::int64_t{256} << 20, std::int64_t{1} << 30},
                    infrabench::bytes_axis("bytes the chain covers, in 64-byte lines", 64))
    .add_int64_axis("seed", {1},
                    infrabench::int_axis("seed of the random cycle (std::mt19937_64)", 0))
    .memory_estimate([](const infrabench::config& cfg) -> std::int64_t {
      for (const auto& [name, value] : cfg) {
        if (name == "working_set") {
          const std::size_t slots = slots_for(std::get<std::int64_t>(value));
          // The buffer, plus the 32-bit index per slot that building the cycle needs.
          return static_cast<std::int64_t>(kc::huge_page_rounded(slots * sizeof(kc::chase_slot)) +
                                           slots * sizeof(std::uint32_t));
        }
      }
      return 0;
    });

}  // namespace
