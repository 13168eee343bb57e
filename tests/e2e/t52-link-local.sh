#!/bin/bash
# t52-link-local: an endpoint that is an IPv6 link-local address with its
# link, [fe80::…%ul0]:6080 (RFC 4007), is used as it is written: a reaches
# b over the link-local address of b's side of the veth, and the tunnel
# carries pings both ways.  (A link-local address means nothing without
# its link: the datagrams could not leave without the scope.)
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping

topo_ab
# link_local NODE: the fe80:: address of NODE's ul0, once DAD is over.
link_local() {
	nsx "$1" ip -6 -o addr show dev ul0 scope link | grep -v tentative |
	    sed -n 's/.* inet6 \(fe80::[0-9a-f:]*\)\/64 .*/\1/p'
}
wait_for 20 eval '[ -n "$(link_local b)" ]' || bail_out "no link-local address on b's ul0"
llb=$(link_local b)
diag "b's link-local address: $llb"
conf_interface a 6080 10.77.0.1/24
conf_peer a b "[$llb%ul0]:6080" "10.77.0.2"
conf_interface b 6080 10.77.0.2/24
conf_peer b a "" "10.77.0.1"
check "toud -t accepts the link-local endpoint" "$TOUD" -t -c "$(conf_file a)"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
ping_check a 10.77.0.2 "ping b through the tunnel to [$llb%ul0]:6080"
ping_check b 10.77.0.1 "ping a back"
ep=$(tq a peers.b.endpoint)
is "$ep" "[$llb]:6080" "a's endpoint of b is the link-local address"
is "$(tq b peers.a.endpoint)" "[$(link_local a)]:6080" "b sees a at a's link-local address"

done_testing
