# SPDX-License-Identifier: Apache-2.0
"""Identity evasion: spellings and addresses an attacker rotates through
must land on one counter. IPv6 addresses count per /64 and group per /48,
with the shipped default policies; Unicode spellings of one user are one
user, and so are the spellings of an address's internationalised domain;
a phone written with its national (trunk) prefix after the calling code
is its E.164 number."""
import os
import random
import unittest

from harness import PolicyTest, ServiceTest, digest, make_secret, policy


def subjects(redis, name):
    """The digests in policy name's Redis keys."""
    return {k.split(":")[2] for k in redis.keys()
            if k.startswith("ag:%s:" % name)}


def random_phones(rng, n):
    """n distinct UK mobile numbers, spread over many number ranges."""
    phones = set()
    while len(phones) < n:
        phones.add("+447%09d" % rng.randrange(10**9))
    return sorted(phones)


def random_host(rng, net64):
    """A random address inside the /64 whose first four groups are net64."""
    return net64 + ":" + ":".join("%x" % rng.randrange(1 << 16)
                                  for _ in range(4))


class Ipv6Test(ServiceTest):
    def test_sixty_sends_from_one_slash64_to_random_numbers_are_limited(self):
        svc = self.service()
        rng = random.Random(15)
        allowed, denied_by = 0, set()
        for phone in random_phones(rng, 60):
            r = self.otp(svc, phone, random_host(rng, "2001:db8:1:2"))
            if r.status == 200:
                allowed += 1
            else:
                self.assertEqual(r.status, 429, r.json)
                denied_by.add(r.json["policy"])
        # otp.ip_phones lets one /64 reach ten numbers a day.
        self.assertEqual(allowed, 10)
        self.assertEqual(denied_by, {"otp.ip_phones"})
        # Another /64 is another client.
        r = self.otp(svc, "+447700900123", "2001:db8:1:3::1")
        self.assertEqual(r.status, 200, r.json)

    def test_rotating_slash64s_inside_one_slash48_trips_ip_prefix(self):
        svc = self.service()
        rng = random.Random(48)
        phones = iter(random_phones(rng, 101))
        sent = 0
        # Five sends per /64 stay under every per-/64 policy; 100 sends in
        # an hour are what otp.ip_prefix allows one /48.
        for net in range(21):
            for _ in range(5):
                if sent == 100:
                    break
                r = self.otp(svc, next(phones),
                             random_host(rng, "2001:db8:5:%x" % net))
                self.assertEqual(r.status, 200, r.json)
                sent += 1
        r = self.otp(svc, next(phones), "2001:db8:5:ffff::1")
        self.assertEqual(r.status, 429, r.json)
        self.assertEqual(r.json["policy"], "otp.ip_prefix")
        r = self.otp(svc, "+447700900123", "2001:db8:6::1")
        self.assertEqual(r.status, 200, r.json)


# One user, spelled seven ways: composed and upper case, composed, NFD,
# fullwidth with a combining accent, a zero-width space inside, NBSP and
# U+3000 around it, and NFD in upper case.
SPELLINGS = [
    "\u00c0NA@Example.com",
    "\u00e0na@example.com",
    "a\u0300na@example.com",
    "\uff41\u0300\uff4e\uff41@example.com",
    "\u00e0n\u200ba@example.com",
    "\u00a0\u00e0na@example.com\u3000",
    "A\u0300NA@EXAMPLE.COM",
]


class UnicodeUserTest(PolicyTest):
    def test_unicode_spellings_of_one_user_share_one_counter(self):
        (svc,) = self.seeded([policy("p.user", limit=len(SPELLINGS) - 1,
                                     window_s=600)])
        for i, user in enumerate(SPELLINGS[:-1]):
            r = self.login(svc, user, "192.0.2.%d" % (i + 1))
            self.assertEqual(r.status, 200, (user, r.json))
            self.assertEqual(self.decision(r, "p.user")["remaining"],
                             len(SPELLINGS) - 2 - i)
        r = self.login(svc, SPELLINGS[-1], "192.0.2.100")
        self.assertEqual(r.status, 429, r.json)
        self.assertEqual(r.json["policy"], "p.user")
        # Without the accent it is another user.
        r = self.login(svc, "ana@example.com", "192.0.2.101")
        self.assertEqual(r.status, 200, r.json)

    def test_bidi_override_in_a_user_is_a_400_naming_user(self):
        (svc,) = self.seeded([policy("p.user")])
        r = self.login(svc, "ana\u202e@example.com")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "user")


    def test_idn_domain_and_its_a_label_share_one_counter(self):
        (svc,) = self.seeded([policy("p.user", limit=3, window_s=600)])
        spellings = ["ana@b\u00fccher.example", "ana@xn--bcher-kva.example",
                     "ANA@XN--BCHER-KVA.EXAMPLE"]
        for i, user in enumerate(spellings):
            r = self.login(svc, user, "192.0.2.%d" % (i + 1))
            self.assertEqual(r.status, 200, (user, r.json))
            self.assertEqual(self.decision(r, "p.user")["remaining"], 2 - i)
        r = self.login(svc, spellings[0], "192.0.2.9")
        self.assertEqual(r.status, 429, r.json)
        self.assertEqual(r.json["policy"], "p.user")
        # One subject, the U-label form's (its keys: the log and its
        # companions, each "ag:<policy>:<digest>" and a suffix).
        self.assertEqual(subjects(self.redis, "p.user"), {digest(
            self.secret, [("user", "ana@b\u00fccher.example")])})

    def test_invalid_idn_domain_is_a_400_naming_user(self):
        (svc,) = self.seeded([policy("p.user")])
        r = self.login(svc, "ana@xn--bcher-kvb.example")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "user")


# The spellings issue 29 found, each beside its E.164 form: a national
# (trunk) prefix written after the calling code.
TRUNK_SPELLINGS = [
    ("+44 07700 900123", "+447700900123"),
    ("+1 1 202 555 0143", "+12025550143"),
    ("+7 8 912 345 6789", "+79123456789"),
    ("+61 0412 345 678", "+61412345678"),
    ("+81 090 1234 5678", "+819012345678"),
    ("+55 0 11 91234 5678", "+5511912345678"),
]
TOKEN = "tok-" + os.urandom(20).hex()


class PhoneSpellingTest(PolicyTest):
    def verify(self, svc, phone, ip):
        return svc.post("/check-otp-verify", {"phone": phone, "ip": ip})

    def test_five_code_guesses_at_one_handset_across_spellings_are_five(self):
        # The shipped policies: otp_verify.phone allows an untrusted
        # client five guesses at one phone, then blocks it.
        svc = self.service()
        spellings = ["+447700900123", "+44 07700 900123"]
        answers = []
        for i in range(10):
            r = self.verify(svc, spellings[i % 2], "192.0.2.%d" % (i + 1))
            answers.append((r.status, r.json.get("policy")))
        self.assertEqual(answers, [(200, None)] * 5 +
                         [(429, "otp_verify.phone")] * 5)
        self.assertEqual(subjects(self.redis, "otp_verify.phone"), {digest(
            self.secret, [("phone", "+447700900123")])})

    def test_each_trunk_spelling_counts_as_its_e164_number(self):
        (svc,) = self.seeded([policy("v.phone", endpoint="otp_verify",
                                     key=("phone",), limit=1,
                                     window_s=600)])
        for national, e164 in TRUNK_SPELLINGS:
            with self.subTest(phone=national):
                r = self.verify(svc, e164, "192.0.2.1")
                self.assertEqual(r.status, 200, r.json)
                r = self.verify(svc, national, "192.0.2.1")
                self.assertEqual((r.status, r.json.get("policy")),
                                 (429, "v.phone"), r.json)

    def test_phone_deny_entry_denies_its_trunk_spelling(self):
        token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                 name="admin.token")
        svc = self.service(extra=["--admin-token-file", token_file])
        r = svc.post("/admin/lists/deny",
                     {"kind": "phone", "value": "+447700900555"},
                     headers={"Authorization": "Bearer " + TOKEN})
        self.assertEqual(r.status, 201, r.json)
        for phone in ["+447700900555", "+44 07700 900555",
                      "+44 (0)7700 900555"]:
            with self.subTest(phone=phone):
                r = self.otp(svc, phone, "192.0.2.1")
                self.assertEqual(r.status, 403, r.json)
        self.assertEqual(self.otp(svc, "+44 07700 900556", "192.0.2.1")
                         .status, 200)

    def test_trunk_spelling_that_cannot_be_folded_is_a_400_naming_phone(self):
        svc = self.service()
        r = self.otp(svc, "+44 007700 900123", "192.0.2.1")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["field"], "phone")
        self.assertIn("national prefix", r.json["error"])


if __name__ == "__main__":
    unittest.main()
