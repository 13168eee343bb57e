#!/bin/bash
# t75-tcp-revoke: a reload that no longer accepts a peer's key ends its
# TCP connection, as it ends its DTLS sessions (t22).
#
#   c (client) ul0 --- rc0 r (router) rs0 --- ul0 s (server)
#
# The router drops every UDP datagram, so c's peer s moves to the TCP
# transport (endpoint-tcp 10.201.1.2:443, listen-tcp = 443 on s) and c's
# pings pass over it.  s accepts c by a CA and the name "c".  Then s
# reloads (1) with another CA in the same file (its configuration text
# unchanged), and, once c is back, (2) with a fingerprint pin of a key
# nobody holds in place of the CA.  Asserted each time: within 2 s s's
# peer c is off TCP and its last error says why, c's pings stop passing,
# and c's next connection is refused at the handshake.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nft ping openssl
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443
PKI=$E2E_DIR/pki

# ca NAME: a self-signed CA certificate and its key in $PKI.
ca() {
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$PKI/$1.key" -out "$PKI/$1.pem" -subj "/CN=test $1" -days 2 \
	    >"$PKI/openssl.log" 2>&1 || bail_out "openssl: $(cat "$PKI/openssl.log")"
}

# on_tcp: c's peer s is on TCP and answers.
on_tcp() {
	nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN" && [ "$(tq c peers.s.transport)" = tcp ]
}

# revoked DESC: after s's reload (done by the caller, at T0), s's peer c
# leaves TCP within 2 s and says why, c's pings stop, and c's next
# connection is refused at the handshake.
revoked() {
	local desc=$1
	if wait_for 2 off_tcp; then
		ok "$desc: s's peer c leaves tcp within 2 s of the reload ($(($(e2e_now) - T0)) ms)"
	else
		not_ok "$desc: s's peer c leaves tcp within 2 s of the reload" "$(tq s peers.c 2>&1)"
	fi
	case $(tq s peers.c.last_error) in
	*"no longer accepted"*) ok "$desc: s's peer c says why: $(tq s peers.c.last_error)";;
	*) not_ok "$desc: s's peer c says why" "last_error: $(tq s peers.c.last_error)";;
	esac
	if nsx c ping -n -q -c 3 -W 1 "$RT_S_TUN" >/dev/null 2>&1; then
		not_ok "$desc: c's pings no longer pass"
	else
		ok "$desc: c's pings no longer pass"
	fi
	check "$desc: s refuses c's next connection at the handshake" wait_for 30 refused_hs
	is "$(tq s peers.c.transport)" udp "$desc: s's peer c stays off tcp"
}
off_tcp() {
	[ "$(tq s peers.c.transport)" = udp ]
}
refused_hs() {
	[ "$(jdelta "$J0" "$(show_json s)" interface.events.tcp_handshake_failed)" -ge 1 ]
}

# s_reload: reload s, its counters before in J0 and the time in T0.
s_reload() {
	local out
	J0=$(show_json s) || bail_out "touctl show on s"
	T0=$(e2e_now)
	out=$("$TOUCTL" -s "$(sock_of s)" reload 2>&1) || not_ok "s reloads" "$out"
}

# c's certificate is issued by a CA, and s accepts c by that CA and the
# name "c" (its fingerprint pin is replaced).
mkdir -p "$PKI"
ca ca1
ca ca2
rt_topo
rt_conf 0 "$TCP_PORT"
openssl req -new -key "$E2E_DIR/keys/c/key.pem" -subj "/CN=c" -out "$PKI/c.csr" \
    >"$PKI/openssl.log" 2>&1 &&
    openssl x509 -req -in "$PKI/c.csr" -CA "$PKI/ca1.pem" -CAkey "$PKI/ca1.key" \
    -set_serial 1 -days 2 -out "$PKI/c.pem" >"$PKI/openssl.log" 2>&1 ||
    bail_out "openssl: $(cat "$PKI/openssl.log")"
sed -i "s|^certificate = .*|certificate = $PKI/c.pem|" "$(conf_file c)"
cp "$PKI/ca1.pem" "$PKI/s-ca.pem"
sed -i "s|^fingerprint = .*|ca = $PKI/s-ca.pem\nname = c|" "$(conf_file s)"
grep -q "^name = c" "$(conf_file s)" || bail_out "cannot edit s's configuration"
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"
rt_block_udp t75_block
wait_for 60 on_tcp || bail_out "c's peer s did not move to tcp in 60 s: $(tq c peers.s 2>&1)"
is "$(tq s peers.c.transport)" tcp "s's peer c is on tcp, accepted by its CA"
ping_check c "$RT_S_TUN" "pings from c over tcp"

# --- (1) the CA file replaced under the same name ---------------------------
cp "$PKI/ca2.pem" "$PKI/s-ca.pem"
s_reload
revoked "(1) another CA in the same file"

# --- (2) back, then a fingerprint that is not c's ----------------------------
cp "$PKI/ca1.pem" "$PKI/s-ca.pem"
s_reload
if wait_for 60 on_tcp; then
	ok "(2) with its CA back, c's peer s is on tcp again"
else
	bail_out "(2) with its CA back, c's peer s did not come back on tcp: $(tq c peers.s 2>&1)"
fi
keys_for stranger
sed -i -e "/^ca = /d" -e "s/^name = c$/fingerprint = $(cat "$E2E_DIR/keys/stranger/fingerprint")/" \
    "$(conf_file s)"
grep -q "^fingerprint = $(cat "$E2E_DIR/keys/stranger/fingerprint")" "$(conf_file s)" ||
    bail_out "cannot edit s's configuration"
s_reload
revoked "(2) a fingerprint that is not c's"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
