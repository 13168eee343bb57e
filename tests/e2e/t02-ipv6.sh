#!/bin/bash
# t02-ipv6: the peers reach each other over IPv6 only (endpoints
# [fd20::N]:6080).  IPv6 inside IPv6 and IPv4 inside IPv6: ping and HTTP
# transfers checked by sha256, both ways; the underlay carried no IPv4 UDP.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ping

# udp_in NODE 4|6: UDP datagrams the namespace received of that family.
udp_in() {
	if [ "$2" = 6 ]; then
		nsx "$1" awk '$1 == "Udp6InDatagrams" { print $2 }' /proc/net/snmp6
	else
		nsx "$1" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 }' /proc/net/snmp
	fi
}

topo_ab
conf_ab 6
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
a4=$(udp_in a 4) a6=$(udp_in a 6) b4=$(udp_in b 4) b6=$(udp_in b 6)

ping_check a fd77::2 "ping fd77::2 (a to b), IPv6 inside IPv6"
ping_check b fd77::1 "ping fd77::1 (b to a), IPv6 inside IPv6"
ping_check a 10.77.0.2 "ping 10.77.0.2 (a to b), IPv4 inside IPv6"
ping_check b 10.77.0.1 "ping 10.77.0.1 (b to a), IPv4 inside IPv6"

mkdir "$E2E_DIR/www-a" "$E2E_DIR/www-b"
make_file "$E2E_DIR/www-a/f" 8192
make_file "$E2E_DIR/www-b/f" 8192
http_serve a fd77::1 8080 "$E2E_DIR/www-a"
pa6=$HTTP_PID
http_serve b fd77::2 8080 "$E2E_DIR/www-b"
pb6=$HTTP_PID
http_serve a 10.77.0.1 8081 "$E2E_DIR/www-a"
pa4=$HTTP_PID
http_serve b 10.77.0.2 8081 "$E2E_DIR/www-b"
pb4=$HTTP_PID

fetch_check a "http://[fd77::2]:8080/f" "$E2E_DIR/www-b/f" "8 MB b to a, IPv6 inside IPv6"
fetch_check b "http://[fd77::1]:8080/f" "$E2E_DIR/www-a/f" "8 MB a to b, IPv6 inside IPv6"
fetch_check a "http://10.77.0.2:8081/f" "$E2E_DIR/www-b/f" "8 MB b to a, IPv4 inside IPv6"
fetch_check b "http://10.77.0.1:8081/f" "$E2E_DIR/www-a/f" "8 MB a to b, IPv4 inside IPv6"
for p in "$pa6" "$pb6" "$pa4" "$pb4"; do
	proc_stop "$p"
done

# 16 MB each way is over 10000 datagrams; with UDP GRO the kernel counts
# one per receive, and a receive takes up to 64 of them.
min=10000
[ "$E2E_OFFLOAD" = off ] || min=$((10000 / 64))
d=$(($(udp_in a 6) - a6))
cmp_ok "$d" -gt "$min" "a received the traffic as IPv6 UDP ($d receives)"
d=$(($(udp_in b 6) - b6))
cmp_ok "$d" -gt "$min" "b received the traffic as IPv6 UDP ($d receives)"
is "$(($(udp_in a 4) - a4))" 0 "a received no IPv4 UDP"
is "$(($(udp_in b 4) - b4))" 0 "b received no IPv4 UDP"

ja=$(show_json a) || bail_out "touctl show on a"
jb=$(show_json b) || bail_out "touctl show on b"
is "$(json_get "$ja" peers.b.endpoint)" "[fd20::2]:6080" "a: peer b's endpoint as configured"
is "$(json_get "$jb" peers.a.endpoint)" "[fd20::1]:6080" "b: peer a's endpoint as configured"
is "$(json_get "$ja" peers.b.state)" up "a: peer b is up"
is "$(json_get "$jb" peers.a.state)" up "b: peer a is up"
cmp_ok "$(json_get "$ja" peers.b.rx_bytes)" -gt $((16 * 1024 * 1024)) "a: peer b rx_bytes > 16 MB"
cmp_ok "$(json_get "$jb" peers.a.rx_bytes)" -gt $((16 * 1024 * 1024)) "b: peer a rx_bytes > 16 MB"

done_testing
