#!/bin/bash
# notify.sh - toud's side of the sd_notify protocol, without systemd.
#
# notify_recv.py plays the service manager: it owns NOTIFY_SOCKET (with
# SO_PASSCRED, so each datagram names its sender), starts the real toud in a
# scratch network namespace and, the instant READY=1 arrives, freezes it
# (SIGSTOP) and looks at that namespace.  Checked here:
#   1. started as root: READY=1 comes from toud's own pid, and at that
#      moment tou0 is up with its addresses, the peer routes, the UDP
#      sockets and the control socket exist and the process holds
#      CAP_NET_ADMIN only; STATUS= arrives; with WATCHDOG_USEC=2 s and
#      WATCHDOG_PID=toud's pid, WATCHDOG=1 comes about every second; SIGHUP
#      gives RELOADING=1 with MONOTONIC_USEC, then READY=1; on SIGTERM
#      STOPPING=1 comes and after the exit nothing of toud is left in the
#      namespace;
#   2. `user = nobody` (toud drops privileges before READY=1): the
#      notifications come from that uid, only CAP_NET_ADMIN is left, a
#      WATCHDOG_PID naming another process means no WATCHDOG=1, and the
#      unprivileged toud still removes everything at exit;
#   3. a start that fails (a route toud would add exists already): no
#      READY=1, exit status 1, nothing left, the foreign route untouched.
#
# TAP.  Needs root and /dev/net/tun (exit 77 otherwise, or with
# TOUD_SKIP_E2E=1, or when toud is built without libsystemd).  TOUD is the
# toud binary; TOUD_TEST_KEEP=1 keeps the work directory.  Everything
# created carries the per-run prefix "tn<PID>-" and is removed by the EXIT
# trap.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
TOUD=${TOUD:-$top/_build/src/toud}
PREFIX="tn$$-"
WORK=
NSS=()

. "$(dirname "$0")/tap.sh"
# Under automake's TAP driver a skip is the "1..0 # SKIP" plan with status 0
# (TOUD_E2E_SKIP_STATUS=0, as for the e2e tests); run alone, 77.
skip_all() { echo "1..0 # SKIP $*"; exit "${TOUD_E2E_SKIP_STATUS:-77}"; }
bail_out() { echo "Bail out! $*"; exit 1; }

cleanup() {
	local rc=$? ns
	trap - EXIT
	for ns in "${NSS[@]}"; do
		# Nothing of ours may survive the namespace: kill what runs in it.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "$WORK" ] && [ -d "$WORK" ]; then
		if [ "$FAIL" -ne 0 ] || [ "$rc" -ne 0 ]; then
			for f in "$WORK"/*.log; do
				[ -s "$f" ] && diag "--- $(basename "$f"):" && diag "$(tail -n 20 "$f")"
			done
		fi
		if [ "${TOUD_TEST_KEEP:-0}" = 1 ]; then diag "kept $WORK"; else rm -rf "$WORK"; fi
	fi
	exit "$rc"
}

[ "${TOUD_SKIP_E2E:-0}" = 1 ] && skip_all "TOUD_SKIP_E2E=1"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (TUN device, network namespaces)"
[ -c /dev/net/tun ] || skip_all "needs /dev/net/tun"
for c in ip python3 ss; do
	command -v "$c" >/dev/null 2>&1 || bail_out "missing command: $c (run scripts/deps.sh)"
done
[ -x "$TOUD" ] || bail_out "toud not found at $TOUD (build first, or set TOUD)"
# A build configured --without-systemd has no sd_notify at all.
if command -v ldd >/dev/null && ! ldd "$TOUD" 2>/dev/null | grep -q 'libsystemd\.so'; then
	skip_all "$TOUD is built without libsystemd (configure --without-systemd)"
fi
NOBODY_UID=$(id -u nobody 2>/dev/null) || bail_out "no user nobody"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toud-notify.XXXXXX") || bail_out "mktemp"
chmod 755 "$WORK"     # toud as nobody must reach its control dir and the notify socket
trap cleanup EXIT
diag "toud: $TOUD, namespaces: ${PREFIX}*, files: $WORK"

# ns_new NAME: a namespace with lo and an underlay veth (10.200.0.1/24 on
# ul0; the peer's endpoint 10.200.0.2 is on the link but nobody answers).
ns_new() {
	local ns=$PREFIX$1
	NSS+=("$ns")
	ip netns add "$ns" || bail_out "cannot create namespace $ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
	    net.ipv6.conf.default.accept_dad=0 >/dev/null
	ip -n "$ns" link add ul0 type veth peer name ul1 || bail_out "veth in $ns"
	ip -n "$ns" addr add 10.200.0.1/24 dev ul0
	ip -n "$ns" link set ul0 up
	ip -n "$ns" link set ul1 up
}

# conf NAME CONTROLDIR [EXTRA-INTERFACE-LINE]
conf() {
	cat >"$WORK/$1.conf" <<-EOF
	# toud notify test ($1)
	[interface]
	name = tou0
	address = 10.77.0.1/24
	address = fd77::1/64
	listen = 6080
	encryption = none
	control = $2/toud.sock
	log-level = debug
	${3:-}

	[peer b]
	endpoint = 10.200.0.2:6080
	address = 10.77.0.2, fd77::2
	allowed-ips = 192.168.50.0/24
	EOF
}

# run NAME NS CONTROLDIR RECV-OPTIONS...: toud under notify_recv.py.
run() {
	local name=$1 ns=$PREFIX$2 cdir=$3
	shift 3
	python3 "$here/notify_recv.py" --ns "$ns" --out "$WORK/$name.json" \
	    --path "$cdir/toud.sock" "$@" -- \
	    ip netns exec "$ns" "$TOUD" -c "$WORK/$name.conf" >"$WORK/$name.log" 2>&1 ||
	    bail_out "notify_recv.py failed: $(tail -n 5 "$WORK/$name.log")"
	RES=$WORK/$name.json
}

# t DESC EXPR: one assertion on the current record (see notify_q.py).
t() {
	local out
	if out=$(python3 "$here/notify_q.py" "$RES" "$2" 2>&1); then
		ok "$1"
	else
		not_ok "$1" "$out"
	fi
}
q() { python3 "$here/notify_q.py" --print "$RES" "$1" 2>&1; }

# --- 1. root start, watchdog on ----------------------------------------------

ns_new a
mkdir "$WORK/ctl-a"
conf a "$WORK/ctl-a"
run a a "$WORK/ctl-a" --watchdog-usec 2000000 --watchdog-pid self --hup-after 2.3 --term-after 4.5
diag "run 1: pid $(q pid); ready at $(q 'r["ready"]') s; messages:"
diag "$(q '"\n".join("%7.3f pid %s uid %s: %s" % (m["t"], m["pid"], m["uid"], m["data"].replace("\n", "|")) for m in r["messages"])')"

t "READY=1 arrives (within 5 s)" 'msgs("READY") and r["ready"] < 5'
t "READY=1 comes from toud's own pid" 'msgs("READY")[0]["pid"] == pid'
t "every notification comes from toud's pid" 'r["messages"] and all(m["pid"] == pid for m in r["messages"])'
t "toud was frozen (SIGSTOP) for the READY=1 snapshot" 'r.get("stopped_at_ready")'
t "at READY=1: tou0 exists and is up" '"UP" in ready["link"]["json"][0]["flags"]'
t "at READY=1: tou0 has 10.77.0.1/24 and fd77::1/64" 'addrs(ready) == ["10.77.0.1/24", "fd77::1/64"]'
t "at READY=1: the peer's allowed-ips routed through tou0, its addresses by tou0's own prefixes" \
    'set(["10.77.0.0/24", "fd77::/64", "192.168.50.0/24"]) <= set(routes(ready)) and not set(["10.77.0.2", "fd77::2"]) & set(routes(ready))'
t "at READY=1: UDP port 6080 bound (IPv4 and IPv6) by toud" \
    'len(udp(ready)) == 2 and all("pid=%d," % pid in l for l in udp(ready))'
t "at READY=1: the control socket exists" 'all(ready["paths"].values())'
t "at READY=1: effective and permitted capabilities are CAP_NET_ADMIN only" \
    'cap(ready, "CapEff") == 1 << 12 and cap(ready, "CapPrm") == 1 << 12'
t "at READY=1: empty bounding set and no_new_privs" \
    'cap(ready, "CapBnd") == 0 and proc(ready, "NoNewPrivs") == ["1"]'
t "STATUS= arrives, no later than READY=1 ($(q 'vals("STATUS")'))" \
    'msgs("STATUS") and msgs("STATUS")[0]["t"] <= r["ready"] and "peer" in vals("STATUS")[0]'
wd='[m["t"] for m in msgs("WATCHDOG") if m["t"] < r["term_sent"]]'
# How many come between READY=1 and SIGTERM follows from that span, which a
# crowded machine stretches or shortens: at least one per WATCHDOG_USEC
# (systemd's bound), at most one per quarter of it (toud pings at half).
span='(r["term_sent"] - r["ready"])'
t "WATCHDOG=1 arrives with WATCHDOG_USEC=2000000 ($(q "len($wd)") in $(q "round($span, 2)") s)" \
    "len($wd) >= max(1, int($span / 2.0)) and len($wd) <= $span / 0.5 + 1"
# systemd's bound is WATCHDOG_USEC between two pings: every interval is
# under it; toud pings at half of it, so the median is about a second (a
# single late tick on a crowded machine is followed by a short one).
iv="[b - a for a, b in zip([r['ready']] + $wd, $wd)]"
t "WATCHDOG=1 about every second, never 2 s apart (intervals $(q "[round(x, 2) for x in $iv]"))" \
    "max($iv) < 2.0 and 0.6 <= sorted($iv)[len($iv) // 2] <= 1.4"
rl='msgs("RELOADING")'
t "SIGHUP: RELOADING=1 arrives" "len(${rl}) == 1 and r['hup_sent'] <= ${rl}[0]['t']"
t "SIGHUP: RELOADING=1 carries MONOTONIC_USEC of the moment it began" \
    "r['hup_sent_monotonic_usec'] <= int(kv(${rl}[0]['data'])['MONOTONIC_USEC']) <= ${rl}[0]['mono_usec']"
t "SIGHUP: READY=1 follows RELOADING=1 (reload finished)" \
    "len(msgs('READY')) == 2 and ${rl}[0]['t'] <= msgs('READY')[1]['t'] < ${rl}[0]['t'] + 2"
t "STOPPING=1 arrives after SIGTERM, before the exit" \
    'len(msgs("STOPPING")) == 1 and r["term_sent"] <= msgs("STOPPING")[0]["t"] <= r["exit"]["t"]'
t "nothing but WATCHDOG=1 and STOPPING=1 after SIGTERM" \
    'all(set(kv(m["data"])) <= {"WATCHDOG", "STOPPING", "STATUS"} for m in r["messages"] if m["t"] >= r["term_sent"])'
t "toud exits 0 on SIGTERM (in $(q 'round(r["exit"]["t"] - r["term_sent"], 3)') s)" \
    'r["exit"]["code"] == 0 and r["exit"]["t"] - r["term_sent"] < 5 and not r["errors"]'
t "after the exit: no tou0" 'exit_["link"]["rc"] != 0 and not any(l["ifname"] == "tou0" for l in exit_["links"]["json"])'
t "after the exit: no route to the tunnel or allowed-ips prefixes in any table" 'toud_routes(exit_) == []'
t "after the exit: no socket on UDP 6080" 'udp(exit_) == []'
t "after the exit: the control socket is removed" 'not any(exit_["paths"].values())'

# --- 2. user = nobody, WATCHDOG_PID of another process -------------------------

ns_new b
mkdir "$WORK/ctl-b"
chown nobody "$WORK/ctl-b"      # as RuntimeDirectory= would, so toud can remove its socket
conf b "$WORK/ctl-b" "user = nobody"
run b b "$WORK/ctl-b" --watchdog-usec 2000000 --watchdog-pid 1 --term-after 2.5
diag "run 2: pid $(q pid); messages: $(q '[m["data"].replace("\n", "|") for m in r["messages"]]')"

t "user = nobody: READY=1 from toud's pid" 'len(msgs("READY")) == 1 and msgs("READY")[0]["pid"] == pid'
t "user = nobody: READY=1 is sent as uid $NOBODY_UID, after the privilege drop" \
    "msgs('READY')[0]['uid'] == $NOBODY_UID and proc(ready, 'Uid') == ['$NOBODY_UID'] * 4"
t "user = nobody: at READY=1 tou0 is up with its addresses and routes" \
    'addrs(ready) == ["10.77.0.1/24", "fd77::1/64"] and set(["10.77.0.0/24", "fd77::/64", "192.168.50.0/24"]) <= set(routes(ready))'
t "user = nobody: only CAP_NET_ADMIN left (effective, permitted; no bounding, ambient)" \
    'cap(ready, "CapEff") == 1 << 12 and cap(ready, "CapPrm") == 1 << 12 and cap(ready, "CapBnd") == 0 and cap(ready, "CapAmb") == 0'
t "WATCHDOG_PID of another process: no WATCHDOG=1" 'msgs("WATCHDOG") == []'
t "user = nobody: STOPPING=1 on SIGTERM and exit status 0" \
    'len(msgs("STOPPING")) == 1 and r["exit"]["code"] == 0 and not r["errors"]'
t "user = nobody: after the exit no tou0, no routes, no UDP socket" \
    'exit_["link"]["rc"] != 0 and toud_routes(exit_) == [] and udp(exit_) == []'
t "user = nobody: after the exit the control socket is removed" 'not any(exit_["paths"].values())'

# --- 3. a failed start --------------------------------------------------------

ns_new c
mkdir "$WORK/ctl-c"
conf c "$WORK/ctl-c"
# Someone else's route to the peer's allowed-ips: toud must refuse.
ip -n "${PREFIX}c" route add 192.168.50.0/24 via 10.200.0.2 dev ul0 || bail_out "route in ${PREFIX}c"
run c c "$WORK/ctl-c" --ready-timeout 5
diag "run 3: exit $(q 'r["exit"]'); messages: $(q '[m["data"].replace("\n", "|") for m in r["messages"]]')"
diag "$(grep -v '^<7>' "$WORK/c.log" | tail -n 3)"

t "failed start: exit status 1, without SIGTERM" 'r["exit"]["code"] == 1 and r["term_sent"] is None'
t "failed start: no READY=1" 'msgs("READY") == []'
t "failed start: no tou0, no UDP socket left" 'exit_["link"]["rc"] != 0 and udp(exit_) == []'
t "failed start: the foreign route is untouched, toud's own are gone" \
    'toud_routes(exit_) == ["192.168.50.0/24 dev ul0 proto boot"]'

echo "1..$N"
[ "$FAIL" -eq 0 ]
