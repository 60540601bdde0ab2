# SPDX-License-Identifier: Apache-2.0
"""The user's usual places (issue 40) over real processes: a City
database with coordinates and an ASN database written by MaxMind's own
writer, a real redis-server, real abuseguard instances. A success teaches
the user's history by the rule written down in
docs/decisions/usual-places.md; a check is judged against it (new_country,
new_asn, no_history, impossible_travel) and carries its risk; the history
is read inside the check's own FCALL (INFO commandstats); signal policies
and a risky-scoped shield act on the signals; a success from somewhere new
raises an event; the admin API shows, exports and forgets a history."""
import json
import os
import re
import socket
import unittest

from harness import make_secret
from test_network import NetworkFiles, metric

TOKEN = "tok-" + "4" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}

# Home (Paris, two networks), Lyon on the home ISP's mobile network, New
# York (5 837 km from Paris), a VPN exit named anonymising, nowhere.
PLACES = [
    {"cidr": "11.0.0.0/16", "country": "FR", "latitude": 48.8566,
     "longitude": 2.3522, "accuracy_radius": 20},
    {"cidr": "11.1.0.0/16", "country": "FR", "latitude": 45.7640,
     "longitude": 4.8357, "accuracy_radius": 50},
    {"cidr": "12.0.0.0/16", "country": "US", "latitude": 40.7128,
     "longitude": -74.0060, "accuracy_radius": 20},
    {"cidr": "12.9.0.0/16", "country": "US", "latitude": 40.7128,
     "longitude": -74.0060, "accuracy_radius": 20},
]
NETWORKS = [{"cidr": "11.0.0.0/16", "asn": 3215},
            {"cidr": "11.1.0.0/16", "asn": 12322},
            {"cidr": "12.0.0.0/16", "asn": 7922},
            {"cidr": "12.9.0.0/16", "asn": 9009}]
PARIS, LYON, NEW_YORK, VPN = "11.0.0.7", "11.1.0.7", "12.0.0.7", "12.9.0.7"
OPEN = {"name": "login.user", "endpoint": "login", "key": ["user"],
        "algorithm": "sliding_log", "limit": 1000, "window_s": 60}
NEW_COUNTRY = {"name": "login.new_country", "endpoint": "login",
               "key": ["user"], "algorithm": "signal",
               "signal": "new_country", "action": "challenge"}
RISKY_SHIELD = {"name": "login.site_failures", "endpoint": "login",
                "key": ["site"], "algorithm": "surge", "limit": 100,
                "window_s": 60, "block_s": 600, "counts": "failures",
                "applies_to": "untrusted", "action": "challenge",
                "scope": "risky"}


class UsualPlaces(NetworkFiles):
    def files(self):
        w = self.workdir
        self.geo = os.path.join(w, "city.mmdb")
        self.asn = os.path.join(w, "asn.mmdb")
        self.write_mmdb(self.geo, "country", PLACES)
        self.write_mmdb(self.asn, "asn", NETWORKS)
        self.vpn = os.path.join(w, "vpn.txt")
        with open(self.vpn, "w") as f:
            f.write("12.9.0.0/16\n")
        self.token_file = make_secret(self.workdir, (TOKEN + "\n").encode(),
                                      name="admin.token")
        return ["--geoip-file", self.geo, "--asn-file", self.asn,
                "--ip-list", "vpn=" + self.vpn,
                "--admin-token-file", self.token_file]

    def risk(self, svc, user, ip, **extra):
        r = self.login(svc, user, ip, **extra)
        self.assertIn(r.status, (200, 429), r.raw)
        return r

    def succeed(self, svc, user, ip, **extra):
        r = svc.post("/report-login", {"user": user, "ip": ip,
                                       "success": True, **extra})
        self.assertEqual(r.status, 200, r.raw)
        return r

    def history_key(self):
        keys = [k for k in self.redis.keys() if k.startswith("ag::hist:")]
        self.assertEqual(len(keys), 1, keys)
        return keys[0]

    def set_last(self, key, hours_ago):
        """Moves the history's last success hours_ago before Redis's
        clock: the test's clock for a journey's time."""
        text = self.redis.cmd("GET", key)
        now_ms = self.redis_time_us() // 1000
        fields = text.split("|")
        fields[1] = str(now_ms - int(hours_ago * 3600000))
        # The place keeps its own time, last: journeys start from it.
        place = fields[3].split(",")
        place[3] = fields[1]
        fields[3] = ",".join(place)
        self.redis.cmd("SET", key, "|".join(fields), "KEEPTTL")

    def stream(self, svc):
        r = svc.request("GET", "/admin/events", headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        return r.json["events"]

    def commandstat(self, name):
        info = self.redis.cmd("INFO", "commandstats")
        m = re.search(r"cmdstat_%s:calls=(\d+)" % name, info)
        return int(m.group(1)) if m else 0


class UsualPlacesTest(UsualPlaces):
    def test_a_check_is_judged_against_the_users_history(self):
        svc = self.start([OPEN])
        r = self.risk(svc, "ann@example.com", PARIS)
        self.assertEqual(r.json["risk"], {"signals": ["no_history"],
                                          "level": "medium",
                                          "travel": "no_history",
                                          "history": "read"})
        self.succeed(svc, "ann@example.com", PARIS)
        r = self.risk(svc, "ann@example.com", PARIS)
        self.assertEqual(r.json["risk"], {"signals": [], "level": "low",
                                          "travel": "possible",
                                          "history": "read"})
        # The home ISP's mobile network in Lyon three hours later: a new
        # network, low.
        self.set_last(self.history_key(), 3)
        r = self.risk(svc, "ann@example.com", LYON)
        self.assertEqual(r.json["risk"]["signals"], ["new_asn"])
        self.assertEqual(r.json["risk"]["level"], "low")
        # New York three hours after Paris (1 950 km/h): impossible, high.
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        self.assertEqual(r.json["risk"]["signals"],
                         ["new_country", "new_asn", "impossible_travel"])
        self.assertEqual(r.json["risk"]["level"], "high")
        self.assertEqual(r.json["risk"]["travel"], "impossible")
        # An anonymising exit gives no travel verdict, and is a signal.
        r = self.risk(svc, "ann@example.com", VPN)
        self.assertEqual(r.json["risk"]["travel"], "anonymising")
        self.assertIn("ip_listed", r.json["risk"]["signals"])
        # Counted by signal and level: New York's, and the VPN's (a new
        # country from an anonymising address), high.
        self.assertEqual(metric(svc, "abuseguard_risk_signals_total",
                                signal="impossible_travel"), 1)
        self.assertEqual(metric(svc, "abuseguard_risk_levels_total",
                                level="high"), 2)
        self.assertEqual(metric(svc, "abuseguard_history_unread_total"), 0)
        # Another user is no one's history but their own.
        r = self.risk(svc, "bob@example.com", PARIS)
        self.assertEqual(r.json["risk"]["signals"], ["no_history"])
        # The history holds no address, no identifier, no coordinates
        # finer than a tenth of a degree.
        key = self.history_key()
        text = self.redis.cmd("GET", key)
        self.assertNotIn("ann", key + text)
        self.assertNotIn(PARIS, text)
        self.assertRegex(text,
                         r"^1\|\d+\|FR\|489,24,20,\d+\|FR:\d+\|3215:\d+$")
        ttl = int(self.redis.cmd("PTTL", key))
        self.assertGreater(ttl, 89 * 86400000)
        self.assertLessEqual(ttl, 90 * 86400000)

    def test_the_history_is_read_inside_the_checks_one_fcall(self):
        svc = self.start([OPEN])
        self.succeed(svc, "ann@example.com", PARIS)
        self.open_every_connection(svc)
        fcall, get = self.commandstat("fcall"), self.commandstat("get")
        with socket.create_connection(("127.0.0.1", self.redis.port),
                                      10) as mon:
            mon.sendall(b"MONITOR\r\n")
            self.assertEqual(mon.recv(5), b"+OK\r\n")
            for _ in range(20):
                self.risk(svc, "ann@example.com", PARIS)
            self.redis.cmd("ECHO", "end-of-test")
            seen = b""
            while b"end-of-test" not in seen:
                seen += mon.recv(65536)
        # One FCALL a check, as without history (commandstats), and the
        # history's GET is nested in it: MONITOR shows it run by Lua,
        # never sent by a client.
        self.assertEqual(self.commandstat("fcall") - fcall, 20)
        self.assertEqual(self.commandstat("get") - get, 20)
        lines = seen.decode().splitlines()
        top = [l for l in lines if " [0 lua] " not in l]
        self.assertEqual(sum('"FCALL"' in l for l in top), 20, top)
        self.assertEqual(sum('"GET"' in l for l in top), 0, top)
        nested = [l for l in lines if ' [0 lua] "GET" "ag::hist:' in l]
        self.assertEqual(len(nested), 20, lines[:5])

    def test_an_airline_journey_is_possible_and_a_faster_one_is_not(self):
        svc = self.start([OPEN])
        self.succeed(svc, "ann@example.com", PARIS)
        key = self.history_key()
        # Paris to New York (5 837 km) in 8 hours: 730 km/h, an airliner.
        self.set_last(key, 8)
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        self.assertEqual(r.json["risk"]["travel"], "possible")
        self.assertNotIn("impossible_travel", r.json["risk"]["signals"])
        # In 4 hours: 1 450 km/h.
        self.set_last(key, 4)
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        self.assertIn("impossible_travel", r.json["risk"]["signals"])
        # After a day the last place says nothing.
        self.set_last(key, 25)
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        self.assertEqual(r.json["risk"]["travel"], "stale")

    def test_an_unproven_success_from_a_new_country_teaches_nothing(self):
        svc = self.start([OPEN])
        self.succeed(svc, "ann@example.com", PARIS)
        key = self.history_key()
        self.set_last(key, 10)
        before = self.redis.cmd("GET", key)
        self.succeed(svc, "ann@example.com", NEW_YORK, ref="ann-1")
        self.assertEqual(self.redis.cmd("GET", key), before)
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        self.assertIn("new_country", r.json["risk"]["signals"])
        events = [e for e in self.stream(svc)
                  if e["type"] == "new_country_login"]
        self.assertEqual(len(events), 1, events)
        self.assertEqual(events[0]["travel"], {"from": "FR", "to": "US"})
        self.assertEqual(events[0]["ref"], "ann-1")
        self.assertNotIn("ann@", json.dumps(events))
        # A success a passed challenge proves teaches it.
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        body = {"user": "ann@example.com", "ip": NEW_YORK}
        self.succeed(svc, "ann@example.com", NEW_YORK,
                     challenge_passed=self.nonce_for(svc, body))
        r = self.risk(svc, "ann@example.com", NEW_YORK)
        self.assertNotIn("new_country", r.json["risk"]["signals"])

    def test_an_impossible_journey_raises_its_event(self):
        svc = self.start([OPEN])
        self.succeed(svc, "ann@example.com", PARIS)
        self.set_last(self.history_key(), 2)
        self.succeed(svc, "ann@example.com", NEW_YORK)
        (e,) = [e for e in self.stream(svc) if e["type"] == "impossible_travel"]
        # 5 837 km in two hours: the speed is what is left once both
        # radii (20 km each) and both roundings (8 km each) are taken off.
        self.assertEqual(e["travel"]["from"], "FR")
        self.assertEqual(e["travel"]["to"], "US")
        self.assertAlmostEqual(e["travel"]["km"], 5837, delta=15)
        self.assertAlmostEqual(e["travel"]["kmh"], (5837 - 56) / 2, delta=15)
        self.assertEqual(e["network"], {"country": "US", "asn": 7922})
        self.assertNotIn("40.7", json.dumps(e))

    def test_signal_policies_challenge_the_untrusted_lane_only(self):
        svc = self.start([OPEN, NEW_COUNTRY])
        r = self.succeed(svc, "ann@example.com", PARIS)
        token = r.json["device_token"]
        self.set_last(self.history_key(), 10)
        r = self.login(svc, "ann@example.com", NEW_YORK)
        self.assertEqual((r.status, r.json["policy"], r.json["action"]),
                         (429, "login.new_country", "challenge"), r.raw)
        # Its log line names the signals, never a place or the address.
        line = [l for l in svc.log_text().splitlines()
                if "policy=login.new_country" in l][0]
        self.assertIn(" risk=new_country,new_asn", line)
        self.assertNotIn(NEW_YORK, svc.log_text())
        self.assertNotIn("40.7", line)
        # Its nonce passes it, as any challenge's.
        r = self.login(svc, "ann@example.com", NEW_YORK,
                       challenge_passed=r.json["challenge_nonce"])
        self.assertEqual(r.status, 200, r.raw)
        # A trusted device is never judged by where it logs in from; its
        # answer still says what was seen.
        r = self.login(svc, "ann@example.com", NEW_YORK, device_token=token)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["device"], "trusted")
        self.assertIn("new_country", r.json["risk"]["signals"])
        # A body cannot bring a computed signal.
        r = self.login(svc, "bob@example.com", PARIS, new_country=True)
        self.assertEqual(r.status, 200, r.raw)
        # Such a policy may challenge, never deny: it is known only once
        # the check's counts are taken.
        r = svc.request("PUT", "/admin/policies/login.x",
                        dict(NEW_COUNTRY, name="login.x", action="deny"),
                        headers=AUTH)
        self.assertEqual((r.status, r.json["field"]), (400, "action"), r.raw)
        for bad, field in (({"scope": "everyone"}, "scope"),
                           ({"scope": "risky", "endpoint": "otp", "counts": "attempts"},
                            "scope")):
            r = svc.request("PUT", "/admin/policies/login.y",
                            dict(RISKY_SHIELD, name="login.y", **bad),
                            headers=AUTH)
            self.assertEqual((r.status, r.json["field"]), (400, field),
                             r.raw)
        r = svc.request("PUT", "/admin/policies/login.z",
                        dict(OPEN, name="login.z", scope="risky"),
                        headers=AUTH)
        self.assertEqual((r.status, r.json["field"]), (400, "scope"), r.raw)

    def test_a_risky_shield_challenges_only_the_risky(self):
        svc = self.start([OPEN, RISKY_SHIELD])
        self.succeed(svc, "ann@example.com", PARIS)
        r = svc.request("POST", "/admin/shields/login.site_failures",
                        {"raise_for_s": 600}, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        # Ann, on a new device at home: nothing unlike her.
        r = self.login(svc, "ann@example.com", PARIS)
        self.assertEqual(r.status, 200, r.raw)
        # Bob has no history; Ann from a VPN: challenged by the shield.
        for user, ip in (("bob@example.com", PARIS),
                         ("ann@example.com", VPN)):
            r = self.login(svc, user, ip)
            self.assertEqual((r.status, r.json["policy"]),
                             (429, "login.site_failures"), r.raw)
            self.assertNotIn("shield_as_untrusted", r.json["risk"])
        # With Redis out there is no history: the shield acts as an
        # untrusted-scoped one, and says so.
        self.redis.stop()
        r = self.login(svc, "ann@example.com", PARIS)
        self.assertEqual((r.status, r.json["policy"]),
                         (429, "login.site_failures"), r.raw)
        self.assertEqual(r.json["risk"]["history"], "unread")
        self.assertIs(r.json["risk"]["shield_as_untrusted"], True)
        self.assertEqual(metric(svc, "abuseguard_history_unread_total"), 1)

    def test_a_policy_named_hist_keeps_a_key_of_its_own(self):
        # A policy named hist keyed on the user has a key of its own: the
        # history lives in the service's namespace (ag::), not a policy's.
        hist = dict(OPEN, name="hist")
        svc = self.start([hist])
        self.succeed(svc, "ann@example.com", PARIS)
        r = self.risk(svc, "ann@example.com", PARIS)
        self.assertNotIn("degraded", r.json)
        self.assertEqual(r.json["risk"]["history"], "read")
        self.assertEqual(r.json["risk"]["signals"], [])
        self.assertEqual(len([k for k in self.redis.keys()
                              if k.startswith("ag:hist:")]), 1)

    def test_an_untrusted_shield_answers_before_a_risky_one(self):
        svc = self.start([OPEN, RISKY_SHIELD])
        self.succeed(svc, "ann@example.com", PARIS)
        for name in ("login.site_failures", "login.always"):
            r = svc.request("POST", "/admin/shields/" + name,
                            {"raise_for_s": 600}, headers=AUTH)
            self.assertEqual(r.status, 200, r.raw)
        r = self.login(svc, "ann@example.com", PARIS)
        self.assertEqual((r.status, r.json["policy"]), (429, "login.always"),
                         r.raw)

    def test_a_set_without_counting_policies_still_reads_the_history(self):
        # No policy the store counts: the check goes to Redis to read the
        # history alone, and its signals act.
        svc = self.start([NEW_COUNTRY, RISKY_SHIELD])
        self.succeed(svc, "ann@example.com", PARIS)
        self.set_last(self.history_key(), 10)
        r = self.login(svc, "ann@example.com", NEW_YORK)
        self.assertEqual((r.status, r.json["policy"]),
                         (429, "login.new_country"), r.raw)
        r = svc.request("POST", "/admin/shields/login.site_failures",
                        {"raise_for_s": 600}, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        r = self.login(svc, "ann@example.com", PARIS)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["risk"]["history"], "read")
        self.assertEqual(metric(svc, "abuseguard_history_unread_total"), 0)

    def test_operators_see_export_and_forget_a_history(self):
        svc = self.start([OPEN])
        self.succeed(svc, "Ann@Example.com", PARIS)
        r = svc.request("POST", "/admin/inspect",
                        {"endpoint": "login", "user": "ann@example.com",
                         "ip": PARIS}, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        h = r.json["history"]
        self.assertEqual([c["country"] for c in h["countries"]], ["FR"])
        self.assertEqual([n["asn"] for n in h["networks"]], [3215])
        self.assertNotIn("last_place", h)
        r = svc.request("POST", "/admin/history", {"user": "ann@example.com"},
                        headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["history"]["last_place"],
                         {"latitude": 48.9, "longitude": 2.4,
                          "accuracy_km": 20,
                          "at": r.json["history"]["last_success"]})
        digest = r.json["user_digest"]
        self.assertIn(digest, self.history_key())
        r = svc.request("POST", "/admin/history/forget",
                        {"user": "ann@example.com"}, headers=AUTH)
        self.assertEqual(r.json, {"forgotten": True})
        self.assertEqual([k for k in self.redis.keys()
                          if k.startswith("ag::hist:")], [])
        r = svc.request("POST", "/admin/history", {"user": "ann@example.com"},
                        headers=AUTH)
        self.assertIsNone(r.json["history"])
        r = self.risk(svc, "ann@example.com", PARIS)
        self.assertEqual(r.json["risk"]["signals"], ["no_history"])
        # Both audited under the digest, never the user.
        r = svc.request("GET", "/admin/audit?limit=10", headers=AUTH)
        rows = [e for e in r.json["entries"]
                if e["action"].startswith("history_")]
        self.assertEqual(sorted(e["action"] for e in rows),
                         ["history_export", "history_export",
                          "history_forget"])
        self.assertTrue(all(e["name"] == digest for e in rows))
        self.assertNotIn("ann", r.raw.decode().lower())
        r = svc.request("POST", "/admin/history", {"ip": PARIS}, headers=AUTH)
        self.assertEqual((r.status, r.json["field"]), (400, "user"), r.raw)

    def nonce_for(self, svc, body):
        """A challenge nonce for body's check, from a policy that always
        challenges it (a user's first check, above a limit of 0 is not
        one: a raised shield asks for it)."""
        r = svc.request("POST", "/admin/shields/login.always",
                        {"raise_for_s": 60}, headers=AUTH)
        self.assertEqual(r.status, 200, r.raw)
        r = svc.post("/check-login", body)
        self.assertEqual((r.status, r.json.get("action")),
                         (429, "challenge"), r.raw)
        svc.request("POST", "/admin/shields/login.always", {"lower": True},
                    headers=AUTH)
        return r.json["challenge_nonce"]

    def start(self, policies):
        always = dict(RISKY_SHIELD, name="login.always", scope="untrusted")
        return super().start(policies + [always])


if __name__ == "__main__":
    unittest.main()
