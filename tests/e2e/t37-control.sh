#!/bin/bash
# t37-control: the control socket under clients that misbehave.  A real
# toud answers a request ended by a newline or by end of file, and one
# written in pieces; refuses an over-long line, a NUL inside it, an unknown
# command and a seventeenth connection; drops clients that send nothing;
# and keeps answering through all of it.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

topo_ab
conf_ab
toud_start a || bail_out "toud on a did not start"

probe() {
	python3 - "$(sock_of a)" "$1" <<'PY'
import json, socket, sys, time

path, case = sys.argv[1], sys.argv[2]

def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s

def reply(s):
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            return out.decode()
        out += b

def ask(data, shut=False):
    s = conn()
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    r = reply(s)
    s.close()
    return r

if case == "json":
    r = ask(b"show --json\n")
    head, body = r.split("\n", 1)
    json.loads(body)
    print(head)
elif case == "eof":
    print(ask(b"show", shut=True).split("\n", 1)[0])
elif case == "pieces":
    s = conn()
    for part in (b"sh", b"ow ", b"--js", b"on\n"):
        s.sendall(part)
        time.sleep(0.1)
    r = reply(s)
    json.loads(r.split("\n", 1)[1])
    print(r.split("\n", 1)[0])
elif case == "long":
    print(ask(b"show " + b"x" * 600).strip())
elif case == "nul":
    print(ask(b"show\0 --json\n").strip())
elif case == "unknown":
    print(ask(b"frobnicate\n").strip())
elif case == "busy":
    idle = [conn() for _ in range(16)]
    time.sleep(0.3)
    print(ask(b"show\n").strip())
    # The idle ones are dropped after the timeout; then there is room.
    t0 = time.monotonic()
    for s in idle:
        s.settimeout(15)
        assert s.recv(1) == b"", "an idle client got data"
    print("dropped after %d s" % round(time.monotonic() - t0 + 0.3))
    print(ask(b"show\n").split("\n", 1)[0])
PY
}

is "$(probe json)" ok "a request ended by a newline is answered (the body is JSON)"
is "$(probe eof)" ok "a request ended by end of file is answered"
is "$(probe pieces)" ok "a request written in pieces is answered"
is "$(probe long)" "error: request too long" "an over-long request is refused"
is "$(probe nul)" "error: malformed request" "a NUL inside the request is refused"
is "$(probe unknown)" "error: unknown command 'frobnicate'" "an unknown command is named"
out=$(probe busy)
is "$(sed -n 1p <<<"$out")" "error: too many connections" "a seventeenth connection is refused"
d=$(sed -n 2p <<<"$out" | awk '{print $3}')
cmp_ok "${d:-99}" -ge 4 "idle clients are kept for the timeout (${d:-?} s)"
cmp_ok "${d:-99}" -le 8 "and then dropped"
is "$(sed -n 3p <<<"$out")" ok "after the idle clients are gone, requests are answered"
check "toud on a is still running" toud_alive a
check "touctl still works" touctl_show a

done_testing
