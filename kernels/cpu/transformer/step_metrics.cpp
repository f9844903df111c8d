#include "cpu/transformer/step_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

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

std::vector<breakdown_part> median_breakdown(const std::vector<batch_record>& batches) {
  if (batches.empty()) throw std::invalid_argument("breakdown: no timed steps");
  for (const auto& b : batches) {
    if (b.steps == 0 || !(b.sample_s > 0)) throw std::invalid_argument("breakdown: empty batch");
  }
  std::vector<std::size_t> order(batches.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return batches[a].sample_s < batches[b].sample_s;
  });
  // The middle one, or the middle two: the positions the samples' median interpolates between.
  const std::size_t n = batches.size();
  const batch_record& lo = batches[order[(n - 1) / 2]];
  const batch_record& hi = batches[order[n / 2]];
  const auto per_step = [](const batch_record& b, double phase_times::*phase) {
    return b.phases.*phase / static_cast<double>(b.steps);
  };
  const auto middle = [&](double phase_times::*phase) {
    return (per_step(lo, phase) + per_step(hi, phase)) / 2;
  };
  const double step = (lo.sample_s + hi.sample_s) / 2;
  const std::pair<const char*, double> phases[] = {{"data_wait", middle(&phase_times::data_wait)},
                                                   {"h2d", middle(&phase_times::h2d)},
                                                   {"forward", middle(&phase_times::forward)},
                                                   {"backward", middle(&phase_times::backward)},
                                                   {"allreduce", middle(&phase_times::allreduce)},
                                                   {"optimizer", middle(&phase_times::optimizer)}};
  std::vector<breakdown_part> out;
  double named = 0;
  for (const auto& [name, seconds] : phases) {
    out.push_back({name, 1e3 * seconds, 100.0 * seconds / step});
    named += seconds;
  }
  out.push_back({"other", 1e3 * (step - named), 100.0 * (step - named) / step});
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
