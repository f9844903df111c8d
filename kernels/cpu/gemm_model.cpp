#include "cpu/gemm_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>

namespace infrabench::kernels::gemm_model {
namespace {

[[nodiscard]] std::int64_t parse_dim(std::string_view text, std::string_view whole) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
    throw std::invalid_argument("shape '" + std::string(whole) +
                                "': expected N, MxNxK or a model layer such as llama3-8b.mlp_up");
  }
  if (ec == std::errc::result_out_of_range || v > max_gemm_dim) {
    throw std::invalid_argument("shape '" + std::string(whole) + "': dimension " +
                                std::string(text) + " is above " + std::to_string(max_gemm_dim) +
                                " (BLAS sizes are 32-bit)");
  }
  if (v <= 0) {
    throw std::invalid_argument("shape '" + std::string(whole) + "': dimension " +
                                std::string(text) + " must be positive");
  }
  return v;
}

[[nodiscard]] std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::numeric_limits<std::int64_t>::max();
  return r;
}

[[nodiscard]] std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

// ---- shapes
// --------------------------------------------------------------------------------------

const std::vector<transformer_model>& transformer_models() {
  // Published configurations (Hugging Face config.json of each model).
  static const std::vector<transformer_model> models = {
      {"llama2-7b", 4096, 11008, 32, 32},
      {"llama3-8b", 4096, 14336, 32, 8},
      {"llama2-13b", 5120, 13824, 40, 40},
      {"llama3-70b", 8192, 28672, 64, 8},
  };
  return models;
}

const std::vector<std::string_view>& transformer_layers() {
  static const std::vector<std::string_view> layers = {"qkv", "attn_out", "mlp_up", "mlp_down"};
  return layers;
}

gemm_shape parse_gemm_shape(std::string_view text) {
  if (text.empty()) throw std::invalid_argument("shape: empty value");
  // A model layer: "<model>.<layer>[@tokens]".
  if (const auto dot = text.find('.'); dot != std::string_view::npos) {
    const std::string_view model_name = text.substr(0, dot);
    std::string_view layer = text.substr(dot + 1);
    std::int64_t tokens = default_tokens;
    if (const auto at = layer.find('@'); at != std::string_view::npos) {
      tokens = parse_dim(layer.substr(at + 1), text);
      layer = layer.substr(0, at);
    }
    const transformer_model* model = nullptr;
    for (const auto& m : transformer_models()) {
      if (m.name == model_name) model = &m;
    }
    if (model == nullptr) {
      std::string known;
      for (const auto& m : transformer_models())
        known += (known.empty() ? "" : ", ") + std::string(m.name);
      throw std::invalid_argument("shape '" + std::string(text) + "': unknown model '" +
                                  std::string(model_name) + "' (known: " + known + ")");
    }
    const std::int64_t head_dim = model->hidden / model->heads;
    if (layer == "qkv")
      return {tokens, model->hidden + 2 * model->kv_heads * head_dim, model->hidden};
    if (layer == "attn_out") return {tokens, model->hidden, model->hidden};
    if (layer == "mlp_up") return {tokens, model->ffn, model->hidden};
    if (layer == "mlp_down") return {tokens, model->hidden, model->ffn};
    throw std::invalid_argument("shape '" + std::string(text) + "': unknown layer '" +
                                std::string(layer) + "' (known: qkv, attn_out, mlp_up, mlp_down)");
  }
  const auto x1 = text.find('x');
  if (x1 == std::string_view::npos) {
    const std::int64_t n = parse_dim(text, text);
    return {n, n, n};
  }
  const auto x2 = text.find('x', x1 + 1);
  if (x2 == std::string_view::npos || text.find('x', x2 + 1) != std::string_view::npos) {
    throw std::invalid_argument("shape '" + std::string(text) +
                                "': expected N, MxNxK or a model layer such as llama3-8b.mlp_up");
  }
  return {parse_dim(text.substr(0, x1), text), parse_dim(text.substr(x1 + 1, x2 - x1 - 1), text),
          parse_dim(text.substr(x2 + 1), text)};
}

std::vector<std::string> square_sweep_shapes() {
  return {"256", "512", "1024", "2048", "4096"};
}

std::vector<std::string> transformer_shapes() {
  std::vector<std::string> out;
  for (const auto& m : transformer_models()) {
    for (const auto layer : transformer_layers()) {
      out.push_back(std::string(m.name) + "." + std::string(layer));
    }
  }
  return out;
}

double gemm_flops(const gemm_shape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::numeric_limits<std::int64_t>::max();
  return r;
}

std::int64_t gemm_operand_bytes(const gemm_shape& s, int a_elem, int b_elem, int c_elem) {
  const std::int64_t a = saturating_mul(saturating_mul(s.m, s.k), a_elem);
  const std::int64_t b = saturating_mul(saturating_mul(s.k, s.n), b_elem);
  const std::int64_t c = saturating_mul(saturating_mul(s.m, s.n), c_elem);
  return saturating_add(saturating_add(a, b), c);
}

// ---- number formats and tolerances -----------------------------------------------------------

std::string_view to_string(number_format f) {
  switch (f) {
    case number_format::fp64:
      return "fp64";
    case number_format::fp32:
      return "fp32";
    case number_format::tf32:
      return "tf32";
    case number_format::fp16:
      return "fp16";
    case number_format::bf16:
      return "bf16";
    case number_format::fp8_e4m3:
      return "fp8_e4m3";
    case number_format::fp8_e5m2:
      return "fp8_e5m2";
  }
  return "?";
}

double unit_roundoff(number_format f) {
  switch (f) {
    case number_format::fp64:
      return std::ldexp(1.0, -53);
    case number_format::fp32:
      return std::ldexp(1.0, -24);
    case number_format::tf32:  // 10 explicit mantissa bits, like fp16
    case number_format::fp16:
      return std::ldexp(1.0, -11);
    case number_format::bf16:
      return std::ldexp(1.0, -8);
    case number_format::fp8_e4m3:
      return std::ldexp(1.0, -4);
    case number_format::fp8_e5m2:
      return std::ldexp(1.0, -3);
  }
  return 1.0;
}

namespace {
// Smallest positive subnormal of a format: results below it round to zero, so no relative bound
// can hold there.
[[nodiscard]] double min_subnormal(number_format f) {
  switch (f) {
    case number_format::fp64:
    case number_format::fp32:
    case number_format::tf32:
    case number_format::bf16:
      return 1e-30;  // below anything a GEMM of O(1) inputs produces
    case number_format::fp16:
      return std::ldexp(1.0, -24);
    case number_format::fp8_e4m3:
      return std::ldexp(1.0, -9);
    case number_format::fp8_e5m2:
      return std::ldexp(1.0, -16);
  }
  return 1e-30;
}
// Beyond this, the worst-case accumulation bound is too loose to tell a wrong result from a
// right one for mean-zero inputs (|C| grows like sqrt(k), sum |ab| like k).
constexpr double loose_bound = 1e-2;
// Probabilistic bound's lambda (Higham & Mary 2019): the bound fails with probability below
// 2 exp(-lambda^2 / 2) per entry for independent rounding errors.
constexpr double lambda = 8.0;
}  // namespace

tolerance gemm_tolerance(const precision_spec& spec, std::int64_t k) {
  tolerance t;
  const double kk = static_cast<double>(std::max<std::int64_t>(k, 1));
  double input = 0;
  if (spec.compute != spec.stored) {
    const double u = unit_roundoff(spec.compute);
    input = 2 * u + u * u;  // each product's two rounded factors
  }
  const double ua = spec.accumulate_factor * unit_roundoff(spec.accumulate);
  double accum = kk * ua < 0.5 ? kk * ua / (1 - kk * ua) : 1.0;  // gamma_k
  std::string accum_rule = "gamma_k = k u/(1-k u)";
  if (accum > loose_bound) {
    accum = lambda * std::sqrt(kk) * ua;
    accum_rule = "probabilistic 8 sqrt(k) u (worst case too loose)";
  }
  t.rel = input + accum;
  const double uo = spec.output == spec.accumulate ? 0.0 : unit_roundoff(spec.output);
  t.rel_value = uo;
  t.abs_floor = std::max(min_subnormal(spec.output), kk * 1e-30);
  t.rule = "|err| <= (" + fmt("%.3g", input) + " input + " + fmt("%.3g", accum) + " " + accum_rule +
           ", u_acc " + fmt("%.3g", ua) + ") sum|ab| + " + fmt("%.3g", uo) + " |ref| (output " +
           std::string(to_string(spec.output)) + ")";
  return t;
}

// ---- the comparator ----------------------------------------------------------------------------

double tolerance::bound(const sampled_entry& e) const {
  return rel * e.abs_sum + rel_value * std::fabs(e.reference) + abs_floor;
}

verification verify_entries(const std::vector<sampled_entry>& entries, const tolerance& tol) {
  verification v;
  v.tol = tol;
  for (const auto& e : entries) {
    ++v.checked;
    const double err = std::fabs(e.value - e.reference);
    const double bound = tol.bound(e);
    const bool finite_ref = std::isfinite(e.reference);
    const bool bad_value = !std::isfinite(e.value) && finite_ref;
    const double ratio = bad_value ? std::numeric_limits<double>::infinity() : err / bound;
    if (bad_value) ++v.nonfinite;
    if (bad_value || !(ratio <= 1.0)) {
      ++v.failed;
      v.ok = false;
    }
    if (v.checked == 1 || ratio > v.max_bound_ratio || std::isnan(ratio)) {
      v.max_bound_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
      v.worst = e;
    }
    if (std::isfinite(err)) v.max_abs_err = std::max(v.max_abs_err, err);
  }
  return v;
}

std::string verification::summary() const {
  if (checked == 0) return "no entries checked";
  std::string s = "max |err| " + fmt("%.3g", max_abs_err) + "; worst C[" + std::to_string(worst.i) +
                  "][" + std::to_string(worst.j) + "] = " + fmt("%.9g", worst.value) + " vs fp64 " +
                  fmt("%.9g", worst.reference) + ", bound " + fmt("%.3g", tol.bound(worst)) + " (" +
                  fmt("%.3g", max_bound_ratio) + "x)";
  if (failed > 0) {
    s += ": " + std::to_string(failed) + " of " + std::to_string(checked) +
         " sampled entries beyond the bound";
    if (nonfinite > 0) s += ", " + std::to_string(nonfinite) + " not finite";
  } else {
    s += ": all " + std::to_string(checked) + " sampled entries within it";
  }
  return s;
}

std::vector<position> sample_positions(std::int64_t m, std::int64_t n, std::int64_t count,
                                       std::uint64_t seed) {
  std::vector<position> out;
  if (m <= 0 || n <= 0 || count <= 0) return out;
  const double total = static_cast<double>(m) * static_cast<double>(n);
  if (total <= static_cast<double>(count)) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) out.push_back({i, j});
    }
    return out;
  }
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  const auto add = [&](std::int64_t i, std::int64_t j) {
    if (static_cast<std::int64_t>(out.size()) >= count) return;
    if (seen.insert({i, j}).second) out.push_back({i, j});
  };
  add(0, 0);
  add(0, n - 1);
  add(m - 1, 0);
  add(m - 1, n - 1);
  add(m / 2, n / 2);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> row(0, m - 1), col(0, n - 1);
  for (int e = 0; e < 8; ++e) {
    add(m - 1, col(rng));
    add(row(rng), n - 1);
  }
  while (static_cast<std::int64_t>(out.size()) < count) add(row(rng), col(rng));
  return out;
}

// ---- GPU peak table
// ------------------------------------------------------------------------------

std::optional<double> gpu_ops_per_clock_per_sm(int major, int minor, gpu_dtype dtype) {
  return hardware::ops_per_clock_per_sm(major, minor, dtype);
}

std::optional<double> gpu_peak_tflops(int major, int minor, gpu_dtype dtype, int sm_count,
                                      double clock_mhz) {
  return hardware::peak_at_clock_tflops(major, minor, dtype, sm_count, clock_mhz);
}

const std::vector<gpu_arch>& gpu_arch_table() {
  static const std::vector<gpu_arch> archs = [] {
    std::vector<gpu_arch> v;
    for (const auto& r : hardware::gpu_arch_table()) v.push_back({r.major, r.minor, r.family});
    return v;
  }();
  return archs;
}

}  // namespace infrabench::kernels::gemm_model

namespace infrabench::kernels::gemm_model {
namespace {

[[nodiscard]] std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

[[nodiscard]] std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

int gpu_gemm_min_cc(gpu_dtype dtype) {
  switch (dtype) {
    case gpu_dtype::fp64:
    case gpu_dtype::fp32:
      return 0;
    case gpu_dtype::fp16:
      return 70;
    case gpu_dtype::int8:
      return 75;
    case gpu_dtype::tf32:
    case gpu_dtype::bf16:
      return 80;
    case gpu_dtype::fp8:
      return 89;
  }
  return 0;
}

std::string gpu_gemm_skip_reason(const gpu_device& dev, const gpu_gemm_need& need) {
  const int cc = dev.major * 10 + dev.minor;
  const int min_cc = gpu_gemm_min_cc(need.dtype);
  if (cc < min_cc) {
    return need.dtype_name + " needs compute capability " + std::to_string(min_cc / 10) + "." +
           std::to_string(min_cc % 10) + "+; " + dev.name + " is " + std::to_string(dev.major) +
           "." + std::to_string(dev.minor);
  }
  const std::int64_t bytes = saturating_add(
      gemm_operand_bytes(need.shape, need.ab_elem_bytes, need.ab_elem_bytes, need.c_elem_bytes),
      std::max<std::int64_t>(need.extra_bytes, 0));
  if (bytes > dev.free_bytes) {
    return "needs " + gib(static_cast<double>(bytes)) + " of GPU memory; " +
           gib(static_cast<double>(std::max<std::int64_t>(dev.free_bytes, 0))) + " free on " +
           dev.name;
  }
  return "";
}

std::string implausible_reference_reason(double gflops, double flops, double peak_gflops,
                                         double one_thread_gflops, std::int64_t threads) {
  if (!(gflops > 0)) return "";  // nothing measured: not this rule's business
  if (flops < reference_min_flops) return "";
  if (peak_gflops > 0 && gflops < reference_min_fraction_of_peak * peak_gflops) {
    return "implausibly slow reference: median " + fixed(gflops, 1) + " GFLOP/s is " +
           fixed(100.0 * gflops / peak_gflops, 1) + "% of the measured FMA peak " +
           fixed(peak_gflops, 1) + " GFLOP/s (below " +
           fixed(100.0 * reference_min_fraction_of_peak, 0) +
           "%): the library was not at its best (threads starved or descheduled)";
  }
  if (threads != 1 && one_thread_gflops > 0 &&
      gflops < reference_min_fraction_of_one_thread * one_thread_gflops) {
    return "implausibly slow reference: median " + fixed(gflops, 1) + " GFLOP/s on " +
           std::to_string(threads) + " threads is below " +
           fixed(100.0 * reference_min_fraction_of_one_thread, 0) +
           "% of its own 1-thread result " + fixed(one_thread_gflops, 1) +
           " GFLOP/s: the library was not at its best (threads starved or descheduled)";
  }
  return "";
}

}  // namespace infrabench::kernels::gemm_model
