#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the tree's house rules that no compiler sees.

- Every source file (C, headers, Python, shell, Lua, SQL, CMake, the
  console's files, the packaging scripts) carries the line
  'SPDX-License-Identifier: Apache-2.0' within its first three lines.

Run from the top of the tree; prints each offence and exits 1 on any.
"""
import subprocess
import sys

SPDX = "SPDX-License-Identifier: Apache-2.0"
SOURCE_EXT = {"c", "h", "py", "sh", "lua", "sql", "cmake", "awk", "js",
              "mjs", "css", "html"}
SOURCE_NAMES = {"CMakeLists.txt", ".ci/run", "packaging/postinst",
                "packaging/postrm", "packaging/prerm",
                "packaging/abuseguard.service"}


def tracked():
    out = subprocess.run(["git", "ls-files"], check=True, text=True,
                         capture_output=True).stdout
    return out.split()


def is_source(path):
    name = path.rsplit("/", 1)[-1]
    if path in SOURCE_NAMES or name == "CMakeLists.txt":
        return True
    return "." in name and name.rsplit(".", 1)[-1] in SOURCE_EXT


def check_spdx(paths):
    bad = []
    for path in paths:
        if not is_source(path):
            continue
        with open(path, encoding="utf-8") as f:
            head = [f.readline() for _ in range(3)]
        if not any(SPDX in line for line in head):
            bad.append("%s: no '%s' line at the top" % (path, SPDX))
    return bad


def main():
    problems = check_spdx(tracked())
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
