// Our kernels that the simulated runtime runs on the CPU: the ones that move or check data
// (pattern fill, checksum, SM copies), so copy benchmarks verify for real in the simulation. Every
// other kernel is a counted no-op (cudart_shim.cpp), and what it computes is not verified.
#pragma once

namespace infrabench::sim {

// Runs the kernel whose device symbol is `mangled` on the CPU with the launch's arguments; false
// when it is not one emulated here.
bool emulate_kernel(const char* mangled, void** args);

}  // namespace infrabench::sim
