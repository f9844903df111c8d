#!/usr/bin/env bash
# Builds and tests every configuration CI checks: the full build (CUDA included when nvcc is
# present), a CPU-only build with every backend off, and the unit and end-to-end tests under
# ASan+UBSan and the unit tests under TSan, the multi-node tests across network namespaces, an
# srun launch on a single-host Slurm, and a bounded libFuzzer run of the report parsers. Run from
# the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

run_preset() {
  local preset=$1
  echo "==== $preset: configure, build, test"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
}

run_preset default
# Multi-node: ranks across network-namespace "hosts" (skips with the reason where not root).
echo "==== multinode: mpirun across network namespaces"
ci/multinode.sh --build build
# Slurm: srun -n 2 through PMIx on a single-host slurmctld + slurmd (~10 s; skips where not root).
echo "==== slurm: srun -n 2 on a single-host Slurm"
ci/slurm-single-host.sh --build build
run_preset cpu-only
run_preset asan
run_preset tsan
echo "==== fuzz: report and baseline parsers"
ci/fuzz.sh
echo "==== all configurations passed"
