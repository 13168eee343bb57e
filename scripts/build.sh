#!/bin/sh
# Configure and build toud out of tree: scripts/build.sh BUILDDIR [configure args]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$1
shift
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$build"
cd "$build"
"$top/configure" -q "$@"
make -s -j"$(nproc)"
