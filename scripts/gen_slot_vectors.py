#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the key -> slot vectors of tests/unit/test_redis_slot.c.

Starts a cluster-enabled redis-server of its own (a single node answers
CLUSTER KEYSLOT with no slots assigned) in a temp dir, asks it for each
key's slot and prints C initialisers. Python's standard library only; the
keys travel as RESP bulk strings, so binary bytes reach Redis unchanged.

    python3 scripts/gen_slot_vectors.py > /tmp/vectors.txt
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

HEX = "0123456789abcdef0123456789abcdef"
KEYS = [
    b"",
    b"123456789",
    b"foo",
    b"bar",
    b"hello",
    b"user1000",
    b"{user1000}.following",
    b"{user1000}.followers",
    b"foo{}{bar}",
    b"foo{{bar}}zap",
    b"foo{bar}{zap}",
    b"{}",
    b"{}x",
    b"{{}}",
    b"a{b",
    b"a}b{c",
    b"a}b{c}",
    b"{",
    b"}",
    b"}{",
    b"a{}",
    b"{a}",
    b"x{a}y",
    b"\x00",
    b"\xff\xfe\x00\x01",
    b"a\x00b{\x00}c",
    "\u00fcn\u00efc\u00f6de".encode(),
    ("ag:login_user:" + HEX).encode(),
    ("ag:login_user:" + HEX + ":b").encode(),
    ("ag:login_user:" + HEX + ":l").encode(),
    ("ag::fp:" + HEX).encode(),
    b"ag::probe",
    ("ag:{" + HEX + "}:x").encode(),
    ("ag:{" + HEX + "}:b").encode(),
    HEX.encode(),
]
# Long keys: (fill byte, count, suffix).
LONG = [(b"k", 1000, b""), (b"k", 1000, b"{tag}"), (b"\xff", 4096, b"")]


def command(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    data = b""
    while not data.endswith(b"\r\n"):
        data += sock.recv(4096)
    return data


def c_literal(b):
    s = ""
    for i, ch in enumerate(b):
        if 0x20 <= ch < 0x7F and ch not in (ord('"'), ord("\\"), ord("?")):
            # A hex escape swallows the hex digits after it: split the
            # literal there.
            if s.endswith("\x01") and chr(ch) in "0123456789abcdefABCDEF":
                s = s[:-1] + '" "'
            else:
                s = s.replace("\x01", "")
            s += chr(ch)
        else:
            s = s.replace("\x01", "") + "\\x%02x\x01" % ch
    return '"' + s.replace("\x01", "") + '"'


def main():
    d = tempfile.mkdtemp(prefix="ag-slot-gen-")
    sock_path = os.path.join(d, "redis.sock")
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", sock_path,
         "--save", "", "--appendonly", "no", "--dir", d,
         "--cluster-enabled", "yes",
         "--cluster-config-file", os.path.join(d, "nodes.conf"),
         "--logfile", os.path.join(d, "redis.log")])
    try:
        for _ in range(500):
            if os.path.exists(sock_path):
                break
            time.sleep(0.01)
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock_path)
        version = subprocess.run(["redis-server", "--version"],
                                 capture_output=True, text=True).stdout
        print("/* " + version.split()[2] + " */")
        for k in KEYS:
            slot = int(command(s, b"CLUSTER", b"KEYSLOT", k)[1:-2])
            print("    {%s, %d, %d}," % (c_literal(k), len(k), slot))
        for fill, n, suffix in LONG:
            k = fill * n + suffix
            slot = int(command(s, b"CLUSTER", b"KEYSLOT", k)[1:-2])
            print("    {'\\x%02x', %d, %s, %d}," % (fill[0], n,
                                                 c_literal(suffix), slot))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
