#!/bin/bash
# t78-pq: [peer] post-quantum, on whatever OpenSSL the build runs with.
#
#   c (client) ul0 --- r --- ul0 s (server)    UDP 6080, TCP 443 (listen-tcp)
#
# ML-KEM below means "this build's OpenSSL has ML-KEM-768" (toud -V: 3.5
# and later; Debian 12's 3.0 has none).
#   (1) post-quantum = auto on both ends, UDP: both ends show the key
#       exchange of the DTLS session ("x25519", or with ML-KEM "x25519 +
#       ml-kem-768", and then the capture holds the two ~1.2 KB records of
#       the exchange after the handshake), post_quantum as ML-KEM says.
#       UDP blocked, the peers move to TCP: key_exchange "x25519" or
#       "x25519mlkem768", the metrics' toud_peer_post_quantum of tcp agree,
#       and the TLS ServerHello's key share is group 0x001d (X25519) or
#       0x11ec (X25519MLKEM768), the ClientHello's shares 0x001d, with
#       ML-KEM 0x11ec too.
#   (2) s's peer c requires it.  With ML-KEM on both: the tunnel works, on
#       both transports.  Without (or with c's post-quantum = off, which
#       leaves ML-KEM out of the client's offer): no ping passes on TCP nor
#       on UDP, nothing from the peer is counted at either end, both ends'
#       last_error say why (s: "post-quantum = required ...", c: "peer
#       requires post-quantum key exchange (ML-KEM-768) ...") and both
#       count pq_refused.  On TCP the same with a preshared key at both
#       ends: the refusal is read as one, not as a preshared-key mismatch.
#   (3) With ML-KEM, a mixed pair: s runs the build of TOUD_OTHER_BIN with
#       OpenSSL 3.0 (TOUD_OTHER_LIB, for LD_LIBRARY_PATH; tests/systemd/
#       suite.sh copies the host's there).  auto: up on UDP and on TCP, both
#       ends say key exchange without ML-KEM and post_quantum false.  c's
#       peer s requires it: refused on both transports, s (3.0) says "peer
#       requires post-quantum key exchange (ML-KEM-768); this node's
#       OpenSSL 3.0... has none", c says its own reason; pq_refused at both.
#       Without TOUD_OTHER_BIN a build with ML-KEM FAILS this part: the
#       mixed pair must not vanish unnoticed.
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
need_root
need_cmd nft ping tcpdump tshark
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443
OTHER=${TOUD_OTHER_BIN:-}
OTHER_LIB=${TOUD_OTHER_LIB:-}

# has_mlkem BIN [LIBDIR]: that build's OpenSSL has ML-KEM-768.
has_mlkem() {
	LD_LIBRARY_PATH=${2:-${LD_LIBRARY_PATH:-}} "$1" -V | grep -q 'ML-KEM-768: yes'
}
PQ=false
has_mlkem "$TOUD" && PQ=true
diag "this build: $("$TOUD" -V | tail -n 1)"

# start_pair [S_BIN S_LIB]: both touds on the configs written (s from
# S_BIN, with S_LIB first for its libraries).
start_pair() {
	if [ -n "${1:-}" ]; then
		TOUD=$1 LD_LIBRARY_PATH=$2 toud_start s || bail_out "toud ($1) on s did not start"
	else
		toud_start s || bail_out "toud on s did not start"
	fi
	toud_start c || bail_out "toud on c did not start"
}
stop_pair() {
	toud_stop c
	toud_stop s
}

# conf_pair [C_PQ [S_PQ [TCP]]]: the configs, with post-quantum = C_PQ in
# c's peer s and S_PQ in s's peer c (auto when empty); TCP "no" leaves
# the TCP transport out.
conf_pair() {
	local tcp=$TCP_PORT
	[ "${3:-}" = no ] && tcp=
	rt_conf 0 "$tcp"
	[ -n "${1:-}" ] && echo "post-quantum = $1" >>"$(conf_file c)"
	[ -n "${2:-}" ] && echo "post-quantum = $2" >>"$(conf_file s)"
	return 0
}

# path_kx NODE PEER TRANSPORT: the key_exchange of that path.
path_kx() {
	tq "$1" "peers.$2.paths" | python3 -c '
import json, sys
print([p["key_exchange"] for p in json.load(sys.stdin) if p["transport"] == sys.argv[1]][0])' "$3"
}

# shown CTX TRANSPORT KX PQ: both ends' peers show key_exchange KX and
# post_quantum PQ, and so does c's path on TRANSPORT.
shown() {
	local n
	for n in c:s s:c; do
		is "$(tq "${n%:*}" "peers.${n#*:}.key_exchange")" "$3" \
		    "$1: ${n%:*}'s peer ${n#*:} shows key_exchange $3"
		is "$(tq "${n%:*}" "peers.${n#*:}.post_quantum")" "$4" \
		    "$1: ${n%:*}'s peer ${n#*:} shows post_quantum $4"
	done
	is "$(path_kx c s "$2")" "$3" "$1: the $2 path shows it too"
}

# udp_kx, tcp_kx true|false: the key exchange of a session of this build
# with itself, with ML-KEM or without.
udp_kx() {
	if $1; then echo "x25519 + ml-kem-768"; else echo x25519; fi
}
tcp_kx() {
	if $1; then echo x25519mlkem768; else echo x25519; fi
}

# key_shares PCAP TYPE: the key share groups of the TLS hellos of TYPE (1
# ClientHello, 2 ServerHello), sorted, unique, one line.
key_shares() {
	tshark -r "$1" -n -Y "tls.handshake.type == $2" -T fields \
	    -e tls.handshake.extensions_key_share_group 2>/dev/null | tr ',\t' '\n\n' |
	    sed '/^$/d' | awk '{ printf "0x%04x\n", $1 }' | sort -u | paste -sd' '
}

# metric NODE NAME LABELS: the value of a sample of touctl metrics.
metric() {
	nsx "$1" "$TOUCTL" -s "$(sock_of "$1")" metrics | awk -v s="$2{$3}" \
	    'index($0, s " ") == 1 { print $2 }'
}

# poke: a packet for the tunnel, which starts a handshake, and on a peer
# whose traffic waits unanswered, the search for another path.
poke() {
	nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN" >/dev/null 2>&1
	return 0
}
# said NODE PEER TEXT: NODE's peer PEER's last_error holds TEXT, while
# c sends.
said() {
	poke
	case "$(tq "$1" "peers.$2.last_error")" in *"$3"*) return 0 ;; esac
	return 1
}
# moved NODE PEER TRANSPORT: transport_is, while c sends.
moved() {
	poke
	transport_is "$@"
}
# refused_both CTX C_TEXT S_TEXT: both ends refused and said so
# (last_error, pq_refused), and nothing passed.
refused_both() {
	local ctx=$1 cwant=$2 swant=$3
	if wait_for 40 said c s "$cwant"; then
		ok "$ctx: c's last_error says why: $(tq c peers.s.last_error)"
	else
		not_ok "$ctx: c's last_error says '$cwant'" "$(tq c peers.s.last_error)"
	fi
	if wait_for 20 said s c "$swant"; then
		ok "$ctx: s's last_error says why: $(tq s peers.c.last_error)"
	else
		not_ok "$ctx: s's last_error says '$swant'" "$(tq s peers.c.last_error)"
	fi
	cmp_ok "$(tq c peers.s.events.pq_refused)" -ge 1 "$ctx: c counts pq_refused"
	cmp_ok "$(tq s peers.c.events.pq_refused)" -ge 1 "$ctx: s counts pq_refused"
	if nsx c ping -n -q -c 3 -i 0.3 -W 1 "$RT_S_TUN" >/dev/null 2>&1; then
		not_ok "$ctx: no ping passes"
	else
		ok "$ctx: no ping passes"
	fi
	# A refusal is no traffic of the peer's.
	is "$(tq s peers.c.rx_packets)" 0 "$ctx: s received nothing from c"
	is "$(tq c peers.s.rx_packets)" 0 "$ctx: c received nothing from s"
}

rt_topo

# --- (1) auto ---------------------------------------------------------------
conf_pair
capture_start s ul0 udp_hs "udp port $RT_PORT"
export SSLKEYLOGFILE=$E2E_DIR/keylog
start_pair
unset SSLKEYLOGFILE
rt_tunnel_up 20 || bail_out "no ping through the tunnel from c to s in 20 s"
ping_check c "$RT_S_TUN" "auto, udp: pings through the tunnel"
capture_stop udp_hs
UDP_CAP=$CAP
shown "auto, udp" udp "$(udp_kx $PQ)" "$PQ"
big_c=$(tcpdump -r "$CAP" -n "src host $RT_C_UL and greater 1200" 2>/dev/null | wc -l)
big_s=$(tcpdump -r "$CAP" -n "src host $RT_S_UL and greater 1100" 2>/dev/null | wc -l)
diag "datagrams over 1.1 KB in the handshake's capture: c $big_c, s $big_s"
if $PQ; then
	cmp_ok "$big_c" -ge 1 "auto, udp: c sent the ML-KEM encapsulation key (a datagram over 1.2 KB)"
	cmp_ok "$big_s" -ge 1 "auto, udp: s answered with the ciphertext (over 1.1 KB)"
else
	is "$big_c" 0 "auto, udp: no datagram over 1.2 KB from c (no ML-KEM)"
fi
# The key log: with ML-KEM the data keys are not the handshake's, so the
# TLS lines alone decrypt no data record (only the exchange's messages,
# under the first keys), and contrib/toud.lua with TOUD_PQ_DATA_KEYS
# decrypts them all; without, the TLS lines decrypt the data.
LUA=$E2E_TOP/contrib/toud.lua
TOOL=$E2E_TOP/tests/e2e/dissector_tool.py
grep '^CLIENT_RANDOM ' "$E2E_DIR/keylog" >"$E2E_DIR/tls-only.keylog"
pqlines=$(grep -c '^TOUD_PQ_DATA_KEYS [0-9a-f]\{64\}\( [0-9a-f]\+\)\{4\}$' "$E2E_DIR/keylog")
s=$(python3 "$TOOL" summary "$LUA" "$UDP_CAP" 80 "$E2E_DIR/tls-only.keylog") ||
    bail_out "dissector_tool.py summary failed"
st() { json_get "$s" "$1" 2>/dev/null || echo 0; }
cmp_ok "$(st appdata)" -ge 10 "auto, udp: data records captured ($(st appdata))"
if $PQ; then
	cmp_ok "$pqlines" -ge 1 "auto, udp: the key log has TOUD_PQ_DATA_KEYS"
	is "$(st inner_kinds.compact)" 0 "auto, udp: the TLS key log alone decrypts no ping ($(st inner_kinds))"
	s=$(python3 "$TOOL" summary "$LUA" "$UDP_CAP" 80 "$E2E_DIR/keylog") ||
	    bail_out "dissector_tool.py summary failed"
	is "$(st appdata_with_inner)" "$(st appdata)" \
	    "auto, udp: with the whole key log contrib/toud.lua decrypts every data record"
	cmp_ok "$(st inner_kinds.compact)" -ge 5 "auto, udp: ... the pings among them ($(st inner_kinds))"
else
	is "$pqlines" 0 "auto, udp: the key log has no TOUD_PQ_DATA_KEYS"
	cmp_ok "$(st inner_kinds.compact)" -ge 5 "auto, udp: the TLS key log decrypts the pings ($(st inner_kinds))"
fi
is "$(st lua_errors)" 0 "auto, udp: no Lua error"

capture_start s ul0 tls "tcp port $TCP_PORT"
rt_block_udp t78_block
wait_for 40 moved c s tcp || not_ok "auto: c's peer s moves to tcp" "$(tq c peers.s)"
wait_for 10 transport_is s c tcp
rt_tunnel_up 10 || not_ok "auto, tcp: ping through the tunnel"
capture_stop tls
shown "auto, tcp" tcp "$(tcp_kx $PQ)" "$PQ"
is "$(metric c toud_peer_post_quantum 'interface="tou0",peer="s",transport="tcp"')" \
    "$($PQ && echo 1 || echo 0)" "auto, tcp: toud_peer_post_quantum of tcp agrees"
if $PQ; then
	is "$(key_shares "$CAP" 1)" "0x001d 0x11ec" "auto, tcp: the ClientHello shares X25519MLKEM768 and X25519"
	is "$(key_shares "$CAP" 2)" "0x11ec" "auto, tcp: the ServerHello's key share is X25519MLKEM768"
else
	is "$(key_shares "$CAP" 1)" "0x001d" "auto, tcp: the ClientHello shares X25519 alone"
	is "$(key_shares "$CAP" 2)" "0x001d" "auto, tcp: the ServerHello's key share is X25519"
fi
stop_pair
nsx r nft delete table ip t78_block || bail_out "cannot lift the block"

# --- (2) required on s --------------------------------------------------------
if $PQ; then
	conf_pair "" required
	start_pair
	rt_tunnel_up 20 && ok "required, both with ML-KEM: the tunnel works on udp" ||
	    not_ok "required, both with ML-KEM: the tunnel works on udp" "$(tq c peers.s)"
	is "$(tq s peers.c.key_exchange)" "$(udp_kx true)" "required, udp: s shows $(udp_kx true)"
	rt_block_udp t78_block
	wait_for 40 moved c s tcp || not_ok "required: c's peer s moves to tcp" "$(tq c peers.s)"
	rt_tunnel_up 10 && ok "required, both with ML-KEM: the tunnel works on tcp" ||
	    not_ok "required, both with ML-KEM: the tunnel works on tcp" "$(tq c peers.s)"
	is "$(tq s peers.c.key_exchange)" "$(tcp_kx true)" "required, tcp: s shows $(tcp_kx true)"
	is "$(tq s peers.c.events.pq_refused)" 0 "required, both with ML-KEM: nothing refused"
	stop_pair
	nsx r nft delete table ip t78_block || bail_out "cannot lift the block"
	# c leaves ML-KEM out: s refuses, and c says its own policy is why.
	cwhy="peer requires post-quantum key exchange (ML-KEM-768); post-quantum = off here"
	copt=off
else
	cwhy="peer requires post-quantum key exchange (ML-KEM-768), but its own OpenSSL has none"
	copt=
fi
swhy="post-quantum = required"
conf_pair "$copt" required
rt_block_udp t78_block
start_pair
# c's words name the cause: its own policy, or the other end's OpenSSL.
refused_both "required on s, tcp" "$cwhy" "$swhy"
cmp_ok "$(tq s peers.c.events.pq_refused)" -le 8 "s refuses at the policy's back-off, not in a loop"
stop_pair
nsx r nft delete table ip t78_block || bail_out "cannot lift the block"
# The same with a preshared key at both ends: the refusal comes before any
# frame under the key, and is read as what it is, not as a mismatch.
"$TOUCTL" genpsk "$E2E_DIR/pq.psk" >/dev/null || bail_out "touctl genpsk failed"
conf_pair "$copt" required
for n in c s; do echo "preshared-key = $E2E_DIR/pq.psk" >>"$(conf_file $n)"; done
rt_block_udp t78_block
start_pair
refused_both "required on s, tcp, preshared key" "$cwhy" "$swhy"
if [[ "$(tq c peers.s.last_error)" == *preshared* ]]; then
	not_ok "required on s, tcp, preshared key: c's last_error names no preshared key" \
	    "$(tq c peers.s.last_error)"
else
	ok "required on s, tcp, preshared key: c's last_error names no preshared key"
fi
is "$(tq c peers.s.events.psk_mismatch)" 0 "required on s, tcp, preshared key: no mismatch at c"
is "$(tq s peers.c.events.psk_mismatch)" 0 "required on s, tcp, preshared key: no mismatch at s"
stop_pair
nsx r nft delete table ip t78_block || bail_out "cannot lift the block"
conf_pair "$copt" required no
start_pair
refused_both "required on s, udp" "$cwhy" "$swhy"
stop_pair

# --- (3) the mixed pair -------------------------------------------------------
if $PQ && [ -z "$OTHER" ]; then
	not_ok "a build with OpenSSL 3.0 to pair with (TOUD_OTHER_BIN)" \
	    "this build has ML-KEM: the mixed pair needs the other"
elif $PQ; then
	has_mlkem "$OTHER" "$OTHER_LIB" && bail_out "TOUD_OTHER_BIN's OpenSSL has ML-KEM"
	diag "s runs $OTHER: $(LD_LIBRARY_PATH=$OTHER_LIB "$OTHER" -V | tail -n 1)"
	conf_pair
	start_pair "$OTHER" "$OTHER_LIB"
	rt_tunnel_up 20 && ok "mixed, auto: the tunnel works on udp" ||
	    not_ok "mixed, auto: the tunnel works on udp" "$(tq c peers.s)"
	shown "mixed (c with ML-KEM, s 3.0), udp" udp x25519 false
	rt_block_udp t78_block
	wait_for 40 moved c s tcp || not_ok "mixed: c's peer s moves to tcp" "$(tq c peers.s)"
	rt_tunnel_up 10 && ok "mixed, auto: the tunnel works on tcp" ||
	    not_ok "mixed, auto: the tunnel works on tcp" "$(tq c peers.s)"
	shown "mixed (c with ML-KEM, s 3.0), tcp" tcp x25519 false
	stop_pair
	# c requires it, UDP still blocked: TCP first.
	conf_pair required
	start_pair "$OTHER" "$OTHER_LIB"
	refused_both "mixed, required on c, tcp" "post-quantum = required" \
	    "peer requires post-quantum key exchange (ML-KEM-768); this node's OpenSSL 3.0"
	stop_pair
	nsx r nft delete table ip t78_block || bail_out "cannot lift the block"
	conf_pair required "" no
	start_pair "$OTHER" "$OTHER_LIB"
	refused_both "mixed, required on c, udp" "post-quantum = required" \
	    "peer requires post-quantum key exchange (ML-KEM-768); this node's OpenSSL 3.0"
	stop_pair
fi

done_testing
}
