#!/bin/bash
# t31-halfopen: a keyless attacker cannot lock a configured peer out by
# filling the half-open table.
#   (1) x replays one cookie-carrying ClientHello under fresh session IDs,
#       400 a second, b starting once a has answered 1000 of them: the
#       cookie is bound to its session ID, so every replay only earns a
#       HelloVerifyRequest and a keeps no state.
#   (2) x runs real cookie exchanges, 50 new handshakes a second, left
#       half-open: only the rate limit's burst gets in, at most 4 are kept
#       for x, the oldest evicted.
# During each flood b starts, handshakes with a and pings it; the flood is
# ended (SIGTERM) only after that, and it must still be running then.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping
. "$(dirname "$0")/lib-attack.sh"

at_topo
toud_start a || bail_out "toud on a did not start"

# --- (1) replayed ClientHello ----------------------------------------------------
j0=$(show_json a) || bail_out "touctl show on a"
bg_start x "$E2E_DIR/attack1.json" "$ATTACK" replay 10.201.0.2 10.201.0.1 6080 400 $AT_LONG
att=$BG_PID
# 1000 replays answered: many times the 64 slots of a table that admitted them.
wait_delta 120 a "$j0" interface.drops.cookie_requested 1000 ||
    not_ok "(1) a answers the replays" "$WAIT_DELTA cookie requests in 120 s"
toud_start b || bail_out "toud on b did not start"
at_connect "(1) during the replay flood b connects to a" "$att"
at_stop "$att" "$E2E_DIR/attack1.json"
res=$AT_REPORT
diag "(1) attacker: $res"
j1=$(show_settled a) || bail_out "touctl show on a"
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
bg_start x "$E2E_DIR/attack2.json" "$ATTACK" fresh 10.201.0.2 10.201.0.1 6080 50 $AT_LONG
att=$BG_PID
# b starts once the limit has turned x away, and x goes on until a has
# answered 200 of its exchanges.
wait_delta 120 a "$j1" interface.drops.handshake_rate_limited 1 ||
    not_ok "(2) x reaches a's rate limit" "no handshake_rate_limited in 120 s"
toud_start b || bail_out "toud on b did not start again"
at_connect "(2) during the half-open flood b connects to a" "$att"
wait_delta 120 a "$j1" interface.drops.cookie_requested 200 ||
    not_ok "(2) a answers x's exchanges" "$WAIT_DELTA cookie requests in 120 s"
at_stop "$att" "$E2E_DIR/attack2.json"
res=$AT_REPORT
diag "(2) attacker: $res"
j2=$(show_settled a) || bail_out "touctl show on a"
diag "(2) a's interface drops: $(json_get "$j2" interface.drops)"
hvr=$(json_get "$res" hello_verify)
limited=$(jdelta "$j1" "$j2" interface.drops.handshake_rate_limited)
evicted=$(jdelta "$j1" "$j2" interface.drops.half_open_evicted)
# A half-open handshake that outlives its deadline fails instead of being
# evicted: on a crowded machine x's exchanges come slowly enough for that.
expired=$(jdelta "$j1" "$j2" interface.drops.handshake_failed)
admitted=$((hvr - limited))
# a burst of 20, then 10 a second for as long as x ran, and 10 to spare
secs=$(json_get "$res" seconds)
most=$(awk -v s="$secs" 'BEGIN { printf "%d", 30 + 10 * (s + 1) }')
cmp_ok "$hvr" -ge 200 "(2) x completed its cookie exchanges ($hvr)"
cmp_ok "$admitted" -le "$most" "(2) x's handshakes held by the rate limit ($admitted admitted in $secs s)"
cmp_ok "$limited" -ge $((hvr - most)) "(2) the rest counted as handshake_rate_limited ($limited)"
cmp_ok "$((evicted + expired))" -ge $((admitted - 4)) \
    "(2) x kept at most 4 half-open: the older ones evicted ($evicted) or expired ($expired)"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
