#!/usr/bin/env bash
# Builds and tests every configuration CI checks: the full build (CUDA included when nvcc is
# present), a CPU-only build with every backend off, and the unit and end-to-end tests under
# ASan+UBSan and the unit tests under TSan, the multi-node tests across network namespaces, an
# srun launch on a single-host Slurm, and a bounded libFuzzer run of the report parsers. Run from
# the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# One compiler cache for every preset: no global compile definition differs between the default,
# cpu-only and package builds, so ccache's preprocessor mode serves most of the cpu-only build from
# the default one (CI has 2 cores; a full build is ~7 minutes of them). The sanitizer builds use
# other flags and gain nothing, but lose nothing either. A caller's CCACHE_DIR is kept.
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$PWD/build-ccache}  # ignored by git, as every build*/
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

# Each stage's wall time, printed as it ends and again at the end: CI must stay under 50 minutes
# on 2 cores (docs/development.md has each stage's share), and this says which stage to look at
# when it does not.
stage_log=()
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  local took=$((SECONDS - start))
  stage_log+=("$(printf '%-10s %4d s' "$name" "$took")")
  echo "==== $name: done in $took s"
}

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

# run_preset PRESET [TARGET...]: configure, build (everything, or the targets named), ctest.
run_preset() {
  local preset=$1
  shift
  local targets=()
  if [[ $# -gt 0 ]]; then targets=(--target "$@"); fi
  echo "==== $preset: configure, build, test"
  if [[ $preset == default ]]; then
    # Keep the configure output here: it says why CUDA was not found, should the check fail.
    cmake --preset "$preset"
    require_cuda_where_nvcc build/CMakeCache.txt
  else
    cmake --preset "$preset" >/dev/null
  fi
  cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
  ctest --preset "$preset" -j "$jobs"
}

stage default run_preset default
# The browser test's screenshots of the HTML report (INFRABENCH_SCREENSHOT_DIR, set by ctest).
for shot in build/screenshots/*.png; do
  if [[ -e $shot ]]; then echo "==== HTML report screenshot: $PWD/$shot"; fi
done
# Multi-node: ranks across network-namespace "hosts" (skips with the reason where not root).
echo "==== multinode: mpirun across network namespaces"
stage multinode ci/multinode.sh --build build
stage sim-cluster ci/sim-cluster.sh --build build
# Slurm: srun -n 2 through PMIx on a single-host slurmctld + slurmd (~10 s; skips where not root).
echo "==== slurm: srun -n 2 on a single-host Slurm"
stage slurm ci/slurm-single-host.sh --build build
stage cpu-only run_preset cpu-only
echo "==== package: cpack -G DEB, dpkg -i, run from outside the checkout, dpkg -r"
# The package preset (io_uring and the backend modules: MPI's, and CUDA's and NCCL's where nvcc is;
# no tests): mostly served by the compiler cache from the builds above; ci/package.sh hides the
# CUDA toolkit and the MPI library from the installed binary.
package_build() {
  cmake --preset package >/dev/null
  cmake --build --preset package -j "$jobs"
  ci/package.sh --build build-pkg
}
stage package package_build
stage asan run_preset asan
# TSan runs the unit tests only (the tsan test preset's label filter): build just what they need,
# not the benchmarks and the executable.
stage tsan run_preset tsan infrabench_unit_tests
echo "==== fuzz: report and baseline parsers"
stage fuzz ci/fuzz.sh
if command -v ccache >/dev/null; then ccache --show-stats | grep -Ei "hit|miss" || true; fi
echo "==== stage times"
printf '  %s\n' "${stage_log[@]}"
echo "==== all configurations passed ($SECONDS s)"
