#!/usr/bin/env bash
# Builds and tests every configuration CI checks: the full build (CUDA included when nvcc is
# present), a CPU-only build with every backend off, and the unit and end-to-end tests under
# ASan+UBSan and the unit tests under TSan. Run from the repository root.
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
run_preset cpu-only
run_preset asan
run_preset tsan
echo "==== all configurations passed"
