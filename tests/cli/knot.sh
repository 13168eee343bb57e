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

# The check itself sees a dependency that goes through a header's static
# inline function, which leaves no symbol: a.c calls b.h's inline b_get(),
# b.c calls a.c's a_fn().  It must report the cycle {a.c, b.c}.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/build/src"
cat >"$work/src/b.h" <<'EOT'
struct b { int v; };
static inline int
b_get(const struct b *x)
{
	return x->v;
}
int b_fn(void);
EOT
cat >"$work/src/a.c" <<'EOT'
#include "b.h"
int a_fn(const struct b *x) { return b_get(x); }
EOT
cat >"$work/src/b.c" <<'EOT'
#include "b.h"
int a_fn(const struct b *x);
int b_fn(void) { struct b x = { 1 }; return a_fn(&x); }
EOT
: >"$work/src/empty.c"
cc=${CC:-cc}
self=not
if $cc -c -o "$work/build/src/libtoud_a-a.o" -I"$work/src" "$work/src/a.c" &&
    $cc -c -o "$work/build/src/libtoud_a-b.o" -I"$work/src" "$work/src/b.c" &&
    $cc -c -o "$work/build/src/toud-toud.o" "$work/src/empty.c" &&
    $cc -c -o "$work/build/src/touctl-touctl.o" "$work/src/empty.c" &&
    ar rc "$work/build/src/libtoud.a" "$work/build/src/libtoud_a-a.o" \
    "$work/build/src/libtoud_a-b.o"; then
	sout=$(python3 "$TOUD_SRCDIR/tests/cli/knot.py" "$work/build" "$work/src" 2>&1)
	src=$?
	echo "$sout" | sed 's/^/# /'
	[ $src -eq 1 ] && echo "$sout" | grep -q "CYCLE OUTSIDE THE NAMED ONE: a.c b.c" &&
	    echo "$sout" | grep -q "a.c -> b.c: b_get()" && self=
fi
echo "${self:+not }ok 2 - a cycle through a header's static inline function is found"
echo "1..2"
[ $rc -eq 0 ] && [ -z "$self" ]
