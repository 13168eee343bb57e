# lib-router.sh - a client and a server with a router between them, for the
# end-to-end tests of roaming, NAT and a bad path (sourced after lib.sh).
#
#   c (client) ul0 --- rc0 r (router) rs0 --- ul0 s (server)
#   10.201.0.2/24  10.201.0.1   10.201.1.1  10.201.1.2/24
#
# r forwards; c and s route everything via r.  Every link carries datagrams
# as a NIC without UDP segmentation offload would (link_segments in lib.sh):
# the router's faults, counters and captures see each datagram, as on a
# real path, not the 64 KB GSO buffers a veth passes on whole.  Optionally x (a third host,
# 10.201.2.2/24 on ul0, r's rx0 is 10.201.2.1) hangs off the router.  Both
# touds use DTLS; the client's peer "s" has endpoint 10.201.1.2:6080, the
# server's peer "c" has none: it learns the client's address (road warrior).
# Tunnel addresses: client 10.77.0.1, server 10.77.0.2.
#
# The router's faults are nftables rules (loss, duplicates, NAT; a test adds
# its own, e.g. corruption), each in its own table so they combine, and an NFQUEUE program (nfq-delay.c,
# built into the test's directory) for delay and reordering.
#
# Results come back in globals (RT_EP, FETCH_TIME, NFQ_STATS ...), as in lib.sh.
# The full tunnel's topology (a host routing everything through its peer,
# ft_*) is here as well.
# shellcheck disable=SC2034

# A test that uses only the full tunnel's topology (ft_topo) sets
# RT_ENCRYPTION to keep lib.sh's choice.
E2E_ENCRYPTION=${RT_ENCRYPTION:-dtls}
RT_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RT_C_UL=10.201.0.2
RT_S_UL=10.201.1.2
RT_C_TUN=10.77.0.1
RT_S_TUN=10.77.0.2
RT_PORT=6080

# --- topology ---------------------------------------------------------------

rt_sysctl() {
	local n=$1
	shift
	nsx "$n" sysctl -qw "$@" >/dev/null || bail_out "sysctl $* in $n"
}

rt_topo() {
	netns_add c r s
	veth c ul0 r rc0 "$RT_C_UL/24" "10.201.0.1/24"
	veth s ul0 r rs0 "$RT_S_UL/24" "10.201.1.1/24"
	link_segments c ul0
	link_segments s ul0
	link_segments r rc0 rs0
	rt_sysctl r net.ipv4.ip_forward=1
	for n in c r s; do
		rt_sysctl "$n" net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
	done
	ip -n "$(ns c)" route add default via 10.201.0.1 || bail_out "default route in c"
	ip -n "$(ns s)" route add default via 10.201.1.1 || bail_out "default route in s"
}

rt_topo_x() {
	netns_add x
	veth x ul0 r rx0 "10.201.2.2/24" "10.201.2.1/24"
	link_segments x ul0
	link_segments r rx0
	rt_sysctl x net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
	ip -n "$(ns x)" route add default via 10.201.2.1 || bail_out "default route in x"
}

# --- the full tunnel's topology (t35, t42) ---------------------------------
#
#   a ul0 10.200.0.1 --- ul0 b (10.202.0.1) inet0 10.203.0.1 --- eth0 c 10.203.0.2
#         fd20::1              fd20::2            fd23::1              fd23::2
#
# a has default routes over its link to b, like any host; b's endpoint
# FT_EP (on b's loopback) is reached only through them; c, "the internet",
# hangs off b, which forwards.  a's reverse-path filter is loose, as Debian
# sets it (tou.conf(5) CAVEATS).
FT_A4=10.200.0.1 FT_B4=10.200.0.2 FT_A6=fd20::1 FT_B6=fd20::2
FT_EP=10.202.0.1
FT_C4=10.203.0.2 FT_C6=fd23::2

ft_topo() {
	netns_add a b c
	veth a ul0 b ul0 "$FT_A4/24 $FT_A6/64" "$FT_B4/24 $FT_B6/64"
	veth b inet0 c eth0 "10.203.0.1/24 fd23::1/64" "$FT_C4/24 $FT_C6/64"
	addr_add b lo "$FT_EP/32"
	link_segments a ul0
	link_segments b ul0
	ip -n "$(ns a)" route add default via "$FT_B4" || bail_out "default route in a"
	ip -n "$(ns a)" -6 route add default via "$FT_B6" || bail_out "IPv6 default route in a"
	ip -n "$(ns c)" route add default via 10.203.0.1 || bail_out "default route in c"
	ip -n "$(ns c)" -6 route add default via fd23::1 || bail_out "IPv6 default route in c"
	rt_sysctl b net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	rt_sysctl a net.ipv4.conf.all.rp_filter=2 net.ipv4.conf.default.rp_filter=2
	wait_for 10 nsx a ping -n -q -c 1 -W 1 "$FT_EP" || bail_out "a cannot reach b's endpoint"
	wait_for 10 nsx a ping -n -q -c 1 -W 1 "$FT_C6" || bail_out "a cannot reach c over IPv6"
}

# ft_conf: a's peer b takes everything (allowed-ips 0.0.0.0/0 and ::/0,
# table = auto); b's peer a.
ft_conf() {
	conf_interface a 6080 10.77.0.1/24 fd77::1/64
	echo "table = auto" >>"$(conf_file a)"
	conf_peer a b "$FT_EP:6080" "10.77.0.2, fd77::2" "0.0.0.0/0, ::/0"
	conf_interface b 6080 10.77.0.2/24 fd77::2/64
	conf_peer b a "$FT_A4:6080" "10.77.0.1, fd77::1"
}

# ft_routing: everything of a's routing, to compare before and after toud.
ft_routing() {
	nsx a ip -4 rule show
	nsx a ip -6 rule show
	nsx a ip -4 route show table all
	nsx a ip -6 route show table all
}

# --- toud -------------------------------------------------------------------

# rt_conf_peer NODE PEER ENDPOINT ADDRS KEEPALIVE: a [peer] section.
rt_conf_peer() {
	local node=$1 peer=$2 ep=$3 addrs=$4 ka=$5
	keys_for "$peer"
	{
		echo
		echo "[peer $peer]"
		[ -n "$ep" ] && echo "endpoint = $ep"
		echo "address = $addrs"
		echo "keepalive = $ka"
		echo "fingerprint = $(cat "$E2E_DIR/keys/$peer/fingerprint")"
	} >>"$(conf_file "$node")"
}

# rt_conf [CLIENT_KEEPALIVE [TCP_PORT]]: the client's and the server's
# config; with TCP_PORT, the server accepts the TCP transport there
# (listen-tcp) and the client's peer s has it as its endpoint-tcp.
rt_conf() {
	conf_interface c "$RT_PORT" "$RT_C_TUN/24"
	rt_conf_peer c s "$RT_S_UL:$RT_PORT" "$RT_S_TUN" "${1:-0}"
	[ -n "${2:-}" ] && echo "endpoint-tcp = $RT_S_UL:$2" >>"$(conf_file c)"
	conf_interface s "$RT_PORT" "$RT_S_TUN/24"
	[ -n "${2:-}" ] && echo "listen-tcp = $2" >>"$(conf_file s)"
	rt_conf_peer s c "" "$RT_C_TUN" 0
}

# rt_tunnel_up [SECONDS]: the client reaches the server through the tunnel.
rt_tunnel_up() {
	wait_for "${1:-10}" nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN"
}

# rt_start [CLIENT_KEEPALIVE]: configs, both touds, a working tunnel.
rt_start() {
	rt_conf "${1:-0}"
	toud_start s || bail_out "toud on s did not start"
	toud_start c || bail_out "toud on c did not start"
	rt_tunnel_up 10 || bail_out "no ping through the tunnel from c to s in 10 s"
}

# rt_wait_endpoint NODE PEER WANT SECONDS: poll NODE's view of PEER's
# endpoint every 20 ms until it is WANT.  RT_EP_MS is the time it took,
# RT_EP the last value seen.
rt_wait_endpoint() {
	local out
	out=$(python3 - "$TOUCTL" "$(sock_of "$1")" "$2" "$3" "$4" <<'EOF'
import json, subprocess, sys, time
touctl, sock, peer, want, secs = sys.argv[1:6]
t0 = time.monotonic()
last = "none"
while True:
    el = time.monotonic() - t0
    try:
        out = subprocess.run([touctl, "-s", sock, "show", "--json"], capture_output=True,
                             timeout=2).stdout
        p = [x for x in json.loads(out)["peers"] if x["name"] == peer][0]
        last = p["endpoint"] or "null"
    except Exception as e:
        last = "error: %s" % e
    if last == want:
        print("ok %d %s" % (el * 1000, last))
        sys.exit(0)
    if el > float(secs):
        print("timeout %d %s" % (el * 1000, last))
        sys.exit(1)
    time.sleep(0.02)
EOF
)
	local rc=$?
	read -r _ RT_EP_MS RT_EP <<<"$out"
	return $rc
}

# --- router faults (nftables in r) -----------------------------------------

rt_nft() {
	local out
	out=$(nsx r nft -f - 2>&1 <<<"$1") || bail_out "nft in r: $out"
}

# rt_block_udp TABLE: the router drops every UDP packet it would forward,
# counted, in nftables table TABLE (delete the table to lift it).
rt_block_udp() {
	rt_nft "table ip $1 {
	chain block {
		type filter hook forward priority -20; policy accept;
		meta l4proto udp counter drop
	}
}"
}

# transport_is NODE PEER udp|tcp: what NODE's peer PEER's traffic takes.
transport_is() {
	[ "$(tq "$1" "peers.$2.transport")" = "$3" ]
}

# rt_nft_packets TABLE [WORD]: the sum of the packet counters in TABLE (of
# its rules that contain WORD).
rt_nft_packets() {
	nsx r nft list table ip "$1" 2>/dev/null | grep -F -e "${2:-counter}" |
	    awk '{ for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }'
}

# rt_loss PCT: drop PCT % of the tunnel's datagrams, both directions.
rt_loss() {
	rt_nft "table ip rt_loss {
		chain impair {
			type filter hook forward priority -10; policy accept;
			udp dport $RT_PORT numgen random mod 100 < $1 counter drop
		}
	}"
}

# rt_dup PCT: duplicate PCT % of the datagrams, both directions.  (After
# srcnat, so a duplicate carries the same translated addresses.)
rt_dup() {
	rt_nft "table ip rt_dup {
		chain dupl {
			type filter hook postrouting priority 300; policy accept;
			oifname \"rs0\" udp dport $RT_PORT numgen random mod 100 < $1 counter dup to $RT_S_UL device \"rs0\"
			oifname \"rc0\" udp dport $RT_PORT numgen random mod 100 < $1 counter dup to $RT_C_UL device \"rc0\"
		}
	}"
}

# rt_nat ADDR:PORT[-PORT]: the router hides the client behind ADDR and that
# port (or a port of the range, as a NAT does when the first is taken).
rt_nat() {
	rt_nft "table ip rt_nat {
		chain post {
			type nat hook postrouting priority srcnat; policy accept;
			oifname \"rs0\" ip saddr 10.201.0.0/24 meta l4proto udp snat to $1
		}
	}"
}

# rt_nat_rebind ADDR:PORT: a new mapping, as a NAT that rebooted or timed out.
rt_nat_rebind() {
	rt_nft "flush chain ip rt_nat post
		add rule ip rt_nat post oifname \"rs0\" ip saddr 10.201.0.0/24 meta l4proto udp snat to $1"
	nsx r conntrack -D -p udp --orig-src "$RT_C_UL" >/dev/null 2>&1
	return 0
}

# rt_rebind_during_fetch NODE WHO DIAG_FN MAPPING...: while the download
# of rt_fetch_start (to $E2E_DIR/got) runs, give the client each new NAT
# mapping in turn and wait for NODE (named WHO in the results) to show it
# as peer c's endpoint, calling DIAG_FN when it does not; then check that
# the download still runs and lift the bottleneck on rc0.  RT_REBIND_SEEN:
# how many mappings NODE followed.
rt_rebind_during_fetch() {
	local node=$1 who=$2 diag_fn=$3 m
	shift 3
	RT_REBIND_SEEN=0
	for m in "$@"; do
		proc_alive "$FETCH_PID" || diag "the download ended before the rebinding to $m"
		rt_nat_rebind "$m"
		if rt_wait_endpoint "$node" c "$m" 30; then
			ok "rebinding to $m: $who follows in ${RT_EP_MS} ms"
			RT_REBIND_SEEN=$((RT_REBIND_SEEN + 1))
		else
			not_ok "rebinding to $m: $who follows within 30 s" "after $RT_EP_MS ms it shows $RT_EP"
			"$diag_fn"
		fi
		# The new mapping carries some of the download before the next.
		rt_fetch_progress "$E2E_DIR/got" 256 30 || diag "the download did not go on in 30 s"
	done
	if proc_alive "$FETCH_PID"; then
		ok "the download was still running after the last rebinding"
		rt_rate_off rc0
	else
		not_ok "the download was still running after the last rebinding" "$(cat "$E2E_DIR/got.log")"
	fi
}

# rt_udp_timeout SECONDS: how long r keeps an idle UDP mapping.
rt_udp_timeout() {
	rt_sysctl r net.netfilter.nf_conntrack_udp_timeout="$1" \
	    net.netfilter.nf_conntrack_udp_timeout_stream="$1"
}

# rt_rate DEV MBIT: r sends at most MBIT Mbit/s out of DEV (tbf).  A steady
# bottleneck keeps a download's ACKs flowing, where curl --limit-rate would
# make the client fall silent between bursts.
rt_rate() {
	local out
	out=$(nsx r tc qdisc replace dev "$1" root tbf rate "${2}mbit" burst 64kb latency 50ms 2>&1) ||
	    bail_out "tc tbf on r:$1: $out"
}

rt_rate_off() {
	nsx r tc qdisc del dev "$1" root 2>/dev/null
	return 0
}

# --- delay and reordering (NFQUEUE) ----------------------------------------

# rt_nfq_start DELAY_MS EVERY EXTRA_MS [MATCH...]: the router holds each
# datagram of the tunnel (or each forwarded packet that the iptables MATCH
# takes) DELAY_MS, every EVERY-th one EXTRA_MS more.  NFQ_PID, NFQ_LOG.
rt_nfq_start() {
	# Built by make check (check_PROGRAMS) with the configured compiler.
	local bin=${TOUD_NFQ_DELAY:-} out m
	need_cmd iptables
	[ -n "$bin" ] && [ -x "$bin" ] ||
	    bail_out "nfq-delay not built${bin:+ at $bin}: run the test through make check, with libnetfilter-queue-dev installed when configuring (scripts/deps.sh)"
	NFQ_LOG=$E2E_DIR/nfq-delay.log
	bg_start r "$NFQ_LOG" "$bin" -q 0 -d "$1" -n "$2" -x "$3"
	NFQ_PID=$BG_PID
	wait_for 5 grep -q ready "$NFQ_LOG" || bail_out "nfq-delay did not start: $(cat "$NFQ_LOG")"
	# --queue-bypass: should the program die, packets flow undelayed
	# instead of being dropped.
	m=("${@:4}")
	[ ${#m[@]} -gt 0 ] || m=(-p udp --dport "$RT_PORT")
	out=$(nsx r iptables -w -A FORWARD "${m[@]}" -j NFQUEUE --queue-num 0 \
	    --queue-bypass 2>&1) || bail_out "iptables NFQUEUE rule: $out"
}

# rt_nfq_stop: stop the program; NFQ_STATS is its counters line.
rt_nfq_stop() {
	nsx r iptables -w -F FORWARD 2>/dev/null
	proc_stop "$NFQ_PID" TERM 5
	NFQ_STATS=$(grep 'packets' "$NFQ_LOG" | tail -n 1)
}

# --- applications -----------------------------------------------------------

# rt_fetch_start NODE URL OUT [CURL-OPTION...]: curl in the background;
# FETCH_PID, and OUT.log gets "size time speed connects" when it ends.
rt_fetch_start() {
	local node=$1 url=$2 out=$3
	shift 3
	rm -f "$out" "$out.log"
	bg_start "$node" "$out.log" curl -sS --noproxy '*' --max-time 50 "$@" \
	    -w '%{size_download} %{time_total} %{speed_download} %{num_connects}\n' -o "$out" "$url"
	FETCH_PID=$BG_PID
}

# rt_fetch_progress OUT KIB SECONDS: wait until the running download has
# written KIB more into OUT (a path has carried it), at most SECONDS.
rt_fetch_progress() {
	wait_for "$3" rt_size_ge "$1" $(($(rt_size "$1") + $2 * 1024))
}
rt_size() {
	stat -c %s "$1" 2>/dev/null || echo 0
}
rt_size_ge() {
	[ "$(rt_size "$1")" -ge "$2" ]
}

# rt_fetch_finish OUT SRC SECONDS DESC: wait for curl, then: exit 0, one TCP
# connection, sha256 equal to SRC's.  FETCH_TIME (s), FETCH_MBITS.
rt_fetch_finish() {
	local out=$1 src=$2 secs=$3 desc=$4 stats size conns
	FETCH_TIME='' FETCH_MBITS=''
	if ! proc_wait "$FETCH_PID" "$secs"; then
		not_ok "$desc" "curl did not finish in $secs s: $(cat "$out.log")"
		return 1
	fi
	if [ "$PROC_RC" != 0 ]; then
		not_ok "$desc" "curl exited with status $PROC_RC: $(cat "$out.log")"
		return 1
	fi
	stats=$(tail -n 1 "$out.log")
	read -r size FETCH_TIME speed conns <<<"$stats"
	FETCH_MBITS=$(awk -v s="$speed" 'BEGIN { printf "%.1f", s * 8 / 1e6 }')
	is "$(sha "$out")/$conns" "$(sha "$src")/1" \
	    "$desc (one connection, $size bytes, sha256 $(sha "$src" | cut -c1-16)...)"
}

# rt_serve_file NODE ADDR PORT MIB: a file of MIB MiB served over HTTP;
# RT_FILE is its path.
rt_serve_file() {
	mkdir -p "$E2E_DIR/www"
	RT_FILE=$E2E_DIR/www/big
	[ -f "$RT_FILE" ] || make_file "$RT_FILE" $(($4 * 1024))
	http_serve "$1" "$2" "$3" "$E2E_DIR/www"
}

# rt_stream_py: write $E2E_DIR/stream.py, a long-lived TCP stream.
#   stream.py serve ADDR PORT SECONDS: accept one connection, send "N\n"
#     every 50 ms for SECONDS, then "end N\n"; check that the peer echoes
#     every line back in order; print a JSON summary.
#   stream.py connect ADDR PORT: read the lines, check that they count up
#     without a gap, echo each one; print "flowing" after the 20th line
#     and at the end a JSON summary (with the longest silence between two
#     lines).
rt_stream_py() {
	cat >"$E2E_DIR/stream.py" <<'EOF'
import json, socket, sys, threading, time

def lines(sock):
    buf = b""
    while True:
        d = sock.recv(65536)
        if not d:
            return
        buf += d
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode()

def serve(addr, port, secs):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    print("listening", flush=True)
    c, _ = ls.accept()
    res = {"sent": 0, "echoed": 0, "echo_ok": True}
    def reader():
        want = 0
        for line in lines(c):
            if line != str(want):
                res["echo_ok"] = False
                res["echo_bad"] = "%r after %d" % (line, want - 1)
                break
            want += 1
        res["echoed"] = want
    t = threading.Thread(target=reader)
    t.start()
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < secs:
        c.sendall(b"%d\n" % n)
        n += 1
        time.sleep(0.05)
    c.sendall(b"end %d\n" % n)
    res["sent"] = n
    t.join(60)
    c.close()
    print(json.dumps(res), flush=True)

def connect(addr, port):
    c = socket.create_connection((addr, port), timeout=5)
    c.settimeout(None)
    res = {"received": 0, "ok": False, "max_gap_ms": 0, "end": None}
    want, last = 0, time.monotonic()
    for line in lines(c):
        now = time.monotonic()
        res["max_gap_ms"] = max(res["max_gap_ms"], int((now - last) * 1000))
        last = now
        if line.startswith("end "):
            res["end"] = int(line[4:])
            res["ok"] = res["end"] == want
            c.shutdown(socket.SHUT_WR)
            break
        if line != str(want):
            res["bad"] = "%r after %d" % (line, want - 1)
            break
        c.sendall(b"%s\n" % line.encode())
        want += 1
        res["received"] = want
        if want == 20:
            print("flowing", flush=True)
    print(json.dumps(res), flush=True)

if sys.argv[1] == "serve":
    serve(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
else:
    connect(sys.argv[2], int(sys.argv[3]))
EOF
}
