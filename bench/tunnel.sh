#!/bin/bash
# bench/tunnel.sh - toud against the raw veth path, side by side.
#
# Two namespaces on a veth; toud in each.  For every round, first the raw
# path (the veth addresses), then the tunnel (the tunnel addresses), then
# the tunnel again with UDP blocked between the hosts (nftables in a), so
# that the TCP transport (listen-tcp on b, endpoint-tcp on a) carries it:
#   - iperf3 TCP throughput, 1 stream and 4 streams (-P 4),
#   - CPU seconds the two toud processes spent per GB moved (utime + stime
#     from /proc/PID/stat, before and after each iperf3 run),
#   - ping RTT, the median of PINGS pings at 0.05 s, idle and during the
#     1-stream iperf3 run (RTT under a bulk transfer),
#   - TCP request/response latency: sockperf ping-pong, 64-byte messages,
#     median and 99th percentile.
# The table shows the median over the rounds and the ratio to raw.  The
# paths raw, toud and toud-tcp run in this order in each round; toud-tcp
# waits for the peer to move to TCP after the block and back to UDP after
# it (show says which), and stops the run if it does not.
#
# Usage (root): bench/tunnel.sh
# Environment:
#   TOUD_BIN, TOUCTL_BIN  the binaries (default _build/src/toud, touctl)
#   ENCRYPTION            none (default) or dtls (keys from `touctl genkey`)
#   ROUNDS=3 DURATION=5 PINGS=50 OUTER=4|6 (family of the underlay)
#   RR_SECONDS=3          length of each sockperf run
#   PATHS                 the paths to measure, raw first: "raw toud toud-tcp"
#                         with dtls, "raw toud" with none (the TCP
#                         transport is TLS, so it needs dtls); also
#                         toud-tcp-psk: toud-tcp with a preshared key on
#                         both sides (added by a reload before its turn,
#                         removed by another after)
#   BENCH_JSON=FILE       also write every sample and the medians as JSON
set -u

if [ "$(id -u)" -ne 0 ]; then
	echo "tunnel.sh: run as root (it creates network namespaces)" >&2
	exit 1
fi
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
PINGS=${PINGS:-50}
OUTER=${OUTER:-4}
RR_SECONDS=${RR_SECONDS:-3}
if [ "${ENCRYPTION:-none}" = dtls ]; then
	PATHS=${PATHS:-raw toud toud-tcp}
else
	PATHS=${PATHS:-raw toud}
fi
TCP_PORT=6443
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TOUD=${TOUD_BIN:-$TOP/_build/src/toud}
export TOUCTL=${TOUCTL_BIN:-$TOP/_build/src/touctl}
export TOUD_E2E_ENCRYPTION=${ENCRYPTION:-none}
export TOUD_E2E_LOG_LEVEL=info
case $TOUD_E2E_ENCRYPTION in
none | dtls) ;;
*) echo "tunnel.sh: ENCRYPTION must be none or dtls" >&2; exit 1;;
esac
case " $PATHS " in
" raw "*) ;;
*) echo "tunnel.sh: PATHS must start with raw" >&2; exit 1;;
esac
case " $PATHS " in
*" toud-tcp "* | *" toud-tcp-psk "*)
	[ "$TOUD_E2E_ENCRYPTION" = dtls ] ||
	    { echo "tunnel.sh: toud-tcp needs ENCRYPTION=dtls (the TCP transport is TLS)" >&2; exit 1; };;
esac
# With dtls, lib.sh's conf_interface/conf_peer run `touctl genkey DIR`
# (which prints the "sha256:..." fingerprint line) for each node and write
# private-key, certificate and the peer's fingerprint into the configs.

. "$TOP/tests/e2e/lib.sh"
need_cmd iperf3 ping sockperf nft
e2e_init >/dev/null
HZ=$(getconf CLK_TCK)

topo_ab
conf_ab "$OUTER"
# b accepts the TCP transport; a's peer b (the last section) says where.
if [ "$TOUD_E2E_ENCRYPTION" = dtls ]; then
	sed -i "/^\[interface\]/a listen-tcp = $TCP_PORT" "$(conf_file b)"
	if [ "$OUTER" = 6 ]; then
		echo "endpoint-tcp = [fd20::2]:$TCP_PORT" >>"$(conf_file a)"
	else
		echo "endpoint-tcp = 10.200.0.2:$TCP_PORT" >>"$(conf_file a)"
	fi
fi
toud_start a || bail_out "toud on a did not start: $(tail -n 5 "$E2E_DIR/a.log")"
toud_start b || bail_out "toud on b did not start: $(tail -n 5 "$E2E_DIR/b.log")"
if [ "$OUTER" = 6 ]; then raw=fd20::2; else raw=10.200.0.2; fi
tun=10.77.0.2
wait_for 10 nsx a ping -n -q -c 1 -W 1 "$tun" || bail_out "no ping through the tunnel"
bg_start b "$E2E_DIR/iperf3-server.log" iperf3 -s -p 5201
wait_for 10 port_listening b t 5201 || bail_out "iperf3 server did not start"
bg_start b "$E2E_DIR/sockperf-server.log" sockperf server --tcp -i 0.0.0.0 -p 11111
wait_for 10 port_listening b t 11111 || bail_out "sockperf server did not start"

# udp_block on|off: a drops the tunnel's UDP both ways.  on: waits until
# a's peer b runs over TCP (a ping keeps data waiting, which is what makes
# a silent UDP path count as dead); off: until it is back on UDP.
udp_block() {
	local want out
	if [ "$1" = on ]; then
		out=$(nsx a nft -f - 2>&1 <<<"table inet bench_udp_block {
			chain out { type filter hook output priority 0; policy accept; udp dport 6080 drop; }
			chain in { type filter hook input priority 0; policy accept; udp sport 6080 drop; }
		}") || bail_out "nft in a: $out"
		want=tcp
	else
		nsx a nft delete table inet bench_udp_block || bail_out "nft delete in a"
		want=udp
	fi
	local deadline
	deadline=$(e2e_deadline 180)
	until [ "$(tq a peers.b.transport)" = $want ] && [ "$(tq b peers.a.transport)" = $want ]; do
		e2e_before "$deadline" ||
		    bail_out "the peers did not move to $want in 180 s: a sees $(tq a peers.b.transport), b $(tq b peers.a.transport)"
		nsx a ping -n -q -c 1 -W 1 "$tun" >/dev/null 2>&1
	done
	wait_for 30 nsx a ping -n -q -c 1 -W 1 "$tun" || bail_out "no ping through the tunnel on $want"
}

# psk_set on|off: both sides' peer (the last section of each config) gets
# the same preshared key, or loses it, by a reload; waits for the tunnel.
psk_set() {
	local n
	[ -f "$E2E_DIR/bench.psk" ] || "$TOUCTL" genpsk "$E2E_DIR/bench.psk" >/dev/null ||
	    bail_out "touctl genpsk failed"
	for n in a b; do
		if [ "$1" = on ]; then
			echo "preshared-key = $E2E_DIR/bench.psk" >>"$(conf_file $n)"
		else
			sed -i '/^preshared-key = /d' "$(conf_file $n)"
		fi
		nsx $n "$TOUCTL" -s "$(sock_of $n)" reload >/dev/null || bail_out "reload of $n failed"
	done
	wait_for 30 nsx a ping -n -q -c 1 -W 1 "$tun" || bail_out "no ping after preshared key $1"
}

# toud_ticks: utime + stime of both daemons, in clock ticks.
toud_ticks() {
	local n sum=0 f
	for n in a b; do
		f=$(sed 's/^.*) //' "/proc/${TOUD_PID[$n]}/stat")
		read -r -a f <<<"$f"
		sum=$((sum + f[11] + f[12]))     # utime, stime: fields 14 and 15
	done
	echo $sum
}

# iperf DEST STREAMS [PINGFILE]: prints "bits_per_second bytes"; with
# PINGFILE, pings DEST through the run into it.
iperf() {
	local out ppid=
	if [ -n "${3:-}" ]; then
		nsx a ping -n -i 0.05 -W 1 -w "$((DURATION > 2 ? DURATION - 1 : 1))" "$1" >"$3" 2>&1 &
		ppid=$!
	fi
	out=$(nsx a timeout $((DURATION + 30)) iperf3 -c "$1" -p 5201 -t "$DURATION" -P "$2" -J)
	local rc=$?
	[ -n "$ppid" ] && wait "$ppid"
	[ $rc = 0 ] || { echo "iperf3 -c $1 -P $2 failed" >&2; echo "0 0"; return 1; }
	python3 -c 'import json, sys
e = json.loads(sys.argv[1])["end"]["sum_received"]
print(int(e["bits_per_second"]), int(e["bytes"]))' "$out"
}

# median_time: the median "time=" of ping's output on stdin, in ms.
median_time() {
	python3 -c '
import re, statistics, sys
t = [float(m) for m in re.findall(r"time=([0-9.]+)", sys.stdin.read())]
print("%.4f" % statistics.median(t) if t else "nan")'
}

# rtt DEST: median ping RTT in ms
rtt() {
	nsx a ping -n -c "$PINGS" -i 0.05 -W 1 "$1" | median_time
}

# rr DEST: sockperf TCP ping-pong, "p50 p99" in microseconds.
rr() {
	nsx a sockperf ping-pong --tcp -i "$1" -p 11111 -t "$RR_SECONDS" -m 64 --full-rtt 2>&1 |
	    awk '/percentile 50.000/ { p50 = $NF } /percentile 99.000/ { p99 = $NF }
		END { print (p50 == "" ? "nan" : p50), (p99 == "" ? "nan" : p99) }'
}

samples=$E2E_DIR/samples
: >"$samples"
for r in $(seq "$ROUNDS"); do
	for path in $PATHS; do
		if [ $path = raw ]; then dest=$raw; else dest=$tun; fi
		[ $path = toud-tcp-psk ] && psk_set on
		case $path in toud-tcp*) udp_block on ;; esac
		for p in 1 4; do
			t0=$(toud_ticks)
			if [ $p = 1 ]; then
				read -r bps bytes < <(iperf "$dest" "$p" "$E2E_DIR/ping-load")
				echo "$r $path rtt_load $(median_time <"$E2E_DIR/ping-load")" >>"$samples"
			else
				read -r bps bytes < <(iperf "$dest" "$p")
			fi
			t1=$(toud_ticks)
			echo "$r $path tcp$p $bps" >>"$samples"
			if [ $path != raw ] && [ "$bytes" -gt 0 ]; then
				echo "$r $path cpu$p $(awk -v t=$((t1 - t0)) -v hz="$HZ" -v b="$bytes" \
				    'BEGIN { printf "%.3f", t / hz / (b / 1e9) }')" >>"$samples"
			fi
		done
		echo "$r $path rtt $(rtt "$dest")" >>"$samples"
		read -r p50 p99 < <(rr "$dest")
		echo "$r $path rr50 $p50" >>"$samples"
		echo "$r $path rr99 $p99" >>"$samples"
		case $path in toud-tcp*) udp_block off ;; esac
		[ $path = toud-tcp-psk ] && psk_set off
		echo "# round $r/$ROUNDS $path: $(grep "^$r $path " "$samples" | cut -d' ' -f3- | tr '\n' ' ')" >&2
	done
done

python3 - "$samples" "${BENCH_JSON:-}" "$TOUD_E2E_ENCRYPTION" "$OUTER" "$DURATION" $PATHS <<'EOF'
import collections, json, statistics, sys
s = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, path, metric, v = line.split()
    s[(path, metric)].append(float(v))
med = {k: statistics.median(v) for k, v in s.items()}
paths = sys.argv[6:]
rows = [("TCP, 1 stream (Mbit/s)", "tcp1", 1e-6, "%.0f"),
        ("TCP, 4 streams (Mbit/s)", "tcp4", 1e-6, "%.0f"),
        ("ping RTT, median (ms)", "rtt", 1, "%.3f"),
        ("ping RTT under 1 stream (ms)", "rtt_load", 1, "%.3f"),
        ("TCP RR p50 (us)", "rr50", 1, "%.1f"),
        ("TCP RR p99 (us)", "rr99", 1, "%.1f"),
        ("toud CPU s per GB, 1 stream", "cpu1", 1, "%.2f"),
        ("toud CPU s per GB, 4 streams", "cpu4", 1, "%.2f")]
print("toud %s over IPv%s veth, %s s per iperf3 run, median of %d rounds" %
      (sys.argv[3], sys.argv[4], sys.argv[5], len(s[("raw", "rtt")])))
print("%-30s" % "" + "".join("%12s %8s" % (p, "/raw" if p != "raw" else "")
                              for p in paths))
for name, m, scale, fmt in rows:
    raw = med.get(("raw", m))
    line = "%-30s" % name
    for p in paths:
        v = med.get((p, m))
        fr = fmt % (v * scale) if v is not None else "-"
        ratio = "%.2f" % (v / raw) if p != "raw" and raw and v is not None else ""
        line += "%12s %8s" % (fr, ratio)
    print(line)
if sys.argv[2]:
    json.dump({"encryption": sys.argv[3], "outer": sys.argv[4],
               "samples": {"%s.%s" % k: v for k, v in s.items()},
               "median": {"%s.%s" % k: v for k, v in med.items()}},
              open(sys.argv[2], "w"), indent=1)
EOF
