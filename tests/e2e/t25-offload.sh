#!/bin/bash
# t25-offload: the segmentation offloads, on and off.
#   (a) offload = auto: touctl show says TUN TSO, UDP GSO and UDP GRO are in
#       use, the TUN device advertises TCP segmentation, 100 MiB go by curl
#       each way intact over IPv4 and IPv6 inside the tunnel, and the
#       receiving kernel counted fewer UDP receives than toud delivered
#       packets (GRO took several datagrams at once).
#   (b) offload = off: all three off, the TUN has no TCP segmentation, the
#       same transfers intact, and one UDP receive per datagram at least.
#   (c) the wire: through a router whose links segment UDP as a NIC without
#       the offload would, every datagram captured is at most the path MTU
#       and starts with the outer GUE word, while the daemons use GSO.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl ethtool tcpdump

MIB=100

tso_of() {
	nsx "$1" ethtool -k tou0 | sed -n 's/^tcp-segmentation-offload: \([a-z]*\).*/\1/p'
}

udp_receives() {
	nsx "$1" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { s += $2 } END { print s }' /proc/net/snmp
	nsx "$1" awk '$1 == "Udp6InDatagrams" { print $2 }' /proc/net/snmp6
}

sum_lines() {
	awk '{ s += $1 } END { print s }'
}

# Whether toud runs its data threads with threads = E2E_THREADS (auto: on
# more than two CPUs).
threads_on() {
	[ "$E2E_THREADS" = on ] || { [ "$E2E_THREADS" = auto ] && [ "$(nproc)" -gt 2 ]; }
}

# The data threads of NODE's toud: show's "threads" and the threads named
# in /proc agree with E2E_THREADS (on: all, off: none).  With DTLS a third
# thread opens the records.
threads_check() {
	local n=$1 tag=$2 want=false pid=${TOUD_PID[$1]} names open=false count=2
	threads_on && want=true
	[ "$want" = true ] && [ "$E2E_ENCRYPTION" = dtls ] && open=true count=3
	js=$(show_json "$n")
	is "$(json_get "$js" interface.threads.udp_send)/$(json_get "$js" interface.threads.tun_write)" \
	    "$want/$want" "$tag $n: show says the data threads run: $want (threads = $E2E_THREADS)"
	is "$(json_get "$js" interface.threads.record_open)" "$open" \
	    "$tag $n: show says the opening thread runs: $open"
	names=$(cat /proc/"$pid"/task/*/comm | grep -c '^toud-\(send\|tun\|open\)$')
	if [ "$want" = true ]; then
		is "$names" "$count" "$tag $n: the $count data threads run"
	else
		is "$names" 0 "$tag $n: no data thread runs"
	fi
}

# During the transfers bulk batches went to NODE's data threads (with
# threads on), or none did (off): the events count the hand-overs.
threads_worked() {
	local n=$1 tag=$2 js send tun open
	js=$(show_json "$n")
	send=$(json_get "$js" interface.events.send_thread_batches)
	tun=$(json_get "$js" interface.events.tun_thread_batches)
	open=$(json_get "$js" interface.events.open_thread_batches)
	if threads_on; then
		cmp_ok "$send" -gt 0 "$tag $n: batches went to the send thread ($send)"
		cmp_ok "$tun" -gt 0 "$tag $n: batches went to the TUN thread ($tun)"
		if [ "$E2E_ENCRYPTION" = dtls ]; then
			cmp_ok "$open" -gt 0 "$tag $n: batches went to the opening thread ($open)"
		else
			is "$open" 0 "$tag $n: no opening thread without DTLS"
		fi
	else
		is "$send/$tun/$open" 0/0/0 "$tag $n: no batch went to a thread"
	fi
}

# phase MODE: start a and b with offload = MODE and check (a) or (b).
phase() {
	local mode=$1 want=true tso=on js f rx0 rcv0 rx1 rcv1
	[ "$mode" = off ] && want=false tso=off
	E2E_OFFLOAD=$mode
	conf_ab 4
	toud_start a || bail_out "toud on a did not start ($mode)"
	toud_start b || bail_out "toud on b did not start ($mode)"
	ping_check a 10.77.0.2 "($mode) ping through the tunnel"
	js=$(show_json a)
	for f in tun_tso udp_gso udp_gro tun_coalesce; do
		is "$(json_get "$js" "interface.offload.$f")" "$want" "($mode) show: offload.$f is $want"
	done
	is "$(tso_of a)" "$tso" "($mode) the TUN device has tcp-segmentation-offload $tso"
	threads_check a "($mode)"

	# The kernel's count first at the start and last at the end: every
	# datagram toud counted in between was received by the kernel in between.
	rcv0=$(udp_receives a | sum_lines)
	rx0=$(json_get "$(show_json a)" peers.b.rx_packets)
	fetch_check a "http://10.77.0.2:8080/f" "$E2E_DIR/www/f" "($mode) $MIB MiB b to a, IPv4 inside"
	fetch_check b "http://10.77.0.1:8080/f" "$E2E_DIR/www/f" "($mode) $MIB MiB a to b, IPv4 inside"
	fetch_check a "http://[fd77::2]:8081/f" "$E2E_DIR/www/f" "($mode) $MIB MiB b to a, IPv6 inside"
	fetch_check b "http://[fd77::1]:8081/f" "$E2E_DIR/www/f" "($mode) $MIB MiB a to b, IPv6 inside"
	rx1=$(json_get "$(show_json a)" peers.b.rx_packets)
	rcv1=$(udp_receives a | sum_lines)
	if [ "$mode" = off ]; then
		cmp_ok $((rcv1 - rcv0)) -ge $((rx1 - rx0)) \
		    "($mode) a's kernel counted a UDP receive per packet ($((rcv1 - rcv0)) for $((rx1 - rx0)))"
	else
		cmp_ok $(((rcv1 - rcv0) * 2)) -lt $((rx1 - rx0)) \
		    "($mode) GRO: a's kernel counted $((rcv1 - rcv0)) UDP receives for $((rx1 - rx0)) packets"
	fi
	is "$(json_get "$(show_json a)" peers.b.drops.tun_write)" 0 "($mode) a: no TUN write failed"
	is "$(json_get "$(show_json b)" peers.a.drops.tun_write)" 0 "($mode) b: no TUN write failed"
	is "$(json_get "$(show_json a)" interface.drops.tun_offload)" 0 "($mode) a: no offload drop"
	is "$(json_get "$(show_json b)" interface.drops.tun_offload)" 0 "($mode) b: no offload drop"
	for n in a b; do
		js=$(show_json "$n")
		is "$(json_get "$js" interface.events.tun_gso_refused)/$(json_get "$js" interface.offload.tun_coalesce)" \
		    "0/$want" "($mode) $n: the TUN refused no merged packet; coalescing is $want"
	done
	for n in a b; do
		threads_worked "$n" "($mode)"
	done
	toud_stop a
	is "${TOUD_RC[a]}" 0 "($mode) toud on a exits cleanly"
	toud_stop b
	is "${TOUD_RC[b]}" 0 "($mode) toud on b exits cleanly"
}

topo_ab
mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" $((MIB * 1024))
# Servers on the wildcard addresses outlive the daemons' restarts (the
# tunnel addresses come and go with toud).
http_serve a 0.0.0.0 8080 "$E2E_DIR/www"
http_serve b 0.0.0.0 8080 "$E2E_DIR/www"
http_serve a :: 8081 "$E2E_DIR/www"
http_serve b :: 8081 "$E2E_DIR/www"

phase auto
phase off

# --- (c) the wire through a router ------------------------------------------
. "$(dirname "$0")/lib-router.sh"
rt_topo                 # its links segment UDP (lib-router.sh)
E2E_OFFLOAD=auto
rt_start
is "$(json_get "$(show_json s)" interface.offload.udp_gso)" true "(c) the server sends with GSO"
rt_serve_file s "$RT_S_TUN" 8090 16
pcap=$E2E_DIR/rc0.pcap
bg_start r "$E2E_DIR/tcpdump.log" tcpdump -i rc0 -p -n -s 64 -B 8192 --immediate-mode -U \
    -w "$pcap" udp port "$RT_PORT"
tcpdump_pid=$BG_PID
wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump.log" || bail_out "tcpdump did not start"
fetch_check c "http://$RT_S_TUN:8090/big" "$RT_FILE" "(c) 16 MiB from s to c through the router"
pcap_settle "$pcap" || diag "the capture kept growing"
proc_stop "$tcpdump_pid" INT 5
stats=$(python3 - "$pcap" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
e = "<" if struct.unpack("<I", data[:4])[0] in (0xa1b2c3d4, 0xa1b23c4d) else ">"
off, n, big, bad, biggest = 24, 0, 0, 0, 0
while off + 16 <= len(data):
    _, _, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
    frame = data[off + 16:off + 16 + incl]
    off += 16 + incl
    ip = frame[14:]
    if len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 17:
        continue
    n += 1
    tot = struct.unpack("!H", ip[2:4])[0]
    biggest = max(biggest, tot, orig - 14)
    if tot > 1500 or orig - 14 > 1500:
        big += 1
    hl = (ip[0] & 15) * 4
    if ip[hl + 8:hl + 12] != b"\x03\x3b\x00\x01":
        bad += 1
print(n, big, bad, biggest)
EOF
)
read -r n big bad biggest <<<"$stats"
cmp_ok "$n" -gt 10000 "(c) the capture holds the transfer ($n datagrams)"
is "$big" 0 "(c) no datagram above the 1500-byte path MTU (largest $biggest)"
is "$bad" 0 "(c) every datagram starts with the outer GUE word 03 3b 00 01"
done_testing
