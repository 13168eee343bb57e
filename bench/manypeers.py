#!/usr/bin/env python3
"""manypeers.py N [FPS] [PREFIX]: N [peer] sections for a toud server.

Peer i is named pI and has tunnel address 10.77.X.Y, host number i + 2 of
10.77.0.0/16 (N <= 65,533).  Its fingerprint is line i of FPS ("I
sha256:..." as `hsload genkeys` prints them) where FPS has one, else a
random one (a configured client that never connects).  No endpoint: the
server waits to be contacted.  PREFIX replaces "p" in the names.
"""
import os
import sys


def main():
    n = int(sys.argv[1])
    fps = []
    if len(sys.argv) > 2 and sys.argv[2]:
        with open(sys.argv[2]) as f:
            fps = [line.split()[1] for line in f if line.strip()]
    prefix = sys.argv[3] if len(sys.argv) > 3 else "p"
    if n + 2 > 65535:
        sys.exit("manypeers.py: at most 65,533 peers in 10.77.0.0/16")
    out = []
    for i in range(n):
        h = i + 2
        fp = fps[i] if i < len(fps) else "sha256:" + os.urandom(32).hex()
        out.append("\n[peer %s%d]\nfingerprint = %s\naddress = 10.77.%d.%d\nkeepalive = 0\n"
                   % (prefix, i, fp, h >> 8, h & 255))
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
