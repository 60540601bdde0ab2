# SPDX-License-Identifier: Apache-2.0
"""The operators' side of the site-wide shields (issue 27) against real
processes and a real redis-server: GET /admin/shields, the "under attack"
switch POST /admin/shields/{policy} and what it does to real checks on
every instance, its refusals, audit rows and events, the shields' metrics,
GET /admin/overview, this instance's last hour a minute at a time, and an
operator's lower that an instance back from an outage does not undo."""
import datetime
import unittest

from harness import Gate, Service, ServiceTest, wait_until, make_secret

TOKEN = "tok-" + "9" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
SHIELD = "login.site_failures"
DEFAULT_SHIELDS = {"login.site_failures", "login.site_unknown_users"}


def metric(svc, name, **labels):
    text = svc.request("GET", "/metrics").raw.decode()
    want = name
    if labels:
        want += "{" + ",".join('%s="%s"' % kv for kv in labels.items()) + "}"
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return None


def later(stamp, seconds):
    """The RFC 3339 time (ms, UTC) seconds after stamp, as the API writes
    it, so that the two compare as text."""
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    t += datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


class ShieldsAdminTest(ServiceTest):
    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")
        self.n = 0

    def admin_service(self, name="svc"):
        # Every instance shares the test's database and Redis.
        return self.service(name=name,
                            extra=["--admin-token-file", self.token_file])

    def call(self, svc, method, path, body=None):
        return svc.request(method, path, body, headers=AUTH)

    def switch(self, svc, body, policy=SHIELD):
        return self.call(svc, "POST", "/admin/shields/" + policy, body)

    def shields(self, svc):
        r = self.call(svc, "GET", "/admin/shields")
        self.assertEqual(r.status, 200, r.raw)
        return {s["name"]: s for s in r.json["shields"]}

    def fresh(self):
        """A check body no other policy has seen: a new user and address,
        so that only a shield can stop it."""
        self.n += 1
        return {"user": "u%d@example.com" % self.n,
                "ip": "10.%d.%d.%d" % (self.n // 65536 % 256,
                                       self.n // 256 % 256, self.n % 256)}

    def untrusted(self, svc, **extra):
        return svc.post("/check-login", dict(self.fresh(), **extra))

    def trusted_body(self, svc):
        body = self.fresh()
        r = svc.post("/report-login", dict(body, success=True))
        self.assertEqual(r.status, 200, r.raw)
        return dict(body, device_token=r.json["device_token"])

    def challenged_by_shield(self, r):
        return (r.status == 429 and r.json.get("policy") == SHIELD and
                r.json.get("action") == "challenge")

    def stepped(self, svc):
        """Waits until every shield of svc was stepped once (its source
        then says where its state came from)."""
        self.assertTrue(wait_until(
            lambda: all(s["stepped_at"] for s in self.shields(svc).values()),
            10.0), self.shields(svc))

    def events(self, svc, type_):
        r = self.call(svc, "GET", "/admin/events?limit=1000")
        self.assertEqual(r.status, 200, r.raw)
        return [e for e in r.json["events"] if e["type"] == type_]

    def test_the_list_holds_the_default_shields_lowered_with_their_figures(
            self):
        svc = self.admin_service()
        self.stepped(svc)
        shields = self.shields(svc)
        self.assertEqual(set(shields), DEFAULT_SHIELDS)
        s = shields[SHIELD]
        self.assertEqual(
            (s["raised"], s["since"], s["until"], s["source"]),
            (False, None, None, "shared"))
        self.assertEqual(s["threshold"], 100)  # the floor, nothing learned
        self.assertEqual(shields["login.site_unknown_users"]["threshold"], 30)
        self.assertEqual((s["rate"], s["current"], s["attempts"]), (0, 0, 0))
        self.assertEqual((s["window_s"], s["mode"], s["action"],
                          s["applies_to"], s["counts"], s["endpoint"]),
                         (60, "enforce", "challenge", "untrusted",
                          "failures", "login"))
        self.assertIsInstance(s["baseline"], (int, float))
        # A new shield learns fast; nobody switched it; one configuration.
        self.assertEqual((s["learning"], s["operator"], s["lowered_until"],
                          s["switches"], s["shape"],
                          s["other_configurations"]),
                         (True, False, None, 0,
                          "login.untrusted.failures.all.w60", 0))
        self.assertEqual(shields["login.site_unknown_users"]["shape"],
                         "login.untrusted.failures.unknown_user.w60")
        self.assertRegex(s["stepped_at"],
                         r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        # Failures reported count in the current window.
        for _ in range(3):
            r = self.call(svc, "POST", "/report-login",
                          dict(self.fresh(), success=False))
            self.assertEqual(r.status, 204, r.raw)
        self.assertTrue(wait_until(
            lambda: self.shields(svc)[SHIELD]["current"] +
            self.shields(svc)[SHIELD]["rate"] >= 3, 10.0),
            self.shields(svc)[SHIELD])

    def test_the_switch_challenges_untrusted_checks_on_every_instance(self):
        a = self.admin_service("a")
        b = self.admin_service("b")
        trusted = self.trusted_body(a)
        self.assertEqual(self.untrusted(a).status, 200)
        r = self.switch(a, {"raise_for_s": 600})
        self.assertEqual(r.status, 200, r.raw)
        s = r.json["shield"]
        self.assertEqual((s["name"], s["raised"], s["source"]),
                         (SHIELD, True, "shared"))
        self.assertRegex(s["since"], r"Z$")
        self.assertRegex(s["until"], r"Z$")
        self.assertGreater(s["until"], s["since"])
        # The instance that switched it challenges at once; the other
        # once its next sync (every 250 ms) has read the shared state.
        r = self.untrusted(a)
        self.assertTrue(self.challenged_by_shield(r), r.raw)
        self.assertTrue(wait_until(
            lambda: self.challenged_by_shield(self.untrusted(b)), 10.0))
        self.assertTrue(self.shields(b)[SHIELD]["raised"])
        # A challenge passed goes on; a trusted device is never asked.
        self.assertEqual(self.untrusted(a, challenge_passed=True).status, 200)
        for svc in (a, b):
            r = svc.post("/check-login", trusted)
            self.assertEqual(r.status, 200, r.raw)
            self.assertEqual(r.json["device"], "trusted")
        r = self.switch(b, {"lower": True})
        self.assertEqual(r.status, 200, r.raw)
        self.assertFalse(r.json["shield"]["raised"])
        self.assertIsNone(r.json["shield"]["until"])
        self.assertEqual(self.untrusted(b).status, 200)
        self.assertTrue(wait_until(
            lambda: self.untrusted(a).status == 200, 10.0))
        self.assertFalse(self.shields(a)[SHIELD]["raised"])

    def test_a_bad_body_is_a_400_naming_the_field(self):
        svc = self.admin_service()
        cases = [
            ({"raise_for_s": 60, "lower": True}, "lower"),
            ({}, "raise_for_s"),
            ({"raise_for_s": 0}, "raise_for_s"),
            ({"raise_for_s": 30 * 86400 + 1}, "raise_for_s"),
            ({"raise_for_s": "60"}, "raise_for_s"),
            ({"raise_for_s": 1.5}, "raise_for_s"),
            ({"lower": False}, "lower"),
            ({"lower": 1}, "lower"),
            ({"raise_for_s": 60, "reason": "attack"}, "reason"),
            ([], "body"),
            ("not json", "body"),
        ]
        for body, field in cases:
            with self.subTest(body=body):
                r = self.switch(svc, body)
                self.assertEqual((r.status, r.json.get("field")),
                                 (400, field), r.raw)
                self.assertIn(field, r.json["error"])
        # None of them raised it.
        self.assertFalse(self.shields(svc)[SHIELD]["raised"])
        self.assertEqual(self.untrusted(svc).status, 200)
        r = self.switch(svc, {"raise_for_s": 30 * 86400})
        self.assertEqual(r.status, 200, r.raw)
        self.switch(svc, {"lower": True})

    def test_a_policy_that_is_no_enabled_shield_is_a_404(self):
        svc = self.admin_service()
        for name in ["login.user", "login.nothing"]:
            with self.subTest(name=name):
                r = self.switch(svc, {"raise_for_s": 60}, name)
                self.assertEqual(r.status, 404, r.raw)
        # A shield disabled is no shield.
        p = self.call(svc, "GET", "/admin/policies/" + SHIELD).json["policy"]
        r = self.call(svc, "PUT", "/admin/policies/" + SHIELD,
                      dict(p, enabled=False))
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.switch(svc, {"raise_for_s": 60}).status, 404)
        self.assertNotIn(SHIELD, self.shields(svc))
        # Without the token, nothing.
        r = svc.request("POST", "/admin/shields/login.site_unknown_users",
                        {"raise_for_s": 60})
        self.assertEqual(r.status, 401)
        self.assertFalse(self.shields(svc)["login.site_unknown_users"]
                         ["raised"])
        self.assertEqual(self.call(svc, "GET", "/admin/shields/" + SHIELD)
                         .header("Allow"), "POST")
        self.assertEqual(self.call(svc, "DELETE", "/admin/shields")
                         .header("Allow"), "GET")

    def test_each_switch_is_audited_and_one_event_on_one_instance(self):
        a = self.admin_service("a")
        b = self.admin_service("b")
        self.stepped(b)
        self.assertEqual(self.switch(a, {"raise_for_s": 900}).status, 200)
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["raised"], 10.0))
        self.assertEqual(self.switch(a, {"lower": True}).status, 200)
        # b has stepped past the lowering: had it announced anything, its
        # event would be in the stream by the time it lets checks through.
        self.assertTrue(wait_until(
            lambda: self.untrusted(b).status == 200 and
            not self.shields(b)[SHIELD]["raised"], 10.0))
        entries = self.call(a, "GET", "/admin/audit?limit=10").json["entries"]
        mine = [(e["action"], e["name"], e["after"]) for e in entries
                if e["action"].startswith("shield_")]
        self.assertEqual(mine, [
            ("shield_lower", SHIELD, {"lower": True, "lower_for_s": 600,
                                      "applied": "shared"}),
            ("shield_raise", SHIELD,
             {"raise_for_s": 900, "applied": "shared"}),
        ])
        self.assertEqual(entries[0]["actor"], "admin-api")
        self.assertTrue(wait_until(
            lambda: self.events(a, "shield_lowered"), 10.0))
        raised = self.events(a, "shield_raised")
        lowered = self.events(a, "shield_lowered")
        self.assertEqual((len(raised), len(lowered)), (1, 1),
                         (raised, lowered))
        up, down = raised[0], lowered[0]
        for e in (up, down):
            self.assertEqual((e["policy"], e["endpoint"], e["action"],
                              e["source"], e["operator"]),
                             (SHIELD, "login", "challenge", "shared", True))
            self.assertEqual(e["threshold"], 100)
            for k in ("rate", "current", "baseline"):
                self.assertIn(k, e)
        self.assertEqual(down["since"], up["since"])
        self.assertGreater(up["until"], up["since"])
        self.assertGreaterEqual(down["until"], down["since"])
        # The events name no one: only the policy and figures.
        self.assertNotIn("key", up)

    def test_the_metrics_show_each_shields_state(self):
        svc = self.admin_service()
        self.stepped(svc)
        labels = {"policy": SHIELD}
        self.assertEqual(metric(svc, "abuseguard_shield_raised", **labels), 0)
        self.assertEqual(metric(svc, "abuseguard_shield_threshold", **labels),
                         100)
        self.assertEqual(metric(svc, "abuseguard_shield_rate", **labels), 0)
        self.assertIsNotNone(metric(svc, "abuseguard_shield_baseline",
                                    **labels))
        self.assertEqual(metric(svc, "abuseguard_shield_local", **labels), 0)
        self.assertEqual(metric(svc, "abuseguard_shield_threshold",
                                policy="login.site_unknown_users"), 30)
        self.assertEqual(metric(svc, "abuseguard_shield_operator", **labels),
                         0)
        self.assertEqual(self.switch(svc, {"raise_for_s": 60}).status, 200)
        self.assertEqual(metric(svc, "abuseguard_shield_raised", **labels), 1)
        # The raise is the operator's: the long-raise alert leaves it be.
        self.assertEqual(metric(svc, "abuseguard_shield_operator", **labels),
                         1)
        self.assertEqual(metric(svc, "abuseguard_events_total",
                                type="shield_raised"), 1)
        self.assertEqual(self.switch(svc, {"lower": True}).status, 200)
        self.assertEqual(metric(svc, "abuseguard_shield_raised", **labels), 0)
        self.assertEqual(metric(svc, "abuseguard_shield_operator", **labels),
                         0)
        self.assertEqual(metric(svc, "abuseguard_events_total",
                                type="shield_lowered"), 1)

    def test_the_overview_counts_this_instances_checks_by_minute(self):
        svc = self.admin_service()

        def total(doc, endpoint="login"):
            c, = [c for c in doc["checks"] if c["endpoint"] == endpoint]
            return sum(sum(c[k]) for k in ("allowed", "denied",
                                           "unavailable", "invalid"))

        r = self.call(svc, "GET", "/admin/overview")
        self.assertEqual(r.status, 200, r.raw)
        before = r.json
        self.assertEqual(before["scope"], "instance")
        self.assertEqual(before["minute_s"], 60)
        self.assertEqual(len(before["minutes"]), 60)
        self.assertEqual(self.untrusted(svc).status, 200)
        self.assertEqual(self.switch(svc, {"raise_for_s": 60}).status, 200)
        self.assertEqual(self.untrusted(svc).status, 429)
        self.switch(svc, {"lower": True})
        doc = self.call(svc, "GET", "/admin/overview").json
        self.assertEqual(total(doc), total(before) + 2)
        for c in doc["checks"]:
            for k in ("allowed", "denied", "unavailable", "invalid"):
                self.assertEqual(len(c[k]), 60)
        asked, = [p for p in doc["policies"] if p["policy"] == SHIELD]
        self.assertEqual(sum(asked["challenged"]), 1)
        self.assertEqual(len(asked["denied"]), 60)
        # Each shield sampled by the sync, its raise among the samples.
        self.assertTrue(wait_until(lambda: SHIELD in {
            s["policy"] for s in self.call(svc, "GET", "/admin/overview")
            .json["shields"]}, 10.0))
        doc = self.call(svc, "GET", "/admin/overview").json
        s, = [s for s in doc["shields"] if s["policy"] == SHIELD]
        self.assertEqual(len(s["threshold"]), 60)
        self.assertIn(100, s["threshold"])
        self.assertIn(True, s["raised"])
        # Per instance: another instance counted none of these checks.
        other = self.admin_service("other")
        doc = self.call(other, "GET", "/admin/overview").json
        self.assertEqual(total(doc), 0)

    def test_without_redis_the_switch_holds_on_this_instance_and_says_so(
            self):
        svc = self.admin_service()
        self.stepped(svc)
        self.redis.stop()
        r = self.switch(svc, {"raise_for_s": 600})
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("only this instance", r.json["error"])
        self.assertEqual((r.json["shield"]["raised"],
                          r.json["shield"]["source"]), (True, "local"))
        # It holds here: an untrusted check is challenged without Redis.
        r = self.untrusted(svc)
        self.assertTrue(self.challenged_by_shield(r), r.raw)
        self.assertEqual(metric(svc, "abuseguard_shield_local",
                                policy=SHIELD), 1)
        r = self.switch(svc, {"lower": True})
        self.assertEqual(r.status, 503, r.raw)
        self.assertFalse(r.json["shield"]["raised"])
        r = self.untrusted(svc)
        self.assertFalse(self.challenged_by_shield(r), r.raw)
        entries = self.call(svc, "GET", "/admin/audit?limit=5").json["entries"]
        self.assertEqual(
            [(e["action"], e["after"]["applied"]) for e in entries[:2]],
            [("shield_lower", "local"), ("shield_raise", "local")])

    def test_a_lower_is_not_undone_by_an_instance_back_from_an_outage(self):
        """Issue 36, item 2: raised for an hour; b loses Redis (it goes on
        shielding from its copy of the raise); the operator lowers on a.
        Once b reaches Redis again, the lower stands on both: b's copy is
        not pushed back. (Before: b raised the shared state again for the
        rest of the hour, with no event.)"""
        a = self.admin_service("a")
        gate = Gate(self.redis.port)
        self.addCleanup(gate.close)
        b = Service(self.workdir, gate.url(), secret=self.secret, name="b",
                    extra=["--admin-token-file", self.token_file,
                           "--redis-timeout-ms", "300"])
        self.services.append(b)
        self.stepped(a)
        self.stepped(b)
        self.assertEqual(self.switch(a, {"raise_for_s": 3600}).status, 200)
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["raised"], 10.0))
        gate.cut()
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["source"] == "local", 15.0),
            self.shields(b)[SHIELD])
        # Lowered for no time: only the switch's version keeps b's copy out.
        r = self.switch(a, {"lower_for_s": 0})
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["shield"]["switches"], 2)
        self.assertTrue(self.shields(b)[SHIELD]["raised"])  # its copy
        self.assertTrue(self.challenged_by_shield(self.untrusted(b)))
        gate.restore()
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["source"] == "shared", 15.0),
            self.shields(b)[SHIELD])
        # For two seconds of b's syncs since (Redis TIME, which its shared
        # view is stepped at), lowered on both, and checks pass.
        back = self.shields(b)[SHIELD]["stepped_at"]
        def watched():
            for svc in (a, b):
                s = self.shields(svc)[SHIELD]
                self.assertFalse(s["raised"], s)
                self.assertEqual(s["switches"], 2, s)
            self.assertEqual(self.untrusted(b).status, 200)
            return self.shields(b)[SHIELD]["stepped_at"] >= \
                later(back, 2.0)
        self.assertTrue(wait_until(watched, 20.0))
        raised = self.events(a, "shield_raised")
        self.assertEqual(len(raised), 1, raised)  # the operator's alone

    def test_a_lower_on_an_instance_without_redis_is_not_undone_by_it(self):
        """The review's case: b, without Redis, raises from its own counts;
        the operator lowers on b (a 503: only b applied it). Once b
        reaches Redis again nothing of b's raise goes back: the lower
        outranks it. (Before: b's next step pushed its raise to Redis,
        raising every instance, with a "resumed" event.)"""
        a = self.admin_service("a")
        gate = Gate(self.redis.port)
        self.addCleanup(gate.close)
        b = Service(self.workdir, gate.url(), secret=self.secret, name="b",
                    extra=["--admin-token-file", self.token_file,
                           "--redis-timeout-ms", "300"])
        self.services.append(b)
        self.stepped(a)
        self.stepped(b)
        gate.cut()
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["source"] == "local", 15.0))
        for _ in range(130):
            r = self.call(b, "POST", "/report-login",
                          dict(self.fresh(), success=False))
            self.assertEqual(r.status, 204, r.raw)
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["raised"], 10.0))
        # Kept down for its hold: b's own counts, still over the floor in
        # this window, may not raise it again meanwhile.
        r = self.switch(b, {"lower": True})
        self.assertEqual(r.status, 503, r.raw)
        self.assertFalse(r.json["shield"]["raised"])
        gate.restore()
        self.assertTrue(wait_until(
            lambda: self.shields(b)[SHIELD]["source"] == "shared", 15.0))
        back = self.shields(b)[SHIELD]["stepped_at"]

        def watched():
            for svc in (a, b):
                s = self.shields(svc)[SHIELD]
                self.assertFalse(s["raised"], s)
            self.assertEqual(self.untrusted(a).status, 200)
            return self.shields(b)[SHIELD]["stepped_at"] >= \
                later(back, 2.0)
        self.assertTrue(wait_until(watched, 20.0))
        # b's own raise, while it had no Redis, is its own event (queued,
        # appended once Redis answered); none of the shared state.
        raised = self.events(a, "shield_raised")
        self.assertEqual([(e["source"], e.get("resumed")) for e in raised],
                         [("local", None)], raised)


if __name__ == "__main__":
    unittest.main()
