// cuBLAS and cuBLASLt, opened by the CUDA module the first time it calls them (cublas_loader.cpp)
// rather than with the module.
#pragma once

#include <string>

namespace infrabench::detail {

// Opens both libraries, once (later calls return the first answer): empty when they opened,
// else the dynamic loader's reason ("libcublasLt.so.13: cannot open shared object file: ...").
[[nodiscard]] const std::string& cublas_load_error();

}  // namespace infrabench::detail
