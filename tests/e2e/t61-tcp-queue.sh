#!/bin/bash
# t61-tcp-queue: the TCP transport's send queue drops by time (CoDel).
# UDP is blocked from the start, so the tunnel runs over TCP, through a
# router that sends at most 50 Mbit/s towards the client with a short
# queue of its own (tbf, 5 ms), so that what waits, waits in toud.  The
# server's namespace uses Reno, which grows its window until it loses a
# packet and has no delay signal to stop earlier, so a download from s to
# c is sure to build a standing queue in s's connection to c.  Then:
#   - s's queue drops packets by their wait (tcp_sendq_aqm > 0); the drops
#     at its 2 MiB bound (tcp_sendq_dropped, slow start's overshoot) are
#     reported beside them;
#   - the download finishes on its one TCP connection, intact (sha256),
#     over the tunnel's one TCP connection, which stays up throughout.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ping nft
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443

rt_topo
rt_sysctl s net.ipv4.tcp_congestion_control=reno
rt_conf 0 "$TCP_PORT"
rt_block_udp t61_block
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"
# A ping keeps data waiting, which is what makes the silent UDP path count
# as dead and the peer move to TCP.
if rt_tunnel_up 60 && wait_for 30 transport_is c s tcp; then
	ok "the tunnel comes up over tcp with UDP blocked"
else
	bail_out "the tunnel is not up over tcp in 90 s: c's peer s: $(tq c peers.s 2>&1)"
fi
wait_for 10 transport_is s c tcp || bail_out "s's peer c is not on tcp: $(tq s peers.c 2>&1)"

out=$(nsx r tc qdisc replace dev rc0 root tbf rate 50mbit burst 64kb latency 5ms 2>&1) ||
    bail_out "tc tbf on r:rc0: $out"
rt_serve_file s "$RT_S_TUN" 8080 48
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/big.out" --max-time 120
rt_fetch_finish "$E2E_DIR/big.out" "$RT_FILE" 120 "the download through the bottleneck is intact"
rt_rate_off rc0

j=$(show_json s) || bail_out "touctl show on s failed"
aqm=$(json_get "$j" peers.c.drops.tcp_sendq_aqm 2>/dev/null || echo 0)
full=$(json_get "$j" peers.c.drops.tcp_sendq_dropped 2>/dev/null || echo 0)
diag "s: tcp_sendq_aqm $aqm, tcp_sendq_dropped $full; the download: $FETCH_MBITS Mbit/s"
cmp_ok "$aqm" -gt 0 "s's send queue dropped by the packets' wait (tcp_sendq_aqm)"
is "$(tq c peers.s.transport)" tcp "c's peer s is still on tcp"
is "$(tq c peers.s.events.transport_tcp)" 1 "c moved to tcp once and stayed"
is "$(nsx s ss -H -t -n state established "sport = :$TCP_PORT" | wc -l)" 1 \
    "one TCP connection carried it"
ping_check c "$RT_S_TUN" "pings after the download"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
