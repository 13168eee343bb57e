#!/bin/bash
# t14-replay: an attacker on the path records authentic datagrams of the
# client (tcpdump in the router) and plays them back to the server later:
# once from a third host x with its own address, once from the router with
# a forged source address.  The server must not move its endpoint for the
# client, must count every played-back record as a replay, must not take
# them as traffic from the client (rx_packets unchanged) and must send
# nothing to the attacker's addresses; the tunnel keeps working.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd ping tcpdump

FORGED=10.201.3.7

rt_topo
rt_topo_x
rt_start 0

# Record the client's datagrams in the router while it pings the server.
cap=$E2E_DIR/cap.pcap
bg_start r "$E2E_DIR/tcpdump.log" tcpdump -i rc0 -n -s 0 --immediate-mode -U -w "$cap" \
    "udp and src host $RT_C_UL and dst port $RT_PORT"
tcpdump_pid=$BG_PID
wait_for 30 grep -q 'listening on' "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
check "ping through the tunnel while the router records" ping_all c "$RT_S_TUN" 10
pcap_settle "$cap" || diag "the capture kept growing"
proc_stop "$tcpdump_pid" INT 5

# The application-data records (content type 23) among them, as hex lines.
nrec=$(python3 - "$cap" "$E2E_DIR/records.hex" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
magic = struct.unpack("<I", data[:4])[0]
end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
linktype = struct.unpack(end + "I", data[20:24])[0]
l2 = {1: 14, 113: 16, 276: 20}[linktype]
off, out = 24, []
while off + 16 <= len(data):
    incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    ip = pkt[l2:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
        continue
    udp = ip[(ip[0] & 15) * 4:]
    payload = udp[8:]
    # GUE 16 bytes, then the DTLS record: content type 23 is application data
    if len(payload) > 16 + 13 and payload[16] == 23:
        out.append(payload.hex())
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print(len(out))
EOF
)
cmp_ok "${nrec:-0}" -ge 10 "the router recorded application-data records of the client ($nrec)"

j0=$(show_json s) || bail_out "touctl show on s"
ep0=$(json_get "$j0" peers.c.endpoint)
is "$ep0" "$RT_C_UL:$RT_PORT" "the server's endpoint for the client before the replay"

# Play them back from x, from its own address; listen for an answer until
# the server has counted every one (e2eutil.count_until).
cat >"$E2E_DIR/replay-x.py" <<'EOF'
import socket, sys, time
from e2eutil import count_until
recs = [bytes.fromhex(l) for l in open(sys.argv[1]) if l.strip()]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.201.2.2", 6080))
for r in recs:
    s.sendto(r, (sys.argv[2], int(sys.argv[3])))
    time.sleep(0.005)
print("sent", len(recs), flush=True)
print("got", count_until([s], sys.argv[4]).get(s, 0))
EOF
bg_start x "$E2E_DIR/replay-x.out" python3 "$E2E_DIR/replay-x.py" "$E2E_DIR/records.hex" \
    "$RT_S_UL" "$RT_PORT" "$E2E_DIR/replay-x.stop"
x_pid=$BG_PID
wait_for 60 grep -q '^sent' "$E2E_DIR/replay-x.out" ||
    bail_out "the replay from x failed: $(cat "$E2E_DIR/replay-x.out")"
wait_delta 60 s "$j0" peers.c.drops.replay "$nrec" ||
    diag "the server counted $WAIT_DELTA of x's $nrec records as replays in 60 s"
touch "$E2E_DIR/replay-x.stop"
proc_wait "$x_pid" 60 || bail_out "the listener in x did not stop"
is "$(sed -n 's/^got //p' "$E2E_DIR/replay-x.out")" 0 "the server sent nothing back to x"

# Play them back from the router with a forged source address.
nsx r python3 - "$E2E_DIR/records.hex" "$FORGED" "$RT_S_UL" "$RT_PORT" <<'EOF' ||
import socket, struct, sys, time
recs = [bytes.fromhex(l) for l in open(sys.argv[1]) if l.strip()]
src, dst, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
from e2eutil import csum
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for r in recs:
    udp = struct.pack("!HHHH", 40123, port, 8 + len(r), 0) + r
    ph = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, len(udp))
    c = csum(ph + udp) or 0xffff
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    s.sendto(ip + udp, (dst, 0))
    time.sleep(0.005)
EOF
    not_ok "the router sends the forged datagrams"
wait_delta 60 s "$j0" peers.c.drops.replay $((2 * nrec)) ||
    diag "the server counted $WAIT_DELTA replays of $((2 * nrec)) in 60 s"
j1=$(show_json s) || bail_out "touctl show on s"
diag "server drops during the replay: $(drops_delta "$j0" "$j1" peers.c.drops), interface $(drops_delta "$j0" "$j1" interface.drops)"
is "$(json_get "$j1" peers.c.endpoint)" "$ep0" "the server's endpoint for the client did not move"
is "$(jdelta "$j0" "$j1" peers.c.drops.replay)" "$((2 * nrec))" \
    "every played-back record counts as a replay ($((2 * nrec)))"
is "$(jdelta_data "$j0" "$j1" peers.c rx)" 0 "none of them counts as traffic from the client (keepalives aside)"
is "$(json_get "$j1" peers.c.session_id)" "$(json_get "$j0" peers.c.session_id)" "the session is unchanged"

check "the server still reaches the client (ping 10.77.0.1)" ping_all s "$RT_C_TUN" 5
is "$(tq s peers.c.endpoint)" "$ep0" "the endpoint is still the client's real one"

done_testing
