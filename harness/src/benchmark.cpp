#include "infrabench/benchmark.h"

#include <algorithm>

#include "infrabench/error.h"

namespace infrabench {

benchmark::benchmark(std::string name, body_fn body)
    : m_name(std::move(name)), m_body(std::move(body)) {}

benchmark& benchmark::describe(std::string text) {
  m_description = std::move(text);
  return *this;
}

benchmark& benchmark::require(const requirement& r) {
  m_requirements.push_back(r);
  return *this;
}

benchmark& benchmark::add_axis(axis ax) {
  if (find_axis(ax.name))
    throw std::logic_error(m_name + ": axis '" + ax.name + "' declared twice");
  // Defaults are validated like user input so a wrong default fails loudly at start-up.
  for (const auto& v : ax.values) validate_axis_value(ax, v);
  m_axes.push_back(std::move(ax));
  return *this;
}

benchmark& benchmark::add_int64_axis(std::string name, std::vector<std::int64_t> values,
                                     axis_options opts) {
  axis ax{std::move(name), axis_kind::int64, {}, std::move(opts)};
  for (auto v : values) ax.values.emplace_back(v);
  return add_axis(std::move(ax));
}

benchmark& benchmark::add_float64_axis(std::string name, std::vector<double> values,
                                       axis_options opts) {
  axis ax{std::move(name), axis_kind::float64, {}, std::move(opts)};
  for (auto v : values) ax.values.emplace_back(v);
  return add_axis(std::move(ax));
}

benchmark& benchmark::add_string_axis(std::string name, std::vector<std::string> values,
                                      axis_options opts) {
  axis ax{std::move(name), axis_kind::string, {}, std::move(opts)};
  for (auto& v : values) ax.values.emplace_back(std::move(v));
  return add_axis(std::move(ax));
}

benchmark& benchmark::add_metric_decl(metric_decl d) {
  for (const auto& m : m_metrics) {
    if (m.name == d.name)
      throw std::logic_error(m_name + ": metric '" + d.name + "' declared twice");
  }
  if (d.kind == metric_kind::unspecified) d.kind = kind_for_unit(d.unit, d.role);
  m_metrics.push_back(std::move(d));
  return *this;
}

benchmark& benchmark::produces(std::string name, std::string unit, better direction,
                               metric_role role) {
  return add_metric_decl({std::move(name), std::move(unit), direction, role, false});
}

benchmark& benchmark::produces(std::vector<metric_decl> decls) {
  for (auto& d : decls) {
    const bool headline_too = d.headline;
    d.headline = false;
    const std::string name = d.name;
    add_metric_decl(std::move(d));
    if (headline_too) headline(name);
  }
  return *this;
}

benchmark& benchmark::produces_work(work_kind kind) {
  return add_metric_decl(derived_metric(kind));
}

benchmark& benchmark::produces_items(std::string item) {
  for (auto& d : derived_item_metrics(item)) add_metric_decl(std::move(d));
  return *this;
}

benchmark& benchmark::headline(std::string_view name) {
  if (headline())
    throw std::logic_error(m_name + ": a second headline metric '" + std::string(name) + "'");
  for (auto& m : m_metrics) {
    if (m.name == name) {
      m.headline = true;
      return *this;
    }
  }
  throw std::logic_error(m_name + ": headline '" + std::string(name) + "' is not declared");
}

benchmark& benchmark::relate(std::string_view name, relation_kind kind, std::string of) {
  for (auto& m : m_metrics) {
    if (m.name == name) {
      m.relation = {kind, std::move(of)};
      return *this;
    }
  }
  throw std::logic_error(m_name + ": relation for undeclared metric '" + std::string(name) + "'");
}

benchmark& benchmark::cells(std::string_view name, cell_kind kind) {
  for (auto& m : m_metrics) {
    if (m.name == name && m.is_family()) {
      m.cell = kind;
      return *this;
    }
  }
  throw std::logic_error(m_name + ": cells of undeclared family '" + std::string(name) + "'");
}

benchmark& benchmark::measures(data_hop hop) {
  for (auto& m : m_metrics) {
    if (m.headline) {
      m.hop = hop;
      return *this;
    }
  }
  throw std::logic_error(m_name + ": measures(" + std::string(to_string(hop)) +
                         ") before a headline is declared");
}

benchmark& benchmark::phase(std::string_view name, data_hop hop) {
  for (auto& m : m_metrics) {
    if (m.name == name && !m.headline) {
      m.hop = hop;
      return *this;
    }
  }
  throw std::logic_error(m_name + ": phase of undeclared (or headline) metric '" +
                         std::string(name) + "'");
}

benchmark& benchmark::presents(collective_layout layout) {
  // Every axis and metric it names must be declared before (a programming error otherwise,
  // caught by every test that starts the binary).
  for (const std::string* axis_name :
       {&layout.size_axis, &layout.type_axis, &layout.op_axis, &layout.placement_axis}) {
    if (!axis_name->empty() && find_axis(*axis_name) == nullptr)
      throw std::logic_error(m_name + ": collective layout names no axis '" + *axis_name + "'");
  }
  for (const std::string* metric :
       {&layout.time_metric, &layout.algbw_metric, &layout.busbw_metric}) {
    if (find_declaration(m_metrics, *metric) == nullptr)
      throw std::logic_error(m_name + ": collective layout names no metric '" + *metric + "'");
  }
  m_collective = std::move(layout);
  return *this;
}

const metric_decl* benchmark::headline() const {
  for (const auto& m : m_metrics) {
    if (m.headline) return &m;
  }
  return nullptr;
}

benchmark& benchmark::memory_estimate(memory_fn fn) {
  m_memory = std::move(fn);
  return *this;
}

benchmark& benchmark::scope(rank_scope s) {
  m_scope = s;
  return *this;
}

benchmark& benchmark::min_ranks(int n) {
  if (n < 1) throw std::logic_error(m_name + ": min_ranks must be at least 1");
  m_min_ranks = n;
  return *this;
}

benchmark& benchmark::uses(std::string other) {
  if (other == m_name) throw std::logic_error(m_name + ": uses itself");
  if (std::find(m_uses.begin(), m_uses.end(), other) == m_uses.end())
    m_uses.push_back(std::move(other));
  return *this;
}

std::string_view to_string(rank_scope s) {
  switch (s) {
    case rank_scope::node:
      return "node";
    case rank_scope::every_rank:
      return "every_rank";
    case rank_scope::collective:
      return "collective";
  }
  return "?";
}

std::string benchmark::group() const {
  const auto slash = m_name.find('/');
  return slash == std::string::npos ? m_name : m_name.substr(0, slash);
}

const axis* benchmark::find_axis(std::string_view name) const {
  for (const auto& ax : m_axes) {
    if (ax.name == name) return &ax;
  }
  return nullptr;
}

axis* benchmark::find_axis(std::string_view name) {
  for (auto& ax : m_axes) {
    if (ax.name == name) return &ax;
  }
  return nullptr;
}

std::int64_t benchmark::memory_needed(const config& cfg) const {
  return m_memory ? m_memory(cfg) : 0;
}

coded_reason benchmark::unmet(const capabilities& caps) const {
  coded_reason out;
  for (const auto& r : m_requirements) {
    auto why = r.unmet(caps);
    // Requirements that fail for one cause (CUDA and NCCL without a driver) say it once.
    if (why.empty() || out.text.find(why.text) != std::string::npos) continue;
    if (out.empty()) out.code = why.code;
    out.text += (out.text.empty() ? "" : "; ") + why.text;
  }
  if (caps.world_size < m_min_ranks && out.empty()) {
    out.code = reason_code::needs_ranks;
    out.text = "needs at least " + std::to_string(m_min_ranks) + " ranks (world size " +
               std::to_string(caps.world_size) + "): launch with mpirun -np " +
               std::to_string(m_min_ranks) + " or more";
  }
  return out;
}

registry& registry::instance() {
  static registry reg;
  return reg;
}

benchmark& registry::add(std::string name, benchmark::body_fn body) {
  if (find(name)) throw std::logic_error("benchmark '" + name + "' registered twice");
  auto owned = std::make_unique<benchmark>(std::move(name), std::move(body));
  benchmark& added = *owned;
  // Keep the registry sorted so `list` and runs are in a stable order, whatever the link order.
  const auto pos =
      std::upper_bound(m_benchmarks.begin(), m_benchmarks.end(), added.name(),
                       [](const std::string& n, const auto& b) { return n < b->name(); });
  m_benchmarks.insert(pos, std::move(owned));
  return added;
}

const benchmark* registry::find(std::string_view name) const {
  for (const auto& b : m_benchmarks) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

}  // namespace infrabench
