# SPDX-License-Identifier: Apache-2.0
"""The monitoring mixin (issue 42), tested like code: the rules pass
promtool's check and its unit tests (tests/monitoring/rules_test.yaml),
which fire and clear every alert; every alert links a runbook section of
docs/operations.md that exists; every metric name the rules and the
dashboard use is one a real running abuseguard exports, configured with
everything that adds metrics (the default policies' shields, a
breached-password corpus, country and ASN databases, an IP list, a
webhook), so a renamed metric fails here; every label they group by is
one the service exports, none an identifier; and every panel's PromQL
parses, checked by promtool as the expression of a recording rule."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.parse
import urllib.request

import yaml

from harness import BINARY, free_port, make_secret, wait_until
from test_network import NetworkFiles

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from check_markdown import anchors  # noqa: E402

MIXIN = os.path.join(ROOT, "deploy", "monitoring")
RULES = os.path.join(MIXIN, "abuseguard-rules.yaml")
DASHBOARD = os.path.join(MIXIN, "abuseguard-dashboard.json")
# The unit tests: alerts over minutes, and over days (rules_age_test.yaml,
# evaluated an hour at a time).
RULE_TESTS = [os.path.join(ROOT, "tests", "monitoring", name)
              for name in ("rules_test.yaml", "rules_age_test.yaml")]
OPERATIONS = os.path.join(ROOT, "docs", "operations.md")
RUNBOOKS = ("https://github.com/abuseguard/abuseguard/blob/main/"
            "docs/operations.md#")

METRIC = re.compile(r"(?<![\w:])abuseguard_[a-z0-9_]+(?![\w:])")
RECORDED = re.compile(r"\b[a-z_]+:abuseguard_[a-z0-9_]+:[a-z0-9_]+")
BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
# Grafana's variables, as a query would run: every instance of the job.
VARIABLES = {"$__rate_interval": "1m", "$__interval": "1m",
             "$__range": "1h", "$job": "abuseguard", "$instance": ".*"}
# Labels Prometheus adds to every series, and histogram buckets' own.
TARGET_LABELS = {"job", "instance", "le"}
# What must never be a label: an identifier makes series without bound.
IDENTIFIERS = {"user", "ip", "address", "key", "phone", "device", "email",
               "ref", "password", "subject"}


def load_rules():
    with open(RULES) as f:
        return yaml.safe_load(f)


def rules_of(doc):
    return [r for g in doc["groups"] for r in g["rules"]]


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def panels_of(dashboard):
    for p in dashboard["panels"]:
        yield p
        yield from p.get("panels", [])


def dashboard_queries(dashboard):
    """(where, PromQL) for every panel target, Grafana's variables put in;
    and the variables' label_values() queries, as their selector."""
    out = []
    for p in panels_of(dashboard):
        for t in p.get("targets", []):
            out.append(("panel %r %s" % (p["title"], t["refId"]),
                        substitute(t["expr"])))
    for v in dashboard["templating"]["list"]:
        m = re.fullmatch(r"label_values\((.*),\s*\w+\)", v["definition"])
        if m:
            out.append(("variable %s" % v["name"], substitute(m.group(1))))
    return out


def substitute(expr):
    for name in sorted(VARIABLES, key=len, reverse=True):
        expr = expr.replace(name, VARIABLES[name])
    return expr


def seconds(duration):
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(int(n) * units[u]
               for n, u in re.findall(r"(\d+)([smhd])", duration))


def exported(metrics_text):
    """The metric names a /metrics page declares (its # TYPE lines), with a
    histogram's series names, and every label name its samples carry."""
    names, labels = set(), set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.add(name)
            if kind == "histogram":
                names.update(name + s for s in ("_bucket", "_sum", "_count"))
        elif line and not line.startswith("#") and "{" in line:
            body = line[line.index("{") + 1:line.rindex("}")]
            labels.update(re.findall(r'(\w+)="', body))
    return names, labels


def unknown_names(exprs, names, recorded):
    """The metric names the expressions use that nothing exports or
    records, each with where it is used."""
    missing = []
    for where, expr in exprs:
        for m in METRIC.findall(expr):
            if m not in names:
                missing.append("%s: %s" % (where, m))
        for m in RECORDED.findall(expr):
            if m not in recorded:
                missing.append("%s: %s (recorded by no rule)" % (where, m))
    return missing


def promtool(*args):
    return subprocess.run(["promtool", *args], capture_output=True,
                          text=True, timeout=120)


class RulesTest(unittest.TestCase):
    def test_promtool_checks_the_rules(self):
        r = promtool("check", "rules", RULES)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        n = len(rules_of(load_rules()))
        self.assertIn("SUCCESS: %d rules found" % n, r.stdout)

    def test_the_rules_unit_tests_pass(self):
        r = promtool("test", "rules", *RULE_TESTS)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("SUCCESS"), len(RULE_TESTS))

    def test_a_wrong_expectation_fails_the_unit_tests(self):
        # The unit tests compare what they expect: one alert's rendered
        # description changed by a word must fail them.
        with open(RULE_TESTS[0]) as f:
            text = f.read()
        self.assertIn("99.1ms for ten minutes", text)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.yaml")
            with open(path, "w") as f:
                f.write(text.replace("99.1ms for ten", "99.2ms for ten")
                        .replace("../../deploy/monitoring", MIXIN))
            r = promtool("test", "rules", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("AbuseguardCheckLatencyHigh", r.stdout + r.stderr)

    def test_every_alert_fires_and_then_clears_in_the_unit_tests(self):
        alerts = {r["alert"] for r in rules_of(load_rules()) if "alert" in r}
        self.assertGreaterEqual(len(alerts), 15)
        tests = []
        for path in RULE_TESTS:
            with open(path) as f:
                tests += yaml.safe_load(f)["tests"]
        fired, cleared = {}, {}
        for t in tests:
            for a in t.get("alert_rule_test", []):
                at = seconds(a["eval_time"])
                name = a["alertname"]
                if a["exp_alerts"]:
                    fired[name] = min(fired.get(name, at), at)
                else:
                    cleared[name] = max(cleared.get(name, at), at)
        for name in sorted(alerts):
            self.assertIn(name, fired, "%s never fires in a test" % name)
            self.assertIn(name, cleared, "%s never checked quiet" % name)
            self.assertGreater(cleared[name], fired[name],
                               "%s never clears after firing" % name)

    def test_every_alert_links_a_runbook_section_that_exists(self):
        with open(OPERATIONS) as f:
            text = f.read()
        sections = anchors(text)
        for r in rules_of(load_rules()):
            if "alert" not in r:
                continue
            a = r["annotations"]
            self.assertTrue(a.get("summary") and a.get("description"),
                            r["alert"])
            self.assertIn(r["labels"]["severity"], ("critical", "warning"))
            url = a["runbook_url"]
            self.assertTrue(url.startswith(RUNBOOKS), url)
            anchor = url[len(RUNBOOKS):]
            self.assertEqual(anchor, r["alert"].lower())
            self.assertIn(anchor, sections,
                          "no section %s in docs/operations.md" % anchor)
            # The section says something: the text after its heading.
            m = re.search(r"^### %s\n\n(.+)" % r["alert"], text, re.M)
            self.assertTrue(m, "section %s has no text" % r["alert"])


class DashboardTest(unittest.TestCase):
    def test_the_dashboard_asks_for_a_prometheus_datasource(self):
        d = load_dashboard()
        self.assertEqual([i["name"] for i in d["__inputs"]],
                         ["DS_PROMETHEUS"])
        ids = [p["id"] for p in panels_of(d)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        for p in panels_of(d):
            if p["type"] == "row":
                continue
            self.assertEqual(p["datasource"]["uid"], "${DS_PROMETHEUS}",
                             p["title"])
            self.assertTrue(p["targets"], p["title"])

    def test_every_panel_query_parses(self):
        queries = dashboard_queries(load_dashboard())
        self.assertGreaterEqual(len(queries), 40)
        rules = {"groups": [{"name": "panels", "rules": [
            {"record": "panel_%d" % i, "expr": q}
            for i, (_, q) in enumerate(queries)]}]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "panels.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(rules, f)
            r = promtool("check", "rules", path)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            # And a query that does not parse is caught this way.
            rules["groups"][0]["rules"][0]["expr"] = "sum by (x (up)"
            with open(path, "w") as f:
                yaml.safe_dump(rules, f)
            self.assertNotEqual(promtool("check", "rules", path).returncode,
                                0)


class ExportedNamesTest(NetworkFiles):
    """A real abuseguard with every metric it can export turned on."""

    def start(self):
        with open(os.path.join(ROOT, "policies", "default.json")) as f:
            policies = json.load(f)["policies"]
        self.assertTrue(any(p["algorithm"] == "surge" for p in policies))
        source = os.path.join(self.workdir, "sha1.txt")
        with open(source, "w") as f:
            f.write("21BD12DC183F740EE76F27B78EB39C8AD972A757:52579\r\n")
        corpus = os.path.join(self.workdir, "sha1.agp")
        subprocess.run([BINARY, "pwned", "import", "--mode", "sha1",
                        "--output", corpus, source], check=True,
                       capture_output=True, timeout=60)
        hook_key = make_secret(self.workdir, name="webhook.key")
        (svc,) = self.seeded(policies, extra=[
            *self.files(), "--pwned-file", corpus,
            "--webhook-url", "http://127.0.0.1:%d/events" % free_port(),
            "--webhook-secret-file", hook_key])
        # A check, so labelled series have samples too.
        self.assertEqual(self.login(svc, "alice", "11.1.2.3").status, 200)
        return svc

    def test_rules_and_dashboard_use_only_what_the_service_exports(self):
        r = self.start().request("GET", "/metrics")
        self.assertEqual(r.status, 200)
        names, labels = exported(r.raw.decode())
        rules = rules_of(load_rules())
        recorded = {r["record"] for r in rules if "record" in r}
        exprs = [("rule %s" % (r.get("alert") or r["record"]), r["expr"])
                 for r in rules]
        exprs += dashboard_queries(load_dashboard())
        used = {m for _, e in exprs for m in METRIC.findall(e)}
        self.assertGreaterEqual(len(used), 40)
        self.assertEqual(unknown_names(exprs, names | {"up"}, recorded), [])
        # A metric renamed in the service would be caught: the check
        # names what it cannot find.
        renamed = names - {"abuseguard_shield_threshold"}
        self.assertEqual(
            unknown_names(exprs, renamed | {"up"}, recorded),
            ["panel 'Shield count, baseline and threshold' C: "
             "abuseguard_shield_threshold"])

        # Every label grouped by is one the service's series carry (or
        # Prometheus's target labels), and no label is an identifier.
        self.assertEqual(labels & IDENTIFIERS, set())
        for where, e in exprs:
            for group in BY.findall(e):
                for label in filter(None, re.split(r"[\s,]+", group)):
                    self.assertIn(label, labels | TARGET_LABELS,
                                  "%s groups by %s" % (where, label))

    def test_a_real_prometheus_evaluates_every_rule_and_panel(self):
        """Debian's prometheus scrapes the instance every second and
        evaluates the rules: each rule's health is ok, each panel's query
        succeeds, and those over series every instance has answer."""
        svc = self.start()
        prom = Prometheus(self.workdir, svc.port)
        self.addCleanup(prom.stop)
        # Two scrapes at least, for a rate over the last minute.
        self.assertTrue(wait_until(lambda: prom.value(
            'count_over_time(abuseguard_build_info[1m])') >= 2, 60),
            prom.log_text())
        queries = dashboard_queries(load_dashboard())
        answered = set()
        for where, q in queries:
            r = prom.query(q)
            self.assertEqual(r["status"], "success", "%s: %s" % (where, r))
            names = set(METRIC.findall(q)) & set(ALWAYS_ANSWERED)
            if names:
                self.assertTrue(r["data"]["result"], "%s: %s" % (where, q))
                answered |= names
        self.assertEqual(answered, set(ALWAYS_ANSWERED))

        def evaluated():
            groups = prom.get("/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return len(rules) == len(rules_of(load_rules())) and all(
                r.get("lastEvaluation", "").startswith("2") and
                not r["lastEvaluation"].startswith("0001") for r in rules)
        self.assertTrue(wait_until(evaluated, 60))
        groups = prom.get("/api/v1/rules")["data"]["groups"]
        for g in groups:
            for rule in g["rules"]:
                self.assertEqual(rule["health"], "ok", rule)
        # The instance is up: AbuseguardDown is quiet, and nothing fires
        # on a healthy instance but the shields it has, lowered.
        firing = [a for a in prom.get("/api/v1/alerts")["data"]["alerts"]
                  if a["state"] == "firing"]
        self.assertEqual(firing, [])


# Panel queries over series every instance declares with a sample: a
# query of them that answers nothing is a broken panel.
ALWAYS_ANSWERED = ("abuseguard_checks_total", "abuseguard_build_info",
                   "abuseguard_check_duration_seconds_bucket",
                   "abuseguard_shield_threshold",
                   "abuseguard_pwned_corpus_age_seconds",
                   "abuseguard_network_database_age_seconds",
                   "abuseguard_fleet_lag_seconds",
                   "abuseguard_circuit_breaker_open")


class Prometheus:
    """Debian's prometheus on a loopback port, scraping one target every
    second under the job abuseguard, with the mixin's rules."""

    def __init__(self, workdir, target_port):
        self.port = free_port()
        d = tempfile.mkdtemp(prefix="prom-", dir=workdir)
        config = os.path.join(d, "prometheus.yml")
        with open(config, "w") as f:
            yaml.safe_dump({
                "global": {"scrape_interval": "1s",
                           "evaluation_interval": "1s"},
                "rule_files": [RULES],
                "scrape_configs": [{
                    "job_name": "abuseguard",
                    "static_configs": [{"targets": [
                        "127.0.0.1:%d" % target_port]}]}]}, f)
        self.log_path = os.path.join(d, "prometheus.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file", config,
             "--storage.tsdb.path", os.path.join(d, "data"),
             "--web.listen-address", "127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)

    def get(self, path, **params):
        url = "http://127.0.0.1:%d%s" % (self.port, path)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            return json.load(e)

    def query(self, q):
        return self.get("/api/v1/query", query=q)

    def value(self, q):
        """The first sample's value, 0 if none or not up yet."""
        try:
            result = self.query(q)["data"]["result"]
        except (OSError, KeyError, ValueError):
            return 0  # not ready yet: a 503 in plain text
        return float(result[0]["value"][1]) if result else 0

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


if __name__ == "__main__":
    unittest.main()
