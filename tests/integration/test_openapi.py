# SPDX-License-Identifier: Apache-2.0
"""The OpenAPI description, api/openapi.json, against the running service:
the binary serves it as it is in the tree, every (path, method, status) it
documents is provoked for real and its body and headers are judged by the
documented schema, every example fits its schema, and each path's Allow
header names exactly the methods described.

To describe a new route: add it to api/openapi.json and add one row per
status to CASES below; the test fails until both agree.

Schemas are judged by python3-jsonschema (Draft202012Validator, the
dialect of OpenAPI 3.1). Without it the test fails; it does not skip."""
import os
import sys

try:
    import jsonschema
except ImportError:
    # ctest runs the interpreter CMake found, which may be a private one
    # (pyenv) without Debian's python3-jsonschema: run under the system's.
    SYSTEM = "/usr/bin/python3"
    if (os.path.exists(SYSTEM) and not os.environ.get("AG_OPENAPI_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM)):
        os.environ["AG_OPENAPI_REEXEC"] = "1"
        os.chdir(os.path.dirname(os.path.abspath(__file__)))
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(SYSTEM, [SYSTEM, "-m", "unittest", "-v", "test_openapi"])
    raise ImportError("test_openapi needs python3-jsonschema "
                      "(scripts/deps.sh installs it)")

import http.client
import itertools
import json
import sqlite3
import urllib.parse

from harness import ServiceTest, free_port, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC_PATH = os.path.join(HERE, "..", "..", "api", "openapi.json")
TOKEN = "tok-" + "5" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
THROTTLED_FROM = "127.0.0.9"  # the address the admin throttle refuses
DENIED_IP = "198.51.100.7"  # inside the deny entry the setup adds
ALLOWED_IP = "192.0.2.200"  # the allow entry the setup adds
BIG = "x" * (70 * 1024)  # over the 64 KiB body cap, under the 1 MiB drop
METHODS = ("get", "put", "post", "delete", "head", "patch", "options")

# The order the phases run in; each row below names the one it needs.
PHASES = ("up", "redis_down", "lists_unloadable", "policies_unloadable")


def load_spec():
    with open(SPEC_PATH, "rb") as f:
        raw = f.read()
    return raw, json.loads(raw)


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
        want = {"lockout", "reset", "policy_changed", "list_changed"}
        pages = []

        def holds_each():
            pages.append(self.admin("GET", "/admin/events?limit=1000"))
            return want <= {e["type"] for e in pages[-1].json["events"]}

        self.test.assertTrue(wait_until(holds_each, 10.0), pages[-1].raw[:500])
        return pages[-1]

    def events_past_the_end(self):
        """The page after the last: empty, and next_after kept."""
        after = self.events().json["next_after"]
        r = self.admin("GET", "/admin/events?after=" + after)
        self.test.assertEqual((r.json["events"], r.json["next_after"]),
                              ([], after), r.raw[:500])
        return r

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
        (path, "post", 503): ("redis_down", lambda c: c.post(path, body(c))),
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
    **check_cases("/check-otp", otp, 1),
    **check_cases("/check-otp-verify", otp, 5),
    ("/report-login", "post", 200): ("up", lambda c: c.post(
        "/report-login", login(c, success=True))),
    ("/report-login", "post", 204): ("up", lambda c: c.post(
        "/report-login", login(c, success=False, password_fp="fp1"))),
    ("/report-login", "post", 400): ("up", lambda c: c.post(
        "/report-login", login(c))),
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
    ("/admin/policies/{name}", "put", 201): ("up", lambda c: c.admin(
        "PUT", "/admin/policies/login.p%d" % c.uid(), NEW_POLICY)),
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
    **admin_cases("/admin/lists/{list}/{id}", "delete"),

    ("/admin/otp/conversion", "get", 200): ("up", lambda c: c.admin(
        "GET", "/admin/otp/conversion?by=country")),
    ("/admin/otp/conversion", "get", 400): ("up", lambda c: c.admin(
        "GET", "/admin/otp/conversion?by=planet")),
    ("/admin/otp/conversion", "get", 503): ("redis_down", lambda c: c.admin(
        "GET", "/admin/otp/conversion?by=phone_prefix")),
    **admin_cases("/admin/otp/conversion", "get"),

    # Last of the up rows: the stream then holds what they raised.
    ("/admin/events", "get", 200): [
        ("up", lambda c: c.events()),
        ("up", lambda c: c.events_past_the_end()),
    ],
    ("/admin/events", "get", 400): [
        ("up", lambda c: c.refused("GET", "/admin/events?after=yesterday",
                                   None, "after")),
        ("up", lambda c: c.refused("GET", "/admin/events?limit=1001", None,
                                   "limit")),
    ],
    ("/admin/events", "get", 503): ("redis_down", lambda c: c.admin(
        "GET", "/admin/events")),
    **admin_cases("/admin/events", "get"),

    # x-abuseguard-unrouted: answers on any path.
    ("*", "*", 400): ("up", lambda c: c.svc.request("GET", "/check%00")),
    ("*", "*", 404): ("up", lambda c: c.svc.request("GET", "/nothing")),
    ("*", "*", 405): ("up", lambda c: c.svc.request("GET", "/check-login")),
}


def rows(key):
    """The (phase, provocation) pairs of a row of CASES."""
    v = CASES[key]
    return v if isinstance(v, list) else [v]


def ptr_escape(key):
    return key.replace("~", "~0").replace("/", "~1")


def documented(spec):
    """Every (path, method, status) the description names."""
    out = set()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            for status in op["responses"]:
                if status != "default":
                    out.add((path, method, int(status)))
    for status in spec["x-abuseguard-unrouted"]["responses"]:
        out.add(("*", "*", int(status)))
    return out


def concrete_path(spec, path):
    """path with each parameter replaced by its example, its first enum
    value or 1."""
    for p in spec["paths"].get(path, {}).get("parameters", []):
        s = p["schema"]
        value = p.get("example", s.get("enum", [1])[0])
        path = path.replace("{%s}" % p["name"], str(value))
    return path


class OpenApiTest(ServiceTest):
    def setUp(self):
        super().setUp()
        self.raw, self.spec = load_spec()
        token_file = os.path.join(self.workdir, "admin.token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.svc = self.service(extra=["--admin-token-file", token_file])

    def at(self, ptr):
        """The part of the description at JSON pointer ptr."""
        obj = self.spec
        for part in ptr.split("/")[1:]:
            obj = obj[part.replace("~1", "/").replace("~0", "~")]
        return obj

    def deref(self, obj, ptr):
        """Follows a $ref within the description: (object, its pointer)."""
        while "$ref" in obj:
            ptr = obj["$ref"][1:]
            obj = self.at(ptr)
        return obj, ptr

    def validate(self, instance, schema_ptr, what):
        """Judges instance by the schema at schema_ptr, with the whole
        description as the root so that its $refs resolve."""
        root = dict(self.spec)
        root["$ref"] = "#" + urllib.parse.quote(schema_ptr, safe="/~")
        try:
            jsonschema.Draft202012Validator(root).validate(instance)
        except jsonschema.ValidationError as e:
            self.fail("%s does not fit %s: %s\n%r" % (what, schema_ptr,
                                                      e.message, instance))

    def judge(self, key, r):
        """Asserts that r is the documented answer for key."""
        path, method, status = key
        self.assertEqual(r.status, status, "%s: %r" % (key, r.raw[:300]))
        if path == "*":
            ptr = "/x-abuseguard-unrouted/responses/%d" % status
        else:
            ptr = "/paths/%s/%s/responses/%d" % (ptr_escape(path), method,
                                                 status)
        resp, ptr = self.deref(self.at(ptr), ptr)
        for name, h in resp.get("headers", {}).items():
            h, hptr = self.deref(h, "%s/headers/%s" % (ptr, ptr_escape(name)))
            value = r.header(name)
            if h.get("required"):
                self.assertIsNotNone(value, "%s: no %s header" % (key, name))
            if value is None:
                continue
            if h["schema"].get("type") == "integer":
                self.assertRegex(value, r"^[0-9]+$", "%s: %s" % (key, name))
                value = int(value)
            self.validate(value, hptr + "/schema", "%s %s" % (key, name))
        content = resp.get("content")
        if not content or method == "head":
            self.assertEqual(r.raw, b"", "%s: a body" % (key,))
            return
        self.assertEqual(len(content), 1)
        media, = content
        self.assertEqual(r.header("Content-Type"), media, key)
        body = r.json if media == "application/json" else r.raw.decode()
        self.assertIsNotNone(body, "%s: not JSON: %r" % (key, r.raw[:200]))
        self.validate(body, "%s/content/%s/schema" % (ptr, ptr_escape(media)),
                      "%s body" % (key,))

    def enter(self, phase):
        """Brings the service to the phase's state."""
        db = self.svc.db
        if phase == "up":
            # Policies that fail closed, so that a check answers 503 while
            # Redis is down, and a deny entry for the 403s. They judge the
            # untrusted lane only: the trusted one is left to show an
            # inspect read from the fallback.
            for ep in ("login", "otp", "otp_verify"):
                r = self.svc.request(
                    "PUT", "/admin/policies/%s.closed" % ep,
                    {"endpoint": ep, "key": ["ip"],
                     "algorithm": "fixed_window", "limit": 1000000,
                     "window_s": 60, "fail": "closed",
                     "applies_to": "untrusted"}, headers=AUTH)
                self.assertEqual(r.status, 201, r.raw)
            user = "trusted@example.com"
            r = self.svc.post("/report-login", {"user": user,
                                                "ip": "192.0.2.1",
                                                "success": True})
            self.assertEqual(r.status, 200, r.raw)
            self.trusted = (user, r.json["device_token"])
            # Denials are cached only once the cache's subscription is.
            self.assertTrue(wait_until(
                lambda: '"deny_cache_subscribed"' in self.svc.log_text(),
                10.0), "the deny cache never subscribed")
            for which, net in (("deny", "198.51.100.0/24"),
                               ("allow", ALLOWED_IP)):
                r = self.svc.request("POST", "/admin/lists/" + which,
                                     {"kind": "ip", "value": net},
                                     headers=AUTH)
                self.assertEqual(r.status, 201, r.raw)
        elif phase == "redis_down":
            self.redis.stop()
        elif phase == "lists_unloadable":
            # Reading the lists now fails in SQL (an integer overflow),
            # so every reload fails and a committed policy edit is not
            # applied here: 202 (as in test_admin).
            # Two hand-edited rows that fail validation besides: one with
            # a valid version in the audit log, one without.
            con = sqlite3.connect(db)
            con.executescript(
                "UPDATE policies SET algorithm = 'bogus'"
                " WHERE name = 'otp.ip';"
                "INSERT INTO policies (name, endpoint, key, algorithm,"
                " \"limit\", window_s) VALUES ('login.hand', 'login',"
                " '[\"user\"]', 'bogus', 1, 1);"
                "ALTER TABLE lists RENAME TO lists_real;"
                "CREATE VIEW lists AS SELECT id, list, kind,"
                " abs(-9223372036854775808) AS value, endpoint, note"
                " FROM lists_real;")
            con.close()
        elif phase == "policies_unloadable":
            # The lists back, and the same fault in reading the policies:
            # a committed list edit is not applied here.
            con = sqlite3.connect(db)
            cols = [row[1] for row in con.execute("PRAGMA table_info"
                                                  "(policies)")]
            select = ", ".join("abs(-9223372036854775808) AS algorithm"
                               if c == "algorithm" else '"%s"' % c
                               for c in cols)
            con.executescript(
                "DROP VIEW lists;"
                "ALTER TABLE lists_real RENAME TO lists;"
                "ALTER TABLE policies RENAME TO policies_real;"
                "CREATE VIEW policies AS SELECT %s FROM policies_real;"
                % select)
            con.close()

    def test_the_service_serves_api_openapi_json_as_it_is(self):
        for source in (None, "127.0.0.2"):
            r = self.svc.request("GET", "/openapi.json", source=source)
            self.assertEqual(r.status, 200)
            self.assertEqual(r.header("Content-Type"), "application/json")
            self.assertEqual(r.raw, self.raw)
        self.assertEqual(self.spec["openapi"], "3.1.0")

    def test_the_admin_listener_does_not_serve_the_description(self):
        port = free_port()
        token_file = os.path.join(self.workdir, "admin.token")
        svc = self.service(name="apart", extra=[
            "--admin-token-file", token_file,
            "--admin-listen", "127.0.0.1:%d" % port])
        self.assertEqual(svc.request("GET", "/openapi.json").raw, self.raw)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        self.addCleanup(conn.close)
        conn.request("GET", "/openapi.json", headers=AUTH)
        r = conn.getresponse()
        self.assertEqual(r.status, 404)
        self.assertIn("only /admin/", json.loads(r.read())["error"])

    def test_the_table_and_the_description_name_the_same_answers(self):
        described = documented(self.spec)
        self.assertEqual(sorted(described - CASES.keys()), [],
                         "described, but no row of CASES provokes it")
        self.assertEqual(sorted(CASES.keys() - described), [],
                         "a row of CASES the description does not name")
        for key in CASES:
            for phase, _ in rows(key):
                self.assertIn(phase, PHASES)

    def test_every_documented_answer_is_provoked_and_fits_its_schema(self):
        ctx = Ctx(self, self.svc)
        described = documented(self.spec)
        seen = set()
        for phase in PHASES:
            self.enter(phase)
            for key in CASES:
                for row_phase, provoke in rows(key):
                    if row_phase != phase or key not in described:
                        continue
                    with self.subTest(answer=key):
                        ctx.path = concrete_path(self.spec, key[0])
                        self.judge(key, provoke(ctx))
                        seen.add(key)
        self.assertEqual(seen, described)

    def test_every_example_fits_its_schema(self):
        checked = []

        def walk(node, ptr):
            if isinstance(node, dict):
                if "schema" in node and "example" in node:
                    self.validate(node["example"], ptr + "/schema",
                                  ptr + "/example")
                    checked.append(ptr)
                if "schema" in node and isinstance(node.get("examples"),
                                                   dict):
                    for name, ex in node["examples"].items():
                        ex, _ = self.deref(ex, ptr)
                        self.validate(ex["value"], ptr + "/schema",
                                      "%s/examples/%s" % (ptr, name))
                        checked.append(ptr)
                if isinstance(node.get("examples"), list):
                    for i, ex in enumerate(node["examples"]):
                        self.validate(ex, ptr, "%s/examples/%d" % (ptr, i))
                        checked.append(ptr)
                for k, v in node.items():
                    walk(v, "%s/%s" % (ptr, ptr_escape(k)))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, "%s/%d" % (ptr, i))

        walk(self.spec, "")
        # Every request body and the main answers carry one.
        self.assertGreaterEqual(len(checked), 30)

    def test_every_schema_is_a_valid_2020_12_schema(self):
        schemas = []

        def walk(node, ptr, in_schema):
            if isinstance(node, dict):
                for k, v in node.items():
                    sub = "%s/%s" % (ptr, ptr_escape(k))
                    if in_schema:
                        continue  # a schema's parts are its own business
                    if k == "schema" or ptr == "/components/schemas":
                        schemas.append((sub, v))
                        walk(v, sub, True)
                    else:
                        walk(v, sub, False)
            elif isinstance(node, list) and not in_schema:
                for i, v in enumerate(node):
                    walk(v, "%s/%d" % (ptr, i), False)

        walk(self.spec, "", False)
        for ptr, schema in schemas:
            with self.subTest(schema=ptr):
                jsonschema.Draft202012Validator.check_schema(schema)
        self.assertGreaterEqual(len(schemas), 40)

    def test_the_console_is_not_described_and_refuses_as_any_path(self):
        # A page for people, left out on purpose (docs/decisions.md,
        # "Issue 19: admin console"): no operation, no row of CASES.
        self.assertEqual([p for p in self.spec["paths"]
                          if p.startswith("/admin/ui")], [])
        self.assertEqual([k for k in CASES if k[0].startswith("/admin/ui")],
                         [])
        r = self.svc.request("GET", "/admin/ui/")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type").startswith("text/html"))
        # Its refusals are the unrouted answers the description holds.
        self.judge(("*", "*", 404), self.svc.request(
            "GET", "/admin/ui/nothing.html"))
        r = self.svc.request("POST", "/admin/ui/", "{}")
        self.judge(("*", "*", 405), r)
        self.assertEqual(r.header("Allow"), "GET, HEAD")

    def test_each_path_allows_exactly_the_methods_it_describes(self):
        for path, item in self.spec["paths"].items():
            described = {m.upper() for m in item if m in METHODS}
            with self.subTest(path=path):
                r = self.svc.request("PATCH", concrete_path(self.spec, path),
                                     "{}", headers=AUTH)
                self.judge(("*", "*", 405), r)
                self.assertEqual(set(r.header("Allow").split(", ")),
                                 described)
