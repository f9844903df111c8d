#!/usr/bin/env bash
# A single-host Slurm (munged + slurmctld + slurmd on this machine, talking over loopback) to check
# that `srun -n 2 infrabench run ...` launches work end to end: srun starts the ranks through
# PMIx (--mpi=pmix), Open MPI's MPI_Init finds them, and rank 0 writes one report.
#
#   ci/slurm-single-host.sh [--build DIR] [-- SRUN-ARGS...]
#
# Needs root and Debian's slurm-wlm + munge (ci/install-deps.sh installs them; ci/test.sh runs
# this, ~10 s). Skips (exit 0, with the reason) without them. Everything it starts is stopped by
# PID (SIGTERM, SIGKILL after 5 s) and its files removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "slurm-single-host: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
skip() { echo "slurm-single-host: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root"
for c in munged slurmctld slurmd srun scontrol; do command -v $c >/dev/null || skip "no $c (apt-get install slurm-wlm munge)"; done
[ -f /etc/munge/munge.key ] || skip "no /etc/munge/munge.key"
bin=$(realpath -m "$build/infrabench")
[ -x "$bin" ] || { echo "slurm-single-host: error: $bin not found" >&2; exit 1; }

work=$(mktemp -d /tmp/infrabench-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # slurmctld saves its state on SIGTERM (~1 s here); SIGKILL only what is still there after 5 s.
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$work/munge" "$work/ctld" "$work/d" "$work/log"
chown munge:munge "$work/munge"
# munged: its own socket and pid file under $work, so a system munged (if any) is left alone.
sock="$work/munge/munge.socket.2"
sudo_munge() { runuser -u munge -- "$@"; }
sudo_munge munged --socket="$sock" --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/seed"
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
pids+=("$(cat "$work/munge/munged.pid")")

cat > "$work/slurm.conf" <<CONF
ClusterName=infrabench
SlurmctldHost=$host
SlurmctldPort=46817
SlurmdPort=46818
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/ctld
SlurmdSpoolDir=$work/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
MpiDefault=pmix
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF="$work/slurm.conf"
slurmctld -f "$SLURM_CONF" -D > "$work/log/ctld.out" 2>&1 &
pids+=($!)
slurmd -f "$SLURM_CONF" -D > "$work/log/d.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  scontrol ping 2>/dev/null | grep -q UP && sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix)' && break
  sleep 0.2
done
sinfo -h -o %t | grep -qE '^(idle|mix)' || { echo "slurm-single-host: error: the node did not come up" >&2; cat "$work"/log/*.log >&2; exit 1; }
echo "slurm-single-host: slurmctld and slurmd up on $host"

out="$work/report.json"
args=("${extra[@]}")
[ ${#args[@]} -gt 0 ] || args=(run --filter '^(bandwidth/memory_latency|collectives/mpi_allreduce)$' -a working_set=16KiB
                               -a size=8,1MiB -a dtype=float32 -a placement=out_of_place --min-time 0.05 --max-time 0.2 -q)
set +e
OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1 timeout 300 srun --mpi=pmix -n 2 --overcommit "$bin" "${args[@]}" -o "$out"
rc=$?
set -e
[ $rc -eq 0 ] || { echo "slurm-single-host: error: srun exited $rc" >&2; exit $rc; }
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ranks = sorted({x["rank"] for x in r["results"]})
assert r["run"]["launcher"] == "mpi" and r["run"]["world_size"] == 2 and ranks == [0, 1], (r["run"], ranks)
ar = [x for x in r["results"] if x["benchmark"] == "collectives/mpi_allreduce"]
assert ar and all(x["status"] == "passed" for x in ar), ar
print("slurm-single-host: srun -n 2: one report, world size 2, ranks", ranks, "-", len(ar), "all-reduce results passed")
PY
