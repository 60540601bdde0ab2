# SPDX-License-Identifier: Apache-2.0
"""Webhook signatures (issue 29): the time is signed with the body, each
try at its own time, and the docs' two recipes verify a delivery and
refuse it replayed, re-timed or forged."""
import hashlib
import hmac
import socket
import time
import unittest

from harness import wait_until
from test_events import USER, EventsBase
from webhook_recipes import shell_verified, sign, signature_ok


class WebhookSignatureTest(EventsBase):
    def test_a_replayed_or_forged_delivery_fails_both_recipes(self):
        # The negative controls of the docs' recipes, on a delivery the
        # service made: each verifies it, and refuses it once its time is
        # altered (the MAC no longer matches), once it is re-signed with
        # a time past the 5 minutes (a replay the key's holder could
        # make), with another key or body, or in the old body-only form.
        hook = self.receiver()
        svc = self.start([hook])
        self.reset(svc, USER)
        self.assertTrue(wait_until(lambda: hook.events(), 10.0))
        body, header, ok = hook.posts[0]
        self.assertTrue(ok)
        self.assertRegex(header, r"^t=\d+,v1=[0-9a-f]{64}$")
        t = int(header[2:header.index(",")])
        self.assertLessEqual(abs(time.time() - t), 60)
        v1 = header.split(",v1=")[1]
        key = self.hook_key
        forged = {
            "the time altered": "t=%d,v1=%s" % (t + 1, v1),
            "the time altered in form": "t=0%d,v1=%s" % (t, v1),
            "re-signed 6 minutes ago": sign(key, t - 360, body),
            "re-signed 6 minutes ahead": sign(key, t + 360, body),
            "another key": sign(b"other" * 8, t, body),
            "the old body-only form": "sha256=" + hmac.new(
                key, body, hashlib.sha256).hexdigest(),
            "no time": "v1=" + v1,
            "no v1": "t=%d" % t,
            "empty": ""}
        self.assertTrue(signature_ok(key, body, header))
        self.assertTrue(shell_verified(self.workdir, key, body, header))
        self.assertTrue(signature_ok(key, body, sign(key, t - 240, body)))
        self.assertFalse(signature_ok(key, body + b" ", header))
        self.assertFalse(shell_verified(self.workdir, key, body + b" ",
                                        header))
        self.assertFalse(signature_ok(key, body, None))
        for what, bad in forged.items():
            with self.subTest(what):
                self.assertFalse(signature_ok(key, body, bad))
                self.assertFalse(shell_verified(self.workdir, key, body, bad))
        # And the receiver refuses one over the wire: nothing is taken.
        conn = socket.create_connection(("127.0.0.1", hook.port), 5)
        bad = forged["the time altered"].encode()
        conn.sendall(b"POST /hook HTTP/1.1\r\nHost: x\r\n"
                     b"X-Abuseguard-Signature: " + bad +
                     b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        self.assertIn(b" 401 ", conn.recv(1024))
        conn.close()
        self.assertEqual(len(hook.events()), 1)

    def test_each_try_is_signed_with_its_own_time(self):
        # As Stripe does: a retry after an outage longer than the
        # receiver's tolerance must not be refused as a replay. The tries
        # come 0.5, 1 and 2 s apart at least (the backoff is a wait, not
        # a deadline), so the fourth is signed 3 s or more after the
        # first, however loaded the machine.
        hook = self.receiver()
        hook.status = 503
        svc = self.start([hook])
        self.reset(svc, USER)
        self.assertTrue(wait_until(lambda: hook.refused >= 4, 60.0))
        hook.status = 200
        self.assertTrue(wait_until(lambda: hook.events(), 60.0))
        with hook.lock:
            posts = list(hook.posts)
        self.assertGreaterEqual(len(posts), 5)
        self.assertEqual({body for body, _, _ in posts}, {posts[0][0]})
        self.assertTrue(all(ok for _, _, ok in posts), posts)
        times = [int(h[2:h.index(",")]) for _, h, _ in posts]
        self.assertEqual(times, sorted(times))
        self.assertGreaterEqual(times[3] - times[0], 3, times)


if __name__ == "__main__":
    unittest.main()
