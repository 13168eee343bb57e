#!/bin/bash
# t20-privdrop: `user = nobody`.  After start-up a's toud runs as nobody
# with no capability but CAP_NET_ADMIN (effective and permitted; nothing
# else in the bounding set) and no_new_privs, in every thread.  It still
# does everything that needs the network privilege: the data path works,
# `touctl reload` (as root) adds a peer with its routes and removes one with
# its routes, and on SIGTERM it removes its routes, addresses and TUN and
# its control socket.  As with systemd's RuntimeDirectory=, the control
# socket lies in a directory that belongs to the user, and the key file is
# the user's (tou.conf(5)).
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls             # the production set-up: keys read before the drop
need_root
need_cmd curl ping

USER_NAME=nobody
uid=$(id -u "$USER_NAME" 2>/dev/null) || bail_out "no user $USER_NAME"
gid=$(id -g "$USER_NAME")
CAP_NET_ADMIN_ONLY=0000000000001000     # bit 12

# a's control socket lies in a directory of the user's.
mkdir -m 0755 "$E2E_DIR/run"
chown "$uid:$gid" "$E2E_DIR/run"
sock_of() {
	case $1 in
	a) echo "$E2E_DIR/run/a.sock";;
	*) echo "$E2E_DIR/$1.sock";;
	esac
}

# routes NODE: toud's routes (proto 116), both families, sorted.
routes() {
	{ nsx "$1" ip -4 route show proto 116; nsx "$1" ip -6 route show proto 116; } 2>&1 |
	    sed 's/ *$//' | sort
}

# has_route NODE PREFIX: a toud route to PREFIX exists.
# shellcheck disable=SC2317
has_route() {
	routes "$1" | grep -q "^$2 dev tou0 "
}

# no_route NODE PREFIX: no toud route to PREFIX.
# shellcheck disable=SC2317
no_route() {
	! routes "$1" | grep -q "^$2 "
}

# status_field PID FIELD: a line of /proc/PID/status, whitespace squeezed.
status_field() {
	awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ /, ""); print; exit }' "/proc/$1/status"
}

topo_ab
conf_ab 4
conf=$(conf_file a)
sed -i "/^\[interface\]/a user = $USER_NAME" "$conf"
chown "$uid:$gid" "$E2E_DIR/keys/a/key.pem"
cp "$conf" "$E2E_DIR/a.conf.orig"
toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"
pid=${TOUD_PID[a]}
ping_check a 10.77.0.2 "ping a to b through the tunnel"

# --- credentials ------------------------------------------------------------

is "$(cat "/proc/$pid/comm")" toud "pid $pid is toud itself"
ntask=0
for task in /proc/"$pid"/task/*; do
	t=${task##*/}
	ntask=$((ntask + 1))
	what="thread $t:"
	[ "$t" = "$pid" ] && what="main thread:"
	st=$task/status
	got=$(awk '
	    $1 == "Uid:" || $1 == "Gid:" { printf "%s %s %s %s %s ", $1, $2, $3, $4, $5 }
	    $1 == "Groups:" { printf "Groups: %s ", $2 }
	    $1 ~ /^Cap(Inh|Prm|Eff|Amb):$/ { printf "%s %s ", $1, $2 }
	    $1 == "NoNewPrivs:" { printf "%s %s", $1, $2 }' "$st")
	want="Uid: $uid $uid $uid $uid Gid: $gid $gid $gid $gid Groups:  "
	want+="CapInh: 0000000000000000 CapPrm: $CAP_NET_ADMIN_ONLY CapEff: $CAP_NET_ADMIN_ONLY "
	want+="CapAmb: 0000000000000000 NoNewPrivs: 1"
	is "$got" "$want" "$what $USER_NAME ($uid), no supplementary groups, only CAP_NET_ADMIN, NoNewPrivs"
	bnd=$(status_field "${task#/proc/}" CapBnd)
	is "$(((16#${bnd:-ffffffffffffffff}) & ~16#$CAP_NET_ADMIN_ONLY))" 0 \
	    "$what nothing but CAP_NET_ADMIN in the bounding set (CapBnd: $bnd)"
done
diag "toud has $ntask thread(s)"
is "$(status_field "$pid" CapEff)" "$CAP_NET_ADMIN_ONLY" "CapEff: $CAP_NET_ADMIN_ONLY (only CAP_NET_ADMIN)"
is "$(status_field "$pid" NoNewPrivs)" 1 "NoNewPrivs: 1"
is "$(stat -c %U "$(sock_of a)")" "$USER_NAME" "the control socket belongs to $USER_NAME"

# --- the data path ----------------------------------------------------------

mkdir "$E2E_DIR/www"
make_file "$E2E_DIR/www/f" 4096
http_serve b 10.77.0.2 8080 "$E2E_DIR/www"
fetch_check a http://10.77.0.2:8080/f "$E2E_DIR/www/f" "4 MB over HTTP from b to the unprivileged a"
sid_b=$(tq a peers.b.session_id)
r0=$(routes a)
diag "a's routes: $r0"

# --- reload: add a peer, then remove it ----------------------------------------

conf_peer a c 10.200.0.3:6080 "10.77.0.3, fd77::3" 192.168.53.0/24
if out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1); then
	ok "touctl reload (as root) adds peer c"
else
	not_ok "touctl reload (as root) adds peer c" "$out"
fi
check "route to 192.168.53.0/24 (proto 116) installed" has_route a 192.168.53.0/24
# c's tunnel addresses lie in a's own prefixes: the connected routes take
# them into tou0, and toud adds none of its own.
for p in 10.77.0.3 fd77::3; do
	check "no route of toud's to $p" no_route a "$p"
	is "$(nsx a ip route get "$p" | grep -o 'dev [^ ]*' | head -n 1)" "dev tou0" \
	    "$p goes into tou0 all the same"
done
is "$(tq a peers.c.name)" c "a shows peer c"
check "toud on a is still unprivileged ($(status_field "$pid" Uid))" \
    test "$(status_field "$pid" Uid)" = "$uid $uid $uid $uid"

cp "$E2E_DIR/a.conf.orig" "$conf"
if out=$("$TOUCTL" -s "$(sock_of a)" reload 2>&1); then
	ok "touctl reload removes peer c"
else
	not_ok "touctl reload removes peer c" "$out"
fi
is "$(routes a)" "$r0" "c's routes are gone, the others are as before"
check "a no longer shows peer c" bash -c "! \"$TOUCTL\" -s \"$(sock_of a)\" show c"
is "$(tq a peers.b.session_id)" "$sid_b" "b's session survived both reloads"
fetch_check a http://10.77.0.2:8080/f "$E2E_DIR/www/f" "HTTP from b after the reloads"
check "toud on a still running" toud_alive a

# --- SIGTERM ------------------------------------------------------------------

toud_stop a TERM
is "${TOUD_RC[a]}" 0 "toud on a exits with status 0 on SIGTERM"
is "$(routes a)" "" "no route of toud's left (proto 116, both families)"
check "tou0 is gone" bash -c "! ip -n $(ns a) link show dev tou0 2>/dev/null"
is "$(nsx a ip -o addr show | grep -c ' 10\.77\.\| fd77:')" 0 "no tunnel address left"
check "the control socket file is gone" test ! -e "$(sock_of a)"
grep -q 'cannot\|failed' "$E2E_DIR/a.log" &&
    diag "a's log has complaints: $(grep 'cannot\|failed' "$E2E_DIR/a.log")"
is "$(grep -c '<[0-4]>' "$E2E_DIR/a.log")" 0 "a logged no warning or error"

done_testing
