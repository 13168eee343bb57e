#!/bin/bash
# bench/scrape.sh - another peer's latency while the metrics endpoint is
# scraped, at many peers (bench/RESULTS.md).
#
# Server a has PEERS configured peers (bench/manypeers.py, random
# fingerprints, as t62 with T62_PEERS) and one real peer b, in its own
# namespace over a veth; DTLS, threads = on.  For each round, and in it for
# each binary of TOUD_BINS in turn (so that the binaries share the
# machine's state alike), a and b start afresh and b pings a's tunnel
# address PINGS times every 20 ms: with no scrape, then while a client on
# a's loopback starts a full scrape (with the token) every 125 ms, 8 a
# second, for SCRAPE_S seconds, each on its own connection and read to the
# end.  Printed: ping min/avg/max/mdev and 99th percentile for both, and
# the scrapes: offered, completed (200 and the whole text), the median and
# the longest duration, and the HTTP statuses (503: beyond the cap of 16).
#
# Usage (root): bench/scrape.sh
# Environment: TOUD_BINS="path/to/old/toud path/to/new/toud" (default: the
# build's), ROUNDS=2, PEERS=20000, PINGS=500, SCRAPE_S=14
. "$(dirname "$0")/../tests/e2e/lib.sh"
E2E_ENCRYPTION=dtls
E2E_THREADS=on
E2E_LOG_LEVEL=info
need_root
need_cmd curl
need_cmd python3

PEERS=${PEERS:-20000}
ROUNDS=${ROUNDS:-2}
PINGS=${PINGS:-500}
SCRAPE_S=${SCRAPE_S:-14}
read -r -a BINS <<<"${TOUD_BINS:-$TOUD}"

topo_ab
TOKEN=$(openssl rand -hex 24) || bail_out "openssl rand failed"
(umask 077 && echo "$TOKEN" >"$E2E_DIR/metrics.token") || bail_out "cannot write the token"
conf_interface a 6080 10.77.0.1/16
{
	echo "metrics = 127.0.0.1:9680"
	echo "metrics-token-file = $E2E_DIR/metrics.token"
} >>"$(conf_file a)"
python3 "$E2E_TOP/bench/manypeers.py" "$PEERS" "" >>"$(conf_file a)" ||
    bail_out "manypeers.py failed"
# b's tunnel address is beyond the PEERS hosts manypeers.py numbers
conf_peer a b 10.200.0.2:6080 10.77.250.1
conf_interface b 6080 10.77.250.1/16
conf_peer b a 10.200.0.1:6080 10.77.0.1

b_reaches_a() { nsx b ping -c 1 -W 1 10.77.0.1; }

# ping_stats LABEL: PINGS pings from b, "LABEL: min/avg/max/mdev ms" and
# the 99th percentile.
ping_stats() {
	local out=$E2E_DIR/ping.out rtt p99
	nsx b ping -i 0.02 -c "$PINGS" 10.77.0.1 >"$out" 2>&1
	rtt=$(awk -F' = ' '/^rtt/ { print $2 }' "$out")
	p99=$(sed -n 's/.* time=\([0-9.]*\) ms$/\1/p' "$out" | sort -n |
	    awk '{ a[NR] = $1 } END { print a[int(NR * 0.99 + 0.5)] }')
	diag "$1: ${rtt:-no answer}, 99th percentile ${p99:-none} ms"
}

# scraper OUT: a scrape every 125 ms for SCRAPE_S s, one line each in OUT
# (status, seconds, bytes); waits for the last.
scraper() {
	local i pids=()
	for ((i = 0; i < SCRAPE_S * 8; i++)); do
		nsx a curl -s --noproxy '*' --max-time 60 -H "Authorization: Bearer $TOKEN" \
		    -o /dev/null -w '%{http_code} %{time_total} %{size_download}\n' \
		    http://127.0.0.1:9680/metrics >>"$1" 2>/dev/null &
		pids+=($!)
		sleep 0.125
	done
	wait "${pids[@]}"
}

for ((r = 1; r <= ROUNDS; r++)); do
	for ((k = 0; k < ${#BINS[@]}; k++)); do
		bin=${BINS[k]}
		TOUD=$bin
		toud_start a || bail_out "toud did not start with $PEERS peers"
		toud_start b || bail_out "toud did not start on b"
		wait_for 60 b_reaches_a || bail_out "b does not reach a"
		diag "round $r, $bin"
		ping_stats "  ping, no scrapes"
		out=$E2E_DIR/scrapes.$r.$k
		: >"$out"
		scraper "$out" &
		scr=$!
		sleep 2
		ping_stats "  ping, 8 scrapes a second"
		wait "$scr"
		# the text's length varies by a few bytes (b's counters move):
		# a whole one is a 200 within 0.1 % of the longest
		full=$(sort -k3 -n "$out" | tail -n 1 | cut -d' ' -f3)
		awk -v f="$full" '$1 == 200 && $3 >= f - f / 1000 { print $2 }' "$out" | sort -n \
		    >"$out.whole"
		diag "  scrapes: $(wc -l <"$out") offered, $(wc -l <"$out.whole") completed" \
		    "(about $full bytes); duration median $(awk '{ a[NR] = $1 }
		    END { print a[int((NR + 1) / 2)] }' "$out.whole") s, longest $(tail -n 1 \
		    "$out.whole") s"
		diag "  statuses: $(cut -d' ' -f1 "$out" | sort | uniq -c | awk '{ printf "%s %s, ", $1, $2 }')"
		ping_stats "  ping, after them"
		toud_stop b
		toud_stop a
	done
done
ok "measured"
done_testing
