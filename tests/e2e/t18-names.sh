#!/bin/bash
# t18-names: endpoints given as host names.  a's peer b is "bob.toud.test",
# found in a's /etc/hosts (ip netns exec gives each namespace its own,
# from /etc/netns/NAME/hosts); a's peer c is a name nothing resolves.  The
# lookups never block the daemon: b's tunnel works, c waits without an
# endpoint and its packets are counted, and toud keeps running.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping

topo_ab
hostsdir=/etc/netns/$(ns a)
mkdir -p "$hostsdir"
printf '127.0.0.1 localhost\n10.200.0.2 bob.toud.test\n' >"$hostsdir/hosts"
# No DNS server exists in the namespace: names not in hosts fail.
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$hostsdir/resolv.conf"

conf_interface a 6080 10.77.0.1/24 fd77::1/64
conf_peer a b bob.toud.test:6080 "10.77.0.2, fd77::2"
conf_peer a c no-such-host.invalid:6080 "10.77.0.3"
conf_interface b 6080 10.77.0.2/24 fd77::2/64
conf_peer b a 10.200.0.1:6080 "10.77.0.1, fd77::1"
check "toud -t accepts host names" "$TOUD" -t -c "$(conf_file a)"

toud_start b || bail_out "toud on b did not start"
toud_start a || bail_out "toud on a did not start"
# The control socket answers while the lookups are still in flight.
ping_check a 10.77.0.2 "ping b, whose endpoint is a name"
is "$(tq a peers.b.endpoint)" "10.200.0.2:6080" "b's endpoint is the address its name resolved to"

nsx a ping -n -q -c 2 -W 1 10.77.0.3 >/dev/null 2>&1
is "$?" 1 "nothing reaches c, whose name does not resolve"
is "$(tq a peers.c.endpoint)" null "c has no endpoint"
cmp_ok "$(tq a peers.c.drops.no_endpoint)" -ge 1 "c's packets are counted as no_endpoint"
is "$(tq a peers.c.state)" idle "c is idle"
sleep 2
check "toud on a is still running" toud_alive a
ping_check a 10.77.0.2 "b still works"

done_testing
