#!/bin/bash
# t79-tcp-psk: the preshared key protects the TCP transport too.
# The router drops every UDP datagram (nftables) from the start, so the
# client c reaches the server s only over endpoint-tcp / listen-tcp 443.
#   (a) Different preshared keys: no ping passes; both sides say
#       "preshared-key mismatch" in last_error and count psk_mismatch, and
#       c's traffic never moves to TCP.  While c keeps reconnecting (three
#       more mismatches counted) and a UDP handshake of its fails, every
#       look at last_error still says the mismatch: neither the next
#       connection nor the failed handshake replaces it.
#   (a2) A key on c only: no ping passes; s, which gets c's sealed frame
#       first, says the mismatch and counts it; c's last_error names the
#       preshared key too (the other end closed before its first frame).
#   (b) Equal keys: pings pass over TCP; the key log has the frame keys
#       (TOUD_TCP_PSK_FRAME_KEYS).  With the TLS lines of the key log
#       alone, tshark decrypts the TLS stream of a capture, and a marker
#       sent through the tunnel (ping's pattern) is nowhere in it.
#   (c) The control: no preshared key, the same capture and key log: the
#       decrypted stream does hold the marker, so (b) can fail.
#   (d) Then a reload gives both sides the key: the connection without it
#       ends, the next one carries the pings, and its decrypted stream no
#       longer holds the marker.
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
need_root
need_cmd ping nft tcpdump tshark
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443
MARKER=746f75642d743739     # "toud-t79", ping's pattern (16 hex digits at most)

# with_psk NODE FILE: NODE's one [peer] gets preshared-key = FILE (the
# client's endpoint-tcp line follows its [peer] section: still in it).
with_psk() {
	echo "preshared-key = $2" >>"$(conf_file "$1")"
}

mismatch_said() {
	[[ "$(tq "$1" "peers.$2.last_error")" == "preshared-key mismatch"* ]]
}

# tls_marker_count KEYLOG: how many decrypted TLS records of the capture
# hold the marker, and how many were decrypted at all ("N M").
tls_marker_count() {
	tshark -r "$CAP" -n -o "tls.keylog_file:$1" -d "tcp.port==$TCP_PORT,tls" -x 2>/dev/null |
	    python3 -c '
import re, sys
marker = bytes.fromhex(sys.argv[1])
blocks, cur = [], None
for line in sys.stdin:
    if line.startswith("Decrypted TLS"):
        cur = bytearray()
        blocks.append(cur)
        continue
    m = re.match(r"^[0-9a-f]{4}  ((?:[0-9a-f]{2} ?)+)", line)
    if m and cur is not None:
        cur += bytes.fromhex(m.group(1).replace(" ", ""))
    elif not m:
        cur = None
print(sum(1 for b in blocks if marker in b), len(blocks))
' "$MARKER"
}

# run_pings: 20 pings with the marker as their pattern, through the tunnel.
run_pings() {
	nsx c ping -n -q -c 20 -i 0.1 -W 2 -p "$MARKER" "$RT_S_TUN" >/dev/null 2>&1
}

start_both() {
	for node in s c; do
		export SSLKEYLOGFILE=$E2E_DIR/$1-$node.keylog
		toud_start $node || bail_out "toud on $node did not start"
	done
	unset SSLKEYLOGFILE
}

rt_topo
rt_conf 5 "$TCP_PORT"
cp "$(conf_file c)" "$E2E_DIR/c.conf.plain"
cp "$(conf_file s)" "$E2E_DIR/s.conf.plain"
"$TOUCTL" genpsk "$E2E_DIR/c.psk" >/dev/null || bail_out "touctl genpsk failed"
"$TOUCTL" genpsk "$E2E_DIR/s.psk" >/dev/null || bail_out "touctl genpsk failed"
with_psk c "$E2E_DIR/c.psk"
with_psk s "$E2E_DIR/s.psk"
rt_block_udp t79_block

# --- (a) different keys -------------------------------------------------------

start_both a
nsx c ping -n -q -c 3 -i 0.3 -W 1 "$RT_S_TUN" >/dev/null 2>&1
is $? 1 "(a) no answer to ping with different preshared keys"
for n in c:s s:c; do
	if wait_for 30 mismatch_said "${n%:*}" "${n#*:}"; then
		ok "(a) ${n%:*} says preshared-key mismatch"
	else
		not_ok "(a) ${n%:*} says preshared-key mismatch" \
		    "last_error: $(tq "${n%:*}" "peers.${n#*:}.last_error")"
	fi
done
cmp_ok "$(tq c peers.s.events.psk_mismatch)" -ge 1 "(a) c counts psk_mismatch"
cmp_ok "$(tq s peers.c.events.psk_mismatch)" -ge 1 "(a) s counts psk_mismatch"
n0=$(tq c peers.s.events.psk_mismatch)
h0=$(tq c peers.s.events.handshake_failed)
lost=0 looks=0 up=0
deadline=$(e2e_deadline 90)
while :; do
	j=$(show_json c) || bail_out "touctl show on c failed"
	looks=$((looks + 1))
	[[ "$(json_get "$j" peers.s.last_error)" == "preshared-key mismatch"* ]] ||
	    { lost=$((lost + 1)); diag "last_error: $(json_get "$j" peers.s.last_error)"; }
	[ "$(json_get "$j" peers.s.transport)" = tcp ] && up=$((up + 1))
	[ "$(json_get "$j" peers.s.events.psk_mismatch)" -ge $((n0 + 3)) ] &&
	    [ "$(json_get "$j" peers.s.events.handshake_failed)" -gt "$h0" ] && break
	e2e_before "$deadline" || break
	sleep 0.2
done
n1=$(tq c peers.s.events.psk_mismatch)
cmp_ok "$n1" -ge $((n0 + 3)) "(a) c reconnects and meets the mismatch again ($n0, then $n1)"
is "$lost" 0 "(a) last_error says the mismatch in every one of $looks looks meanwhile"
is "$up" 0 "(a) traffic never moved to tcp"
h1=$(tq c peers.s.events.handshake_failed)
cmp_ok "$h1" -gt "$h0" "(a) a UDP handshake of c's failed meanwhile ($h0, then $h1)"
is "$(tq s peers.c.rx_packets)" 0 "(a) s received no packet from c"
is "$(tq c peers.s.events.tcp_frames_bad)" 0 "(a) not counted as a frame changed on the way"
toud_stop c
toud_stop s

# --- (a2) a key on one side only ---------------------------------------------------

cp "$E2E_DIR/s.conf.plain" "$(conf_file s)"
start_both a2
nsx c ping -n -q -c 3 -i 0.3 -W 1 "$RT_S_TUN" >/dev/null 2>&1
is $? 1 "(a2) no answer to ping with a preshared key on c only"
if wait_for 30 mismatch_said s c; then
	ok "(a2) s, without a key, says preshared-key mismatch"
else
	not_ok "(a2) s, without a key, says preshared-key mismatch" \
	    "last_error: $(tq s peers.c.last_error)"
fi
cmp_ok "$(tq s peers.c.events.psk_mismatch)" -ge 1 "(a2) s counts psk_mismatch"
# (Not kept: a failed UDP handshake may say its own reason in between.)
psk_named() { [[ "$(tq c peers.s.last_error)" == *preshared-key* ]]; }
if wait_for 30 psk_named; then
	ok "(a2) c's last_error names the preshared key"
else
	not_ok "(a2) c's last_error names the preshared key" "last_error: $(tq c peers.s.last_error)"
fi
is "$(tq c peers.s.transport)" udp "(a2) c's traffic did not move to tcp"
toud_stop c
toud_stop s
with_psk s "$E2E_DIR/s.psk"

# --- (b) equal keys -------------------------------------------------------------

cp "$E2E_DIR/c.psk" "$E2E_DIR/s.psk"
capture_start s ul0 psk "tcp port $TCP_PORT"
start_both b
check "(b) ping through the tunnel over tcp with equal keys" rt_tunnel_up 30
is "$(tq c peers.s.transport)" tcp "(b) c's peer s is on tcp"
is "$(tq c peers.s.last_error)" null "(b) no error"
is "$(tq c peers.s.events.psk_mismatch)" 0 "(b) no mismatch counted"
check "(b) 20 pings with the marker pass" run_pings
capture_stop psk
cat "$E2E_DIR/b-c.keylog" "$E2E_DIR/b-s.keylog" >"$E2E_DIR/b.keylog"
cmp_ok "$(grep -c '^TOUD_TCP_PSK_FRAME_KEYS [0-9a-f]\{64\} [0-9a-f]\{64\} [0-9a-f]\{64\} [0-9a-f]\{24\} [0-9a-f]\{24\}$' \
    "$E2E_DIR/b.keylog")" -ge 2 "(b) the key log has the frame keys of both sides"
grep -v '^TOUD_' "$E2E_DIR/b.keylog" >"$E2E_DIR/b-tls.keylog"
read -r found decrypted < <(tls_marker_count "$E2E_DIR/b-tls.keylog")
cmp_ok "$decrypted" -ge 20 "(b) the TLS key log decrypts the TLS records ($decrypted)"
is "$found" 0 "(b) no decrypted TLS record holds the marker"
toud_stop c
toud_stop s

# --- (c) the control: no preshared key ----------------------------------------

cp "$E2E_DIR/c.conf.plain" "$(conf_file c)"
cp "$E2E_DIR/s.conf.plain" "$(conf_file s)"
capture_start s ul0 plain "tcp port $TCP_PORT"
start_both c
check "(c) ping through the tunnel over tcp without a key" rt_tunnel_up 30
is "$(tq c peers.s.transport)" tcp "(c) c's peer s is on tcp"
check "(c) 20 pings with the marker pass" run_pings
capture_stop plain
cat "$E2E_DIR/c-c.keylog" "$E2E_DIR/c-s.keylog" >"$E2E_DIR/c.keylog"
read -r found decrypted < <(tls_marker_count "$E2E_DIR/c.keylog")
cmp_ok "$decrypted" -ge 20 "(c) the key log decrypts the TLS records ($decrypted)"
cmp_ok "$found" -ge 20 "(c) decrypted TLS records hold the marker ($found)"

# --- (d) a reload adds the key --------------------------------------------------

with_psk c "$E2E_DIR/c.psk"
with_psk s "$E2E_DIR/s.psk"
for node in s c; do
	nsx $node "$TOUCTL" -s "$(sock_of $node)" reload >/dev/null ||
	    bail_out "touctl reload on $node failed"
done
capture_start s ul0 reload "tcp port $TCP_PORT"
check "(d) ping through the tunnel over tcp after the reload" rt_tunnel_up 60
is "$(tq c peers.s.transport)" tcp "(d) c's peer s is on tcp"
check "(d) 20 pings with the marker pass" run_pings
capture_stop reload
cat "$E2E_DIR/c-c.keylog" "$E2E_DIR/c-s.keylog" | grep -v '^TOUD_' >"$E2E_DIR/d-tls.keylog"
read -r found decrypted < <(tls_marker_count "$E2E_DIR/d-tls.keylog")
cmp_ok "$decrypted" -ge 20 "(d) the TLS key log decrypts the TLS records ($decrypted)"
is "$found" 0 "(d) no decrypted TLS record holds the marker: the connection without the key ended"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
}
