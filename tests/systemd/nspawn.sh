#!/bin/bash
# nspawn.sh - toud under a real systemd, installed as the README says: two
# systemd-nspawn containers, each living in its own network namespace
# (joined by a veth), boot a fresh Debian 12 root, and then
#   - the README's "Installing" block is done word for word: the commands
#     are taken from README itself, so this test breaks when the README
#     drifts.  The build lines (up to `make`) run on the host, in a copy of
#     the source tree, because the containers have no compiler; the rest
#     (`make install` onwards) runs inside each container, in that same
#     tree.  The host's /usr/include and /usr/lib/gcc are bound read-only
#     into the containers: the build's dependency files name those
#     headers, and make must find the tree up to date as on the machine
#     that built it.  `editor` is the test's: it sets the node's addresses
#     and adds the other node as a peer,
#   - on the way, the start fails with the fix in the journal: before
#     genkey (no key pair), before the chown (key unreadable by toud), and
#     with a 0600 /dev/net/tun (a container has no udev),
#   - the README's last line, `systemctl enable --now toud`, leaves the
#     unit active and the peer up (Type=notify, the hardened unit:
#     User=toud with CAP_NET_ADMIN only (CAP_NET_BIND_SERVICE dropped: no
#     port below 1024), a private /dev with net/tun alone,
#     the control socket in /run/toud),
#   - the host's own curl fetches a file from a python http.server through
#     the tunnel (sha256 compared),
#   - `systemctl reload toud` during a transfer applies a changed
#     configuration without disturbing the transfer or restarting toud,
#     and fails, with the reason, when the new file is refused,
#   - listen-tcp = 443: a reload that adds it is refused (toud dropped
#     CAP_NET_BIND_SERVICE at start) and changes nothing; a restart with it
#     keeps the capability, and b, its UDP to a dropped, reaches a over
#     the TCP transport on 443,
#   - a second tunnel runs as toud@second (/etc/toud/second.conf) beside
#     the first, touctl -i second reaches it, and stopping it leaves the
#     first one's socket alone,
#   - a killed toud is restarted (Restart=on-failure),
#   - journalctl -u toud has the daemon's "up" line,
#   - `dns =` and `dns-search =` reach systemd-resolved for tou0 (resolvectl
#     status) by reload and at start, and leave it by reload and by stop,
#   - `systemctl stop toud` leaves no address or route behind,
#   - a full tunnel with dns under systemd-resolved, killed by SIGKILL,
#     lets no name query out: resolved falls back to ul0's name server,
#     and neither the capture on ul0 nor that server sees a query.
# The containers share the test's network namespaces, so host tools reach
# the daemons' TUN devices with `ip netns exec`.
#
# Not part of `make check` (about two minutes cold, for debootstrap and the
# build; about a minute with the cached root file system; see rootfs.sh).
# TAP on stdout.
#
# Environment:
#   TOUD_SRCDIR         the source tree (default: this script's ../..); a git
#                       checkout is copied by `git ls-files` (uncommitted
#                       changes included), another tree whole
#   TOUD_CI_CACHE       root file system cache (rootfs.sh)
#   TOUD_TEST_KEEP=1    keep the work directory (logs)
#   CI=true             a missing tool or root is a failure, not a skip
#
# The containers, the namespaces and the clean-up: nspawn_lib.sh.
set -u
set -o pipefail

NODES=(a b)
declare -A UL=([a]=10.200.0.1 [b]=10.200.0.2)
declare -A TUN4=([a]=10.77.0.1 [b]=10.77.0.2)
declare -A TUN6=([a]=fd77::1 [b]=fd77::2)
. "$(dirname "$0")/nspawn_lib.sh"

need_commands systemd-nspawn nsenter ip nft tcpdump python3 curl sha256sum findmnt zstd make autoreconf cc pkg-config
start_work toud-nspawn

# --- the README's installation, and the build on the host --------------------

# The source route of README's "Installing" section.
readme_steps "From the source (in the source tree; \`make install\` onwards as root):" "make install*"
want_step() {
	printf '%s\n' "${INSTALL[@]}" | grep -qx -- "$1" && ok "README's installation has '$1'" ||
	    not_ok "README's installation has '$1'" "$(printf '%s\n' "${INSTALL[@]}")"
}
want_step "systemd-sysusers"
want_step "touctl genkey /etc/tou"
want_step "editor /etc/tou.conf"
is "${INSTALL[-1]}" "systemctl enable --now toud" "README's installation ends with 'systemctl enable --now toud'"

SRC=$WORK/src
stamp "copying the source tree"
copy_tree "$SRC"
stamp "README build steps on the host"
run_build_steps "$SRC" MAKEFLAGS=-j2
ok "README's build steps ($(printf '%s; ' "${BUILD[@]}")) pass on the host, $(elapsed) s"

# --- root file system, network, containers ------------------------------------------

make_rootfs
make_underlay

stamp "booting"
for n in "${NODES[@]}"; do
	make_editor "$n"
	boot "$n" --bind="$SRC:$SRC" --bind-ro=/usr/include --bind-ro=/usr/lib/gcc ||
	    bail_out "container $n did not boot"
	link_editor "$n"
done

# start_fails NODE WHAT PATTERN: the start must fail, the journal must say
# PATTERN; then the unit is stopped and its failure forgotten.
start_fails() {
	local n=$1 j
	if cx "$n" systemctl start toud.service >/dev/null 2>&1; then
		not_ok "$n: with $2 the start fails" "it succeeded"
	else
		j=$(journal "$n" -n 30)
		if grep -q -- "$3" <<<"$j"; then
			ok "$n: with $2 the start fails, and the journal says why ($(grep -- "$3" <<<"$j" | tail -n 1))"
		else
			not_ok "$n: with $2 the start fails, and the journal says why" "$j"
		fi
	fi
	cx "$n" systemctl stop toud.service >/dev/null 2>&1
	cx "$n" systemctl reset-failed toud.service >/dev/null 2>&1
}

# before_step NODE STEP: what the test checks before the README's STEP.
before_step() {
	local n=$1 step=$2
	case $step in
	"touctl genkey "*)
		[ "$n" = a ] || return 0
		is "$(cx a stat -c '%U %a' /etc/tou.conf 2>&1)" "root 644" "a: make install wrote /etc/tou.conf, root, 0644"
		check "a: the full example is under the documentation's examples" \
		    cx a test -f /usr/share/doc/toud/examples/tou.conf.example
		check "a: bash completion for touctl and toud installed" \
		    cx a test -f /usr/share/bash-completion/completions/touctl -a \
		    -f /usr/share/bash-completion/completions/toud
		check "a: toud.service and toud@.service installed" \
		    cx a systemctl cat toud.service toud@x.service
		check "a: systemd-sysusers made the user toud" cx a getent passwd toud
		start_fails a "no key pair yet" "touctl genkey /etc/tou"
		# What journalctl -p err shows (start-up failures at err).
		j=$(cx a journalctl -u toud.service -p err -o cat --no-pager 2>&1)
		grep -q "touctl genkey /etc/tou" <<<"$j" &&
		    ok "a: journalctl -p err shows the failed start's reason" ||
		    not_ok "a: journalctl -p err shows the failed start's reason" "$j"
		;;
	"chown "*)
		[ "$n" = a ] || return 0
		# genkey's directory is 0700 root: toud cannot read its key yet.
		start_fails a "a key pair readable by root only" "chown -R toud: /etc/tou"
		;;
	"systemctl enable"*)
		# The unit runs toud as the user toud, which needs /dev/net/tun to
		# be world-writable, as systemd-udevd's 50-udev-default.rules makes
		# it on every host (KERNEL=="tun", MODE="0666").  A container has
		# no udev: nspawn's own node copies the host's mode, which is 0600
		# on a host without udev rules applied (set it so in the
		# container, whatever the host has).  First, that the failure is
		# then loud and clear, then do what udev does.  The node is the
		# container's own (a tmpfs /dev), the host's stays as it is.
		if [ "$n" = a ]; then
			cx a chmod 0600 /dev/net/tun || bail_out "chmod /dev/net/tun in a"
			start_fails a "a 0600 /dev/net/tun (no udev)" 'tun device "tou0": Permission denied'
		fi
		cx "$n" chmod 0666 /dev/net/tun || bail_out "chmod /dev/net/tun in $n"
		;;
	esac
}


stamp "README install steps in the containers"
# Up to the editor on both nodes (the editor needs the other's fingerprint).
host_tun=$(stat -c %a /dev/net/tun)
for n in "${NODES[@]}"; do
	for ((i = 0; i < EDIT; i++)); do
		run_step "$n" "${INSTALL[i]}" || bail_out "$n: README step '${INSTALL[i]}' failed"
	done
	[[ ${FPR[$n]:-} =~ ^sha256:[0-9a-f]{64}$ ]] ||
	    bail_out "$n: touctl genkey printed no fingerprint ('${FPR[$n]:-}')"
	is "$(cx "$n" stat -c '%U %a' /etc/tou /etc/tou/key.pem 2>&1 | tr '\n' ' ')" "toud 700 toud 600 " \
	    "$n: genkey's directory (0700) and key (0600) belong to toud"
done
write_peer_conf
stamp "systemctl enable --now"
started=yes
for n in "${NODES[@]}"; do
	for ((i = EDIT; i < ${#INSTALL[@]}; i++)); do
		run_step "$n" "${INSTALL[i]}" || { started=no; break; }
	done
done
# Everything below needs the daemons.
[ $started = yes ] || bail_out "the README's installation did not end with toud running"
is "$(stat -c %a /dev/net/tun)" "$host_tun" "the host's /dev/net/tun keeps its mode ($host_tun)"

for n in "${NODES[@]}"; do
	out=$(cx "$n" ldd /usr/sbin/toud /usr/bin/touctl 2>&1)
	if grep -q 'not found' <<<"$out"; then
		not_ok "$n: toud's and touctl's libraries resolve in the container" "$(grep 'not found' <<<"$out")"
	else
		ok "$n: toud's and touctl's libraries resolve in the container"
	fi
done

# write_conf NODE [EXTRA-ALLOWED-IPS [EXTRA-INTERFACE-LINE [PEER-LINES]]]: a
# whole /etc/tou.conf inside NODE's container (the reloads below change it);
# an endpoint in PEER-LINES replaces the usual one.
write_conf() {
	local n=$1 p extra=${2:-} peer=${4:-}
	[ "$n" = a ] && p=b || p=a
	{
		echo "# /etc/tou.conf of container $n (toud nspawn test)"
		echo "[interface]"
		echo "name = tou0"
		echo "address = ${TUN4[$n]}/24"
		echo "address = ${TUN6[$n]}/64"
		echo "listen = 6080"
		echo "user = toud"
		echo "private-key = /etc/tou/key.pem"
		echo "certificate = /etc/tou/cert.pem"
		[ -n "${3:-}" ] && echo "$3"
		echo
		echo "[peer $p]"
		grep -q '^endpoint = ' <<<"$peer" || echo "endpoint = ${UL[$p]}:6080"
		[ -n "$peer" ] && echo "$peer"
		echo "address = ${TUN4[$p]}, ${TUN6[$p]}"
		[ -n "$extra" ] && echo "allowed-ips = $extra"
		echo "fingerprint = ${FPR[$p]}"
	} | cx "$n" sh -c 'umask 022 && cat >/etc/tou.conf.new && mv /etc/tou.conf.new /etc/tou.conf'
}

for n in "${NODES[@]}"; do
	is "$(cx "$n" systemctl is-active toud.service)" active "$n: toud.service is active"
	is "$(cx "$n" systemctl is-enabled toud.service)" enabled "$n: toud.service is enabled"
done
# Without keepalive a peer handshakes on demand: the first packet to it.
for n in "${NODES[@]}"; do
	is "$(peer_state "$n" "$([ "$n" = a ] && echo b || echo a)")" idle "$n: its peer is idle before any traffic"
done
for ((i = 0; i < 10; i++)); do
	ip netns exec "${PREFIX}a" ping -n -q -c 1 -W 1 "${TUN4[b]}" >/dev/null 2>&1 && break
done
for n in "${NODES[@]}"; do
	[ "$n" = a ] && p=b || p=a
	st=
	for ((i = 0; i < 20; i++)); do
		st=$(peer_state "$n" "$p")
		[ "$st" = up ] && break
		sleep 0.2
	done
	is "$st" up "$n: after a ping, peer $p is up (touctl show --json)"
	st=
	for ((i = 0; i < 50; i++)); do
		st=$(prop "$n" StatusText)
		[ "$st" = "1 of 1 peer up" ] && break
		sleep 0.1
	done
	is "$st" "1 of 1 peer up" "$n: STATUS= reached systemd"
done

# proc_field NODE PID FIELD: a line of /proc/PID/status inside the container.
proc_field() { cx "$1" awk -v f="$3:" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "/proc/$2/status"; }
for n in "${NODES[@]}"; do
	mp=$(prop "$n" MainPID)
	uid=$(cx "$n" id -u toud)
	is "$(proc_field "$n" "$mp" Uid | awk '{ print $1, $2, $3, $4 }')" "$uid $uid $uid $uid" \
	    "$n: the daemon (pid $mp) runs as user toud"
	# The bounding set is the unit's (CAP_NET_BIND_SERVICE too, for a port
	# below 1024); toud keeps that one only with such a port configured.
	is "$(proc_field "$n" "$mp" CapEff)/$(proc_field "$n" "$mp" CapPrm)/$(proc_field "$n" "$mp" CapBnd)" \
	    "0000000000001000/0000000000001000/0000000000001400" \
	    "$n: effective and permitted capabilities are CAP_NET_ADMIN only (bounding: and CAP_NET_BIND_SERVICE)"
	is "$(proc_field "$n" "$mp" NoNewPrivs)" 1 "$n: no_new_privs is set"
	# PrivateDevices= + BindPaths=: the daemon's /dev (seen through its
	# /proc/PID/root) has the pseudo devices and the TUN clone device only.
	# (find's -type would see the bind mount's placeholder file, hence
	# "not a directory or link" and a separate -c test.)
	devs=$(cx "$n" sh -c "cd /proc/$mp/root/dev && find . -mindepth 1 ! -type d ! -type l | sort | tr '\n' ' ' &&
	    { [ -c net/tun ] && echo '(net/tun: char device)'; }" 2>&1)
	is "$devs" "./full ./net/tun ./null ./pts/ptmx ./random ./tty ./urandom ./zero (net/tun: char device)" \
	    "$n: the daemon's private /dev holds the pseudo devices and net/tun only"
	is "$(cx "$n" stat -c '%U:%G %a' /run/toud /run/toud/toud.sock 2>&1 | tr '\n' ' ')" \
	    "toud:toud 750 toud:toud 660 " "$n: /run/toud (RuntimeDirectory) and the control socket"
	check "$n: touctl show --json answers root on /run/toud/toud.sock" \
	    cx "$n" touctl show --json
	addrs=$(ip -n "$PREFIX$n" -o addr show dev tou0 scope global 2>&1 | awk '{ print $4 }' | tr '\n' ' ')
	is "$addrs" "${TUN4[$n]}/24 ${TUN6[$n]}/64 " "$n: tou0 has its addresses in namespace $PREFIX$n"
done
online=$(cx a systemd-analyze security toud.service 2>&1 | tail -n 1)
diag "a: systemd-analyze security of the running unit: ${online#→ }"

# --- traffic -------------------------------------------------------------------------

stamp "traffic"
if wait_ping a "${TUN4[b]}" 10; then
	check "ping a -> b through the tunnel (5 of 5)" \
	    ip netns exec "${PREFIX}a" ping -n -q -c 5 -i 0.2 -W 2 "${TUN4[b]}"
else
	not_ok "ping a -> b through the tunnel" "$(journal a -n 10)"
fi

mkdir -p "$WORK/www"
head -c $((8 * 1024 * 1024)) /dev/urandom >"$WORK/www/blob"
want=$(sha256sum "$WORK/www/blob" | cut -d' ' -f1)
ip netns exec "${PREFIX}b" python3 -m http.server --bind "${TUN4[b]}" --directory "$WORK/www" 8080 \
    </dev/null >"$WORK/http.log" 2>&1 &
BGPIDS+=("$!")
for ((i = 0; i < 50; i++)); do
	ip netns exec "${PREFIX}b" ss -H -ltn 'sport = :8080' | grep -q . && break
	sleep 0.1
done
fetch() {               # fetch OUT [CURL-ARGS...]
	ip netns exec "${PREFIX}a" curl -sS --noproxy '*' --max-time 60 -o "$1" "${@:2}" \
	    "http://${TUN4[b]}:8080/blob"
}
if out=$(fetch "$WORK/got1" 2>&1); then
	is "$(sha256sum "$WORK/got1" | cut -d' ' -f1)" "$want" "curl of 8 MiB from b to a through the tunnel: sha256 equal"
else
	not_ok "curl of 8 MiB from b to a through the tunnel" "$out"
fi

# Reload during a transfer: a's configuration gains allowed-ips for peer b.
# The transfer must finish intact, toud must not restart, and the new route
# must appear.
stamp "reload"
mp0=$(prop a MainPID)
fetch "$WORK/got2" --limit-rate 2M >"$WORK/curl2.log" 2>&1 &
cpid=$!
BGPIDS+=("$cpid")
sleep 1
write_conf a 192.168.77.0/24
if out=$(cx a systemctl reload toud.service 2>&1); then
	ok "systemctl reload toud during a transfer returns success"
else
	not_ok "systemctl reload toud during a transfer" "$out"
fi
applied=no
for ((i = 0; i < 50; i++)); do
	ip -n "${PREFIX}a" route show 192.168.77.0/24 dev tou0 2>/dev/null | grep -q . && { applied=yes; break; }
	sleep 0.1
done
if [ $applied = yes ]; then
	ok "reload applied the new configuration (route 192.168.77.0/24 dev tou0 appeared)"
else
	not_ok "reload applied the new configuration (route 192.168.77.0/24 dev tou0 appeared)" \
	    "no such route 5 s after the reload; toud's journal says:
$(journal a --since=-30s | tail -n 5)"
fi
if wait "$cpid"; then
	is "$(sha256sum "$WORK/got2" | cut -d' ' -f1)" "$want" "the transfer across the reload completes intact (sha256 equal)"
else
	not_ok "the transfer across the reload completes" "$(cat "$WORK/curl2.log")"
fi
is "$(prop a MainPID)" "$mp0" "toud was not restarted by the reload (MainPID $mp0)"
is "$(cx a systemctl is-active toud.service)" active "toud.service is still active after the reload"
j=$(journal a --since=-60s)
grep -q 'peer "b": changed' <<<"$j" && ok "the journal names the peer the reload changed" ||
    not_ok "the journal names the peer the reload changed" "$(tail -n 8 <<<"$j")"

# A refused file fails systemctl reload (ExecReload=touctl reload waits for
# toud's answer), with the reason in the journal, and changes nothing.
write_conf a 192.168.77.0/24 "mtu = 1300"
if out=$(cx a systemctl reload toud.service 2>&1); then
	not_ok "systemctl reload of a refused file fails" "it succeeded"
else
	ok "systemctl reload of a refused file fails"
fi
j=$(journal a --since=-30s)
grep -q 'reload refused: /etc/tou.conf: changing \[interface\] mtu needs a restart' <<<"$j" &&
    ok "the journal says why toud refused it" || not_ok "the journal says why toud refused it" "$(tail -n 8 <<<"$j")"
is "$(prop a MainPID)/$(cx a systemctl is-active toud.service)" "$mp0/active" \
    "after the refused reload toud runs on, not restarted"
is "$(peer_state a b)" up "after the refused reload peer b is still up"
write_conf a 192.168.77.0/24
check "the good file reloads again" cx a systemctl reload toud.service

# --- listen-tcp = 443 under the shipped unit ------------------------------------

# peer_field NODE PEER FIELD: a field of the peer in touctl show --json.
peer_field() {
	cx "$1" touctl show --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((p[sys.argv[2]] for p in d["peers"] if p["name"] == sys.argv[1]), "absent"))' "$2" "$3" 2>&1
}
stamp "listen-tcp 443"
t443=$(date +%s)
# Started without a port below 1024, toud dropped CAP_NET_BIND_SERVICE: a
# reload that adds 443 is refused, naming the fix, and changes nothing.
write_conf a 192.168.77.0/24 "listen-tcp = 443"
if out=$(cx a systemctl reload toud.service 2>&1); then
	not_ok "a: systemctl reload adding listen-tcp = 443 fails (the capability was dropped at start)" "it succeeded"
else
	ok "a: systemctl reload adding listen-tcp = 443 fails (the capability was dropped at start)"
fi
j=$(journal a --since=-30s)
grep -q 'reload refused: listen-tcp 443: Permission denied; .*restart toud' <<<"$j" &&
    ok "a: the journal says why, and that a restart gives the port" ||
    not_ok "a: the journal says why, and that a restart gives the port" "$(tail -n 5 <<<"$j")"
is "$(prop a MainPID)/$(cx a systemctl is-active toud.service)/$(peer_state a b)" "$mp0/active/up" \
    "a: toud runs on after it, not restarted, peer b up"
# A start with it: the unit gives the capability and toud keeps it.
if out=$(cx a systemctl restart toud.service 2>&1); then
	ok "a: systemctl restart with listen-tcp = 443 under the shipped unit"
else
	not_ok "a: systemctl restart with listen-tcp = 443 under the shipped unit" "$out
$(journal a -n 10)"
fi
mp=$(prop a MainPID)
is "$(proc_field a "$mp" CapEff)" 0000000000001400 \
    "a: the daemon keeps CAP_NET_ADMIN and CAP_NET_BIND_SERVICE (CapEff)"
# b reaches a over TCP only: nftables in b's namespace drops its UDP to a.
write_conf b "" "" "endpoint-tcp = ${UL[a]}:443"
check "b: systemctl reload with endpoint-tcp = a:443" cx b systemctl reload toud.service
check "b: its UDP to a dropped (nftables)" ip netns exec "${PREFIX}b" nft -f - <<EOF
table inet nspawn_udp443 {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr ${UL[a]} udp dport 6080 drop
	}
}
EOF
tr=
for ((i = 0; i < 30; i++)); do
	ping_ok b "${TUN4[a]}" && tr=$(peer_field b a transport) && [ "$tr" = tcp ] && break
	sleep 0.5
done
is "$tr" tcp "b: ping a through the tunnel, over TCP to a's port 443 (peer a's transport)"
is "$(peer_field a b transport)" tcp "a: serves b over the TCP transport"
ip netns exec "${PREFIX}b" nft delete table inet nspawn_udp443
write_conf b
check "b: without endpoint-tcp again" cx b systemctl reload toud.service
diag "listen-tcp 443 checks: $(($(date +%s) - t443)) s"

# --- dns: the tunnel's name servers in systemd-resolved ---------------------------

# dns_of NODE: what systemd-resolved holds for tou0, "SERVERS | DOMAINS"
# from `resolvectl status tou0` ("no link" when resolved knows no tou0).
dns_of() {
	local out
	out=$(cx "$1" resolvectl status tou0 2>&1) || { echo "no link"; return; }
	printf '%s | %s' "$(sed -n -E 's/^ *DNS Servers: //p' <<<"$out")" \
	    "$(sed -n -E 's/^ *DNS Domain: //p' <<<"$out")"
}
# dns_json NODE: the interface's "dns" and "dns_error" in touctl show --json.
dns_json() {
	cx "$1" touctl show --json 2>/dev/null | python3 -c '
import json, sys
i = json.load(sys.stdin)["interface"]
print(i["dns"], i["dns_error"])' 2>&1
}
# wait_dns NODE WANT: until dns_of NODE is WANT (10 s); then its value.
wait_dns() {
	local i got
	for ((i = 0; i < 100; i++)); do
		got=$(dns_of "$1")
		[ "$got" = "$2" ] && break
		sleep 0.1
	done
	echo "$got"
}

stamp "dns"
check "a: systemd-resolved runs in the container" cx a systemctl is-active systemd-resolved.service
check "a: make install put the polkit rule for toud's user in place" \
    cx a test -f /usr/share/polkit-1/rules.d/toud-resolved.rules
is "$(dns_of a)" " | " "a: without dns = resolved has no server or domain for tou0"
is "$(dns_json a)" "none None" "a: touctl show says dns none without dns ="
DNS_LINES=$'dns = 10.77.0.2\ndns-search = tun.example, ~lab.example'
write_conf a 192.168.77.0/24 "$DNS_LINES"
check "a: systemctl reload with dns = and dns-search =" cx a systemctl reload toud.service
got=$(wait_dns a "10.77.0.2 | tun.example ~lab.example")
is "$got" "10.77.0.2 | tun.example ~lab.example" \
    "a: after the reload, resolvectl status tou0 shows the server and the domains" ||
    diag "$(journal a --since=-30s | tail -n 5)"
is "$(dns_json a)" "resolved None" "a: touctl show says dns resolved, no error"
# A full tunnel: every name to the tunnel's server (~.), the link resolved's
# default route.
write_conf a "192.168.77.0/24, 0.0.0.0/0" "$DNS_LINES"
check "a: systemctl reload into a full tunnel" cx a systemctl reload toud.service
is "$(wait_dns a "10.77.0.2 | tun.example ~lab.example ~.")" "10.77.0.2 | tun.example ~lab.example ~." \
    "a: a full tunnel adds the routing-only domain ~. (resolvectl status tou0)"
st=$(cx a resolvectl status tou0 2>&1)
grep -q -- '+DefaultRoute' <<<"$st" && ok "a: and makes tou0 resolved's default route (+DefaultRoute)" ||
    not_ok "a: and makes tou0 resolved's default route (+DefaultRoute)" "$st"
write_conf a 192.168.77.0/24 "$DNS_LINES"
check "a: systemctl reload out of the full tunnel" cx a systemctl reload toud.service
is "$(wait_dns a "10.77.0.2 | tun.example ~lab.example")" "10.77.0.2 | tun.example ~lab.example" \
    "a: out of the full tunnel, ~. is gone again"
write_conf a 192.168.77.0/24
check "a: systemctl reload without dns =" cx a systemctl reload toud.service
is "$(wait_dns a " | ")" " | " "a: a reload without dns = removes server and domains from tou0"
is "$(peer_state a b)" up "a: peer b stays up through the dns reloads"
# From here on a's file has dns: the restart below applies it at start.
write_conf a 192.168.77.0/24 "$DNS_LINES"
check "a: systemctl reload with dns = again" cx a systemctl reload toud.service

# --- a second tunnel: toud@second ---------------------------------------------------------

stamp "toud@second"
# Its own key pair: toud -t -i refuses one another tunnel uses.
check "a: touctl genkey /etc/toud/second" cx a sh -c \
    'mkdir -p /etc/toud && touctl genkey /etc/toud/second >/dev/null && chown -R toud: /etc/toud/second'
{
	echo "[interface]"
	echo "name = tou1"
	echo "address = 10.78.0.1/24"
	echo "listen = 6090"
	echo "user = toud"
	echo "private-key = second/key.pem"
	echo "certificate = second/cert.pem"
	echo "[peer c]"
	echo "address = 10.78.0.2"
	echo "fingerprint = ${FPR[b]}"
} | cx a sh -c 'umask 022 && mkdir -p /etc/toud && cat >/etc/toud/second.conf'
if out=$(cx a systemctl start toud@second.service 2>&1); then
	ok "a: systemctl start toud@second (/etc/toud/second.conf)"
else
	not_ok "a: systemctl start toud@second" "$out
$(cx a journalctl -u toud@second.service -o cat --no-pager -n 15 2>&1)"
fi
is "$(cx a systemctl is-active toud@second.service toud.service | tr '\n' ' ')" "active active " \
    "a: toud@second runs beside toud"
is "$(peer_state a c -i second)" idle "a: touctl -i second show reaches the instance (peer c idle)"
is "$(peer_state a b)" up "a: touctl show still reaches the first tunnel (peer b up)"
check "a: systemctl reload toud@second" cx a systemctl reload toud@second.service
check "a: systemctl stop toud@second" cx a systemctl stop toud@second.service
check "a: the first tunnel's socket survives the instance's stop" cx a test -S /run/toud/toud.sock
is "$(peer_state a b)" up "a: and touctl show still answers (peer b up)"

for n in "${NODES[@]}"; do
	up=$(journal "$n" | grep -E '^tou0 up: mtu [0-9]+, 1 peer, listening on port 6080')
	[ -n "$up" ] && ok "$n: journalctl -u toud shows the daemon's \"up\" line ($(head -n 1 <<<"$up"))" ||
	    not_ok "$n: journalctl -u toud shows the daemon's \"up\" line" "$(journal "$n" -n 10)"
done

# --- Restart=on-failure ------------------------------------------------------------------

stamp "restart"
mp0=$(prop a MainPID)
cx a systemctl kill --kill-who=main --signal=SIGKILL toud.service >/dev/null 2>&1
back=no
for ((i = 0; i < 100; i++)); do
	mp=$(prop a MainPID)
	if [ "$mp" != 0 ] && [ "$mp" != "$mp0" ] && [ "$(cx a systemctl is-active toud.service)" = active ]; then
		back=yes
		break
	fi
	sleep 0.1
done
if [ $back = yes ]; then
	ok "a killed toud is restarted (Restart=on-failure; NRestarts=$(prop a NRestarts), $((i / 10)).$((i % 10)) s)"
else
	not_ok "a killed toud is restarted (Restart=on-failure)" "$(cx a systemctl status --no-pager toud.service 2>&1 | tail -n 15)"
fi
if wait_ping a "${TUN4[b]}" 10; then
	ok "the tunnel works again after the restart"
else
	not_ok "the tunnel works again after the restart" "$(journal a -n 10)"
fi
is "$(wait_dns a "10.77.0.2 | tun.example ~lab.example")" "10.77.0.2 | tun.example ~lab.example" \
    "a: the restarted toud sets dns at start (resolvectl status tou0)"

# --- stop ----------------------------------------------------------------------------------

stamp "systemctl stop"
for n in "${NODES[@]}"; do
	check "$n: systemctl stop toud" cx "$n" systemctl stop toud.service
	is "$(prop "$n" ActiveState)/$(prop "$n" Result)" "inactive/success" "$n: stopped cleanly (ActiveState/Result)"
	left=$(ip -n "$PREFIX$n" -o link show tou0 2>/dev/null
	    ip -n "$PREFIX$n" -o addr show 2>/dev/null | grep -E ' (10\.77\.|fd77:)'
	    ip -n "$PREFIX$n" route show table all 2>/dev/null | grep -E '^(10\.77\.|192\.168\.|fd77:)'
	    ip -n "$PREFIX$n" -6 route show table all 2>/dev/null | grep -E '^fd77:')
	is "$left" "" "$n: no tou0, no tunnel address and no route left after the stop"
done
# The link is gone (resolvectl may still answer for its name, empty).
got=$(dns_of a)
case $got in
"no link" | " | ") ok "a: after systemctl stop, resolved has no server or domain for tou0 ($got)" ;;
*) not_ok "a: after systemctl stop, resolved has no server or domain for tou0" "got '$got'" ;;
esac
left=$(cx a resolvectl dns 2>&1; cx a resolvectl domain 2>&1)
if grep -qE '10\.77\.0\.2|tun\.example' <<<"$left"; then
	not_ok "a: after systemctl stop, no link in resolved has the tunnel's server or domain" "$left"
else
	ok "a: after systemctl stop, no link in resolved has the tunnel's server or domain"
fi

# --- fail-closed under systemd-resolved: SIGKILL keeps names in -------------------

# A full tunnel on a (allowed-ips 0.0.0.0/0 and ::/0, dns = b's tunnel
# address, fail-open = no by default) with resolved as the resolver and a
# "local network" name server on b's underlay address, which resolved has
# for ul0 (as DHCP would give it) and falls back to once tou0 is gone.  The
# two servers (lan_dns.py, in b's namespace) answer with different
# addresses and log every query.  While toud runs, names go to the
# tunnel's server only; after SIGKILL (the unit's restart held off) no
# packet to or from port 53 crosses a's ul0 and the local server hears
# nothing; then, as the control, the same with toud's xfrm policies
# deleted leaks (resolved binds its queries to ul0, which the "dport 53"
# rule alone does not hold), so the capture would have seen it.
stamp "fail-closed under systemd-resolved"
TUN_ANSWER=198.51.100.77 LAN_ANSWER=192.0.2.53
DNS_LOG=$WORK/dns-queries.log
: >"$DNS_LOG"
ip netns exec "${PREFIX}b" python3 "$here/lan_dns.py" "$DNS_LOG" \
    "${TUN4[b]}=$TUN_ANSWER" "${UL[b]}=$LAN_ANSWER" >"$WORK/lan-dns.log" 2>&1 </dev/null &
BGPIDS+=("$!")
for ((i = 0; i < 50; i++)); do
	grep -q '^ready' "$WORK/lan-dns.log" && break
	sleep 0.1
done
grep -q '^ready' "$WORK/lan-dns.log" || bail_out "lan_dns.py did not start: $(cat "$WORK/lan-dns.log")"
# lan_queries: how many queries the local network's server heard.
lan_queries() { grep -c "^${UL[b]} " "$DNS_LOG"; }
# resolve NAME: what a's resolver answers for NAME (resolvectl query, no
# cache), "failed" when it gives no address.
resolve() {
	cx a resolvectl query --cache=no -4 "$1" 2>/dev/null |
	    sed -n -E "s/^$1: ([0-9.]+).*/\\1/p" | head -n 1 | grep . || echo failed
}
# dns_rule_prefs: priorities of toud's IPv4 "dport 53 lookup TABLE" rule.
dns_rule_prefs() {
	ip -n "${PREFIX}a" -4 rule show | grep 'dport 53 lookup' | grep -v fwmark | cut -d: -f1
}
check "b: toud starts again" cx b systemctl start toud.service
is "$(cx a readlink /etc/resolv.conf 2>&1)" ../run/systemd/resolve/stub-resolv.conf \
    "a: /etc/resolv.conf is resolved's stub"
check "a: resolved has the local network's server for ul0 (resolvectl dns ul0 ${UL[b]})" \
    cx a resolvectl dns ul0 "${UL[b]}"
# Held off, so that the window between SIGKILL and a restart stays open.
check "a: the unit's restart held off (a drop-in with Restart=no)" cx a sh -ec \
    'mkdir -p /run/systemd/system/toud.service.d &&
    printf "[Service]\nRestart=no\n" >/run/systemd/system/toud.service.d/norestart.conf &&
    systemctl daemon-reload'
write_conf a "0.0.0.0/0, ::/0" "$DNS_LINES"
check "a: toud starts with a full tunnel, dns = ${TUN4[b]}, fail-open = no" cx a systemctl start toud.service
wait_ping a "${TUN4[b]}" 10 || not_ok "a: the full tunnel to b works" "$(journal a -n 10)"
is "$(wait_dns a "10.77.0.2 | tun.example ~lab.example ~.")" "10.77.0.2 | tun.example ~lab.example ~." \
    "a: tou0 is resolved's default route for every name (~.)"
is "$(resolve up.example)" "$TUN_ANSWER" "a: while toud runs, a name resolves through the tunnel's server"
is "$(lan_queries)" 0 "a: ... and the local network's server hears nothing"
is "$(dns_rule_prefs | wc -l)" 1 "a: toud's rule sends port 53 into the tunnel's table"

# capture_dns CMD...: CMD while capturing on a's ul0; DNS_PKTS (packets to
# or from port 53), MCAST (LLMNR and mDNS), CONTROL (datagrams to port 54
# of b, sent at the end), LAN (queries the local server heard meanwhile).
capture_dns() {
	local pcap=$WORK/ul0-$N.pcap log=$WORK/tcpdump-$N.log pid lan0
	lan0=$(lan_queries)
	ip netns exec "${PREFIX}a" tcpdump -i ul0 -n -s 128 --immediate-mode -U -w "$pcap" ip or ip6 \
	    >"$log" 2>&1 </dev/null &
	pid=$!
	BGPIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do
		grep -q "listening on" "$log" && break
		sleep 0.1
	done
	"$@"
	ip netns exec "${PREFIX}a" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    s.sendto(b"control", (sys.argv[1], 54))' "${UL[b]}"
	for ((i = 0; i < 50; i++)); do
		[ "$(tcpdump -r "$pcap" -n "udp port 54" 2>/dev/null | wc -l)" -ge 3 ] && break
		sleep 0.1
	done
	kill -INT "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	DNS_PKTS=$(tcpdump -r "$pcap" -n "port 53" 2>/dev/null | wc -l)
	MCAST=$(tcpdump -r "$pcap" -n "udp port 5353 or udp port 5355" 2>/dev/null | wc -l)
	CONTROL=$(tcpdump -r "$pcap" -n "udp port 54" 2>/dev/null | wc -l)
	LAN=$(($(lan_queries) - lan0))
}
# lookups WORD: what a's resolver answers for two names, by resolvectl and
# by the stub resolver of libc (getent, through /etc/resolv.conf, one try
# of a second), each name new (nothing cached); LOOKUP_S: how long they
# took.
lookups() {
	local t=${EPOCHREALTIME/./}
	LOOKUPS="resolvectl: $(resolve "$1-q.example"); getent: $(cx a env RES_OPTIONS='timeout:1 attempts:1' \
	    getent hosts "$1-g.example" | awk '{ print $1 }' | grep . || echo failed)"
	LOOKUP_S=$(printf '%.1f' "$(((${EPOCHREALTIME/./} - t) / 100000))e-1")
}

cx a systemctl kill --kill-who=main --signal=SIGKILL toud.service >/dev/null 2>&1
for ((i = 0; i < 100; i++)); do
	[ "$(prop a ActiveState)" = failed ] && ! ip -n "${PREFIX}a" link show tou0 >/dev/null 2>&1 && break
	sleep 0.1
done
is "$(prop a ActiveState)/$(ip -n "${PREFIX}a" -o link show tou0 2>/dev/null | wc -l)" "failed/0" \
    "a: SIGKILL: the unit failed, not restarted, and tou0 is gone"
is "$(dns_rule_prefs | wc -l)" 1 "a: after SIGKILL toud's port-53 rule stays"
is "$(ip -n "${PREFIX}a" xfrm policy show dir out | grep -c 'action block')" 4 \
    "a: ... and its xfrm policies that block port 53 (UDP and TCP, both families)"
capture_dns lookups dead
diag "after SIGKILL: $LOOKUPS ($LOOKUP_S s); LLMNR/mDNS packets on ul0: $MCAST"
is "$LOOKUPS" "resolvectl: failed; getent: failed" "a: after SIGKILL names do not resolve"
is "$DNS_PKTS" 0 "a: after SIGKILL no packet to or from port 53 crosses ul0"
is "$LAN" 0 "a: after SIGKILL the local network's server hears no query"
cmp_ok "$CONTROL" -ge 3 "a: ... while datagrams to another port of it do: the capture works ($CONTROL)"

# The control: with the rule alone (toud's xfrm policies deleted),
# resolved's fallback, bound to ul0, leaks.
ip -n "${PREFIX}a" xfrm policy flush
cx a resolvectl reset-server-features >/dev/null 2>&1
capture_dns lookups leak
diag "with the rule alone: $LOOKUPS ($LOOKUP_S s)"
cmp_ok "$DNS_PKTS" -gt 0 "control: with toud's xfrm policies deleted (its port-53 rule in place) the queries cross ul0 ($DNS_PKTS packets)"
cmp_ok "$LAN" -gt 0 "control: ... and reach the local network's server ($LAN queries)"

# --- power off ------------------------------------------------------------------------------

power_off_all

echo "1..$N"
[ "$FAIL" -eq 0 ]
