# SPDX-License-Identifier: Apache-2.0
"""The OCSF validator (ocsf_schema.py) itself: it passes a well-formed
Authentication event and refuses each way one can be wrong, so that a
pass in test_ocsf.py means something. And every event type abuseguard
raises, as tests/tools/ocsf_samples.c renders it with every field its
type can carry, passes it: the types no integration test provokes (the
breaker, the fleet, a journey) too. No service here."""
import copy
import json
import os
import subprocess
import unittest

from ocsf_schema import Schema

GOOD = {
    "metadata": {"product": {"name": "abuseguard",
                             "vendor_name": "abuseguard", "version": "0.1"},
                 "version": "1.8.0", "uid": "5f0c2a9e1b7d4c36-17",
                 "profiles": ["security_control"]},
    "class_uid": 3002, "category_uid": 3, "activity_id": 1,
    "type_uid": 300201, "time": 1796306531408, "severity_id": 3,
    "status_id": 2, "action_id": 2, "disposition_id": 23,
    "class_name": "Authentication", "severity": "Medium",
    "activity_name": "Logon", "status": "Failure",
    "user": {"uid": "3b5661d9eacbb9ec0256a25382a61b1e"},
    "service": {"name": "login"},
    "unmapped": {"type": "lockout"},
}


def without(event, path):
    e = copy.deepcopy(event)
    *parents, last = path.split(".")
    at = e
    for p in parents:
        at = at[p]
    del at[last]
    return e


def with_value(event, path, value):
    e = copy.deepcopy(event)
    *parents, last = path.split(".")
    at = e
    for p in parents:
        at = at[p]
    at[last] = value
    return e


class OcsfSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = Schema()

    def assert_refused(self, event, *words):
        errors, _ = self.schema.check(event)
        self.assertTrue(errors, "accepted: %s" % event)
        text = "\n".join(errors)
        for w in words:
            self.assertIn(w, text)

    def test_the_schema_is_the_vendored_version(self):
        self.assertEqual(self.schema.version, "1.8.0")
        self.assertEqual(self.schema.classes[3002], "authentication")
        self.assertEqual(self.schema.classes[2004], "detection_finding")

    def test_a_well_formed_event_passes(self):
        self.assertEqual(self.schema.check(GOOD), ([], []))

    def test_a_missing_required_field_is_refused(self):
        for path in ("time", "severity_id", "metadata", "user",
                     "metadata.product", "metadata.version"):
            with self.subTest(path):
                self.assert_refused(without(GOOD, path),
                                    path.split(".")[-1], "required, missing")

    def test_a_wrong_type_is_refused(self):
        cases = {"time": "2026-12-03T14:02:11.408Z", "severity_id": "3",
                 "class_uid": 3002.5, "user": "someone",
                 "user.uid": 42, "metadata.version": 1.8,
                 "status_id": True}
        for path, value in cases.items():
            with self.subTest(path):
                self.assert_refused(with_value(GOOD, path, value),
                                    path)

    def test_an_id_outside_its_enum_is_refused(self):
        for path, value in (("disposition_id", 1000), ("activity_id", 50),
                            ("severity_id", 7), ("action_id", 5)):
            with self.subTest(path):
                self.assert_refused(with_value(GOOD, path, value), path,
                                    "enum")

    def test_an_unknown_attribute_or_an_undeclared_profile_is_refused(self):
        self.assert_refused(with_value(GOOD, "user.password", "x"),
                            "user.password", "not an attribute")
        self.assert_refused(with_value(GOOD, "metadata.profiles", []),
                            "action_id", "security_control")

    def test_a_mismatched_type_uid_or_category_is_refused(self):
        self.assert_refused(with_value(GOOD, "type_uid", 300202), "type_uid")
        self.assert_refused(with_value(GOOD, "category_uid", 2),
                            "category_uid")
        self.assert_refused(with_value(GOOD, "class_uid", 9999), "class_uid")

    def test_a_caption_that_is_not_its_ids_is_refused(self):
        for path, value in (("class_name", "Detection Finding"),
                            ("activity_name", "Logoff"),
                            ("status", "Success"), ("severity", "High"),
                            ("category_name", "Findings")):
            with self.subTest(path):
                self.assert_refused(with_value(GOOD, path, value), path)
        self.assert_refused(
            with_value(GOOD, "metadata.profiles",
                       ["security_control", "cloud"]), "cloud")

    def test_every_event_type_renders_valid_ocsf(self):
        samples = os.environ.get("AG_OCSF_SAMPLES")
        self.assertTrue(samples, "AG_OCSF_SAMPLES names tests/tools/"
                        "ocsf_samples (ctest sets it)")
        out = subprocess.run([samples], capture_output=True, text=True,
                             check=True, timeout=60).stdout
        events = [json.loads(line) for line in out.splitlines()]
        types = [e["unmapped"]["type"] for e in events]
        self.assertEqual(len(types), len(set(types)))
        self.assertGreaterEqual(len(types), 20)
        for e in events:
            with self.subTest(e["unmapped"]["type"]):
                errors, gaps = self.schema.check(e)
                self.assertEqual(errors, [], json.dumps(e))
                for gap in gaps:
                    self.assertIn("src_endpoint: needs at least one of",
                                  gap)
                # The backend's ref is the user where there is one; a
                # lockout's key is no user's but the correlation.
                self.assertEqual(e["metadata"]["correlation_uid"],
                                 e["unmapped"]["key"])
                for user in [e.get("user")] + [
                        v.get("user") for v in e.get("evidences", [])]:
                    if user:
                        self.assertEqual(user["uid"], "u-4711")

    def test_a_class_constraint_is_checked(self):
        # Authentication needs a service or a dst_endpoint.
        self.assert_refused(without(GOOD, "service"), "at least one of",
                            "service")

    def test_an_objects_constraint_is_a_gap_not_an_error(self):
        e = with_value(GOOD, "src_endpoint",
                       {"location": {"country": "DE"}})
        errors, gaps = self.schema.check(e)
        self.assertEqual(errors, [])
        self.assertEqual(len(gaps), 1)
        self.assertTrue(gaps[0].startswith("src_endpoint: needs at least "
                                           "one of"), gaps)
        # A location with no field it asks for is one more.
        e["src_endpoint"]["location"] = {"continent": "Europe"}
        self.assertEqual(len(self.schema.check(e)[1]), 2)


if __name__ == "__main__":
    unittest.main()
