# SPDX-License-Identifier: Apache-2.0
"""The helpers that need no client: fingerprints (from the shared vectors
file), client_ip, the device cookie, webhook signatures."""

import email
import hashlib
import hmac
import ipaddress
import json
import os
import unittest

from abuseguard import (ArgumentError, client_ip, device_cookie,
                        device_cookie_name, device_token_from_cookies,
                        password_fingerprint, verify_webhook)

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "..", "tests", "conformance", "vectors.json")


class PasswordFingerprint(unittest.TestCase):

    def setUp(self):
        with open(VECTORS, encoding="utf-8") as f:
            self.vectors = json.load(f)

    def test_matches_every_shared_vector(self):
        self.assertGreater(len(self.vectors["password_fingerprint"]), 0)
        for v in self.vectors["password_fingerprint"]:
            with self.subTest(password=v["password"]):
                self.assertEqual(password_fingerprint(
                    bytes.fromhex(v["key_hex"]), v["password"]), v["fp"])

    def test_no_unicode_normalisation(self):
        key = bytes(range(32))
        composed, decomposed = "P\u00e4ss", "Pa\u0308ss"
        self.assertNotEqual(password_fingerprint(key, composed),
                            password_fingerprint(key, decomposed))

    def test_a_key_under_32_bytes_is_refused(self):
        for key_hex in self.vectors["short_keys"]:
            with self.subTest(key_hex=key_hex):
                with self.assertRaises(ArgumentError) as caught:
                    password_fingerprint(bytes.fromhex(key_hex), "pw")
                self.assertEqual(caught.exception.argument, "key")

    def test_a_password_with_a_lone_surrogate_is_an_argument_error(self):
        for password in ("\ud800", "pw\udfff", "\udc80x"):
            with self.subTest(password=password):
                with self.assertRaises(ArgumentError) as caught:
                    password_fingerprint(bytes(range(32)), password)
                self.assertEqual(caught.exception.argument, "password")
                self.assertIsInstance(caught.exception, ValueError)


class ClientIp(unittest.TestCase):
    TRUSTED = ["10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.1"]

    def ip(self, remote, headers, trusted=None, header="x-forwarded-for"):
        return client_ip(remote, headers,
                         self.TRUSTED if trusted is None else trusted,
                         header)

    def test_an_untrusted_peer_is_the_answer_whatever_the_header(self):
        self.assertEqual(self.ip("203.0.113.7",
                                 {"X-Forwarded-For": "198.51.100.1"}),
                         "203.0.113.7")

    def test_no_trusted_proxies_means_the_peer(self):
        self.assertEqual(self.ip("10.0.0.1", {"x-forwarded-for": "1.2.3.4"},
                                 trusted=[]), "10.0.0.1")

    def test_walks_from_the_right_skipping_trusted_proxies(self):
        self.assertEqual(self.ip("10.0.0.1", {
            "X-Forwarded-For": "6.6.6.6, 198.51.100.9, 10.1.1.1, 192.0.2.1"}),
            "198.51.100.9")

    def test_all_trusted_is_the_leftmost(self):
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "10.9.9.9, 10.1.1.1"}), "10.9.9.9")

    def test_no_header_behind_a_trusted_proxy_is_the_peer(self):
        self.assertEqual(self.ip("10.0.0.1", {}), "10.0.0.1")
        self.assertEqual(self.ip("10.0.0.1", {"x-forwarded-for": " "}),
                         "10.0.0.1")

    def test_garbage_ends_the_walk_at_the_last_trusted_address(self):
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9, nonsense, 10.1.1.1"}),
            "10.1.1.1")
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9, unknown"}), "10.0.0.1")
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9, 1.2.3.4:x"}), "10.0.0.1")

    def test_empty_list_elements_are_skipped(self):
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9,, 10.1.1.1,"}), "198.51.100.9")
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": ["198.51.100.9", " ", "10.1.1.1"]}),
            "198.51.100.9")

    def test_an_empty_forwarded_for_ends_the_walk(self):
        # An empty for= is a value that is no address, as "unknown" is:
        # the Go and Node.js clients stop there too.
        for empty in ("", '""', " "):
            with self.subTest(empty=empty):
                self.assertEqual(self.ip("10.0.0.1", {
                    "forwarded": "for=198.51.100.9, for=%s, for=10.1.1.1"
                    % empty}, header="forwarded"), "10.1.1.1")
        self.assertEqual(self.ip("10.0.0.1", {"forwarded": "for="},
                                 header="forwarded"), "10.0.0.1")
        # An element without for= adds no entry: the walk goes on.
        self.assertEqual(self.ip("10.0.0.1", {
            "forwarded": "for=198.51.100.9, proto=https, for=10.1.1.1"},
            header="forwarded"), "198.51.100.9")

    def test_a_zone_is_stripped(self):
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "fe80::1%eth0"}), "fe80::1")
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "[fe80::1%eth0]:4711"}), "fe80::1")
        self.assertEqual(self.ip("fe80::7%eth0", {}), "fe80::7")
        self.assertEqual(self.ip("fe80::7%eth0", {
            "x-forwarded-for": "198.51.100.9"}, trusted=["fe80::/64"]),
            "198.51.100.9")
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9, fe80::1%eth0, 10.1.1.1"},
            trusted=["10.0.0.0/8", "fe80::/64"]), "198.51.100.9")

    def test_a_trusted_proxy_written_ipv4_mapped_matches_ipv4(self):
        for trusted in (["::ffff:10.0.0.1"], ["::ffff:10.0.0.0/104"],
                        ["::ffff:a00:1/128"], ["::ffff:0:0/96"],
                        [ipaddress.ip_network("::ffff:10.0.0.0/104")]):
            with self.subTest(trusted=trusted):
                self.assertEqual(self.ip("10.0.0.1", {
                    "x-forwarded-for": "198.51.100.9"}, trusted=trusted),
                    "198.51.100.9")
                self.assertEqual(self.ip("::ffff:10.0.0.1", {
                    "x-forwarded-for": "198.51.100.9"}, trusted=trusted),
                    "198.51.100.9")
        # Walking: a mapped trusted range skips the IPv4 proxies in it.
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9, 10.1.1.1"},
            trusted=["::ffff:10.0.0.0/104"]), "198.51.100.9")
        # Not a mapped range: no IPv4 address is in it.
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "198.51.100.9"}, trusted=["::/0"]),
            "10.0.0.1")

    def test_ports_are_decimal_up_to_5_digits_or_obfuscated(self):
        for entry, want in {"198.51.100.9:_hidden": "198.51.100.9",
                            "[2001:db8::1]:_a.b-c": "2001:db8::1",
                            "198.51.100.9:65535": "198.51.100.9"}.items():
            with self.subTest(entry=entry):
                self.assertEqual(self.ip("10.0.0.1",
                                         {"x-forwarded-for": entry}), want)
        for entry in ("198.51.100.9:123456", "[2001:db8::1]:_",
                      "198.51.100.9:_a b", "198.51.100.9:"):
            with self.subTest(entry=entry):
                self.assertEqual(self.ip("10.0.0.1", {
                    "x-forwarded-for": "6.6.6.6, " + entry}), "10.0.0.1")

    def test_ports_brackets_and_mapped_ipv4_are_stripped(self):
        cases = {"198.51.100.9:4711": "198.51.100.9",
                 "[2001:db8::1]:4711": "2001:db8::1",
                 "[2001:db8::1]": "2001:db8::1",
                 "2001:DB8:0::1": "2001:db8::1",
                 "::ffff:198.51.100.9": "198.51.100.9",
                 "[::ffff:198.51.100.9]:80": "198.51.100.9"}
        for entry, want in cases.items():
            with self.subTest(entry=entry):
                self.assertEqual(self.ip("10.0.0.1",
                                         {"x-forwarded-for": entry}), want)

    def test_a_mapped_peer_is_compared_as_ipv4(self):
        self.assertEqual(self.ip("::ffff:10.0.0.1",
                                 {"x-forwarded-for": "198.51.100.9"}),
                         "198.51.100.9")
        self.assertEqual(self.ip("::ffff:203.0.113.7", {}), "203.0.113.7")

    def test_ipv6_proxies(self):
        self.assertEqual(self.ip("2001:db8:ffff::5", {
            "x-forwarded-for": "2001:db8:1::7, 2001:db8:ffff::9"}),
            "2001:db8:1::7")

    def test_several_header_lines_join_with_commas(self):
        headers = [("X-Forwarded-For", "198.51.100.9"),
                   ("X-Forwarded-For", "10.1.1.1")]
        self.assertEqual(self.ip("10.0.0.1", headers), "198.51.100.9")
        message = email.message_from_string(
            "X-Forwarded-For: 6.6.6.6\nX-Forwarded-For: 198.51.100.9\n\n")
        self.assertEqual(self.ip("10.0.0.1", message), "198.51.100.9")
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": ["6.6.6.6", "198.51.100.9, 10.1.1.1"]}),
            "198.51.100.9")

    def test_forwarded_reads_every_for_of_every_element(self):
        headers = {"Forwarded": 'for=6.6.6.6;proto=https, '
                                'for="[2001:db8::1]:4711";by=10.0.0.1, '
                                'For=10.1.1.1;host="a,b;for=7.7.7.7"'}
        self.assertEqual(self.ip("10.0.0.1", headers, header="forwarded"),
                         "2001:db8::1")
        self.assertEqual(self.ip("10.0.0.1", {"forwarded":
                                              "for=198.51.100.9:80"},
                                 header="Forwarded"), "198.51.100.9")

    def test_forwarded_obfuscated_and_unknown_end_the_walk(self):
        for hidden in ("_hidden", "unknown", '"_x"'):
            with self.subTest(hidden=hidden):
                self.assertEqual(self.ip("10.0.0.1", {
                    "forwarded": "for=198.51.100.9, for=%s, for=10.1.1.1"
                    % hidden}, header="forwarded"), "10.1.1.1")

    def test_only_the_header_named_is_read(self):
        self.assertEqual(self.ip("10.0.0.1", {
            "x-forwarded-for": "6.6.6.6",
            "forwarded": "for=198.51.100.9"}, header="forwarded"),
            "198.51.100.9")

    def test_a_trusted_proxy_that_is_no_cidr_is_refused(self):
        with self.assertRaises(ArgumentError) as caught:
            self.ip("10.0.0.1", {}, trusted=["10.0.0.0/33"])
        self.assertEqual(caught.exception.argument, "trusted_proxies")


class DeviceCookie(unittest.TestCase):
    USER = "ana@example.com"
    NAME = "ag_device_" + hashlib.sha256(
        b"abuseguard-device:ana@example.com").hexdigest()[:16]

    def test_name_is_per_account(self):
        self.assertEqual(device_cookie_name(self.USER), self.NAME)
        self.assertNotEqual(device_cookie_name("bob@example.com"), self.NAME)
        self.assertEqual(len(device_cookie_name("\u00e5sa")), 26)

    def test_set_cookie_header(self):
        name, header = device_cookie(self.USER, "v1.AbC-_x", 7776000)
        self.assertEqual(name, self.NAME)
        self.assertEqual(header, self.NAME + "=v1.AbC-_x; Max-Age=7776000; "
                         "Path=/; HttpOnly; SameSite=Lax; Secure")
        _, plain = device_cookie(self.USER, "v1.x", 60, secure=False)
        self.assertEqual(plain, self.NAME + "=v1.x; Max-Age=60; Path=/; "
                         "HttpOnly; SameSite=Lax")

    def test_a_user_id_with_a_lone_surrogate_is_an_argument_error(self):
        for call in (lambda: device_cookie_name("ana\ud800"),
                     lambda: device_cookie("\udfff", "v1.x", 60),
                     lambda: device_token_from_cookies("a=b", "\ud800")):
            with self.assertRaises(ArgumentError) as caught:
                call()
            self.assertEqual(caught.exception.argument, "user_id")

    def test_a_token_that_would_inject_attributes_is_refused(self):
        for token in ("v1.x; Domain=evil", "v1.x\r\nX: y", "", "a b"):
            with self.subTest(token=token):
                with self.assertRaises(ArgumentError):
                    device_cookie(self.USER, token, 60)

    def test_token_from_cookies(self):
        header = "theme=dark; %s=v1.tok; ag_device_0000000000000000=v1.bob" \
            % self.NAME
        self.assertEqual(device_token_from_cookies(header, self.USER),
                         "v1.tok")
        self.assertEqual(device_token_from_cookies('%s="v1.q"' % self.NAME,
                                                   self.USER), "v1.q")
        self.assertIsNone(device_token_from_cookies(header, "bob@x.org"))
        self.assertIsNone(device_token_from_cookies(None, self.USER))
        self.assertIsNone(device_token_from_cookies("", self.USER))
        self.assertIsNone(device_token_from_cookies(self.NAME + "=",
                                                    self.USER))


class VerifyWebhook(unittest.TestCase):
    SECRET = b"k" * 32
    BODY = b'{"id":"1-0","type":"login_denied"}'
    NOW = 1_760_000_000

    def sign(self, t, body=BODY, secret=SECRET):
        mac = hmac.new(secret, b"%d." % t + body, hashlib.sha256).hexdigest()
        return "t=%d,v1=%s" % (t, mac)

    def test_a_good_signature(self):
        self.assertTrue(verify_webhook(self.SECRET, self.BODY,
                                       self.sign(self.NOW), now=self.NOW))
        self.assertTrue(verify_webhook(self.SECRET, self.BODY.decode(),
                                       self.sign(self.NOW - 300),
                                       now=self.NOW))

    def test_a_bad_mac(self):
        for header in (self.sign(self.NOW, body=self.BODY + b" "),
                       self.sign(self.NOW, secret=b"x" * 32),
                       self.sign(self.NOW).replace("v1=", "v1=0")[:-1]):
            with self.subTest(header=header):
                self.assertFalse(verify_webhook(self.SECRET, self.BODY,
                                                header, now=self.NOW))

    def test_a_time_beyond_the_tolerance(self):
        self.assertFalse(verify_webhook(self.SECRET, self.BODY,
                                        self.sign(self.NOW - 301),
                                        now=self.NOW))
        self.assertFalse(verify_webhook(self.SECRET, self.BODY,
                                        self.sign(self.NOW + 301),
                                        now=self.NOW))
        self.assertTrue(verify_webhook(self.SECRET, self.BODY,
                                       self.sign(self.NOW - 301),
                                       now=self.NOW, tolerance=400))

    def test_malformed_headers(self):
        good = self.sign(self.NOW)
        mac = good.split("v1=")[1]
        for header in ("", "garbage", "v1=" + mac, "t=%d" % self.NOW,
                       "t=abc,v1=" + mac, "t=-5,v1=" + mac,
                       "t=%d,t=%d,v1=%s" % (self.NOW, self.NOW, mac),
                       "t=%d,v1=%s" % (self.NOW, mac[:-2]),
                       "t=%d,v1=zz%s" % (self.NOW, mac[2:]),
                       "t=%d,v1" % self.NOW, "sha256=" + mac, None):
            with self.subTest(header=header):
                self.assertFalse(verify_webhook(self.SECRET, self.BODY,
                                                header, now=self.NOW))

    def test_spaces_around_the_commas_are_malformed(self):
        # The service writes none, and the Go and Node.js clients take
        # the header byte for byte: so does this one.
        t, mac = self.NOW, self.sign(self.NOW).split("v1=")[1]
        for header in ("t=%d, v1=%s" % (t, mac), "t=%d ,v1=%s" % (t, mac),
                       " t=%d,v1=%s" % (t, mac), "t=%d,v1=%s " % (t, mac),
                       "t= %d,v1=%s" % (t, mac)):
            with self.subTest(header=header):
                self.assertFalse(verify_webhook(self.SECRET, self.BODY,
                                                header, now=self.NOW))

    def test_a_str_body_with_a_lone_surrogate_is_false(self):
        self.assertFalse(verify_webhook(self.SECRET, "{\ud800}",
                                        self.sign(self.NOW), now=self.NOW))

    def test_upper_case_hex_and_another_v1_beside_it(self):
        t, mac = self.NOW, self.sign(self.NOW).split("v1=")[1]
        self.assertTrue(verify_webhook(self.SECRET, self.BODY,
                                       "t=%d,v1=%s" % (t, mac.upper()),
                                       now=self.NOW))
        self.assertTrue(verify_webhook(self.SECRET, self.BODY,
                                       "t=%d,v1=%s,v1=%s" % (t, "0" * 64,
                                                             mac),
                                       now=self.NOW))


if __name__ == "__main__":
    unittest.main()
