#!/usr/bin/env python3
"""notify_q.py RESULT.json EXPR - evaluate one assertion on notify_recv.py's
record.  EXPR is a Python expression over the names below; it passes when
it is true.  On failure the exit status is 1 and stdout says what was seen,
so the TAP line can show it.  With --print, EXPR's value is printed instead.

Names: r (the whole record), pid (the daemon's pid), msgs(KEY) (the
messages carrying KEY=..., e.g. msgs("READY")), vals(KEY) (their values),
ready / exit_ (the two snapshots), addrs(snap) ("ADDR/LEN" on the device),
routes(snap) (destinations through the device), toud_routes(snap) (every
route in any table whose destination is one toud installs in the test
configuration), udp(snap) (lines of ss for port 6080), cap(snap, "CapEff")
(an int), proc(snap, "Uid").
"""

import ipaddress
import json
import sys

TEST_NETS = [ipaddress.ip_network(n) for n in
             ("10.77.0.0/24", "192.168.50.0/24", "fd77::/64")]


def load(path):
    with open(path) as f:
        return json.load(f)


def kv(data):
    out = {}
    for line in data.split("\n"):
        k, sep, v = line.partition("=")
        if sep:
            out[k] = v
    return out


def main():
    args = sys.argv[1:]
    show = False
    if args and args[0] == "--print":
        show = True
        args = args[1:]
    r = load(args[0])
    expr = args[1]

    def msgs(key):
        return [m for m in r["messages"] if key in kv(m["data"])]

    def vals(key):
        return [kv(m["data"])[key] for m in msgs(key)]

    def js(snap, k):
        return (snap or {}).get(k, {}).get("json") or []

    def addrs(snap):
        return sorted("%s/%d" % (a["local"], a["prefixlen"])
                      for link in js(snap, "addr") for a in link.get("addr_info", [])
                      if a.get("scope") != "link")

    def routes(snap):
        return sorted(x["dst"] for k in ("route4", "route6") for x in js(snap, k))

    def toud_routes(snap):
        out = []
        for k in ("routes4_all", "routes6_all"):
            for x in js(snap, k):
                dst = x.get("dst", "")
                try:
                    net = ipaddress.ip_network(dst, strict=False)
                except ValueError:
                    continue
                if any(net.version == t.version and net.subnet_of(t) for t in TEST_NETS):
                    out.append("%s dev %s proto %s" % (dst, x.get("dev"), x.get("protocol", "boot")))
        return sorted(out)

    def udp(snap):
        out = ((snap or {}).get("udp") or {}).get("out", "")
        return [line for line in out.splitlines() if ":6080 " in line]

    def proc(snap, k):
        return ((snap or {}).get("proc") or {}).get(k)

    def cap(snap, k):
        v = proc(snap, k)
        return int(v[0], 16) if v else None

    names = dict(__builtins__=__builtins__, r=r, pid=r.get("pid"), msgs=msgs, vals=vals, ready=r.get("ready_snapshot"),
                 exit_=r.get("exit_snapshot"), addrs=addrs, routes=routes,
                 toud_routes=toud_routes, udp=udp, cap=cap, proc=proc, kv=kv)
    try:
        # One namespace: comprehensions in EXPR must see these names.
        v = eval(expr, names)
    except Exception as e:  # the record lacks what the expression needs
        print("%s: %s" % (type(e).__name__, e))
        return 1
    if show:
        print(v if not isinstance(v, (list, dict)) else json.dumps(v))
        return 0
    if v:
        return 0
    print("false: %s" % expr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
