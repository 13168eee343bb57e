#!/bin/bash
# t58-tcp-crossed: both sides have listen-tcp and an endpoint-tcp for each
# other, and the router drops UDP from the start.  Both send at once, so
# both UDP handshakes go unanswered at the same moment and each side opens
# a TCP connection to the other while accepting the other's: two
# connections cross.  The two sides must keep the same one (the one opened
# by the side whose key fingerprint sorts first), not each drop the one the
# other keeps.  The router holds each TCP packet 200 ms each way, so a
# connection takes about a second to authenticate and the two surely
# overlap.  Then:
#   - both sides show transport "tcp", moved there once;
#   - one TCP connection joins them, and it is the one opened by the lower
#     fingerprint;
#   - pings pass both ways, over that same connection.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping nft ss
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443
rt_topo
rt_block_udp t58_block
rt_nfq_start 200 0 0 -p tcp -m multiport --ports "$TCP_PORT"

conf_interface c "$RT_PORT" "$RT_C_TUN/24"
echo "listen-tcp = $TCP_PORT" >>"$(conf_file c)"
rt_conf_peer c s "$RT_S_UL:$RT_PORT" "$RT_S_TUN" 0
echo "endpoint-tcp = $RT_S_UL:$TCP_PORT" >>"$(conf_file c)"
conf_interface s "$RT_PORT" "$RT_S_TUN/24"
echo "listen-tcp = $TCP_PORT" >>"$(conf_file s)"
rt_conf_peer s c "$RT_C_UL:$RT_PORT" "$RT_C_TUN" 0
echo "endpoint-tcp = $RT_C_UL:$TCP_PORT" >>"$(conf_file s)"
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"

# conns NODE: NODE's established TCP connections to or from port 443, as
# "LOCAL PEER", sorted.
conns() {
	nsx "$1" ss -H -t -n state established "( sport = :$TCP_PORT or dport = :$TCP_PORT )" |
	    awk '{ print $3, $4 }' | sed 's/\[::ffff:\([0-9.]*\)\]/\1/g' | sort
}

one_conn_each() {
	[ "$(conns c | grep -c .)" = 1 ] && [ "$(conns s | grep -c .)" = 1 ]
}

# Each side pings the other at once: both start a handshake now.
bg_start c "$E2E_DIR/c.ping" ping -n -i 0.2 -W 1 "$RT_S_TUN"
bg_start s "$E2E_DIR/s.ping" ping -n -i 0.2 -W 1 "$RT_C_TUN"
if wait_for 30 transport_is c s tcp && wait_for 10 transport_is s c tcp; then
	ok "both sides move to tcp"
else
	not_ok "both sides move to tcp" "c's s: $(tq c peers.s 2>&1); s's c: $(tq s peers.c 2>&1)"
fi
if wait_for 15 one_conn_each; then
	ok "one TCP connection joins them"
else
	not_ok "one TCP connection joins them" "c: $(conns c); s: $(conns s)"
fi
kept=$(conns c)
crossed=$(( $(tq c peers.s.events.tcp_crossed) + $(tq s peers.c.events.tcp_crossed) ))
cmp_ok "$crossed" -ge 1 "the connections crossed, and that was counted ($crossed)"

# The lower fingerprint opened the one kept: its peer port is 443.
fc=$(cat "$E2E_DIR/keys/c/fingerprint")
fs=$(cat "$E2E_DIR/keys/s/fingerprint")
if [[ "$fc" < "$fs" ]]; then
	opener=c want="^$RT_C_UL:[0-9]+ $RT_S_UL:$TCP_PORT\$"
else
	opener=s want="^$RT_C_UL:$TCP_PORT $RT_S_UL:[0-9]+\$"
fi
if [[ "$kept" =~ $want ]]; then
	ok "the connection kept is the one $opener opened (lower fingerprint)"
else
	not_ok "the connection kept is the one $opener opened (lower fingerprint)" \
	    "c's connection: '$kept'; fingerprints c $fc, s $fs"
fi

ping_check c "$RT_S_TUN" "pings from c to s over tcp"
ping_check s "$RT_C_TUN" "pings from s to c over tcp"
is "$(conns c)" "$kept" "the same connection carried them"
is "$(tq c peers.s.events.transport_tcp)" 1 "c moved to tcp once"
is "$(tq s peers.c.events.transport_tcp)" 1 "s moved to tcp once"
is "$(tq c peers.s.transport)" tcp "c's peer s is still on tcp"
is "$(tq s peers.c.transport)" tcp "s's peer c is still on tcp"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s
rt_nfq_stop

done_testing
