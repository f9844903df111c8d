#!/usr/bin/env bash
# Multi-node tests on one machine. Builds a cluster of N "hosts" (network namespaces h1..hN, each
# with its own hostname, on a bridge in a namespace of its own), runs infrabench across them with
# mpirun (ci/netns-mpirun.sh: an rsh agent that uses `ip netns exec`, not ssh), and always tears it
# all down: processes left in the namespaces are killed by PID, then the namespaces deleted.
# Addresses (10.211.0.0/24) exist only inside the namespaces: no traffic leaves the machine.
#
#   ci/multinode.sh [--hosts N] [--build DIR]            run tests/e2e/test_multinode.py (CI)
#   ci/multinode.sh [--hosts N] [--build DIR] -- CMD...  run CMD with the cluster up, e.g.
#       ci/multinode.sh -- ci/netns-mpirun.sh -np 3 build/infrabench run --filter collectives
#
# Needs root and `ip netns`. Not root, or a binary built without MPI: skips (exit 0, with the
# reason). As root with an MPI build, a missing tool (ip netns, unshare, mpirun) is a skip on a
# developer's machine but an error under CI=true: there the cluster must run, not pass unseen.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$(pwd)
hosts=3
build=build
cmd=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --) shift; cmd=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "multinode: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$hosts" in ''|*[!0-9]*) echo "multinode: --hosts needs a number" >&2; exit 2 ;; esac
if [ "$hosts" -lt 2 ] || [ "$hosts" -gt 200 ]; then echo "multinode: --hosts must be 2..200" >&2; exit 2; fi

skip() { echo "multinode: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
bin=$(realpath -m "$build/infrabench")
[ -x "$bin" ] || { echo "multinode: error: $bin not found: build first (cmake --preset default && cmake --build --preset default)" >&2; exit 1; }
"$bin" list --filter '^collectives/mpi_allreduce$' >/dev/null 2>&1 || skip "$bin was built without MPI"
# Root and an MPI build: from here on the cluster can run unless a tool is missing.
cannot() {
  if [ "${CI:-}" = true ]; then echo "multinode: error: $* (CI=true: the multi-node tests must run)" >&2; exit 1; fi
  skip "$*"
}
command -v ip >/dev/null || cannot "no ip command (iproute2)"
ip netns list >/dev/null 2>&1 || cannot "ip netns is not available here"
command -v unshare >/dev/null || cannot "no unshare (util-linux)"
command -v mpirun >/dev/null || cannot "no mpirun (openmpi-bin)"

# Namespaces are named after this script's PID; those of an earlier run that died are removed.
prefix="ibmn$$"
kill_ns_processes() {  # by PID, never by name
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
}
remove_cluster() {
  local p=$1 ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${p}" || true); do kill_ns_processes "$ns"; done
  sleep 0.2
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${p}" || true); do
    kill_ns_processes "$ns"
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
}
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^ibmn[0-9]+(br|h[0-9]+)$' || true); do
  owner=${ns#ibmn}; owner=${owner%%[a-z]*}
  kill -0 "$owner" 2>/dev/null || remove_cluster "ibmn${owner}"
done

work=$(mktemp -d /tmp/infrabench-multinode.XXXXXX)
teardown() {
  local rc=$?
  trap - EXIT INT TERM
  remove_cluster "$prefix"
  rm -rf "$work"
  if ip netns list 2>/dev/null | grep -q "^${prefix}"; then echo "multinode: warning: namespaces ${prefix}* left behind" >&2; fi
  exit $rc
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

subnet=10.211.0
cidr="$subnet.0/24"
br="${prefix}br"
ip netns add "$br"
ip -n "$br" link set lo up
ip -n "$br" link add br0 type bridge
ip -n "$br" link set br0 up
hostfile="$work/hostfile"
: > "$hostfile"
for i in $(seq 1 "$hosts"); do
  ns="${prefix}h$i"
  ip netns add "$ns"
  # Created inside the bridge's namespace and moved: no interface ever appears in the root one.
  ip -n "$br" link add "v$i" type veth peer name eth0 netns "$ns"
  ip -n "$br" link set "v$i" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$subnet.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  echo "h$i slots=1" >> "$hostfile"
done
# Host names resolve inside the namespaces only (ip netns exec bind-mounts /etc/netns/NS/hosts).
for i in $(seq 1 "$hosts"); do
  mkdir -p "/etc/netns/${prefix}h$i"
  { echo "127.0.0.1 localhost"; for j in $(seq 1 "$hosts"); do echo "$subnet.$j h$j"; done; } > "/etc/netns/${prefix}h$i/hosts"
done
echo "multinode: $hosts hosts up (namespaces ${prefix}h1..h$hosts, $cidr)"

export INFRABENCH_NETNS_PREFIX="$prefix" INFRABENCH_NETNS_HOSTS="$hosts" INFRABENCH_NETNS_CIDR="$cidr"
export INFRABENCH_NETNS_HOSTFILE="$hostfile" INFRABENCH_NETNS_WORK="$work" INFRABENCH_BIN="$bin"
export INFRABENCH_SCHEMA="$root_dir/reports/schema/report.schema.json" INFRABENCH_SOURCE_DIR="$root_dir"
export INFRABENCH_HAS_MPI=1

if [ ${#cmd[@]} -gt 0 ]; then
  "${cmd[@]}"
else
  python=/usr/bin/python3
  [ -x "$python" ] || python=python3
  "$python" -m pytest -q -p no:cacheprovider tests/e2e/test_multinode.py
fi
