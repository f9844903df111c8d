#!/usr/bin/env bash
# How long `infrabench report` takes on a 64-rank full-suite-shaped report (issue 25: under 5 s).
# A benchmark, not a test: it synthesises the report (tests/perf/synth_report.py, made-up numbers
# in the shape of the full suite on GPU nodes, 8 ranks a host) and times the renderer once.
# LIST_BIN is the build whose `list --suite full` gives the configurations (default: the one
# timed): a CUDA build lists 1,643 (the issue's 209 MB at 64 ranks), a CPU-only one 476.
#   ci/report-speed.sh [BUILD_DIR=build] [RANKS=64] [LIST_BIN=BUILD_DIR/infrabench]
set -euo pipefail
build=${1:-build}
ranks=${2:-64}
bin=$build/infrabench
list_bin=${3:-$bin}
[[ -x $bin ]] || { echo "report-speed: no $bin (build first)" >&2; exit 2; }
[[ -x $list_bin ]] || { echo "report-speed: no $list_bin" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$(dirname "$0")/../tests/perf/synth_report.py" --bin "$list_bin" --ranks "$ranks" -o "$dir/synth.json"
# Wall time depends on what else the machine runs; CPU time (user + sys) is the renderer's own.
if ! /usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$bin" report "$dir/synth.json" -o "$dir/report.html" 2>"$dir/err"; then
  echo "report-speed: report failed: $(grep -v "exited with" "$dir/err" | tail -1)" >&2
  exit 1
fi
read -r wall user sys kb <"$dir/time"
awk -v w="$wall" -v u="$user" -v s="$sys" -v k="$kb" -v r="$ranks" 'BEGIN {
  printf "report of a %d-rank synthetic full-suite report: %.2f s wall, %.2f s CPU, %d MB peak\n", r, w, u + s, k / 1024 }'
