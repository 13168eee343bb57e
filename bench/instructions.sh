#!/bin/bash
# bench/instructions.sh - user-space instructions per MiB through toud, on
# the UDP transport and on the TCP transport, counted by callgrind: a
# measure the machine's load does not change (wall-clock figures from
# bench/tunnel.sh on a busy machine measure the load).
#
# Two namespaces on a veth (tests/e2e/lib.sh), toud in each under
# `valgrind --tool=callgrind`; iperf3 sends SIZE through the tunnel, first
# on UDP, then with a's UDP dropped by nftables, once both sides show the
# peer on TCP.  The counters of both daemons are zeroed before each
# transfer and read after it, so setup and handshakes are not counted.
# The figure still moves by 2-3 % from run to run (how packets batch under
# the slower, instrumented daemon): compare medians of a few runs.
#
# Usage (root): bench/instructions.sh
# Environment: TOUD_BIN, TOUCTL_BIN (default _build/src/toud, touctl),
#   SIZE=64M (iperf3 -n).
set -u
if [ "$(id -u)" -ne 0 ]; then
	echo "instructions.sh: run as root (it creates network namespaces)" >&2
	exit 1
fi
TOP=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${SIZE:-64M}
real=$(realpath "${TOUD_BIN:-$TOP/_build/src/toud}")
export TOUCTL=${TOUCTL_BIN:-$TOP/_build/src/touctl}
export TOUD_E2E_ENCRYPTION=dtls TOUD_E2E_LOG_LEVEL=info
. "$TOP/tests/e2e/lib.sh"
need_cmd iperf3 nft valgrind callgrind_control jq
e2e_init >/dev/null
# lib.sh starts $TOUD: a wrapper that runs the real one under callgrind.
export TOUD=$E2E_DIR/toud-callgrind
printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s/cg.%%p "%s" "$@"\n' \
    "$E2E_DIR" "$real" >"$TOUD"
chmod +x "$TOUD"

topo_ab
conf_ab 4
sed -i "/^\[interface\]/a listen-tcp = 6443" "$(conf_file b)"
echo "endpoint-tcp = 10.200.0.2:6443" >>"$(conf_file a)"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
tun=10.77.0.2
wait_for 60 nsx a ping -n -q -c 1 -W 1 "$tun" || bail_out "no ping through the tunnel"
bg_start b "$E2E_DIR/iperf3-server.log" iperf3 -s -p 5201
wait_for 10 port_listening b t 5201 || bail_out "iperf3 server did not start"

# measure TRANSPORT: one transfer, the instructions of both daemons per MiB.
measure() {
	local n f ir=0 bytes
	for n in a b; do callgrind_control -z "${TOUD_PID[$n]}" >/dev/null 2>&1; done
	bytes=$(nsx a iperf3 -c "$tun" -p 5201 -n "$SIZE" -J | jq '.end.sum_received.bytes')
	[ "${bytes:-0}" -gt 0 ] || bail_out "iperf3 moved nothing on $1"
	for n in a b; do
		callgrind_control -d "${TOUD_PID[$n]}" >/dev/null 2>&1
		wait_for 30 compgen -G "$E2E_DIR/cg.${TOUD_PID[$n]}.*" || bail_out "no dump of ${n}'s counters"
		f=$(ls -t "$E2E_DIR/cg.${TOUD_PID[$n]}".* | head -n 1)
		ir=$((ir + $(awk '/^(summary|totals):/ { print $2; exit }' "$f")))
		rm -f "$E2E_DIR/cg.${TOUD_PID[$n]}".*
	done
	printf '%-4s %12d bytes %14d instructions %10d per MiB\n' "$1" "$bytes" "$ir" \
	    $((ir * 1048576 / bytes))
}
measure udp
nsx a nft -f - <<<"table inet bench_udp_block {
	chain out { type filter hook output priority 0; policy accept; udp dport 6080 drop; }
	chain in { type filter hook input priority 0; policy accept; udp sport 6080 drop; }
}" || bail_out "nft in a"
deadline=$(e2e_deadline 180)
until [ "$(tq a peers.b.transport)" = tcp ] && [ "$(tq b peers.a.transport)" = tcp ]; do
	e2e_before "$deadline" || bail_out "the peer did not move to tcp in 180 s"
	nsx a ping -n -q -c 1 -W 1 "$tun" >/dev/null 2>&1
done
measure tcp
