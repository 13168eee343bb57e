#!/bin/bash
# t62-metrics-readers: readers of the metrics endpoint cannot make toud
# hold memory.  A server with PEERS configured peers (a text of megabytes)
# and a metrics token; READERS clients (the attacker, metrics-reader)
# each ask for the whole text and never read a byte of it.  While they
# hang on, toud's peak RSS stays within a few MiB of where it was (the
# text is rendered in parts as a reader takes them, a few connections at
# a time), the control socket answers, and once they are gone RSS is back
# within 10 % of where it was and a scrape returns every peer.
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
E2E_LOG_LEVEL=info
need_root
need_cmd curl
need_cmd python3
need_cmd ss
need_helper metrics-reader

PEERS=${T62_PEERS:-5000}
READERS=${T62_READERS:-40}
# T62_RSS=no: RSS is not compared (CI's sanitizer pass, whose allocator
# keeps freed memory in quarantine); everything else is checked.
RSS=${T62_RSS:-yes}
MANYPEERS=$E2E_TOP/bench/manypeers.py

netns_add a
TOKEN=$(openssl rand -hex 24) || bail_out "openssl rand failed"
(umask 077 && echo "$TOKEN" >"$E2E_DIR/metrics.token") || bail_out "cannot write the token"
conf_interface a 6080 10.77.0.1/16
{
	echo "metrics = 127.0.0.1:9680"
	echo "metrics-token-file = $E2E_DIR/metrics.token"
} >>"$(conf_file a)"
python3 "$MANYPEERS" "$PEERS" "" >>"$(conf_file a)" || bail_out "manypeers.py failed"
toud_start a || bail_out "toud did not start with $PEERS peers"
pid=${TOUD_PID[a]}

scrape() {
	nsx a curl -sS --noproxy '*' --max-time 60 -H "Authorization: Bearer $TOKEN" \
	    -o "$E2E_DIR/scrape.out" -w '%{http_code}' http://127.0.0.1:9680/metrics
}
kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
conns() { nsx a ss -Htn state established '( sport = :9680 )' | wc -l; }
no_conns() { [ "$(conns)" -eq 0 ]; }

# one scrape first: what a reader asks for, and the memory it leaves
is "$(scrape)" 200 "a scrape with the token is answered"
bytes=$(stat -c %s "$E2E_DIR/scrape.out")
is "$(grep -c '^toud_peer_up{' "$E2E_DIR/scrape.out")" "$PEERS" \
    "with every peer ($bytes bytes of text)"
wait_for 10 no_conns
rss0=$(kib VmRSS)
echo 5 >"/proc/$pid/clear_refs" || bail_out "cannot reset the peak RSS"

# READERS readers that send a request and read nothing for 20 s
bg_start a "$E2E_DIR/readers.out" "$E2E_HELPERS/metrics-reader" 127.0.0.1 9680 "$E2E_DIR/metrics.token" \
    "$READERS" 20
readers=$BG_PID
wait_for 30 grep -q '^connected ' "$E2E_DIR/readers.out" ||
    bail_out "the readers did not connect: $(cat "$E2E_DIR/readers.out")"
diag "readers: $(cat "$E2E_DIR/readers.out")"
t0=$(e2e_now)
out=$(nsx a "$TOUCTL" -s "$(sock_of a)" show p0 --json 2>&1)
is "$?" 0 "the control socket answers while they hang on ($(($(e2e_now) - t0)) ms)"
proc_wait "$readers" 60
is "$PROC_RC" 0 "the readers ran and left"
check "their connections are gone" wait_for 20 no_conns
hwm=$(kib VmHWM)
rss1=$(kib VmRSS)
diag "RSS before $rss0 KiB, peak while $READERS readers hung on $hwm KiB, after $rss1 KiB"
if [ "$RSS" = yes ]; then
	cmp_ok "$((hwm - rss0))" -le 16384 "the readers raised toud's RSS by at most 16 MiB"
	cmp_ok "$rss1" -le "$((rss0 + rss0 / 10))" "RSS is back within 10 % once they are gone"
fi
refused=$(tq a interface.events.metrics_refused 2>/dev/null)
cmp_ok "${refused:-0}" -ge $((READERS - 16)) \
    "the connections beyond the cap of 16 were refused ($refused)"

is "$(scrape)" 200 "a scrape afterwards is answered"
is "$(grep -c '^toud_peer_up{' "$E2E_DIR/scrape.out")" "$PEERS" "with every peer"
check "toud still running" toud_alive a
done_testing
}
