#!/bin/bash
# t33-amplification: an address that has not completed a handshake gets at
# most 3 times the bytes it sent (the rule of RFC 9000 8.1),
# retransmissions included.  x, whose key nobody knows,
# (1) replays one cookie-carrying ClientHello under fresh session IDs, and
# (2) runs real cookie exchanges and never continues, each 8 a second (within
# the rate limit, so every one is admitted) for 8 s.  A capture on x's link
# until every half-open handshake has timed out (10 s) counts the UDP bytes
# each way.  b's connection to a works throughout.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping tcpdump
. "$(dirname "$0")/lib-attack.sh"

at_topo
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
at_connect "b connects to a"

# udp_bytes PCAP SRC: the UDP payload bytes SRC sent in PCAP.
udp_bytes() {
	tcpdump -r "$1" -n -q "udp and src $2" 2>/dev/null |
	    awk '{ for (i = 1; i < NF; i++) if ($i == "length") s += $(i + 1) } END { print s + 0 }'
}

# shellcheck disable=SC2317
no_half_open() { [ "$(tq a interface.half_open)" = 0 ]; }

round() {
	local mode=$1 pcap=$E2E_DIR/$1.pcap tdpid out in
	bg_start x "$E2E_DIR/tcpdump-$mode.log" tcpdump -i xa -n -s 96 --immediate-mode -U \
	    -w "$pcap" udp port 6080
	tdpid=$BG_PID
	wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump-$mode.log" || bail_out "tcpdump did not start"
	nsx x "$ATTACK" "$mode" 10.201.0.2 10.201.0.1 6080 8 8 >"$E2E_DIR/attack-$mode.json" ||
	    not_ok "($mode) the attacker ran" "$(cat "$E2E_DIR/attack-$mode.json")"
	diag "($mode) attacker: $(tail -n 1 "$E2E_DIR/attack-$mode.json")"
	# Until the last half-open handshakes have timed out (and stopped
	# retransmitting), then the capture has written all.
	wait_for 60 no_half_open || diag "($mode) half-open handshakes left after 60 s"
	pcap_settle "$pcap" || diag "($mode) the capture kept growing"
	proc_stop "$tdpid"
	out=$(udp_bytes "$pcap" 10.201.0.1)
	in=$(udp_bytes "$pcap" 10.201.0.2)
	cmp_ok "$in" -ge 5000 "($mode) x sent its ClientHellos ($in bytes)"
	cmp_ok "$out" -le $((3 * in)) "($mode) a sent x at most 3 times what x sent ($out <= 3 x $in)"
}

j0=$(show_json a) || bail_out "touctl show on a"
round replay
round fresh
j1=$(show_json a) || bail_out "touctl show on a"
diag "a's interface drops: $(drops_delta "$j0" "$j1" interface.drops)"
ping_check b 10.77.0.1 "b still reaches a"
check "toud on a still running" toud_alive a

done_testing
