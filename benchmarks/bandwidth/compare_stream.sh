#!/usr/bin/env bash
# Compares bandwidth/host_memory with McCalpin's reference STREAM on this machine.
#
#   benchmarks/bandwidth/compare_stream.sh PATH/TO/stream.c [options]
#
# stream.c is not part of this repository (its licence asks that modified or non-conforming
# results be labelled): fetch it yourself, e.g. from https://www.cs.virginia.edu/stream/FTP/Code/
# or github.com/jeffhammond/STREAM. The script compiles it with `gcc -fopenmp` at -O3, -O2 and
# -O (the flags stream.c's own instructions suggest), at the same array size as infrabench, then
# runs STREAM (OMP_NUM_THREADS=1 and 2, OMP_PROC_BIND=true) and infrabench alternately, so slow
# drifts of the machine hit both alike. Both report the best of their repetitions; the ratio is
# against the fastest STREAM build; infrabench's median is printed too. GB = 1e9 bytes in both.
#
# Options:
#   --infrabench PATH   the infrabench binary (default: build/infrabench)
#   --elements N        elements per array (default 33554432 = 256 MiB of doubles)
#   --runs N            alternating rounds (default 3)
#   --threads LIST      thread counts (default 1,2)
#   --stores LIST       infrabench store variants (default regular; regular,nontemporal adds
#                       the streaming-store rows, which STREAM's plain C code has no match for)
#   --keep DIR          keep the compiled binaries and raw outputs in DIR
set -euo pipefail

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
infrabench="$root/build/infrabench"
elements=33554432
runs=3
threads=1,2
stores=regular
keep=""

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
stream_c=$1
shift
while [[ $# -gt 0 ]]; do
  case "$1" in
    --infrabench) infrabench=$2; shift 2 ;;
    --elements) elements=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --stores) stores=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare_stream.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

[[ -f $stream_c ]] || { echo "compare_stream.sh: no stream.c at $stream_c" >&2; exit 2; }
[[ -x $infrabench ]] || { echo "compare_stream.sh: no infrabench binary at $infrabench (build first, or --infrabench)" >&2; exit 2; }
command -v gcc >/dev/null || { echo "compare_stream.sh: gcc not found" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compare_stream.sh: python3 not found" >&2; exit 2; }

if [[ -n $keep ]]; then
  mkdir -p "$keep"
  work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

# Same array size for both; NTIMES=20 gives STREAM 19 timed repetitions to take its best from.
opts=(O3 O2 O1)  # O1 is stream.c's suggested plain -O
for opt in "${opts[@]}"; do
  gcc "-$opt" -fopenmp -DSTREAM_ARRAY_SIZE="$elements" -DNTIMES=20 "$stream_c" -o "$work/stream_$opt"
done

echo "array: $elements doubles ($((elements * 8)) bytes) per array; $runs rounds; load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
IFS=, read -r -a thread_list <<<"$threads"
for ((r = 1; r <= runs; r++)); do
  for t in "${thread_list[@]}"; do
    for opt in "${opts[@]}"; do
      echo "round $r: STREAM -$opt, $t threads" >&2
      OMP_NUM_THREADS=$t OMP_PROC_BIND=true "$work/stream_$opt" >"$work/stream_${opt}_t${t}_r${r}.txt"
    done
  done
  echo "round $r: infrabench threads=$threads stores=$stores" >&2
  "$infrabench" run --filter '^bandwidth/host_memory$' -a "threads=$threads" \
    -a "array_size=$((elements * 8))" -a "stores=$stores" --quiet \
    -o "$work/infrabench_r${r}.json" >"$work/infrabench_r${r}.txt" ||
    echo "round $r: infrabench exited $? (failed configurations are listed below)" >&2
done

echo "done; load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows up as noise)" >&2

python3 - "$work" "$runs" "$elements" <<'PY'
import glob, json, os, re, statistics, sys

work, runs, elements = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kernels = ["copy", "scale", "add", "triad"]
arrays = {"copy": 2, "scale": 2, "add": 3, "triad": 3}  # STREAM's byte count per element / 8

# STREAM: "Triad:  12345.6  avg min max" -> best MB/s (kept: the best over rounds) and the rate
# from the average time (kept: the median over rounds), the closest STREAM has to a typical value.
stream = {}  # (opt, kernel, threads) -> best GB/s
stream_avg = {}  # (opt, kernel, threads) -> [GB/s from the average time, per round]
for path in glob.glob(os.path.join(work, "stream_O*_t*_r*.txt")):
    opt, t = re.search(r"stream_(O\d)_t(\d+)_r\d+\.txt$", path).groups()
    text = open(path).read()
    if "Solution Validates" not in text:
        sys.exit(f"STREAM did not validate: {path}")
    for line in text.splitlines():
        m = re.match(r"(Copy|Scale|Add|Triad):\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            kernel = m.group(1).lower()
            key = (opt, kernel, int(t))
            stream[key] = max(stream.get(key, 0.0), float(m.group(2)) / 1000.0)
            avg_rate = arrays[kernel] * 8 * elements / float(m.group(3)) / 1e9
            stream_avg.setdefault(key, []).append(avg_rate)

# infrabench: bandwidth_gbps `best` (fastest sample) and `value` (median sample) per run.
ib = {}  # (kernel, threads, stores) -> {"best": [...], "median": [...], "problems": [...]}
for path in sorted(glob.glob(os.path.join(work, "infrabench_r*.json"))):
    for res in json.load(open(path))["results"]:
        if res["benchmark"] != "bandwidth/host_memory":
            continue
        ax = res["axes"]
        key = (ax["kernel"], int(ax["threads"]), ax["stores"])
        entry = ib.setdefault(key, {"best": [], "median": [], "problems": []})
        if res["status"] != "passed":
            entry["problems"].append(res["status"] + ": " + res.get("reason", ""))
            continue
        if not res.get("valid", True):
            entry["problems"] += res.get("invalid_reasons", [])
        bw = next(m for m in res["metrics"] if m["name"] == "bandwidth_gbps")
        entry["best"].append(bw["best"])
        entry["median"].append(bw["value"])

head = ["kernel", "threads", "stores", "STREAM -O3", "STREAM -O2", "STREAM -O", "STREAM avg",
        "infrabench best", "infrabench median", "best ratio", "typical ratio"]
rows = []
for (kernel, t, stores) in sorted(ib, key=lambda k: (kernels.index(k[0]), k[1], k[2])):
    e = ib[(kernel, t, stores)]
    refs = [stream.get((opt, kernel, t)) for opt in ("O3", "O2", "O1")]
    ref = max((v for v in refs if v is not None), default=None)
    avgs = [statistics.median(stream_avg[(opt, kernel, t)])
            for opt in ("O3", "O2", "O1") if (opt, kernel, t) in stream_avg]
    ref_avg = max(avgs, default=None)
    best = max(e["best"]) if e["best"] else None
    med = statistics.median(e["median"]) if e["median"] else None
    fmt = lambda v: f"{v:.1f}" if v is not None else "-"
    ratio = lambda x, y: f"{x / y:.3f}" if x and y else "-"
    rows.append([kernel, str(t), stores, *map(fmt, refs), fmt(ref_avg), fmt(best), fmt(med),
                 ratio(best, ref), ratio(med, ref_avg)])
    for p in sorted(set(e["problems"])):
        print(f"note: {kernel} threads={t} {stores}: {p}", file=sys.stderr)

widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
print("  ".join("-" * w for w in widths))
for r in rows:
    print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
print(f"""
GB/s (GB = 1e9 B), bytes counted as STREAM counts them, over {runs} alternating rounds.
STREAM -O3/-O2/-O: best rate of each build (best of 19 repetitions, best round).
STREAM avg: rate from STREAM's average time, median over rounds, best build.
infrabench best: fastest sample of any round; median: median over rounds of each round's median.
best ratio = infrabench best / fastest STREAM build; typical ratio = infrabench median / STREAM avg.""")
PY
