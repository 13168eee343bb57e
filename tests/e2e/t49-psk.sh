#!/bin/bash
# t49-psk: [peer] preshared-key.
#   (1) touctl genpsk writes a key file 0600; toud -t refuses a key file
#       others may read, naming the file and the peer.
#   (2) contrib/toud.lua decrypts hand-made records of every cipher from
#       TOUD_PSK_DATA_KEYS lines.  Equal keys on a and b: an HTTP transfer
#       is intact; show says preshared_key true; the key log carries the
#       derived data keys (TOUD_PSK_DATA_KEYS): with it contrib/toud.lua
#       decrypts every captured data record, while with the TLS key log
#       alone tshark's DTLS dissector decrypts none.
#   (3) Different keys: no packet from the peer reaches the TUN (the peer's
#       rx_packets stay 0, bad_record counts the refused records) and both
#       sides say "preshared-key mismatch" in last_error.
#   (4) A reload of b after its key file was given a's key (the same
#       path, another key): b handshakes again on a new session, which
#       carries data with the preshared key on both sides.  Then a reload
#       that removes the keys on both sides, toud running: the peer comes
#       up and carries data.
#
#   a ul0 --- ul0 b
#   10.200.0.1  10.200.0.2
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root
need_cmd curl tcpdump tshark

LUA=$E2E_TOP/contrib/toud.lua
TOOL=$E2E_TOP/tests/e2e/dissector_tool.py
HTTP_PORT=8080
[ -r "$LUA" ] || bail_out "no $LUA"

# with_psk NODE FILE: add preshared-key = FILE to NODE's one [peer].
with_psk() {
	echo "preshared-key = $2" >>"$(conf_file "$1")"
}

# mismatch_said NODE: NODE's last_error says the keys differ.
mismatch_said() {
	[[ "$(tq "$1" "peers.$2.last_error")" == "preshared-key mismatch"* ]]
}

# --- (1) key files ------------------------------------------------------------

"$TOUCTL" genpsk "$E2E_DIR/ab.psk" || bail_out "touctl genpsk FILE failed"
is "$(stat -c %a "$E2E_DIR/ab.psk")" 600 "touctl genpsk FILE creates the file with mode 0600"
cmp_ok "$(grep -c '^[A-Za-z0-9+/]\{43\}=$' "$E2E_DIR/ab.psk")" -eq 1 \
    "it holds the base64 of 32 bytes"
"$TOUCTL" genpsk >"$E2E_DIR/other.psk" || bail_out "touctl genpsk failed"
chmod 600 "$E2E_DIR/other.psk"
same=$(cmp -s "$E2E_DIR/ab.psk" "$E2E_DIR/other.psk" && echo same || echo differ)
is "$same" differ "touctl genpsk to stdout: another key"
"$TOUCTL" genpsk "$E2E_DIR/ab.psk" 2>/dev/null
is $? 1 "touctl genpsk FILE never overwrites a key"

topo_ab
link_segments a ul0
link_segments b ul0
conf_ab 4
cp "$E2E_DIR/ab.psk" "$E2E_DIR/open.psk"
chmod 644 "$E2E_DIR/open.psk"
cp "$(conf_file a)" "$E2E_DIR/open.conf"
echo "preshared-key = $E2E_DIR/open.psk" >>"$E2E_DIR/open.conf"
out=$("$TOUD" -t -c "$E2E_DIR/open.conf" 2>&1)
is $? 1 "toud -t refuses a preshared-key file others may read"
check "the message names the file and the peer ($out)" \
    grep -q "open.psk.*others\|peer \"b\".*open.psk" <<<"$out"

# --- (2) equal keys -------------------------------------------------------------

# The dissector on hand-made records first: every cipher, both directions.
res=$(python3 "$TOOL" psk "$LUA" "$E2E_DIR") || bail_out "dissector_tool.py psk failed"
is "$(json_get "$res" failures)" "[]" \
    "contrib/toud.lua decrypts hand-made records of each cipher with TOUD_PSK_DATA_KEYS and TOUD_PQ_DATA_KEYS ($(json_get "$res" decrypted) decrypted, $(json_get "$res" opaque) under other keys left alone)" ||
    diag "$res"

cp "$E2E_DIR/ab.psk" "$E2E_DIR/a.psk"
cp "$E2E_DIR/ab.psk" "$E2E_DIR/b.psk"
with_psk a "$E2E_DIR/a.psk"
with_psk b "$E2E_DIR/b.psk"
"$TOUD" -t -c "$(conf_file a)" >/dev/null 2>&1
is $? 0 "toud -t accepts the 0600 key file"

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 256
CAP=$E2E_DIR/psk.pcap
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -n -s 0 -B 8192 --immediate-mode -U \
    -w "$CAP" udp port 6080
CAP_PID=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" ||
    bail_out "tcpdump did not start: $(cat "$E2E_DIR/tcpdump.log")"
for node in a b; do
	export SSLKEYLOGFILE=$E2E_DIR/$node.keylog
	toud_start $node || bail_out "toud on $node did not start"
done
unset SSLKEYLOGFILE
ping_check a 10.77.0.2 "ping through the tunnel with equal preshared keys"
http_serve b 10.77.0.2 "$HTTP_PORT" "$E2E_DIR/www"
fetch_check a "http://10.77.0.2:$HTTP_PORT/f" "$E2E_DIR/www/f" "256 KB over HTTP with equal preshared keys"
pcap_settle "$CAP" || diag "the capture kept growing"
proc_stop "$CAP_PID" TERM
proc_stop "$HTTP_PID"
is "$(tq a peers.b.preshared_key)/$(tq b peers.a.preshared_key)" true/true \
    "show: preshared_key true on both sides"
is "$(tq a peers.b.last_error)" null "no error on a"
is "$(tq a peers.b.events.psk_mismatch)" 0 "no mismatch counted"
check "touctl show (text) says so" grep -q "preshared key: yes" <<<"$(touctl_show a)"
key_shown() { { show_json a; touctl_show a; } | grep -qF "$(head -c 20 "$E2E_DIR/ab.psk")"; }
if key_shown; then not_ok "show never prints the key"; else ok "show never prints the key"; fi

keylog=$E2E_DIR/keylog
cat "$E2E_DIR/a.keylog" "$E2E_DIR/b.keylog" >"$keylog" 2>/dev/null
cmp_ok "$(grep -c '^CLIENT_RANDOM [0-9a-f]\{64\} [0-9a-f]\{96\}$' "$keylog")" -ge 1 \
    "the TLS key log has the handshake's secret"
cmp_ok "$(grep -c '^TOUD_PSK_DATA_KEYS [0-9a-f]\{64\}\( [0-9a-f]\+\)\{4\}$' "$keylog")" -ge 2 \
    "the key log has the derived data keys of both sides (TOUD_PSK_DATA_KEYS)"
grep '^CLIENT_RANDOM ' "$keylog" >"$E2E_DIR/tls-only.keylog"
s=$(python3 "$TOOL" summary "$LUA" "$CAP" "$HTTP_PORT" "$E2E_DIR/tls-only.keylog") ||
    bail_out "dissector_tool.py summary failed"
st() { json_get "$s" "$1"; }
cmp_ok "$(st appdata)" -gt 10 "data records captured ($(st appdata))"
cmp_ok "$(st dtls_types.22)" -ge 4 "handshake records captured ($(st dtls_types.22))"
is "$(st appdata_with_inner)" 0 "the TLS key log alone decrypts no data record"
is "$(st tcp)" 0 "no inner TCP visible"
is "$(st lua_errors)" 0 "no Lua error"
s=$(python3 "$TOOL" summary "$LUA" "$CAP" "$HTTP_PORT" "$keylog") ||
    bail_out "dissector_tool.py summary failed"
diag "with the whole key log: $s"
cmp_ok "$(st appdata)" -gt 10 "data records captured ($(st appdata))"
is "$(st appdata_with_inner)" "$(st appdata)" "with the whole key log contrib/toud.lua decrypts every data record"
is "$(st inner_valid)" "$(st appdata)" "toud.inner.kind is compact, ip or control on every one"
cmp_ok "$(st tcp_port)" -gt 10 "decrypted TCP frames with port $HTTP_PORT ($(st tcp_port))"
is "$(st tcp_other)" 0 "no inner TCP with other ports"
cmp_ok "$(st syn)" -ge 1 "the SYN to port $HTTP_PORT is seen"
cmp_ok "$(st synack)" -ge 1 "the SYN-ACK from port $HTTP_PORT is seen"
is "$(st http_uris)" '["/f"]' "the HTTP request inside is dissected"
is "$(st toud_experts)/$(st lua_errors)/$(st malformed)" 0/0/0 \
    "no toud expert info, Lua error or malformed packet ($(st samples))"

# --- (3) different keys -----------------------------------------------------------

toud_stop a
toud_stop b
cp "$E2E_DIR/other.psk" "$E2E_DIR/b.psk"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
nsx a ping -n -q -c 3 -i 0.3 -W 1 10.77.0.2 >/dev/null 2>&1
is $? 1 "no answer to ping with different preshared keys"
check "a says preshared-key mismatch ($(tq a peers.b.last_error))" wait_for 20 mismatch_said a b
check "b says preshared-key mismatch ($(tq b peers.a.last_error))" wait_for 20 mismatch_said b a
cmp_ok "$(tq a peers.b.events.psk_mismatch)" -ge 1 "a counted the mismatch"
is "$(tq a peers.b.rx_packets)/$(tq b peers.a.rx_packets)" 0/0 \
    "no packet from the peer reached either TUN"
cmp_ok "$(tq b peers.a.drops.bad_record)" -ge 1 "b refused a's records ($(tq b peers.a.drops.bad_record), bad_record)"
cmp_ok "$(tq a peers.b.drops.bad_record)" -ge 1 "a refused b's records ($(tq a peers.b.drops.bad_record), bad_record)"
check "the log says it at warning" grep -q "preshared-key mismatch" "$E2E_DIR/b.log"

# --- (4) a reload changes the key, another removes it -----------------------------

sid=$(tq b peers.a.session_id)
cp "$E2E_DIR/ab.psk" "$E2E_DIR/b.psk"
out=$("$TOUCTL" -s "$(sock_of b)" reload 2>&1)
is $? 0 "touctl reload on b with a's key in its key file ($out)"
ping_check b 10.77.0.1 "ping through the tunnel once b has a's key"
is "$(tq a peers.b.preshared_key)/$(tq b peers.a.preshared_key)" true/true \
    "show: preshared_key true on both sides"
new_sid=$(tq b peers.a.session_id)
check "b handshook again: a new session ($sid -> $new_sid)" test "$new_sid" != "$sid" -a "$new_sid" != null
is "$(tq a peers.b.session_id)" "$new_sid" "a is on the same new session"

for node in a b; do
	sed -i '/^preshared-key/d' "$(conf_file $node)"
	out=$("$TOUCTL" -s "$(sock_of $node)" reload 2>&1)
	is $? 0 "touctl reload on $node without the preshared key ($out)"
done
ping_check a 10.77.0.2 "ping through the tunnel once the keys are gone"
is "$(tq a peers.b.preshared_key)/$(tq b peers.a.preshared_key)" false/false \
    "show: preshared_key false on both sides"
is "$(tq a peers.b.state)" up "a's peer is up"
is "$(tq a peers.b.last_error)" null "a's error is gone"
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits 0"
toud_stop b

done_testing
}
