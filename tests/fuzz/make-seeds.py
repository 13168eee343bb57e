#!/usr/bin/env python3
# make-seeds.py - the seed programs of fuzz_record (its inputs are
# programs: see the comment at the top of fuzz_record.c for the ops).
# Each seed takes one path to its end (every cipher, every field changed,
# reordering, replay, the window's edge, the end of the sequence space),
# from which the fuzzer mutates.  The records of make-vectors.py
# (tests/unit/data/record) are seeds of fuzz_record too.
#
#   tests/fuzz/make-seeds.py        rewrites corpus/record/prog-*
import os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))

# --- fuzz_record ------------------------------------------------------------
SEAL, FRAME, FINISH, JUMP, MUT, DUP, RAW, OPEN, CHECK, UNSEAL, ACCEPT, BATCH = range(12)
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
    # an opening thread's three steps, with the same record checked twice
    seeds["prog-steps"] = (bytes([AES128]) + seal(20) + op(DUP, 0) + op(CHECK, 0, 0) +
        op(CHECK, 1, 0) + op(UNSEAL, 1) + op(UNSEAL, 0) + op(ACCEPT, 0) + op(ACCEPT, 1) +
        op(CHECK, 0, 1) + op(ACCEPT, 0))
    # the end of the sequence space
    seeds["prog-exhaust"] = (bytes([CHACHA | START_END]) + seal(5) + seal(5) + seal(5) +
        seal(5) + op(JUMP, 1) + op(OPEN, 2, OPEN_COPY) + op(OPEN, 0, OPEN_COPY))
    # the window's edge: a jump leaves the first record just inside, then out
    seeds["prog-window"] = (bytes([AES256 | START_EDGE]) + seal(8) + seal(8) + op(JUMP, 13) +
        seal(8) + op(OPEN, 2, OPEN_COPY) + op(OPEN, 1, OPEN_COPY) + op(OPEN, 0, OPEN_COPY) +
        op(JUMP, 0) + seal(8) + op(OPEN, 3, OPEN_COPY) + op(OPEN, 0, OPEN_COPY))
    # several records in one call, one of them twice; other directions' keys
    seeds["prog-batch"] = (bytes([AES128 | START_ZERO]) + seal(1) + seal(2) + seal(3) +
        op(DUP, 1) + op(BATCH, 3, 0, 1, 3, 2) + op(OPEN, 2, OPEN_OTHER) +
        op(OPEN, 2, OPEN_SMALL))
    # the largest plaintext there is, and one past it (plain_len)
    seeds["prog-large"] = (bytes([CHACHA]) + seal(253) + seal(254) + seal(253, 3) +
        op(OPEN, 1, OPEN_IN_PLACE) + op(OPEN, 0, OPEN_STEPS))
    return seeds


def write(d, seeds):
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def main():
    write(os.path.join(HERE, "corpus", "record"), record_seeds())


if __name__ == "__main__":
    sys.exit(main())
