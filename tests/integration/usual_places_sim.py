# SPDX-License-Identifier: Apache-2.0
"""The simulator of issue 40: real users and attackers against real
abuseguard instances while a site-wide shield is raised, on MMDB files
written by MaxMind's own writer. Used by test_usual_places_sim.py (a short
run) and bench/usual_places.py (a longer one).

The world: COUNTRIES, each with a residential network or two (one city
apiece, 150 to 450 km apart), a hosting network (listed "hosting") and a
Tor exit range (listed "tor"), both anonymising.

Real users each have a home country and one or two of its networks
(commuters use both, between two cities). Over simulated days each logs
in once a day: 30 % from a new device (no token), 2 % travelling abroad
(at a plausible speed: the next day). Time passes by moving every
history's last success back (the test's clock: Redis holds the times,
and no wall clock is raced).

Attackers stuff and spray, every attempt a new address: from residential
proxies in random countries, hosting, Tor, and a share matched to the
victim's home country and network (proxies are sold by country and ISP).
Stuffed passwords come from breaches (the caller's range lookup finds
most: password_breached); sprayed ones are a few common passwords.

What it reports, while the shield is raised: the share of real users'
new-device logins challenged, and the share of attack attempts that pass
(allowed) after the first 300, of all and by source."""
import json
import random

from harness import wait_until

COUNTRIES = [
    # code, two cities (lat, lon) of its two residential networks
    ("FR", (48.86, 2.35), (45.76, 4.84)),
    ("DE", (52.52, 13.40), (50.11, 8.68)),
    ("GB", (51.51, -0.13), (53.48, -2.24)),
    ("ES", (40.42, -3.70), (41.39, 2.17)),
    ("IT", (41.90, 12.50), (45.46, 9.19)),
    ("US", (40.71, -74.01), (38.90, -77.04)),
    ("BR", (-23.55, -46.63), (-22.91, -43.17)),
    ("IN", (19.08, 72.88), (18.52, 73.86)),
    ("JP", (35.68, 139.69), (34.69, 135.50)),
    ("NG", (6.52, 3.38), (7.38, 3.95)),
]
HOSTING = ("US", (39.04, -77.49))  # Ashburn
TOR = ("DE", (50.11, 8.68))
HOUR_MS = 3600 * 1000


def net_of(ci, k):
    """The residential network k of country ci: (ASN, first two octets)."""
    return 64600 + 2 * ci + k, (20 + ci, k)


def mmdb_networks():
    places, asns = [], []
    for ci, (code, *cities) in enumerate(COUNTRIES):
        for k, (lat, lon) in enumerate(cities):
            asn, (a, b) = net_of(ci, k)
            cidr = "%d.%d.0.0/16" % (a, b)
            places.append({"cidr": cidr, "country": code, "latitude": lat,
                           "longitude": lon, "accuracy_radius": 50})
            asns.append({"cidr": cidr, "asn": asn})
    for cidr, asn, (code, (lat, lon)) in (("40.0.0.0/16", 65500, HOSTING),
                                          ("41.0.0.0/16", 65501, TOR)):
        places.append({"cidr": cidr, "country": code, "latitude": lat,
                       "longitude": lon, "accuracy_radius": 100})
        asns.append({"cidr": cidr, "asn": asn})
    return places, asns


LISTS = {"hosting": "40.0.0.0/16\n", "tor": "41.0.0.0/16\n"}


class Addresses:
    """A new address every time, in a given /16."""

    def __init__(self):
        self.n = {}

    def take(self, a, b):
        k = self.n.get((a, b), 0) + 1
        self.n[(a, b)] = k
        return "%d.%d.%d.%d" % (a, b, k // 250 % 250 + 1, k % 250 + 1)


class World:
    def __init__(self, test, svcs, seed, users=100, days=4):
        self.test, self.svcs = test, svcs
        self.rng = random.Random(seed)
        self.addr = Addresses()
        self.users = []
        for u in range(users):
            ci = self.rng.randrange(len(COUNTRIES))
            nets = [0] if self.rng.random() < 0.5 else [0, 1]
            self.users.append({"user": "real%d@example.com" % u, "ci": ci,
                               "nets": nets, "token": None,
                               "breached": self.rng.random() < 0.03})
        self.days = days
        self.k = 0
        # Real logins judged impossible_travel (all real users travel at
        # plausible speeds), and attempts on a real user from another
        # country than theirs: how many, and how many new_country flagged.
        self.real_logins = 0
        self.real_impossible = 0
        self.foreign = [0, 0]

    def svc(self):
        self.k += 1
        return self.svcs[self.k % len(self.svcs)]

    # ---- time ------------------------------------------------------------

    def advance(self, hours):
        """Moves every history's last success hours back: time passing,
        as far as the histories can tell."""
        r = self.test.redis
        keys = r.cmd("KEYS", "ag::hist:*")
        for key in keys:
            text = r.cmd("GET", key)
            if not text:
                continue
            f = text.split("|")
            f[1] = str(int(f[1]) - int(hours * HOUR_MS))
            if f[3]:  # the place's own time, last
                place = f[3].split(",")
                place[3] = str(int(place[3]) - int(hours * HOUR_MS))
                f[3] = ",".join(place)
            r.cmd("SET", key, "|".join(f), "KEEPTTL")

    # ---- real users ------------------------------------------------------

    def home_ip(self, u, k=None):
        k = self.rng.choice(u["nets"]) if k is None else k
        return self.addr.take(*net_of(u["ci"], k)[1])

    def abroad_ip(self, u):
        ci = self.rng.choice([c for c in range(len(COUNTRIES))
                              if c != u["ci"]])
        return self.addr.take(*net_of(ci, 0)[1])

    def real_login(self, u, ip, new_device):
        """One login of a real user: a check (passing a challenge if
        asked: the real user has the second factor), then the success.
        Returns whether the first check was challenged, and by whom."""
        svc = self.svc()
        body = {"user": u["user"], "ip": ip}
        if u["breached"]:
            body["password_breached"] = True
        if not new_device and u["token"]:
            body["device_token"] = u["token"]
        r = svc.post("/check-login", body)
        self.real_logins += 1
        self.real_impossible += "impossible_travel" in (
            r.json.get("risk", {}).get("signals") or [])
        challenged = None
        report = dict(body, success=True)
        if r.status == 429 and r.json.get("action") == "challenge":
            challenged = (r.json["policy"],
                          r.json.get("risk", {}).get("signals"))
            nonce = r.json["challenge_nonce"]
            r = svc.post("/check-login", dict(body, challenge_passed=nonce))
            report["challenge_passed"] = nonce
        self.test.assertEqual(r.status, 200, r.raw)
        r = svc.post("/report-login", report)
        self.test.assertEqual(r.status, 200, r.raw)
        if not u["token"] or new_device:
            u["token"] = r.json["device_token"]
        return challenged

    def day(self, stats=None):
        """Every user logs in once; commuters once more, three hours
        later, from their other city, unless abroad that day."""
        away = set()
        for u in self.users:
            new_device = self.rng.random() < 0.30
            travel = self.rng.random() < 0.02
            if travel:
                away.add(u["user"])
            ip = self.abroad_ip(u) if travel else self.home_ip(u)
            c = self.real_login(u, ip, new_device)
            if stats is not None and new_device:
                stats["new_device"] += 1
                stats["challenged"] += c is not None
                if c is not None:
                    stats["why"].append((u["user"], c, travel,
                                         u["breached"]))
        self.advance(3)
        for u in self.users:
            if (len(u["nets"]) == 2 and u["user"] not in away and
                    self.rng.random() < 0.5):
                self.real_login(u, self.home_ip(u, 1), False)
        self.advance(21)

    def build_history(self):
        for _ in range(self.days):
            self.day()

    # ---- attackers -------------------------------------------------------

    @staticmethod
    def country_of(ip):
        a = int(ip.split(".")[0])
        if a == 40:
            return HOSTING[0]
        if a == 41:
            return TOR[0]
        return COUNTRIES[a - 20][0]

    SOURCES = (("residential", 0.40), ("hosting", 0.20), ("tor", 0.10),
               ("matched", 0.30))

    def attack_ip(self, source, victim):
        if source == "residential":
            ci = self.rng.randrange(len(COUNTRIES))
            return self.addr.take(*net_of(ci, self.rng.randrange(2))[1])
        if source == "hosting":
            return self.addr.take(40, 0)
        if source == "tor":
            return self.addr.take(41, 0)
        if victim is None:  # a made-up name: any residential address
            ci = self.rng.randrange(len(COUNTRIES))
            return self.addr.take(*net_of(ci, 0)[1])
        return self.home_ip(victim)

    def attempt(self, n):
        """One attack attempt: stuffing (70 %: a combo list's pair, most
        naming no account here, the password from a breach) or spraying
        (a common password). Returns (source, passed)."""
        roll, acc = self.rng.random(), 0.0
        for source, share in self.SOURCES:
            acc += share
            if roll < acc:
                break
        stuffing = self.rng.random() < 0.70
        victim = (self.rng.choice(self.users)
                  if self.rng.random() < 0.40 else None)
        user = victim["user"] if victim else "combo%d@example.net" % n
        body = {"user": user, "ip": self.attack_ip(source, victim)}
        if stuffing:
            body["password_fp"] = "stuffed-%d" % n
            if self.rng.random() < 0.70:
                body["password_breached"] = True
        else:
            body["password_fp"] = "spray-%d" % self.rng.randrange(3)
            body["password_breached"] = True
        svc = self.svc()
        r = svc.post("/check-login", body)
        passed = r.status == 200
        if victim and source != "matched" and self.country_of(
                body["ip"]) != COUNTRIES[victim["ci"]][0]:
            self.foreign[0] += 1
            self.foreign[1] += "new_country" in (
                r.json.get("risk", {}).get("signals") or [])
        if passed:
            reason = "bad_password" if victim else "unknown_user"
            svc.post("/report-login", dict(body, success=False,
                                           reason=reason))
        return source, passed


def run(test, svcs, shield, scope, seed, users=100, days=4, attacks=400,
        admin=None):
    """The whole simulation; returns its figures."""
    w = World(test, svcs, seed, users=users, days=days)
    w.build_history()
    # The wave: its first 300 attempts, then the shield is raised (by
    # the operator's switch: the same raise the counts make, without
    # waiting for a baseline to be learned).
    for n in range(300):
        w.attempt(n)
    r = svcs[0].request("POST", "/admin/shields/" + shield,
                        {"raise_for_s": 3600}, headers=admin)
    test.assertEqual(r.status, 200, r.raw)

    def raised(svc):
        r = svc.request("GET", "/admin/shields", headers=admin)
        return any(s["name"] == shield and s["raised"]
                   for s in r.json["shields"])
    test.assertTrue(wait_until(lambda: all(raised(s) for s in svcs), 30))
    stats = {"new_device": 0, "challenged": 0, "why": []}
    by = {s: [0, 0] for s, _ in World.SOURCES}
    for n in range(attacks):
        source, passed = w.attempt(300 + n)
        by[source][0] += 1
        by[source][1] += passed
    w.day(stats)
    total = sum(v[0] for v in by.values())
    passed = sum(v[1] for v in by.values())
    return {"scope": scope, "seed": seed,
            "real_new_device_logins": stats["new_device"],
            "real_challenged": stats["challenged"],
            "real_challenged_why": stats["why"],
            "attack_attempts": total, "attack_passed": passed,
            "real_logins": w.real_logins,
            "real_impossible_travel": w.real_impossible,
            "foreign_attempts_on_real_users": w.foreign[0],
            "foreign_flagged_new_country": w.foreign[1],
            "by_source": {s: {"attempts": v[0], "passed": v[1]}
                          for s, v in by.items()}}


def table(results):
    """The closing note's table, one row a run."""
    out = ["| scope | seed | real users' new-device logins challenged | "
           "attack attempts passing (after the first 300) | of them matched "
           "to the victim's country and ISP | real logins judged impossible "
           "| attempts on real users from abroad flagged new_country |",
           "|---|---|---|---|---|---|---|"]

    def share(a, b):
        return "%d of %d (%.1f %%)" % (a, b, 100.0 * a / max(1, b))
    for r in results:
        m = r["by_source"]["matched"]
        out.append("| %s | %s | %s | %s | %d of %d matched | %d of %d | %s |"
                   % (r["scope"], r.get("seed", "?"),
                      share(r["real_challenged"],
                            r["real_new_device_logins"]),
                      share(r["attack_passed"], r["attack_attempts"]),
                      m["passed"], m["attempts"], r["real_impossible_travel"],
                      r["real_logins"],
                      share(r["foreign_flagged_new_country"],
                            r["foreign_attempts_on_real_users"])))
    return "\n".join(out)


if __name__ == "__main__":
    print(json.dumps(mmdb_networks()))
