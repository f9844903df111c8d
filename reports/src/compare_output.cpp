// What compare prints and writes (compare.h): the losses' lines, the table, Markdown and JSON.
#include "infrabench/reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "compare_stats.h"
#include "infrabench/error.h"
#include "infrabench/json_io.h"
#include "infrabench/options.h"
#include "infrabench/reports/machine_drift.h"
#include "infrabench/reports/rank_stats.h"
#include "infrabench/reports/roofline.h"
#include "infrabench/reports/text.h"
#include "infrabench/reports/values.h"
#include "infrabench/text_layout.h"

namespace infrabench::reports {

using detail::nan_v;

namespace {

using json = nlohmann::json;

}  // namespace

namespace {

// "B: gemm/cpu_fp32 n=512 gflops 100 GFLOP/s -> 70 GFLOP/s (-30.0%": a row's change, unclosed.
std::string change_line(const comparison& c, const metric_row& row, std::size_t i) {
  return c.labels[i] + ": " + row.benchmark + (row.config.empty() ? "" : " " + row.config) + " " +
         row.metric + " " + format_value(row.value[0], row.unit, row.value) + " -> " +
         format_value(row.value[i], row.unit, row.value) + " (" + format_percent(row.ratio[i] - 1);
}

// "B: bandwidth/host_memory bandwidth_gbps 20.6 GB/s -> 0 GB/s: FAILED (0 GB/s: a rate is ...)".
std::string failed_line(const comparison& c, const metric_row& row, std::size_t i) {
  const std::string& why = row.failed_value[i].empty() ? row.failed_value[0] : row.failed_value[i];
  return c.labels[i] + ": " + row.benchmark + (row.config.empty() ? "" : " " + row.config) + " " +
         row.metric + " " + format_value(row.value[0], row.unit, row.value) + " -> " +
         format_value(row.value[i], row.unit, row.value) + ": FAILED, " +
         (row.failed_value[i].empty() ? "in " + c.labels[0] + " " : "") + why;
}

// Why report i's comparison rests on an INVALID result (the base's reason first): "" when both
// are VALID. The first clause ("noisy: robust CV 13% > 10% over 167 samples"); the whole of it is
// in the JSON.
std::string invalid_note(const metric_row& row, std::size_t i) {
  const std::string& why =
      row.invalid_reason[0].empty() ? row.invalid_reason[i] : row.invalid_reason[0];
  if (why.empty()) return "";
  return "INVALID: " + why.substr(0, why.find(';'));
}

std::string needed_text(std::size_t n) {
  return n == std::numeric_limits<std::size_t>::max() ? "more than a million" : std::to_string(n);
}

// "n 3 vs 3" or "one repetition vs 3": what the verdict rests on.
std::string repetitions_text(const metric_row& row, std::size_t i) {
  auto one = [](std::size_t n) { return n <= 1 ? std::string("1") : std::to_string(n); };
  return one(row.repetitions[0]) + " vs " + one(row.repetitions[i]) + " repetitions";
}

// Why a row was tested one-sided (decide_verdicts): "B's own CPU quota throttled it, not A's",
// "B could use 1 CPU, A 2".
std::string own_making_text(const comparison& c, const metric_row& row, std::size_t i) {
  const auto& a = row.load.at(0);
  const auto& b = row.load.at(i);
  if (a && b && a->throttled != b->throttled) {
    const bool bi = b->throttled;
    return c.labels[bi ? i : 0] + "'s own CPU quota throttled it, not " + c.labels[bi ? 0 : i] +
           "'s";
  }
  if (!a || !b) return "";
  return c.labels[i] + " could use " + format_number(b->cpus) + " CPUs, " + c.labels[0] + " " +
         format_number(a->cpus);
}

}  // namespace

std::vector<std::string> regressions(const comparison& c, double pct) {
  std::vector<std::string> out;
  for (const auto& row : c.rows) {
    if (!row.gated) continue;  // one number per measurement: see headline_gate
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      if (row.verdict[i] == change::failed) {  // no measurement: fails the gate at any pct
        out.push_back(failed_line(c, row, i));
        continue;
      }
      const double loss = 1 - row.perf[i];
      if (!(loss * 100 > pct) || row.verdict[i] != change::worse) continue;
      const std::string note = invalid_note(row, i);
      out.push_back(change_line(c, row, i) + ", q " + format_p(row.q_value[i], c.options.alpha) +
                    (row.one_sided[i] ? " one-sided: " + own_making_text(c, row, i) : "") + ", " +
                    repetitions_text(row, i) + (note.empty() ? "" : ", " + note) + ")");
    }
  }
  return out;
}

std::vector<std::string> machine_drift_losses(const comparison& c, double pct) {
  std::vector<std::string> out;
  for (const auto& row : c.rows) {
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      if (!row.gated || row.verdict[i] != change::machine_drift || !((1 - row.perf[i]) * 100 > pct))
        continue;
      const std::string why = i < row.busy.size() && !row.busy[i].empty()
                                  ? row.busy[i]
                                  : "the machine ran " + machine_speed_text(c.canary[i].ratio) +
                                        " by the same-run canary";
      out.push_back(change_line(c, row, i) + ", q " + format_p(row.q_value[i], c.options.alpha) +
                    "; " + why + ")");
    }
  }
  return out;
}

// "(98 GFLOP/s -> 97 GFLOP/s, 18 GB/s -> 17 GB/s, cache ..., on all 2 CPUs: FMA ... per CPU,
// cache ... per CPU)": each canary number the two runs both have.
std::string canary_numbers(const machine_canary& a, const machine_canary& b) {
  const auto arrow = [](double x, double y, const char* unit) {
    return format_value(x, unit) + " -> " + format_value(y, unit);
  };
  std::string out = " (" + arrow(a.fma_gflops, b.fma_gflops, "GFLOP/s") + ", " +
                    arrow(a.stream_gbps, b.stream_gbps, "GB/s");
  if (std::isfinite(a.cache_gbps) && std::isfinite(b.cache_gbps))
    out += ", cache " + arrow(a.cache_gbps, b.cache_gbps, "GB/s");
  if (a.all_cpus > 0 && a.all_cpus == b.all_cpus && std::isfinite(a.all_fma_gflops) &&
      std::isfinite(b.all_fma_gflops)) {
    out += ", on all " + format_number(a.all_cpus) + " CPUs: FMA " +
           arrow(a.all_fma_gflops, b.all_fma_gflops, "GFLOP/s") + " per CPU";
    if (std::isfinite(a.all_cache_gbps) && std::isfinite(b.all_cache_gbps))
      out += ", cache " + arrow(a.all_cache_gbps, b.all_cache_gbps, "GB/s") + " per CPU";
  }
  return out + ")";
}

// Why two runs' canaries give no ratio: a side has none, ran too briefly to judge by, or lacks the
// numbers the other has.
std::string why_no_canary_ratio(const machine_canary& a, const machine_canary& b,
                                const std::string& a_label, const std::string& b_label) {
  if (!std::isfinite(a.fma_gflops)) return a_label + " has no canary";
  if (!std::isfinite(b.fma_gflops)) return b_label + " has no canary";
  for (const auto& [m, label] : {std::pair{&a, &a_label}, std::pair{&b, &b_label}}) {
    if (m->seconds_each < canary_full_seconds)
      return *label + "'s canary ran " + format_number(m->seconds_each) +
             " s each, too briefly to judge the machine by (--min-time " +
             format_number(2 * canary_full_seconds) + " s or more gives it " +
             format_number(canary_full_seconds) + " s)";
  }
  return "their canaries share no FMA and memory numbers";
}

std::string machine_line(const comparison& c) {
  const bool any = std::any_of(c.canary.begin(), c.canary.end(),
                               [](const auto& m) { return std::isfinite(m.fma_gflops); });
  if (!any) return "";
  std::string out = "machine (same-run canary: FMA peak, memory and cache triads):";
  for (std::size_t i = 1; i < c.labels.size(); ++i) {
    const machine_canary &a = c.canary[0], &b = c.canary[i];
    out += (i > 1 ? ";" : "") + std::string(" ") + c.labels[i];
    if (!std::isfinite(b.ratio)) {
      out += " cannot be told apart (" + why_no_canary_ratio(a, b, c.labels[0], c.labels[i]) + ")";
      continue;
    }
    out += machine_moved(b.ratio) ? " ran " + machine_speed_text(b.ratio) + " than " + c.labels[0]
                                  : " ran as fast as " + c.labels[0] + ", within the canary's " +
                                        format_number(canary_noise * 100) + "%";
    out += canary_numbers(a, b);
  }
  return out;
}

std::string scatter_line(const comparison& c) {
  std::string out;
  for (std::size_t i = 1; i < c.run_scatter.size(); ++i) {
    if (!(c.run_scatter[i] > 0)) continue;
    out += (out.empty() ? "between runs: " : "; ") + c.labels[i] + "'s " +
           std::to_string(c.run_scatter_rows[i]) + " configurations scattered " +
           format_number(std::round(std::expm1(c.run_scatter[i]) * 1000) / 10) + "% (SD) about " +
           c.labels[0] + "'s beyond their repetitions' spread";
  }
  if (out.empty()) return out;
  return out +
         ": the machine sat in another state for a whole run, so each change is judged "
         "against that scatter too, and more runs, not more repetitions, decide a smaller one";
}

std::vector<std::string> undecided_losses(const comparison& c, double pct) {
  std::vector<std::string> out;
  for (const auto& row : c.rows) {
    if (!row.gated) continue;
    for (std::size_t i = 1; i < c.labels.size(); ++i) {
      const auto v = row.verdict[i];
      if ((v != change::inconclusive && v != change::not_significant) ||
          !((1 - row.perf[i]) * 100 > pct))
        continue;
      const std::string note = invalid_note(row, i);
      out.push_back(change_line(c, row, i) + ", " + std::string(to_string(v)) + " on " +
                    repetitions_text(row, i) + (note.empty() ? "" : ", " + note) + "; about " +
                    needed_text(row.needed[i]) + " repetitions per side would decide it)");
    }
  }
  return out;
}

namespace {

std::string ratio_text(double r) {
  if (!std::isfinite(r)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3fx", r);
  return buf;
}

// "clock_ghz (information)", "ns_per_image (inverse_of images_per_s)": a metric that is not
// gated says why where it is listed.
std::string metric_label(const metric_row& row) {
  if (row.gated) return row.metric;
  return row.metric + " (" + row.gate_note + ")";
}

// The verdict cell: "WORSE -30.0%", "inconclusive (needs 12 reps)", and beside any of them the
// INVALID result it rests on ("WORSE -45.0%, INVALID: noisy: ..."): a noisy result is judged by
// its repetitions' spread, and says so.
std::string verdict_text(const comparison& c, const metric_row& row, std::size_t i) {
  std::string v(to_string(row.verdict[i]));
  switch (row.verdict[i]) {
    case change::better:
    case change::worse:
      v += " " + format_percent(row.perf[i] - 1);
      break;
    case change::machine_drift:
      v += " " + format_percent(row.perf[i] - 1) +
           (i < row.busy.size() && !row.busy[i].empty()
                ? std::string(" (machine busy)")
                : " (canary " + format_percent(c.canary[i].ratio - 1) + ")");
      break;
    case change::inconclusive:
    case change::not_significant:
      v += " (needs " + needed_text(row.needed[i]) + " reps)";
      break;
    case change::failed:
      return v + ": no measurement";
    case change::missing:
      return v;
    default:
      break;
  }
  const std::string note = invalid_note(row, i);
  if (note.empty()) return v;
  return row.verdict[i] == change::invalid ? note : v + ", " + note;
}

std::string q_text(const metric_row& row, std::size_t i, double c_alpha) {
  if (std::isnan(row.q_value[i])) return "-";
  return format_p(row.q_value[i], c_alpha) + (row.assumed_noise[i] ? "*" : "") +
         (row.one_sided[i] ? "<" : "");
}

// "100 GFLOP/s x3 (invalid)": the value, its repetitions and whether the result is VALID.
std::string value_text(const metric_row& row, std::size_t i) {
  std::string t = format_value(row.value[i], row.unit, row.value);
  if (row.repetitions[i] > 1) t += " x" + std::to_string(row.repetitions[i]);
  if (!row.valid[i] && std::isfinite(row.value[i])) t += " (invalid)";
  return t;
}

std::vector<std::vector<std::string>> metric_rows(const comparison& c, const std::string& benchmark,
                                                  bool markdown) {
  const std::size_t nr = c.labels.size();
  std::vector<std::string> header = {"configuration", "metric", c.labels[0]};
  for (std::size_t i = 1; i < nr; ++i) {
    header.push_back(c.labels[i]);
    header.push_back(c.labels[i] + "/" + c.labels[0]);
    header.push_back("q");
    header.push_back("verdict");
  }
  if (markdown) header.insert(header.begin(), "benchmark");
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& row : c.rows) {
    if (!benchmark.empty() && row.benchmark != benchmark) continue;
    std::vector<std::string> cells = {row.config.empty() ? "-" : row.config, metric_label(row),
                                      value_text(row, 0)};
    for (std::size_t i = 1; i < nr; ++i) {
      cells.push_back(value_text(row, i));
      cells.push_back(ratio_text(row.ratio[i]));
      cells.push_back(q_text(row, i, c.options.alpha));
      cells.push_back(verdict_text(c, row, i));
    }
    if (markdown) cells.insert(cells.begin(), row.benchmark);
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::vector<bool> metric_right(std::size_t nr, bool markdown) {
  std::vector<bool> right = {false, false, true};
  for (std::size_t i = 1; i < nr; ++i) {
    right.push_back(true);
    right.push_back(true);
    right.push_back(true);
    right.push_back(false);
  }
  if (markdown) right.insert(right.begin(), false);
  return right;
}

std::vector<std::vector<std::string>> summary_rows(const comparison& c) {
  const std::size_t nr = c.labels.size();
  const bool prices = std::isfinite(c.price[0]);
  // The energy column: typed watts given, or measured energy in some group.
  const bool watts =
      std::isfinite(c.power[0]) || std::any_of(c.groups.begin(), c.groups.end(), [](const auto& g) {
        return std::any_of(g.energy_basis.begin(), g.energy_basis.end(),
                           [](const std::string& b) { return !b.empty(); });
      });
  std::vector<std::string> header = {"group"};
  for (std::size_t i = 1; i < nr; ++i) {
    header.push_back(c.labels[i] + "/" + c.labels[0]);
    if (prices) header.push_back("perf/$");
    if (watts) header.push_back("perf/energy");
    header.push_back("better");
    header.push_back("worse");
    header.push_back("metrics");
  }
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& g : c.groups) {
    std::vector<std::string> cells = {g.group};
    for (std::size_t i = 1; i < nr; ++i) {
      cells.push_back(ratio_text(g.geomean_perf[i]));
      if (prices) cells.push_back(ratio_text(g.perf_per_price[i]));
      if (watts)
        cells.push_back(g.energy_basis[i].empty()
                            ? "-"
                            : ratio_text(g.perf_per_watt[i]) + " (" + g.energy_basis[i] + ")");
      cells.push_back(std::to_string(g.better[i]));
      cells.push_back(std::to_string(g.worse[i]));
      cells.push_back(std::to_string(g.metrics[i]));
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::vector<std::vector<std::string>> inventory_rows(const comparison& c, bool system,
                                                     std::size_t limit, std::size_t* left) {
  std::vector<std::vector<std::string>> rows = {{"what"}};
  for (const auto& l : c.labels) rows[0].push_back(l);
  std::size_t shown = 0;
  *left = 0;
  for (const auto& ch : c.inventory) {
    if (ch.system != system) continue;
    if (shown++ >= limit) {
      ++*left;
      continue;
    }
    std::vector<std::string> cells = {ch.key};
    for (const auto& v : ch.values) cells.push_back(v.size() > 60 ? v.substr(0, 57) + "..." : v);
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::string differing_system_summary(const comparison& c) {
  // The headline keys: what makes "a regression" a different machine.
  static const char* const important[] = {"cpu.model",
                                          "cpu.microcode",
                                          "cpu.sockets",
                                          "cpu.cores",
                                          "os.kernel",
                                          "os.name",
                                          "memory.total_bytes",
                                          "libraries.cuda_driver",
                                          "libraries.cuda_runtime",
                                          "libraries.nccl",
                                          "libraries.cublas",
                                          "build.compiler",
                                          "build.build_type",
                                          "cpu.logical_cpus_usable",
                                          "cpu.cgroup_cpu_quota",
                                          "build.cxx_flags",
                                          "build.git_commit",
                                          "hostname",
                                          "virtualization.hypervisor_vendor"};
  std::string out;
  for (const auto& ch : c.inventory) {
    bool hit = ch.key.rfind("gpus", 0) == 0 && ch.key.find("name") != std::string::npos;
    for (const char* k : important) hit |= ch.key == k;
    if (hit) out += (out.empty() ? "" : ", ") + ch.key;
  }
  return out;
}

}  // namespace

namespace {

// The gated metrics judged against the first report (in the BH family).
std::size_t judged_rows(const comparison& c) {
  return static_cast<std::size_t>(std::count_if(c.rows.begin(), c.rows.end(), [](const auto& r) {
    return r.gated && r.q_value.size() > 1 && !std::isnan(r.q_value[1]);
  }));
}

// How a verdict is reached, in one paragraph (the table's and the Markdown's).
std::string method_text(const comparison& c) {
  const std::string noise = std::isnan(c.options.noise)
                                ? default_run_noise_text()
                                : format_number(c.options.noise * 100) + "%";
  return "a change is called between runs: Welch's t-test on the logs of each side's "
         "repetitions and a moderated t-test (each metric's variance shrunk toward the "
         "comparison's median variance, " +
         format_number(moderation_prior_df) +
         " degrees of freedom of prior), the smaller p doubled; Benjamini-Hochberg q < " +
         format_number(c.options.alpha) + " across the gated metrics judged (" +
         std::to_string(judged_rows(c)) +
         "), and a change of >= " + format_number(c.options.min_effect * 100) +
         "%. A side with one repetition is judged against an assumed run-to-run noise (" + noise +
         "; q marked *): \"inconclusive\" unless the change exceeds it; one INVALID repetition "
         "is never enough (a disturbed run says nothing of the noise between runs): at most "
         "\"inconclusive\". Where one run's own cgroup CPU quota throttled a result and the "
         "other's did not, the direction is known before the values are read: that result is "
         "tested one-sided toward it, in a Benjamini-Hochberg family of its own (q marked <); "
         "so is a result that could use fewer CPUs in one run. When the other results' log "
         "ratios scatter more than their repetitions' spread allows (a robust SD over at least " +
         std::to_string(min_scatter_rows) +
         " configurations: the MAD about their median), each one is tested instead by one t "
         "test whose variance is its Welch variance plus that scatter's, on the scatter's "
         "degrees of freedom. "
         "Only each benchmark's "
         "headline metric is gated, counted and averaged; the others are shown with the reason. "
         "An INVALID (noisy) result is less precise, not no evidence: it is tested with its "
         "repetitions' spread like any other, and its verdict says INVALID beside it.";
}

// Run settings, then system differences: what else changed, said before any verdict.
void print_differences_table(std::ostream& out, const comparison& c) {
  std::size_t left = 0;
  const auto settings = inventory_rows(c, false, 40, &left);
  if (settings.size() == 1) {
    out << "run settings: the same\n";
  } else {
    out << "run settings differ:\n";
    print_text_table(out, settings, {});
    if (left) out << "  ... and " << left << " more (--format json for all)\n";
  }
  const auto sys = inventory_rows(c, true, 25, &left);
  out << "system differences";
  if (sys.size() == 1) {
    out << ": none (same hardware and software as recorded)\n";
    return;
  }
  out << ":\n";
  print_text_table(out, sys, {});
  if (left) out << "  ... and " << left << " more (--format json for all)\n";
  const std::string headline = differing_system_summary(c);
  if (!headline.empty())
    out << "  note: the systems differ (" << headline
        << "): a change may come from the machine, not the code\n";
}

}  // namespace

std::string comparison_method_text(const comparison& c) {
  return method_text(c);
}

std::string roofline_line(const comparison& c) {
  std::string out;
  bool any = false;
  for (std::size_t i = 0; i < c.rooflines.size(); ++i) {
    const auto& r = c.rooflines[i];
    any = any || r.has_value();
    out += (i ? ", " : "roofline: ") + c.labels[i] + " is " +
           (r ? roofline_summary(analysis_of(*r).base) : "without a roofline section");
  }
  return any ? out : "";
}

void print_comparison_table(std::ostream& out, const comparison& c) {
  const std::size_t nr = c.labels.size();
  out << "comparing " << nr << " reports against " << c.labels[0] << ":\n";
  for (std::size_t i = 0; i < nr; ++i)
    out << "  " << c.labels[i] << " = " << c.descriptions[i] << "\n";
  out << "\n";
  print_differences_table(out, c);
  out << "\n";
  if (const auto m = machine_line(c); !m.empty()) {
    for (const auto& line : wrap_text(m, 100, "", "  ")) out << line << "\n";
    out << "\n";
  }
  if (const auto sc = scatter_line(c); !sc.empty()) {
    for (const auto& line : wrap_text(sc, 100, "", "  ")) out << line << "\n";
    out << "\n";
  }
  if (const auto roof = roofline_line(c); !roof.empty()) out << roof << "\n\n";
  for (const auto& line : wrap_text(method_text(c), 100, "", "")) out << line << "\n";
  out << "\n";
  std::vector<std::string> benches;
  for (const auto& row : c.rows) {
    if (std::find(benches.begin(), benches.end(), row.benchmark) == benches.end())
      benches.push_back(row.benchmark);
  }
  for (const auto& b : benches) {
    out << b << "\n";
    print_text_table(out, metric_rows(c, b, false), metric_right(nr, false));
    out << "\n";
  }
  out << "summary: geometric mean of the headline metrics' performance ratios per group (> 1: "
         "better than "
      << c.labels[0] << "; INVALID results included)\n";
  std::vector<bool> right(32, true);
  right[0] = false;
  const auto summary = summary_rows(c);
  print_text_table(out, summary, right);
  if (std::find(summary[0].begin(), summary[0].end(), "perf/energy") != summary[0].end()) {
    out << "perf/energy: work per joule measured over the timed windows (NVML total energy, RAPL) "
           "where both results carry it (measured), else performance x "
        << c.labels[0] << "'s watts / the other's as typed with --power (typed watts)\n";
  }
  for (const auto& o : c.only_in) out << "  " << o << "\n";
}

void print_comparison_markdown(std::ostream& out, const comparison& c) {
  const std::size_t nr = c.labels.size();
  out << "### infrabench compare\n\n";
  for (std::size_t i = 0; i < nr; ++i)
    out << "- **" << markdown_text(c.labels[i]) << "**: " << markdown_text(c.descriptions[i])
        << "\n";
  std::size_t left = 0;
  const auto settings = inventory_rows(c, false, 40, &left);
  out << "\n#### Run settings\n\n";
  if (settings.size() == 1) {
    out << "The same.\n";
  } else {
    print_markdown_table(out, settings, {});
    if (left) out << "\n… and " << left << " more.\n";
  }
  const auto sys = inventory_rows(c, true, 40, &left);
  out << "\n#### System differences\n\n";
  if (sys.size() == 1) {
    out << "None (same hardware and software as recorded).\n";
  } else {
    print_markdown_table(out, sys, {});
    if (left) out << "\n… and " << left << " more.\n";
  }
  if (const auto m = machine_line(c); !m.empty())
    out << "\n#### Machine\n\n" << markdown_text(m) << "\n";
  if (const auto sc = scatter_line(c); !sc.empty()) out << "\n" << markdown_text(sc) << "\n";
  if (const auto roof = roofline_line(c); !roof.empty())
    out << "\n#### Roofline\n\n" << markdown_text(roof) << "\n";
  out << "\n" << markdown_text(method_text(c)) << "\n\n";
  out << "#### Summary (geometric mean of the headline metrics' performance ratios, > 1 is better "
         "than "
      << markdown_text(c.labels[0]) << ")\n\n";
  std::vector<bool> right(32, true);
  right[0] = false;
  print_markdown_table(out, summary_rows(c), right);
  const auto regs = regressions(c, 0);
  if (!regs.empty()) {
    out << "\n**Significant regressions:**\n\n";
    for (const auto& r : regs) out << "- " << markdown_text(r) << "\n";
  }
  const auto undecided = undecided_losses(c, 0);
  if (!undecided.empty()) {
    out << "\n**Losses the repetitions cannot decide, not counted:**\n\n";
    for (const auto& r : undecided) out << "- " << markdown_text(r) << "\n";
  }
  out << "\n<details><summary>All metrics (" << c.rows.size() << ")</summary>\n\n";
  print_markdown_table(out, metric_rows(c, "", true), metric_right(nr, true));
  out << "\n</details>\n";
  for (const auto& o : c.only_in) out << "\n- " << markdown_text(o);
  if (!c.only_in.empty()) out << "\n";
}

namespace {

json num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json reports_json(const comparison& c) {
  json reports = json::array();
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    reports.push_back(
        {{"label", c.labels[i]},
         {"description", c.descriptions[i]},
         {"price", num(c.price[i])},
         {"power_w", num(c.power[i])},
         {"canary",
          {{"fma_gflops", num(c.canary[i].fma_gflops)},
           {"stream_gbps", num(c.canary[i].stream_gbps)},
           {"cache_gbps", num(c.canary[i].cache_gbps)},
           {"all_cpus", num(c.canary[i].all_cpus > 0 ? c.canary[i].all_cpus : std::nan(""))},
           {"fma_gflops_all_cpus", num(c.canary[i].all_fma_gflops)},
           {"cache_gbps_all_cpus", num(c.canary[i].all_cache_gbps)},
           {"seconds_each", num(c.canary[i].seconds_each)},
           {"ratio", num(c.canary[i].ratio)},
           {"machine_moved", machine_moved(c.canary[i].ratio)}}},
         {"run_scatter",
          {{"sd", i < c.run_scatter.size() ? num(c.run_scatter[i]) : json(nullptr)},
           {"configurations", i < c.run_scatter_rows.size() ? c.run_scatter_rows[i] : 0}}}});
  }
  return reports;
}

json metric_row_json(const comparison& c, const metric_row& row) {
  json per = json::array();
  for (std::size_t i = 0; i < c.labels.size(); ++i) {
    json e = {{"report", c.labels[i]},
              {"value", num(row.value[i])},
              {"valid", row.valid[i]},
              {"samples", row.n[i]},
              {"ratio", num(row.ratio[i])},
              {"perf_ratio", num(row.perf[i])},
              {"p_value", num(row.p_value[i])},
              {"ci95_half_width", num(row.ci_half[i])},
              {"verdict", std::string(to_string(row.verdict[i]))},
              {"repetitions", row.repetitions[i]},
              {"log_spread", num(row.spread[i])},
              {"q_value", num(row.q_value[i])},
              {"assumed_noise", static_cast<bool>(row.assumed_noise[i])},
              {"one_sided", static_cast<bool>(row.one_sided[i])},
              {"invalid_reason", row.invalid_reason[i]}};
    if (!row.failed_value[i].empty()) e["failed_value"] = row.failed_value[i];
    if (i < row.busy.size() && !row.busy[i].empty()) e["machine_busy"] = row.busy[i];
    if (row.needed[i] > 0)
      e["repetitions_needed"] = row.needed[i] == std::numeric_limits<std::size_t>::max()
                                    ? json(nullptr)
                                    : json(row.needed[i]);
    if (row.higher_is_better && std::isfinite(c.price[i]))
      e["value_per_price"] = num(row.value[i] / c.price[i]);
    if (row.higher_is_better && std::isfinite(c.power[i]))
      e["value_per_watt"] = num(row.value[i] / c.power[i]);
    if (i < row.per_joule.size() && std::isfinite(row.per_joule[i]))
      e["value_per_joule"] = num(row.per_joule[i]);
    if (i < row.energy_basis.size() && !row.energy_basis[i].empty()) {
      e["perf_per_energy_ratio"] = num(row.perf_per_energy[i]);
      e["energy_basis"] = row.energy_basis[i];
    }
    per.push_back(e);
  }
  return {{"benchmark", row.benchmark},
          {"group", row.group},
          {"configuration", row.config},
          {"axes", row.axes},
          {"metric", row.metric},
          {"unit", row.unit},
          {"better", row.higher_is_better ? "higher" : "lower"},
          {"role", std::string(to_string(row.role))},
          {"gated", row.gated},
          {"gate_note", row.gate_note},
          {"per_joule_metric", row.per_joule_metric},
          {"reports", per}};
}

json groups_json(const comparison& c) {
  json groups = json::array();
  for (const auto& g : c.groups) {
    json per = json::array();
    for (std::size_t i = 0; i < c.labels.size(); ++i) {
      per.push_back({{"report", c.labels[i]},
                     {"geomean_perf_ratio", num(g.geomean_perf[i])},
                     {"perf_per_price_ratio", num(g.perf_per_price[i])},
                     {"perf_per_watt_ratio", num(g.perf_per_watt[i])},
                     {"energy_basis", g.energy_basis[i]},
                     {"metrics", g.metrics[i]},
                     {"better", g.better[i]},
                     {"worse", g.worse[i]}});
    }
    groups.push_back({{"group", g.group}, {"reports", per}});
  }
  return groups;
}

}  // namespace

json comparison_json(const comparison& c) {
  const auto regs = regressions(c, 0);
  json rows = json::array();
  for (const auto& row : c.rows) rows.push_back(metric_row_json(c, row));
  json inv = json::array();
  for (const auto& ch : c.inventory)
    inv.push_back(
        {{"key", ch.key}, {"values", ch.values}, {"kind", ch.system ? "system" : "run_setting"}});
  return {
      {"reports", reports_json(c)},
      {"method",
       {{"test",
         "Welch's t-test, two-sided, on the log of each side's per-repetition values, and a "
         "moderated t-test (the metric's pooled variance shrunk toward the median variance of "
         "the comparison's tested metrics with prior_df degrees of freedom): p = min(1, 2 x the "
         "smaller); a z test with the assumed run-to-run noise where a side has one repetition"},
        {"prior_df", moderation_prior_df},
        {"multiple_testing", "Benjamini-Hochberg across the gated metrics of each report"},
        {"alpha", c.options.alpha},
        {"min_effect", c.options.min_effect},
        {"assumed_noise", std::isnan(c.options.noise) ? json("default_run_noise per metric kind")
                                                      : json(c.options.noise)},
        {"guard", "a change is called only when significant and at least min_effect"},
        {"gated",
         "each benchmark's declared headline metric (performance) only; the others "
         "are shown with gate_note"},
        {"invalid",
         "INVALID results (either side) are tested with their repetitions' spread, counted and "
         "marked (invalid_reason); a side whose one repetition is INVALID is not tested (at "
         "most inconclusive)"},
        {"machine_drift",
         "a significant change the same-run canary shows too (it moved >= canary_noise the same "
         "way, and the change exceeds it by less than canary_noise) is the machine's: verdict "
         "\"machine drift\", never counted; so is one measured while other processes took >= "
         "busy_share more of the slower side's CPUs and left it less than the faster side's "
         "threads used (busy)"},
        {"busy_share", busy_share},
        {"canary_noise", canary_noise}}},
      {"metrics", rows},
      {"groups", groups_json(c)},
      {"differences", inv},
      {"only_in", c.only_in},
      {"regressions", regs},
      {"undecided", undecided_losses(c, 0)}};
}

}  // namespace infrabench::reports
