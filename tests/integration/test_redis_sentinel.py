# SPDX-License-Identifier: Apache-2.0
"""Redis Sentinel: a master, a replica and three sentinels
(harness_topology). The service finds the master through the sentinels,
follows a failover when the master is killed under traffic, and keeps its
limits exact afterwards."""
import threading
import time
import unittest

from harness import (PolicyTest, Service, digest, make_secret, policy,
                     wait_until)
from harness_topology import SentinelGroup, cmd_at
from test_resilience import metric

USER = policy("s.user", key=("user",), limit=10, window_s=60)


class SentinelTest(PolicyTest):
    def setUp(self):
        super().setUp()
        self.group = SentinelGroup(self.workdir)
        self.addCleanup(self.group.stop)

    def instance(self, url=None, extra=(), name="sen"):
        seeded = self.seeded([USER])[0]  # seeds the database
        svc = Service(self.workdir, url or self.group.url(),
                      secret=self.secret, db=seeded.db, name=name,
                      extra=["--redis-timeout-ms", "300", *extra])
        self.services.append(svc)
        return svc

    def test_checks_run_on_the_master_the_sentinels_name(self):
        svc = self.instance()
        r = self.login(svc, "a@x.org")
        self.assertEqual(r.status, 200)
        self.assertNotIn("degraded", r.json)
        self.assertEqual(svc.request("GET", "/readyz").status, 200)
        keys = self.group.cmd_master("KEYS", "ag:s.user:*")
        self.assertEqual(len(keys), 1)

    def test_an_unknown_master_name_is_degraded_with_a_clear_line(self):
        url = self.group.url().rsplit("/", 1)[0] + "/nosuchmaster"
        svc = self.instance(url, name="unknown")
        r = self.login(svc, "a@x.org")
        self.assertTrue(r.json.get("degraded"), r.json)
        self.assertEqual(svc.request("GET", "/readyz").status, 503)
        self.assertTrue(wait_until(
            lambda: "it knows no master 'nosuchmaster'" in svc.log_text(), 10),
            svc.log_text())

    def test_a_failover_under_traffic_is_followed(self):
        # The sentinels wait 8 s before they fail over: a check that
        # waited for the new master would take that long, where one that
        # is answered at once (degraded) takes milliseconds, or a second or
        # two on a loaded machine.
        self.group.set_down_after(8000)
        svc = self.instance()
        stop, answers = threading.Event(), []

        def traffic():
            i = 0
            while not stop.is_set():
                start = time.monotonic()
                r = self.login(svc, "t%d@x.org" % (i % 300))
                answers.append((time.monotonic() - start, r.status,
                                bool(r.json.get("degraded"))))
                i += 1

        t = threading.Thread(target=traffic)
        t.start()
        try:
            time.sleep(0.5)
            old = self.group.kill_master()
            killed = time.monotonic()
            new = self.group.wait_for_failover(old, timeout=40)
            # Back on the promoted replica within 25 s of the kill (8 of
            # them the sentinels' wait).
            self.assertTrue(wait_until(
                lambda: "degraded" not in self.login(svc, "b@x.org").json,
                25 - (time.monotonic() - killed)), svc.log_text())
        finally:
            stop.set()
            t.join(10)
        self.assertGreater(len(answers), 10)
        self.assertTrue(all(a[1] in (200, 429) for a in answers), answers)
        self.assertLess(max(a[0] for a in answers), 4.0)
        # The checks after the failover are counted on the new master, and
        # the limit is exact there.
        allowed = sum(self.login(svc, "after@x.org").status == 200
                      for _ in range(USER["limit"] + 3))
        self.assertEqual(allowed, USER["limit"])
        self.assertTrue(cmd_at(new[1], "KEYS", "ag:s.user:*"))

    def test_a_demoted_master_is_left_at_its_first_readonly(self):
        # A failover the sentinels run with the old master alive: the
        # service's connections stay open to what is now a replica, which
        # answers READONLY. That check did not run, so it goes again, to
        # the new master, and nothing is answered degraded.
        svc = self.instance()
        self.open_every_connection(svc)
        old = self.group.master_addr()[1]
        sentinel = next(iter(self.group.sentinels))
        self.assertEqual(cmd_at(sentinel, "SENTINEL", "FAILOVER",
                                self.group.NAME), "OK")
        new = self.group.wait_for_failover(old)
        # Sentinel reconfigures the old master in its own time (more than
        # 10 s here); do what it will do.
        cmd_at(old, "REPLICAOF", new[0], str(new[1]))
        self.assertTrue(wait_until(
            lambda: cmd_at(old, "ROLE")[0] == "slave", 10))
        answers = [self.login(svc, "d%d@x.org" % i) for i in range(10)]
        self.assertTrue(all(r.status == 200 for r in answers))
        self.assertEqual([r.json.get("degraded") for r in answers],
                         [None] * 10, svc.log_text())
        self.assertIn("redis_not_master", svc.log_text())
        self.assertTrue(cmd_at(new[1], "KEYS", "ag:s.user:*"))


    def test_the_fleet_follows_a_failover_and_changes_go_on(self):
        """Issue 37 through Sentinel: a change travels; the master is
        killed; once the replica is promoted (it holds the history), a
        change made through either instance reaches the other."""
        token = make_secret(self.workdir, b"sentinel-fleet-token-01234567",
                            name="admin.token")
        auth = {"Authorization": "Bearer sentinel-fleet-token-01234567"}
        a, b = [Service(self.workdir, self.group.url(), secret=self.secret,
                        db="%s/fleet%d.db" % (self.workdir, i),
                        name="fleet%d" % i,
                        extra=["--redis-timeout-ms", "300",
                               "--admin-token-file", token,
                               "--fleet-poll-ms", "500"]) for i in (0, 1)]
        self.services += [a, b]

        def deny(svc, ip):
            return svc.request("POST", "/admin/lists/deny",
                               {"kind": "ip", "value": ip}, headers=auth)

        def enforced(svc, ip):
            return wait_until(lambda: self.login(
                svc, "f@x.org", ip).status == 403, 30)
        self.assertEqual(deny(a, "198.51.100.71").status, 201)
        self.assertTrue(enforced(b, "198.51.100.71"), b.log_text())
        old = self.group.kill_master()
        self.group.wait_for_failover(old)
        # The fleet's connection asks the sentinels again; a change may
        # meet the failover's last moments (503, nothing changed).
        self.assertTrue(wait_until(
            lambda: deny(b, "198.51.100.72").status == 201, 30),
            b.log_text())
        self.assertTrue(enforced(a, "198.51.100.72"), a.log_text())
        self.assertTrue(enforced(a, "198.51.100.71"))

    def test_the_deny_cache_follows_a_failover_to_the_new_master(self):
        svc = self.instance()

        def subscribed(n):
            return wait_until(lambda: svc.log_text().count(
                '"deny_cache_subscribed"') >= n, 30)
        self.assertTrue(subscribed(1), svc.log_text())
        key = "ag:s.user:" + digest(self.secret, [("user", "f@x.org")])

        def denied_from_the_cache():
            self.login(svc, "f@x.org")
            r = self.login(svc, "f@x.org")
            return r.status == 429 and \
                r.json["decisions"][0].get("cached") is True
        for _ in range(USER["limit"]):
            self.login(svc, "f@x.org")
        self.assertTrue(denied_from_the_cache())
        old = self.group.kill_master()
        self.group.wait_for_failover(old)
        # Dropped with the old connection, subscribed on the new master.
        self.assertTrue(subscribed(2), svc.log_text())
        self.assertEqual(metric(svc, "abuseguard_deny_cache_entries"), 0)
        # The promoted replica still holds the log: denied, cached again,
        # and an invalidation published on the new master reaches it.
        self.assertTrue(wait_until(denied_from_the_cache, 10, 0.1))
        self.group.cmd_master("PUBLISH", "ag::deny-cache", key)
        self.assertTrue(wait_until(
            lambda: metric(svc, "abuseguard_deny_cache_entries") == 0, 10))


if __name__ == "__main__":
    unittest.main()
