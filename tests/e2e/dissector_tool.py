#!/usr/bin/env python3
"""dissector_tool.py - run tshark with contrib/toud.lua and summarise.

  dissector_tool.py summary LUA PCAP PORT [KEYLOG [ADDR]]
      Dissect an underlay capture and print one JSON object of counts:
      what toud, DTLS and the inner TCP look like on every UDP/6080 frame,
      next to the same counts taken from the raw bytes of the capture.
      PORT is the inner TCP server port of the transfer.  With ADDR, only
      the frames from or to that outer address count (KEYLOG may be "" for
      none; the raw counts stay the whole capture's).

  dissector_tool.py psk LUA DIR
      Write DIR/psk.pcap and DIR/psk.keylog: data records of sessions with
      a preshared key in each cipher and direction, and the key log's
      TOUD_PSK_DATA_KEYS lines; dissect them and print a JSON object whose
      "failures" list is empty when every record decrypts to its inner
      packet and one under keys not in the log decrypts to nothing.

  dissector_tool.py cases LUA DIR
      Write DIR/cases.pcap, a capture of hand-made datagrams (the framing
      of doc/protocol.md, good and broken), dissect it and print a JSON
      object whose "failures" list is empty when every frame came out as
      expected: good frames with their fields and no toud expert info,
      broken ones with expert info, and never a Lua error.
"""

import json
import os
import random
import struct
import subprocess
import sys

from e2eutil import csum

TOUD_PORT = 6080

FIELDS = [
    "frame.number", "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "toud.encryption",
    "toud.session_id", "dtls.record.content_type", "toud.inner.kind",
    "toud.inner.proto", "toud.ctrl.type", "toud.ctrl.nonce", "ip.version",
    "tcp.srcport", "tcp.dstport", "tcp.flags", "udp.length",
    "http.request", "http.request.uri", "_ws.lua.error", "_ws.malformed", "toud.malformed",
    "toud.refused", "toud.inner.malformed", "toud.inner.refused",
    "_ws.expert.message",
]
EXPERTS = ["toud.malformed", "toud.refused", "toud.inner.malformed", "toud.inner.refused"]
SEP = "\x1f"


def tshark(lua, pcap, keylog=None):
    """Dissect pcap; one dict per frame, each field a list of occurrences."""
    cmd = ["tshark", "-n", "-X", "lua_script:" + lua, "-r", pcap,
           "-o", "tcp.check_checksum:FALSE", "-T", "fields",
           "-E", "header=n", "-E", "separator=\t", "-E", "occurrence=a",
           "-E", "aggregator=" + SEP]
    if keylog:
        cmd += ["-o", "tls.keylog_file:" + keylog, "-o", "toud.keylog_file:" + keylog]
    for f in FIELDS:
        cmd += ["-e", f]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    err = "\n".join(l for l in p.stderr.splitlines() if "Running as user" not in l)
    if p.returncode != 0:
        sys.exit("tshark failed (%d): %s" % (p.returncode, err))
    frames = []
    for line in p.stdout.splitlines():
        vals = line.split("\t")
        vals += [""] * (len(FIELDS) - len(vals))
        frames.append({f: [x for x in v.split(SEP) if x != ""] if v else []
                       for f, v in zip(FIELDS, vals)})
    return frames, err


def first(fr, f):
    return fr[f][0] if fr[f] else None


def num(s):
    return int(s, 0) if s is not None else None


def experts(fr):
    return [e for e in EXPERTS if fr[e]]


def read_pcap(path):
    """(linktype, [frame bytes]) of a classic pcap file."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    link = struct.unpack(e + "I", data[20:24])[0]
    out, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack(e + "I", data[off + 8:off + 12])[0]
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return link, out


def udp_payload(pkt):
    """The payload of an Ethernet/IPv4/IPv6 UDP/6080 frame, or None."""
    if len(pkt) < 14:
        return None
    etype = struct.unpack("!H", pkt[12:14])[0]
    ip = pkt[14:]
    if etype == 0x0800 and len(ip) >= 20:
        if ip[9] != 17:
            return None
        l4 = ip[(ip[0] & 15) * 4:struct.unpack("!H", ip[2:4])[0]]
    elif etype == 0x86dd and len(ip) >= 40:
        if ip[6] != 17:
            return None
        l4 = ip[40:40 + struct.unpack("!H", ip[4:6])[0]]
    else:
        return None
    if len(l4) < 8:
        return None
    sport, dport, ulen = struct.unpack("!HHH", l4[:6])
    if TOUD_PORT not in (sport, dport):
        return None
    return l4[8:ulen]


def summary(lua, pcap, port, keylog=None, addr=None):
    frames, err = tshark(lua, pcap, keylog)
    if addr:
        # the outer header's addresses: the first of each frame
        frames = [fr for fr in frames if addr in fr["ip.src"][:1] + fr["ip.dst"][:1]]
    s = {"frames": len(frames), "udp6080": 0, "toud": 0, "encryption": {},
         "with_session_id": 0, "sessions": [], "tcp_sessions": [],
         "dtls_records": 0, "dtls_types": {}, "appdata": 0,
         "appdata_with_inner": 0, "inner_kinds": {}, "inner_valid": 0, "tcp": 0, "tcp_port": 0,
         "tcp_other": 0, "tcp_to_port": 0, "tcp_from_port": 0, "tcp_no_flags": 0,
         "syn": 0, "synack": 0, "http_uris": [], "lua_errors": 0,
         "toud_experts": 0, "malformed": 0, "samples": [], "tshark_stderr": err[:500]}
    sessions, tcp_sessions = set(), set()
    for fr in frames:
        ports = [num(x) for x in fr["udp.srcport"][:1] + fr["udp.dstport"][:1]]
        if TOUD_PORT not in ports:
            continue
        s["udp6080"] += 1
        enc = first(fr, "toud.encryption")
        if enc:
            s["toud"] += 1
            s["encryption"][enc] = s["encryption"].get(enc, 0) + 1
        sid = first(fr, "toud.session_id")
        if sid is not None:
            s["with_session_id"] += 1
            sessions.add("%016x" % num(sid))
        ct = fr["dtls.record.content_type"]
        if ct:
            s["dtls_records"] += 1
            for c in ct:
                s["dtls_types"][c] = s["dtls_types"].get(c, 0) + 1
            if "23" in ct:
                s["appdata"] += 1
                if fr["toud.inner.kind"]:
                    s["appdata_with_inner"] += 1
        for k in fr["toud.inner.kind"]:
            s["inner_kinds"][k] = s["inner_kinds"].get(k, 0) + 1
        if fr["toud.inner.kind"] and fr["toud.inner.kind"][0] in ("compact", "ip", "control"):
            s["inner_valid"] += 1
        if fr["_ws.lua.error"]:
            s["lua_errors"] += 1
        if experts(fr):
            s["toud_experts"] += 1
        if fr["_ws.malformed"]:
            s["malformed"] += 1
        if (fr["_ws.lua.error"] or experts(fr) or fr["_ws.malformed"]) and len(s["samples"]) < 5:
            s["samples"].append("frame %s: %s" % (first(fr, "frame.number"),
                                                  "; ".join(fr["_ws.expert.message"])[:300]))
        if not fr["tcp.srcport"]:
            continue
        s["tcp"] += 1
        if sid is not None:
            tcp_sessions.add("%016x" % num(sid))
        sp, dp = num(first(fr, "tcp.srcport")), num(first(fr, "tcp.dstport"))
        flags = num(first(fr, "tcp.flags"))
        if flags is None:
            s["tcp_no_flags"] += 1
            flags = 0
        if dp == port:
            s["tcp_to_port"] += 1
        if sp == port:
            s["tcp_from_port"] += 1
        if port in (sp, dp):
            s["tcp_port"] += 1
        else:
            s["tcp_other"] += 1
        if flags & 0x12 == 0x02 and dp == port:
            s["syn"] += 1
        if flags & 0x12 == 0x12 and sp == port:
            s["synack"] += 1
        # Requests only: Wireshark 4.4 repeats the request's URI in the
        # response (a generated http.request.uri).
        if fr["http.request"]:
            s["http_uris"] += fr["http.request.uri"]
    s["sessions"] = sorted(sessions)
    s["tcp_sessions"] = sorted(tcp_sessions)

    # the same datagrams, counted from the raw bytes
    link, pkts = read_pcap(pcap)
    raw = {"linktype": link, "udp6080": 0, "compact_tcp": 0, "outer": 0, "appdata": 0}
    for pkt in pkts:
        p = udp_payload(pkt)
        if p is None:
            continue
        raw["udp6080"] += 1
        if p[:4] == b"\x00\x06\x00\x00":
            raw["compact_tcp"] += 1
        if p[:4] == b"\x03\x3b\x00\x01":
            raw["outer"] += 1
            if len(p) > 16 and p[16] == 23:
                raw["appdata"] += 1
    s["raw"] = raw
    return s


# --- hand-made cases ------------------------------------------------------

def vector(name):
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "data", "vectors")
    b = b""
    for line in open(os.path.join(top, name + ".hex")):
        line = line.split("#")[0].strip()
        if line:
            b += bytes.fromhex(line)
    return b


def outer(sid=0x0123456789abcdef, word=b"\x03\x3b\x00\x01", pflags=0x60000000):
    return word + struct.pack("!IQ", pflags, sid)


def record(ctype=23, ver=0xfefd, epoch=1, seq=5, body=b"\x40" * 40, length=None):
    n = len(body) if length is None else length
    return struct.pack("!BHH", ctype, ver, epoch) + seq.to_bytes(6, "big") + \
        struct.pack("!H", n) + body


def cases():
    """(name, payload, expect): expect is "clean" with fields to compare, or
    "expert" (some toud expert info on the frame)."""
    rnd = random.Random(6080)
    syn = vector("v4_tcp_syn_compact")
    c = [
        ("compact TCP SYN", syn, {"toud.encryption": "none", "toud.inner.kind": "compact",
                                  "toud.inner.proto": "6", "tcp.srcport": "40000",
                                  "tcp.dstport": "22", "tcp.flags": "0x0002"}),
        ("compact TCP SYN, IPv6", vector("v6_tcp_syn_compact"),
         {"toud.inner.kind": "compact", "tcp.srcport": "40000", "tcp.dstport": "22"}),
        ("compact UDP", vector("v4_udp_compact"),
         {"toud.inner.kind": "compact", "toud.inner.proto": "17", "udp.length": "16"}),
        ("compact ICMP", vector("v4_icmp_echo_compact"),
         {"toud.inner.kind": "compact", "toud.inner.proto": "1"}),
        ("direct IPv4", vector("v4_direct"), {"toud.inner.kind": "ip", "ip.version": "4"}),
        ("direct IPv6", vector("v6_direct"), {"toud.inner.kind": "ip", "ip.version": "6"}),
        ("keepalive", vector("ctl_keepalive"), {"toud.inner.kind": "control",
                                                "toud.ctrl.type": "1"}),
        ("challenge", vector("ctl_challenge"), {"toud.ctrl.type": "2",
                                                "toud.ctrl.nonce": "a1b2c3d4e5f60718"}),
        ("response", vector("ctl_response"), {"toud.ctrl.type": "3"}),
        ("close", vector("ctl_close"), {"toud.ctrl.type": "4"}),
        ("outer, application data", vector("outer_dtls"),
         {"toud.encryption": "dtls", "toud.session_id": "0x0123456789abcdef",
          "dtls.record.content_type": "23"}),
        ("outer, handshake", outer(7) + record(22, 0xfeff, 0, 0, bytes(60)),
         {"toud.session_id": "0x0000000000000007"}),
        # broken outer framing
        ("outer, 1 byte", b"\x03", "expert"),
        ("outer, 3 bytes", b"\x03\x3b\x00", "expert"),
        ("outer, 10 bytes", outer()[:10], "expert"),
        ("outer, no record", outer(), "expert"),
        ("outer, 5 bytes of record", outer() + record()[:5], "expert"),
        ("outer, proto 17", outer(word=b"\x03\x11\x00\x01") + record(), "expert"),
        ("outer, flags 0", outer(word=b"\x03\x3b\x00\x00") + record(), "expert"),
        ("outer, REMCSUM", outer(pflags=0xe0000000) + record(), "expert"),
        ("outer, no S", outer(pflags=0x20000000) + record(), "expert"),
        ("outer, session 0", outer(sid=0) + record(), "expert"),
        ("outer, content type 99", outer() + record(ctype=99), "expert"),
        ("outer, version 0x0303", outer() + record(ver=0x0303), "expert"),
        ("outer, app data 0xfeff", outer() + record(ver=0xfeff), "expert"),
        ("outer, length too long", outer() + record(length=200), "expert"),
        ("outer, length too short", outer() + record(length=3), "expert"),
        ("outer, huge record", outer() + record(body=bytes(1400), length=0xffff), "expert"),
        # broken inner framing
        ("inner, 1 byte", b"\x00", "expert"),
        ("inner, 3 bytes", b"\x00\x06\x00", "expert"),
        ("variant 1, nibble 5", b"\x50" + bytes(30), "expert"),
        ("variant 1, nibble 7", b"\x7f", "expert"),
        ("variant 2", b"\x80\x06\x00\x00" + syn[4:], "expert"),
        ("variant 3", b"\xc0", "expert"),
        ("direct IPv4, truncated", b"\x45\x00", "expert"),
        ("direct IPv4, IHL 15", b"\x4f" + bytes(25), "expert"),
        ("direct IPv6, truncated", b"\x60\x00\x00\x00\x00\x10", "expert"),
        ("compact, no segment", b"\x00\x06\x00\x00", "expert"),
        ("compact, proto 0", b"\x00\x00\x00\x00" + bytes(20), "expert"),
        ("compact, proto 44", b"\x00\x2c\x00\x00" + bytes(20), "expert"),
        ("compact, Hlen 2", b"\x02\x06\x00\x00" + syn[4:], "expert"),
        ("compact, flags", b"\x00\x06\x80\x00" + syn[4:], "expert"),
        ("compact TCP, 10 bytes", syn[:14], "expert"),
        ("compact TCP, doff 60 > 40", syn[:16] + b"\xf0" + syn[17:], "expert"),
        ("compact TCP, doff 4", syn[:16] + b"\x10" + syn[17:], "expert"),
        ("compact UDP, 5 bytes", b"\x00\x11\x00\x00" + bytes(5), "expert"),
        ("compact UDP, length 99", b"\x00\x11\x00\x00" + struct.pack("!HHHH", 1, 2, 99, 0) + bytes(8),
         "expert"),
        ("compact ICMP, 2 bytes", b"\x00\x01\x00\x00\x08\x00", "expert"),
        ("control, type 9", b"\x20\x09\x00\x00abc", "expert"),
        ("control, type 0", b"\x20\x00\x00\x00", "expert"),
        ("keepalive with a body", b"\x20\x01\x00\x00" + bytes(8), "expert"),
        ("challenge, 3-byte nonce", b"\x20\x02\x00\x00abc", "expert"),
        ("response, no nonce", b"\x20\x03\x00\x00", "expert"),
        ("control, flags", b"\x20\x01\x00\x01", "expert"),
    ]
    for i in range(40):
        n = rnd.randrange(1, 200)
        c.append(("random %d" % i, bytes(rnd.getrandbits(8) for _ in range(n)), None))
    return c




def write_pcap(path, payloads):
    a, b = bytes([10, 200, 0, 1]), bytes([10, 200, 0, 2])
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, pl in enumerate(payloads):
            udp = struct.pack("!HHHH", TOUD_PORT, TOUD_PORT, 8 + len(pl), 0) + pl
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0x4000, 64, 17, 0, a, b)
            ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
            fr = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + udp
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(fr), len(fr)) + fr)


def run_cases(lua, outdir):
    cs = cases()
    pcap = os.path.join(outdir, "cases.pcap")
    write_pcap(pcap, [p for _, p, _ in cs])
    frames, err = tshark(lua, pcap)
    res = {"cases": len(cs), "frames": len(frames), "clean": 0, "expert": 0,
           "random": 0, "lua_errors": 0, "failures": [], "tshark_stderr": err[:500]}
    fail = res["failures"]
    if len(frames) != len(cs):
        fail.append("%d frames dissected, %d written" % (len(frames), len(cs)))
    for (name, _, expect), fr in zip(cs, frames):
        if fr["_ws.lua.error"]:
            res["lua_errors"] += 1
            fail.append("%s: Lua error: %s" % (name, "; ".join(fr["_ws.expert.message"])))
            continue
        if not fr["toud.encryption"]:
            fail.append("%s: not dissected as toud" % name)
            continue
        if expect is None:
            res["random"] += 1
        elif expect == "expert":
            if experts(fr):
                res["expert"] += 1
            else:
                fail.append("%s: no toud expert info" % name)
        else:
            bad = ["%s=%s (want %s)" % (k, fr[k], v) for k, v in expect.items()
                   if (fr[k][-1] if fr[k] else None) != v]
            if experts(fr):
                bad.append("expert info: %s" % "; ".join(fr["_ws.expert.message"]))
            if bad:
                fail.append("%s: %s" % (name, ", ".join(bad)))
            else:
                res["clean"] += 1
    return res


def ctr_encrypt(cipher, key, iv, data):
    """Counter-mode encryption with openssl enc (the dissector checks no tag)."""
    p = subprocess.run(["openssl", "enc", "-" + cipher, "-K", key.hex(), "-iv", iv.hex()],
                       input=data, stdout=subprocess.PIPE, check=True)
    return p.stdout


def psk_record(cipher, key, iv, seq, plain):
    """An application-data record sealed as doc/protocol.md 1.1 and 1.4 say."""
    hdr = struct.pack("!BHH", 23, 0xfefd, 1) + seq.to_bytes(6, "big")
    if cipher == "chacha20":
        nonce = bytes(a ^ b for a, b in zip(iv, b"\0\0\0\0" + hdr[3:11]))
        ct = ctr_encrypt("chacha20", key, struct.pack("<I", 1) + nonce, plain)
        body = ct
    else:
        explicit = os.urandom(8)
        ct = ctr_encrypt("aes-%d-ctr" % (8 * len(key)), key, iv + explicit + b"\0\0\0\2", plain)
        body = explicit + ct
    body += os.urandom(16)
    return hdr + struct.pack("!H", len(body)) + body


def run_psk_cases(lua, outdir):
    """Records of sessions with a preshared key, in each cipher and both
    directions, decrypted by the dissector from TOUD_PSK_DATA_KEYS lines,
    and the same after an ML-KEM-768 exchange from TOUD_PQ_DATA_KEYS
    lines; the exchange's messages (PQ_INIT whole and halved, PQ_REPLY)
    and a refusal under the first keys are named, without complaint; a
    record under keys the log does not have stays opaque."""
    syn, udp = vector("v4_tcp_syn_compact"), vector("v4_udp_compact")
    # a whole IPv4/UDP packet of several cipher blocks
    dgram = struct.pack("!HHHH", 50001, 9, 8 + 272, 0) + bytes(range(16)) * 17
    big = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(dgram), 1, 0x4000, 64, 17, 0,
                      bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2]))
    big = big[:10] + struct.pack("!H", csum(big)) + big[12:] + dgram
    suites = [("aes-128-gcm", 16, 4), ("aes-256-gcm", 32, 4), ("chacha20", 32, 12)]
    lines, cs = [], []
    for n, (name, kl, il) in enumerate(suites):
        ck, sk, civ, siv = os.urandom(kl), os.urandom(kl), os.urandom(il), os.urandom(il)
        lines.append("TOUD_PSK_DATA_KEYS %s %s %s %s %s" % (os.urandom(32).hex(), ck.hex(),
                     sk.hex(), civ.hex(), siv.hex()))
        c = "chacha20" if name == "chacha20" else name
        sid = 0x1111111111111111 * (n + 1)
        for d, (k, iv) in (("client", (ck, civ)), ("server", (sk, siv))):
            for i, (pl, want) in enumerate(((syn, {"toud.inner.kind": "compact",
                                                   "tcp.srcport": "40000", "tcp.dstport": "22"}),
                                            (udp, {"toud.inner.kind": "compact",
                                                   "toud.inner.proto": "17"}),
                                            (big, {"toud.inner.kind": "ip",
                                                   "udp.srcport": "50001",
                                                   "udp.length": "280"}))):
                seq = (1 << 47) + random.getrandbits(47)
                cs.append(("%s %s %d" % (name, d, i),
                           outer(sid + i) + psk_record(c, k, iv, seq, pl), want))
        # the exchange's messages under the preshared key's keys (K0) ...
        key = os.urandom(1184)
        ctl = b"\x20\x05\x00\x00"
        for i, pl in enumerate((ctl + struct.pack("!H", 0) + key,
                                ctl + struct.pack("!H", 592) + key[592:],
                                b"\x20\x06\x00\x00" + os.urandom(1088),
                                b"\x20\x07\x00\x00\x01")):
            seq = (1 << 47) + random.getrandbits(47)
            cs.append(("%s pq message %d" % (name, i),
                       outer(sid + 7) + psk_record(c, ck, civ, seq, pl),
                       {"toud.inner.kind": "control", "toud.ctrl.type": str(pl[1])}))
        # ... and K1's records, from the exchange's line
        qk, qiv = os.urandom(kl), os.urandom(il)
        lines.append("TOUD_PQ_DATA_KEYS %s %s %s %s %s" % (os.urandom(32).hex(), qk.hex(),
                     os.urandom(kl).hex(), qiv.hex(), os.urandom(il).hex()))
        seq = (1 << 47) + random.getrandbits(47)
        cs.append(("%s after the exchange" % name,
                   outer(sid + 8) + psk_record(c, qk, qiv, seq, syn),
                   {"toud.inner.kind": "compact", "tcp.dstport": "22"}))
        cs.append(("%s, keys not in the log" % name,
                   outer(sid) + psk_record(c, os.urandom(kl), os.urandom(il), 1 << 47, syn),
                   {"toud.inner.kind": None}))
    keylog = os.path.join(outdir, "psk.keylog")
    with open(keylog, "w") as f:
        f.write("\n".join(lines) + "\n")
    pcap = os.path.join(outdir, "psk.pcap")
    write_pcap(pcap, [p for _, p, _ in cs])
    frames, err = tshark(lua, pcap, keylog)
    res = {"cases": len(cs), "decrypted": 0, "opaque": 0, "failures": [],
           "tshark_stderr": err[:500]}
    if len(frames) != len(cs):
        res["failures"].append("%d frames dissected, %d written" % (len(frames), len(cs)))
    for (name, _, want), fr in zip(cs, frames):
        bad = ["%s=%s (want %s)" % (k, fr[k], v) for k, v in want.items()
               if (fr[k][-1] if fr[k] else None) != v]
        if fr["_ws.lua.error"] or experts(fr):
            bad.append("Lua error or expert info: %s" % "; ".join(fr["_ws.expert.message"]))
        if bad:
            res["failures"].append("%s: %s" % (name, ", ".join(bad)))
        elif want["toud.inner.kind"]:
            res["decrypted"] += 1
        else:
            res["opaque"] += 1
    return res


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "summary":
        keylog = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
        addr = sys.argv[6] if len(sys.argv) > 6 else None
        print(json.dumps(summary(sys.argv[2], sys.argv[3], int(sys.argv[4]), keylog, addr),
                         sort_keys=True))
    elif len(sys.argv) == 4 and sys.argv[1] == "psk":
        print(json.dumps(run_psk_cases(sys.argv[2], sys.argv[3]), sort_keys=True))
    elif len(sys.argv) == 4 and sys.argv[1] == "cases":
        print(json.dumps(run_cases(sys.argv[2], sys.argv[3]), sort_keys=True))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
