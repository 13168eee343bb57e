#!/bin/bash
# t47-tcp-proxy: the client can reach the server only through an HTTP
# CONNECT proxy.  The router r forwards nothing from c to s (nftables drops
# UDP and TCP alike, and counts), but runs tinyproxy on 10.201.0.1:8888,
# which may CONNECT to port 443.  The client's peer s has endpoint (UDP,
# blocked), endpoint-tcp 10.201.1.2:443 and proxy = http://10.201.0.1:8888:
# its UDP handshake gets no answer, it brings up the TCP transport through
# the proxy with sni = cdn.example.net, and then:
#   - both sides show transport "tcp" for each other,
#   - the server's one connection on 443 comes from the router (the proxy),
#     the proxy logged a CONNECT, and the router dropped the client's UDP,
#   - the ClientHello that reaches the server names cdn.example.net, and
#     show says so,
#   - a 4 MiB download over the tunnel is intact by sha256.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ping nft tinyproxy tcpdump tshark
. "$(dirname "$0")/lib-router.sh"
. "$(dirname "$0")/lib-proxy.sh"

TCP_PORT=443
rt_topo
rt_nft "table ip t47_block {
	chain block {
		type filter hook forward priority -20; policy accept;
		iifname \"rc0\" meta l4proto udp counter drop comment \"udp\"
		iifname \"rc0\" meta l4proto tcp counter drop comment \"tcp\"
		iifname \"rc0\" counter drop comment \"other\"
	}
}"
proxy_start r 10.201.0.1 8888 10.201.0.0/24 "$TCP_PORT"

conf_interface c "$RT_PORT" "$RT_C_TUN/24"
rt_conf_peer c s "$RT_S_UL:$RT_PORT" "$RT_S_TUN" 0
{
	echo "endpoint-tcp = $RT_S_UL:$TCP_PORT"
	echo "proxy = http://10.201.0.1:8888"
	echo "sni = cdn.example.net"
} >>"$(conf_file c)"
conf_interface s "$RT_PORT" "$RT_S_TUN/24"
echo "listen-tcp = $TCP_PORT" >>"$(conf_file s)"
rt_conf_peer s c "" "$RT_C_TUN" 0

toud_start s || bail_out "toud on s did not start"
# The way round the proxy is closed: c cannot open a TCP connection to s.
if nsx c timeout 3 bash -c "exec 3<>/dev/tcp/$RT_S_UL/$TCP_PORT" 2>/dev/null; then
	not_ok "c cannot reach s:$TCP_PORT directly"
else
	ok "c cannot reach s:$TCP_PORT directly"
fi
capture_start s ul0 hello "tcp port $TCP_PORT"
toud_start c || bail_out "toud on c did not start"

# UDP first: a few seconds without an answer, then TCP through the proxy.
if wait_for 60 nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN"; then
	ok "the tunnel comes up through the proxy"
else
	not_ok "the tunnel comes up through the proxy" \
	    "c's peer s: $(tq c peers.s 2>&1); proxy log: $(tail -n 5 "$PROXY_LOG")"
fi
is "$(tq c peers.s.transport)" tcp "c's peer s is on transport tcp"
is "$(tq s peers.c.transport)" tcp "s's peer c is on transport tcp"
is "$(tq c peers.s.endpoint_tcp)" "$RT_S_UL:$TCP_PORT" "c shows s's endpoint_tcp"
conns=$(nsx s ss -H -t -n state established "sport = :$TCP_PORT")
# (A listener on both families shows IPv4 peers as [::ffff:A.B.C.D].)
is "$(awk '{ print $4 }' <<<"$conns" | sed 's/:[0-9]*$//; s/^\[::ffff:\(.*\)\]$/\1/' |
    sort -u | tr '\n' ' ')" "10.201.1.1 " \
    "s's TCP peers on $TCP_PORT: the router's proxy only"
cmp_ok "$(proxy_connects)" -ge 1 "the proxy logged the CONNECT"
cmp_ok "$(rt_nft_packets t47_block '"udp"')" -ge 1 "the router dropped the client's UDP"
capture_stop hello
is "$(client_hellos "$CAP" | sort -u)" "cdn.example.net 0x0304" \
    "the ClientHello through the proxy names the configured server, TLS 1.3 only"
is "$(tq c peers.s.sni)" cdn.example.net "c shows s's sni"
is "$(touctl_show c s | grep -o 'server name [a-z.]*')" "server name cdn.example.net" \
    "touctl show s names the server name"

mkdir -p "$E2E_DIR/www"
make_file "$E2E_DIR/www/big" $((4 * 1024))
http_serve s "$RT_S_TUN" 8080 "$E2E_DIR/www"
fetch_check c "http://$RT_S_TUN:8080/big" "$E2E_DIR/www/big" "4 MiB from s to c over the tunnel through the proxy"
is "$(tq c peers.s.transport)" tcp "c's peer s is still on tcp after the download"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
