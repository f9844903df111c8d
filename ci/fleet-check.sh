#!/usr/bin/env bash
# Fleet check at fleet size (issue 39): `infrabench check` of NODES synthetic node reports made from
# one real report (ci/fleet_reports.py: hosts renamed, +-2% apart, some degraded), its wall time,
# CPU time and peak memory (/usr/bin/time -v), and whether exactly the degraded nodes are drained.
# A measurement, not a CI stage: tests/e2e/test_fleet_check.py is the 50-node version CI runs.
# Without REPORT it measures one with the acceptance suite first (minutes on 2 cores).
#   ci/fleet-check.sh [BUILD_DIR=build] [NODES=1000] [REPORT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
nodes=${2:-1000}
report=${3:-}
bin=$build/infrabench
[[ -x $bin ]] || { echo "fleet-check: no $bin (build first)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "fleet-check: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [[ -z $report ]]; then
  report=$dir/real.json
  echo "fleet-check: measuring a real node report (run --suite acceptance)" >&2
  "$bin" run --suite acceptance -q --telemetry off -o "$report" >/dev/null
fi
# Degraded: 1% of the nodes 3x slow, 0.5% 1.3x off the others, 0.5% with a failed benchmark.
pick() { awk -v n="$nodes" -v step="$1" -v off="$2" 'BEGIN { s = ""; for (i = off; i < n; i += step) s = s (s == "" ? "" : ",") i; print s }'; }
python3 "$here/fleet_reports.py" "$report" "$dir/nodes" --nodes "$nodes" --slow "$(pick 100 7)" \
  --outlier "$(pick 200 61)" --failed "$(pick 200 113)" --baseline "$dir/fleet.json" >"$dir/expected"
bytes=$(du -sb "$dir/nodes" | cut -f1)
rules=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["rules"]))' "$dir/fleet.json")
rc=0
/usr/bin/time -v -o "$dir/time" "$bin" check --baseline "$dir/fleet.json" "$dir/nodes" --format json \
  >"$dir/out.json" 2>"$dir/err" || rc=$?
if [[ $rc -ne 1 ]]; then  # the degraded nodes fail it: exit 1 is the expected outcome
  echo "fleet-check: check exited $rc: $(tail -1 "$dir/err")" >&2
  exit 1
fi
python3 -c 'import json, sys; print("\n".join(d["host"] for d in json.load(open(sys.argv[1]))["drain"]))' \
  "$dir/out.json" >"$dir/drained"
if ! diff -q "$dir/expected" "$dir/drained" >/dev/null; then
  echo "fleet-check: drained $(wc -l <"$dir/drained") node(s), expected $(wc -l <"$dir/expected"):" >&2
  diff "$dir/expected" "$dir/drained" | head -20 >&2
  exit 1
fi
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$dir/time")
user=$(awk -F': ' '/User time/ { print $2 }' "$dir/time")
sys=$(awk -F': ' '/System time/ { print $2 }' "$dir/time")
kb=$(awk -F': ' '/Maximum resident/ { print $2 }' "$dir/time")
awk -v n="$nodes" -v b="$bytes" -v r="$rules" -v w="$wall" -v u="$user" -v s="$sys" -v k="$kb" \
  -v d="$(wc -l <"$dir/drained")" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  printf "fleet check of %d node reports (%.1f MB, %d rules): %s wall, %.2f s CPU, %d MB peak; %d drained, as injected (load average %s)\n",
    n, b / 1e6, r, w, u + s, k / 1024, d, load }'
