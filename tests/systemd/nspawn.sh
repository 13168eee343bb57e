#!/bin/bash
# nspawn.sh - toud under a real systemd: two systemd-nspawn containers, each
# living in its own network namespace (joined by a veth), boot Debian 12 with
# the built toud, touctl, toud.service and toud.sysusers installed, and then
#   - systemd-sysusers creates the user; a key readable by root only and a
#     0600 /dev/net/tun (a container has no udev) make the start fail with
#     the reason in the journal; then `systemctl start toud` works in both
#     (Type=notify, the hardened unit: User=toud with CAP_NET_ADMIN only, a
#     private /dev with net/tun alone, the control socket in /run/toud),
#   - the host's own curl fetches a file from a python http.server through
#     the tunnel (sha256 compared),
#   - `systemctl reload toud` during a transfer applies a changed
#     configuration without disturbing the transfer or restarting toud,
#   - a killed toud is restarted (Restart=on-failure),
#   - journalctl -u toud has the daemon's "up" line,
#   - `systemctl stop toud` leaves no address or route behind.
# The containers share the test's network namespaces, so host tools reach
# the daemons' TUN devices with `ip netns exec`.
#
# Not part of `make check` (about a minute cold, for debootstrap; 20-30 s
# with the cached root file system; see rootfs.sh).  TAP on stdout.
#
# Environment:
#   TOUD, TOUCTL        the built binaries (default _build/src/toud, touctl)
#   TOUD_SRCDIR         the source tree (default: this script's ../..)
#   TOUD_BUILDDIR       optional: a build tree configured with --prefix=/usr
#                       --sysconfdir=/etc; then `make install DESTDIR=...` of
#                       it provides every installed file (this tests the
#                       install rules too) instead of TOUD/TOUCTL and a
#                       sed of systemd/toud.service.in
#   TOUD_NSPAWN_ENCRYPTION  dtls (default: keys from `touctl genkey` in each
#                       container, fingerprints exchanged) or none
#   TOUD_CI_CACHE       root file system cache (rootfs.sh)
#   TOUD_TEST_KEEP=1    keep the work directory (logs)
#   CI=true             a missing tool or root is a failure, not a skip
#
# Everything carries the per-run prefix "ts<PID>-"; the EXIT trap powers the
# containers off, deletes the namespaces and the work directory (the
# containers' writes went to a --volatile=overlay tmpfs and vanish with them).
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${TOUD_SRCDIR:-$(cd "$here/../.." && pwd)}
TOUD=${TOUD:-$srcdir/_build/src/toud}
TOUCTL=${TOUCTL:-$srcdir/_build/src/touctl}
ENC=${TOUD_NSPAWN_ENCRYPTION:-dtls}
PREFIX="ts$$-"
T0=${EPOCHREALTIME/./}
WORK=
NODES=(a b)
declare -A UL=([a]=10.200.0.1 [b]=10.200.0.2)
declare -A TUN4=([a]=10.77.0.1 [b]=10.77.0.2)
declare -A TUN6=([a]=fd77::1 [b]=fd77::2)
declare -A NSPAWN_PID=() LEADER=() FPR=()
NSS=()
BGPIDS=()

# --- TAP ----------------------------------------------------------------------

. "$(dirname "$0")/tap.sh"
elapsed() { local t=${EPOCHREALTIME/./}; printf '%.1f' "$(((t - T0) / 100000))e-1"; }
stamp() { diag "[$(elapsed) s] $*"; }
# check DESC CMD...: ok when CMD succeeds, its output as diag otherwise.
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$desc"; else not_ok "$desc" "$out"; return 1; fi
}
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got '$1', want '$2'"; return 1; fi
}
bail_out() { echo "Bail out! $*"; exit 1; }
skip_or_fail() {
	[ "${CI:-}" = true ] && bail_out "$* (CI=true: this stage must run)"
	echo "1..0 # SKIP $*"
	exit "${TOUD_E2E_SKIP_STATUS:-77}"
}

# --- clean-up -------------------------------------------------------------------

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
wait_gone() {           # wait_gone PID SECONDS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		pid_alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

poweroff() {            # poweroff NODE: clean shutdown, then force
	local n=$1 np=${NSPAWN_PID[$1]:-} l=${LEADER[$1]:-}
	pid_alive "$np" || return 0
	[ -n "$l" ] && kill -s SIGRTMIN+4 "$l" 2>/dev/null
	wait_gone "$np" 20 && return 0
	kill -TERM "$np" 2>/dev/null
	wait_gone "$np" 5 && return 1
	kill -KILL "$np" 2>/dev/null
	wait_gone "$np" 5
	return 1
}

cleanup() {
	local rc=$? n p ns f
	trap - EXIT INT TERM HUP
	for p in "${BGPIDS[@]}"; do
		pid_alive "$p" && kill -TERM "$p" 2>/dev/null
	done
	for n in "${!NSPAWN_PID[@]}"; do
		poweroff "$n" || diag "container $n did not power off in 20 s: killed"
	done
	for ns in "${NSS[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "$WORK" ] && [ -d "$WORK" ]; then
		if [ "$FAIL" -ne 0 ] || [ "$rc" -ne 0 ]; then
			for f in "$WORK"/*.log; do
				[ -s "$f" ] && diag "--- last lines of $(basename "$f"):" && diag "$(tail -n 15 "$f")"
			done
		fi
		# Never follow a mount that outlived its container into the host.
		if findmnt -rn -o TARGET | grep -q "^$WORK/"; then
			diag "mounts left under $WORK: not removed"
		elif [ "${TOUD_TEST_KEEP:-0}" = 1 ]; then
			diag "kept $WORK"
		else
			rm -rf --one-file-system "$WORK"
		fi
	fi
	diag "total $(elapsed) s"
	exit "$rc"
}

# --- prerequisites ----------------------------------------------------------------

[ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
for c in systemd-nspawn nsenter ip python3 curl sha256sum findmnt zstd; do
	command -v "$c" >/dev/null 2>&1 ||
	    skip_or_fail "missing command: $c (apt-get install systemd-container util-linux iproute2 curl zstd)"
done
[ -c /dev/net/tun ] || skip_or_fail "needs /dev/net/tun"
case $ENC in none|dtls) ;; *) bail_out "TOUD_NSPAWN_ENCRYPTION must be none or dtls";; esac

WORK=$(mktemp -d /var/tmp/toud-nspawn.XXXXXX) || bail_out "mktemp"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
diag "namespaces and machines: ${PREFIX}*, encryption: $ENC, files: $WORK"

# --- what gets installed ------------------------------------------------------------

stage=$WORK/stage
if [ -n "${TOUD_BUILDDIR:-}" ]; then
	grep -qx 'prefix = /usr' "$TOUD_BUILDDIR/Makefile" &&
	    grep -qx 'sysconfdir = /etc' "$TOUD_BUILDDIR/Makefile" ||
	    bail_out "$TOUD_BUILDDIR is not configured with --prefix=/usr --sysconfdir=/etc"
	make -C "$TOUD_BUILDDIR" -s install DESTDIR="$stage" >"$WORK/install.log" 2>&1 ||
	    bail_out "make install failed: $(tail -n 5 "$WORK/install.log")"
	INST_TOUD=$stage/usr/sbin/toud
	INST_TOUCTL=$stage/usr/bin/touctl
	INST_UNIT=$(find "$stage" -path '*/systemd/system/toud.service' | head -n 1)
	INST_SYSUSERS=$(find "$stage" -path '*/sysusers.d/toud.conf' | head -n 1)
	for f in "$INST_TOUD" "$INST_TOUCTL" "$INST_UNIT" "$INST_SYSUSERS"; do
		[ -n "$f" ] && [ -f "$f" ] || bail_out "make install did not install toud, touctl, toud.service and sysusers.d/toud.conf: $(cd "$stage" && find . -type f)"
	done
	ok "make install DESTDIR installs toud, touctl, toud.service and sysusers.d/toud.conf"
else
	for f in "$TOUD" "$TOUCTL"; do
		[ -x "$f" ] || bail_out "$f not found (build first, or set TOUD / TOUCTL)"
	done
	mkdir -p "$stage"
	INST_TOUD=$TOUD
	INST_TOUCTL=$TOUCTL
	INST_UNIT=$stage/toud.service
	INST_SYSUSERS=$srcdir/systemd/toud.sysusers
	sed -e 's|@sbindir@|/usr/sbin|g' -e 's|@sysconfdir@|/etc|g' \
	    "$srcdir/systemd/toud.service.in" >"$INST_UNIT" || bail_out "no toud.service.in"
fi

# --- root file system, network, containers ------------------------------------------

stamp "root file system"
if ! "$here/rootfs.sh" "$WORK/rootfs" 2>"$WORK/rootfs.log"; then
	cat "$WORK/rootfs.log" >&2
	bail_out "no root file system"
fi
ok "root file system ready in $(elapsed) s ($(tail -n 1 "$WORK/rootfs.log" | sed 's/^rootfs: //'))"

for n in "${NODES[@]}"; do
	ns=$PREFIX$n
	NSS+=("$ns")
	ip netns add "$ns" || bail_out "cannot create namespace $ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done
ip link add ul0 netns "${PREFIX}a" type veth peer name ul0 netns "${PREFIX}b" || bail_out "veth"
for n in "${NODES[@]}"; do
	ip -n "$PREFIX$n" addr add "${UL[$n]}/24" dev ul0
	ip -n "$PREFIX$n" link set ul0 up
done

boot() {
	local n=$1 out
	out=$(python3 "$here/nspawn_boot.py" "$WORK/nspawn-$n.log" 60 -- \
	    systemd-nspawn --quiet --boot --directory="$WORK/rootfs" --machine="$PREFIX$n" \
	    --keep-unit --register=no --notify-ready=yes --volatile=overlay \
	    --network-namespace-path="/run/netns/$PREFIX$n" --capability=CAP_NET_ADMIN \
	    --bind-ro="$INST_TOUD:/usr/sbin/toud" --bind-ro="$INST_TOUCTL:/usr/bin/touctl" \
	    --bind-ro="$INST_UNIT:/usr/lib/systemd/system/toud.service" \
	    --bind-ro="$INST_SYSUSERS:/usr/lib/sysusers.d/toud.conf" \
	    --console=pipe 2>&1) || { not_ok "container $n boots" "$out"; return 1; }
	read -r NSPAWN_PID[$n] LEADER[$n] secs <<<"$out"
	ok "container $n boots to READY=1 in $secs s (systemd pid ${LEADER[$n]} on the host)"
}

# cx NODE CMD...: run CMD inside NODE's container (all its namespaces).
cx() {
	local n=$1
	shift
	timeout 60 nsenter -t "${LEADER[$n]}" -a "$@"
}

stamp "booting"
for n in "${NODES[@]}"; do
	boot "$n" || bail_out "container $n did not boot"
done

for n in "${NODES[@]}"; do
	out=$(cx "$n" ldd /usr/sbin/toud /usr/bin/touctl 2>&1)
	if grep -q 'not found' <<<"$out"; then
		not_ok "$n: toud's and touctl's libraries resolve in the container" "$(grep 'not found' <<<"$out")"
	else
		ok "$n: toud's and touctl's libraries resolve in the container"
	fi
done

# What a package's postinst does (dh_installsysusers).
for n in "${NODES[@]}"; do
	pre=$(cx "$n" getent passwd toud)
	[ -n "$pre" ] && diag "$n: user toud existed after boot already (systemd-sysusers.service)"
	check "$n: systemd-sysusers toud.conf creates the user toud" \
	    cx "$n" sh -c 'systemd-sysusers toud.conf && getent passwd toud && getent group toud'
done

# --- configuration -----------------------------------------------------------------

if [ "$ENC" = dtls ]; then
	for n in "${NODES[@]}"; do
		# The key is read by the daemon, which runs as toud.
		# As an administrator would: genkey writes the key 0600 root.
		if FPR[$n]=$(cx "$n" sh -c 'mkdir -p /etc/tou && touctl genkey /etc/tou' \
		    2>"$WORK/genkey-$n.log") &&
		    [[ ${FPR[$n]} =~ ^sha256:[0-9a-f]{64}$ ]]; then
			ok "$n: touctl genkey (${FPR[$n]:0:23}...)"
		else
			not_ok "$n: touctl genkey" "${FPR[$n]} $(cat "$WORK/genkey-$n.log")"
			bail_out "no key for $n"
		fi
	done
fi

# write_conf NODE [EXTRA-ALLOWED-IPS]: /etc/tou.conf inside NODE's container.
write_conf() {
	local n=$1 p extra=${2:-}
	[ "$n" = a ] && p=b || p=a
	{
		echo "# /etc/tou.conf of container $n (toud nspawn test)"
		echo "[interface]"
		echo "name = tou0"
		echo "address = ${TUN4[$n]}/24"
		echo "address = ${TUN6[$n]}/64"
		echo "listen = 6080"
		echo "user = toud"
		echo "encryption = $ENC"
		if [ "$ENC" = dtls ]; then
			echo "private-key = /etc/tou/key.pem"
			echo "certificate = /etc/tou/cert.pem"
		fi
		echo
		echo "[peer $p]"
		echo "endpoint = ${UL[$p]}:6080"
		echo "address = ${TUN4[$p]}, ${TUN6[$p]}"
		if [ -n "$extra" ]; then echo "allowed-ips = $extra"; fi
		if [ "$ENC" = dtls ]; then echo "fingerprint = ${FPR[$p]}"; fi
	} | cx "$n" sh -c 'umask 022 && cat >/etc/tou.conf.new && mv /etc/tou.conf.new /etc/tou.conf'
}

for n in "${NODES[@]}"; do
	write_conf "$n" || bail_out "cannot write /etc/tou.conf in $n"
done

# --- start ----------------------------------------------------------------------------

journal() { cx "$1" journalctl -u toud.service -o cat --no-pager "${@:2}" 2>&1; }
prop() { cx "$1" systemctl show -P "$2" toud.service 2>&1; }

stamp "systemctl start"
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
if [ "$ENC" = dtls ]; then
	# The daemon runs as toud: a key readable by root only is refused
	# already by ExecStartPre= (toud -t), naming the file.
	start_fails a "a key file readable by root only" "key\.pem"
	for n in "${NODES[@]}"; do
		cx "$n" sh -c 'chgrp toud /etc/tou/key.pem && chmod 0640 /etc/tou/key.pem' ||
		    bail_out "chgrp of the key in $n"
	done
fi
# The unit runs toud as the user toud, which needs /dev/net/tun to be
# world-writable, as systemd-udevd's 50-udev-default.rules makes it on every
# host (KERNEL=="tun", MODE="0666").  A container has no udev: nspawn's own
# node copies the host's mode, which is 0600 on a host without udev rules
# applied (set it so in the container, whatever the host has).  First, that
# the failure is then loud and clear:
cx a chmod 0600 /dev/net/tun || bail_out "chmod /dev/net/tun in a"
start_fails a "a 0600 /dev/net/tun (no udev)" 'tun device "tou0": Permission denied'
# Then do what udev does.  The node is the container's own (a tmpfs /dev),
# the host's stays as it is.
host_tun=$(stat -c %a /dev/net/tun)
for n in "${NODES[@]}"; do
	cx "$n" chmod 0666 /dev/net/tun || bail_out "chmod /dev/net/tun in $n"
done
is "$(stat -c %a /dev/net/tun)" "$host_tun" "the host's /dev/net/tun keeps its mode ($host_tun)"
started=yes
for n in "${NODES[@]}"; do
	if out=$(cx "$n" systemctl start toud.service 2>&1); then
		ok "$n: systemctl start toud"
	else
		not_ok "$n: systemctl start toud" "$out
$(journal "$n" -n 20)"
		started=no
	fi
done
# Everything below needs the daemons.
[ $started = yes ] || bail_out "toud.service did not start"
for n in "${NODES[@]}"; do
	is "$(cx "$n" systemctl is-active toud.service)" active "$n: toud.service is active"
	is "$(prop "$n" StatusText)" "0 of 1 peer up" "$n: STATUS= reached systemd"
done

# proc_field NODE PID FIELD: a line of /proc/PID/status inside the container.
proc_field() { cx "$1" awk -v f="$3:" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "/proc/$2/status"; }
for n in "${NODES[@]}"; do
	mp=$(prop "$n" MainPID)
	uid=$(cx "$n" id -u toud)
	is "$(proc_field "$n" "$mp" Uid | awk '{ print $1, $2, $3, $4 }')" "$uid $uid $uid $uid" \
	    "$n: the daemon (pid $mp) runs as user toud"
	is "$(proc_field "$n" "$mp" CapEff)/$(proc_field "$n" "$mp" CapPrm)/$(proc_field "$n" "$mp" CapBnd)" \
	    "0000000000001000/0000000000001000/0000000000001000" \
	    "$n: effective, permitted and bounding capabilities are CAP_NET_ADMIN only"
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
ping_ok() { ip netns exec "$PREFIX$1" ping -n -q -c 1 -W 1 "$2" >/dev/null 2>&1; }
wait_ping() {           # wait_ping NODE ADDR SECONDS
	local i
	for ((i = 0; i < $3; i++)); do
		ping_ok "$1" "$2" && return 0
	done
	return 1
}
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

# --- power off ------------------------------------------------------------------------------

stamp "power off"
for n in "${NODES[@]}"; do
	if poweroff "$n"; then
		ok "container $n powers off"
	else
		not_ok "container $n powers off in 20 s"
	fi
	unset 'NSPAWN_PID[$n]'
done

echo "1..$N"
[ "$FAIL" -eq 0 ]
