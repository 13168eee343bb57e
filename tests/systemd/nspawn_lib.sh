# nspawn_lib.sh - what the container tests (nspawn.sh: the README's source
# installation, package.sh: its Debian package) share; sourced by bash.
# Two systemd-nspawn containers boot one Debian 12 root file system
# (rootfs.sh), each in a network namespace of its own, joined by a veth
# "ul0" (the underlay); host tools reach the daemons' TUN devices with
# `ip netns exec`.  The caller sets NODES, UL (NODE -> underlay address),
# TUN4/TUN6 (NODE -> tunnel addresses) and the globals below, and calls
# start_work before anything that needs a clean-up.
#
# Everything carries the per-run prefix "ts<PID>-"; the EXIT trap powers the
# containers off, deletes the namespaces and the work directory (the
# containers' writes went to a --volatile=overlay tmpfs and vanish with them).

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=${TOUD_SRCDIR:-$(cd "$here/../.." && pwd)}
PREFIX="ts$$-"
T0=${EPOCHREALTIME/./}
WORK=
declare -A NSPAWN_PID=() LEADER=() FPR=()
NSS=()
BGPIDS=()

# --- TAP ----------------------------------------------------------------------

. "$here/tap.sh"
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
# cmp_ok GOT OP WANT DESC: ok when [ GOT OP WANT ] holds.
cmp_ok() {
	if [ "$1" "$2" "$3" ]; then ok "$4"; else not_ok "$4" "got '$1', want $2 '$3'"; return 1; fi
}
bail_out() { echo "Bail out! $*"; exit 1; }
skip_or_fail() {
	[ "${CI:-}" = true ] && bail_out "$* (CI=true: this stage must run)"
	echo "1..0 # SKIP $*"
	exit "${TOUD_E2E_SKIP_STATUS:-77}"
}

# need_commands CMD...: root, /dev/net/tun and every CMD, or skip (fail in CI).
need_commands() {
	local c
	[ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
		    skip_or_fail "missing command: $c (scripts/deps.sh)"
	done
	[ -c /dev/net/tun ] || skip_or_fail "needs /dev/net/tun"
	[ -f "$srcdir/README" ] || bail_out "no README in $srcdir"
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

# start_work NAME: the work directory /var/tmp/NAME.XXXXXX, and the traps.
start_work() {
	WORK=$(mktemp -d "/var/tmp/$1.XXXXXX") || bail_out "mktemp"
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
	diag "namespaces and machines: ${PREFIX}*, files: $WORK"
}

# --- the README and the source tree ---------------------------------------------

# readme_block LINE: the first indented block after the line LINE of
# README's "Installing" section, one command a line (trailing '#' comments
# dropped).
readme_block() {
	awk -v start="$1" '
		/^Installing$/ { sect = 1; next }
		sect && $0 == start { found = 1; next }
		found && /^    [^ ]/ { inblock = 1; sub(/^    /, ""); sub(/[ \t]+#.*$/, ""); print; next }
		inblock { exit }
	' "$srcdir/README"
}

# readme_steps LINE FIRST: the block after LINE (readme_block) split into
# BUILD, the lines before the first that matches the pattern FIRST (but
# `apt-get update` and `apt-get build-dep` unless README_BUILD_DEP=1: a
# build on the host has its lists and the dependencies, dpkg-buildpackage
# checks them itself), and INSTALL, from it on; EDIT is the index of
# INSTALL's `editor` line.
readme_steps() {
	local l i steps
	mapfile -t steps < <(readme_block "$1")
	[ ${#steps[@]} -ge 5 ] || bail_out "no block after '$1' in README's Installing section"
	BUILD=()
	INSTALL=()
	for l in "${steps[@]}"; do
		if [ ${#INSTALL[@]} -gt 0 ] || [[ $l == $2 ]]; then
			INSTALL+=("$l")
		elif [[ $l != "apt-get build-dep "* && $l != "apt-get update" ]] ||
		    [ "${README_BUILD_DEP:-0}" = 1 ]; then
			BUILD+=("$l")
		fi
	done
	[ ${#INSTALL[@]} -gt 0 ] || bail_out "README's block after '$1' has no '$2'"
	diag "README build steps:   $(printf '%s; ' "${BUILD[@]}")"
	diag "README install steps: $(printf '%s; ' "${INSTALL[@]}")"
	EDIT=-1
	for i in "${!INSTALL[@]}"; do
		[[ ${INSTALL[i]} == "editor "* ]] && { EDIT=$i; break; }
	done
	[ "$EDIT" -ge 0 ] || bail_out "README's block after '$1' has no editor step"
}

# run_build_steps DIR [VAR=VALUE...]: BUILD's lines on the host, in DIR,
# with VAR=VALUE in the environment; their output goes to build.log.
run_build_steps() {
	local dir=$1 l
	shift
	for l in "${BUILD[@]}"; do
		if ! (cd "$dir" && env "$@" sh -ec "$l") >>"$WORK/build.log" 2>&1; then
			bail_out "README build step '$l' failed: $(tail -n 15 "$WORK/build.log")"
		fi
	done
}

# copy_tree DEST: the source tree into DEST; a git checkout by `git
# ls-files` (uncommitted changes included), another tree whole.
copy_tree() {
	mkdir -p "$1"
	if git -C "$srcdir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$srcdir" && git ls-files -z --cached --others --exclude-standard |
		    xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done; exit 0' sh |
		    tar --null -T - -cf -) | tar -C "$1" -xf - || bail_out "cannot copy the source tree"
	else
		tar -C "$srcdir" --exclude='./_build*' -cf - . | tar -C "$1" -xf - ||
		    bail_out "cannot copy the source tree"
	fi
}

# --- root file system, network, containers ------------------------------------------

# make_rootfs: $WORK/rootfs, from rootfs.sh's cache when it has one.
make_rootfs() {
	stamp "root file system"
	if ! "$here/rootfs.sh" "$WORK/rootfs" 2>"$WORK/rootfs.log"; then
		cat "$WORK/rootfs.log" >&2
		bail_out "no root file system"
	fi
	ok "root file system ready in $(elapsed) s ($(tail -n 1 "$WORK/rootfs.log" | sed 's/^rootfs: //'))"
}

# make_underlay: a namespace per node, and the veth ul0 between a and b.
make_underlay() {
	local n ns
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
}

# boot NODE [NSPAWN-ARGS...]: boot NODE's container in its namespace, with
# the test's `editor` directory $WORK/edit-NODE at /opt/toud-test.
boot() {
	local n=$1 out secs
	shift
	out=$(python3 "$here/nspawn_boot.py" "$WORK/nspawn-$n.log" 60 -- \
	    systemd-nspawn --quiet --boot --directory="$WORK/rootfs" --machine="$PREFIX$n" \
	    --keep-unit --register=no --notify-ready=yes --volatile=overlay \
	    --network-namespace-path="/run/netns/$PREFIX$n" --capability=CAP_NET_ADMIN \
	    --bind-ro="$WORK/edit-$n:/opt/toud-test" "$@" \
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

# make_editor NODE: the test's `editor` for NODE (in $WORK/edit-NODE, bound
# at /opt/toud-test by boot, linked as /usr/local/bin/editor by
# link_editor): it sets this node's addresses in [interface] and adds the
# peer section write_peer_conf leaves in peer.conf.
make_editor() {
	local n=$1
	mkdir -p "$WORK/edit-$n"
	{
		echo '#!/bin/sh'
		echo 'set -e'
		echo "sed -i -e 's|^address *=.*|address     = ${TUN4[$n]}/24\\naddress     = ${TUN6[$n]}/64|' \"\$1\""
		echo 'cat /opt/toud-test/peer.conf >>"$1"'
	} >"$WORK/edit-$n/editor"
	chmod 0755 "$WORK/edit-$n/editor"
}
link_editor() { cx "$1" ln -s /opt/toud-test/editor /usr/local/bin/editor || bail_out "no editor in $1"; }

# other NODE: the other node of the two.
other() { [ "$1" = a ] && echo b || echo a; }

# write_peer_conf: each node's peer.conf, the other node as [peer NAME]
# (its fingerprint from FPR, which genkey's output filled).
write_peer_conf() {
	local n p
	for n in "${NODES[@]}"; do
		p=$(other "$n")
		printf '\n[peer %s]\nendpoint    = %s:6080\naddress     = %s, %s\nfingerprint = %s\n' \
		    "$p" "${UL[$p]}" "${TUN4[$p]}" "${TUN6[$p]}" "${FPR[$p]}" >"$WORK/edit-$n/peer.conf"
	done
}

# run_step NODE STEP: one README line inside NODE, in the source tree $SRC
# (the test's before_step NODE STEP first, where it has one); the output in
# STEP_OUT, genkey's fingerprint in FPR[NODE].
run_step() {
	local n=$1 step=$2
	declare -F before_step >/dev/null && before_step "$n" "$step"
	if STEP_OUT=$(cx "$n" sh -ec "cd '$SRC' && $step" 2>&1); then
		ok "$n: README step '$step'"
		[[ $step == "touctl genkey "* ]] && FPR[$n]=$(tail -n 1 <<<"$STEP_OUT")
		return 0
	fi
	not_ok "$n: README step '$step'" "$STEP_OUT
$(journal "$n" -n 20)"
	return 1
}

journal() { cx "$1" journalctl -u toud.service -o cat --no-pager "${@:2}" 2>&1; }
prop() { cx "$1" systemctl show -P "$2" toud.service 2>&1; }

# peer_state NODE PEER [TOUCTL-OPTION...]: the peer's state in touctl show --json.
peer_state() {
	local n=$1 peer=$2
	shift 2
	cx "$n" touctl "$@" show --json 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("no answer"); sys.exit(0)
print(next((p["state"] for p in d["peers"] if p["name"] == sys.argv[1]), "absent"))' "$peer" 2>&1
}

ping_ok() { ip netns exec "$PREFIX$1" ping -n -q -c 1 -W 1 "$2" >/dev/null 2>&1; }
wait_ping() {           # wait_ping NODE ADDR SECONDS
	local i
	for ((i = 0; i < $3; i++)); do
		ping_ok "$1" "$2" && return 0
	done
	return 1
}

# power_off_all: every container, cleanly (a test's last step).
power_off_all() {
	local n
	stamp "power off"
	for n in "${NODES[@]}"; do
		if poweroff "$n"; then
			ok "container $n powers off"
		else
			not_ok "container $n powers off in 20 s"
		fi
		unset 'NSPAWN_PID[$n]'
	done
}
