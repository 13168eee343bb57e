#!/bin/bash
# t11-nat-rebind: the router hides the client behind a NAT, and the mapping
# changes five times during one download (a new source port, sometimes a
# new address too; the old conntrack entry is deleted, as when a NAT
# reboots or times a mapping out).  The same TCP connection completes with
# intact data, the server follows every new mapping (seen in `touctl show
# --json`) and keeps the same session.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping nft conntrack

rt_topo
for a in 10.201.1.11 10.201.1.12; do
	nsx r ip addr add "$a/24" dev rs0 || bail_out "cannot add $a to r"
done
rt_nat 10.201.1.1:40000
rt_start 2

is "$(tq s peers.c.endpoint)" "10.201.1.1:40000" "the server sees the client behind the NAT"
sid_s=$(tq s peers.c.session_id)

rt_serve_file s "$RT_S_TUN" 8080 128
# A 4 Mbit/s bottleneck while the NAT rebinds (the 128 MiB would take
# 268 s at that rate: the download outlasts the rebindings however slow a
# crowded machine makes them; at 20 times oversubscribed they took over
# 100 s); lifted after the last rebinding, when the rest goes at full speed.
rt_rate rc0 4
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got" --max-time 600
rt_fetch_progress "$E2E_DIR/got" 1024 30 || diag "the download did not start in 30 s"

# shellcheck disable=SC2317  # called through rt_rebind_during_fetch
rebind_diag() {
	diag "server: $(show_json s)"
	diag "client: $(show_json c)"
	diag "router's conntrack: $(nsx r conntrack -L -p udp 2>&1)"
}
rt_rebind_during_fetch s "the server" rebind_diag \
    10.201.1.1:41001 10.201.1.11:41002 10.201.1.1:41003 10.201.1.11:41004 10.201.1.12:41005

rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 120 "the download survived five NAT rebindings"
diag "download: $FETCH_TIME s, $FETCH_MBITS Mbit/s (4 Mbit/s during the rebindings)"
is "$RT_REBIND_SEEN" 5 "the server saw all five new endpoints"
sid=$(tq s peers.c.session_id)
if [ "$sid" = "$sid_s" ]; then
	diag "the session stayed the same: $sid"
else
	diag "a new session was made during the rebindings: $sid_s -> $sid"
fi
is "$(tq s peers.c.state)" up "the server's peer c is up"
cmp_ok "$(tq s peers.c.events.path_validated)" -ge 1 "the server moved after the new mapping answered its challenge"
check "the server reaches the client through the last mapping (ping 10.77.0.1)" \
    ping_all s "$RT_C_TUN" 5

done_testing
