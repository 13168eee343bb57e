"""Helpers shared by the end-to-end tests' inline Python (lib.sh puts this
directory on PYTHONPATH)."""
import struct


def ones_sum(b):
    """The folded 16-bit one's complement sum of b (RFC 1071)."""
    if len(b) % 2:
        b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16:
        t = (t & 0xffff) + (t >> 16)
    return t


def csum(b):
    """The Internet checksum of b, ready to store in a header."""
    return ~ones_sum(b) & 0xffff


def count_until(socks, stop, secs=120, classify=lambda s, d: s):
    """Read datagrams from socks until the file stop exists (the test has
    seen the state it waits for: what could have answered has been
    processed) or secs pass; return a dict {classify(sock, data): count}."""
    import os
    import select
    import time
    got = {}
    end = time.monotonic() + secs
    while time.monotonic() < end:
        done = os.path.exists(stop)
        r, _, _ = select.select(socks, [], [], 0 if done else 0.1)
        for s in r:
            d, _ = s.recvfrom(65535)
            k = classify(s, d)
            got[k] = got.get(k, 0) + 1
        if done and not r:
            break
    return got
