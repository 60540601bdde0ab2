# SPDX-License-Identifier: Apache-2.0
"""Security events (issue 19): raised once per lockout, kept in a Redis
Stream read through GET /admin/events, and POSTed, signed, to webhook
receivers that may fail, hang or be down, without slowing a check."""
import http.server
import json
import os
import socket
import threading
import time
import unittest

from harness import (PolicyTest, Service, digest, free_port, make_secret,
                     policy, wait_until)
from harness_topology import Cluster
from webhook_recipes import signature_ok

TOKEN = "tok-" + "e" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
USER, IP, PHONE = "victim@example.com", "198.51.100.7", "+447911123456"


def metric(svc, name, **labels):
    text = svc.request("GET", "/metrics").raw.decode()
    want = name
    if labels:
        want += "{" + ",".join('%s="%s"' % kv for kv in labels.items()) + "}"
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return None


class Receiver:
    """A webhook receiver on 127.0.0.1: answers status (200, or 503 while
    failing), sleeps hang seconds first if set, and records every POST it
    took (a 2xx) with whether its signature verified."""

    def __init__(self, key, port=None):
        self.key = key
        self.status = 200
        self.hang = 0.0
        self.taken = []    # (event, signature verified), in arrival order
        self.refused = 0   # POSTs answered non-2xx
        self.posts = []    # (raw body, signature header, verified) of each
        self.lock = threading.Lock()
        self.port = port or free_port()
        self.server = None

    def start(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if outer.hang:
                    time.sleep(outer.hang)
                header = self.headers.get("X-Abuseguard-Signature")
                ok = signature_ok(outer.key, body, header)
                with outer.lock:
                    outer.posts.append((body, header, ok))
                    status = outer.status if ok else 401
                    if status // 100 == 2:
                        outer.taken.append((json.loads(body), ok))
                    else:
                        outer.refused += 1
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def url(self):
        return "http://127.0.0.1:%d/hook" % self.port

    def events(self, type_=None):
        with self.lock:
            return [e for e, _ in self.taken
                    if type_ is None or e["type"] == type_]

    def all_verified(self):
        with self.lock:
            return all(ok for _, ok in self.taken)


class EventsBase(PolicyTest):
    """A receiver's key, an admin token, and the service's flags."""

    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")
        self.hook_secret = make_secret(self.workdir, name="webhook.key")
        with open(self.hook_secret, "rb") as f:
            self.hook_key = f.read()

    def receiver(self, port=None, start=True):
        r = Receiver(self.hook_key, port)
        if start:
            r.start()
        self.addCleanup(r.stop)
        return r

    def start(self, receivers, policies=None, extra=()):
        args = ["--admin-token-file", self.token_file,
                "--webhook-secret-file", self.hook_secret, *extra]
        for r in receivers:
            args += ["--webhook-url", r.url()]
        if policies is None:
            return self.service(extra=args)
        (svc,) = self.seeded(policies, extra=args)
        return svc

    def stream(self, svc, after=None, limit=None):
        q = []
        if after is not None:
            q.append("after=" + after)
        if limit is not None:
            q.append("limit=%d" % limit)
        r = svc.request("GET", "/admin/events" + ("?" + "&".join(q) if q
                                                    else ""), headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        return r.json

    def all_streamed(self, svc):
        out, after = [], None
        while True:
            page = self.stream(svc, after, 100)
            out += page["events"]
            if not page["events"]:
                return out
            after = page["next_after"]

    def streamed(self, svc, n):
        """The stream's events once it holds n (appends go without
        waiting)."""
        self.assertTrue(wait_until(lambda: len(self.all_streamed(svc)) >= n,
                                   10.0), self.all_streamed(svc))
        return self.all_streamed(svc)

    def reset(self, svc, user, pol="login.user_ip"):
        r = svc.post("/admin/reset", {"policy": pol, "user": user, "ip": IP},
                     headers=AUTH)
        self.assertIn(r.status, (204, 202), r.raw)


class EventsTest(EventsBase):
    def test_a_lockout_is_one_signed_event_however_many_denials_follow(self):
        hook = self.receiver()
        svc = self.start([hook])
        statuses = [self.login(svc, USER, IP).status for _ in range(15)]
        self.assertEqual(statuses[:5], [200] * 5)
        self.assertEqual(set(statuses[5:]), {429})
        self.assertTrue(wait_until(lambda: hook.events("lockout"), 10.0))
        time.sleep(0.5)  # any duplicate would have come by now
        lockouts = hook.events("lockout")
        self.assertEqual(len(lockouts), 1, lockouts)
        e = lockouts[0]
        self.assertEqual(e["policy"], "login.user_ip")
        self.assertEqual(e["endpoint"], "login")
        self.assertEqual(e["action"], "challenge")
        self.assertEqual(e["key"], digest(self.secret,
                                          [("user", USER), ("ip", IP)]))
        self.assertGreater(e["retry_after"], 0)
        self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertTrue(hook.all_verified())
        streamed = [x for x in self.streamed(svc, 1)
                    if x["type"] == "lockout"]
        self.assertEqual([x["id"] for x in streamed], [e["id"]])
        self.assertEqual(metric(svc, "abuseguard_events_total",
                                type="lockout"), 1)
        # The marker carries the state key's name, so it shares its slot.
        self.assertIn("ag:login.user_ip:%s:e" % e["key"], self.redis.keys())

    def test_a_lockout_is_one_event_across_instances(self):
        hook = self.receiver()
        args = ["--admin-token-file", self.token_file,
                "--webhook-secret-file", self.hook_secret,
                "--webhook-url", hook.url()]
        svcs = self.seeded([policy("ev.user", key=("user",), limit=3)],
                           count=2, extra=args)
        statuses = [self.login(svcs[i % 2], USER, IP).status
                    for i in range(12)]
        self.assertEqual(statuses, [200] * 3 + [429] * 9)
        self.assertTrue(wait_until(lambda: hook.events("lockout"), 10.0))
        time.sleep(0.5)
        (e,) = hook.events("lockout")
        self.assertEqual((e["policy"], e["action"], e["key"]),
                         ("ev.user", "deny",
                          digest(self.secret, [("user", USER)])))
        self.assertNotIn("level", e)  # no block: no level
        self.assertEqual(sum(metric(s, "abuseguard_events_total",
                                    type="lockout") for s in svcs), 1)

    def test_a_flood_of_denials_asks_redis_for_the_marker_once_a_second(
            self):
        hook = self.receiver()
        # Without the deny cache, so that every denial comes from Redis
        # and reaches the events' hook.
        svc = self.start([hook], policies=[policy("ev.user", key=("user",),
                                                  limit=3)],
                         extra=["--deny-cache", "off"])
        self.open_every_connection(svc)
        sets = self.redis.command_stats().get("set", {}).get("calls", 0)
        t = time.monotonic()
        statuses = [self.login(svc, USER, IP).status for _ in range(60)]
        took = time.monotonic() - t
        self.assertEqual(statuses, [200] * 3 + [429] * 57)
        self.assertTrue(wait_until(lambda: hook.events("lockout"), 10.0))
        asked = self.redis.command_stats()["set"]["calls"] - sets
        # One SET per started second at most, not one per denial.
        self.assertLessEqual(asked, int(took) + 1, (asked, took))
        self.assertEqual(len(hook.events("lockout")), 1)

    def test_a_conversion_block_is_its_own_event(self):
        hook = self.receiver()
        conv = policy("ev.conv", endpoint="otp", key=("phone_prefix",),
                      algorithm="conversion", limit=4, window_s=3600,
                      min_ratio=0.2, block_s=600)
        svc = self.start([hook], policies=[conv])
        statuses = [self.otp(svc, "+4479222%05d" % i, IP).status
                    for i in range(8)]
        self.assertEqual(statuses, [200] * 4 + [429] * 4)
        self.assertTrue(wait_until(lambda: hook.events("conversion_block"),
                                   10.0))
        time.sleep(0.3)
        (e,) = hook.events("conversion_block")
        self.assertEqual((e["policy"], e["endpoint"], e["level"]),
                         ("ev.conv", "otp", 1))
        self.assertGreaterEqual(e["retry_after"], 590)
        self.assertIn("ag:ev.conv:" + e["key"], self.redis.keys())
        self.assertEqual(hook.events("lockout"), [])

    def test_admin_reset_policy_and_list_edits_are_events_paged_in_order(
            self):
        hook = self.receiver()
        svc = self.start([hook])
        self.reset(svc, USER)
        r = svc.request("PUT", "/admin/policies/ev.new", {
            "endpoint": "login", "key": ["user"], "algorithm": "fixed_window",
            "limit": 9, "window_s": 60}, headers=AUTH)
        self.assertIn(r.status, (201, 202), r.raw)
        r = svc.post("/admin/lists/deny", {"kind": "ip",
                                           "value": "203.0.113.9"},
                     headers=AUTH)
        self.assertIn(r.status, (201, 202), r.raw)
        entry = r.json["entry"]["id"]
        self.assertTrue(wait_until(lambda: len(hook.events()) >= 3, 10.0))
        reset, changed, listed = hook.events()
        self.assertEqual(reset["type"], "reset")
        self.assertEqual(reset["policy"], "login.user_ip")
        self.assertEqual(reset["key"], digest(self.secret,
                                              [("user", USER), ("ip", IP)]))
        self.assertEqual((changed["type"], changed["policy"],
                          changed["change"]),
                         ("policy_changed", "ev.new", "put"))
        self.assertEqual((listed["type"], listed["list"], listed["change"],
                          listed["entry"]),
                         ("list_changed", "deny", "add", entry))
        # The appends go without waiting, on either of two connections:
        # the stream holds all three once Redis has taken them, in the
        # order it took them (stream ids ascending).
        self.assertTrue(wait_until(
            lambda: self.redis.cmd("XLEN", "ag::events") == 3, 10.0))
        # Two at a time: each page starts after the last one's id.
        seen, after = [], None
        while True:
            page = self.stream(svc, after, 2)
            self.assertLessEqual(len(page["events"]), 2)
            if not page["events"]:
                self.assertEqual(page["next_after"], after)
                break
            seen += page["events"]
            after = page["next_after"]
            self.assertEqual(after, page["events"][-1]["stream_id"])
        self.assertEqual(sorted(e["id"] for e in seen),
                         sorted(e["id"] for e in (reset, changed, listed)))
        ids = [tuple(map(int, e["stream_id"].split("-"))) for e in seen]
        self.assertEqual(ids, sorted(ids))
        for bad in ("after=x", "after=1-", "limit=0", "limit=1001"):
            r = svc.request("GET", "/admin/events?" + bad, headers=AUTH)
            self.assertEqual(r.status, 400, bad)
            self.assertTrue(r.json["error"].startswith(bad.split("=")[0]),
                            r.json)
        self.assertEqual(svc.request("GET", "/admin/events").status, 401)

    def test_a_reset_makes_the_next_lockout_an_event_again(self):
        hook = self.receiver()
        svc = self.start([hook])
        for _ in range(7):
            self.login(svc, USER, IP)
        self.assertTrue(wait_until(lambda: hook.events("lockout"), 10.0))
        self.reset(svc, USER)
        for _ in range(7):
            self.login(svc, USER, IP)
        self.assertTrue(wait_until(
            lambda: len(hook.events("lockout")) == 2, 10.0),
            hook.events())

    def test_held_events_arrive_in_order_once_the_receiver_recovers(self):
        hook = self.receiver()
        hook.status = 503
        svc = self.start([hook])
        users = ["u%d@example.com" % i for i in range(6)]
        for u in users:
            self.reset(svc, u)
        self.assertTrue(wait_until(lambda: hook.refused >= 2, 10.0))
        self.assertEqual(metric(svc, "abuseguard_webhook_queue_depth"), 6)
        hook.status = 200
        self.assertTrue(wait_until(lambda: len(hook.events()) >= 6, 10.0))
        # The service has counted what the receiver took, and holds none.
        self.assertTrue(wait_until(
            lambda: metric(svc, "abuseguard_webhook_queue_depth") == 0 and
            metric(svc, "abuseguard_webhook_delivered_total") ==
            len(hook.events()), 10.0))
        keys = [e["key"] for e in hook.events()]
        want = [digest(self.secret, [("user", u), ("ip", IP)])
                for u in users]
        # In order, each once at least, none missing (a retry after a
        # lost answer may repeat one: its id says so).
        deduped = [k for i, k in enumerate(keys) if k not in keys[:i]]
        self.assertEqual(deduped, want)
        self.assertEqual(metric(svc, "abuseguard_webhook_delivered_total"),
                         len(keys))
        self.assertEqual(metric(svc, "abuseguard_webhook_queue_depth"), 0)
        self.assertEqual(metric(svc, "abuseguard_webhook_dropped_total"), 0)

    def test_events_wait_for_a_receiver_that_is_down_then_arrive(self):
        hook = self.receiver(start=False)  # nothing listens on its port
        svc = self.start([hook])
        users = ["d%d@example.com" % i for i in range(4)]
        for u in users:
            self.reset(svc, u)
        time.sleep(1.5)  # refused connections, retried with backoff
        self.assertEqual(hook.events(), [])
        hook.start()
        self.assertTrue(wait_until(lambda: len(hook.events()) >= 4, 10.0))
        self.assertEqual(
            [e["key"] for e in hook.events()][:4],
            [digest(self.secret, [("user", u), ("ip", IP)]) for u in users])
        self.assertTrue(hook.all_verified())

    def test_an_event_older_than_max_age_is_dropped_and_counted(self):
        # Old at 3 s: the second event, sent to a receiver that answers,
        # is delivered well before that on a loaded machine too.
        hook = self.receiver(start=False)
        svc = self.start([hook], extra=["--webhook-max-age-s", "3"])
        self.reset(svc, "old@example.com")
        self.assertTrue(wait_until(
            lambda: metric(svc, "abuseguard_webhook_dropped_total") == 1,
            10.0))
        self.assertEqual(metric(svc, "abuseguard_webhook_queue_depth"), 0)
        hook.start()
        self.reset(svc, "new@example.com")
        self.assertTrue(wait_until(lambda: hook.events(), 10.0))
        time.sleep(0.3)
        (e,) = hook.events()
        self.assertEqual(e["key"], digest(self.secret,
                                          [("user", "new@example.com"),
                                           ("ip", IP)]))
        # The stream kept both: only the delivery gave up.
        self.assertEqual(len(self.streamed(svc, 2)), 2)

    def test_no_identifier_appears_in_events_the_stream_or_logs(self):
        hook = self.receiver()
        svc = self.start([hook])
        for _ in range(8):
            self.login(svc, USER, IP)
        for _ in range(6):
            self.otp(svc, PHONE, IP)
        self.reset(svc, USER)
        self.assertTrue(wait_until(
            lambda: {"lockout", "reset"} <= {e["type"]
                                             for e in hook.events()}, 10.0))
        # Two lockouts (login.user_ip, otp.phone) and the reset.
        api = json.dumps(self.streamed(svc, 3))
        bodies = json.dumps(hook.events())
        raw = json.dumps(self.redis.cmd("XRANGE", "ag::events", "-", "+"))
        for text in (bodies, raw, api, svc.log_text()):
            for ident in (USER, IP, PHONE, PHONE[1:], "7911123456"):
                self.assertNotIn(ident, text)
        self.assertIn("security_event", svc.log_text())

    def test_checks_stay_fast_while_the_receiver_hangs(self):
        # Each POST hangs until curl gives up (AG_WEBHOOK_TIMEOUT_MS, 2 s):
        # a check that waited for one would take 2 s at least, and the
        # twelve lockouts are a sixth of the checks.
        hook = self.receiver()
        hook.hang = 5.0
        svc = self.start([hook])
        self.open_every_connection(svc)
        took = []
        for i in range(12):
            user = "h%d@example.com" % i
            for _ in range(6):  # the sixth is a lockout: an event each
                t = time.monotonic()
                self.assertIn(self.login(svc, user, IP).status, (200, 429))
                took.append(time.monotonic() - t)
        # The markers' answers come after the checks': wait for them.
        self.assertTrue(wait_until(
            lambda: metric(svc, "abuseguard_events_total",
                           type="lockout") == 12, 10.0))
        took.sort()
        # Milliseconds on a quiet machine; a loaded one may stall a few
        # checks for a second, never a sixth of them for two.
        self.assertLess(took[len(took) // 2], 0.5, took)
        self.assertLess(took[int(len(took) * 0.9)], 1.0, took)
        # A hung receiver also does not hold up the stop (curl's timeout,
        # and the delivery thread abandons its POST): tearDown asserts a
        # clean exit; here, a quick one, not one that waits for the
        # twelve lockouts' POSTs (24 s).
        t = time.monotonic()
        self.assertEqual(svc.stop(), 0)
        self.assertLess(time.monotonic() - t, 10.0)

    def test_block_escalation_is_an_event_with_its_level(self):
        hook = self.receiver()
        # Blocks longer than the window: each lockout is one block, and
        # the second, within a day of the first, is twice as long. A
        # window of 3 s, so that its two failures and the check fall in
        # it on a loaded machine too.
        window_s, block_s = 3, 4
        grow = policy("ev.grow", key=("user",), limit=2, window_s=window_s,
                      counts="failures", block_s=block_s, block_growth=2,
                      block_max_s=60)
        svc = self.start([hook], policies=[grow])
        fail = {"user": USER, "ip": IP, "success": False}
        for level in (1, 2):
            for _ in range(2):
                self.assertEqual(svc.post("/report-login", fail).status, 204)
            r = self.login(svc, USER, IP)
            locked = self.redis_time_us()
            self.assertEqual(r.status, 429)
            self.assertEqual(r.json["retry_after"], block_s * level)
            self.assertTrue(wait_until(
                lambda: len(hook.events("lockout")) == level, 10.0),
                hook.events())
            self.assertEqual(hook.events("lockout")[-1]["level"], level)
            if level == 1:
                # The block ends, and the window, shorter, is empty; the
                # lockout's marker, set just after it for as long, goes
                # too, so that the next denial is a lockout again.
                self.wait_for_redis_time(locked + block_s * 1_000_000)
                marker = "ag:ev.grow:%s:e" % digest(self.secret,
                                                    [("user", USER)])
                self.assertTrue(wait_until(
                    lambda: self.redis.cmd("EXISTS", marker) == 0, 10.0))
        # Raised beside the second lockout, and delivered after it.
        self.assertTrue(wait_until(lambda: hook.events("block_escalated"),
                                   10.0), hook.events())
        (esc,) = hook.events("block_escalated")
        self.assertEqual((esc["policy"], esc["level"], esc["retry_after"],
                          esc["key"]),
                         ("ev.grow", 2, 2 * block_s,
                          digest(self.secret, [("user", USER)])))

    def test_breaker_events_reach_the_webhook_and_then_the_stream(self):
        hook = self.receiver()
        svc = self.start([hook], extra=["--redis-timeout-ms", "200"])
        self.login(svc, "b0@example.com", IP)
        self.redis.stop()
        for i in range(4):
            self.login(svc, "b%d@example.com" % i, IP)
        self.assertTrue(wait_until(lambda: hook.events("breaker_open"), 10.0))
        self.redis.start()  # same port, empty
        self.assertTrue(wait_until(lambda: hook.events("breaker_closed"),
                                   10.0))
        types = [e["type"] for e in hook.events()]
        self.assertLess(types.index("breaker_open"),
                        types.index("breaker_closed"))
        # The open event waited in the backlog and reached the stream once
        # Redis answered, before the closed one.
        self.assertTrue(wait_until(
            lambda: [e["type"] for e in self.all_streamed(svc)] ==
            ["breaker_open", "breaker_closed"], 10.0),
            self.all_streamed(svc))

    def test_bad_input_to_admin_events_is_a_400_naming_the_field(self):
        hook = self.receiver()
        svc = self.start([hook])
        self.reset(svc, "a@example.com")
        self.streamed(svc, 1)
        for q in ["after=", "after=abc", "after=1-", "after=-1-0",
                  "after=1-2-3", "after=99999999999999999999-0",
                  "after=1-99999999999999999999", "after=%00",
                  "limit=0", "limit=-1", "limit=1001", "limit=abc",
                  "limit=", "limit=1e3", "limit=99999999999999999999"]:
            with self.subTest(q=q):
                r = svc.request("GET", "/admin/events?" + q, headers=AUTH)
                self.assertEqual(r.status, 400, (q, r.raw))
                self.assertTrue(
                    r.json["error"].startswith(q.split("=")[0]), r.json)

    def test_after_the_largest_stream_id_is_an_empty_page(self):
        # Its successor would overflow: there is none, so the page is the
        # end of the stream, not its start again.
        hook = self.receiver()
        svc = self.start([hook])
        self.reset(svc, "a@example.com")
        self.streamed(svc, 1)
        m = "18446744073709551615"
        page = self.stream(svc, "%s-%s" % (m, m))
        self.assertEqual(page["events"], [], page)
        self.assertEqual(page["next_after"], "%s-%s" % (m, m))
        page = self.stream(svc, "%s-0" % m)
        self.assertEqual(page["events"], [], page)

    def test_entries_that_hold_no_event_are_read_past_not_an_empty_page(
            self):
        hook = self.receiver()
        svc = self.start([hook])
        for i in range(3):
            self.redis.cmd("XADD", "ag::events", "*", "other", str(i))
        self.reset(svc, "a@example.com")
        self.streamed(svc, 1)
        # A page of two would be two foreign entries: the read goes on.
        page = self.stream(svc, None, 2)
        self.assertEqual([e["type"] for e in page["events"]], ["reset"],
                         page)
        self.assertEqual(page["next_after"], page["events"][-1]["stream_id"])
        self.assertEqual(self.stream(svc, page["next_after"], 2)["events"],
                         [])

    def test_an_append_redis_refused_once_reaches_the_stream_unprompted(
            self):
        """One XADD refused while Redis is otherwise fine (here the stream
        key briefly holds another type; in life an OOM refusal, a dropped
        connection, a MOVED) waits in the backlog, and is sent again by
        the retry thread with no later event or breaker close."""
        hook = self.receiver()
        svc = self.start([hook])
        self.redis.cmd("SET", "ag::events", "not a stream")
        self.reset(svc, "first@example.com")
        self.assertTrue(wait_until(lambda: len(hook.events()) == 1, 10.0))
        # The refusal is logged with Redis's words, and the read names
        # them too rather than blaming a Redis that answers.
        self.assertTrue(wait_until(
            lambda: "events_append_failed" in svc.log_text(), 10.0))
        self.assertIn("WRONGTYPE", svc.log_text())
        r = svc.request("GET", "/admin/events", headers=AUTH)
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("WRONGTYPE", r.json["error"])
        self.assertNotIn("does not answer", r.json["error"])
        self.redis.cmd("DEL", "ag::events")
        # Redis takes appends again, and nothing else happens: the event
        # reaches the stream on its own (raw, not through a read, which
        # would send the backlog itself).
        self.assertTrue(wait_until(
            lambda: self.redis.cmd("XLEN", "ag::events") == 1, 10.0),
            "the reset event never reached the stream")
        self.assertEqual([e["type"] for e in self.all_streamed(svc)],
                         ["reset"])
        self.assertIn("events_append_recovered", svc.log_text())

    def test_an_append_lost_to_one_redis_stall_reaches_the_stream(self):
        """A Redis stall a little longer than --redis-timeout-ms (a fork,
        a slow command) times one XADD out without opening the breaker;
        the retry thread sends it once Redis is back."""
        hook = self.receiver()
        svc = self.start([hook], extra=["--redis-timeout-ms", "300"])
        self.open_every_connection(svc)
        self.reset(svc, "warm@example.com")
        self.streamed(svc, 1)
        self.redis.cmd("CLIENT", "PAUSE", "700", "WRITE")
        svc.post("/admin/reset", {"policy": "login.user_ip",
                                  "user": "stalled@example.com", "ip": IP},
                 headers=AUTH)
        # The webhook has it at once; the stream once Redis is back.
        self.assertTrue(wait_until(lambda: len(hook.events()) == 2, 10.0))
        time.sleep(1.0)  # the pause is over: Redis takes writes again
        self.assertNotIn("redis_breaker_open", svc.log_text())
        self.assertTrue(wait_until(
            lambda: self.redis.cmd("XLEN", "ag::events") >= 2, 10.0),
            "the second reset event never reached the stream")
        ids = {e["id"] for e in self.all_streamed(svc)}
        self.assertEqual(ids, {e["id"] for e in hook.events()})

    def test_webhook_flags_are_checked_at_start(self):
        for args, field in [
                (["--webhook-url", "http://127.0.0.1:9/x"],
                 "webhook-secret-file"),
                (["--webhook-url", "ftp://127.0.0.1/x",
                  "--webhook-secret-file", self.hook_secret], "webhook-url"),
                (["--webhook-url", "http://127.0.0.1:9/x",
                  "--webhook-max-age-s", "0",
                  "--webhook-secret-file", self.hook_secret],
                 "webhook-max-age-s")]:
            with self.subTest(args=args):
                import subprocess
                from harness import BINARY
                p = subprocess.run(
                    [BINARY, "--redis", self.redis.url(), "--secret-file",
                     self.secret, "--db",
                     os.path.join(self.workdir, "x.db"), *args],
                    capture_output=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(b"--" + field.encode(), p.stderr)


class ClusterEventsTest(EventsBase):
    """On Redis Cluster the marker shares its state key's hash tag (and
    so its slot and node), and the stream lives on the node of its own
    slot."""

    def setUp(self):
        super().setUp()
        self.cluster = Cluster(self.workdir)
        self.addCleanup(self.cluster.stop)

    def test_a_lockout_marker_lives_in_its_state_keys_slot(self):
        hook = self.receiver()
        seed = os.path.join(self.workdir, "seed")
        os.mkdir(seed)
        with open(os.path.join(seed, "p.json"), "w") as f:
            json.dump({"policies": [policy("ev.user", key=("user",),
                                           limit=2)]}, f)
        svc = Service(self.workdir, self.cluster.url(), secret=self.secret,
                      db=os.path.join(seed, "p.db"), name="cl",
                      extra=["--seed-dir", seed, "--admin-token-file",
                             self.token_file, "--webhook-secret-file",
                             self.hook_secret, "--webhook-url", hook.url()])
        self.services.append(svc)
        self.assertTrue(wait_until(
            lambda: svc.request("GET", "/readyz").status == 200, 10))
        statuses = [self.login(svc, USER, IP).status for _ in range(6)]
        self.assertEqual(statuses, [200] * 2 + [429] * 4)
        self.assertTrue(wait_until(lambda: hook.events("lockout"), 10.0))
        time.sleep(0.3)
        (e,) = hook.events("lockout")
        d = digest(self.secret, [("user", USER)])
        self.assertEqual(e["key"], d)
        state, marker = "ag:ev.user:{%s}" % d, "ag:ev.user:{%s}:e" % d
        self.assertEqual(self.cluster.keyslot(marker),
                         self.cluster.keyslot(state))
        owner = self.cluster.slot_owner(self.cluster.keyslot(marker))
        self.assertEqual(self.cluster.cmd(owner, "EXISTS", marker), 1)
        self.assertEqual([x["id"] for x in self.streamed(svc, 1)],
                         [e["id"]])

    def move_slot(self, slot, src, dst):
        """Moves slot, keys and all, from master src to master dst, as a
        resharding does, and tells every master at once."""
        c = self.cluster
        c.cmd(dst, "CLUSTER", "SETSLOT", str(slot), "IMPORTING",
              c.node_id(src))
        c.cmd(src, "CLUSTER", "SETSLOT", str(slot), "MIGRATING",
              c.node_id(dst))
        for key in c.cmd(src, "CLUSTER", "GETKEYSINSLOT", str(slot), "100"):
            c.cmd(src, "MIGRATE", "127.0.0.1", str(dst), key, "0", "5000")
        for port in [dst, src] + [m for m in c.masters()
                                  if m not in (src, dst)]:
            c.cmd(port, "CLUSTER", "SETSLOT", str(slot), "NODE",
                  c.node_id(dst))

    def test_the_stream_is_read_at_once_after_its_slot_moves(self):
        # The service's slot map is read again every second; a read in
        # between is answered MOVED by the stream's old node, and followed.
        svc = Service(self.workdir, self.cluster.url(), secret=self.secret,
                      name="cl", extra=["--admin-token-file",
                                        self.token_file])
        self.services.append(svc)
        self.assertTrue(wait_until(
            lambda: svc.request("GET", "/readyz").status == 200, 10))
        self.reset(svc, USER)
        (e,) = self.streamed(svc, 1)
        slot = self.cluster.keyslot("ag::events")
        src = self.cluster.slot_owner(slot)
        dst = next(m for m in self.cluster.masters() if m != src)
        for _ in range(3):
            self.move_slot(slot, src, dst)
            page = self.stream(svc, None, 10)
            self.assertEqual([x["id"] for x in page["events"]], [e["id"]])
            src, dst = dst, src


if __name__ == "__main__":
    unittest.main()
