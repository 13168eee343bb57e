#!/bin/bash
# t66-typo-losses: a typo in a fingerprint is an error of configuration,
# not a loss of traffic.  a pins a wrong fingerprint for b; a's traffic
# to b makes a handshake, which a refuses (b's key is not the pinned
# one), and the flights b sends after that (its retransmissions) reach a
# for a session a has already dropped.  Those are counted as the event
# handshake_late_record, not as unknown_session, so "losses" of either
# side stays at what the failed handshakes themselves count
# (handshake_failed), however long b keeps retransmitting.  Then, the
# fingerprint fixed and reloaded, the tunnel comes up.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root
need_cmd ping

topo_ab
conf_ab 4
good=$(cat "$E2E_DIR/keys/b/fingerprint")
sed -i "s|^fingerprint = $good|fingerprint = sha256:$(printf '%064d' 7)|" "$(conf_file a)"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

# losses_beyond NODE: the node's losses (interface and peers) minus its
# handshake_failed drops.
losses_beyond() {
	show_json "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
def rest(o):
    return o.get("losses", 0) - o.get("drops", {}).get("handshake_failed", 0)
print(rest(d["interface"]) + sum(rest(p) for p in d["peers"]))'
}
late() { show_json a | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["interface"]["events"].get("handshake_late_record", 0) +
    sum(p["events"].get("handshake_late_record", 0) for p in d["peers"]))'; }
failed_twice() { [ "$(tq a peers.b.events.handshake_failed)" -ge 2 ]; }

# Traffic for a while: a handshake or more, each refused by a, and b's
# retransmitted flights after each.
bg_start a "$E2E_DIR/ping.log" ping -n -q -i 0.5 -w 12 10.77.0.2
check "a's handshakes with b fail (twice at least)" wait_for 30 failed_twice
check "a says why: b's key is not the pinned one" \
    grep -q "does not match the pinned" <<<"$(tq a peers.b.last_error)"
# b retransmits its flight for a while; wait until a has seen some of it.
late_seen() { [ "$(late)" -ge 1 ]; }
check "a counts b's late flights as handshake_late_record" wait_for 20 late_seen
is "$(losses_beyond a)" 0 "a: no losses beyond the failed handshakes (late flights are not losses)"
is "$(losses_beyond b)" 0 "b: no losses beyond the failed handshakes"
is "$(tq a interface.drops.unknown_session)" 0 "a: unknown_session stays 0"
diag "a: $(tq a interface.events); b: $(tq b interface.drops)"

# The typo fixed: the tunnel comes up.
sed -i "s|^fingerprint = sha256:0\{63\}7|fingerprint = $good|" "$(conf_file a)"
check "a reloads the fixed fingerprint" nsx a "$TOUCTL" -s "$(sock_of a)" reload
ping_check a 10.77.0.2 "after the fix, a reaches b"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b
done_testing
