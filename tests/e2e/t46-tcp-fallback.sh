#!/bin/bash
# t46-tcp-fallback: UDP blocked in the middle of a download, and unblocked.
# The client's peer s has endpoint-tcp 10.201.1.2:443 beside its UDP
# endpoint; the server has listen-tcp = 443.  A rate-limited download from
# s to c runs over UDP when the router starts dropping every UDP datagram
# (nftables).  Then:
#   - c's peer s moves to transport "tcp" (one switch, one connection), and
#     so does s's peer c; c's show lists the paths (tcp up and active,
#     udp not), the TLS cipher and no last error;
#   - a capture on s's side of the router from the block to the end of the
#     download shows the client's traffic arriving over TCP to 443 only, no
#     UDP (the client's background probes of UDP end at the router), and
#     a ClientHello with no server name (no sni configured), TLS 1.3 only;
#   - the download finishes on its one TCP connection, intact (sha256);
#   - once the block is lifted, the peer returns to UDP (show says so on
#     both sides) and a capture there shows the client's UDP again.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ping nft tcpdump tshark
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443

# cap_count FILTER...: packets of the last capture that match.
cap_count() {
	tcpdump -r "$CAP" -n "$@" 2>/dev/null | wc -l
}

rt_topo
rt_conf 0 "$TCP_PORT"
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"
rt_tunnel_up 20 || bail_out "no ping through the tunnel from c to s in 20 s"

is "$(tq c peers.s.transport)" udp "c's peer s starts on transport udp"
is "$(tq c peers.s.endpoint_tcp)" "$RT_S_UL:$TCP_PORT" "c shows s's endpoint_tcp"
is "$(tq s interface.tcp_listen)" "[::]:$TCP_PORT" "s shows its tcp_listen"

# 32 MiB at 24 Mbit/s: about 11 s over UDP, more with the switch.
rt_rate rc0 24
rt_serve_file s "$RT_S_TUN" 8080 32
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/big.out" --max-time 120
wait_for 20 test -s "$E2E_DIR/big.out" || diag "the download has not started"
sleep 1

rt_block_udp t46_block
# What reaches the server from now until the download ends.
capture_start s ul0 blocked "host $RT_C_UL"
if wait_for 30 transport_is c s tcp; then
	ok "c's peer s moves to tcp while UDP is blocked"
else
	not_ok "c's peer s moves to tcp while UDP is blocked" "c's peer s: $(tq c peers.s 2>&1)"
fi
wait_for 10 transport_is s c tcp
is "$(tq s peers.c.transport)" tcp "s's peer c is on tcp too"
# While TCP carries it, show tells the truth: the paths say which is up
# and active, the cipher is the TLS connection's, and UDP's failed probes
# are not the peer's last error.
is "$(tq c peers.s.paths | python3 -c '
import json, sys
print(" ".join("%s:%s:%s" % (x["transport"], x["state"] if x["active"] else "-",
               x["active"]) for x in json.load(sys.stdin)))')" "udp:-:False tcp:up:True" \
    "c's paths: udp, then tcp up and active"
cipher=$(tq c peers.s.cipher)
case $cipher in
TLS_*) ok "c shows the TLS connection's cipher ($cipher)" ;;
*) not_ok "c shows the TLS connection's cipher" "got '$cipher'" ;;
esac
is "$(tq c peers.s.last_error)" null "c's peer s has no last error while tcp carries it"

rt_fetch_finish "$E2E_DIR/big.out" "$RT_FILE" 120 "the download survives the block"
capture_stop blocked
is "$(cap_count "udp and src host $RT_C_UL")" 0 "no UDP from the client reaches s while blocked"
cmp_ok "$(cap_count "tcp and src host $RT_C_UL and dst port $TCP_PORT")" -gt 50 \
    "the client's traffic reaches s over TCP to $TCP_PORT"
# No sni configured: the ClientHello names no server, and offers TLS 1.3 only.
hellos=$(client_hellos "$CAP")
cmp_ok "$(grep -c . <<<"$hellos")" -ge 1 "the capture holds the client's ClientHello"
is "$(sort -u <<<"$hellos")" "- 0x0304" "it carries no server name and offers TLS 1.3 only"
is "$(tq c peers.s.events.transport_tcp)" 1 "c moved to tcp once"
is "$(nsx s ss -H -t -n state established "sport = :$TCP_PORT" | wc -l)" 1 \
    "one TCP connection carried it"
cmp_ok "$(rt_nft_packets t46_block)" -gt 0 "the router dropped UDP"

# Lift the block: the background probe finds UDP again.
nsx r nft delete table ip t46_block || bail_out "cannot lift the block"
if wait_for 60 transport_is c s udp; then
	ok "c's peer s returns to udp once the block is lifted"
else
	not_ok "c's peer s returns to udp once the block is lifted" "c's peer s: $(tq c peers.s 2>&1)"
fi
wait_for 10 transport_is s c udp
is "$(tq s peers.c.transport)" udp "s's peer c is back on udp too"
is "$(tq c peers.s.transport_switches)" 2 "two switches on c: to tcp and back"

capture_start s ul0 unblocked "host $RT_C_UL"
ping_check c "$RT_S_TUN" "pings after the return"
capture_stop unblocked
cmp_ok "$(cap_count "udp and src host $RT_C_UL and dst port $RT_PORT")" -ge 5 \
    "the capture shows the client's UDP again"
is "$(cap_count "tcp and src host $RT_C_UL and dst port $TCP_PORT and tcp[tcpflags] & tcp-push != 0")" 0 \
    "and no more data over TCP"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
