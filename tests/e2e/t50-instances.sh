#!/bin/bash
# t50-instances: two instances of toud side by side on each of a and b
# (toud -i NAME, what toud@NAME runs), from copies of one file that do not
# set the device name (the control socket is set: the instances' default,
# /run/toud/NAME.sock, is the host's).  Each instance's TUN device is named
# after it;
# `toud -t -i two` refuses the copy while its listen port is still that
# of instance one, naming the other file, then while its key pair is still
# one's, and accepts it with its own port and key pair; then both instances carry a tunnel at once (data checked by
# sha256), `touctl show --all` shows both, text and JSON.  The instances
# run as in the unit (user nobody, DTLS), and from start through
# handshake, transfer and stop none of them logs a line at err or worse
# (the "<N>" priority of each line of its log).
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
need_root
need_cmd curl ping

USER_NAME=nobody
uid=$(id -u "$USER_NAME" 2>/dev/null) || bail_out "no user $USER_NAME"
gid=$(id -g "$USER_NAME")

topo_ab

# dir NODE: NODE's instances directory (as /etc/toud and /run/toud in one:
# the user's, so that each instance can remove its socket at exit).
dir() { echo "$E2E_DIR/inst-$1"; }

# inst_conf NODE SELF PEER NET: the instance file of one (ADDR: 10.NET.0.X).
inst_conf() {
	local node=$1 self=$2 peer=$3 net=$4
	cat <<CONF
# $node's tunnel, copied to make a second one
[interface]
address = 10.$net.0.$self/24
listen = 6080
encryption = dtls
offload = $E2E_OFFLOAD
threads = $E2E_THREADS
log-level = $E2E_LOG_LEVEL
control = $(dir "$node")/one.sock
user = $USER_NAME
private-key = $E2E_DIR/keys/$node/key.pem
certificate = $E2E_DIR/keys/$node/cert.pem

[peer $peer]
endpoint = 10.200.0.$peer_n:6080
address = 10.$net.0.$peer_n
fingerprint = $(cat "$E2E_DIR/keys/$peer/fingerprint")
CONF
}

# inst_start NODE INSTANCE: toud -i INSTANCE -c its file in NODE, until its
# socket answers.
inst_start() {
	local node=$1 inst=$2 key=$1-$2 log=$E2E_DIR/$1-$2.log pid deadline
	ip netns exec "$E2E_PREFIX$node" "$TOUD" -i "$inst" -c "$(dir "$node")/$inst.conf" \
	    </dev/null >>"$log" 2>&1 &
	pid=$!
	e2e_record "$pid"
	TOUD_PID[$key]=$pid
	deadline=$(e2e_deadline 30)
	while ! "$TOUCTL" -s "$(dir "$node")/$inst.sock" show >/dev/null 2>&1; do
		if ! proc_alive "$pid" || ! e2e_before "$deadline"; then
			diag "toud -i $inst on $node did not start: $(tail -n 20 "$log")"
			return 1
		fi
		sleep 0.05
	done
}

ictl() {
	local node=$1 inst=$2
	shift 2
	nsx "$node" "$TOUCTL" -s "$(dir "$node")/$inst.sock" "$@"
}

keys_for a
keys_for b
chown "$uid:$gid" "$E2E_DIR/keys/a/key.pem" "$E2E_DIR/keys/b/key.pem"
for node in a b; do
	mkdir -m 0755 "$(dir $node)"
	chown "$uid:$gid" "$(dir $node)"
done
peer_n=2 inst_conf a 1 b 77 >"$(dir a)/one.conf"
peer_n=1 inst_conf b 2 a 77 >"$(dir b)/one.conf"
# The copies: other tunnel addresses, the same port (for now).
for node in a b; do
	sed 's/10\.77\./10.78./; s/one\.sock$/two.sock/' "$(dir $node)/one.conf" \
	    >"$(dir $node)/two.conf"
done

# --- the clash ----------------------------------------------------------------
out=$(nsx a "$TOUD" -t -i two -c "$(dir a)/two.conf" 2>&1)
is "$?" 1 "toud -t -i two refuses a copy with one's listen port"
diag "$out"
check "naming the line, the port and the other file" grep -q \
    "two.conf:4: listen port 6080 is also that of $(dir a)/one.conf (instance one)" <<<"$out"
for node in a b; do
	sed -i 's/^listen = 6080/listen = 6081/; s/^\(endpoint = .*\):6080/\1:6081/' \
	    "$(dir $node)/two.conf"
done
# Its own port, but still one's key pair: one peer to the other side.
out=$(nsx a "$TOUD" -t -i two -c "$(dir a)/two.conf" 2>&1)
is "$?" 1 "toud -t -i two refuses a copy with one's key pair"
diag "$out"
check "naming the key, the other file and the fix" grep -qF \
    "two.conf:11: private-key $E2E_DIR/keys/a/key.pem is also that of $(dir a)/one.conf (instance one): two tunnels with one key pair are one peer to a server, which breaks both; make this one its own with touctl genkey" \
    <<<"$out"
# Each tunnel its own key pair, the other side pinning it.
for node in a b; do
	"$TOUCTL" genkey "$(dir $node)/two-keys" >"$(dir $node)/two-fp" 2>&1 ||
	    bail_out "genkey for two on $node: $(cat "$(dir $node)/two-fp")"
	chown -R "$uid:$gid" "$(dir $node)/two-keys"
	sed -i "s|^private-key = .*|private-key = $(dir $node)/two-keys/key.pem|;
	    s|^certificate = .*|certificate = $(dir $node)/two-keys/cert.pem|" "$(dir $node)/two.conf"
done
sed -i "s|^fingerprint = .*|fingerprint = $(cat "$(dir b)/two-fp")|" "$(dir a)/two.conf"
sed -i "s|^fingerprint = .*|fingerprint = $(cat "$(dir a)/two-fp")|" "$(dir b)/two.conf"
for node in a b; do
	out=$(nsx $node "$TOUD" -t -i two -c "$(dir $node)/two.conf" 2>&1)
	is "$?/$out" "0/" "toud -t -i two on $node accepts it with its own port and key pair"
	out=$(nsx $node "$TOUD" -T -i two -c "$(dir $node)/two.conf" 2>&1)
	is "$(sed -n 's/^name *= *//p' <<<"$out")" two "its device is named after the instance" ||
	    diag "$out"
done

# --- side by side -------------------------------------------------------------
for node in a b; do
	for inst in one two; do
		inst_start $node $inst || bail_out "toud -i $inst on $node did not start"
	done
done
for inst in one two; do
	is "$(ictl a $inst show --json | json_get "$(cat)" interface.name 2>&1)" "$inst" \
	    "instance $inst's device is $inst"
done
check "both devices exist on a" nsx a ip link show dev one
check "both devices exist on a (two)" nsx a ip link show dev two

make_file "$E2E_DIR/data" 512
http_serve b 0.0.0.0 8080 "$E2E_DIR"
ping_check a 10.77.0.2 "ping b through instance one"
ping_check a 10.78.0.2 "ping b through instance two"
fetch_check a http://10.77.0.2:8080/data "$E2E_DIR/data" "a fetches a file through one"
fetch_check a http://10.78.0.2:8080/data "$E2E_DIR/data" "a fetches a file through two"
is "$(ictl a one show --json | json_get "$(cat)" peers.b.state)" up "one's peer b is up"
is "$(ictl a two show --json | json_get "$(cat)" peers.b.state)" up "two's peer b is up"

# --- show --all -----------------------------------------------------------------
all=$(ictl a one show --all) || bail_out "touctl show --all failed"
is "$(grep '^instance: ' <<<"$all" | cut -d' ' -f2)" $'one\ntwo' "show --all shows one and two"
all=$(ictl a two show --all --json) || bail_out "touctl show --all --json failed"
is "$(python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%s:%s" % (i["instance"], i["show"]["interface"]["name"],
    i["show"]["interface"]["listen_port"]) for i in d["instances"]))' <<<"$all")" \
    "one:one:6080 two:two:6081" "show --all --json: each instance's own show object"

# --- a healthy start, handshake, transfer and stop log nothing at err --------------
for node in a b; do
	for inst in one two; do
		toud_stop "$node-$inst"
		is "${TOUD_RC[$node-$inst]}" 0 "$inst on $node stops cleanly"
	done
done
for node in a b; do
	for inst in one two; do
		log=$E2E_DIR/$node-$inst.log
		check "$inst on $node logged with priorities" grep -q '^<6>' "$log"
		is "$(grep -c '^<[0-3]>' "$log")" 0 "$inst on $node logged nothing at err or worse"
	done
done
check "the sockets are gone" test ! -e "$(dir a)/one.sock" -a ! -e "$(dir a)/two.sock"

done_testing
