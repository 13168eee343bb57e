#!/bin/bash
# t76-tcp-max-age: a TCP transport connection lives session-max-age, as a
# DTLS session does, and is replaced without a gap.
#
#   c (client) ul0 --- rc0 r (router) rs0 --- ul0 s (server)
#
# Both sides have session-max-age = 120 (the least allowed).  The router
# drops every UDP datagram, so c's peer s moves to the TCP transport and
# stays there.  Asserted: after about 120 s s holds a connection from
# another port of c's (c opened the replacement) and no longer the first;
# one connection stays; pings from c every 0.2 s meanwhile lose nothing
# but the odd echo; neither side left TCP (no move counted), and the tunnel
# still answers.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nft ping ss
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443
AGE=120

rt_topo
rt_conf 0 "$TCP_PORT"
for n in c s; do
	sed -i "/^\[interface\]/a session-max-age = $AGE" "$(conf_file "$n")"
done
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"
rt_block_udp t76_block
on_tcp() {
	nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN" && [ "$(tq c peers.s.transport)" = tcp ] &&
	    [ "$(tq s peers.c.transport)" = tcp ]
}
wait_for 60 on_tcp || bail_out "c's peer s did not move to tcp in 60 s: $(tq c peers.s 2>&1)"
t_up=$(e2e_now)
# conn_port: the port of c's one established connection to s's 443, as s
# sees it (empty unless there is exactly one).
conn_port() {
	local l
	l=$(nsx s ss -H -t -n state established "sport = :$TCP_PORT")
	[ "$(grep -c . <<<"$l")" = 1 ] || return 0
	awk '{ n = split($4, a, ":"); print a[n] }' <<<"$l"
}
first=$(conn_port)
[ -n "$first" ] || bail_out "s does not hold exactly one connection: $(nsx s ss -t -n)"
diag "c's first connection comes from port $first"
sw_c=$(tq c peers.s.transport_switches)
sw_s=$(tq s peers.c.transport_switches)

bg_start c "$E2E_DIR/ping.log" ping -n -i 0.2 -W 1 "$RT_S_TUN"
pinger=$BG_PID
replaced() {
	local p
	p=$(conn_port)
	[ -n "$p" ] && [ "$p" != "$first" ]
}
if wait_for $((AGE + 40)) replaced; then
	took=$(( ($(e2e_now) - t_up) / 1000 ))
	ok "the connection was replaced by another from c (port $(conn_port)) after $took s"
	cmp_ok "$took" -ge $((AGE - 15)) "not before its maximum age ($took s, age $AGE s)"
else
	not_ok "the connection was replaced by another from c" "$(nsx s ss -t -n)"
fi
# Five more echoes answered after the swap, then the tally.
echoes=$(grep -c "bytes from" "$E2E_DIR/ping.log")
more_echoes() {
	[ "$(grep -c "bytes from" "$E2E_DIR/ping.log")" -ge $((echoes + 5)) ]
}
check "c's pings are answered after the swap" wait_for 10 more_echoes
proc_stop "$pinger" INT 5
stats=$(grep -E "packets transmitted" "$E2E_DIR/ping.log")
diag "c's pings: $stats"
sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' <<<"$stats")
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' <<<"$stats")
cmp_ok "$((sent - got))" -le 2 "c's pings across the swap: at most 2 of $sent lost ($((sent - got)))"
held=$(nsx s ss -H -t -n state established "sport = :$TCP_PORT")
is "$(grep -c . <<<"$held")" 1 "s holds one connection from c"
is "$(tq c peers.s.transport_switches)/$(tq s peers.c.transport_switches)" "$sw_c/$sw_s" \
    "neither side left tcp meanwhile"
ping_check c "$RT_S_TUN" "pings from c over the new connection"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
