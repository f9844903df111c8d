#!/usr/bin/env bash
# GPU smoke check for users of GPU nodes: runs every GPU benchmark of an infrabench build briefly,
# runs compute-sanitizer --tool memcheck over our own kernels (the SIMT, WMMA and mma.sync GEMMs,
# the SM copy and pointer-chase kernels, the verification kernels they launch), and prints one
# table: benchmark, configurations passed / invalid / failed / skipped, sanitizer errors, wall
# time (ci/gpu_check_table.py). Without a GPU it says so and exits 0.
#
#   ci/gpu-check.sh [--bin PATH] [--out DIR] [--max-time S] [--no-sanitizer]
#
# The binary: --bin (an executable or a build directory); else .gpu-bundle/ (made by
# ../shared/gpu/bundle.sh build, copied to the GPU machine: its env.sh is sourced); else
# build/infrabench; else the default preset is configured and built here.
# Exit status: 0 = pass (or no GPU), 1 = a configuration failed, was invalid, or the sanitizer
# found errors, 2 = no usable binary or bad arguments.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="" out="" max_time=0.2 sanitize=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --max-time) max_time=${2:?--max-time needs seconds}; shift 2 ;;
    --no-sanitizer) sanitize=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# ---- the binary --------------------------------------------------------------------------------
if [ -n "$bin" ]; then
  [ -d "$bin" ] && bin="$bin/infrabench"
elif [ -f "$root/.gpu-bundle/env.sh" ]; then
  # shellcheck disable=SC1091
  source "$root/.gpu-bundle/env.sh"
  bin=$(command -v infrabench || true)
elif [ -x "$root/build/infrabench" ]; then
  bin="$root/build/infrabench"
else
  echo "gpu-check: no build found: building the default preset (cmake --preset default)"
  (cd "$root" && cmake --preset default >/dev/null && cmake --build build --target infrabench) ||
    { echo "gpu-check: the build failed" >&2; exit 2; }
  bin="$root/build/infrabench"
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "gpu-check: no infrabench executable at '${bin:-?}'" >&2
  exit 2
fi

# ---- is there a GPU, and which benchmarks need one ---------------------------------------------
listing=$("$bin" list --json) || { echo "gpu-check: '$bin list --json' failed" >&2; exit 2; }
probe=$(printf '%s' "$listing" | python3 -c '
import json, sys
entries = json.load(sys.stdin)
gpu = [e for e in entries if "cuda" in e["requires"].split(",")]
if not gpu:
    print("nocuda")
    sys.exit()
cublas = [e for e in gpu if e["name"] == "gemm/cublas"] or gpu
first = cublas[0]
if not first["runnable"] and first["reason"].startswith("no CUDA device"):
    print("nogpu\t" + first["reason"])
    sys.exit()
print("gpu\t" + " ".join(e["name"] for e in gpu))
') || { echo "gpu-check: cannot read the benchmark list" >&2; exit 2; }
case "$probe" in
  nocuda)
    echo "gpu-check: $bin was built without CUDA: no GPU benchmark to check (build the default preset with nvcc present)" >&2
    exit 2 ;;
  nogpu*)
    echo "gpu-check: no GPU here (${probe#nogpu	}): nothing to check"
    exit 0 ;;
esac
read -r -a benchmarks <<<"${probe#gpu	}"

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
mkdir -p "$out" || exit 2
manifest="$out/manifest.tsv"
: >"$manifest"
now() { date +%s.%N; }
echo "gpu-check: $bin, ${#benchmarks[@]} GPU benchmarks, reports and logs in $out"

# ---- every GPU benchmark, briefly ----------------------------------------------------------------
for b in "${benchmarks[@]}"; do
  file="$out/$(echo "$b" | tr / _).json"
  t0=$(now)
  "$bin" run --filter "^$b\$" --min-time 0.02 --max-time "$max_time" --timeout 120 -q \
    -o "$file" >"$file.log" 2>&1
  t1=$(now)
  printf 'run\t%s\t%s\t%s\n' "$b" "$file" "$(awk "BEGIN { print $t1 - $t0 }")" >>"$manifest"
done

# ---- compute-sanitizer over our own kernels ----------------------------------------------------
sanitizer=$(command -v compute-sanitizer || true)
[ -n "$sanitizer" ] || [ ! -x /usr/local/cuda/bin/compute-sanitizer ] ||
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [ "$sanitize" = 1 ] && [ -z "$sanitizer" ]; then
  echo "gpu-check: compute-sanitizer not found: the sanitizer column is not run"
  sanitize=0
fi
# Small shapes and odd sizes: every edge path of every kernel, in seconds under memcheck.
sanitized=(
  "gemm/cuda_simt_fp32|-a shape=256,127x129x33"
  "gemm/cuda_wmma|-a shape=256,127x129x33 -a dtype=bf16"
  "gemm/cuda_mma|-a shape=256,200x136x72 -a dtype=bf16,fp16"
  "bandwidth/d2d|-a copy=sm -a size=1MiB,4097"
  "bandwidth/h2d|-a copy=sm -a memory=pinned -a size=64KiB,4097"
  "bandwidth/d2h|-a copy=sm -a memory=pinned -a size=4097"
  "bandwidth/gpu_latency|-a test=chase_device,chase_host -a working_set=1MiB"
)
if [ "$sanitize" = 1 ]; then
  for entry in "${sanitized[@]}"; do
    b=${entry%%|*}
    read -r -a axes <<<"${entry#*|}"
    printf '%s\n' "${benchmarks[@]}" | grep -qx "$b" || continue
    log="$out/$(echo "$b" | tr / _).memcheck.log"
    "$sanitizer" --tool memcheck --print-limit 20 \
      "$bin" run --filter "^$b\$" "${axes[@]}" --min-time 0.01 --max-time 0.05 --timeout 600 -q \
      -o "$out/$(echo "$b" | tr / _).memcheck.json" >"$log" 2>&1
    printf 'sanitizer\t%s\t%s\n' "$b" "$log" >>"$manifest"
  done
fi

python3 "$root/ci/gpu_check_table.py" "$manifest"
