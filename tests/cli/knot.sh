#!/bin/sh
# The only cycle of src/ files that call each other is the one peer.h
# names, {tx, peer, peer_timers, handshake}: read from the symbols of the
# build's object files, and the static inline functions of its headers
# from the sources (knot.py).  TAP output.
set -u
out=$(python3 "${TOUD_SRCDIR:?}/tests/cli/knot.py" "${TOUD_BUILDDIR:?}" "$TOUD_SRCDIR/src" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
if [ $rc -eq 0 ]; then
	echo "ok 1 - no cycle of src/ files outside the named one (peer.h)"
else
	echo "not ok 1 - no cycle of src/ files outside the named one (peer.h)"
fi
echo "1..1"
[ $rc -eq 0 ]
