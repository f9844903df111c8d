#!/bin/sh
# Runs a command as uid/gid 65534 (no supplementary groups) in a mode-1777 directory of its own,
# which is also its HOME and TMPDIR and is removed afterwards. For the ctest entries that run tests
# again without root's privileges (no CAP_IPC_LOCK, so the memlock limit applies; no writing where
# only root may) when ctest runs as root, as CI does.
#
#   as_nobody.sh FILE... -- COMMAND [ARG...]
#
# Each FILE must be within that user's reach (executable files: executable, others: readable).
# Exits 77, ctest's skip code, when not root (the tests already ran unprivileged), without
# setpriv, or when a FILE is out of reach; otherwise with COMMAND's status.
if [ "$(id -u)" != 0 ]; then echo "not root: the tests already ran unprivileged"; exit 77; fi
command -v setpriv >/dev/null || { echo "setpriv not installed: cannot drop to uid 65534"; exit 77; }
as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ -x "$1" ] && [ ! -d "$1" ]; then access=-x; else access=-r; fi
  $as_nobody test $access "$1" || { echo "$1 is out of reach of uid 65534"; exit 77; }
  shift
done
[ "$1" = "--" ] && [ $# -ge 2 ] || { echo "usage: as_nobody.sh FILE... -- COMMAND [ARG...]"; exit 2; }
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/infrabench-nobody-XXXXXX") && chmod 1777 "$dir" || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
cd "$dir" || exit 1
$as_nobody env HOME="$dir" TMPDIR="$dir" PYTHONDONTWRITEBYTECODE=1 "$@"
