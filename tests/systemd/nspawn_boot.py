#!/usr/bin/env python3
"""nspawn_boot.py LOG TIMEOUT -- systemd-nspawn ARGS...

Boot a container and return once its systemd has finished booting.  This
script acts as systemd-nspawn's service manager: nspawn reports the
container's PID 1 as X_NSPAWN_LEADER_PID=<pid> on NOTIFY_SOCKET and, with
--notify-ready=yes, READY=1 when the container's systemd is up.  (The
direct child of systemd-nspawn is another nspawn process, so its pid is of
no use for nsenter.)  Prints "NSPAWN_PID LEADER_PID SECONDS" and exits 0;
nspawn keeps running in its own session, its output going to LOG.  On a
timeout, or if nspawn exits first, it kills nspawn and exits 1.

The notify socket is a path in LOG's directory: abstract socket names are
per network namespace.
"""

import os
import select
import signal
import socket
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit("usage: nspawn_boot.py LOG TIMEOUT -- systemd-nspawn ARGS...")
    logpath, timeout, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[4:]
    path = "%s.notify" % logpath
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    s.bind(path)
    t0 = time.monotonic()
    with open(logpath, "ab") as log:
        p = subprocess.Popen(cmd, env=dict(os.environ, NOTIFY_SOCKET=path),
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
    leader = None
    ready = False
    try:
        while not (leader and ready):
            left = t0 + timeout - time.monotonic()
            if left <= 0:
                sys.stderr.write("nspawn_boot: container not ready in %.0f s\n" % timeout)
                break
            if p.poll() is not None:
                sys.stderr.write("nspawn_boot: systemd-nspawn exited with status %d\n"
                                 % p.returncode)
                break
            r, _, _ = select.select([s], [], [], min(left, 0.2))
            if not r:
                continue
            for line in s.recv(4096).decode("utf-8", "replace").split("\n"):
                k, _, v = line.partition("=")
                if k == "X_NSPAWN_LEADER_PID":
                    leader = int(v)
                elif k == "READY" and v == "1":
                    ready = True
    finally:
        s.close()
        os.unlink(path)
    if leader and ready:
        print("%d %d %.2f" % (p.pid, leader, time.monotonic() - t0))
        return 0
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    return 1


if __name__ == "__main__":
    sys.exit(main())
