# SPDX-License-Identifier: Apache-2.0
"""scripts/dev.sh installs only what building and running abuseguard
needs (issue 38: it installed Chromium, clang-format, cmocka and strace
just to try the service); the test packages come with scripts/test.sh."""
import os
import re
import subprocess
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Packages that only a test, a check or the Debian package's test uses.
TEST_ONLY = {"libcmocka-dev", "chromium", "clang-format", "strace",
             "python3-jsonschema", "dpkg-dev", "systemd", "golang-go",
             "python3-venv", "python3-setuptools", "python3-wheel",
             "libmaxmind-db-writer-perl", "mmdb-bin"}


def listed(*flags):
    out = subprocess.run([os.path.join(ROOT, "scripts", "deps.sh"),
                          "--list", *flags], capture_output=True,
                         check=True, text=True, timeout=30).stdout
    return set(out.split())


def deps_calls(script):
    with open(os.path.join(ROOT, "scripts", script)) as f:
        return re.findall(r"^scripts/deps\.sh(.*)$", f.read(), re.M)


class DevDepsTest(unittest.TestCase):
    def test_running_needs_no_test_package(self):
        run = listed()
        self.assertEqual(run & TEST_ONLY, set())
        for need in ("cmake", "libmicrohttpd-dev", "libhiredis-dev",
                     "redis-server"):
            self.assertIn(need, run)
        self.assertEqual(deps_calls("dev.sh"), [""])

    def test_the_test_script_installs_the_rest(self):
        self.assertLessEqual(TEST_ONLY | listed(), listed("--test"))
        self.assertEqual(deps_calls("test.sh"), [" --test"])


if __name__ == "__main__":
    unittest.main()
