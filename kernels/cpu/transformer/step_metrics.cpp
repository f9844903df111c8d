#include "cpu/transformer/step_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace infrabench::kernels::transformer {

phase_times& phase_times::operator+=(const phase_times& o) {
  data_wait += o.data_wait;
  h2d += o.h2d;
  forward += o.forward;
  backward += o.backward;
  allreduce += o.allreduce;
  optimizer += o.optimizer;
  return *this;
}

double phase_times::sum() const {
  return data_wait + h2d + forward + backward + allreduce + optimizer;
}

std::vector<breakdown_part> make_breakdown(const phase_times& t, std::uint64_t steps,
                                           double wall_s) {
  if (steps == 0 || !(wall_s > 0)) {
    throw std::invalid_argument("breakdown: no timed steps");
  }
  const double n = static_cast<double>(steps);
  const std::pair<const char*, double> phases[] = {
      {"data_wait", t.data_wait}, {"h2d", t.h2d},
      {"forward", t.forward},     {"backward", t.backward},
      {"allreduce", t.allreduce}, {"optimizer", t.optimizer},
      {"other", wall_s - t.sum()}};
  std::vector<breakdown_part> out;
  for (const auto& [name, seconds] : phases) {
    out.push_back({name, 1e3 * seconds / n, 100.0 * seconds / wall_s});
  }
  return out;
}

loss_trend measure_loss_trend(const std::vector<float>& losses, std::size_t min_steps) {
  loss_trend t;
  t.window = std::max<std::size_t>(3, losses.size() / 5);
  if (losses.size() < std::max(min_steps, 2 * t.window)) return t;
  const auto mean = [&](std::size_t begin) {
    double s = 0;
    for (std::size_t i = begin; i < begin + t.window; ++i) s += losses[i];
    return s / static_cast<double>(t.window);
  };
  t.first_mean = mean(0);
  t.last_mean = mean(losses.size() - t.window);
  t.judged = true;
  t.falling = t.last_mean < t.first_mean;
  return t;
}

double loss_floor(double entropy_nats, double tokens) {
  return entropy_nats - 5.0 * 2.0 / std::sqrt(std::max(tokens, 1.0));
}

double model_flops_utilization(double flops_per_token, double tokens_per_s, double peak_flops) {
  return peak_flops > 0 ? flops_per_token * tokens_per_s / peak_flops : 0.0;
}

gradient_comparison compare_gradients(const param_layout& layout, const float* a, const float* b,
                                      double tolerance) {
  gradient_comparison out;
  out.worst.relative = -1;
  for (const auto& t : layout.tensors) {
    double diff = 0, norm = 0;
    for (std::size_t i = t.offset; i < t.offset + t.size; ++i) {
      const double d = static_cast<double>(a[i]) - b[i];
      diff += d * d;
      norm += static_cast<double>(b[i]) * b[i];
    }
    // A reference gradient of exactly zero (an unused vocabulary row block, say) is matched only
    // by zero: any difference is then an infinite relative error.
    double rel = 0;
    if (norm > 0) {
      rel = std::sqrt(diff / norm);
    } else if (diff > 0) {
      rel = INFINITY;
    }
    if (!(rel <= tolerance)) out.failed.push_back({t.name, rel});
    if (rel > out.worst.relative || std::isnan(rel)) out.worst = {t.name, rel};
  }
  return out;
}

}  // namespace infrabench::kernels::transformer
