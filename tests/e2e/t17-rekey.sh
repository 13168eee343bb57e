#!/bin/bash
# t17-rekey: make-before-break rekeying.  With rekey-bytes = 4M on a, a
# 64 MB download from b crosses the volume limit many times: every rekey is
# a new full handshake with a new session ID, and the transfer completes
# intact over one TCP connection with no record refused on either side.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root
need_cmd curl tcpdump

topo_ab
conf_ab 4
echo "rekey-bytes = 4M" >>"$(conf_file a)"
# rekey-bytes belongs to [interface]: move it there (conf_ab wrote peers after it).
python3 - "$(conf_file a)" <<'PY'
import sys
f = sys.argv[1]
lines = [l for l in open(f).read().splitlines() if l != "rekey-bytes = 4M"]
i = lines.index("[interface]")
lines.insert(i + 1, "rekey-bytes = 4M")
open(f, "w").write("\n".join(lines) + "\n")
PY
toud_start b || bail_out "toud on b did not start"
toud_start a || bail_out "toud on a did not start"
ping_check a 10.77.0.2

S0=$(show_json a) || bail_out "touctl show on a"
B0=$(show_json b) || bail_out "touctl show on b"
id0=$(json_get "$S0" peers.b.session_id)
hs0=$(json_get "$S0" peers.b.last_handshake)

mkdir -p "$E2E_DIR/www"
make_file "$E2E_DIR/www/big" 65536
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"
# The underlay headers tell the sessions apart: the session ID is in clear.
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -p -n -s 64 -B 8192 --immediate-mode -U \
    -w "$E2E_DIR/ul.pcap" udp port 6080
CAP_PID=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
fetch_check a http://10.77.0.2:8080/big "$E2E_DIR/www/big" "64 MB with rekey-bytes = 4M"
pcap_settle "$E2E_DIR/ul.pcap" || diag "the capture kept growing"
proc_stop "$CAP_PID" INT 5

S1=$(show_json a) || bail_out "touctl show on a"
B1=$(show_json b) || bail_out "touctl show on b"
id1=$(json_get "$S1" peers.b.session_id)
check "a new session ID after the transfer ($id0 -> $id1)" test "$id1" != "$id0"
is "$(json_get "$B1" peers.a.session_id)" "$id1" "both sides send on the same session"
cmp_ok "$(json_get "$S1" peers.b.last_handshake)" -ge "$hs0" "last_handshake moved on"
is "$(drops_delta "$S0" "$S1" peers.b.drops)" "{}" "no drop on a during the rekeys"
is "$(drops_delta "$B0" "$B1" peers.a.drops)" "{}" "no drop on b during the rekeys"
is "$(json_get "$S1" peers.b.state)/$(json_get "$B1" peers.a.state)" "up/up" "both peers up"
# Old sessions drain for 10 s and then go; a handful can be around.
cmp_ok "$(json_get "$S1" interface.sessions)" -le 4 "old sessions are freed (a has $(json_get "$S1" interface.sessions))"
# Sessions that carried application data (DTLS type 23) during the transfer,
# in the order they began, and the UDP bytes each carried (the capture is
# cut at 64 bytes; the pcap header keeps each datagram's length).
read -r n_sess n_hs n_short < <(python3 - "$E2E_DIR/ul.pcap" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, order, volume, hs = 24, [], {}, set()
while off + 16 <= len(d):
    incl, orig = struct.unpack_from("<II", d, off + 8)
    pkt = d[off + 16:off + 16 + incl]
    off += 16 + incl
    ihl = 14 + (pkt[14] & 15) * 4
    udp = pkt[ihl + 8:]                            # Ethernet, IPv4, UDP
    if len(udp) < 17:
        continue
    sid = udp[8:16]
    if udp[16] == 23:
        if sid not in volume:
            order.append(sid)
            volume[sid] = 0
        volume[sid] += orig - ihl - 8
    else:
        hs.add(sid)
# Every session but the last ended by the volume rule: it carried at least
# rekey-bytes (4 MiB of payload, counted both ways) before it was replaced.
short = sum(1 for sid in order[:-1] if volume[sid] < 4 << 20)
print(len(order), len(hs), short)
PY
)
# 64 MiB at 4 MiB a session is at most 16 sessions; each handshake takes a
# while, during which the old session carries on, so fewer on a slow or
# busy machine.
cmp_ok "$n_sess" -ge 5 "data flowed in $n_sess successive sessions (rekey-bytes = 4M, 64 MB)"
is "$n_short" 0 "no session was replaced before it carried 4 MiB"
# (The first session's handshake happened before the capture started.)
cmp_ok "$n_hs" -ge $((n_sess - 1)) "each new one began with a handshake on the wire ($n_hs)"
ping_check a 10.77.0.2 "ping after the rekeys"

done_testing
