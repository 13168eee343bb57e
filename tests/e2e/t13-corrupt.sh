#!/bin/bash
# t13-corrupt: the router corrupts about 5 % of the tunnel's datagrams: 4 %
# get a byte of the encrypted fragment overwritten (DTLS authentication
# must fail: bad_record), 1 % the content type in the DTLS record header
# (the prefilter must refuse it: bad_dtls_header).  nft fixes the UDP
# checksum, so every corrupted datagram reaches toud.  A 50 MiB download
# completes intact, the receiver counts both kinds of drops, and the tunnel
# stays up with the same session.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping nft

rt_topo
rt_start 0
rt_serve_file s "$RT_S_TUN" 8080 50
sid=$(tq c peers.s.session_id)
j0s=$(show_json s) j0c=$(show_json c)

# One random number per datagram picks at most one corruption.  UDP
# payload: GUE 16 bytes, the DTLS record header 13 (content type first),
# the explicit nonce 8, then the ciphertext: byte 60 lies inside it in
# every datagram of 200 bytes or more.  A byte that already has the value
# is left alone, so every datagram counted is really changed.
body_bit=$(((8 + 60) * 8)) type_bit=$(((8 + 16) * 8))
rt_nft "table ip rt_corrupt {
	chain mangle {
		type filter hook forward priority 10; policy accept;
		udp dport $RT_PORT meta mark set numgen random mod 100
		udp dport $RT_PORT meta mark < 4 meta length >= 200 @th,$body_bit,8 != 0x5a counter @th,$body_bit,8 set 0x5a comment \"body\"
		udp dport $RT_PORT meta mark 4 counter @th,$type_bit,8 set 0x5a comment \"header\"
		meta mark set 0
	}
}"

rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got"
rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 50 "50 MiB through 5 % corrupted datagrams"
diag "throughput: $FETCH_MBITS Mbit/s ($FETCH_TIME s for 50 MiB)"

# The connection's last segments and keepalives still flow: stop the
# corruption before reading what it did (an accept ahead of its rules ends
# the chain), so no datagram is spoilt after the count.
rt_nft "insert rule ip rt_corrupt mangle accept"
body=$(rt_nft_packets rt_corrupt body) hdr=$(rt_nft_packets rt_corrupt header)
diag "router: $body datagrams with a corrupted fragment, $hdr with a corrupted record header"
rt_nft "delete table ip rt_corrupt"

# corrupt_drops: both sides' bad_record and bad_dtls_header drops since
# the start in TOTAL (and the JSON in j1s, j1c); true once they reach
# what the router spoilt, however long a crowded machine takes to read
# the last of them.
corrupt_drops() {
	j1s=$(show_json s) j1c=$(show_json c)
	total=$(python3 -c '
import json, sys
def n(doc, peer):
    d = json.loads(doc)
    t = 0
    for x in [d["interface"]] + [p for p in d["peers"] if p["name"] == peer]:
        t += sum(x.get("drops", {}).get(r, 0) for r in ("bad_record", "bad_dtls_header"))
    return t
a = sys.argv[1:]
print(n(a[1], "s") - n(a[0], "s") + n(a[3], "c") - n(a[2], "c"))' "$j0c" "$j1c" "$j0s" "$j1s")
	[ "$total" -ge $((body + hdr)) ]
}
wait_for 30 corrupt_drops || diag "the drops did not reach the router's count in 30 s"
diag "client drops: $(drops_delta "$j0c" "$j1c" peers.s.drops), interface $(drops_delta "$j0c" "$j1c" interface.drops)"
diag "server drops: $(drops_delta "$j0s" "$j1s" peers.c.drops), interface $(drops_delta "$j0s" "$j1s" interface.drops)"
br=$(jdelta "$j0c" "$j1c" peers.s.drops.bad_record)
bh=$(($(jdelta "$j0c" "$j1c" peers.s.drops.bad_dtls_header) + $(jdelta "$j0c" "$j1c" interface.drops.bad_dtls_header)))
cmp_ok "$body" -gt 100 "the router corrupted encrypted fragments ($body)"
cmp_ok "$br" -gt 0 "the receiver (client) counts bad_record drops ($br)"
cmp_ok "$hdr" -gt 10 "the router corrupted record headers ($hdr)"
cmp_ok "$bh" -gt 0 "the receiver (client) counts bad_dtls_header drops ($bh)"
# Nothing corrupted may have been taken for a valid record: each datagram
# the router spoilt shows up as exactly one of these drops at its receiver.
is "$total" "$((body + hdr))" "every corrupted datagram counts as one bad_record or bad_dtls_header drop (client + server)"

is "$(tq c peers.s.session_id)" "$sid" "the session survived (no new handshake)"
check "the tunnel still works (ping 10.77.0.2)" ping_all c "$RT_S_TUN" 5

done_testing
