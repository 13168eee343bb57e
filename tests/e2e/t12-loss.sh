#!/bin/bash
# t12-loss: a bad path.  The router drops 5 % of the tunnel's datagrams,
# duplicates 5 %, and delays them through NFQUEUE (nfq-delay: 1 ms each,
# every 10th one 15 ms more, so it arrives behind the ones that follow).
# A 100 MB download through the tunnel completes intact on one TCP
# connection; the throughput is printed.  The server counts the duplicates
# as replays (the DTLS replay window rejects them), and the tunnel is still
# up afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping nft iptables cc

rt_topo
rt_start 0
rt_serve_file s "$RT_S_TUN" 8080 100

rt_loss 5
rt_dup 5
rt_nfq_start 1 10 15
j0s=$(show_json s) j0c=$(show_json c)

rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got"
rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 50 "100 MiB through 5 % loss, 5 % duplicates and reordering"
diag "throughput: $FETCH_MBITS Mbit/s ($FETCH_TIME s for 100 MiB)"

rt_nfq_stop
lost=$(rt_nft_packets rt_loss) dup=$(rt_nft_packets rt_dup)
diag "router: $lost datagrams dropped, $dup duplicated; $NFQ_STATS"
cmp_ok "$lost" -gt 100 "the router dropped datagrams ($lost)"
cmp_ok "$dup" -gt 100 "the router duplicated datagrams ($dup)"
late=$(sed -n 's/.* late \([0-9]*\).*/\1/p' <<<"$NFQ_STATS")
cmp_ok "${late:-0}" -gt 100 "the router held back every 10th datagram (${late:-0})"

j1s=$(show_json s) j1c=$(show_json c)
diag "server drops: $(drops_delta "$j0s" "$j1s" peers.c.drops), interface $(drops_delta "$j0s" "$j1s" interface.drops)"
diag "client drops: $(drops_delta "$j0c" "$j1c" peers.s.drops), interface $(drops_delta "$j0c" "$j1c" interface.drops)"
rc=$(jdelta "$j0c" "$j1c" peers.s.drops.replay)
rs=$(jdelta "$j0s" "$j1s" peers.c.drops.replay)
cmp_ok "$((rc + rs))" -gt 0 "duplicates are dropped as replays (client $rc, server $rs)"
# DTLS's replay window is 64 records: a datagram held back 15 ms arrives
# behind more than 64 newer ones when the rate is high, and is dropped as a
# replay too.  Replays beyond the duplicates sent to the client measure it.
dupc=$(rt_nft_packets rt_dup rc0)
diag "client: $rc replays, of which about $((rc - dupc)) late datagrams outside the 64-record window ($dupc duplicates sent to it)"

rt_nft "delete table ip rt_loss
	delete table ip rt_dup"
check "the tunnel still works (ping 10.77.0.2)" ping_all c "$RT_S_TUN" 5
is "$(tq c peers.s.state)" up "the client's peer s is up"

done_testing
