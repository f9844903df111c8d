// The fuzz targets link reports/src/node_verdicts.cpp, which asks whether a benchmark this build
// registered needs CUDA or NCCL, by the requirements' names, and harness/src/benchmark.cpp for
// the (empty) registry. The fuzz build has no benchmarks and none of harness/src/capabilities.cpp's
// probes: the two requirements exist by name only, and a requirement is never checked.
#include "infrabench/capabilities.h"

namespace infrabench {
namespace req {
const requirement cuda{"cuda", nullptr, nullptr};
const requirement nccl{"nccl", nullptr, nullptr};
}  // namespace req

coded_reason requirement::unmet(const capabilities&) const {
  return {reason_code::unsupported, std::string(name) + ": not checked in the fuzz build"};
}
}  // namespace infrabench
