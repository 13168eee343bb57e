#!/bin/bash
# t24-dead-peer: a peer that is gone stops being "up".  With keepalive off
# on both sides, b's toud is killed (SIGKILL: it says nothing) while a keeps
# sending to it; within the dead-peer interval that toud(8) documents (plus
# 1 s for the polling) a's `touctl show` must no longer say b is up.  The
# other way round, a peer that is alive but only receives (a one-way UDP
# stream from a, nothing sent back by any application of b's), or whose
# last packet from a went unanswered (as a TCP connection's final ACK
# does), stays up past that interval.  With encryption = dtls and = none.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping socat

MAN=${TOUD_SRCDIR:-$E2E_TOP}/man/toud.8

# The dead-peer interval with keepalive off, as toud(8) documents it: the
# first "N seconds" in the description of the state "dead".
dead_s=$(awk '/^\.It dead/ { on = 1; next } on && /^\.(It|El)/ { exit } on' "$MAN" |
    tr '\n' ' ' | sed -n 's/.*[^0-9]\([0-9][0-9]*\) seconds.*/\1/p' | head -n 1)
if [[ "$dead_s" =~ ^[0-9]+$ ]]; then
	ok "toud(8) documents the dead-peer interval without keepalive: $dead_s s"
else
	not_ok "toud(8) documents the dead-peer interval without keepalive" \
	    "no \"N seconds\" under .It dead in $MAN; using 15 s"
	dead_s=15
fi

# b_state: a's view of b, from touctl's text output (no interpreter to
# start while timing).
b_state() {
	"$TOUCTL" -s "$(sock_of a)" show b 2>/dev/null | awk '$1 == "state:" { print $2 }'
}

# start_both ENCRYPTION: fresh configs (keepalive 0) and both touds; b up.
start_both() {
	E2E_ENCRYPTION=$1
	conf_ab 4
	toud_start a || bail_out "toud on a did not start"
	toud_start b || bail_out "toud on b did not start"
	ping_check a 10.77.0.2 "($1) ping a to b through the tunnel"
	is "$(b_state)" up "($1) a says b is up"
}

stop_both() {
	toud_stop a
	is "${TOUD_RC[a]}" 0 "($1) toud on a exits with status 0"
	toud_stop b
}

# --- a live peer that only receives stays up -------------------------------------

topo_ab
start_both dtls
bg_start b "$E2E_DIR/sink.log" socat -u UDP4-RECV:9999,bind=10.77.0.2 /dev/null
sink=$BG_PID
wait_for 5 port_listening b u 9999 || bail_out "socat on b did not start"
# Ten datagrams a second from a to b; nothing on b answers them.
bg_start a "$E2E_DIR/oneway.log" bash -c \
    'while :; do echo x; sleep 0.1; done | socat -u - UDP4-SENDTO:10.77.0.2:9999,sourceport=9998'
oneway=$BG_PID
sleep 0.5
check "(dtls) the one-way stream runs" proc_alive "$oneway"
deadline=$(e2e_deadline $((dead_s + 3)))
seen=
while e2e_before "$deadline"; do
	st=$(b_state)
	[[ " $seen " == *" $st "* ]] || seen+=" $st"
	[ "$st" = up ] || break
	sleep 0.2
done
is "$seen" " up" "(dtls) b, alive and receiving a one-way stream, stays up for $((dead_s + 3)) s"
proc_stop "$oneway"

# The last packet of an exchange (a TCP connection's final ACK, say) gets
# no answer either: b has just sent something, a sends one datagram back
# that nothing on b answers, and both fall quiet.  b is alive: a must not
# call it dead.
nsx b ping -n -q -c 1 -W 1 10.77.0.1 >/dev/null || diag "(dtls) b's ping to a failed"
echo last | nsx a socat -u - UDP4-SENDTO:10.77.0.2:9999,sourceport=9997
deadline=$(e2e_deadline $((dead_s + 3)))
seen=
while e2e_before "$deadline"; do
	st=$(b_state)
	[[ " $seen " == *" $st "* ]] || seen+=" $st"
	[ "$st" = up ] || break
	sleep 0.2
done
is "$seen" " up" "(dtls) b stays up for $((dead_s + 3)) s after a's last datagram, which nothing answers"
proc_stop "$sink"

# --- a peer that is gone --------------------------------------------------------

# dead_case ENCRYPTION: kill b's toud, keep pinging it, time a's state.
dead_case() {
	local t0 dt st=up ping_pid deadline
	toud_stop b KILL
	t0=$(e2e_now)
	bg_start a "$E2E_DIR/ping-dead-$1.log" ping -n -q -i 0.2 -W 1 10.77.0.2
	ping_pid=$BG_PID
	deadline=$(e2e_deadline $((dead_s + 10)))
	while e2e_before "$deadline"; do
		st=$(b_state)
		[ "$st" = up ] || break
		sleep 0.1
	done
	dt=$(($(e2e_now) - t0))
	proc_stop "$ping_pid" INT 5
	if [ "$st" != up ]; then
		cmp_ok "$dt" -le $((dead_s * 1000 + 1000)) \
		    "($1) a stops saying b is up ${dt} ms after b's toud was killed (now $st; at most $dead_s s + 1 s)"
	else
		not_ok "($1) a stops saying b is up within $dead_s s + 1 s after b's toud was killed" \
		    "still up after $dt ms"
	fi
	check "($1) toud on a still running" toud_alive a
}

dead_case dtls
stop_both dtls

start_both none
dead_case none
stop_both none

done_testing
