#!/bin/sh
# touctl's errors when it cannot reach toud: a socket that is not there
# says "is toud running?"; one the caller may not open (another user's
# directory, as /run/toud is toud's, mode 0750) names who may use it
# and how.  TAP output; the second part needs root (to be another user).
set -u
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

err=$("$TOUCTL" -s "$work/none.sock" show 2>&1)
rc=$?
[ $rc -eq 1 ] && [ "$err" = "touctl: $work/none.sock: No such file or directory (is toud running?)" ] &&
    ok "no socket: is toud running? ($err)" || nok "no socket: rc $rc, '$err'"

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 &&
    id daemon >/dev/null 2>&1; then
	chmod 755 "$work"
	mkdir -m 750 "$work/run"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	    "$work/run/toud.sock" || nok "python3 could not make a socket"
	chown -R daemon: "$work/run"
	err=$(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
	    "$TOUCTL" -s "$work/run/toud.sock" show 2>&1)
	rc=$?
	[ $rc -eq 1 ] && [ "$err" = "touctl: $work/run/toud.sock: Permission denied: only root and user daemon, which toud runs as, may use toud's control socket; run touctl as root (sudo)" ] &&
	    ok "another user's socket names who may use it ($err)" || nok "another user: rc $rc, '$err'"
else
	ok "# SKIP not root, or no setpriv, python3 or user daemon"
fi

echo "1..$n"
[ $fails -eq 0 ]
