#!/usr/bin/env bash
# Cross-check of collectives/mpi_allreduce against the OSU micro-benchmarks' method (osu_allreduce:
# warm-up, a barrier, a loop of iterations timed on each rank, the per-rank mean, then the mean /
# min / max over ranks), built here from a small C program that follows it, and run alternately
# with infrabench on the same ranks so both see the same machine. Prints, per size, OSU's mean
# latency (mean and max over ranks), the median iteration of the same loop, and infrabench's
# median sample (each the slowest rank's mean over a batch: OSU's max over ranks, per batch) and
# best sample, as a Markdown table.
#
#   benchmarks/collectives/compare_osu.sh [BUILD_DIR] [NP] [ROUNDS]
#
# MPI flags come from $MPIRUN_FLAGS (default: shared memory, yield when idle, as root if root).
set -euo pipefail
build=${1:-build}
np=${2:-2}
rounds=${3:-3}
bin=$(realpath "$build/infrabench")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=${MPIRUN_FLAGS:---oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1}
[ "$(id -u)" = 0 ] && flags="--allow-run-as-root $flags"

cat > "$work/osu_style.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  float* s = malloc(1 << 20);
  float* r = malloc(1 << 20);
  for (int i = 0; i < (1 << 18); ++i) s[i] = 1.0f;
  for (long size = 8; size <= (1 << 20); size *= 2) {
    const int count = (int)(size / 4) > 0 ? (int)(size / 4) : 1;
    const int warm = size > 8192 ? 10 : 200, iters = size > 8192 ? 100 : 1000;  /* OSU's defaults */
    for (int i = 0; i < warm; ++i) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = 0, each[1000];
    for (int i = 0; i < iters; ++i) {
      const double t0 = MPI_Wtime();
      MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      each[i] = MPI_Wtime() - t0;
      t += each[i];
    }
    qsort(each, (size_t)iters, sizeof(double), cmp);
    const double mine = t / iters * 1e6, med = each[iters / 2] * 1e6;
    double avg = 0, mx = 0, medmax = 0;
    MPI_Reduce(&mine, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&med, &medmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%ld %.3f %.3f %.3f\n", size, avg / n, mx, medmax);
  }
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}
C
mpicc -O2 -o "$work/osu_style" "$work/osu_style.c"
for round in $(seq "$rounds"); do
  # shellcheck disable=SC2086
  mpirun $flags -np "$np" "$work/osu_style" > "$work/osu.$round"
  # shellcheck disable=SC2086
  mpirun $flags -np "$np" "$bin" run --filter '^collectives/mpi_allreduce$' -a size=8:1MiB -a dtype=float32 \
    -a placement=out_of_place -a algorithm=mpi --min-time 0.5 --max-time 2 -q -o "$work/ib.$round.json" >/dev/null
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
osu_avg, osu_max, osu_med, ib, ib_best = {}, {}, {}, {}, {}
for k in range(1, rounds + 1):
    for line in open(f"{work}/osu.{k}"):
        size, avg, mx, med = line.split()
        osu_avg.setdefault(int(size), []).append(float(avg))
        osu_max.setdefault(int(size), []).append(float(mx))
        osu_med.setdefault(int(size), []).append(float(med))
    for r in json.load(open(f"{work}/ib.{k}.json"))["results"]:
        m = {x["name"]: x["value"] for x in r["metrics"]}
        ib.setdefault(r["axes"]["size"], []).append(m["latency_us"])
        ib_best.setdefault(r["axes"]["size"], []).append(r["time_s"]["min"] * 1e6)
print(f"median of {rounds} alternating rounds, microseconds")
print("| size (B) | OSU-style mean over ranks | OSU-style max over ranks | OSU-style median iteration | "
      "infrabench median | infrabench best sample |")
print("|---:|---:|---:|---:|---:|---:|")
med = statistics.median
for size in sorted(ib):
    print(f"| {size} | {med(osu_avg[size]):.2f} | {med(osu_max[size]):.2f} | {med(osu_med[size]):.2f} | "
          f"{med(ib[size]):.2f} | {med(ib_best[size]):.2f} |")
PY
