// Builds without CUDA: no GPU benchmark is compiled, so nothing reaches these; they say why if
// something does. The pure parts (clock arithmetic, the polled wait) are gpu_timing_common.cpp.
#include <stdexcept>

#include "infrabench/gpu_timing.h"
#include "infrabench/state.h"

namespace infrabench {
namespace {

[[noreturn]] void no_cuda() {
  throw std::logic_error(
      "GPU timing: infrabench was built without CUDA (INFRABENCH_WITH_CUDA=OFF)");
}

}  // namespace

struct gpu_batch_timer::impl {};

gpu_batch_timer::gpu_batch_timer(gpu_stream_ref, gpu_exec_options) {
  no_cuda();
}
gpu_batch_timer::~gpu_batch_timer() = default;
batch_timing gpu_batch_timer::run(std::int64_t, const std::function<void()>&) {
  no_cuda();
}
batch_timing gpu_batch_timer::run(std::int64_t, const std::function<void()>&,
                                  const std::function<void()>&) {
  no_cuda();
}
std::optional<double> gpu_batch_timer::last_sm_clock_mhz() const {
  no_cuda();
}
std::int64_t gpu_batch_timer::max_launches() const {
  no_cuda();
}
int gpu_batch_timer::blocking_timeouts() const {
  no_cuda();
}

void gpu_wait_polled(gpu_stream_ref, const gpu_exec_options&, std::string_view) {
  no_cuda();
}

gpu_exec_report state::exec_gpu(gpu_stream_ref, const std::function<void()>&,
                                const gpu_exec_options&) {
  no_cuda();
}

}  // namespace infrabench
