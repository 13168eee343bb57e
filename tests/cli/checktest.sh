#!/bin/sh
# toud -t beyond the file: the user exists (and, as root, can read the
# files the unit will open as it), the key and certificate load and
# belong together, a prefix covering a peer's endpoint is warned
# about unless it is a full tunnel's default route; toud -T prints the effective configuration (which parses back to
# itself); -i rejects a bad instance name.  TAP output.
set -u
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077
"$TOUCTL" genkey "$work/a" >/dev/null 2>&1 && "$TOUCTL" genkey "$work/b" >/dev/null 2>&1 ||
    { echo "Bail out! touctl genkey failed"; exit 1; }
user=$(id -un)

# conf FILE KEYDIR CERTDIR USER [ALLOWED-IPS]
conf() {
	{
		echo "[interface]"
		echo "address = 10.9.0.1/24"
		echo "private-key = $2/key.pem"
		echo "certificate = $3/cert.pem"
		echo "user = $4"
		echo
		echo "[peer bob]"
		echo "endpoint = 192.0.2.7:6080"
		echo "address = 10.9.0.2"
		[ -n "${5:-}" ] && echo "allowed-ips = $5"
		echo "fingerprint = sha256:$(printf '%064d' 1)"
	} >"$1"
}

conf "$work/good.conf" "$work/a" "$work/a" "$user"
err=$("$TOUD" -t -c "$work/good.conf" 2>&1)
[ $? -eq 0 ] && [ -z "$err" ] && ok "a matching key pair and an existing user pass silently" ||
    nok "good config: '$err'"

conf "$work/nouser.conf" "$work/a" "$work/a" toud-no-such-user
err=$("$TOUD" -t -c "$work/nouser.conf" 2>&1)
rc=$?
case "$err" in *'user "toud-no-such-user": no such user'*) [ $rc -eq 1 ] && ok "a missing user fails (rc 1): $err" || nok "missing user rc $rc";;
	*) nok "missing user: rc $rc, '$err'";; esac

conf "$work/mismatch.conf" "$work/a" "$work/b" "$user"
err=$("$TOUD" -t -c "$work/mismatch.conf" 2>&1)
rc=$?
case "$err" in *"does not match"*) [ $rc -eq 1 ] && ok "a key that does not match its certificate fails (rc 1): $err" || nok "mismatch rc $rc";;
	*) nok "mismatch: rc $rc, '$err'";; esac

echo "not a certificate" >"$work/garbage.pem"
sed "s|^certificate = .*|certificate = $work/garbage.pem|" "$work/good.conf" >"$work/garbage.conf"
err=$("$TOUD" -t -c "$work/garbage.conf" 2>&1)
rc=$?
[ $rc -eq 1 ] && case "$err" in *garbage.pem*) true;; *) false;; esac &&
    ok "an unparseable certificate fails (rc 1), naming it: $err" || nok "garbage cert: rc $rc, '$err'"

conf "$work/loop.conf" "$work/a" "$work/a" "$user" 192.0.2.0/24
err=$("$TOUD" -t -c "$work/loop.conf" 2>&1)
rc=$?
case "$err" in *"loop.conf:10: peer 'bob': 192.0.2.0/24 covers the endpoint 192.0.2.7 of peer 'bob'"*)
	[ $rc -eq 0 ] && ok "allowed-ips covering the peer's endpoint: a warning naming the line (rc 0)" || nok "loop rc $rc";;
	*) nok "loop: rc $rc, '$err'";; esac
# Its stderr is a pipe here, not a terminal: plain text, no syslog
# priority prefix nor time stamp (those are for journald only).
is_plain="warning: $work/loop.conf:10: peer 'bob': 192.0.2.0/24 covers"
case "$err" in "$is_plain"*) ok "the warning is plain text on a pipe: '$err'";;
	*) nok "the warning on a pipe: '$err'";; esac
err=$(JOURNAL_STREAM=1:1 "$TOUD" -t -c "$work/loop.conf" 2>&1)
case "$err" in "<4>$work/loop.conf:10: peer 'bob'"*) ok "under journald, with the warning priority";;
	*) nok "the warning under journald: '$err'";; esac

# What would fail quietly later: an endpoint name that does not resolve
# (looked up only outside journald, in a namespace without a network here,
# so that it fails at once), a full tunnel's dns server that only the
# default route puts into the tunnel.  Warnings: rc 0.
{
	echo "[interface]"
	echo "address = 10.9.0.1/24"
	echo "private-key = $work/a/key.pem"
	echo "certificate = $work/a/cert.pem"
	echo "dns = 192.168.1.1, 10.9.0.2"
	echo "[peer bob]"
	echo "endpoint = no-such-host.invalid:6080"
	echo "address = 10.9.0.2"
	echo "allowed-ips = 0.0.0.0/0"
	echo "fingerprint = sha256:$(printf '%064d' 1)"
} >"$work/names.conf"
if unshare -n true 2>/dev/null; then
	err=$(unshare -n "$TOUD" -t -c "$work/names.conf" 2>&1)
	rc=$?
	case "$err" in *"warning: $work/names.conf:7: peer 'bob': endpoint name 'no-such-host.invalid' does not resolve now ("*"); toud starts anyway and keeps trying, but check the name"*)
		[ $rc -eq 0 ] && ok "an endpoint name that does not resolve: a warning (rc 0)" || nok "names rc $rc";;
		*) nok "unresolved name: rc $rc, '$err'";; esac
	case "$err" in *"warning: $work/names.conf:5: dns 192.168.1.1: only the default route puts it in the tunnel; a full tunnel leaves a server on the local network outside (a leak)"*)
		ok "a full tunnel's dns server outside the tunnel: a warning";;
		*) nok "dns outside the full tunnel: '$err'";; esac
	case "$err" in *"dns 10.9.0.2"*) nok "the peer's own address as dns is no warning: '$err'";;
		*) ok "the peer's own address as dns is no warning";; esac
	err=$(JOURNAL_STREAM=1:1 unshare -n "$TOUD" -t -c "$work/names.conf" 2>&1)
	case "$err" in *"does not resolve"*) nok "under journald names are not looked up: '$err'";;
		*) ok "under journald (the unit's ExecStartPre) names are not looked up";; esac
else
	ok "# SKIP no unshare -n: endpoint names"
	ok "# SKIP no unshare -n: endpoint names"
	ok "# SKIP no unshare -n: endpoint names"
	ok "# SKIP no unshare -n: endpoint names"
fi

# A full tunnel (table = auto, the default) routes 0.0.0.0/0 in its own
# table, which the tunnel's marked datagrams skip: no warning.  The same
# prefix in the main table would take them.
conf "$work/full.conf" "$work/a" "$work/a" "$user" 0.0.0.0/0
err=$("$TOUD" -t -c "$work/full.conf" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$err" ] && ok "a full tunnel (0.0.0.0/0, table = auto) over the peer's endpoint passes silently" ||
    nok "full tunnel: rc $rc, '$err'"
sed 's/^\[interface\]$/[interface]\ntable = 254/' "$work/full.conf" >"$work/fullmain.conf"
err=$("$TOUD" -t -c "$work/fullmain.conf" 2>&1)
rc=$?
case "$err" in *"fullmain.conf:11: peer 'bob': 0.0.0.0/0 covers the endpoint 192.0.2.7 of peer 'bob'"*)
	[ $rc -eq 0 ] && ok "0.0.0.0/0 in the main table (table = 254) over the endpoint: the warning (rc 0)" ||
	    nok "fullmain rc $rc";;
	*) nok "fullmain: rc $rc, '$err'";; esac

# -T: the effective configuration, canonical; it parses back to itself.
if out=$("$TOUD" -T -c "$work/good.conf" 2>"$work/err"); then
	case "$out" in *"[interface]"*"private-key"*"[peer bob]"*"endpoint"*)
		ok "toud -T prints the effective configuration";;
		*) nok "toud -T printed '$out'";; esac
	case "$out" in *"control"*"/run/toud/toud.sock"*) ok "... with the defaults filled in (control)";;
		*) nok "toud -T without the default control socket: '$out'";; esac
	printf '%s\n' "$out" >"$work/printed.conf"
	out2=$("$TOUD" -T -c "$work/printed.conf" 2>&1)
	[ "$out2" = "$out" ] && ok "toud -T output parses back to the same text" || nok "-T round trip: '$out2'"
else
	nok "toud -T failed: $(cat "$work/err")"; nok "-T defaults"; nok "-T round trip"
fi
"$TOUD" -T -c "$work/nouser.conf" >"$work/out" 2>/dev/null
[ $? -eq 1 ] && [ ! -s "$work/out" ] && ok "toud -T of a refused file prints nothing (rc 1)" || nok "-T of a bad file printed or passed"

# Instances: -i NAME reads SYSCONFDIR/toud/NAME.conf; bad names are usage errors.
"$TOUD" -t -i ../etc >/dev/null 2>&1
[ $? -eq 2 ] && ok "toud -i with a '/' or a leading '.' is a usage error" || nok "toud -i ../etc accepted"
err=$("$TOUD" -t -i toud-test-none 2>&1)
case "$err" in */toud/toud-test-none.conf:*) ok "toud -i NAME reads DIR/toud/NAME.conf ($err)";;
	*) nok "toud -i NAME: '$err'";; esac
# An instance's directory holds only instances: each other *.conf there
# is one, whose port, device, socket and key pair -t -i compares.
mkdir "$work/inst"
cp "$work/good.conf" "$work/inst/x.conf"
out=$("$TOUD" -T -i x -c "$work/inst/x.conf" 2>&1)
case "$out" in *"/run/toud/x.sock"*) ok "toud -i NAME: the instance's control socket /run/toud/NAME.sock";;
	*) nok "toud -i x: '$out'";; esac
sed "/^user/a control = $work/own.sock" "$work/good.conf" >"$work/inst/own.conf"
out=$("$TOUD" -T -i own -c "$work/inst/own.conf" 2>&1)
case "$out" in *"$work/inst/own.conf:1: listen port 6080 is also that of $work/inst/x.conf (instance x)"*)
	ok "a second instance with the first one's port is refused: $out";;
	*) nok "toud -i own beside x: '$out'";; esac
sed -i "/^user/a listen = 6081" "$work/inst/own.conf"
out=$("$TOUD" -T -i own -c "$work/inst/own.conf" 2>&1)
case "$out" in *"$work/inst/own.conf:3: private-key $work/a/key.pem is also that of $work/inst/x.conf (instance x): two tunnels with one key pair are one peer to a server, which breaks both; make this one its own with touctl genkey"*)
	ok "... then, with its own port, the key pair it shares with x: $out";;
	*) nok "toud -i own with x's key pair: '$out'";; esac
sed -i "s|$work/a/|$work/b/|" "$work/inst/own.conf"
out=$("$TOUD" -T -i own -c "$work/inst/own.conf" 2>&1)
case "$out" in *"$work/own.sock"*) ok "... and with its own port, it keeps the socket the file names";;
	*) nok "toud -i own with control set: '$out'";; esac
sed -i "s|^control = .*|control = /run/toud/x.sock|" "$work/inst/own.conf"
out=$("$TOUD" -t -i own -c "$work/inst/own.conf" 2>&1)
case "$out" in *"control socket /run/toud/x.sock is also that of $work/inst/x.conf"*)
	ok "a control socket another instance uses is refused";;
	*) nok "toud -i own with x's socket: '$out'";; esac
out=$("$TOUD" -T -i own -c "$work/inst/own.conf" 2>&1 | sed -n 's/^name *= *//p')
[ "$out" = "" ] && ok "(-T prints nothing when -t fails)" || nok "-T after a refusal: '$out'"

# As root, with another user: the files are opened as that user, as the
# unit will (it starts toud as its user).
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	conf "$work/nobody.conf" "$work/a" "$work/a" nobody
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	case "$err" in *"$work/nobody.conf: cannot open it as user nobody: Permission denied; it must be readable by user nobody"*)
		ok "root: a file the user cannot read fails -t: $err";;
		*) nok "root, unreadable file: '$err'";; esac
	chmod 755 "$work"
	chmod 644 "$work/nobody.conf"
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	case "$err" in *":3: private-key: cannot open '$work/a/key.pem' as user nobody: Permission denied; it must be readable by user nobody: 'chown -R nobody: $work/a'")
		ok "root: a key only root can read fails -t, with the fix: $err";;
		*) nok "root, root's key: '$err'";; esac
	chown -R nobody: "$work/a"
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	[ $? -eq 0 ] && [ -z "$err" ] && ok "root: the user's own key passes" || nok "root, nobody's key: '$err'"
	# A preshared key is read again at every reload, as the user.
	mkdir -m 700 "$work/psk"
	"$TOUCTL" genpsk "$work/psk/bob.psk" || nok "touctl genpsk"
	echo "preshared-key = $work/psk/bob.psk" >>"$work/nobody.conf"
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	case "$err" in *":11: preshared-key: cannot open '$work/psk/bob.psk' as user nobody: Permission denied;"*"'chown -R nobody: $work/psk'")
		ok "root: a preshared key only root can read fails -t, with the fix: $err";;
		*) nok "root, root's preshared key: '$err'";; esac
	chown -R nobody: "$work/psk"
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	[ $? -eq 0 ] && [ -z "$err" ] && ok "root: the user's own preshared key passes" ||
	    nok "root, nobody's preshared key: '$err'"
	# So is a file of peers (include), here in a directory only root may enter.
	mkdir -m 700 "$work/tou.d"
	printf '[peer carol]\naddress = 10.9.0.3\nfingerprint = sha256:%064d\n' 3 \
	    >"$work/tou.d/carol.conf"
	sed -i "/^user/a include = $work/tou.d/*.conf" "$work/nobody.conf"
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	case "$err" in *"$work/nobody.conf:6: include: cannot open '$work/tou.d/carol.conf' as user nobody: Permission denied;"*"'chown -R nobody: $work/tou.d'")
		ok "root: a file of peers only root can read fails -t, with the fix: $err";;
		*) nok "root, root's file of peers: '$err'";; esac
	chown -R nobody: "$work/tou.d"
	err=$("$TOUD" -t -c "$work/nobody.conf" 2>&1)
	[ $? -eq 0 ] && [ -z "$err" ] && ok "root: the user's own file of peers passes" ||
	    nok "root, nobody's file of peers: '$err'"
	chown -R 0:0 "$work/a" "$work/psk" "$work/tou.d"
	chmod 700 "$work"
else
	ok "# SKIP not root: the files as the configured user"
fi

# listen-tcp = 443 as the service user (the unit's ExecStartPre=): the
# port binds only with CAP_NET_BIND_SERVICE, which toud -t checks, naming
# the unit's two lines.  In a network namespace of its own, where the
# kernel's unprivileged range starts at 1024 whatever the host's says.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
	pw=$(mktemp -d)
	chmod 755 "$pw"
	"$TOUCTL" genkey "$pw/k" >/dev/null 2>&1 && chown -R nobody: "$pw/k" && chmod 755 "$pw/k" ||
	    nok "genkey for nobody"
	conf "$pw/443.conf" "$pw/k" "$pw/k" nobody
	sed -i "/^user = /a listen-tcp = 443" "$pw/443.conf"
	chmod 644 "$pw/443.conf"
	as_nobody() { unshare -n setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }
	err=$(as_nobody "$TOUD" -t -c "$pw/443.conf" 2>&1)
	rc=$?
	case "$err" in *"443.conf:6: listen-tcp 443: user nobody may not bind a port below 1024 without CAP_NET_BIND_SERVICE; add it to both AmbientCapabilities= and CapabilityBoundingSet= of the unit"*)
		[ $rc -eq 1 ] && ok "as the user without CAP_NET_BIND_SERVICE, listen-tcp = 443 fails -t (rc 1), naming the fix: $err" ||
		    nok "listen-tcp 443 without the capability: rc $rc";;
		*) nok "listen-tcp 443 without the capability: rc $rc, '$err'";; esac
	err=$(as_nobody --inh-caps=+net_bind_service --ambient-caps=+net_bind_service \
	    "$TOUD" -t -c "$pw/443.conf" 2>&1)
	[ $? -eq 0 ] && [ -z "$err" ] && ok "with the unit's CAP_NET_BIND_SERVICE (ambient), it passes" ||
	    nok "listen-tcp 443 with the capability: '$err'"
	sed -i 's/^listen-tcp = 443/listen-tcp = 1443/' "$pw/443.conf"
	err=$(as_nobody "$TOUD" -t -c "$pw/443.conf" 2>&1)
	[ $? -eq 0 ] && [ -z "$err" ] && ok "a port from 1024 up needs no capability" ||
	    nok "listen-tcp 1443 without the capability: '$err'"
	sed -i 's/^listen-tcp = 1443/metrics = 127.0.0.1:99/' "$pw/443.conf"
	err=$(as_nobody "$TOUD" -t -c "$pw/443.conf" 2>&1)
	case "$err" in *"443.conf:6: metrics 99: user nobody may not bind"*) ok "so does a metrics port below 1024: $err";;
		*) nok "metrics 99 without the capability: '$err'";; esac
	err=$("$TOUD" -t -c "$pw/443.conf" 2>&1)
	[ $? -eq 0 ] && [ -z "$err" ] && ok "root (which keeps the capability when it switches to the user) passes" ||
	    nok "root, metrics 99: '$err'"
	rm -rf "$pw"
else
	ok "# SKIP not root, or no setpriv or unshare: privileged ports as the user"
fi

echo "1..$n"
[ $fails -eq 0 ]
