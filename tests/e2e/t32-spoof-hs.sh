#!/bin/bash
# t32-spoof-hs: blind spoofing cannot keep two peers apart
# (forged datagrams from their addresses).  x knows only a's and b's
# addresses and forges 29-byte
# datagrams (a GUE header and an empty handshake record header) from each
# towards the other, 100 a second each way.  The handshake limiter is
# charged only for cookie-verified ClientHellos, so the forgeries drain
# nothing: b starts during the flood, connects and pings a within 2 s, and
# every forgery is counted (unknown_session), none as rate-limited.
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

bg_start x "$E2E_DIR/spoof-ab.json" "$ATTACK" spoof 10.200.0.2 6080 10.200.0.1 6080 100 8
s1=$BG_PID
bg_start x "$E2E_DIR/spoof-ba.json" "$ATTACK" spoof 10.200.0.1 6080 10.200.0.2 6080 100 8
s2=$BG_PID
sleep 3
toud_start b || bail_out "toud on b did not start"
at_connect "during the spoofing b connects to a"
proc_wait "$s1" 30 || not_ok "the spoofer towards a finishes"
proc_wait "$s2" 30 || not_ok "the spoofer towards b finishes"
r1=$(tail -n 1 "$E2E_DIR/spoof-ab.json")
diag "spoofer towards a: $r1"
diag "spoofer towards b: $(tail -n 1 "$E2E_DIR/spoof-ba.json")"
j1=$(show_json a) || bail_out "touctl show on a"
sent=$(json_get "$r1" sent)
cmp_ok "$sent" -ge 500 "x forged its datagrams from b to a ($sent)"
is "$(jdelta "$j0" "$j1" interface.drops.handshake_rate_limited)" 0 \
    "no forgery was charged to a's handshake limiter"
cmp_ok "$(jdelta "$j0" "$j1" interface.drops.unknown_session)" -ge "$sent" \
    "every forgery that reached a was counted as unknown_session"
ping_check b 10.77.0.1 "pings after the spoofing"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
