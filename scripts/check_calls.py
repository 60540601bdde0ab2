#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No call circles between the service's modules, read from the build.

Includes can hide a circle: a header may declare functions that another
file defines (ag_db.h once declared what ag_db_policies.c defined, so
the SQLite core called the policies table while it called the core back).
This reads what each object file of the given static libraries defines
and what it references (nm), joins a reference to the object that
defines the symbol, and reports every strongly connected group of more
than one object: a circle of direct calls (or data references). A call
through a function pointer handed in at run time is no edge, which is
the point: a lower part that needs a higher one takes a table of
functions from it.

With --layers, the archives are given lowest layer first, and an object
may reference no symbol defined in a later (higher) archive.

Usage: check_calls.py [--layers] LIB.a...   (exit 1 on any offence)
       check_calls.py --self-test
"""
import subprocess
import sys


def read_archive(path):
    """{object: (defined set, referenced set)} of one static library."""
    out = subprocess.run(["nm", "-A", "--defined-only", path], check=True,
                         text=True, capture_output=True).stdout
    und = subprocess.run(["nm", "-A", "--undefined-only", path],
                         check=True, text=True, capture_output=True).stdout
    objs = {}
    for text, slot in ((out, 0), (und, 1)):
        for line in text.splitlines():
            # libx.a:obj.o:0000000000000000 T name  /  libx.a:obj.o: U name
            head, _, rest = line.rpartition(":")
            obj = head.split(":")[-1]
            fields = rest.split()
            if len(fields) < 2:
                continue
            kind, name = fields[-2], fields[-1]
            entry = objs.setdefault(obj, (set(), set()))
            if slot == 0 and kind.isupper():
                entry[0].add(name)
            elif slot == 1:
                entry[1].add(name)
    return objs


def circles(graph):
    """Strongly connected groups of more than one node (Tarjan)."""
    index, low, on, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def check(libs, layered):
    """libs: [(layer name, {object: (defined, referenced)})], lowest
    first. Returns the offences as lines."""
    owner = {}
    rank = {}
    for i, (layer, objs) in enumerate(libs):
        for obj, (defined, _) in objs.items():
            rank[obj] = (i, layer)
            for name in defined:
                owner[name] = obj
    graph = {}
    bad = []
    for layer, objs in libs:
        for obj, (_, referenced) in objs.items():
            edges = graph.setdefault(obj, set())
            for name in sorted(referenced):
                to = owner.get(name)
                if to is None or to == obj:
                    continue
                edges.add(to)
                if layered and rank[to][0] > rank[obj][0]:
                    bad.append("%s (%s) calls %s of %s (%s), a higher "
                               "layer" % (obj, layer, name, to,
                                          rank[to][1]))
    for c in circles(graph):
        bad.append("a circle of calls: " + " <-> ".join(c))
    return bad


def self_test():
    def lib(layer, **objs):
        return (layer, {o: (set(d), set(r)) for o, (d, r) in objs.items()})
    ok = check([lib("base", a=(["fa"], [])),
                lib("http", h=(["fh"], ["fa"]))], True)
    up = check([lib("base", a=(["fa"], ["fh"])),
                lib("http", h=(["fh"], []))], True)
    ring = check([lib("db", x=(["fx"], ["fy"]), y=(["fy"], ["fz"]),
                      z=(["fz"], ["fx"]))], False)
    want_up = ["a (base) calls fh of h (http), a higher layer"]
    want_ring = ["a circle of calls: x <-> y <-> z"]
    failed = 0
    for name, got, want in (("clean", ok, []), ("upward", up, want_up),
                            ("ring", ring, want_ring)):
        if got != want:
            print("self-test %s: got %r, want %r" % (name, got, want),
                  file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    layered = argv[:1] == ["--layers"]
    paths = argv[1:] if layered else argv
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    libs = [(p.rsplit("/", 1)[-1], read_archive(p)) for p in paths]
    bad = check(libs, layered)
    for line in bad:
        print(line, file=sys.stderr)
    print("%d objects in %d libraries: %d offences" %
          (sum(len(o) for _, o in libs), len(libs), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
