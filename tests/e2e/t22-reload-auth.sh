#!/bin/bash
# t22-reload-auth: reloads that change or remove a peer that is not idle.
# a has peers b and c; downloads from both run through the tunnel.
#   (1) b's pinned fingerprint changes (b gets a new key) during the
#       downloads: toud on a lives on, c's download is intact, b cannot
#       come back with its old key, and is up again once it has the new one
#       (the session a shows began with b's new certificate, read from the
#       wire: DTLS 1.2 sends certificates in clear).
#   (2) the same while b's handshake is half-open: a already holds b's
#       certificate, b's last records (ChangeCipherSpec, Finished) are held
#       back by a rule in a's namespace; after the reload they are let
#       through: the handshake authenticated with the old key must not
#       complete, and b is up again with the newer key.
#   (3) a reload that removes c during its download (b's download goes on
#       intact), and one that removes b while its handshake is half-open
#       (b gets no session with a once its records are let through); b,
#       added back, is up again.
# After each reload toud on a is the same process, and at the end it exits
# with status 0 on SIGTERM.
#
#   b ul0 --- ul0 a ul1 --- ul0 c
#   10.200.0.2  .1  10.200.1.1  10.200.1.3
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root
need_cmd curl ping tcpdump nft

B_UL=10.200.0.2
A_UL=10.200.0.1

# --- helpers ----------------------------------------------------------------

cat >"$E2E_DIR/certs.py" <<'EOF'
"""Which certificate each DTLS session began with, read from a capture.

certs.py PCAP SRC A: for every session ID, the SHA-256 fingerprints of the
SubjectPublicKeyInfo in the Certificate messages SRC sent (handshake
fragments reassembled), and the capture times of the application-data
records A sent on it.  Prints JSON {sid: {"certs": [...], "a_data": [t0, t1]}}."""
import hashlib, json, socket, struct, sys

def frames(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    div = 1e9 if magic in (0xa1b23c4d, 0x4d3cb2a1) else 1e6
    l2 = {1: 14, 113: 16, 276: 20}[struct.unpack(e + "I", data[20:24])[0]]
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl = struct.unpack(e + "III", data[off:off + 12])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        yield sec + frac / div, pkt[l2:]

def der(b, i):
    """(tag, start of content, end) of the DER element at b[i]."""
    tag, n = b[i], b[i + 1]
    i += 2
    if n & 0x80:
        k = n & 0x7f
        n = int.from_bytes(b[i:i + k], "big")
        i += k
    return tag, i, i + n

def spki_fingerprint(cert):
    _, c, _ = der(cert, 0)              # Certificate
    _, i, end = der(cert, c)            # tbsCertificate
    elems = []
    while i < end:
        tag, s, e = der(cert, i)
        elems.append((tag, i, e))
        i = e
    if elems[0][0] == 0xa0:             # [0] version
        elems = elems[1:]
    _, s, e = elems[5]                  # serial, sig, issuer, validity, subject, spki
    return "sha256:" + hashlib.sha256(cert[s:e]).hexdigest()

path, src, a = sys.argv[1:4]
out, frags = {}, {}
for t, ip in frames(path):
    if len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 17:
        continue
    ihl = (ip[0] & 15) * 4
    s_, d_ = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
    udp = ip[ihl:]
    d = udp[8:struct.unpack("!H", udp[4:6])[0]]
    if len(d) < 16 + 13 or d[:4] != b"\x03\x3b\x00\x01":
        continue
    sid, rec = d[8:16].hex(), d[16:]
    ent = out.setdefault(sid, {"certs": [], "a_data": []})
    if s_ == a and rec[0] == 23:
        ad = ent["a_data"]
        ent["a_data"] = [ad[0] if ad else t, t]
    # A cleartext handshake record (epoch 0) with a Certificate fragment.
    if s_ != src or rec[0] != 22 or rec[3:5] != b"\0\0" or len(rec) < 25 or rec[13] != 11:
        continue
    total = int.from_bytes(rec[14:17], "big")
    seq = struct.unpack("!H", rec[17:19])[0]
    foff = int.from_bytes(rec[19:22], "big")
    flen = int.from_bytes(rec[22:25], "big")
    buf = frags.setdefault((sid, seq), bytearray(total))
    have = frags.setdefault((sid, seq, "have"), set())
    buf[foff:foff + flen] = rec[25:25 + flen]
    have.update(range(foff, foff + flen))
    if len(have) == total and not frags.get((sid, seq, "done")):
        frags[(sid, seq, "done")] = True
        body = bytes(buf)
        n = int.from_bytes(body[0:3], "big")
        if n >= 3:
            clen = int.from_bytes(body[3:6], "big")
            ent["certs"].append(spki_fingerprint(body[6:6 + clen]))
print(json.dumps({k: v for k, v in out.items() if v["certs"] or v["a_data"]}))
EOF

# fp NAME: the fingerprint of key NAME (keys_for makes it).
fp() {
	keys_for "$1"
	cat "$E2E_DIR/keys/$1/fingerprint"
}

# write_conf_a KEY_OF_B PEER...: a's config with these peers (b or c), b
# pinned to the fingerprint of key KEY_OF_B.
write_conf_a() {
	local kb=$1 p
	shift
	conf_interface a 6080 10.77.0.1/24
	for p in "$@"; do
		case $p in
		b)
			{
				echo
				echo "[peer b]"
				echo "endpoint = $B_UL:6080"
				echo "address = 10.77.0.2"
				echo "keepalive = 0"
				echo "fingerprint = $(fp "$kb")"
			} >>"$(conf_file a)"
			;;
		c) conf_peer a c 10.200.1.3:6080 "10.77.0.3";;
		esac
	done
}

# conf_b KEY: b's config, with key KEY as its identity.
conf_b() {
	keys_for "$1"
	conf_interface b 6080 10.77.0.2/24
	conf_peer b a "$A_UL:6080" "10.77.0.1"
	sed -i "s|/keys/b/|/keys/$1/|" "$(conf_file b)"
	grep -q "/keys/$1/key.pem" "$(conf_file b)" || bail_out "cannot point b's config at key $1"
}

# restart_b KEY: b's toud again, with key KEY.
restart_b() {
	toud_stop b
	conf_b "$1"
	toud_start b || bail_out "toud on b did not start with key $1"
}

# reload_a DESC: touctl reload on a; checks exit 0 and that a is the same
# process.  If a died, that is reported and a is started again so the
# remaining cases still run.
reload_a() {
	local out rc
	out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1)
	rc=$?
	sleep 0.3
	if toud_alive a && [ "${TOUD_PID[a]}" = "$A_PID" ]; then
		is "$rc" 0 "$1: touctl reload exits 0 and toud on a lives (pid $A_PID)" || diag "$out"
		return 0
	fi
	toud_stop a
	not_ok "$1: touctl reload exits 0 and toud on a lives (pid $A_PID)" \
	    "reload: rc $rc, $out; toud on a is gone, exit status ${TOUD_RC[a]}"
	toud_start a || bail_out "toud on a did not start again"
	A_PID=${TOUD_PID[a]}
	diag "toud on a started again (pid $A_PID) for the cases that follow"
	return 1
}

# state NODE PEER: from touctl's text output (no interpreter to start in
# the polling loops).
state() {
	"$TOUCTL" -s "$(sock_of "$1")" show "$2" 2>/dev/null | awk '$1 == "state:" { print $2 }'
}

# shellcheck disable=SC2317
b_up() {
	nsx b ping -n -q -c 1 -W 1 10.77.0.1 >/dev/null 2>&1 &&
	    [ "$(state a b)" = up ] && [ "$(state b a)" = up ]
}

# never_up SECONDS NODE PEER: for SECONDS, b pings a every 0.2 s (so it
# keeps trying to handshake) and NODE may not say PEER is up.
# NEVER_UP_SEEN is the states seen.
never_up() {
	local deadline st
	NEVER_UP_SEEN=
	deadline=$(e2e_deadline "$1")
	while e2e_before "$deadline"; do
		nsx b ping -n -q -c 1 -W 0.2 10.77.0.1 >/dev/null 2>&1
		st=$(state "$2" "$3")
		[[ " $NEVER_UP_SEEN " == *" $st "* ]] || NEVER_UP_SEEN+=" $st"
		[ "$st" = up ] && return 1
	done
	return 0
}

# shellcheck disable=SC2317
both_alive() { proc_alive "$1" && proc_alive "$2"; }
# both_receiving OUT OUT: both downloads have data (the connections are up).
both_receiving() {
	[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt 0 ] &&
	    [ "$(stat -c %s "$2" 2>/dev/null || echo 0)" -gt 0 ]
}

# isnt_up NODE PEER DESC: NODE does not say PEER is up (a handshake the
# other side refused must not leave a session behind on this one).
isnt_up() {
	local st
	st=$(state "$1" "$2")
	if [ -n "$st" ] && [ "$st" != up ]; then
		ok "$3 $1 has no session with $2 (it says $st)"
	else
		not_ok "$3 $1 has no session with $2" "$1 says ${st:-nothing} about $2"
	fi
}

# shellcheck disable=SC2317
no_half_open() { [ "$(tq a interface.half_open)" = 0 ]; }

# hold_start: drop b's ChangeCipherSpec and encrypted (epoch > 0) records
# on their way into a's toud, so a handshake b starts stays half-open on a
# with b's certificate already checked.
hold_start() {
	local out
	out=$(nsx a nft -f - 2>&1 <<EOF
table inet t22_hold {
	chain hold_in {
		type filter hook input priority -10; policy accept;
		ip saddr $B_UL udp dport 6080 @th,192,8 20 counter drop
		ip saddr $B_UL udp dport 6080 @th,216,16 != 0 counter drop
	}
}
EOF
) || bail_out "nft in a: $out"
}

# shellcheck disable=SC2317
hold_count() {
	nsx a nft list table inet t22_hold 2>/dev/null |
	    awk '{ for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }'
}

# shellcheck disable=SC2317
hold_caught() { [ "$(hold_count)" -ge 1 ]; }

hold_stop() {
	nsx a nft delete table inet t22_hold 2>/dev/null
	return 0
}

# half_open_b KEY: restart b with KEY and have it start a handshake with a
# that stays half-open (a holds b's certificate, b's Finished is held).
half_open_b() {
	hold_start
	restart_b "$1"
	nsx b ping -n -q -c 1 -W 1 10.77.0.1 >/dev/null 2>&1
	if wait_for 5 hold_caught; then
		sleep 0.3
		ok "$2 b's handshake is half-open on a (b's Finished held, a's half_open $(tq a interface.half_open))"
	else
		not_ok "$2 b's handshake is half-open on a" "no record of b's held in 5 s"
	fi
}

# download NODE URL OUT: a rate-limited curl in the background; DL_PID.
download() {
	rm -f "$3" "$3.log"
	bg_start "$1" "$3.log" curl -sS --noproxy '*' --max-time 90 --limit-rate 400k \
	    -w '%{size_download} %{time_total} %{num_connects}\n' -o "$3" "$2"
	DL_PID=$BG_PID
}

# download_ok PID OUT SRC DESC: curl exited 0, one connection, sha256 intact.
download_ok() {
	local size secs conns
	if proc_wait "$1" 90 && [ "$PROC_RC" = 0 ]; then
		read -r size secs conns <"$2.log"
		is "$(sha "$2")/$conns" "$(sha "$3")/1" "$4: one connection, $size bytes in $secs s, sha256 intact"
	else
		not_ok "$4" "curl: ${PROC_RC:-timeout}: $(cat "$2.log")"
	fi
}

# --- set-up ---------------------------------------------------------------------

netns_add a b c
tcp_small_buffers a b c
veth a ul0 b ul0 "$A_UL/24" "$B_UL/24"
veth a ul1 c ul0 "10.200.1.1/24" "10.200.1.3/24"
write_conf_a b b c
conf_b b
conf_interface c 6080 10.77.0.3/24
conf_peer c a 10.200.1.1:6080 "10.77.0.1"
# b's side of a, with certificates in full (-s 0), from the start.
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -p -n -s 0 -B 8192 --immediate-mode -U \
    -w "$E2E_DIR/ul.pcap" udp port 6080
CAP_PID=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
toud_start c || bail_out "toud on c did not start"
A_PID=${TOUD_PID[a]}
ping_check a 10.77.0.2 "ping a to b through the tunnel"
ping_check a 10.77.0.3 "ping a to c through the tunnel"
mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 2048
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"
http_serve c 10.77.0.3 8080 "$E2E_DIR/www"
SRC=$E2E_DIR/www/f

# --- (1) b's fingerprint changes during the downloads -------------------------------

sid_b0=$(tq a peers.b.session_id)
download a http://10.77.0.2:8080/f "$E2E_DIR/b1.out"
dl_b=$DL_PID
download a http://10.77.0.3:8080/f "$E2E_DIR/c1.out"
dl_c=$DL_PID
wait_for 30 both_receiving "$E2E_DIR/b1.out" "$E2E_DIR/c1.out" || diag "(1) no data yet"
check "(1) both downloads are running when the reload starts" both_alive "$dl_b" "$dl_c"
write_conf_a b2 b c
T1=$EPOCHREALTIME
reload_a "(1) b's fingerprint changed while b is up"
download_ok "$dl_c" "$E2E_DIR/c1.out" "$SRC" "(1) c's download through the reload"
if never_up 3 a b; then
	ok "(1) b, still on its old key, is not up on a in 3 s of trying (a says:$NEVER_UP_SEEN)"
else
	not_ok "(1) b, still on its old key, is not up on a" "a says:$NEVER_UP_SEEN"
fi
restart_b b2
if wait_for 10 b_up; then
	ok "(1) b with its new key is up again on both sides"
else
	not_ok "(1) b with its new key is up again on both sides" "a: $(state a b), b: $(state b a)"
fi
# b's new toud and a may both start a handshake: until the tie-break of
# the crossing sessions has run at both ends, each may show its own.
same_session() { [ "$(tq a peers.b.session_id)" = "$(tq b peers.a.session_id)" ]; }
wait_for 10 same_session || diag "(1) a and b still show different sessions"
sid_b1=$(tq a peers.b.session_id)
check "(1) on a new session ($sid_b0 -> $sid_b1)" test "$sid_b1" != "$sid_b0" -a "$sid_b1" != null
is "$(tq b peers.a.session_id)" "$sid_b1" "(1) b shows the same session"
# TCP retransmits into the new session: the download resumes.
download_ok "$dl_b" "$E2E_DIR/b1.out" "$SRC" "(1) b's download resumes over b's new session"

# --- (2) b's fingerprint changes during a half-open handshake ------------------------

half_open_b b2 "(2)"
write_conf_a b3 b c
T2=$EPOCHREALTIME
reload_a "(2) b's fingerprint changed while its handshake is half-open"
hold_stop
# b retransmits its last flight 1 s, then 2 s after the first.
if never_up 4 a b; then
	ok "(2) a does not complete the handshake b began with the key a no longer pins (a says:$NEVER_UP_SEEN)"
else
	not_ok "(2) a does not complete the handshake b began with the key a no longer pins" \
	    "a says:$NEVER_UP_SEEN"
fi
# Nor may b be left believing in a session a refused.
isnt_up b a "(2)"
restart_b b3
if wait_for 10 b_up; then
	ok "(2) b with the newer key is up on both sides"
else
	not_ok "(2) b with the newer key is up on both sides" "a: $(state a b), b: $(state b a)"
fi
sid_b2=$(tq a peers.b.session_id)
ping_check a 10.77.0.3 "(2) c is still reachable"

# --- (3) removing a peer during a download, and during a half-open handshake ---------

download a http://10.77.0.2:8080/f "$E2E_DIR/b3.out"
dl_b=$DL_PID
download a http://10.77.0.3:8080/f "$E2E_DIR/c3.out"
dl_c=$DL_PID
wait_for 30 both_receiving "$E2E_DIR/b3.out" "$E2E_DIR/c3.out" || diag "(3) no data yet"
check "(3) both downloads are running when the reload starts" both_alive "$dl_b" "$dl_c"
write_conf_a b3 b
reload_a "(3) c removed during its download"
is "$(tq a peers | python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))')" \
    b "(3) a's peers: b only"
download_ok "$dl_b" "$E2E_DIR/b3.out" "$SRC" "(3) b's download through c's removal"
proc_wait "$dl_c" 90 || proc_stop "$dl_c"

half_open_b b3 "(3)"
write_conf_a b3 c
T3=$EPOCHREALTIME
reload_a "(3) b removed while its handshake is half-open"
hold_stop
sleep 4                         # b retransmits its last flight 1 s, then 2 s after the first
isnt_up b a "(3) after b's removal,"
check "(3) toud on a lives after b's held records came in (pid $A_PID)" toud_alive a
if wait_for 5 no_half_open; then
	ok "(3) no half-open handshake left on a"
else
	not_ok "(3) no half-open handshake left on a" "interface.half_open: $(tq a interface.half_open)"
fi
T4=$EPOCHREALTIME
write_conf_a b3 b c
reload_a "(3) b and c added back"
restart_b b3
if wait_for 10 b_up; then
	ok "(3) b, added back, is up again"
else
	not_ok "(3) b, added back, is up again" "a: $(state a b), b: $(state b a)"
fi
ping_check a 10.77.0.3 "(3) c, added back, is reachable"
sid_b3=$(tq a peers.b.session_id)

# --- what the wire says about b's keys ------------------------------------------------

pcap_settle "$E2E_DIR/ul.pcap" || diag "the capture kept growing"
proc_stop "$CAP_PID" INT 5
w=$(python3 "$E2E_DIR/certs.py" "$E2E_DIR/ul.pcap" "$B_UL" "$A_UL") ||
    bail_out "cannot decode the capture"
diag "sessions on the wire (b's certificates, a's data from/to): $w"
# wire_check SID WANT_FP DESC: the session began with b's certificate WANT_FP.
wire_check() {
	local got
	got=$(python3 -c 'import json, sys; print(" ".join(json.loads(sys.argv[1]).get(sys.argv[2], {}).get("certs", [])) or "none")' "$w" "$1")
	is "$got" "$2" "$3"
}
wire_check "$sid_b1" "$(fp b2)" "(1) the session b came back on began with b's new certificate"
wire_check "$sid_b2" "$(fp b3)" "(2) the session after the half-open reload began with b's newest certificate"
wire_check "$sid_b3" "$(fp b3)" "(3) b, added back, authenticated with its current certificate"
# While a key was not pinned, no session that began with it carried a's
# data: b's first key from (1) on, its second from (2) on, its third
# between its removal in (3) and its return.
bad=$(python3 - "$w" "$T1:$EPOCHREALTIME:$(fp b)" "$T2:$EPOCHREALTIME:$(fp b2)" \
    "$T3:$T4:$(fp b3)" <<'EOF'
import json, sys
w = json.loads(sys.argv[1])
bad = []
for arg in sys.argv[2:]:
    t0, t1, fp = arg.split(":", 2)
    t0, t1 = float(t0) + 0.5, float(t1)
    for sid, v in w.items():
        d = v["a_data"]
        if fp in v["certs"] and d and d[0] < t1 and d[1] > t0:
            bad.append("%s (%s...) carried a's data %.1f s to %.1f s after the change" % (
                sid, fp[:15], d[0] - t0, d[1] - t0))
print("; ".join(bad))
EOF
)
is "$bad" "" "no session authenticated with a key that was not pinned carried a's data meanwhile"

check "toud on a is still the process that started (pid $A_PID)" test "${TOUD_PID[a]}" = "$A_PID"
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits with status 0 on SIGTERM"

done_testing
