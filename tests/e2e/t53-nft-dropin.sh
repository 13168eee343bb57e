#!/bin/bash
# t53-nft-dropin: the ExecStartPost=/ExecStopPost= drop-in of
# contrib/systemd/toud-nftables.conf, its commands run as systemd would
# after toud's start and stop, against b's firewall as toud(8) describes
# it (a set toud_ports accepted before the drop).  Before the start hook
# b's firewall drops toud's datagrams and a cannot reach b through the
# tunnel; after it, the port is in the set and pings pass; after the stop
# hook the set is empty again.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping nft

dropin=${TOUD_SRCDIR:-$E2E_TOP}/contrib/systemd/toud-nftables.conf
[ -r "$dropin" ] || bail_out "no $dropin"

# hook KEY: the command line of the drop-in's KEY=, prefixes dropped.
hook() {
	sed -n "s/^$1=[-+@:!]*//p" "$dropin"
}

topo_ab
conf_ab 4
nsx b nft -f - <<'NFT' || bail_out "cannot load b's ruleset"
table inet filter {
	set toud_ports { type inet_service; }
	chain input {
		type filter hook input priority filter; policy accept;
		udp dport @toud_ports accept
		udp dport 6080 counter drop
	}
}
NFT
elements() {
	nsx b nft -j list set inet filter toud_ports |
	    python3 -c 'import json, sys
for o in json.load(sys.stdin)["nftables"]:
    if "set" in o:
        print(" ".join(str(e) for e in o["set"].get("elem", [])))'
}

toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
is "$(elements)" "" "before the start hook the set is empty"
check "and b's firewall keeps a out" bash -c "! ip netns exec $(ns a) ping -n -q -c 2 -W 1 10.77.0.2"
is "$(tq b peers.a.rx_packets)" 0 "b got nothing from a"

start=$(hook ExecStartPost)
diag "ExecStartPost: $start"
# shellcheck disable=SC2086
check "the start hook runs" nsx b $start
is "$(elements)" 6080 "it puts toud's port in the set"
ping_check a 10.77.0.2 "now a reaches b through the tunnel"

stop=$(hook ExecStopPost)
diag "ExecStopPost: $stop"
toud_stop b
# shellcheck disable=SC2086
check "the stop hook runs" nsx b $stop
is "$(elements)" "" "and takes the port out again"
# shellcheck disable=SC2086
check "a second stop hook fails (the drop-in's '-' lets it pass)" bash -c "! ip netns exec $(ns b) $stop 2>/dev/null"
check "the drop-in's stop line has the '-' prefix" grep -q '^ExecStopPost=-+' "$dropin"

done_testing
