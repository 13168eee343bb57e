#!/bin/bash
# bench/tunnel.sh - toud against the raw veth path, side by side.
#
# Two namespaces on a veth; toud in each.  For every round, first the raw
# path (the veth addresses), then the tunnel (the tunnel addresses):
#   - iperf3 TCP throughput, 1 stream and 4 streams (-P 4),
#   - CPU seconds the two toud processes spent per GB moved (utime + stime
#     from /proc/PID/stat, before and after each iperf3 run),
#   - ping RTT, the median of PINGS pings at 0.05 s.
# The table shows the median over the rounds and the ratio toud / raw.
#
# Usage (root): bench/tunnel.sh
# Environment:
#   TOUD_BIN, TOUCTL_BIN  the binaries (default _build/src/toud, touctl)
#   ENCRYPTION            none (default) or dtls (keys from `touctl genkey`)
#   ROUNDS=3 DURATION=5 PINGS=50 OUTER=4|6 (family of the underlay)
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
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TOUD=${TOUD_BIN:-$TOP/_build/src/toud}
export TOUCTL=${TOUCTL_BIN:-$TOP/_build/src/touctl}
export TOUD_E2E_ENCRYPTION=${ENCRYPTION:-none}
export TOUD_E2E_LOG_LEVEL=info
case $TOUD_E2E_ENCRYPTION in
none | dtls) ;;
*) echo "tunnel.sh: ENCRYPTION must be none or dtls" >&2; exit 1;;
esac
# With dtls, lib.sh's conf_interface/conf_peer run `touctl genkey DIR`
# (which prints the "sha256:..." fingerprint line) for each node and write
# private-key, certificate and the peer's fingerprint into the configs.

. "$TOP/tests/e2e/lib.sh"
need_cmd iperf3 ping
e2e_init >/dev/null
HZ=$(getconf CLK_TCK)

topo_ab
conf_ab "$OUTER"
toud_start a || bail_out "toud on a did not start: $(tail -n 5 "$E2E_DIR/a.log")"
toud_start b || bail_out "toud on b did not start: $(tail -n 5 "$E2E_DIR/b.log")"
if [ "$OUTER" = 6 ]; then raw=fd20::2; else raw=10.200.0.2; fi
tun=10.77.0.2
wait_for 10 nsx a ping -n -q -c 1 -W 1 "$tun" || bail_out "no ping through the tunnel"
bg_start b "$E2E_DIR/iperf3-server.log" iperf3 -s -p 5201
wait_for 10 port_listening b t 5201 || bail_out "iperf3 server did not start"

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

# iperf DEST STREAMS: prints "bits_per_second bytes"
iperf() {
	local out
	out=$(nsx a timeout $((DURATION + 30)) iperf3 -c "$1" -p 5201 -t "$DURATION" -P "$2" -J) ||
	    { echo "iperf3 -c $1 -P $2 failed" >&2; echo "0 0"; return 1; }
	python3 -c 'import json, sys
e = json.loads(sys.argv[1])["end"]["sum_received"]
print(int(e["bits_per_second"]), int(e["bytes"]))' "$out"
}

# rtt DEST: median ping RTT in ms
rtt() {
	nsx a ping -n -c "$PINGS" -i 0.05 -W 1 "$1" | python3 -c '
import re, statistics, sys
t = [float(m) for m in re.findall(r"time=([0-9.]+)", sys.stdin.read())]
print("%.4f" % statistics.median(t) if t else "nan")'
}

samples=$E2E_DIR/samples
: >"$samples"
for r in $(seq "$ROUNDS"); do
	for path in raw toud; do
		if [ $path = raw ]; then dest=$raw; else dest=$tun; fi
		for p in 1 4; do
			t0=$(toud_ticks)
			read -r bps bytes < <(iperf "$dest" "$p")
			t1=$(toud_ticks)
			echo "$r $path tcp$p $bps" >>"$samples"
			if [ $path = toud ] && [ "$bytes" -gt 0 ]; then
				echo "$r $path cpu$p $(awk -v t=$((t1 - t0)) -v hz="$HZ" -v b="$bytes" \
				    'BEGIN { printf "%.3f", t / hz / (b / 1e9) }')" >>"$samples"
			fi
		done
		echo "$r $path rtt $(rtt "$dest")" >>"$samples"
		echo "# round $r/$ROUNDS $path: $(grep "^$r $path " "$samples" | cut -d' ' -f3- | tr '\n' ' ')" >&2
	done
done

python3 - "$samples" "${BENCH_JSON:-}" "$TOUD_E2E_ENCRYPTION" "$OUTER" "$DURATION" <<'EOF'
import collections, json, statistics, sys
s = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, path, metric, v = line.split()
    s[(path, metric)].append(float(v))
med = {k: statistics.median(v) for k, v in s.items()}
rows = [("TCP, 1 stream (Mbit/s)", "tcp1", 1e-6, "%.0f"),
        ("TCP, 4 streams (Mbit/s)", "tcp4", 1e-6, "%.0f"),
        ("ping RTT, median (ms)", "rtt", 1, "%.3f"),
        ("toud CPU s per GB, 1 stream", "cpu1", 1, "%.2f"),
        ("toud CPU s per GB, 4 streams", "cpu4", 1, "%.2f")]
print("toud %s over IPv%s veth, %s s per iperf3 run, median of %d rounds" %
      (sys.argv[3], sys.argv[4], sys.argv[5], len(s[("raw", "rtt")])))
print("%-30s %12s %12s %8s" % ("", "raw veth", "toud", "toud/raw"))
for name, m, scale, fmt in rows:
    raw, tou = med.get(("raw", m)), med.get(("toud", m))
    fr = lambda v: fmt % (v * scale) if v is not None else "-"
    ratio = "%.2f" % (tou / raw) if raw and tou is not None else "-"
    print("%-30s %12s %12s %8s" % (name, fr(raw), fr(tou), ratio))
if sys.argv[2]:
    json.dump({"encryption": sys.argv[3], "outer": sys.argv[4],
               "samples": {"%s.%s" % k: v for k, v in s.items()},
               "median": {"%s.%s" % k: v for k, v in med.items()}},
              open(sys.argv[2], "w"), indent=1)
EOF
