// The build's backend settings (infrabench/compiled_in.h says why they are read here alone).
#include "infrabench/compiled_in.h"

#include "infrabench/build_backends.h"

namespace infrabench::build {

bool compiled_in(backend b) {
  switch (b) {
    case backend::io_uring:
      return INFRABENCH_HAS_IO_URING != 0;
    case backend::mpi:
      return INFRABENCH_HAS_MPI != 0;
    case backend::cuda:
      return INFRABENCH_HAS_CUDA != 0;
    case backend::nccl:
      return INFRABENCH_HAS_NCCL != 0;
    case backend::openblas:
      return INFRABENCH_HAS_OPENBLAS != 0;
    case backend::onednn:
      return INFRABENCH_HAS_ONEDNN != 0;
    case backend::opencv:
      return INFRABENCH_HAS_OPENCV != 0;
  }
  return false;
}

std::string_view cuda_compiler() {
  return INFRABENCH_CUDA_COMPILER;
}

std::string_view cuda_architectures() {
  return INFRABENCH_CUDA_ARCHITECTURES;
}

}  // namespace infrabench::build
