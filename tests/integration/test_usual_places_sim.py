# SPDX-License-Identifier: Apache-2.0
"""Issue 40's measure, a short run of the simulator (usual_places_sim.py)
against two real instances sharing a real redis-server: while the
default login shield is raised, its scope "untrusted" challenges every
real user's new-device login, and "risky" only those that look unlike the
user, with the attack attempts passing held as low."""
import json
import os
import sys
import unittest

from harness import make_secret
from test_network import NetworkFiles
import usual_places_sim as sim

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "tok-" + "5" * 40
AUTH = {"Authorization": "Bearer " + TOKEN}
SHIELD = "login.site_failures"


class UsualPlacesSimTest(NetworkFiles):
    def world(self, scope):
        w = self.workdir
        places, asns = sim.mmdb_networks()
        geo, asn = os.path.join(w, "city.mmdb"), os.path.join(w, "asn.mmdb")
        self.write_mmdb(geo, "country", places)
        self.write_mmdb(asn, "asn", asns)
        args = ["--geoip-file", geo, "--asn-file", asn]
        for name, text in sim.LISTS.items():
            path = os.path.join(w, name + ".txt")
            with open(path, "w") as f:
                f.write(text)
            args += ["--ip-list", "%s=%s" % (name, path)]
        token = make_secret(w, (TOKEN + "\n").encode(), name="admin.token")
        args += ["--admin-token-file", token]
        with open(os.path.join(HERE, "..", "..", "policies",
                               "default.json")) as f:
            policies = json.load(f)["policies"]
        for p in policies:
            if p["algorithm"] == "surge" and scope == "risky":
                p["scope"] = "risky"
        return self.seeded(policies, count=2, extra=args)

    def simulate(self, scope):
        """A short run; bench/usual_places.sh sets AG_SIM_* for a longer
        one, and gets each run's figures as a JSON line on stderr."""
        svcs = self.world(scope)
        env = os.environ.get
        out = sim.run(self, svcs, SHIELD, scope,
                      seed=int(env("AG_SIM_SEED", "40")),
                      users=int(env("AG_SIM_USERS", "100")),
                      days=int(env("AG_SIM_DAYS", "4")),
                      attacks=int(env("AG_SIM_ATTACKS", "300")), admin=AUTH)
        sys.stderr.write("\nSIM %s\n" % json.dumps(out))
        return out

    def test_an_untrusted_scope_challenges_every_new_device(self):
        out = self.simulate("untrusted")
        self.assertGreater(out["real_new_device_logins"], 5)
        self.assertEqual(out["real_challenged"],
                         out["real_new_device_logins"])
        self.assertLessEqual(out["attack_passed"],
                             0.05 * out["attack_attempts"])

    def test_a_risky_scope_challenges_only_the_risky(self):
        out = self.simulate("risky")
        self.assertGreater(out["real_new_device_logins"], 5)
        self.assertLessEqual(out["real_challenged"],
                             0.10 * out["real_new_device_logins"])
        self.assertLessEqual(out["attack_passed"],
                             0.05 * out["attack_attempts"])
        # A real traveller is never judged impossible at a plausible
        # speed; an attempt on a real user from another country than
        # their home is new_country on the first try (but from a country
        # the user travelled to on a trusted device, which taught it).
        self.assertGreater(out["real_logins"], 300)
        self.assertEqual(out["real_impossible_travel"], 0)
        self.assertGreater(out["foreign_attempts_on_real_users"], 10)
        self.assertGreaterEqual(out["foreign_flagged_new_country"],
                                0.95 * out["foreign_attempts_on_real_users"])
        # What passes is what the history cannot see: matched addresses.
        for source in ("hosting", "tor"):
            self.assertEqual(out["by_source"][source]["passed"], 0,
                             out["by_source"])


if __name__ == "__main__":
    unittest.main()
