// nvbandwidth's many-to-one test patterns as plans: which copies one cell of the result runs at
// once, which GPU issues each (whose copy engine or kernel does the work), and which of them the
// cell's figure counts. host_to_all / all_to_host measure one GPU's link to the host while every
// other GPU loads the host too (two GPUs behind one PCIe switch uplink show as half the
// bandwidth each); all_to_one / one_to_all move data between one GPU and all its peers at once
// and count the total. The *_bidirectional host patterns measure one GPU's direction while its
// own reverse direction and both directions of every other GPU load the links (nvbandwidth's
// host_to_all_bidirectional / all_to_host_bidirectional). Pure logic, unit-tested without a GPU;
// the benchmarks (benchmarks/bandwidth/gpu_patterns.cpp) turn a plan into streams and copies.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infrabench::kernels::topology {

enum class traffic_pattern {
  host_to_all,
  all_to_host,
  all_to_one,
  one_to_all,
  host_to_all_bidirectional,
  all_to_host_bidirectional,
};
[[nodiscard]] std::string_view to_string(traffic_pattern p);
[[nodiscard]] std::optional<traffic_pattern> parse_traffic_pattern(std::string_view name);

// Between GPUs: `write` has the sending GPU push (its copy engine or kernel), `read` has the
// receiving GPU pull. Host patterns are always issued by the GPU.
enum class traffic_access { write, read };

// A copy's end: host memory (`index` = NUMA node) or a GPU (`index` = device).
struct traffic_end {
  bool host = false;
  int index = 0;
  friend bool operator==(const traffic_end&, const traffic_end&) = default;
};

struct planned_copy {
  traffic_end src, dst;
  int issuer = 0;        // the GPU whose stream runs the copy
  bool counted = false;  // in the cell's figure (else: load on the shared links only)
  // Bytes moved, in units of the configuration's size: 2 for the load of the bidirectional
  // patterns, so it still runs when the measured copy ends (nvbandwidth's interference size).
  int size_factor = 1;
  friend bool operator==(const planned_copy&, const planned_copy&) = default;
};

// The copies of the cell for GPU `target` among `gpus` (the devices taking part, `target`
// included); `node`: the host memory's NUMA node. `peer_ok(a, b)`: whether GPU a can reach GPU
// b's memory (peer access); peers that cannot are left out of all_to_one / one_to_all (the
// result warns about them). Empty when `target` is not among `gpus`.
[[nodiscard]] std::vector<planned_copy> plan_cell(
    traffic_pattern p, traffic_access a, int target, const std::vector<int>& gpus, int node,
    const std::function<bool(int, int)>& peer_ok = {});

// Why the pattern cannot run with `gpu_count` GPUs ("host_to_all needs at least 2 GPUs: with one
// there is no other GPU to load the host; this machine has 1 CUDA device (bandwidth/h2d measures
// one GPU alone)"), or empty.
[[nodiscard]] std::string pattern_skip_reason(traffic_pattern p, int gpu_count);

// Bytes the cell's figure counts per operation: `size` x size_factor per counted copy.
[[nodiscard]] double counted_bytes(const std::vector<planned_copy>& plan, double size);
// How many of the plan's copies GPU `issuer` runs at once (its SM copy kernels share its SMs).
[[nodiscard]] int copies_issued_by(const std::vector<planned_copy>& plan, int issuer);
// Device memory the plan needs on GPU `gpu`, in units of the size: every copy end on it.
[[nodiscard]] int size_units_on(const std::vector<planned_copy>& plan, int gpu);

// The GPUs whose streams a plan uses, the issuer of the first counted copy first (its stream is
// the one the harness holds and brackets).
[[nodiscard]] std::vector<int> issuers(const std::vector<planned_copy>& plan);

// "GPU 1 -> GPU 0, GPU 2 -> GPU 0 (each pushed by its source), all at once": for method texts.
[[nodiscard]] std::string describe_plan(const std::vector<planned_copy>& plan);

}  // namespace infrabench::kernels::topology
