# SPDX-License-Identifier: Apache-2.0
"""Breached passwords in checks (issue 28) over real processes: a login
check that says password_breached is challenged by login.breached_password
(a signal policy, the defaults') from an untrusted device, with the
answer, headers and metrics of any policy, is still counted by the other
policies (so credential stuffing from one address is denied by its
limits, not challenged forever), and costs Redis no call of its own; a
trusted device is never asked; a passed challenge goes on; an account
that is also rate-limited is still denied; a shadow signal only counts;
a successful login report that says it raises breached_password_login
(the user's keyed digest and the lane, nothing in clear) and counts it;
a bad password_breached and a bad signal policy are 400s (and a refused
import) naming the field."""
import json
import os
import subprocess
import time
import unittest

from harness import (BINARY, PolicyTest, digest, make_secret, policy,
                     wait_until)

POLICY = "login.breached_password"
TOKEN = "tok-" + "b" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
# login.breached_password as policies/default.json has it.
SIGNAL = {"name": POLICY, "endpoint": "login", "key": ["user"],
          "algorithm": "signal", "signal": "password_breached",
          "applies_to": "untrusted", "action": "challenge"}
EVENT = "breached_password_login"
LOGINS = "abuseguard_breached_password_logins_total"


def checks_run(redis):
    """Checks Redis has run: FCALL (functions) or EVALSHA (scripts)."""
    stats = redis.command_stats()
    return sum(stats.get(c, {}).get("calls", 0)
               for c in ("fcall", "evalsha", "eval"))


def calls(redis, command):
    return redis.command_stats().get(command, {}).get("calls", 0)


def metric(svc, line):
    """The value of the metric line that starts with line + " "."""
    for text in svc.request("GET", "/metrics").raw.decode().splitlines():
        if text.startswith(line + " "):
            return float(text.split()[1])
    raise AssertionError("no metric " + line)


class BreachedTest(PolicyTest):
    def admin_service(self, **kw):
        token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                 name="admin.token")
        return self.service(extra=["--admin-token-file", token_file], **kw)

    def check(self, svc, user, ip="192.0.2.1", **extra):
        return self.login(svc, user, ip, password_breached=True, **extra)

    def report(self, svc, user, success, ip="192.0.2.1", **extra):
        r = svc.post("/report-login", {"user": user, "ip": ip,
                                       "success": success, **extra})
        self.assertEqual(r.status, 200 if success else 204, r.raw)
        return r

    def assert_challenged(self, r):
        self.assertEqual(r.status, 429, r.raw)
        self.assertEqual((r.json["allowed"], r.json["policy"],
                          r.json["action"], r.json["retry_after"],
                          r.json["device"]),
                         (False, POLICY, "challenge", 1, "untrusted"), r.raw)
        # Named as any policy is: in the decisions and the headers.
        self.assertEqual(self.decision(r, POLICY),
                         {"policy": POLICY, "allowed": False, "limit": 1,
                          "remaining": 0, "reset_after": 0,
                          "retry_after": 1, "action": "challenge"})
        self.assertEqual((r.header("Retry-After"),
                          r.header("X-RateLimit-Limit"),
                          r.header("X-RateLimit-Remaining"),
                          r.header("X-RateLimit-Reset")),
                         ("1", "1", "0", "1"))
        self.assertIn('"%s";q=1;w=1' % POLICY, r.header("RateLimit-Policy"))
        self.assertIn('"%s";r=0;t=1' % POLICY, r.header("RateLimit"))

    def test_an_untrusted_breached_login_is_challenged_and_counted(self):
        svc = self.service()  # the defaults
        user = "ana@example.com"
        for i in range(3):
            r = self.check(svc, user)
            self.assert_challenged(r)
            # A challenged attempt goes on to a second factor: it counts,
            # as an allowed one would (login.user: 20 in 15 minutes).
            self.assertEqual(self.decision(r, "login.user")["remaining"],
                             19 - i)
        # Without the signal, the other policies judge and record as ever.
        r = self.login(svc, user)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(self.decision(r, "login.user")["remaining"], 16)
        self.assertNotIn(POLICY, [d["policy"] for d in r.json["decisions"]])
        # The second factor passed: the check goes on, and is recorded.
        r = self.check(svc, user, challenge_passed=True)
        self.assertEqual(r.status, 200, r.raw)
        self.assertIs(self.decision(r, POLICY)["challenge_passed"], True)
        self.assertEqual(self.decision(r, "login.user")["remaining"], 15)
        self.assertNotIn(POLICY, r.header("RateLimit-Policy"))
        self.assertEqual(metric(svc, 'abuseguard_challenges_total{policy="%s"}'
                                % POLICY), 3)
        self.assertEqual(
            metric(svc, 'abuseguard_challenges_passed_total{policy="%s"}'
                   % POLICY), 1)
        # Logged by the user's digest, as any policy's trip; never the user.
        log = svc.log_text()
        self.assertIn("policy=%s key=%s" % (
            POLICY, digest(self.secret, [("user", user)])), log)
        self.assertNotIn(user, log)

    def test_breached_stuffing_from_one_address_is_denied_by_its_limits(
            self):
        # Credential stuffing: one address, a different user each time,
        # every password breached. Each attempt is challenged and counted,
        # so login.ip_users (20 users an hour) denies the 21st user, and
        # deny beats the signal's challenge.
        svc = self.service()  # the defaults
        ip = "203.0.113.7"
        for i in range(20):
            r = self.check(svc, "victim%d@example.com" % i, ip)
            self.assert_challenged(r)
            self.assertEqual(self.decision(r, "login.ip_users")["remaining"],
                             19 - i, r.raw)
            self.assertEqual(self.decision(r, "login.ip")["remaining"],
                             99 - i, r.raw)
        for i in range(20, 26):
            r = self.check(svc, "victim%d@example.com" % i, ip)
            self.assertEqual(r.status, 429, r.raw)
            self.assertEqual((r.json["policy"], r.json["action"]),
                             ("login.ip_users", "deny"), r.raw)
            self.assertGreater(r.json["retry_after"], 1)
        # A plain check from that address is denied too: the address is
        # blocked, whatever the password.
        r = self.login(svc, "someone@example.com", ip)
        self.assertEqual(r.status, 429, r.raw)
        self.assertEqual(r.json["policy"], "login.ip_users", r.raw)

    def test_a_trusted_device_is_never_asked(self):
        svc = self.service()
        user = "owner@example.com"
        token = self.report(svc, user, True).json["device_token"]
        self.assert_challenged(self.check(svc, user, "198.51.100.9"))
        r = self.check(svc, user, "198.51.100.9", device_token=token)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["device"], "trusted")
        self.assertNotIn(POLICY, [d["policy"] for d in r.json["decisions"]])

    def test_a_rate_limited_account_is_still_denied(self):
        svc = self.service()
        user, ip = "victim@example.com", "203.0.113.50"
        # Five wrong passwords from one address: login.user_ip_fail denies
        # there, 15 minutes.
        for i in range(5):
            self.assertEqual(self.login(svc, user, ip).status, 200)
            self.report(svc, user, False, ip)
        for extra in ({}, {"challenge_passed": True}):
            r = self.check(svc, user, ip, **extra)
            self.assertEqual(r.status, 429, r.raw)
            # Deny beats the signal's challenge, and a passed challenge
            # lifts no denial.
            self.assertEqual((r.json["policy"], r.json["action"]),
                             ("login.user_ip_fail", "deny"), r.raw)
            self.assertGreater(r.json["retry_after"], 800)
            self.assertEqual(r.header("Retry-After"),
                             str(r.json["retry_after"]))
            self.assertIs(self.decision(r, POLICY)["allowed"], False)
            self.assertIs(self.decision(r, "login.user_ip_fail")["allowed"],
                          False)

    def test_the_signal_costs_no_redis_call(self):
        # The fleet off: its own scripts would be counted too.
        quiet = ["--deny-cache", "off", "--fleet", "off"]
        alone, beside = (
            self.seeded([SIGNAL], extra=quiet)[0],
            self.seeded([SIGNAL, policy("login.user", limit=50)],
                        extra=quiet)[0])
        # alone never calls Redis for a check: only beside's loops make
        # their connections.
        self.open_every_connection(beside)
        before, sets = checks_run(self.redis), calls(self.redis, "set")
        for i in range(10):
            self.assert_challenged(self.check(alone, "a%d@example.com" % i))
        # Judged by the instance alone, and no lockout marker either.
        self.assertEqual(checks_run(self.redis), before)
        self.assertEqual(calls(self.redis, "set"), sets)
        # Beside a store policy: that policy's one call, nothing more.
        for i in range(10):
            r = self.check(beside, "b%d@example.com" % i)
            self.assert_challenged(r)
            # Each user's attempt is counted, as an allowed one would be.
            self.assertEqual(self.decision(r, "login.user")["remaining"], 49)
        self.assertEqual(checks_run(self.redis), before + 10)
        self.assertEqual(calls(self.redis, "set"), sets)

    def test_a_shadow_signal_only_counts(self):
        (svc,) = self.seeded([dict(SIGNAL, mode="shadow"),
                              policy("login.user", limit=50)])
        r = self.check(svc, "ana@example.com")
        self.assertEqual(r.status, 200, r.raw)
        self.assertIs(self.decision(r, POLICY)["shadow"], True)
        self.assertEqual(self.decision(r, "login.user")["remaining"], 49)
        self.assertEqual(r.header("X-RateLimit-Limit"), "50")
        self.assertEqual(
            metric(svc, 'abuseguard_shadow_denials_total{policy="%s"}'
                   % POLICY), 1)
        self.assertEqual(metric(svc, 'abuseguard_challenges_total{policy="%s"}'
                                % POLICY), 0)

    def test_a_successful_breached_login_raises_the_event_and_metric(self):
        svc = self.admin_service()
        user = "ana@example.com"
        key = digest(self.secret, [("user", user)])

        def events():
            r = svc.request("GET", "/admin/events?limit=1000", headers=AUTH)
            self.assertEqual(r.status, 200, r.raw)
            return [e for e in r.json["events"] if e["type"] == EVENT]

        # A failure, or a success that does not say it, raises none.
        self.report(svc, user, False, password_breached=True)
        self.report(svc, user, True)
        token = self.report(svc, user, True, password_breached=True) \
            .json["device_token"]
        self.assertTrue(wait_until(events, 10.0), "no %s event" % EVENT)
        self.assertEqual(metric(svc, LOGINS + '{lane="untrusted"}'), 1)
        self.assertEqual(metric(svc, LOGINS + '{lane="trusted"}'), 0)
        self.assertEqual(
            metric(svc, 'abuseguard_events_total{type="%s"}' % EVENT), 1)
        # From the device the first success trusted: the trusted lane's.
        self.report(svc, user, True, device_token=token,
                    password_breached=True)
        self.assertTrue(wait_until(lambda: len(events()) == 2, 10.0))
        first, second = events()
        for e, lane in ((first, "untrusted"), (second, "trusted")):
            self.assertEqual({k: v for k, v in e.items()
                              if k not in ("id", "time", "stream_id")},
                             {"type": EVENT, "endpoint": "login", "key": key,
                              "lane": lane})
        self.assertEqual(metric(svc, LOGINS + '{lane="trusted"}'), 1)
        # Two reports, two events: nothing dedupes them.
        self.report(svc, user, True, password_breached=True)
        self.assertTrue(wait_until(lambda: len(events()) == 3, 10.0))
        self.assertEqual(metric(svc, LOGINS + '{lane="untrusted"}'), 2)
        # The user is in no event, no Redis key and no log line.
        texts = [json.dumps(self.redis.cmd("XRANGE", "ag::events", "-", "+")),
                 json.dumps(self.redis.keys()), svc.log_text()]
        for text in texts:
            self.assertNotIn(user, text)

    def test_a_bad_password_breached_is_a_400_naming_it(self):
        svc = self.service()
        for path, extra in (("/check-login", {}),
                            ("/report-login", {"success": True}),
                            ("/report-login", {"success": False})):
            # null is the field left out (issue 38's one rule), no
            # refusal: test_request_fields.c holds that.
            for bad in ("yes", 1, 0, [], {}):
                r = svc.post(path, {"user": "a@example.com",
                                    "ip": "192.0.2.1",
                                    "password_breached": bad, **extra})
                self.assertEqual((r.status, r.json["field"]),
                                 (400, "password_breached"), (path, r.raw))
                self.assertEqual(r.json["error"],
                                 "password_breached must be true or false")
        # No signal of the OTP endpoints: an unknown field, ignored.
        r = self.otp(svc, "+447911123456", "192.0.2.1",
                     password_breached="yes")
        self.assertEqual(r.status, 200, r.raw)

    def test_a_bad_signal_policy_is_refused_naming_the_field(self):
        svc = self.admin_service()

        def put(name, body):
            return svc.request("PUT", "/admin/policies/" + name, body,
                               headers=AUTH)

        base = {k: v for k, v in SIGNAL.items() if k != "name"}
        for change, field in (
                ({"signal": "password_breachd"}, "signal"),
                ({"signal": None}, "signal"),
                ({"signal": 1}, "signal"),
                ({"algorithm": "sliding_log", "limit": 5,
                  "window_s": 60}, "signal"),
                ({"endpoint": "otp", "key": ["phone"]}, "signal"),
                ({"limit": 5}, "limit"),
                ({"window_s": 60}, "window_s"),
                ({"block_s": 60}, "block_s"),
                ({"counts": "failures"}, "counts"),
                ({"fail": "closed"}, "fail")):
            body = dict(base, **change)
            if change.get("signal", "") is None:
                del body["signal"]
            r = put("login.bad_signal", body)
            self.assertEqual((r.status, r.json["field"]), (400, field),
                             (change, r.raw))
            self.assertIn(field, r.json["error"])
        self.assertEqual(svc.request("GET", "/admin/policies/login.bad_signal",
                                     headers=AUTH).status, 404)
        # The default one, as the admin API shows it, and a new one.
        r = svc.request("GET", "/admin/policies/" + POLICY, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        record = r.json["policy"]
        self.assertEqual((record["algorithm"], record["signal"],
                          record["limit"], record["window_s"]),
                         ("signal", "password_breached", 1, 1))
        r = put("login.breached_deny", dict(base, action="deny",
                                            applies_to="all"))
        self.assertEqual(r.status, 201, r.raw)
        # A running instance follows the edit: a trusted device too is
        # now denied (the deny reported before the challenge).
        user = "t@example.com"
        token = self.report(svc, user, True).json["device_token"]
        deadline = time.monotonic() + 30
        while True:
            r = self.check(svc, user, device_token=token)
            if r.status == 429:
                break
            self.assertLess(time.monotonic(), deadline, r.raw)
            time.sleep(0.02)
        self.assertEqual((r.json["policy"], r.json["action"]),
                         ("login.breached_deny", "deny"), r.raw)
        # The CLI's import refuses a bad one the same way (exit 2).
        path = os.path.join(self.workdir, "bad.json")
        with open(path, "w") as f:
            json.dump({"policies": [dict(SIGNAL, name="login.imp",
                                         signal="leaked")]}, f)
        r = subprocess.run([BINARY, "policy", "import", path, "--db",
                            svc.db], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('signal must be one of "password_breached"', r.stderr)
        self.assertEqual(svc.request("GET", "/admin/policies/login.imp",
                                     headers=AUTH).status, 404)


if __name__ == "__main__":
    unittest.main()
