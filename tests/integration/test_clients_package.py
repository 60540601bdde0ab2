# SPDX-License-Identifier: Apache-2.0
"""The clients install as their README says, with no registry (issue 38):
the Python one into a venv of Debian's python3 that sees Debian's
setuptools and wheel, without build isolation (which would fetch
setuptools from PyPI), leaving nothing behind in the checkout; the
Node.js one as the tarball `npm pack` makes, installed offline into a
project of its own; the Go one builds and vets with no module proxy."""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENTS = os.path.join(ROOT, "clients")
SYSTEM_PYTHON = "/usr/bin/python3"


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True,
                          timeout=600, **kw)


class ClientsPackageTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ag-clients-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def status(self):
        return run(["git", "status", "--porcelain", "--ignored", CLIENTS],
                   cwd=ROOT).stdout

    def test_python_installs_offline_into_a_venv(self):
        before = self.status()
        venv = os.path.join(self.tmp, "venv")
        run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv])
        pip = os.path.join(venv, "bin", "pip")
        run([pip, "install", "--no-build-isolation", "--no-index",
             os.path.join(CLIENTS, "python")], cwd=self.tmp,
            env=dict(os.environ, PIP_NO_INPUT="1"))
        out = run([os.path.join(venv, "bin", "python"), "-c",
                   "import abuseguard, os; print(abuseguard.__file__); "
                   "print(abuseguard.password_fingerprint(bytes(32), 'x'))"],
                  cwd=self.tmp).stdout.split()
        self.assertTrue(out[0].startswith(venv), out)
        self.assertRegex(out[1], r"^[0-9a-f]{64}$")
        # The build leaves nothing in the checkout (no build/, no
        # egg-info), ignored or not.
        self.assertEqual(self.status(), before)

    def test_node_packs_and_installs_offline(self):
        run(["npm", "pack", "--pack-destination", self.tmp],
            cwd=os.path.join(CLIENTS, "node"))
        (tarball,) = glob.glob(os.path.join(self.tmp, "abuseguard-*.tgz"))
        listed = run(["tar", "tzf", tarball]).stdout.split()
        self.assertIn("package/index.d.ts", listed)
        self.assertEqual([f for f in listed if "/test/" in f], [])
        app = os.path.join(self.tmp, "app")
        os.mkdir(app)
        with open(os.path.join(app, "package.json"), "w") as f:
            f.write('{"name": "app", "version": "1.0.0", "type": "module"}')
        run(["npm", "install", "--offline", "--no-audit", "--no-fund",
             tarball], cwd=app)
        out = run(["node", "-e", "import('abuseguard').then(m => "
                   "console.log(typeof m.Client, "
                   "m.passwordFingerprint(new Uint8Array(32), 'x')))"],
                  cwd=app).stdout.split()
        self.assertEqual(out[0], "function")
        self.assertRegex(out[1], r"^[0-9a-f]{64}$")

    def test_go_builds_and_vets_without_a_module_proxy(self):
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off",
                   GOSUMDB="off", GOTOOLCHAIN="local",
                   GOCACHE=os.path.join(self.tmp, "gocache"))
        run(["go", "vet", "./..."], cwd=os.path.join(CLIENTS, "go"),
            env=env)
        with open(os.path.join(CLIENTS, "go", "go.mod")) as f:
            mod = f.read()
        self.assertIn("go 1.19", mod)
        self.assertNotIn("require", mod)  # the standard library only


if __name__ == "__main__":
    unittest.main()
