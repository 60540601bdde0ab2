# SPDX-License-Identifier: Apache-2.0
"""Redis over TLS (rediss://) as an ACL user: a throwaway CA and server
certificate made with the openssl command, a redis-server with a TLS port
(and a plain one, for the test's own assertions), and real service
processes. Every failure must leave the service running and answering
degraded, with one clear line in its log and never the password."""
import json
import os
import subprocess
import time
import unittest

from harness import Redis, Service, ServiceTest, free_port, wait_until

USER = "ag"
PASSWORD = "tls-test-pass-7f3a"  # must never appear in a log
TIMEOUT_S = 3.0  # --redis-timeout-ms of every TLS service here


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=" + name, "-keyout", name + ".key",
            "-out", name + ".crt", cwd=d)
    return os.path.join(d, name + ".crt")


def make_cert(d, name, ca, serial, ext):
    """A certificate for name signed by ca, with the extensions ext."""
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-subj", "/CN=" + name, "-keyout", name + ".key",
            "-out", name + ".csr", cwd=d)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt",
            "-CAkey", ca + ".key", "-set_serial", str(serial), "-days", "2",
            "-extfile", name + ".ext", "-out", name + ".crt", cwd=d)
    return os.path.join(d, name + ".crt"), os.path.join(d, name + ".key")


class TlsRedis(Redis):
    """A redis-server with a TLS port besides its plain one (the plain one
    is the test's, for PING and assertions; the service gets the TLS one),
    and the ACL user the service logs in as."""

    def __init__(self, workdir, certs, auth_clients):
        self.tls_port = free_port()
        os.makedirs(workdir, exist_ok=True)
        super().__init__(workdir, extra=[
            "--tls-port", str(self.tls_port),
            "--tls-cert-file", certs["server_crt"],
            "--tls-key-file", certs["server_key"],
            "--tls-ca-cert-file", certs["ca"],
            "--tls-auth-clients", "yes" if auth_clients else "no",
            # Every key the service touches starts with "ag:" (the probe's
            # is ag::probe); functions and scripts are no keys. The
            # channels are docs/operations.md's: without ag::deny-cache
            # the deny cache's subscriber is refused and tries again now
            # and then, on a connection that can appear mid-test.
            "--user", USER, "on", ">" + PASSWORD, "~ag:*",
            "&ag::deny-cache", "&ag::fleet:*", "+@all"])

    def tls_url(self, user=USER, password=PASSWORD, host="127.0.0.1"):
        return "rediss://%s:%s@%s:%d" % (user, password, host, self.tls_port)

    def clients(self):
        """CLIENT LIST as a list of {field: value}."""
        return [dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
                for line in self.cmd("CLIENT", "LIST").splitlines()]


class RedisTlsTest(ServiceTest):
    def setUp(self):
        super().setUp()
        d = os.path.join(self.workdir, "pki")
        os.mkdir(d)
        make_ca(d, "ca")
        self.other_ca = make_ca(d, "other-ca")
        server_crt, server_key = make_cert(
            d, "server", "ca", 2,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        self.client_crt, self.client_key = make_cert(
            d, "client", "ca", 3,
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
        self.certs = {"ca": os.path.join(d, "ca.crt"),
                      "server_crt": server_crt, "server_key": server_key}

    def tls_redis(self, auth_clients=False):
        r = TlsRedis(os.path.join(self.workdir, "tls"), self.certs,
                     auth_clients)
        self.addCleanup(r.stop)
        return r

    def tls_service(self, url, ca=None, extra=(), name="tls"):
        svc = Service(self.workdir, url, secret=self.secret,
                      db=os.path.join(self.workdir, name + ".db"), name=name,
                      extra=["--redis-tls-ca-file", ca or self.certs["ca"],
                             "--redis-timeout-ms", str(int(TIMEOUT_S * 1000)),
                             *extra])
        self.services.append(svc)
        return svc

    def log_msgs(self, svc, event):
        """The msg of every line of svc's log with event."""
        msgs = []
        for line in svc.log_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == event:
                msgs.append(rec.get("msg", ""))
        return msgs

    def service_clients(self, redis):
        """The ids of the connections the service holds (its user's)."""
        return sorted(c["id"] for c in redis.clients()
                      if c.get("user") == USER)

    def check_clients(self, redis):
        """Those of them the checks use: not a subscriber, nor the fleet's
        own connection (named abuseguard-fleet), which heartbeats on its
        own schedule."""
        return sorted(c["id"] for c in redis.clients()
                      if c.get("user") == USER and c.get("sub") == "0" and
                      c.get("name") != "abuseguard-fleet")

    def assert_counted(self, svc, redis):
        r = self.login(svc, "a@example.com", "1.2.3.4")
        self.assertEqual(r.status, 200)
        self.assertNotIn("degraded", r.json)
        self.assertEqual(self.decision(r, "login.user_ip")["remaining"], 4)
        self.assertTrue(any(k.startswith("ag:login.user_ip:")
                            for k in redis.keys()), redis.keys())
        self.assertEqual(svc.request("GET", "/readyz").status, 200)

    def assert_degraded(self, svc, event, needle, timeouts=0):
        """svc runs but cannot use Redis: /readyz 503, a check answered
        degraded within the timeouts it meets (a failure that is no timeout
        costs next to nothing), and a log line (under event) holding
        needle; the password nowhere in the log. Returns that line."""
        self.assertTrue(wait_until(
            lambda: svc.request("GET", "/readyz").status == 503, 10.0))
        started = time.monotonic()
        r = self.login(svc, "b@example.com", "1.2.3.4")
        took = time.monotonic() - started
        self.assertEqual(r.status, 200)
        self.assertIn("degraded", r.json)
        # Less than one more timeout than it meets: the rest of one is
        # what a loaded machine may add.
        self.assertLess(took, (timeouts + 0.75) * TIMEOUT_S)
        self.assertTrue(wait_until(
            lambda: any(needle in m for m in self.log_msgs(svc, event)),
            10.0), svc.log_text())
        self.assertNotIn(PASSWORD, svc.log_text())
        return next(m for m in self.log_msgs(svc, event) if needle in m)

    def test_checks_are_counted_over_tls_as_the_acl_user(self):
        redis = self.tls_redis()
        svc = self.tls_service(redis.tls_url(), extra=["--threads", "2"])
        self.assert_counted(svc, redis)
        # TLS 1.3 session tickets make an idle connection readable; they
        # must not pass for a closed one, or every batch would reconnect.
        self.open_every_connection(svc)
        before = self.check_clients(redis)
        for i in range(20):
            r = self.login(svc, "c%d@example.com" % i, "1.2.3.4")
            self.assertNotIn("degraded", r.json)
        self.assertEqual(self.check_clients(redis), before,
                         [(c["id"], c["cmd"], c["sub"], c["age"])
                          for c in redis.clients()])
        # Each check loop's lane (two: --threads 2), and the dispatchers
        # (AG_REDIS_PIPE_DISPATCHERS, two) that the synchronous calls
        # opened, if any did; beside them the fleet's own connection and
        # two subscribers: the fleet's channel and the deny cache's.
        self.assertTrue(2 <= len(before) <= 4, before)
        mine = [c for c in redis.clients() if c.get("user") == USER]
        self.assertEqual(len([c for c in mine if c.get("sub") != "0"]), 2,
                         mine)
        self.assertEqual(len([c for c in mine
                              if c.get("name") == "abuseguard-fleet"]), 1,
                         mine)
        # The service's connections are the ACL user's, on the TLS port.
        mine = [c for c in redis.clients() if c.get("user") == USER]
        self.assertTrue(mine, redis.clients())
        for c in mine:
            self.assertTrue(c["laddr"].endswith(":%d" % redis.tls_port), c)
        self.assertNotIn(PASSWORD, svc.log_text())

    def test_server_name_localhost_verifies_against_the_dns_name(self):
        redis = self.tls_redis()
        svc = self.tls_service(redis.tls_url(),
                               extra=["--redis-tls-server-name", "localhost"])
        self.assert_counted(svc, redis)

    def test_wrong_ca_is_one_verify_failed_line_and_degraded(self):
        redis = self.tls_redis()
        svc = self.tls_service(redis.tls_url(), ca=self.other_ca)
        line = self.assert_degraded(svc, "redis_connect",
                                    "certificate verify failed")
        # Redis sends its CA along (OpenSSL completes the chain from its
        # trust store): that CA is unknown to the service, and self-signed.
        self.assertIn(line, [
            "tls: certificate verify failed (self-signed certificate in "
            "certificate chain)",
            "tls: certificate verify failed (unable to get local issuer "
            "certificate)"])
        self.assertEqual(redis.keys(), [])

    def test_wrong_server_name_is_a_hostname_mismatch(self):
        redis = self.tls_redis()
        svc = self.tls_service(redis.tls_url(), extra=[
            "--redis-tls-server-name", "redis.example.org"])
        line = self.assert_degraded(svc, "redis_connect",
                                    "certificate verify failed")
        self.assertEqual(line,
                         "tls: certificate verify failed (hostname mismatch)")

    def test_wrong_password_is_wrongpass_and_never_logged(self):
        redis = self.tls_redis()
        wrong = "wrong-" + PASSWORD
        svc = self.tls_service(redis.tls_url(password=wrong))
        line = self.assert_degraded(svc, "redis_connect", "WRONGPASS")
        self.assertTrue(line.startswith("redis: WRONGPASS"), line)
        self.assertNotIn(wrong, svc.log_text())
        self.assertEqual(redis.keys(), [])

    def test_plaintext_redis_on_a_rediss_url_fails_the_handshake(self):
        # self.redis speaks plain RESP on its port. It takes the
        # ClientHello for an inline command and answers an error (the
        # handshake fails at once) or, with no newline in it, waits for one
        # (the handshake times out): so a check may meet two timeouts, its
        # connection's and, since its command never left, its one retry's.
        url = "rediss://%s:%s@127.0.0.1:%d" % (USER, PASSWORD,
                                               self.redis.port)
        svc = self.tls_service(url)
        line = self.assert_degraded(svc, "redis_connect", "tls: handshake",
                                    timeouts=2)
        self.assertTrue(line.startswith("tls: handshake"), line)
        self.assertEqual(self.redis.keys(), [])

    def test_client_certificate_required_and_given_works(self):
        redis = self.tls_redis(auth_clients=True)
        svc = self.tls_service(redis.tls_url(), extra=[
            "--redis-tls-cert-file", self.client_crt,
            "--redis-tls-key-file", self.client_key], name="withcert")
        self.assert_counted(svc, redis)

    def test_client_certificate_required_and_missing_fails(self):
        redis = self.tls_redis(auth_clients=True)
        svc = self.tls_service(redis.tls_url(), name="nocert")
        # Under TLS 1.3 Redis refuses a client without a certificate after
        # the client's side of the handshake is done: the alert ("tlsv13
        # alert certificate required") reaches the service only if Redis's
        # close does not overtake it, as it can on a loaded machine.
        line = self.assert_degraded(svc, "redis_connect", "")
        self.assertTrue("certificate required" in line or
                        line.startswith("redis: AUTH"), line)
        self.assertEqual(redis.keys(), [])

    def test_missing_ca_file_is_named_and_the_service_runs(self):
        redis = self.tls_redis()
        missing = os.path.join(self.workdir, "no-such-ca.crt")
        svc = self.tls_service(redis.tls_url(), ca=missing)
        line = self.assert_degraded(svc, "redis_tls", "tls: CA file")
        self.assertEqual(line, "tls: CA file '%s': No such file or directory"
                         % missing)


if __name__ == "__main__":
    unittest.main()
