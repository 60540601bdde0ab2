#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the tree's house rules that no compiler sees.

- Every source file (C, headers, Python, shell, Lua, SQL, CMake, the
  console's files, the packaging scripts, the clients' JavaScript,
  TypeScript declarations and Go) carries the line
  'SPDX-License-Identifier: Apache-2.0' within its first three lines.
- No source file is longer than MAX_LINES: past that a file has two jobs.
- The service's layers (the folders of service/, lowest first in LAYERS;
  the files directly in service/ wire them on top) include only their own
  headers and those of lower layers. The build enforces the same rule
  (each layer is a library that sees only the folders below it); this
  check says which include broke it.
- No two modules (a .c and its .h are one module) include each other, in
  a circle of any length.

Run from the top of the tree; prints each offence and exits 1 on any.
--self-test checks the checks against small trees of its own.
"""
import os
import re
import subprocess
import sys
import tempfile

from check_calls import circles

SPDX = "SPDX-License-Identifier: Apache-2.0"
SOURCE_EXT = {"c", "h", "py", "sh", "lua", "sql", "cmake", "awk", "js",
              "mjs", "css", "html", "go", "ts", "pl"}
SOURCE_NAMES = {"CMakeLists.txt", ".ci/run", "packaging/postinst",
                "packaging/postrm", "packaging/prerm",
                "packaging/abuseguard.service"}
MAX_LINES = 750
# Lowest first; "" is service/ itself: main.c, configuration, CLI.
LAYERS = ["base", "pwned", "engine", "network", "redis", "db", "events",
          "fleet", "check", "http", "admin", ""]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def tracked():
    out = subprocess.run(["git", "ls-files"], check=True, text=True,
                         capture_output=True).stdout
    return out.split()


def is_source(path):
    name = path.rsplit("/", 1)[-1]
    if path in SOURCE_NAMES or name == "CMakeLists.txt":
        return True
    return "." in name and name.rsplit(".", 1)[-1] in SOURCE_EXT


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def check_spdx(paths):
    bad = []
    for path in paths:
        head = read(path).split("\n", 3)[:3]
        if not any(SPDX in line for line in head):
            bad.append("%s: no '%s' line at the top" % (path, SPDX))
    return bad


def check_length(paths):
    bad = []
    for path in paths:
        n = read(path).count("\n")
        if n > MAX_LINES:
            bad.append("%s: %d lines, more than %d: split it along its "
                       "seam" % (path, n, MAX_LINES))
    return bad


def service_files(paths):
    """{basename: (layer, path)} of the C files under service/."""
    files = {}
    for path in paths:
        parts = path.split("/")
        if parts[0] != "service" or not path.endswith((".c", ".h")):
            continue
        if len(parts) == 2:
            layer = ""
        elif len(parts) == 3 and parts[1] in LAYERS:
            layer = parts[1]
        else:
            continue
        files[parts[-1]] = (layer, path)
    return files


def module(name):
    """A .c, its .h and its private _impl.h are one module."""
    return re.sub(r"(_impl)?\.[ch]$", "", name)


def check_layers(files):
    bad = []
    for name, (layer, path) in sorted(files.items()):
        for inc in INCLUDE.findall(read(path)):
            if inc not in files:
                continue
            to = files[inc][0]
            if LAYERS.index(to) > LAYERS.index(layer):
                bad.append("%s: includes %s of the higher layer %s" %
                           (path, inc, to or "service/ (top)"))
    return bad


def check_circles(files):
    graph = {}
    for name, (_, path) in files.items():
        deps = graph.setdefault(module(name), set())
        for inc in INCLUDE.findall(read(path)):
            if inc in files and module(inc) != module(name):
                deps.add(module(inc))
    return ["service/: a circle of includes: %s" % " <-> ".join(c)
            for c in circles(graph)]


def check(paths):
    sources = [p for p in paths if is_source(p)]
    files = service_files(paths)
    return (check_spdx(sources) + check_length(sources) +
            check_layers(files) + check_circles(files))


def self_test():
    cases = {
        "clean": ({"service/base/ag_a.h": "",
                   "service/base/ag_a.c": '#include "ag_a.h"\n',
                   "service/http/ag_h.c": '#include "ag_a.h"\n',
                   "service/main.c": '#include "ag_h.h"\n',
                   "service/http/ag_h.h": ""}, []),
        "upward": ({"service/base/ag_a.c": '#include "ag_h.h"\n',
                    "service/http/ag_h.h": ""},
                   ["service/base/ag_a.c: includes ag_h.h of the higher "
                    "layer http"]),
        "top": ({"service/redis/ag_r.h": '#include "ag_config.h"\n',
                 "service/ag_config.h": ""},
                ["service/redis/ag_r.h: includes ag_config.h of the "
                 "higher layer service/ (top)"]),
        "circle": ({"service/db/ag_x.c": '#include "ag_y.h"\n',
                    "service/db/ag_y.c": '#include "ag_z.h"\n',
                    "service/db/ag_z.c": '#include "ag_x.h"\n',
                    "service/db/ag_x.h": "", "service/db/ag_y.h": "",
                    "service/db/ag_z.h": ""},
                   ["service/: a circle of includes: ag_x <-> ag_y <-> "
                    "ag_z"]),
        "long": ({"service/base/ag_l.c": "x\n" * (MAX_LINES + 1)},
                 ["service/base/ag_l.c: %d lines, more than %d: split it "
                  "along its seam" % (MAX_LINES + 2, MAX_LINES)]),
    }
    failed = 0
    cwd = os.getcwd()
    for name, (tree, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            os.chdir(d)
            try:
                for path, text in tree.items():
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write("/* %s */\n%s" % (SPDX, text))
                got = check(sorted(tree))
            finally:
                os.chdir(cwd)
        if got != want:
            failed += 1
            print("self-test %s: got %r, want %r" % (name, got, want),
                  file=sys.stderr)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ag_n.c")
        with open(path, "w") as f:
            f.write("int x;\n")
        if check_spdx([path]) != ["%s: no '%s' line at the top" %
                                  (path, SPDX)]:
            failed += 1
            print("self-test spdx: a file without the line passed",
                  file=sys.stderr)
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    problems = check(tracked())
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
