#!/bin/bash
# t59-include: peers one file each.  a's file includes peers.d/*.conf,
# empty at first, so a does not know b.  b's peer file dropped there and a
# reload bring b up (pings through the tunnel answered) while a's other
# state stays; a file with a mistake makes the reload fail naming that
# file and line, and b stays up; so does a FIFO there (the reload returns
# at once) and a peers.d anyone may write; b's file removed and a reload,
# b is gone.
#
#   a ul0 --- ul0 b
#   10.200.0.1  10.200.0.2
. "$(dirname "$0")/lib.sh"
{ # the whole test is parsed before it runs (see lib.sh)
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root

reload_a() { "$TOUCTL" -s "$(sock_of a)" reload 2>&1; }
# shellcheck disable=SC2317  # called through wait_for
b_up() { [ "$(tq a peers.b.state 2>/dev/null)" = up ]; }

topo_ab
conf_interface a 6080 10.77.0.1/24 fd77::1/64
echo "include = peers.d/*.conf" >>"$(conf_file a)"
mkdir "$E2E_DIR/peers.d" || bail_out "cannot make peers.d"
conf_interface b 6080 10.77.0.2/24 fd77::2/64
conf_peer b a 10.200.0.1:6080 "10.77.0.1, fd77::1"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

is "$(tq a peers 2>&1)" "[]" "a starts with no peer: its include matches no file yet"
if nsx b ping -n -q -c 1 -W 1 10.77.0.1 >/dev/null 2>&1; then
	not_ok "b cannot reach a, which does not know it" "a ping was answered"
else
	ok "b cannot reach a, which does not know it"
fi

# conf_peer writes NODE's file: "peers.d/b" is a's peer directory.
conf_peer peers.d/b b 10.200.0.2:6080 "10.77.0.2, fd77::2"
out=$(reload_a)
is $? 0 "a reloads with b's file dropped in peers.d ($out)"
addrs=$(tq a peers.b.addresses 2>&1)
if [[ $addrs == *'"10.77.0.2'* && $addrs == *'"fd77::2'* ]]; then
	ok "b is a's peer now, from its own file ($addrs)"
else
	not_ok "b is a's peer now, from its own file" "addresses: $addrs"
fi
ping_check b 10.77.0.1 "b pings a through the tunnel"
ping_check a fd77::2 "a pings b through the tunnel (IPv6)"
wait_for 10 b_up
is "$(tq a peers.b.state)" up "b is up on a"
sid=$(tq a peers.b.session_id)

printf '[peer c]\naddress = 10.77.0.3\nbogus = 1\n' >"$E2E_DIR/peers.d/c.conf"
if out=$(reload_a); then
	not_ok "a reload with a mistake in c's file fails" "it succeeded: $out"
else
	ok "a reload with a mistake in c's file fails"
fi
if [[ $out == *"$E2E_DIR/peers.d/c.conf:3: unknown key 'bogus' in [peer c]"* ]]; then
	ok "naming that file and line ($out)"
else
	not_ok "naming that file and line" "it said: $out"
fi
is "$(tq a peers.b.session_id)" "$sid" "b's session on a is untouched"
ping_check b 10.77.0.1 "b still pings a"
rm -f "$E2E_DIR/peers.d/c.conf"

# A FIFO that matches: the reload must not wait in open(2) for a writer
# (the loop would stop: no data, no control socket) but fail at once.
mkfifo "$E2E_DIR/peers.d/f.conf" || bail_out "mkfifo failed"
t0=$(date +%s%N)
out=$(timeout 20 "$TOUCTL" -s "$(sock_of a)" reload 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$ms" -lt 5000 ]; then
	ok "a reload with a FIFO in peers.d fails at once (${ms} ms)"
else
	not_ok "a reload with a FIFO in peers.d fails at once" "rc $rc after ${ms} ms: $out"
fi
if [[ $out == *"include: '$E2E_DIR/peers.d/f.conf' is not a regular file (a FIFO)"* ]]; then
	ok "naming the FIFO ($out)"
else
	not_ok "naming the FIFO" "it said: $out"
fi
ping_check b 10.77.0.1 "b still pings a after the FIFO"
is "$(tq a peers.b.session_id)" "$sid" "b's session on a is untouched by the FIFO"
rm -f "$E2E_DIR/peers.d/f.conf"

# A directory anyone may write: someone could drop a peer in it.
chmod 0777 "$E2E_DIR/peers.d"
if out=$(reload_a); then
	not_ok "a reload with a world-writable peers.d fails" "it succeeded: $out"
else
	ok "a reload with a world-writable peers.d fails"
fi
if [[ $out == *"directory '$E2E_DIR/peers.d' is writable by its group or others"*"chmod go-w"* ]]; then
	ok "naming the directory and the fix ($out)"
else
	not_ok "naming the directory and the fix" "it said: $out"
fi
if "$TOUD" -t -c "$(conf_file a)" >/dev/null 2>&1; then
	not_ok "toud -t refuses the world-writable peers.d"
else
	ok "toud -t refuses the world-writable peers.d"
fi
ping_check b 10.77.0.1 "b still pings a"
is "$(tq a peers.b.session_id)" "$sid" "b's session on a is untouched"
chmod 0755 "$E2E_DIR/peers.d"

rm -f "$E2E_DIR/peers.d/b.conf"
out=$(reload_a)
is $? 0 "a reloads with b's file removed ($out)"
is "$(tq a peers 2>&1)" "[]" "b is no longer a's peer"
check "toud on a still running" toud_alive a
done_testing
}
