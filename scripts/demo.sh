#!/bin/bash
# demo.sh - see toud work, with evidence at every step: two network
# namespaces ("alice" and "bob") on a virtual Ethernet link, a key pair and
# a config for each, a toud in each, a file fetched with curl through the
# tunnel while tcpdump records the underlay (what an observer of the link
# sees), then alice's underlay address changes in the middle of a second
# download, which completes over the same session.  Everything is removed at
# the end.  Then bob's firewall starts dropping alice's UDP in the middle
# of a third download, which moves to the TCP transport (TLS over TCP to
# bob's listen-tcp port) and completes, and back to UDP once the block is
# lifted.  Any failed check stops the demo with a non-zero status and says
# which step failed.
#
#   scripts/demo.sh        (as root; a user with sudo is asked for it)
#
# DEMO_SKIP_DEPS=1 skips scripts/deps.sh, DEMO_SKIP_BUILD=1 the build;
# ENCRYPTION=dtls (default) or none picks the mode (with none there are no
# keys, the capture shows the file in the clear and peers do not roam).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$(id -u)" -ne 0 ]; then
	# Namespaces need root: a user with sudo gets it asked for.
	if command -v sudo >/dev/null 2>&1; then
		exec sudo -E "$0" "$@"
	fi
	echo "demo.sh: run as root (no sudo here)" >&2
	exit 1
fi
enc=${ENCRYPTION:-dtls}
case $enc in
dtls|none) ;;
*) echo "demo.sh: ENCRYPTION must be dtls or none" >&2; exit 1;;
esac
step=0
title=
dir=
say() {
	step=$((step + 1))
	title=$*
	printf '[%2d] %s\n' "$step" "$*"
	if [ -n "$dir" ] && [ -d "$dir" ]; then
		printf '%s\n%s\n' "$step" "$title" >"$dir/.step"
	fi
}
# An indented line of evidence under the current step.
out() { printf '     %s\n' "$*"; }
indent() { sed 's/^/     /'; }
# die MSG: the current step's check failed.  (Only the first message counts:
# a failure inside $(...) also fails the command around it.)
die() {
	if [ -n "$dir" ] && [ -d "$dir" ]; then
		if [ ! -e "$dir/.failed" ]; then
			echo "step $step ($title): $*" >"$dir/.failed"
			echo "demo.sh: step $step failed: $*" >&2
		fi
	else
		echo "demo.sh: $*" >&2
	fi
	exit 1
}

if [ "${DEMO_SKIP_DEPS:-0}" != 1 ]; then
	say "installing build and test dependencies (scripts/deps.sh)"
	scripts/deps.sh
fi
if [ "${DEMO_SKIP_BUILD:-0}" != 1 ]; then
	say "building toud in _build/ (scripts/build.sh _build)"
	scripts/build.sh _build
fi
toud=$top/_build/src/toud
touctl=$top/_build/src/touctl
[ -x "$toud" ] && [ -x "$touctl" ] || die "no toud/touctl in _build/src"
for c in ip curl tcpdump python3 sha256sum ss ping nft; do
	command -v "$c" >/dev/null 2>&1 || die "missing command: $c (run scripts/deps.sh)"
done

alice=toud-demo$$-alice
bob=toud-demo$$-bob
dir=$(mktemp -d /tmp/toud-demo.XXXXXX)
: >"$dir/pids"

# proc_start PID: the process's start time, which tells it from a later
# process that got the same pid (nothing for a zombie: it is over).
proc_start() {
	local f
	f=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
	case $f in Z*|X*) return 0;; esac
	echo "$f" | cut -d' ' -f20
}
# proc_ours PID START: PID is still the running process the demo started.
proc_ours() {
	[ -n "$2" ] && [ "$(proc_start "$1")" = "$2" ]
}

# The demo itself runs in a subshell; this shell only waits for it and
# cleans up, also after Ctrl-C (its INT/TERM traps just let it get here).
cleanup() {
	local rc=$? pid start i left failed=
	trap - EXIT
	if [ -f "$dir/.step" ]; then
		{ read -r step; read -r title; } <"$dir/.step"
	fi
	if [ -f "$dir/.failed" ]; then
		failed="FAILED at $(cat "$dir/.failed")"
	elif [ "$rc" -gt 128 ]; then
		failed="interrupted at step $step ($title)"
	elif [ "$rc" -ne 0 ]; then
		failed="FAILED at step $step ($title): exit status $rc"
	fi
	say "stopping toud and tearing down"
	# Only the processes this demo started, by pid and start time.
	for i in 1 2 3 4 5 6 7 8 9 10 11; do
		left=0
		while read -r pid start; do
			proc_ours "$pid" "$start" || continue
			left=1
			if [ "$i" = 1 ]; then
				kill -TERM "$pid" 2>/dev/null || true
			elif [ "$i" = 11 ]; then
				kill -KILL "$pid" 2>/dev/null || true
			fi
		done <"$dir/pids"
		[ "$left" = 0 ] && break
		sleep 0.2
	done
	ip netns del "$alice" 2>/dev/null || true
	ip netns del "$bob" 2>/dev/null || true
	rm -rf "$dir"
	out "removed the namespaces, processes and $dir"
	if [ -n "$failed" ]; then
		echo "demo.sh: $failed" >&2
		[ "$rc" -ne 0 ] || rc=1
	else
		echo "demo finished: every check passed"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap : INT TERM
# start_bg CMD...: a background process the clean-up will stop; BG is its pid.
start_bg() {
	"$@" &
	BG=$!
	echo "$BG $(proc_start "$BG")" >>"$dir/pids"
}

(
set -E -o pipefail
trap 'die "command failed (status $?): $BASH_COMMAND"' ERR
ax() { ip netns exec "$alice" "$@"; }
bx() { ip netns exec "$bob" "$@"; }
ctl() { "$touctl" -s "$dir/$1.sock" "${@:2}"; }
# pf NODE PEER FIELD: the first word of a field of `touctl show PEER` on
# NODE (endpoint, state, session): quick enough to poll.
pf() {
	ctl "$1" show "$2" | sed -n "s/^  $3: \([^ ]*\).*/\1/p"
}
sha() { sha256sum <"$1" | cut -d' ' -f1; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# fetch_big_start RATE MAX-TIME SECS: alice's curl of the big file at
# RATE (curl_pid), once a quarter of it has arrived (within SECS).
fetch_big_start() {
	local i big
	big=$(stat -c %s "$dir/www/big")
	rm -f "$dir/got.big"
	start_bg ip netns exec "$alice" curl -sS --noproxy '*' --max-time "$2" --limit-rate "$1" \
	    -o "$dir/got.big" -w '%{size_download} %{time_total} %{num_connects}\n' \
	    http://10.77.0.2:8080/big </dev/null >"$dir/curl.out" 2>"$dir/curl.err"
	curl_pid=$BG
	for i in $(seq $(($3 * 20))); do
		[ -f "$dir/got.big" ] && [ "$(stat -c %s "$dir/got.big")" -ge $((big / 4)) ] && return 0
		kill -0 "$curl_pid" 2>/dev/null || die "curl ended early: $(cat "$dir/curl.err")"
		sleep 0.05
	done
	die "the download did not reach a quarter in $3 s"
}
# fetch_big_finish: that curl ends well, on one connection, the file intact.
fetch_big_finish() {
	local size secs conns sent got
	wait "$curl_pid" || die "curl failed (status $?): $(cat "$dir/curl.err")"
	read -r size secs conns <"$dir/curl.out"
	out "curl: $size bytes in $secs s over $conns TCP connection"
	sent=$(sha "$dir/www/big")
	got=$(sha "$dir/got.big")
	out "sha256 sent     $sent"
	out "sha256 received $got"
	[ "$sent" = "$got" ] || die "the checksums differ"
	[ "$conns" = 1 ] || die "curl used $conns connections"
}
# transport NODE PEER: udp or tcp (show has no transport line for a peer
# without endpoint-tcp while it is on udp).
transport() {
	local v
	v=$(pf "$1" "$2" transport)
	echo "${v:-udp}"
}
# wait_transport SECS WANT: both sides show the other on transport WANT
# within SECS; prints the milliseconds it took.
wait_transport() {
	local t0 t1
	t0=$(now_ms)
	until [ "$(transport alice bob)" = "$2" ] && [ "$(transport bob alice)" = "$2" ]; do
		t1=$(now_ms)
		[ $((t1 - t0)) -lt $(($1 * 1000)) ] ||
		    die "after $1 s alice shows bob on $(transport alice bob), bob alice on $(transport bob alice)"
		sleep 0.05
	done
	echo $(($(now_ms) - t0))
}
# udp_blocked_transfer: the steps where UDP stops passing mid-download.
udp_blocked_transfer() {
	local big ms
	say "alice fetches the big file again (curl --limit-rate 4M: about 8 s); the tunnel is on UDP"
	ctl alice show bob | grep -E '^  transport:' | sed 's/^ */alice: /' | indent
	[ "$(transport alice bob)" = udp ] || die "alice's peer bob is not on udp"
	big=$(stat -c %s "$dir/www/big")
	fetch_big_start 4M 60 10

	say "bob's firewall drops UDP from and to alice (nftables), mid-transfer"
	bx nft -f - <<-'EOF'
	table inet toud_demo_block {
		chain in { type filter hook input priority 0; policy accept; udp dport 6080 counter drop; }
		chain out { type filter hook output priority 0; policy accept; udp sport 6080 counter drop; }
	}
	EOF
	out "at $(mib "$(stat -c %s "$dir/got.big")") of $(mib "$big"), curl still running"
	ms=$(wait_transport 30 tcp)
	out "$ms ms later both sides show transport tcp (TLS 1.3 to bob's port 443):"
	ctl alice show bob | grep -E '^  transport:' | sed 's/^ */alice: /' | indent
	out "bob's listener: $(ctl bob show | sed -n 's/^  tcp listen: //p')"

	say "the same transfer completes over TCP"
	fetch_big_finish
	out "UDP datagrams bob dropped meanwhile: $(bx nft list table inet toud_demo_block |
	    awk '/packets/ { for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) } END { print s + 0 }')"

	say "the block is lifted: toud finds UDP again and moves back"
	bx nft delete table inet toud_demo_block
	ax ping -n -q -c 1 -W 1 10.77.0.2 >/dev/null || true
	ms=$(wait_transport 90 udp)
	out "$ms ms later both sides show transport udp again:"
	ctl alice show bob | grep -E '^  transport:' | sed 's/^ */alice: /' | indent
	ax ping -n -q -c 3 -i 0.2 -W 2 10.77.0.2 | grep -E 'packets' | indent
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

say "two namespaces $alice and $bob, one veth: alice 10.200.0.1 <-> bob 10.200.0.2"
for ns in "$alice" "$bob"; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done
ip link add ul0 netns "$alice" type veth peer name ul0 netns "$bob"
for ns in "$alice" "$bob"; do
	# Deleting the primary address must keep a secondary one (the move
	# below).  The underlay is IPv4 only: no IPv6 chatter in the capture
	# (nothing to turn off when the kernel has no IPv6).
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.promote_secondaries=1 \
	    net.ipv4.conf.ul0.promote_secondaries=1 >/dev/null
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.ul0.disable_ipv6=1 >/dev/null 2>&1 || true
done
ip -n "$alice" addr add 10.200.0.1/24 dev ul0
ip -n "$bob" addr add 10.200.0.2/24 dev ul0
ip -n "$alice" link set ul0 up
ip -n "$bob" link set ul0 up

if [ "$enc" = dtls ]; then
	say "keys: touctl genkey makes a key pair for each; peers pin each other's fingerprint"
	for n in alice bob; do
		mkdir -p "$dir/$n"
		"$touctl" genkey "$dir/$n" >"$dir/$n/fingerprint"
		grep -q '^sha256:[0-9a-f]\{64\}$' "$dir/$n/fingerprint" ||
		    die "touctl genkey printed '$(cat "$dir/$n/fingerprint")'"
		printf '     %-5s %s\n' "$n" "$(cat "$dir/$n/fingerprint")"
	done
else
	say "keys: none (encryption = none: plain GUE, NOT encrypted, for debugging only)"
fi

# conf NAME MY-ADDR PEER PEER-ADDR PEER-ENDPOINT [LISTEN-TCP|PEER-ENDPOINT-TCP]
# (the TCP transport is TLS: with dtls only; a port is the interface's
# listen-tcp, an ADDR:PORT the peer's endpoint-tcp)
conf() {
	cat >"$dir/$1.conf" <<EOF
[interface]
name = tou0
address = $2/24
listen = 6080
encryption = $enc
control = $dir/$1.sock
EOF
	if [ "$enc" = dtls ]; then
		printf 'private-key = %s\ncertificate = %s\n' "$dir/$1/key.pem" "$dir/$1/cert.pem" >>"$dir/$1.conf"
		case ${6:-} in
		*:*) ;;
		?*) echo "listen-tcp = $6" >>"$dir/$1.conf";;
		esac
	fi
	printf '\n[peer %s]\nendpoint = %s\naddress = %s\n' "$3" "$5" "$4" >>"$dir/$1.conf"
	if [ "$enc" = dtls ]; then
		echo "fingerprint = $(cat "$dir/$3/fingerprint")" >>"$dir/$1.conf"
		case ${6:-} in
		*:*) echo "endpoint-tcp = $6" >>"$dir/$1.conf";;
		esac
	fi
}
say "configs: tunnel addresses 10.77.0.1 and 10.77.0.2; both pass toud -t (in $dir)"
conf alice 10.77.0.1 bob 10.77.0.2 10.200.0.2:6080 10.200.0.2:443
conf bob 10.77.0.2 alice 10.77.0.1 10.200.0.1:6080 443
for n in alice bob; do
	"$toud" -t -c "$dir/$n.conf" || die "toud -t rejects $n.conf"
done
(cd "$dir" && grep -E '^(\[peer|address|encryption|endpoint|fingerprint|listen-tcp)' alice.conf bob.conf) |
    sed 's/\(sha256:[0-9a-f]\{16\}\)[0-9a-f]*/\1.../' | indent

say "tunnel up: toud in each namespace, alice pings bob's 10.77.0.2"
for n in alice bob; do
	start_bg ip netns exec "toud-demo$$-$n" "$toud" -c "$dir/$n.conf" </dev/null >"$dir/$n.log" 2>&1
done
for n in alice bob; do
	for i in $(seq 100); do
		ctl "$n" show >/dev/null 2>&1 && break
		[ "$i" -eq 100 ] && die "toud ($n) did not start: $(tail -n 5 "$dir/$n.log")"
		sleep 0.1
	done
done
for i in $(seq 50); do
	ax ping -n -q -c 1 -W 1 10.77.0.2 >/dev/null 2>&1 && break
	[ "$i" -eq 50 ] && die "no answer through the tunnel in 5 s"
	sleep 0.1
done
ax ping -n -q -c 3 -i 0.2 -W 2 10.77.0.2 | grep -E 'packets' | indent
ctl alice show bob | grep -E '^  (endpoint|state|session):' | sed 's/^ */alice: /' | indent
ctl bob show alice | grep -E '^  (endpoint|state|session):' | sed 's/^ */bob:   /' | indent
[ "$(pf alice bob state)" = up ] || die "alice's peer bob is not up"
[ "$(pf bob alice state)" = up ] || die "bob's peer alice is not up"
sid=$(pf alice bob session)
if [ "$enc" = dtls ]; then
	[[ "$sid" =~ ^[0-9a-f]{16}$ ]] || die "alice shows no session ID ($sid)"
	[ "$(pf bob alice session)" = "$sid" ] || die "alice and bob show different sessions"
fi

marker=toud-demo-marker-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
say "bob serves two files on http://10.77.0.2:8080/, random bytes with \"$marker\" every 4 KiB"
mkdir "$dir/www"
python3 - "$dir/www" "$marker" <<'EOF'
import os, sys
mark = sys.argv[2].encode()
for name, mib in (("small", 8), ("big", 32)):
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        for _ in range(mib * 256):
            f.write(mark + os.urandom(4096 - len(mark)))
EOF
start_bg ip netns exec "$bob" python3 -m http.server --bind 10.77.0.2 --directory "$dir/www" 8080 \
    </dev/null >"$dir/http.log" 2>&1
for i in $(seq 100); do
	[ -n "$(bx ss -Hltn 'sport = :8080')" ] && break
	[ "$i" -eq 100 ] && die "the web server did not start: $(tail -n 5 "$dir/http.log")"
	sleep 0.1
done
out "small $(stat -c %s "$dir/www/small") bytes, big $(stat -c %s "$dir/www/big") bytes"

say "alice fetches the small file with curl while tcpdump records her ul0 (the underlay)"
# -Z root: Debian's tcpdump would drop to user tcpdump and fail to write here.
start_bg ip netns exec "$alice" tcpdump -i ul0 -n -Z root --immediate-mode -U -w "$dir/cap.pcap" \
    </dev/null >"$dir/tcpdump.log" 2>&1
tcpdump_pid=$BG
for i in $(seq 100); do
	grep -q 'listening on' "$dir/tcpdump.log" && break
	[ "$i" -eq 100 ] && die "tcpdump did not start: $(tail -n 3 "$dir/tcpdump.log")"
	sleep 0.05
done
ax curl -sS --noproxy '*' --max-time 30 -o "$dir/got.small" \
    -w '     curl: %{size_download} bytes in %{time_total} s\n' http://10.77.0.2:8080/small ||
    die "curl failed"
sleep 0.2
kill -INT "$tcpdump_pid"
wait "$tcpdump_pid" || true
sent=$(sha "$dir/www/small")
got=$(sha "$dir/got.small")
out "sha256 sent     $sent"
out "sha256 received $got"
[ "$sent" = "$got" ] || die "the checksums differ"
out "checksums match; $(grep -E 'captured' "$dir/tcpdump.log")"

say "the capture, read back with tcpdump -n -r (the first 4 packets)"
tcpdump -n -r "$dir/cap.pcap" -c 4 2>/dev/null | indent

say "what an observer of the link saw, computed from the pcap"
rc=0
python3 - "$dir/cap.pcap" "$marker" "$dir/www/small" "$enc" "$sid" >"$dir/summary" <<'EOF' || rc=$?
import struct, sys
path, mark, src, enc, sid = sys.argv[1], sys.argv[2].encode(), sys.argv[3], sys.argv[4], sys.argv[5]
raw = open(path, "rb").read()
def fail(msg):
    print("check failed: " + msg)
    sys.exit(1)
magic = raw[:4]
if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
    end = "<"
elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
    end = ">"
else:
    fail("not a pcap file")
if struct.unpack(end + "I", raw[20:24])[0] != 1:
    fail("link type is not Ethernet")
off, udp, arp, other, heads, kinds = 24, 0, 0, [], {}, {}
rtype = {20: "change_cipher_spec", 21: "alert", 22: "handshake", 23: "application data"}
while off + 16 <= len(raw):
    caplen = struct.unpack(end + "I", raw[off + 8:off + 12])[0]
    f = raw[off + 16:off + 16 + caplen]
    off += 16 + caplen
    etype = f[12:14]
    if etype == b"\x08\x06":
        arp += 1
        continue
    ihl = (f[14] & 0x0f) * 4 if etype == b"\x08\x00" else 0
    if not ihl or f[23] != 17:
        other.append(etype.hex() + (" proto %d" % f[23] if ihl else ""))
        continue
    sport, dport = struct.unpack(">HH", f[14 + ihl:18 + ihl])
    if sport != 6080 or dport != 6080:
        other.append("udp %d -> %d" % (sport, dport))
        continue
    udp += 1
    p = f[22 + ihl:]
    if enc == "dtls":
        heads[p[:8].hex(" ")] = heads.get(p[:8].hex(" "), 0) + 1
        kinds[(p[8:16].hex(), p[16])] = kinds.get((p[8:16].hex(), p[16]), 0) + 1
    else:
        heads[p[:4].hex(" ")] = heads.get(p[:4].hex(" "), 0) + 1
if other:
    fail("%d frames that are not UDP 6080 <-> 6080: %s" % (len(other), ", ".join(sorted(set(other)))))
if udp == 0:
    fail("no datagrams captured")
note = " (and %d ARP)" % arp if arp else ""
nfile, ncap = open(src, "rb").read().count(mark), raw.count(mark)
if enc == "dtls":
    want = "03 3b 00 01 60 00 00 00"  # GUE v0 Hlen 3, proto 59, flag P; private flags S|D
    if list(heads) != [want]:
        fail("first bytes %s, want %s" % (heads, want))
    for (s, t), n in kinds.items():
        if s != sid:
            fail("%d datagrams carry session ID %s, touctl shows %s" % (n, s, sid))
        if t not in rtype:
            fail("%d datagrams carry DTLS record type %d" % (n, t))
    print("%d datagrams%s, all UDP 6080 <-> 6080, each one: %s" % (udp, note, want))
    print("  + session ID %s + DTLS record: %s" % (sid, ", ".join(
        "%d x type %d (%s)" % (n, t, rtype[t]) for (s, t), n in sorted(kinds.items()))))
    print("the marker: %d times in the file, %d times in the %d-byte capture" % (nfile, ncap, len(raw)))
    if nfile == 0 or ncap != 0:
        fail("the marker must be in the file and not in the capture")
else:
    print("%d datagrams%s, all UDP 6080 <-> 6080, first bytes (plain GUE): %s" % (udp, note,
        ", ".join("%s x %d" % (h, n) for h, n in sorted(heads.items(), key=lambda x: -x[1]))))
    print("the marker: %d times in the file, %d times IN THE CLEAR in the capture (encryption = none)"
        % (nfile, ncap))
EOF
indent <"$dir/summary"
[ "$rc" = 0 ] || die "$(grep -h '^check failed' "$dir/summary" || echo "python exited with status $rc")"

if [ "$enc" = dtls ]; then
	old=10.200.0.1 new=10.200.0.3
	say "alice starts a slower fetch of the big file (curl --limit-rate 8M: about 4 s)"
	big=$(stat -c %s "$dir/www/big")
	# Move once about a quarter has arrived: truly in the middle.
	fetch_big_start 8M 30 5
	done_at=$(stat -c %s "$dir/got.big")

	say "alice moves: ip addr add $new/24 dev ul0; ip addr del $old/24 dev ul0"
	ax ip addr add "$new/24" dev ul0
	ax ip addr del "$old/24" dev ul0
	t0=$(now_ms)
	kill -0 "$curl_pid" 2>/dev/null || die "the download was over before the move"
	out "at $(mib "$done_at") of $(mib "$big"), curl still running; alice's ul0 now:" \
	    "$(ax ip -4 -br addr show dev ul0 | awk '{ $1 = $1; print }')"

	say "bob's touctl show: alice's endpoint follows her to $new:6080"
	while :; do
		ep=$(pf bob alice endpoint)
		t1=$(now_ms)
		[ "$ep" = "$new:6080" ] && break
		[ $((t1 - t0)) -lt 5000 ] || die "after 5 s bob still shows alice at $ep"
		sleep 0.02
	done
	out "bob: endpoint: $ep ($((t1 - t0)) ms after the move; it was $old:6080)"
	grep -h -o "peer \"alice\": \(endpoint\|records from\) .*" "$dir/bob.log" | sed 's/^/bob.log: /' | indent
	if kill -0 "$curl_pid" 2>/dev/null; then
		out "the download is still running"
	fi

	say "the same transfer completes over the same session"
	fetch_big_finish
	[ "$(pf bob alice endpoint)" = "$new:6080" ] || die "bob's endpoint for alice is not $new:6080"
	s1=$(pf alice bob session)
	s2=$(pf bob alice session)
	[ "$s1" = "$sid" ] && [ "$s2" = "$sid" ] ||
	    die "the session changed ($sid -> alice $s1, bob $s2): a new handshake, not a roam"
	out "checksums match; session $sid on both sides, no new handshake"
	w1=$(pf alice bob "session ID on the wire")
	w2=$(pf bob alice "session ID on the wire")
	[ -n "$w1" ] && [ "$w1" = "$w2" ] && [ "$w1" != "$sid" ] ||
	    die "the session ID on the wire did not follow the path (alice '$w1', bob '$w2')"
	out "on the wire the session ID changed with the path: $sid -> $w1" \
	    "(nothing in the clear links alice's old network with her new one)"
	udp_blocked_transfer
else
	say "address change: skipped (encryption = none has no session ID: peers are matched by address)"
fi

say "touctl show on alice"
ctl alice show | indent
say "touctl show on bob"
ctl bob show | indent
)
