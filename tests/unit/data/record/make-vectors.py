#!/usr/bin/env python3
# make-vectors.py - DTLS 1.2 application-data records computed from the
# specifications alone (RFC 5246 5 and 6.3: PRF and key block; RFC 6347
# 4.1: header and AAD; RFC 5288: AES-GCM nonce; RFC 7905: ChaCha20-Poly1305
# nonce), with Python's hmac and the "cryptography" package, nothing of
# toud's.  check_record opens and re-seals them; fuzz_record's corpus gets
# them too, as programs that open them.  Writes vectors.txt here and seeds
# into tests/fuzz/corpus/record.
#
# vectors.txt, one record per line, hex fields separated by spaces:
#   cipher(1=AES-128-GCM 2=AES-256-GCM 3=ChaCha20-Poly1305) direction(c|s)
#   master client_random server_random epoch seq nonce_explicit plaintext record
import hashlib, hmac, os, struct, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "..", "fuzz", "corpus", "record")

def p_hash(md, secret, seed, n):
    out, a = b"", seed
    while len(out) < n:
        a = hmac.new(secret, a, md).digest()
        out += hmac.new(secret, a + seed, md).digest()
    return out[:n]

CIPHERS = {  # id: (name, key length, IV length, PRF hash, AEAD)
    1: ("AES-128-GCM", 16, 4, hashlib.sha256, AESGCM),
    2: ("AES-256-GCM", 32, 4, hashlib.sha384, AESGCM),
    3: ("ChaCha20-Poly1305", 32, 12, hashlib.sha256, ChaCha20Poly1305),
}

def record(cid, key, iv, epoch, seq, explicit, plain):
    _, _, _, _, aead = CIPHERS[cid]
    seq64 = struct.pack("!HQ", epoch, seq)[0:2] + struct.pack("!Q", seq)[2:]
    aad = seq64 + bytes([23]) + b"\xfe\xfd" + struct.pack("!H", len(plain))
    if cid in (1, 2):
        nonce = iv + struct.pack("!Q", explicit)
        body = struct.pack("!Q", explicit) + aead(key).encrypt(nonce, plain, aad)
    else:
        pad = b"\0\0\0\0" + seq64
        nonce = bytes(a ^ b for a, b in zip(iv, pad))
        body = aead(key).encrypt(nonce, plain, aad)
    return bytes([23]) + b"\xfe\xfd" + seq64 + struct.pack("!H", len(body)) + body

def main():
    lines = []
    seeds = []
    for cid, (name, kl, il, md, _) in CIPHERS.items():
        master = bytes((7 * i + cid) & 0xff for i in range(48))
        cr = bytes((11 * i + 1) & 0xff for i in range(32))
        sr = bytes((13 * i + 2) & 0xff for i in range(32))
        kb = p_hash(md, master, b"key expansion" + sr + cr, 2 * kl + 2 * il)
        keys = {"c": (kb[0:kl], kb[2 * kl:2 * kl + il]),
                "s": (kb[kl:2 * kl], kb[2 * kl + il:2 * kl + 2 * il])}
        for d, (epoch, seq, explicit, plain) in (
                ("c", (1, (1 << 47), 0x8000000000000000 | 0x0123456789, b"toud record vector")),
                ("s", (1, (1 << 47) + 5, 0xfedcba9876543210, bytes(range(256)) * 5 + b"end")),
                ("c", (1, 3, 3, b"\x00\x06\x00\x00" + b"x" * 60))):
            key, iv = keys[d]
            rec = record(cid, key, iv, epoch, seq, explicit, plain)
            lines.append(" ".join([str(cid), d, master.hex(), cr.hex(), sr.hex(),
                                   "%x" % epoch, "%x" % seq, "%016x" % explicit,
                                   plain.hex(), rec.hex()]))
            seeds.append((cid, d, rec))
    with open(os.path.join(HERE, "vectors.txt"), "w") as f:
        f.write("# made by make-vectors.py: cipher dir master client_random server_random"
                " epoch seq nonce_explicit plaintext record\n")
        f.write("\n".join(lines) + "\n")
    # fuzz seeds (programs of fuzz_record.c): the cipher byte, then RAW
    # (op 6, 16-bit length, the record) and OPEN (op 7) on the direction
    # whose keys sealed it
    os.makedirs(CORPUS, exist_ok=True)
    for i, (cid, d, rec) in enumerate(seeds):
        prog = (bytes([(cid - 1) * 2, 6]) + struct.pack("!H", len(rec)) + rec +
                bytes([7, 0, 4 if d == "s" else 0]))
        with open(os.path.join(CORPUS, "vector-%d" % i), "wb") as f:
            f.write(prog)

if __name__ == "__main__":
    sys.exit(main())
