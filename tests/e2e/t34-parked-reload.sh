#!/bin/bash
# t34-parked-reload: a handshake parked before a reload that changes (or
# removes) its peer's key yields no session afterwards, and no packet passes
# under its keys.
#
# a pins peer b's key; x plays b with tests/e2e/attack's `hold` mode, a
# whole DTLS client: it sends its last flight up to CertificateVerify (a
# has checked b's certificate then), holds back ChangeCipherSpec and
# Finished until told, then sends them and three ICMP echo requests in data
# records sealed with the handshake's own keys.
#   (0) control: released at once, the handshake completes, the echo
#       requests reach a's TUN and the replies come back to x;
#   (1) parked, a reload pins another key for b, released: a refuses the
#       handshake at its completion, x gets no Finished and no reply, and
#       nothing reaches a's TUN;
#   (2) the same with a reload that removes b.
#
#   x xa ---- ax a
#   10.201.0.2   10.201.0.1
. "$(dirname "$0")/lib.sh"
need_root
need_cmd tcpdump
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
ATTACK=${TOUD_ATTACK:-$E2E_HELPERS/attack}
[ -x "$ATTACK" ] || bail_out "no attack client at $ATTACK (make check builds it)"

# conf_a KEY|-: a's config with peer b pinned to key KEY (- : no peer b).
conf_a() {
	conf_interface a 6080 10.77.0.1/24
	[ "$1" = - ] && return 0
	keys_for "$1"
	{
		echo
		echo "[peer b]"
		echo "address = 10.77.0.2"
		echo "keepalive = 0"
		echo "fingerprint = $(cat "$E2E_DIR/keys/$1/fingerprint")"
	} >>"$(conf_file a)"
}

reload_a() {
	local out
	out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1) || bail_out "touctl reload: $out"
}

# Echo requests from b's tunnel address that a's TUN saw so far.
echoes_seen() {
	tcpdump -r "$E2E_DIR/tun.pcap" -n 'icmp[icmptype] == icmp-echo and src host 10.77.0.2' \
	    2>/dev/null | wc -l
}

# The protocol abandons a server handshake not done 10 s after its
# ClientHello (SESSION_HANDSHAKE_MS).  A case tells only while its parked
# handshake is younger than that: its age is counted from before the client
# starts (so it is never less than the handshake's), and a case whose
# handshake reached 8 s (2 s left for the client to send its last records)
# before its checks were made is run again.
HS_YOUNG_MS=8000

# hold CASE KEY: start the parked handshake with key KEY; HOLD_PID, and
# HOLD_GO the file that releases it.  Waits until it is parked.
hold() {
	HOLD_GO=$E2E_DIR/go-$1
	HOLD_OUT=$E2E_DIR/hold-$1.json
	rm -f "$HOLD_GO" "$HOLD_OUT"
	# one parked handshake at a time: a previous try's has ended
	wait_for 60 no_half_open || diag "($1) a still holds a half-open handshake"
	HOLD_T0=$(e2e_now)
	bg_start x "$HOLD_OUT" "$ATTACK" hold 10.201.0.2 10.201.0.1 6080 \
	    "$E2E_DIR/keys/$2/key.pem" "$E2E_DIR/keys/$2/cert.pem" "$HOLD_GO" 600
	HOLD_PID=$BG_PID
	wait_for 60 grep -q '"parked"' "$HOLD_OUT" || bail_out "($1) no handshake parked: $(cat "$HOLD_OUT")"
}

# young CASE: the parked handshake is still well inside the protocol's
# bound; if not, it is released and waited for, and the case runs again.
young() {
	HOLD_AGE=$(($(e2e_now) - HOLD_T0))
	[ "$HOLD_AGE" -lt $HS_YOUNG_MS ] && return 0
	diag "($1) the parked handshake was $HOLD_AGE ms old, too near the protocol's 10 s: again"
	touch "$HOLD_GO"
	proc_wait "$HOLD_PID" 60 || bail_out "($1) the client did not finish"
	return 1
}

# parked CASE: the client reports its handshake parked with b's
# certificate accepted.
parked() {
	if grep -q '"parked": true' "$HOLD_OUT"; then
		ok "($1) x's handshake is parked with b's certificate accepted ($HOLD_AGE ms after it began)"
	else
		not_ok "($1) x's handshake is parked with b's certificate accepted" "$(cat "$HOLD_OUT")"
	fi
}

# release CASE: let the held records go; HOLD_RES is the client's report.
release() {
	touch "$HOLD_GO"
	proc_wait "$HOLD_PID" 60 || bail_out "($1) the client did not finish"
	HOLD_RES=$(tail -n 1 "$HOLD_OUT")
	diag "($1) client: $HOLD_RES"
}

# tries CASE FN: run FN until it was conclusive, at most 5 times.
tries() {
	local i
	for i in 1 2 3 4 5; do
		"$2" && return 0
	done
	not_ok "($1) a handshake parked young enough to tell, in 5 tries"
}

# shellcheck disable=SC2317
no_half_open() { [ "$(tq a interface.half_open)" = 0 ]; }
# shellcheck disable=SC2317
echoes_at_least() { [ "$(echoes_seen)" -ge "$1" ]; }

# --- set-up -------------------------------------------------------------------

netns_add a x
veth x xa a ax "10.201.0.2/24" "10.201.0.1/24"
keys_for b
keys_for b2
conf_a b
toud_start a || bail_out "toud on a did not start"
A_PID=${TOUD_PID[a]}
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i tou0 -p -n -U -w "$E2E_DIR/tun.pcap" icmp
CAP_PID=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"

# --- (0) control: the client's handshake and data records are good -----------

case0() {
	hold 0 b
	half=$(tq a interface.half_open)
	young 0 || return 1
	parked 0
	is "$half" 1 "(0) a holds one half-open handshake"
	release 0
	is "$(json_get "$HOLD_RES" completed)" 1 "(0) released at once, the handshake completes"
}
tries 0 case0
is "$(tq a peers.b.state)" up "(0) a says b is up"
cmp_ok "$(tq a peers.b.rx_packets)" -ge 3 "(0) a took the client's data records as b's"
cmp_ok "$(json_get "$HOLD_RES" data_received)" -ge 3 "(0) a's echo replies came back to the client"
wait_for 60 echoes_at_least 3
seen0=$(echoes_seen)
cmp_ok "$seen0" -ge 3 "(0) a's TUN saw the echo requests ($seen0)"

# --- (1) parked, then b's key changes ----------------------------------------------

# b's session from (0) ends with the reload; the parked one is new.
case1() {
	conf_a b
	reload_a
	j0=$(show_json a) || bail_out "touctl show on a"
	hold 1 b
	conf_a b2
	reload_a
	check "(1) after the reload a pins b's new key" \
	    test "$(tq a peers.b.fingerprint)" = "$(cat "$E2E_DIR/keys/b2/fingerprint")"
	young 1 || return 1
	parked 1
	release 1
}
tries 1 case1
wait_for 60 no_half_open
j1=$(show_json a) || bail_out "touctl show on a"
is "$(json_get "$HOLD_RES" completed)" 0 "(1) the client got no Finished: its handshake did not complete"
is "$(json_get "$HOLD_RES" data_received)" 0 "(1) nothing came back to the client"
is "$(json_get "$HOLD_RES" data_sent)" 3 "(1) the client sent its data records anyway"
st=$(tq a peers.b.state)
check "(1) a has no session for b (state $st, session $(tq a peers.b.session_id))" \
    test "$st" != up -a "$(tq a peers.b.session_id)" = null
is "$(jdelta "$j0" "$j1" peers.b.rx_packets 2>/dev/null || echo 0)" 0 \
    "(1) a counted no packet from b"
cmp_ok "$(jdelta "$j0" "$j1" interface.events.handshake_failed)" -ge 1 \
    "(1) a counts the handshake as failed"
cmp_ok "$(jdelta "$j0" "$j1" interface.drops.unknown_session)" -ge 3 \
    "(1) the data records were dropped as of no session"
is "$(json_get "$j1" interface.half_open)" 0 "(1) no half-open handshake left on a"
pcap_settle "$E2E_DIR/tun.pcap" || diag "(1) the capture kept growing"
is "$(echoes_seen)" "$seen0" "(1) a's TUN saw no echo request under the refused handshake"

# --- (2) parked, then b is removed ---------------------------------------------------

case2() {
	conf_a b
	reload_a
	j1=$(show_json a) || bail_out "touctl show on a"
	hold 2 b
	conf_a -
	reload_a
	is "$(tq a peers 2>/dev/null | tr -d ' \n')" "[]" "(2) after the reload a has no peers"
	young 2 || return 1
	parked 2
	release 2
}
tries 2 case2
wait_for 60 no_half_open
j2=$(show_json a) || bail_out "touctl show on a"
is "$(json_get "$HOLD_RES" completed)" 0 "(2) the client's handshake did not complete"
is "$(json_get "$HOLD_RES" data_received)" 0 "(2) nothing came back to the client"
cmp_ok "$(jdelta "$j1" "$j2" interface.drops.unknown_session)" -ge 3 \
    "(2) the data records were dropped as of no session"
is "$(json_get "$j2" interface.half_open)" 0 "(2) no half-open handshake left on a"
pcap_settle "$E2E_DIR/tun.pcap" || diag "(2) the capture kept growing"
is "$(echoes_seen)" "$seen0" "(2) a's TUN saw no echo request under the refused handshake"

proc_stop "$CAP_PID" INT 5
check "toud on a is the process that started (pid $A_PID)" test "${TOUD_PID[a]}" = "$A_PID"
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits with status 0 on SIGTERM"

done_testing
