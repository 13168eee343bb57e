#!/bin/bash
# t64-privileged-port: listen-tcp below 1024 and the capability it needs.
# a runs as `user = nobody` (started as root, as t20).  Started with
# listen-tcp = 1443, it keeps no CAP_NET_BIND_SERVICE, so a reload to
# listen-tcp = 443 is refused with the fix named ("restart"), and changes
# nothing: the old listener still accepts, the UDP peer b keeps its session
# (no new handshake) and its traffic, and the daemon is the same process.
# A reload to another unprivileged port moves the listener (the old port
# closes).  Restarted with listen-tcp = 443, a keeps the capability
# (CapEff has bit 10) and listens there, and a reload to 444 then works.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls             # the TCP transport is TLS
need_root
need_cmd ping ss

USER_NAME=nobody
uid=$(id -u "$USER_NAME" 2>/dev/null) || bail_out "no user $USER_NAME"
gid=$(id -g "$USER_NAME")
mkdir -m 0755 "$E2E_DIR/run"
chown "$uid:$gid" "$E2E_DIR/run"
sock_of() {
	case $1 in
	a) echo "$E2E_DIR/run/a.sock";;
	*) echo "$E2E_DIR/$1.sock";;
	esac
}
ctl() { nsx "$1" "$TOUCTL" -s "$(sock_of "$1")" "${@:2}"; }
# cap_eff PID: the effective capability set, hexadecimal.
cap_eff() { awk '$1 == "CapEff:" { print $2 }' "/proc/$1/status"; }
has_bind_service() { (( (16#$(cap_eff "$1") >> 10) & 1 )); }
listening() { port_listening a t "$1"; }
not_listening() { ! port_listening a t "$1"; }
handshakes() { tq a peers.b.events.handshake_completed; }

topo_ab
conf_ab 4
conf=$(conf_file a)
sed -i "/^\[interface\]/a user = $USER_NAME\nlisten-tcp = 1443" "$conf"
chown "$uid:$gid" "$E2E_DIR/keys/a/key.pem"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
pid=${TOUD_PID[a]}
# touctl ping before any traffic: one clear error, no "0 answered" count.
out=$(ctl a ping b 2>&1)
is "$?/$out" "1/touctl: peer 'b' has no session (state idle), so nothing was sent: a ping goes over a session; traffic to the peer, or its keepalive, starts one (touctl wait b waits for it)" \
    "touctl ping of a peer without a session says so, once"
ping_check a 10.77.0.2 "ping a to b through the tunnel (UDP)"
check "a listens on TCP 1443" wait_for 5 listening 1443
if has_bind_service "$pid"; then
	not_ok "without a port below 1024, a dropped CAP_NET_BIND_SERVICE" "CapEff $(cap_eff "$pid")"
else
	ok "without a port below 1024, a dropped CAP_NET_BIND_SERVICE (CapEff $(cap_eff "$pid"))"
fi
hs0=$(handshakes)
[[ $hs0 =~ ^[1-9][0-9]*$ ]] || bail_out "peer b: handshake_completed is '$hs0'"

# --- a reload to a port the daemon may no longer bind ------------------------

sed -i 's/^listen-tcp = .*/listen-tcp = 443/' "$conf"
err=$(ctl a reload 2>&1)
is "$?" 1 "a reload to listen-tcp = 443 is refused"
diag "$err"
check "saying why, and the fix" grep -q \
    "listen-tcp 443: Permission denied; a port below 1024 needs CAP_NET_BIND_SERVICE, which toud keeps only when it starts with such a port configured (toud(8), Privileged ports): restart toud, or choose a port from 1024 up; nothing changed" \
    <<<"$err"
check "toud on a runs on (the same process)" toud_alive a
is "$(tq a interface.tcp_listen)" "[::]:1443" "show --json: still accepting TCP on [::]:1443"
check "port 1443 still listening" listening 1443
check "port 443 not listening" not_listening 443
ping_check a 10.77.0.2 "ping a to b after the refused reload"
is "$(tq a peers.b.state)" up "peer b is still up"
is "$(handshakes)" "$hs0" "peer b kept its session (no new handshake)"

# --- a reload to another unprivileged port -----------------------------------

sed -i 's/^listen-tcp = .*/listen-tcp = 1444/' "$conf"
out=$(ctl a reload 2>&1)
is "$?/$out" "0/0 peers added, 0 removed, 0 changed; [interface] listen-tcp changed" \
    "a reload to listen-tcp = 1444 succeeds, and its summary names the [interface] change"
is "$(tq a interface.tcp_listen)" "[::]:1444" "show --json: accepting TCP on [::]:1444"
check "port 1444 listening" wait_for 5 listening 1444
check "port 1443 closed" wait_for 5 not_listening 1443
is "$(handshakes)" "$hs0" "peer b kept its session through the move"

# --- started with 443 ----------------------------------------------------------

toud_stop a || diag "toud on a did not stop cleanly"
sed -i 's/^listen-tcp = .*/listen-tcp = 443/' "$conf"
toud_start a || bail_out "toud on a did not start with listen-tcp = 443"
pid=${TOUD_PID[a]}
check "a, as nobody, listens on TCP 443" wait_for 5 listening 443
if has_bind_service "$pid"; then
	ok "with listen-tcp = 443 a kept CAP_NET_BIND_SERVICE (CapEff $(cap_eff "$pid"))"
else
	not_ok "with listen-tcp = 443 a kept CAP_NET_BIND_SERVICE" "CapEff $(cap_eff "$pid")"
fi
is "$(awk '$1 == "Uid:" { print $2 }' "/proc/$pid/status")" "$uid" "and runs as $USER_NAME"
sed -i 's/^listen-tcp = .*/listen-tcp = 444/' "$conf"
check "then a reload to listen-tcp = 444 succeeds" ctl a reload
check "port 444 listening" wait_for 5 listening 444
check "port 443 closed" wait_for 5 not_listening 443
ping_check a 10.77.0.2 "ping a to b at the end"

check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b
done_testing
