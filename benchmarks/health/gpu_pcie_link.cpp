// health/gpu_pcie_link: PCIe link of every GPU at its maximum generation and width (the best seen
// under load during the run); PCIe replays.
#include "common.h"
#include "infrabench/benchmark.h"

namespace {

void gpu_pcie_link(infrabench::state& st) {
  namespace h = infrabench::health;
  h::finish(st, h::judge_pcie(h::read_gpus()));
}

}  // namespace

INFRABENCH_REGISTER(gpu_pcie_link, "health/gpu_pcie_link")
    .describe(
        "PCIe link of every GPU at its maximum generation and width (the best seen under load "
        "during the run); PCIe replays")
    .require(infrabench::nvml::req_nvml);
