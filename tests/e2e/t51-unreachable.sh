#!/bin/bash
# t51-unreachable: a peer whose endpoint answers with ICMP port unreachable
# (the host is there, nothing listens on the port) is reported as such:
# its last_error says "nothing listens on UDP PORT at HOST", for an IPv4
# and an IPv6 endpoint, and so does the handshake failure that follows
# (with DTLS).  Meanwhile the ICMP errors, which the kernel reports on the
# socket, do not disturb the live peer b: pings through the tunnel to it
# are all answered.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping

topo_ab
conf_ab 4
# Two peers at b's host on a port where nothing listens.  keepalive makes
# a contact them at once.
for fam in 4 6; do
	if [ $fam = 4 ]; then ep=10.200.0.2:6099 addr=10.77.0.4; else ep=[fd20::2]:6099 addr=10.77.0.6; fi
	cat >>"$(conf_file a)" <<CONF

[peer closed$fam]
endpoint = $ep
address = $addr
keepalive = 2
CONF
	if [ "$E2E_ENCRYPTION" = dtls ]; then
		keys_for closed$fam
		echo "fingerprint = $(cat "$E2E_DIR/keys/closed$fam/fingerprint")" >>"$(conf_file a)"
	fi
done
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

# last_error_has NODE PEER TEXT
last_error_has() {
	[[ "$(tq "$1" "peers.$2.last_error")" == *"$3"* ]]
}

check "closed4: last_error says nothing listens on UDP 6099 at 10.200.0.2" \
    wait_for 20 last_error_has a closed4 "nothing listens on UDP 6099 at 10.200.0.2"
check "closed6: last_error says nothing listens on UDP 6099 at fd20::2" \
    wait_for 20 last_error_has a closed6 "nothing listens on UDP 6099 at fd20::2"
diag "closed4: $(tq a peers.closed4.last_error)"
ping_check a 10.77.0.2 "ping b through the tunnel while the ICMP errors come back"
if [ "$E2E_ENCRYPTION" = dtls ]; then
	check "the failed handshake gives the same reason" wait_for 40 last_error_has a closed4 \
	    "handshake failed: nothing listens on UDP 6099 at 10.200.0.2 (ICMP port unreachable)"
	diag "closed4: $(tq a peers.closed4.last_error)"
	is "$(tq a peers.closed4.last_error)" \
	    "handshake failed: nothing listens on UDP 6099 at 10.200.0.2 (ICMP port unreachable)" \
	    "and the next ICMP error leaves that reason as it is"
	# Between its retries (keepalive keeps them coming).
	check "closed4 is dead" wait_for 30 eval '[ "$(tq a peers.closed4.state)" = dead ]'
fi
is "$(tq a peers.b.state)" up "b is up"
ping_check a 10.77.0.2 "and b still answers"
check "toud on a still runs" toud_alive a

done_testing
