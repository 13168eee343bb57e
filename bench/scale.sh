#!/bin/bash
# bench/scale.sh - one server with many peers: start time, memory per idle
# configured peer and per live session, handshakes per second and server
# CPU per handshake against the crypto floor.
#
# For each size N in SIZES: a server (namespace a) with N configured peers
# (bench/manypeers.py: LIVE of them with real keys, the rest with random
# fingerprints) and LIVE DTLS clients (bench/hsload, namespace c, one source
# address, all at once).  Measured:
#   - start: from exec until the control socket answers,
#   - RSS (VmRSS) once started, against the same with no peer: per peer,
#   - the clients' handshakes: time until all are up, handshakes/s, and
#     the server's CPU (utime + stime) over them, per handshake,
#   - RSS with the LIVE sessions up, against idle: per session.
# The crypto floor is `openssl speed ecdhp256 ecdsap256` on the same
# machine: what one server handshake's public-key operations cost at least
# (an ephemeral key and one ECDH, one ECDSA signature, one verification).
# `hsload inproc` then runs the same handshakes in one process without
# sockets: what the library and toud's DTLS code cost per server handshake,
# against a floor it measures itself, and of that the parse of the client's
# certificate; what the daemon spends above it is its own (sockets, the
# loop, the cookie round, the limits).
#
# Usage (root): bench/scale.sh
# Environment: SIZES="1000 10000 50000" LIVE=200 TOUD_BIN TOUCTL_BIN
set -u

if [ "$(id -u)" -ne 0 ]; then
	echo "scale.sh: run as root (it creates network namespaces)" >&2
	exit 1
fi
SIZES=${SIZES:-1000 10000 50000}
LIVE=${LIVE:-200}
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TOUD=${TOUD_BIN:-$TOP/_build/src/toud}
export TOUCTL=${TOUCTL_BIN:-$TOP/_build/src/touctl}
HSLOAD=${HSLOAD_BIN:-$(dirname "$TOUD")/../bench/hsload}
export TOUD_E2E_ENCRYPTION=dtls
export TOUD_E2E_LOG_LEVEL=info
export TOUD_E2E_THREADS=auto

. "$TOP/tests/e2e/lib.sh"
e2e_init >/dev/null
HZ=$(getconf CLK_TCK)
[ -x "$HSLOAD" ] || bail_out "$HSLOAD not built"

netns_add a c
veth a ul0 c ul0 "10.200.0.1/24" "10.200.0.2/24"
"$HSLOAD" genkeys "$E2E_DIR/clients" "$LIVE" >"$E2E_DIR/clients.fp" || bail_out "genkeys"

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/${TOUD_PID[a]}/status"; }
heap() { tq a interface.heap_used; }
ticks() {
	local f
	f=$(sed 's/^.*) //' "/proc/${TOUD_PID[a]}/stat")
	read -r -a f <<<"$f"
	echo $((f[11] + f[12]))
}
up_count() {
	show_json a | python3 -c '
import json, sys
print(sum(p["state"] == "up" for p in json.load(sys.stdin)["peers"]))'
}

# start N: a's toud with N peers; sets START_MS and RSS (not in a
# subshell: toud_start records the daemon's pid).
start() {
	local t0
	conf_interface a 6080 10.77.0.1/16
	[ "$1" -gt 0 ] && python3 "$TOP/bench/manypeers.py" "$1" "$E2E_DIR/clients.fp" >>"$(conf_file a)"
	t0=$(e2e_now)
	toud_start a || bail_out "toud did not start with $1 peers"
	START_MS=$(($(e2e_now) - t0))
	RSS=$(rss_kb)
	HEAP=$(heap)
}

floor=$(openssl speed -seconds 2 ecdhp256 ecdsap256 2>/dev/null | python3 -c '
import re, sys
t = sys.stdin.read()
sign, verify = map(float, re.search(r"256 bits ecdsa \(nistp256\)\s+\S+s\s+\S+s\s+([\d.]+)\s+([\d.]+)", t).groups())
ecdh = float(re.search(r"256 bits ecdh \(nistp256\)\s+\S+s\s+([\d.]+)", t).group(1))
# keygen + derive (two scalar multiplications), one signature, one verification
us = 2e6 / ecdh + 1e6 / sign + 1e6 / verify
print("%.0f %.0f %.0f %.0f" % (us, 1e6 / ecdh, 1e6 / sign, 1e6 / verify))')
read -r floor_us ecdh_us sign_us verify_us <<<"$floor"

start 0
start0=$START_MS rss0=$RSS heap0=$HEAP
toud_stop a
echo "# crypto floor per server handshake: ${floor_us} us (ECDH ${ecdh_us} us x2, sign ${sign_us} us, verify ${verify_us} us)"
echo "# no peers: start ${start0} ms, RSS ${rss0} kB, heap ${heap0} B"
echo "# $("$HSLOAD" inproc "$E2E_DIR/clients" "$LIVE")"
echo "| peers | start (ms) | RSS idle (MiB) | heap per idle peer (B) | $LIVE clients up (ms) | handshakes/s | server CPU per handshake (us) | x floor | heap per live session (B) | RSS per live session (B) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
	start "$n"
	st=$START_MS
	sleep 1
	rss=$(rss_kb)
	hp=$(heap)
	c0=$(ticks)
	bg_start c "$E2E_DIR/hsload-$n.out" "$HSLOAD" run -b 10.200.0.2 -t 120 -H 600 \
	    "$E2E_DIR/clients" "$LIVE" 10.200.0.1 6080
	hs=$BG_PID
	wait_for 120 grep -q '^up ' "$E2E_DIR/hsload-$n.out" || echo "# $n: clients not done"
	c1=$(ticks)
	# Each session is left with the state it keeps, once the clients'
	# keepalives arrived.
	wait_for 30 test "$(up_count)" = "$LIVE"
	sleep 1
	rss_live=$(rss_kb)
	hp_live=$(heap)
	line=$(head -n 1 "$E2E_DIR/hsload-$n.out")
	proc_stop "$hs" TERM 10
	toud_stop a
	python3 -c '
import re, sys
n, st, rss, rss0, live, rss_live, c0, c1, hz, floor, hp, hp0, hp_live = map(float, sys.argv[1:14])
m = re.match(r"up (\d+) of (\d+) in (\d+) ms \((\d+) handshakes/s\)", sys.argv[14])
up, ms, rate = (int(m.group(1)), int(m.group(3)), int(m.group(4))) if m else (0, 0, 0)
cpu_us = (c1 - c0) / hz * 1e6 / max(up, 1)
print("| %d | %d | %.1f | %d | %d (%d of %d up) | %d | %.0f | %.1f | %d | %d |" % (
    n, st, rss / 1024, (hp - hp0) / n, ms, up, live, rate, cpu_us, cpu_us / floor,
    (hp_live - hp) / max(up, 1), (rss_live - rss) * 1024 / max(up, 1)))' \
	    "$n" "$st" "$rss" "$rss0" "$LIVE" "$rss_live" "$c0" "$c1" "$HZ" "$floor_us" \
	    "$hp" "$heap0" "$hp_live" "$line"
done
