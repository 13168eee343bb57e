#!/bin/bash
# t31-halfopen: a keyless attacker cannot lock a configured peer out by
# filling the half-open table.
#   (1) x replays one cookie-carrying ClientHello under fresh session IDs,
#       400 a second for 14 s, b starting 8 s in: the cookie is bound to its session ID, so every
#       replay only earns a HelloVerifyRequest and a keeps no state.
#   (2) x runs real cookie exchanges, 50 new handshakes a second, left
#       half-open: only the rate limit's burst gets in, at most 4 are kept
#       for x, the oldest evicted.
# During each flood b starts, handshakes with a and pings it within 2 s.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping
. "$(dirname "$0")/lib-attack.sh"

at_topo
toud_start a || bail_out "toud on a did not start"

# --- (1) replayed ClientHello ----------------------------------------------------
bg_start x "$E2E_DIR/attack1.json" "$ATTACK" replay 10.201.0.2 10.201.0.1 6080 400 14
att=$BG_PID
# Long enough for the 64 slots of a table that admits replays to fill.
sleep 8
j0=$(show_json a) || bail_out "touctl show on a"
toud_start b || bail_out "toud on b did not start"
at_connect "(1) during the replay flood b connects to a"
proc_wait "$att" 30 || not_ok "(1) the attacker finishes"
res=$(tail -n 1 "$E2E_DIR/attack1.json")
diag "(1) attacker: $res"
j1=$(show_json a) || bail_out "touctl show on a"
sent=$(json_get "$res" sent)
hvr=$(json_get "$res" hello_verify)
sh=$(json_get "$res" server_hellos)
cmp_ok "$sent" -ge 1000 "(1) the attacker sent its replays ($sent)"
is "$sh" 0 "(1) no replay got a server flight"
cmp_ok "$hvr" -ge $((sent * 9 / 10)) "(1) the replays were answered statelessly with cookie requests ($hvr)"
is "$(jdelta "$j0" "$j1" interface.drops.handshake_rate_limited)" 0 \
    "(1) no replay was charged to the rate limit"
toud_stop b

# --- (2) real cookie exchanges, left half-open -----------------------------------
bg_start x "$E2E_DIR/attack2.json" "$ATTACK" fresh 10.201.0.2 10.201.0.1 6080 50 8
att=$BG_PID
sleep 3
toud_start b || bail_out "toud on b did not start again"
at_connect "(2) during the half-open flood b connects to a"
proc_wait "$att" 30 || not_ok "(2) the attacker finishes"
res=$(tail -n 1 "$E2E_DIR/attack2.json")
diag "(2) attacker: $res"
j2=$(show_json a) || bail_out "touctl show on a"
diag "(2) a's interface drops: $(json_get "$j2" interface.drops)"
hvr=$(json_get "$res" hello_verify)
limited=$(jdelta "$j1" "$j2" interface.drops.handshake_rate_limited)
evicted=$(jdelta "$j1" "$j2" interface.drops.half_open_evicted)
admitted=$((hvr - limited))
cmp_ok "$hvr" -ge 200 "(2) x completed its cookie exchanges ($hvr)"
# a burst of 20, then 10 a second: over 8 s at most about 110 get in
cmp_ok "$admitted" -le 110 "(2) x's handshakes held by the rate limit ($admitted admitted)"
cmp_ok "$limited" -ge $((hvr - 110)) "(2) the rest counted as handshake_rate_limited ($limited)"
cmp_ok "$evicted" -ge $((admitted - 4)) "(2) x kept at most 4 half-open: the older ones evicted ($evicted)"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
