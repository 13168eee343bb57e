#!/bin/bash
# t57-reload-fix: a reload that fixes a peer's wrong fingerprint brings the
# peer up at once, not when the back-off the wrong one earned runs out.
# a pins another key (c's) for b; with keepalive on, a keeps trying, each
# of its handshakes fails (b's certificate is not the pinned one) and each
# failure lengthens a's back-off (1 s, 2 s, 4 s, 8 s, 16 s ...).  Once a's
# next attempt is at least 16 s away, a's file gets b's true fingerprint and
# a reloads: b must be up on a before that attempt was due.  On a quiet
# machine that takes one handshake, a few milliseconds (the operators' bound
# is 2 s); the test's bound is the back-off it must beat, at least 15 s
# after a said so, which is the margin a crowded machine gets.
#
#   a ul0 --- ul0 b
#   10.200.0.1  10.200.0.2
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root

# shellcheck disable=SC2317  # called through wait_for
# backed_off: a's next attempt at b is 16 s or more away; WAIT_S is how
# far, OBS (ms) a moment before a said so, J what it said.
backed_off() {
	OBS=$(e2e_now)
	J=$(show_json a) || return 1
	WAIT_S=$(json_get "$J" peers.b.next_attempt_in_s)
	[ "$(json_get "$J" peers.b.state)" != up ] && [[ $WAIT_S =~ ^[0-9]+$ ]] && [ "$WAIT_S" -ge 16 ]
}
# shellcheck disable=SC2317
b_up() { [ "$(tq a peers.b.state)" = up ]; }

topo_ab
conf_ab 4
keys_for c
good=$(cat "$E2E_DIR/keys/b/fingerprint")
wrong=$(cat "$E2E_DIR/keys/c/fingerprint")
sed -i -e "s/^fingerprint = .*/fingerprint = $wrong/" -e 's/^keepalive = 0$/keepalive = 1/' \
    "$(conf_file a)"
grep -q "^fingerprint = $wrong$" "$(conf_file a)" || bail_out "a's file does not pin c's key"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

wait_for 120 backed_off || bail_out "a's next attempt never came 16 s away ($(show_json a))"
# next_attempt_in_s is rounded up: the attempt is due a second less after OBS.
due=$((OBS + (WAIT_S - 1) * 1000))
sed -i "s/^fingerprint = $wrong$/fingerprint = $good/" "$(conf_file a)"
t0=$(e2e_now)
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1)
is $? 0 "touctl reload on a with b's true fingerprint ($out)"
if wait_for "$WAIT_S" b_up && t1=$(e2e_now) && [ "$t1" -lt "$due" ]; then
	ok "b is up on a $((t1 - t0)) ms after the reload, $((due - t1)) ms before the back-off's attempt was due"
else
	not_ok "b is up on a before the back-off's attempt was due ($WAIT_S s)" "$(show_json a)"
fi
cmp_ok "$(json_get "$J" peers.b.events.handshake_failed)" -ge 3 \
    "before the fix, a's handshakes with the wrong fingerprint failed ($(json_get "$J" peers.b.events.handshake_failed))"
check "and a said why: $(json_get "$J" peers.b.last_error)" \
    grep -q "does not match the pinned" <<<"$(json_get "$J" peers.b.last_error)"
started=$(json_get "$J" peers.b.events.handshake_started)
cmp_ok "$(tq a peers.b.events.handshake_started)" -ge "$((started + 1))" \
    "the reload started a handshake"
is "$(tq a peers.b.last_error)" null "a's error is gone"
ping_check a 10.77.0.2 "ping b through the tunnel"
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits 0"

done_testing
}
