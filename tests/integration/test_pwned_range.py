# SPDX-License-Identifier: Apache-2.0
"""GET /range/{prefix} against a real service serving a SHA-1 and an NTLM
corpus that `abuseguard pwned import` made from inputs generated here: the
exact body of each range (computed here from the input), any case of
prefix, CRLF between lines and none after the last, padding, the ETag and
its 304, Cache-Control, the 400s and 404s, a corpus renamed over the served
path taken without a restart, a damaged replacement that keeps the old
answers and is counted, the start-up refusals, and a real HIBP client (the
npm package hibp, tests/browser/hibp.test.mjs) reading it all through its
baseUrl option."""
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import unittest

from harness import BINARY, ServiceTest, free_port, wait_until

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BROWSER_DIR = os.path.join(ROOT, "tests", "browser")

# Passwords the SHA-1 corpus holds, with their counts.
PASSWORDS = {"P@ssw0rd": 52579, "hunter2": 33013, "correct horse": 27}
ABSENT = ["not in any corpus 7f3a", "Tr0ub4dor&3-unbreached"]
# Prefixes each test reads: a few lines each, and the first and last.
PREFIXES = ["21BD1", "00000", "FFFFF", "ABCDE"]
RELOAD_S = 30  # a replacement is looked for every second


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest().upper()


def make_hashes(rng, hex_len, n, fixed):
    """{HASH: count}: fixed, a few more in each of PREFIXES, then random
    ones up to n."""
    out = dict(fixed)
    for p in PREFIXES:
        for _ in range(3):
            out[p + "%0*X" % (hex_len - 5, rng.getrandbits(4 * (hex_len - 5)))] \
                = rng.randint(1, 5000)
    while len(out) < n:
        out["%0*X" % (hex_len, rng.getrandbits(4 * hex_len))] = \
            rng.randint(1, 100000)
    return out


def import_corpus(workdir, mode, hashes, output):
    """Runs `abuseguard pwned import` on hashes ({HASH: count}, written
    sorted, every other line in lower case, CRLF) into output."""
    src = os.path.join(workdir, "%s-input.txt" % mode)
    with open(src, "w", newline="") as f:
        for i, (h, c) in enumerate(sorted(hashes.items())):
            f.write("%s:%d\r\n" % (h.lower() if i % 2 else h, c))
    proc = subprocess.run([BINARY, "pwned", "import", "--mode", mode,
                           "--output", output, src],
                          capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError("import failed: %r" % proc.stderr)


def expected_lines(hashes, prefix):
    return ["%s:%d" % (h[5:], c) for h, c in sorted(hashes.items())
            if h.startswith(prefix)]


def write_junk(path):
    """Damaged bytes renamed over path, as a replacement would be."""
    tmp = path + ".junk"
    with open(tmp, "wb") as f:
        f.write(b"AGPWNED\0" + os.urandom(9_000_000))
    os.rename(tmp, path)


class PwnedTest(ServiceTest):
    def setUp(self):
        super().setUp()
        rng = random.Random(28)
        self.sha1 = make_hashes(rng, 40, 3000,
                                {sha1(p): c for p, c in PASSWORDS.items()})
        self.ntlm = make_hashes(rng, 32, 2000, {})
        self.sha1_file = os.path.join(self.workdir, "sha1.agp")
        self.ntlm_file = os.path.join(self.workdir, "ntlm.agp")
        import_corpus(self.workdir, "sha1", self.sha1, self.sha1_file)
        import_corpus(self.workdir, "ntlm", self.ntlm, self.ntlm_file)

    def pwned_service(self, files=None):
        files = files or [self.sha1_file, self.ntlm_file]
        extra = []
        for f in files:
            extra += ["--pwned-file", f]
        return self.service(extra=extra)

    def range(self, svc, prefix, mode=None, headers=None, method="GET"):
        path = "/range/" + prefix + ("?mode=" + mode if mode else "")
        return svc.request(method, path, headers=headers)

    def metric(self, svc, line):
        """The value of the /metrics line that starts with line."""
        text = svc.request("GET", "/metrics").raw.decode()
        for row in text.splitlines():
            if row.startswith(line + " "):
                return float(row.split()[-1])
        return None


class RangeTest(PwnedTest):
    def test_each_range_is_exactly_the_corpus_lines(self):
        svc = self.pwned_service()
        for mode, hashes in (("sha1", self.sha1), ("ntlm", self.ntlm)):
            for prefix in PREFIXES + [sorted(hashes)[1000][:5]]:
                want = "\r\n".join(expected_lines(hashes, prefix)).encode()
                if prefix in PREFIXES:
                    self.assertGreaterEqual(want.count(b"\r\n"), 2)
                for p, m in ((prefix, mode), (prefix.lower(), mode),
                             (prefix.capitalize(), mode.upper())):
                    with self.subTest(prefix=p, mode=m):
                        r = self.range(svc, p, None if m == "sha1" else m)
                        self.assertEqual(r.status, 200)
                        self.assertEqual(r.raw, want)
                        self.assertEqual(r.header("Content-Type"),
                                         "text/plain; charset=utf-8")
        # mode=sha1 said outright is the default's answer.
        self.assertEqual(self.range(svc, "21BD1", "sha1").raw,
                         self.range(svc, "21BD1").raw)
        # A range the corpus holds nothing of is an empty 200.
        empty = next("%05X" % p for p in range(1 << 20)
                     if not expected_lines(self.sha1, "%05X" % p))
        r = self.range(svc, empty)
        self.assertEqual((r.status, r.raw), (200, b""))
        self.assertEqual(self.metric(
            svc, 'abuseguard_pwned_lookups_total{mode="ntlm"}'), 15)
        self.assertEqual(self.metric(
            svc, 'abuseguard_pwned_entries{mode="sha1"}'), 3000)
        self.assertEqual(self.metric(
            svc, 'abuseguard_pwned_entries{mode="ntlm"}'), 2000)
        age = self.metric(svc,
                          'abuseguard_pwned_corpus_age_seconds{mode="sha1"}')
        self.assertTrue(0 <= age < 3600, age)

    def test_padding_adds_fresh_count_0_lines_after_the_real_ones(self):
        svc = self.pwned_service()
        for mode, hashes, hex_len in (("sha1", self.sha1, 35),
                                      ("ntlm", self.ntlm, 27)):
            real = expected_lines(hashes, "21BD1")
            suffixes = {line.split(":")[0] for line in
                        expected_lines(hashes, "")}
            sizes = set()
            for _ in range(5):
                r = self.range(svc, "21bd1", mode,
                               headers={"Add-Padding": "true"})
                self.assertEqual(r.status, 200)
                self.assertFalse(r.raw.endswith(b"\n"))
                self.assertNotIn(b"\n", r.raw.replace(b"\r\n", b""))
                lines = r.raw.decode().split("\r\n")
                sizes.add(len(lines))
                self.assertTrue(810 <= len(lines) <= 999, len(lines))
                self.assertEqual(lines[:len(real)], real)
                pad = lines[len(real):]
                for line in pad:
                    self.assertRegex(line, "^[0-9A-F]{%d}:0$" % hex_len)
                    self.assertNotIn(line[:-2], suffixes)
                self.assertEqual(r.header("Cache-Control"), "no-store")
                self.assertIsNone(r.header("ETag"))
                self.assertEqual(r.header("Vary"), "Add-Padding")
            self.assertGreater(len(sizes), 1, "the padding never varied")

    def test_an_etag_is_answered_304_and_the_answer_may_be_cached(self):
        svc = self.pwned_service()
        r = self.range(svc, "21BD1")
        tag = r.header("ETag")
        self.assertRegex(tag, r'^"sha1-21BD1-[0-9a-f]{16}"$')
        self.assertEqual(r.header("Cache-Control"), "public, max-age=3600")
        self.assertEqual(r.header("Vary"), "Add-Padding")
        for value in (tag, "W/" + tag, '"other", ' + tag):
            r = self.range(svc, "21bd1", headers={"If-None-Match": value})
            self.assertEqual(r.status, 304, value)
            self.assertEqual(r.raw, b"")
            self.assertEqual(r.header("ETag"), tag)
        self.assertEqual(self.range(svc, "21BD2", headers={
            "If-None-Match": tag}).status, 200)
        self.assertNotEqual(self.range(svc, "21BD1", "ntlm").header("ETag"),
                            tag)
        r = self.range(svc, "21BD1", headers={"If-None-Match": tag,
                                              "Add-Padding": "true"})
        self.assertEqual(r.status, 200)
        r = self.range(svc, "21BD1", method="HEAD")
        self.assertEqual((r.status, r.raw), (200, b""))
        self.assertEqual(r.header("ETag"), tag)

    def test_a_bad_prefix_or_mode_is_a_400_naming_it(self):
        svc = self.pwned_service()
        for prefix in ("21BD", "21BD12", "21BG1", "2%001"):
            with self.subTest(prefix=prefix):
                r = self.range(svc, prefix)
                self.assertEqual(r.status, 400)
                self.assertEqual(r.json["field"], "prefix" if "%" not in
                                 prefix else "path")
        for mode in ("md5", "sha256", ""):
            with self.subTest(mode=mode):
                r = svc.request("GET", "/range/21BD1?mode=" + mode)
                self.assertEqual((r.status, r.json["field"]), (400, "mode"))
                self.assertIn("mode must be sha1 or ntlm", r.json["error"])
        # A mode named without a value is no mode either, not the default.
        r = svc.request("GET", "/range/21BD1?mode")
        self.assertEqual((r.status, r.json["field"]), (400, "mode"))
        r = svc.request("POST", "/range/21BD1", body="{}")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.header("Allow"), "GET, HEAD")

    def test_a_mode_without_a_corpus_is_a_404_saying_so(self):
        svc = self.pwned_service([self.sha1_file])
        r = self.range(svc, "21BD1", "ntlm")
        self.assertEqual((r.status, r.json["field"]), (404, "mode"))
        self.assertIn("no NTLM corpus is loaded", r.json["error"])
        self.assertEqual(self.range(svc, "21BD1").status, 200)
        bare = self.service(name="bare")
        r = self.range(bare, "21BD1")
        self.assertEqual((r.status, r.json["field"]), (404, "mode"))
        self.assertIn("no SHA-1 corpus is loaded", r.json["error"])


class ReloadTest(PwnedTest):
    def body(self, svc, prefix="21BD1"):
        return self.range(svc, prefix).raw

    def test_a_corpus_renamed_over_the_path_is_served_without_a_restart(
            self):
        svc = self.pwned_service()
        old = self.body(svc)
        newer = dict(self.sha1)
        newer[sha1("P@ssw0rd")] += 1000
        newer[sha1("fresh in the new corpus")] = 77
        # The import writes a temporary file and renames it over the path.
        import_corpus(self.workdir, "sha1", newer, self.sha1_file)
        want = "\r\n".join(expected_lines(newer, "21BD1")).encode()
        self.assertNotEqual(want, old)
        self.assertTrue(wait_until(lambda: self.body(svc) == want, RELOAD_S),
                        "the new corpus was never served")
        prefix = sha1("fresh in the new corpus")[:5]
        self.assertEqual(self.body(svc, prefix), "\r\n".join(
            expected_lines(newer, prefix)).encode())
        self.assertEqual(self.metric(
            svc, 'abuseguard_pwned_entries{mode="sha1"}'), 3001)
        self.assertEqual(self.metric(
            svc, "abuseguard_pwned_reload_failures_total"), 0)
        self.assertIn('"pwned_reloaded"', svc.log_text())

    def test_a_damaged_replacement_keeps_the_old_answers_and_is_counted(
            self):
        svc = self.pwned_service()
        old, old_ntlm = self.body(svc), self.range(svc, "21BD1", "ntlm").raw
        write_junk(self.sha1_file)
        self.assertTrue(wait_until(lambda: self.metric(
            svc, "abuseguard_pwned_reload_failures_total") == 1, RELOAD_S),
            "the damaged replacement was never counted")
        self.assertEqual(self.body(svc), old)
        self.assertEqual(self.range(svc, "21BD1", "ntlm").raw, old_ntlm)
        failed = [line for line in svc.log_text().splitlines()
                  if '"pwned_reload_failed"' in line]
        self.assertEqual(len(failed), 1, failed)
        self.assertIn(self.sha1_file, failed[0])
        # A good one after it is taken, and the damaged one was counted
        # once however many looks passed meanwhile.
        newer = dict(self.sha1)
        newer[sha1("hunter2")] = 1
        import_corpus(self.workdir, "sha1", newer, self.sha1_file)
        want = "\r\n".join(expected_lines(newer, sha1("hunter2")[:5])).encode()
        self.assertTrue(wait_until(
            lambda: self.body(svc, sha1("hunter2")[:5]) == want, RELOAD_S))
        self.assertEqual(self.metric(
            svc, "abuseguard_pwned_reload_failures_total"), 1)


class StartupTest(PwnedTest):
    def start(self, *files):
        args = [BINARY, "--listen", "127.0.0.1:%d" % free_port(),
                "--redis", self.redis.url(),
                "--db", os.path.join(self.workdir, "p.db"),
                "--secret-file", self.secret]
        for f in files:
            args += ["--pwned-file", f]
        return subprocess.run(args, capture_output=True, timeout=60)

    def assert_refused(self, proc, *names):
        out = (proc.stdout + proc.stderr).decode()
        self.assertEqual(proc.returncode, 2, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertIn("--pwned-file", out)
        for name in names:
            self.assertIn(name, out)

    def test_a_missing_damaged_or_doubled_corpus_stops_the_start(self):
        missing = os.path.join(self.workdir, "missing.agp")
        self.assert_refused(self.start(missing), missing)
        junk = os.path.join(self.workdir, "junk.agp")
        write_junk(junk)
        self.assert_refused(self.start(self.sha1_file, junk), junk)
        other = os.path.join(self.workdir, "other.agp")
        shutil.copy(self.sha1_file, other)
        self.assert_refused(self.start(self.sha1_file, other),
                            self.sha1_file, other)
        self.assert_refused(self.start(self.sha1_file, self.ntlm_file,
                                       self.sha1_file), "more than 2")

    def test_a_fifo_at_the_path_stops_the_start_without_waiting(self):
        # No writer ever opens it: an open that waited would hang the
        # start until the run's timeout.
        fifo = os.path.join(self.workdir, "fifo.agp")
        os.mkfifo(fifo)
        self.assert_refused(self.start(fifo), fifo, "not a regular file")


class HibpClientTest(PwnedTest):
    def test_the_hibp_npm_client_reads_the_corpora_through_its_base_url(
            self):
        node = shutil.which("node")
        self.assertIsNotNone(node, "node is required (node 20 or later)")
        self.assertTrue(
            os.path.isdir(os.path.join(BROWSER_DIR, "node_modules", "hibp")),
            "tests/browser/node_modules is missing: run "
            "npm ci --prefix tests/browser (scripts/test.sh does)")
        svc = self.pwned_service()
        expect = {
            mode: {p: {line.split(":")[0]: int(line.split(":")[1])
                       for line in expected_lines(hashes, p)}
                   for p in PREFIXES}
            for mode, hashes in (("sha1", self.sha1), ("ntlm", self.ntlm))}
        expect["passwords"] = PASSWORDS
        expect["absent"] = ABSENT
        for p in ABSENT:
            self.assertNotIn(sha1(p), self.sha1)
        path = os.path.join(self.workdir, "expect.json")
        with open(path, "w") as f:
            json.dump(expect, f)
        env = dict(os.environ,
                   AG_RANGE_BASE="http://127.0.0.1:%d" % svc.port,
                   AG_RANGE_EXPECT=path)
        proc = subprocess.run(
            [node, "--test", os.path.join(BROWSER_DIR, "hibp.test.mjs")],
            cwd=BROWSER_DIR, env=env, capture_output=True, timeout=180)
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        self.assertEqual(proc.returncode, 0, out + err)
        # 2 modes x 4 prefixes x 3, 3 passwords, 2 absent, 1 refusal.
        self.assertIn("# pass 30", out)
        self.assertIn("# fail 0", out)
        self.assertEqual(self.metric(
            svc, 'abuseguard_pwned_lookups_total{mode="ntlm"}'), 12)


if __name__ == "__main__":
    unittest.main()
