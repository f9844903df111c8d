#!/usr/bin/env bash
# Issue 26, items 4 and 5, measured on this machine (not a timed test: a person reruns it):
#   (a) a fleet baseline made from 4 good runs FAILs runs confined to one CPU (taskset -c 0) and
#       PASSes the other good runs;
#   (b) history check over >= 8 good runs then >= 4 confined runs finds the step within 3 runs of
#       it; over only good runs (A/A) it finds no change point.
# Usage: ci/verdicts-history.sh [OUT_DIR]     (OUT_DIR keeps every report, database and verdict)
# Environment: INFRABENCH_BIN (build-cpu/infrabench), GOOD (12 good runs, >= 10), BAD (5 confined
# runs, >= 4), FILTER (a --filter for the runs; empty: the whole quick suite), REUSE=1 keeps the
# reports of an earlier call in OUT_DIR and only judges them again.
# Exit 0 when every acceptance holds, 1 otherwise.
set -euo pipefail

bin=${INFRABENCH_BIN:-build-cpu/infrabench}
out=${1:-verdicts-history-out}
good=${GOOD:-12}
bad=${BAD:-5}
filter=${FILTER:-}
((good >= 10 && bad >= 4)) || { echo "GOOD must be >= 10 and BAD >= 4" >&2; exit 2; }
[[ -x $bin ]] || { echo "no infrabench at $bin (build it, or set INFRABENCH_BIN)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }
mkdir -p "$out"

run_args=(run -q)
[[ -n $filter ]] && run_args+=(--filter "$filter")

# One run; exit 1 (a noisy result) still writes the report. Good runs first, then the confined
# ones, so the history sees the step where it happened.
measure() {
  local path=$1
  shift
  [[ ${REUSE:-0} == 1 && -s $path ]] && return 0
  "$@" "$bin" "${run_args[@]}" -o "$path" >/dev/null 2>"$path.log" || [[ -s $path ]]
}
for ((i = 1; i <= good; i++)); do measure "$out/good$i.json"; done
for ((i = 1; i <= bad; i++)); do measure "$out/slow$i.json" taskset -c 0; done

ok=1
verdict() { echo "$1"; [[ $2 == pass ]] || ok=0; }

# (a) the fleet baseline from the first four good runs.
"$bin" baseline create "$out"/good{1..4}.json -o "$out/fleet.json" 2>"$out/fleet.log"
cat "$out/fleet.log"
check() { "$bin" check "$1" --baseline "$out/fleet.json" >"$1.check" 2>&1; }
slow_failed=0 good_passed=0
for ((i = 1; i <= bad; i++)); do check "$out/slow$i.json" || slow_failed=$((slow_failed + 1)); done
for ((i = 5; i <= good; i++)); do check "$out/good$i.json" && good_passed=$((good_passed + 1)); done
echo "(a) fleet baseline from good1-4: FAILed $slow_failed of $bad confined runs; PASSed" \
  "$good_passed of $((good - 4)) other good runs"
grep -h "^  FAIL" "$out/slow1.json.check" | cut -c1-110 || true
for ((i = 5; i <= good; i++)); do grep -h "^  FAIL" "$out/good$i.json.check" | sed "s/^/  good$i: /" | cut -c1-120; done || true
[[ $slow_failed == "$bad" ]] && s=pass || s=fail
verdict "(a) confined runs FAIL: $s" $s
[[ $good_passed == $((good - 4)) ]] && s=pass || s=fail
verdict "(a) good runs PASS (the fifth and later): $s" $s

# (b) history: 8 good runs then the confined ones; the step is at the 9th run.
judge() {
  local db=$1
  shift
  rm -f "$db"*
  "$bin" history record "$@" --db "$db" >/dev/null
  local rc=0
  "$bin" history check --db "$db" >"$db.check" || rc=$?
  "$bin" history check --db "$db" --format json >"$db.json" || true
  return $rc
}
rc=0
judge "$out/step.db" "$out"/good{1..8}.json $(for ((i = 1; i <= bad; i++)); do echo "$out/slow$i.json"; done) ||
  rc=$?
grep -E "^(REGRESSION|better)|^history check:" "$out/step.db.check" | cut -c1-220
# The run ids of the regressions' change points; the step is run 9 (record order = time order).
steps=$(/usr/bin/python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print(" ".join(str(s["change_points"][-1]["run"]) for s in doc["series"] if s["regression"]))' \
  "$out/step.db.json")
near=0 far=0
for r in $steps; do
  if ((r >= 6 && r <= 12)); then near=$((near + 1)); else far=$((far + 1)); fi
done
echo "(b) 8 good + $bad confined runs: exit $rc, $near regression(s) within 3 runs of run 9," \
  "$far elsewhere (change points at runs: ${steps:-none})"
[[ $rc == 1 && $near -ge 1 && $far == 0 ]] && s=pass || s=fail
verdict "(b) step found within 3 runs: $s" $s

rc=0
judge "$out/aa.db" $(for ((i = 1; i <= good; i++)); do echo "$out/good$i.json"; done) || rc=$?
grep -E "^(REGRESSION|better)|^history check:" "$out/aa.db.check" | cut -c1-220
changes=$(/usr/bin/python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print(sum(len(s["change_points"]) for s in doc["series"]), len(doc["series"]))' "$out/aa.db.json")
echo "(b) A/A over $good good runs: exit $rc; change points, series: $changes"
[[ $rc == 0 && ${changes%% *} == 0 ]] && s=pass || s=fail
verdict "(b) no change point over good runs: $s" $s

((ok)) && echo "verdicts-history: every acceptance holds" || echo "verdicts-history: NOT every acceptance holds"
((ok))
