#!/usr/bin/env bash
# Builds and tests every configuration CI checks: the full build (CUDA included when nvcc is
# present), a CPU-only build with every backend off, and the unit and end-to-end tests under
# ASan+UBSan and the unit tests under TSan, the multi-node tests across network namespaces, an
# srun launch on a single-host Slurm, and a bounded libFuzzer run of the report parsers. Run from
# the repository root.
#
# Order, for wall time on 2 cores. The stages whose tests measure (default, multinode, slurm,
# cpu-only, package) run their timed e2e files one at a time, which leaves a core mostly idle: the
# ASan build, the TSan stage and then the fuzzing take it, at idle priority (SCHED_IDLE: the
# scheduler gives them a CPU only when nothing else wants it; their output is printed when they end). Where the two vCPUs
# share a physical core they still slow the timed files somewhat (default tests 847 s beside them,
# 660-690 s alone, at 3b584e3; 686 s beside a lighter side at 2a5ae2f), which is why no timed check
# may be tight. The ASan tests, which skip every timing check (INFRABENCH_SANITIZED), come last, on
# both cores, once the side's ASan build is done.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# One compiler cache for every preset: no global compile definition differs between the default,
# cpu-only and package builds, so ccache's preprocessor mode serves most of the cpu-only build from
# the default one (CI has 2 cores; a full build is ~7 minutes of them), and nvcc's compiles of the
# CUDA kernels in the package build (~65 CPU s) from the default build's. The sanitizer builds use
# other flags and gain nothing, but lose nothing either. A caller's CCACHE_DIR is kept.
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$PWD/build-ccache}  # ignored by git, as every build*/
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CMAKE_CUDA_COMPILER_LAUNCHER=ccache
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

default_build() {
  build_preset default
  # The slowest compile units, so that a file or header that grows is seen (issue 41: none over
  # 20 s). From a compiler-cache hit they are the lookup times.
  ci/slowest-units.sh build
}
stage default-build default_build
# From the default tests on, at idle priority: first the ASan build (the ASan tests at the end wait
# for it alone), then TSan (the unit tests only, the tsan test preset's label filter: it builds just
# what they need, not the benchmarks and the executable), then the fuzzing of the report, baseline
# and suite parsers, which may still run beside the ASan tests. Their output goes to a log printed
# when they end. The subshell sets its own policy before it starts anything, so every compile and
# test inherits it: SCHED_IDLE where chrt can set it, else the lowest nice.
sanitizer_side() {
  if ! chrt --idle -p 0 "$BASHPID" 2>/dev/null; then renice -n 19 -p "$BASHPID" >/dev/null; fi
  echo "==== asan build, tsan, fuzz: at $(chrt -p "$BASHPID" | head -1 | sed 's/.*: //') priority"
  # The ASan build first: it takes the core the timed stages leave, and is done before the main
  # line reaches the ASan tests (with TSan and the fuzzing before it, the main line waited ~260 s
  # for it, issue 41). The marker says so to the main line.
  stage asan-build build_preset asan
  touch "$asan_built"
  stage tsan run_preset tsan infrabench_unit_tests
  echo "==== fuzz: report and baseline parsers"
  stage fuzz ci/fuzz.sh
}
side_log=$(mktemp)
# In a session of its own, so that a failing stage stops it too (the whole process group).
side_pid=
stop_side() {
  if [[ -n $side_pid ]] && kill -0 "$side_pid" 2>/dev/null; then kill -- "-$side_pid" 2>/dev/null || true; fi
  rm -f "$stage_log" "$side_log" "$asan_built"
}
trap stop_side EXIT
echo "==== asan build, tsan, fuzz: beside the stages that follow, at idle priority (their log is printed when they end)"
asan_built=$(mktemp -u)
export -f stage run_preset build_preset require_cuda_where_nvcc sanitizer_side
export jobs stage_log asan_built
setsid bash -c 'set -euo pipefail; sanitizer_side' >"$side_log" 2>&1 &
side_pid=$!
# Without the e2e files labelled behaviour_only (tests/e2e/CMakeLists.txt): they check behaviour
# alone, run the same code in every build, and the ASan stage below runs them (~100 s here).
default_tests() {
  echo "==== default: test (the behaviour_only e2e files run in the ASan stage)"
  ctest --preset default -j "$jobs" -LE '^behaviour_only$'
}
stage default-tests default_tests
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
# The cpu-only build: compiled (warnings are errors) and its unit tests run; the e2e files of a
# build without CUDA, NCCL and MPI are run by the ASan preset, which has them off too.
cpu_only_stage() {
  build_preset cpu-only
  echo "==== cpu-only: test (unit)"
  ctest --preset cpu-only -j "$jobs" -L '^unit$'
}
stage cpu-only cpu_only_stage
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
# The ASan tests need the side's ASan build: wait for it (its last minutes then have both cores),
# bounded by the side itself (a side that ended without the marker failed: its log says where).
echo "==== asan build: waiting for it to end"
waited=0
while [[ ! -e $asan_built ]] && kill -0 "$side_pid" 2>/dev/null && ((waited < 3600)); do
  sleep 2
  waited=$((waited + 2))
done
side_ended=
side_end() {  # wait for the side (once), print its log, fail when one of its stages did
  local side_status=0
  if [[ -n $side_ended ]]; then return 0; fi
  side_ended=1
  wait "$side_pid" || side_status=$?
  echo "==== asan build, tsan, fuzz: their log"
  cat "$side_log"
  if [[ $side_status -ne 0 ]]; then
    echo "ci/test.sh: error: the asan build, tsan or fuzz exit $side_status (the first to fail is" \
      "in their log above)" >&2
    exit 1
  fi
}
if [[ ! -e $asan_built ]]; then side_end; fi
# The ASan tests, last, on both cores (TSan and the fuzzing, at idle priority, beside them).
asan_tests() {
  echo "==== asan: test"
  ctest --preset asan -j "$jobs"
}
stage asan asan_tests
echo "==== tsan, fuzz: waiting for them to end"
side_end
if command -v ccache >/dev/null; then ccache --show-stats | grep -Ei "hit|miss" || true; fi
echo "==== stage times (asan-build, tsan and fuzz ran beside the stages from default-tests on, at idle priority)"
sed 's/^/  /' "$stage_log"
echo "==== all configurations passed ($SECONDS s)"
