#!/usr/bin/env bash
# ci/slowest-units.sh [BUILD_DIR] [N]: the N (default 10) slowest compile units of BUILD_DIR's last
# build (default build/), from its .ninja_log, and the sum over every unit, so that a header that
# makes every file slower, or one file that grows past the rest, shows in CI's log (ci/test.sh
# prints it after the default build; issue 41: no unit over 20 s of CPU). The times are ninja's
# wall clock per step: with -j2 on 2 cores about the CPU time of the compile; a compiler-cache hit
# shows as its lookup (well under a second), so read them after a build that compiled.
set -euo pipefail
build=${1:-build}
count=${2:-10}
log=$build/.ninja_log
if [[ ! -r $log ]]; then
  echo "ci/slowest-units.sh: error: $log not found (build first: cmake --build --preset default)" >&2
  exit 2
fi
if [[ ! $count =~ ^[1-9][0-9]{0,3}$ ]]; then
  echo "ci/slowest-units.sh: error: N must be a whole number from 1 to 9999 (got '$count')" >&2
  exit 2
fi
# .ninja_log v5: start_ms end_ms mtime output hash, one line per step, appended at each build:
# the last line of an output is its latest compile. Compile units are the object files.
awk -F'\t' -v count="$count" -v build="$build" '
  /^#/ { next }
  $4 ~ /\.o$/ { ms[$4] = $2 - $1 }
  END {
    n = 0; total = 0
    for (o in ms) { n++; total += ms[o] }
    printf "==== slowest %d of %d compile units in %s (s, ninja wall time of the last compile; %.0f s in all)\n", (n < count ? n : count), n, build, total / 1000
    cmd = "sort -rn | head -n " count
    for (o in ms) {
      # The source path: CMake names an object DIR/CMakeFiles/TARGET.dir/SOURCE.o, SOURCE relative
      # to DIR with ".." spelt "__".
      unit = o
      sub(/^\//, "", unit)
      dir = unit; sub(/\/?CMakeFiles\/.*$/, "", dir)
      sub(/^.*CMakeFiles\/[^\/]*\.dir\//, "", unit)
      sub(/\.o$/, "", unit)
      if (dir != "") unit = dir "/" unit
      while (unit ~ /[^\/]+\/__\//) sub(/[^\/]+\/__\//, "", unit)
      printf "%8.1f  %s\n", ms[o] / 1000, unit | cmd
    }
    close(cmd)
  }' "$log"
