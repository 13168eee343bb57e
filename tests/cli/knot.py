#!/usr/bin/env python3
"""The one intended cycle of src/ (peer.h): the files that call each other
must be a subset of {tx, peer, peer_timers, handshake}: at most five
modules, and no transport (tcp, transport_udp, udpout: transport.h),
which the knot reaches only through ops passed in.

The call graph is read from the build: each object of src/libtoud.a and
of the programs names the global symbols it defines and those it needs
(nm), so a symbol one file needs and another defines is an arrow between
the two .c files.  A static inline function of a header leaves no symbol,
so it is read from the sources: it belongs to its header's module (x.h's
to x.c, or to x.h where there is no x.c), a file whose text names it has
an arrow to that module, and the names its body uses make the module's
own arrows.  Moving a function into a header hides no dependency.

usage: knot.py BUILDDIR [SRCDIR]
Prints the strongly connected components of more than one file; exits 1
if one is not a subset of the named knot (each of its arrows with the
symbols that make it, and one cycle through the files that must not be in
it), 2 if the objects cannot be read.
"""
import os
import re
import subprocess
import sys

KNOT = {"tx.c", "peer.c", "peer_timers.c", "handshake.c"}
# Never in it: the transports and their output queues.
TRANSPORTS = {"tcp.c", "transport_udp.c", "udpout.c"}
assert len(KNOT) <= 5 and not KNOT & TRANSPORTS


def source_of(obj):
    """src/libtoud_a-tx.o, src/toud-toud.o -> tx.c, toud.c"""
    base = os.path.basename(obj)[:-2]
    return base.split("-", 1)[1] + ".c" if "-" in base else base + ".c"


def symbols(paths):
    """{object: (defined, undefined)} of the global symbols in the objects
    and archives given (nm -A names the object of each)."""
    out = subprocess.run(["nm", "-g", "-A"] + paths, check=True, capture_output=True,
                         text=True).stdout
    objs = {}
    for line in out.splitlines():
        where, _, rest = line.rpartition(":")
        f = rest.split()
        if not (len(f) == 2 and f[0] in ("U", "w", "v")) and len(f) != 3:
            continue            # a blank line, the archive's index
        obj = os.path.basename(where.rpartition(":")[2] or where)
        d, u = objs.setdefault(obj, (set(), set()))
        if len(f) == 2:
            u.add(f[1])
        elif f[1] not in ("U", "w", "v"):
            d.add(f[2])
    return objs


def graph(objs):
    """{file: {file it calls: sorted symbols}}, and {symbol: file}"""
    where, needs = {}, {}
    for obj, (d, u) in objs.items():
        src = source_of(obj)
        for s in d:
            where[s] = src
        needs.setdefault(src, set()).update(u)
    g = {src: {} for src in needs}
    for src, syms in needs.items():
        for s in syms:
            dst = where.get(s)
            if dst and dst != src:
                g[src].setdefault(dst, []).append(s)
    for src in g:
        for dst in g[src]:
            g[src][dst].sort()
    return g, where


def strip_c(text):
    """The text without comments, strings and character constants."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  " ", text, flags=re.S)


def inline_functions(text):
    """{name: body} of the static inline functions defined in a header."""
    out = {}
    for m in re.finditer(r"\bstatic\s+inline\b[^;{}()]*?\b(\w+)\s*\(", text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        j = i
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j == len(text) or text[j] == ";":
            continue            # a declaration (attributes follow it)
        k, depth = j + 1, 1
        while k < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        out[m.group(1)] = text[j:k]
    return out


def add_inline(g, srcdir, defined):
    """Add the arrows of the static inline functions of srcdir's headers
    to g: a file that names one calls its header's module; the module
    calls what the body names (another inline function, or a global
    symbol of the objects, defined)."""
    texts = {}
    for f in sorted(os.listdir(srcdir)):
        if f.endswith((".c", ".h")):
            with open(os.path.join(srcdir, f)) as fp:
                texts[f] = strip_c(fp.read())
    owner, bodies = {}, {}
    for f, text in texts.items():
        if not f.endswith(".h"):
            continue
        mod = f[:-2] + ".c" if f[:-2] + ".c" in texts else f
        for name, body in inline_functions(text).items():
            owner[name] = mod
            bodies[name] = body
    users = {}
    for f, text in texts.items():
        if f.endswith(".c"):
            if f not in g:
                continue        # not built (a bench or test file)
            users[f] = set(re.findall(r"\b\w+\b", text))
    for name, body in bodies.items():
        users.setdefault(owner[name], set()).update(re.findall(r"\b\w+\b", body))
    for src, words in users.items():
        g.setdefault(src, {})
        for w in words:
            dst = owner.get(w) or defined.get(w)
            if dst and dst != src and (w in owner or src.endswith(".h")):
                g[src].setdefault(dst, []).append(w + "()" if w in owner else w)
    for src in g:
        for dst in g[src]:
            g[src][dst] = sorted(set(g[src][dst]))
            g.setdefault(dst, {})


def tarjan(g):
    """Strongly connected components (iterative Tarjan)."""
    index, low, on, stack, sccs = {}, {}, set(), [], []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                sccs.append(sorted(scc))
    return sccs


def shortest_cycle(g, members, start):
    """A shortest cycle from start back to it, inside members (BFS)."""
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: knot.py BUILDDIR [SRCDIR]", file=sys.stderr)
        return 2
    # The library as it was last archived (no stale object of a removed
    # file), and the programs' own objects.
    paths = [os.path.join(sys.argv[1], "src", f)
             for f in ("libtoud.a", "toud-toud.o", "touctl-touctl.o")]
    missing = [f for f in paths if not os.path.exists(f)]
    if missing:
        print("knot.py: %s missing (build first)" % " ".join(missing), file=sys.stderr)
        return 2
    objs = symbols(paths)
    g, defined = graph(objs)
    srcdir = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    add_inline(g, srcdir, defined)
    bad = 0
    for scc in tarjan(g):
        if len(scc) < 2:
            continue
        members = set(scc)
        ok = members <= KNOT
        print("%s: %s" % ("the named cycle" if ok else "CYCLE OUTSIDE THE NAMED ONE",
                          " ".join(scc)))
        if not ok:
            bad += 1
            outsider = sorted(members - KNOT)[0]
            print("  for example: %s" % " -> ".join(shortest_cycle(g, members, outsider)))
        for src in scc:
            for dst in sorted(g[src]):
                if dst in members:
                    print("  %s -> %s: %s" % (src, dst, ", ".join(g[src][dst])))
    print("%d object files; %s" % (len(objs), "no cycle outside {%s}" % ", ".join(sorted(KNOT))
                                   if not bad else "%d cycle(s) outside {%s}" %
                                   (bad, ", ".join(sorted(KNOT)))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
