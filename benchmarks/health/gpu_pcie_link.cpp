// health/gpu_pcie_link: PCIe link of every GPU at its maximum generation and width, read while the
// check copies to every GPU itself (an idle GPU lowers its generation, so an idle reading judges
// nothing); PCIe replays.
#include "common.h"
#include "infrabench/benchmark.h"
#include "pcie_load.h"

namespace {

void gpu_pcie_link(infrabench::state& st) {
  namespace h = infrabench::health;
  const infrabench::nvml::library& lib = infrabench::nvml::library::instance();
  std::vector<h::gpu_view> gpus = h::read_gpus();
  const std::string no_load =
      h::read_links_under_load(gpus, lib, [&](const std::function<void()>& read_now) {
        const h::pcie_load_result r = h::under_pcie_load(read_now);
        h::copy_load_result out;
        out.why_not = r.why_not;
        for (const auto& bus : r.bus_ids) {
          if (const int i = lib.index_of_bus_id(bus); i >= 0) {
            out.gpus.push_back(static_cast<unsigned>(i));
          }
        }
        return out;
      });
  h::verdict v = h::judge_pcie(gpus);
  if (!no_load.empty() && v.skip.empty()) {
    v.warnings.push_back("no copy load on the GPUs while their links were read (" + no_load +
                         "): a link below its maximum is a warning, not a failure");
  }
  h::finish(st, v);
}

}  // namespace

INFRABENCH_REGISTER(gpu_pcie_link, "health/gpu_pcie_link")
    .describe(
        "PCIe link of every GPU at its maximum generation and width, read while the check copies "
        "to every GPU (an idle GPU lowers its link, so idle readings only warn); PCIe replays")
    .produces("pcie_gen_min", "generation", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("pcie_width_min", "lanes", infrabench::better::higher,
              infrabench::metric_role::verification)
    .produces("pcie_replays_max", "count", infrabench::better::lower,
              infrabench::metric_role::verification)
    .headline("pcie_gen_min")
    .require(infrabench::nvml::req_nvml);
