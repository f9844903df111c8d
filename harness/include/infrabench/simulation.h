// The simulated GPU node (docs/simulation.md): whether this process runs on one, and what the
// simulation says about the work done so far. The shim libraries of sim/ are opened by the backend
// loader only when INFRABENCH_SIM_NODE names a node file; everything here asks the loaded shim
// (through the sim query it exports), so a process without it is never simulated.
#pragma once

#include <cstdint>
#include <string>

namespace infrabench::simulation {

// The variable that asks for a simulation: the node file's path.
inline constexpr const char* node_variable = "INFRABENCH_SIM_NODE";

// Whether the user asked for a simulation (the variable is set and not empty).
[[nodiscard]] bool requested();

// Opens the shims (RTLD_GLOBAL, before the CUDA and NCCL modules, so the modules' sonames bind to
// them) from <module dir>/sim/ and has them read the node file. Called by the backend loader
// before it opens the CUDA module, only when requested(). A simulation that cannot be made (shims
// not built, a node file the shim refuses) ends the process with one line and status 2.
void load_shims();

// Whether the simulated CUDA runtime is the one this process uses.
[[nodiscard]] bool active();
// The node file the simulation was made from ("" when not active).
[[nodiscard]] std::string node_file();
// Kernel launches (and GEMMs too large to compute) that did not compute anything so far: a check
// made after one of these is of garbage, and so is not verified. 0 when not active.
[[nodiscard]] std::uint64_t noop_launches();

}  // namespace infrabench::simulation
