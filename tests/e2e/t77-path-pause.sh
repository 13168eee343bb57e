#!/bin/bash
# t77-path-pause: on an open network (nothing blocked, nothing lost), a
# download whose reader stops reading for 10 s, twice, makes no move at
# all (issue 34): the inner flow falls silent (its window closes), the
# paths do not, and silence of an inner flow is no evidence against a
# path.  The client's peer s has endpoint-tcp, so it could move.
#   - transport_switches stays 0 on both sides, and the transport udp;
#   - the download is intact (sha256).
# Not yet in E2E_TESTS: it fails until the path policy (path_policy.c)
# drives the transports.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nft python3
. "$(dirname "$0")/lib-router.sh"

TCP_PORT=443

rt_topo
rt_conf 0 "$TCP_PORT"
toud_start s || bail_out "toud on s did not start"
toud_start c || bail_out "toud on c did not start"
rt_tunnel_up 20 || bail_out "no ping through the tunnel from c to s in 20 s"
is "$(tq c peers.s.transport)" udp "c's peer s starts on udp"

rt_serve_file s "$RT_S_TUN" 8080 16
# The reader: an HTTP GET read in slices; after 2 MiB and after 6 MiB it
# stops reading for 10 s (the kernel's receive buffer fills, the window
# closes), then reads on to the end.  It prints "paused N" as each pause
# starts and the body's sha256 at the end.
cat >"$E2E_DIR/reader.py" <<'PY'
import hashlib, socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((host, port), timeout=60)
s.sendall(b"GET /big HTTP/1.0\r\nHost: x\r\n\r\n")
buf = b""
while b"\r\n\r\n" not in buf:
    d = s.recv(4096)
    if not d:
        sys.exit("no header")
    buf += d
head, body = buf.split(b"\r\n\r\n", 1)
h = hashlib.sha256(body)
n, pauses = len(body), [2 << 20, 6 << 20]
while True:
    if pauses and n >= pauses[0]:
        pauses.pop(0)
        print("paused %d" % n, flush=True)
        time.sleep(10)
        print("resumed", flush=True)
    d = s.recv(16384)
    if not d:
        break
    h.update(d)
    n += len(d)
print("done %d %s" % (n, h.hexdigest()), flush=True)
PY
bg_start c "$E2E_DIR/reader.log" python3 "$E2E_DIR/reader.py" "$RT_S_TUN" 8080
READER_PID=$BG_PID
wait_for 60 grep -q "^paused" "$E2E_DIR/reader.log" || diag "the reader has not paused"

if proc_wait "$READER_PID" 120 && [ "$PROC_RC" = 0 ]; then
	ok "the reader finished"
else
	not_ok "the reader finished" "$(cat "$E2E_DIR/reader.log")"
fi
is "$(grep -c '^resumed' "$E2E_DIR/reader.log")" 2 "it paused twice, 10 s each"
is "$(awk '/^done/ { print $3 }' "$E2E_DIR/reader.log")" "$(sha "$RT_FILE")" \
    "the download is intact (sha256)"
is "$(tq c peers.s.transport_switches)" 0 "no move on c"
is "$(tq s peers.c.transport_switches)" 0 "no move on s"
is "$(tq c peers.s.transport)" udp "c's peer s stays on udp"
check "toud on c still running" toud_alive c
check "toud on s still running" toud_alive s

done_testing
