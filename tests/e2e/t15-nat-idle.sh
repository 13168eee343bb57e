#!/bin/bash
# t15-nat-idle: why keepalive exists.  The client sits behind a NAT that
# forgets an idle UDP mapping after 5 s.  With `keepalive = 2` on the
# client, the mapping survives 10 s without traffic and the server can open
# a new TCP connection to the client.  Without keepalive the mapping is gone
# after the same 10 s: the server still has a session and sends, but the
# router has nowhere to deliver it and the connection attempt times out.
# Once the client speaks again, the server reaches it again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping nft conntrack

IDLE=10
URL=http://$RT_C_TUN:8081/hello

# nat_entries: the router's UDP mappings of the client.
nat_entries() {
	nsx r conntrack -L -p udp --orig-src "$RT_C_UL" 2>/dev/null | grep -c udp
}

# server_connects SECONDS: the server opens a new TCP connection to the
# client (an HTTP request to a listener on the client's tunnel address).
server_connects() {
	nsx s curl -sS --noproxy '*' --connect-timeout "$1" --max-time "$(($1 + 2))" -o /dev/null "$URL"
}

rt_topo
rt_nat 10.201.1.1:40000-40099
rt_udp_timeout 5

mkdir -p "$E2E_DIR/www-c"
echo hello >"$E2E_DIR/www-c/hello"

# --- with keepalive = 2 -------------------------------------------------------
rt_start 2
http_serve c "$RT_C_TUN" 8081 "$E2E_DIR/www-c"
check "keepalive 2: the server connects to the client at first" server_connects 5
sid=$(tq c peers.s.session_id)
j0c=$(show_json c) j0s=$(show_json s)
diag "idle for $IDLE s"
sleep "$IDLE"
j1c=$(show_json c) j1s=$(show_json s)
cmp_ok "$(nat_entries)" -ge 1 "keepalive 2: the router still holds the client's mapping after $IDLE s idle"
ka=$(jdelta "$j0c" "$j1c" peers.s.tx_packets)
diag "keepalive 2: during the idle time the client sent $ka datagrams, the server $(jdelta "$j0s" "$j1s" peers.c.tx_packets)"
cmp_ok "$ka" -ge 3 "keepalive 2: the client sent keepalives while idle ($ka)"
check "keepalive 2: the server opens a new connection to the client after $IDLE s idle" server_connects 4
is "$(tq c peers.s.session_id)" "$sid" "keepalive 2: the session stayed the same (keepalives are answered, so no re-handshake)"
is "$(tq c peers.s.state)" up "keepalive 2: the client's peer s is up"

# --- without keepalive --------------------------------------------------------
toud_stop c || not_ok "toud on c stops"
nsx r conntrack -D -p udp --orig-src "$RT_C_UL" >/dev/null 2>&1
rt_conf 0
toud_start c || bail_out "toud on c did not restart"
rt_tunnel_up 10 || bail_out "no tunnel after the restart of c"
check "keepalive 0: the server connects to the client at first" server_connects 5
ep=$(tq s peers.c.endpoint)
diag "idle for $IDLE s"
sleep "$IDLE"
is "$(nat_entries)" 0 "keepalive 0: the router forgot the client's mapping after $IDLE s idle"
j0c=$(show_json c) j0s=$(show_json s)
if server_connects 4 >/dev/null 2>&1; then
	not_ok "keepalive 0: the server cannot reach the client after $IDLE s idle (connection times out)" \
	    "it connected"
else
	ok "keepalive 0: the server cannot reach the client after $IDLE s idle (connection times out)"
fi
j1c=$(show_json c) j1s=$(show_json s)
is "$(json_get "$j1s" peers.c.endpoint)" "$ep" "keepalive 0: the server still sends to the old mapping $ep"
stx=$(jdelta "$j0s" "$j1s" peers.c.tx_packets)
crx=$(jdelta "$j0c" "$j1c" peers.s.rx_packets)
cmp_ok "$stx" -ge 2 "keepalive 0: the server sent the connection attempts into the tunnel ($stx)"
is "$crx" 0 "keepalive 0: none of them reached the client"

# The client speaks: a new mapping (another port: the server's own datagrams
# to the old one now hold that tuple in the router), and the server follows.
check "keepalive 0: the client pings the server" ping_all c "$RT_S_TUN" 2
check "keepalive 0: after the client spoke, the server connects to it again" server_connects 4
ep2=$(tq s peers.c.endpoint)
diag "keepalive 0: the client's mapping was $ep, now $ep2"

done_testing
