#!/bin/bash
# t32-spoof-hs: blind spoofing cannot keep two peers apart
# (forged datagrams from their addresses).  x knows only a's and b's
# addresses and forges 29-byte
# datagrams (a GUE header and an empty handshake record header) from each
# towards the other, 100 a second each way.  The handshake limiter is
# charged only for cookie-verified ClientHellos, so the forgeries drain
# nothing: b starts during the flood, connects and pings a while the flood
# still runs, and every forgery is counted (unknown_session), none as
# rate-limited.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping
. "$(dirname "$0")/lib-attack.sh"

at_topo
# x reaches each victim's underlay address over its own link.
nsx x ip route add 10.200.0.1/32 dev xa || bail_out "route on x"
nsx x ip route add 10.200.0.2/32 dev xb || bail_out "route on x"
for n in a b; do
	nsx "$n" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
	    >/dev/null || bail_out "sysctl on $n"
done
toud_start a || bail_out "toud on a did not start"
j0=$(show_json a) || bail_out "touctl show on a"

bg_start x "$E2E_DIR/spoof-ab.json" "$ATTACK" spoof 10.200.0.2 6080 10.200.0.1 6080 100 $AT_LONG
s1=$BG_PID
bg_start x "$E2E_DIR/spoof-ba.json" "$ATTACK" spoof 10.200.0.1 6080 10.200.0.2 6080 100 $AT_LONG
s2=$BG_PID
# b starts into a flood that is under way: a has counted 100 forgeries.
wait_delta 120 a "$j0" interface.drops.unknown_session 100 ||
    not_ok "a sees the forgeries" "$WAIT_DELTA unknown_session in 120 s"
toud_start b || bail_out "toud on b did not start"
at_connect "during the spoofing b connects to a" "$s1" "$s2"
# and the flood goes on until a has counted 500.
wait_delta 120 a "$j0" interface.drops.unknown_session 500 ||
    not_ok "a sees 500 forgeries" "$WAIT_DELTA unknown_session in 120 s"
at_stop "$s1" "$E2E_DIR/spoof-ab.json"
r1=$AT_REPORT
at_stop "$s2" "$E2E_DIR/spoof-ba.json"
diag "spoofer towards a: $r1"
diag "spoofer towards b: $AT_REPORT"
sent=$(json_get "$r1" sent)
cmp_ok "$sent" -ge 500 "x forged its datagrams from b to a ($sent)"
# Every forgery sent has reached a's counters once they account for it.
wait_delta 60 a "$j0" interface.drops.unknown_session "$sent"
cmp_ok "$WAIT_DELTA" -ge "$sent" "every forgery that reached a was counted as unknown_session"
is "$(jdelta "$j0" "$WAIT_JSON" interface.drops.handshake_rate_limited)" 0 \
    "no forgery was charged to a's handshake limiter"
ping_check b 10.77.0.1 "pings after the spoofing"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
