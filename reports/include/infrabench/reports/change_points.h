// Change points in a run-to-run series (one value per run, oldest first) by E-divisive means
// (Matteson & James, JASA 2014), the method of MongoDB's performance CI (Daly et al., ICPE 2020)
// and Apache Otava/Hunter (Fleming et al., ICPE 2023): the split that maximises the energy
// distance between the two sides, accepted when a permutation test of that maximum says it is not
// chance, then both sides searched again. Energy distance uses the values themselves (not ranks),
// so a large step stands out of noise in few runs, and it needs no distribution assumption.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "infrabench/reports/rank_stats.h"

namespace infrabench::reports {

struct change_point {
  std::size_t index = 0;  // first point of the new segment
  double before = 0;      // median of the segment before
  double after = 0;       // median of the segment after
  double p_value = 1;     // permutation p of the split
};
struct trend_analysis {
  std::vector<change_point> changes;
  struct drift {
    std::size_t from = 0, to = 0;  // point indices, inclusive
    double per_point = 0;          // Theil-Sen slope relative to the segment's median, per run
    double total = 0;              // relative change over the segment
    double p_value = 1;            // Mann-Kendall
  };
  std::vector<drift> drifts;
  std::string note;  // "too few points" and the like
};

struct e_divisive_options {
  std::size_t min_segment = 3;  // runs on each side of a split
  double alpha = 0.01;          // significance of the permutation test
  // |after/before - 1| of the two sides' medians needed: a significant but small step (a 1%
  // compiler change) is not a regression worth a red CI.
  double min_relative_shift = 0.05;
  // The step in standard deviations of the runs' noise, estimated robustly from successive
  // differences (so a step does not inflate it): with dozens of series judged at once, a split
  // significant by chance is about one noise SD, a real loss (a core, a channel) many.
  double min_effect = 4;
  std::size_t permutations = 999;  // at most; stopped early once the p-value is clearly large
  std::uint64_t seed = 0x1b2e3c;   // fixed: the same series gives the same answer
};

// The energy statistic of every split tau of x (Q-hat of Matteson & James with exponent 1): the
// largest over kappa of Q between [0, tau) and [tau, kappa), min_segment points on each side;
// index tau holds it, indices without a split 0.
[[nodiscard]] std::vector<double> energy_split_statistics(std::span<const double> x,
                                                          std::size_t min_segment);

// Change points by E-divisive means with binary segmentation: in each segment the split with the
// largest Q is kept when its permutation p-value (the segment's values shuffled, the maximum Q
// recomputed; sequential stopping after Besag & Clifford 1991) is below alpha, and the medians of
// the two sides differ by at least min_relative_shift and by min_effect noise SDs. Sorted by index;
// `before` and `after` are the medians of the neighbouring segments of the final segmentation.
[[nodiscard]] std::vector<change_point> e_divisive(std::span<const double> x,
                                                   const e_divisive_options& opt = {});

// Steps (E-divisive) and, inside each segment between them, a Mann-Kendall drift whose Theil-Sen
// line moves the metric by >= min_relative_shift at p < alpha. `note` says when the series is
// too short to look.
// How many runs a series needs before analyse_history looks for a change (two segments).
[[nodiscard]] std::size_t runs_needed(const e_divisive_options& opt);

[[nodiscard]] trend_analysis analyse_history(const std::vector<double>& values,
                                             const e_divisive_options& opt = {});

}  // namespace infrabench::reports
