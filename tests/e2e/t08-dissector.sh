#!/bin/bash
# t08-dissector: contrib/toud.lua, the tshark dissector, on captures of the
# underlay.  First on hand-made datagrams (good ones dissect to their
# fields, broken ones give expert info, none a Lua error).  Then on real
# toud daemons during an HTTP transfer: with encryption = none every
# UDP/6080 frame is compact TOU carrying the transfer's TCP; with
# encryption = dtls every frame shows the session ID and one DTLS record,
# and with the daemons' key log (SSLKEYLOGFILE) the decrypted records are
# the inner framing with the same TCP inside, while without it no TCP is
# visible.
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
need_root
need_cmd curl tcpdump tshark

LUA=$E2E_TOP/contrib/toud.lua
TOOL=$E2E_TOP/tests/e2e/dissector_tool.py
HTTP_PORT=8080
[ -r "$LUA" ] || bail_out "no $LUA"

# --- hand-made datagrams ----------------------------------------------------

res=$(python3 "$TOOL" cases "$LUA" "$E2E_DIR") || bail_out "dissector_tool.py cases failed"
r() { json_get "$res" "$1"; }
is "$(r failures)" "[]" "hand-made datagrams dissect as expected ($(r clean) good, $(r expert) broken, $(r random) random)" ||
    diag "$res"
is "$(r lua_errors)" 0 "no Lua error on any of $(r frames) hand-made datagrams"

# capture NAME: start tcpdump on a's underlay for UDP/6080.
capture_start() {
	CAP=$E2E_DIR/$1.pcap
	bg_start a "$E2E_DIR/tcpdump-$1.log" tcpdump -i ul0 -n -s 0 -B 8192 --immediate-mode -U \
	    -w "$CAP" udp port 6080
	CAP_PID=$BG_PID
	wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump-$1.log" ||
	    bail_out "tcpdump did not start: $(cat "$E2E_DIR/tcpdump-$1.log")"
}

capture_stop() {
	pcap_settle "$CAP" || diag "the capture kept growing"
	proc_stop "$CAP_PID" TERM
}

# summary [KEYLOG]: dissect $CAP, counts as JSON in $s.
summary() {
	s=$(python3 "$TOOL" summary "$LUA" "$CAP" "$HTTP_PORT" "$@") ||
	    bail_out "dissector_tool.py summary failed"
}
st() { json_get "$s" "$1"; }

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 128

# --- encryption = none ------------------------------------------------------

# shellcheck disable=SC2034
E2E_ENCRYPTION=none
topo_ab
link_segments a ul0
link_segments b ul0
conf_ab 4
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
ping_check a 10.77.0.2 "ping through the tunnel (encryption = none)"
http_serve b 10.77.0.2 "$HTTP_PORT" "$E2E_DIR/www"

capture_start none
fetch_check a "http://10.77.0.2:$HTTP_PORT/f" "$E2E_DIR/www/f" "128 KB over HTTP (encryption = none)"
capture_stop

summary
diag "encryption = none: $s"
n=$(st udp6080)
cmp_ok "$n" -gt 10 "UDP/6080 frames captured ($n)"
is "$(st encryption.none)" "$n" "every UDP/6080 frame is toud with encryption none"
cmp_ok "$(st tcp_port)" -gt 10 "compact TCP frames with port $HTTP_PORT ($(st tcp_port))"
is "$(st tcp_port)" "$(st raw.compact_tcp)" "every compact TCP datagram (raw bytes: $(st raw.compact_tcp)) dissects as TCP"
is "$(st inner_valid)" "$n" "toud.inner.kind is compact, ip or control on every frame"
is "$(st inner_kinds.compact)" "$(st raw.compact_tcp)" "every compact frame is TCP (no other traffic in the capture)"
is "$(st tcp_other)" 0 "no inner TCP with other ports"
is "$(st tcp_no_flags)" 0 "tcp.flags present on every inner TCP segment"
cmp_ok "$(st tcp_to_port)" -gt 3 "TCP to port $HTTP_PORT ($(st tcp_to_port))"
cmp_ok "$(st tcp_from_port)" -gt 10 "TCP from port $HTTP_PORT ($(st tcp_from_port))"
cmp_ok "$(st syn)" -ge 1 "the SYN to port $HTTP_PORT is seen"
cmp_ok "$(st synack)" -ge 1 "the SYN-ACK from port $HTTP_PORT is seen"
is "$(st http_uris)" '["/f"]' "the HTTP request inside is dissected"
is "$(st toud_experts)/$(st lua_errors)/$(st malformed)" 0/0/0 \
    "no toud expert info, Lua error or malformed packet ($(st samples))"

proc_stop "$HTTP_PID"
toud_stop a
toud_stop b

# --- encryption = dtls ------------------------------------------------------

# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
conf_ab 4
# The capture must hold the handshakes: tshark needs their random values
# to find the keys in the key log.
capture_start dtls
for node in a b; do
	export SSLKEYLOGFILE=$E2E_DIR/$node.keylog
	toud_start $node || bail_out "toud on $node did not start (encryption = dtls)"
done
unset SSLKEYLOGFILE
ping_check a 10.77.0.2 "ping through the tunnel (encryption = dtls)"
http_serve b 10.77.0.2 "$HTTP_PORT" "$E2E_DIR/www"
fetch_check a "http://10.77.0.2:$HTTP_PORT/f" "$E2E_DIR/www/f" "128 KB over HTTP (encryption = dtls)"
capture_stop
sid=$(tq a peers.b.session_id)
sid=$(python3 -c 'import sys; print("%016x" % int(sys.argv[1], 16))' "$sid" 2>/dev/null) ||
    sid="none ($(tq a peers.b.session_id))"

keylog=$E2E_DIR/keylog
cat "$E2E_DIR/a.keylog" "$E2E_DIR/b.keylog" >"$keylog" 2>/dev/null
cmp_ok "$(grep -c '^CLIENT_RANDOM [0-9a-f]\{64\} [0-9a-f]\{96\}$' "$keylog")" -ge 1 \
    "toud wrote the session keys to SSLKEYLOGFILE"

summary "$keylog"
diag "encryption = dtls, with the key log: $s"
n=$(st udp6080)
cmp_ok "$n" -gt 10 "UDP/6080 frames captured ($n)"
is "$(st encryption.dtls)" "$n" "every UDP/6080 frame has the outer toud framing"
is "$(st with_session_id)" "$n" "toud.session_id on every UDP/6080 frame"
is "$(st dtls_records)" "$n" "a DTLS record on every UDP/6080 frame"
cmp_ok "$(st dtls_types.22)" -ge 4 "DTLS handshake records ($(st dtls_types.22))"
is "$(st raw.compact_tcp)" 0 "no cleartext compact TOU on the wire"
cmp_ok "$(st appdata)" -gt 10 "DTLS application data records ($(st appdata))"
is "$(st appdata_with_inner)" "$(st appdata)" "every application data record decrypts to the inner framing"
is "$(st inner_valid)" "$(st appdata)" "toud.inner.kind is compact, ip or control on every decrypted record"
cmp_ok "$(st inner_kinds.compact)" -gt 10 "decrypted compact TOU ($(st inner_kinds.compact))"
cmp_ok "$(st tcp_port)" -gt 10 "decrypted TCP frames with port $HTTP_PORT ($(st tcp_port))"
is "$(st tcp_other)" 0 "no inner TCP with other ports"
is "$(st tcp_no_flags)" 0 "tcp.flags present on every inner TCP segment"
cmp_ok "$(st tcp_to_port)" -gt 3 "TCP to port $HTTP_PORT ($(st tcp_to_port))"
cmp_ok "$(st tcp_from_port)" -gt 10 "TCP from port $HTTP_PORT ($(st tcp_from_port))"
cmp_ok "$(st syn)" -ge 1 "the SYN to port $HTTP_PORT is seen"
cmp_ok "$(st synack)" -ge 1 "the SYN-ACK from port $HTTP_PORT is seen"
is "$(st http_uris)" '["/f"]' "the HTTP request inside is dissected"
is "$(st tcp_sessions)" "[\"$sid\"]" "the TCP travels in the session touctl shows ($sid)"
is "$(st toud_experts)/$(st lua_errors)/$(st malformed)" 0/0/0 \
    "no toud expert info, Lua error or malformed packet ($(st samples))"
with=$n

summary
diag "encryption = dtls, without the key log: $s"
is "$(st udp6080)" "$with" "the same frames without the key log"
is "$(st with_session_id)" "$with" "toud.session_id on every frame without the key log"
cmp_ok "$(st appdata)" -gt 10 "application data records without the key log ($(st appdata))"
is "$(st tcp)" 0 "no TCP visible without the key log"
is "$(st inner_kinds)" "{}" "no inner framing visible without the key log"
is "$(st toud_experts)/$(st lua_errors)/$(st malformed)" 0/0/0 \
    "no toud expert info, Lua error or malformed packet without the key log"

done_testing
}
