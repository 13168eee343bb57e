#!/bin/bash
# t23-tun-flood: toud stays responsive while its TUN is flooded.  a has
# peers b and c.  Two senders on a (udp-flood) fill a's TUN with UDP faster
# than toud can empty it: the kernel drops what does not fit in the TUN's
# queue, so toud never finds it empty.  While the flood runs (it would go
# on for ten minutes), toud must not starve its other work:
#   - ping from a to b over the tunnel keeps being answered,
#   - a new handshake (b's toud restarts) completes, while the flood still
#     runs,
#   - `touctl show` on a answers, every time,
#   - SIGTERM ends toud on a, with exit status 0, before the flood ends.
# A starved toud does none of these until the flood stops.  The bounds
# below are that, with a margin for a crowded machine, not a speed: none of
# it has a deadline in the protocol but the handshake's, whose first
# retransmission alone comes after 1 s (RFC 6347 4.2.4.1), so one lost
# flight already takes it past 1 s.  The measured times are printed.
# Two floods: (A) UDP to an address inside the tunnel's prefix that no peer
# has (toud drops and counts each packet: no_peer), (B) UDP to c's tunnel
# address (toud seals and sends each one; c's namespace drops the
# datagrams at its link, so the flood costs c nothing).
#
#   b ul0 --- ul0 a ul1 --- ul0 c
#   10.200.0.2  .1  10.200.1.1  10.200.1.3
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root
need_cmd ping nft
need_helper udp-flood

FLOOD_SECONDS=5                 # how long the probes run in each flood
FLOOD_LIFE=600                  # how long a flood would run if not stopped
# What a starved toud cannot meet, with room for a machine several times
# oversubscribed: ping answers and touctl show within LATE_MS, no silence
# of ping longer than LATE_MS, a handshake within HS_MS (a lost flight or
# two, 1 s and 2 s of retransmission timer, and the load), exit after
# SIGTERM within LATE_MS; all far below FLOOD_LIFE.
LATE_MS=4000
HS_MS=15000
# The machine may be busy with other work: the touds under test and the
# probes run at a higher priority than the rest (the senders included), so
# what is measured is toud's fairness, not the machine's load.
PRIO=-10

# boost NODE: raise the priority of NODE's toud.
boost() {
	renice -n "$PRIO" -p "${TOUD_PID[$1]}" >/dev/null || bail_out "renice toud on $1"
}

# flood_start DST: two senders of 1200-byte datagrams to DST on a.
flood_start() {
	local i
	FLOOD_PIDS=()
	for i in 1 2; do
		bg_start a "$E2E_DIR/flood-$1-$i.log" "$E2E_HELPERS/udp-flood" -d "$1" -p $((9000 + i)) \
		    -l 1200 -t "$FLOOD_LIFE"
		FLOOD_PIDS+=("$BG_PID")
		wait_for 5 grep -q ready "$E2E_DIR/flood-$1-$i.log" || bail_out "udp-flood did not start"
	done
}

# flooding: every sender of the flood still runs.
flooding() {
	local pid
	for pid in "${FLOOD_PIDS[@]}"; do
		proc_alive "$pid" || return 1
	done
}

flood_stop() {
	local pid
	for pid in "${FLOOD_PIDS[@]}"; do
		proc_stop "$pid" TERM 5
	done
	FLOOD_SENT=$(cat "$E2E_DIR"/flood-"$1"-*.log | awk '$2 == "sent" { s += $3 } END { print s + 0 }')
}

# tun_dropped: packets the kernel dropped at a's tou0 (its queue was full).
tun_dropped() {
	nsx a cat /sys/class/net/tou0/statistics/tx_dropped
}

# show_probe SECONDS: `touctl show --json` on a every 0.2 s for SECONDS;
# SHOW_MAX is the slowest answer in ms, SHOW_N the number of answers,
# SHOW_FAILED the number that failed or took longer than 5 s.
show_probe() {
	local deadline t0 dt
	SHOW_MAX=0 SHOW_N=0 SHOW_FAILED=0
	deadline=$(e2e_deadline "$1")
	while e2e_before "$deadline"; do
		t0=$(e2e_now)
		if timeout 5 nice -n "$PRIO" "$TOUCTL" -s "$(sock_of a)" show --json >/dev/null 2>&1; then
			SHOW_N=$((SHOW_N + 1))
		else
			SHOW_FAILED=$((SHOW_FAILED + 1))
		fi
		dt=$(($(e2e_now) - t0))
		[ "$dt" -gt "$SHOW_MAX" ] && SHOW_MAX=$dt
		sleep 0.2
	done
}

# ping_start: ping from a to b, 100 a second for FLOOD_SECONDS, with
# timestamps.  Most requests are lost in the full TUN queue before toud
# sees them (the kernel's drop, not toud's); enough get through.
ping_start() {
	PING_LOG=$E2E_DIR/ping-$1.log
	PING_T0=$EPOCHREALTIME
	bg_start a "$PING_LOG" nice -n "$PRIO" ping -n -D -i 0.01 -W 1 -w "$FLOOD_SECONDS" 10.77.0.2
	PING_PID=$BG_PID
}

# ping_finish DESC: every answer and every silence within LATE_MS.
ping_finish() {
	local res
	proc_wait "$PING_PID" $((FLOOD_SECONDS + 5)) || proc_stop "$PING_PID"
	res=$(python3 - "$PING_LOG" "$PING_T0" "$EPOCHREALTIME" <<'EOF'
import re, sys
log, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
times, rtt, sent = [], [], 0
for line in open(log):
    m = re.match(r"\[(\d+\.\d+)\] \d+ bytes from .* time=([\d.]+) ms", line)
    if m:
        times.append(float(m.group(1)))
        rtt.append(float(m.group(2)))
    m = re.match(r"(\d+) packets transmitted", line)
    if m:
        sent = int(m.group(1))
# Silences between answers: before the first, the start of ping itself
# (a process start on a crowded machine) would be measured too.
gap = max([b - a for a, b in zip(times, times[1:])] or [0])
print(len(times), sent, int(max(rtt) if rtt else -1), int(gap * 1000))
EOF
)
	read -r PING_GOT PING_SENT PING_RTT PING_GAP <<<"$res"
	diag "$1: ping: $PING_GOT of $PING_SENT answered, slowest answer $PING_RTT ms, longest silence $PING_GAP ms"
	if [[ "$PING_GOT" =~ ^[0-9]+$ ]] && [ "$PING_GOT" -gt 0 ] && [ "$PING_RTT" -le "$LATE_MS" ] &&
	    [ "$PING_GAP" -le "$LATE_MS" ]; then
		ok "$1: ping a to b answered throughout ($PING_GOT answers, slowest $PING_RTT ms, longest silence $PING_GAP ms)"
	else
		not_ok "$1: ping a to b answered throughout (within $LATE_MS ms)" \
		    "$PING_GOT of $PING_SENT answered, slowest $PING_RTT ms, longest silence $PING_GAP ms"
	fi
}

# handshake_probe DESC: restart b's toud; b (pinging a) must be up again
# while a's flood still runs.  b starts with no session, so "up" on b means
# the handshake with a is complete.  Then both sides must agree on it.
handshake_probe() {
	local t0 deadline dt sb=none pid
	toud_stop b
	toud_start b || bail_out "toud on b did not start again"
	boost b
	t0=$(e2e_now)
	bg_start b "$E2E_DIR/ping-b.log" nice -n "$PRIO" ping -n -q -i 0.05 -W 1 -w 10 10.77.0.1
	pid=$BG_PID
	deadline=$(e2e_deadline $((HS_MS / 1000)))
	while e2e_before "$deadline"; do
		# (touctl's text output: no interpreter to start in the loop)
		sb=$(nice -n "$PRIO" "$TOUCTL" -s "$(sock_of b)" show a 2>/dev/null |
		    awk '$1 == "state:" { print $2 }')
		[ "$sb" = up ] && break
		sleep 0.02
	done
	dt=$(($(e2e_now) - t0))
	if [ "$sb" = up ]; then
		ok "$1: b's new handshake with a completed during the flood, in $dt ms"
		flooding || not_ok "$1: ... while the flood still ran" "a flood sender had ended"
	else
		not_ok "$1: b's new handshake with a completed within $HS_MS ms" "after $dt ms b says $sb"
	fi
	# shellcheck disable=SC2317
	same_session() { [ "$(tq a peers.b.session_id)" = "$(tq b peers.a.session_id)" ]; }
	check "$1: a and b agree on the new session" wait_for 10 same_session
	proc_stop "$pid" INT 5
}

# probes NAME DESC: ping, touctl show and a handshake while the flood runs.
probes() {
	local j0 j1 d0
	j0=$(show_json a) || bail_out "touctl show on a"
	d0=$(tun_dropped)
	ping_start "$1"
	show_probe "$FLOOD_SECONDS"
	ping_finish "$2"
	if [ "$SHOW_FAILED" = 0 ]; then
		cmp_ok "$SHOW_MAX" -le "$LATE_MS" "$2: touctl show answered $SHOW_N times, the slowest in $SHOW_MAX ms"
	else
		not_ok "$2: touctl show answered every time" \
		    "$SHOW_FAILED of $((SHOW_N + SHOW_FAILED)) failed or took over 5 s"
	fi
	j1=$(show_json a) || bail_out "touctl show on a"
	FLOOD_J0=$j0 FLOOD_J1=$j1
	cmp_ok "$(($(tun_dropped) - d0))" -gt 1000 \
	    "$2: the flood kept a's TUN queue full (the kernel dropped $(($(tun_dropped) - d0)) packets at tou0)"
	handshake_probe "$2"
}

# --- set-up ---------------------------------------------------------------------

netns_add a b c
veth a ul0 b ul0 "10.200.0.1/24" "10.200.0.2/24"
veth a ul1 c ul0 "10.200.1.1/24" "10.200.1.3/24"
conf_interface a 6080 10.77.0.1/24
conf_peer a b 10.200.0.2:6080 "10.77.0.2"
conf_peer a c 10.200.1.3:6080 "10.77.0.3"
conf_interface b 6080 10.77.0.2/24
conf_peer b a 10.200.0.1:6080 "10.77.0.1"
conf_interface c 6080 10.77.0.3/24
conf_peer c a 10.200.1.1:6080 "10.77.0.1"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
toud_start c || bail_out "toud on c did not start"
boost a
boost b
ping_check a 10.77.0.2 "ping a to b through the tunnel"
ping_check a 10.77.0.3 "ping a to c through the tunnel"
# c's link drops what the flood sends it, before anything of c's sees it.
out=$(nsx c nft -f - 2>&1 <<EOF
table netdev t23_sink {
	chain sink_in {
		type filter hook ingress device ul0 priority 0; policy accept;
		udp dport 6080 counter drop
	}
}
EOF
) || bail_out "nft in c: $out"

# --- (A) a flood toud drops --------------------------------------------------------

flood_start 10.77.0.99
# shellcheck disable=SC2317
tun_full() { [ "$(tun_dropped)" -gt "$1" ]; }
wait_for 10 tun_full "$(($(tun_dropped) + 1000))" || diag "(A) a's TUN queue is not overflowing yet"
probes A "(A) flood to an address no peer has"
flood_stop 10.77.0.99
no_peer=$(jdelta "$FLOOD_J0" "$FLOOD_J1" interface.drops.no_peer)
cmp_ok "$no_peer" -gt 10000 "(A) toud read and counted the flood (no_peer grew by $no_peer; $FLOOD_SENT sent)"
check "(A) toud on a still running" toud_alive a

# --- (B) a flood toud seals and sends ----------------------------------------------

flood_start 10.77.0.3
wait_for 10 tun_full "$(($(tun_dropped) + 1000))" || diag "(B) a's TUN queue is not overflowing yet"
probes B "(B) flood to c's tunnel address"
sent=$(jdelta "$FLOOD_J0" "$FLOOD_J1" peers.c.tx_packets)
cmp_ok "$sent" -gt 10000 "(B) toud sealed and sent the flood to c ($sent datagrams during the probes)"
# (The senders end with toud: their route goes with tou0.)
check "(B) the flood still runs when toud on a gets SIGTERM" flooding
t0=$(e2e_now)
toud_stop a
dt=$(($(e2e_now) - t0))
cmp_ok "$dt" -le "$LATE_MS" "(B) SIGTERM ended toud on a in $dt ms, under the flood"
is "${TOUD_RC[a]}" 0 "(B) toud on a exited with status 0"
flood_stop 10.77.0.3

done_testing
