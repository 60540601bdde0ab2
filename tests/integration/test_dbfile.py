# SPDX-License-Identifier: Apache-2.0
"""The policy database file under operator faults: deleted, replaced by
another file, corrupted and restored, while instances run."""
import os
import shutil
import subprocess
import sqlite3
import unittest

from harness import BINARY, PolicyTest, policy, wait_until, make_secret
from test_resilience import metric

TOKEN = "tok-" + "5" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
FIRST = policy("f.first", limit=3)
# The audit row of the fleet's founding: a snapshot of the set, written
# when the first instance starts on a fresh Redis (issue 37).
FOUNDED = ("snapshot", "found")
NEW = {"endpoint": "login", "key": ["user"], "algorithm": "fixed_window",
       "limit": 2, "window_s": 60}


class DatabaseFileTest(PolicyTest):
    def setUp(self):
        super().setUp()
        token = make_secret(self.workdir, (TOKEN + "\n").encode(),
                            name="admin.token")
        (self.svc,) = self.seeded([FIRST], extra=[
            "--admin-token-file", token])

    def put(self, name, body=NEW):
        return self.svc.request("PUT", "/admin/policies/" + name, body,
                                headers=AUTH)

    def limit_of(self, name, user):
        # A new user each time, so that waiting for a change is not a
        # flood of denials.
        self.logins = getattr(self, "logins", 0) + 1
        r = self.login(self.svc, "%d.%s" % (self.logins, user))
        for d in r.json["decisions"]:
            if d["policy"] == name:
                return d["limit"]
        return None

    def move_aside(self):
        """Moves the database and its WAL files away, as an operator's
        mistaken mv or rm would; returns the directory they went to."""
        aside = os.path.join(self.workdir, "aside")
        os.mkdir(aside)
        for suffix in ("", "-wal", "-shm"):
            path = self.svc.db + suffix
            if os.path.exists(path):
                shutil.move(path, aside)
        return aside

    def test_a_deleted_database_is_stale_and_refuses_admin_writes(self):
        self.assertEqual(metric(self.svc, "abuseguard_policies_stale"), 0)
        aside = self.move_aside()
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_policies_stale") == 1, 10.0),
            self.svc.log_text())
        self.assertEqual(self.svc.log_text().count("policy_db_missing"), 1)
        # Checks go on with the last policies; an edit would be lost, so
        # it is refused rather than written into the unlinked file.
        self.assertEqual(self.limit_of("f.first", "d1@x.org"), 3)
        r = self.put("f.lost")
        self.assertEqual(r.status, 503, r.raw)
        r = self.svc.request("DELETE", "/admin/policies/f.first",
                             headers=AUTH)
        self.assertEqual(r.status, 503)
        self.assertFalse(os.path.exists(self.svc.db))
        # Back in place: fresh again, and edits apply.
        for name in os.listdir(aside):
            shutil.move(os.path.join(aside, name), self.svc.db + name[
                len(os.path.basename(self.svc.db)):])
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_policies_stale") == 0, 10.0),
            self.svc.log_text())
        self.assertEqual(self.put("f.back").status, 201)
        self.assertEqual(self.limit_of("f.back", "d2@x.org"), 2)
        self.assertEqual(self.svc.log_text().count("policy_db_missing"), 1)

    def test_a_replaced_database_is_reopened_and_loaded(self):
        other = os.path.join(self.workdir, "other.db")
        shutil.copy(self.svc.db, other)
        con = sqlite3.connect(other)
        con.execute("UPDATE policies SET \"limit\" = 7")
        con.commit()
        con.close()
        os.rename(other, self.svc.db)
        self.assertTrue(wait_until(
            lambda: self.limit_of("f.first", "r1@x.org") == 7, 10.0),
            self.svc.log_text())
        self.assertEqual(metric(self.svc, "abuseguard_policies_stale"), 0)
        # The hand-edited file differs from the fleet's set (issue 37): the
        # instance serves it, says so, and refuses admin writes until the
        # operator chooses, which fleet init does.
        self.assertTrue(wait_until(
            lambda: '"fleet_diverged"' in self.svc.log_text(), 10.0))
        r = self.put("f.new")
        self.assertEqual(r.status, 503, r.raw)
        self.assertIn("diverged", r.json["error"])
        init = subprocess.run(
            [BINARY, "fleet", "init", "--from", "this", "--redis",
             self.redis.url(), "--db", self.svc.db, "--secret-file",
             self.secret], capture_output=True, text=True, timeout=30)
        self.assertEqual(init.returncode, 0, init.stderr)
        self.assertIn("limit: 3 -> 7", init.stdout)
        # The admin API writes into the new file, not the replaced one.
        self.assertTrue(wait_until(
            lambda: self.put("f.new").status == 201, 10.0),
            self.svc.log_text())
        con = sqlite3.connect(self.svc.db)
        names = [n for (n,) in con.execute("SELECT name FROM policies")]
        con.close()
        self.assertIn("f.new", names)

    def test_a_corrupt_file_restored_in_place_is_loaded_again(self):
        con = sqlite3.connect(self.svc.db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        with open(self.svc.db, "rb") as f:
            good = f.read()
        # Overwritten in place (same inode), as a bad restore would.
        with open(self.svc.db, "r+b") as f:
            f.write(b"\xa5" * len(good))
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_policies_stale") == 1, 10.0),
            self.svc.log_text())
        with open(self.svc.db, "r+b") as f:
            f.write(good)
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_policies_stale") == 0, 10.0),
            self.svc.log_text())
        self.assertEqual(self.put("f.after").status, 201)
        self.assertEqual(self.limit_of("f.after", "c1@x.org"), 2)

    def test_an_invalid_row_keeps_its_last_version_and_blocks_no_edit(self):
        con = sqlite3.connect(self.svc.db)
        # Hand edits no validator saw: one of a policy with a valid
        # history, one of a row that never had one.
        con.execute("UPDATE policies SET algorithm = 'bogus'")
        con.execute("INSERT INTO policies (name, endpoint, key, algorithm,"
                    " \"limit\", window_s) VALUES ('f.never', 'login',"
                    " '[\"user\"]', 'bogus', 1, 60)")
        con.commit()
        con.close()
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_policies_invalid") == 2,
            10.0), self.svc.log_text())
        self.assertEqual(metric(self.svc, "abuseguard_policies_stale"), 0)
        r = self.login(self.svc, "inv1@x.org")
        names = [d["policy"] for d in r.json["decisions"]]
        self.assertEqual(names, ["f.first"])
        self.assertEqual(self.decision(r, "f.first")["limit"], 3)
        # The operator can list them, and sees which are invalid and why.
        r = self.svc.request("GET", "/admin/policies", headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        listed = {p["name"]: p for p in r.json["policies"]}
        self.assertIn("algorithm", listed["f.first"]["invalid"])
        self.assertEqual(listed["f.first"]["limit"], 3)
        self.assertIn("algorithm", listed["f.never"]["invalid"])
        # Every other edit applies as usual.
        self.assertEqual(self.put("f.edit").status, 201)
        self.assertEqual(self.limit_of("f.edit", "inv2@x.org"), 2)
        self.assertEqual(self.put("f.first").status, 200)
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_policies_invalid") == 1,
            10.0))
        self.assertEqual(self.limit_of("f.first", "inv3@x.org"), 2)
        log = self.svc.log_text()
        self.assertEqual(log.count('"policy_invalid"'), 2, log)


    def test_an_invalid_list_row_is_left_out_and_blocks_no_edit(self):
        r = self.svc.request("POST", "/admin/lists/deny",
                             {"kind": "ip", "value": "198.51.100.7"},
                             headers=AUTH)
        self.assertEqual(r.status, 201, r.raw)
        con = sqlite3.connect(self.svc.db)
        # A hand edit no validator saw: no IP at all.
        cur = con.execute("INSERT INTO lists (list, kind, value, endpoint,"
                          " note) VALUES ('deny', 'ip', 'not-an-ip', '*',"
                          " '')")
        bad_id = cur.lastrowid
        con.commit()
        con.close()
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_list_entries_invalid") == 1,
            10.0), self.svc.log_text())
        self.assertEqual(metric(self.svc, "abuseguard_policies_stale"), 0)
        # The valid entry still denies; edits still apply.
        self.assertEqual(self.login(self.svc, "l1@x.org",
                                    "198.51.100.7").status, 403)
        self.assertEqual(self.put("f.after").status, 201)
        self.assertEqual(self.limit_of("f.after", "l2@x.org"), 2)
        r = self.svc.request("GET", "/admin/lists/deny", headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["invalid_entries"], 1)
        self.assertEqual([e["value"] for e in r.json["entries"]],
                         ["198.51.100.7"])
        # The operator clears it through the API.
        r = self.svc.request("DELETE", "/admin/lists/deny/%d" % bad_id,
                             headers=AUTH)
        self.assertEqual(r.status, 204, r.raw)
        self.assertTrue(wait_until(
            lambda: metric(self.svc, "abuseguard_list_entries_invalid") == 0,
            10.0))
        self.assertIn('"list_entries_invalid"', self.svc.log_text())


class AuditRetentionTest(PolicyTest):
    def age_rows(self, db, rows):
        """Adds audit rows of the given (action, name, age in days), and
        ages the seed's row of f.first by 1000 days."""
        con = sqlite3.connect(db)
        for action, name, days in rows:
            con.execute("INSERT INTO audit (at, action, name, actor) VALUES"
                        " (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1),"
                        " ?2, ?3, 'cli')", ("-%d days" % days, action, name))
        con.execute("UPDATE audit SET at = '2020-01-01T00:00:00.000Z'"
                    " WHERE name = 'f.first'")
        con.commit()
        con.close()

    def audited(self, db):
        con = sqlite3.connect(db)
        rows = con.execute("SELECT action, name FROM audit").fetchall()
        con.close()
        return sorted(rows)

    def start_aged(self, rows, extra=()):
        """Seeds a database, ages its audit log with rows, then starts an
        instance on it with extra flags: the watcher prunes at its first
        tick. Returns the database's path."""
        (svc,) = self.seeded([FIRST])
        self.assertEqual(svc.stop(), 0)
        self.age_rows(svc.db, rows)
        self.service(db=svc.db, extra=list(extra))
        return svc.db

    def test_rows_older_than_the_retention_are_pruned(self):
        db = self.start_aged([("update", "f.old", 400),
                              ("list_add", "deny", 366),
                              ("update", "f.recent", 300)])
        # The default is 365 days; f.first keeps its newest change, the
        # record its last valid version is read from; the fleet's founding
        # (a snapshot of the set, at the first start) is recent.
        want = [("create", "f.first"), FOUNDED, ("update", "f.recent")]
        self.assertTrue(wait_until(lambda: self.audited(db) == want, 10.0),
                        self.audited(db))

    def test_the_retention_is_a_flag(self):
        db = self.start_aged([("update", "f.old", 3), ("reset", "f.first", 3),
                              ("update", "f.recent", 1)],
                             ["--audit-retention-days", "2"])
        want = [("create", "f.first"), FOUNDED, ("update", "f.recent")]
        self.assertTrue(wait_until(lambda: self.audited(db) == want, 10.0),
                        self.audited(db))

if __name__ == "__main__":
    unittest.main()
