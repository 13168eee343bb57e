#!/bin/bash
# package.sh - the Debian package, built and installed as the README's
# "From a package" route says, word for word (the commands are taken from
# README itself, so this test breaks when the README drifts):
#   - the build lines (up to the `apt-get install` of the package) run on
#     the host in a copy of the source tree (`apt-get build-dep` excepted:
#     dpkg-buildpackage checks the build dependencies itself), giving
#     toud_VERSION_ARCH.deb with the version of debian/changelog,
#   - lintian finds no error in it (the warnings it reports are listed),
#   - the rest runs in two systemd-nspawn containers booting a fresh
#     Debian 12 root (rootfs.sh's, the one nspawn.sh uses): `apt-get
#     install ../toud_*.deb` leaves the user toud, /etc/tou (0700, toud's),
#     /etc/tou.conf as a conffile, the units neither enabled nor started
#     and says so; genkey, chown, the test's `editor` (which adds the other
#     node as a peer), `toud -t` and `systemctl enable --now toud`,
#   - the tunnel carries pings, and touctl show --json has the peer up,
#   - reinstalling the package (an upgrade's maintainer scripts) restarts
#     the running toud, removing it stops toud and keeps /etc/tou, purging
#     it deletes /etc/tou and /etc/tou.conf and keeps the user.
# The package is built with DEB_BUILD_OPTIONS=nocheck unless
# TOUD_PKG_CHECK=1 (the unit tests the build would run have run before).
#
# Not part of `make check` (two to three minutes: the package build and
# lintian; the root file system comes from rootfs.sh's cache).  TAP on
# stdout.  Environment: as nspawn.sh (TOUD_SRCDIR, TOUD_CI_CACHE,
# TOUD_TEST_KEEP, CI), and TOUD_PKG_CHECK.
set -u
set -o pipefail

NODES=(a b)
declare -A UL=([a]=10.201.0.1 [b]=10.201.0.2)
declare -A TUN4=([a]=10.79.0.1 [b]=10.79.0.2)
declare -A TUN6=([a]=fd79::1 [b]=fd79::2)
. "$(dirname "$0")/nspawn_lib.sh"

need_commands systemd-nspawn nsenter ip python3 findmnt zstd ping \
    dpkg-buildpackage dpkg-parsechangelog dh lintian
[ -f "$srcdir/debian/changelog" ] || bail_out "no debian/ in $srcdir"
start_work toud-package

# --- the README's package route, and the build on the host --------------------

readme_steps "From a package (in the source tree, as root):" "apt-get install *.deb"
is "${BUILD[*]}" "dpkg-buildpackage -us -uc -b" "README's package route builds with 'dpkg-buildpackage -us -uc -b'"
is "${INSTALL[-1]}" "systemctl enable --now toud" "README's package route ends with 'systemctl enable --now toud'"

# dpkg-buildpackage writes the packages beside the tree: $WORK/deb.
SRC=$WORK/deb/toud
stamp "copying the source tree"
copy_tree "$SRC"
version=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version) || bail_out "dpkg-parsechangelog"
deb=toud_${version}_$(dpkg --print-architecture).deb
opts="parallel=$(nproc)"
[ "${TOUD_PKG_CHECK:-0}" = 1 ] || opts="nocheck $opts"
stamp "README build steps on the host (DEB_BUILD_OPTIONS=$opts)"
run_build_steps "$SRC" DEB_BUILD_OPTIONS="$opts"
check "the build made $deb, $(elapsed) s" test -f "$WORK/deb/$deb"

stamp "lintian"
# Errors fail; whatever else lintian says (its overrides included) is shown.
if out=$(lintian --fail-on error --show-overrides "$WORK/deb/toud_${version}_"*.changes 2>&1); then
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
check "b: apt-get purge toud" cx b apt-get purge -y toud
is "$(cx b sh -c 'ls -d /etc/tou /etc/tou.conf 2>/dev/null')" "" "b: the purge deleted /etc/tou and /etc/tou.conf"
check "b: the user toud stays after the purge" cx b getent passwd toud

power_off_all

echo "1..$N"
[ "$FAIL" -eq 0 ]
