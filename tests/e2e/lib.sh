# lib.sh - shared code of the end-to-end tests (sourced, bash).
#
# Each test builds its own network namespaces joined by veth pairs, runs real
# toud daemons in them and drives real applications through the tunnel.  It
# speaks TAP: "ok N - ..." / "not ok N - ...", "# ..." comments, the plan
# "1..N" at the end (done_testing).
#
# Everything a test creates carries a per-run prefix (namespaces "te<PID>-a",
# a private mktemp directory), so tests can run in parallel; the EXIT trap
# kills only the processes the test started (by PID), deletes only its
# namespaces and removes its directory.  Addresses used: underlay
# 10.200.0.0/24 and fd20::/64, tunnel 10.77.0.0/24 and fd77::/64, a subnet
# 192.168.50.0/24 behind a peer; all of them exist only inside the test's
# namespaces.
#
# Environment:
#   TOUD, TOUCTL            the binaries (default: _build/src/toud, touctl)
#   TOUD_E2E_HELPERS        where the helper programs make check builds are
#                           (default: tests/e2e next to toud's src/)
#   TOUD_E2E_ENCRYPTION     none (default) or dtls
#   TOUD_E2E_OFFLOAD        toud's offload key: auto (default) or off
#   TOUD_E2E_THREADS        toud's threads key: on (default), off or auto
#   TOUD_E2E_LOG_LEVEL      toud's log level (default debug)
#   TOUD_SKIP_E2E=1         skip every test
#   TOUD_E2E_SKIP_STATUS    exit status of a skipped test (default 77; automake's
#                           TAP driver reports 77 as an error, so `make check`
#                           sets 0: the "1..0 # SKIP" plan says it all)
#   TOUD_E2E_KEEP=1         keep the temporary directory (configs, logs, captures)
#
# Clean-up: the EXIT trap does it when the test ends by itself.  A test
# killed by a signal cannot run it (and bash 5.2 can abort inside a signal
# trap that fires during a command substitution, so there is none): a
# watchdog process waits for the test's shell to go away and then kills what
# is recorded in $E2E_DIR/.pids (pid and start time), deletes the
# namespaces in $E2E_DIR/.ns and the directory.  (A test body wrapped in
# { ... } is fine but no longer needed for this.)
#
# Helpers that record PIDs (toud_start, bg_start, http_serve) must not be
# called in a subshell ($(...), pipelines), or the record is lost.

set -u
set -o pipefail

E2E_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The tests' inline Python imports e2eutil from here; no bytecode is
# written into the source tree (it may be read-only, as in distcheck).
export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
TOUD=${TOUD:-$E2E_TOP/_build/src/toud}
TOUCTL=${TOUCTL:-$E2E_TOP/_build/src/touctl}
# Helper programs `make check` builds (check_PROGRAMS) live in the build
# tree next to toud's: ../tests/e2e from src/.
E2E_HELPERS=${TOUD_E2E_HELPERS:-$(dirname "$TOUD")/../tests/e2e}
E2E_ENCRYPTION=${TOUD_E2E_ENCRYPTION:-none}
E2E_OFFLOAD=${TOUD_E2E_OFFLOAD:-auto}
E2E_THREADS=${TOUD_E2E_THREADS:-on}
E2E_LOG_LEVEL=${TOUD_E2E_LOG_LEVEL:-debug}
E2E_PREFIX="te$$-"
E2E_DIR=
E2E_NS=()                       # namespaces this run created
E2E_PIDS=()                     # background processes this run started
declare -A TOUD_PID=()          # node -> pid of its running toud
declare -A TOUD_RC=()           # node -> exit status of its last toud
T_N=0
T_FAIL=0

# --- TAP ------------------------------------------------------------------

diag() {
	local line
	while IFS= read -r line; do
		echo "# $line"
	done <<<"$*"
}

ok() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $*"
}

not_ok() {
	T_N=$((T_N + 1))
	T_FAIL=$((T_FAIL + 1))
	echo "not ok $T_N - $1"
	[ $# -gt 1 ] && [ -n "$2" ] && diag "$2"
	return 0
}

# check DESC CMD...: ok when CMD succeeds; its output goes to diag otherwise.
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc" "$out"
		return 1
	fi
}

# is GOT WANT DESC
is() {
	if [ "$1" = "$2" ]; then
		ok "$3"
	else
		not_ok "$3" "got '$1', want '$2'"
		return 1
	fi
}

# cmp_ok A OP B DESC, OP one of test(1)'s integer operators (-gt, -eq ...).
cmp_ok() {
	if [[ "$1" =~ ^-?[0-9]+$ && "$3" =~ ^-?[0-9]+$ ]] && test "$1" "$2" "$3"; then
		ok "$4"
	else
		not_ok "$4" "expected '$1' $2 '$3'"
		return 1
	fi
}

bail_out() {
	echo "Bail out! $*"
	exit 1
}

done_testing() {
	echo "1..$T_N"
	[ "$T_FAIL" -eq 0 ] && exit 0
	exit 1
}

# --- set-up and clean-up ----------------------------------------------------

skip_all() {
	echo "1..0 # SKIP $*"
	exit "${TOUD_E2E_SKIP_STATUS:-77}"
}

need_root() {
	[ "${TOUD_SKIP_E2E:-0}" = 1 ] && skip_all "TOUD_SKIP_E2E=1"
	[ "$(id -u)" -eq 0 ] || skip_all "needs root"
	[ -c /dev/net/tun ] || skip_all "needs /dev/net/tun"
	ip netns list >/dev/null 2>&1 || skip_all "needs network namespaces (ip netns)"
	e2e_init
}

# need_helper NAME: the path of a helper program in $E2E_HELPERS; a missing
# one is an error (make check builds them).
need_helper() {
	[ -x "$E2E_HELPERS/$1" ] || bail_out "$E2E_HELPERS/$1 not built (make check builds it)"
}

# need_cmd CMD...: a missing tool is an error, not a skip: CI must run all.
need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || bail_out "missing command: $c (run scripts/deps.sh)"
	done
}

e2e_init() {
	[ -x "$TOUD" ] || bail_out "toud not found at $TOUD (build first, or set TOUD)"
	[ -x "$TOUCTL" ] || bail_out "touctl not found at $TOUCTL (build first, or set TOUCTL)"
	need_cmd ip python3 timeout sha256sum ss
	E2E_DIR=$(mktemp -d "${TMPDIR:-/tmp}/toud-e2e.XXXXXX") || bail_out "mktemp failed"
	chmod 755 "$E2E_DIR"
	: >"$E2E_DIR/.pids"
	: >"$E2E_DIR/.ns"
	trap 'e2e_cleanup' EXIT
	e2e_watchdog </dev/null >/dev/null 2>&1 &
	diag "toud: $TOUD, encryption: $E2E_ENCRYPTION, namespaces: ${E2E_PREFIX}*, files: $E2E_DIR"
}

# proc_start PID: the process's start time (field 22 of /proc/PID/stat),
# which tells a recorded process from a later one with the same pid.
proc_start() {
	local f
	f=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	read -r -a f <<<"$f"
	echo "${f[19]}"
}

# e2e_record PID: remember a background process for the watchdog.
e2e_record() {
	E2E_PIDS+=("$1")
	echo "$1 $(proc_start "$1")" >>"$E2E_DIR/.pids"
}

e2e_watchdog() {
	local main=$$ pid start
	trap '' INT TERM HUP
	while kill -0 "$main" 2>/dev/null; do
		sleep 0.5
	done
	[ -d "$E2E_DIR" ] || exit 0
	for sig in TERM TERM KILL; do
		while read -r pid start; do
			[ -n "$start" ] && [ "$(proc_start "$pid")" = "$start" ] &&
			    kill -s "$sig" "$pid" 2>/dev/null
		done <"$E2E_DIR/.pids"
		sleep 1
	done
	while read -r ns; do
		ip netns del "$ns" 2>/dev/null
		[ -n "$ns" ] && [ -d "/etc/netns/$ns" ] && rm -rf "/etc/netns/$ns"
	done <"$E2E_DIR/.ns"
	rm -rf "$E2E_DIR"
}

proc_alive() {
	local st
	[ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# proc_wait PID SECONDS: wait for a child to exit; sets PROC_RC.
proc_wait() {
	local pid=$1 deadline
	deadline=$(e2e_deadline "$2")
	while proc_alive "$pid"; do
		e2e_before "$deadline" || return 1
		sleep 0.05
	done
	wait "$pid" 2>/dev/null
	PROC_RC=$?
	e2e_forget_pid "$pid"
	return 0
}

e2e_forget_pid() {
	local i
	for i in "${!E2E_PIDS[@]}"; do
		[ "${E2E_PIDS[$i]}" = "$1" ] && unset 'E2E_PIDS[i]'
	done
	return 0
}

# proc_stop PID [SIGNAL] [SECONDS]: signal, wait, SIGKILL when it lingers.
proc_stop() {
	local pid=$1 sig=${2:-TERM} secs=${3:-10}
	PROC_RC=
	proc_alive "$pid" || { proc_wait "$pid" 1; return 0; }
	kill -s "$sig" "$pid" 2>/dev/null
	proc_wait "$pid" "$secs" && return 0
	kill -s KILL "$pid" 2>/dev/null
	proc_wait "$pid" 5
	return 1
}

e2e_cleanup() {
	local rc=$? pid ns f n
	trap - EXIT
	# toud first, so its exit status makes it into its log.
	for n in "${!TOUD_PID[@]}"; do
		toud_alive "$n" ||
		    diag "toud on $n (pid ${TOUD_PID[$n]}) had exited before the clean-up"
		toud_stop "$n" >/dev/null 2>&1 ||
		    diag "toud on $n did not exit in 10 s after SIGTERM: killed"
		echo "=== stopped at clean-up: exit status ${TOUD_RC[$n]}" >>"$E2E_DIR/$n.log"
		# A daemon that does not exit cleanly (a sanitizer report, a
		# crash, a failed teardown) fails the test.
		if [ "${TOUD_RC[$n]}" != 0 ]; then
			diag "toud on $n exited with status ${TOUD_RC[$n]} at clean-up"
			[ "$rc" -ne 0 ] || rc=1
		fi
	done
	for pid in "${E2E_PIDS[@]}"; do
		proc_alive "$pid" && kill -s TERM "$pid" 2>/dev/null
	done
	for pid in "${E2E_PIDS[@]}"; do
		proc_stop "$pid" TERM 5 >/dev/null 2>&1 ||
		    diag "process $pid did not exit in 5 s after SIGTERM: killed"
	done
	for ns in "${E2E_NS[@]}"; do
		ip netns del "$ns" 2>/dev/null
		# Per-namespace files of `ip netns exec` (hosts, resolv.conf).
		[ -d "/etc/netns/$ns" ] && rm -rf "/etc/netns/$ns"
	done
	if [ -n "$E2E_DIR" ] && [ -d "$E2E_DIR" ]; then
		if [ "$T_FAIL" -ne 0 ] || [ "$rc" -ne 0 ]; then
			for f in "$E2E_DIR"/*.log; do
				[ -f "$f" ] || continue
				diag "--- last lines of $(basename "$f"):"
				diag "$(tail -n 25 "$f")"
			done
		fi
		if [ "${TOUD_E2E_KEEP:-0}" = 1 ]; then
			diag "kept $E2E_DIR"
		else
			rm -rf "$E2E_DIR"
		fi
	fi
	# scripts/summary.sh shows it: what each test costs CI.
	diag "the test took $SECONDS s"
	exit "$rc"
}

# Deadlines in milliseconds of the wall clock.
e2e_now() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}
e2e_deadline() {
	local s=$1 ms
	ms=$(awk -v s="$s" 'BEGIN { printf "%d", s * 1000 }')
	echo $(($(e2e_now) + ms))
}
e2e_before() {
	[ "$(e2e_now)" -lt "$1" ]
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
	local deadline
	deadline=$(e2e_deadline "$1")
	shift
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		e2e_before "$deadline" || return 1
		sleep 0.1
	done
}

# --- namespaces and links -------------------------------------------------

ns() { echo "$E2E_PREFIX$1"; }

# nsx NODE CMD...: run CMD in NODE's namespace.
nsx() {
	local n=$1
	shift
	ip netns exec "$E2E_PREFIX$n" "$@"
}

# tcp_small_buffers NODE...: cap TCP's socket buffers in these namespaces
# (the sysctls are per namespace), so that a rate-limited download runs at
# the rate it asks for instead of landing in the buffers of a fast tunnel at
# once: tests that act "while a download runs" depend on it.
tcp_small_buffers() {
	local n
	for n in "$@"; do
		nsx "$n" sysctl -qw net.ipv4.tcp_rmem="4096 16384 131072" \
		    net.ipv4.tcp_wmem="4096 16384 131072" >/dev/null || bail_out "sysctl tcp buffers in $n"
	done
}

# netns_add NODE...: namespaces with lo up, no IPv6 DAD (addresses are
# usable at once and `ip addr` does not change under a test's feet).
netns_add() {
	local n name
	for n in "$@"; do
		name=$E2E_PREFIX$n
		E2E_NS+=("$name")
		echo "$name" >>"$E2E_DIR/.ns"
		ip netns add "$name" || bail_out "cannot create namespace $name"
		ip -n "$name" link set lo up
		nsx "$n" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
		    net.ipv6.conf.all.forwarding=0 >/dev/null || bail_out "sysctl in $name"
	done
}

# veth NODE1 DEV1 NODE2 DEV2 "ADDR1..." "ADDR2...": a veth pair made
# directly inside the two namespaces (names only need to be unique there).
veth() {
	local n1=$1 d1=$2 n2=$3 d2=$4 a
	ip link add "$d1" netns "$E2E_PREFIX$n1" type veth peer name "$d2" netns "$E2E_PREFIX$n2" ||
	    bail_out "cannot create veth $n1:$d1 - $n2:$d2"
	for a in $5; do
		addr_add "$n1" "$d1" "$a"
	done
	for a in $6; do
		addr_add "$n2" "$d2" "$a"
	done
	ip -n "$E2E_PREFIX$n1" link set "$d1" up || bail_out "link up $d1"
	ip -n "$E2E_PREFIX$n2" link set "$d2" up || bail_out "link up $d2"
}

addr_add() {
	case $3 in
	*:*) ip -n "$E2E_PREFIX$1" -6 addr add "$3" dev "$2" nodad || bail_out "addr $3 on $1:$2";;
	*) ip -n "$E2E_PREFIX$1" addr add "$3" dev "$2" || bail_out "addr $3 on $1:$2";;
	esac
}

# link_segments NODE DEV...: the kernel cuts UDP GSO datagrams before they
# leave DEV, as on a NIC without UDP segmentation offload.  A veth passes
# them on whole, so a capture there would show 64 KB "datagrams" no real
# link carries; wire checks call this on the devices they capture.
link_segments() {
	local n=$1 d
	shift
	need_cmd ethtool
	for d in "$@"; do
		nsx "$n" ethtool -K "$d" tx-udp-segmentation off >/dev/null ||
		    bail_out "ethtool -K $d tx-udp-segmentation off in $n"
	done
}

# topo_ab: the usual two hosts on one veth (device ul0 on both sides).
topo_ab() {
	netns_add a b
	veth a ul0 b ul0 "10.200.0.1/24 fd20::1/64" "10.200.0.2/24 fd20::2/64"
}

# --- toud configuration -----------------------------------------------------

conf_file() { echo "$E2E_DIR/$1.conf"; }
sock_of() { echo "$E2E_DIR/$1.sock"; }

# keys_for NODE: with encryption = dtls, generate NODE's key pair once;
# $E2E_DIR/keys/NODE/fingerprint holds its "sha256:..." line.
keys_for() {
	local d=$E2E_DIR/keys/$1
	[ -f "$d/fingerprint" ] && return 0
	mkdir -p "$d"
	"$TOUCTL" genkey "$d" >"$d/fingerprint" 2>"$d/genkey.err" ||
	    bail_out "touctl genkey failed: $(cat "$d/genkey.err")"
	grep -q '^sha256:[0-9a-f]\{64\}$' "$d/fingerprint" ||
	    bail_out "touctl genkey printed '$(cat "$d/fingerprint")'"
}

# conf_interface NODE LISTEN ADDR/LEN...: start NODE's config file.
conf_interface() {
	local node=$1 listen=$2 f a
	shift 2
	f=$(conf_file "$node")
	{
		echo "# toud end-to-end test, node $node"
		echo "[interface]"
		echo "name = tou0"
		for a in "$@"; do
			echo "address = $a"
		done
		echo "listen = $listen"
		echo "encryption = $E2E_ENCRYPTION"
		echo "offload = $E2E_OFFLOAD"
		echo "threads = $E2E_THREADS"
		echo "control = $(sock_of "$node")"
		echo "log-level = $E2E_LOG_LEVEL"
	} >"$f"
	if [ "$E2E_ENCRYPTION" = dtls ]; then
		keys_for "$node"
		{
			echo "private-key = $E2E_DIR/keys/$node/key.pem"
			echo "certificate = $E2E_DIR/keys/$node/cert.pem"
		} >>"$f"
	fi
}

# conf_peer NODE PEER ENDPOINT "ADDR, ADDR" [ALLOWED-IPS]: add a [peer]
# section (PEER is also the name of that peer's node, for its key).
conf_peer() {
	local node=$1 peer=$2 ep=$3 addrs=$4 allowed=${5:-} f
	f=$(conf_file "$node")
	{
		echo
		echo "[peer $peer]"
		[ -n "$ep" ] && echo "endpoint = $ep"
		echo "address = $addrs"
		[ -n "$allowed" ] && echo "allowed-ips = $allowed"
		echo "keepalive = 0"
	} >>"$f"
	if [ "$E2E_ENCRYPTION" = dtls ]; then
		keys_for "$peer"
		echo "fingerprint = $(cat "$E2E_DIR/keys/$peer/fingerprint")" >>"$f"
	fi
}

# conf_ab OUTER: the usual configs of a and b, endpoints of family OUTER (4|6).
conf_ab() {
	local ea eb
	if [ "${1:-4}" = 6 ]; then
		ea="[fd20::1]:6080" eb="[fd20::2]:6080"
	else
		ea="10.200.0.1:6080" eb="10.200.0.2:6080"
	fi
	conf_interface a 6080 10.77.0.1/24 fd77::1/64
	conf_peer a b "$eb" "10.77.0.2, fd77::2"
	conf_interface b 6080 10.77.0.2/24 fd77::2/64
	conf_peer b a "$ea" "10.77.0.1, fd77::1"
}

# --- toud processes ---------------------------------------------------------

touctl_show() {
	"$TOUCTL" -s "$(sock_of "$1")" show "${@:2}"
}

# toud_start NODE: start toud in NODE's namespace with its config; wait
# until the control socket answers.  Returns 1 (with a diag) on failure.
toud_start() {
	local node=$1 log=$E2E_DIR/$1.log pid deadline dflag=
	[ "$E2E_LOG_LEVEL" = debug ] && dflag=-d
	rm -f "$(sock_of "$node")"
	echo "=== start $(date +%T.%N)" >>"$log"
	ip netns exec "$E2E_PREFIX$node" "$TOUD" -c "$(conf_file "$node")" $dflag \
	    </dev/null >>"$log" 2>&1 &
	pid=$!
	e2e_record "$pid"
	TOUD_PID[$node]=$pid
	# Generous: a start (and Python, for the helpers) can take seconds
	# on a crowded machine; a toud that fails exits, which ends the wait.
	deadline=$(e2e_deadline 30)
	while :; do
		if ! proc_alive "$pid"; then
			proc_wait "$pid" 1
			TOUD_RC[$node]=$PROC_RC
			unset 'TOUD_PID[$node]'
			diag "toud on $node exited with status $PROC_RC at start:"
			diag "$(tail -n 20 "$log")"
			return 1
		fi
		touctl_show "$node" >/dev/null 2>&1 && return 0
		if ! e2e_before "$deadline"; then
			diag "toud on $node: control socket did not answer in 30 s"
			return 1
		fi
		sleep 0.05
	done
}

# toud_stop NODE [SIGNAL]: stop NODE's toud; TOUD_RC[NODE] is its status.
toud_stop() {
	local node=$1 pid=${TOUD_PID[$1]:-} rc=0
	[ -n "$pid" ] || return 0
	echo "=== stop ${2:-TERM} $(date +%T.%N)" >>"$E2E_DIR/$node.log"
	proc_stop "$pid" "${2:-TERM}" 10 || rc=1
	TOUD_RC[$node]=$PROC_RC
	unset 'TOUD_PID[$node]'
	return $rc
}

toud_alive() {
	[ -n "${TOUD_PID[$1]:-}" ] && proc_alive "${TOUD_PID[$1]}"
}

# show_json NODE: touctl show --json of NODE's toud.  (The control socket is
# a path, so this needs no namespace; it runs in NODE's for good measure.)
show_json() {
	nsx "$1" "$TOUCTL" -s "$(sock_of "$1")" show --json
}

# json_get JSON PATH: a field by dotted path; a list of objects is indexed by
# their "name" ("peers.b.drops.source_not_allowed"); a drop or event counter
# that is absent reads as 0.  Strings print bare, null as "null".  The JSON
# goes in on standard input: with hundreds of peers it outgrows an argument.
json_get() {
	python3 -c '
import json, sys
cur = json.load(sys.stdin)
parts = sys.argv[1].split(".") if sys.argv[1] else []
for i, p in enumerate(parts):
    if isinstance(cur, list):
        m = [x for x in cur if isinstance(x, dict) and x.get("name") == p]
        if not m:
            sys.exit("json_get: no element named %r" % p)
        cur = m[0]
    elif isinstance(cur, dict):
        if p in cur:
            cur = cur[p]
        elif i > 0 and parts[i - 1] in ("drops", "events"):
            cur = 0
        else:
            sys.exit("json_get: no key %r" % p)
    else:
        sys.exit("json_get: %r is not an object" % p)
if cur is None:
    print("null")
elif isinstance(cur, bool):
    print("true" if cur else "false")
elif isinstance(cur, (dict, list)):
    print(json.dumps(cur, sort_keys=True))
else:
    print(cur)
' "$2" <<<"$1"
}

# tq NODE PATH: one field of NODE's live state.
tq() {
	local j
	j=$(show_json "$1") || { echo "touctl-failed"; return 1; }
	json_get "$j" "$2"
}

# jdelta BEFORE AFTER PATH: the increase of a numeric field ("error" and
# status 1 if it is missing or not a number in either).
jdelta() {
	local b a
	b=$(json_get "$1" "$3" 2>/dev/null) && a=$(json_get "$2" "$3" 2>/dev/null) &&
	    [[ "$b" =~ ^[0-9]+$ && "$a" =~ ^[0-9]+$ ]] || { echo error; return 1; }
	echo $((a - b))
}

# jdelta_data BEFORE AFTER PEER rx|tx: the increase of a peer's rx_packets
# (or tx_packets) less its keepalives received (sent), which a live peer
# exchanges on its own schedule: the packets that carried data.
jdelta_data() {
	local p k ka
	p=$(jdelta "$1" "$2" "$3.$4_packets") || { echo error; return 1; }
	if [ "$4" = rx ]; then k=keepalive_received; else k=keepalive_sent; fi
	# Zero counters are left out of the JSON: absent is 0.
	local b a
	b=$(json_get "$1" "$3.events.$k" 2>/dev/null) && [[ $b =~ ^[0-9]+$ ]] || b=0
	a=$(json_get "$2" "$3.events.$k" 2>/dev/null) && [[ $a =~ ^[0-9]+$ ]] || a=0
	echo $((p - (a - b)))
}

# no_chatter DROPS_JSON: the drops object less not_unicast, the kernel's own
# IPv6 chatter on the TUN (multicast listener reports, router
# solicitations at times of the kernel's choosing), which no test causes.
no_chatter() {
	python3 -c 'import json, sys; d = json.loads(sys.argv[1]); d.pop("not_unicast", None); print(json.dumps(d, sort_keys=True))' "$1"
}

# drops_delta BEFORE AFTER PATH: {reason: increase} of the drops object at
# PATH (e.g. "peers.b.drops"), nonzero entries only, as sorted JSON.
drops_delta() {
	python3 -c '
import json, sys
def get(doc, path):
    cur = doc
    for p in path.split("."):
        if isinstance(cur, list):
            cur = [x for x in cur if x.get("name") == p][0]
        else:
            cur = cur.get(p, {})
    return cur or {}
b = get(json.loads(sys.argv[1]), sys.argv[3])
a = get(json.loads(sys.argv[2]), sys.argv[3])
d = {k: a.get(k, 0) - b.get(k, 0) for k in set(a) | set(b)}
print(json.dumps({k: v for k, v in d.items() if v}, sort_keys=True))
' "$1" "$2" "$3"
}

# wait_delta SECONDS NODE BEFORE PATH WANT: wait until the numeric field
# PATH of NODE's live state has grown by at least WANT since the JSON
# BEFORE: the daemon has processed what the test sent.  WAIT_DELTA is the
# last increase seen, WAIT_JSON the show it was read from.
wait_delta() {
	local deadline
	deadline=$(e2e_deadline "$1")
	WAIT_DELTA=error WAIT_JSON=
	while :; do
		if WAIT_JSON=$(show_json "$2") && WAIT_DELTA=$(jdelta "$3" "$WAIT_JSON" "$4") &&
		    [ "$WAIT_DELTA" -ge "$5" ]; then
			return 0
		fi
		e2e_before "$deadline" || return 1
		sleep 0.1
	done
}

# --- applications -----------------------------------------------------------

# bg_start NODE LOG CMD...: a background command in NODE's namespace.
# BG_PID is its pid.
bg_start() {
	local node=$1 log=$2
	shift 2
	ip netns exec "$E2E_PREFIX$node" "$@" </dev/null >>"$log" 2>&1 &
	BG_PID=$!
	e2e_record "$BG_PID"
}

# port_listening NODE PROTO PORT
port_listening() {
	[ -n "$(nsx "$1" ss -H -l "-$2" -n "sport = :$3" 2>/dev/null)" ]
}

# http_serve NODE BIND PORT DIR: python's http.server; HTTP_PID.
# shellcheck disable=SC2034
http_serve() {
	bg_start "$1" "$E2E_DIR/http-$1-$3.log" \
	    python3 -m http.server --bind "$2" --directory "$4" "$3"
	HTTP_PID=$BG_PID
	wait_for 60 port_listening "$1" t "$3" ||
	    bail_out "http server on $1 $2:$3 did not start: $(cat "$E2E_DIR/http-$1-$3.log")"
}

# http_get NODE URL OUT: fetch with curl (never through a proxy).
http_get() {
	nsx "$1" curl -sS --noproxy '*' --max-time 120 -o "$3" "$2"
}

# make_file PATH KIB: random content.
make_file() {
	head -c "$(($2 * 1024))" /dev/urandom >"$1"
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# fetch_check NODE URL SRC DESC: curl URL in NODE, compare with SRC's sha256.
fetch_check() {
	local out=$E2E_DIR/fetch.$T_N.out err
	rm -f "$out"
	if ! err=$(http_get "$1" "$2" "$out" 2>&1); then
		not_ok "$4" "curl $2: $err"
		return 1
	fi
	is "$(sha "$out")" "$(sha "$3")" "$4 (sha256 $(sha "$3" | cut -c1-16)..., $(stat -c %s "$out") bytes)"
	local rc=$?
	rm -f "$out"
	return $rc
}

# ping_all NODE ADDR COUNT: every echo answered, one after the other, each
# within 2 s.  (One ping -c COUNT would not do: once some replies are in,
# ping waits only twice the round trip for the rest, so on a crowded
# machine a late reply counts as lost.)
ping_all() {
	local i out
	for ((i = 1; i <= $3; i++)); do
		out=$(nsx "$1" ping -n -q -c 1 -W 2 "$2" 2>&1) || {
			echo "echo $i of $3 unanswered within 2 s: $out"
			return 1
		}
	done
}

# ping_check NODE ADDR [DESC]: wait up to 10 s for a first answer (routes,
# neighbour entries), then 5 pings in a row must all be answered.
ping_check() {
	wait_for 10 nsx "$1" ping -n -q -c 1 -W 1 "$2"
	check "${3:-ping $2 from $1}" ping_all "$1" "$2" 5 && return 0
	local n
	for n in "${!TOUD_PID[@]}"; do
		toud_alive "$n" || diag "toud on $n (pid ${TOUD_PID[$n]}) is not running"
	done
	diag "$1's tou0 and routes:"
	diag "$(nsx "$1" ip -o addr show dev tou0 2>&1; nsx "$1" ip route; nsx "$1" ip -6 route)"
	return 1
}

# capture_start NODE DEV NAME [FILTER...]: tcpdump in the background;
# CAP is the file, CAP_PID the process.  -p: a device going promiscuous is a
# link change, which makes toud send keepalives; -s 2048: with
# --immediate-mode the ring has one slot per snapshot length, so a small
# one keeps many slots in the 8 MiB.
capture_start() {
	local node=$1 dev=$2 name=$3
	shift 3
	CAP=$E2E_DIR/$name.pcap
	bg_start "$node" "$E2E_DIR/tcpdump-$name.log" tcpdump -i "$dev" -p -n -s 2048 -B 8192 \
	    --immediate-mode -U -w "$CAP" "$@"
	CAP_PID=$BG_PID
	wait_for 30 grep -q "listening on" "$E2E_DIR/tcpdump-$name.log" ||
	    bail_out "tcpdump did not start: $(cat "$E2E_DIR/tcpdump-$name.log")"
}

# capture_stop NAME: stop tcpdump; CAP_DROPPED is what it lost.
capture_stop() {
	pcap_settle "$CAP" || diag "the capture kept growing"
	proc_stop "$CAP_PID" INT 5
	CAP_DROPPED=$(sed -n 's/^\([0-9]*\) packets* dropped by kernel$/\1/p' \
	    "$E2E_DIR/tcpdump-$1.log")
	[ -n "$CAP_DROPPED" ] || CAP_DROPPED=unknown
}

# pcap_settle PCAP [SECONDS]: wait until a running capture has written what
# it got: the file's size is the same in two looks 0.5 s apart (within
# SECONDS, default 30).  Call it after the traffic ends, before stopping
# tcpdump.
pcap_settle() {
	local deadline prev=-1 cur
	deadline=$(e2e_deadline "${2:-30}")
	while :; do
		cur=$(stat -c %s "$1" 2>/dev/null || echo 0)
		[ "$cur" = "$prev" ] && return 0
		e2e_before "$deadline" || return 1
		prev=$cur
		sleep 0.5
	done
}

# client_hellos PCAP: a line for each TLS ClientHello in PCAP (tshark takes
# port 443 for TLS): the server name it carries, or "-", and the versions
# it offers.
client_hellos() {
	tshark -r "$1" -n -Y 'tls.handshake.type == 1' -T fields \
	    -e tls.handshake.extensions_server_name -e tls.handshake.extensions.supported_version \
	    2>/dev/null | awk -F'\t' '{ print ($1 == "" ? "-" : $1), $2 }'
}

# show_settled NODE [SECONDS]: NODE's touctl show --json once its counters
# (packets, bytes, drops, events) have stopped moving: two reads 0.3 s apart
# agree.  A test that compares counters with a capture reads them at such a
# quiescent point, after its own traffic has stopped, so both cover the same
# packets.  Fails after SECONDS (default 30: a crowded machine reads
# slowly) without a quiet moment.
show_settled() {
	local deadline prev='' cur j
	deadline=$(e2e_deadline "${2:-30}")
	while :; do
		j=$(show_json "$1") || return 1
		cur=$(python3 -c '
import json, sys
def walk(path, v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(path + "." + k, x, out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk(path + "." + str(x.get("name", i) if isinstance(x, dict) else i), x, out)
    elif isinstance(v, int) and not isinstance(v, bool) and any(
            w in path for w in ("drops", "events", "_packets", "_bytes")):
        out.append("%s=%d" % (path, v))
out = []
walk("", json.loads(sys.argv[1]), out)
print(" ".join(sorted(out)))' "$j") || return 1
		if [ -n "$prev" ] && [ "$cur" = "$prev" ]; then
			printf '%s\n' "$j"
			return 0
		fi
		e2e_before "$deadline" || return 1
		prev=$cur
		sleep 0.3
	done
}
