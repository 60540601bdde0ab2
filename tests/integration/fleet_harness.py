# SPDX-License-Identifier: Apache-2.0
"""Helpers of the fleet's tests (issue 37): instances of one fleet, each
with its own database file as each host has, the admin API with a token,
and the records as Redis holds them, opened and sealed here with the
algorithm service/fleet/ag_fleet_record.h names (through libsodium, the
library the service uses), so that a test can read what Redis holds and
write a forged, replayed or newer record straight into it."""

import base64
import ctypes
import ctypes.util
import hashlib
import json
import os
import subprocess
import time

import harness
from harness import BINARY, ServiceTest, wait_until

TOKEN = "fleet-admin-token-0123456789"
AUTH = {"Authorization": "Bearer " + TOKEN}
# Long enough that a test of the channel never sees the poll bring a
# change; the poll's own test sets its own.
POLL_OFF_MS = "60000"
# A change is applied everywhere within this long, or never: a generous
# bound for a loaded machine, not the latency (bench/fleet.py measures
# that).
FOLLOW_S = 20.0

_sodium = ctypes.CDLL(ctypes.util.find_library("sodium"))
_sodium.sodium_init()
_NONCE = 24
_TAG = 16


def fleet_key(secret_path, name):
    """The records' key of fleet name: BLAKE2b-256 keyed with the secret
    (as the identifier hashes take it) over the context and the name."""
    with open(secret_path, "rb") as f:
        secret = f.read()
    if len(secret) > 64:
        secret = hashlib.blake2b(secret, digest_size=64).digest()
    return hashlib.blake2b(b"abuseguard fleet record key 1\x00" +
                           name.encode(), key=secret, digest_size=32).digest()


def additional(name, epoch, version, prev, schema):
    return ("abuseguard fleet record 1\n%s\n%s\n%d\n%s\n%d"
            % (name, epoch, version, prev, schema)).encode()


def seal(key, name, epoch, version, prev, body, schema=1):
    """(blob, hash) of body (a dict) sealed at its place."""
    ad = additional(name, epoch, version, prev, schema)
    msg = json.dumps(body).encode()
    nonce = os.urandom(_NONCE)
    ct = ctypes.create_string_buffer(len(msg) + _TAG)
    clen = ctypes.c_ulonglong()
    _sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
        ct, ctypes.byref(clen), msg, ctypes.c_ulonglong(len(msg)), ad,
        ctypes.c_ulonglong(len(ad)), None, nonce, key)
    nc = nonce + ct.raw[:clen.value]
    return (base64.b64encode(nc).decode(),
            hashlib.blake2b(ad + nc, digest_size=32).hexdigest())


def open_record(key, name, rec, base=False):
    """The body (a dict) of rec (a dict of v, e, p, h, s, b), or None if it
    does not open."""
    prev = rec["h"] if base else rec["p"]
    ad = additional(name, rec["e"], int(rec["v"]), prev, int(rec["s"]))
    nc = base64.b64decode(rec["b"])
    out = ctypes.create_string_buffer(len(nc))
    mlen = ctypes.c_ulonglong()
    rc = _sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        out, ctypes.byref(mlen), None, nc[_NONCE:],
        ctypes.c_ulonglong(len(nc) - _NONCE), ad, ctypes.c_ulonglong(len(ad)),
        nc[:_NONCE], key)
    return json.loads(out.raw[:mlen.value]) if rc == 0 else None


def keys(name="main"):
    return {k: "ag::fleet:{%s}:%s" % (name, k)
            for k in ("head", "log", "base", "members")}


def pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


class FleetTest(ServiceTest):
    """A ServiceTest whose instances are one fleet's, each on its own
    database file."""

    def setUp(self):
        super().setUp()
        self.token_file = os.path.join(self.workdir, "admin.token")
        with open(self.token_file, "w") as f:
            f.write(TOKEN)
        os.chmod(self.token_file, 0o600)
        self.seq = 0

    def instance(self, db=None, extra=(), poll_ms=POLL_OFF_MS, name=None):
        """One more instance, on a database of its own unless db names
        one."""
        self.seq += 1
        db = db or os.path.join(self.workdir, "host%d.db" % self.seq)
        return self.service(db=db, name=name or "host%d" % self.seq,
                            extra=["--admin-token-file", self.token_file,
                                   "--fleet-poll-ms", str(poll_ms),
                                   *extra])

    def fleet(self, n, **kw):
        return [self.instance(**kw) for _ in range(n)]

    def admin(self, svc, method, path, body=None, headers=None):
        return svc.request(method, "/admin" + path, body,
                           headers={**AUTH, **(headers or {})})

    def status(self, svc):
        r = self.admin(svc, "GET", "/fleet")
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def version(self, svc):
        return self.status(svc)["instance"]["version"]

    def head(self, name="main"):
        return pairs(self.redis.cmd("HGETALL", keys(name)["head"]))

    def records(self, name="main"):
        """The log's records as dicts of their fields."""
        return [pairs(fields) for _, fields in
                self.redis.cmd("XRANGE", keys(name)["log"], "-", "+")]

    def wait_versions_equal(self, svcs, at_least=0):
        """Until every instance stands at the head, at least at_least;
        returns the version."""
        def equal():
            vs = {self.version(s) for s in svcs}
            head = int(self.head().get("version", -1))
            return len(vs) == 1 and vs == {head} and head >= at_least
        self.assertTrue(wait_until(equal, FOLLOW_S, 0.05),
                        "versions %s, head %s" % (
                            [self.version(s) for s in svcs], self.head()))
        return self.version(svcs[0])

    def policies(self, svc):
        r = self.admin(svc, "GET", "/policies")
        self.assertEqual(r.status, 200, r.raw)
        return {p["name"]: p for p in r.json["policies"]}

    def entries(self, svc, which="deny"):
        r = self.admin(svc, "GET", "/lists/" + which)
        self.assertEqual(r.status, 200, r.raw)
        return r.json["entries"]

    def fleet_audit(self, svc):
        """The audit rows of fleet records, oldest first, as (version,
        action, name, instance)."""
        rows, before = [], 0
        while True:
            q = "/audit?limit=500" + ("&before=%d" % before if before else "")
            page = self.admin(svc, "GET", q).json
            rows += page["entries"]
            if not page["next_before"]:
                break
            before = page["next_before"]
        return [(e["fleet_version"], e["action"], e["name"], e["instance"])
                for e in reversed(rows) if e["fleet_version"] is not None]

    def metric(self, svc, name):
        for line in svc.request("GET", "/metrics").raw.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def cli(self, *args, check=None):
        r = subprocess.run([BINARY, *args], capture_output=True, text=True,
                           timeout=60)
        if check is not None:
            self.assertEqual(r.returncode, check, r.stdout + r.stderr)
        return r

    def fleet_events(self, svc, type_):
        r = self.admin(svc, "GET", "/events?limit=1000")
        return [e for e in r.json.get("events", []) if e["type"] == type_]

    def login(self, svc, user, ip="192.0.2.1", **extra):
        return svc.post("/check-login", {"user": user, "ip": ip, **extra})

    def until_all(self, svcs, pred, what):
        """Until pred(svc) holds on every instance (FOLLOW_S at most)."""
        for s in svcs:
            self.assertTrue(wait_until(lambda: pred(s), FOLLOW_S, 0.02),
                            "%s never held on %s" % (what, s.log_path))


def deadline(seconds):
    end = time.monotonic() + seconds
    return lambda: time.monotonic() < end
