#!/bin/bash
# t63-fail-closed-dns: a full tunnel that fails closed keeps names in.
# The topology of t42 (a's peer b has allowed-ips 0.0.0.0/0 and ::/0), a
# has dns = 10.77.0.2, and the "local network's name server" is b's link
# address (on-link for a: the main table's route, which the suppressing
# rule lets win, would carry a query past the tunnel).
#
#   a ul0 10.200.0.1 --- ul0 b (10.202.0.1) inet0 --- eth0 c
#         fd20::1              fd20::2
#
# Asserted: toud adds, per family, "fwmark MARK dport 53 lookup main" and
# "dport 53 lookup TABLE" beside its two rules; while it runs a query to the local name server
# (UDP and TCP, both families, and UDP from a socket bound to a's link
# the way systemd-resolved binds its queries to a link's name servers)
# goes into the tunnel, none appears on a's link; after SIGKILL the rule
# and toud's xfrm policies stay and such queries are refused, the bound
# one too (a failed route lookup alone would send it on its device), a
# capture on a's link sees none of them while a datagram to another port
# of the same address does leave (the capture works); a restart leaves
# one pair per family; a reload without dns removes it and one with dns
# puts it back; a clean stop removes it and the policies, and a's routing
# is as before.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034  # read by lib-router.sh
RT_ENCRYPTION=$E2E_ENCRYPTION
. "$(dirname "$0")/lib-router.sh"
{ # the whole test is parsed before it runs (see lib.sh)
need_root
need_cmd tcpdump python3

B4=$FT_B4 B6=$FT_B6
TABLE=51820 MARK=0xca6c

ft_topo
before=$(ft_routing)
ft_conf
sed -i "s/^table = auto\$/table = auto\ndns = 10.77.0.2/" "$(conf_file a)"
# No system bus and a stand-in resolvconf: the host's resolver stays as it is.
mkdir -p "$E2E_DIR/bin"
printf '#!/bin/sh\ncat >/dev/null\nexit 0\n' >"$E2E_DIR/bin/resolvconf"
chmod 0755 "$E2E_DIR/bin/resolvconf"
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$E2E_DIR/no-system-bus"
start_a() { PATH="$E2E_DIR/bin:$PATH" toud_start a; }
toud_start b || bail_out "toud on b did not start"
start_a || bail_out "toud on a did not start"

# dns_rules FAM: toud's port-53 rules of family FAM, priorities cut off.
dns_rules() {
	nsx a ip -"$1" rule show | grep 'proto 116' | grep 'dport 53' | sed 's/^[0-9]*:[[:space:]]*//'
}
want_rule="from all fwmark $MARK dport 53 lookup main proto 116
from all dport 53 lookup $TABLE proto 116"
one_dns_rule() { [ "$(dns_rules 4)" = "$want_rule" ] && [ "$(dns_rules 6)" = "$want_rule" ]; }
no_dns_rule() { [ -z "$(dns_rules 4)$(dns_rules 6)" ]; }
# blocks: toud's xfrm policies that block port 53 (UDP and TCP, two families).
blocks() { nsx a ip xfrm policy show dir out | grep -c 'action block priority 117'; }
no_policy() { [ -z "$(nsx a ip xfrm policy show)" ]; }
tou0_gone() { ! nsx a ip link show tou0 >/dev/null 2>&1; }

# queries: from a, a DNS query by UDP, the same from a socket bound to
# ul0 (IP_UNICAST_IF / IPV6_UNICAST_IF) and a TCP connection to port 53 of
# b's link addresses, then a datagram to port 54 of the same (the
# control); prints what each send said.
queries() {
	nsx a python3 - "$B4" "$B6" <<'PY'
import socket, sys
q = bytes.fromhex("1234010000010000000000000765786d706c6503636f6d0000010001")
for addr in sys.argv[1:]:
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    for port, kind in ((53, "udp"), (53, "bound"), (53, "tcp"), (54, "udp")):
        s = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.settimeout(1)
        try:
            if kind == "bound":         # IP(V6)_UNICAST_IF: the index in network order
                s.setsockopt(socket.IPPROTO_IP if fam == socket.AF_INET else socket.IPPROTO_IPV6,
                             50 if fam == socket.AF_INET else 76,
                             socket.htonl(socket.if_nametoindex("ul0")))
            if kind != "tcp":
                s.sendto(q, (addr, port))
            else:
                s.connect((addr, port))
            res = "sent"
        except OSError as e:
            res = e.strerror
        print("%s %s/%d: %s" % (addr, kind, port, res))
        s.close()
PY
}
# capture_queries: queries() while capturing on a's link; DNS_OUT (packets
# to or from port 53), CONTROL (datagrams to port 54), QUERIES (what the
# sends said).
capture_queries() {
	local pcap=$E2E_DIR/ul0.$T_N.pcap log=$E2E_DIR/tcpdump.$T_N.log pid
	bg_start a "$log" tcpdump -i ul0 -n -s 96 --immediate-mode -U -w "$pcap" ip or ip6
	pid=$BG_PID
	wait_for 30 grep -q "listening on" "$log" || bail_out "tcpdump did not start"
	QUERIES=$(queries)
	# the control datagrams are in the capture before it stops
	wait_for 10 test "$(tcpdump -r "$pcap" -n "udp port 54" 2>/dev/null | wc -l)" -ge 2
	proc_stop "$pid"
	DNS_OUT=$(tcpdump -r "$pcap" -n "port 53" 2>/dev/null | wc -l)
	CONTROL=$(tcpdump -r "$pcap" -n "udp port 54" 2>/dev/null | wc -l)
}

# --- running ------------------------------------------------------------------
if one_dns_rule; then
	ok "running: one pair of port-53 rules per family ($(tr '\n' ';' <<<"$want_rule"))"
else
	not_ok "running: one pair of port-53 rules per family" "$(dns_rules 4; dns_rules 6)"
fi
capture_queries
diag "$QUERIES"
is "$DNS_OUT" 0 "running: queries to the local network's name server do not appear on a's link"
cmp_ok "$CONTROL" -ge 2 "... while datagrams to another port of it do ($CONTROL)"

# --- reload: the rule follows dns ------------------------------------------------
sed -i '/^dns = /d' "$(conf_file a)"
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1) || not_ok "reload without dns" "$out"
check "a reload without dns removes the port-53 rules" no_dns_rule
check "... and the xfrm policies" no_policy
sed -i "s/^table = auto\$/table = auto\ndns = 10.77.0.2/" "$(conf_file a)"
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1) || not_ok "reload with dns" "$out"
check "a reload with dns puts them back" one_dns_rule
is "$(blocks)" 4 "... and the xfrm policies that block port 53"

# --- SIGKILL: no query leaves in the clear ------------------------------------------
toud_stop a KILL
wait_for 10 tou0_gone || bail_out "tou0 still exists 10 s after SIGKILL"
check "after SIGKILL the port-53 rules stay" one_dns_rule
is "$(blocks)" 4 "after SIGKILL the xfrm policies that block port 53 stay (UDP and TCP, both families)"
capture_queries
diag "$QUERIES"
is "$DNS_OUT" 0 "after SIGKILL no query to the local network's name server leaves a's link"
cmp_ok "$CONTROL" -ge 2 "... while datagrams to another port of it do: the capture works ($CONTROL)"
if grep -q "/53: sent" <<<"$QUERIES"; then
	not_ok "the queries are refused at once" "$QUERIES"
else
	ok "the queries are refused at once"
fi

# --- restart and clean stop ----------------------------------------------------------
start_a || bail_out "toud on a did not restart"
check "after a restart exactly one pair of port-53 rules per family" one_dns_rule
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits 0 on SIGTERM"
check "a clean stop removes the port-53 rules" no_dns_rule
check "... and the xfrm policies" no_policy
after=$(ft_routing)
if [ "$after" = "$before" ]; then
	ok "after a clean stop a's rules and routes are as before toud started"
else
	not_ok "after a clean stop a's rules and routes are as before toud started" \
	    "$(diff <(echo "$before") <(echo "$after"))"
fi
done_testing
}
