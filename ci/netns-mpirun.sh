#!/bin/sh
# mpirun across the namespace cluster of ci/multinode.sh: mpirun itself runs inside host h1 (the
# root namespace has no route to the others) and starts its daemons on h2.. through netns-rsh.sh.
# Usage (with the INFRABENCH_NETNS_* variables ci/multinode.sh exports):
#   ci/netns-mpirun.sh -np 3 build/infrabench run ...
# TCP between hosts only, on the cluster's subnet; mpi_yield_when_idle, or waiting ranks busy-poll
# and fight the measuring ones for the CPUs.
here=$(cd "$(dirname "$0")" && pwd)
: "${INFRABENCH_NETNS_PREFIX:?run this under ci/multinode.sh}"
: "${INFRABENCH_NETNS_CIDR:?run this under ci/multinode.sh}"
: "${INFRABENCH_NETNS_HOSTFILE:?run this under ci/multinode.sh}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# INFRABENCH_NETNS_LOCAL_DIR: see netns-rsh.sh (h1 sees $INFRABENCH_NETNS_LOCAL_DIR.h1 there).
local_dir=${INFRABENCH_NETNS_LOCAL_DIR:-}
mount_local=""
[ -n "$local_dir" ] && mount_local="mount --bind '$local_dir.h1' '$local_dir' || exit 1;"
exec ip netns exec "${INFRABENCH_NETNS_PREFIX}h1" unshare --uts ${local_dir:+--mount --propagation private} \
  sh -c "hostname h1; $mount_local"' exec "$@"' sh \
  mpirun --hostfile "$INFRABENCH_NETNS_HOSTFILE" \
  --mca plm_rsh_agent "$here/netns-rsh.sh" \
  --mca btl tcp,self --mca btl_tcp_if_include "$INFRABENCH_NETNS_CIDR" \
  --mca oob_tcp_if_include "$INFRABENCH_NETNS_CIDR" \
  --mca mpi_yield_when_idle 1 \
  --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3 \
  "$@"
