#!/bin/bash
# t73-tcp-halfopen: four hosts that connect and say nothing cannot fill the
# TCP listener's half-open table.
#
#   x xa ---- ax a ay ---- ya y
#   10.201.0.2-5  .1  10.202.0.1  .2
#
# a listens for the TCP transport on 0.0.0.0:443 (64 connections may be
# unauthenticated at once; each source may make 20 at once).  x, from four IPv4 addresses, keeps 20 silent
# connections per address open, each opened again as soon as a closes it:
# 80 in all, together more than the table.  Once a refuses some of them,
# y, whose key a configures (peer y), connects with TLS: its handshake
# completes and a keeps it within 3 s (before any of the first silent
# connections would have reached the 5 s handshake deadline).  Asserted
# through a's counters: a closed silent connections early (within the 2 s
# first-byte deadline, or evicted for a newer one of the same source:
# tcp_evicted), held at most 4 of each source, and still runs.
. "$(dirname "$0")/lib.sh"
need_root
# shellcheck disable=SC2034  # lib.sh reads it
E2E_ENCRYPTION=dtls
ATTACK=${TOUD_TCP_ATTACK:-$E2E_HELPERS/tcp-attack}
[ -x "$ATTACK" ] || bail_out "no attack client at $ATTACK (make check builds it)"

TCP_PORT=443
EV=interface.events
SOURCES="10.201.0.2 10.201.0.3 10.201.0.4 10.201.0.5"

netns_add a x y
veth x xa a ax "10.201.0.2/24 10.201.0.3/24 10.201.0.4/24 10.201.0.5/24" "10.201.0.1/24"
veth y ya a ay "10.202.0.2/24" "10.202.0.1/24"
conf_interface a 6080 10.77.0.1/24
# IPv4 only: each source its own rate budget (t72 is about the
# dual-stack socket), so four of them could fill the table at once.
sed -i "/^\[interface\]/a listen-tcp = 0.0.0.0:$TCP_PORT" "$(conf_file a)"
conf_peer a y "" "10.77.0.3"
YKEY="$E2E_DIR/keys/y/key.pem $E2E_DIR/keys/y/cert.pem"
toud_start a || bail_out "toud on a did not start"

j0=$(show_json a) || bail_out "touctl show on a"
pids=()
for src in $SOURCES; do
	bg_start x "$E2E_DIR/hold-$src.json" "$ATTACK" hold "$src" 10.201.0.1 "$TCP_PORT" 20 120
	pids+=("$BG_PID")
done
refusing() {
	[ "$(jdelta "$j0" "$(show_json a)" "$EV.tcp_refused")" -gt 0 ]
}
wait_for 20 refusing || bail_out "a never refused x's connections: $(tq a "$EV")"
held=$(tq a interface.tcp_connections)
diag "a holds $held connections as y starts"

# shellcheck disable=SC2086
res=$(nsx y "$ATTACK" legit 10.202.0.2 10.202.0.1 "$TCP_PORT" $YKEY 3)
diag "y: $res"
for pid in "${pids[@]}"; do
	check "x's attacker $pid is still attacking while y connects" proc_alive "$pid"
done
if [ "$(json_get "$res" up)" = true ]; then
	ok "y's TLS connection comes up within 3 s ($(json_get "$res" ms) ms, $(json_get "$res" attempts) attempts)"
else
	not_ok "y's TLS connection comes up within 3 s" "$res"
fi
# Long enough for the first-byte deadline and the per-source eviction.
evicting() {
	[ "$(jdelta "$j0" "$(show_json a)" "$EV.tcp_evicted")" -gt 0 ]
}
check "a evicts silent connections for newer ones of the same source" wait_for 10 evicting
held=$(tq a interface.tcp_connections)
# 4 a source, and y's if it is still closing.
cmp_ok "$held" -le 17 "a holds at most 4 connections of each source ($held in all)"
closed=0
for pid in "${pids[@]}"; do
	proc_stop "$pid" TERM 10 || not_ok "attacker $pid ends on SIGTERM"
done
for src in $SOURCES; do
	r=$(tail -n 1 "$E2E_DIR/hold-$src.json")
	diag "x from $src: $r"
	closed=$((closed + $(json_get "$r" closed_by_server)))
done
cmp_ok "$closed" -ge 80 "a closed x's silent connections as they came ($closed)"
j1=$(show_json a) || bail_out "touctl show on a"
diag "a's events: $(json_get "$j1" "$EV")"
check "toud on a still running" toud_alive a

done_testing
