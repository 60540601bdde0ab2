# SPDX-License-Identifier: Apache-2.0
"""The caller's ref (issue 38): an opaque string a check or report may
carry, which comes back in the events that request causes, so a backend
can match an event to its own user without abuseguard's secret and
without knowing how the keys are derived. It is stored nowhere else: not
in the logs, not in Redis beyond the events' stream."""
import unittest

from harness import wait_until
from test_events import EventsBase

IP = "203.0.113.9"


class EventRefTest(EventsBase):
    def test_a_lockout_and_a_breached_login_carry_the_callers_ref(self):
        hook = self.receiver()
        svc = self.start([hook])
        ref = "u:5e884898da28047151d0e56f8dc62927"
        for _ in range(6):
            r = svc.post("/check-login", {"user": "ana@example.com",
                                          "ip": IP, "ref": ref})
        self.assertEqual(r.status, 429, r.raw)
        # Another user's lockout, without a ref, carries none.
        for _ in range(6):
            svc.post("/check-login", {"user": "bob@example.com", "ip": IP})
        r = svc.post("/report-login", {"user": "cy@example.com", "ip": IP,
                                       "success": True,
                                       "password_breached": True,
                                       "ref": "u:cy"})
        self.assertEqual(r.status, 200, r.raw)
        self.assertTrue(wait_until(
            lambda: len(hook.events("lockout")) == 2 and
            hook.events("breached_password_login"), 10.0), hook.events())
        by_ref = sorted(e.get("ref", "") for e in hook.events("lockout"))
        self.assertEqual(by_ref, ["", ref])
        (breached,) = hook.events("breached_password_login")
        self.assertEqual(breached["ref"], "u:cy")
        streamed = self.streamed(svc, 3)
        self.assertIn(ref, [e.get("ref") for e in streamed])
        # Each event is logged as it is raised: wait for the three lines,
        # then look for the refs.
        self.assertTrue(wait_until(
            lambda: svc.log_text().count('"security_event"') >= 3, 10.0),
            svc.log_text())
        self.assertNotIn(ref, svc.log_text())
        self.assertNotIn("u:cy", svc.log_text())
        # Nowhere in Redis but the events' stream.
        self.redis.cmd("DEL", "ag::events")
        self.assertNotIn(ref, self.redis.dump_text())

    def test_a_bad_ref_is_a_400_naming_it(self):
        svc = self.start([self.receiver()])
        for bad in ("", "a b", "x" * 65, 7, ["u"]):
            r = svc.post("/report-login", {"user": "ana@example.com",
                                           "ip": IP, "success": False,
                                           "ref": bad})
            self.assertEqual(r.status, 400, r.raw)
            self.assertEqual(r.json["field"], "ref", r.raw)


if __name__ == "__main__":
    unittest.main()
