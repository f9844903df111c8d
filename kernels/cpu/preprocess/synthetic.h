// Deterministic synthetic photographs for the preprocessing benchmarks and tests: smooth
// gradients, filled shapes with soft shading, a textured patch and sensor-like noise, so resize
// and JPEG see structure (edges, flat areas, detail) rather than white noise.
#pragma once

#include <cstdint>

#include "cpu/preprocess/preprocess.h"

namespace infrabench::kernels::cpu::preprocess {

// Fills `img` from `seed`: the same seed and size give the same pixels.
void fill_synthetic(const image_span& img, std::uint64_t seed);

}  // namespace infrabench::kernels::cpu::preprocess
