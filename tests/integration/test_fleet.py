# SPDX-License-Identifier: Apache-2.0
"""One fleet, one policy set (issue 37), against real processes: instances
on one redis-server, each with its own database file as each host has.
A change made through any instance's admin API is a fleet record in
Redis, applied by every instance in version order with its audit row;
the channel carries it at once (the poll here is a minute, so only the
channel can), the poll carries what the channel missed; two operators'
edits never overwrite each other (If-Match); a new instance takes the
fleet's set; an instance outside the fleet, or in another, takes nothing;
and nothing Redis holds of a change is in the clear."""
import concurrent.futures
import json
import os
import unittest

from fleet_harness import FOLLOW_S, FleetTest, fleet_key, open_record
from harness import Redis, Service, wait_until

POLICY = {"endpoint": "login", "key": ["user"], "algorithm": "fixed_window",
          "limit": 2, "window_s": 60}


class FleetTest_(FleetTest):
    def deny(self, svc, value, kind="ip"):
        r = self.admin(svc, "POST", "/lists/deny",
                       {"kind": kind, "value": value})
        self.assertEqual(r.status, 201, r.raw)
        return r.json["entry"]

    def test_a_deny_entry_reaches_every_instance_through_the_channel(self):
        a, b, c = self.fleet(3)
        for s in (a, b, c):
            self.assertEqual(self.login(s, "u@example.com",
                                        "198.51.100.9").status, 200)
        entry = self.deny(a, "198.51.100.9")
        # The poll is a minute: only the channel brings it this soon.
        self.until_all([b, c], lambda s: self.login(
            s, "u@example.com", "198.51.100.9").status == 403, "the deny")
        version = self.wait_versions_equal([a, b, c])
        # The same entry (its id too) and one audit row of it on each,
        # with the record's version and the instance that took it.
        mine = self.status(a)["instance"]["id"]
        for s in (a, b, c):
            self.assertEqual(self.entries(s), [entry])
            rows = [r for r in self.fleet_audit(s) if r[1] == "list_add"]
            self.assertEqual(rows, [(version, "list_add", "deny", mine)])
        self.assertEqual(self.metric(b, "abuseguard_fleet_version"), version)
        self.assertEqual(self.metric(b, "abuseguard_fleet_held"), 0)

    def test_the_poll_brings_what_the_channel_cannot(self):
        # An ACL user without the fleet's channel: nothing is heard, and
        # the poll (300 ms here) carries every change.
        self.redis.stop()
        self.redis = Redis(self.workdir, extra=[
            "--user", "ag", "on", ">fleet-pass-1", "~ag:*", "+@all"])
        self.addCleanup(self.redis.stop)
        url = "redis://ag:fleet-pass-1@127.0.0.1:%d" % self.redis.port
        a, b = [Service(self.workdir, url, secret=self.secret,
                        db=os.path.join(self.workdir, "p%d.db" % i),
                        name="p%d" % i,
                        extra=["--admin-token-file", self.token_file,
                               "--fleet-poll-ms", "300"]) for i in (0, 1)]
        self.services += [a, b]
        self.assertTrue(wait_until(
            lambda: "NOPERM" in b.log_text(), FOLLOW_S), b.log_text())
        self.assertFalse(self.status(b)["instance"]["channel"])
        self.deny(a, "203.0.113.5")
        self.assertTrue(wait_until(lambda: self.login(
            b, "p@example.com", "203.0.113.5").status == 403, FOLLOW_S))

    def test_concurrent_changes_take_one_version_each_in_one_order(self):
        a, b, c = self.fleet(3)
        start = self.version(a)

        def add(args):
            svc, i = args
            return self.admin(svc, "POST", "/lists/deny",
                              {"kind": "ip", "value": "10.9.%d.%d" %
                               (i // 250, i % 250 + 1)})
        jobs = [((a, b)[i % 2], i) for i in range(40)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(add, jobs))
        self.assertEqual([r.status for r in answers], [201] * 40,
                         [r.raw for r in answers if r.status != 201])
        version = self.wait_versions_equal([a, b, c], start + 40)
        self.assertEqual(version, start + 40)
        # Every instance holds the same 40 entries with the same ids, and
        # one audit row a record, in version order, the same on each.
        want = sorted(json.dumps(e, sort_keys=True) for e in self.entries(a))
        self.assertEqual(len(want), 40)
        audits = []
        for s in (a, b, c):
            self.assertEqual(sorted(json.dumps(e, sort_keys=True)
                                    for e in self.entries(s)), want)
            rows = [r for r in self.fleet_audit(s) if r[0] > start]
            self.assertEqual([r[0] for r in rows],
                             list(range(start + 1, start + 41)))
            audits.append(rows)
        self.assertEqual(audits[0], audits[1])
        self.assertEqual(audits[0], audits[2])

    def test_two_edits_of_one_policy_at_once_end_the_same_everywhere(self):
        a, b, c = self.fleet(3)
        r = self.admin(a, "PUT", "/policies/login.both", POLICY)
        self.assertEqual(r.status, 201, r.raw)
        start = self.wait_versions_equal([a, b, c])

        def put(args):
            svc, limit = args
            return self.admin(svc, "PUT", "/policies/login.both",
                              dict(POLICY, limit=limit))
        for rnd in range(5):
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                answers = list(pool.map(put, [(a, 10 + rnd), (b, 20 + rnd)]))
            self.assertEqual([r.status for r in answers], [200, 200],
                             [r.raw for r in answers])
        version = self.wait_versions_equal([a, b, c], start + 10)
        # One set everywhere: the later record's; every edit audited
        # once, in one order, the same on each instance.
        limits = {self.policies(s)["login.both"]["limit"] for s in (a, b, c)}
        self.assertEqual(len(limits), 1, limits)
        audits = [[r for r in self.fleet_audit(s) if r[0] > start]
                  for s in (a, b, c)]
        self.assertEqual(len(audits[0]), 10)
        self.assertEqual([r[0] for r in audits[0]],
                         list(range(start + 1, version + 1)))
        self.assertEqual(audits[0], audits[1])
        self.assertEqual(audits[0], audits[2])
        last = self.admin(a, "GET", "/audit?limit=1").json["entries"][0]
        self.assertEqual(last["after"]["limit"], limits.pop())

    def test_if_match_keeps_an_edit_from_overwriting_another(self):
        a, b = self.fleet(2)
        r = self.admin(a, "PUT", "/policies/login.shared", POLICY)
        self.assertEqual(r.status, 201, r.raw)
        self.wait_versions_equal([a, b])
        # Both operators read it, each from another instance: one ETag.
        ra = self.admin(a, "GET", "/policies/login.shared")
        rb = self.admin(b, "GET", "/policies/login.shared")
        etag = ra.header("ETag")
        self.assertRegex(etag, r'^"[0-9]+"$')
        self.assertEqual(rb.header("ETag"), etag)
        listed = self.admin(b, "GET", "/policies").json["versions"]
        self.assertEqual('"%d"' % listed["login.shared"], etag)
        # The first save wins; the second, made from the same read, is a
        # 412 naming If-Match, and changes nothing anywhere.
        r = self.admin(b, "PUT", "/policies/login.shared",
                       dict(POLICY, limit=5), headers={"If-Match": etag})
        self.assertEqual(r.status, 200, r.raw)
        self.assertNotEqual(r.header("ETag"), etag)
        r = self.admin(a, "PUT", "/policies/login.shared",
                       dict(POLICY, limit=9), headers={"If-Match": etag})
        self.assertEqual((r.status, r.json["field"]), (412, "If-Match"),
                         r.raw)
        r = self.admin(a, "DELETE", "/policies/login.shared",
                       headers={"If-Match": etag})
        self.assertEqual(r.status, 412, r.raw)
        self.wait_versions_equal([a, b])
        for s in (a, b):
            self.assertEqual(self.policies(s)["login.shared"]["limit"], 5)
        # * asks only that it exist; a bad If-Match is a 400 naming it.
        r = self.admin(a, "PUT", "/policies/login.absent", POLICY,
                       headers={"If-Match": "*"})
        self.assertEqual(r.status, 412, r.raw)
        r = self.admin(a, "PUT", "/policies/login.shared",
                       dict(POLICY, limit=6), headers={"If-Match": "*"})
        self.assertEqual(r.status, 200, r.raw)
        self.assertNotIn("login.absent", self.policies(a))
        for bad in ("W/\"3\"", "three", "\"3", "-1"):
            r = self.admin(a, "PUT", "/policies/login.shared", POLICY,
                           headers={"If-Match": bad})
            self.assertEqual((r.status, r.json["field"]), (400, "If-Match"),
                             (bad, r.raw))

    def test_a_new_instance_takes_the_fleets_set(self):
        (a,) = self.fleet(1)
        self.deny(a, "192.0.2.200")
        r = self.admin(a, "PUT", "/policies/login.user",
                       dict(POLICY, limit=7))
        self.assertEqual(r.status, 200, r.raw)
        r = self.admin(a, "DELETE", "/policies/login.ip")
        self.assertEqual(r.status, 204, r.raw)
        # A new host: a fresh database, seeded with the defaults.
        (b,) = self.fleet(1)
        version = self.wait_versions_equal([a, b])
        self.assertEqual(self.policies(b), self.policies(a))
        self.assertEqual(self.entries(b), self.entries(a))
        self.assertEqual(self.policies(b)["login.user"]["limit"], 7)
        self.assertNotIn("login.ip", self.policies(b))
        self.assertEqual(self.login(b, "n@example.com", "192.0.2.200").status,
                         403)
        # Its audit is the fleet's, from the founding on (which it took
        # as its join), one row a record.
        mine, theirs = self.fleet_audit(a), self.fleet_audit(b)
        self.assertEqual([r[0] for r in theirs], list(range(1, version + 1)))
        self.assertEqual(mine[0][1:3], ("snapshot", "found"))
        self.assertEqual(theirs[0], (1, "snapshot", "join", mine[0][3]))
        self.assertEqual(theirs[1:], mine[1:])

    def test_the_fleet_shows_every_instance_and_the_files_it_serves(self):
        corpus = os.path.join(self.workdir, "sha1.agp")
        source = os.path.join(self.workdir, "sha1.txt")
        with open(source, "w") as f:
            f.write("21BD12DC183F740EE76F27B78EB39C8AD972A757:52579\r\n"
                    "21BD1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:3\r\n")
        self.cli("pwned", "import", "--mode", "sha1", "--output", corpus,
                 source, check=0)
        (a,) = self.fleet(1, extra=["--pwned-file", corpus])
        (b,) = self.fleet(1)
        version = self.wait_versions_equal([a, b])
        ids = {s: self.status(s)["instance"]["id"] for s in (a, b)}
        self.assertNotEqual(ids[a], ids[b])

        def members():
            return {m["id"]: m for m in self.status(b)["instances"]}
        self.assertTrue(wait_until(lambda: set(members()) == set(ids.values()),
                                   FOLLOW_S), self.status(b))
        m = members()
        for s in (a, b):
            mine = m[ids[s]]
            self.assertEqual((mine["version"], mine["state"], mine["gone"],
                              mine["lagging"], mine["this"]),
                             (version, "following", False, False, s is b))
            self.assertEqual(mine["binary"],
                             self.status(s)["instance"]["binary"])
        files = m[ids[a]]["files"]
        self.assertEqual([(f["kind"], f["mode"], f["entries"])
                          for f in files], [("pwned", "sha1", 2)])
        self.assertRegex(files[0]["checksum"], "^[0-9a-f]{64}$")
        self.assertEqual(m[ids[b]]["files"], [])
        overview = self.admin(a, "GET", "/overview").json["fleet"]
        self.assertEqual((overview["name"], overview["version"],
                          overview["instance_version"], overview["lagging"]),
                         ("main", version, version, []))

    def test_outside_the_fleet_or_in_another_nothing_travels(self):
        a, b = self.fleet(2)
        (off,) = self.fleet(1, extra=["--fleet", "off"])
        (blue,) = self.fleet(1, extra=["--fleet-name", "blue"])
        self.deny(a, "198.51.100.77")
        self.deny(blue, "198.51.100.78")
        self.until_all([b], lambda s: self.login(
            s, "o@example.com", "198.51.100.77").status == 403, "the deny")
        self.until_all([a, b], lambda s: self.login(
            s, "o@example.com", "198.51.100.78").status == 200, "blue's")
        for s, ip in ((off, "198.51.100.77"), (blue, "198.51.100.77"),
                      (off, "198.51.100.78")):
            self.assertEqual(self.login(s, "o@example.com", ip).status, 200)
        # --fleet off writes no fleet key, takes no record; blue's keys
        # are its own.
        self.assertEqual(self.status(off)["instance"]["state"], "off")
        self.assertEqual(self.entries(off), [])
        self.assertEqual(len(self.entries(blue)), 1)
        names = {k.split("}")[0] + "}" for k in self.redis.all_keys()
                 if k.startswith("ag::fleet:")}
        self.assertEqual(names, {"ag::fleet:{main}", "ag::fleet:{blue}"})

    def test_nothing_redis_holds_of_a_change_is_in_the_clear(self):
        a, b = self.fleet(2)
        user, ip = "Secret.Person@Example.org", "192.0.2.177"
        self.deny(a, user, kind="user")
        self.deny(a, ip)
        self.admin(a, "PUT", "/policies/login.secretive", POLICY)
        self.wait_versions_equal([a, b])
        text = self.redis.dump_text()
        for needle in ("secret.person", "Secret.Person", ip):
            self.assertNotIn(needle, text)
        # Sealed, not absent: the records open with the fleet's key to
        # the change, and to nothing with another.
        key = fleet_key(self.secret, "main")
        bodies = [open_record(key, "main", r) for r in self.records()]
        self.assertNotIn(None, bodies)
        opened = json.dumps(bodies)
        self.assertIn(ip, opened)
        self.assertIn("login.secretive", opened)
        other = fleet_key(self.secret, "blue")
        self.assertEqual({open_record(other, "main", r) is None
                          for r in self.records()}, {True})


if __name__ == "__main__":
    unittest.main()
