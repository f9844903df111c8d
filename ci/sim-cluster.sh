#!/usr/bin/env bash
# The simulated GPU cluster (issue 38, docs/simulation.md): 2 network-namespace hosts x 8
# simulated GPUs, 16 ranks (one per GPU, oversubscribed on the CI machine's cores), the real GPU
# and NCCL modules running against the shims of <build>/sim/ (CUDA runtime, cuBLAS, NCCL that moves
# real data over TCP between the hosts). Runs tests/e2e/test_sim_cluster.py inside the cluster of
# ci/multinode.sh (which builds it, and always tears it down): `accept` with the 8-GPU template,
# every multi-GPU benchmark once, and each NCCL fault once.
#
#   ci/sim-cluster.sh [--build DIR]            run the tests (CI)
#   ci/sim-cluster.sh [--build DIR] -- CMD...  run CMD with the cluster up (see ci/multinode.sh)
#
# Skips (exit 0, with the reason) where ci/multinode.sh does (not root, no MPI build) and where
# the build has no simulated node (no CUDA/NCCL backend); under CI=true a build with CUDA, NCCL and
# MPI whose shims are missing is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --) pass=(-- "${@:2}"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "sim-cluster: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
skip() { echo "sim-cluster: skipped: $*"; exit 0; }
bin=$(realpath -m "$build/infrabench")
[ -x "$bin" ] || { echo "sim-cluster: error: $bin not found: build first" >&2; exit 1; }
for lib in libcudart.so.13 libnccl.so.2; do
  if [ ! -e "$build/sim/$lib" ]; then
    if [ "${CI:-}" = true ] && grep -q '^INFRABENCH_WITH_NCCL:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
      echo "sim-cluster: error: $build/sim/$lib is missing in a build with NCCL (CI=true)" >&2; exit 1
    fi
    skip "$build/sim/$lib was not built (a build without the CUDA and NCCL backends)"
  fi
done
if [ ${#pass[@]} -gt 0 ]; then exec ci/multinode.sh --hosts 2 --build "$build" "${pass[@]}"; fi
python=/usr/bin/python3
[ -x "$python" ] || python=python3
echo "==== sim-cluster: 2 hosts x 8 simulated GPUs (accept, multi-GPU benchmarks, NCCL faults)"
exec ci/multinode.sh --hosts 2 --build "$build" -- "$python" -m pytest -q -p no:cacheprovider \
  tests/e2e/test_sim_cluster.py
