# SPDX-License-Identifier: Apache-2.0
"""The fleet under faults (issue 37), against real processes: Redis
stopped (a change is refused and nothing changes; checks go on; an
instance restarted meanwhile serves the set its database holds; Redis
back empty, the history is put back and the fleet goes on), Redis
flushed (a new instance still joins the fleet's set), an instance killed
while changes are made (it catches up), and records that are not the
fleet's: forged, replayed or sealed with another key are refused, said
and counted, and the history is put back; a record of a newer schema is
held and said, and the instance says it lags."""
import base64
import concurrent.futures
import signal
import sqlite3
import unittest

from fleet_harness import FOLLOW_S, FleetTest, fleet_key, keys, seal
from harness import wait_until

# The poll of these tests: a restored history settles for 5 s at least
# (AG_FLEET_SETTLE_MS), more with a longer poll.
POLL_MS = 500
POLICY = {"endpoint": "login", "key": ["user"], "algorithm": "fixed_window",
          "limit": 2, "window_s": 60}


class FleetRecoveryTest(FleetTest):
    def member(self, **kw):
        return self.instance(poll_ms=POLL_MS, **kw)

    def deny(self, svc, value):
        r = self.admin(svc, "POST", "/lists/deny",
                       {"kind": "ip", "value": value})
        self.assertEqual(r.status, 201, r.raw)
        return r.json["entry"]

    def denied(self, svc, ip):
        return self.login(svc, "r@example.com", ip).status == 403

    def settled(self, svc):
        j = self.status(svc)
        return (j["instance"]["state"] == "following" and
                j["fleet"].get("settling_ms") == 0)

    def inject(self, ops, key=None, schema=1, blob_of=None, flip=False):
        """Appends a record of ops after the head, sealed with key (the
        fleet's unless given) for schema, or with the blob of another
        record (blob_of, a record's fields: a replay), one bit of its
        sealed bytes flipped if flip, and publishes it, as an instance's
        append would. Returns its version."""
        h = self.head()
        v, epoch, prev = int(h["version"]) + 1, h["epoch"], h["hash"]
        body = {"actor": "admin-api", "instance": "0123456789abcdef",
                "host": "elsewhere", "at": "2026-01-01T00:00:00.000Z",
                "ops": ops}
        if blob_of:
            blob, digest = blob_of["b"], blob_of["h"]
        else:
            blob, digest = seal(key or fleet_key(self.secret, "main"),
                                "main", epoch, v, prev, body, schema)
        if flip:
            raw = bytearray(base64.b64decode(blob))
            raw[30] ^= 1
            blob = base64.b64encode(bytes(raw)).decode()
        k = keys()
        self.redis.cmd("XADD", k["log"], "%d-0" % v, "v", str(v), "e", epoch,
                       "p", prev, "h", digest, "s", str(schema), "b", blob)
        self.redis.cmd("HSET", k["head"], "version", str(v), "hash", digest)
        self.redis.cmd("PUBLISH", "ag::fleet:main", "%s %d" % (epoch, v))
        return v

    def test_redis_down_refuses_changes_and_the_set_stays_served(self):
        a, b = self.member(), self.member()
        self.deny(a, "198.51.100.30")
        self.wait_versions_equal([a, b])
        before = (self.policies(a), self.entries(a))
        self.redis.stop()
        r = self.admin(a, "PUT", "/policies/login.down", POLICY)
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("cannot be reached", r.json["error"])
        self.assertIn("nothing was changed", r.json["error"])
        r = self.admin(a, "POST", "/lists/deny",
                       {"kind": "ip", "value": "198.51.100.31"})
        self.assertEqual(r.status, 503, r.raw)
        self.assertEqual((self.policies(a), self.entries(a)), before)
        # Checks go on, the deny list from the database.
        self.assertTrue(self.denied(a, "198.51.100.30"))
        r = self.login(a, "r@example.com", "198.51.100.99")
        self.assertEqual(r.status, 200, r.raw)
        # A restart while Redis is down serves what the database holds.
        self.assertEqual(b.stop(), 0)
        b.restart()
        self.assertTrue(wait_until(lambda: self.denied(b, "198.51.100.30"),
                                   FOLLOW_S))
        self.assertEqual(self.status(b)["instance"]["state"], "unreachable")
        # Redis back, empty: one puts the history back; once it settled a
        # change made through either reaches both.
        self.redis.start()
        self.until_all([a, b], self.settled, "settled")
        self.deny(b, "198.51.100.32")
        self.until_all([a], lambda s: self.denied(s, "198.51.100.32"),
                       "the deny")
        self.wait_versions_equal([a, b])
        self.assertEqual(self.entries(a), self.entries(b))

    def test_a_hand_edited_member_is_never_put_back_as_the_fleet(self):
        # b's file is edited by hand while it is stopped (a list entry
        # changed in place), and Redis loses the history meanwhile: b
        # must not put its edited set back as the fleet's; it diverges,
        # and a's set is the fleet's.
        a, b = self.member(), self.member()
        self.deny(a, "198.51.100.80")
        self.wait_versions_equal([a, b])
        self.assertEqual(b.stop(), 0)
        with sqlite3.connect(b.db) as c:
            n = c.execute("UPDATE lists SET value = '198.51.100.81' "
                          "WHERE value = '198.51.100.80'").rowcount
            self.assertEqual(n, 1)
            self.assertEqual(c.execute("SELECT touched FROM fleet")
                             .fetchone(), (1,))
        self.redis.cmd("FLUSHALL")
        b.restart()
        self.assertTrue(wait_until(
            lambda: self.status(b)["instance"]["state"] == "diverged",
            FOLLOW_S), b.log_text())
        self.assertNotIn('"fleet_restored"', b.log_text())
        self.assertTrue(wait_until(
            lambda: '"fleet_restored"' in a.log_text(), FOLLOW_S))
        c = self.member()
        self.wait_versions_equal([a, c])
        self.assertEqual(self.entries(c), self.entries(a))
        self.assertTrue(self.denied(c, "198.51.100.80"))
        r = self.admin(b, "POST", "/lists/deny",
                       {"kind": "ip", "value": "198.51.100.82"})
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("diverged", r.json["error"])

    def test_a_flushed_fleet_is_put_back_and_a_new_instance_joins_it(self):
        a = self.member()
        self.deny(a, "198.51.100.40")
        self.assertEqual(self.admin(a, "DELETE", "/policies/login.ip").status,
                         204)
        self.redis.cmd("FLUSHALL")
        # The line follows the history's write: waited for, not raced.
        self.assertTrue(wait_until(
            lambda: '"fleet_restored"' in a.log_text(), FOLLOW_S),
            a.log_text())
        self.assertTrue(self.head().get("version"))
        c = self.member()
        self.wait_versions_equal([a, c])
        self.assertEqual(self.policies(c), self.policies(a))
        self.assertNotIn("login.ip", self.policies(c))
        self.assertTrue(self.denied(c, "198.51.100.40"))

    def test_an_instance_killed_while_changes_are_made_catches_up(self):
        a, b = self.member(), self.member()
        self.wait_versions_equal([a, b])
        b.proc.send_signal(signal.SIGKILL)
        b.proc.wait(10)
        for i in range(20):
            self.deny(a, "198.51.100.%d" % (100 + i))
        b.restart()
        version = self.wait_versions_equal([a, b])
        self.assertEqual(self.entries(b), self.entries(a))
        # The same audit, a row a record (the first, the founding, is
        # the join on b).
        mine, theirs = self.fleet_audit(a), self.fleet_audit(b)
        self.assertEqual([r[0] for r in theirs], list(range(1, version + 1)))
        self.assertEqual(theirs[1:], mine[1:])

    def test_an_instance_killed_in_the_middle_of_changes_converges(self):
        # Changes in flight on a when it is killed (-9): some were taken,
        # some not, none half-applied. Restarted, a converges with b:
        # the same entries, each audited once.
        a, b = self.member(), self.member()
        start = self.wait_versions_equal([a, b])

        def add(i):
            try:
                return self.admin(a, "POST", "/lists/deny",
                                  {"kind": "ip",
                                   "value": "198.51.100.%d" % (150 + i)})
            except OSError:
                return None
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(add, i) for i in range(40)]
            self.assertTrue(wait_until(
                lambda: int(self.head()["version"]) >= start + 3, FOLLOW_S))
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait(10)
            answered = [f.result() for f in futures]
        taken = sum(1 for r in answered if r is not None and r.status == 201)
        a.restart()
        version = self.wait_versions_equal([a, b])
        self.assertGreaterEqual(version - start, taken)
        self.assertEqual(self.entries(a), self.entries(b))
        self.assertEqual(len(self.entries(a)), version - start)
        mine, theirs = self.fleet_audit(a), self.fleet_audit(b)
        self.assertEqual(mine[1:], theirs[1:])
        self.assertEqual([r[0] for r in mine], list(range(1, version + 1)))

    def restored(self, svcs):
        """How many times these instances put their history back."""
        return sum(s.log_text().count('"fleet_restored"') for s in svcs)

    def assert_refused(self, svcs, version, what, restored_before):
        """Every instance refused the record at version: said (the event
        and the log line), counted, not applied; and the fleet's head was
        put back by one of them (once more than restored_before)."""
        for s in svcs:
            self.assertTrue(wait_until(lambda: any(
                e.get("record") == version for e in
                self.fleet_events(s, "fleet_record_refused")), FOLLOW_S),
                (what, s.log_text()))
            self.assertGreaterEqual(
                self.metric(s, "abuseguard_fleet_records_refused_total"), 1)
            self.assertFalse(self.denied(s, "203.0.113.66"), what)
        # Put back by one of them (the line follows the write), and then
        # settled.
        self.assertTrue(wait_until(
            lambda: self.restored(svcs) > restored_before, FOLLOW_S))
        self.until_all(svcs, self.settled, "settled")

    def test_forged_replayed_and_foreign_records_are_refused(self):
        a, b = self.member(), self.member()
        self.deny(a, "198.51.100.50")
        self.wait_versions_equal([a, b])
        old = self.records()[-1]
        entry = {"id": 99, "list": "deny", "kind": "ip",
                 "value": "203.0.113.66", "endpoint": "*", "note": ""}
        ops = [{"op": "list_add", "entry": entry}]
        # Sealed with another fleet's key; then sealed at another place
        # (a record of this fleet, appended again later); then a blob
        # flipped by one bit.
        for what, kw in (("another key",
                          {"key": fleet_key(self.secret, "other")}),
                         ("a replay", {"blob_of": old}),
                         ("a damaged blob", {"flip": True})):
            before = self.restored([a, b])
            v = self.inject(ops, **kw)
            self.assert_refused([a, b], v, what, before)
        # The fleet goes on.
        self.deny(b, "198.51.100.51")
        self.until_all([a], lambda s: self.denied(s, "198.51.100.51"),
                       "the deny")

    def test_a_record_of_a_newer_schema_is_held_and_the_lag_said(self):
        a = self.member(extra=["--fleet-lag-event-s", "1"])
        self.deny(a, "198.51.100.60")
        entry = {"id": 77, "list": "deny", "kind": "ip",
                 "value": "203.0.113.66", "endpoint": "*", "note": ""}
        v = self.inject([{"op": "list_add", "entry": entry}], schema=4)
        self.assertTrue(wait_until(
            lambda: self.status(a)["instance"]["state"] == "held", FOLLOW_S))
        self.assertTrue(wait_until(
            lambda: self.fleet_events(a, "fleet_held"), FOLLOW_S))
        held = self.fleet_events(a, "fleet_held")
        self.assertEqual([e["record"] for e in held], [v])
        self.assertIn("schema 4", held[0]["reason"])
        self.assertEqual(self.metric(a, "abuseguard_fleet_held"), 1)
        self.assertTrue(wait_until(
            lambda: self.fleet_events(a, "fleet_lagging"), FOLLOW_S))
        lag = self.fleet_events(a, "fleet_lagging")[0]
        self.assertEqual((lag["version"], lag["head_version"]), (v - 1, v))
        self.assertFalse(self.denied(a, "203.0.113.66"))
        # Changes wait for an instance that reads it: refused, named.
        r = self.admin(a, "PUT", "/policies/login.later", POLICY)
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("held", r.json["error"])


if __name__ == "__main__":
    unittest.main()
