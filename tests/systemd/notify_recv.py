#!/usr/bin/env python3
"""notify_recv.py - play the service manager's part of the sd_notify protocol.

    notify_recv.py --ns NS --dev tou0 --out RESULT.json [options] -- CMD ARGS...

Creates a unix datagram socket with SO_PASSCRED (so every datagram carries
the sender's pid and uid), starts CMD with NOTIFY_SOCKET pointing at it and
records each datagram with its arrival time and sender.  The moment READY=1
arrives it stops the daemon (SIGSTOP), takes a snapshot of network
namespace NS and lets the daemon go on (SIGCONT).  The snapshot holds the
device, its addresses, the routes through it, the UDP sockets, the
process's uid and capabilities, and whether the --path files exist.
--term-after seconds after READY=1 it sends SIGTERM, waits for the exit and
takes a second snapshot.
Everything goes to RESULT.json; the calling test makes the assertions.

The socket is a path, not an abstract name: abstract unix sockets belong to
a network namespace, and CMD runs in another one.

Options:
  --watchdog-usec N   set WATCHDOG_USEC=N
  --watchdog-pid P    set WATCHDOG_PID: "self" = the pid CMD will have
                      (known here because this script forks and the child
                      execs CMD in place), a number, or unset when absent
  --ready-timeout S   give up waiting for READY=1 after S seconds (10)
  --hup-after S       send SIGHUP (reload) S seconds after READY=1
  --term-after S      seconds between READY=1 and SIGTERM (3)
  --exit-timeout S    seconds to wait for the exit after SIGTERM (10)
  --sock-mode MODE    mode of the socket file (octal), for a CMD that drops
                      privileges before it notifies (default 0666)
  --path PATH         record in both snapshots whether PATH exists
                      (repeatable)
"""

import argparse
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

UCRED = struct.Struct("iII")


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"cmd": cmd, "rc": -1, "out": "", "err": str(e)}
    return {"cmd": cmd, "rc": p.returncode, "out": p.stdout, "err": p.stderr}


def run_json(cmd):
    r = run(cmd)
    try:
        r["json"] = json.loads(r["out"]) if r["rc"] == 0 and r["out"].strip() else []
    except ValueError:
        r["json"] = None
    return r


def proc_status(pid):
    want = ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in want:
                    out[k] = v.split()
    except OSError as e:
        out["error"] = str(e)
    return out


def wait_stopped(pid, timeout=2.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rpartition(")")[2].split()[0] == "T":
                    return True
        except OSError:
            return False
        time.sleep(0.0005)
    return False


def snapshot(ns, dev, pid, paths):
    ip = ["ip", "-n", ns, "-j"]
    return {
        "paths": {p: os.path.exists(p) for p in paths},
        "link": run_json(ip + ["link", "show", "dev", dev]),
        "addr": run_json(ip + ["addr", "show", "dev", dev]),
        "route4": run_json(ip + ["-4", "route", "show", "dev", dev]),
        "route6": run_json(ip + ["-6", "route", "show", "dev", dev]),
        "links": run_json(ip + ["link", "show"]),
        "routes4_all": run_json(ip + ["-4", "route", "show", "table", "all"]),
        "routes6_all": run_json(ip + ["-6", "route", "show", "table", "all"]),
        "udp": run(["ip", "netns", "exec", ns, "ss", "-H", "-u", "-a", "-n", "-p"]),
        "proc": proc_status(pid) if pid else {},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", required=True)
    ap.add_argument("--dev", default="tou0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--watchdog-usec")
    ap.add_argument("--watchdog-pid")
    ap.add_argument("--ready-timeout", type=float, default=10)
    ap.add_argument("--hup-after", type=float)
    ap.add_argument("--term-after", type=float, default=3)
    ap.add_argument("--exit-timeout", type=float, default=10)
    ap.add_argument("--sock-mode", default="0666")
    ap.add_argument("--path", action="append", default=[])
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")

    sockdir = tempfile.mkdtemp(prefix="notify.", dir=os.path.dirname(os.path.abspath(a.out)))
    os.chmod(sockdir, 0o755)
    path = os.path.join(sockdir, "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    s.bind(path)
    os.chmod(path, int(a.sock_mode, 8))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    env = dict(os.environ, NOTIFY_SOCKET=path)
    env.pop("WATCHDOG_PID", None)
    env.pop("WATCHDOG_USEC", None)
    if a.watchdog_usec:
        env["WATCHDOG_USEC"] = a.watchdog_usec

    res = {"cmd": cmd, "notify_socket": path, "messages": [], "ready": None,
           "ready_snapshot": None, "hup_sent": None, "term_sent": None, "exit": None,
           "exit_snapshot": None, "errors": []}
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        # The child execs CMD in place (ip netns exec does too), so this
        # pid is the daemon's: the one a manager would know as MAINPID.
        try:
            if a.watchdog_pid == "self":
                env["WATCHDOG_PID"] = str(os.getpid())
            elif a.watchdog_pid:
                env["WATCHDOG_PID"] = a.watchdog_pid
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.execvpe(cmd[0], cmd, env)
        except OSError as e:
            os.write(2, ("exec %s: %s\n" % (cmd[0], e)).encode())
        os._exit(127)
    res["pid"] = pid

    status = None
    deadline = t0 + a.ready_timeout
    term_at = None
    hup_at = None
    exit_deadline = None
    while True:
        now = time.monotonic()
        if status is None:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                status = st
                res["exit"] = {"t": round(now - t0, 4),
                               "code": os.WEXITSTATUS(st) if os.WIFEXITED(st) else None,
                               "signal": os.WTERMSIG(st) if os.WIFSIGNALED(st) else None}
        if status is not None:
            # Drain what was sent before the exit, then stop.
            r, _, _ = select.select([s], [], [], 0.2)
            if not r:
                break
        elif res["ready"] is None and res["term_sent"] is None and now > deadline:
            res["errors"].append("no READY=1 within %.1f s" % a.ready_timeout)
            os.kill(pid, signal.SIGTERM)
            res["term_sent"] = round(now - t0, 4)
            exit_deadline = now + a.exit_timeout
        elif hup_at is not None and res["hup_sent"] is None and now >= hup_at:
            os.kill(pid, signal.SIGHUP)
            res["hup_sent"] = round(now - t0, 4)
            res["hup_sent_monotonic_usec"] = int(now * 1000000)
        elif term_at is not None and res["term_sent"] is None and now >= term_at:
            os.kill(pid, signal.SIGTERM)
            res["term_sent"] = round(now - t0, 4)
            exit_deadline = now + a.exit_timeout
        elif exit_deadline is not None and now > exit_deadline:
            res["errors"].append("no exit within %.1f s of SIGTERM: killed" % a.exit_timeout)
            os.kill(pid, signal.SIGKILL)
            exit_deadline = float("inf")

        if status is None:
            r, _, _ = select.select([s], [], [], 0.05)
            if not r:
                continue
        data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(UCRED.size))
        t = time.monotonic() - t0
        spid = suid = None
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                spid, suid, _ = UCRED.unpack(cdata[:UCRED.size])
        text = data.decode("utf-8", "replace")
        res["messages"].append({"t": round(t, 4), "mono_usec": int((t + t0) * 1000000),
                                "pid": spid, "uid": suid, "data": text})
        if res["ready"] is None and "READY=1" in text.split("\n"):
            # Freeze the daemon at once and look at the namespace: what is
            # there now existed when it said READY=1 (give or take the
            # microseconds until SIGSTOP lands), not a moment later.
            res["ready"] = round(t, 4)
            if status is None:
                os.kill(pid, signal.SIGSTOP)
                res["stopped_at_ready"] = wait_stopped(pid)
            res["ready_snapshot"] = snapshot(a.ns, a.dev, pid, a.path)
            if status is None:
                os.kill(pid, signal.SIGCONT)
            term_at = time.monotonic() + a.term_after
            if a.hup_after is not None:
                hup_at = time.monotonic() + a.hup_after

    res["exit_snapshot"] = snapshot(a.ns, a.dev, None, a.path)
    s.close()
    os.unlink(path)
    os.rmdir(sockdir)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
