#!/bin/bash
# t05-spoof: a peer may only send packets from its own tunnel addresses and
# allowed-ips.  With b's toud stopped, datagrams from b's endpoint
# (10.200.0.2:6080) carry whole IPv4/IPv6 packets with foreign sources: a
# must drop every one and count it as peer b's source_not_allowed, while a
# packet from b's real tunnel address still gets through (a's kernel answers
# it).  Then b's toud comes back and the tunnel works.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=none             # crafts cleartext datagrams
need_root
need_cmd ping

topo_ab
conf_ab 4
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
ping_check a 10.77.0.2 "ping through the tunnel"

toud_stop b || not_ok "toud on b stops on SIGTERM"
is "${TOUD_RC[b]}" 0 "toud on b exited with status 0"
j0=$(show_json a) || bail_out "touctl show on a"

res=$(nsx b python3 - <<'EOF'
import json, select, socket, struct, time

from e2eutil import csum

def echo4(src, dst, ident, seq):
    icmp = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"toud-e2e" * 4
    icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0x4000, 64, 1, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + icmp

def echo6(src, dst, ident, seq):
    s6, d6 = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    icmp = struct.pack("!BBHHH", 128, 0, 0, ident, seq) + b"toud-e2e" * 4
    pseudo = s6 + d6 + struct.pack("!IxxxB", len(icmp), 58)
    icmp = icmp[:2] + struct.pack("!H", csum(pseudo + icmp)) + icmp[4:]
    return struct.pack("!IHBB", 0x60000000, len(icmp), 58, 64) + s6 + d6 + icmp

spoofed = [echo4("10.66.0.9", "10.77.0.1", 0x5001, i) for i in range(8)]
spoofed += [echo4("10.77.0.1", "10.77.0.1", 0x5002, 0),    # a's own address
            echo4("10.77.0.3", "10.77.0.1", 0x5003, 0)]    # in the subnet, not b's
spoofed += [echo6("fd66::9", "fd77::1", 0x5004, i) for i in range(4)]
spoofed += [echo6("fd77::1", "fd77::1", 0x5005, 0)]

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.200.0.2", 6080))
for p in spoofed:
    s.sendto(p, ("10.200.0.1", 6080))
    time.sleep(0.01)
# One packet from b's real tunnel address: a's kernel must answer it.
s.sendto(echo4("10.77.0.2", "10.77.0.1", 0x7e57, 1), ("10.200.0.1", 6080))

# The answer comes after a has handled every spoofed packet: wait for it
# (generously: a crowded machine is slow, and the loop ends on it).
reply, seen = None, []
end = time.time() + 30
while time.time() < end and reply is None:
    r, _, _ = select.select([s], [], [], end - time.time())
    if not r:
        break
    d, src = s.recvfrom(65535)
    seen.append(d[:8].hex())
    icmp = None
    if d[:4] == b"\x00\x01\x00\x00":
        icmp, kind = d[4:], "compact"
    elif d[:1] == b"\x45" and d[9] == 1:
        icmp, kind = d[20:], "whole IPv4"
    if icmp and icmp[0] == 0 and struct.unpack("!HH", icmp[4:8]) == (0x7e57, 1):
        reply = kind
print(json.dumps({"spoofed": len(spoofed), "reply": reply, "seen": seen[:8]}))
EOF
) || bail_out "the sender in b failed: $res"
diag "sender: $res"
n=$(json_get "$res" spoofed)
j1=$(show_json a) || bail_out "touctl show on a"
check "toud on a still running" toud_alive a
is "$(drops_delta "$j0" "$j1" peers.b.drops)" "{\"source_not_allowed\": $n}" \
    "a dropped all $n spoofed packets as peer b's source_not_allowed, and nothing else"
is "$(no_chatter "$(drops_delta "$j0" "$j1" interface.drops)")" "{}" \
    "no interface-level drops (the kernel's own IPv6 chatter aside)"
reply=$(json_get "$res" reply)
if [ "$reply" = null ]; then
	not_ok "a packet from b's own tunnel address was delivered and answered"
else
	ok "a packet from b's own tunnel address was delivered and answered ($reply)"
fi

toud_start b || bail_out "toud on b did not restart"
ping_check a 10.77.0.2 "ping a to b after b's restart"
ping_check b fd77::1 "ping6 b to a after b's restart"
j2=$(show_json a) || bail_out "touctl show on a"
is "$(drops_delta "$j1" "$j2" peers.b.drops)" "{}" "no drops for the real traffic"

done_testing
