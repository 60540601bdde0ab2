# SPDX-License-Identifier: Apache-2.0
"""The Debian package: made by packaging/image.sh --make-deb, with cpack,
from the Release build in build-release/ (which scripts/test.sh builds
first; the script configures or brings it up to date), inspected with
dpkg-deb, unpacked into scratch roots whose
maintainer scripts run with DPKG_ROOT (as dpkg --root
--force-script-chrootless runs them), and the installed binary served with
the packaged configuration against a private redis-server.

Needs root (the postinst gives the secrets to the package's user, and the
service runs as that user here), cmake, cpack, dpkg-dev, systemd-sysusers
and systemd-analyze (scripts/deps.sh installs them).
"""
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import unittest
import urllib.request

from harness import Redis, free_port, wait_until

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONF = "/etc/abuseguard/abuseguard.conf"
SECRET = "/etc/abuseguard/secret.key"
TOKEN = "/etc/abuseguard/admin.token"
STATE = "/var/lib/abuseguard"
UNIT = "/lib/systemd/system/abuseguard.service"
# The keys the configuration file refuses (ag_config.c read_config).
NOT_IN_FILE = {"help", "version", "config"}
# The largest --max-conns (ag_config_flags.c) plus the margin ag_http_reserve_fds
# asks for at the most worker threads: 64 and 3 for each of 256.
MOST_FDS = 100000 + 64 + 3 * 256


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        m = re.search(r"project\(abuseguard VERSION ([0-9.]+)", f.read())
    return m.group(1)


def run(args, **kw):
    kw.setdefault("timeout", 300)
    return subprocess.run(args, capture_output=True, text=True, **kw)


def checked(args, **kw):
    r = run(args, **kw)
    if r.returncode != 0:
        raise AssertionError("%s exited %d:\n%s%s" % (
            " ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def parse_help(text):
    """{flag name: default text or ""} from --help."""
    flags, name = {}, None
    for line in text.splitlines():
        m = re.match(r"^  --([a-z0-9-]+) ", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"^ +\(([A-Z0-9_]+)(?:, default (.*))?\)$", line)
        if name and m:
            flags[name] = m.group(2) or ""
            name = None
    return flags


def parse_conf(text):
    """({key: value} set, {key: value} commented out) of a config file."""
    live, commented = {}, {}
    for line in text.splitlines():
        m = re.match(r"^(#?)([a-z0-9-]+) =(?: (.*))?$", line)
        if m:
            (commented if m.group(1) else live)[m.group(2)] = m.group(3) or ""
    return live, commented


def unit_directives(text):
    """[Service] directives as {key: [values in order]}."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            k, _, v = line.partition("=")
            out.setdefault(k, []).append(v)
    return out


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("the package test needs root: the postinst "
                                 "chowns the secrets to the package's user")
        cls.work = tempfile.mkdtemp(prefix="ag-pkg-")
        # Runs even when the build below fails, unlike tearDownClass.
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        # The service runs as the package's user and must reach its files.
        os.chmod(cls.work, 0o755)
        cls.version = project_version()
        # The .deb the image is made from, by the same step; a build of
        # its own took 40 s of the suite's two cores.
        build = os.path.join(SOURCE, "build-release")
        out = os.path.join(cls.work, "out")
        checked([os.path.join(SOURCE, "packaging", "image.sh"),
                 "--make-deb", out, "--build-dir", build], timeout=600)
        cls.debs = sorted(f for f in os.listdir(out) if f.endswith(".deb"))
        cls.deb = os.path.join(out, cls.debs[0]) if cls.debs else None
        cls.built_binary = os.path.join(build, "abuseguard")

    def field(self, name):
        return checked(["dpkg-deb", "-f", self.deb, name]).stdout.strip()

    def member(self, path):
        """The text of one file of the package, read from an unpacked
        root."""
        with open(self.unpacked() + path) as f:
            return f.read()

    def unpacked(self):
        root = tempfile.mkdtemp(prefix="root-", dir=self.work)
        os.chmod(root, 0o755)
        checked(["dpkg-deb", "-x", self.deb, root])
        return root

    def maintainer_script(self, root, name, *args):
        """Runs a maintainer script of the package against root, as dpkg
        does for a chrootless --root install."""
        control = tempfile.mkdtemp(prefix="control-", dir=self.work)
        checked(["dpkg-deb", "-e", self.deb, control])
        env = dict(os.environ, DPKG_ROOT=root,
                   DPKG_MAINTSCRIPT_PACKAGE="abuseguard",
                   DPKG_MAINTSCRIPT_NAME=name)
        return checked([os.path.join(control, name), *args], env=env)

    def installed(self):
        """A scratch root with the package unpacked and configured."""
        root = self.unpacked()
        out = self.maintainer_script(root, "postinst", "configure", "")
        return root, out

    def service_user(self, root):
        with open(root + "/etc/passwd") as f:
            for line in f:
                fields = line.split(":")
                if fields[0] == "abuseguard":
                    return int(fields[2]), int(fields[3])
        self.fail("no abuseguard user in %s/etc/passwd" % root)

    def test_package_is_named_for_the_project_version_and_architecture(self):
        arch = checked(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertEqual(self.debs, ["abuseguard_%s_%s.deb" % (self.version,
                                                                arch)])

    def test_control_fields_name_the_package_and_its_maintainer(self):
        self.assertEqual(self.field("Package"), "abuseguard")
        self.assertEqual(self.field("Version"), self.version)
        self.assertEqual(self.field("Architecture"),
                         checked(["dpkg", "--print-architecture"])
                         .stdout.strip())
        self.assertRegex(self.field("Maintainer"), r"^[^<>]+ <[^@<>]+@[^<>]+>$")
        description = self.field("Description")
        self.assertIn("abuse protection", description.splitlines()[0])
        self.assertGreater(len(description.splitlines()), 2)
        self.assertEqual(self.field("Recommends"), "redis-server")

    def test_depends_lists_the_package_of_every_library_the_binary_needs(self):
        depends = self.field("Depends")
        names = {alt.split()[0] for dep in depends.split(",")
                 for alt in dep.split("|")}
        for lib in ["libmicrohttpd12", "libhiredis0.14", "libsqlite3-0",
                    "libsodium23", "libjansson4", "libssl3",
                    "libunistring2", "libidn2-0", "libc6"]:
            self.assertIn(lib, names, depends)
        # Whatever the binary links directly, found from its dynamic
        # section, must be in a package Depends names.
        binary = self.unpacked() + "/usr/bin/abuseguard"
        dynamic = checked(["readelf", "-d", binary]).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)
        self.assertIn("libhiredis.so.0.14", needed)
        ldd = checked(["ldd", binary]).stdout
        for lib in needed:
            m = re.search(r"^\s*%s => (\S+)" % re.escape(lib), ldd, re.M)
            self.assertIsNotNone(m, "ldd does not resolve %s" % lib)
            owner = None
            for path in (m.group(1), os.path.realpath(m.group(1)),
                         "/usr" + m.group(1)):
                r = run(["dpkg", "-S", path])
                if r.returncode == 0:
                    owner = r.stdout.split(":")[0]
                    break
            self.assertIsNotNone(owner, "no package owns %s" % lib)
            self.assertIn(owner, names, "%s (%s) not in Depends: %s" %
                          (lib, owner, depends))
        self.assertIn("systemd-sysusers", names)
        # The postinst runs awk, which is not Essential.
        self.assertIn("awk", names)

    def test_package_holds_the_binary_config_unit_policies_and_docs(self):
        listing = checked(["dpkg-deb", "-c", self.deb]).stdout
        entries = {}
        for line in listing.splitlines():
            parts = line.split()
            entries[parts[5].lstrip(".")] = (parts[0], parts[1])
        policies = sorted(f for f in os.listdir(os.path.join(SOURCE,
                                                             "policies"))
                          if f.endswith(".json"))
        self.assertTrue(policies)
        # The reference the README links to, beside it as in the tree.
        docs = ["/usr/share/doc/abuseguard/docs/%s.md" % d
                for d in ["http-api", "admin", "events", "configuration",
                          "operations", "policies", "pwned",
                          "monitoring"]]
        docs += ["/usr/share/doc/abuseguard/deploy/monitoring/" + f
                 for f in ["abuseguard-rules.yaml",
                           "abuseguard-dashboard.json"]]
        expected = ["/usr/bin/abuseguard", CONF, UNIT,
                    "/usr/lib/sysusers.d/abuseguard.conf",
                    "/usr/share/doc/abuseguard/copyright",
                    "/usr/share/doc/abuseguard/README.md",
                    "/usr/share/doc/abuseguard/abuseguard-help.txt"] + [
                        "/usr/share/abuseguard/policies/" + p
                        for p in policies] + docs
        for path in expected:
            self.assertIn(path, entries, listing)
            self.assertEqual(entries[path][1], "root/root", path)
        self.assertEqual(entries["/usr/bin/abuseguard"][0], "-rwxr-xr-x")
        self.assertEqual(entries[CONF][0], "-rw-r--r--")
        # The secrets are made on the machine, never shipped.
        self.assertNotIn(SECRET, entries)
        self.assertNotIn(TOKEN, entries)
        for p in policies:
            with open(os.path.join(SOURCE, "policies", p)) as f:
                self.assertEqual(
                    self.member("/usr/share/abuseguard/policies/" + p),
                    f.read())

    def test_copyright_is_machine_readable_and_names_apache_2(self):
        text = self.member("/usr/share/doc/abuseguard/copyright")
        paragraphs = text.split("\n\n")
        self.assertTrue(paragraphs[0].startswith(
            "Format: https://www.debian.org/doc/packaging-manuals/"
            "copyright-format/1.0/"), paragraphs[0])
        files = [p for p in paragraphs if p.startswith("Files: *")]
        self.assertEqual(len(files), 1, text)
        self.assertIn("\nLicense: Apache-2.0", files[0])
        # The stand-alone licence paragraph points at Debian's full text,
        # which the format allows instead of quoting it.
        self.assertIn("License: Apache-2.0\n Licensed under the Apache",
                      text)
        self.assertIn("/usr/share/common-licenses/Apache-2.0", text)

    def test_configuration_file_is_a_conffile(self):
        control = tempfile.mkdtemp(prefix="control-", dir=self.work)
        checked(["dpkg-deb", "-e", self.deb, control])
        with open(os.path.join(control, "conffiles")) as f:
            self.assertEqual(f.read().split(), [CONF])
        for script in ["postinst", "prerm", "postrm"]:
            mode = os.stat(os.path.join(control, script)).st_mode
            self.assertEqual(stat.S_IMODE(mode), 0o755, script)

    def test_configuration_file_lists_every_flag_of_help_with_its_default(self):
        help_text = checked([self.built_binary, "--help"]).stdout
        flags = parse_help(help_text)
        self.assertIn("max-conns", flags)
        live, commented = parse_conf(self.member(CONF))
        self.assertEqual(set(live) | set(commented), set(flags) - NOT_IN_FILE)
        self.assertFalse(set(live) & set(commented))
        for key, value in commented.items():
            self.assertEqual(value, flags[key], key)
        self.assertEqual(live, {"db": STATE + "/policies.db",
                                "secret-file": SECRET,
                                "admin-token-file": TOKEN})
        self.assertEqual(self.member("/usr/share/doc/abuseguard/"
                                     "abuseguard-help.txt"), help_text)

    def test_every_default_in_the_configuration_file_is_accepted(self):
        # Uncommenting every key must give a file the binary takes: the
        # parser validates the file's values before --help answers.
        text = self.member(CONF)
        uncommented = re.sub(r"^#([a-z0-9-]+ =)", r"\1", text, flags=re.M)
        self.assertGreater(len(parse_conf(uncommented)[0]), 20)
        path = os.path.join(self.work, "uncommented.conf")
        with open(path, "w") as f:
            f.write(uncommented)
        r = run([self.built_binary, "--config", path, "--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        # A bad value would have been refused: the check is real.
        with open(path, "a") as f:
            f.write("max-conns = 0\n")
        r = run([self.built_binary, "--config", path, "--help"])
        self.assertEqual(r.returncode, 2)

    def test_unit_passes_systemd_analyze_verify(self):
        root = self.unpacked()
        # The unit's default dependencies are the system's targets; verify
        # looks for them, and for ExecStart's binary, under --root.
        units = root + "/lib/systemd/system"
        for name in os.listdir("/lib/systemd/system"):
            if name.endswith(".target"):
                shutil.copy("/lib/systemd/system/" + name, units)
        r = run(["systemd-analyze", "verify", "--root=" + root,
                 "abuseguard.service"])
        # verify exits 0 on an unknown key or a bad value, and says so.
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))
        # It does look: without the binary, the same call fails.
        os.remove(root + "/usr/bin/abuseguard")
        r = run(["systemd-analyze", "verify", "--root=" + root,
                 "abuseguard.service"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/usr/bin/abuseguard", r.stderr)

    def test_unit_runs_the_service_unprivileged_and_hardened(self):
        d = unit_directives(self.member(UNIT))
        self.assertEqual(d["ExecStart"],
                         ["/usr/bin/abuseguard --config " + CONF])
        self.assertEqual(d["User"], ["abuseguard"])
        self.assertEqual(d["StateDirectory"], ["abuseguard"])
        self.assertEqual(d["Restart"], ["on-failure"])
        for key, value in [("NoNewPrivileges", "yes"),
                           ("ProtectSystem", "strict"),
                           ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                           ("PrivateDevices", "yes"),
                           ("ProtectKernelTunables", "yes"),
                           ("ProtectKernelModules", "yes"),
                           ("ProtectControlGroups", "yes"),
                           ("CapabilityBoundingSet", ""),
                           ("RestrictAddressFamilies",
                            "AF_INET AF_INET6 AF_UNIX"),
                           ("SystemCallArchitectures", "native")]:
            self.assertEqual(d.get(key), [value], key)
        self.assertIn("@system-service", d["SystemCallFilter"])
        self.assertGreaterEqual(int(d["LimitNOFILE"][0]), MOST_FDS)
        # Nothing beyond the StateDirectory needs writing.
        self.assertNotIn("ReadWritePaths", d)
        # The service has no SIGHUP handler: a reload would kill it.
        self.assertNotIn("ExecReload", d)

    def test_postinst_creates_private_secrets_owned_by_the_service_user(self):
        root, out = self.installed()
        uid, gid = self.service_user(root)
        with open(root + "/etc/passwd") as f:
            self.assertIn("abuseguard:x:%d:%d:" % (uid, gid), f.read())
        self.assertNotEqual(uid, 0)
        for path in [SECRET, TOKEN]:
            st = os.stat(root + path)
            self.assertTrue(stat.S_ISREG(st.st_mode), path)
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, path)
            self.assertEqual((st.st_uid, st.st_gid), (uid, gid), path)
        st = os.stat(root + STATE)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (uid, 0o750))
        with open(root + SECRET, "rb") as f:
            key = f.read()
        with open(root + TOKEN) as f:
            token = f.read().strip()
        self.assertEqual(len(key), 32)
        self.assertGreater(len(set(key)), 1)
        self.assertTrue(16 <= len(token) <= 1024)
        # Never printed, not even in part.
        self.assertNotIn(token[:8], out.stdout + out.stderr)
        self.assertEqual(sorted(os.listdir(root + "/etc/abuseguard")),
                         ["abuseguard.conf", "admin.token", "secret.key"])

    def test_postinst_run_again_keeps_the_secrets_and_the_user(self):
        root, _ = self.installed()
        before = {}
        for path in [SECRET, TOKEN]:
            with open(root + path, "rb") as f:
                before[path] = f.read()
        with open(root + "/etc/passwd") as f:
            passwd = f.read()
        # An upgrade's configure, then a reconfigure.
        self.maintainer_script(root, "postinst", "configure", "0.0.9")
        self.maintainer_script(root, "postinst", "configure", self.version)
        for path in [SECRET, TOKEN]:
            with open(root + path, "rb") as f:
                self.assertEqual(f.read(), before[path], path)
            self.assertEqual(stat.S_IMODE(os.stat(root + path).st_mode),
                             0o600)
        with open(root + "/etc/passwd") as f:
            self.assertEqual(f.read(), passwd)

    def test_postrm_purge_removes_the_state_and_the_secrets(self):
        root, _ = self.installed()
        with open(root + STATE + "/policies.db", "w") as f:
            f.write("x")
        self.maintainer_script(root, "postrm", "remove")
        self.assertTrue(os.path.exists(root + SECRET))
        self.assertTrue(os.path.exists(root + STATE + "/policies.db"))
        self.maintainer_script(root, "postrm", "purge")
        for path in [SECRET, TOKEN, STATE]:
            self.assertFalse(os.path.exists(root + path), path)

    def test_dpkg_installs_reinstalls_and_purges_it_in_a_scratch_root(self):
        # dpkg itself, on an empty root: it runs the maintainer scripts
        # chrootless (with DPKG_ROOT) and records the conffile. The root
        # has none of the libraries, hence --force-depends.
        root = tempfile.mkdtemp(prefix="dpkg-", dir=self.work)
        for d in ["info", "updates", "triggers"]:
            os.makedirs(root + "/var/lib/dpkg/" + d)
        for f in ["status", "available"]:
            open(root + "/var/lib/dpkg/" + f, "w").close()
        dpkg = ["dpkg", "--root=" + root, "--force-script-chrootless",
                "--force-depends", "--log=/dev/null"]
        checked(dpkg + ["-i", self.deb])
        with open(root + SECRET, "rb") as f:
            key = f.read()
        status = checked(dpkg + ["-s", "abuseguard"]).stdout
        self.assertIn("Status: install ok installed", status)
        self.assertRegex(status, r"Conffiles:\n %s [0-9a-f]{32}" % CONF)
        checked(dpkg + ["-i", self.deb])
        with open(root + SECRET, "rb") as f:
            self.assertEqual(f.read(), key)
        checked(dpkg + ["--purge", "abuseguard"])
        for path in [CONF, SECRET, TOKEN, STATE, "/usr/bin/abuseguard"]:
            self.assertFalse(os.path.exists(root + path), path)

    def test_installed_binary_prints_the_package_version(self):
        root = self.unpacked()
        r = checked([root + "/usr/bin/abuseguard", "--version"])
        self.assertEqual(r.stdout.split()[:2], ["abuseguard", self.version])

    def start_installed(self, root, wrapper=()):
        """The installed binary as the package's user, with the packaged
        configuration and only what must differ from a real install: the
        harness's Redis, a spare port, and the files under the scratch
        root. Returns (process, base URL, a function reading its log)."""
        uid, gid = self.service_user(root)
        redis_dir = tempfile.mkdtemp(prefix="redis-", dir=self.work)
        self.redis = Redis(redis_dir)
        self.addCleanup(self.redis.stop)
        port = free_port()
        log_path = os.path.join(self.work, "service-%d.log" % port)
        log = open(log_path, "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [*wrapper, root + "/usr/bin/abuseguard", "--config", root + CONF,
             "--redis", self.redis.url(), "--listen", "127.0.0.1:%d" % port,
             "--db", root + STATE + "/policies.db",
             "--secret-file", root + SECRET,
             "--admin-token-file", root + TOKEN],
            stdout=log, stderr=subprocess.STDOUT, user=uid, group=gid,
            extra_groups=[], env={"PATH": "/usr/bin:/bin"})

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)
        base = "http://127.0.0.1:%d" % port

        def service_log():
            with open(log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")

        def healthy():
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        self.assertTrue(wait_until(healthy, 20), service_log())
        return proc, base, service_log

    def http(self, method, url, body=None, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data, headers, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())

    def exercise(self, root, base):
        """A login and an OTP check, the admin API read and written with
        the token the postinst made, and the metrics. First a check that
        Redis answers: the packaged --redis-timeout-ms is short, and on a
        loaded machine the first checks of a fresh connection (with its
        code load) may outlast it and be answered from the fallback."""
        self.assertTrue(wait_until(lambda: "degraded" not in self.http(
            "POST", base + "/check-login", {"user": "warm@example.org",
                                            "ip": "192.0.2.8"})[1],
            20.0, 0.1), "the installed service never reached Redis")
        status, answer = self.http("POST", base + "/check-login",
                                   {"user": "pkg@example.org",
                                    "ip": "192.0.2.7"})
        self.assertEqual(status, 200)
        self.assertTrue(answer["allowed"], answer)
        self.assertIn("login.user", [d["policy"] for d in
                                     answer["decisions"]])
        status, answer = self.http("POST", base + "/check-otp",
                                   {"phone": "+447911123456",
                                    "ip": "192.0.2.7"})
        self.assertEqual(status, 200)
        self.assertTrue(answer["decisions"], answer)
        with open(root + TOKEN) as f:
            token = f.read().strip()
        status, answer = self.http("GET", base + "/admin/policies",
                                   token=token)
        self.assertEqual(status, 200)
        self.assertTrue(answer["policies"])
        status, _ = self.http("PUT", base + "/admin/policies/pkg.test",
                              {"endpoint": "login", "key": ["user"],
                               "algorithm": "fixed_window", "limit": 2,
                               "window_s": 60}, token=token)
        self.assertEqual(status, 201)
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            self.assertIn(b"abuseguard_checks_total", r.read())

    def test_installed_service_answers_a_check_with_the_packaged_config(self):
        root, _ = self.installed()
        uid, _ = self.service_user(root)
        proc, base, service_log = self.start_installed(root)
        self.exercise(root, base)
        # The database was made by the service user, in the state
        # directory.
        self.assertEqual(os.stat(root + STATE + "/policies.db").st_uid, uid)
        self.assertTrue(self.redis.keys())
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, service_log())
        self.assertNotIn("pkg@example.org", service_log())

    def test_every_system_call_the_service_makes_passes_the_unit_filter(self):
        # There is no systemd to run the unit under here; instead the
        # service runs traced, and each system call it made must be in the
        # set the unit's SystemCallFilter lines allow.
        root, _ = self.installed()
        allowed = set()
        for line in unit_directives(self.member(UNIT))["SystemCallFilter"]:
            deny = line.startswith("~")
            calls = set()
            for group in line.lstrip("~").split():
                calls |= syscall_set(group)
            allowed = allowed - calls if deny else allowed | calls
        self.assertIn("epoll_wait", allowed)
        self.assertNotIn("mount", allowed)
        trace = os.path.join(self.work, "trace-%d" % free_port())
        # strace runs as the service user too, and writes there.
        open(trace, "w").close()
        os.chown(trace, *self.service_user(root))
        tracer, base, service_log = self.start_installed(
            root, wrapper=["strace", "-f", "-qq", "-o", trace, "--"])
        self.exercise(root, base)
        with open("/proc/%d/task/%d/children" % (tracer.pid, tracer.pid)) as f:
            service = int(f.read().split()[0])
        os.kill(service, signal.SIGTERM)
        self.assertEqual(tracer.wait(30), 0, service_log())
        with open(trace) as f:
            made = set(re.findall(r"^\d+ +([a-z0-9_]+)\(", f.read(), re.M))
        self.assertIn("accept4", made)
        self.assertIn("sendto", made)
        self.assertEqual(made - allowed, set())


def syscall_set(group):
    """The system calls a SystemCallFilter name stands for, groups
    expanded (systemd-analyze syscall-filter)."""
    if not group.startswith("@"):
        return {group}
    out = checked(["systemd-analyze", "syscall-filter", group]).stdout
    calls = set()
    for line in out.splitlines()[1:]:
        line = line.strip()
        if line and not line.startswith("#"):
            calls |= syscall_set(line)
    return calls

if __name__ == "__main__":
    unittest.main()
