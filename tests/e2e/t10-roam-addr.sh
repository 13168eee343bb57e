#!/bin/bash
# t10-roam-addr: the client's underlay address changes in the middle of a
# download.  The client gets a second address, its default route switches
# to it and the old address goes.  The same TCP connection completes (curl
# exits 0 with one connection and the sha256 matches), the server's
# `touctl show --json` shows the client's new endpoint (after a validated
# path, how long it took in the output), the session is the same one
# (roaming, not a new handshake), and the server reaches the client at its
# new address.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping

NEW_UL=10.201.0.3

rt_topo
# Deleting the primary address must leave the new (secondary) one in place.
rt_sysctl c net.ipv4.conf.all.promote_secondaries=1 net.ipv4.conf.ul0.promote_secondaries=1
rt_start 0

is "$(tq s peers.c.endpoint)" "$RT_C_UL:$RT_PORT" "the server learnt the client's endpoint"
sid_s=$(tq s peers.c.session_id)
sid_c=$(tq c peers.s.session_id)

rt_serve_file s "$RT_S_TUN" 8080 128
# A 20 Mbit/s bottleneck until the server has followed the change (the
# 128 MiB would take 54 s at that rate: the download outlasts the move
# however slow a crowded machine makes it), then full speed.
rt_rate rc0 20
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got" --max-time 300
rt_fetch_progress "$E2E_DIR/got" 1024 30 || diag "the download did not start in 30 s"

nsx c ip addr add "$NEW_UL/24" dev ul0 || bail_out "cannot add $NEW_UL"
nsx c ip route replace default via 10.201.0.1 src "$NEW_UL" || bail_out "cannot switch the route"
nsx c ip addr del "$RT_C_UL/24" dev ul0 || bail_out "cannot delete $RT_C_UL"
proc_alive "$FETCH_PID" || not_ok "the download was still running at the change" "$(cat "$E2E_DIR/got.log")"

# How fast is shown, not judged: a crowded machine makes it slow.
if rt_wait_endpoint s c "$NEW_UL:$RT_PORT" 30; then
	ok "the server shows the client's new endpoint $RT_EP ${RT_EP_MS} ms after the change"
else
	not_ok "the server shows the client's new endpoint within 30 s" "after $RT_EP_MS ms it shows $RT_EP"
fi
proc_alive "$FETCH_PID" || not_ok "the download was still running when the server followed"
rt_rate_off rc0

rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 120 "the download survived the address change"
diag "download: $FETCH_TIME s, $FETCH_MBITS Mbit/s (20 Mbit/s until the change was seen)"

is "$(tq s peers.c.endpoint)" "$NEW_UL:$RT_PORT" "the server's endpoint for the client stays the new one"
is "$(tq s peers.c.session_id)" "$sid_s" "the server kept the same session (it roamed, no new handshake)"
is "$(tq c peers.s.session_id)" "$sid_c" "the client kept the same session"
is "$(tq s peers.c.state)" up "the server's peer c is up"
cmp_ok "$(tq s peers.c.events.path_validated)" -ge 1 "the server moved after the new address answered its challenge"
changes=$("$TOUCTL" -s "$(sock_of s)" metrics 2>&1 |
    sed -n -E 's/^toud_peer_endpoint_changes_total\{.*peer="c"\} //p')
is "$changes" 1 "the server's metrics count one change of the client's endpoint (toud_peer_endpoint_changes_total)"
is "$(tq s peers.c.path_state)" validated "and no probe is left running"
check "the server reaches the client at its new address (ping 10.77.0.1)" \
    ping_all s "$RT_C_TUN" 5

done_testing
