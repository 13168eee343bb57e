#!/bin/bash
# t71-tcp-full-tunnel: a full tunnel on the TCP transport.  The topology of
# t35: a's peer b has allowed-ips 0.0.0.0/0 and ::/0 with table = auto (and
# fail-open = no: the drop route is in); b's endpoint 10.202.0.1 sits on b's
# loopback, reached by a's default route; b listens for the TCP transport on
# 443 and a's peer b has endpoint-tcp 10.202.0.1:443.
#
#   a ul0 10.200.0.1 --- ul0 b (10.202.0.1) inet0 10.203.0.1 --- eth0 c 10.203.0.2
#
# b drops every UDP datagram to or from port 6080 from the start (nftables
# in b).  Asserted:
#   - a's peer b comes up on tcp, and pings pass both ways (a to b's tunnel
#     address and to c, b to a's tunnel address): a's TLS connection left by
#     the link, with the tunnel's mark, not into the tunnel it carries; b
#     sees it come from a's link address, and b refused none as looping;
#   - the block lifted, a returns to udp and pings keep passing both ways;
#     b holds no TCP connection from a's tunnel address and counts no loop;
#   - a connection to b's listener from a's tunnel address (an unmarked
#     socket on a, routed into the tunnel) is refused, and b counts it in
#     interface.events.tcp_looped; the tunnel keeps working.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034  # read by lib-router.sh
RT_ENCRYPTION=dtls
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd nft ping ss python3

A4=$FT_A4 EP=$FT_EP C4=$FT_C4
A_TUN=10.77.0.1 B_TUN=10.77.0.2
TCP_PORT=443
EV=interface.events

ft_topo
ft_conf
sed -i "/^\[interface\]/a listen-tcp = $TCP_PORT" "$(conf_file b)"
sed -i "/^\[peer b\]/a endpoint-tcp = $EP:$TCP_PORT" "$(conf_file a)"
grep -q "^endpoint-tcp = $EP:$TCP_PORT" "$(conf_file a)" || bail_out "cannot edit a's configuration"
out=$(nsx b nft -f - 2>&1 <<<"table inet t71 {
	chain in {
		type filter hook input priority 0; policy accept;
		udp dport 6080 counter drop
		udp sport 6080 counter drop
	}
}") || bail_out "nft in b: $out"
toud_start b || bail_out "toud on b did not start"
toud_start a || bail_out "toud on a did not start"

# on_tcp: a's peer b is up on TCP and answers through the tunnel.
on_tcp() {
	[ "$(tq a peers.b.transport)" = tcp ] && nsx a ping -n -q -c 1 -W 1 "$B_TUN"
}
if wait_for 60 on_tcp; then
	ok "with UDP blocked a's peer b comes up on tcp and answers"
else
	not_ok "with UDP blocked a's peer b comes up on tcp and answers" "a's peer b: $(tq a peers.b 2>&1)"
fi
is "$(tq b peers.a.transport)" tcp "b's peer a is on tcp"
ping_check a "$B_TUN" "a pings b's tunnel address over tcp"
ping_check b "$A_TUN" "b pings a's tunnel address over tcp"
ping_check a "$C4" "a pings c (the internet) through the full tunnel over tcp"
conns=$(nsx b ss -H -t -n state established "sport = :$TCP_PORT")
if grep -qF "$A4" <<<"$conns" && ! grep -qF "$A_TUN" <<<"$conns"; then
	ok "b's connection on $TCP_PORT comes from a's link address, not its tunnel address"
else
	not_ok "b's connection on $TCP_PORT comes from a's link address, not its tunnel address" "$conns"
fi
is "$(tq b "$EV.tcp_looped")" 0 "b refused no connection as looping"

# --- UDP comes back ----------------------------------------------------------
nsx b nft delete table inet t71 || bail_out "cannot lift the block"
if wait_for 60 transport_is a b udp; then
	ok "a's peer b returns to udp once the block is lifted"
else
	not_ok "a's peer b returns to udp once the block is lifted" "a's peer b: $(tq a peers.b 2>&1)"
fi
wait_for 10 transport_is b a udp
is "$(tq b peers.a.transport)" udp "b's peer a is back on udp"
ping_check a "$B_TUN" "a pings b's tunnel address after the return to udp"
ping_check b "$A_TUN" "b pings a's tunnel address after the return to udp"
ping_check a "$C4" "a pings c after the return to udp"
conns=$(nsx b ss -H -t -n "sport = :$TCP_PORT")
if grep -qF "$A_TUN" <<<"$conns"; then
	not_ok "b holds no connection from a's tunnel address" "$conns"
else
	ok "b holds no connection from a's tunnel address"
fi
is "$(tq b "$EV.tcp_looped")" 0 "b still refused none as looping"

# --- a connection that loops ---------------------------------------------------
# An unmarked socket on a: routed into the tunnel, it reaches b's listener
# from a's tunnel address.  The kernel completes the handshake before toud
# sees it; toud closes it without a byte.
j0=$(show_json b) || bail_out "touctl show on b"
out=$(nsx a python3 - "$EP" "$TCP_PORT" <<'PY' 2>&1
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
print("local", s.getsockname()[0])
s.settimeout(5)
print("read", len(s.recv(100)))
PY
)
diag "a's unmarked connection: $(tr '\n' ' ' <<<"$out")"
if grep -q "^local $A_TUN\$" <<<"$out" && grep -q "^read 0\$" <<<"$out"; then
	ok "an unmarked connection from a goes through the tunnel, and b closes it"
else
	not_ok "an unmarked connection from a goes through the tunnel, and b closes it" "$out"
fi
looped() {
	[ "$(jdelta "$j0" "$(show_json b)" "$EV.tcp_looped")" = 1 ]
}
if wait_for 10 looped; then
	ok "b counts it in $EV.tcp_looped"
else
	not_ok "b counts it in $EV.tcp_looped" "$(tq b "$EV" 2>&1)"
fi
is "$(jdelta "$j0" "$(show_json b)" "$EV.tcp_accepted")" 0 "and does not count it as accepted"
ping_check a "$B_TUN" "the tunnel still works"
is "$(tq a peers.b.transport)" udp "a's peer b stays on udp"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
