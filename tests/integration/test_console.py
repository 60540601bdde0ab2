# SPDX-License-Identifier: Apache-2.0
"""The admin console at /admin/ui/: where it is served, the headers on
every file, and the page itself driven in Debian's chromium by
tests/browser/console.test.mjs (playwright-core, installed by
scripts/test.sh with npm ci)."""
import http.client
import os
import re
import shutil
import subprocess
import unittest

from harness import ServiceTest, free_port, make_secret

TOKEN = "tok-" + "5" * 40
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BROWSER_DIR = os.path.join(ROOT, "tests", "browser")
CONSOLE_DIR = os.path.join(ROOT, "console")
CSP = ("default-src 'self'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'; require-trusted-types-for 'script'")
FILES = {
    "/admin/ui/": ("index.html", "text/html; charset=utf-8"),
    "/admin/ui/index.html": ("index.html", "text/html; charset=utf-8"),
    "/admin/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/admin/ui/shields.js": ("shields.js", "text/javascript; charset=utf-8"),
    "/admin/ui/app.css": ("app.css", "text/css; charset=utf-8"),
    "/admin/ui/favicon.svg": ("favicon.svg", "image/svg+xml"),
}


def artifacts_dir():
    """build-*/artifacts beside the binary under test, else a temp dir's."""
    binary = os.environ.get("AG_BINARY")
    base = os.path.dirname(binary) if binary else os.path.join(ROOT, "build")
    return os.path.join(base, "artifacts")


class ConsoleTest(ServiceTest):
    def setUp(self):
        super().setUp()
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")

    def console_service(self, extra=()):
        return self.service(extra=["--admin-token-file", self.token_file,
                                   *extra])

    def assert_console_headers(self, r, where):
        self.assertEqual(r.header("Content-Security-Policy"), CSP, where)
        self.assertEqual(r.header("X-Frame-Options"), "DENY", where)
        self.assertEqual(r.header("Referrer-Policy"), "no-referrer", where)
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff",
                         where)


class ServedTest(ConsoleTest):
    def test_each_file_is_served_without_a_token_with_its_type_and_headers(
            self):
        svc = self.console_service()
        for path, (name, ctype) in FILES.items():
            with self.subTest(path=path):
                r = svc.request("GET", path)
                self.assertEqual(r.status, 200)
                self.assert_console_headers(r, path)
                self.assertEqual(r.header("Content-Type"), ctype)
                self.assertEqual(r.header("Cache-Control"), "no-cache")
                self.assertRegex(r.header("ETag"), r'^"[0-9a-f]{32}"$')
                with open(os.path.join(CONSOLE_DIR, name), "rb") as f:
                    self.assertEqual(r.raw, f.read())

    def test_an_unchanged_file_is_a_304_and_a_changed_tag_the_whole_file(
            self):
        svc = self.console_service()
        first = svc.request("GET", "/admin/ui/app.js")
        tag = first.header("ETag")
        for value in [tag, "W/" + tag, '"other", ' + tag, "*"]:
            with self.subTest(value=value):
                r = svc.request("GET", "/admin/ui/app.js",
                                headers={"If-None-Match": value})
                self.assertEqual(r.status, 304)
                self.assertEqual(r.raw, b"")
                self.assertEqual(r.header("ETag"), tag)
                self.assert_console_headers(r, value)
        r = svc.request("GET", "/admin/ui/app.js",
                        headers={"If-None-Match": '"0123"'})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.raw, first.raw)
        # Each file has its own tag.
        self.assertNotEqual(svc.request("GET", "/admin/ui/").header("ETag"),
                            tag)

    def test_head_answers_the_headers_without_the_body(self):
        svc = self.console_service()
        get = svc.request("GET", "/admin/ui/")
        r = svc.request("HEAD", "/admin/ui/")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.raw, b"")
        self.assertEqual(r.header("Content-Length"), str(len(get.raw)))
        self.assertEqual(r.header("ETag"), get.header("ETag"))
        self.assert_console_headers(r, "HEAD")

    def test_other_methods_unknown_files_and_the_bare_path(self):
        svc = self.console_service()
        for method in ["POST", "PUT", "DELETE", "PATCH"]:
            with self.subTest(method=method):
                r = svc.request(method, "/admin/ui/", body="{}",
                                headers={"Authorization": "Bearer " + TOKEN})
                self.assertEqual(r.status, 405)
                self.assertEqual(r.header("Allow"), "GET, HEAD")
                self.assert_console_headers(r, method)
        for path in ["/admin/ui/nope.js", "/admin/ui/app.js/",
                     "/admin/ui/../policies", "/admin/ui/x/app.js",
                     "/admin/ui/app", "/admin/ui/%00"]:
            with self.subTest(path=path):
                r = svc.request("GET", path)
                self.assertIn(r.status, (400, 404))
                self.assertNotIn(b"<html", r.raw)
        r = svc.request("GET", "/admin/ui/nope.js")
        self.assertEqual(r.status, 404)
        self.assertEqual(r.header("Cache-Control"), "no-store")
        self.assert_console_headers(r, "404")
        # The page's links are relative to /admin/ui/, so the bare path
        # sends the browser there.
        r = svc.request("GET", "/admin/ui")
        self.assertEqual(r.status, 308)
        self.assertEqual(r.header("Location"), "ui/")
        # /admin/uifoo is an admin API path, which wants the token.
        self.assertEqual(svc.request("GET", "/admin/uifoo").status, 401)

    def test_loading_the_page_counts_no_failed_authentication(self):
        svc = self.console_service()
        for _ in range(15):
            self.assertEqual(svc.request("GET", "/admin/ui/").status, 200)
        r = svc.request("GET", "/admin/policies",
                        headers={"Authorization": "Bearer " + TOKEN})
        self.assertEqual(r.status, 200)
        self.assertNotIn("admin_auth_failed", svc.log_text())

    def test_console_is_404_when_the_admin_api_is_off(self):
        svc = self.service()
        for path in ["/admin/ui/", "/admin/ui/app.js", "/admin/ui"]:
            with self.subTest(path=path):
                r = svc.request("GET", path)
                self.assertEqual(r.status, 404)
                self.assertIn("admin API is off", r.json["error"])

    def test_with_admin_listen_it_is_only_on_the_admin_listener(self):
        port = free_port()
        svc = self.console_service(
            extra=["--admin-listen", "127.0.0.1:%d" % port])
        r = svc.request("GET", "/admin/ui/")
        self.assertEqual(r.status, 404)
        self.assertIn("admin-listen", r.json["error"])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        self.addCleanup(conn.close)
        conn.request("GET", "/admin/ui/")
        r = conn.getresponse()
        body = r.read()
        self.assertEqual(r.status, 200)
        self.assertIn(b"Admin token", body)
        self.assertEqual(r.getheader("Content-Security-Policy"), CSP)


class SourceTest(unittest.TestCase):
    """What the page's sources must never hold, checked as text: the CSP
    and Trusted Types would refuse it in the browser, but only on the
    path a test happens to take."""

    def read(self, name):
        with open(os.path.join(CONSOLE_DIR, name), encoding="utf-8") as f:
            return f.read()

    def test_the_script_never_parses_markup(self):
        for name in ["app.js", "shields.js"]:
            # Code only: the comments may name what the code must not use.
            code = re.sub(r"(?m)^\s*//.*$", "", self.read(name))
            for word in ["innerHTML", "outerHTML", "insertAdjacentHTML",
                         "document.write", "eval(", "new Function"]:
                with self.subTest(name=name, word=word):
                    self.assertFalse(word in code, word + " in " + name)

    def test_the_page_has_no_inline_script_style_or_handler(self):
        html = self.read("index.html")
        self.assertEqual(re.findall(r"<script(?![^>]*\bsrc=)", html), [])
        self.assertNotIn("<style", html)
        self.assertEqual(re.findall(r"\sstyle=", html), [])
        self.assertEqual(re.findall(r"\son[a-z]+=", html), [])
        self.assertEqual(re.findall(r"(?:src|href)=\"(?:https?:)?//", html),
                         [])


class BrowserTest(ConsoleTest):
    def test_the_console_in_chromium_passes_every_browser_test(self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node is required (node 20 or later)")
        self.assertTrue(
            os.path.isdir(os.path.join(BROWSER_DIR, "node_modules",
                                       "playwright-core")),
            "tests/browser/node_modules is missing: run "
            "npm ci --prefix tests/browser (scripts/test.sh does)")
        self.assertTrue(os.path.exists("/usr/bin/chromium"),
                        "Debian's chromium is required (scripts/deps.sh)")
        port = free_port()
        svc = self.console_service(
            extra=["--admin-listen", "127.0.0.1:%d" % port])
        env = dict(os.environ,
                   AG_CONSOLE_BASE="http://127.0.0.1:%d" % port,
                   AG_PUBLIC_BASE="http://127.0.0.1:%d" % svc.port,
                   AG_ADMIN_TOKEN=TOKEN,
                   AG_ARTIFACTS=os.environ.get("AG_ARTIFACTS",
                                               artifacts_dir()))
        proc = subprocess.run(
            [node, "--test", os.path.join(BROWSER_DIR, "console.test.mjs")],
            cwd=BROWSER_DIR, env=env, capture_output=True, timeout=180)
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertRegex(out, r"# pass [1-9]")
        self.assertIn("# fail 0", out)
        for name in ["signin", "policies", "lookup", "audit", "lists",
                     "shield-banner", "overview", "shields"]:
            self.assertTrue(os.path.exists(os.path.join(
                env["AG_ARTIFACTS"], "console-%s.png" % name)), name)


if __name__ == "__main__":
    unittest.main()
