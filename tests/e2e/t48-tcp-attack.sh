#!/bin/bash
# t48-tcp-attack: the TCP listener under attack from a host on its link.
#
#   x xa ---- ax a ul0 ---- ul0 b
#   10.201.0.2  .1 10.200.0.1  10.200.0.2
#
# a listens for the TCP transport on 443; b, its configured peer, comes up
# over UDP, then stops being able to send it UDP (nftables in b), so b's
# tunnel moves to TCP and stays there.  x attacks a's
# listener while b pings a and downloads from it through the tunnel:
#   (1) whole TLS 1.3 handshakes with a throwaway key no one configured,
#   (2) many connections that send nothing, and (3) many that send a
#       ClientHello and then nothing (half-finished handshakes),
#   (4) with a key a has configured (peer x), a zero-length frame and an
#       oversize one, each on its own connection.
# After each: a closed every one of x's connections (none left open), and
# counted every refusal in show --json (tcp_refused, tcp_evicted, tcp_handshake_failed,
# tcp_frames_bad); b's tunnel never left TCP (a counts no switch) and kept
# answering.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ping nft
# shellcheck disable=SC2034  # lib.sh reads it
E2E_ENCRYPTION=dtls
ATTACK=${TOUD_TCP_ATTACK:-$E2E_HELPERS/tcp-attack}
[ -x "$ATTACK" ] || bail_out "no attack client at $ATTACK (make check builds it)"

TCP_PORT=443
EV=interface.events
A_TUN=10.77.0.1

netns_add a b x
veth a ul0 b ul0 "10.200.0.1/24" "10.200.0.2/24"
veth x xa a ax "10.201.0.2/24" "10.201.0.1/24"
tcp_small_buffers a b
conf_interface a 6080 "$A_TUN/24"
echo "listen-tcp = $TCP_PORT" >>"$(conf_file a)"
conf_peer a b "" "10.77.0.2"
conf_peer a x "" "10.77.0.3"
conf_interface b 6080 10.77.0.2/24
conf_peer b a 10.200.0.1:6080 "$A_TUN"
echo "endpoint-tcp = 10.200.0.1:$TCP_PORT" >>"$(conf_file b)"
# A key pair that no one configures.
keys_for stranger
STRANGER="$E2E_DIR/keys/stranger/key.pem $E2E_DIR/keys/stranger/cert.pem"
XKEY="$E2E_DIR/keys/x/key.pem $E2E_DIR/keys/x/cert.pem"

toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
wait_for 20 nsx b ping -n -q -c 1 -W 1 "$A_TUN" || bail_out "b's tunnel to a did not come up"
out=$(nsx b nft -f - 2>&1 <<<"table inet t48 {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr 10.200.0.1 meta l4proto udp counter drop
	}
}") || bail_out "nft in b: $out"
# on_tcp: b's peer a is on TCP and answers (the pings are the data that
# waits, which is what makes the silent UDP path count as dead).
on_tcp() {
	nsx b ping -n -q -c 1 -W 1 "$A_TUN" && [ "$(tq b peers.a.transport)" = tcp ]
}
wait_for 60 on_tcp ||
    bail_out "b's tunnel to a did not move to TCP in 60 s: $(tq b peers.a 2>&1)"
is "$(tq b peers.a.transport)" tcp "b's tunnel to a runs over TCP"
switches=$(tq a peers.b.transport_switches)
mkdir -p "$E2E_DIR/www"
make_file "$E2E_DIR/www/file" 2048
http_serve a "$A_TUN" 8080 "$E2E_DIR/www"

# refusals JSON: the sum of a's TCP refusal counters.
refusals() {
	local n s=0 v
	for n in tcp_refused tcp_evicted tcp_handshake_failed tcp_frames_bad; do
		v=$(json_get "$1" "$EV.$n") && [[ $v =~ ^[0-9]+$ ]] || v=0
		s=$((s + v))
	done
	echo $s
}

# b_works DESC: pings and a download from a, while an attack runs.
b_works() {
	check "$1: b's pings to a all answered" ping_all b "$A_TUN" 10
	fetch_check b "http://$A_TUN:8080/file" "$E2E_DIR/www/file" "$1: b's download from a is intact"
}

# attack_phase DESC LOG CMD...: run x's attack, check b meanwhile, wait for
# the attacker's report (RES) and a's counters before (J0) and after (J1).
attack_phase() {
	local desc=$1 log=$2
	shift 2
	J0=$(show_json a) || bail_out "touctl show on a"
	bg_start x "$log" "$ATTACK" "$@"
	local att=$BG_PID
	sleep 1
	b_works "$desc"
	proc_wait "$att" 90 || not_ok "$desc: the attacker finishes"
	RES=$(tail -n 1 "$log")
	diag "$desc: attacker: $RES"
	# Counters move when a gives up on a connection: wait for the sum
	# to stop moving.
	J1=$(show_settled a 20) || J1=$(show_json a)
	diag "$desc: a's interface events: $(json_get "$J1" "$EV")"
	# What a still holds on its port, by state (the attacker has closed
	# its side: a connection a kept would stay in CLOSE-WAIT).
	diag "$desc: a's sockets on $TCP_PORT: $(nsx a ss -Htan "( sport = :$TCP_PORT )" |
	    awk '{ n[$1]++ } END { for (s in n) printf "%s %d ", s, n[s] }')"
}

# --- (1) whole handshakes with an unknown key ---------------------------------
# shellcheck disable=SC2086
attack_phase "(1) unknown key" "$E2E_DIR/nokey.json" nokey 10.201.0.2 10.201.0.1 "$TCP_PORT" \
    $STRANGER 20 8
att=$(json_get "$RES" attempts)
cmp_ok "$att" -ge 40 "(1) x tried its handshakes ($att)"
is "$(json_get "$RES" left_open)" 0 "(1) a left none of x's connections open"
d=$(( $(refusals "$J1") - $(refusals "$J0") ))
cmp_ok "$d" -ge "$att" "(1) every refusal counted ($d for $att attempts)"

# --- (2), (3) half-finished handshakes -----------------------------------------
for kind in silent hello; do
	if [ $kind = silent ]; then n=2; else n=3; fi
	attack_phase "($n) $kind half-open" "$E2E_DIR/halfopen-$kind.json" halfopen \
	    10.201.0.2 10.201.0.1 "$TCP_PORT" 300 "$kind" 60
	opened=$(json_get "$RES" opened)
	cmp_ok "$opened" -ge 1 "($n) x opened connections ($opened of 300)"
	is "$(json_get "$RES" still_open)" 0 "($n) a closed every one of them within 60 s"
	d=$(( $(refusals "$J1") - $(refusals "$J0") ))
	cmp_ok "$d" -ge "$opened" "($n) every one counted as a refusal ($d for $opened)"
done

# --- (4) bad frames from a configured key --------------------------------------
# shellcheck disable=SC2086
attack_phase "(4) bad frames" "$E2E_DIR/frames.json" frames 10.201.0.2 10.201.0.1 "$TCP_PORT" \
    $XKEY 10
is "$(json_get "$RES" oversize)" closed "(4) an oversize frame closes its connection"
zero=$(json_get "$RES" zero_length)
diag "(4) a zero-length frame: connection $zero"
want=1
[ "$zero" = closed ] && want=2
d=$(jdelta "$J0" "$J1" "$EV.tcp_frames_bad")
cmp_ok "$d" -ge "$want" "(4) tcp_frames_bad counts each closed connection ($d)"

is "$(tq b peers.a.transport)" tcp "b's tunnel to a is still on TCP"
is "$(tq a peers.b.transport)" tcp "a's peer b is still on TCP"
is "$(tq a peers.b.transport_switches)" "$switches" "a's peer b never left TCP meanwhile"
check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
