#!/bin/bash
# t42-fail-closed: a full tunnel fails closed.  The topology of t35: a's
# peer b has allowed-ips 0.0.0.0/0 and ::/0 with table = auto; c, "the
# internet", hangs off b, which forwards; a has default routes by its link.
#
#   a ul0 10.200.0.1 --- ul0 b (10.202.0.1) inet0 10.203.0.1 --- eth0 c 10.203.0.2
#         fd20::1              fd20::2            fd23::1              fd23::2
#
# Asserted: the tunnel's table holds, besides the route into tou0, an
# "unreachable default" route of protocol 116 with the highest metric, for
# both families; a reload with fail-open = yes takes it away and one
# without puts it back.  After SIGKILL of a's toud, tou0 and its routes are
# gone but the rules and the drop routes stay, and pings from a to c (an
# address of no peer's) go nowhere: a capture on a's link counts no packet
# to or from c, while a ping to b's link address (the main table's) shows
# that the capture works.  A restart leaves exactly one set of rules and
# routes (ip rule, ip route show table 51820 proto 116) and the tunnel
# works again; a clean stop leaves a's routing as before toud started.
# With fail-open = yes a SIGKILL lets the same pings out in the clear (what
# the drop route prevents), and the next start removes the stale rules.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034  # read by lib-router.sh
RT_ENCRYPTION=$E2E_ENCRYPTION
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl tcpdump

B4=$FT_B4 C4=$FT_C4 C6=$FT_C6
TABLE=51820 MARK=0xca6c

ft_topo
before=$(ft_routing)
ft_conf
toud_start b || bail_out "toud on b did not start"
toud_start a || bail_out "toud on a did not start"

# set_fail_open yes|no|"": the key in a's [interface] ("" removes it).
set_fail_open() {
	local f
	f=$(conf_file a)
	sed -i '/^fail-open = /d' "$f"
	[ -n "$1" ] && sed -i "s/^table = auto\$/table = auto\nfail-open = $1/" "$f"
	return 0
}

# rules_of FAM: toud's rules of family FAM, priorities cut off.
rules_of() {
	nsx a ip -"$1" rule show | grep 'proto 116' | sed 's/^[0-9]*:[[:space:]]*//'
}
# table_of FAM: toud's routes in the tunnel's table, trailing blanks cut.
table_of() {
	nsx a ip -"$1" route show table $TABLE proto 116 2>/dev/null | sed 's/[[:space:]]*$//'
}
# one_set: exactly toud's two rules and its two routes in each family.
one_set() {
	local fam r t
	for fam in 4 6; do
		r=$(rules_of $fam)
		t=$(table_of $fam)
		[ "$r" = "from all lookup main suppress_prefixlength 0 proto 116
not from all fwmark $MARK lookup $TABLE proto 116" ] || return 1
		[ "$(grep -c . <<<"$t")" = 2 ] || return 1
		grep -q "^default dev tou0 " <<<"$t" || return 1
		grep -Eq "^unreachable default (dev lo )?metric 4294967295" <<<"$t" || return 1
	done
}
drop_routes() {
	[ "$(table_of 4)" = "unreachable default metric 4294967295" ] &&
	    grep -Eq "^unreachable default (dev lo )?metric 4294967295" <<<"$(table_of 6)" &&
	    [ "$(grep -c . <<<"$(table_of 6)")" = 1 ]
}
no_toud_routing() {
	! nsx a ip rule show | grep -q 'proto 116' && ! nsx a ip -6 rule show | grep -q 'proto 116' &&
	    [ -z "$(table_of 4)$(table_of 6)" ]
}
tou0_gone() {
	! nsx a ip link show tou0 >/dev/null 2>&1
}

# capture_pings DESC: ping c (both families) and b's link address from a
# while capturing on a's link; sets TO_C (packets to or from c) and TO_B
# (ICMP echoes with b's link address) and PING_C (pings of c answered).
capture_pings() {
	local pcap=$E2E_DIR/ul0.$T_N.pcap log=$E2E_DIR/tcpdump.$T_N.log pid
	bg_start a "$log" tcpdump -i ul0 -n -s 96 --immediate-mode -U -w "$pcap" ip or ip6
	pid=$BG_PID
	wait_for 30 grep -q "listening on" "$log" || bail_out "tcpdump did not start"
	PING_C=0
	nsx a ping -n -q -c 3 -i 0.2 -W 1 "$C4" >/dev/null 2>&1 && PING_C=$((PING_C + 1))
	nsx a ping -n -q -c 3 -i 0.2 -W 1 "$C6" >/dev/null 2>&1 && PING_C=$((PING_C + 1))
	nsx a ping -n -q -c 3 -i 0.2 -W 1 "$B4" >/dev/null 2>&1 ||
	    diag "a cannot ping b's link address $B4"
	# The control's replies are in the capture before it stops.
	wait_for 10 test "$(tcpdump -r "$pcap" -n "icmp and host $B4" 2>/dev/null | wc -l)" -ge 6
	proc_stop "$pid"
	TO_C=$(tcpdump -r "$pcap" -n "host $C4 or host $C6" 2>/dev/null | wc -l)
	TO_B=$(tcpdump -r "$pcap" -n "icmp and host $B4" 2>/dev/null | wc -l)
}

# --- running: the drop routes are in the table ------------------------------
ping_check a "$C4" "a reaches c ($C4) through the tunnel"
if one_set; then
	ok "running: rules, the route into tou0 and the unreachable default route, both families"
else
	not_ok "running: rules, the route into tou0 and the unreachable default route, both families" \
	    "$(rules_of 4; table_of 4; rules_of 6; table_of 6)"
fi
set_fail_open yes
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1) || not_ok "reload with fail-open = yes" "$out"
if [ "$(table_of 4)" = "default dev tou0 scope link" ] && ! table_of 6 | grep -q unreachable; then
	ok "a reload with fail-open = yes removes the drop routes"
else
	not_ok "a reload with fail-open = yes removes the drop routes" "$(table_of 4; table_of 6)"
fi
set_fail_open ""
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1) || not_ok "reload without fail-open" "$out"
check "a reload back to the default (no) puts them back" one_set

# --- SIGKILL: nothing leaves in the clear -----------------------------------
toud_stop a KILL
wait_for 10 tou0_gone || bail_out "tou0 still exists 10 s after SIGKILL"
if [ "$(grep -c . <<<"$(rules_of 4)")" = 2 ] && [ "$(grep -c . <<<"$(rules_of 6)")" = 2 ]; then
	ok "after SIGKILL the rules stay"
else
	not_ok "after SIGKILL the rules stay" "$(rules_of 4; rules_of 6)"
fi
check "after SIGKILL the table holds the drop routes only" drop_routes
err=$(nsx a ping -n -c 1 -W 1 "$C4" 2>&1)
case $err in
*"unreachable"*|*"No route to host"*) ok "ping $C4 is refused at once: $(head -n 3 <<<"$err" | tail -n 1)";;
*) not_ok "ping $C4 is refused at once" "$err";;
esac
capture_pings
is "$PING_C" 0 "after SIGKILL a's pings of c ($C4, $C6) are not answered"
is "$TO_C" 0 "after SIGKILL a's link carries no packet to or from c"
cmp_ok "$TO_B" -ge 6 "... and the capture works: pings to b's link address $B4 are in it ($TO_B)"

# --- restart: exactly one set -------------------------------------------------
toud_start a || bail_out "toud on a did not restart"
if one_set; then
	ok "after a restart exactly one set of rules and routes"
else
	not_ok "after a restart exactly one set of rules and routes" \
	    "$(nsx a ip rule show; table_of 4; nsx a ip -6 rule show; table_of 6)"
fi
ping_check a "$C4" "after the restart a reaches c ($C4) through the tunnel"
ping_check a "$C6" "after the restart a reaches c ($C6) through the tunnel"
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits 0 on SIGTERM"
after=$(ft_routing)
if [ "$after" = "$before" ]; then
	ok "after a clean stop a's rules and routes of every table are as before toud started"
else
	not_ok "after a clean stop a's rules and routes of every table are as before toud started" \
	    "$(diff <(echo "$before") <(echo "$after"))"
fi

# --- fail-open = yes: the way wg-quick does it ----------------------------
set_fail_open yes
toud_start a || bail_out "toud on a (fail-open = yes) did not start"
ping_check a "$C4" "fail-open = yes: a reaches c through the tunnel"
toud_stop a KILL
wait_for 10 tou0_gone || bail_out "tou0 still exists 10 s after SIGKILL"
is "$(table_of 4)$(table_of 6)" "" "fail-open = yes: after SIGKILL the table is empty"
capture_pings
is "$PING_C" 2 "fail-open = yes: after SIGKILL a's pings of c are answered, in the clear"
cmp_ok "$TO_C" -ge 12 "fail-open = yes: a's link carries them ($TO_C packets to or from c)"
set_fail_open ""
toud_start a || bail_out "toud on a did not start after the fail-open crash"
check "the next start removes the stale rules: exactly one set" one_set
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits 0 on SIGTERM"
check "after a clean stop toud's rules and routes are gone" no_toud_routing
is "$(ft_routing)" "$before" "a's routing is as before toud started"

done_testing
