// The probe behind the harness's SM clock during a timed window (nvbench's method): one block per
// SM reads that SM's cycle counter (clock64) and the global nanosecond timer (%globaltimer). Two
// probes, one at each end of the window, give cycles / nanoseconds on the same SM: the clock the
// SMs actually ran while the work ran. NVML read after the window has the idle GPU's clock, which
// recovers as soon as a power cap lets go.
#pragma once

namespace infrabench::kernels::cuda {

// SM ids (%smid) on every GPU we build for are below this (H100: 132 SMs, ids below 144).
inline constexpr int sm_clock_slots = 1024;

// Enqueues the probe on `stream` (a cudaStream_t): `blocks` single-thread blocks (at least the
// SM count, so that the SMs each run one) write stamps[2 * smid] = clock64 and
// stamps[2 * smid + 1] = %globaltimer for ids below sm_clock_slots. `stamps` is host-mapped
// pinned memory of 2 * sm_clock_slots values, so the host reads it once the stream passed the
// probe. Returns the cudaError_t of the launch as an int.
int launch_sm_clock_probe(unsigned long long* stamps, int blocks, void* stream);

}  // namespace infrabench::kernels::cuda
