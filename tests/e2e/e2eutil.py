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
