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

# The unit as `make install` writes it, but with the built binary.
unit=$work/toud.service
sed -e "s|@sbindir@|$(dirname "$TOUD")|g" -e "s|@sysconfdir@|/etc|g" "$in" >"$unit"
left=$(grep -n '@[A-Za-z_]*@' "$unit")
[ -z "$left" ] && ok "toud.service.in has no placeholder but @sbindir@ and @sysconfdir@" ||
    nok "unsubstituted placeholders" "$left"

out=$(systemd-analyze verify --man=no "$unit" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] && ok "systemd-analyze verify: clean" ||
    nok "systemd-analyze verify (status $rc)" "$out"

out=$(systemd-analyze security --offline=true "$unit" 2>&1)
score=$(printf '%s\n' "$out" | sed -n 's/^.*Overall exposure level for toud\.service: \([0-9][0-9.]*\) .*$/\1/p')
if [ -z "$score" ]; then
	nok "systemd-analyze security printed an exposure level" "$out"
else
	echo "# exposure level $score (limit $max); the open items:"
	printf '%s\n' "$out" | grep '✗' | sed 's/  */ /g; s/^/#   /'
	if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s + 0 <= m + 0) }'; then
		ok "systemd-analyze security: exposure $score <= $max"
	else
		nok "systemd-analyze security: exposure $score > $max"
	fi
fi
# --threshold= takes the level times ten (0-100), and is what makes
# systemd-analyze itself fail above it.
thr=$(awk -v m="$max" 'BEGIN { printf "%d", m * 10 + 0.5 }')
out=$(systemd-analyze security --offline=true --threshold="$thr" "$unit" 2>&1) &&
    ok "systemd-analyze security --threshold=$thr passes" ||
    nok "systemd-analyze security --threshold=$thr fails" "$(printf '%s\n' "$out" | tail -n 3)"

# What the daemon relies on, so a "simplification" of the unit shows up here.
want() {
	grep -qx "$1" "$unit" && ok "unit has $1" || nok "unit lacks the line '$1'"
}
want "Type=notify"
want "User=toud"
want "Group=toud"
want "ExecStartPre=$(dirname "$TOUD")/toud -t -c /etc/tou.conf"
want "ExecStart=$(dirname "$TOUD")/toud -c /etc/tou.conf"
want "WatchdogSec=30"
want "RuntimeDirectory=toud"
want "AmbientCapabilities=CAP_NET_ADMIN"
want "CapabilityBoundingSet=CAP_NET_ADMIN"
want "DeviceAllow=/dev/net/tun rw"

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

echo "1..$n"
[ $fails -eq 0 ]
