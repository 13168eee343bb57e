#!/bin/bash
# t06-restart: toud leaves nothing behind.  After SIGTERM (and SIGINT) the
# namespace's links, addresses, routes and rules are exactly what they were
# before toud started, the control socket is gone, and a toud started
# immediately afterwards works.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping

# snap NODE: the network state toud may touch, in a stable text form.
snap() {
	{
		echo "## link"; nsx "$1" ip -o link show | sed 's/ link-netns [^ ]*//'
		echo "## addr"; nsx "$1" ip -o addr show
		echo "## route4"; nsx "$1" ip -4 route show table all
		echo "## route6"; nsx "$1" ip -6 route show table all
		echo "## rule4"; nsx "$1" ip -4 rule show
		echo "## rule6"; nsx "$1" ip -6 rule show
	} 2>&1
}

# snap_settled NODE FILE: wait until two snapshots in a row agree.
snap_settled() {
	local prev cur _
	prev=$(snap "$1")
	for _ in $(seq 50); do
		sleep 0.1
		cur=$(snap "$1")
		[ "$cur" = "$prev" ] && break
		prev=$cur
	done
	echo "$cur" >"$2"
}

# same_as_before NODE FILE DESC
same_as_before() {
	local now=$E2E_DIR/now.txt
	snap_settled "$1" "$now"
	if cmp -s "$2" "$now"; then
		ok "$3"
	else
		not_ok "$3" "$(diff -u "$2" "$now")"
	fi
}

topo_ab
conf_ab 4
snap_settled a "$E2E_DIR/a.before"
snap_settled b "$E2E_DIR/b.before"

toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
check "a has tou0" nsx a ip link show dev tou0
addrs=$(nsx a ip -o addr show dev tou0)
case $addrs in
*" 10.77.0.1/24 "*) ok "tou0 has 10.77.0.1/24";;
*) not_ok "tou0 has 10.77.0.1/24" "$addrs";;
esac
case $addrs in
*" fd77::1/64 "*) ok "tou0 has fd77::1/64";;
*) not_ok "tou0 has fd77::1/64" "$addrs";;
esac
ping_check a 10.77.0.2 "ping a to b (first start)"

toud_stop a TERM
is "${TOUD_RC[a]}" 0 "toud on a exits with status 0 on SIGTERM"
check "the control socket is removed" test ! -e "$(sock_of a)"
check "tou0 is gone" bash -c "! ip -n $(ns a) link show dev tou0 2>/dev/null"
same_as_before a "$E2E_DIR/a.before" "after SIGTERM: links, addresses, routes, rules as before the start"

toud_start a || bail_out "toud on a did not restart"
ok "toud on a restarts immediately"
ping_check a 10.77.0.2 "ping a to b after the restart"
ping_check b 10.77.0.1 "ping b to a after the restart"

toud_stop a INT
is "${TOUD_RC[a]}" 0 "toud on a exits with status 0 on SIGINT"
same_as_before a "$E2E_DIR/a.before" "after SIGINT: links, addresses, routes, rules as before the start"

toud_start a || bail_out "toud on a did not start a third time"
ping_check a fd77::2 "ping6 a to b after the second restart"
toud_stop a TERM
toud_stop b TERM
is "${TOUD_RC[b]}" 0 "toud on b exits with status 0 on SIGTERM"
same_as_before a "$E2E_DIR/a.before" "a: nothing left behind after the last stop"
same_as_before b "$E2E_DIR/b.before" "b: nothing left behind after its stop"

done_testing
