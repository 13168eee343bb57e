#!/bin/sh
# unit.sh - the shipped toud.service and toud.sysusers, checked offline.
#
# A copy of systemd/toud.service.in with @sbindir@ pointing at the built
# toud (systemd-analyze wants ExecStart= to exist) must pass
# `systemd-analyze verify` without a single line of output (unknown keys
# only warn, with status 0), and `systemd-analyze security --offline=true`
# must rate it at most TOUD_MAX_EXPOSURE (default 3.0 on systemd's 0-10
# scale).  The sysusers.d file must create the system user the unit names.
#
# TAP.  TOUD = the built toud, TOUD_SRCDIR = the source tree.  Without
# systemd-analyze the test is skipped (77), except under CI=true, where a
# missing tool is a failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${TOUD_SRCDIR:-$(cd "$here/../.." && pwd)}
TOUD=${TOUD:-$srcdir/_build/src/toud}
max=${TOUD_MAX_EXPOSURE:-3.0}
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() {
	n=$((n + 1)); fails=$((fails + 1))
	echo "not ok $n - $1"
	[ $# -gt 1 ] && [ -n "$2" ] && printf '%s\n' "$2" | sed 's/^/# /'
	return 0
}

if ! command -v systemd-analyze >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then
		echo "Bail out! systemd-analyze missing under CI (apt-get install systemd)"
		exit 1
	fi
	echo "1..0 # SKIP systemd-analyze not installed"
	exit "${TOUD_E2E_SKIP_STATUS:-77}"     # 0 under the TAP driver
fi
[ -x "$TOUD" ] || { echo "Bail out! toud not found at $TOUD (build first, or set TOUD)"; exit 1; }
in=$srcdir/systemd/toud.service.in
users=$srcdir/systemd/toud.sysusers
[ -f "$in" ] && [ -f "$users" ] || { echo "Bail out! no $in or $users"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/toud-unit.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
echo "# $(systemd-analyze --version | head -n 1)"

# The units as `make install` writes them (the same sed as Makefile.am's),
# but with the built binaries.
bindir=$(dirname "$TOUD")
subst() {
	sed -e "s|@sbindir@|$bindir|g" -e "s|@bindir@|$bindir|g" -e "s|@sysconfdir@|/etc|g" "$@" "$in"
}
unit=$work/toud.service
tmpl=$work/toud@.service
subst -e 's|@unit@|toud.service|g' -e 's|@what@||g' \
    -e 's|@toud_args@|-c /etc/tou.conf|g' -e 's|@touctl_args@||g' >"$unit"
subst -e 's|@unit@|toud@.service|g' -e 's|@what@| %i|g' \
    -e 's|@toud_args@|-i %i|g' -e 's|@touctl_args@|-i %i |g' >"$tmpl"
# systemd-analyze verify wants ExecReload='s touctl to exist too.
[ -x "$bindir/touctl" ] || { echo "Bail out! touctl not found next to $TOUD"; exit 1; }
left=$(grep -n '@[A-Za-z_]*@' "$unit" "$tmpl")
[ -z "$left" ] && ok "toud.service.in has no placeholder the Makefile does not fill" ||
    nok "unsubstituted placeholders" "$left"

out=$(systemd-analyze verify --man=no "$unit" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] && ok "systemd-analyze verify: clean" ||
    nok "systemd-analyze verify (status $rc)" "$out"
# A template is verified through an instance of it.
cp "$tmpl" "$work/toud@test.service"
out=$(systemd-analyze verify --man=no "$work/toud@test.service" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] && ok "systemd-analyze verify of toud@test.service: clean" ||
    nok "systemd-analyze verify of toud@test.service (status $rc)" "$out"

for u in "$unit" "$work/toud@test.service"; do
	name=${u##*/}
	out=$(systemd-analyze security --offline=true "$u" 2>&1)
	score=$(printf '%s\n' "$out" | sed -n 's/^.*Overall exposure level for [^ ]*: \([0-9][0-9.]*\) .*$/\1/p')
	if [ -z "$score" ]; then
		nok "systemd-analyze security printed an exposure level for $name" "$out"
		continue
	fi
	echo "# $name: exposure level $score (limit $max); the open items:"
	printf '%s\n' "$out" | grep '✗' | sed 's/  */ /g; s/^/#   /'
	if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s + 0 <= m + 0) }'; then
		ok "systemd-analyze security $name: exposure $score <= $max"
	else
		nok "systemd-analyze security $name: exposure $score > $max"
	fi
done
# --threshold= takes the level times ten (0-100), and is what makes
# systemd-analyze itself fail above it.
thr=$(awk -v m="$max" 'BEGIN { printf "%d", m * 10 + 0.5 }')
out=$(systemd-analyze security --offline=true --threshold="$thr" "$unit" 2>&1) &&
    ok "systemd-analyze security --threshold=$thr passes" ||
    nok "systemd-analyze security --threshold=$thr fails" "$(printf '%s\n' "$out" | tail -n 3)"

# What the daemon relies on, so a "simplification" of the unit shows up here.
want() {
	local f=${2:-$unit}
	grep -qx "$1" "$f" && ok "${f##*/} has $1" || nok "${f##*/} lacks the line '$1'"
}
want "Type=notify"
want "User=toud"
want "Group=toud"
want "ExecStartPre=$bindir/toud -t -c /etc/tou.conf"
want "ExecStart=$bindir/toud -c /etc/tou.conf"
# systemctl reload must fail when toud refuses the file: touctl waits for
# the answer (kill -HUP could not).
want "ExecReload=$bindir/touctl reload"
want "WatchdogSec=30"
want "RuntimeDirectory=toud"
# The instances share /run/toud: stopping one must not remove the others'
# sockets.
want "RuntimeDirectoryPreserve=yes"
# CAP_NET_BIND_SERVICE for listen-tcp = 443 (toud drops it without such a port).
want "AmbientCapabilities=CAP_NET_ADMIN CAP_NET_BIND_SERVICE"
want "CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_BIND_SERVICE"
want "DeviceAllow=/dev/net/tun rw"
want "ExecStartPre=$bindir/toud -t -i %i" "$tmpl"
want "ExecStart=$bindir/toud -i %i" "$tmpl"
want "ExecReload=$bindir/touctl -i %i reload" "$tmpl"
want "RuntimeDirectoryPreserve=yes" "$tmpl"
# Apart from those lines (and the description), the template is the unit.
d=$(diff "$unit" "$tmpl" | grep '^[<>]' | grep -v -E '^[<>] (# toud|Description=|ExecStartPre=|ExecStart=|ExecReload=)')
[ -z "$d" ] && ok "toud@.service differs from toud.service only in what it runs" ||
    nok "toud@.service differs from toud.service elsewhere" "$d"

# The unit's user comes from the sysusers.d file.
user=$(sed -n 's/^User=//p' "$unit")
group=$(sed -n 's/^Group=//p' "$unit")
if command -v systemd-sysusers >/dev/null 2>&1; then
	mkdir -p "$work/root/etc"
	if out=$(systemd-sysusers --root="$work/root" "$users" 2>&1); then
		pw=$(grep "^$user:" "$work/root/etc/passwd")
		gr=$(grep "^$group:" "$work/root/etc/group")
		uid=$(echo "$pw" | cut -d: -f3)
		shell=$(echo "$pw" | cut -d: -f7)
		[ -n "$pw" ] && [ -n "$gr" ] && ok "sysusers creates user $user and group $group" ||
		    nok "sysusers creates user '$user' and group '$group'" "$out"
		[ -n "$uid" ] && [ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] &&
		    ok "$user is a system user (uid $uid)" || nok "$user is a system user" "$pw"
		case $shell in
		*/nologin|*/false) ok "$user has no login shell ($shell)";;
		*) nok "$user has no login shell" "$pw";;
		esac
		[ "$(echo "$pw" | cut -d: -f6)" = / ] && ok "$user has no home directory" ||
		    nok "$user has no home directory" "$pw"
	else
		nok "systemd-sysusers --root accepts toud.sysusers" "$out"
	fi
elif [ "${CI:-}" = true ]; then
	nok "systemd-sysusers missing under CI"
else
	echo "# systemd-sysusers not installed: sysusers file not checked"
fi

# The metrics example: valid, and skipped rather than failed (226/NAMESPACE
# from its ReadWritePaths=) where node_exporter's directory is missing.
mx=$srcdir/contrib/prometheus/toud-metrics.service
out=$(systemd-analyze verify --man=no "$mx" "$srcdir/contrib/prometheus/toud-metrics.timer" 2>&1)
[ -z "$out" ] && ok "systemd-analyze verify of the metrics example: clean" ||
    nok "systemd-analyze verify of the metrics example" "$out"
rwp=$(sed -n 's/^ReadWritePaths=//p' "$mx")
want "ConditionPathIsDirectory=$rwp" "$mx"

echo "1..$n"
[ $fails -eq 0 ]
