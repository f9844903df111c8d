#!/bin/sh
# Every NCCL function the NCCL module imports is exported by the simulated NCCL: a new NCCL call
# in the module without a shim entry fails here, not as an "undefined symbol" in a simulated run.
#   check_exports.sh MODULE SHIM
set -eu
missing=$(nm -D --undefined-only "$1" | awk '{print $2}' | grep '^nccl' | sed 's/@.*//' | sort -u |
  comm -23 - "$(nm -D --defined-only "$2" | awk '{print $3}' | sort -u > "${TMPDIR:-/tmp}/shim-exports.$$"; echo "${TMPDIR:-/tmp}/shim-exports.$$")")
rm -f "${TMPDIR:-/tmp}/shim-exports.$$"
if [ -n "$missing" ]; then
  echo "the simulated NCCL ($2) lacks what $1 imports:" $missing >&2
  exit 1
fi
echo "every NCCL import of $1 is in $2"
