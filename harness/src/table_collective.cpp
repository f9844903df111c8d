// A collective's console table as nccl-tests prints it (issue 45 item 12), laid out from the
// benchmark's collective_layout declaration: size, count, type, redop, root, then each placement's
// time (us), algbw and busbw (GB/s) and #wrong side by side, the results' status, and the closing
// "Avg bus bandwidth" line.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "infrabench/model/report.h"
#include "infrabench/reason.h"
#include "infrabench/report.h"
#include "infrabench/text_layout.h"
#include "infrabench/units.h"

namespace infrabench {
namespace {

using model::result_view;

// One row: a configuration without its placement, and its result per side.
struct coll_row {
  std::string key;    // every axis but the placement: which row a result belongs to
  std::string sweep;  // every axis but the placement and the size: which sweep it is part of
  long long size = 0;
  std::vector<const result_view*> side;  // per side (out-of-place, in-place); null: not run
};

std::string coll_axis(const result_view& r, const std::string& axis) {
  if (axis.empty()) return "";
  const auto it = r.axes_display.find(axis);
  return it != r.axes_display.end() ? it->second : "";
}

long long coll_size(const result_view& r, const collective_layout& l) {
  const auto it = r.axes.find(l.size_axis);
  return it != r.axes.end() && it->second.is_number() ? it->second.get<long long>() : -1;
}

// The side a result is on: 1 for the in-place value of the placement axis, else 0.
std::size_t coll_side(const result_view& r, const collective_layout& l) {
  return !l.placement_axis.empty() && coll_axis(r, l.placement_axis) == l.in_place ? 1 : 0;
}

// The axes besides size, type, op and placement whose values differ between results (`varying`:
// key columns before nccl-tests' own) or that every result shares (said once above the table).
std::vector<std::string> coll_other_axes(const std::vector<const result_view*>& rs,
                                         const collective_layout& l, bool varying) {
  std::vector<std::string> out;
  for (const auto& entry : rs.front()->axes) {
    const std::string& a = entry.first;
    if (a == l.size_axis || a == l.type_axis || a == l.op_axis || a == l.placement_axis) continue;
    const std::string first = coll_axis(*rs.front(), a);
    const bool same = std::all_of(rs.begin(), rs.end(),
                                  [&](const result_view* r) { return coll_axis(*r, a) == first; });
    if (same != varying) out.push_back(a);
  }
  return out;
}

// The rows in nccl-tests' order: each sweep (the other axes, in the order they ran) by size.
std::vector<coll_row> coll_rows(const std::vector<const result_view*>& rs,
                                const collective_layout& l, std::size_t sides) {
  std::vector<coll_row> rows;
  std::vector<std::string> sweeps;
  for (const auto* r : rs) {
    std::string key, sweep;
    for (const auto& entry : r->axes) {
      if (entry.first == l.placement_axis) continue;
      key += entry.first + "=" + coll_axis(*r, entry.first) + " ";
      if (entry.first != l.size_axis) sweep += entry.first + "=" + coll_axis(*r, entry.first) + " ";
    }
    if (std::find(sweeps.begin(), sweeps.end(), sweep) == sweeps.end()) sweeps.push_back(sweep);
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const coll_row& x) { return x.key == key; });
    if (it == rows.end()) {
      it = rows.insert(rows.end(), coll_row{key, sweep, coll_size(*r, l),
                                            std::vector<const result_view*>(sides, nullptr)});
    }
    it->side[coll_side(*r, l)] = r;
  }
  auto order = [&](const coll_row& x) {
    return std::find(sweeps.begin(), sweeps.end(), x.sweep) - sweeps.begin();
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const coll_row& a, const coll_row& b) {
    return order(a) != order(b) ? order(a) < order(b) : a.size < b.size;
  });
  return rows;
}

// A number as nccl-tests prints its times and bandwidths: %.2f, but no decimals from 10,000 up and
// two significant digits under 0.1 (0.0074, not 0.01: a small message's rate is not zero).
std::string coll_value_text(double v) {
  if (!std::isfinite(v)) return significant3(v);
  char buf[48];
  const double a = std::fabs(v);
  const char* format = a >= 1e4 ? "%.0f" : a >= 0.1 || a == 0 ? "%.2f" : "%.2g";
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// A metric of `r` in `unit` (us, GB/s), as nccl-tests prints it; "" when absent, "?" when its
// unit is not of that family.
std::string coll_value(const result_view* r, const std::string& metric, std::string_view unit) {
  const auto* m = r != nullptr ? r->find_metric(metric) : nullptr;
  if (m == nullptr) return "";
  const auto v = convert_unit(m->value, m->unit, unit);
  return v ? coll_value_text(*v) : "?";
}

// #wrong: 0 for a result whose data was verified, ">0" for one that failed its verification (the
// note says how many), "-" for one that did not get that far.
std::string coll_wrong(const result_view* r) {
  if (r == nullptr) return "";
  if (r->status == status::passed) return "0";
  return r->status == status::failed && r->reason_code == reason_code::verify_failed ? ">0" : "-";
}

std::string coll_status(const result_view* r) {
  if (r == nullptr) return "-";
  if (r->status == status::passed && !r->valid) return "INVALID";
  return std::string(to_string(r->status));
}

// The sides (0 out-of-place, 1 in-place) any result is on, in that order.
std::vector<std::size_t> coll_sides(const std::vector<coll_row>& rows) {
  std::vector<std::size_t> out;
  for (std::size_t s = 0; s < 2; ++s) {
    if (std::any_of(rows.begin(), rows.end(), [&](const coll_row& x) { return x.side[s]; }))
      out.push_back(s);
  }
  return out;
}

const result_view& coll_any(const coll_row& row) {
  return row.side[0] != nullptr ? *row.side[0] : *row.side[1];
}

std::vector<std::string> coll_cells(const coll_row& row, const collective_layout& l,
                                    const std::vector<std::size_t>& sides) {
  const result_view& any = coll_any(row);
  std::vector<std::string> cells;
  const std::string type = l.type_axis.empty() ? l.default_type : coll_axis(any, l.type_axis);
  const long long count = row.size < 0 ? -1 : l.count_of(row.size, type);
  cells.push_back(coll_axis(any, l.size_axis));
  cells.push_back(count < 0 ? "-" : std::to_string(count));
  cells.push_back(type);
  cells.push_back(l.op_axis.empty() ? "none" : coll_axis(any, l.op_axis));
  cells.push_back(std::to_string(l.root));
  std::vector<std::string> status;
  for (const auto s : sides) {
    const result_view* r = row.side[s];
    cells.push_back(coll_value(r, l.time_metric, "us"));
    cells.push_back(coll_value(r, l.algbw_metric, "GB/s"));
    cells.push_back(coll_value(r, l.busbw_metric, "GB/s"));
    cells.push_back(coll_wrong(r));
    status.push_back(coll_status(r));
  }
  // One word when the sides agree ("passed"), else the side that did not pass ("ip INVALID").
  const bool agree = std::all_of(status.begin(), status.end(),
                                 [&](const std::string& x) { return x == status.front(); });
  std::vector<std::string> apart;
  for (std::size_t i = 0; i < sides.size() && !agree; ++i) {
    if (status[i] != "passed") apart.push_back((sides[i] == 0 ? "oop " : "ip ") + status[i]);
  }
  cells.push_back(agree ? status.front() : joined(apart, ", "));
  return cells;
}

text_table coll_table(const std::vector<coll_row>& rows, const collective_layout& l,
                      const std::vector<std::size_t>& sides) {
  text_table t;
  for (const char* h : {"size", "count", "type", "redop", "root"}) t.header.emplace_back(h);
  t.key_columns = t.header.size();
  t.groups.assign(t.key_columns, "");
  for (const auto s : sides) {
    const bool labelled = !l.placement_axis.empty();
    t.groups.push_back(!labelled ? "" : s == 0 ? "out-of-place" : "in-place");
    t.groups.insert(t.groups.end(), 3, "");
    for (const char* h : {"time\n(us)", "algbw\n(GB/s)", "busbw\n(GB/s)", "#wrong"})
      t.header.emplace_back(h);
  }
  t.header.emplace_back("status");
  t.groups.emplace_back();
  t.right.assign(t.header.size(), true);
  t.right.back() = false;
  for (const auto& row : rows) t.rows.push_back(coll_cells(row, l, sides));
  return t;
}

// Each result's notes (why it was skipped or failed, why INVALID, warnings) under the table,
// each line naming its row and side: "64MiB in-place: noisy: ...".
std::vector<std::string> coll_notes(const std::vector<coll_row>& rows, const collective_layout& l) {
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    for (std::size_t s = 0; s < 2; ++s) {
      const result_view* r = row.side[s];
      if (r == nullptr) continue;
      std::string label = coll_axis(*r, l.size_axis);
      if (!l.placement_axis.empty()) label += s == 0 ? " out-of-place" : " in-place";
      std::vector<std::string> notes{r->reason};
      notes.insert(notes.end(), r->invalid_reasons.begin(), r->invalid_reasons.end());
      notes.insert(notes.end(), r->warnings.begin(), r->warnings.end());
      for (const auto& n : notes) {
        if (n.empty()) continue;
        const auto wrapped = wrap_text(n, console_width, "  " + label + ": ", "      ");
        lines.insert(lines.end(), wrapped.begin(), wrapped.end());
      }
    }
  }
  return lines;
}

std::string coll_gbps(double v) {
  return coll_value_text(v) + " GB/s";
}

}  // namespace

std::vector<std::string> avg_bus_bandwidth_lines(const std::vector<const result_view*>& rs,
                                                 const collective_layout& l) {
  double valid_sum = 0, all_sum = 0;
  std::size_t valid = 0, invalid = 0, verified = 0, wrong = 0;
  for (const auto* r : rs) {
    wrong += r->status == status::failed && r->reason_code == reason_code::verify_failed;
    if (r->status != status::passed) continue;
    ++verified;
    const auto* m = r->find_metric(l.busbw_metric);
    const auto v = m != nullptr ? convert_unit(m->value, m->unit, "GB/s") : std::nullopt;
    if (!v || !std::isfinite(*v)) continue;
    all_sum += *v;
    if (r->valid) {
      valid_sum += *v;
      ++valid;
    } else {
      ++invalid;
    }
  }
  std::string avg = "Avg bus bandwidth: ";
  if (valid > 0) {
    avg += coll_gbps(valid_sum / valid) + " (the mean busbw of " + std::to_string(valid) +
           (valid == 1 ? " result" : " results");
    if (invalid > 0)
      avg += "; " + std::to_string(invalid) + " INVALID left out, " +
             coll_gbps(all_sum / (valid + invalid)) + " with them";
    avg += ")";
  } else if (invalid > 0) {
    avg += "INVALID: " + coll_gbps(all_sum / invalid) + " over " + std::to_string(invalid) +
           (invalid == 1 ? " result" : " results") + ", every one INVALID";
  } else {
    avg += "none: no result measured a bus bandwidth";
  }
  const std::string checked =
      wrong == 0 ? "#wrong: 0 OK (" + std::to_string(verified) + " results verified)"
                 : "#wrong: " + std::to_string(wrong) + " configuration" + (wrong == 1 ? "" : "s") +
                       " FAILED verification (" + std::to_string(verified) + " verified)";
  std::vector<std::string> lines;
  for (const auto& text : {avg, checked}) {
    const auto wrapped = wrap_text(text, console_width, "  ", "    ");
    lines.insert(lines.end(), wrapped.begin(), wrapped.end());
  }
  return lines;
}

namespace {

// One sweep (the results that share every axis but size, type, op and placement): its table,
// notes and closing lines.
void print_collective_sweep(std::ostream& out, const std::vector<const result_view*>& rs,
                            const collective_layout& l) {
  const auto rows = coll_rows(rs, l, 2);
  const auto sides = coll_sides(rows);
  for (const auto& line : layout_table(coll_table(rows, l, sides), console_width))
    out << line << '\n';
  for (const auto& line : coll_notes(rows, l)) out << line << '\n';
  for (const auto& line : avg_bus_bandwidth_lines(rs, l)) out << line << '\n';
}

}  // namespace

void print_collective_table(std::ostream& out, const std::string& name,
                            const std::vector<const result_view*>& rs, const collective_layout& l) {
  std::vector<std::string> shared;
  for (const auto& a : coll_other_axes(rs, l, false))
    shared.push_back(a + "=" + coll_axis(*rs.front(), a));
  if (shared.empty()) out << name << '\n';
  for (const auto& line : wrap_text(joined(shared, " "), console_width, name + "  ", "    "))
    if (!shared.empty()) out << line << '\n';
  // A table per sweep, as nccl-tests prints one per run: an average over two algorithms (or
  // groups) would describe neither.
  const auto others = coll_other_axes(rs, l, true);
  std::vector<std::string> labels;
  std::vector<std::vector<const result_view*>> sweeps;
  for (const auto* r : rs) {
    std::vector<std::string> parts;
    for (const auto& a : others) parts.push_back(a + "=" + coll_axis(*r, a));
    const std::string label = joined(parts, " ");
    const auto it = std::find(labels.begin(), labels.end(), label);
    if (it == labels.end()) {
      labels.push_back(label);
      sweeps.push_back({r});
    } else {
      sweeps[static_cast<std::size_t>(it - labels.begin())].push_back(r);
    }
  }
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    if (!labels[i].empty()) out << (i ? "\n" : "") << "  " << labels[i] << '\n';
    print_collective_sweep(out, sweeps[i], l);
  }
  out << '\n';
}

}  // namespace infrabench
