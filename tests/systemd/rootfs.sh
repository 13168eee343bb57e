#!/bin/sh
# rootfs.sh DIR - put a minimal Debian 12 (bookworm) or 13 (trixie) root
# file system with systemd and toud's runtime libraries into DIR (which
# must not exist), for systemd-nspawn.  The result is cached as a zstd
# tarball under $TOUD_CI_CACHE (default /var/cache/toud-ci), keyed by the suite, the
# mirror and the package list, so a second run unpacks it in about a
# second; without a cache entry (or with TOUD_CI_CACHE=none) it runs
# debootstrap (about a minute) and stores the result.  The tarball is never
# part of the source tree.
#
# Environment: TOUD_ROOTFS_SUITE (bookworm, the default, or trixie),
# TOUD_ROOTFS_MIRROR (default http://deb.debian.org/debian),
# TOUD_ROOTFS_PACKAGES (extra packages, space separated),
# TOUD_ROOTFS_FLAVOUR (a name for the cache entry, default "base": roots
# of one suite with other packages keep entries of their own).
set -eu

dir=$1
suite=${TOUD_ROOTFS_SUITE:-bookworm}
mirror=${TOUD_ROOTFS_MIRROR:-http://deb.debian.org/debian}
# systemd as init, dbus for systemctl, iproute2, what toud and touctl link
# against (libsystemd0 comes with systemd), and make for the README's
# `make install` in the container (nspawn.sh).  Debian 13 renamed the
# libraries of the 64-bit time_t transition.
case $suite in
bookworm) libs="libevent-2.1-7 libevent-openssl-2.1-7 libssl3 libcap-ng0";;
trixie) libs="libevent-2.1-7t64 libevent-openssl-2.1-7t64 libssl3t64 libcap-ng0";;
*) echo "rootfs: unknown suite $suite (bookworm or trixie)" >&2; exit 1;;
esac
packages="systemd systemd-sysv dbus iproute2 make $libs"
packages=$(printf '%s\n' $packages | sort -u | tr '\n' ' ')
# Installed with apt once the base system is configured (polkitd does not
# configure inside debootstrap): for [interface] dns, systemd-resolved (its
# own package in bookworm) and polkitd, through which resolved lets
# toud's user set a link's name servers.
later="systemd-resolved polkitd"
# The extra packages too: apt resolves their dependencies (alternatives,
# virtual packages) where debootstrap's --include does not.
if [ -n "${TOUD_ROOTFS_PACKAGES:-}" ]; then
	later="$later $(printf '%s\n' $TOUD_ROOTFS_PACKAGES | sort -u | tr '\n' ' ')"
fi
cache=${TOUD_CI_CACHE:-/var/cache/toud-ci}
# Bump the recipe number when what happens to the tree below changes.
key=$(printf 'recipe 4\n%s\n%s\n%s\n%s\n' "$suite" "$mirror" "$packages" "$later" | sha256sum | cut -c1-16)
flavour=${TOUD_ROOTFS_FLAVOUR:-base}
# The base root keeps the entry's name of before flavours.
if [ "$flavour" = base ]; then
	tarball=$cache/rootfs-$suite-$key.tar.zst
	older="$cache/rootfs-$suite-????????????????.tar.zst"
else
	tarball=$cache/rootfs-$suite-$flavour-$key.tar.zst
	older="$cache/rootfs-$suite-$flavour-*.tar.zst"
fi

log() { echo "rootfs: $*" >&2; }

[ ! -e "$dir" ] || { log "$dir exists"; exit 1; }
mkdir -p "$dir"

if [ "$cache" != none ] && [ -f "$tarball" ]; then
	if tar -C "$dir" --numeric-owner --xattrs -I zstd -xf "$tarball"; then
		log "unpacked $tarball"
		exit 0
	fi
	log "cannot unpack $tarball: rebuilding it"
	rm -rf "$dir"
	mkdir -p "$dir"
fi

command -v debootstrap >/dev/null || { log "debootstrap missing (apt-get install debootstrap)"; exit 1; }
log "debootstrap $suite from $mirror: $packages"
if ! debootstrap --variant=minbase --include="$(echo $packages | tr ' ' ,)" \
    "$suite" "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1; then
	log "debootstrap failed; last lines:"
	tail -n 20 "$dir.debootstrap.log" >&2
	rm -f "$dir.debootstrap.log"
	exit 1
fi
rm -f "$dir.debootstrap.log"
# No service starts in the chroot (policy-rc.d); /proc stays unmounted.
log "apt-get install $later"
printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
chmod 755 "$dir/usr/sbin/policy-rc.d"
if ! chroot "$dir" env DEBIAN_FRONTEND=noninteractive sh -c "apt-get -q update &&
    apt-get -q -y --no-install-recommends install $later" >"$dir.apt.log" 2>&1; then
	log "apt-get install $later failed; last lines:"
	tail -n 20 "$dir.apt.log" >&2
	rm -f "$dir.apt.log"
	exit 1
fi
rm -f "$dir.apt.log" "$dir/usr/sbin/policy-rc.d"
chroot "$dir" apt-get -q clean
rm -f "$dir"/var/cache/apt/archives/*.deb
# debootstrap copies the host's name; containers get theirs from nspawn.
echo toud-ci >"$dir/etc/hostname"
# Nothing in the container needs a getty or the network managed for it.
rm -f "$dir/etc/systemd/system/getty.target.wants/"* 2>/dev/null || true

if [ "$cache" != none ]; then
	if mkdir -p "$cache" 2>/dev/null; then
		tmp=$tarball.tmp.$$
		if tar -C "$dir" --numeric-owner --xattrs -I 'zstd -T0 -3' -cf "$tmp" . 2>/dev/null; then
			mv -f "$tmp" "$tarball"
			log "cached as $tarball ($(du -h "$tarball" | cut -f1))"
			# Older entries of this flavour (another package list)
			# are of no more use.
			for f in $older; do
				[ "$f" = "$tarball" ] || rm -f "$f"
			done
		else
			rm -f "$tmp"
			log "could not write the cache (continuing)"
		fi
	else
		log "cannot create $cache (continuing without a cache)"
	fi
fi
