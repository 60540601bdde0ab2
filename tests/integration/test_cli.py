# SPDX-License-Identifier: Apache-2.0
"""abuseguard policy ...: the operators' CLI, through the same validation
and audit as the admin API, followed by running services."""
import json
import os
import sqlite3
import subprocess
import unittest

from harness import BINARY, ServiceTest


def undo_migrations_from_11(c):
    """Takes 011_fleet's tables, triggers and columns, and 013's and 014's
    columns, out of the database on c, so that a test can make it as it
    was before an older migration and open it again (012 copies the lists
    table, which it can do again)."""
    for what, name in c.execute("SELECT type, name FROM sqlite_master "
                                "WHERE name LIKE 'fleet%'").fetchall():
        if what in ("table", "trigger"):
            c.execute('DROP %s "%s"' % (what.upper(), name))
    for table, column in (("audit", "fleet_version"), ("audit", "instance"),
                          ("policies", "version"), ("lists", "version"),
                          ("policies", "lists"), ("policies", "countries"),
                          ("policies", "scope")):
        c.execute('ALTER TABLE %s DROP COLUMN "%s"' % (table, column))


class CliTest(ServiceTest):
    def setUp(self):
        super().setUp()
        self.db = os.path.join(self.workdir, "cli.db")

    def cli(self, *args, stdin=None, db=None):
        return subprocess.run([BINARY, "policy", *args, "--db",
                               db or self.db],
                              capture_output=True, text=True, input=stdin,
                              timeout=30)

    def create(self):
        r = self.cli("list", "--create")
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def write(self, name, obj):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def as_before_migration_9(self, **row):
        """The database as one made before migration 009: its spray row
        without reasons (and with row's columns), the migration not yet
        applied, nor any after it (011's tables, columns and triggers
        undone)."""
        with sqlite3.connect(self.db) as c:
            undo_migrations_from_11(c)
            c.execute("UPDATE policies SET reasons = NULL "
                      "WHERE name = 'login.password_spray'")
            for column, value in row.items():
                c.execute('UPDATE policies SET "%s" = ? '
                          "WHERE name = 'login.password_spray'" % column,
                          (value,))
            c.execute("DELETE FROM schema_version WHERE version >= 9")
            c.execute("DELETE FROM audit")

    def spray(self):
        r = self.cli("get", "login.password_spray")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["policy"]

    def test_the_spray_default_is_adopted_where_it_is_unchanged(self):
        """Issue 36: a new database is seeded with login.password_spray
        counting bad_password and second_factor_failed; an existing one
        whose row is the old default takes it on opening, audited; one an
        operator changed keeps their row."""
        self.create()
        reasons = ["bad_password", "second_factor_failed"]
        self.assertEqual(self.spray().get("reasons"), reasons)
        self.as_before_migration_9()
        with sqlite3.connect(self.db) as c:
            self.assertEqual(c.execute(
                "SELECT reasons FROM policies "
                "WHERE name = 'login.password_spray'").fetchall(), [(None,)])
        # Opening it migrates it.
        self.assertEqual(self.spray().get("reasons"), reasons)
        with sqlite3.connect(self.db) as c:
            rows = c.execute("SELECT action, name, actor, before, after "
                             "FROM audit").fetchall()
        self.assertEqual(len(rows), 1, rows)
        action, name, actor, before, after = rows[0]
        self.assertEqual((action, name, actor),
                         ("update", "login.password_spray",
                          "migration 009_spray_reasons"))
        self.assertNotIn("reasons", json.loads(before))
        self.assertEqual(json.loads(after), self.spray())
        # An operator's own row is theirs.
        self.as_before_migration_9(limit=20)
        self.assertNotIn("reasons", self.spray())
        self.assertEqual(self.spray()["limit"], 20)

    def test_a_policy_named_as_the_service_is_renamed(self):
        """Migration 010: a policy named challenge_pass, a name the
        service now keeps for its own, is renamed, audited, and loads."""
        self.create()
        with sqlite3.connect(self.db) as c:
            c.execute("INSERT INTO policies (name, endpoint, key, algorithm, "
                      '"limit", window_s) VALUES (\'challenge_pass\', '
                      "'login', '[\"user\"]', 'sliding_log', 5, 60)")
            undo_migrations_from_11(c)
            c.execute("DELETE FROM schema_version WHERE version >= 10")
        names = [json.loads(line)["name"]
                 for line in self.cli("list").stdout.splitlines()]
        self.assertIn("challenge_pass.renamed", names)
        self.assertNotIn("challenge_pass", names)
        with sqlite3.connect(self.db) as c:
            rows = c.execute("SELECT action, name, actor FROM audit "
                             "WHERE actor LIKE 'migration 010%'").fetchall()
        self.assertEqual(rows, [("rename", "challenge_pass.renamed",
                                 "migration 010_reserved_names")])

    def test_put_get_list_export_delete(self):
        path = self.write("p.json", {"endpoint": "otp", "key": ["phone"],
                                     "algorithm": "token_bucket",
                                     "limit": 4, "window_s": 60})
        r = self.cli("put", "otp.cli", path, "--create")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("created", r.stderr)
        r = self.cli("get", "otp.cli")
        self.assertEqual(json.loads(r.stdout)["policy"]["algorithm"],
                         "token_bucket")
        names = [json.loads(line)["name"]
                 for line in self.cli("list").stdout.splitlines()]
        self.assertIn("otp.cli", names)
        self.assertIn("login.user", names)  # a new database is seeded
        exported = json.loads(self.cli("export").stdout)
        self.assertEqual(sorted(p["name"] for p in exported["policies"]),
                         sorted(names))
        self.assertEqual(self.cli("delete", "otp.cli").returncode, 0)
        r = self.cli("delete", "otp.cli")
        self.assertEqual(r.returncode, 1)
        self.assertIn("otp.cli", r.stderr)
        self.assertEqual(self.cli("get", "otp.cli").returncode, 1)

    def test_invalid_policy_is_refused_with_the_field(self):
        path = self.write("bad.json", {"endpoint": "otp", "key": ["phone"],
                                       "algorithm": "sliding_log",
                                       "limit": 0, "window_s": 60})
        self.create()
        r = self.cli("put", "otp.bad", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("limit", r.stderr)
        self.assertEqual(self.cli("get", "otp.bad").returncode, 1)
        self.assertEqual(self.cli("frobnicate").returncode, 2)

    def test_import_is_all_or_nothing_and_audited(self):
        self.create()
        good = {"name": "login.imp1", "endpoint": "login", "key": ["ip"],
                "algorithm": "fixed_window", "limit": 7, "window_s": 60}
        bad = dict(good, name="login.imp2", window_s=0)
        r = self.cli("import", self.write("bad.json",
                                          {"policies": [good, bad]}))
        self.assertEqual(r.returncode, 2)
        self.assertIn("window_s", r.stderr)
        self.assertEqual(self.cli("get", "login.imp1").returncode, 1)
        r = self.cli("import", self.write("good.json",
                                          {"policies": [good]}))
        self.assertEqual(r.returncode, 0, r.stderr)
        con = sqlite3.connect(self.db)
        rows = con.execute("SELECT action, name, actor FROM audit "
                           "ORDER BY id DESC LIMIT 1").fetchall()
        con.close()
        self.assertEqual(rows, [("create", "login.imp1", "cli")])

    def test_enabled_policies_per_endpoint_are_capped(self):
        # A check applies at most 32 policies: the 33rd enabled one of an
        # endpoint is refused, by the CLI as by the admin API.
        self.create()
        have = sum(1 for line in self.cli("list").stdout.splitlines()
                   if json.loads(line)["endpoint"] == "login")
        path = self.write("p.json", {"endpoint": "login", "key": ["user"],
                                     "algorithm": "fixed_window",
                                     "limit": 100, "window_s": 60})
        for i in range(32 - have):
            self.assertEqual(self.cli("put", "login.cap%d" % i, path)
                             .returncode, 0)
        r = self.cli("put", "login.one_too_many", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("at most 32", r.stderr)
        self.assertEqual(self.cli("get", "login.one_too_many").returncode, 1)
        svc = self.service(db=self.db)
        self.assertEqual(self.login(svc, "cap@example.com", "192.0.2.1")
                         .status, 200)

    def test_a_missing_database_is_refused_unless_create_is_given(self):
        path = self.write("p.json", {"endpoint": "login", "key": ["user"],
                                     "algorithm": "sliding_log", "limit": 1,
                                     "window_s": 60})
        typo = os.path.join(self.workdir, "polices.db")
        for args in (("list",), ("put", "login.typo", path),
                     ("import", path)):
            with self.subTest(args=args):
                r = self.cli(*args, db=typo)
                self.assertEqual(r.returncode, 2)
                self.assertIn(typo, r.stderr)
                self.assertIn("--create", r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertFalse(os.path.exists(typo))
        r = self.cli("put", "login.typo", path, "--create", db=typo)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(typo))
        # An existing database needs no flag, and --create changes nothing.
        self.assertEqual(self.cli("get", "login.typo", db=typo).returncode, 0)
        r = self.cli("get", "login.typo", "--create", db=typo)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_running_service_follows_a_cli_edit(self):
        # Outside a fleet (--fleet off): a local edit is this host's alone.
        svc = self.service(db=self.db, extra=["--fleet", "off"])
        path = self.write("p.json", {"endpoint": "login", "key": ["user"],
                                     "algorithm": "sliding_log", "limit": 1,
                                     "window_s": 60})
        self.assertEqual(self.cli("put", "login.cli", path).returncode, 0)
        self.assert_follows(svc, "login.cli", "c@example.com")

    def test_a_fleet_members_database_refuses_a_local_edit(self):
        # Issue 37: a change made to one member's file alone would leave
        # the fleet; the CLI refuses it (exit 2), changes nothing, and
        # says how to change the fleet.
        svc = self.service(db=self.db)
        self.assertEqual(self.login(svc, "m@example.com").status, 200)
        with sqlite3.connect(self.db) as c:
            self.assertEqual(c.execute("SELECT member FROM fleet")
                             .fetchone(), (1,))
        path = self.write("p.json", {"endpoint": "login", "key": ["user"],
                                     "algorithm": "sliding_log", "limit": 1,
                                     "window_s": 60})
        whole = self.write("all.json", {"policies": [
            dict(name="login.cli", **json.load(open(path)))]})
        before = self.cli("export").stdout
        for args in (("put", "login.cli", path), ("delete", "login.user"),
                     ("import", whole)):
            r = self.cli(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("belongs to fleet 'main'", r.stderr)
            self.assertIn("--url", r.stderr)
        self.assertEqual(self.cli("export").stdout, before)


class LuaCliTest(ServiceTest):
    """abuseguard lua ...: the code the Redis store loads, as it loads it."""

    def lua(self, *args):
        return subprocess.run([BINARY, "lua", *args], capture_output=True,
                              text=True, timeout=30)

    def test_the_printed_library_is_the_one_the_service_loads(self):
        fn = self.lua("function").stdout.strip()
        self.assertRegex(fn, r"^ag_check_[0-9a-f]{16}$")
        library = self.lua("library").stdout
        self.assertTrue(library.startswith(
            "#!lua name=abuseguard_%s\n" % fn[len("ag_check_"):]))
        svc = self.service()
        self.assertEqual(self.login(svc, "lua@example.com").status, 200)
        names = [lib[1] for lib in self.redis.cmd("FUNCTION", "LIST")]
        self.assertIn("abuseguard_" + fn[len("ag_check_"):], names)
        # Loading the printed text says it is already there: the same code.
        with self.assertRaises(Exception) as e:
            self.redis.cmd("FUNCTION", "LOAD", library)
        self.assertIn("already exists", str(e.exception))

    def test_a_script_holds_only_its_algorithms(self):
        r = self.lua("script", "sliding_log", "distinct")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("algorithms['0'] = sliding_log", r.stdout)
        self.assertIn("algorithms['4'] = distinct", r.stdout)
        self.assertNotIn("token_bucket", r.stdout)
        self.assertNotIn("redis.register_function('", r.stdout)

    def test_bad_usage_exits_2(self):
        for args in ((), ("script",), ("script", "bogus"), ("library", "x"),
                     ("nonsense",)):
            r = self.lua(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
