#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "infrabench/json_io.h"
#include "infrabench/report.h"

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

// Columns are padded to the widest cell; text columns left-aligned, numbers right-aligned.
void print_rows(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                const std::vector<bool>& right) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line = "  ";
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      const auto& cell = rows[r][c];
      const std::size_t pad = width[c] - cell.size();
      const bool last = c + 1 == rows[r].size();
      if (c < right.size() && right[c])
        line += std::string(pad, ' ') + cell;
      else
        line += cell + (last ? "" : std::string(pad, ' '));
      if (!last) line += "  ";
    }
    out << line << '\n';
    if (r == 0) {
      std::string rule = "  ";
      for (std::size_t c = 0; c < width.size(); ++c)
        rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
      out << rule << '\n';
    }
  }
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
  const double a = std::fabs(value);
  if (unit == "ns") return format_time(value * 1e-9);
  if (unit == "s") return format_time(value);
  if (unit == "GB/s") {
    if (a >= 1000) return fixed3(value / 1000) + " TB/s";
    if (a < 1 && a > 0) return fixed3(value * 1000) + " MB/s";
    return fixed3(value) + " GB/s";
  }
  if (unit == "GFLOP/s") {
    if (a >= 1000) return fixed3(value / 1000) + " TFLOP/s";
    return fixed3(value) + " GFLOP/s";
  }
  if (unit.size() > 2 && unit.ends_with("/s")) {
    // Item rates: 12.3 M loads/s.
    const std::string what = unit.substr(0, unit.size() - 2);
    if (a >= 1e9) return fixed3(value / 1e9) + " G" + what + "/s";
    if (a >= 1e6) return fixed3(value / 1e6) + " M" + what + "/s";
    if (a >= 1e3) return fixed3(value / 1e3) + " k" + what + "/s";
    return fixed3(value) + " " + unit;
  }
  if (unit == "%") return fixed3(value) + " %";
  return fixed3(value) + (unit.empty() ? "" : " " + unit);
}

void print_table(std::ostream& out, const nlohmann::json& results, bool show_host) {
  using json = nlohmann::json;
  // One block per benchmark, in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> groups;
  for (const auto& r : results) {
    const auto name = r.at("benchmark").get<std::string>();
    if (!groups.count(name)) order.push_back(name);
    groups[name].push_back(&r);
  }
  auto reason_of = [](const json* r) { return r->value("reason", std::string()); };
  for (const auto& name : order) {
    const auto& rs = groups[name];
    // All configurations skipped for one reason (no GPU, say): one line, not a table of skips.
    const bool all_skipped_alike = std::all_of(rs.begin(), rs.end(), [&](const json* r) {
      return r->at("status") == "skipped" && reason_of(r) == reason_of(rs.front());
    });
    if (all_skipped_alike) {
      out << name << ": skipped (" << rs.size()
          << (rs.size() == 1 ? " configuration" : " configurations")
          << "): " << reason_of(rs.front()) << "\n\n";
      continue;
    }
    out << name << '\n';
    std::vector<std::string> metric_names;
    for (const auto* r : rs) {
      for (const auto& m : r->at("metrics")) {
        const auto mn = m.at("name").get<std::string>();
        if (std::find(metric_names.begin(), metric_names.end(), mn) == metric_names.end())
          metric_names.push_back(mn);
      }
    }
    std::vector<std::string> header;
    std::vector<bool> right;
    if (show_host) {
      header.push_back("host");
      right.push_back(false);
    }
    for (const auto& [axis_name, v] : rs.front()->at("axes").items()) {
      header.push_back(axis_name);
      right.push_back(true);
    }
    for (const char* h : {"status", "time (median)", "+-CI95", "rCV", "n"}) {
      header.push_back(h);
      right.push_back(std::string(h) != "status");
    }
    for (const auto& m : metric_names) {
      header.push_back(m);
      right.push_back(true);
    }
    header.push_back("notes");
    right.push_back(false);

    std::vector<std::vector<std::string>> rows{header};
    for (const auto* r : rs) {
      std::vector<std::string> row;
      if (show_host) {
        const int rank = r->value("rank", 0);
        row.push_back(r->value("host", std::string()) +
                      (rank ? " (rank " + std::to_string(rank) + ")" : ""));
      }
      const json disp = r->value("axes_display", json::object());
      for (const auto& [axis_name, v] : r->at("axes").items()) {
        row.push_back(disp.contains(axis_name)
                          ? disp[axis_name].get<std::string>()
                          : (v.is_string() ? v.get<std::string>() : json_text(v)));
      }
      std::string st = r->at("status").get<std::string>();
      if (st == "passed" && !r->at("valid").get<bool>()) st = "INVALID";
      row.push_back(st);
      const bool timed = r->contains("time_s") && r->at("status") == "passed";
      if (timed) {
        const auto& t = r->at("time_s");
        const double median = t.at("median").get<double>();
        const double lo = t.at("median_ci95")[0].get<double>(),
                     hi = t.at("median_ci95")[1].get<double>();
        row.push_back(format_time(median));
        row.push_back(median > 0 ? percent1((hi - lo) / 2 / median) : "");
        row.push_back(percent1(t.value("robust_cv", t.at("cv").get<double>())));
        row.push_back(std::to_string(t.at("n").get<std::size_t>()));
      } else {
        row.insert(row.end(), 4, "");
      }
      for (const auto& mn : metric_names) {
        std::string cell;
        for (const auto& m : r->at("metrics")) {
          if (m.at("name") == mn)
            cell = format_scaled(m.at("value").get<double>(), m.at("unit").get<std::string>());
        }
        row.push_back(cell);
      }
      std::string notes = reason_of(r);
      for (const auto& why : r->at("invalid_reasons"))
        notes += (notes.empty() ? "" : "; ") + why.get<std::string>();
      for (const auto& w : r->at("warnings"))
        notes += (notes.empty() ? "" : "; ") + w.get<std::string>();
      row.push_back(notes);
      rows.push_back(std::move(row));
    }
    print_rows(out, rows, right);
    out << '\n';
  }
}

}  // namespace infrabench
