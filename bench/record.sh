#!/bin/sh
# bench/record.sh - ns per record, seal + open: toud's record code against
# SSL_write / SSL_read on the same session (bench/record.c; `make` builds it).
#
# Usage: bench/record.sh [BUILDDIR]   (default _build)
# Environment: N=20000 records per chunk, ROUNDS=15 chunks per variant,
#   CPU=1 the core to pin to (empty: no pinning).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/_build}
bin=$build/bench/record
[ -x "$bin" ] || { echo "record.sh: no $bin (run make)" >&2; exit 1; }
cpu=${CPU-1}
if [ -n "$cpu" ] && command -v taskset >/dev/null 2>&1; then
	exec taskset -c "$cpu" "$bin" "${N:-20000}" "${ROUNDS:-15}"
fi
exec "$bin" "${N:-20000}" "${ROUNDS:-15}"
