#!/bin/bash
# soak.sh - hours of roaming, reloads, restarts and a bad path, to show that
# toud's memory, descriptors and sessions stay flat and no byte is lost.
# Not part of `make check` or CI (it runs for as long as it is told); needs
# root, a build (make check builds tests/e2e/nfq-delay), curl, nft,
# conntrack and iptables (scripts/deps.sh installs them all).
#
#   tests/soak/soak.sh DURATION [CSV]     DURATION: seconds, or 30m, 2h
#
# Three peers in namespaces, the topology of tests/e2e/lib-router.sh: a hub
# s (never restarted) and two road warriors, c behind a NAT and x on a
# network of its own, both with s as their only peer:
#
#   c ul0 10.201.0.2 --- rc0 r rs0 --- ul0 s 10.201.1.2      tunnel 10.77.0.0/24:
#                            rx0 --- ul0 x 10.201.2.2          c .1, s .2, x .3
#
# The router drops 5 % of the tunnel's datagrams (nftables) and holds every
# 10th one 15 ms longer than the rest, which reorders them (NFQUEUE and
# nfq-delay: the kernel here has no netem); it limits each client's downlink
# to 20 Mbit/s so the run leaves the machine's CPUs to others.  Over that:
#   - every 10 s a reload of s, which changes peer x's keepalive (so the
#     peer is reconfigured), and alternately a reload of c or x;
#   - every 30 s the NAT gives c a new mapping (port, sometimes address)
#     and forgets the old one;
#   - every 2 min x moves to a new address on its network;
#   - every 3 min c or x (in turn) is stopped and started again;
#   - all along, each client downloads a 4 MiB file from s through the
#     tunnel, again and again, and checks it by sha256.
# Every 10 s a line goes to the CSV: per toud its pid, RSS (KiB), open
# descriptors, peers up, sessions, half-open handshakes, packets and drops.
#
# It fails (exit 1) on a download that completes with a different checksum,
# on a toud that dies, on a peer that is not up again within 2 minutes (or a
# client with no good download for 10 minutes), and on a leak: s's RSS at
# the end (median of the last three samples) above the highest of the
# second half of the warm-up (the first quarter of the run, at least two
# minutes) by more than 10 % or 2 MiB, or its descriptors above that
# half's highest count.  A download cut by a restart or a stalled TCP
# connection is counted, not failed: the fault is the point.
#
# TOUD and TOUCTL name the binaries (default: _build/src/...), TOUD_NFQ_DELAY
# the delay helper; TOUD_E2E_KEEP=1 keeps the logs.  Output is TAP.
SOAK_DIR=$(cd "$(dirname "$0")" && pwd)
export TOUD_E2E_LOG_LEVEL=${TOUD_E2E_LOG_LEVEL:-info}
. "$SOAK_DIR/../e2e/lib.sh"
. "$SOAK_DIR/../e2e/lib-router.sh"
: "${TOUD_NFQ_DELAY:=$(dirname "$TOUD")/../tests/e2e/nfq-delay}"

case ${1:-} in
*[0-9]h) DURATION=$((${1%h} * 3600));;
*[0-9]m) DURATION=$((${1%m} * 60));;
*[0-9]s) DURATION=${1%s};;
[0-9]*) DURATION=$1;;
*) echo "usage: $0 DURATION [CSV]   (seconds, or 30m, 2h)" >&2; exit 2;;
esac
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 60 ] ||
    { echo "$0: DURATION must be at least 60 s" >&2; exit 2; }
CSV=${2:-$PWD/soak-$(date -u +%Y%m%dT%H%M%SZ).csv}
WARMUP=$((DURATION / 4 > 120 ? DURATION / 4 : 120))
PEER_DEADLINE=120        # a peer must be up again this soon after it went
STALL_DEADLINE=600       # each client completes a good download this often
FILE_KIB=4096

need_root
need_cmd curl nft conntrack iptables
TOUD_NFQ_DELAY=$(cd "$(dirname "$TOUD_NFQ_DELAY")" && pwd)/$(basename "$TOUD_NFQ_DELAY")

X_NET=10.201.2
X_HOST=2                 # x's address is $X_NET.$X_HOST

# --- topology, configs, daemons ---------------------------------------------
rt_topo
rt_topo_x
rt_sysctl x net.ipv4.conf.ul0.promote_secondaries=1
nsx r ip addr add 10.201.1.11/24 dev rs0 || bail_out "cannot add 10.201.1.11 to r"
rt_nat 10.201.1.1:40000

conf_interface s "$RT_PORT" 10.77.0.2/24
rt_conf_peer s c "" 10.77.0.1 0
rt_conf_peer s x "" 10.77.0.3 0
conf_interface c "$RT_PORT" 10.77.0.1/24
rt_conf_peer c s "$RT_S_UL:$RT_PORT" 10.77.0.2 5
conf_interface x "$RT_PORT" 10.77.0.3/24
rt_conf_peer x s "$RT_S_UL:$RT_PORT" 10.77.0.2 5
for n in s c x; do
	toud_start "$n" || bail_out "toud on $n did not start"
done
wait_for 30 nsx c ping -n -q -c 1 -W 1 10.77.0.2 || bail_out "c cannot reach s through the tunnel"
wait_for 30 nsx x ping -n -q -c 1 -W 1 10.77.0.2 || bail_out "x cannot reach s through the tunnel"

rt_loss 5
rt_nfq_start 1 10 15
rt_rate rc0 20
rt_rate rx0 20
rt_serve_file s 10.77.0.2 8080 $((FILE_KIB / 1024))
SRC_SHA=$(sha "$RT_FILE")

# --- the downloads ----------------------------------------------------------
# One loop per client, in its namespace: fetch, compare, one line per
# download to $E2E_DIR/dl-NODE.txt: "EPOCH ok|corrupt|cut CURL-RC BYTES".
cat >"$E2E_DIR/dl.sh" <<'EOF'
url=$1 want=$2 out=$3 res=$4 cpid=
trap '[ -n "$cpid" ] && kill "$cpid" 2>/dev/null; exit 0' TERM
while :; do
	rm -f "$out"
	curl -sS --noproxy '*' --max-time 300 -o "$out" "$url" 2>>"$res.err" &
	cpid=$!
	wait "$cpid"
	rc=$?
	cpid=
	size=$(stat -c %s "$out" 2>/dev/null || echo 0)
	if [ "$rc" != 0 ]; then
		echo "$(date +%s) cut $rc $size" >>"$res"
		sleep 1
	elif [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$want" ]; then
		echo "$(date +%s) ok 0 $size" >>"$res"
	else
		cp "$out" "$out.corrupt.$(date +%s)"
		echo "$(date +%s) corrupt 0 $size" >>"$res"
	fi
done
EOF
declare -A DL_PID=()
for n in c x; do
	: >"$E2E_DIR/dl-$n.txt"
	bg_start "$n" "$E2E_DIR/dl-$n.log" bash "$E2E_DIR/dl.sh" "http://10.77.0.2:8080/big" \
	    "$SRC_SHA" "$E2E_DIR/dl-$n.out" "$E2E_DIR/dl-$n.txt"
	DL_PID[$n]=$BG_PID
done

# --- sampling ---------------------------------------------------------------
# One Python process samples every 10 s on its own clock (a Python start
# can take seconds on a crowded machine; the fault schedule must not wait
# for it).  It reads the touds' pids from $E2E_DIR/pids, appends a CSV line
# and writes the peers' states to $E2E_DIR/state: "T S->C S->X C->S X->S".
cat >"$E2E_DIR/sampler.py" <<'EOF'
import json, os, subprocess, sys, time
touctl, d, csv_path, t0 = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
NODES = ("s", "c", "x")

def count(node, word):
    try:
        with open("%s/dl-%s.txt" % (d, node)) as f:
            return sum(1 for l in f if l.split()[1:2] == [word])
    except OSError:
        return 0

def node_row(node, pid):
    rss = fds = up = sess = half = rx = tx = drops = ""
    states = {}
    try:
        with open("/proc/%s/status" % pid) as f:
            rss = [l.split()[1] for l in f if l.startswith("VmRSS:")][0]
        fds = str(len(os.listdir("/proc/%s/fd" % pid)))
        j = json.loads(subprocess.run([touctl, "-s", "%s/%s.sock" % (d, node), "show", "--json"],
                                      capture_output=True, timeout=10).stdout)
        peers = j["peers"]
        states = {p["name"]: p["state"] for p in peers}
        up = str(sum(p["state"] == "up" for p in peers))
        sess = str(j["interface"]["sessions"])
        half = str(j["interface"]["half_open"])
        rx = str(sum(p.get("rx_packets", 0) for p in peers))
        tx = str(sum(p.get("tx_packets", 0) for p in peers))
        drops = str(sum(v for x in [j["interface"]] + peers
                        for v in x.get("drops", {}).values() if isinstance(v, int)))
    except Exception as e:
        print("%.0f sample %s (pid %s): %s" % (time.time() - t0, node, pid, e), file=sys.stderr,
              flush=True)
    return [pid, rss, fds, up, sess, half, rx, tx, drops], states

n = 0
while not os.path.exists(d + "/stop"):
    t = int(time.time() - t0)
    pids = dict.fromkeys(NODES, "0")
    try:
        with open(d + "/pids") as f:
            pids.update(l.split() for l in f if len(l.split()) == 2)
    except OSError:
        pass
    row, st = [str(t)], {}
    for node in NODES:
        r, st[node] = node_row(node, pids[node])
        row += r
    cut = count("c", "cut") + count("x", "cut")
    bad = count("c", "corrupt") + count("x", "corrupt")
    row += [str(count("c", "ok")), str(count("x", "ok")), str(cut), str(bad)]
    with open(csv_path, "a") as f:
        f.write(",".join(row) + "\n")
    with open(d + "/state.new", "w") as f:
        f.write("%d %s %s %s %s\n" % (t, st["s"].get("c", "-"), st["s"].get("x", "-"),
                                     st["c"].get("s", "-"), st["x"].get("s", "-")))
    os.rename(d + "/state.new", d + "/state")
    n += 1
    time.sleep(max(0.0, t0 + 10 * n - time.time()))
EOF
cols=t_s
for n in s c x; do
	cols="$cols,${n}_pid,${n}_rss_kib,${n}_fds,${n}_peers_up,${n}_sessions,${n}_half_open,${n}_rx_packets,${n}_tx_packets,${n}_drops"
done
echo "$cols,c_downloads_ok,x_downloads_ok,downloads_cut,downloads_corrupt" >"$CSV"
write_pids() {
	local n
	for n in s c x; do
		echo "$n ${TOUD_PID[$n]:-0}"
	done >"$E2E_DIR/pids.new"
	mv "$E2E_DIR/pids.new" "$E2E_DIR/pids"
}

count() { grep -c " $2 " "$E2E_DIR/dl-$1.txt"; }
declare -A LAST_UP=() LAST_OK=()
FAILED=0
fail() {
	not_ok "$1" "${2:-}"
	FAILED=1
}

# check_alive T: every toud runs, every peer is up or was recently (as the
# sampler last saw it), every client downloads, no corrupt byte.
check_alive() {
	local t=$1 n p ts sc sx cs xs
	for n in s c x; do
		toud_alive "$n" || { fail "toud on $n is running at ${t}s"; return 1; }
	done
	read -r ts sc sx cs xs <"$E2E_DIR/state" 2>/dev/null || ts=
	if [ -n "$ts" ]; then
		[ "$sc" = up ] && LAST_UP[sc]=$ts
		[ "$sx" = up ] && LAST_UP[sx]=$ts
		[ "$cs" = up ] && LAST_UP[cs]=$ts
		[ "$xs" = up ] && LAST_UP[xs]=$ts
	fi
	for p in c x; do
		[ $((t - ${LAST_UP[s$p]:-0})) -le $PEER_DEADLINE ] ||
		    { fail "s's peer $p is up again within ${PEER_DEADLINE}s (at ${t}s)" "$(show_json s)"; return 1; }
		[ $((t - ${LAST_UP[${p}s]:-0})) -le $PEER_DEADLINE ] ||
		    { fail "$p's peer s is up again within ${PEER_DEADLINE}s (at ${t}s)" "$(show_json "$p")"; return 1; }
		[ "$(count "$p" ok)" -gt "${LAST_OK[n$p]:-0}" ] && { LAST_OK[n$p]=$(count "$p" ok); LAST_OK[t$p]=$t; }
		[ $((t - ${LAST_OK[t$p]:-0})) -le $STALL_DEADLINE ] ||
		    { fail "$p completes a good download every ${STALL_DEADLINE}s (at ${t}s)" "$(tail -n 5 "$E2E_DIR/dl-$p.txt")"; return 1; }
		[ "$(count "$p" corrupt)" = 0 ] ||
		    { fail "no corrupt download on $p (at ${t}s)" "$(grep corrupt "$E2E_DIR/dl-$p.txt")"; return 1; }
	done
	proc_alive "$NFQ_PID" || { fail "nfq-delay is running at ${t}s"; return 1; }
	proc_alive "$SAMPLER_PID" || { fail "the sampler is running at ${t}s" "$(tail -n 5 "$E2E_DIR/sampler.log")"; return 1; }
}

# --- the faults -------------------------------------------------------------
reload() {
	local out
	out=$("$TOUCTL" -s "$(sock_of "$1")" reload 2>&1) || diag "reload of $1 at ${2}s: $out"
}
# s's peer x: keepalive 0 <-> 1, so each reload of s reconfigures a peer.
toggle_keepalive() {
	awk '/^\[peer x\]/ { x = 1 } /^\[/ && !/^\[peer x\]/ { x = 0 }
	    x && /^keepalive = / { $0 = "keepalive = " ($3 == "0" ? 1 : 0) } { print }' \
	    "$(conf_file s)" >"$E2E_DIR/s.conf.new" && mv "$E2E_DIR/s.conf.new" "$(conf_file s)"
}
NAT_N=0
nat_rebind() {
	local addr=10.201.1.1
	NAT_N=$((NAT_N + 1))
	[ $((NAT_N % 3)) = 0 ] && addr=10.201.1.11
	rt_nat_rebind "$addr:$((40000 + NAT_N % 1000))"
}
x_move() {
	local old=$X_NET.$X_HOST
	X_HOST=$((X_HOST % 8 + 2))
	nsx x ip addr add "$X_NET.$X_HOST/24" dev ul0 || diag "cannot add $X_NET.$X_HOST to x"
	nsx x ip addr del "$old/24" dev ul0 || diag "cannot remove $old from x"
	nsx x ip route replace default via "$X_NET.1" || diag "default route in x"
}
RESTART_N=0
restart_one() {
	local n=c
	RESTART_N=$((RESTART_N + 1))
	[ $((RESTART_N % 2)) = 0 ] && n=x
	toud_stop "$n" || diag "toud on $n did not stop on SIGTERM in 10 s"
	[ "${TOUD_RC[$n]}" = 0 ] || fail "toud on $n exits 0 on SIGTERM (at ${1}s)" "status ${TOUD_RC[$n]}"
	toud_start "$n" || fail "toud on $n starts again (at ${1}s)"
	write_pids
}

diag "soak: ${DURATION}s (warm-up ${WARMUP}s), CSV $CSV"
write_pids
START=$SECONDS
bg_start s "$E2E_DIR/sampler.log" python3 "$E2E_DIR/sampler.py" "$TOUCTL" "$E2E_DIR" "$CSV" \
    "$EPOCHREALTIME"
SAMPLER_PID=$BG_PID
next_sample=10 next_nat=30 next_move=120 next_restart=180 reloads=0
while :; do
	t=$((SECONDS - START))
	[ "$t" -ge "$DURATION" ] && break
	if [ "$t" -ge "$next_sample" ]; then
		next_sample=$((next_sample + 10))
		check_alive "$t" || break
		toggle_keepalive
		reload s "$t"
		reloads=$((reloads + 1))
		if [ $((reloads % 2)) = 0 ]; then
			reload c "$t"
		else
			reload x "$t"
		fi
	fi
	if [ "$t" -ge "$next_nat" ]; then
		next_nat=$((next_nat + 30))
		nat_rebind
	fi
	if [ "$t" -ge "$next_move" ]; then
		next_move=$((next_move + 120))
		x_move
	fi
	if [ "$t" -ge "$next_restart" ]; then
		next_restart=$((next_restart + 180))
		restart_one "$t"
	fi
	sleep 1
done
# The sampler's last line, then it stops.
sleep 10
touch "$E2E_DIR/stop"
proc_wait "$SAMPLER_PID" 60 || diag "the sampler did not stop"

# --- the verdict ------------------------------------------------------------
peers_up() {
	[ "$(tq s peers.c.state)/$(tq s peers.x.state)" = up/up ]
}
if [ "$FAILED" = 0 ]; then
	ok "no toud died, every peer came back within ${PEER_DEADLINE}s, the clients kept downloading"
	# The faults stop: the peers settle.
	rt_nfq_stop
	if wait_for 120 peers_up; then
		ok "after the last fault both peers are up at s"
	else
		fail "after the last fault both peers are up at s" "$(show_json s)"
	fi
fi
for n in c x; do
	proc_stop "${DL_PID[$n]}" TERM 5
done
is "$(($(count c corrupt) + $(count x corrupt)))" 0 \
    "no corrupt download: $(count c ok) + $(count x ok) good, $(($(count c cut) + $(count x cut))) cut by the faults"
leak=$(python3 - "$CSV" "$WARMUP" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["s_rss_kib"] and r["s_fds"]]
warm = int(sys.argv[2])
half = [r for r in rows if warm / 2 <= int(r["t_s"]) <= warm]
if not half or int(rows[-1]["t_s"]) <= warm:
    print("skip run too short for a leak check")
    sys.exit()
first = rows[0]
rss_base = max(int(r["s_rss_kib"]) for r in half)
fds_base = max(int(r["s_fds"]) for r in half)
rss_end = statistics.median(int(r["s_rss_kib"]) for r in rows[-3:])
fds_end = max(int(r["s_fds"]) for r in rows[-3:])
verdict = "ok" if rss_end <= max(rss_base * 1.1, rss_base + 2048) and fds_end <= fds_base else "leak"
print("%s s: RSS %s KiB at start, %d at warm-up, %d at the end; fds %s, %d, %d"
      % (verdict, first["s_rss_kib"], rss_base, rss_end, first["s_fds"], fds_base, fds_end))
EOF
)
case $leak in
ok*) ok "no leak: ${leak#ok }";;
skip*) diag "${leak#skip }";;
*) fail "no leak" "${leak#leak }";;
esac
diag "CSV: $CSV"
done_testing
