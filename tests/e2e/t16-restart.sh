#!/bin/bash
# t16-restart: the server's toud restarts in the middle of a long-lived TCP
# connection.  The server sends a counter line every 50 ms, the client
# checks that the lines count up without a gap and echoes each one back.
# The kernel keeps the TCP state while toud is away; the new toud knows
# neither the client's endpoint nor a session, so the client (the side with
# a configured endpoint) must start a new handshake.  The stream must come
# through complete and in order in both directions, on a new session:
#   1. SIGTERM (toud says goodbye: the client may be back at once), client
#      keepalive = 2;
#   2. SIGKILL (a crash: no goodbye), client keepalive = 2;
#   3. SIGTERM, client without keepalive: told of the close, the client
#      reconnects by itself, and the stream completes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd ping

SECS=6

# shellcheck disable=SC2317  # called through wait_for
server_state_is() {
	[ "$(tq s peers.c.state)" = "$1" ]
}

# stream_start PORT: the stream runs from s to c; SRV, CLI are the pids.
stream_start() {
	bg_start s "$E2E_DIR/stream-s-$1.log" python3 "$E2E_DIR/stream.py" serve "$RT_S_TUN" "$1" "$SECS"
	SRV=$BG_PID
	wait_for 60 grep -q listening "$E2E_DIR/stream-s-$1.log" || bail_out "stream server did not start"
	bg_start c "$E2E_DIR/stream-c-$1.log" python3 "$E2E_DIR/stream.py" connect "$RT_S_TUN" "$1"
	CLI=$BG_PID
	# The restart comes while lines flow, not before the first.
	wait_for 60 grep -q flowing "$E2E_DIR/stream-c-$1.log" || bail_out "the stream never flowed"
}

# stream_check PORT WHAT: the stream's results.
stream_check() {
	local port=$1 what=$2 res_c res_s sent
	proc_wait "$CLI" 60 || not_ok "$what: the stream's client ended within 60 s"
	proc_wait "$SRV" 10 || not_ok "$what: the stream's server ended"
	res_c=$(tail -n 1 "$E2E_DIR/stream-c-$port.log")
	res_s=$(tail -n 1 "$E2E_DIR/stream-s-$port.log")
	diag "$what: client $res_c, server $res_s"
	sent=$(json_get "$res_s" sent 2>/dev/null)
	is "$(json_get "$res_c" ok 2>/dev/null)/$(json_get "$res_c" received 2>/dev/null)" "true/$sent" \
	    "$what: the client got all $sent lines in order, through to the end marker"
	is "$(json_get "$res_s" echo_ok 2>/dev/null)/$(json_get "$res_s" echoed 2>/dev/null)" "true/$sent" \
	    "$what: the server got every echo back, in order"
	diag "$what: the longest silence in the stream: $(json_get "$res_c" max_gap_ms 2>/dev/null) ms"
}

# sessions_agree OLD_SID: both ends are on the same session, not OLD_SID.
# shellcheck disable=SC2317  # called through wait_for
sessions_agree() {
	NEW_C=$(tq c peers.s.session_id) NEW_S=$(tq s peers.c.session_id)
	[ "$NEW_C" != "$1" ] && [ "$NEW_C" != null ] && [ "$NEW_C" = "$NEW_S" ]
}

# new_session WHAT OLD_SID: both ends moved to the same new session.  (The
# client finishes its handshake a moment after the server, and with
# keepalive on, a quiet moment can start one more: allow some seconds, and
# a crowded machine's many more.)
new_session() {
	if wait_for 30 sessions_agree "$2"; then
		ok "$1: both ends use a new session ($2 -> $NEW_C)"
	else
		not_ok "$1: both ends use a new session" "was $2; client $NEW_C, server $NEW_S"
	fi
	is "$(tq s peers.c.endpoint)" "$RT_C_UL:$RT_PORT" "$1: the server learnt the client's endpoint again"
}

# restart_server SIGNAL: stop s's toud with SIGNAL, start it again.
restart_server() {
	local t0
	t0=$(e2e_now)
	toud_stop s "$1" >/dev/null 2>&1     # no "Killed" notice from bash
	toud_start s || bail_out "toud on s did not restart"
	RESTART_AT=$(e2e_now)
	diag "toud on s was away for $((RESTART_AT - t0)) ms"
}

rt_topo
rt_stream_py

# --- 1 and 2: keepalive 2 --------------------------------------------------
rt_start 2
port=7000
for sig in TERM KILL; do
	what="SIG$sig"
	port=$((port + 1))
	stream_start "$port"
	sid=$(tq c peers.s.session_id)
	restart_server "$sig"
	[ "$sig" = TERM ] && is "${TOUD_RC[s]}" 0 "$what: toud on s exits with status 0"
	# After SIGTERM the client is told of the close and may be back
	# before this look; after SIGKILL it learns nothing for seconds, but a
	# slow restart may outlast them.  Either way the new toud on s learns
	# the client's endpoint only from the client's new handshake: judged by
	# order (one snapshot), not by how soon this look comes.
	if [ "$sig" = KILL ]; then
		j=$(show_json s) || bail_out "touctl show on s"
		ep=$(json_get "$j" peers.c.endpoint)
		acc=$(json_get "$j" interface.events.handshake_accepted)
		check "$what: the new toud on s knows the client only after its handshake (endpoint $ep, accepted $acc)" \
		    test "$ep" = null -o "${acc:-0}" -ge 1
	fi
	# The client's keepalive (2 s) finds the new toud within a few
	# seconds and handshakes at once; 30 s is the margin of a crowded
	# machine, and the stream (TCP retransmits for minutes) waits longer.
	if wait_for 30 server_state_is up; then
		ok "$what: the client is back $(($(e2e_now) - RESTART_AT)) ms after the restart"
	else
		not_ok "$what: the client is back within 30 s of the restart" "$(show_json s)"
	fi
	new_session "$what" "$sid"
	started=$(tq s peers.c.events.handshake_started)
	accepted=$(tq s interface.events.handshake_accepted)
	check "$what: the new toud on s started no handshake ($started); it accepted the client's ($accepted)" \
	    test "$started" = 0 -a "$accepted" -ge 1
	stream_check "$port" "$what"
done

# --- 3: no keepalive ---------------------------------------------------------
what="SIGTERM, keepalive 0"
toud_stop c >/dev/null
rt_conf 0
toud_start c || bail_out "toud on c did not restart"
rt_tunnel_up 10 || bail_out "no tunnel after the restart of c"
port=7010
stream_start "$port"
sid=$(tq c peers.s.session_id)
restart_server TERM
wait_for 30 server_state_is up
is "$(tq s peers.c.state)" up "$what: the client is back after the restart (it reconnects after the close)"
check "$what: the tunnel works" ping_all c "$RT_S_TUN" 2
new_session "$what" "$sid"
stream_check "$port" "$what"

done_testing
