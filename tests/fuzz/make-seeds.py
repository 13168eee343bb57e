#!/usr/bin/env python3
# make-seeds.py - the seed programs of fuzz_record and fuzz_handshake
# (their inputs are programs: see the comments at the top of
# fuzz_record.c and fuzz_handshake.c for the ops), and the streams of
# fuzz_stream (a piece size, a largest frame, then frames).  Each seed takes one
# path to its end (every cipher, every field changed, reordering, replay,
# records opened out of their order, the end of the sequence space; every client flight,
# every kind of client), from which the fuzzer mutates.  The records of
# make-vectors.py (tests/unit/data/record) are seeds of fuzz_record too.
#
#   tests/fuzz/make-seeds.py        rewrites corpus/record/prog-*,
#                                   corpus/handshake/* and corpus/stream/*
import os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))

# --- fuzz_record ------------------------------------------------------------
SEAL, FRAME, FINISH, PERM, MUT, DUP, RAW, OPEN, CHECK, UNSEAL, ACCEPT, BATCH, RENEW = range(13)
AES128, AES256, CHACHA = 0, 2, 4                 # byte 0, bits 1-2
START_TOUD, START_ZERO, START_END, START_EDGE = 0, 8, 16, 24   # bits 3-4
OPEN_COPY, OPEN_IN_PLACE, OPEN_SMALL, OPEN_STEPS, OPEN_OTHER = 0, 1, 2, 3, 4
F_TYPE, F_VERSION, F_EPOCH, F_SEQ, F_LEN, F_NONCE, F_CIPHER, F_TAG, F_TRUNC, F_EXTEND = range(10)


def seal(n, flags=0):
    return bytes([SEAL, n, flags])


def op(*b):
    return bytes(b)


def mut(slot, field, v):
    return bytes([MUT, slot, field]) + struct.pack("!H", v)


def record_seeds():
    seeds = {}
    for name, c in (("aes128", AES128), ("aes256", AES256), ("chacha", CHACHA)):
        # three records, opened out of order, one of them twice
        seeds["prog-reorder-" + name] = (bytes([c]) + seal(40) + seal(0) + seal(199, 1) +
            op(OPEN, 2, OPEN_COPY) + op(OPEN, 0, OPEN_IN_PLACE) + op(OPEN, 1, OPEN_STEPS) +
            op(OPEN, 0, OPEN_COPY))
        # a copy of a record with each field changed in turn, all opened
        p = bytes([c]) + seal(60)
        for f in range(10):
            p += op(DUP, 0) + mut(f + 1, f, 0x0101 * (f + 1))
        p += b"".join(op(OPEN, s, OPEN_COPY) for s in range(11))
        seeds["prog-fields-" + name] = p
        # framed records finished out of order, one never
        seeds["prog-frames-" + name] = (bytes([c]) + op(FRAME, 10) + op(FRAME, 20) +
            op(FRAME, 30) + op(FINISH, 2) + op(FINISH, 0) + op(OPEN, 2, OPEN_COPY) +
            op(OPEN, 0, OPEN_COPY) + op(OPEN, 1, OPEN_COPY))
    # frames finished by the sealer they hold, after their direction was
    # replaced by one that continues its numbers
    seeds["prog-renew"] = (bytes([AES256]) + op(FRAME, 30) + op(FRAME, 40) + op(RENEW) +
        seal(50) + op(FINISH, 1) + op(OPEN, 2, OPEN_COPY) + op(OPEN, 1, OPEN_COPY) +
        op(FINISH, 0) + op(OPEN, 0, OPEN_COPY))
    # an opening thread's three steps, with the same record checked twice
    seeds["prog-steps"] = (bytes([AES128]) + seal(20) + op(DUP, 0) + op(CHECK, 0, 0) +
        op(CHECK, 1, 0) + op(UNSEAL, 1) + op(UNSEAL, 0) + op(ACCEPT, 0) + op(ACCEPT, 1) +
        op(CHECK, 0, 1) + op(ACCEPT, 0))
    # the end of the sequence space
    seeds["prog-exhaust"] = (bytes([CHACHA | START_END]) + seal(5) + seal(5) + seal(5) +
        seal(5) + op(PERM, 1) + op(OPEN, 2, OPEN_COPY) + op(OPEN, 0, OPEN_COPY))
    # records opened newest first (their wire numbers say nothing of the
    # order), then each again; the permutations round-trip
    seeds["prog-window"] = (bytes([AES256 | START_EDGE]) + seal(8) + seal(8) + op(PERM, 13) +
        seal(8) + op(OPEN, 2, OPEN_COPY) + op(OPEN, 1, OPEN_COPY) + op(OPEN, 0, OPEN_COPY) +
        op(PERM, 0) + seal(8) + op(OPEN, 3, OPEN_COPY) + op(OPEN, 0, OPEN_COPY))
    # several records in one call, one of them twice; other directions' keys
    seeds["prog-batch"] = (bytes([AES128 | START_ZERO]) + seal(1) + seal(2) + seal(3) +
        op(DUP, 1) + op(BATCH, 3, 0, 1, 3, 2) + op(OPEN, 2, OPEN_OTHER) +
        op(OPEN, 2, OPEN_SMALL))
    # the largest plaintext there is, and one past it (plain_len)
    seeds["prog-large"] = (bytes([CHACHA]) + seal(253) + seal(254) + seal(253, 3) +
        op(OPEN, 1, OPEN_IN_PLACE) + op(OPEN, 0, OPEN_STEPS))
    return seeds


# --- fuzz_handshake -----------------------------------------------------------
(E_DROP, E_DUP, E_HOLD, E_FLIP, E_HEADER, E_MSG, E_TRUNC, E_EXTEND, E_FRAGMENT, E_JOIN,
 E_ALT_SRC, E_ALT_SID, E_REFUSE, E_IN_PLACE, E_ROTATE) = range(15)
CLIENTS = ["aes128", "aes256", "chacha", "unknown-key", "no-cert", "no-cipher", "no-group",
           "no-sigalg", "dtls10"]
DATA3, CLOSE, RENEG, SRV_DATA, SRV_IN_PLACE, SRV_CLOSE, TIMERS = 3, 4, 8, 16, 32, 64, 128
FULL = DATA3 | CLOSE | SRV_DATA
# The client's records of a full handshake, by index (fuzz_handshake.c).
CH, CH_COOKIE, CERT, CKE, CV, CCS, FIN, DATA = range(8)


def hs(client, flags, *edits):
    return bytes([client, flags]) + b"".join(bytes(e) for e in edits)


def handshake_seeds():
    seeds = {}
    for i, name in enumerate(CLIENTS):
        seeds["client-" + name] = hs(i, FULL if i < 3 else 0)
    for idx, name in ((CH, "hello"), (CH_COOKIE, "hello-cookie"), (CERT, "certificate"),
                      (CKE, "key-exchange"), (CV, "verify"), (FIN, "finished")):
        seeds["flip-" + name] = hs(0, FULL, (idx, E_FLIP, 1, 0, 40))
    seeds["drop-hello-cookie"] = hs(0, FULL, (CH_COOKIE, E_DROP, 0, 0, 0))
    seeds["dup-certificate"] = hs(1, FULL, (CERT, E_DUP, 0, 0, 0))
    seeds["reorder-verify"] = hs(2, FULL, (CKE, E_HOLD, 0, 0, 0))
    seeds["late-finished"] = hs(0, FULL, (FIN, E_HOLD, 1, 0, 0))
    seeds["fragment-hello"] = hs(0, FULL, (CH, E_FRAGMENT, 0, 60, 0))
    seeds["fragment-hello-cookie"] = hs(0, FULL, (CH_COOKIE, E_FRAGMENT, 0, 100, 1))
    seeds["fragment-certificate"] = hs(0, FULL, (CERT, E_FRAGMENT, 0, 150, 1))
    seeds["join-verify"] = hs(0, FULL, (CKE, E_JOIN, 0, 0, 0))
    seeds["other-source"] = hs(0, FULL, (CH_COOKIE, E_ALT_SRC, 0, 0, 0))
    seeds["other-session-id"] = hs(0, FULL, (CH_COOKIE, E_ALT_SID, 0, 0, 0))
    seeds["refused"] = hs(0, FULL, (CH_COOKIE, E_REFUSE, 0, 0, 0))
    seeds["epoch-finished"] = hs(0, FULL, (FIN, E_HEADER, 2, 0, 2))
    seeds["msgseq-verify"] = hs(0, FULL, (CV, E_MSG, 2, 0, 9))
    seeds["truncate-verify"] = hs(0, FULL, (CV, E_TRUNC, 0, 0, 5))
    seeds["extend-certificate"] = hs(0, FULL, (CERT, E_EXTEND, 1, 10, 0))
    seeds["replay-data"] = hs(0, FULL, (DATA, E_DUP, 0, 0, 0), (DATA + 1, E_HOLD, 1, 0, 0))
    seeds["tamper-data"] = hs(2, FULL, (DATA, E_FLIP, 1, 0, 20))
    seeds["renegotiate"] = hs(0, 1 | RENEG | SRV_DATA)
    seeds["other-source-v6"] = hs(0, FULL, (CH_COOKIE, E_ALT_SRC, 1, 0, 0))
    seeds["rotate-once"] = hs(0, FULL, (CH_COOKIE, E_ROTATE, 0, 0, 0))
    seeds["rotate-twice"] = hs(0, FULL, (CH_COOKIE, E_ROTATE, 1, 0, 0))
    seeds["server-ends"] = hs(1, DATA3 | SRV_DATA | SRV_IN_PLACE | SRV_CLOSE | TIMERS,
                              (DATA, E_IN_PLACE, 0, 0, 0), (CV, E_IN_PLACE, 0, 0, 0))
    # every flight changed a little, none fatally: a long program to grow from
    seeds["everything"] = hs(0, FULL | TIMERS, (CH, E_DUP, 0, 0, 0), (CH, E_FRAGMENT, 0, 50, 0),
        (CH_COOKIE, E_HOLD, 0, 0, 0), (CERT, E_DUP, 0, 0, 0), (CERT, E_FRAGMENT, 0, 200, 1),
        (CKE, E_HOLD, 0, 0, 0), (CV, E_DUP, 0, 0, 0), (CCS, E_DUP, 0, 0, 0),
        (FIN, E_DUP, 0, 0, 0), (DATA, E_HOLD, 1, 0, 0), (DATA + 1, E_IN_PLACE, 0, 0, 0),
        (DATA + 2, E_DUP, 0, 0, 0), (DATA + 3, E_HOLD, 1, 0, 0))
    return seeds


# --- fuzz_stream -----------------------------------------------------------------
# The second byte picks the reader's largest frame (maxes[] of
# fuzz_stream.c): 0 -> 1, 1 -> 2, 4 -> 256, 5 -> 1500, 6 -> 16384,
# 8 -> 65535, 9 -> 70000 (clamped to 65535).


def frame(payload):
    return struct.pack(">H", len(payload)) + payload


def stream_seeds():
    ip = bytes.fromhex("4500002800000000400600000a4d00010a4d0002") + bytes(20)
    return {
        "one-frame": b"\xff\x06" + frame(b"\0\0\0\0\0"),
        "zero": b"\x03\x06" + b"\0\0" + b"junk",
        "oversize": b"\x01\x06" + b"\xff\xff" + bytes(9),
        "over-small-max": b"\x00\x05" + frame(bytes(1500)) + b"\x05\xdd" + bytes(8),
        "max-1": b"\x00\x00" + frame(b"a") + frame(b"b") + b"\x00\x02xy",
        "max-65535": b"\xff\x08" + frame(bytes(1000)) + b"\xff\xff" + bytes(100),
        "clamped": b"\x10\x09" + frame(b"z" * 300) + b"\xff\xff",
        "partial": b"\x0a\x06" + b"\x05\xdc" + b"x" * 100,
        "split-1": b"\x00\x06" + frame(ip) + frame(ip[:20]),
        "split-7": b"\x06\x06" + frame(b"A" * 100) + frame(b"B" * 1400),
    }


def pq_init(off, piece):
    return b"\x20\x05\x00\x00" + struct.pack(">H", off) + piece


def msg(m):
    return struct.pack(">H", len(m)) + m


def pqmsg_seeds():
    key = bytes((i * 13 + 7) & 0xff for i in range(1184))
    other = key[:700] + bytes([key[700] ^ 1]) + key[701:]
    return {
        "whole": msg(pq_init(0, key)),
        "halves": msg(pq_init(592, key[592:])) + msg(pq_init(0, key[:592])),
        "repeat": msg(pq_init(0, key)) + msg(pq_init(0, key)) + msg(pq_init(592, key[592:])),
        "conflict": msg(pq_init(592, key[592:])) + msg(pq_init(0, other)) +
        msg(pq_init(0, key[:592])),
        "overlap": msg(pq_init(0, key[:600])) + msg(pq_init(500, key[500:])),
        "past-end": msg(pq_init(1183, key[:2])) + msg(pq_init(1184, b"x")),
        "empty": msg(pq_init(0, b"")) + msg(b"\x20\x05\x00\x00\x00"),
        "reply": msg(b"\x20\x06\x00\x00" + bytes(1088)),
        "refusal": msg(b"\x20\x07\x00\x00\x03"),
    }


def write(d, seeds):
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def main():
    write(os.path.join(HERE, "corpus", "record"), record_seeds())
    write(os.path.join(HERE, "corpus", "handshake"), handshake_seeds())
    write(os.path.join(HERE, "corpus", "stream"), stream_seeds())
    write(os.path.join(HERE, "corpus", "pqmsg"), pqmsg_seeds())


if __name__ == "__main__":
    sys.exit(main())
