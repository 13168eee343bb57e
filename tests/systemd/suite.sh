#!/bin/bash
# suite.sh - toud on another Debian release than the host's: in a clean
# root file system of TOUD_ROOTFS_SUITE (default trixie: Debian 13, gcc 14,
# OpenSSL 3.5), made by rootfs.sh with the build and test tools and cached
# like the others, a copy of the source tree is
#   - built with --enable-werror (that release's compiler and headers),
#   - tested: the unit and CLI suites, and the end-to-end tests of the
#     handshakes, both transports, the preshared key, the dissector and
#     the post-quantum key exchange, against the host's own build too
#     (TOUD_SUITE_E2E, names without .sh), which make their namespaces
#     inside a systemd-nspawn container of its own network with every
#     capability (the host's kernel, the release's tools).
# Each suite's result and every test that did not pass is listed.  The
# package of that release (its build with the tests, lintian, the
# installation in containers) is package.sh's, with the same
# TOUD_ROOTFS_SUITE.
#
# Not part of `make check` (about six minutes warm: the build and the
# tests; a cold root adds about four).  TAP on stdout.  Environment: as
# nspawn.sh (TOUD_SRCDIR, TOUD_CI_CACHE, TOUD_TEST_KEEP, CI),
# TOUD_ROOTFS_SUITE, TOUD_SUITE_E2E.
set -u
set -o pipefail

NODES=()
. "$(dirname "$0")/nspawn_lib.sh"
suite=${TOUD_ROOTFS_SUITE:-trixie}
e2e=${TOUD_SUITE_E2E:-t01-basic t04-wire t08-dissector t09-dtls t17-rekey t46-tcp-fallback t47-tcp-proxy t49-psk t58-tcp-crossed t78-pq t79-tcp-psk t81-dissector-roam}
# The build (scripts/deps.sh's list, less what is Debian 12's own or
# serves stages that run on the host: clang, valgrind, debootstrap) and
# what the tests above call.
packages="build-essential autoconf automake libtool pkg-config libevent-dev libssl-dev
	libcap-ng-dev libsystemd-dev systemd-dev check libjansson-dev python3 mandoc groff-base
	iproute2 ethtool nftables conntrack iptables libnetfilter-queue-dev tcpdump tshark socat
	iperf3 curl tinyproxy openssl procps psmisc iputils-ping"

need_commands systemd-nspawn findmnt zstd
start_work toud-suite

stamp "the $suite root"
if ! TOUD_ROOTFS_SUITE=$suite TOUD_ROOTFS_FLAVOUR=test TOUD_ROOTFS_PACKAGES="$packages" \
    "$here/rootfs.sh" "$WORK/root" 2>"$WORK/rootfs.log"; then
	bail_out "no $suite root: $(cat "$WORK/rootfs.log")"
fi
ok "$suite root with the build and test tools ready in $(elapsed) s ($(tail -n 1 "$WORK/rootfs.log" | sed 's/^rootfs: //'))"
copy_tree "$WORK/root/src/toud"
# t78-pq's mixed pair: this host's own build (Debian 12's OpenSSL 3.0, no
# ML-KEM) beside the root's, with the host's libssl and libcrypto (a
# bookworm binary runs on trixie's glibc).  .ci/run builds it before this
# stage; without it t78 fails where the root's OpenSSL has ML-KEM.
other_env=
if [ -x "$srcdir/_build/src/toud" ] && [ -x "$srcdir/_build/src/touctl" ]; then
	other=$WORK/root/opt/toud-ossl30
	mkdir -p "$other/bin" "$other/lib"
	cp "$srcdir/_build/src/toud" "$srcdir/_build/src/touctl" "$other/bin/" ||
	    bail_out "cannot copy the host's build"
	for l in libssl.so.3 libcrypto.so.3; do
		f=$(ldd "$srcdir/_build/src/toud" | awk -v l="$l" '$1 == l { print $3 }')
		[ -n "$f" ] && cp -L "$f" "$other/lib/" || bail_out "no $l of the host's build"
	done
	other_env="TOUD_OTHER_BIN=/opt/toud-ossl30/bin/toud TOUD_OTHER_LIB=/opt/toud-ossl30/lib"
	diag "the host's build for t78's mixed pair: $(LD_LIBRARY_PATH=$other/lib "$other/bin/toud" -V | tail -n 1)"
fi
# Wireshark 4.2 and later run no Lua script (the tests load
# contrib/toud.lua) as root unless an init.lua in their global Lua plugin
# directory allows it, and the tests run as root.
lua=$(chroot "$WORK/root" tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p')
[ -n "$lua" ] && [ -d "$WORK/root$lua" ] || bail_out "no Lua plugin directory from tshark -G folders"
echo 'run_user_scripts_when_superuser = true' >"$WORK/root$lua/init.lua"
tests='$(UNIT_TESTS) $(CLI_TESTS)'
for t in $e2e; do
	[ -f "$srcdir/tests/e2e/$t.sh" ] || bail_out "no test tests/e2e/$t.sh"
	tests="$tests tests/e2e/$t.sh"
done
diag "$(chroot "$WORK/root" sh -c 'gcc --version | head -n 1; openssl version')"

# in_root CMD: CMD in the root, no boot, a network namespace of its own
# (the tests' namespaces, nftables and TUN devices are the container's),
# every capability (ip netns, mounts for it, tcpdump).
in_root() {
	systemd-nspawn --quiet --directory="$WORK/root" --keep-unit --register=no --as-pid2 \
	    --private-network --capability=all --console=pipe --chdir=/src/toud --setenv=LC_ALL=C.UTF-8 \
	    --setenv=CI="${CI:-}" sh -ec "$1" </dev/null
}

stamp "build (--enable-werror)"
if in_root 'scripts/build.sh _build --enable-werror' >"$WORK/build.log" 2>&1; then
	ok "the $suite build with --enable-werror, $(elapsed) s"
else
	not_ok "the $suite build with --enable-werror" "$(tail -n 30 "$WORK/build.log")"
	bail_out "no build"
fi

stamp "make check: unit, CLI, $e2e"
rc=0
in_root "$other_env make -C _build -s -j$(nproc) check TESTS='$tests'" >"$WORK/check.log" 2>&1 || rc=$?
# Every test's result line, the failures with their logs' tails.
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' "$WORK/check.log" | awk '{ print $1, $2 }' |
    sort | uniq -c | sed 's/^ */# /' | grep -v ' PASS: ' || true
sums=$(grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR|XPASS):' "$WORK/check.log" | awk '{ s[$2] += $3 } END {
	printf "%d total, %d passed, %d skipped, %d failed, %d errors", s["TOTAL:"], s["PASS:"], s["SKIP:"], s["FAIL:"] + s["XPASS:"], s["ERROR:"] }')
case $rc/$sums in
0/"0 total"*) not_ok "make check ran tests" "$sums";;
0/*", 0 skipped, 0 failed, 0 errors") ok "make check in $suite: $sums, $(elapsed) s";;
*)	not_ok "make check in $suite: every test passes, none skipped" "rc $rc, $sums"
	for f in $(cd "$WORK/root/src/toud/_build" && grep -l -E '^(not ok|# SKIP|Bail out!)|^[0-9]+%: .*(Failures|Errors): [1-9]' \
	    tests/unit/*.log tests/cli/*.log tests/e2e/*.log 2>/dev/null); do
		diag "--- $f"
		tail -n 40 "$WORK/root/src/toud/_build/$f" | sed 's/^/    /' | while IFS= read -r l; do diag "$l"; done
	done;;
esac

echo "1..$N"
[ "$FAIL" -eq 0 ]
