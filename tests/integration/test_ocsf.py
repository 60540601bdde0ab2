# SPDX-License-Identifier: Apache-2.0
"""OCSF events (issue 42): with --webhook-format ocsf a real service POSTs
each security event as an OCSF 1.8.0 event, signed as before, valid
against the schema's class definitions (ocsf_schema.py), with no
identifier anywhere in it; GET /admin/events?format=ocsf renders the
stream the same way and refuses a bad format naming it; and the json
format stays our events, byte for byte."""
import json
import os
import subprocess
import unittest

from harness import BINARY, digest, wait_until
from ocsf_schema import Schema
from test_events import AUTH, IP, USER, EventsBase

REF = "backend-ref-7"
SPRAYED = "fp-Winter2026!"
SHIELD = "login.site_failures"
SPRAY_LIMIT = 10  # users an hour (policies/default.json)
# The one gap the schema's object constraints leave (docs/decisions/
# ocsf-events.md): a source that is its network, never an address.
SOURCE_GAP = "src_endpoint: needs at least one of ['ip', 'uid', 'name',"


def address(i):
    """A new address in a /16 of its own for each sprayed attempt (as
    test_spray.py): no per-address or per-network policy sees two."""
    return "%d.%d.0.7" % (11 + i // 200, i % 200)


class OcsfTest(EventsBase):
    @classmethod
    def setUpClass(cls):
        cls.schema = Schema()

    def assert_valid(self, event):
        errors, gaps = self.schema.check(event)
        self.assertEqual(errors, [], json.dumps(event))
        for gap in gaps:
            self.assertIn(SOURCE_GAP, gap, json.dumps(event))

    def provoke(self, svc):
        """A lockout (challenged, with a ref), a spray, a breached-password
        login, a recovery, an admin reset, a policy and a list change, and
        a shield raised and lowered by the operator. Returns the
        identifiers sent, none of which an event may hold."""
        sent = {USER, IP, SPRAYED, "Winter2026"}
        for _ in range(8):
            self.login(svc, USER, IP, ref=REF)
        for i in range(SPRAY_LIMIT + 3):
            user, ip = "sprayed%d@example.com" % i, address(i)
            sent |= {user, ip}
            r = svc.post("/check-login", {"user": user, "ip": ip,
                                          "password_fp": SPRAYED})
            if r.status == 200:
                svc.post("/report-login", {"user": user, "ip": ip,
                                           "success": False,
                                           "password_fp": SPRAYED})
        breached, recovered = "breached@example.com", "back@example.com"
        sent |= {breached, recovered, "192.0.2.55", "192.0.2.56"}
        r = svc.post("/report-login", {"user": breached, "ip": "192.0.2.55",
                                       "success": True, "ref": REF,
                                       "password_breached": True})
        self.assertEqual(r.status, 200, r.raw)
        r = svc.post("/report-login", {"user": recovered, "ip": "192.0.2.56",
                                       "success": True,
                                       "method": "recovery"})
        self.assertEqual(r.status, 200, r.raw)
        self.reset(svc, USER)
        r = svc.request("PUT", "/admin/policies/ev.new", {
            "endpoint": "login", "key": ["user"], "algorithm": "fixed_window",
            "limit": 9, "window_s": 60}, headers=AUTH)
        self.assertIn(r.status, (201, 202), r.raw)
        listed = "203.0.113.9"
        sent.add(listed)
        r = svc.post("/admin/lists/deny", {"kind": "ip", "value": listed},
                     headers=AUTH)
        self.assertIn(r.status, (201, 202), r.raw)
        r = svc.request("POST", "/admin/shields/" + SHIELD,
                        {"raise_for_s": 900}, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        r = svc.request("POST", "/admin/shields/" + SHIELD, {"lower": True},
                        headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        return sent

    WANT = {"lockout": 3002, "password_spray": 2004,
            "breached_password_login": 2004, "account_recovered": 3002,
            "reset": 3001, "policy_changed": 3004, "list_changed": 3004,
            "shield_raised": 2004, "shield_lowered": 2004}

    def test_ocsf_webhooks_are_signed_valid_and_name_no_one(self):
        hook = self.receiver()
        svc = self.start([hook], extra=["--webhook-format", "ocsf"])
        sent = self.provoke(svc)

        def types():
            return {e["unmapped"]["type"] for e in hook.events(None)}
        self.assertTrue(wait_until(lambda: set(self.WANT) <= types(), 20.0),
                        types())
        with hook.lock:
            posts = list(hook.posts)
        # Signed over the OCSF body, each verified by the docs' recipe.
        self.assertTrue(posts)
        self.assertTrue(all(ok for _, _, ok in posts))
        by_type = {}
        for body, _, _ in posts:
            text = body.decode()
            for plain in sent:
                self.assertNotIn(plain, text)
            e = json.loads(body)
            self.assert_valid(e)
            self.assertEqual(e["metadata"]["version"], "1.8.0")
            self.assertEqual(e["metadata"]["product"]["name"], "abuseguard")
            self.assertEqual(e["metadata"]["uid"], e["unmapped"]["id"])
            self.assertIsInstance(e["time"], int)
            by_type[e["unmapped"]["type"]] = e
        for type_, class_uid in self.WANT.items():
            self.assertEqual(by_type[type_]["class_uid"], class_uid, type_)
        lockout = by_type["lockout"]
        self.assertEqual((lockout["status_id"], lockout["action_id"],
                          lockout["disposition_id"]), (2, 2, 23))
        # The user is the backend's ref; the key, a user and address's,
        # ties the key's events together.
        self.assertEqual(lockout["user"], {"uid": REF})
        self.assertEqual(lockout["metadata"]["correlation_uid"],
                         digest(self.secret, [("user", USER), ("ip", IP)]))
        spray = by_type["password_spray"]
        self.assertEqual(spray["resources"][0]["uid"],
                         digest(self.secret, [("password_fp", SPRAYED)]))
        breached = by_type["breached_password_login"]
        self.assertEqual(breached["evidences"][0]["user"]["uid"], REF)
        self.assertEqual(breached["evidences"][0]["user"]["uid_alt"],
                         digest(self.secret,
                                [("user", "breached@example.com")]))
        # A recovery with no ref names its user by the user's digest.
        self.assertEqual(by_type["account_recovered"]["user"],
                         {"uid": digest(self.secret,
                                        [("user", "back@example.com")])})
        self.assertEqual(by_type["shield_raised"]["finding_info"]["uid"],
                         by_type["shield_lowered"]["finding_info"]["uid"])
        # The stream keeps our own events: the format is the webhooks'.
        streamed = self.all_streamed(svc)
        self.assertTrue(streamed)
        self.assertTrue(all("type" in e and "class_uid" not in e
                            for e in streamed))

    def page(self, svc, query):
        return svc.request("GET", "/admin/events?" + query, headers=AUTH)

    def test_the_stream_pages_as_ocsf_and_refuses_a_bad_format(self):
        hook = self.receiver()
        svc = self.start([hook])
        sent = self.provoke(svc)
        self.assertTrue(wait_until(
            lambda: set(self.WANT) <= {e["type"] for e in
                                       self.all_streamed(svc)}, 20.0))
        ours = self.all_streamed(svc)
        r = self.page(svc, "limit=1000&format=json")
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["events"], ours)
        r = self.page(svc, "limit=1000&format=ocsf")
        self.assertEqual(r.status, 200, r.raw)
        for plain in sent:
            self.assertNotIn(plain, r.raw.decode())
        got = r.json["events"]
        self.assertEqual(len(got), len(ours))
        for e, mine in zip(got, ours):
            self.assert_valid(e)
            # Ours, stream_id too, whole under unmapped, in stream order.
            self.assertEqual(e["unmapped"], mine)
            self.assertEqual(e["metadata"]["uid"], mine["id"])
        self.assertEqual(r.json["next_after"], ours[-1]["stream_id"])
        # Paged like the json: two at a time from an after.
        r = self.page(svc, "format=ocsf&limit=2&after=" + ours[0]["stream_id"])
        self.assertEqual([e["metadata"]["uid"] for e in r.json["events"]],
                         [e["id"] for e in ours[1:3]])
        for bad in ("format=bogus", "format=OCSF", "format=", "format=json1"):
            with self.subTest(bad):
                r = self.page(svc, bad)
                self.assertEqual(r.status, 400, r.raw)
                self.assertEqual(r.json["field"], "format", r.json)
                self.assertIn("format", r.json["error"])

    def test_the_json_format_is_unchanged_byte_for_byte(self):
        # Named or by default, each body is the very text the stream
        # holds (the JSON of before this flag).
        for extra in ([], ["--webhook-format", "json"]):
            with self.subTest(extra=extra):
                self.redis.cmd("DEL", "ag::events")
                hook = self.receiver()
                svc = self.start([hook], extra=extra)
                self.reset(svc, USER)
                self.assertTrue(wait_until(lambda: hook.events("reset"),
                                           10.0))
                self.assertTrue(wait_until(
                    lambda: self.redis.cmd("XLEN", "ag::events") >= 1, 10.0))
                (_, fields), = self.redis.cmd("XRANGE", "ag::events", "-",
                                              "+")
                stored = dict(zip(fields[::2], fields[1::2]))["event"]
                with hook.lock:
                    body = hook.posts[0][0]
                self.assertEqual(body, stored.encode())
                self.assertTrue(hook.all_verified())
                self.services.remove(svc)
                self.assertEqual(svc.stop(), 0, svc.log_text())

    def test_the_format_is_read_from_the_file_and_refused_when_bad(self):
        hook = self.receiver()
        conf = os.path.join(self.workdir, "abuseguard.conf")
        with open(conf, "w") as f:
            f.write("webhook-format = ocsf\n")
        svc = self.start([hook], extra=["--config", conf])
        self.reset(svc, USER)
        self.assertTrue(wait_until(lambda: hook.events(None), 10.0))
        (e,) = hook.events(None)
        self.assertEqual((e["class_uid"], e["unmapped"]["type"]),
                         (3001, "reset"))
        # A bad value, from a flag or the environment, stops the start
        # naming the flag.
        for args, env in ((["--webhook-format", "xml"], {}),
                          ([], {"ABUSEGUARD_WEBHOOK_FORMAT": "OCSF"})):
            with self.subTest(args=args, env=env):
                r = subprocess.run([BINARY, *args], capture_output=True,
                                   text=True, timeout=30,
                                   env=dict(os.environ, **env))
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("--webhook-format must be ocsf or json",
                              r.stderr)


if __name__ == "__main__":
    unittest.main()
