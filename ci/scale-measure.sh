#!/usr/bin/env bash
# What a multi-host run costs as hosts are added (docs/scale.md): run under the namespace cluster of
# ci/multinode.sh, one rank per host, it runs each configuration set below and prints per run the
# wall time, rank 0's and the largest other rank's peak memory (/usr/bin/time on every rank), the
# report's bytes and results, `check`'s time and memory on the report, and rank 0's coordination
# (run.coordination: starting each configuration run together, outcomes, the final gather).
#   ci/multinode.sh --hosts N -- ci/scale-measure.sh
#   SCALE_ONLY='short|latency' ci/multinode.sh --hosts 64 -- ci/scale-measure.sh   (some measures)
set -euo pipefail
: "${INFRABENCH_NETNS_HOSTS:?run this under ci/multinode.sh}"
here=$(cd "$(dirname "$0")" && pwd)
bin=${INFRABENCH_BIN:-build/infrabench}
hosts=$INFRABENCH_NETNS_HOSTS
dir=$(mktemp -d /tmp/infrabench-scale.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"

measure() {  # NAME RUN-ARGS...
  local name=$1
  shift
  # SCALE_ONLY=REGEX: only the measures whose name matches (64 hosts: all pairs take minutes).
  if [[ -n ${SCALE_ONLY:-} && ! $name =~ $SCALE_ONLY ]]; then return 0; fi
  rm -f "$dir"/mem.* "$dir/r.json"
  local t0 t1
  t0=$(date +%s.%N)
  "$here/netns-mpirun.sh" -np "$hosts" sh -c 'exec /usr/bin/time -f "%e %M" -o "$0/mem.$OMPI_COMM_WORLD_RANK" "$@"' \
    "$dir" "$bin" run "$@" -q --telemetry off -o "$dir/r.json" >"$dir/out" 2>&1 || {
    echo "scale-measure: $name failed: $(tail -3 "$dir/out")" >&2
    return 1
  }
  t1=$(date +%s.%N)
  local rank0 others results bytes
  rank0=$(cut -d' ' -f2 "$dir/mem.0")
  others=$(cat "$dir"/mem.* | cut -d' ' -f2 | sort -n | tail -1)
  bytes=$(stat -c %s "$dir/r.json")
  results=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$dir/r.json")
  # Rank 0's coordination (run.coordination): per configuration run, and the final gather.
  local coord
  coord=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["run"]["coordination"]
print("coordination %.1f ms per configuration run (%d runs: start %.2f s, outcomes %.2f s), gather %.3f s" % (
    c["per_configuration_ms"], c["configuration_runs"], c["start_s"], c["outcomes_s"], c["gather_s"]))' "$dir/r.json")
  # check of the report against a one-rule baseline (the time is reading and judging it).
  echo '{"infrabench_baseline": 1, "rules": [{"id": "lat", "benchmark": "bandwidth/memory_latency", "metric": "ns_per_load", "max": 1000}]}' >"$dir/b.json"
  /usr/bin/time -f "%e %M" -o "$dir/check.time" "$bin" check "$dir/r.json" -b "$dir/b.json" >/dev/null 2>&1 || true
  read -r cwall ckb < <(tail -1 "$dir/check.time")  # after "Command exited with non-zero status"
  awk -v n="$name" -v h="$hosts" -v w="$(echo "$t1 - $t0" | bc)" -v r0="$rank0" -v ro="$others" \
    -v b="$bytes" -v res="$results" -v cw="$cwall" -v ck="$ckb" 'BEGIN {
    printf "%s, %d hosts: %.1f s wall (mpirun to exit), rank 0 peak %.0f MB (largest rank %.0f MB), report %.1f KB (%d results, %.1f KB per rank), check %.2f s %.0f MB\n",
      n, h, w, r0 / 1024, ro / 1024, b / 1e3, res, b / 1e3 / h, cw, ck / 1024 }'
  echo "  $coord"
}

measure "pairwise sampled" --filter '^collectives/pairwise$' -a size=256KiB -a pairs=sampled
measure "pairwise all" --filter '^collectives/pairwise$' -a size=256KiB -a pairs=all
# 16 short configuration runs: the coordination per configuration run (run.coordination) with
# enough runs to be an average, each sampling ~20 ms.
measure "16 short runs" --filter '^bandwidth/memory_latency$' -a working_set=4KiB:512KiB \
  --repetitions 2 --min-time 0.01 --max-time 0.02
measure "latency+allreduce" --filter '^(bandwidth/memory_latency|collectives/mpi_allreduce)$' \
  -a working_set=16KiB -a size=1MiB -a algorithm=mpi -a dtype=float32 -a placement=out_of_place \
  --min-time 0.05 --max-time 0.2
