#!/bin/bash
# t40-export-wait: `touctl export` and `touctl wait`.  a and b start with
# no peers.  Each one's exported [peer] section, pasted into the other's
# file, passes `toud -t`, and after a reload the two reach each other
# through the tunnel: the section carries the right name, fingerprint,
# endpoint and addresses.  `touctl wait b` started while b is idle
# brings b up by itself (a handshake, no traffic) and exits 0; for a peer that never answers it fails when its timeout
# runs out, saying why (the handshake got no answer); for an unknown peer,
# or with no daemon on the socket, it fails with a message.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping

ctl() {
	local node=$1
	shift
	nsx "$node" "$TOUCTL" -s "$(sock_of "$node")" "$@"
}

# A section's value of KEY ("" when absent or commented out).
val() {
	sed -n "s/^$2 = //p" <<<"$1"
}

topo_ab
# a listens on one address, so it knows its endpoint; b on all of them.
conf_interface a 10.200.0.1:6080 10.77.0.1/24 fd77::1/64
conf_interface b 6080 10.77.0.2/24 fd77::2/64
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

v=$("$TOUCTL" -V)
check "touctl -V prints its version ($v)" grep -qx 'touctl [0-9][0-9.]*' <<<"$v"

# --- export -----------------------------------------------------------------
ea=$(ctl a export --name a) || bail_out "touctl export on a failed"
diag "a's export:"$'\n'"$ea"
is "$(grep '^\[' <<<"$ea")" "[peer a]" "a's section is [peer a] (--name)"
is "$(val "$ea" endpoint)" "10.200.0.1:6080" "a's endpoint is its listen address"
is "$(val "$ea" address)" "10.77.0.1, fd77::1" "a's addresses are its tunnel addresses"
if [ "$E2E_ENCRYPTION" = dtls ]; then
	is "$(val "$ea" fingerprint)" "$(cat "$E2E_DIR/keys/a/fingerprint")" \
	    "a's fingerprint is that of its key"
else
	is "$(val "$ea" fingerprint)" "" "no fingerprint with encryption = none"
fi

eb_noep=$(ctl b export --name b) || bail_out "touctl export on b failed"
is "$(val "$eb_noep" endpoint)" "" "b, listening on every address, writes no endpoint line"
check "b's section says how to give the endpoint" grep -q '^# endpoint = HOST:6080 .*--endpoint' \
    <<<"$eb_noep"
eb=$(ctl b export --name b --endpoint 10.200.0.2) || bail_out "touctl export --endpoint on b failed"
diag "b's export:"$'\n'"$eb"
is "$(val "$eb" endpoint)" "10.200.0.2:6080" "--endpoint ADDRESS gets the listen port"
is "$(val "$(ctl b export --name b --endpoint fd20::2)" endpoint)" "[fd20::2]:6080" \
    "--endpoint with an IPv6 address gets brackets"
is "$(val "$(ctl b export --name b --endpoint b.example:7000)" endpoint)" "b.example:7000" \
    "--endpoint HOST:PORT is taken as it is"
err=$(ctl b export --name b --endpoint 'host:99999' 2>&1)
is "$?" 1 "an endpoint that does not parse is refused"
diag "$err"
err=$(ctl b export --name 'no/such' 2>&1)
is "$?" 2 "a name that cannot name a peer is a usage error"

# Without a name, this host's name up to the first dot (when it is one).
h=$(hostname -s 2>/dev/null || hostname)
if [[ "$h" =~ ^[A-Za-z0-9._-]{1,32}$ ]]; then
	is "$(ctl a export | grep '^\[')" "[peer $h]" "without --name the section is named after the host"
fi

# The sections, pasted into the other side's file, are accepted.
# (With encryption = none a peer needs an endpoint.)
if [ "$E2E_ENCRYPTION" = dtls ]; then
	cp "$(conf_file a)" "$E2E_DIR/a-noep.conf"
	printf '\n%s\n' "$eb_noep" >>"$E2E_DIR/a-noep.conf"
	check "toud -t accepts b's section without an endpoint" "$TOUD" -t -c "$E2E_DIR/a-noep.conf"
fi
printf '\n%s\n' "$ea" >>"$(conf_file b)"
printf '\n%s\n' "$eb" >>"$(conf_file a)"
check "toud -t accepts a's section in b's file" "$TOUD" -t -c "$(conf_file b)"
check "toud -t accepts b's section in a's file" "$TOUD" -t -c "$(conf_file a)"
check "b reloads with peer a" ctl b reload
check "a reloads with peer b" ctl a reload
is "$(tq a peers.b.state)" idle "a's new peer b is idle (nothing sent yet)"

# --- wait -------------------------------------------------------------------
# With DTLS, wait itself asks a to handshake: b comes up with no traffic
# and no keepalive.  Without encryption there is no handshake to start:
# wait waits until the pings below make contact.
t0=$(e2e_now)
nsx a "$TOUCTL" -s "$(sock_of a)" wait b --timeout 20 >"$E2E_DIR/wait.out" 2>&1 &
wait_pid=$!
e2e_record "$wait_pid"
if [ "$E2E_ENCRYPTION" = dtls ]; then
	proc_wait "$wait_pid" 20 || bail_out "touctl wait b did not return"
	is "$PROC_RC" 0 "touctl wait b brings b up by itself ($(($(e2e_now) - t0)) ms)"
	# rx_packets counts what reached the TUN: nothing, either way.
	is "$(tq a peers.b.rx_packets)/$(tq b peers.a.rx_packets)" 0/0 \
	    "with no packet through the tunnel and no keepalive"
fi
ping_check a 10.77.0.2 "ping b through the tunnel made of the exported sections"
ping_check b 10.77.0.1 "ping a through the tunnel made of the exported sections"
ping_check a fd77::2 "ping b's second address"
proc_wait "$wait_pid" 20 || bail_out "touctl wait b did not return"
is "$PROC_RC" 0 "touctl wait b exits 0 once b is up ($(($(e2e_now) - t0)) ms)"
is "$(cat "$E2E_DIR/wait.out")" "" "and prints nothing"
is "$(tq a peers.b.state)" up "b is up"
check "touctl wait b on a peer that is up returns at once" ctl a wait b --timeout 1

# A peer that never answers: keepalive makes a start handshakes at once.
cat >>"$(conf_file a)" <<EOF

[peer c]
endpoint = 10.200.0.3:6080
address = 10.77.0.3
keepalive = 5
EOF
if [ "$E2E_ENCRYPTION" = dtls ]; then
	echo "fingerprint = sha256:$(printf '5a%.0s' $(seq 32))" >>"$(conf_file a)"
fi
check "a reloads with peer c" ctl a reload
t0=$(e2e_now)
err=$(ctl a wait c --timeout 12 2>&1)
rc=$?
ms=$(($(e2e_now) - t0))
is "$rc" 1 "touctl wait c fails for a peer that never answers"
cmp_ok "$ms" -ge 11900 "it waited its whole timeout ($ms ms)"
cmp_ok "$ms" -lt 15000 "and not much longer"
diag "$err"
check "it says the peer is not up after its timeout" grep -q "peer 'c' is not up after 12 s" <<<"$err"
if [ "$E2E_ENCRYPTION" = dtls ]; then
	check "and why: the handshake got no answer" \
	    grep -q 'last error: handshake failed: no answer: nothing came back from the endpoint' <<<"$err"
	is "$(tq a peers.c.last_error)" \
	    "handshake failed: no answer: nothing came back from the endpoint within 10 s" \
	    "touctl show says the same in c's last_error"
fi

t0=$(e2e_now)
err=$(ctl a wait nosuch --timeout 10 2>&1)
rc=$?
ms=$(($(e2e_now) - t0))
is "$rc" 1 "touctl wait of an unknown peer fails"
cmp_ok "$ms" -lt 3000 "at once ($ms ms), without waiting for its timeout"
check "saying there is no such peer" grep -q "no such peer 'nosuch'" <<<"$err"

err=$("$TOUCTL" -s "$E2E_DIR/none.sock" wait b --timeout 1 2>&1)
is "$?" 1 "touctl wait with no daemon on the socket fails after its timeout"
check "saying toud did not answer" grep -q "toud did not answer on $E2E_DIR/none.sock within 1 s" \
    <<<"$err"
"$TOUCTL" -s "$(sock_of a)" wait b --timeout x >/dev/null 2>&1
is "$?" 2 "an invalid timeout is a usage error"

check "toud on a still running" toud_alive a
check "toud on b still running" toud_alive b

done_testing
