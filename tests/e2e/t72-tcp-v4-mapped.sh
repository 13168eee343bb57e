#!/bin/bash
# t72-tcp-v4-mapped: one IPv4 host cannot lock the other IPv4 clients out
# of a dual-stack listen-tcp.
#
#   x xa ---- ax a ay ---- ya y
#   10.201.0.2  .1  10.202.0.1  .2
#
# a has the default listen-tcp = 443: one IPv6 socket for both families,
# where every IPv4 source arrives as ::ffff:a.b.c.d.  x makes 40 TCP
# connections a second to it (closed at once, no TLS: the cheapest way to
# use up a per-source budget).  Meanwhile y, whose key a configures (peer
# y), connects with TLS: its handshake completes and a keeps it within 5 s.
# Asserted through a's counters that x was limited (tcp_refused grows) and
# that the limit was x's alone.
. "$(dirname "$0")/lib.sh"
need_root
# shellcheck disable=SC2034  # lib.sh reads it
E2E_ENCRYPTION=dtls
ATTACK=${TOUD_TCP_ATTACK:-$E2E_HELPERS/tcp-attack}
[ -x "$ATTACK" ] || bail_out "no attack client at $ATTACK (make check builds it)"

TCP_PORT=443
EV=interface.events

netns_add a x y
veth x xa a ax "10.201.0.2/24" "10.201.0.1/24"
veth y ya a ay "10.202.0.2/24" "10.202.0.1/24"
conf_interface a 6080 10.77.0.1/24
sed -i "/^\[interface\]/a listen-tcp = $TCP_PORT" "$(conf_file a)"
conf_peer a y "" "10.77.0.3"
YKEY="$E2E_DIR/keys/y/key.pem $E2E_DIR/keys/y/cert.pem"
toud_start a || bail_out "toud on a did not start"
is "$(tq a interface.tcp_listen)" "[::]:$TCP_PORT" "a listens on one dual-stack socket"

j0=$(show_json a) || bail_out "touctl show on a"
bg_start x "$E2E_DIR/flood.json" "$ATTACK" flood 10.201.0.2 10.201.0.1 "$TCP_PORT" 40 120
flood=$BG_PID
# x is past its burst once a refuses it.
refusing() {
	[ "$(jdelta "$j0" "$(show_json a)" "$EV.tcp_refused")" -gt 0 ]
}
wait_for 20 refusing || bail_out "a never refused x's connections: $(tq a "$EV")"

# shellcheck disable=SC2086
res=$(nsx y "$ATTACK" legit 10.202.0.2 10.202.0.1 "$TCP_PORT" $YKEY 5)
diag "y: $res"
check "x is still attacking while y connects" proc_alive "$flood"
if [ "$(json_get "$res" up)" = true ]; then
	ok "y's TLS connection comes up within 5 s ($(json_get "$res" ms) ms, $(json_get "$res" attempts) attempts)"
else
	not_ok "y's TLS connection comes up within 5 s" "$res"
fi
# Stop x once a has seen 100 of its connections (y may be up sooner than
# that: the rate is x's, not a deadline).
seen_100() {
	j=$(show_json a) || return 1
	[ $(($(jdelta "$j0" "$j" "$EV.tcp_refused") + $(jdelta "$j0" "$j" "$EV.tcp_accepted"))) -ge 100 ]
}
wait_for 20 seen_100 || not_ok "a saw 100 of x's connections" "$(tq a "$EV")"
proc_stop "$flood" TERM 10 || not_ok "the flood ends on SIGTERM"
res=$(tail -n 1 "$E2E_DIR/flood.json")
diag "x: $res"
j1=$(show_json a) || bail_out "touctl show on a"
att=$(json_get "$res" attempts)
cmp_ok "$att" -ge 100 "x made its connections ($att)"
refused=$(jdelta "$j0" "$j1" "$EV.tcp_refused")
accepted=$(jdelta "$j0" "$j1" "$EV.tcp_accepted")
diag "a: $accepted accepted, $refused refused"
# x's own budget: a burst of 20 and 5 a second; everything else refused.
cmp_ok "$refused" -ge $((att / 2)) "a refused most of x's connections"
cmp_ok "$accepted" -le $((att / 2)) "and accepted at most half"
check "toud on a still running" toud_alive a

done_testing
