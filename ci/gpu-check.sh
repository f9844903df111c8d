#!/usr/bin/env bash
# The GPU check: judges the GPU half of an infrabench build on one GPU in about 10 minutes. It runs
# every GPU benchmark (those needing CUDA or NVML, and training/step on the GPU): GEMMs, copies,
# latency, the training step (the tiny model for the gradient check, GPT-2 124M timed), stress/gpu
# for 15 s, then health/* after that load; compute-sanitizer memcheck over our own kernels (the
# SIMT, WMMA and mma.sync GEMMs, the SM copy and pointer-chase kernels, the transformer's); and,
# where PyTorch is importable (run without our libraries: env -u LD_LIBRARY_PATH), PyTorch on the
# same GPU as the reference (ci/gpu_reference.py: matmul per dtype, copies;
# benchmarks/training/pytorch_reference.py: the GPT-2 124M step, eager and compiled). It prints
# one table (ci/gpu_check_table.py): each benchmark's configurations passed / invalid / failed /
# skipped (skipped are not passes), its headline number, % of the datasheet peak or link, the ratio
# to PyTorch, sanitizer errors and wall time; then the PyTorch comparisons. Without a GPU it says so
# and exits 0.
#
#   ci/gpu-check.sh [--bin PATH] [--out DIR] [--max-time S] [--no-sanitizer] [--no-reference]
#                   [--quick]
#
# --quick: no torch.compile and a shorter stress (a first look in about 5 minutes).
# The binary: --bin (an executable or a build directory); else .gpu-bundle/ (made by
# ../shared/gpu/bundle.sh build, copied to the GPU machine: its env.sh is sourced); else
# build/infrabench; else the default preset is configured and built here.
# Exit status: 0 = pass (or no GPU), 1 = a configuration failed or was invalid, a benchmark that
# one GPU can run ran nothing, or the sanitizer found errors; 2 = no usable binary or bad arguments.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="" out="" max_time=0.2 sanitize=1 reference=1 quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --max-time) max_time=${2:?--max-time needs seconds}; shift 2 ;;
    --no-sanitizer) sanitize=0; shift ;;
    --no-reference) reference=0; shift ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# Python runs without the bundle's libraries: env.sh puts our older Debian libstdc++ (and the rest)
# first on LD_LIBRARY_PATH, which the system's python3 and PyTorch must not load.
py() { env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 "$@"; }

# ---- is there a GPU, and which benchmarks need one ---------------------------------------------
listing=$("$bin" list --json) || { echo "gpu-check: '$bin list --json' failed" >&2; exit 2; }
probe=$(printf '%s' "$listing" | py -c '
import json, sys
entries = json.load(sys.stdin)
needs = lambda e, r: r in e["requires"].split(",")
cuda = [e for e in entries if needs(e, "cuda")]
if not cuda:
    print("nocuda")
    sys.exit()
first = ([e for e in cuda if e["name"] == "gemm/cublas"] or cuda)[0]
if not first["runnable"] and first.get("reason_code") == "no_device":  # by code, not words
    print("nogpu\t" + first["reason"])
    sys.exit()
# Health last (after load: an idle GPU parks its PCIe link and clocks), stress before it.
order = lambda e: (e["name"].startswith("health/"), e["name"].startswith("stress/"))
gpu = sorted((e for e in entries if needs(e, "cuda") or needs(e, "nvml")), key=order)
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
# Every step is bounded: a hung GPU call must not eat the check's 10 minutes.
bounded() { local s=$1; shift; timeout -k 10 "$s" "$@"; }
stress_s=15
[ "$quick" = 1 ] && stress_s=8
echo "gpu-check: $bin, ${#benchmarks[@]} GPU benchmarks + training/step, reports and logs in $out"

# What each benchmark runs here, where its defaults do not suit a 10-minute check: the shapes and
# sizes PyTorch is measured at (ci/gpu_reference.py), the training step's tiny model (gradient
# check) and GPT-2 124M at batch 16 (timed; PyTorch's step is measured at the same), a short
# stress; the others run every default configuration briefly.
declare -A axes_of=(
  [gemm/cublas]="-a shape=1024,4096,8192"
  [gemm/cublaslt]="-a shape=4096,8192"
  [gemm/cuda_simt_fp32]="-a shape=4096"
  [gemm/cuda_wmma]="-a shape=4096"
  [gemm/cuda_mma]="-a shape=4096"
  [bandwidth/h2d]="-a size=64MiB,256MiB -a memory=pinned"
  [bandwidth/d2h]="-a size=64MiB,256MiB -a memory=pinned"
  [bandwidth/bidirectional]="-a size=64MiB -a memory=pinned"
  [bandwidth/d2d]="-a size=256MiB"
  [training/step]="-a model=gpt2-tiny,gpt2-124m -a device=gpu -a dp=sync"
  [stress/gpu]="-a duration_s=$stress_s"
)
# The GEMM and the step sample for over a second: the energy meter gives no joules for a timed
# window shorter than 1 s (NVML's energy counter moves every few tens of ms; docs/reports.md).
declare -A time_of=(
  [gemm/cublaslt]="--min-time 1.2 --max-time 2 --timeout 120"
  [training/step]="--min-time 1.2 --max-time 3 --timeout 240"
  [stress/gpu]="--timeout $((stress_s + 90))"
)
run_one() {
  local b=$1 file log t0 t1
  file="$out/$(echo "$b" | tr / _).json"
  log="$file.log"
  read -r -a axes <<<"${axes_of[$b]:-}"
  read -r -a times <<<"${time_of[$b]:---min-time 0.02 --max-time $max_time --timeout 120}"
  t0=$(now)
  # The full suite's axes (each benchmark's defaults), not the quick suite's smallest shapes, under
  # the overrides above.
  bounded 300 "$bin" run --suite full --filter "^$b\$" "${axes[@]}" "${times[@]}" -q -o "$file" \
    >"$log" 2>&1
  t1=$(now)
  printf 'run\t%s\t%s\t%s\n' "$b" "$file" "$(awk "BEGIN { print $t1 - $t0 }")" >>"$manifest"
}

# ---- every GPU benchmark -------------------------------------------------------------------------
for b in "${benchmarks[@]}"; do
  case "$b" in stress/*|health/*) continue ;; esac
  run_one "$b"
done
run_one training/step
for b in "${benchmarks[@]}"; do
  case "$b" in stress/*|health/*) run_one "$b" ;; esac
done

# ---- compute-sanitizer over our own kernels ----------------------------------------------------
sanitizer=$(command -v compute-sanitizer || true)
[ -n "$sanitizer" ] || [ ! -x /usr/local/cuda/bin/compute-sanitizer ] ||
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [ "$sanitize" = 1 ] && [ -z "$sanitizer" ]; then
  echo "gpu-check: compute-sanitizer not found: the sanitizer column is not run"
  sanitize=0
fi
# Small shapes and odd sizes: every edge path of every kernel, in seconds under memcheck. The
# transformer: the tiny GPT-2 and ViT, fused and materialised attention (the gradient check runs
# their forward and backward, and one block of the run's width).
sanitized=(
  "gemm/cuda_simt_fp32|-a shape=256,127x129x33"
  "gemm/cuda_wmma|-a shape=256,127x129x33 -a dtype=bf16"
  "gemm/cuda_mma|-a shape=256,200x136x72 -a dtype=bf16,fp16"
  "bandwidth/d2d|-a copy=sm -a size=1MiB,4097"
  "bandwidth/h2d|-a copy=sm -a memory=pinned -a size=64KiB,4097"
  "bandwidth/d2h|-a copy=sm -a memory=pinned -a size=4097"
  "bandwidth/gpu_latency|-a test=chase_device,chase_host -a working_set=1MiB"
  "training/step|-a model=gpt2-tiny,vit-tiny -a device=gpu -a attention=flash,materialized -a batch=2 -a samples=8"
)
if [ "$sanitize" = 1 ]; then
  for entry in "${sanitized[@]}"; do
    b=${entry%%|*}
    read -r -a axes <<<"${entry#*|}"
    [ "$b" = training/step ] || printf '%s\n' "${benchmarks[@]}" | grep -qx "$b" || continue
    log="$out/$(echo "$b" | tr / _).memcheck.log"
    bounded 240 "$sanitizer" --tool memcheck --print-limit 20 \
      "$bin" run --filter "^$b\$" "${axes[@]}" --min-time 0.01 --max-time 0.05 --timeout 200 -q \
      -o "$out/$(echo "$b" | tr / _).memcheck.json" >"$log" 2>&1
    printf 'sanitizer\t%s\t%s\n' "$b" "$log" >>"$manifest"
  done
fi

# ---- PyTorch on the same GPU, the reference --------------------------------------------------------
if [ "$reference" = 1 ] && py -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    >/dev/null 2>&1; then
  bounded 180 env -u LD_LIBRARY_PATH python3 "$root/ci/gpu_reference.py" >"$out/reference.json" \
    2>"$out/reference.log" && printf 'reference\t%s\n' "$out/reference.json" >>"$manifest"
  compile=(--compile)
  [ "$quick" = 1 ] && compile=()
  bounded 300 env -u LD_LIBRARY_PATH python3 "$root/benchmarks/training/pytorch_reference.py" \
    --model gpt2-124m --batch 16 --steps 20 "${compile[@]}" --json \
    >"$out/reference_step.json" 2>"$out/reference_step.log" &&
    printf 'reference_step\t%s\n' "$out/reference_step.json" >>"$manifest"
else
  echo "gpu-check: no PyTorch with CUDA here (or --no-reference): no ratios to PyTorch"
fi

py "$root/ci/gpu_check_table.py" "$manifest"
