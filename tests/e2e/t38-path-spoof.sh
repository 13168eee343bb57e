#!/bin/bash
# t38-path-spoof: an on-path attacker (nftables in the router) rewrites the
# source of a few genuine records from the client to x, a third host, during
# a download.  The server must not point the client's traffic at x: it
# challenges x, gets no answer (x runs no toud), keeps the client's endpoint,
# sends x no more than three times the bytes that came "from" x, and the
# download completes intact on the same connection.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl nft

rt_topo
rt_topo_x
rt_start 2
is "$(tq s peers.c.endpoint)" "$RT_C_UL:$RT_PORT" "the server sees the client"

# Count what reaches x from the server, and what the router rewrites.
rt_nft "table ip t38_count {
	chain forward_count {
		type filter hook forward priority 10; policy accept;
		oifname \"rx0\" ip saddr $RT_S_UL udp sport $RT_PORT counter name to_x
	}
	counter to_x { }
	counter rewritten { }
}"

rt_serve_file s "$RT_S_TUN" 8080 24
rt_rate rc0 40
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got"
sleep 1
# Stateless rewriting after the router's forwarding decision: the first
# 4000 bytes of the client's records leave towards s with x's address.
rt_nft "table ip t38_spoof {
	chain post {
		type filter hook postrouting priority 100; policy accept;
		oifname \"rs0\" ip saddr $RT_C_UL udp sport $RT_PORT quota until 4000 bytes counter name t38_rw ip saddr set 10.201.2.2
	}
	counter t38_rw { }
}"
sleep 0.2
# The server probes x for about three seconds, then gives up.
probe_over() { [ "$(tq s peers.c.events.path_failed)" -ge 1 ]; }
wait_for 8 probe_over
cmp_ok "$(tq s peers.c.events.path_challenge_sent)" -ge 1 "the server challenged x"
cmp_ok "$(tq s peers.c.events.path_failed)" -ge 1 "x never answered: the probe failed"
is "$(tq s peers.c.events.path_validated)" 0 "no new endpoint was validated"
is "$(tq s peers.c.endpoint)" "$RT_C_UL:$RT_PORT" "the server kept the client's endpoint"
is "$(tq s peers.c.path_state)" validated "no probe is left running"

counter() { # NAME FIELD
	nsx r nft list counter ip "$1" "$2" | awk -v f="$3" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }'
}
rw_pk=$(counter t38_spoof t38_rw packets) rw_b=$(counter t38_spoof t38_rw bytes)
x_pk=$(counter t38_count to_x packets) x_b=$(counter t38_count to_x bytes)
cmp_ok "${rw_pk:-0}" -ge 1 "the router rewrote some records ($rw_pk, $rw_b bytes)"
# The budget is in UDP payload: take off 28 bytes of IPv4 and UDP header a packet.
rx=$(( ${rw_b:-0} - 28 * ${rw_pk:-0} )) tx=$(( ${x_b:-0} - 28 * ${x_pk:-0} ))
cmp_ok "$tx" -le $((3 * rx)) "x got $tx bytes from the server, at most 3 x the $rx it 'sent'"

rt_rate_off rc0
rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 40 "the download completed through the attack"
is "$(tq s peers.c.state)" up "the server's peer c is up"
check "the server reaches the client (ping 10.77.0.1)" ping_all s "$RT_C_TUN" 5

# touctl ping: path challenges over the current path, answered by the peer.
before=$(tq c peers.s.events.path_response_sent)
out=$("$TOUCTL" -s "$(sock_of s)" ping c -c 2 2>&1)
is "$?" 0 "touctl ping c succeeds"
is "$(grep -c "^reply from c ($RT_C_UL:$RT_PORT): time=[0-9.]* ms$" <<<"$out")" 2 "two replies with their round-trip time"
is "$(tail -n 1 <<<"$out")" "2 sent, 2 answered" "and a summary"
is "$(( $(tq c peers.s.events.path_response_sent) - before ))" 2 "the client answered both challenges"
out=$("$TOUCTL" -s "$(sock_of s)" ping nobody 2>&1)
is "$?/$out" "1/touctl: no such peer 'nobody'" "ping names an unknown peer (and counts nothing: nothing was sent)"
toud_stop c KILL      # no close message: the server still has the session
t0=$(date +%s%N)
out=$("$TOUCTL" -s "$(sock_of s)" ping c -c 1 2>&1)
rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "$rc/$out" "1/touctl: no answer from peer 'c' within 2 s
1 sent, 0 answered" "with the client gone, the ping goes unanswered"
cmp_ok "$ms" -le 4000 "and says so after the timeout ($ms ms)"

done_testing
