#!/bin/bash
# t75-tcp-revoke: a reload that no longer accepts a peer's key ends its
# TCP connection, as it ends its DTLS sessions (t22).
#
#   c (client) ul0 --- rc0 r (router) rs0 --- ul0 s (server)
#
# The router drops every UDP datagram, so c's peer s moves to the TCP
# transport (endpoint-tcp 10.201.1.2:443, listen-tcp = 443 on s) and c's
# pings pass over it.  Then s's peer c gets another key's fingerprint (a
# key nobody holds) and s reloads.  Asserted: within 2 s s's peer c has no
# TCP connection left (transport back to udp, tcp_connections 0 once c's
# new attempts are refused), its last error says why, and c's pings stop
# passing; c's next connections are refused at the handshake.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nft ping
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443

rt_topo
rt_conf 0 "$TCP_PORT"
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"
rt_block_udp t75_block
on_tcp() {
	nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN" && [ "$(tq c peers.s.transport)" = tcp ]
}
wait_for 60 on_tcp || bail_out "c's peer s did not move to tcp in 60 s: $(tq c peers.s 2>&1)"
is "$(tq s peers.c.transport)" tcp "s's peer c is on tcp"
ping_check c "$RT_S_TUN" "pings from c over tcp before the reload"

# --- revoke c's key on s ---------------------------------------------------
keys_for stranger
sed -i "s/^fingerprint = .*/fingerprint = $(cat "$E2E_DIR/keys/stranger/fingerprint")/" "$(conf_file s)"
grep -q "^fingerprint = $(cat "$E2E_DIR/keys/stranger/fingerprint")" "$(conf_file s)" ||
    bail_out "cannot edit s's configuration"
j0=$(show_json s) || bail_out "touctl show on s"
t0=$(e2e_now)
out=$("$TOUCTL" -s "$(sock_of s)" reload 2>&1) || not_ok "s reloads" "$out"
off_tcp() {
	[ "$(tq s peers.c.transport)" = udp ]
}
if wait_for 2 off_tcp; then
	ok "s's peer c leaves tcp within 2 s of the reload ($(($(e2e_now) - t0)) ms)"
else
	not_ok "s's peer c leaves tcp within 2 s of the reload" "$(tq s peers.c 2>&1)"
fi
case $(tq s peers.c.last_error) in
*"no longer accepted"*) ok "s's peer c says why: $(tq s peers.c.last_error)";;
*) not_ok "s's peer c says why" "last_error: $(tq s peers.c.last_error)";;
esac
if nsx c ping -n -q -c 3 -W 1 "$RT_S_TUN" >/dev/null 2>&1; then
	not_ok "c's pings no longer pass"
else
	ok "c's pings no longer pass"
fi
# c connects again at once: s refuses its key at the handshake.
refused_hs() {
	[ "$(jdelta "$j0" "$(show_json s)" interface.events.tcp_handshake_failed)" -ge 1 ]
}
check "s refuses c's next connection at the handshake" wait_for 30 refused_hs
is "$(tq s peers.c.transport)" udp "s's peer c stays off tcp"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
