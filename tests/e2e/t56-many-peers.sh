#!/bin/bash
# t56-many-peers: one server with 20,000 configured peers.  `toud -t`
# accepts the file; toud starts; LIVE real DTLS clients (bench/hsload: each
# its own key and source port, all from one address, as behind one NAT)
# handshake at once and all come up; a reload that changes one idle peer
# leaves every live session as it was; `touctl show PEER` answers for one
# peer.  The other peers have random fingerprints: configured clients that
# never connect.  bench/scale.sh measures the same set-up (start time,
# memory per peer and per session, handshakes per second) at larger sizes.
#
#   c ul0 (10.200.0.2, LIVE clients) --- ul0 a (10.200.0.1, the server)
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
E2E_LOG_LEVEL=info              # 20,000 peers' debug lines are not the point
need_root
need_cmd python3

# T56_PEERS and T56_LIVE change the sizes: CI's sanitizer pass, where each
# peer costs ten times as much, runs it with fewer peers.
PEERS=${T56_PEERS:-20000}
LIVE=${T56_LIVE:-100}
HSLOAD=${TOUD_HSLOAD:-$(dirname "$TOUD")/../bench/hsload}
MANYPEERS=$E2E_TOP/bench/manypeers.py
[ -x "$HSLOAD" ] || bail_out "$HSLOAD not built (make builds it)"

netns_add a c
veth a ul0 c ul0 "10.200.0.1/24" "10.200.0.2/24"

# The clients' keys, and the server's file: its interface, then the peers.
"$HSLOAD" genkeys "$E2E_DIR/clients" "$LIVE" >"$E2E_DIR/clients.fp" ||
    bail_out "hsload genkeys failed"
conf_interface a 6080 10.77.0.1/16
python3 "$MANYPEERS" "$PEERS" "$E2E_DIR/clients.fp" >>"$(conf_file a)" ||
    bail_out "manypeers.py failed"

# The whole `show --json` of 20,000 peers is megabytes; the test asks one
# peer at a time (`show PEER --json` also carries the interface).
peer_json() {
	nsx a "$TOUCTL" -s "$(sock_of a)" show "$1" --json
}

# live_states: "name:state:session_id" of the LIVE peers with keys.
live_states() {
	local i
	for ((i = 0; i < LIVE; i++)); do
		peer_json "p$i" | python3 -c '
import json, sys
p = json.load(sys.stdin)["peers"][0]
print("%s:%s:%s" % (p["name"], p["state"], p["session_id"]))'
	done | tr '\n' ' '
}

up_count() {
	live_states | tr ' ' '\n' | grep -c ':up:'
}

t0=$(e2e_now)
"$TOUD" -t -c "$(conf_file a)" >"$E2E_DIR/check.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "toud -t accepts $PEERS peers ($(($(e2e_now) - t0)) ms)" ||
    not_ok "toud -t: rc $rc, $(head -c 300 "$E2E_DIR/check.out")"

t0=$(e2e_now)
toud_start a || bail_out "toud did not start with $PEERS peers"
ok "toud starts with $PEERS peers (control socket answers after $(($(e2e_now) - t0)) ms)"
is "$(json_get "$(peer_json p0)" interface.peer_count)" "$PEERS" \
    "show counts all $PEERS peers"

# All clients at once, from one address; they hold their sessions while
# the server is asked, however long that takes, until stopped.
bg_start c "$E2E_DIR/hsload.out" "$HSLOAD" run -b 10.200.0.2 -t 90 -H -1 \
    "$E2E_DIR/clients" "$LIVE" 10.200.0.1 6080
HS_PID=$BG_PID
# The server is up before its client (it sends the last flight): once
# hsload reports, one look at the server's state is enough.
wait_for 90 grep -q '^up ' "$E2E_DIR/hsload.out"
n=$(up_count)
is "$n" "$LIVE" "$LIVE clients handshaking at once from one address all come up"
diag "hsload: $(head -n 1 "$E2E_DIR/hsload.out")"
diag "a's interface drops: $(json_get "$(peer_json p0)" interface.drops)"

# A reload that changes one idle peer touches no live session.
before=$(live_states)
sed -i '/^\[peer p'"$((PEERS - 1))"'\]$/,/^$/ s/^address = .*/address = 10.77.255.254/' \
    "$(conf_file a)"
t0=$(e2e_now)
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1)
rc=$?
[ $rc -eq 0 ] && ok "a reload that changes one of $PEERS peers ($(($(e2e_now) - t0)) ms)" ||
    not_ok "reload: rc $rc, $out"
is "$(live_states)" "$before" "the reload kept every live session as it was"
is "$(json_get "$(peer_json "p$((PEERS - 1))")" "peers.p$((PEERS - 1)).state")" idle \
    "the changed peer is there, idle"

t0=$(e2e_now)
out=$(touctl_show a "p$((LIVE - 1))" 2>&1)
rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"p$((LIVE - 1))"* ]] && [[ "$out" == *up* ]] &&
    ok "touctl show of one live peer among $PEERS ($(($(e2e_now) - t0)) ms)" ||
    not_ok "show p$((LIVE - 1)): rc $rc, $out"

proc_stop "$HS_PID" TERM 10
check "toud on a still running" toud_alive a
done_testing
