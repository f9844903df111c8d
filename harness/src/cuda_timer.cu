#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "infrabench/cuda_timer.h"

namespace infrabench {
namespace {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc) + " (" +
                           cudaGetErrorName(rc) + ")");
}

}  // namespace

cuda_event_timer::cuda_event_timer(void* stream) : m_stream(stream) {
  cudaEvent_t a = nullptr, b = nullptr;
  check_cuda(cudaEventCreate(&a), "cudaEventCreate");
  if (cudaError_t rc = cudaEventCreate(&b); rc != cudaSuccess) {
    cudaEventDestroy(a);
    check_cuda(rc, "cudaEventCreate");
  }
  m_start = a;
  m_stop = b;
}

cuda_event_timer::~cuda_event_timer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(m_start));
  cudaEventDestroy(static_cast<cudaEvent_t>(m_stop));
}

void cuda_event_timer::start() {
  check_cuda(
      cudaEventRecord(static_cast<cudaEvent_t>(m_start), static_cast<cudaStream_t>(m_stream)),
      "cudaEventRecord");
}

void cuda_event_timer::stop() {
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(m_stop), static_cast<cudaStream_t>(m_stream)),
             "cudaEventRecord");
}

double cuda_event_timer::seconds() {
  check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(m_stop)), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(m_start),
                                  static_cast<cudaEvent_t>(m_stop)),
             "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace infrabench
