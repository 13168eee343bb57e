#!/bin/bash
# t04-wire: what the underlay carries with encryption = none.  A capture of
# a's veth during an HTTP transfer must show every UDP/6080 datagram that
# carries TCP as compact TOU: the word 00 06 00 00, then a TCP header (no
# inner IP header) whose checksum is right for the *tunnel* addresses; no
# plain TCP on the underlay, no IP fragments, nothing above the 1500 MTU.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=none             # this test reads the cleartext wire format
need_root
need_cmd curl tcpdump

topo_ab
# See the datagrams as a link without UDP segmentation offload carries them.
link_segments a ul0
link_segments b ul0
conf_ab 4
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
ping_check a 10.77.0.2 "ping through the tunnel"

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 256
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"

pcap=$E2E_DIR/ul0.pcap
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -n -s 0 --immediate-mode -U -w "$pcap"
tcpdump_pid=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
fetch_check a http://10.77.0.2:8080/f "$E2E_DIR/www/f" "256 KB over HTTP from b to a"
pcap_settle "$pcap" || diag "the capture kept growing"
proc_stop "$tcpdump_pid" TERM
proc_stop "$HTTP_PID"

# Decode the capture (pcap: 24-byte header, 16-byte records, Ethernet).
stats=$(python3 - "$pcap" <<'EOF'
import json, socket, struct, sys

data = open(sys.argv[1], "rb").read()
magic = struct.unpack("<I", data[:4])[0]
e = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
linktype = struct.unpack(e + "I", data[20:24])[0]
tunnel = {"10.200.0.1": "10.77.0.1", "10.200.0.2": "10.77.0.2"}
s = {"linktype": linktype, "frames": 0, "udp6080": 0, "compact_tcp": 0,
     "compact_tcp_a2b": 0, "compact_tcp_b2a": 0, "control": 0, "inner_ip": 0,
     "other_6080": 0, "plain_tcp": 0, "fragments": 0, "over_mtu": 0,
     "bad_tcp": 0, "bad_csum": 0, "syn_mss": [], "errors": []}

from e2eutil import ones_sum as csum

def tcp_mss(seg, doff):
    i = 20
    while i < doff:
        k = seg[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        if i + 1 >= doff or seg[i + 1] < 2:
            break
        if k == 2 and seg[i + 1] == 4:
            return struct.unpack("!H", seg[i + 2:i + 4])[0]
        i += seg[i + 1]
    return None

off = 24
while off + 16 <= len(data):
    incl = struct.unpack(e + "I", data[off + 8:off + 12])[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    s["frames"] += 1
    etype = struct.unpack("!H", pkt[12:14])[0]
    ip = pkt[14:]
    if etype == 0x0800:
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        if struct.unpack("!H", ip[6:8])[0] & 0x3fff:
            s["fragments"] += 1
        proto, src, dst = ip[9], socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        l4 = ip[ihl:tot]
    elif etype == 0x86dd:
        tot = 40 + struct.unpack("!H", ip[4:6])[0]
        proto, src, dst = ip[6], socket.inet_ntop(socket.AF_INET6, ip[8:24]), None
        if proto == 44:
            s["fragments"] += 1
        l4 = ip[40:tot]
    else:
        continue
    if tot > 1500:
        s["over_mtu"] += 1
    if proto == 6:
        s["plain_tcp"] += 1
        continue
    if proto != 17:
        continue
    sport, dport, ulen = struct.unpack("!HHH", l4[:6])
    if 6080 not in (sport, dport):
        continue
    s["udp6080"] += 1
    p = l4[8:ulen]
    if len(p) >= 1 and p[0] >> 6 == 1:
        s["inner_ip"] += 1
        continue
    if len(p) >= 4 and p[0] & 0x20:
        s["control"] += 1
        continue
    if p[:4] != b"\x00\x06\x00\x00":
        s["other_6080"] += 1
        s["errors"].append("unexpected payload %s from %s" % (p[:8].hex(), src))
        continue
    seg = p[4:]
    doff = (seg[12] >> 4) * 4 if len(seg) >= 20 else 0
    tsp, tdp = struct.unpack("!HH", seg[:4]) if len(seg) >= 4 else (0, 0)
    ports_ok = (tsp == 8080 and tdp >= 1024) or (tdp == 8080 and tsp >= 1024)
    if not (20 <= doff <= len(seg)) or not ports_ok:
        s["bad_tcp"] += 1
        s["errors"].append("bad TCP %s from %s" % (seg[:20].hex(), src))
        continue
    s["compact_tcp"] += 1
    s["compact_tcp_a2b" if src == "10.200.0.1" else "compact_tcp_b2a"] += 1
    if src in tunnel:
        isrc = socket.inet_aton(tunnel[src])
        idst = socket.inet_aton(tunnel["10.200.0.2" if src == "10.200.0.1" else "10.200.0.1"])
        if csum(isrc + idst + struct.pack("!BBH", 0, 6, len(seg)) + seg) != 0xffff:
            s["bad_csum"] += 1
            s["errors"].append("TCP checksum wrong for the tunnel addresses, from %s" % src)
    if seg[13] & 0x02:
        s["syn_mss"].append(tcp_mss(seg, doff))
s["errors"] = s["errors"][:5]
print(json.dumps(s))
EOF
) || bail_out "cannot decode $pcap"
diag "capture: $stats"
st() { json_get "$stats" "$1"; }

is "$(st linktype)" 1 "the capture is Ethernet"
cmp_ok "$(st compact_tcp)" -gt 10 "compact TOU TCP datagrams on the underlay ($(st compact_tcp))"
cmp_ok "$(st compact_tcp_b2a)" -gt 10 "compact TCP from b to a (data: $(st compact_tcp_b2a))"
cmp_ok "$(st compact_tcp_a2b)" -gt 3 "compact TCP from a to b (ACKs: $(st compact_tcp_a2b))"
is "$(st bad_tcp)" 0 "every compact TCP segment has a valid data offset and the HTTP ports"
is "$(st bad_csum)" 0 "every compact TCP checksum is right over the tunnel (inner) addresses"
is "$(st inner_ip)" 0 "no inner IPv4/IPv6 header between the tunnel addresses"
is "$(st other_6080)" 0 "no other payload on UDP/6080"
is "$(st plain_tcp)" 0 "no plain TCP on the underlay"
is "$(st fragments)" 0 "no IP fragments on the underlay"
is "$(st over_mtu)" 0 "no packet above the underlay MTU of 1500"
mss=$(python3 -c 'import json, sys; m = json.loads(sys.argv[1])["syn_mss"]; print(max(m) if m and None not in m else -1)' "$stats")
cmp_ok "$mss" -gt 0 "the SYN and SYN-ACK carry an MSS option ($mss)"
# outer IPv4 20 + UDP 8 + GUE word 4 + TCP header 20 + MSS <= 1500 (compact:
# no inner IP header on the wire)
cmp_ok "$mss" -le $((1500 - 20 - 8 - 4 - 20)) "MSS fits a full segment into one outer packet"

done_testing
