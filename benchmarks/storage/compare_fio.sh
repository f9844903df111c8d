#!/usr/bin/env bash
# Runs fio (the reference: --ioengine=io_uring --direct=1) and infrabench's storage/read on the
# same file with the same parameters, alternating which goes first, and prints the medians and
# the ratio infrabench/fio for bandwidth, IOPS and p99 completion latency as a Markdown table.
# Two more rows put both tools' psync engine on a RAM-backed file (/dev/shm): the IOPS ceiling of
# the submission/completion loop itself, with no device behind it.
#
#   benchmarks/storage/compare_fio.sh [--bin build/infrabench] [--dir .] [--size 1G] [--runtime 5]
#                                     [--alternations 6] [--workloads LIST] [--raw FILE]
#                                     [--ib-args "-a submit_batch=1 ..."]
# LIST (comma-separated, default all): seq128k_qd32 seq1m_qd8 rand4k_qd1 rand4k_qd32 rand4k_qd128
#   shm_psync_rand4k_qd1 shm_io_uring_rand4k_qd1
# Each ratio is taken within an alternation (fio's run and infrabench's next to it), so the
# table's median and range (min-max) are of paired ratios: the virtual disk's drift between
# alternations cancels; the verdict reads the 95% confidence interval of that median (sign test,
# 6 alternations or more), so "faster" or "slower" is said only beyond the noise. CPU per I/O:
# fio's usr+sys CPU over its I/Os; infrabench's cpu_us_per_io.
# The test file (incompressible, from /dev/urandom) is made in a new directory under --dir and
# removed at the end, also on Ctrl-C. --raw FILE keeps every run's numbers (JSON lines).
set -euo pipefail

bin=build/infrabench
dir=.
size=1G
runtime=5
alternations=6
workloads=seq128k_qd32,seq1m_qd8,rand4k_qd1,rand4k_qd32,rand4k_qd128,shm_psync_rand4k_qd1,shm_io_uring_rand4k_qd1
raw=""
ib_args=""

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --alternations) alternations=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --raw) raw=$2; shift 2 ;;
    --ib-args) ib_args=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "compare_fio.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
done

die() { echo "compare_fio.sh: error: $*" >&2; exit 2; }
command -v fio >/dev/null || die "fio is not installed (apt-get install fio)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON results"
[ -x "$bin" ] || die "infrabench binary '$bin' not found (build it, or pass --bin)"
[ -d "$dir" ] || die "--dir '$dir' is not a directory"
bytes=$(numfmt --from=iec "${size%B}" 2>/dev/null) || die "--size '$size' is not a size (e.g. 1G, 256M)"
runtime_ms=$(python3 -c "import sys; v=float(sys.argv[1]); assert v > 0; print(max(1, round(v*1000)))" "$runtime") \
  || die "--runtime '$runtime' is not a positive number of seconds"

work=$(mktemp -d "$dir/compare-fio-XXXXXX")
shm=""
cleanup() {
  [ -n "$raw" ] && [ -f "$work/results.jsonl" ] && cp "$work/results.jsonl" "$raw"
  rm -rf "$work"; [ -n "$shm" ] && rm -rf "$shm"; true
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

make_file() {  # path bytes: incompressible data, on the device, out of the page cache
  echo "compare_fio.sh: writing $(numfmt --to=iec "$2") of random data to $1" >&2
  head -c "$2" /dev/urandom > "$1"
  python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
PY
}

disk_file="$work/data"
need_disk=0; need_shm=0
IFS=, read -r -a wl <<< "$workloads"
for w in "${wl[@]}"; do
  case "$w" in
    seq128k_qd32|seq1m_qd8|rand4k_qd1|rand4k_qd32|rand4k_qd128) need_disk=1 ;;
    shm_psync_rand4k_qd1|shm_io_uring_rand4k_qd1) need_shm=1 ;;
    *) die "unknown workload '$w'" ;;
  esac
done
[ "$need_disk" = 1 ] && make_file "$disk_file" "$bytes"
if [ "$need_shm" = 1 ]; then
  [ -d /dev/shm ] || die "/dev/shm is missing: no RAM-backed file for the loop-ceiling rows"
  shm=$(mktemp -d /dev/shm/compare-fio-XXXXXX)
  shm_bytes=$(( bytes < 268435456 ? bytes : 268435456 ))
  make_file "$shm/data" "$shm_bytes"
fi

# name -> label file engine rw pattern bs(fio) bs(infrabench) qd
spec() {
  case "$1" in
    seq128k_qd32) echo "seq 128 KiB QD32|$disk_file|io_uring|read|seq|128k|128KiB|32" ;;
    seq1m_qd8) echo "seq 1 MiB QD8|$disk_file|io_uring|read|seq|1m|1MiB|8" ;;
    rand4k_qd32) echo "rand 4 KiB QD32|$disk_file|io_uring|randread|rand|4k|4KiB|32" ;;
    rand4k_qd1) echo "rand 4 KiB QD1|$disk_file|io_uring|randread|rand|4k|4KiB|1" ;;
    rand4k_qd128) echo "rand 4 KiB QD128|$disk_file|io_uring|randread|rand|4k|4KiB|128" ;;
    shm_psync_rand4k_qd1) echo "tmpfs psync rand 4 KiB QD1|$shm/data|psync|randread|rand|4k|4KiB|1" ;;
    shm_io_uring_rand4k_qd1) echo "tmpfs io_uring rand 4 KiB QD1|$shm/data|io_uring|randread|rand|4k|4KiB|1" ;;
  esac
}

results="$work/results.jsonl"
: > "$results"
run_fio() {  # label file engine rw bs qd
  local out="$work/fio.json"
  fio --name=compare --filename="$2" --readonly --ioengine="$3" --rw="$4" --bs="$5" --iodepth="$6" \
      --direct=1 --numjobs=1 --time_based --runtime="${runtime_ms}ms" --output-format=json \
      --output="$out" >/dev/null
  python3 - "$out" "$1" >> "$results" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
r = job["read"]
# fio's CPU: usr% + sys% of its job's run time, over the I/Os it completed.
cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1e3
print(json.dumps({"w": sys.argv[2], "tool": "fio", "bw": r["bw_bytes"], "iops": r["iops"],
                  "p99_us": r["clat_ns"]["percentile"]["99.000000"] / 1e3,
                  "cpu_us_per_io": cpu_s / max(r["total_ios"], 1) * 1e6}))
PY
}
run_ib() {  # label file engine pattern bs qd
  local out="$work/ib.json"
  # --target-ci tiny: sample for the whole runtime, as fio does.
  "$bin" run --filter '^storage/read$' -a engine="$3" -a pattern="$4" -a block_size="$5" -a queue_depth="$6" \
      -a jobs=1 -a direct=1 -a target="$2" -a size=0 --min-time "$runtime" --max-time "$runtime" \
      --target-ci 0.000001 $ib_args -q -o "$out" >/dev/null
  python3 - "$out" "$1" >> "$results" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
if r["status"] != "passed":
    sys.exit(f"infrabench: {r['status']}: {r.get('reason')}")
m = {x["name"]: x["value"] for x in r["metrics"]}
# fio's bandwidth and IOPS are totals over its runtime; compare the same statistic: the work of
# one call over the mean time per call (the report's own metrics use the median sample).
mean_s = r["time_s"]["mean"]
work = r["work_per_iteration"]
print(json.dumps({"w": sys.argv[2], "tool": "infrabench", "bw": work["bytes_read"] / mean_s,
                  "iops": work["items"] / mean_s, "p99_us": m["latency_us_p99"],
                  "cpu_us_per_io": m["cpu_us_per_io"]}))
PY
}

for w in "${wl[@]}"; do
  IFS='|' read -r label file engine rw pattern fbs ibs qd <<< "$(spec "$w")"
  for ((i = 1; i <= alternations; i++)); do
    echo "compare_fio.sh: $label, alternation $i/$alternations" >&2
    if (( i % 2 == 1 )); then
      run_fio "$label" "$file" "$engine" "$rw" "$fbs" "$qd"
      run_ib "$label" "$file" "$engine" "$pattern" "$ibs" "$qd"
    else
      run_ib "$label" "$file" "$engine" "$pattern" "$ibs" "$qd"
      run_fio "$label" "$file" "$engine" "$rw" "$fbs" "$qd"
    fi
  done
done

python3 - "$results" "$alternations" "$runtime" <<'PY'
import json, math, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
order = list(dict.fromkeys(r["w"] for r in rows))
def runs(w, tool):
    return [r for r in rows if r["w"] == w and r["tool"] == tool]
def median_ci(xs):
    """Distribution-free 95% confidence interval of the median (the sign test's order statistics):
    [x_(k), x_(n-k+1)] for the largest k with 2 P(Binomial(n, 1/2) <= k-1) <= 0.05; None below 6."""
    s, n, k = sorted(xs), len(xs), 0
    while 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.05:
        k += 1
    return (s[k - 1], s[n - k]) if k > 0 else None
def cell(w, k):
    """fio's median, infrabench's median, the paired ratios' median, range and median CI."""
    f, b = runs(w, "fio"), runs(w, "infrabench")
    ratios = [y[k] / x[k] for x, y in zip(f, b) if x[k] > 0]
    return (statistics.median(x[k] for x in f), statistics.median(y[k] for y in b),
            statistics.median(ratios), min(ratios), max(ratios), median_ci(ratios))
def verdict(io, p99):
    """Is the target met beyond the noise? Read from the CIs, not from one median."""
    if io[5] is None or p99[5] is None:
        return "too few alternations for a 95% CI (6 or more)"
    (lo, hi), (plo, phi) = io[5], p99[5]
    speed = "faster" if lo >= 1 else "slower" if hi < 1 else "parity within the noise"
    tail = "within 10%" if phi <= 1.10 else "over 10%" if plo > 1.10 else "undecided"
    return f"IOPS: {speed} [{lo:.2f}, {hi:.2f}]; p99: {tail} [{plo:.2f}, {phi:.2f}]"
print(f"infrabench / fio, {sys.argv[2]} alternations of {sys.argv[3]} s each (medians; ratio = median of "
      "the paired ratios, range min-max); throughput as total bytes / total time for both (target: "
      "ratio >= 1.00); p99 completion latency (target: ratio <= 1.10); CPU per I/O (usr + sys); "
      "verdict: the 95% confidence interval of the median paired ratio (sign test)\n")
print("| workload | fio MB/s | infrabench MB/s | ratio | fio IOPS | infrabench IOPS | ratio (range) "
      "| fio p99 us | infrabench p99 us | ratio (range) | fio CPU us/IO | infrabench CPU us/IO | verdict |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for w in order:
    bw, io, p99, cpu = (cell(w, k) for k in ("bw", "iops", "p99_us", "cpu_us_per_io"))
    print(f"| {w} | {bw[0]/1e6:.0f} | {bw[1]/1e6:.0f} | {bw[2]:.2f} | {io[0]:.0f} | {io[1]:.0f} | "
          f"{io[2]:.2f} ({io[3]:.2f}-{io[4]:.2f}) | {p99[0]:.0f} | {p99[1]:.0f} | "
          f"{p99[2]:.2f} ({p99[3]:.2f}-{p99[4]:.2f}) | {cpu[0]:.2f} | {cpu[1]:.2f} | {verdict(io, p99)} |")
PY
