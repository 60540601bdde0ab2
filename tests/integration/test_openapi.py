# SPDX-License-Identifier: Apache-2.0
"""The OpenAPI description, api/openapi.json, against the running service:
the binary serves it as it is in the tree, every (path, method, status) it
documents is provoked for real and its body and headers are judged by the
documented schema, every example fits its schema, and each path's Allow
header names exactly the methods described.

To describe a new route: add it to api/openapi.json and add one row per
status to CASES (openapi_cases.py); the test fails until both agree.

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

import copy
import http.client
import json
import signal
import sqlite3
import subprocess
import urllib.parse

from harness import (BINARY, Response, ServiceTest, free_port, make_secret,
                     wait_until)
from openapi_cases import (ALLOWED_IP, AUTH, CASES, CONNS_PER_IP, PHASES,
                           TOKEN, Ctx, rows)

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC_PATH = os.path.join(HERE, "..", "..", "api", "openapi.json")
METHODS = ("get", "put", "post", "delete", "head", "patch", "options")
# The answers a client of the check routes parses, which the description
# leaves open to fields added later (clients ignore what they do not
# know). The service's own answers are judged with each closed again, so
# that a field the service sends and the description lacks still fails.
OPEN_ANSWERS = ("CheckAllowed", "CheckDenied", "CheckListed",
                "CheckUnavailable", "DeviceToken", "Error", "PolicyDecision",
                "ListDecision", "Status")


def load_spec():
    with open(SPEC_PATH, "rb") as f:
        raw = f.read()
    return raw, json.loads(raw)


def closed(spec):
    """spec with every open answer closed to unknown fields."""
    out = copy.deepcopy(spec)
    for name in OPEN_ANSWERS:
        out["components"]["schemas"][name]["additionalProperties"] = False
    return out


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
        self.strict = closed(self.spec)
        token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                 name="admin.token")
        # A SHA-1 corpus for GET /range (and none for mode=ntlm's 404).
        corpus = os.path.join(self.workdir, "sha1.agp")
        source = os.path.join(self.workdir, "sha1.txt")
        with open(source, "w") as f:
            f.write("21BD12DC183F740EE76F27B78EB39C8AD972A757:52579\r\n"
                    "21BD1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:3\r\n")
        subprocess.run([BINARY, "pwned", "import", "--mode", "sha1",
                        "--output", corpus, source], check=True,
                       capture_output=True, timeout=60)
        self.svc = self.service(extra=["--admin-token-file", token_file,
                                       "--pwned-file", corpus,
                                       "--max-conns-per-ip",
                                       str(CONNS_PER_IP)])

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

    def validate(self, instance, schema_ptr, what, spec=None):
        """Judges instance by the schema at schema_ptr, with the whole
        description (closed to unknown fields unless spec is given) as the
        root so that its $refs resolve."""
        root = dict(spec or self.strict)
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
            # Redis back, empty (the phases after it change the fleet's
            # set): the instance puts its history back, and takes changes
            # once it settled.
            self.redis.start()

            def settled():
                j = self.svc.request("GET", "/admin/fleet",
                                     headers=AUTH).json or {}
                return (j.get("instance", {}).get("state") == "following"
                        and j.get("fleet", {}).get("settling_ms") == 0)
            self.assertTrue(wait_until(settled, 30.0), self.svc.log_text())
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

    def test_answers_stay_valid_with_fields_added_later(self):
        # Issue 38: a generated client must not break on the next
        # issue's fields (a challenge nonce, network, risk: since described,
        # so a field no issue has brought yet stands in).
        for status, ptr in (
                (200, "/components/schemas/CheckAllowed"),
                (429, "/components/schemas/CheckDenied"),
                (400, "/components/schemas/Error")):
            with self.subTest(schema=ptr):
                r = self.svc.post("/check-login", {"user": "later@x.org",
                                                   "ip": "192.0.2.77"}
                                  if status == 200 else {"ip": "1.2.3.4"})
                if status == 429:
                    for _ in range(6):
                        r = self.svc.post("/check-login",
                                          {"user": "later@x.org",
                                           "ip": "192.0.2.78"})
                self.assertEqual(r.status, status, r.raw)
                later = dict(r.json, verdict_v2={"level": "high"},
                             network={})
                self.validate(later, ptr, "an answer of later", self.spec)
                with self.assertRaises(AssertionError):
                    self.validate(later, ptr, "a field not described")

    def test_null_optional_fields_and_a_ref_are_described_and_taken(self):
        # Issue 38: null in an optional field is the field left out, and
        # ref is a field of every check and report.
        nulls = {"device": None, "device_token": None, "password_fp": None,
                 "password_breached": None, "challenge_passed": None}
        for path, body, ptr in (
                ("/check-login", dict(nulls, user="n@x.org", ip="192.0.2.9",
                                      ref="u:1"), "LoginCheck"),
                ("/report-login", dict(nulls, user="n@x.org", ip="192.0.2.9",
                                       success=False, reason=None,
                                       method=None, ref="u:1"),
                 "LoginReport"),
                ("/check-otp", {"phone": "+48600100999", "ip": "192.0.2.9",
                                "user": None, "device_token": None,
                                "challenge_passed": None, "ref": "u:1"},
                 "OtpCheck")):
            with self.subTest(path=path):
                self.validate(body, "/components/schemas/" + ptr, path)
                r = self.svc.post(path, body)
                self.assertIn(r.status, (200, 204), r.raw)
        with self.assertRaises(AssertionError):
            self.validate({"user": "n@x.org", "ip": "192.0.2.9",
                           "ref": "has space"},
                          "/components/schemas/LoginCheck", "a bad ref")

    def test_a_request_turned_away_while_draining_fits_the_description(self):
        # The drain's 503, on a kept-alive connection opened before the
        # SIGTERM, while a check waits on a paused Redis.
        svc = self.service(name="drain", extra=["--redis-timeout-ms",
                                                "3000"])
        pooled = http.client.HTTPConnection("127.0.0.1", svc.port,
                                            timeout=10)
        self.addCleanup(pooled.close)
        pooled.request("GET", "/healthz")
        self.assertEqual(pooled.getresponse().read(), b'{"status":"ok"}')
        os.kill(self.redis.proc.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, self.redis.proc.pid, signal.SIGCONT)
        slow = svc.send("/check-login", {"user": "slow@x.org",
                                         "ip": "192.0.2.1"})
        self.addCleanup(slow.close)
        svc.proc.send_signal(signal.SIGTERM)
        self.assertTrue(wait_until(lambda: "draining" in svc.log_text(), 5))
        pooled.request("POST", "/check-login",
                       json.dumps({"user": "late@x.org", "ip": "192.0.2.1"}))
        r = pooled.getresponse()
        late = Response(r.status, {k.lower(): v for k, v in r.getheaders()},
                        r.read())
        self.assertEqual(late.json, {"error": "shutting down"})
        self.judge(("/check-login", "post", 503), late)
        self.judge(("*", "*", 503), late)
        os.kill(self.redis.proc.pid, signal.SIGCONT)
        self.assertEqual(Response.read_from(slow).status, 200)

    def test_the_console_is_not_described_and_refuses_as_any_path(self):
        # A page for people, left out on purpose (docs/decisions/sms-api-console.md,
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
