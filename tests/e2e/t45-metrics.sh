#!/bin/bash
# t45-metrics: `touctl metrics` and the HTTP endpoint of [interface]
# metrics.  a serves on 127.0.0.1, b on [::1].  After a transfer, once the
# counters have stopped moving, both texts parse with Prometheus' own parser
# (python3-prometheus-client), each family has its # HELP and # TYPE once,
# every sample names the interface, and the values are those of `touctl
# show --json`: traffic counters, drops and events, state, handshake time,
# endpoint and cipher.  The endpoint serves /metrics only, GET and HEAD
# only.  `toud -t` refuses a non-loopback address with FILE:LINE unless
# metrics-allow-remote = yes; a reload moves the endpoint (then reachable
# from b), refuses an address in use and keeps the old one, and turns it
# off.  Who reads what: with metrics-token-file only a request with the
# token gets the text (401 without it, or with another), and without it
# the public text has no peer, address, fingerprint nor error; a Host that
# is not loopback's is refused (403: DNS rebinding), also on 0.0.0.0 for a
# request that came in on the loopback; refusals are counted.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl

# The parser is Debian's python3-prometheus-client (scripts/deps.sh), found
# by whichever python3 has it.
PROM_PY=
for py in python3 /usr/bin/python3; do
	if "$py" -c 'import prometheus_client.parser' 2>/dev/null; then
		PROM_PY=$py
		break
	fi
done
[ -n "$PROM_PY" ] || bail_out "python3-prometheus-client is missing (run scripts/deps.sh)"

ctl() {
	local node=$1
	shift
	nsx "$node" "$TOUCTL" -s "$(sock_of "$node")" "$@"
}

# metrics_vs_json TEXT_FILE JSON_FILE JSON_AFTER_FILE PEER T0 T1: parse the
# text and compare it with the JSON of the same moment (the second JSON read
# between unix times T0 and T1).  Prints what differs;
# status 0: equal, 1: differs, 2: the counters moved between the two JSON
# reads (nothing to conclude: try again).
metrics_vs_json() {
	"$PROM_PY" - "$@" <<'EOF'
import json, sys
from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1], encoding="utf-8").read()
js, after = (json.load(open(f)) for f in sys.argv[2:4])
peer = sys.argv[4]
bad = []

def counters(j):
    p = [x for x in j["peers"] if x["name"] == peer][0]
    keys = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "drops", "events", "state",
            "last_handshake")
    return json.dumps([{k: p[k] for k in keys}, j["interface"]["drops"],
                       j["interface"]["events"]], sort_keys=True)

if counters(js) != counters(after):
    print("the counters moved between the two reads")
    sys.exit(2)

# # HELP and # TYPE: once per family, HELP first.
seen = {}
for line in text.splitlines():
    if line.startswith("# "):
        kind, name = line.split(" ")[1:3]
        seen.setdefault(name, []).append(kind)
for name, kinds in seen.items():
    if kinds != ["HELP", "TYPE"]:
        bad.append("%s: %s" % (name, kinds))

fams = {f.name: f for f in text_string_to_metric_families(text)}
samples = {}
for f in fams.values():
    for s in f.samples:
        if s.labels.get("interface") != js["interface"]["name"]:
            bad.append("no interface label: %s %s" % (s.name, s.labels))
        key = (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "interface")))
        if key in samples:
            bad.append("duplicate sample %s" % (key,))
        samples[key] = s.value

def get(name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))

def eq(what, got, want):
    if got != want:
        bad.append("%s: metrics %r, show --json %r" % (what, got, want))

p = [x for x in js["peers"] if x["name"] == peer][0]
for m, k in (("receive_bytes", "rx_bytes"), ("transmit_bytes", "tx_bytes"),
             ("receive_packets", "rx_packets"), ("transmit_packets", "tx_packets")):
    eq(k, get("toud_peer_%s_total" % m, peer=peer), float(p[k]))
for kind, label in (("drops", "reason"), ("events", "event")):
    got = {dict(k[1])[label]: v for k, v in samples.items()
           if k[0] == "toud_peer_%s_total" % kind and dict(k[1]).get("peer") == peer}
    eq("peer " + kind, got, {k: float(v) for k, v in p[kind].items()})
    got = {dict(k[1])[label]: v for k, v in samples.items() if k[0] == "toud_%s_total" % kind}
    eq("interface " + kind, got, {k: float(v) for k, v in js["interface"][kind].items()})
eq("peer losses", get("toud_peer_losses_total", peer=peer), float(p["losses"]))
eq("interface losses", get("toud_losses_total"), float(js["interface"]["losses"]))
eq("state", get("toud_peer_state", peer=peer, state=p["state"]), 1.0)
eq("states", sum(v for k, v in samples.items()
                 if k[0] == "toud_peer_state" and dict(k[1])["peer"] == peer), 1.0)
eq("up", get("toud_peer_up", peer=peer), 1.0 if p["state"] == "up" else 0.0)
eq("peers up", get("toud_peers", state="up"),
   float(sum(x["state"] == "up" for x in js["peers"])))
eq("last_handshake", get("toud_peer_last_handshake_timestamp_seconds", peer=peer),
   None if p["last_handshake"] is None else float(p["last_handshake"]))
eq("endpoint and cipher", get("toud_peer_info", peer=peer, endpoint=p["endpoint"] or "",
                              cipher=p["cipher"] or ""), 1.0)
reasons = [dict(k[1])["reason"] for k in samples
           if k[0] == "toud_peer_last_error" and dict(k[1]).get("peer") == peer]
eq("last_error as a reason", len(reasons), 1 if p.get("last_error") else 0)
eq("endpoint changes", get("toud_peer_endpoint_changes_total", peer=peer) is not None, True)
eq("mtu", get("toud_tun_mtu_bytes"), float(js["interface"]["mtu"]))
eq("sessions", get("toud_sessions"), float(js["interface"]["sessions"]))
eq("half_open", get("toud_half_open_handshakes"), float(js["interface"]["half_open"]))
rx = get("toud_peer_last_receive_timestamp_seconds", peer=peer)
# last_rx of the second JSON is whole seconds before it was read, some time
# between t0 and t1; the timestamp is a unix time.
t0, t1 = float(sys.argv[5]), float(sys.argv[6])
ago = [x for x in after["peers"] if x["name"] == peer][0]["last_rx"]
if rx is None or not t0 - ago - 1.1 <= rx <= t1 - ago + 0.1:
    bad.append("last receive %r, show --json: %s s ago between %.3f and %.3f" % (rx, ago, t0, t1))
for f, t in (("toud_peer_receive_bytes", "counter"), ("toud_peer_up", "gauge")):
    if f not in fams or fams[f].type != t or not fams[f].documentation:
        bad.append("family %s: not a documented %s" % (f, t))
print("\n".join(bad) if bad else "%d samples in %d families agree" % (len(samples), len(fams)))
sys.exit(1 if bad else 0)
EOF
}

# same_samples TEXT1 TEXT2: the two texts parse to the same samples (the
# receive time derived from two clocks may differ by a millisecond).
same_samples() {
	"$PROM_PY" - "$1" "$2" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
def load(f):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(open(f, encoding="utf-8").read())
            for s in fam.samples}
a, b = load(sys.argv[1]), load(sys.argv[2])
diff = [k for k in set(a) | set(b) if k not in a or k not in b or
        abs(a[k] - b[k]) > (0.01 if "timestamp" in k[0] else 0)]
print("differ: %s" % sorted(diff) if diff else "%d samples, the same" % len(a))
sys.exit(1 if diff else 0)
EOF
}

TOKEN=$(openssl rand -hex 24) || bail_out "openssl rand failed"
(umask 077 && echo "$TOKEN" >"$E2E_DIR/metrics.token") || bail_out "cannot write the token"
AUTH="Authorization: Bearer $TOKEN"

topo_ab
conf_interface a 6080 10.77.0.1/24 fd77::1/64
echo "metrics = 127.0.0.1:9680" >>"$(conf_file a)"
echo "metrics-token-file = $E2E_DIR/metrics.token" >>"$(conf_file a)"
conf_peer a b 10.200.0.2:6080 "10.77.0.2, fd77::2"
conf_interface b 6080 10.77.0.2/24 fd77::2/64
echo "metrics = [::1]:9680" >>"$(conf_file b)"
echo "metrics-token-file = $E2E_DIR/metrics.token" >>"$(conf_file b)"
conf_peer b a 10.200.0.1:6080 "10.77.0.1, fd77::1"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

mkdir -p "$E2E_DIR/www"
make_file "$E2E_DIR/www/blob" 2048
http_serve b 10.77.0.2 8000 "$E2E_DIR/www"
fetch_check a http://10.77.0.2:8000/blob "$E2E_DIR/www/blob" "2 MiB from b to a through the tunnel"
ping_check a fd77::2 "ping b's IPv6 tunnel address"
proc_stop "$HTTP_PID" TERM 5

# --- the text, from touctl and over HTTP, against show --json -----------------
# compare NODE PEER URL: NODE's texts and its show --json of the same quiet
# moment, read again while something moved (IPv6 chatter counts as a drop);
# files NODE.prom, NODE.http, NODE.hdr; ST_CTL/ST_HTTP and OUT_CTL/OUT_HTTP.
compare() {
	local n=$1 peer=$2 url=$3 attempt t0 t1
	for attempt in 1 2 3 4 5; do
		show_settled "$n" 30 >"$E2E_DIR/$n.json" || bail_out "$n's counters never settled in 30 s"
		ctl "$n" metrics >"$E2E_DIR/$n.prom" 2>"$E2E_DIR/$n.prom.err"
		RC_CTL=$?
		nsx "$n" curl -sS -g --noproxy '*' --max-time 10 -H "$AUTH" -D "$E2E_DIR/$n.hdr" \
		    -o "$E2E_DIR/$n.http" "$url" 2>"$E2E_DIR/$n.http.err"
		RC_HTTP=$?
		t0=$EPOCHREALTIME
		show_json "$n" >"$E2E_DIR/$n-after.json" || bail_out "touctl show on $n failed"
		t1=$EPOCHREALTIME
		OUT_CTL=$(metrics_vs_json "$E2E_DIR/$n.prom" "$E2E_DIR/$n.json" \
		    "$E2E_DIR/$n-after.json" "$peer" "$t0" "$t1")
		ST_CTL=$?
		OUT_HTTP=$(metrics_vs_json "$E2E_DIR/$n.http" "$E2E_DIR/$n.json" \
		    "$E2E_DIR/$n-after.json" "$peer" "$t0" "$t1")
		ST_HTTP=$?
		[ "$ST_CTL" = 2 ] || [ "$ST_HTTP" = 2 ] || return 0
		diag "$n, attempt $attempt: $OUT_CTL"
	done
}

compare a b http://127.0.0.1:9680/metrics
is "$RC_CTL" 0 "touctl metrics exits 0 $(cat "$E2E_DIR/a.prom.err")"
is "$RC_HTTP" 0 "curl http://127.0.0.1:9680/metrics in a's namespace succeeds $(cat "$E2E_DIR/a.http.err")"
diag "touctl metrics: $OUT_CTL"
is "$ST_CTL" 0 "touctl metrics parses and agrees with show --json"
diag "HTTP: $OUT_HTTP"
is "$ST_HTTP" 0 "the HTTP text parses and agrees with show --json"
check "both texts carry the same samples" same_samples "$E2E_DIR/a.prom" "$E2E_DIR/a.http"
check "the reply is 200 OK" grep -q '^HTTP/1.1 200 OK' "$E2E_DIR/a.hdr"
check "with the text format's content type" \
    grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$E2E_DIR/a.hdr"
rx=$(json_get "$(cat "$E2E_DIR/a.json")" peers.b.rx_bytes)
cmp_ok "$rx" -ge 2097152 "the transfer is in the counters ($rx bytes received from b)"
if [ "$E2E_ENCRYPTION" = dtls ]; then
	check "the cipher is a label of toud_peer_info" \
	    grep -q '^toud_peer_info{interface="tou0",peer="b",endpoint="10.200.0.2:6080",cipher="ECDHE' \
	    "$E2E_DIR/a.prom"
fi

# b serves on [::1]: its own view of a.
compare b a 'http://[::1]:9680/metrics'
is "$RC_HTTP" 0 "curl http://[::1]:9680/metrics in b's namespace succeeds"
diag "b: $OUT_HTTP"
is "$ST_HTTP" 0 "b's text over IPv6 loopback agrees with its show --json"
is "$ST_CTL" 0 "and so does its touctl metrics"

code() {
	nsx a curl -sS --noproxy '*' --max-time 10 -H "$AUTH" -o /dev/null -w '%{http_code}' "$@"
}
is "$(code http://127.0.0.1:9680/)" 404 "GET / is 404: only /metrics is served"
is "$(code http://127.0.0.1:9680/metrics/x)" 404 "GET /metrics/x is 404"
is "$(code -X POST http://127.0.0.1:9680/metrics)" 501 "POST /metrics is refused"
is "$(code -I http://127.0.0.1:9680/metrics)" 200 "HEAD /metrics is 200"
is "$(code 'http://127.0.0.1:9680/metrics?x=1')" 200 "a query string is ignored"
err=$(ctl a metrics extra 2>&1)
is "$?" 2 "touctl metrics takes no argument"

# --- who reads what --------------------------------------------------------------
refused0=$(tq a interface.events.metrics_refused 2>/dev/null)
[[ $refused0 =~ ^[0-9]+$ ]] || refused0=0       # absent until it counts
anon() {
	nsx a curl -sS --noproxy '*' --max-time 10 -o "$E2E_DIR/anon.out" -D "$E2E_DIR/anon.hdr" \
	    -w '%{http_code}' "$@"
}
is "$(anon http://127.0.0.1:9680/metrics)" 401 "without the token: 401"
# a local user who is not root nor toud's (nobody), as touctl show refuses them
nobody() {
	nsx a setpriv --reuid=65534 --regid=65534 --clear-groups curl -sS --noproxy '*' \
	    --max-time 10 -o /dev/null -w '%{http_code}' "$@"
}
is "$(nobody http://127.0.0.1:9680/metrics)" 401 "a local unprivileged user without the token: 401"
check "asking for a bearer token" grep -qi '^WWW-Authenticate: Bearer' "$E2E_DIR/anon.hdr"
check "and no metric in the reply" bash -c "! grep -q toud_ '$E2E_DIR/anon.out'"
is "$(anon -H "Authorization: Bearer ${TOKEN%?}x" http://127.0.0.1:9680/metrics)" 401 \
    "with another token: 401"
is "$(anon -H "Authorization: Basic $TOKEN" http://127.0.0.1:9680/metrics)" 401 \
    "with the token but another scheme: 401"
# a page whose name is rebound to 127.0.0.1 sends its own name as Host
is "$(code -H 'Host: attacker.example:9680' http://127.0.0.1:9680/metrics)" 403 \
    "a foreign Host is refused (403), even with the token"
is "$(code -H 'Host: localhost:9680' http://127.0.0.1:9680/metrics)" 200 "Host: localhost is served"
refused=$(tq a interface.events.metrics_refused)
is "$((refused - refused0))" 5 "the five refusals are counted (metrics_refused)"

# without metrics-token-file: the public text, the interface's families only
sed -i '/^metrics-token-file = /d' "$(conf_file a)"
check "a reloads without metrics-token-file" ctl a reload
is "$(anon http://127.0.0.1:9680/metrics)" 200 "without the token file anyone local reads the public text"
check "which counts the peers by state" grep -q '^toud_peers{interface="tou0",state="up"} 1$' \
    "$E2E_DIR/anon.out"
check "but names no peer" bash -c "! grep -q 'peer=\"' '$E2E_DIR/anon.out'"
check "nor its address" bash -c "! grep -q '10\.200\.0\.2' '$E2E_DIR/anon.out'"
check "nor the key's fingerprint" bash -c "! grep -q 'fingerprint=' '$E2E_DIR/anon.out'"
out=$(nsx a setpriv --reuid=65534 --regid=65534 --clear-groups curl -sS --noproxy '*' \
    --max-time 10 http://127.0.0.1:9680/metrics)
check "an unprivileged user reads the public text too" grep -q '^toud_peers{' <<<"$out"
names_no_peer() { ! grep -q 'peer=' <<<"$1"; }
check "which names no peer" names_no_peer "$out"
check "touctl metrics still shows the peers" grep -q '^toud_peer_up{interface="tou0",peer="b"} 1$' \
    <<<"$(ctl a metrics)"
sed -i "/^metrics = /a metrics-token-file = $E2E_DIR/metrics.token" "$(conf_file a)"
check "a reloads with the token file again" ctl a reload
is "$(anon http://127.0.0.1:9680/metrics)" 401 "and the token is needed again"

# --- toud -t: loopback only, unless the file says otherwise --------------------
bad=$E2E_DIR/remote.conf
sed 's/^metrics = .*/metrics = 10.200.0.1:9681/' "$(conf_file a)" >"$bad"
line=$(grep -n '^metrics = ' "$bad" | cut -d: -f1)
err=$("$TOUD" -t -c "$bad" 2>&1)
is "$?" 1 "toud -t refuses metrics on a non-loopback address"
diag "$err"
check "naming the file and line" grep -q "^$bad:$line: metrics: 10.200.0.1:9681 is not a loopback address" \
    <<<"$err"
check "and the key that allows it" grep -q 'metrics-allow-remote = yes' <<<"$err"
sed -i "${line}a metrics-allow-remote = yes" "$bad"
check "toud -t accepts it with metrics-allow-remote = yes" "$TOUD" -t -c "$bad"

# --- reload ------------------------------------------------------------------
cp "$bad" "$(conf_file a)"
check "a reloads with metrics on 10.200.0.1:9681" ctl a reload
out=$(nsx b curl -sS --noproxy '*' --max-time 10 -H "$AUTH" http://10.200.0.1:9681/metrics)
is "$?" 0 "b reaches a's endpoint at its new address"
check "and reads a's metrics there" grep -q '^toud_peer_up{interface="tou0",peer="b"} 1$' <<<"$out"
isnt_listening() { ! port_listening "$@"; }
check "127.0.0.1:9680 is closed" wait_for 5 isnt_listening a t 9680

bg_start a "$E2E_DIR/holder.log" python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 9682)); s.listen(); time.sleep(120)'
holder=$BG_PID
wait_for 10 port_listening a t 9682 || bail_out "the port holder did not start"
sed -i 's/^metrics = .*/metrics = 127.0.0.1:9682/' "$(conf_file a)"
err=$(ctl a reload 2>&1)
is "$?" 1 "a reload to an address in use is refused"
diag "$err"
check "saying why" grep -q "metrics: cannot listen on 127.0.0.1:9682: Address already in use; nothing changed" \
    <<<"$err"
is "$(nsx b curl -sS --noproxy '*' --max-time 10 -H "$AUTH" -o /dev/null -w '%{http_code}' \
    http://10.200.0.1:9681/metrics)" 200 "the old endpoint still serves"
proc_stop "$holder" TERM 5

# 0.0.0.0 takes connections to 127.0.0.1 too: one that comes in there has
# its Host checked as on 127.0.0.1 (a page rebound to it); a remote one not
sed -i 's/^metrics = .*/metrics = 0.0.0.0:9683/' "$(conf_file a)"
check "a reloads with metrics on 0.0.0.0:9683" ctl a reload
check "10.200.0.1:9681 is closed" wait_for 5 isnt_listening a t 9681
is "$(code -H 'Host: attacker.example:9683' http://127.0.0.1:9683/metrics)" 403 \
    "on 0.0.0.0, a foreign Host that came in on the loopback is refused (403)"
is "$(code http://127.0.0.1:9683/metrics)" 200 "and 127.0.0.1's own Host is served"
is "$(nsx b curl -sS --noproxy '*' --max-time 10 -H "$AUTH" -H 'Host: a.example:9683' \
    -o /dev/null -w '%{http_code}' http://10.200.0.1:9683/metrics)" 200 \
    "a remote scraper's Host is not checked"

sed -i 's/^metrics = .*/metrics = off/' "$(conf_file a)"
check "a reloads with metrics = off" ctl a reload
check "0.0.0.0:9683 is closed" wait_for 5 isnt_listening a t 9683
check "touctl metrics works without the endpoint" ctl a metrics

check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
