// Benchmark declaration and the registry that is filled at static-initialisation time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "infrabench/axis.h"
#include "infrabench/capabilities.h"

namespace infrabench {

class state;

class benchmark {
 public:
  using body_fn = std::function<void(state&)>;
  // Bytes of host memory one configuration needs; checked against MemAvailable before a run.
  using memory_fn = std::function<std::int64_t(const config&)>;

  benchmark(std::string name, body_fn body);

  benchmark& describe(std::string text);
  benchmark& require(const requirement& r);
  benchmark& add_int64_axis(std::string name, std::vector<std::int64_t> values,
                            axis_options opts = {});
  benchmark& add_float64_axis(std::string name, std::vector<double> values, axis_options opts = {});
  benchmark& add_string_axis(std::string name, std::vector<std::string> values,
                             axis_options opts = {});
  benchmark& memory_estimate(memory_fn fn);

  [[nodiscard]] const std::string& name() const { return m_name; }
  [[nodiscard]] std::string group() const;
  [[nodiscard]] const std::string& description() const { return m_description; }
  [[nodiscard]] const std::vector<requirement>& requirements() const { return m_requirements; }
  [[nodiscard]] const std::vector<axis>& axes() const { return m_axes; }
  [[nodiscard]] std::vector<axis>& axes() { return m_axes; }
  [[nodiscard]] const axis* find_axis(std::string_view name) const;
  [[nodiscard]] axis* find_axis(std::string_view name);
  [[nodiscard]] std::int64_t memory_needed(const config& cfg) const;
  // Empty when every requirement is met, else the reasons joined by "; ".
  [[nodiscard]] std::string unmet_requirements(const capabilities& caps) const;
  void run(state& st) const { m_body(st); }

 private:
  benchmark& add_axis(axis ax);

  std::string m_name;
  std::string m_description;
  body_fn m_body;
  std::vector<requirement> m_requirements;
  std::vector<axis> m_axes;
  memory_fn m_memory;
};

class registry {
 public:
  static registry& instance();
  benchmark& add(std::string name, benchmark::body_fn body);
  [[nodiscard]] const std::vector<std::unique_ptr<benchmark>>& all() const { return m_benchmarks; }
  [[nodiscard]] const benchmark* find(std::string_view name) const;

 private:
  std::vector<std::unique_ptr<benchmark>> m_benchmarks;
};

}  // namespace infrabench

#define INFRABENCH_CONCAT_INNER(a, b) a##b
#define INFRABENCH_CONCAT(a, b) INFRABENCH_CONCAT_INNER(a, b)
// INFRABENCH_REGISTER(fn, "group/name").describe("...").add_int64_axis(...);
#define INFRABENCH_REGISTER(fn, name)                                 \
  [[maybe_unused]] static ::infrabench::benchmark& INFRABENCH_CONCAT( \
      infrabench_registered_, __LINE__) = ::infrabench::registry::instance().add(name, fn)
