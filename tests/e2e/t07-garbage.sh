#!/bin/bash
# t07-garbage: hostile datagrams at a's UDP port.  From b's endpoint (b's
# toud stopped, a socket bound to 10.200.0.2:6080): random bytes, truncated
# headers, wrong variants, C=1 with unknown ctypes, bad flags, broken inner
# packets; each must be dropped and counted under peer b by its reason.
# From addresses that are no peer's endpoint (10.200.0.3:6080 and
# 10.200.0.2:6090), even well-formed packets must count as the interface's
# unknown_endpoint and get no answer.  a's toud survives and the tunnel works.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=none             # crafts cleartext datagrams
need_root
need_cmd curl ping

topo_ab
addr_add b ul0 10.200.0.3/24
conf_ab 4
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
ping_check a 10.77.0.2 "ping through the tunnel"

toud_stop b || not_ok "toud on b stops on SIGTERM"
j0=$(show_json a) || bail_out "touctl show on a"

# The sender prints what it sent, then counts what comes back until the
# counters of a account for every datagram (e2eutil.count_until): an answer
# would have been sent by then.
cat >"$E2E_DIR/garbage.py" <<'EOF'
import collections, json, os, random, socket, struct, sys, time

A = ("10.200.0.1", 6080)
rnd = random.Random(6080)
def rb(n):
    return bytes(rnd.getrandbits(8) for _ in range(n))

from e2eutil import csum

def tcp_syn(src, dst, fam=socket.AF_INET):
    seg = struct.pack("!HHIIBBHHH", 40000, 9, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
    s, d = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    if fam == socket.AF_INET:
        pseudo = s + d + struct.pack("!BBH", 0, 6, len(seg))
    else:
        pseudo = s + d + struct.pack("!IxxxB", len(seg), 6)
    return seg[:16] + struct.pack("!H", csum(pseudo + seg)) + seg[18:]

def ip4(src, dst, proto, payload, tot=None, ihl=5):
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot if tot is not None else 20 + len(payload),
                    0, 0x4000, 64, proto, 0, socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload

W = lambda proto: bytes([0, proto, 0, 0])        # compact TOU word
syn = tcp_syn("10.77.0.2", "10.77.0.1")
syn6 = tcp_syn("fd77::2", "fd77::1", socket.AF_INET6)
# A checksum that is wrong for both families: no tunnel address to rebuild.
c4, c6 = syn[16:18], syn6[16:18]
bad = next(struct.pack("!H", v) for v in range(1, 65535)
           if struct.pack("!H", v) not in (c4, c6))
syn_badsum = syn[:16] + bad + syn[18:]

peer = [  # (reason, datagram)
    ("gue_truncated", b""),
    ("gue_truncated", b"\x00"),
    ("gue_truncated", b"\x00\x06\x00"),
    ("gue_truncated", W(6)),                     # compact word, no segment
    ("gue_bad_variant", b"\x80\x06\x00\x00" + syn),
    ("gue_bad_variant", b"\xc0\x06\x00\x00" + syn),
    ("gue_bad_variant", b"\x50" + rb(39)),       # variant 1, version 5
    ("gue_bad_variant", b"\x70" + rb(39)),       # variant 1, version 7
    ("gue_bad_control", b"\x20\x63\x00\x00"),    # C=1, unknown ctype 99
    ("gue_bad_control", b"\x20\x00\x00\x00"),    # C=1, ctype 0
    ("gue_bad_control", b"\x20\xff\x00\x00" + rb(8)),
    ("gue_bad_control_len", b"\x20\x01\x00\x00\xff"),      # keepalive with a body
    ("gue_bad_control_len", b"\x20\x02\x00\x00" + rb(4)),  # short challenge
    ("gue_bad_hlen", b"\x03\x06\x00\x00" + bytes(12) + syn),
    ("gue_bad_hlen", b"\x01\x06\x00\x00" + bytes(4) + syn),
    ("gue_bad_flags", b"\x00\x06\x80\x00" + syn),
    ("gue_bad_flags", b"\x00\x06\x00\x01" + syn),          # P is for the outer word
    ("gue_bad_proto", W(0) + syn),
    ("inner_bad_transport", W(6) + syn[:8]),               # TCP header cut short
    ("inner_bad_transport", W(6) + syn[:12] + b"\xf0" + syn[13:]),   # doff 60 > 20
    ("inner_bad_transport", W(17) + struct.pack("!HHHH", 1, 2, 20, 0)),  # UDP length
    ("inner_bad_transport", W(1) + b"\x08\x00\x00\x00"),   # ICMP under 8 bytes
    ("inner_bad_protocol", W(43) + rb(8)),                 # an IPv6 extension header
    ("no_tunnel_address", W(6) + syn_badsum),
    ("inner_truncated", b"\x45" + rb(18)),                 # 19 bytes of IPv4
    ("inner_truncated", ip4("10.77.0.2", "10.77.0.1", 6, syn, tot=100)),
    ("inner_truncated", b"\x60" + rb(29)),                 # 30 bytes of IPv6
    ("inner_bad_header_length", ip4("10.77.0.2", "10.77.0.1", 6, syn, ihl=4)),
    ("inner_bad_length", ip4("10.77.0.2", "10.77.0.1", 6, syn, tot=10)),
    ("inner_bad_transport", ip4("10.77.0.2", "10.77.0.1", 6, syn[:12] + b"\x20" + syn[13:])),
]
# Random bytes of a variant that does not exist (first two bits 10 or 11).
for _ in range(40):
    d = rb(rnd.randint(1, 1400))
    peer.append(("gue_bad_variant", bytes([d[0] | 0x80]) + d[1:]))
# Random bytes: whatever the reason, each must be dropped.
rand_n = 60
randoms = [rb(rnd.randint(1, 1400)) for _ in range(rand_n)]

def send_all(sock, datagrams):
    for i, d in enumerate(datagrams):
        sock.sendto(d, A)
        if i % 16 == 15:
            time.sleep(0.005)   # stay below a's socket buffer

def sock(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(addr)
    return s

sp = sock(("10.200.0.2", 6080))
send_all(sp, [d for _, d in peer] + randoms)

stranger_dgrams = [W(6) + syn, ip4("10.77.0.2", "10.77.0.1", 6, syn), b"\x20\x01\x00\x00",
                   b"", b"\x80" + rb(50)] + [rb(rnd.randint(1, 1400)) for _ in range(20)]
s3 = sock(("10.200.0.3", 6080))
s4 = sock(("10.200.0.2", 6090))
send_all(s3, stranger_dgrams)
send_all(s4, stranger_dgrams)

print(json.dumps({"peer_expected": dict(collections.Counter(r for r, _ in peer)),
                  "peer_random": rand_n, "peer_total": len(peer) + rand_n,
                  "stranger_total": 2 * len(stranger_dgrams)}), flush=True)

# None of the garbage is a valid keepalive, so a keepalive to b's endpoint
# is a's own timer (a loaded machine may get there while this runs), not an
# answer.
def kind(s, d):
    if s is sp and d == b"\x20\x01\x00\x00":
        return "peer_keepalives"
    return "peer_replies" if s is sp else "stranger_replies"
from e2eutil import count_until
replies = count_until([sp, s3, s4], sys.argv[1], classify=kind)
print(json.dumps({k: replies.get(k, 0) for k in ("peer_replies", "stranger_replies", "peer_keepalives")}))
EOF
stop=$E2E_DIR/garbage.stop
bg_start b "$E2E_DIR/garbage.out" python3 "$E2E_DIR/garbage.py" "$stop"
sender=$BG_PID
wait_for 60 grep -q peer_total "$E2E_DIR/garbage.out" ||
    bail_out "the sender in b failed: $(cat "$E2E_DIR/garbage.out")"
res=$(head -n 1 "$E2E_DIR/garbage.out")
diag "sent: $res"

# garbage_counted: a has counted every datagram it was sent (the drops of
# peer b and the interface's unknown_endpoint add up to what went out).
garbage_counted() {
	local j n
	j=$(show_json a) || return 1
	n=$(python3 -c 'import json, sys; print(sum(json.loads(sys.argv[1]).values()))' \
	    "$(drops_delta "$j0" "$j" peers.b.drops)") &&
	    [ "$n" -ge "$(json_get "$res" peer_total)" ] &&
	    [ "$(jdelta "$j0" "$j" interface.drops.unknown_endpoint)" -ge "$(json_get "$res" stranger_total)" ]
}
wait_for 60 garbage_counted || diag "a did not count every datagram in 60 s"
# Not a quiet moment (the kernel's IPv6 chatter may never allow one on a
# crowded machine): each datagram is counted as it is handled, so a double
# count would show now.
j1=$(show_json a) || bail_out "touctl show on a"
touch "$stop"
proc_wait "$sender" 60 || bail_out "the listener in b did not stop"
[ "$PROC_RC" = 0 ] || bail_out "the listener in b failed: $(cat "$E2E_DIR/garbage.out")"
replies=$(tail -n 1 "$E2E_DIR/garbage.out")
diag "came back: $replies"

check "toud on a survived the garbage" toud_alive a
d_peer=$(drops_delta "$j0" "$j1" peers.b.drops)
d_if=$(drops_delta "$j0" "$j1" interface.drops)
diag "peer b drops: $d_peer"
diag "interface drops: $d_if"

# Every crafted datagram counts under its reason (the random ones add to
# some reason each: "at least"), and the total matches exactly.
while read -r reason got want; do
	cmp_ok "$got" -ge "$want" "peer b drops.$reason grew by at least $want ($got)"
done < <(python3 -c '
import json, sys
sent, got = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for r, n in sorted(sent["peer_expected"].items()):
    print(r, got.get(r, 0), n)
' "$res" "$d_peer")
total=$(python3 -c 'import json, sys; print(sum(json.loads(sys.argv[1]).values()))' "$d_peer")
is "$total" "$(json_get "$res" peer_total)" "every datagram from b's endpoint was dropped and counted once"
is "$(jdelta_data "$j0" "$j1" peers.b rx)" 0 "nothing from the garbage was delivered (rx_packets, keepalives aside)"
is "$(json_get "$replies" peer_replies)" 0 "a sent nothing back to b's endpoint (its own keepalives aside)"
st=$(json_get "$res" stranger_total)
d_if=$(no_chatter "$d_if")
is "$d_if" "{\"unknown_endpoint\": $st}" "all $st datagrams from unknown endpoints counted as interface unknown_endpoint"
is "$(json_get "$replies" stranger_replies)" 0 "a answered no unknown endpoint"

toud_start b || bail_out "toud on b did not restart"
ping_check a 10.77.0.2 "ping a to b after the garbage"
mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 256
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"
fetch_check a http://10.77.0.2:8080/f "$E2E_DIR/www/f" "256 KB over HTTP after the garbage"
check "toud on a still running" toud_alive a

done_testing
