#!/bin/bash
# t12-loss: a bad path.  First the router drops 5 % of the tunnel's
# datagrams, duplicates 5 %, and delays them through NFQUEUE (nfq-delay:
# 1 ms each, every 10th one 15 ms more, so it arrives behind the ones that
# follow).  Then it only reorders: every 50th datagram (2 %) held 50 ms.
# Each time a 100 MB download through the tunnel completes intact on one
# TCP connection; the throughput is printed.  The receivers count the
# duplicates as replays, and nothing else: toud's replay window (8128
# records) takes every held-back datagram, so none is lost to it
# (replay_too_old stays 0).  The tunnel is still up afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl ping nft iptables cc

# jdelta0 BEFORE AFTER PATH: like jdelta, a drop counter that is absent
# (never counted) being 0.
jdelta0() {
	local b a
	b=$(json_get "$1" "$3" 2>/dev/null) || b=0
	a=$(json_get "$2" "$3" 2>/dev/null) || a=0
	[[ "$b" =~ ^[0-9]+$ && "$a" =~ ^[0-9]+$ ]] || { echo error; return 1; }
	echo $((a - b))
}

# window_intact DESC: between j0* and j1*, no record was too old for the
# replay window on either side, nor refused as malformed or forged.
window_intact() {
	local w
	w=$(jdelta0 "$j0c" "$j1c" peers.s.drops.replay_too_old)/$(jdelta0 "$j0s" "$j1s" peers.c.drops.replay_too_old)
	is "$w" 0/0 "$1: no record lost to the replay window (client/server replay_too_old)"
	w=$(jdelta0 "$j0c" "$j1c" peers.s.drops.bad_record)/$(jdelta0 "$j0s" "$j1s" peers.c.drops.bad_record)
	is "$w" 0/0 "$1: no record refused as bad (client/server bad_record)"
}

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
rc=$(jdelta0 "$j0c" "$j1c" peers.s.drops.replay)
rs=$(jdelta0 "$j0s" "$j1s" peers.c.drops.replay)
dupc=$(rt_nft_packets rt_dup rc0) dups=$(rt_nft_packets rt_dup rs0)
cmp_ok "$((rc + rs))" -gt 0 "duplicates are dropped as replays (client $rc, server $rs)"
# A replay is a duplicate the router made, nothing else (some duplicates
# may be lost on the way, none is invented).
cmp_ok "$rc" -le "$dupc" "the client's replays are duplicates ($rc of $dupc sent to it)"
cmp_ok "$rs" -le "$dups" "the server's replays are duplicates ($rs of $dups sent to it)"
window_intact "5 % loss, 5 % duplicates, every 10th datagram 15 ms late"

rt_nft "delete table ip rt_loss
	delete table ip rt_dup"

# --- reordering only: 2 % of the datagrams held 50 ms ------------------------

rt_nfq_start 0 50 50
j0s=$(show_json s) j0c=$(show_json c)
rm -f "$E2E_DIR/got"
rt_fetch_start c "http://$RT_S_TUN:8080/big" "$E2E_DIR/got"
rt_fetch_finish "$E2E_DIR/got" "$RT_FILE" 90 "100 MiB with 2 % of the datagrams held 50 ms"
diag "throughput: $FETCH_MBITS Mbit/s ($FETCH_TIME s for 100 MiB)"
rt_nfq_stop
diag "router: $NFQ_STATS"
late=$(sed -n 's/.* late \([0-9]*\).*/\1/p' <<<"$NFQ_STATS")
cmp_ok "${late:-0}" -gt 100 "the router held back every 50th datagram (${late:-0})"
j1s=$(show_json s) j1c=$(show_json c)
diag "server drops: $(drops_delta "$j0s" "$j1s" peers.c.drops), interface $(drops_delta "$j0s" "$j1s" interface.drops)"
diag "client drops: $(drops_delta "$j0c" "$j1c" peers.s.drops), interface $(drops_delta "$j0c" "$j1c" interface.drops)"
window_intact "2 % of the datagrams 50 ms late"
is "$(jdelta0 "$j0c" "$j1c" peers.s.drops.replay)/$(jdelta0 "$j0s" "$j1s" peers.c.drops.replay)" 0/0 \
    "no replays without duplicates"

check "the tunnel still works (ping 10.77.0.2)" ping_all c "$RT_S_TUN" 5
is "$(tq c peers.s.state)" up "the client's peer s is up"

done_testing
