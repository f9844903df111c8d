#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "infrabench/model/report.h"
#include "infrabench/reason.h"
#include "infrabench/report.h"
#include "infrabench/text_layout.h"
#include "infrabench/units.h"

namespace infrabench {
namespace {

std::string fixed3(double v) {
  // Three significant digits, without exponent notation for the ranges we print.
  char buf[64];
  const double a = std::fabs(v);
  if (a >= 100)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else if (a >= 10)
    std::snprintf(buf, sizeof(buf), "%.1f", v);
  else if (a >= 1)
    std::snprintf(buf, sizeof(buf), "%.2f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

std::string percent1(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", f * 100);
  return buf;
}

}  // namespace

std::string format_time(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fixed3(s * 1e9) + " ns";
  if (a < 1e-3) return fixed3(s * 1e6) + " us";
  if (a < 1) return fixed3(s * 1e3) + " ms";
  return fixed3(s) + " s";
}

std::string format_scaled(double value, const std::string& unit) {
  const double one[] = {value};
  return format_in(value, column_unit(unit, one));
}

namespace {

using model::result_view;

// Benchmarks whose every configuration was skipped for one reason: counted under the reason's code
// and text (never matched by its words), printed after the tables, one line per reason.
struct skip_group {
  reason_code code = reason_code::none;
  std::string unknown_code, text;  // unknown_code: a code this version does not know, as written
  std::size_t benchmarks = 0, configurations = 0;
  std::vector<std::string> names;  // the benchmarks, in run order (issue 45: a count named none)
};

// The benchmarks a skip line names: all of up to five, else the first four and how many more.
std::string skipped_names(const std::vector<std::string>& names) {
  constexpr std::size_t shown = 4;
  std::string out;
  for (std::size_t i = 0; i < names.size() && (names.size() <= shown + 1 || i < shown); ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > shown + 1) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

void add_skip(std::vector<skip_group>& groups, const result_view& r, std::size_t configurations) {
  auto it = std::find_if(groups.begin(), groups.end(), [&](const skip_group& g) {
    return g.code == r.reason_code && g.unknown_code == r.unknown_reason_code && g.text == r.reason;
  });
  if (it == groups.end())
    it = groups.insert(groups.end(), skip_group{r.reason_code, r.unknown_reason_code, r.reason});
  ++it->benchmarks;
  it->configurations += configurations;
  it->names.push_back(r.benchmark);
}

void print_skip_groups(std::ostream& out, const std::vector<skip_group>& groups) {
  for (const auto& g : groups) {
    std::string head = std::to_string(g.benchmarks) +
                       (g.benchmarks == 1 ? " benchmark skipped" : " benchmarks skipped");
    if (g.configurations != g.benchmarks)
      head += " (" + std::to_string(g.configurations) + " configurations)";
    const std::string text = g.text + " (" + skipped_names(g.names) + ")";
    for (const auto& line : wrap_text(text, console_width, head + ": ", "    "))
      out << line << '\n';
  }
  if (!groups.empty()) out << '\n';
}

// The axis's display form (the reader fills it in from the value when the report has none).
std::string axis_cell(const result_view& r, const std::string& axis_name) {
  const auto it = r.axes_display.find(axis_name);
  return it != r.axes_display.end() ? it->second : std::string();
}

// The axes whose value every row shares: said once above the table instead of in a column each.
std::vector<std::string> fixed_axes(const std::vector<const result_view*>& rs) {
  std::vector<std::string> fixed;
  for (const auto& axis : rs.front()->axes) {
    const std::string& axis_name = axis.first;  // not a binding: clang 14 cannot capture those
    const std::string first = axis_cell(*rs.front(), axis_name);
    const bool same = std::all_of(rs.begin(), rs.end(), [&](const result_view* r) {
      return r->axes.count(axis_name) && axis_cell(*r, axis_name) == first;
    });
    if (same) fixed.push_back(axis_name);
  }
  return fixed;
}

std::vector<std::string> metric_names_of(const std::vector<const result_view*>& rs) {
  std::vector<std::string> names;
  for (const auto* r : rs) {
    for (const auto& m : r->metrics) {
      if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    }
  }
  return names;
}

// Status, time (in the time column's unit), CI, rCV and n of one result (empty cells when it has
// no timing).
std::vector<std::string> timing_cells(const result_view& r, const shown_unit& time_unit) {
  std::string st(to_string(r.status));
  if (r.status == status::passed && !r.valid) st = "INVALID";
  if (!r.time || r.status != status::passed) return {st, "", "", "", ""};
  const auto& t = *r.time;
  return {st, format_in(t.median, time_unit),
          t.median > 0 ? percent1((t.ci95_hi - t.ci95_lo) / 2 / t.median) : "",
          percent1(t.robust_cv), std::to_string(t.n)};
}

std::vector<std::string> notes_of(const result_view& r) {
  std::vector<std::string> notes{r.reason};
  notes.insert(notes.end(), r.invalid_reasons.begin(), r.invalid_reasons.end());
  notes.insert(notes.end(), r.warnings.begin(), r.warnings.end());
  return notes;
}

// The unit each metric's column is shown in (issue 45 item 4: one per column, from its values and
// the unit the rows give; a row in another unit is shown in its own).
struct column_units {
  shown_unit time;
  std::map<std::string, std::pair<std::string, shown_unit>> metrics;  // name -> (unit, shown)
};

column_units units_of(const std::vector<const result_view*>& rs,
                      const std::vector<std::string>& metrics) {
  column_units u;
  std::vector<double> times;
  for (const auto* r : rs) {
    if (r->time && r->status == status::passed) times.push_back(r->time->median);
  }
  u.time = column_unit("s", times);
  for (const auto& mn : metrics) {
    std::string unit;
    std::vector<double> values;
    for (const auto* r : rs) {
      const auto* m = r->find_metric(mn);
      if (m == nullptr || (!values.empty() && m->unit != unit)) continue;
      unit = m->unit;
      values.push_back(m->value);
    }
    u.metrics[mn] = {unit, column_unit(unit, values)};
  }
  return u;
}

std::string metric_cell(const model::metric_view* m, const column_units& u) {
  if (m == nullptr) return "";
  const auto& [unit, shown] = u.metrics.at(m->name);
  return m->unit == unit ? format_in(m->value, shown) : format_scaled(m->value, m->unit);
}

text_table make_table(const std::vector<const result_view*>& rs,
                      const std::vector<std::string>& varying, bool show_host, footnotes& notes) {
  const auto metrics = metric_names_of(rs);
  const column_units units = units_of(rs, metrics);
  text_table t;
  if (show_host) t.header.push_back("host");
  for (const auto& a : varying) t.header.push_back(a);
  t.header.push_back("status");
  t.key_columns = t.header.size();
  t.right.assign(t.key_columns, false);
  for (std::size_t c = show_host ? 1 : 0; c + 1 < t.key_columns; ++c) t.right[c] = true;
  for (const char* h : {"time (median)", "+-CI95", "rCV", "n"}) t.header.push_back(h);
  t.header.insert(t.header.end(), metrics.begin(), metrics.end());
  t.right.resize(t.header.size(), true);
  for (const auto* r : rs) {
    std::vector<std::string> row;
    if (show_host)
      row.push_back(r->host + (r->rank ? " (rank " + std::to_string(r->rank) + ")" : ""));
    for (const auto& a : varying) row.push_back(r->axes.count(a) ? axis_cell(*r, a) : "");
    const auto timing = timing_cells(*r, units.time);
    row.insert(row.end(), timing.begin(), timing.end());
    for (const auto& mn : metrics) row.push_back(metric_cell(r->find_metric(mn), units));
    row.push_back(notes.mark(notes_of(*r)));
    t.rows.push_back(std::move(row));
  }
  t.header.push_back("notes");
  t.right.push_back(false);
  return t;
}

// Where a storage benchmark measured, once per place (its rows usually share one), above its
// table as the axes every row shares are.
void print_locations(std::ostream& out, const std::vector<const result_view*>& rs) {
  std::vector<std::string> seen;
  for (const auto* r : rs) {
    if (!r->storage) continue;
    const std::string text = describe(*r->storage);
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
    seen.push_back(text);
    for (const auto& line : wrap_text(text, console_width, "    where: ", "      ")) {
      out << line << '\n';
    }
  }
}

// One benchmark: its name, the axes every row shares, where it measured, the table, the
// footnotes.
void print_benchmark(std::ostream& out, const std::string& name,
                     const std::vector<const result_view*>& rs, bool show_host) {
  const auto fixed = fixed_axes(rs);
  std::vector<std::string> varying, shared;
  for (const auto& [axis_name, v] : rs.front()->axes) {
    if (std::find(fixed.begin(), fixed.end(), axis_name) == fixed.end())
      varying.push_back(axis_name);
    else
      shared.push_back(axis_name + "=" + axis_cell(*rs.front(), axis_name));
  }
  for (const auto& line : wrap_text(joined(shared, " "), console_width, name + "  ", "    "))
    out << line << '\n';
  print_locations(out, rs);
  footnotes notes;
  text_table t = make_table(rs, varying, show_host, notes);
  if (notes.empty()) {  // no notes: no column for them
    t.header.pop_back();
    t.right.pop_back();
    for (auto& row : t.rows) row.pop_back();
  }
  for (const auto& line : layout_table(t, console_width)) out << line << '\n';
  for (const auto& line : notes.lines(console_width)) out << line << '\n';
  out << '\n';
}

// The nccl-tests layout `bench` declares (collective_layout.h); null when it declares none.
const collective_layout* collective_of(
    const std::map<std::string, model::benchmark_meta>* benchmarks, const std::string& bench) {
  if (benchmarks == nullptr) return nullptr;
  const auto it = benchmarks->find(bench);
  return it != benchmarks->end() && it->second.collective ? &*it->second.collective : nullptr;
}

}  // namespace

void print_table(std::ostream& out, const std::vector<model::result_view>& results, bool show_host,
                 const std::map<std::string, model::benchmark_meta>* benchmarks) {
  // One block per benchmark, in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const result_view*>> groups;
  for (const auto& r : results) {
    if (!groups.count(r.benchmark)) order.push_back(r.benchmark);
    groups[r.benchmark].push_back(&r);
  }
  std::vector<skip_group> skipped;
  for (const auto& name : order) {
    const auto& rs = groups[name];
    // Every configuration skipped for one reason (no GPU, say): counted under that reason and
    // said once after the tables, not a table of skips before the results.
    const bool all_skipped_alike = std::all_of(rs.begin(), rs.end(), [&](const result_view* r) {
      return r->status == status::skipped && r->reason == rs.front()->reason &&
             r->reason_code == rs.front()->reason_code &&
             r->unknown_reason_code == rs.front()->unknown_reason_code;
    });
    const collective_layout* layout = collective_of(benchmarks, name);
    if (all_skipped_alike)
      add_skip(skipped, *rs.front(), rs.size());
    else if (layout != nullptr)
      print_collective_table(out, name, rs, *layout);
    else
      print_benchmark(out, name, rs, show_host);
  }
  print_skip_groups(out, skipped);
}

}  // namespace infrabench
