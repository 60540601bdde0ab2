#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the tables of Markdown files, so that none renders half as text.

    scripts/check_markdown.py FILE...     check files; exit 1 on any problem
    scripts/check_markdown.py --self-test check the checker on samples

A table is a run of lines starting with "|" (GitHub-flavoured Markdown).
Flagged, one line per problem as FILE:LINE: message:
  - a table row separated from the rows above it by a blank line (it would
    render as a paragraph, not as part of the table);
  - a table header not followed by its |---| separator row;
  - a row whose cell count differs from its header's.
Fenced code blocks (``` or ~~~) are skipped. Standard library only.
"""
import re
import sys

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SEPARATOR_CELL = re.compile(r"^\s*:?-+:?\s*$")


def is_row(line):
    """A table row: "|" first, indented less than a code block."""
    stripped = line.lstrip(" ")
    return stripped.startswith("|") and len(line) - len(stripped) < 4


def cells(line):
    """The cells of a row: split on unescaped pipes, outer pipes dropped."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    if parts and parts[0].strip() == "":
        parts = parts[1:]
    if parts and parts[-1].strip() == "":
        parts = parts[:-1]
    return parts


def is_separator(line):
    row = cells(line)
    return bool(row) and all(SEPARATOR_CELL.match(c) for c in row)


def check_text(text):
    """Returns [(line number, message)] for every problem in text."""
    problems = []
    fence = None  # the opening fence while inside a code block
    header = None  # (line number, cell count) of the current table
    in_table = False  # the previous line was a row of that table
    blank_after_table = False  # only blank lines since the table's last row
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        n = i + 1
        i += 1
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(
                    fence) and line.strip() == m.group(1):
                fence = None
            continue
        if m:
            fence = m.group(1)
            in_table = blank_after_table = False
            continue
        if not is_row(line):
            if line.strip() == "":
                blank_after_table = blank_after_table or in_table
            else:
                blank_after_table = False
            in_table = False
            continue
        if in_table:
            want = header[1]
        elif blank_after_table:
            problems.append(
                (n, "table row separated from its table (header at line "
                 "%d) by a blank line" % header[0]))
            want = header[1]
        else:
            header = (n, len(cells(line)))
            want = header[1]
            if i < len(lines) and is_row(lines[i]) and is_separator(lines[i]):
                sep = len(cells(lines[i]))
                if sep != want:
                    problems.append(
                        (n + 1, "separator has %d cells, header %d" %
                         (sep, want)))
                i += 1
            else:
                problems.append(
                    (n, "table header without a |---| separator row "
                     "below it"))
            in_table = True
            blank_after_table = False
            continue
        got = len(cells(line))
        if got != want:
            problems.append(
                (n, "row has %d cells, its header (line %d) %d" %
                 (got, header[0], want)))
        in_table = True
        blank_after_table = False
    return problems


SAMPLES = [
    # (name, text, line numbers that must be flagged)
    ("good table", "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n", []),
    ("two good tables", "| a |\n|---|\n| 1 |\n\ntext\n\n| b |\n|:-:|\n", []),
    ("escaped pipe", "| a | b |\n|---|---|\n| x \\| y | 2 |\n", []),
    ("separator without its leading pipe (house style)", "| a | b |\n--|--\n", [1]),
    ("row after blank line",
     "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n| 5 | 6 |\n", [5]),
    ("row after two blank lines", "| a |\n|---|\n| 1 |\n\n\n| 2 |\n", [6]),
    ("header without separator", "text\n\n| a | b |\n| 1 | 2 |\n", [3]),
    ("too few cells", "| a | b | c |\n|---|---|---|\n| 1 | 2 |\n", [3]),
    ("too many cells", "| a |\n|---|\n| 1 | 2 |\n", [3]),
    ("separator too short", "| a | b |\n|---|\n| 1 | 2 |\n", [2]),
    ("fenced code ignored",
     "| a |\n|---|\n\n```\n| not | a | table |\n\n| x |\n```\n", []),
    ("tilde fence ignored", "~~~\n| x |\n~~~\n", []),
    ("row after fence is a new table", "| a |\n|---|\n```\n```\n| b |\n",
     [5]),
    ("indented code not a row", "text\n\n    | a | b |\n", []),
    ("paragraph between tables",
     "| a |\n|---|\n\ntext\n\n| b | c |\n|---|---|\n", []),
]


def self_test():
    failed = 0
    for name, text, want in SAMPLES:
        got = [n for n, _ in check_text(text)]
        if got != want:
            failed += 1
            print("self-test: %s: flagged lines %s, expected %s" %
                  (name, got, want), file=sys.stderr)
    if failed:
        print("self-test: %d of %d samples failed" % (failed, len(SAMPLES)),
              file=sys.stderr)
        return 1
    print("check_markdown self-test: %d samples ok" % len(SAMPLES))
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    count = 0
    for path in argv:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            print("%s: %s" % (path, e.strerror), file=sys.stderr)
            count += 1
            continue
        for n, message in check_text(text):
            print("%s:%d: %s" % (path, n, message))
            count += 1
    if count:
        print("check_markdown: %d problem(s)" % count, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
