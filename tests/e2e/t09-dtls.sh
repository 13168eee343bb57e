#!/bin/bash
# t09-dtls: what DTLS guarantees on the wire and against strangers.
#   (a) a capture of the server's underlay during an HTTP transfer of a file
#       full of a marker string: every UDP/6080 datagram is the outer GUE
#       header (03 3b 00 01, 60 00 00 00, a nonzero session ID) and exactly
#       one DTLS record; the marker appears nowhere in the capture; no TCP
#       on the underlay; the session carrying data is the one touctl shows.
#   (b) decryption with a key log: see t08-dissector.
#   (c) a third node M with a valid key the server does not know, pinning
#       the server's fingerprint: M passes no traffic, the server creates no
#       peer state and counts the failed handshakes; the client still works.
#   (d) 10 000 garbage datagrams and 10 000 forged ClientHellos from another
#       address: every answer is a HelloVerifyRequest no larger than the
#       ClientHello it answers; cookie-less ClientHellos cost no rate-limit
#       tokens (a forged source must not drain a real one's), so each gets
#       its stateless answer; each datagram is counted under its reason, and
#       the tunnel keeps working.
#   (e) the server's toud restarts: the client is back on a new session and
#       a new TCP connection works within the protocol's bound (its
#       handshake back-off and time-out, with a margin).
#   (f) the client sends from an address that is not its own (10.66.0.9 on
#       lo): its toud carries the packet (whole IP), the server drops it as
#       source_not_allowed and its stack never sees it.
#
#   c (client) --- r (router) --- s (server);  x (M, the stranger) on r
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping tcpdump

MARKER="TOUD-MARKER-7f3a"
FLOOD_SRC=10.201.2.3            # (d) sends from here (a second address of x)
M_UL=10.201.2.2                 # (c) M's underlay address
M_TUN=10.77.0.3                 # (c) M's tunnel address
SPOOF=10.66.0.9                 # (f) the client's foreign source

# --- helpers ----------------------------------------------------------------

cat >"$E2E_DIR/wire.py" <<'EOF'
import json, socket, struct, sys

def frames(path):
    """(ip packet bytes) of each frame of a pcap on Ethernet/cooked links."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    l2 = {1: 14, 113: 16, 276: 20}[struct.unpack(e + "I", data[20:24])[0]]
    off = 24
    while off + 16 <= len(data):
        incl, orig = struct.unpack(e + "II", data[off + 8:off + 16])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        yield pkt[l2:], incl == orig

def ip_parse(ip):
    """(src, dst, proto, l4 bytes, fragment?) or None."""
    if len(ip) >= 20 and ip[0] >> 4 == 4:
        ihl, tot = (ip[0] & 15) * 4, struct.unpack("!H", ip[2:4])[0]
        frag = bool(struct.unpack("!H", ip[6:8])[0] & 0x3fff)
        return socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), ip[9], ip[ihl:tot], frag
    if len(ip) >= 40 and ip[0] >> 4 == 6:
        tot = 40 + struct.unpack("!H", ip[4:6])[0]
        nh, off = ip[6], 40
        if nh == 0 and len(ip) >= 48:       # hop-by-hop options (MLD reports)
            nh, off = ip[40], 40 + (ip[41] + 1) * 8
        return (socket.inet_ntop(socket.AF_INET6, ip[8:24]),
                socket.inet_ntop(socket.AF_INET6, ip[24:40]), nh, ip[off:tot], nh == 44)
    return None

def udp6080(path, port=6080):
    """(src, dst, udp payload) of each UDP datagram to or from port."""
    for ip, whole in frames(path):
        p = ip_parse(ip)
        if not p or p[2] != 17 or len(p[3]) < 8:
            continue
        sport, dport, ulen = struct.unpack("!HHH", p[3][:6])
        if port in (sport, dport):
            yield p[0], p[1], p[3][8:ulen]

def outer(d):
    """The session ID and the DTLS record of a well-formed datagram, else
    (None, reason)."""
    if len(d) < 16 + 13:
        return None, "short"
    if d[:8] != b"\x03\x3b\x00\x01\x60\x00\x00\x00":
        return None, "gue header %s" % d[:8].hex()
    sid = d[8:16]
    if sid == bytes(8):
        return None, "zero session ID"
    rec = d[16:]
    if not 20 <= rec[0] <= 23:
        return None, "record type %d" % rec[0]
    if rec[1:3] not in (b"\xfe\xfd", b"\xfe\xff"):
        return None, "record version %s" % rec[1:3].hex()
    if struct.unpack("!H", rec[11:13])[0] != len(rec) - 13:
        return None, "record length %d, %d bytes follow" % (
            struct.unpack("!H", rec[11:13])[0], len(rec) - 13)
    return sid.hex(), rec

def underlay(path, marker):
    """(a): every frame of the server's underlay."""
    s = {"frames": 0, "truncated": 0, "tcp": 0, "fragments": 0, "udp6080": 0, "good": 0,
         "bad": [], "types": {}, "data_sids": [], "hs_only_sids": [], "udp_bytes": 0,
         "other": 0}
    sids = {}
    for ip, whole in frames(path):
        s["frames"] += 1
        s["truncated"] += not whole
        p = ip_parse(ip)
        if not p:
            continue            # ARP and the like
        if p[4]:
            s["fragments"] += 1
        if p[2] == 6:
            s["tcp"] += 1
            continue
        if p[2] != 17:
            if p[2] not in (1, 58):
                s["other"] += 1
                s["bad"].append("%s > %s: protocol %d" % (p[0], p[1], p[2]))
            continue
        sport, dport, ulen = struct.unpack("!HHH", p[3][:6])
        if 6080 not in (sport, dport):
            s["other"] += 1
            s["bad"].append("%s > %s: UDP %d > %d" % (p[0], p[1], sport, dport))
            continue
        d = p[3][8:ulen]
        s["udp6080"] += 1
        s["udp_bytes"] += len(d)
        sid, rec = outer(d)
        if sid is None:
            s["bad"].append("%s > %s: %s" % (p[0], p[1], rec))
            continue
        s["good"] += 1
        s["types"][rec[0]] = s["types"].get(rec[0], 0) + 1
        sids.setdefault(sid, set()).add(rec[0])
    s["data_sids"] = sorted(k for k, v in sids.items() if 23 in v)
    s["hs_only_sids"] = sorted(k for k, v in sids.items() if 23 not in v)
    s["marker_in_capture"] = open(path, "rb").read().count(marker.encode())
    s["bad"] = s["bad"][:5]
    return s

def replies(path, sizes_file, flood_src):
    """(d): the server's answers to the flood, matched by session ID to the
    ClientHello each answers (sizes_file: {sid hex: request bytes})."""
    sizes = json.load(open(sizes_file))
    s = {"replies": 0, "hvr": 0, "not_hvr": [], "unmatched": 0, "larger": 0,
         "max_reply": 0, "min_request": min(sizes.values()) if sizes else 0,
         "ratio_max": 0.0}
    for src, dst, d in udp6080(path):
        if dst != flood_src:
            continue
        s["replies"] += 1
        s["max_reply"] = max(s["max_reply"], len(d))
        sid, rec = outer(d)
        # content type 22, handshake type 3: HelloVerifyRequest
        if sid is None or rec[0] != 22 or len(rec) < 14 or rec[13] != 3:
            s["not_hvr"].append(d[:32].hex())
            continue
        s["hvr"] += 1
        if sid not in sizes:
            s["unmatched"] += 1
            continue
        s["larger"] += len(d) > sizes[sid]
        s["ratio_max"] = max(s["ratio_max"], len(d) / sizes[sid])
    s["not_hvr"] = s["not_hvr"][:5]
    return s

def hellos(path, src):
    """(c): the ClientHellos src sent: without and with a cookie, the
    handshakes (session IDs) and the retransmitted cookie-less ones."""
    s = {"no_cookie": 0, "cookie": 0, "sids": 0, "resent": 0}
    seen, sids = set(), set()
    for s_, d_, d in udp6080(path):
        sid, rec = outer(d)
        # epoch 0 (cleartext), handshake type 1
        if (s_ != src or sid is None or rec[0] != 22 or rec[3:5] != b"\0\0" or
                len(rec) < 13 + 12 + 35 or rec[13] != 1):
            continue
        body = rec[25:]
        n = body[34]
        cookie = body[35 + n]
        sids.add(sid)
        if cookie:
            s["cookie"] += 1
        else:
            s["no_cookie"] += 1
            s["resent"] += sid in seen
            seen.add(sid)
    s["sids"] = len(sids)
    return s

def record_lengths(path, src):
    """(f): lengths of the application-data records sent by src."""
    return sorted(len(rec) for s_, d_, d in udp6080(path) if s_ == src
                  for sid, rec in [outer(d)] if sid is not None and rec[0] == 23)

if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "underlay":
        print(json.dumps(underlay(sys.argv[2], sys.argv[3])))
    elif cmd == "replies":
        print(json.dumps(replies(sys.argv[2], sys.argv[3], sys.argv[4])))
    elif cmd == "hellos":
        print(json.dumps(hellos(sys.argv[2], sys.argv[3])))
    elif cmd == "records":
        print(json.dumps(record_lengths(sys.argv[2], sys.argv[3])))
EOF

# jflat ARRAY JSON: JSON flattened into the associative array ARRAY, one
# entry per leaf by dotted path; a list of objects is indexed by their
# "name" (peers.c.drops.replay), other lists and objects stay JSON.  (One
# python run instead of one per field.)
jflat() {
	local -n _jf=$1
	local k v
	_jf=()
	while IFS=$'\t' read -r k v; do
		_jf["$k"]=$v
	done < <(python3 -c '
import json, sys
def walk(path, v):
    if isinstance(v, dict):
        if path:
            print("%s\t%s" % (path, json.dumps(v, sort_keys=True)))
        for k, x in v.items():
            walk(path + "." + k if path else k, x)
    elif isinstance(v, list) and v and all(isinstance(x, dict) and "name" in x for x in v):
        for x in v:
            walk(path + "." + x["name"], x)
    else:
        print("%s\t%s" % (path, "null" if v is None else json.dumps(v) if isinstance(v, (list, bool))
                          else v))
walk("", json.loads(sys.argv[1]))' "$2")
}

# show_flat NODE ARRAY: NODE's touctl show --json, flattened.
show_flat() {
	local j
	j=$(show_json "$1") || bail_out "touctl show on $1"
	jflat "$2" "$j"
}

# ddelta BEFORE AFTER PATH: the increase of a counter of two flattened
# states (absent counts as 0).
ddelta() {
	local -n _b=$1 _a=$2
	local av=${_a[$3]:-0} bv=${_b[$3]:-0}
	echo $((av - bv))
}

# drops_of BEFORE AFTER PREFIX: "reason=increase ..." of the counters under
# PREFIX (e.g. peers.c.drops) that grew, sorted.
drops_of() {
	local -n _b=$1 _a=$2
	local k av bv grew=()
	for k in "${!_a[@]}"; do
		[[ $k == "$3".* ]] || continue
		av=${_a[$k]} bv=${_b[$k]:-0}
		[[ $av =~ ^[0-9]+$ ]] && [ "$av" -ne "$bv" ] && grew+=("${k#"$3".}=$((av - bv))")
	done
	[ ${#grew[@]} -gt 0 ] && printf '%s\n' "${grew[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
	return 0
}

# peer_view ARRAY PEER: the peer names and what a stranger must not touch of
# PEER's state.
peer_view() {
	local -n _p=$1
	local k names=
	for k in "${!_p[@]}"; do
		[[ $k =~ ^peers\.([^.]+)\.name$ ]] && names+="${BASH_REMATCH[1]} "
	done
	echo "peers: $(tr ' ' '\n' <<<"$names" | sort | tr '\n' ' ')| $2: ${_p[peers.$2.state]}" \
	    "${_p[peers.$2.endpoint]} ${_p[peers.$2.session_id]} ${_p[peers.$2.last_handshake]}"
}

# snmp NODE TABLE FIELD: a counter of /proc/net/snmp in NODE's namespace.
snmp() {
	# shellcheck disable=SC2016
	nsx "$1" awk -v t="$2:" -v f="$3" '
	    $1 == t && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
	    $1 == t && h { print $col[f]; exit }' /proc/net/snmp
}

# --- (a) the wire -------------------------------------------------------------

rt_topo
rt_topo_x
addr_add x ul0 "$FLOOD_SRC/24"
# (f)'s foreign address exists before toud starts (adding it later makes the
# client's toud tell the server about a change of its addresses).
nsx c ip addr add "$SPOOF/32" dev lo || bail_out "cannot add $SPOOF to c's lo"
rt_conf 0
toud_start s || bail_out "toud on s did not start"

mkdir "$E2E_DIR/www"
python3 - "$E2E_DIR/www/marker" "$MARKER" <<'EOF'
import sys
line = (sys.argv[2] + "\n").encode()
with open(sys.argv[1], "wb") as f:
    f.write(line * (2 * 1024 * 1024 // len(line)))
EOF
grep -qF "$MARKER" "$E2E_DIR/www/marker" || bail_out "the marker file has no marker"
http_serve s "$RT_S_TUN" 8080 "$E2E_DIR/www"

# The capture starts before the client does, so it holds the handshake too.
capture_start s ul0 ul
toud_start c || bail_out "toud on c did not start"
rt_tunnel_up 10 || bail_out "no ping through the tunnel from c to s in 10 s"
fetch_check c "http://$RT_S_TUN:8080/marker" "$E2E_DIR/www/marker" \
    "(a) 2 MB of \"$MARKER\" lines over HTTP from s to c"
capture_stop ul
sid=$(tq s peers.c.session_id)
w=$(python3 "$E2E_DIR/wire.py" underlay "$CAP" "$MARKER") || bail_out "cannot decode $CAP"
declare -A W
jflat W "$w"
diag "(a) capture: $w (tcpdump dropped: $CAP_DROPPED)"

cmp_ok "${W[udp_bytes]}" -gt $((2 * 1024 * 1024)) \
    "(a) the capture holds the transfer: ${W[udp6080]} UDP/6080 datagrams, ${W[udp_bytes]} bytes"
is "${W[truncated]}" 0 "(a) no frame was cut short by the capture"
is "${W[good]}" "${W[udp6080]}" \
    "(a) every UDP/6080 datagram is outer GUE (03 3b 00 01 60 00 00 00, nonzero session ID) + one whole DTLS record" ||
    diag "${W[bad]}"
cmp_ok "${W[types.23]:-0}" -gt 1000 "(a) application-data records carry the transfer (${W[types.23]:-0})"
cmp_ok "${W[types.22]:-0}" -ge 4 "(a) the handshake's records are framed the same way (${W[types.22]:-0})"
is "${W[marker_in_capture]}" 0 "(a) \"$MARKER\" appears nowhere in the capture"
is "${W[tcp]}" 0 "(a) no TCP on the underlay"
is "${W[other]}" 0 "(a) no other UDP or IP protocol on the underlay" || diag "${W[bad]}"
is "${W[fragments]}" 0 "(a) no IP fragments on the underlay"
is "${W[data_sids]}" "[\"$sid\"]" "(a) the one session carrying data is the one touctl shows ($sid)"
is "$(tq c peers.s.session_id)" "$sid" "(a) the client shows the same session ID"
diag "(a) session IDs with handshake records only (cookie exchange): ${W[hs_only_sids]}"
diag "(b) decryption with a key log is t08-dissector's"

# --- (c) a stranger with a valid key ---------------------------------------------

conf_interface x "$RT_PORT" "$M_TUN/24"
rt_conf_peer x s "$RT_S_UL:$RT_PORT" "$RT_S_TUN" 0
declare -A S0 S1 X
show_flat s S0
capture_start x ul0 m udp port "$RT_PORT"
toud_start x || bail_out "toud on x (M) did not start"
out=$(nsx x ping -n -c 4 -i 0.5 -W 1 "$RT_S_TUN" 2>&1)
case $out in
*" 0 received"*) ok "(c) M's pings to the server's tunnel address go unanswered";;
*) not_ok "(c) M's pings to the server's tunnel address go unanswered" "$out";;
esac
if out=$(nsx x curl -sS --noproxy '*' --max-time 4 -o /dev/null "http://$RT_S_TUN:8080/marker" 2>&1); then
	not_ok "(c) M's curl to the server fails" "curl succeeded"
else
	ok "(c) M's curl to the server fails ($out)"
fi
# M retries with a growing back-off (1 s, 2 s, 4 s ...).  Its counters, the
# server's and the capture must cover the same attempts.  Between two
# attempts M's datagrams are stopped in its namespace (before the capture
# could see them, so a later attempt leaves no trace on the wire or on the
# server) and M is read again: still dead with the same count means that
# no attempt began in between.  Then the server's counters settle, and only
# then does the capture stop.
# shellcheck disable=SC2317
m_dead() { [ "$(tq x peers.s.state)" = dead ]; }
# m_view: M_V is M's peer s as "state/handshake_failed", M_J the whole state.
m_view() {
	M_V=touctl-failed
	M_J=$(show_json x) || return 1
	M_V="$(json_get "$M_J" peers.s.state)/$(json_get "$M_J" peers.s.drops.handshake_failed)"
}
m_block() {
	nsx x nft -f - <<<"table inet t09_block {
		chain block_out {
			type filter hook output priority 0; policy accept;
			udp dport $RT_PORT drop
		}
	}" || bail_out "nft in x"
}
m_unblock() {
	nsx x nft delete table inet t09_block 2>/dev/null
	return 0
}
quiet=
for try in 1 2 3 4 5; do
	wait_for 30 m_dead || break
	m_view
	v1=$M_V
	m_block
	m_view
	v2=$M_V
	if [ "$v1" = "$v2" ] && [[ $v1 == dead/* ]]; then
		quiet=$try
		break
	fi
	m_unblock
done
[ -n "$quiet" ] || bail_out "(c) M was never read twice between two attempts (${v1:-} then ${v2:-})"
diag "(c) M quiet at try $quiet: $v2"
jflat X "$M_J"
j=$(show_settled s) || bail_out "(c) the server's counters did not settle"
jflat S1 "$j"
capture_stop m
toud_stop x
m_unblock
h=$(python3 "$E2E_DIR/wire.py" hellos "$CAP" "$M_UL") || bail_out "cannot decode $CAP"
declare -A H
jflat H "$h"
m_failed=${X[peers.s.drops.handshake_failed]:-0}
diag "(c) M's ClientHellos on the wire: $h"
diag "(c) the server's interface drops meanwhile: $(drops_of S0 S1 interface.drops)"
diag "(c) M's view of the server: ${X[peers.s]}"
cmp_ok "$m_failed" -ge 2 "(c) M tried and failed to handshake, more than once ($m_failed)"
is "${H[sids]}/${H[cookie]}" "$m_failed/$m_failed" \
    "(c) each of M's handshakes got as far as the second ClientHello (with the server's cookie)"
is "$(ddelta S0 S1 interface.drops.handshake_failed)" "$m_failed" \
    "(c) the server counted each of M's handshakes once as handshake_failed (interface: no peer)"
is "$(ddelta S0 S1 interface.drops.cookie_requested)" "${H[no_cookie]}" \
    "(c) the server answered each cookie-less ClientHello of M with a cookie request"
# unknown_session: the rest of M's flight after the server gave up;
# not_unicast, no_peer: the kernel's chatter on the server's TUN.
is "$(drops_of S0 S1 interface.drops | tr ' ' '\n' |
    grep -Ev '^(cookie_requested|handshake_failed|unknown_session|not_unicast|no_peer)=')" "" \
    "(c) no other drop on the server"
is "${H[resent]}" 0 "(c) M sends each first ClientHello once (no immediate retransmission on retry)"
is "$(peer_view S1 c)" "$(peer_view S0 c)" "(c) the server's peers and its session with the client are untouched"
is "$(drops_of S0 S1 peers.c.drops)" "" "(c) nothing counted against the client"
is "${X[peers.s.state]}/${X[peers.s.session_id]}/${X[peers.s.rx_packets]}" "dead/null/0" \
    "(c) M never got a session: its peer s is dead, no session ID, nothing received"
check "(c) the client still reaches the server" ping_all c "$RT_S_TUN" 3
fetch_check c "http://$RT_S_TUN:8080/marker" "$E2E_DIR/www/marker" "(c) the client's HTTP transfer after M's attempts"

# --- (d) a flood of garbage and forged ClientHellos -------------------------------

make_file "$E2E_DIR/www/f" 1024
declare -A S0 S1 F R
show_flat s S0
lost0=$(snmp s Udp RcvbufErrors)
rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/${TOUD_PID[s]}/status")
capture_start s ul0 flood udp and src port "$RT_PORT" and dst host "$FLOOD_SRC"
# Meanwhile the real tunnel carries a ping and a download.
bg_start c "$E2E_DIR/ping-flood.log" ping -n -q -c 25 -i 0.2 -W 2 "$RT_S_TUN"
ping_pid=$BG_PID
rt_fetch_start c "http://$RT_S_TUN:8080/f" "$E2E_DIR/f.during" --limit-rate 400k
# The sender creates SENT when it has sent everything, then takes the
# answers until it has as many as the server says it sent (the number in
# WANT, written once the server's counters have settled).
cat >"$E2E_DIR/flood.py" <<'EOF'
import json, os, random, select, socket, struct, sys, time

src, dst, port, sizes_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sent_file, want_file = sys.argv[5], sys.argv[6]
rnd = random.Random(9)
GUE = b"\x03\x3b\x00\x01\x60\x00\x00\x00"

def sid():
    while True:
        v = rnd.getrandbits(64)
        if v:
            return struct.pack("!Q", v)

def ext(t, body):
    return struct.pack("!HH", t, len(body)) + body

def client_hello(pad):
    """A DTLS 1.2 ClientHello without a cookie, as a client's first flight."""
    suites = [0xc02b, 0xc02c, 0xcca9, 0xc0ad, 0x00ff]
    exts = (ext(0x000a, struct.pack("!H", 6) + struct.pack("!HHH", 0x0017, 0x001d, 0x0018)) +
            ext(0x000b, b"\x01\x00") +
            ext(0x000d, struct.pack("!H", 8) + struct.pack("!HHHH", 0x0403, 0x0503, 0x0804, 0x0805)) +
            ext(0x0016, b"") + ext(0x0017, b"") + ext(0x0015, bytes(pad)))
    body = (b"\xfe\xfd" + rnd.randbytes(32) + b"\x00" + b"\x00" +
            struct.pack("!H", 2 * len(suites)) + struct.pack("!%dH" % len(suites), *suites) +
            b"\x01\x00" + struct.pack("!H", len(exts)) + exts)
    n = len(body)
    hs = struct.pack("!B", 1) + n.to_bytes(3, "big") + b"\x00\x00" + bytes(3) + n.to_bytes(3, "big") + body
    return b"\x16\xfe\xff" + bytes(8) + struct.pack("!H", len(hs)) + hs

N = 10000
hellos, sizes = [], {}
for i in range(N):
    s_ = sid()
    d = GUE + s_ + client_hello(rnd.randint(40, 300))
    hellos.append(d)
    sizes[s_.hex()] = len(d)
json.dump(sizes, open(sizes_file, "w"))
garbage, want = [], {"gue": 0, "bad_dtls_header": 0, "unknown_session": 0}
for i in range(N):
    k = i % 5
    if k < 2:       # random bytes: fails the GUE header
        garbage.append(rnd.randbytes(rnd.randint(1, 1400)))
        want["gue"] += 1
    elif k < 4:     # a good GUE header, then no valid DTLS record header
        body = rnd.randbytes(rnd.randint(0, 600))
        n = struct.pack("!H", len(body))
        bad = rnd.choice([
            bytes([rnd.choice([0, 19, 24, 99, 255])]) + b"\xfe\xfd" + bytes(8) + n,  # type
            b"\x17\xfe\xfc" + bytes(8) + n,                    # version
            b"\x17\xfe\xff" + bytes(8) + n,                    # 1.0 outside a ClientHello
            b"\x17\xfe\xfd" + bytes(8) + struct.pack("!H", len(body) + 1),  # length
            b"\x16\xfe\xfd" + bytes(rnd.randint(0, 9)),        # truncated
        ])
        if len(bad) < 13:
            body = b""
        garbage.append(GUE + sid() + bad + body)
        want["bad_dtls_header"] += 1
    else:           # a well-formed record of a session that does not exist
        body = rnd.randbytes(rnd.randint(24, 600))
        garbage.append(GUE + sid() + bytes([rnd.choice([21, 23])]) + b"\xfe\xfd" +
                       rnd.randbytes(8) + struct.pack("!H", len(body)) + body)
        want["unknown_session"] += 1

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
s.setblocking(False)
# Room for every answer while it is still sending (root may force it).
try:
    s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 16 << 20)
except OSError:
    pass
got = {"replies": 0, "reply_bytes_max": 0}
def drain():
    while True:
        try:
            d = s.recv(65535)
        except BlockingIOError:
            return
        got["replies"] += 1
        got["reply_bytes_max"] = max(got["reply_bytes_max"], len(d))

t0 = time.monotonic()
for i in range(N):
    for d in (garbage[i], hellos[i]):
        while True:
            try:
                s.sendto(d, (dst, port))
                break
            except BlockingIOError:
                time.sleep(0.001)
    if i % 25 == 24:
        drain()
        time.sleep(0.005)
elapsed = time.monotonic() - t0
open(sent_file, "w").close()
expect, backstop = N, None
while got["replies"] < expect:
    select.select([s], [], [], 0.1)
    drain()
    if backstop is None and os.path.exists(want_file):
        expect, backstop = int(open(want_file).read()), time.monotonic() + 120
    if backstop is not None and time.monotonic() > backstop:
        break
print(json.dumps({"hellos": N, "garbage": N, "want": want, "seconds": round(elapsed, 2),
                  "hello_bytes_min": min(sizes.values()), "hello_bytes_max": max(sizes.values()),
                  **got}))
EOF
rm -f "$E2E_DIR/flood-sent" "$E2E_DIR/flood-want"
lostx0=$(snmp x Udp RcvbufErrors)
bg_start x "$E2E_DIR/flood.json" python3 "$E2E_DIR/flood.py" "$FLOOD_SRC" "$RT_S_UL" "$RT_PORT" \
    "$E2E_DIR/hello-sizes.json" "$E2E_DIR/flood-sent" "$E2E_DIR/flood-want"
flood_pid=$BG_PID
wait_for 600 test -e "$E2E_DIR/flood-sent" ||
    bail_out "the flood from x did not finish sending: $(cat "$E2E_DIR/flood.json")"
proc_wait "$ping_pid" 20 || proc_stop "$ping_pid"
ping_rc=$PROC_RC
rt_fetch_finish "$E2E_DIR/f.during" "$E2E_DIR/www/f" 40 "(d) a download during the flood completes intact"
# The server's counters and the capture of its replies cover the same
# datagrams once the counters have stopped moving.
j=$(show_settled s) || bail_out "(d) the server's counters did not settle"
jflat S1 "$j"
echo "$(ddelta S0 S1 interface.drops.cookie_requested)" >"$E2E_DIR/flood-want.tmp"
mv "$E2E_DIR/flood-want.tmp" "$E2E_DIR/flood-want"
proc_wait "$flood_pid" 180 || bail_out "the flood sender did not finish"
res=$(tail -n 1 "$E2E_DIR/flood.json")
[ "$PROC_RC" = 0 ] || bail_out "the flood from x failed: $(cat "$E2E_DIR/flood.json")"
capture_stop flood
lost=$(($(snmp s Udp RcvbufErrors) - lost0))
rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/${TOUD_PID[s]}/status")
r=$(python3 "$E2E_DIR/wire.py" replies "$CAP" "$E2E_DIR/hello-sizes.json" "$FLOOD_SRC") ||
    bail_out "cannot decode $CAP"
jflat F "$res"
jflat R "$r"
diag "(d) sender: $res"
diag "(d) replies captured: $r (tcpdump dropped: $CAP_DROPPED)"
diag "(d) the server's interface drops: $(drops_of S0 S1 interface.drops)"
diag "(d) datagrams the server's kernel dropped (RcvbufErrors): $lost; toud's VmRSS: $rss0 kB before, $rss1 kB after"

# Each datagram is counted once under its reason; only those the kernel
# dropped before toud saw them (RcvbufErrors, normally 0) may be missing.
# counted GOT WANT DESC: WANT - lost <= GOT <= WANT.
counted() {
	if [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -le "$2" ] && [ "$1" -ge $(($2 - lost)) ]; then
		ok "$3 ($1 of $2)"
	else
		not_ok "$3" "counted $1, sent $2, lost in the kernel $lost"
	fi
}
gue_sum=0
for k in "${!S1[@]}"; do
	[[ $k == interface.drops.gue_* ]] && gue_sum=$((gue_sum + $(ddelta S0 S1 "$k")))
done
counted "$gue_sum" "${F[want.gue]}" "(d) random datagrams counted under gue_*"
counted "$(ddelta S0 S1 interface.drops.bad_dtls_header)" "${F[want.bad_dtls_header]}" \
    "(d) a good GUE header without a DTLS record header: bad_dtls_header"
counted "$(ddelta S0 S1 interface.drops.unknown_session)" "${F[want.unknown_session]}" \
    "(d) well-formed records of unknown sessions: unknown_session"
cookies=$(ddelta S0 S1 interface.drops.cookie_requested)
limited=$(ddelta S0 S1 interface.drops.handshake_rate_limited)
counted "$((cookies + limited))" "${F[hellos]}" \
    "(d) every forged ClientHello was answered with a cookie request ($cookies) or rate-limited ($limited)"
flood=$((gue_sum + $(ddelta S0 S1 interface.drops.bad_dtls_header) + $(ddelta S0 S1 interface.drops.unknown_session) + cookies + limited))
counted "$flood" $((F[hellos] + F[garbage])) "(d) all of the flood is counted, once"
is "${R[replies]}" "$cookies" "(d) the server sent exactly one reply per cookie request (captured ${R[replies]})"
# Those x's kernel dropped before the sender read them (RcvbufErrors) aside.
lostx=$(($(snmp x Udp RcvbufErrors) - lostx0))
if [ "${F[replies]}" -le "$cookies" ] && [ "${F[replies]}" -ge $((cookies - lostx)) ]; then
	ok "(d) the sender received them all (${F[replies]} of $cookies; $lostx dropped in its kernel)"
else
	not_ok "(d) the sender received them all" "received ${F[replies]} of $cookies; $lostx dropped in its kernel"
fi
is "${R[hvr]}" "${R[replies]}" "(d) every reply is a HelloVerifyRequest in the outer framing" ||
    diag "${R[not_hvr]}"
is "${R[unmatched]}" 0 "(d) every reply carries the session ID of the ClientHello it answers"
is "${R[larger]}" 0 \
    "(d) no reply is larger than its request (largest reply ${R[max_reply]} bytes, smallest ClientHello ${F[hello_bytes_min]})"
cmp_ok "${R[max_reply]}" -le 62 "(d) a HelloVerifyRequest is at most 16 + 46 bytes (${R[max_reply]})"
cmp_ok "${F[hello_bytes_min]}" -ge 150 "(d) the forged ClientHellos are at least 150 bytes"
# The rate limit is charged only once a cookie proved the source.
counted "$cookies" "${F[hellos]}" "(d) every cookie-less ClientHello got its stateless answer"
is "$limited" 0 "(d) none was charged to the handshake rate limit"
is "$(peer_view S1 c)" "$(peer_view S0 c)" "(d) the server's peers and its session with the client are untouched"
is "$(drops_of S0 S1 peers.c.drops)" "" "(d) nothing counted against the client"
if [ -n "${S1[interface.sessions]:-}" ]; then
	is "${S1[interface.sessions]}" "${S0[interface.sessions]}" \
	    "(d) no session state created (interface.sessions ${S1[interface.sessions]})"
else
	ok "(d) no session state created # SKIP touctl show --json has no interface.sessions"
fi
if [ -n "${S1[interface.half_open]:-}" ]; then
	is "${S1[interface.half_open]}" 0 "(d) no half-open handshake left (interface.half_open)"
else
	ok "(d) no half-open handshake left # SKIP touctl show --json has no interface.half_open"
fi
is "$ping_rc" 0 "(d) 25 pings through the tunnel during the flood: $(grep -o '[0-9]* received' "$E2E_DIR/ping-flood.log")"
check "(d) toud on s survived" toud_alive s
ping_check c "$RT_S_TUN" "(d) ping after the flood"
fetch_check c "http://$RT_S_TUN:8080/f" "$E2E_DIR/www/f" "(d) HTTP after the flood"

# --- (e) the server restarts ------------------------------------------------------

sid0=$(tq c peers.s.session_id)
t0=$(e2e_now)
toud_stop s
is "${TOUD_RC[s]}" 0 "(e) toud on s exits with status 0"
toud_start s || bail_out "toud on s did not restart"
t1=$(e2e_now)
out=$E2E_DIR/restart.out
# The client retries its handshake after 1 s, then backs off to 60 s (plus
# up to a quarter), each try abandoned after 10 s: however long s was away,
# the next try after its return comes within 75 s, and completes within 10 s.
RESTART_MAX_MS=90000
deadline=$(e2e_deadline $((RESTART_MAX_MS / 1000 + 30)))
tries=0
while :; do
	tries=$((tries + 1))
	rm -f "$out"
	nsx c curl -sS --noproxy '*' --connect-timeout 2 --max-time 60 -o "$out" \
	    "http://$RT_S_TUN:8080/f" >/dev/null 2>&1 && break
	e2e_before "$deadline" || break
	sleep 0.1
done
t2=$(e2e_now)
diag "(e) toud on s was away $((t1 - t0)) ms; a new connection worked $((t2 - t1)) ms after the restart ($tries tries)"
if [ -f "$out" ] && [ "$(sha "$out")" = "$(sha "$E2E_DIR/www/f")" ]; then
	ok "(e) a new HTTP connection after the restart, sha256 intact"
else
	not_ok "(e) a new HTTP connection after the restart, sha256 intact"
fi
cmp_ok "$((t2 - t1))" -le $RESTART_MAX_MS \
    "(e) it worked $((t2 - t1)) ms after the restart (at most $RESTART_MAX_MS: back-off, time-out, 5 s margin)"
sid_c=$(tq c peers.s.session_id)
sid_s=$(tq s peers.c.session_id)
if [ "$sid_c" != "$sid0" ] && [ "$sid_c" != null ] && [ "$sid_c" = "$sid_s" ]; then
	ok "(e) both ends are on a new session ($sid0 -> $sid_c)"
else
	not_ok "(e) both ends are on a new session" "before $sid0; client $sid_c, server $sid_s"
fi

# --- (f) a foreign source through an authenticated session -------------------------

# shellcheck disable=SC2034
declare -A C0 C1 S0 S1
check "(f) the tunnel works before" ping_all c "$RT_S_TUN" 2
capture_start c ul0 spoof udp port "$RT_PORT"
check "(f) three pings from the client's own address" ping_all c "$RT_S_TUN" 3
j=$(show_settled c) || bail_out "(f) the client's counters did not settle"
jflat C0 "$j"
j=$(show_settled s) || bail_out "(f) the server's counters did not settle"
jflat S0 "$j"
echos0=$(snmp s Icmp InEchos)
reps0=$(snmp s Icmp OutEchoReps)
out=$(nsx c ping -n -c 5 -i 0.2 -W 1 -I "$SPOOF" "$RT_S_TUN" 2>&1)
j=$(show_settled c) || bail_out "(f) the client's counters did not settle"
jflat C1 "$j"
j=$(show_settled s) || bail_out "(f) the server's counters did not settle"
jflat S1 "$j"
capture_stop spoof
case $out in
*" 0 received"*) ok "(f) pings from $SPOOF go unanswered";;
*) not_ok "(f) pings from $SPOOF go unanswered" "$out";;
esac
# A keepalive (answering the last reply, 5 s later) may fall in the window.
is "$(($(ddelta C0 C1 peers.s.tx_packets) - $(ddelta C0 C1 peers.s.events.keepalive_sent)))" 5 \
    "(f) the client's toud sent all 5 to the server (keepalives aside)"
is "$(drops_of C0 C1 peers.s.drops)" "" "(f) the client's toud dropped none of them"
is "$(drops_of S0 S1 peers.c.drops)" "source_not_allowed=5" \
    "(f) the server dropped all 5 as source_not_allowed, and nothing else"
is "$(($(ddelta S0 S1 peers.c.rx_packets) - $(ddelta S0 S1 peers.c.events.keepalive_received)))" 0 \
    "(f) the server delivered none of them (rx_packets, keepalives aside)"
is "$(($(snmp s Icmp InEchos) - echos0))/$(($(snmp s Icmp OutEchoReps) - reps0))" 0/0 \
    "(f) the server's stack saw no echo request and sent no reply"
# Whole IP (20-byte header) instead of compact (4-byte word): 16 bytes more.
lens=$(python3 "$E2E_DIR/wire.py" records "$CAP" "$RT_C_UL") || bail_out "cannot decode $CAP"
diag "(f) application-data record lengths from the client: $lens"
# Keepalive records (the 4-byte control word alone: the shortest
# possible, 41 bytes with AES-GCM) are not echo requests.
read -r own spoofed total < <(python3 -c '
import json, sys
l = [n for n in json.loads(sys.argv[1]) if n != 13 + 8 + 4 + 16] or [0]
print(l.count(min(l)), l.count(min(l) + 16), len(l))' "$lens")
is "$own/$spoofed/$total" "3/5/8" \
    "(f) on the wire: 3 compact echo requests, 5 whole-IP ones 16 bytes longer (20-byte IPv4 header, not the 4-byte word)"
check "(f) the tunnel still works" ping_all c "$RT_S_TUN" 2
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
