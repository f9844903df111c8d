#!/usr/bin/env bash
# Our ring (and recursive doubling) all-reduce next to MPI_Allreduce for messages >= 1 MiB, as the
# README's table: float32, out of place, sizes 1 MiB .. MAX_SIZE in powers of two, all three
# algorithms of one size back to back in the same run, ROUNDS runs. Prints, per size, the median
# busbw over rounds of each algorithm and the median over rounds of ring / MPI (and recursive
# doubling / MPI) measured in the same round, as a Markdown table, with the load average before and
# after (the numbers mean little on a loaded machine, and the table should say so).
#
#   benchmarks/collectives/compare_ring.sh [BUILD_DIR] [NP] [ROUNDS] [MAX_SIZE]
#
# Defaults: build 2 3 256MiB. One host, shared memory, unless $MPIRUN says otherwise; across the
# namespace cluster of ci/multinode.sh (TCP between hosts), as the README's table was measured:
#   ci/multinode.sh --hosts 3 -- env MPIRUN=ci/netns-mpirun.sh benchmarks/collectives/compare_ring.sh build 3
# Timing per configuration: $TIMING (default --min-time 1 --max-time 3). Memory: about 4 x MAX_SIZE
# per rank (send, receive and the ring's scratch).
set -euo pipefail
build=${1:-build}
np=${2:-2}
rounds=${3:-3}
max_size=${4:-256MiB}
bin=$(realpath "$build/infrabench")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "${MPIRUN:-}" ]; then
  MPIRUN="mpirun --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1"
  [ "$(id -u)" = 0 ] && MPIRUN="mpirun --allow-run-as-root ${MPIRUN#mpirun }"
fi
timing=${TIMING:---min-time 1 --max-time 3}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
for round in $(seq "$rounds"); do
  # shellcheck disable=SC2086
  $MPIRUN -np "$np" "$bin" run --filter '^collectives/mpi_allreduce$' -a "size=1MiB:$max_size" \
    -a dtype=float32 -a placement=out_of_place -a algorithm=mpi,ring,recursive_doubling $timing -q \
    -o "$work/ib.$round.json" > /dev/null
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$work" "$rounds" "$np" "$load_before" "$load_after" "$(($(date +%s) - start))" "$timing" <<'PY'
import json, statistics, sys
work, rounds, np, before, after, secs, timing = sys.argv[1:8]
rounds = int(rounds)
bus, ratio = {}, {}
hosts = set()
noisy = 0
for k in range(1, rounds + 1):
    rep = json.load(open(f"{work}/ib.{k}.json"))
    hosts |= {h.get("hostname", "?") for h in rep.get("hosts", [])}
    this = {}
    for r in rep["results"]:
        # Noisy samples (a loaded machine) are reported, not fatal; a failed or wrong result is.
        wrong = [w for w in r.get("invalid_reasons", []) if "verification" in w]
        if r["status"] != "passed" or wrong:
            sys.exit(f"round {k}: {r['axes']} {r['status']}: {r.get('reason', '')} {wrong}")
        noisy += 0 if r.get("valid", True) else 1
        m = {x["name"]: x["value"] for x in r["metrics"]}
        key = (r["axes"]["size"], r["axes"]["algorithm"])
        this[key] = m["busbw_gbps"]
        bus.setdefault(key, []).append(m["busbw_gbps"])
    for (size, alg), v in this.items():
        if alg != "mpi":
            ratio.setdefault((size, alg), []).append(v / this[(size, "mpi")])
med = statistics.median
print(f"{np} ranks on {len(hosts) or '?'} host(s), float32 out of place, {timing}, {rounds} rounds "
      f"({secs} s); load average {before} before, {after} after")
print(f"{noisy} results marked noisy (invalid: robust CV above --max-cv)")
print("busbw GB/s (median of the rounds); ratios: median over rounds of ring / MPI in the same round")
print()
print("| ranks | size | MPI_Allreduce | ring | recursive doubling | ring / MPI | rec. doubling / MPI |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for size in sorted({s for s, _ in bus}):
    label = f"{size >> 20} MiB"
    print(f"| {np} | {label} | {med(bus[(size, 'mpi')]):.2f} | {med(bus[(size, 'ring')]):.2f} | "
          f"{med(bus[(size, 'recursive_doubling')]):.2f} | {med(ratio[(size, 'ring')]):.0%} | "
          f"{med(ratio[(size, 'recursive_doubling')]):.0%} |")
PY
