#!/usr/bin/env bash
# Fuzzes the report, baseline and suite parsers (and what consumes their output), and names and
# patterns of any length (filters, globs, axis ranges: the names target) with libFuzzer for a
# bounded time: INFRABENCH_FUZZ_SECONDS per target (default 19, so about a minute and a quarter
# for the four, as the three took at 25). Needs clang and libclang-rt-14-dev
# (ci/install-deps.sh). The seed corpus is tests/fuzz/corpus/ (each parser's with a depth-nesting
# seed; the suite target also starts from the shipped configs/suites/) plus
# tests/fuzz/regressions/, inputs that once crashed; new inputs go to a scratch directory, crashes
# to build-fuzz/. Exits non-zero on a crash, a leak, a sanitizer report
# or an exception other than user_error escaping.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${INFRABENCH_FUZZ_SECONDS:-19}
out=${INFRABENCH_FUZZ_DIR:-build-fuzz}
cxx=${CLANGXX:-clang++}
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
mkdir -p "$out/obj"
# The parsers and their consumers, without the CLI, SQLite or Chart.js.
# (result.cpp: metric roles and result identity; result_record.cpp: the records report.cpp
# writes; stats.cpp: what result.cpp summarizes with;
# printers/csv.cpp: a format that prints what the fuzzed reports compare to; outliers.cpp: the
# outlier rule rank_stats applies; machine_load.cpp: a result's sampling_load; suite.cpp with no
# built-in suites: a baseline's "suite", checked when it is parsed; text_file.cpp: the bounded
# reader both use; json_io.cpp: the JSON reader every input goes through; thread_pool.cpp: the
# CPUs a thread-count axis is bounded by; data_dirs.cpp: where a named baseline is found;
# baseline_file.cpp: the baseline files' reader; metric_decl.cpp, expect.cpp: what a baseline's
# rules and "expect" are checked with; devices_counts.cpp: the device counts the model reads a
# host's inventory with; benchmark.cpp (an empty registry),
# requirements_none.cpp: what node_verdicts.cpp asks of this build's benchmarks; values.cpp,
# machine_drift.cpp: impossible values and the canary's machine drift, which compare judges;
# simulation_none.cpp: never a simulated node (report.cpp asks); options.cpp: the
# output options compare masks; roofline*.cpp, html_roofline.cpp, model_config.cpp: the report
# page's roofline section; scorecard.cpp, table.cpp: its scorecard and the values' units;
# units.cpp, table_collective.cpp: a column's one unit, the collectives' nccl-tests table.)
library=(harness/src/report_model.cpp harness/src/report_model_sections.cpp harness/src/report_model_roofline.cpp
         harness/src/report_model_views.cpp harness/src/report_model_writer.cpp harness/src/report_reader.cpp
         harness/src/report_reader_source.cpp harness/src/report_reader_result.cpp harness/src/report_reader_members.cpp
         harness/src/report_reader_parsed.cpp harness/src/json_skim.cpp reports/src/baseline.cpp reports/src/baseline_create.cpp reports/src/baseline_judge.cpp reports/src/baseline_judge_interval.cpp reports/src/baseline_output.cpp reports/src/baseline_file.cpp reports/src/compare.cpp reports/src/compare_attribution.cpp reports/src/compare_output.cpp reports/src/compare_stats.cpp reports/src/rank_stats.cpp
         reports/src/text.cpp reports/src/html_report.cpp reports/src/html_specs.cpp
         reports/src/html_planner.cpp reports/src/html_planner_charts.cpp reports/src/html_charts.cpp
         reports/src/node_verdicts.cpp reports/src/values.cpp reports/src/machine_drift.cpp
         tests/fuzz/simulation_none.cpp
         reports/src/chartjs_none.cpp
         harness/src/report.cpp harness/src/result_record.cpp harness/src/error.cpp harness/src/axis.cpp harness/src/result.cpp
         harness/src/stats.cpp reports/src/printers/csv.cpp harness/src/outliers.cpp
         harness/src/machine_load.cpp harness/src/suite.cpp harness/src/text_file.cpp
         harness/src/json_io.cpp tests/fuzz/builtin_suites_none.cpp harness/src/thread_pool.cpp
         harness/src/metric_decl.cpp harness/src/names.cpp reports/src/expect.cpp harness/src/devices_counts.cpp
         harness/src/data_dirs.cpp harness/src/text_layout.cpp tests/fuzz/html_assets_none.cpp
         harness/src/benchmark.cpp harness/src/options.cpp tests/fuzz/requirements_none.cpp
         reports/src/roofline.cpp reports/src/roofline_hops.cpp reports/src/roofline_job.cpp
         reports/src/roofline_output.cpp reports/src/roofline_read.cpp reports/src/html_roofline.cpp
         kernels/cpu/transformer/model_config.cpp
         harness/src/scorecard.cpp harness/src/table.cpp harness/src/storage_location.cpp harness/src/telemetry_cpu.cpp
         harness/src/units.cpp harness/src/table_collective.cpp)
targets=(report baseline suite names)
sources=("${library[@]}")
for target in "${targets[@]}"; do sources+=("tests/fuzz/fuzz_$target.cpp"); done
# -O1, not -O0: at -O0 the build takes half the time (html_report.cpp 50 s -> 19 s) but the
# targets ran 5-12x fewer inputs in their 19 s (report 7804 -> 641). -g1: line tables are all a
# crash's stack needs.
flags="-std=c++20 -g1 -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -Ireports/include -Iharness/include -Ikernels"
echo "==== fuzz: building with $($cxx --version | head -1)"
# The library is compiled in batches of $batch files (one file that #includes them), as the CMake
# build compiles it (cmake/infrabench_unity.cmake): each batch parses the headers once.
# An object is rebuilt when any of its sources or any header is newer: a changed struct must not
# leave objects built with its old layout beside new ones (a false crash in the first seed).
batch=${INFRABENCH_FUZZ_BATCH:-8}
newest_header=$(find reports/include harness/include tests/fuzz -name '*.h' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
units=()
for ((i = 0; i < ${#library[@]}; i += batch)); do
  unit="$out/obj/library_$((i / batch)).cpp"
  text=$(for s in "${library[@]:i:batch}"; do printf '#include "%s"\n' "$PWD/$s"; done)
  # Written only when it changes, so that its time says when its list last did.
  if [[ ! -e $unit || $(cat "$unit") != "$text" ]]; then printf '%s\n' "$text" >"$unit"; fi
  units+=("$unit")
done
for target in "${targets[@]}"; do units+=("tests/fuzz/fuzz_$target.cpp"); done
stale() {  # stale OBJECT SOURCE: the object is older than the source, a file it includes, or a header
  local o=$1 src=$2 member
  [[ -e $o && $o -nt $src && $o -nt $newest_header ]] || return 0
  for member in $(sed -n 's/^#include "\(.*\)"$/\1/p' "$src"); do [[ $o -nt $member ]] || return 0; done
  return 1
}
export -f stale
export newest_header
printf '%s\n' "${units[@]}" |
  xargs -P "$(nproc)" -I{} bash -c 'o="$1/obj/$(basename "$2").o"; if stale "$o" "$2"; then exec $3 $4 -c "$2" -o "$o"; fi' _ "$out" {} "$cxx" "$flags"
objs=()
for unit in "${units[@]}"; do
  case $unit in "$out"/obj/library_*) objs+=("$out/obj/$(basename "$unit").o") ;; esac
done
for target in "${targets[@]}"; do
  "$cxx" -fsanitize=fuzzer,address,undefined "${objs[@]}" "$out/obj/fuzz_$target.cpp.o" -o "$out/fuzz_$target"
done
status=0
for target in "${targets[@]}"; do
  work=$(mktemp -d)
  seeds=("tests/fuzz/corpus/$target")
  if [ "$target" = suite ]; then seeds+=(configs/suites); fi
  # Inputs that crashed once stay fixed: replay them first.
  for r in tests/fuzz/regressions/$target-*; do
    [ -e "$r" ] || continue
    if ! "$out/fuzz_$target" "$r" >"$out/replay_$target.log" 2>&1; then
      status=1
      tail -30 "$out/replay_$target.log" >&2
      echo "fuzz: $target regression input $r crashes again" >&2
    fi
  done
  # The names target's seeds hold 40,000-character names as a hostile file does (80 KB inputs).
  max_len=16384
  if [ "$target" = names ]; then max_len=131072; fi
  echo "==== fuzz: $target for ${secs} s (seed corpus tests/fuzz/corpus/$target)"
  if ! ASAN_OPTIONS=detect_leaks=1 "$out/fuzz_$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -max_len="$max_len" -dict=tests/fuzz/json.dict -artifact_prefix="$out/crash-$target-" -print_final_stats=1 \
      "$work" "${seeds[@]}" 2>"$out/fuzz_$target.log"; then
    status=1
    tail -40 "$out/fuzz_$target.log" >&2
    echo "fuzz: $target FAILED; reproducer under $out/crash-$target-*" >&2
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$out/fuzz_$target.log" | tr '\n' ' ' || true
    echo
  fi
  rm -rf "$work"
done
if [ "$status" -eq 0 ]; then echo "==== fuzz: no crash in any target"; fi
exit "$status"
