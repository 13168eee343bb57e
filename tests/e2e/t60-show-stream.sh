#!/bin/bash
# t60-show-stream: `touctl show` of 20,000 configured peers is streamed.
# The JSON parses with every peer; a reload during a stream that changes a
# peer's settings lets it finish, one that changes the list of peers ends
# it with a NUL and an error line (control.h) and the daemon carries on;
# touctl prints what came before such an error and fails, and fails on a
# reply cut short.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
E2E_LOG_LEVEL=info              # 20,000 peers' debug lines are not the point
need_root
need_cmd python3

PEERS=${T60_PEERS:-20000}

netns_add a
conf_interface a 6080 10.77.0.1/16
python3 "$E2E_TOP/bench/manypeers.py" "$PEERS" >>"$(conf_file a)" ||
    bail_out "manypeers.py failed"
toud_start a || bail_out "toud did not start with $PEERS peers"

# count_peers: "PEERS PEER_COUNT IN_ORDER" of the JSON on stdin.
count_peers() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [p["name"] for p in d["peers"]]
print(len(names), d["interface"]["peer_count"],
      names == ["p%d" % i for i in range(len(names))])'
}

t0=$(e2e_now)
out=$(show_json a | count_peers)
is "$out" "$PEERS $PEERS True" \
    "show --json of $PEERS peers parses, all of them in order ($(($(e2e_now) - t0)) ms)"
is "$(touctl_show a | grep -c '^peer: ')" "$PEERS" "show (text) lists $PEERS peers"

# mid_stream: read the start of a show --json, run "touctl reload" while
# the rest is not read yet, then read the rest; prints "N" (the peers of a
# complete reply) or the error that follows its NUL.
mid_stream() {
	python3 - "$(sock_of a)" "$TOUCTL" <<'EOF'
import json, socket, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"show --json\n")
got = s.recv(65536)
r = subprocess.run([sys.argv[2], "-s", sys.argv[1], "reload"], capture_output=True, text=True)
if r.returncode:
    sys.exit("reload failed: " + r.stderr)
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    got += b
body, nul, err = got.partition(b"\0")
if nul:
    print(err.decode().strip())
else:
    print(len(json.loads(body.decode()[3:])["peers"]))
EOF
}

# A reload that changes one peer's settings keeps the list: the stream goes on.
sed -i '/^\[peer p5\]$/,/^$/ s/^keepalive = 0$/keepalive = 25/' "$(conf_file a)"
is "$(mid_stream)" "$PEERS" "a reload that changes a peer's settings mid-stream lets it finish"

# One that adds a peer changes the list: the stream ends with an error.
printf '\n[peer p%d]\nfingerprint = sha256:%064d\naddress = 10.77.%d.%d\n' "$PEERS" 7 \
    $(((PEERS + 2) >> 8)) $(((PEERS + 2) & 255)) >>"$(conf_file a)"
out=$(mid_stream)
[[ "$out" == "error: show: the peers changed while they were listed"* ]] &&
    ok "a reload that adds a peer mid-stream ends the stream with an error" ||
    not_ok "mid-stream reload: $out"
check "toud on a still running" toud_alive a
is "$(show_json a | count_peers)" "$((PEERS + 1)) $((PEERS + 1)) True" \
    "the next show --json has the added peer"

# touctl, against a socket that sends what it is given ("@" a NUL); run
# in $(...), so the server is this subshell's child to wait for.
fake() {
	local sock=$E2E_DIR/fake.sock
	rm -f "$sock"
	python3 - "$sock" "$1" <<'EOF' &
import socket, sys
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind(sys.argv[1])
l.listen(1)
c, _ = l.accept()
c.recv(512)
c.sendall(sys.argv[2].encode().replace(b"@", b"\0"))
c.close()
EOF
	local pid=$!
	wait_for 5 test -S "$sock"
	"$TOUCTL" -s "$sock" show --json >"$E2E_DIR/fake.out" 2>"$E2E_DIR/fake.err"
	echo "rc=$? out=$(cat "$E2E_DIR/fake.out") err=$(cat "$E2E_DIR/fake.err")"
	wait "$pid"
}
is "$(fake $'ok\n{"interface": @error: show: the peers changed\n')" \
    'rc=1 out={"interface":  err=touctl: show: the peers changed' \
    "touctl prints the output before a NUL, then the error, and fails"
out=$(fake $'ok\n{"interface": {')
[[ "$out" == "rc=1 out={\"interface\": { err=touctl: "*"the reply was cut short" ]] &&
    ok "touctl fails on a reply cut short" || not_ok "cut short: $out"
is "$(fake $'error: no\n')" "rc=1 out= err=touctl: no" "an error reply prints nothing on stdout"

check "toud on a still running" toud_alive a
done_testing
