#!/usr/bin/env bash
# Builds and tests every configuration CI checks: the full build (CUDA included when nvcc is
# present), a CPU-only build with every backend off, and the unit and end-to-end tests under
# ASan+UBSan and the unit tests under TSan, the multi-node tests across network namespaces, an
# srun launch on a single-host Slurm, and a bounded libFuzzer run of the report parsers. Run from
# the repository root.
#
# Order, for wall time on 2 cores: the stages whose tests measure (default, multinode, slurm,
# cpu-only, package) run alone, since a compile beside them would slow what they time; the ASan
# tests, which skip every timing check (INFRABENCH_SANITIZED) and run their e2e files one at a time,
# leave a core idle, so the TSan stage and then the fuzzing run beside them (their output is printed
# when each ends).
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
# (A file, not a variable: the stages run beside the ASan tests write theirs from a subshell.)
stage_log=$(mktemp)
trap 'rm -f "$stage_log"' EXIT
stage() {
  local name=$1 start=$SECONDS status=0
  shift
  # In the background and waited for, so that `set -e` still stops the stage at its first failing
  # command (a function called as `f || ...` would run on past it).
  "$@" &
  wait $! || status=$?
  local took=$((SECONDS - start))
  if [[ $status -ne 0 ]]; then
    printf '%-10s %4d s  failed (exit %d)\n' "$name" "$took" "$status" >>"$stage_log"
    echo "==== $name: failed (exit $status) after $took s"
    return "$status"
  fi
  printf '%-10s %4d s\n' "$name" "$took" >>"$stage_log"
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

# build_preset PRESET [TARGET...]: configure and build the targets named (default: the binary, its
# modules and every test target; `all` alone leaves the tests out, CMakeLists.txt).
build_preset() {
  local preset=$1
  shift
  local targets=(all infrabench_tests)
  if [[ $# -gt 0 ]]; then targets=("$@"); fi
  echo "==== $preset: configure, build"
  if [[ $preset == default ]]; then
    # Keep the configure output here: it says why CUDA was not found, should the check fail.
    cmake --preset "$preset"
    require_cuda_where_nvcc build/CMakeCache.txt
  else
    cmake --preset "$preset" >/dev/null
  fi
  cmake --build --preset "$preset" -j "$jobs" --target "${targets[@]}"
}

# run_preset PRESET [TARGET...]: build_preset, then ctest (which finds its targets up to date).
run_preset() {
  build_preset "$@"
  echo "==== $1: test"
  ctest --preset "$1" -j "$jobs"
}

default_stage() {
  build_preset default
  # The slowest compile units, so that a file or header that grows is seen (issue 41: none over
  # 20 s). From a compiler-cache hit they are the lookup times.
  ci/slowest-units.sh build
  echo "==== default: test"
  ctest --preset default -j "$jobs"
}
stage default default_stage
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
stage asan-build build_preset asan
# Beside the ASan tests: TSan (the unit tests only, the tsan test preset's label filter: it builds
# just what they need, not the benchmarks and the executable), then the fuzzing of the report,
# baseline and suite parsers. Their output goes to a log printed when they end.
sanitizer_side() {
  stage tsan run_preset tsan infrabench_unit_tests
  echo "==== fuzz: report and baseline parsers"
  stage fuzz ci/fuzz.sh
}
side_log=build-asan/tsan-fuzz.log
echo "==== tsan, fuzz: beside the ASan tests (their log: $side_log, printed when they end)"
sanitizer_side >"$side_log" 2>&1 &
side_pid=$!
asan_tests() {
  echo "==== asan: test"
  ctest --preset asan -j "$jobs"
}
# (Both waited for, neither called as `f || ...`: that would switch `set -e` off inside them.)
stage asan asan_tests &
asan_pid=$!
asan_status=0
wait "$asan_pid" || asan_status=$?
side_status=0
wait "$side_pid" || side_status=$?
echo "==== tsan, fuzz: their log"
cat "$side_log"
if [[ $asan_status -ne 0 || $side_status -ne 0 ]]; then
  echo "ci/test.sh: error: asan tests exit $asan_status; tsan and fuzz exit $side_status" \
    "(the first to fail is in their log above)" >&2
  exit 1
fi
if command -v ccache >/dev/null; then ccache --show-stats | grep -Ei "hit|miss" || true; fi
echo "==== stage times (tsan and fuzz ran beside asan)"
sed 's/^/  /' "$stage_log"
echo "==== all configurations passed ($SECONDS s)"
