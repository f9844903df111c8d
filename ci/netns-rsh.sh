#!/bin/sh
# Open MPI's "rsh agent" for the namespace cluster of ci/multinode.sh: instead of ssh, run the
# command words in the host's network namespace, with its own hostname (unshare --uts), so that
# reports show h1, h2, ... Called by mpirun as: netns-rsh.sh HOST WORDS...
# HOST is hN or its address 10.x.y.N; INFRABENCH_NETNS_PREFIX names the namespaces.
host=$1
shift
case "$host" in
  h[0-9]*) n=${host#h} ;;
  *.*.*.*) n=${host##*.} ;;
  *) echo "netns-rsh: unknown host '$host'" >&2; exit 255 ;;
esac
: "${INFRABENCH_NETNS_PREFIX:?netns-rsh: INFRABENCH_NETNS_PREFIX is not set}"
# INFRABENCH_NETNS_LOCAL_DIR (optional): a path that is node-local on every host, as a local disk
# is: host hN sees its own directory $INFRABENCH_NETNS_LOCAL_DIR.hN there (a bind mount in a mount
# namespace of its own), so storage benchmarks find no shared file system at that path.
local_dir=${INFRABENCH_NETNS_LOCAL_DIR:-}
if [ -n "$local_dir" ]; then
  exec ip netns exec "${INFRABENCH_NETNS_PREFIX}h$n" unshare --uts --mount --propagation private \
    sh -c "hostname h$n; mount --bind '$local_dir.h$n' '$local_dir' && exec sh -c \"\$0\"" "$*"
fi
exec ip netns exec "${INFRABENCH_NETNS_PREFIX}h$n" unshare --uts sh -c "hostname h$n; exec sh -c \"\$0\"" "$*"
