#!/bin/bash
# t81-dissector-roam: contrib/toud.lua decrypts a session on every path it
# takes.  The client fetches a file over the tunnel, its underlay address
# changes (as in t10-roam-addr), and it fetches another; the capture
# between router and server holds the handshake on the first path only,
# and the records on the new path carry new session IDs (doc/protocol.md
# 1.2).  With the daemons' key log and no preshared key, tshark with the
# dissector decrypts every application data record on both paths and
# shows each request's TCP on the path it took; without the key log it
# shows none.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
{ # the whole test is parsed before it runs (see lib.sh)
need_root
need_cmd curl tcpdump tshark python3

LUA=$E2E_TOP/contrib/toud.lua
TOOL=$E2E_TOP/tests/e2e/dissector_tool.py
HTTP_PORT=8080
NEW_UL=10.201.0.3
[ -r "$LUA" ] || bail_out "no $LUA"

rt_topo
# Deleting the primary address must leave the new (secondary) one in place.
rt_sysctl c net.ipv4.conf.all.promote_secondaries=1 net.ipv4.conf.ul0.promote_secondaries=1

# The capture must hold the handshake: tshark needs its random values to
# find the keys in the key log.
CAP=$E2E_DIR/rs0.pcap
bg_start r "$E2E_DIR/tcpdump.log" tcpdump -i rs0 -p -n -s 0 -B 8192 --immediate-mode -U \
    -w "$CAP" udp port "$RT_PORT"
CAP_PID=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" ||
    bail_out "tcpdump did not start: $(cat "$E2E_DIR/tcpdump.log")"

rt_conf 0
for node in s c; do
	export SSLKEYLOGFILE=$E2E_DIR/$node.keylog
	toud_start $node || bail_out "toud on $node did not start"
done
unset SSLKEYLOGFILE
rt_tunnel_up 10 || bail_out "no ping through the tunnel from c to s in 10 s"

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/before" 64
make_file "$E2E_DIR/www/after" 64
http_serve s "$RT_S_TUN" "$HTTP_PORT" "$E2E_DIR/www"
fetch_check c "http://$RT_S_TUN:$HTTP_PORT/before" "$E2E_DIR/www/before" \
    "64 KB over HTTP from the first address"
sid=$(tq s peers.c.session_id)

nsx c ip addr add "$NEW_UL/24" dev ul0 || bail_out "cannot add $NEW_UL"
nsx c ip route replace default via 10.201.0.1 src "$NEW_UL" || bail_out "cannot switch the route"
nsx c ip addr del "$RT_C_UL/24" dev ul0 || bail_out "cannot delete $RT_C_UL"
rt_wait_endpoint s c "$NEW_UL:$RT_PORT" 30 ||
    bail_out "the server did not follow the client to $NEW_UL in 30 s (it shows $RT_EP)"
fetch_check c "http://$RT_S_TUN:$HTTP_PORT/after" "$E2E_DIR/www/after" \
    "64 KB over HTTP from the new address"
is "$(tq s peers.c.session_id)" "$sid" "the same association on both paths (no handshake)"

pcap_settle "$CAP" || diag "the capture kept growing"
proc_stop "$CAP_PID" TERM

keylog=$E2E_DIR/keylog
cat "$E2E_DIR/s.keylog" "$E2E_DIR/c.keylog" >"$keylog" 2>/dev/null
cmp_ok "$(grep -c '^CLIENT_RANDOM ' "$keylog")" -ge 1 "toud wrote the session keys to SSLKEYLOGFILE"

# summary ADDR [KEYLOG]: the frames from or to outer address ADDR, as JSON in $s.
summary() {
	s=$(python3 "$TOOL" summary "$LUA" "$CAP" "$HTTP_PORT" "${2:-}" "$1") ||
	    bail_out "dissector_tool.py summary failed"
}
st() { json_get "$s" "$1"; }

summary "$RT_C_UL" "$keylog"
diag "the first path ($RT_C_UL), with the key log: $s"
old_sessions=$(st sessions)
cmp_ok "$(st dtls_types.22)" -ge 4 "the handshake is on the first path ($(st dtls_types.22) records)"
cmp_ok "$(st appdata)" -gt 10 "application data records on the first path ($(st appdata))"
is "$(st appdata_with_inner)" "$(st appdata)" "every one of them decrypts to the inner framing"
cmp_ok "$(st tcp_port)" -gt 10 "decrypted TCP with port $HTTP_PORT on the first path ($(st tcp_port))"
is "$(st http_uris)" '["/before"]' "the first request is seen on the first path"
is "$(st toud_experts)/$(st lua_errors)/$(st malformed)" 0/0/0 \
    "no toud expert info, Lua error or malformed packet on the first path ($(st samples))"

summary "$NEW_UL" "$keylog"
diag "the new path ($NEW_UL), with the key log: $s"
is "$(st dtls_types | grep -c '"22"')" 0 "no handshake on the new path"
is "$(python3 -c 'import json, sys; print(sorted(set(json.loads(sys.argv[1])) & set(json.loads(sys.argv[2]))))' \
    "$old_sessions" "$(st sessions)")" "[]" "the new path has session IDs of its own ($(st sessions))"
cmp_ok "$(st appdata)" -gt 10 "application data records on the new path ($(st appdata))"
is "$(st appdata_with_inner)" "$(st appdata)" "every one of them decrypts to the inner framing"
is "$(st inner_valid)" "$(st appdata)" "toud.inner.kind is compact, ip or control on every one"
cmp_ok "$(st tcp_port)" -gt 10 "decrypted TCP with port $HTTP_PORT on the new path ($(st tcp_port))"
is "$(st tcp_other)" 0 "no inner TCP with other ports on the new path"
is "$(st http_uris)" '["/after"]' "the second request is seen on the new path"
is "$(st toud_experts)/$(st lua_errors)/$(st malformed)" 0/0/0 \
    "no toud expert info, Lua error or malformed packet on the new path ($(st samples))"

summary "$NEW_UL"
is "$(st tcp)/$(st inner_kinds)" "0/{}" "nothing of the new path decrypts without the key log"

done_testing
}
