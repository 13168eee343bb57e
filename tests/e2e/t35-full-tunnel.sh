#!/bin/bash
# t35-full-tunnel: all of a host's traffic through the tunnel, as wg-quick
# does it.  Host a has a default route over its link to b, like any host;
# b's endpoint (10.202.0.1 on b's loopback) is reached only through that
# default route.  a's peer b has allowed-ips 0.0.0.0/0 and ::/0 with
# table = auto; c, "the internet", hangs off b, which forwards.
#
#   a ul0 10.200.0.1 --- ul0 b (10.202.0.1) inet0 10.203.0.1 --- eth0 c 10.203.0.2
#         fd20::1              fd20::2            fd23::1              fd23::2
#
# Asserted: toud on a starts despite a's default routes and leaves them
# alone; the default routes into the tunnel sit in table 51820 (fwmark
# 0xca6c, both chosen by toud) beside the drop route, with the two rules
# per family; a reaches c
# over IPv4 and IPv6 with TCP (checked by sha256, and c sees a's tunnel
# addresses); on a's link there is then nothing but the tunnel's UDP to
# b's endpoint (no TCP, nothing to or from c's addresses), so the tunnel's
# own datagrams left by the default route instead of looping; a reload
# that drops ::/0 removes the IPv6 rules and route only, one that changes
# table is refused; after SIGTERM a's rules and routes of every table are
# as before toud started.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034  # read by lib-router.sh
RT_ENCRYPTION=$E2E_ENCRYPTION
. "$(dirname "$0")/lib-router.sh"
need_root
need_cmd curl tcpdump

A4=$FT_A4 B4=$FT_B4 B6=$FT_B6 EP=$FT_EP C4=$FT_C4 C6=$FT_C6
TABLE=51820 MARK=0xca6c

ft_topo
before=$(ft_routing)
ft_conf
toud_start b || bail_out "toud on b did not start"
if toud_start a; then
	ok "toud on a starts with allowed-ips 0.0.0.0/0 and ::/0 beside a's default routes"
else
	not_ok "toud on a starts with allowed-ips 0.0.0.0/0 and ::/0 beside a's default routes"
	done_testing
fi

# --- what toud installed --------------------------------------------------
rules4=$(nsx a ip -4 rule show)
rules6=$(nsx a ip -6 rule show)
for fam in 4 6; do
	r=$rules4
	[ $fam = 6 ] && r=$rules6
	if grep -Eq "^[0-9]+:[[:space:]]+not from all fwmark $MARK lookup $TABLE proto 116" <<<"$r" &&
	    grep -Eq "^[0-9]+:[[:space:]]+from all lookup main suppress_prefixlength 0 proto 116" <<<"$r"; then
		ok "IPv$fam rules: not fwmark $MARK lookup $TABLE; lookup main suppress_prefixlength 0"
	else
		not_ok "IPv$fam rules: not fwmark $MARK lookup $TABLE; lookup main suppress_prefixlength 0" "$r"
	fi
	# The suppressing rule is consulted first.
	sup=$(grep -E "suppress_prefixlength 0 proto 116" <<<"$r" | cut -d: -f1)
	notm=$(grep -E "not from all fwmark $MARK" <<<"$r" | cut -d: -f1)
	cmp_ok "${sup:-x}" -lt "${notm:-x}" "IPv$fam: the main table's specific routes come first ($sup < $notm)"
	# Besides it, the drop route of fail-open = no (t42 tests it).
	r=$(nsx a ip -$fam route show table $TABLE)
	if [[ $r == "default dev tou0 proto 116 "* && $(wc -l <<<"$r") -eq 2 ]] &&
	    grep -q "^unreachable default .*proto 116 metric 4294967295" <<<"$r"; then
		ok "IPv$fam default route into tou0 in table $TABLE, the drop route, and nothing else"
	else
		not_ok "IPv$fam default route into tou0 in table $TABLE, the drop route, and nothing else" "$r"
	fi
done
case $(nsx a ip -4 route show default) in
"default via $B4 dev ul0"*) ok "a's own IPv4 default route is untouched";;
*) not_ok "a's own IPv4 default route is untouched" "$(nsx a ip -4 route show default)";;
esac
case $(nsx a ip -6 route show default) in
"default via $B6 dev ul0"*) ok "a's own IPv6 default route is untouched";;
*) not_ok "a's own IPv6 default route is untouched" "$(nsx a ip -6 route show default)";;
esac
# The kernel's verdicts: c (and b's endpoint, unmarked) into the tunnel;
# b's endpoint with toud's mark by the link.
route_dev() {
	nsx a ip -o route get "$@" 2>&1 | sed -n 's/.* dev \([^ ]*\).*/\1/p'
}
is "$(route_dev "$C4")" tou0 "a routes c ($C4) into tou0"
is "$(route_dev "$C6")" tou0 "a routes c ($C6) into tou0"
is "$(route_dev "$EP")" tou0 "unmarked, even b's endpoint would go into tou0"
is "$(route_dev "$EP" mark $MARK)" ul0 "with the mark, b's endpoint goes by the default route"
ja=$(show_json a) || bail_out "touctl show on a"
is "$(json_get "$ja" interface.fwmark)/$(json_get "$ja" interface.table)" "$((MARK))/$TABLE" \
    "touctl show --json: fwmark and table"
txt=$(touctl_show a) || bail_out "touctl show on a"
if grep -q "^  fwmark: $MARK\$" <<<"$txt" && grep -q "^  table: $TABLE " <<<"$txt"; then
	ok "touctl show: fwmark and table"
else
	not_ok "touctl show: fwmark and table" "$txt"
fi

# --- TCP to c through the tunnel, and what a's link carries ----------------
mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 2048
http_serve c "$C4" 8080 "$E2E_DIR/www"
http4=$HTTP_PID
http_serve c "$C6" 8086 "$E2E_DIR/www"
http6=$HTTP_PID
pcap=$E2E_DIR/ul0.pcap
bg_start a "$E2E_DIR/tcpdump.log" tcpdump -i ul0 -n -s 96 --immediate-mode -U -w "$pcap" ip or ip6
tcpdump_pid=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
fetch_check a "http://$C4:8080/f" "$E2E_DIR/www/f" "2 MB from c to a over IPv4 through the tunnel"
fetch_check a "http://[$C6]:8086/f" "$E2E_DIR/www/f" "2 MB from c to a over IPv6 through the tunnel"
pcap_settle "$pcap" || diag "the capture kept growing"
proc_stop "$tcpdump_pid"
proc_stop "$http4"
proc_stop "$http6"
# Outer packets on a's link: UDP between a and b's endpoint port 6080;
# anything TCP; anything to or from c; anything else, less the kernel's
# neighbour discovery and MLD (ARP is not IP, so not counted either).
kinds=$(python3 - "$pcap" "$A4" "$EP" "$C4" "$C6" <<'PY'
import socket, struct, sys
data = open(sys.argv[1], "rb").read()
a4, ep, c4, c6 = sys.argv[2:6]
e = "<" if struct.unpack("<I", data[:4])[0] in (0xa1b2c3d4, 0xa1b23c4d) else ">"
off, tunnel, tcp, to_c, nd, other = 24, 0, 0, 0, 0, 0
while off + 16 <= len(data):
    incl = struct.unpack(e + "I", data[off + 8:off + 12])[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    et = pkt[12:14]
    if et == b"\x08\x00":
        ip = pkt[14:]
        proto, src, dst = ip[9], socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        l4 = ip[(ip[0] & 15) * 4:]
    elif et == b"\x86\xdd":
        ip = pkt[14:]
        proto = ip[6]
        src, dst = socket.inet_ntop(socket.AF_INET6, ip[8:24]), socket.inet_ntop(socket.AF_INET6, ip[24:40])
        l4 = ip[40:]
    else:
        continue
    if {src, dst} & {c4, c6}:
        to_c += 1
    if proto == 6:
        tcp += 1
    elif proto == 17 and {src, dst} == {a4, ep} and 6080 in struct.unpack("!HH", l4[:4]):
        tunnel += 1
    elif proto == 0 or (proto == 58 and l4[:1] and (130 <= l4[0] <= 137 or l4[0] == 143)):
        nd += 1                 # the kernel's neighbour discovery and MLD
    elif not {src, dst} & {c4, c6}:
        other += 1
print(tunnel, tcp, to_c, other)
PY
)
read -r tunnel tcp to_c other <<<"$kinds"
cmp_ok "${tunnel:-0}" -gt 1000 "the transfers crossed a's link as UDP between a and b's endpoint ($tunnel)"
is "${tcp:-x}/${to_c:-x}/${other:-x}" "0/0/0" "a's link carried no TCP, nothing to or from c, nothing else (TCP/to-c/other)"
if grep -q '^10\.77\.0\.1 - ' "$E2E_DIR/http-c-8080.log" && grep -q '^fd77::1 - ' "$E2E_DIR/http-c-8086.log"; then
	ok "c saw the requests come from a's tunnel addresses"
else
	not_ok "c saw the requests come from a's tunnel addresses" \
	    "$(cat "$E2E_DIR/http-c-8080.log" "$E2E_DIR/http-c-8086.log")"
fi
is "$(tq a peers.b.state)" up "a: peer b is up"

# --- a reload that takes ::/0 away ------------------------------------------
sed -i 's|^allowed-ips = 0.0.0.0/0, ::/0$|allowed-ips = 0.0.0.0/0|' "$(conf_file a)"
grep -q '^allowed-ips = 0.0.0.0/0$' "$(conf_file a)" || bail_out "cannot edit a's configuration"
out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1) || not_ok "reload without ::/0" "$out"
r6=$(nsx a ip -6 rule show; nsx a ip -6 route show table $TABLE 2>&1)
r4=$(nsx a ip -4 rule show; nsx a ip -4 route show table $TABLE)
if ! grep -q "proto 116" <<<"$r6" && grep -q "not from all fwmark $MARK lookup $TABLE proto 116" <<<"$r4" &&
    grep -q "^default dev tou0 proto 116" <<<"$r4"; then
	ok "reload without ::/0: the IPv6 rules and route are gone, the IPv4 ones stay"
else
	not_ok "reload without ::/0: the IPv6 rules and route are gone, the IPv4 ones stay" "$r4
$r6"
fi
is "$(route_dev "$C6")" ul0 "after the reload a routes c ($C6) by its own default route"
ping_check a "$C4" "IPv4 through the tunnel still works after the reload"

# table and fwmark shape the sockets and the rules: a change needs a restart.
cp "$(conf_file a)" "$E2E_DIR/a.conf.saved"
sed -i 's|^table = auto$|table = off|' "$(conf_file a)"
rules_before=$(nsx a ip rule show)
if out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1); then
	not_ok "a reload that changes table is refused" "$out"
else
	case $out in
	*"changing [interface] table needs a restart"*) ok "a reload that changes table is refused: $out";;
	*) not_ok "a reload that changes table is refused" "$out";;
	esac
fi
is "$(nsx a ip rule show)" "$rules_before" "... and changes no rule"
cp "$E2E_DIR/a.conf.saved" "$(conf_file a)"

# --- exit --------------------------------------------------------------------
toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits 0 on SIGTERM"
after=$(ft_routing)
if [ "$after" = "$before" ]; then
	ok "after SIGTERM a's rules and routes of every table are as before toud started"
else
	not_ok "after SIGTERM a's rules and routes of every table are as before toud started" \
	    "$(diff <(echo "$before") <(echo "$after"))"
fi

done_testing
