// The fuzz targets' simulation: never active (the real one, harness/src/simulation.cpp, loads the
// simulated GPU node's shims; a report written by the fuzzed code names no simulated node).
#include "infrabench/simulation.h"

namespace infrabench::simulation {

bool active() {
  return false;
}
std::string node_file() {
  return {};
}

}  // namespace infrabench::simulation
