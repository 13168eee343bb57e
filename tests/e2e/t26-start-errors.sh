#!/bin/bash
# t26-start-errors: what a failed start says, in the administrator's terms,
# at priority err (the "<3>" prefix journald turns into PRIORITY=3, what
# `journalctl -p err` shows):
#   - a device of the TUN's name that is not a TUN device (a veth),
#   - IPv6 disabled on the host with an IPv6 address configured,
#   - the TUN device held by another toud,
#   - a route to a peer's prefix that another toud installed, and one that
#     someone else did, in the main table or a numbered one,
#   - a default route into the tunnel in the main table beside the host's,
# and that each failed start leaves no TUN device behind; a toud running as
# root without `user =` warns about it.
. "$(dirname "$0")/lib.sh"
need_root

netns_add a
conf_interface a 6080 10.77.0.1/24 fd77::1/64
# b's allowed-ips get a route of a's own (its addresses lie in a's prefixes,
# which the kernel's connected routes cover).
conf_peer a b "10.200.0.2:6080" "10.77.0.2, fd77::2" 192.168.60.0/24

# start_fails CONF: run toud on CONF in namespace a, expecting it to give
# up at start; OUT is what it wrote, RC its status.
start_fails() {
	OUT=$(timeout 20 ip netns exec "$(ns a)" "$TOUD" -c "$1" </dev/null 2>&1)
	RC=$?
}
# said DESC PATTERN: the start failed (status 1) and an err line matches.
said() {
	local line
	line=$(grep -E '^<3>' <<<"$OUT" | grep -F -- "$2" | head -n 1)
	if [ "$RC" -eq 1 ] && [ -n "$line" ]; then
		ok "$1: status 1, at err: ${line#<3>}"
	else
		not_ok "$1" "status $RC, output:
$OUT"
	fi
}
no_tun() {
	is "$(nsx a ip -o link show "$1" 2>/dev/null)" "" "... and no $1 is left behind"
}

# A veth named tou0 (what the review met: "Invalid argument").
nsx a ip link add tou0 type veth peer name tou0p || bail_out "veth device"
start_fails "$(conf_file a)"
said "a non-TUN device of the TUN's name" 'tun device "tou0": a network device of that name exists and is not a TUN device (driver veth)'
nsx a ip link del tou0

# IPv6 off in the namespace (what disable_ipv6=1 in sysctl.conf does).
nsx a sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 ||
    bail_out "sysctl disable_ipv6"
start_fails "$(conf_file a)"
said "an IPv6 address on a host with IPv6 disabled" "IPv6 is disabled on this host"
no_tun tou0
nsx a sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0

# The real one, as root without user =.
toud_start a || bail_out "toud on a did not start"
grep -q "running as root: set 'user = toud'" "$E2E_DIR/a.log" &&
    ok "running as root without user = draws a warning" ||
    not_ok "running as root without user = draws a warning" "$(cat "$E2E_DIR/a.log")"

# a second daemon: the same TUN name.
f2=$E2E_DIR/a2.conf
sed -e "s|^control = .*|control = $E2E_DIR/a2.sock|" -e 's|^listen = .*|listen = 6090|' \
    "$(conf_file a)" >"$f2"
start_fails "$f2"
said "a TUN device another toud holds" 'tun device "tou0": in use by another process'

# Another name and addresses; a peer prefix the first toud routes already.
sed -i -e 's|^name = .*|name = tou1|' -e 's|^address = 10.77.0.1/24|address = 10.79.0.1/24|' \
    -e '/^address = fd77::1\/64/d' -e 's|^address = 10.77.0.2, fd77::2|address = 10.79.0.2|' "$f2"
start_fails "$f2"
said "a route another toud installed" "a route to 192.168.60.0/24 exists already and is another toud's (dev tou0)"
no_tun tou1
# ... and one the administrator made.
nsx a ip route add 10.88.0.0/24 dev lo || bail_out "ip route add"
sed -i 's|^allowed-ips = 192.168.60.0/24|allowed-ips = 10.88.0.0/24|' "$f2"
start_fails "$f2"
said "a route someone else installed" "a route to 10.88.0.0/24 exists already and is not toud's (dev lo, proto 3)"
no_tun tou1
# A default route into the tunnel in the main table (table = 254) beside
# the host's own: the way out is table = auto, not removing the host's.
nsx a ip route add default dev lo || bail_out "ip route add default"
sed -i -e 's|^allowed-ips = 10.88.0.0/24|allowed-ips = 0.0.0.0/0|' -e 's|^\[interface\]$|[interface]\ntable = 254|' "$f2"
start_fails "$f2"
said "a default route in the main table" "0.0.0.0/0: the main table has a default route already, not toud's (dev lo, proto 3); to send all traffic through the tunnel set 'table = auto' in [interface]"
if grep -qi "remove it" <<<"$OUT"; then
	not_ok "... and no advice to remove the host's default route" "$OUT"
else
	ok "... and no advice to remove the host's default route"
fi
no_tun tou1
# A clash in a table of the administrator's.
nsx a ip route add 10.88.0.0/24 dev lo table 100 || bail_out "ip route add table 100"
sed -i -e 's|^allowed-ips = 0.0.0.0/0|allowed-ips = 10.88.0.0/24|' -e 's|^table = 254$|table = 100|' "$f2"
start_fails "$f2"
said "a route someone else installed in table = 100" "a route to 10.88.0.0/24 exists already in table 100 and is not toud's (dev lo, proto 3); remove it or choose another 'table'"
no_tun tou1
check "the first toud is unharmed" show_json a

toud_stop a
is "${TOUD_RC[a]}" 0 "toud on a exits cleanly"
done_testing
