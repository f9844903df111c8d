#!/usr/bin/env bash
# The Debian package as an operator installs it: `cpack -G DEB` from a build, `dpkg -i`, then the
# installed binary run from outside the checkout — the quick suite, and `accept` with a shipped
# baseline named, not a path — with the source tree's configs/ and /usr/local/cuda hidden (a mount
# namespace with empty directories bound over them) and the MPI library too (an overlay of its
# directory with libmpi.so.* removed), so that only the package's own files can answer: the binary
# must start, run the CPU benchmarks and list every benchmark of the MPI, CUDA and NCCL modules as
# skipped with the loader's reason. `ldd` of the installed executable must list no CUDA, MPI,
# OpenCV, OpenBLAS or oneDNN library. The man page (rendered without a warning), the bash and zsh
# completion (bash's sourced and called for `infrabench `), the copyright and the changelog must be
# installed, and the page and the completion must name every subcommand of `infrabench --help`.
# Then `dpkg -r`. Needs root (dpkg, unshare); skips otherwise, except under CI=true.
#   ci/package.sh [--build DIR]   (default build-cpu: CI packages the build it already tested)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
build=build-cpu
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "package: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
skip() {
  if [ "${CI:-}" = true ]; then echo "package: error: $* (CI=true: the package test must run)" >&2; exit 1; fi
  echo "package: skipped: $*"; exit 0
}
[ "$(id -u)" = 0 ] || skip "dpkg -i needs root"
command -v dpkg >/dev/null || skip "no dpkg"
command -v unshare >/dev/null || skip "no unshare"
build=$(realpath -m "$build")
[ -f "$build/CMakeCache.txt" ] || { echo "package: error: $build is not a build directory" >&2; exit 1; }
if dpkg -s infrabench >/dev/null 2>&1; then
  echo "package: error: infrabench is installed already (dpkg -r infrabench first)" >&2; exit 1
fi

# What an operator reads and types: the man page (it renders, and names every subcommand), the
# shell completion (sourced in a clean bash, `infrabench <TAB>` offers the subcommands), and the
# copyright and changelog Debian wants in the doc directory.
check_docs() {
  local doc=/usr/share/doc/infrabench f
  for f in /usr/share/man/man1/infrabench.1.gz /usr/share/bash-completion/completions/infrabench \
           /usr/share/zsh/vendor-completions/_infrabench $doc/copyright $doc/changelog.gz; do
    dpkg -L infrabench | grep -qx "$f" || { echo "package: error: $f is not in the package" >&2; exit 1; }
    test -s "$f" || { echo "package: error: $f is empty" >&2; exit 1; }
  done
  grep -q "^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" $doc/copyright
  zcat $doc/changelog.gz | head -1 |
    grep -qF "infrabench ($(dpkg-query -W -f='${Version}' infrabench))"
  local page subs
  page=$(zcat /usr/share/man/man1/infrabench.1.gz)
  if command -v groff >/dev/null; then
    # Plain text (no overstrike), lines long enough that no name is broken; any warning fails.
    page=$(groff -man -ww -Tascii -P-cbou -rLL=250n <<<"$page" 2>"$work/groff.err")
    if [ -s "$work/groff.err" ]; then
      echo "package: error: groff warns about the man page:" >&2; cat "$work/groff.err" >&2; exit 1
    fi
  fi
  # The subcommands, as the installed binary's --help lists them.
  subs=$(/usr/bin/infrabench --help | awk '/^Subcommands:/ {s = 1; next} /^[^ ]/ {s = 0} s && /^  [^ ]/ {print $1}')
  [ -n "$subs" ] || { echo "package: error: no subcommands in infrabench --help" >&2; exit 1; }
  local offered
  # shellcheck disable=SC2016
  offered=$(env -i PATH=/usr/bin:/bin bash --norc --noprofile -c \
    'source /usr/share/bash-completion/completions/infrabench && COMP_WORDS=(infrabench "") &&
     COMP_CWORD=1 && _infrabench && echo "${COMPREPLY[*]}"')
  for f in $subs; do
    grep -q "^ *$f\b" <<<"$page" || { echo "package: error: the man page has no '$f'" >&2; exit 1; }
    grep -qw -- "$f" <<<"$offered" ||
      { echo "package: error: completing 'infrabench ' does not offer '$f': $offered" >&2; exit 1; }
  done
  echo "package: man page, bash completion, copyright and changelog installed; subcommands offered: $offered"
}

work=$(mktemp -d)
# Whatever happens from here, the tested build is given back as it was (its binary rebuilt with the
# source-tree fallback), the package removed and the scratch directory deleted.
cleanup() {
  dpkg -r infrabench >/dev/null 2>&1 || true
  rm -rf "$work"
  cmake -S "$src" -B "$build" -DINFRABENCH_SOURCE_DATA=ON >/dev/null 2>&1 &&
    cmake --build "$build" --target infrabench >/dev/null 2>&1 || true
}
trap cleanup EXIT
# The package's binary finds its baselines in /usr/share only: no fallback to this source tree.
cmake -S . -B "$build" -DINFRABENCH_SOURCE_DATA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target infrabench
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls -t "$build"/infrabench_*_amd64.deb | head -1)
echo "==== package: $deb"
dpkg-deb --info "$deb" | grep -E "Package|Version|Depends|Recommends|Suggests"
dpkg -i "$deb" >/dev/null
dpkg -L infrabench | grep -E "^/usr/(bin/infrabench|share/infrabench/baselines/template-cpu-node.json)$"
check_docs

# The core links only what every node has; CUDA, MPI and the reference libraries are modules.
core_libs=$(ldd /usr/bin/infrabench)
if grep -E 'libcuda\.so|libcudart|libcublas|libnccl|libcudnn|libmpi|libopen-pal|opencv|openblas|dnnl' <<<"$core_libs"; then
  echo "package: error: /usr/bin/infrabench links the libraries above: they belong in modules" >&2; exit 1
fi
mpi_module=/usr/lib/infrabench/libinfrabench_mpi.so

mkdir -p "$work/empty" "$work/run" "$work/up" "$work/overlay-work"
hidden="mount --bind $work/empty $src/configs"
if [ -d /usr/local/cuda ]; then hidden="$hidden && mount --bind $work/empty /usr/local/cuda"; fi
if [ -f "$mpi_module" ]; then
  # The MPI library's directory (/usr/lib/x86_64-linux-gnu) holds every other library too: an
  # overlay of it in which libmpi.so.* are deleted, visible in this mount namespace only.
  libmpi=$(ldd "$mpi_module" | awk '$1 ~ /^libmpi\.so/ {print $3}')
  [ -n "$libmpi" ] || { echo "package: error: ldd $mpi_module names no libmpi" >&2; exit 1; }
  mpidir=$(dirname "$(realpath "$libmpi")")
  hidden="$hidden && mount -t overlay overlay -o lowerdir=$mpidir,upperdir=$work/up,workdir=$work/overlay-work $mpidir && rm -f $mpidir/libmpi.so*"
fi
# shellcheck disable=SC2016
unshare -m bash -c "$hidden && cd $work/run && \
  /usr/bin/infrabench --version && \
  /usr/bin/infrabench list --json > list.json && \
  /usr/bin/infrabench run -o quick.json && \
  { /usr/bin/infrabench accept --baseline template-cpu-node -o accept.json --junit accept.xml \
      --html accept.html -- --min-time 0.01 --max-time 0.1 --stress-duration 2 -q; \
    rc=\$?; [ \$rc -le 1 ] || [ \$rc -eq 4 ] || exit \$rc; } && \
  test -s accept.json && test -s accept.xml && test -s accept.html"
python3 - "$work/run/quick.json" "$([ -f "$mpi_module" ] && echo mpi)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
st = [x["status"] for x in r["results"]]
failed = [x["benchmark"] for x in r["results"] if x["status"] == "failed"]
print(f"package: quick suite from the installed binary: {st.count('passed')} passed, "
      f"{st.count('skipped')} skipped, {len(failed)} failed")
assert st.count("passed") > 10 and not failed, failed
if sys.argv[2] == "mpi":
    # The MPI module's benchmarks of the suite are there, each skipped with the loader's reason.
    mpi = [x for x in r["results"] if x["benchmark"] in ("collectives/pairwise", "collectives/mpi_allreduce")]
    assert {x["benchmark"] for x in mpi} == {"collectives/pairwise", "collectives/mpi_allreduce"}, mpi
    for x in mpi:
        assert x["status"] == "skipped" and x["reason"].startswith("MPI not installed (libmpi.so"), x
    print(f"package: MPI hidden: {len(mpi)} MPI results skipped: {mpi[0]['reason']}")
PY
# Every benchmark of a module that holds benchmarks is listed, not runnable, with the loader's
# reason: MPI's and CUDA's their library's, NCCL's the module it needs first (MPI).
python3 - "$work/run/list.json" /usr/lib/infrabench <<'PY'
import json, pathlib, sys
listed = {b["name"]: b for b in json.load(open(sys.argv[1]))}
expect = {"mpi": "MPI not installed (libmpi.so",
          "cuda": "CUDA runtime not installed (libcudart.so",
          "nccl": "NCCL module needs the MPI module, which did not load: MPI not installed"}
for mid, start in expect.items():
    manifest = pathlib.Path(sys.argv[2]) / f"libinfrabench_{mid}.benchmarks"
    if not manifest.exists():
        print(f"package: no {mid} module in this package")
        continue
    names = [l.split("\t")[0] for l in manifest.read_text().splitlines() if l]
    assert names, manifest
    for n in names:
        b = listed.get(n)
        assert b and not b["runnable"] and b["reason"].startswith(start), (n, b and b["reason"])
    print(f"package: {mid} hidden: {len(names)} benchmarks listed as skipped: {listed[names[0]]['reason']}")
PY
echo "==== package: installed, ran from $work/run, removed"
