#!/usr/bin/env python3
"""lan_dns.py LOG ADDR=ANSWER...: a name server that answers every A
query on ADDR (UDP and TCP port 53) with the IPv4 address ANSWER, and
every other query with no data, for the test of what leaves a host whose
tunnel was killed (nspawn.sh).  Each address may be one the host does not
have yet (IP_FREEBIND).  Every query received is one line of LOG:
"ADDR PROTO SOURCE NAME TYPE".  Prints "ready" once it listens; runs until
killed.
"""

import selectors
import socket
import struct
import sys

IP_FREEBIND = 15


def parse_question(msg):
    """The first question's name and type, and the end of the question."""
    pos, labels = 12, []
    while pos < len(msg):
        n = msg[pos]
        pos += 1
        if n == 0:
            break
        labels.append(msg[pos:pos + n].decode("ascii", "replace"))
        pos += n
    qtype = struct.unpack("!H", msg[pos:pos + 2])[0]
    return ".".join(labels), qtype, pos + 4


def answer(msg, addr):
    """The reply to the query msg: the question, an A record for addr when
    asked for one, and an OPT record when the query had one."""
    name, qtype, end = parse_question(msg)
    qid, flags = struct.unpack("!HH", msg[:4])
    arcount = struct.unpack("!H", msg[10:12])[0]
    rr = b""
    if qtype == 1:
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(addr)
    opt = b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0) if arcount else b""
    head = struct.pack("!HHHHHH", qid, 0x8180 | (flags & 0x0100), 1, 1 if rr else 0, 0,
                       1 if opt else 0)
    return head + msg[12:end] + rr + opt, name, qtype


def main():
    log = open(sys.argv[1], "a", buffering=1)
    sel = selectors.DefaultSelector()
    for spec in sys.argv[2:]:
        local, ans = spec.split("=")
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            s = socket.socket(socket.AF_INET, kind)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)
            s.bind((local, 53))
            if kind == socket.SOCK_STREAM:
                s.listen(16)
            sel.register(s, selectors.EVENT_READ, (local, ans, kind))
    print("ready", flush=True)
    while True:
        for key, _ in sel.select():
            local, ans, kind = key.data
            try:
                if kind == socket.SOCK_DGRAM:
                    msg, src = key.fileobj.recvfrom(4096)
                    reply, name, qtype = answer(msg, ans)
                    key.fileobj.sendto(reply, src)
                    proto = "udp"
                else:
                    c, src = key.fileobj.accept()
                    c.settimeout(2)
                    n = struct.unpack("!H", c.recv(2))[0]
                    msg = b""
                    while len(msg) < n:
                        chunk = c.recv(n - len(msg))
                        if not chunk:
                            break
                        msg += chunk
                    reply, name, qtype = answer(msg, ans)
                    c.sendall(struct.pack("!H", len(reply)) + reply)
                    c.close()
                    proto = "tcp"
            except (OSError, struct.error, IndexError):
                continue
            log.write("%s %s %s %s %d\n" % (local, proto, src[0], name, qtype))


if __name__ == "__main__":
    main()
