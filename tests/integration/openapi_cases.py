# SPDX-License-Identifier: Apache-2.0
"""The table test_openapi.py holds api/openapi.json to: for every (path,
method, status) the description names, the phase of the service in which
it can be provoked and how (a function of a Ctx that returns the harness
Response). To describe a new route, add one row per status to CASES."""
import http.client
import itertools
import socket

from harness import Response, wait_until

TOKEN = "tok-" + "5" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
THROTTLED_FROM = "127.0.0.9"  # the address the admin throttle refuses
DENIED_IP = "198.51.100.7"  # inside the deny entry the setup adds
ALLOWED_IP = "192.0.2.200"  # the allow entry the setup adds
BIG = "x" * (70 * 1024)  # over the 64 KiB body cap, under the 1 MiB drop

# The service's --max-conns-per-ip (test_openapi.py starts it so): that
# many kept-alive connections from one address make the next a 503.
CONNS_PER_IP = 8

# The order the phases run in; each row below names the one it needs.
PHASES = ("up", "redis_down", "lists_unloadable", "policies_unloadable")


class Ctx:
    """What a row's provocation gets: the service and a few helpers."""

    def __init__(self, test, svc):
        self.test = test
        self.svc = svc
        self.n = itertools.count(1)

    def uid(self):
        return next(self.n)

    def user(self):
        return "u%d@example.com" % self.uid()

    def ip(self):
        n = self.uid()
        return "10.%d.%d.%d" % (n // 65536 % 256, n // 256 % 256, n % 256)

    def phone(self):
        return "+4860%07d" % self.uid()

    def fresh_address(self):
        """A client address of its own, so that failed authentications
        do not add up to the admin throttle."""
        return "127.0.1.%d" % (self.uid() % 250 + 1)

    def admin(self, method, path, body=None, headers=AUTH, **kw):
        return self.svc.request(method, path, body, headers=headers, **kw)

    def post(self, path, body):
        return self.svc.post(path, body)

    def repeat(self, n, path, body):
        for _ in range(n):
            r = self.post(path, body)
        return r

    def throttled(self, method, path, body=None):
        """The request with the right token from an address the admin
        throttle refuses (ten failures in a minute make it so)."""
        r = self.admin(method, path, body, source=THROTTLED_FROM)
        if r.status != 429:
            for _ in range(10):
                self.admin("GET", "/admin/policies", headers={},
                           source=THROTTLED_FROM)
            r = self.admin(method, path, body, source=THROTTLED_FROM)
        return r

    def new_policy(self, name=None):
        name = name or "login.p%d" % self.uid()
        self.admin("PUT", "/admin/policies/" + name, NEW_POLICY)
        return name

    def new_entry(self):
        r = self.admin("POST", "/admin/lists/allow",
                       {"kind": "ip", "value": self.ip()})
        return r.json["entry"]["id"]

    def allow_listed(self, path, body):
        r = self.post(path, body)
        self.test.assertEqual(r.json.get("list"), "allow", r.raw)
        return r

    def policies_with_invalid_rows(self):
        r = self.admin("GET", "/admin/policies")
        shapes = {("endpoint" in p, "invalid" in p)
                  for p in r.json["policies"]}
        self.test.assertLessEqual({(True, True), (False, True)}, shapes,
                                  r.raw[:500])
        return r

    def refused(self, method, path, body, field):
        """An admin request the service must refuse naming field."""
        r = self.admin(method, path, body)
        self.test.assertEqual((r.status, r.json.get("field")), (400, field),
                              r.raw)
        return r

    def denied(self, path, body, n, cached):
        """The nth request of body: a 429 that the deny cache answered or
        (the first denial) Redis did, as cached says."""
        r = self.repeat(n, path, body)
        self.test.assertEqual(r.status, 429, r.raw)
        self.test.assertEqual(
            any(d.get("cached") for d in r.json["decisions"]), cached, r.raw)
        return r

    def bad_body(self, path, body, field):
        """A public route's 400 for body, naming field."""
        r = self.post(path, body)
        self.test.assertEqual((r.status, r.json and r.json.get("field")),
                              (400, field), r.raw)
        return r

    def inspect(self, body, endpoint="login", **expect):
        """POST /admin/inspect of body for endpoint; asserts the answer
        holds expect (the shape the row is there to provoke)."""
        r = self.admin("POST", "/admin/inspect", dict(body, endpoint=endpoint))
        for k, v in expect.items():
            self.test.assertEqual(r.json.get(k), v, r.raw)
        return r

    def inspect_blocked(self):
        """An inspect of a subject that five reported wrong passwords and
        the check they failed have blocked (login.user_ip_fail): denied,
        with the block's time left and level."""
        body = login(self)
        for _ in range(5):
            self.post("/report-login", dict(body, success=False))
        self.test.assertEqual(self.post("/check-login", body).status, 429)
        r = self.inspect(body, allowed=False, policy="login.user_ip_fail")
        d, = [d for d in r.json["decisions"]
              if d["policy"] == "login.user_ip_fail"]
        self.test.assertGreater(d["blocked_for"], 0, r.raw)
        self.test.assertEqual(d["block_level"], 1, r.raw)
        return r

    def inspect_unknown(self):
        """An inspect while Redis is down: a fail-closed policy of the
        untrusted lane is unknown, the answer the check's 503."""
        r = self.inspect(login(self), reason="store_unavailable",
                         degraded=True)
        self.test.assertIn({"policy": "login.closed", "allowed": False,
                            "limit": 1000000, "unknown": True},
                           r.json["decisions"], r.raw)
        return r

    def inspect_degraded(self):
        """An inspect while Redis is down in the trusted lane, where no
        policy fails closed: the fallback's answer."""
        user, token = self.test.trusted
        return self.inspect({"user": user, "ip": self.ip(),
                             "device_token": token}, allowed=True,
                            device="trusted", degraded=True)

    def audited_inspect(self):
        """The audit log's newest page right after an inspect, which it
        holds."""
        self.inspect(login(self), allowed=True)
        r = self.admin("GET", "/admin/audit?limit=5")
        self.test.assertEqual(r.json["entries"][0]["action"], "inspect",
                              r.raw[:500])
        return r

    def events(self):
        """The stream's first page once it holds an event of each kind
        the rows before have raised (appends do not wait for Redis)."""
        want = {"lockout", "reset", "policy_changed", "list_changed",
                "shield_raised", "shield_lowered", "breached_password_login"}
        pages = []

        def holds_each():
            pages.append(self.admin("GET", "/admin/events?limit=1000"))
            return want <= {e["type"] for e in pages[-1].json["events"]}

        self.test.assertTrue(wait_until(holds_each, 10.0), pages[-1].raw[:500])
        return pages[-1]

    def events_ocsf(self):
        """The same first page as OCSF events, each holding ours."""
        ours = self.events().json["events"]
        r = self.admin("GET", "/admin/events?limit=1000&format=ocsf")
        self.test.assertEqual([e["unmapped"] for e in r.json["events"]],
                              ours, r.raw[:500])
        return r

    def events_past_the_end(self):
        """The page after the last: empty, and next_after kept."""
        after = self.events().json["next_after"]
        r = self.admin("GET", "/admin/events?after=" + after)
        self.test.assertEqual((r.json["events"], r.json["next_after"]),
                              ([], after), r.raw[:500])
        return r

    def shield_switched(self, body, then):
        """The switch's answer to body on login.site_failures, after which
        then (the opposite switch) is sent too, so that no later row
        meets a raised shield."""
        path = "/admin/shields/login.site_failures"
        r = self.admin("POST", path, body)
        self.admin("POST", path, then)
        return r

    def capped(self):
        """The answer to a connection from an address that already holds
        the connection cap's worth of kept-alive connections (each has
        been answered once, so the service counts it). The refusal is
        sent at accept, before any request: reading it without sending
        one keeps a request's bytes from racing the close."""
        source = "127.0.4.%d" % (self.uid() % 250 + 1)
        held = []
        try:
            for _ in range(CONNS_PER_IP):
                conn = http.client.HTTPConnection(
                    "127.0.0.1", self.svc.port, timeout=10,
                    source_address=(source, 0))
                held.append(conn)
                conn.request("GET", "/healthz")
                self.test.assertEqual(conn.getresponse().read(),
                                      b'{"status":"ok"}')
            with socket.create_connection(("127.0.0.1", self.svc.port), 10,
                                          source_address=(source, 0)) as s:
                return Response.read_from(s)
        finally:
            for conn in held:
                conn.close()

    def raw(self, head):
        """head sent as is on a new connection; the answer."""
        with socket.create_connection(("127.0.0.1", self.svc.port),
                                      10) as sock:
            sock.sendall(head)
            return Response.read_from(sock)

    def resets_until_refused(self):
        """Resets while Redis is down queue up; past the queue's 256 the
        answer is a 503."""
        for _ in range(300):
            r = self.admin("POST", "/admin/reset",
                           {"policy": "login.user", "user": self.user()})
            if r.status != 202:
                return r
        return r


NEW_POLICY = {"endpoint": "login", "key": ["user"],
              "algorithm": "fixed_window", "limit": 1000, "window_s": 60}
LISTED_POLICY = {"endpoint": "login", "key": ["ip"], "algorithm": "signal",
                 "signal": "ip_listed", "lists": ["tor"],
                 "applies_to": "untrusted", "action": "challenge"}


def login(c, **kw):
    return {"user": c.user(), "ip": c.ip(), **kw}


def otp(c, **kw):
    return {"phone": c.phone(), "ip": c.ip(), **kw}


def check_cases(path, body, deny_after):
    """The rows every check endpoint shares; deny_after requests of one
    body trip a default policy."""
    return {
        (path, "post", 200): [
            ("up", lambda c: c.post(path, body(c))),
            ("up", lambda c: c.allow_listed(path, dict(body(c),
                                                       ip=ALLOWED_IP))),
        ],
        (path, "post", 400): ("up", lambda c: c.post(path, {"ip": c.ip()})),
        (path, "post", 403): ("up", lambda c: c.post(
            path, dict(body(c), ip=DENIED_IP))),
        (path, "post", 413): ("up", lambda c: c.post(path, BIG)),
        (path, "post", 429): [
            # The first denial, from Redis; the next from the deny cache.
            ("up", lambda c: c.denied(path, body(c), deny_after + 1, False)),
            ("up", lambda c: c.denied(path, body(c), deny_after + 2, True)),
        ],
        (path, "post", 503): [
            ("redis_down", lambda c: c.post(path, body(c))),
            ("up", lambda c: c.capped()),
        ],
    }


def admin_cases(path, method, body=None):
    """The two answers of every admin route before it looks at the
    request: a missing token, and a throttled address."""
    m = method.upper()
    return {
        (path, method, 401): ("up", lambda c: c.admin(
            m, c.path, body, headers={}, source=c.fresh_address())),
        (path, method, 429): ("up", lambda c: c.throttled(m, c.path, body)),
    }


# (path as described, method, status) -> (phase, provocation), or a list
# of them where one status has bodies of several shapes. A provocation
# takes a Ctx and returns the harness Response; c.path is the row's path
# with its parameters filled (see concrete_path).
CASES = {
    **check_cases("/check-login", login, 5),
    ("/check-login", "post", 400): [
        ("up", lambda c: c.post("/check-login", {"ip": c.ip()})),
        ("up", lambda c: c.bad_body("/check-login", login(
            c, password_fp=""), "password_fp")),
        ("up", lambda c: c.bad_body("/check-login", login(
            c, password_breached="yes"), "password_breached")),
    ],
    **check_cases("/check-otp", otp, 1),
    **check_cases("/check-otp-verify", otp, 5),
    ("/report-login", "post", 200): [
        ("up", lambda c: c.post("/report-login", login(c, success=True))),
        ("up", lambda c: c.post("/report-login", login(
            c, success=True, method="recovery"))),
        # Raises breached_password_login, which the events row waits for.
        ("up", lambda c: c.post("/report-login", login(
            c, success=True, password_breached=True))),
    ],
    ("/report-login", "post", 204): ("up", lambda c: c.post(
        "/report-login", login(c, success=False, password_fp="fp1"))),
    ("/report-login", "post", 400): [
        ("up", lambda c: c.post("/report-login", login(c))),
        ("up", lambda c: c.bad_body("/report-login", login(
            c, success=False, reason="typo"), "reason")),
        ("up", lambda c: c.bad_body("/report-login", login(
            c, success=True, reason="unknown_user"), "reason")),
        ("up", lambda c: c.bad_body("/report-login", login(
            c, success=True, method="email_link"), "method")),
        ("up", lambda c: c.bad_body("/report-login", login(
            c, success=False, method="recovery"), "method")),
        ("up", lambda c: c.bad_body("/report-login", login(
            c, success=True, password_breached=1), "password_breached")),
    ],
    ("/report-login", "post", 413): ("up", lambda c: c.post(
        "/report-login", BIG)),
    ("/report-otp", "post", 204): ("up", lambda c: c.post(
        "/report-otp", otp(c, verified=True))),
    ("/report-otp", "post", 400): ("up", lambda c: c.post(
        "/report-otp", otp(c, verified="yes"))),
    ("/report-otp", "post", 413): ("up", lambda c: c.post(
        "/report-otp", BIG)),
    ("/healthz", "get", 200): ("up", lambda c: c.svc.request(
        "GET", "/healthz")),
    ("/healthz", "head", 200): ("up", lambda c: c.svc.request(
        "HEAD", "/healthz")),
    ("/readyz", "get", 200): ("up", lambda c: c.svc.request(
        "GET", "/readyz")),
    ("/readyz", "head", 200): ("up", lambda c: c.svc.request(
        "HEAD", "/readyz")),
    ("/readyz", "get", 503): ("redis_down", lambda c: c.svc.request(
        "GET", "/readyz")),
    ("/readyz", "head", 503): ("redis_down", lambda c: c.svc.request(
        "HEAD", "/readyz")),
    ("/metrics", "get", 200): ("up", lambda c: c.svc.request(
        "GET", "/metrics")),
    ("/metrics", "head", 200): ("up", lambda c: c.svc.request(
        "HEAD", "/metrics")),
    ("/openapi.json", "get", 200): ("up", lambda c: c.svc.request(
        "GET", "/openapi.json")),
    ("/openapi.json", "head", 200): ("up", lambda c: c.svc.request(
        "HEAD", "/openapi.json")),
    # The service serves a SHA-1 corpus (test_openapi.py) and no NTLM one.
    ("/range/{prefix}", "get", 200): [
        ("up", lambda c: c.svc.request("GET", c.path)),
        ("up", lambda c: c.svc.request("GET", c.path,
                                       headers={"Add-Padding": "true"})),
    ],
    ("/range/{prefix}", "get", 304): ("up", lambda c: c.svc.request(
        "GET", c.path, headers={"If-None-Match": c.svc.request(
            "GET", c.path).header("ETag")})),
    ("/range/{prefix}", "get", 400): [
        ("up", lambda c: c.svc.request("GET", "/range/21BD")),
        ("up", lambda c: c.svc.request("GET", c.path + "?mode=md5")),
    ],
    ("/range/{prefix}", "get", 404): ("up", lambda c: c.svc.request(
        "GET", c.path + "?mode=ntlm")),
    ("/range/{prefix}", "head", 200): ("up", lambda c: c.svc.request(
        "HEAD", c.path)),

    ("/admin/policies", "get", 200): [
        ("up", lambda c: c.admin("GET", "/admin/policies")),
        # With the rows enter() broke: one listed with its last valid
        # version, one by its name alone.
        ("lists_unloadable", lambda c: c.policies_with_invalid_rows()),
    ],
    **admin_cases("/admin/policies", "get"),
    ("/admin/policies/{name}", "get", 200): ("up", lambda c: c.admin(
        "GET", "/admin/policies/login.user")),
    ("/admin/policies/{name}", "get", 400): ("up", lambda c: c.admin(
        "GET", "/admin/policies/Login.User")),
    ("/admin/policies/{name}", "get", 404): ("up", lambda c: c.admin(
        "GET", "/admin/policies/login.nothing")),
    **admin_cases("/admin/policies/{name}", "get"),
    ("/admin/policies/{name}", "put", 200): ("up", lambda c: c.admin(
        "PUT", "/admin/policies/" + c.new_policy(), NEW_POLICY)),
    # A policy on a list this service has not loaded: the answer warns,
    # and every later login answer names it in "skipped".
    ("/admin/policies/{name}", "put", 201): ("up", lambda c: c.admin(
        "PUT", "/admin/policies/login.p%d" % c.uid(), LISTED_POLICY)),
    ("/admin/policies/{name}", "put", 202): ("lists_unloadable",
                                             lambda c: c.admin(
        "PUT", "/admin/policies/login.p%d" % c.uid(), NEW_POLICY)),
    ("/admin/policies/{name}", "put", 400): ("up", lambda c: c.admin(
        "PUT", "/admin/policies/login.bad", dict(NEW_POLICY, limit=0))),
    ("/admin/policies/{name}", "put", 413): ("up", lambda c: c.admin(
        "PUT", "/admin/policies/login.big", BIG)),
    **admin_cases("/admin/policies/{name}", "put", NEW_POLICY),
    ("/admin/policies/{name}", "delete", 204): ("up", lambda c: c.admin(
        "DELETE", "/admin/policies/" + c.new_policy())),
    ("/admin/policies/{name}", "delete", 202): ("lists_unloadable",
                                                lambda c: c.admin(
        "DELETE", "/admin/policies/" + c.new_policy())),
    ("/admin/policies/{name}", "delete", 400): ("up", lambda c: c.admin(
        "DELETE", "/admin/policies/a%20b")),
    ("/admin/policies/{name}", "delete", 404): ("up", lambda c: c.admin(
        "DELETE", "/admin/policies/login.nothing")),
    **admin_cases("/admin/policies/{name}", "delete"),
    # Issue 37: versions (If-Match) and the fleet.
    ("/admin/policies/{name}", "put", 412): ("up", lambda c: c.admin(
        "PUT", "/admin/policies/" + c.new_policy(), NEW_POLICY,
        headers={**AUTH, "If-Match": '"999999"'})),
    ("/admin/policies/{name}", "put", 503): ("redis_down", lambda c: c.admin(
        "PUT", "/admin/policies/login.p%d" % c.uid(), NEW_POLICY)),
    ("/admin/policies/{name}", "delete", 412): ("up", lambda c: c.admin(
        "DELETE", "/admin/policies/" + c.new_policy(),
        headers={**AUTH, "If-Match": '"999999"'})),
    ("/admin/policies/{name}", "delete", 503): ("redis_down",
                                                lambda c: c.admin(
        "DELETE", "/admin/policies/login.user")),
    ("/admin/policies/apply", "post", 200): [
        ("up", lambda c: c.admin("POST", "/admin/policies/apply", {
            "policies": [dict(NEW_POLICY, name="login.a%d" % c.uid())],
            "prune": False, "dry_run": True})),
        ("up", lambda c: c.admin("POST", "/admin/policies/apply", {
            "policies": [dict(NEW_POLICY, name="login.a%d" % c.uid())],
            "prune": False})),
    ],
    ("/admin/policies/apply", "post", 202): ("lists_unloadable",
                                             lambda c: c.admin(
        "POST", "/admin/policies/apply", {
            "policies": [dict(NEW_POLICY, name="login.a%d" % c.uid())],
            "prune": False})),
    ("/admin/policies/apply", "post", 400): [
        ("up", lambda c: c.refused("POST", "/admin/policies/apply",
                                   {"policies": [], "prune": "yes"},
                                   "prune")),
        ("up", lambda c: c.refused("POST", "/admin/policies/apply",
                                   {"policies": [], "colour": 1},
                                   "colour")),
    ],
    ("/admin/policies/apply", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/policies/apply", BIG)),
    ("/admin/policies/apply", "post", 503): ("redis_down", lambda c: c.admin(
        "POST", "/admin/policies/apply", {
            "policies": [dict(NEW_POLICY, name="login.a%d" % c.uid())],
            "prune": False})),
    **admin_cases("/admin/policies/apply", "post", {"policies": []}),
    ("/admin/fleet", "get", 200): [
        ("up", lambda c: c.admin("GET", "/admin/fleet")),
        ("redis_down", lambda c: c.admin("GET", "/admin/fleet")),
    ],
    **admin_cases("/admin/fleet", "get"),

    ("/admin/reset", "post", 204): ("up", lambda c: c.admin(
        "POST", "/admin/reset", {"policy": "login.user", "user": c.user()})),
    ("/admin/reset", "post", 202): ("redis_down", lambda c: c.admin(
        "POST", "/admin/reset", {"policy": "login.user", "user": c.user()})),
    ("/admin/reset", "post", 400): ("up", lambda c: c.admin(
        "POST", "/admin/reset", {"policy": "login.user"})),
    ("/admin/reset", "post", 404): ("up", lambda c: c.admin(
        "POST", "/admin/reset", {"policy": "login.nothing", "user": "a"})),
    ("/admin/reset", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/reset", BIG)),
    # After the 202 row: it needs room in the queue this one fills.
    ("/admin/reset", "post", 503): ("redis_down",
                                    lambda c: c.resets_until_refused()),
    **admin_cases("/admin/reset", "post", {"policy": "login.user"}),

    ("/admin/inspect", "post", 200): [
        ("up", lambda c: c.inspect(login(c), allowed=True)),
        ("up", lambda c: c.inspect(otp(c), "otp", allowed=True)),
        ("up", lambda c: c.inspect_blocked()),
        ("up", lambda c: c.inspect(dict(login(c), ip=DENIED_IP),
                                   allowed=False, list="deny")),
        ("up", lambda c: c.inspect(dict(otp(c), ip=ALLOWED_IP),
                                   "otp_verify", allowed=True, list="allow")),
        ("redis_down", lambda c: c.inspect_unknown()),
        ("redis_down", lambda c: c.inspect_degraded()),
    ],
    ("/admin/inspect", "post", 400): [
        ("up", lambda c: c.refused("POST", "/admin/inspect",
                                   dict(login(c), endpoint="signup"),
                                   "endpoint")),
        ("up", lambda c: c.refused("POST", "/admin/inspect",
                                   {"endpoint": "otp", "ip": c.ip()},
                                   "phone")),
    ],
    ("/admin/inspect", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/inspect", BIG)),
    **admin_cases("/admin/inspect", "post", {"endpoint": "login"}),

    ("/admin/history", "post", 200): ("up", lambda c: c.admin(
        "POST", "/admin/history", {"user": c.user()})),
    ("/admin/history", "post", 400): ("up", lambda c: c.refused(
        "POST", "/admin/history", {"ip": c.ip()}, "user")),
    ("/admin/history", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/history", BIG)),
    ("/admin/history", "post", 503): ("redis_down", lambda c: c.admin(
        "POST", "/admin/history", {"user": c.user()})),
    **admin_cases("/admin/history", "post", {"user": "a"}),
    ("/admin/history/forget", "post", 200): ("up", lambda c: c.admin(
        "POST", "/admin/history/forget", {"user": c.user()})),
    ("/admin/history/forget", "post", 400): ("up", lambda c: c.refused(
        "POST", "/admin/history/forget", {}, "user")),
    ("/admin/history/forget", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/history/forget", BIG)),
    ("/admin/history/forget", "post", 503): ("redis_down", lambda c: c.admin(
        "POST", "/admin/history/forget", {"user": c.user()})),
    **admin_cases("/admin/history/forget", "post", {"user": "a"}),

    ("/admin/audit", "get", 200): [
        ("up", lambda c: c.admin("GET", "/admin/audit?limit=5")),
        ("up", lambda c: c.audited_inspect()),
    ],
    ("/admin/audit", "get", 400): ("up", lambda c: c.admin(
        "GET", "/admin/audit?limit=0")),
    **admin_cases("/admin/audit", "get"),

    ("/admin/lists/{list}", "get", 200): [
        ("up", lambda c: c.admin("GET", "/admin/lists/deny")),
        ("up", lambda c: c.admin("GET", "/admin/lists/allow")),
    ],
    ("/admin/lists/{list}", "get", 404): ("up", lambda c: c.admin(
        "GET", "/admin/lists/grey")),
    **admin_cases("/admin/lists/{list}", "get"),
    ("/admin/lists/{list}", "post", 201): ("up", lambda c: c.admin(
        "POST", "/admin/lists/allow", {"kind": "user", "value": c.user()})),
    ("/admin/lists/{list}", "post", 202): ("policies_unloadable",
                                           lambda c: c.admin(
        "POST", "/admin/lists/allow", {"kind": "ip", "value": c.ip()})),
    ("/admin/lists/{list}", "post", 400): ("up", lambda c: c.admin(
        "POST", "/admin/lists/deny", {"kind": "colour", "value": "red"})),
    ("/admin/lists/{list}", "post", 404): ("up", lambda c: c.admin(
        "POST", "/admin/lists/grey", {"kind": "ip", "value": c.ip()})),
    ("/admin/lists/{list}", "post", 409): ("up", lambda c: c.admin(
        "POST", "/admin/lists/deny",
        {"kind": "ip", "value": "198.51.100.0/24"})),
    ("/admin/lists/{list}", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/lists/deny", BIG)),
    ("/admin/lists/{list}", "post", 503): ("redis_down", lambda c: c.admin(
        "POST", "/admin/lists/deny", {"kind": "ip", "value": c.ip()})),
    **admin_cases("/admin/lists/{list}", "post", {"kind": "ip"}),
    ("/admin/lists/{list}/{id}", "delete", 204): ("up", lambda c: c.admin(
        "DELETE", "/admin/lists/allow/%d" % c.new_entry())),
    ("/admin/lists/{list}/{id}", "delete", 202): ("policies_unloadable",
                                                  lambda c: c.admin(
        "DELETE", "/admin/lists/allow/%d" % c.new_entry())),
    ("/admin/lists/{list}/{id}", "delete", 400): ("up", lambda c: c.admin(
        "DELETE", "/admin/lists/deny/seven")),
    ("/admin/lists/{list}/{id}", "delete", 404): ("up", lambda c: c.admin(
        "DELETE", "/admin/lists/deny/999999")),
    ("/admin/lists/{list}/{id}", "delete", 503): ("redis_down",
                                                  lambda c: c.admin(
        "DELETE", "/admin/lists/deny/1")),
    **admin_cases("/admin/lists/{list}/{id}", "delete"),

    ("/admin/otp/conversion", "get", 200): ("up", lambda c: c.admin(
        "GET", "/admin/otp/conversion?by=country")),
    ("/admin/otp/conversion", "get", 400): ("up", lambda c: c.admin(
        "GET", "/admin/otp/conversion?by=planet")),
    ("/admin/otp/conversion", "get", 503): ("redis_down", lambda c: c.admin(
        "GET", "/admin/otp/conversion?by=phone_prefix")),
    **admin_cases("/admin/otp/conversion", "get"),

    ("/admin/shields", "get", 200): ("up", lambda c: c.admin(
        "GET", "/admin/shields")),
    **admin_cases("/admin/shields", "get"),
    ("/admin/shields/{policy}", "post", 200): [
        ("up", lambda c: c.shield_switched({"raise_for_s": 3600},
                                           {"lower": True})),
        ("up", lambda c: c.admin("POST", "/admin/shields/login.site_failures",
                                 {"lower": True})),
        ("up", lambda c: c.admin("POST", "/admin/shields/login.site_failures",
                                 {"lower_for_s": 0})),
    ],
    ("/admin/shields/{policy}", "post", 400): [
        ("up", lambda c: c.refused("POST",
                                   "/admin/shields/login.site_failures",
                                   {"raise_for_s": 0}, "raise_for_s")),
        ("up", lambda c: c.refused("POST", "/admin/shields/Login.Site",
                                   {"lower": True}, "name")),
    ],
    ("/admin/shields/{policy}", "post", 404): ("up", lambda c: c.admin(
        "POST", "/admin/shields/login.user", {"lower": True})),
    ("/admin/shields/{policy}", "post", 413): ("up", lambda c: c.admin(
        "POST", "/admin/shields/login.site_failures", BIG)),
    # Redis down: this instance alone takes the switch, and says so.
    ("/admin/shields/{policy}", "post", 503): ("redis_down",
                                               lambda c: c.shield_switched(
        {"raise_for_s": 60}, {"lower": True})),
    **admin_cases("/admin/shields/{policy}", "post", {"lower": True}),
    ("/admin/overview", "get", 200): ("up", lambda c: c.admin(
        "GET", "/admin/overview")),
    **admin_cases("/admin/overview", "get"),

    # Last of the up rows: the stream then holds what they raised.
    ("/admin/events", "get", 200): [
        ("up", lambda c: c.events()),
        ("up", lambda c: c.events_past_the_end()),
        ("up", lambda c: c.events_ocsf()),
    ],
    ("/admin/events", "get", 400): [
        ("up", lambda c: c.refused("GET", "/admin/events?after=yesterday",
                                   None, "after")),
        ("up", lambda c: c.refused("GET", "/admin/events?limit=1001", None,
                                   "limit")),
        ("up", lambda c: c.refused("GET", "/admin/events?format=xml", None,
                                   "format")),
    ],
    ("/admin/events", "get", 503): ("redis_down", lambda c: c.admin(
        "GET", "/admin/events")),
    **admin_cases("/admin/events", "get"),

    # x-abuseguard-unrouted: answers on any path.
    ("*", "*", 400): ("up", lambda c: c.svc.request("GET", "/check%00")),
    ("*", "*", 404): ("up", lambda c: c.svc.request("GET", "/nothing")),
    ("*", "*", 405): ("up", lambda c: c.svc.request("GET", "/check-login")),
    ("*", "*", 501): ("up", lambda c: c.raw(
        b"POST /check-login HTTP/1.1\r\nHost: x\r\n"
        b"Transfer-Encoding: gzip, chunked\r\n\r\n")),
    ("*", "*", 503): ("up", lambda c: c.capped()),
}
# A breached password's challenge, answered by the signal policy
# (login.breached_password) beside the store's decisions.
CASES[("/check-login", "post", 429)].append(("up", lambda c: c.post(
    "/check-login", login(c, password_breached=True))))


def rows(key):
    """The (phase, provocation) pairs of a row of CASES."""
    v = CASES[key]
    return v if isinstance(v, list) else [v]
