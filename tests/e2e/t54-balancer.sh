#!/bin/bash
# t54-balancer: two servers (server-id = 1 and 2, the same key and peer
# list, the same tunnel address) behind a stateless nftables balancer; the
# client is behind a NAT whose mapping changes six times during one
# download.  The balancer sends a datagram whose session ID has the two
# top bits clear to the server named by byte 9 of the UDP payload
# (@th,136,8), anything else by a hash of the source address and port
# (conntrack keeps a flow where its first datagram went).  The download
# finishes on one TCP connection with intact data; every new mapping was
# routed by the byte; the client has a session on exactly one server; and
# the capture in front of the balancer shows the handshake's first ID
# unroutable and every data record under an ID that names that server.
#
#   c ul0 --- rc0 r (NAT) rs0 --- ul0 lb (balancer, 10.201.1.2) lb1 --- ul0 s1
#                                                                lb2 --- ul0 s2
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping nft conntrack tcpdump python3

VIP=$RT_S_UL
S1_UL=10.202.1.2
S2_UL=10.202.2.2

# --- topology: lib-router's c and r, then the balancer and two servers ---
netns_add c r lb s1 s2
veth c ul0 r rc0 "$RT_C_UL/24" "10.201.0.1/24"
veth lb ul0 r rs0 "$VIP/24" "10.201.1.1/24"
veth s1 ul0 lb lb1 "$S1_UL/24" "10.202.1.1/24"
veth s2 ul0 lb lb2 "$S2_UL/24" "10.202.2.1/24"
link_segments c ul0
link_segments r rc0 rs0
link_segments lb ul0 lb1 lb2
link_segments s1 ul0
link_segments s2 ul0
for n in c r lb s1 s2; do
	rt_sysctl "$n" net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
done
rt_sysctl r net.ipv4.ip_forward=1
rt_sysctl lb net.ipv4.ip_forward=1
ip -n "$(ns c)" route add default via 10.201.0.1 || bail_out "default route in c"
ip -n "$(ns s1)" route add default via 10.202.1.1 || bail_out "default route in s1"
ip -n "$(ns s2)" route add default via 10.202.2.1 || bail_out "default route in s2"
for a in 10.201.1.11 10.201.1.12; do
	nsx r ip addr add "$a/24" dev rs0 || bail_out "cannot add $a to r"
done
rt_nat 10.201.1.1:40000

# The balancer of toud(8): by the server ID, else by a hash.
out=$(nsx lb nft -f - 2>&1 <<EOF
table ip toudlb {
	chain pre {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr $VIP udp dport $RT_PORT @th,128,2 0 counter dnat to @th,136,8 map { 1 : $S1_UL, 2 : $S2_UL }
		ip daddr $VIP udp dport $RT_PORT counter dnat to jhash ip saddr . udp sport mod 2 map { 0 : $S1_UL, 1 : $S2_UL }
	}
}
EOF
) || bail_out "nft in lb: $out"

# lb_flows WORD: new flows the balancer's rule with WORD sent on.
lb_flows() {
	nsx lb nft list chain ip toudlb pre | grep -F -e "$1" |
	    awk '{ for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}

# --- toud: one service of two servers ---------------------------------------
keys_for s
for n in s1 s2; do
	mkdir -p "$E2E_DIR/keys/$n"
	cp "$E2E_DIR/keys/s/"* "$E2E_DIR/keys/$n/" || bail_out "cannot share the key with $n"
done
conf_interface c "$RT_PORT" "$RT_C_TUN/24"
rt_conf_peer c s "$VIP:$RT_PORT" "$RT_S_TUN" 2
for id in 1 2; do
	conf_interface "s$id" "$RT_PORT" "$RT_S_TUN/24"
	echo "server-id = $id" >>"$(conf_file "s$id")"
	rt_conf_peer "s$id" c "" "$RT_C_TUN" 0
done
toud_start s1 || bail_out "toud on s1 did not start"
toud_start s2 || bail_out "toud on s2 did not start"
is "$(tq s1 interface.server_id)/$(tq s2 interface.server_id)" "1/2" "show: the servers' IDs"

bg_start lb "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -p -n -s 96 -B 8192 --immediate-mode -U \
    -w "$E2E_DIR/lb.pcap" udp port "$RT_PORT"
CAP_PID=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"

toud_start c || bail_out "toud on c did not start"
rt_tunnel_up 10 || bail_out "no ping through the balancer from c to the service in 10 s"

# Which server the hash chose for the handshake.
srv='' other=''
for id in 1 2; do
	if [ "$(tq "s$id" peers.c.state)" = up ]; then
		srv=$id
	fi
done
[ -n "$srv" ] || bail_out "no server has the client up: s1 $(show_json s1) s2 $(show_json s2)"
other=$((3 - srv))
diag "the handshake went to s$srv"
sid_s=$(tq "s$srv" peers.c.session_id)
wire=$(tq c peers.s.wire_id)
is "${wire:2:2}" "0$srv" "the client sends under an ID that names s$srv ($wire)"
cmp_ok "$((16#${wire:0:2} >> 6))" -eq 0 "and whose two top bits are clear"
is "$(tq "s$srv" peers.c.wire_id)" "$wire" "s$srv sends under the same ID"

for id in 1 2; do
	rt_serve_file "s$id" "$RT_S_TUN" 8080 128
done
rt_rate rc0 4
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got" --max-time 600
rt_fetch_progress "$E2E_DIR/got" 1024 30 || diag "the download did not start in 30 s"

by_id0=$(lb_flows "@th,136,8")
# shellcheck disable=SC2317  # called through rt_rebind_during_fetch
rebind_diag() {
	diag "s$srv: $(show_json "s$srv")"
	diag "s$other: $(show_json "s$other")"
	diag "client: $(show_json c)"
	diag "balancer: $(nsx lb nft list ruleset 2>&1) $(nsx lb conntrack -L -p udp 2>&1)"
}
rt_rebind_during_fetch "s$srv" "s$srv" rebind_diag 10.201.1.1:41001 10.201.1.11:41002 \
    10.201.1.12:41003 10.201.1.1:41004 10.201.1.11:41005 10.201.1.12:41006
rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 120 "the download survived six NAT rebindings behind the balancer"
diag "download: $FETCH_TIME s, $FETCH_MBITS Mbit/s (4 Mbit/s during the rebindings)"
is "$RT_REBIND_SEEN" 6 "s$srv saw all six new endpoints"
cmp_ok "$(($(lb_flows "@th,136,8") - by_id0))" -ge 6 \
    "the balancer routed every new mapping by the server ID"

is "$(tq "s$srv" peers.c.state)" up "s$srv: peer c is up"
is "$(tq "s$srv" peers.c.session_id)" "$sid_s" "s$srv: the same session throughout"
is "$(tq "s$other" peers.c.session_id)" null "s$other: no session with the client"
is "$(tq "s$other" interface.sessions)" 0 "s$other: no session at all"
is "$(tq c peers.s.session_id)" "$sid_s" "the client: that one session"
wire=$(tq c peers.s.wire_id)
is "${wire:2:2}" "0$srv" "the client's ID names s$srv still ($wire)"
check "s$srv reaches the client through the last mapping (ping 10.77.0.1)" \
    ping_all "s$srv" "$RT_C_TUN" 5

pcap_settle "$E2E_DIR/lb.pcap" || diag "the capture kept growing"
proc_stop "$CAP_PID" INT 5
out=$(python3 - "$E2E_DIR/lb.pcap" "$srv" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
srv = int(sys.argv[2])
off = 24
hs_unrouted = hs_other = data = data_bad = 0
first = None
while off + 16 <= len(d):
    sec, usec, incl, orig = struct.unpack_from("<IIII", d, off)
    pkt = d[off + 16:off + 16 + incl]
    off += 16 + incl
    ihl = 14 + (pkt[14] & 15) * 4
    udp = pkt[ihl + 8:]
    if len(udp) < 16 + 13:
        continue
    sid = udp[8:16]
    ctype, epoch = udp[16], int.from_bytes(udp[19:21], "big")
    if first is None:
        first = sid
    if ctype == 22 and epoch == 0:
        if sid[0] >> 6 == 3:
            hs_unrouted += 1
        else:
            hs_other += 1
    elif ctype == 23:
        data += 1
        if sid[0] >> 6 != 0 or sid[1] != srv:
            data_bad += 1
print("first", first.hex() if first else "none", "hs_unrouted", hs_unrouted,
      "hs_other", hs_other, "data", data, "data_bad", data_bad)
PY
)
diag "$out"
read -r _ first _ hs_unrouted _ hs_other _ data _ data_bad <<<"$out"
cmp_ok "$((16#${first:0:2} >> 6))" -eq 3 "the first datagram's ID has the two top bits set ($first)"
cmp_ok "${hs_unrouted:-0}" -ge 2 "the handshake went under unroutable IDs ($hs_unrouted records)"
is "${hs_other:-x}" 0 "no handshake record under another ID"
cmp_ok "${data:-0}" -ge 1000 "data records in the capture: ${data:-0}"
is "${data_bad:-x}" 0 "every data record, both directions, under an ID that names s$srv"

done_testing
