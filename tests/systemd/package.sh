#!/bin/bash
# package.sh - the Debian package, built and installed as the README's
# "From a package" route says, word for word (the commands are taken from
# README itself, so this test breaks when the README drifts):
#   - the build lines (up to the `apt-get install` of the package),
#     `apt-get build-dep ./` included, run as root in a copy of the source
#     tree inside a clean root file system (rootfs.sh's: Debian's minbase,
#     systemd and toud's libraries, no compiler, no python3), so that what
#     the build and its tests use and debian/control does not list fails
#     here.  That root also carries what a host running toud has (the
#     example /etc/tou.conf, a key pair in /etc/tou, an instance in
#     /etc/toud): a test that reads them fails here too.  The build runs
#     the unit and CLI tests (debian/rules) unless TOUD_PKG_CHECK=0,
#   - lintian, installed into that root after the build, finds no error in
#     the result (the warnings it reports are listed),
#   - the rest runs in two systemd-nspawn containers booting a fresh
#     root of the same release (rootfs.sh's, the one nspawn.sh uses): `apt-get
#     install ../toud_*.deb` leaves the user toud, /etc/tou (0700, toud's),
#     /etc/tou.conf as a conffile, the units neither enabled nor started
#     and says so; genkey, chown, the test's `editor` (which adds the other
#     node as a peer), `toud -t` and `systemctl enable --now toud`,
#   - the tunnel carries pings, and touctl show --json has the peer up,
#   - reinstalling the package (an upgrade's maintainer scripts) restarts
#     the running toud, removing it stops toud and keeps /etc/tou, purging
#     it deletes /etc/tou and /etc/tou.conf and keeps the user.
# With TOUD_ROOTFS_SUITE=trixie all of it runs in Debian 13: the build,
# lintian and the containers.
#
# Not part of `make check` (four to six minutes: apt, the package build
# with its tests and lintian; the root file system comes from rootfs.sh's
# cache).  TAP on stdout.  Environment: as nspawn.sh (TOUD_SRCDIR,
# TOUD_CI_CACHE, TOUD_TEST_KEEP, CI), TOUD_ROOTFS_SUITE, TOUD_PKG_CHECK.
set -u
set -o pipefail

NODES=(a b)
declare -A UL=([a]=10.201.0.1 [b]=10.201.0.2)
declare -A TUN4=([a]=10.79.0.1 [b]=10.79.0.2)
declare -A TUN6=([a]=fd79::1 [b]=fd79::2)
. "$(dirname "$0")/nspawn_lib.sh"
suite=${TOUD_ROOTFS_SUITE:-bookworm}
export TOUD_ROOTFS_SUITE=$suite

need_commands systemd-nspawn nsenter ip python3 findmnt zstd ping
[ -f "$srcdir/debian/changelog" ] || bail_out "no debian/ in $srcdir"
start_work toud-package

# --- the README's package route: the build in a clean root --------------------

README_BUILD_DEP=1 readme_steps "From a package (in the source tree, as root):" "apt-get install *.deb"
case " ${BUILD[*]} " in
*" apt-get build-dep ./ "*) ok "README's package route installs the build dependencies (apt-get build-dep ./)";;
*) not_ok "README's package route installs the build dependencies" "build steps: ${BUILD[*]}";;
esac
is "${BUILD[-1]}" "dpkg-buildpackage -us -uc -b" "README's package route builds with 'dpkg-buildpackage -us -uc -b'"
is "${INSTALL[-1]}" "systemctl enable --now toud" "README's package route ends with 'systemctl enable --now toud'"

# in_root CMD...: CMD in the build root (no boot; the host's network for
# apt), in /build/toud, which is $WORK/deb/toud.
in_root() {
	systemd-nspawn --quiet --directory="$WORK/buildroot" --keep-unit --register=no --as-pid2 \
	    --resolv-conf=replace-host --console=pipe --bind="$WORK/deb:/build" --chdir=/build/toud \
	    --setenv=DEBIAN_FRONTEND=noninteractive \
	    --setenv=LC_ALL=C.UTF-8 "$@" </dev/null
}

# dpkg-buildpackage writes the packages beside the tree: $WORK/deb.
SRC=$WORK/deb/toud
stamp "the $suite build root"
"$here/rootfs.sh" "$WORK/buildroot" 2>"$WORK/rootfs.log" || bail_out "no build root: $(cat "$WORK/rootfs.log")"
ok "clean $suite root for the build ready in $(elapsed) s ($(tail -n 1 "$WORK/rootfs.log" | sed 's/^rootfs: //'))"
copy_tree "$SRC"
version=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$SRC/debian/changelog")
[ -n "$version" ] || bail_out "no version in debian/changelog"
deb=toud_${version}_$(dpkg --print-architecture).deb
# What a host running toud has: the package's example as /etc/tou.conf,
# a key pair in /etc/tou (stand-ins: only their presence matters) and an
# instance.  No test of the build may read them.
r=$WORK/buildroot
install -d -m 0700 "$r/etc/tou" "$r/etc/toud"
cp "$srcdir/conf/tou.conf.example" "$r/etc/tou.conf"
for f in key.pem cert.pem; do echo "not a key: the build must not read it" >"$r/etc/tou/$f"; done
printf '[interface]\nname = tou9\n[peer zed]\naddress = 10.9.0.2\n' >"$r/etc/toud/office.conf"
# README's `apt-get build-dep ./` is typed at a terminal that answers yes.
printf 'APT::Get::Assume-Yes "true";\nAcquire::Retries "3";\n' >"$r/etc/apt/apt.conf.d/90toud-ci"
opts="parallel=$(nproc)"
[ "${TOUD_PKG_CHECK:-1}" = 1 ] || opts="nocheck $opts"
stamp "README build steps in the $suite root (DEB_BUILD_OPTIONS=$opts)"
in_root sh -ec 'apt-get -q update' >>"$WORK/build.log" 2>&1 || bail_out "apt-get update: $(tail -n 15 "$WORK/build.log")"
for l in "${BUILD[@]}"; do
	if ! in_root --setenv=DEB_BUILD_OPTIONS="$opts" sh -ec "$l" >>"$WORK/build.log" 2>&1; then
		grep -E '^(not ok|FAIL:|# (TOTAL|PASS|FAIL|ERROR))' "$WORK/build.log" | sed 's/^/# /'
		bail_out "README build step '$l' failed in the $suite root: $(tail -n 25 "$WORK/build.log")"
	fi
done
check "the build made $deb, $(elapsed) s" test -f "$WORK/deb/$deb"
if [ "${TOUD_PKG_CHECK:-1}" = 1 ]; then
	# The build's own summary of the tests it ran: none skipped.
	sums=$(grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$WORK/build.log" | awk '{ s[$2] += $3 } END { printf "%d total, %d passed, %d skipped, %d failed, %d errors", s["TOTAL:"], s["PASS:"], s["SKIP:"], s["FAIL:"], s["ERROR:"] }')
	case $sums in
	"0 total"*|*" 0 passed"*) not_ok "the build ran its tests" "$sums";;
	*", 0 skipped, 0 failed, 0 errors") ok "the build ran its tests: $sums";;
	*) not_ok "the build's tests all pass, none skipped" "$sums";;
	esac
fi

stamp "lintian (from the $suite root)"
in_root sh -ec 'apt-get -q -y --no-install-recommends install lintian' >>"$WORK/build.log" 2>&1 ||
    bail_out "apt-get install lintian: $(tail -n 15 "$WORK/build.log")"
# Errors fail; whatever else lintian says (its overrides included) is shown.
if out=$(in_root sh -c "lintian --fail-on error --show-overrides /build/toud_${version}_*.changes" 2>&1); then
	ok "lintian finds no error"
else
	not_ok "lintian finds no error" "$out"
fi
grep -E '^[EWO]: ' <<<"$out" | sed 's/^/lintian: /' | while read -r l; do diag "$l"; done

# --- the containers --------------------------------------------------------------------

make_rootfs
make_underlay
stamp "booting"
for n in "${NODES[@]}"; do
	make_editor "$n"
	boot "$n" --bind-ro="$WORK/deb:$WORK/deb" || bail_out "container $n did not boot"
	link_editor "$n"
	# What systemd-udevd does on every host (nspawn.sh says why).
	cx "$n" chmod 0666 /dev/net/tun || bail_out "chmod /dev/net/tun in $n"
done


# installed NODE OUTPUT: what the package leaves before anything is
# configured; OUTPUT is the installation's.
installed() {
	local n=$1
	grep -q 'neither enabled nor started' <<<"$2" &&
	    ok "$n: the installation says toud is neither enabled nor started" ||
	    not_ok "$n: the installation says toud is neither enabled nor started" "$2"
	is "$(cx "$n" systemctl is-enabled toud.service)/$(cx "$n" systemctl is-active toud.service)" \
	    disabled/inactive "$n: toud.service is installed, neither enabled nor started"
	check "$n: postinst made the system user toud" cx "$n" getent passwd toud
	is "$(cx "$n" stat -c '%U:%G %a' /etc/tou 2>&1)" "toud:toud 700" "$n: postinst made /etc/tou, 0700, toud's"
	is "$(cx "$n" dpkg-query -W -f='${Conffiles}' toud | awk '{ print $1 }' | tr '\n' ' ')" "/etc/tou.conf " \
	    "$n: /etc/tou.conf is the package's one conffile"
	check "$n: units, sysusers, man pages, completion and README.Debian installed" \
	    cx "$n" sh -ec 'for f in /usr/sbin/toud /usr/bin/touctl /usr/lib/sysusers.d/toud.conf \
	        /usr/share/man/man8/toud.8.gz /usr/share/man/man8/touctl.8.gz \
	        /usr/share/man/man5/tou.conf.5.gz /usr/share/bash-completion/completions/touctl \
	        /usr/share/doc/toud/README.Debian /usr/share/doc/toud/examples/tou.conf.example; do
	        test -f "$f" || { echo "missing $f"; exit 1; }; done
	        systemctl cat toud.service toud@x.service >/dev/null'
}

stamp "README install steps in the containers"
# Up to the editor on both nodes (the editor needs the other's fingerprint).
for n in "${NODES[@]}"; do
	for ((i = 0; i < EDIT; i++)); do
		run_step "$n" "${INSTALL[i]}" || bail_out "$n: README step '${INSTALL[i]}' failed"
		[ "$i" -eq 0 ] && installed "$n" "$STEP_OUT"
	done
	[[ ${FPR[$n]:-} =~ ^sha256:[0-9a-f]{64}$ ]] ||
	    bail_out "$n: touctl genkey printed no fingerprint ('${FPR[$n]:-}')"
done
write_peer_conf
stamp "systemctl enable --now"
for n in "${NODES[@]}"; do
	for ((i = EDIT; i < ${#INSTALL[@]}; i++)); do
		run_step "$n" "${INSTALL[i]}" || bail_out "$n: README step '${INSTALL[i]}' failed"
	done
	is "$(cx "$n" systemctl is-active toud.service)" active "$n: toud.service is active"
done

# --- the tunnel ----------------------------------------------------------------------

stamp "traffic"
if wait_ping a "${TUN4[b]}" 10; then
	check "ping a -> b through the tunnel (5 of 5)" \
	    ip netns exec "${PREFIX}a" ping -n -q -c 5 -i 0.2 -W 2 "${TUN4[b]}"
	check "ping b -> a over IPv6 through the tunnel (3 of 3)" \
	    ip netns exec "${PREFIX}b" ping -6 -n -q -c 3 -i 0.2 -W 2 "${TUN6[a]}"
else
	not_ok "ping a -> b through the tunnel" "$(journal a -n 10)"
fi
for n in "${NODES[@]}"; do
	is "$(peer_state "$n" "$(other "$n")")" up "$n: touctl show --json has peer $(other "$n") up"
done

# --- upgrade, remove, purge ------------------------------------------------------------

stamp "reinstall, remove, purge"
mp0=$(prop a MainPID)
check "a: apt-get install --reinstall of the package" \
    cx a sh -ec "cd '$SRC' && apt-get install -y --reinstall ../$deb"
mp=$(prop a MainPID)
if [ "$mp" != 0 ] && [ "$mp" != "$mp0" ] && [ "$(cx a systemctl is-active toud.service)" = active ]; then
	ok "a: the reinstallation restarted the running toud (MainPID $mp0 -> $mp)"
else
	not_ok "a: the reinstallation restarted the running toud" "MainPID $mp0 -> $mp, $(prop a ActiveState)"
fi
wait_ping a "${TUN4[b]}" 10 && ok "a: the tunnel works after the restart" ||
    not_ok "a: the tunnel works after the restart" "$(journal a -n 10)"

check "b: apt-get remove toud" cx b apt-get remove -y toud
is "$(prop b ActiveState)" inactive "b: the removal stopped toud"
check "b: the removal keeps /etc/tou, its key and /etc/tou.conf" \
    cx b test -f /etc/tou/key.pem -a -f /etc/tou.conf
if out=$(cx b apt-get purge -y toud 2>&1); then
	ok "b: apt-get purge toud"
else
	not_ok "b: apt-get purge toud" "$out"
fi
case $out in
*"purge deletes /etc/tou with this node's key pair"*) ok "b: the purge says it deletes the key pair";;
*)	not_ok "b: the purge says it deletes the key pair" "$out";;
esac
is "$(cx b sh -c 'ls -d /etc/tou /etc/tou.conf 2>/dev/null')" "" "b: the purge deleted /etc/tou and /etc/tou.conf"
check "b: the user toud stays after the purge" cx b getent passwd toud

power_off_all

echo "1..$N"
[ "$FAIL" -eq 0 ]
