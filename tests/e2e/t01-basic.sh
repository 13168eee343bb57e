#!/bin/bash
# t01-basic: two hosts on a veth, IPv4 inside IPv4.  ping, a 50 MB HTTP
# transfer checked by sha256, iperf3, and what `touctl show --json` reports
# on both sides (state, endpoint, byte counters in the right direction).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl iperf3 ping

MB50=$((50 * 1024 * 1024))
close() {
	[[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ ]] || { echo "not numbers: $1 $2"; return 1; }
	local d=$(($1 - $2))
	[ $((d < 0 ? -d : d)) -le $(($2 / 200)) ] || { echo "$1 and $2 differ by $d"; return 1; }
}
quarter() { [[ "$1" =~ ^[0-9]+$ ]] && echo $(($1 / 4)) || echo error; }

topo_ab
conf_ab 4
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

ping_check a 10.77.0.2 "ping 10.77.0.2 (a to b) through the tunnel"
ping_check b 10.77.0.1 "ping 10.77.0.1 (b to a) through the tunnel"
ping_check a fd77::2 "ping fd77::2 (IPv6 inside IPv4) through the tunnel"

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/big" $((50 * 1024))
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"
ja0=$(show_json a) || bail_out "touctl show on a"
jb0=$(show_json b) || bail_out "touctl show on b"
fetch_check a http://10.77.0.2:8080/big "$E2E_DIR/www/big" "50 MB over HTTP from b to a"
proc_stop "$HTTP_PID"
ja1=$(show_json a) || bail_out "touctl show on a"
jb1=$(show_json b) || bail_out "touctl show on b"

# Bytes moved during the transfer, as each side counts them.
a_rx=$(jdelta "$ja0" "$ja1" peers.b.rx_bytes)
a_tx=$(jdelta "$ja0" "$ja1" peers.b.tx_bytes)
b_rx=$(jdelta "$jb0" "$jb1" peers.a.rx_bytes)
b_tx=$(jdelta "$jb0" "$jb1" peers.a.tx_bytes)
diag "during the transfer: a rx $a_rx tx $a_tx, b rx $b_rx tx $b_tx bytes"
a_rxp=$(jdelta "$ja0" "$ja1" peers.b.rx_packets)
b_txp=$(jdelta "$jb0" "$jb1" peers.a.tx_packets)
diag "during the transfer: a rx $a_rxp packets, b tx $b_txp packets"
cmp_ok "$a_rx" -gt "$MB50" "a's peer b rx_bytes grew by more than 50 MB ($a_rx)"
cmp_ok "$b_tx" -gt "$MB50" "b's peer a tx_bytes grew by more than 50 MB ($b_tx)"
cmp_ok "$a_tx" -lt "$(quarter "$a_rx")" "a sent far less than it received (ACKs only: $a_tx)"
cmp_ok "$b_rx" -lt "$(quarter "$b_tx")" "b received far less than it sent (ACKs only: $b_rx)"
cmp_ok "$a_rxp" -gt 1000 "a's peer b rx_packets counted"
cmp_ok "$b_txp" -gt 1000 "b's peer a tx_packets counted"
# Nothing is lost on a veth: both ends must count the same packets and the
# same bytes (within 0.5% for stray losses).
check "a's rx_packets match b's tx_packets" close "$a_rxp" "$b_txp"
check "a's rx_bytes match b's tx_bytes (the same unit at both ends)" close "$a_rx" "$b_tx"

# iperf3, a to b (the client sends).
bg_start b "$E2E_DIR/iperf3-server.log" iperf3 -s -1 -B 10.77.0.2 -p 5201
wait_for 10 port_listening b t 5201 || bail_out "iperf3 server did not start"
if out=$(nsx a timeout 60 iperf3 -c 10.77.0.2 -p 5201 -t 5 -J 2>&1); then
	bps=$(python3 -c 'import json, sys; print(int(json.loads(sys.argv[1])["end"]["sum_received"]["bits_per_second"]))' "$out" 2>/dev/null)
	cmp_ok "${bps:-0}" -gt 0 "iperf3 a to b: $(awk -v b="${bps:-0}" 'BEGIN { printf "%.0f", b / 1e6 }') Mbit/s"
else
	not_ok "iperf3 a to b" "$out"
fi
proc_wait "$BG_PID" 10 || proc_stop "$BG_PID"

ja=$(show_json a) || bail_out "touctl show on a"
jb=$(show_json b) || bail_out "touctl show on b"
is "$(json_get "$ja" interface.name)" tou0 "a: interface name"
is "$(json_get "$ja" interface.encryption)" "$E2E_ENCRYPTION" "a: interface encryption"
is "$(json_get "$ja" interface.listen_port)" 6080 "a: interface listen_port"
cmp_ok "$(json_get "$ja" interface.mtu)" -ge 1280 "a: interface mtu $(json_get "$ja" interface.mtu)"
is "$(nsx a cat /sys/class/net/tou0/mtu)" "$(json_get "$ja" interface.mtu)" "a: tou0's MTU is the one shown"
is "$(json_get "$ja" peers.b.state)" up "a: peer b is up"
is "$(json_get "$jb" peers.a.state)" up "b: peer a is up"
is "$(json_get "$ja" peers.b.endpoint)" 10.200.0.2:6080 "a: peer b's endpoint as configured"
is "$(json_get "$jb" peers.a.endpoint)" 10.200.0.1:6080 "b: peer a's endpoint as configured"
cmp_ok "$(json_get "$ja" peers.b.tx_bytes)" -gt "$MB50" "a: peer b tx_bytes > 50 MB after iperf3"
cmp_ok "$(json_get "$jb" peers.a.rx_bytes)" -gt "$MB50" "b: peer a rx_bytes > 50 MB after iperf3"
is "$(json_get "$ja" peers.b.drops.source_not_allowed)" 0 "a: no source_not_allowed drops"
is "$(json_get "$jb" peers.a.drops.source_not_allowed)" 0 "b: no source_not_allowed drops"

check "touctl show (text) answers on a" touctl_show a
check "touctl show b (one peer) answers on a" touctl_show a b
check "touctl show of an unknown peer fails" bash -c "! \"$TOUCTL\" -s \"$(sock_of a)\" show nosuchpeer"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
