#!/bin/bash
# t03-subnet: a subnet behind a peer.  Host c (192.168.50.2) sits behind b,
# which forwards; a's toud routes 192.168.50.0/24 to peer b (allowed-ips).
# Traffic between a and c travels as whole IP packets: ping and an HTTP
# transfer from a server in c, checked by sha256; c sees a's tunnel address.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ping tcpdump

netns_add a b c
veth a ul0 b ul0 "10.200.0.1/24 fd20::1/64" "10.200.0.2/24 fd20::2/64"
veth b lan0 c eth0 "192.168.50.1/24" "192.168.50.2/24"
ip -n "$(ns c)" route add default via 192.168.50.1 || bail_out "default route in c"
nsx b sysctl -qw net.ipv4.ip_forward=1 || bail_out "ip_forward in b"

conf_interface a 6080 10.77.0.1/24 fd77::1/64
conf_peer a b 10.200.0.2:6080 "10.77.0.2, fd77::2" 192.168.50.0/24
conf_interface b 6080 10.77.0.2/24 fd77::2/64
conf_peer b a 10.200.0.1:6080 "10.77.0.1, fd77::1"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

route=$(nsx a ip -o route get 192.168.50.2)
case $route in
*" dev tou0 "*) ok "a routes 192.168.50.2 into tou0";;
*) not_ok "a routes 192.168.50.2 into tou0" "$route";;
esac

ping_check a 10.77.0.2 "ping b's tunnel address from a"
ping_check a 192.168.50.2 "ping c (192.168.50.2, behind b) from a"
ping_check c 10.77.0.1 "ping a's tunnel address from c"

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 8192
http_serve c 192.168.50.2 8080 "$E2E_DIR/www"
ja0=$(show_json a) || bail_out "touctl show on a"
pcap=$E2E_DIR/ul0.pcap
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -n -s 128 --immediate-mode -U -w "$pcap" udp port 6080
tcpdump_pid=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
fetch_check a http://192.168.50.2:8080/f "$E2E_DIR/www/f" "8 MB from c to a through b"
proc_stop "$HTTP_PID"
pcap_settle "$pcap" || diag "the capture kept growing"
proc_stop "$tcpdump_pid"
# Payload kinds on UDP/6080.  encryption = none: whole IPv4 packets between
# a and c and no compact words (control messages are not counted); dtls:
# only the outer toud framing (word 03 3b 00 01), nothing in clear.
kinds=$(python3 - "$pcap" <<'PY'
import socket, struct, sys
data = open(sys.argv[1], "rb").read()
e = "<" if struct.unpack("<I", data[:4])[0] in (0xa1b2c3d4, 0xa1b23c4d) else ">"
off, whole, compact, outer, other = 24, 0, 0, 0, 0
while off + 16 <= len(data):
    incl = struct.unpack(e + "I", data[off + 8:off + 12])[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    if pkt[12:14] != b"\x08\x00":
        continue
    ip = pkt[14:]
    p = ip[(ip[0] & 15) * 4 + 8:]
    if p[:1] == b"\x45" and {socket.inet_ntoa(p[12:16]), socket.inet_ntoa(p[16:20])} == \
            {"10.77.0.1", "192.168.50.2"} and p[9] == 6:
        whole += 1
    elif p[:4] == b"\x03\x3b\x00\x01":
        outer += 1
    elif p[:1] == b"\x00":
        compact += 1
    elif p[:1] != b"\x20":         # control messages (C = 1) may come and go
        other += 1
print(whole, compact, outer, other)
PY
)
read -r whole compact outer other <<<"$kinds"
if [ "$E2E_ENCRYPTION" = none ]; then
	cmp_ok "${whole:-0}" -gt 100 "a-c TCP travelled as whole IPv4 packets on the underlay ($whole)"
	is "${compact:-x} ${outer:-x} ${other:-x}" "0 0 0" "no compact or other payloads during the a-c transfer"
else
	cmp_ok "${outer:-0}" -gt 100 "the a-c transfer travelled in the outer toud framing ($outer)"
	is "${whole:-x} ${compact:-x} ${other:-x}" "0 0 0" "nothing of it in clear on the underlay"
fi
ja1=$(show_json a) || bail_out "touctl show on a"
jb1=$(show_json b) || bail_out "touctl show on b"

if grep -q '^10\.77\.0\.1 - ' "$E2E_DIR/http-c-8080.log"; then
	ok "c saw the request come from a's tunnel address 10.77.0.1"
else
	not_ok "c saw the request come from a's tunnel address 10.77.0.1" "$(cat "$E2E_DIR/http-c-8080.log")"
fi
d=$(jdelta "$ja0" "$ja1" peers.b.rx_bytes)
cmp_ok "$d" -gt $((8 * 1024 * 1024)) "a's peer b rx_bytes grew by the transfer ($d)"
is "$(json_get "$ja1" peers.b.drops.source_not_allowed)" 0 "a accepted c's packets (allowed-ips)"
is "$(json_get "$jb1" peers.a.drops.source_not_allowed)" 0 "b accepted a's packets"
is "$(json_get "$ja1" peers.b.state)" up "a: peer b is up"

done_testing
