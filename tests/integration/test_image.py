# SPDX-License-Identifier: Apache-2.0
"""The container image (packaging/image.sh): built once, offline, from the
local apt repository that scripts/test.sh fetched beforehand
(build-image-cache/ of this tree, or $AG_IMAGE_REPO), with the .deb that
cpack makes from build-release/ (or $AG_IMAGE_DEB); imported into a podman
storage of the test's own, removed afterwards; its configuration and root
file system inspected; then run read-only under runc on the host network
against a private redis-server, its secret a mounted file. deploy/compose.yaml
is judged against the image and the binary's flags.

Needs root, mmdebstrap, podman, runc and python3-yaml (scripts/deps.sh
--test), and the repository (packaging/image.sh --fetch build-image-cache).
Nothing here downloads anything.
"""
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import unittest
import urllib.request

import yaml

from harness import BINARY, Redis, free_port, wait_until
from test_package import checked, project_version, run

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "packaging", "image.sh")
COMPOSE = os.path.join(SOURCE, "deploy", "compose.yaml")
TAG = "localhost/abuseguard"
# Any fixed time: the tarball's dates are clamped to it.
EPOCH = 1767225600
UID = 10001
STATE = "/var/lib/abuseguard"
SECRET = "/run/secrets/secret.key"
# Beyond this, podman stop would have sent SIGKILL.
STOP_S = 20


def help_variables():
    """Every ABUSEGUARD_* variable the binary's --help lists."""
    text = checked([BINARY, "--help"]).stdout
    return set(re.findall(r"\((ABUSEGUARD_[A-Z0-9_]+)", text))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("the image test needs root (mmdebstrap's "
                                 "root mode, podman's storage)")
        repo = os.environ.get("AG_IMAGE_REPO") or os.path.join(
            SOURCE, "build-image-cache")
        if not os.path.exists(os.path.join(repo, "Packages")):
            raise AssertionError(
                "no local repository at %s: run packaging/image.sh --fetch "
                "%s (scripts/test.sh does) before the test" % (repo, repo))
        cls.work = tempfile.mkdtemp(prefix="ag-image-")
        # Runs even when the build below fails, unlike tearDownClass: the
        # containers first, then every file of the storage.
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        cls.podman = ["podman", "--root", os.path.join(cls.work, "storage"),
                      "--runroot", os.path.join(cls.work, "run"),
                      "--storage-driver", "vfs"]
        cls.addClassCleanup(run, cls.podman + ["rm", "--all", "--force",
                                               "--time", "0"])
        cls.tar = os.path.join(cls.work, "rootfs.tar")
        cls.env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH),
                       PODMAN=" ".join(cls.podman), TMPDIR=cls.work)
        # One .deb for both builds of the root.
        deb = os.environ.get("AG_IMAGE_DEB") or checked(
            [SCRIPT, "--make-deb", os.path.join(cls.work, "deb")],
            env=cls.env, timeout=480).stdout.strip()
        cls.args = [SCRIPT, "--repo", repo, "--deb", deb]
        out = checked(cls.args + ["--tar", cls.tar], env=cls.env,
                      timeout=480).stdout
        cls.version = project_version()
        cls.assert_tag = "%s:%s" % (TAG, cls.version)
        if out.strip() != cls.assert_tag:
            raise AssertionError("image.sh printed %r" % out)
        info = json.loads(checked(cls.podman + ["image", "inspect",
                                                cls.assert_tag]).stdout)
        cls.image = info[0]
        cls.config = cls.image["Config"]
        cls.members = checked(["tar", "-tf", cls.tar]).stdout.splitlines()

    def member(self, path):
        return checked(["tar", "-xOf", self.tar, "." + path]).stdout

    def test_image_runs_as_the_packages_user_whose_id_is_pinned(self):
        self.assertEqual(self.config["User"], "%d:%d" % (UID, UID))
        passwd = [line.split(":") for line in
                  self.member("/etc/passwd").splitlines()]
        user = [p for p in passwd if p[0] == "abuseguard"]
        self.assertEqual(len(user), 1, passwd)
        self.assertEqual(user[0][2:4], [str(UID), str(UID)])
        self.assertEqual(user[0][5], STATE)
        self.assertEqual([p[0] for p in passwd if p[2] == str(UID)],
                         ["abuseguard"])
        # Its state directory, the volume, is its own and private.
        listing = checked(["tar", "-tvf", self.tar, "." + STATE + "/"],
                          timeout=60).stdout.splitlines()
        mode, owner = listing[0].split()[:2]
        self.assertEqual((mode, owner), ("drwxr-x---", "%d/%d" % (UID, UID)))

    def test_image_config_names_the_entrypoint_volume_port_and_labels(self):
        c = self.config
        self.assertEqual(c["Entrypoint"], ["/usr/bin/abuseguard"])
        self.assertFalse(c.get("Cmd"))
        self.assertEqual(list(c["Volumes"]), [STATE])
        self.assertEqual(c["WorkingDir"], STATE)
        self.assertEqual(list(c["ExposedPorts"]), ["8080/tcp"])
        self.assertIn(c["StopSignal"], ("15", "SIGTERM"))
        env = dict(e.split("=", 1) for e in c["Env"])
        self.assertEqual(env["ABUSEGUARD_LISTEN"], "0.0.0.0:8080")
        self.assertEqual(env["ABUSEGUARD_DB"], STATE + "/policies.db")
        self.assertEqual(env["ABUSEGUARD_SECRET_FILE"], SECRET)
        # Every variable is one the service reads, and none holds a secret
        # itself: only paths to files.
        names = {k for k in env if k.startswith("ABUSEGUARD_")}
        self.assertEqual(names - help_variables(), set())
        labels = c["Labels"]
        self.assertEqual(labels["org.opencontainers.image.version"],
                         self.version)
        self.assertEqual(labels["org.opencontainers.image.created"],
                         "2026-01-01T00:00:00Z")
        self.assertEqual(labels["org.opencontainers.image.licenses"],
                         "Apache-2.0")
        self.assertEqual(labels["org.opencontainers.image.title"],
                         "abuseguard")
        self.assertRegex(labels["org.opencontainers.image.revision"],
                         r"^([0-9a-f]{40}|unknown)$")

    def test_root_holds_no_curl_apt_secret_or_documentation(self):
        files = {m.lstrip(".") for m in self.members}
        self.assertIn("/usr/bin/abuseguard", files)
        absent = ["/usr/bin/curl", "/usr/bin/wget", "/usr/bin/apt",
                  "/usr/bin/apt-get", "/usr/bin/gcc", "/usr/bin/cpan",
                  "/etc/abuseguard/secret.key",
                  "/etc/abuseguard/admin.token", "/etc/apt/sources.list"]
        self.assertEqual([f for f in absent if f in files], [])
        docs = [f for f in files if f.startswith("/usr/share/doc/")
                and f.count("/") >= 5 and not f.endswith("/")]
        self.assertTrue(docs)
        self.assertEqual([f for f in docs if not f.endswith("/copyright")],
                         [])
        self.assertFalse([f for f in files if f.startswith("/usr/share/man/")
                          and not f.endswith("/")])
        # The licences stay: ours, and every package's that has files.
        for pkg in ["abuseguard", "libc6", "libhiredis0.14", "libsodium23",
                    "libmicrohttpd12", "base-files"]:
            self.assertIn("/usr/share/doc/%s/copyright" % pkg, files)
        # dpkg's database stays, for image scanners.
        self.assertIn("Package: abuseguard\n",
                      self.member("/var/lib/dpkg/status"))
        # Nothing of the build host: its name and resolver stay out.
        self.assertNotIn("/etc/hostname", files)
        self.assertEqual(self.member("/etc/resolv.conf"), "")
        entry = checked(["tar", "-tvf", self.tar, "./etc/resolv.conf"],
                        timeout=60).stdout
        self.assertTrue(entry.startswith("-rw-r--r-- 0/0 "), entry)
        # The CA certificates, for https:// webhooks and rediss://.
        self.assertIn("BEGIN CERTIFICATE",
                      self.member("/etc/ssl/certs/ca-certificates.crt"))
        # No set-user or set-group id program.
        listing = checked(["tar", "-tvf", self.tar],
                          timeout=60).stdout.splitlines()
        setid = [line for line in listing
                 if line[0] == "-" and (line[3] in "sS" or line[6] in "sS")]
        self.assertEqual(setid, [])

    def test_image_layer_is_the_tarball_made_from_the_epoch(self):
        self.assertEqual(self.image["RootFS"]["Layers"],
                         ["sha256:" + sha256_file(self.tar)])
        # Every date in it is clamped to SOURCE_DATE_EPOCH: no file says
        # when it was built, our package's included.
        listing = checked(["tar", "--full-time", "-tvf", self.tar],
                          timeout=60).stdout.splitlines()
        dates = {" ".join(line.split()[3:5]) for line in listing}
        self.assertEqual(max(dates), "2026-01-01 00:00:00")

    def test_second_build_from_the_same_epoch_is_byte_identical(self):
        # A second root from the same packages and epoch: the same bytes,
        # though built with no network at all (the repository is local)
        # on a host of another name and resolver.
        again = os.path.join(self.work, "again.tar")
        other = tempfile.mkdtemp(prefix="host-", dir=self.work)
        hostname = os.path.join(other, "hostname")
        resolv = os.path.join(other, "resolv.conf")
        with open(hostname, "w") as f:
            f.write("another-builder\n")
        with open(resolv, "w") as f:
            f.write("nameserver 192.0.2.53\n")
        checked(["unshare", "--net", "--mount", "sh", "-c",
                 'mount --bind "$1" /etc/hostname && '
                 'mount --bind "$2" /etc/resolv.conf && shift 2 && '
                 'exec "$@"', "sh", hostname, resolv,
                 *self.args, "--tar", again, "--no-import"],
                env=self.env, timeout=480)
        self.assertEqual(sha256_file(again), sha256_file(self.tar))

    def test_image_serves_checks_read_only_and_stops_gracefully(self):
        redis = Redis(self.work)
        self.addCleanup(redis.stop)
        port = free_port()
        run_dir = tempfile.mkdtemp(prefix="ctr-", dir=self.work)
        # The secret as a platform mounts one: owned by the image's user,
        # mode 0600 (the service refuses more).
        secret = os.path.join(run_dir, "secret.key")
        with open(secret, "wb") as f:
            f.write(secrets.token_bytes(32))
        os.chown(secret, UID, UID)
        os.chmod(secret, 0o600)
        state = os.path.join(run_dir, "state")
        os.mkdir(state, 0o750)
        os.chown(state, UID, UID)
        name = "ag-image-%d" % port
        checked(self.podman + [
            "run", "--detach", "--name", name, "--runtime", "runc",
            "--network", "host", "--read-only", "--cap-drop", "all",
            "--security-opt", "no-new-privileges",
            "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
            "--env", "ABUSEGUARD_REDIS=" + redis.url(),
            "--env", "ABUSEGUARD_LISTEN=127.0.0.1:%d" % port,
            "--env", "ABUSEGUARD_THREADS=1",
            "--volume", "%s:%s:ro" % (secret, SECRET),
            "--volume", "%s:%s" % (state, STATE), self.assert_tag])
        self.addCleanup(run, self.podman + ["rm", "--force", "--time", "0",
                                            name])

        def logs():
            r = run(self.podman + ["logs", name])
            return r.stdout + r.stderr
        base = "http://127.0.0.1:%d" % port

        def status(path):
            try:
                with urllib.request.urlopen(base + path, timeout=2) as r:
                    return r.status
            except OSError:
                return None
        self.assertTrue(wait_until(lambda: status("/readyz") == 200, 30),
                        logs())

        def check(user):
            req = urllib.request.Request(
                base + "/check-login", json.dumps(
                    {"user": user, "ip": "192.0.2.7"}).encode(),
                {"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        # A fresh connection's first checks may outlast the short Redis
        # timeout on a loaded machine (see test_package.exercise), or the
        # answer its HTTP timeout: asked again until one is not degraded.
        def warm():
            try:
                return "degraded" not in check("warm@example.org")[1]
            except OSError:
                return False
        self.assertTrue(wait_until(warm, 20.0, 0.1), logs())
        code, answer = check("image@example.org")
        self.assertEqual(code, 200)
        self.assertTrue(answer["allowed"], answer)
        self.assertIn("login.user", [d["policy"] for d in
                                     answer["decisions"]])
        self.assertTrue(redis.keys())
        # The platform's probes, from inside, with no curl.
        for probe in (["healthcheck"], ["healthcheck", "--ready"]):
            r = run(self.podman + ["exec", name, "abuseguard", *probe])
            self.assertEqual(r.returncode, 0, r.stderr)
        # The root is read-only; the database went to the volume.
        r = run(self.podman + ["exec", name, "sh", "-c", "echo > /etc/x"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Read-only file system", r.stderr)
        self.assertEqual(os.stat(os.path.join(state, "policies.db")).st_uid,
                         UID)
        # SIGTERM drains and exits 0 (podman's SIGKILL, STOP_S later,
        # would make it 137).
        checked(self.podman + ["stop", "--time", str(STOP_S), name],
                timeout=STOP_S + 30)
        code = checked(self.podman + ["inspect", "--format",
                                      "{{.State.ExitCode}}", name]).stdout
        self.assertEqual(code.strip(), "0", logs())
        self.assertIn('"stopped"', logs())
        self.assertNotIn("image@example.org", logs())

    def test_compose_file_runs_this_image_as_the_image_expects(self):
        with open(COMPOSE) as f:
            compose = yaml.safe_load(f)
        services = compose["services"]
        self.assertEqual(set(services), {"abuseguard", "redis"})
        ag = services["abuseguard"]
        # Our image is the one built here, never pulled.
        self.assertEqual(ag["image"], "${ABUSEGUARD_IMAGE:-%s:latest}" % TAG)
        self.assertEqual(ag["pull_policy"], "never")
        self.assertIs(ag["read_only"], True)
        self.assertEqual(ag["cap_drop"], ["ALL"])
        env = ag["environment"]
        self.assertEqual(set(env) - help_variables(), set())
        self.assertEqual(env["ABUSEGUARD_REDIS"], "redis://redis:6379")
        self.assertEqual(ag["depends_on"]["redis"]["condition"],
                         "service_healthy")
        # Every file a variable (the image's or the file's) names is a
        # secret the file mounts, under /run/secrets.
        image_env = dict(e.split("=", 1) for e in self.config["Env"])
        files = {v for k, v in {**image_env, **env}.items()
                 if k.endswith("_FILE")}
        mounted = {"/run/secrets/" + s for s in ag["secrets"]}
        self.assertEqual(files, mounted)
        self.assertEqual(set(ag["secrets"]), set(compose["secrets"]))
        for s in compose["secrets"].values():
            self.assertTrue(s["file"].startswith("./secrets/"), s)
        # The state volume is the image's volume; the probe is ours.
        targets = [v.split(":")[1] for v in ag["volumes"]]
        self.assertEqual(targets, list(self.config["Volumes"]))
        self.assertEqual(ag["healthcheck"]["test"],
                         ["CMD", "abuseguard", "healthcheck", "--ready"])
        published = [p.rsplit(":", 1)[1] for p in ag["ports"]]
        self.assertEqual(["%s/tcp" % p for p in published],
                         list(self.config["ExposedPorts"]))


if __name__ == "__main__":
    unittest.main()
