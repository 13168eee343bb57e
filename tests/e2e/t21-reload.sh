#!/bin/bash
# t21-reload: a reload applies only the difference.  a has peers b and d;
# while a rate-limited download from b runs, a reload adds peer c and
# removes peer d: c's routes appear, d's go, b's session and the download
# go on untouched (sha256), and c is reachable.  A file with a syntax error
# makes `touctl reload` exit 1 with "FILE:LINE: message" and changes
# nothing; a change of an [interface] key that needs a restart (listen) is
# refused and changes nothing; SIGHUP does what `touctl reload` does.
#
#   b ul0 --- ul0 a ul1 --- ul0 c        (d exists only in a's config)
#   10.200.0.2  .1  10.200.1.1  10.200.1.3
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls             # session IDs tell a kept session from a new one
need_root
need_cmd curl ping tc

# routes NODE: toud's routes (proto 116), both families, one per line.
routes() {
	{ nsx "$1" ip -4 route show proto 116; nsx "$1" ip -6 route show proto 116; } 2>&1 |
	    sed 's/ *$//' | sort
}

# route_dsts NODE: just the destinations, on one line.
route_dsts() {
	routes "$1" | awk '{ print $1 }' | sort | tr '\n' ' ' | sed 's/ $//'
}

# peers_of NODE: "name:session_id ..." of NODE's peers.
peers_of() {
	local j
	j=$(show_json "$1") || { echo "touctl-failed"; return 1; }
	python3 -c '
import json, sys
print(" ".join(sorted("%s:%s" % (p["name"], p["session_id"] or "null")
                      for p in json.loads(sys.argv[1])["peers"])))' "$j"
}

# want_dsts: the destinations of the routes for a's peers in $PEERS.  The
# peers' tunnel addresses lie in a's own prefixes (10.77.0.0/24,
# fd77::/64), whose connected routes cover them: only allowed-ips get one.
want_dsts() {
	local p dsts=()
	for p in $PEERS; do
		case $p in
		c) dsts+=(192.168.53.0/24);;
		d) dsts+=(192.168.54.0/24);;
		esac
	done
	printf '%s\n' "${dsts[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

# write_conf_a PEER...: a's config with these peers, in this order.
write_conf_a() {
	local p
	conf_interface a 6080 10.77.0.1/24 fd77::1/64
	for p in "$@"; do
		case $p in
		b) conf_peer a b 10.200.0.2:6080 "10.77.0.2, fd77::2";;
		c) conf_peer a c 10.200.1.3:6080 "10.77.0.3, fd77::3" 192.168.53.0/24;;
		d) conf_peer a d 10.200.2.4:6080 "10.77.0.4, fd77::4" 192.168.54.0/24;;
		esac
	done
	PEERS="$*"
}

# reload_a: touctl reload on a; RELOAD_RC, RELOAD_OUT (stdout), RELOAD_ERR.
reload_a() {
	RELOAD_OUT=$("$TOUCTL" -s "$(sock_of a)" reload 2>"$E2E_DIR/reload.err")
	RELOAD_RC=$?
	RELOAD_ERR=$(cat "$E2E_DIR/reload.err")
}

# routes_now_match: a's toud routes are exactly those of $PEERS.
# shellcheck disable=SC2317
routes_now_match() {
	[ "$(route_dsts a)" = "$(want_dsts)" ]
}

netns_add a b c
tcp_small_buffers a b c
veth a ul0 b ul0 "10.200.0.1/24" "10.200.0.2/24"
veth a ul1 c ul0 "10.200.1.1/24" "10.200.1.3/24"
write_conf_a b d
conf_interface b 6080 10.77.0.2/24 fd77::2/64
conf_peer b a 10.200.0.1:6080 "10.77.0.1, fd77::1"
conf_interface c 6080 10.77.0.3/24 fd77::3/64
conf_peer c a 10.200.1.1:6080 "10.77.0.1, fd77::1"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
toud_start c || bail_out "toud on c did not start"
conf=$(conf_file a)
pid=${TOUD_PID[a]}
ping_check a 10.77.0.2 "ping a to b through the tunnel"
is "$(route_dsts a)" "$(want_dsts)" "a has routes for b and d (proto 116): $(route_dsts a)"
is "$(nsx a ip route get 192.168.54.1 | head -n 1 | awk '{ print $3 }')" tou0 "d's allowed-ips go into the tunnel"

# --- a reload during a download -------------------------------------------------

# The download must outlast the reload and the checks after it however long
# they take on a crowded machine: b's link is held to 1 Mbit/s (16 MiB would
# take over two minutes) until those checks are done, then let go.
mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 16384
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"
sid_b=$(tq a peers.b.session_id)
out=$E2E_DIR/f.out
nsx b tc qdisc replace dev ul0 root tbf rate 1mbit burst 32kb latency 400ms ||
    bail_out "tc tbf on b's link"
bg_start a "$E2E_DIR/curl.log" curl -sS --noproxy '*' --max-time 600 \
    -w '%{size_download} %{time_total} %{num_connects}\n' -o "$out" http://10.77.0.2:8080/f
curl_pid=$BG_PID
# shellcheck disable=SC2317
receiving() { [ "$(stat -c %s "$out" 2>/dev/null || echo 0)" -ge 65536 ]; }
wait_for 30 receiving || diag "the download has not received 64 KiB in 30 s"
check "the download is running when the reload starts" proc_alive "$curl_pid"
write_conf_a b c
reload_a
is "$RELOAD_RC" 0 "touctl reload: add c, remove d (exit 0)" || diag "$RELOAD_ERR"
is "$RELOAD_OUT" "1 peer added, 1 removed, 0 changed" "touctl reload prints its summary"
is "$(route_dsts a)" "$(want_dsts)" "c's routes are there, d's are gone, b's stay: $(route_dsts a)"
is "$(peers_of a)" "b:$sid_b c:null" "a's peers are b (same session $sid_b) and c (no session yet)"
is "$(nsx a ip route get 192.168.54.1 2>&1 | grep -c 'dev tou0')" 0 "d's allowed-ips no longer go into the tunnel"
check "the download is still running after the reload" proc_alive "$curl_pid"
nsx b tc qdisc del dev ul0 root || diag "cannot remove the tbf on b's link"
if proc_wait "$curl_pid" 120 && [ "$PROC_RC" = 0 ]; then
	read -r size secs conns <"$E2E_DIR/curl.log"
	is "$(sha "$out")/$conns" "$(sha "$E2E_DIR/www/f")/1" \
	    "the download survived the reload: one connection, $size bytes in $secs s, sha256 intact"
else
	not_ok "the download survived the reload" "curl: ${PROC_RC:-timeout}: $(cat "$E2E_DIR/curl.log")"
fi
is "$(tq a peers.b.session_id)" "$sid_b" "b's session is the same after the download"
ping_check a 10.77.0.3 "the added peer c is reachable"
ping_check a fd77::3 "the added peer c is reachable over IPv6"

# --- an invalid file changes nothing ------------------------------------------------

before_routes=$(routes a)
before_peers=$(peers_of a)
cp "$conf" "$E2E_DIR/a.conf.good"
line=$(($(wc -l <"$conf") + 2))
printf '\n[peer e\n' >>"$conf"       # no closing bracket
reload_a
is "$RELOAD_RC" 1 "touctl reload of a file with a syntax error exits 1"
case $RELOAD_ERR in
*"$conf:$line: "*) ok "its message names the file and line: $RELOAD_ERR";;
*) not_ok "its message names the file and line ($conf:$line: ...)" "stderr: $RELOAD_ERR";;
esac
is "$RELOAD_OUT" "" "nothing on stdout"
is "$(routes a)" "$before_routes" "routes unchanged"
is "$(peers_of a)" "$before_peers" "peers and their sessions unchanged"

# --- [interface] listen needs a restart -------------------------------------------

sed 's/^listen = 6080$/listen = 6081/' "$E2E_DIR/a.conf.good" >"$conf"
grep -q '^listen = 6081$' "$conf" || bail_out "cannot edit listen in $conf"
reload_a
is "$RELOAD_RC" 1 "touctl reload of a new listen port exits 1"
case $RELOAD_ERR in
*listen*restart*) ok "with a clear message: $RELOAD_ERR";;
*) not_ok "with a message that listen needs a restart" "stderr: $RELOAD_ERR";;
esac
is "$(routes a)" "$before_routes" "routes unchanged"
is "$(peers_of a)" "$before_peers" "peers and their sessions unchanged"
is "$(tq a interface.listen_port)" 6080 "still listening on 6080"
check "toud on a is still running" toud_alive a
ping_check a 10.77.0.2 "the tunnel to b still works"

# --- SIGHUP -------------------------------------------------------------------------

# SIGHUP: c goes, d comes back, b stays.
write_conf_a d b
kill -HUP "$pid"
if wait_for 5 routes_now_match; then
	ok "after SIGHUP: c's routes are gone, d's are back, b's stay: $(route_dsts a)"
else
	not_ok "after SIGHUP: the routes of b and d only" "got $(route_dsts a), want $(want_dsts)"
fi
is "$(peers_of a)" "b:$sid_b d:null" "after SIGHUP: peers b (same session) and d"
check "toud on a survived SIGHUP" toud_alive a
fetch_check a http://10.77.0.2:8080/f "$E2E_DIR/www/f" "HTTP from b after SIGHUP"
is "$(tq a peers.b.session_id)" "$sid_b" "b's session survived every reload"
# The same file again: nothing to do.
kill -HUP "$pid"
reload_a
is "$RELOAD_RC/$(peers_of a)/$(route_dsts a)" "0/b:$sid_b d:null/$(want_dsts)" \
    "reloading an unchanged file (SIGHUP, then touctl) changes nothing"

toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits with status 0"
is "$(routes a)" "" "no route of toud's left after SIGTERM"

done_testing
