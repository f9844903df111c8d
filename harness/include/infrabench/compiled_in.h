// Which optional backends this binary was built with. One translation unit reads the build's
// settings (compiled_in.cpp, compiled outside the unity batches): the default, cpu-only and package
// builds differ in them, and a batch holding a file that read them directly would differ too, so
// the compiler cache could not serve that batch from another build (issue 41: the cpu-only build
// recompiled nine batches for a handful of flags).
#pragma once

#include <string_view>

namespace infrabench::build {

enum class backend { io_uring, mpi, cuda, nccl, openblas, onednn, opencv };

[[nodiscard]] bool compiled_in(backend b);
// The CUDA compiler ("NVIDIA 13.0.88") and architectures ("80;90"); empty without CUDA.
[[nodiscard]] std::string_view cuda_compiler();
[[nodiscard]] std::string_view cuda_architectures();

}  // namespace infrabench::build
