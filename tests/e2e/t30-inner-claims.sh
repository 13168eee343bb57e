#!/bin/bash
# t30-inner-claims: a peer's packets pass the source check, but two kinds
# speak for someone else.  With b's toud stopped, datagrams from b's
# endpoint carry, from b's own tunnel addresses:
#   - ICMP / ICMPv6 errors quoting a flow between a and peer c: dropped,
#     counted as icmp_quote_not_allowed; errors quoting a flow of b's own
#     are delivered;
#   - IP-in-IP (protocol 4) and IPv6-in-IP (41) whose inner source is c's:
#     dropped, counted as encap_source_not_allowed; with b's own inner
#     source delivered.
# A capture on a's tou0 shows exactly which reached a's kernel.  Then a's
# own ICMP "too big" replies into the TUN are rate-limited: 40 oversize
# packets to b sent at once get a burst of 10 replies and then 10 a second,
# the rest counted as too_big_reply_limited.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=none             # crafts cleartext datagrams
need_root
need_cmd ping tcpdump

topo_ab
conf_interface a 6080 10.77.0.1/24 fd77::1/64
echo "mtu = 4000" >>"$(conf_file a)"     # larger than the path: too big replies
conf_peer a b 10.200.0.2:6080 "10.77.0.2, fd77::2"
conf_peer a c 10.200.0.3:6080 "10.77.0.3, fd77::3"
conf_interface b 6080 10.77.0.2/24 fd77::2/64
conf_peer b a 10.200.0.1:6080 "10.77.0.1, fd77::1"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
ping_check a 10.77.0.2 "ping through the tunnel"
toud_stop b || not_ok "toud on b stops on SIGTERM"

pcap=$E2E_DIR/tou0.pcap
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i tou0 -n -s 256 --immediate-mode -U -w "$pcap"
tcpdump_pid=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
j0=$(show_json a) || bail_out "touctl show on a"

nsx b python3 - <<'EOF' || bail_out "the sender in b failed"
import socket, struct, time

from e2eutil import csum

def ip4(src, dst, proto, payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload

def ip6(src, dst, nh, payload):
    return (struct.pack("!IHBB", 0x60000000, len(payload), nh, 64) +
            socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) +
            payload)

def udp4(src, dst, sport, dport):
    return ip4(src, dst, 17, struct.pack("!HHHH", sport, dport, 12, 0) + b"data")

def udp6(src, dst, sport, dport):
    return ip6(src, dst, 17, struct.pack("!HHHH", sport, dport, 12, 0) + b"data")

def icmp4_err(src, dst, code, quoted):
    m = struct.pack("!BBHI", 3, code, 0, 0) + quoted
    m = m[:2] + struct.pack("!H", csum(m)) + m[4:]
    return ip4(src, dst, 1, m)

def icmp6_err(src, dst, code, quoted):
    m = struct.pack("!BBHI", 1, code, 0, 0) + quoted
    s6, d6 = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    pseudo = s6 + d6 + struct.pack("!IxxxB", len(m), 58)
    m = m[:2] + struct.pack("!H", csum(pseudo + m)) + m[4:]
    return ip6(src, dst, 58, m)

def echo4(src, dst, ident):
    m = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"toud-e2e"
    m = m[:2] + struct.pack("!H", csum(m)) + m[4:]
    return ip4(src, dst, 1, m)

pkts = [
    # a flow a -> c, "port unreachable" from b: not b's to report
    icmp4_err("10.77.0.2", "10.77.0.1", 3, udp4("10.77.0.1", "10.77.0.3", 5000, 53)),
    icmp6_err("fd77::2", "fd77::1", 4, udp6("fd77::1", "fd77::3", 5000, 53)),
    # a flow a -> b, "host unreachable" from b: fine
    icmp4_err("10.77.0.2", "10.77.0.1", 1, udp4("10.77.0.1", "10.77.0.2", 5000, 53)),
    icmp6_err("fd77::2", "fd77::1", 3, udp6("fd77::1", "fd77::2", 5000, 53)),
    # IP-in-IP and IPv6-in-IP claiming c's source, then b's own
    ip4("10.77.0.2", "10.77.0.1", 4, echo4("10.77.0.3", "10.77.0.1", 0x0c0c)),
    ip4("10.77.0.2", "10.77.0.1", 41, udp6("fd77::3", "fd77::1", 5000, 53)),
    ip4("10.77.0.2", "10.77.0.1", 4, echo4("10.77.0.2", "10.77.0.1", 0x0b0b)),
]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.200.0.2", 6080))
for p in pkts:
    s.sendto(p, ("10.200.0.1", 6080))
    time.sleep(0.02)
EOF
# a has processed all seven: four dropped, three delivered.
wait_delta 60 a "$j0" peers.b.rx_packets 3 || diag "a delivered $WAIT_DELTA of 3 in 60 s"
wait_delta 60 a "$j0" peers.b.drops.icmp_quote_not_allowed 2 &&
    wait_delta 60 a "$j0" peers.b.drops.encap_source_not_allowed 2 ||
    diag "a did not count the four foreign packets in 60 s"
j1=$(show_json a) || bail_out "touctl show on a"
is "$(drops_delta "$j0" "$j1" peers.b.drops)" \
    '{"encap_source_not_allowed": 2, "icmp_quote_not_allowed": 2}' \
    "a dropped the two foreign quotes and the two foreign inner sources, nothing else"

# Oversize packets from a's kernel to b (raw, so no path MTU cache stops
# them): toud answers each with ICMP "too big", rate-limited: a burst of
# 10, then 10 a second (src/tx.c).  toud handled the 40 between the first
# send and the moment the sender sees all of them counted (it polls touctl
# itself, so that the time is short), however long a crowded machine makes
# that time: it bounds the replies at 10 + 1 per 100 ms of it, + 1 for a
# token that refilled part-way.
out=$(nsx a python3 - "$TOUCTL" "$(sock_of a)" "$(json_get "$j1" peers.b.drops.too_big)" <<'EOF'
import json, socket, struct, subprocess, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
payload = struct.pack("!HHHH", 5000, 9, 8 + 2972, 0) + b"x" * 2972
h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, 17, 0,
                socket.inet_aton("10.77.0.1"), socket.inet_aton("10.77.0.2"))
t0 = time.monotonic()
for i in range(40):
    s.sendto(h + payload, ("10.77.0.2", 0))
    time.sleep(0.002)
sent = time.monotonic() - t0
n = -1
while time.monotonic() - t0 < 60:
    out = subprocess.run([sys.argv[1], "-s", sys.argv[2], "show", "--json"], capture_output=True).stdout
    try:
        b = [p for p in json.loads(out)["peers"] if p["name"] == "b"][0]
        n = b.get("drops", {}).get("too_big", 0) - int(sys.argv[3])
    except (ValueError, IndexError, KeyError):
        pass
    if n >= 40:
        break
    time.sleep(0.01)
print(int(sent * 1000), int((time.monotonic() - t0) * 1000), n)
EOF
) || bail_out "the oversize sender in a failed"
read -r ms span n <<<"$out"
[ "${n:-0}" -ge 40 ] || diag "a counted ${n:-none} of 40 too big in 60 s"
max=$((10 + span / 100 + 1))
diag "40 oversize packets sent in $ms ms, all counted after $span ms: at most $max replies"
j2=$(show_json a) || bail_out "touctl show on a"

count() {
	tcpdump -r "$pcap" -n "$@" 2>/dev/null | wc -l
}
# The capture holds what a wrote into the TUN (the three packets delivered
# from b, a reply for every too big not limited) before it stops.
in_capture() {
	[ "$(count 'icmp and icmp[0] = 3 and icmp[1] = 4 and dst 10.77.0.1')" -ge \
	    $(($(jdelta "$j1" "$j2" peers.b.drops.too_big) - $(jdelta "$j1" "$j2" peers.b.drops.too_big_reply_limited))) ] &&
	    [ "$(count 'src 10.77.0.2 or src fd77::2')" -ge 3 ]
}
wait_for 30 in_capture || diag "the capture lacks packets a wrote after 30 s"
pcap_settle "$pcap" || diag "the capture kept growing"
proc_stop "$tcpdump_pid"
is "$(count 'icmp and icmp[0] = 3 and icmp[1] = 3')" 0 "no IPv4 error about a's flow to c reached a"
is "$(count 'icmp6 and ip6[40] = 1 and ip6[41] = 4')" 0 "no ICMPv6 error about a's flow to c reached a"
is "$(count 'icmp and icmp[0] = 3 and icmp[1] = 1 and src 10.77.0.2')" 1 \
    "the IPv4 error about a's flow to b was delivered"
is "$(count 'icmp6 and ip6[40] = 1 and ip6[41] = 3')" 1 \
    "the ICMPv6 error about a's flow to b was delivered"
is "$(count 'ip proto 4 and ip[32:4] = 0x0a4d0003')" 0 "no IP-in-IP claiming c's source reached a"
is "$(count 'ip proto 41')" 0 "no IPv6-in-IP claiming c's source reached a"
is "$(count 'ip proto 4 and ip[32:4] = 0x0a4d0002')" 1 "IP-in-IP with b's own inner source was delivered"

tb=$(jdelta "$j1" "$j2" peers.b.drops.too_big)
lim=$(jdelta "$j1" "$j2" peers.b.drops.too_big_reply_limited)
replies=$(count 'icmp and icmp[0] = 3 and icmp[1] = 4 and dst 10.77.0.1')
is "$tb" 40 "all 40 oversize packets counted as too_big"
cmp_ok "$replies" -le "$max" "at most $max ICMP too-big replies written to the TUN ($replies)"
cmp_ok "$replies" -ge 10 "the first burst of replies was sent ($replies)"
is "$lim" $((40 - replies)) "every reply not sent counted as too_big_reply_limited"
check "toud on a still running" toud_alive a

done_testing
