#!/usr/bin/env bash
# Builds and tests every configuration CI checks: the full build (CUDA included when nvcc is
# present), a CPU-only build with every backend off, and the unit and end-to-end tests under
# ASan+UBSan and the unit tests under TSan, the multi-node tests across network namespaces, an
# srun launch on a single-host Slurm, and a bounded libFuzzer run of the report parsers. Run from
# the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# INFRABENCH_WITH_CUDA turns itself off when CMake cannot use nvcc (a broken toolkit, an unsupported
# host compiler), and the build still passes: CI would then silently stop compiling the CUDA code.
# Where nvcc is installed, the default build must have CUDA on.
require_cuda_where_nvcc() {
  local cache=$1
  [[ -x /usr/local/cuda/bin/nvcc ]] || return 0
  if ! grep -q '^INFRABENCH_WITH_CUDA:BOOL=ON$' "$cache"; then
    echo "ci/test.sh: error: /usr/local/cuda/bin/nvcc exists but the default build has CUDA off" \
      "($cache: $(grep '^INFRABENCH_WITH_CUDA:' "$cache" || echo 'INFRABENCH_WITH_CUDA unset'));" \
      "see the CUDA lines of the configure output above" >&2
    exit 1
  fi
  echo "==== default: CUDA enabled ($(/usr/local/cuda/bin/nvcc --version | tail -1))"
}

run_preset() {
  local preset=$1
  echo "==== $preset: configure, build, test"
  if [[ $preset == default ]]; then
    # Keep the configure output here: it says why CUDA was not found, should the check fail.
    cmake --preset "$preset"
    require_cuda_where_nvcc build/CMakeCache.txt
  else
    cmake --preset "$preset" >/dev/null
  fi
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
}

run_preset default
# The browser test's screenshots of the HTML report (INFRABENCH_SCREENSHOT_DIR, set by ctest).
for shot in build/screenshots/*.png; do
  if [[ -e $shot ]]; then echo "==== HTML report screenshot: $PWD/$shot"; fi
done
# Multi-node: ranks across network-namespace "hosts" (skips with the reason where not root).
echo "==== multinode: mpirun across network namespaces"
ci/multinode.sh --build build
# Slurm: srun -n 2 through PMIx on a single-host slurmctld + slurmd (~10 s; skips where not root).
echo "==== slurm: srun -n 2 on a single-host Slurm"
ci/slurm-single-host.sh --build build
run_preset cpu-only
echo "==== package: cpack -G DEB, dpkg -i, run from outside the checkout, dpkg -r"
ci/package.sh --build build-cpu
run_preset asan
run_preset tsan
echo "==== fuzz: report and baseline parsers"
ci/fuzz.sh
echo "==== all configurations passed"
