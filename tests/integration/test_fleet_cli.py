# SPDX-License-Identifier: Apache-2.0
"""The fleet from the command line (issue 37): a policy file made the
fleet's through any instance (abuseguard policy diff|apply|import FILE
--url), as a CI job would, the difference said field by field and
exactly, one version for the whole file, a bad file refused naming what
is wrong and changing nothing; and abuseguard fleet init, which shows
how a diverged instance's set differs from the fleet's and lets the
operator choose which wins."""
import json
import os
import sqlite3
import unittest

from fleet_harness import FleetTest
from harness import wait_until

POLICY = {"endpoint": "login", "key": ["user"], "algorithm": "fixed_window",
          "limit": 2, "window_s": 60}


class FleetCliTest(FleetTest):
    def file(self, name, policies):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            json.dump({"policies": policies}, f)
        return path

    def remote(self, cmd, svc, path, *extra, check=0):
        return self.cli("policy", cmd, path, "--url",
                        "http://127.0.0.1:%d" % svc.port, "--token-file",
                        self.token_file, *extra, check=check)

    def current(self, svc):
        """The instance's policies as a policy file holds them."""
        out = []
        for name, p in sorted(self.policies(svc).items()):
            out.append(dict(p, name=name))
        return out

    def test_a_file_is_diffed_then_applied_as_one_version(self):
        a, b = self.fleet(2)
        mine = self.current(a)
        for p in mine:
            if p["name"] == "login.user":
                p["limit"] = 33
                p["mode"] = "shadow"
        mine = [p for p in mine if p["name"] != "login.ip"]
        mine.append(dict(POLICY, name="login.from_ci"))
        path = self.file("fleet.json", mine)
        start = self.wait_versions_equal([a, b])
        before = self.policies(b)
        r = self.remote("diff", b, path)
        self.assertEqual(r.stdout.splitlines(), [
            "+ login.from_ci",
            "~ login.user",
            '    limit: 20 -> 33',
            '    mode: "enforce" -> "shadow"',
            "- login.ip",
            "1 added, 1 changed, 1 removed",
            "dry run: nothing changed"])
        self.assertEqual(self.policies(b), before)
        self.assertEqual(int(self.head()["version"]), start)
        r = self.remote("apply", b, path)
        self.assertIn("applied as version %d" % (start + 1), r.stdout)
        version = self.wait_versions_equal([a, b])
        self.assertEqual(version, start + 1)
        for s in (a, b):
            ps = self.policies(s)
            self.assertEqual((ps["login.user"]["limit"],
                              ps["login.user"]["mode"]), (33, "shadow"))
            self.assertIn("login.from_ci", ps)
            self.assertNotIn("login.ip", ps)
            # One record, its audit one row a policy.
            rows = [r for r in self.fleet_audit(s) if r[0] == version]
            self.assertEqual(sorted((r[1], r[2]) for r in rows), [
                ("create", "login.from_ci"), ("delete", "login.ip"),
                ("update", "login.user")])
        # Applied again: nothing to change, no version taken.
        r = self.remote("apply", a, path)
        self.assertIn("0 added, 0 changed, 0 removed", r.stdout)
        self.assertIn("nothing to change (version %d)" % version, r.stdout)
        self.assertEqual(int(self.head()["version"]), version)
        # import keeps what the file does not name; --json says it all.
        extra = self.file("extra.json", [dict(POLICY, name="login.more")])
        r = self.remote("import", a, extra, "--json")
        answer = json.loads(r.stdout)
        self.assertEqual(answer["diff"], {"added": ["login.more"],
                                          "changed": [], "removed": []})
        self.assertEqual((answer["changed"], answer["version"]),
                         (True, version + 1))
        self.wait_versions_equal([a, b])
        self.assertIn("login.from_ci", self.policies(b))

    def test_a_bad_file_is_refused_naming_it_and_changes_nothing(self):
        a, b = self.fleet(2)
        start = self.wait_versions_equal([a, b])
        before = self.policies(a)
        bad = self.file("bad.json", [dict(POLICY, name="login.bad",
                                          limit=0)])
        r = self.remote("apply", a, bad, check=2)
        self.assertIn("limit", r.stderr)
        self.assertIn("HTTP 400", r.stderr)
        path = os.path.join(self.workdir, "broken.json")
        with open(path, "w") as f:
            f.write('{"policies": [')
        r = self.remote("apply", a, path, check=2)
        self.assertIn("broken.json", r.stderr)
        r = self.cli("policy", "apply", bad, "--url",
                     "http://127.0.0.1:%d" % a.port, "--token-file",
                     os.path.join(self.workdir, "none"), check=2)
        self.assertEqual(self.policies(a), before)
        self.assertEqual(int(self.head()["version"]), start)

    def test_fleet_init_shows_a_diverged_set_and_lets_the_operator_choose(self):
        a, b = self.fleet(2)
        self.wait_versions_equal([a, b])
        # b's host restored an old backup by hand: its set now differs
        # from the fleet's.
        self.assertEqual(b.stop(), 0)
        with sqlite3.connect(b.db) as c:
            c.execute("UPDATE policies SET \"limit\" = 99 "
                      "WHERE name = 'login.user'")
        flags = ["--redis", self.redis.url(), "--db", b.db, "--secret-file",
                 self.secret]
        r = self.cli("fleet", "init", *flags, check=0)
        self.assertIn("~ login.user", r.stdout)
        self.assertIn("limit: 20 -> 99", r.stdout)
        self.assertIn("nothing changed", r.stdout)
        b.restart()
        self.assertTrue(self.wait_state(b, "diverged"))
        r = self.admin(b, "PUT", "/policies/login.x", POLICY)
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("diverged", r.json["error"])
        self.assertTrue(self.fleet_events(b, "fleet_diverged"))
        # The operator chooses the fleet's: b takes it, and follows.
        self.assertEqual(b.stop(), 0)
        r = self.cli("fleet", "init", "--from", "fleet", *flags, check=0)
        b.restart()
        self.assertTrue(self.wait_state(b, "following"))
        self.assertEqual(self.policies(b)["login.user"]["limit"], 20)
        # Or this host's, from a file: every instance takes the file's.
        self.assertEqual(b.stop(), 0)
        path = self.file("chosen.json", [dict(POLICY, name="login.only")])
        r = self.cli("fleet", "init", "--from", path, *flags, check=0)
        self.assertIn("+ login.only", r.stdout)
        b.restart()
        self.wait_versions_equal([a, b])
        for s in (a, b):
            self.assertEqual(sorted(self.policies(s)), ["login.only"])

    def wait_state(self, svc, state):
        return wait_until(
            lambda: self.status(svc)["instance"]["state"] == state, 20)


if __name__ == "__main__":
    unittest.main()
