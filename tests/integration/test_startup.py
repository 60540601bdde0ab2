# SPDX-License-Identifier: Apache-2.0
"""Start-up: flags and environment, refusals with exit code 2, database
creation and seeding, probes."""
import json
import os

import resource
import socket
import sqlite3
import subprocess
import tempfile
import shutil
import time
import unittest

from harness import (BINARY, Redis, Service, ServiceTest, free_port, wait_until,
                     make_secret)


def run(args, env=None, timeout=10, preexec_fn=None):
    return subprocess.run([BINARY, *args], capture_output=True, text=True,
                          timeout=timeout, env=env, preexec_fn=preexec_fn)


def open_files_limit(pid):
    """The soft RLIMIT_NOFILE of a running process."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open-files line in /proc/%d/limits" % pid)


class RefusalTest(unittest.TestCase):
    """Refusals need no Redis: they happen before anything connects."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ag-start-")
        self.secret = make_secret(self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def base(self, secret=None):
        return ["--listen", "127.0.0.1:%d" % free_port(), "--db",
                self.dir + "/p.db", "--secret-file", secret or self.secret]

    def assert_refused(self, args, needle, env=None):
        r = run(args, env=env)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(needle, lines[0])

    def test_help_lists_every_flag_and_its_variable(self):
        r = run(["--help"])
        self.assertEqual(r.returncode, 0)
        for flag in ["--listen", "--redis", "--db", "--secret-file",
                     "--admin-token-file", "--conn-timeout-s", "--max-conns",
                     "--redis-timeout-ms"]:
            self.assertIn(flag, r.stdout)
            env = "ABUSEGUARD_" + flag[2:].upper().replace("-", "_")
            self.assertIn(env, r.stdout)

    def test_bad_values_are_one_line_and_exit_2(self):
        cases = [
            (["--listen", "nowhere"], "--listen"),
            (["--listen", "127.0.0.1:99999"], "--listen"),
            (["--redis", "http://x:1"], "--redis"),
            (["--redis", "redis://127.0.0.1:0"], "--redis"),
            (["--redis", "unix://relative/path"], "--redis"),
            (["--conn-timeout-s", "0"], "--conn-timeout-s"),
            (["--max-conns", "many"], "--max-conns"),
            (["--log-level", "loud"], "--log-level"),
            (["--bogus", "1"], "--bogus"),
        ]
        for extra, needle in cases:
            with self.subTest(extra=extra):
                self.assert_refused(self.base() + extra, needle)

    def test_version_prints_the_version_and_exits_0(self):
        r = run(["--version"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^abuseguard \d+\.\d+\.\d+( \S+)?\n$")

    def test_a_bad_config_file_key_is_one_line_naming_it_and_exit_2(self):
        conf = os.path.join(self.dir, "ag.conf")
        with open(conf, "w") as f:
            f.write("# comment\nmax-conns = 10\nmax-connz = 10\n")
        r = run(self.base() + ["--config", conf])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("line 3: unknown key 'max-connz'", r.stderr)

    def test_bad_environment_value_names_the_variable(self):
        env = dict(os.environ, ABUSEGUARD_MAX_CONNS="-3")
        self.assert_refused(self.base(), "ABUSEGUARD_MAX_CONNS", env=env)

    def test_secret_file_refusals(self):
        short = make_secret(self.dir, b"x" * 31, name="short.key")
        shared = make_secret(self.dir, mode=0o644, name="shared.key")
        for secret, needle in [(self.dir + "/missing.key", "missing.key"),
                               (short, "at least 32"),
                               (shared, "group or others")]:
            with self.subTest(secret=secret):
                self.assert_refused(self.base(secret), needle)

    def test_fifo_secret_is_refused_at_once_not_waited_on(self):
        fifo = os.path.join(self.dir, "fifo.key")
        os.mkfifo(fifo, 0o600)
        # A start takes well under a second, a few on a loaded machine
        # (under ASan); an open that waited on the FIFO would never end.
        started = time.monotonic()
        r = run(self.base(fifo), timeout=30)
        self.assertLess(time.monotonic() - started, 10.0)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--secret-file", r.stderr)
        self.assertIn("not a regular file", r.stderr)

    def test_secret_of_one_repeated_byte_is_refused(self):
        for content in [b"\0" * 32, b"a" * 64]:
            with self.subTest(content=content[:1]):
                path = make_secret(self.dir, content, name="same.key")
                self.assert_refused(self.base(path), "--secret-file")
                self.assert_refused(self.base(path), "repeated")

    def test_admin_token_shorter_than_16_bytes_is_refused(self):
        path = make_secret(self.dir, b"tok-0123456789\n", name="admin.token")
        self.assert_refused(self.base() + ["--admin-token-file", path],
                            "--admin-token-file")
        self.assert_refused(self.base() + ["--admin-token-file", path],
                            "16 to 1024 bytes")

    def test_admin_token_shared_with_group_or_others_is_refused(self):
        # Judged like the other secret files: the token opens every admin
        # route, so a file others can read hands it to them.
        for mode in (0o644, 0o640):
            with self.subTest(mode=oct(mode)):
                path = make_secret(self.dir, b"tok-" + b"7" * 40 + b"\n",
                                   mode=mode, name="admin.token")
                self.assert_refused(self.base() + ["--admin-token-file", path],
                                    "--admin-token-file")
                self.assert_refused(self.base() + ["--admin-token-file", path],
                                    "group or others")

    def test_admin_token_of_one_repeated_byte_is_refused(self):
        for content in [b"a" * 16, b"a" * 16 + b"\n", b"\xff" * 40]:
            with self.subTest(content=content[:1]):
                path = make_secret(self.dir, content, name="admin.token")
                r = run(self.base() + ["--admin-token-file", path])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1,
                                 r.stderr)
                self.assertIn("--admin-token-file", r.stderr)
                self.assertIn("repeated", r.stderr)
                self.assertNotIn("a" * 16, r.stderr)

    def config_with(self, text, mode):
        conf = os.path.join(self.dir, "ag.conf")
        with open(conf, "w") as f:
            f.write(text)
        os.chmod(conf, mode)
        return conf

    def test_a_shared_config_file_holding_a_credential_is_refused(self):
        # --help answers after the whole configuration is read and checked,
        # so a refusal shows without starting anything.
        for key, line, secret in [
                ("redis", "redis = redis://:pw-3141@127.0.0.1:6379/2\n",
                 "pw-3141"),
                ("redis", "redis = redis+sentinel://ag:pw-2718@s1:26379,"
                 "s2:26379/mymaster\n", "pw-2718"),
                ("webhook-url", "webhook-url = https://hooks:pw-1618@"
                 "hooks.example/in\nwebhook-secret-file = /x\n",
                 "pw-1618")]:
            for mode in (0o644, 0o640, 0o604):
                with self.subTest(key=key, mode=oct(mode)):
                    conf = self.config_with("# shared\n" + line, mode)
                    r = run(self.base() + ["--config", conf, "--help"])
                    self.assertEqual(r.returncode, 2, r.stderr)
                    lines = r.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, r.stderr)
                    self.assertIn(conf, lines[0])
                    self.assertIn("line 2", lines[0])
                    self.assertIn(" %s " % key, lines[0])
                    self.assertNotIn(secret, r.stderr)
            with self.subTest(key=key, mode="0600"):
                conf = self.config_with("# private\n" + line, 0o600)
                r = run(self.base() + ["--config", conf, "--help"])
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_shared_config_file_without_a_credential_is_taken(self):
        # A user alone is an ACL user whose password is in its own file;
        # a path names where a secret is, not the secret.
        conf = self.config_with(
            "redis = redis://ag@127.0.0.1:6379\n"
            "redis-password-file = /etc/abuseguard/redis.password\n"
            "admin-token-file = /etc/abuseguard/admin.token\n", 0o644)
        r = run(self.base() + ["--config", conf, "--help"])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_webhook_urls_that_can_never_work_are_refused(self):
        # Each of these started the service, whose every delivery then
        # failed until the events aged out an hour later.
        hook_key = make_secret(self.dir, name="webhook.key")
        for url in ["http://u:pw-5813@/x", "http://u:pw-5813@[::1/x",
                    "http://u:pw-5813@127.0.0.1:0/x",
                    "http://u:pw-5813@127.0.0.1:99999/x",
                    "http://u:pw-5813@127.0.0.1/x\nX-Injected:1",
                    "http://u:pw-5813@127.0.0.1/x\r",
                    "http:///x", "ftp://127.0.0.1/x", "127.0.0.1:8080/x"]:
            with self.subTest(url=url):
                r = run(self.base() + ["--webhook-secret-file", hook_key,
                                       "--webhook-url", url])
                self.assertEqual(r.returncode, 2, r.stderr)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn("--webhook-url", lines[0])
                self.assertNotIn("pw-5813", r.stderr)

    def test_a_redis_url_that_can_never_connect_is_refused(self):
        # It started, and stayed unready for ever.
        for url in ["redis://u:pw-4669@[::1:16379",
                    "redis://u:pw-4669@[::1]]:16379",
                    "redis://u:pw-4669@[not-v6]:16379",
                    "redis://u:pw-4669@ca[che:16379",
                    "rediss://:pw-4669@cache\n:16379",
                    "redis+sentinel://:pw-4669@s1:26379,[::1:26380/m",
                    "redis+cluster://:pw-4669@n1:7000,n[2:7001"]:
            with self.subTest(url=url):
                r = run(self.base() + ["--redis", url])
                self.assertEqual(r.returncode, 2, r.stderr)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn("--redis", lines[0])
                self.assertNotIn("pw-4669", r.stderr)

    def test_max_conns_over_the_hard_open_files_limit_is_refused(self):
        def low_hard_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
        r = run(self.base() + ["--max-conns", "5000"],
                preexec_fn=low_hard_limit)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("--max-conns 5000", lines[0])
        self.assertIn("hard limit (ulimit -Hn) is 1024", lines[0])

    def test_redis_password_does_not_appear_in_errors(self):
        r = run(self.base() + ["--redis", "redis://:hunter2@host"])
        self.assertEqual(r.returncode, 2)
        self.assertNotIn("hunter2", r.stderr)


class StartupTest(ServiceTest):
    def test_database_is_created_migrated_and_seeded_once(self):
        db = self.workdir + "/sub/policies.db"
        svc = self.service(db=db)
        self.assertEqual(svc.stop(), 0)
        self.services.remove(svc)
        con = sqlite3.connect(db)
        names = [r[0] for r in con.execute(
            "SELECT name FROM policies ORDER BY name")]
        with open(os.path.join(os.path.dirname(__file__), "..", "..",
                               "policies", "default.json")) as f:
            shipped = sorted(p["name"] for p in json.load(f)["policies"])
        self.assertEqual(names, shipped)
        self.assertIn("login.user_ip", names)
        self.assertGreaterEqual(
            con.execute("SELECT max(version) FROM schema_version")
            .fetchone()[0], 1)
        # An emptied database stays empty on the next start: seeding is
        # for new databases only.
        con.execute("DELETE FROM policies")
        con.commit()
        con.close()
        svc = self.service(db=db)
        r = self.login(svc, "a@example.com", "203.0.113.7")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["decisions"], [])

    def test_seed_dir_replaces_the_compiled_in_policies(self):
        seed = self.workdir + "/seed"
        os.mkdir(seed)
        with open(seed + "/only.json", "w") as f:
            f.write('{"policies": [{"name": "login.tight", "endpoint": '
                    '"login", "key": ["user"], "algorithm": "sliding_log", '
                    '"limit": 1, "window_s": 60}]}')
        svc = self.service(extra=["--seed-dir", seed])
        self.assertEqual(self.login(svc, "a@example.com", "1.2.3.4").status,
                         200)
        r = self.login(svc, "a@example.com", "1.2.3.4")
        self.assertEqual(r.status, 429)
        self.assertEqual(r.json["policy"], "login.tight")

    def test_a_config_file_configures_the_service(self):
        token = make_secret(self.workdir, ("tok-" + "f" * 40).encode(),
                            name="admin.token")
        conf = os.path.join(self.workdir, "ag.conf")
        with open(conf, "w") as f:
            f.write("# the admin API, from the file\n"
                    "admin-token-file = %s\n"
                    "max-conns-per-ip = 300\n" % token)
        svc = self.service(extra=["--config", conf])
        r = svc.request("GET", "/admin/policies",
                        headers={"Authorization": "Bearer tok-" + "f" * 40})
        self.assertEqual(r.status, 200, r.raw)

    def test_environment_configures_like_flags(self):
        port = free_port()
        env = dict(os.environ, ABUSEGUARD_LISTEN="127.0.0.1:%d" % port,
                   ABUSEGUARD_REDIS=self.redis.url(),
                   ABUSEGUARD_DB=self.workdir + "/env.db",
                   ABUSEGUARD_SECRET_FILE=self.secret)
        proc = subprocess.Popen([BINARY], env=env, stderr=subprocess.PIPE)
        try:
            ok = False
            for _ in range(200):
                try:
                    with socket.create_connection(("127.0.0.1", port), 1):
                        ok = True
                        break
                except OSError:
                    time.sleep(0.05)
            self.assertTrue(ok, "service did not listen on the env port")
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0)

    def test_readyz_follows_redis_and_healthz_does_not(self):
        svc = self.service()
        self.assertEqual(svc.request("GET", "/readyz").status, 200)
        self.redis.stop()
        r = svc.request("GET", "/readyz")
        self.assertEqual(r.status, 503)
        self.assertEqual(svc.request("GET", "/healthz").status, 200)
        self.redis.start()
        # Back within the circuit breaker's probe interval (at most 1 s),
        # or a few seconds on a loaded machine.
        self.assertTrue(wait_until(
            lambda: svc.request("GET", "/readyz").status == 200, 5.0))

        self.assertEqual(self.login(svc, "a@example.com", "1.2.3.4").status,
                         200)

    def test_soft_open_files_limit_is_raised_for_max_conns(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 2000:
            self.skipTest("hard open-files limit %d is below 2000" % hard)
        # The service inherits this test's limits.
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE,
                        (soft, hard))
        svc = self.service(extra=["--max-conns", "1500"])
        self.assertGreater(open_files_limit(svc.proc.pid), 1500)
        self.assertEqual(svc.request("GET", "/healthz").status, 200)

    def acl_redis(self):
        """A Redis whose ACL user ag may touch only ag:* keys."""
        redis = Redis(self.workdir, extra=[
            "--user", "ag", "on", ">ag-pass-4711", "~ag:*", "+@all"])
        self.addCleanup(redis.stop)
        return redis

    def test_acl_user_from_the_url_or_a_password_file(self):
        redis = self.acl_redis()
        pw_file = make_secret(self.workdir, b"ag-pass-4711\n",
                              name="redis.pw")
        for name, url, extra in [
                ("url", "redis://ag:ag-pass-4711@127.0.0.1:%d" % redis.port,
                 []),
                ("file", "redis://ag:wrong@127.0.0.1:%d" % redis.port,
                 ["--redis-password-file", pw_file]),
                ("user-only", "redis://ag@127.0.0.1:%d" % redis.port,
                 ["--redis-password-file", pw_file])]:
            with self.subTest(name):
                svc = Service(self.workdir, url, secret=self.secret,
                              db=self.workdir + "/%s.db" % name, name=name,
                              extra=extra)
                self.services.append(svc)
                r = self.login(svc, "acl-%s@example.com" % name, "1.2.3.4")
                self.assertEqual(r.status, 200)
                self.assertNotIn("degraded", r.json)
                self.assertEqual(svc.request("GET", "/readyz").status, 200)
        # Every key the checks wrote is one the ACL allows.
        keys = redis.keys()
        self.assertTrue(keys)
        self.assertTrue(all(k.startswith("ag:") for k in keys), keys)

    def test_an_acl_user_without_the_channels_keeps_them_off(self):
        # ~ag:* +@all grants no pub/sub channel (Redis 7 resets channels
        # for a new user): each subscription is refused and logged with the
        # channel's name, and the deny cache stays off (the fleet follows
        # by its poll); &ag::deny-cache and &ag::fleet:* turn them on.
        for name, channel in (("nochan", []),
                              ("chan", ["&ag::deny-cache", "&ag::fleet:*"])):
            with self.subTest(name):
                redis = Redis(self.workdir, extra=[
                    "--user", "ag", "on", ">ag-pass-4711", "~ag:*",
                    *channel, "+@all"])
                self.addCleanup(redis.stop)
                svc = Service(
                    self.workdir,
                    "redis://ag:ag-pass-4711@127.0.0.1:%d" % redis.port,
                    secret=self.secret, db=self.workdir + "/%s.db" % name,
                    name=name)
                self.services.append(svc)
                for sub, chan in (("deny_cache", "ag::deny-cache"),
                                  ("fleet", "ag::fleet:main")):
                    if channel:
                        self.assertTrue(wait_until(
                            lambda: '"%s_subscribed"' % sub in
                            svc.log_text(), 10), svc.log_text())
                        self.assertNotIn("NOPERM", svc.log_text())
                        continue
                    self.assertTrue(wait_until(
                        lambda: any(
                            '"%s_subscribe"' % sub in line and
                            "NOPERM" in line and
                            "grant the ACL user the channel (&%s)" % chan
                            in line
                            for line in svc.log_text().splitlines()),
                        10), svc.log_text())
                    self.assertNotIn('"%s_subscribed"' % sub, svc.log_text())

    def test_wrong_redis_password_is_degraded_and_logged_without_it(self):
        redis = self.acl_redis()
        svc = Service(self.workdir,
                      "redis://ag:not-the-pass-93@127.0.0.1:%d" % redis.port,
                      secret=self.secret, db=self.workdir + "/w.db",
                      name="wrongpass", extra=["--redis-timeout-ms", "5000"])
        self.services.append(svc)
        # WRONGPASS comes at once: no wait for the 5 s timeout, however
        # loaded the machine (which could make a shorter one time out
        # before Redis's answer).
        start = time.monotonic()
        r = self.login(svc, "a@example.com", "1.2.3.4")
        self.assertLess(time.monotonic() - start, 2.5)
        self.assertEqual(r.status, 200)
        self.assertTrue(r.json.get("degraded"), r.json)
        self.assertEqual(svc.request("GET", "/readyz").status, 503)
        log = svc.log_text()
        self.assertIn("WRONGPASS", log)
        self.assertNotIn("not-the-pass-93", log)
        self.assertNotIn("not-the-pass-93",
                         svc.request("GET", "/metrics").raw.decode())

    def test_unix_socket_redis(self):
        sock = self.workdir + "/redis.sock"
        proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", sock,
             "--save", "", "--appendonly", "no", "--dir", self.workdir],
            stdout=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_until(lambda: os.path.exists(sock)),
                            "redis-server made no socket")
            svc = Service(self.workdir, "unix://" + sock, secret=self.secret,
                          db=self.workdir + "/u.db", name="unix")
            self.services.append(svc)
            r = self.login(svc, "a@example.com", "1.2.3.4")
            self.assertEqual(r.status, 200)
            # Counted in the unix-socket Redis, not answered degraded.
            self.assertNotIn("degraded", r.json)
            self.assertEqual(self.decision(r, "login.user_ip")["remaining"],
                             4)

        finally:
            for s in self.services:
                s.stop()
            self.services = []
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    unittest.main()
