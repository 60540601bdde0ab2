#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the tables and links of Markdown files, so that none renders half
as text and no link leads nowhere.

    scripts/check_markdown.py FILE...     check files; exit 1 on any problem
    scripts/check_markdown.py --self-test check the checker on samples

A table is a run of lines starting with "|" (GitHub-flavoured Markdown).
Flagged, one line per problem as FILE:LINE: message:
  - a table row separated from the rows above it by a blank line (it would
    render as a paragraph, not as part of the table);
  - a table header not followed by its |---| separator row;
  - a row whose cell count differs from its header's;
  - a relative link [x](path) or image ![x](path) whose path, taken from
    the file's own folder, does not exist;
  - a link [x](path#anchor) or [x](#anchor) into a Markdown file that has
    no heading with that anchor. Anchors are made from ATX headings
    ("## Title") as GitHub makes them: the heading's text lower-cased,
    every character but letters, digits, "-", "_" and spaces dropped,
    each space turned into "-", and "-1", "-2", ... added to repeats.
Links with a scheme (https:, mailto:) are not followed. Fenced code blocks
(``` or ~~~) and code spans are skipped. Standard library only.
"""
import os
import re
import sys
import urllib.parse

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


# An ATX heading: up to three spaces, 1 to 6 "#", then its text, if any,
# and an optional closing run of "#".
HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# The destination of an inline link or image, after its "](": in <...>, or
# a run without white space in which parentheses come in balanced pairs;
# then an optional "title".
LINK = re.compile(r"\]\(\s*(<[^<>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                  r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")
INLINE_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
HTML_TAG = re.compile(r"<[^>]*>")


def prose(text, spans=True):
    """The lines of text with fenced code blocks and (with spans) code spans
    blanked.

    Lines keep their number and code spans are replaced by spaces, so that
    what is left can be searched for links (and, spans kept, headings). A
    code span is a run of n backticks up to the next run of exactly n,
    within one block of non-blank lines (CommonMark); a run with no match
    is literal text."""
    lines = text.split("\n")
    fence = None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(
                    fence) and line.strip() == m.group(1):
                fence = None
            lines[i] = ""
        elif m:
            fence = m.group(1)
            lines[i] = ""
    if not spans:
        return lines
    out = []
    block = []
    for line in lines + [""]:
        if line.strip():
            block.append(line)
            continue
        if block:
            out.extend(blank_code_spans("\n".join(block)).split("\n"))
            block = []
        out.append(line)
    return out[:-1]


def blank_code_spans(text):
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    chars = list(text)
    i = 0
    while i < len(runs):
        start, end = runs[i]
        n = end - start
        close = next((j for j in range(i + 1, len(runs))
                      if runs[j][1] - runs[j][0] == n), None)
        if close is None:
            i += 1
            continue
        for k in range(start, runs[close][1]):
            if chars[k] != "\n":
                chars[k] = " "
        i = close + 1
    return "".join(chars)


def slug(heading):
    """The anchor GitHub gives a heading's text (before repeats' suffix)."""
    text = INLINE_LINK.sub(r"\1", heading)
    text = HTML_TAG.sub("", text).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def anchors(text):
    """Every heading anchor of a Markdown text, repeats numbered."""
    seen = {}
    found = set()
    for line in prose(text, spans=False):
        m = HEADING.match(line)
        if not m:
            continue
        # As GitHub counts: the n-th repeat of an anchor gets "-n".
        base = slug(m.group(1) or "")
        count = seen.get(base, 0)
        found.add("%s-%d" % (base, count) if count else base)
        seen[base] = count + 1
    return found


class Files:
    """The file system as the link check sees it (a dict in the self-test)."""

    def exists(self, path):
        return os.path.exists(path)

    def read(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            return None


class SampleFiles(Files):
    def __init__(self, files):
        self.files = files

    def exists(self, path):
        return path in self.files or any(
            f.startswith(path.rstrip("/") + "/") for f in self.files)

    def read(self, path):
        return self.files.get(path)


def check_links(text, path, files):
    """Returns [(line number, message)] for every relative link of text,
    the file at path, whose file or heading anchor does not exist."""
    problems = []
    known = {}

    def anchors_of(target):
        if target not in known:
            body = text if target == path else files.read(target)
            known[target] = None if body is None else anchors(body)
        return known[target]

    for n, line in enumerate(prose(text), 1):
        for m in LINK.finditer(line):
            dest = m.group(1)
            if dest.startswith("<"):
                dest = dest[1:-1]
            if not dest or SCHEME.match(dest):
                continue
            where, _, fragment = dest.partition("#")
            where = urllib.parse.unquote(where)
            fragment = urllib.parse.unquote(fragment)
            if where:
                base = "." if where.startswith("/") else os.path.dirname(path)
                target = os.path.normpath(
                    os.path.join(base, where.lstrip("/")))
                if not files.exists(target):
                    problems.append(
                        (n, "link to %s: no such file (%s)" % (dest, target)))
                    continue
            else:
                target = path
            if not fragment or not target.lower().endswith(".md"):
                continue
            names = anchors_of(target)
            if names is None:
                problems.append((n, "link to %s: %s cannot be read" %
                                 (dest, target)))
            elif fragment not in names:
                problems.append(
                    (n, "link to %s: no heading with anchor '%s' in %s" %
                     (dest, fragment, target)))
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


# The files the link samples see; each sample is the text of README.md.
LINK_FILES = {
    "LICENSE": "",
    "api/openapi.json": "{}",
    "docs/guide.md": "# Guide\n\n## Running Redis for abuseguard\n\n"
                     "### `POST /report-login`\n\n## Where a check's time "
                     "goes, and why\n\n## Notes\n\n## Notes\n\n"
                     "## Setext is not an anchor here\n\n```\n# not a "
                     "heading\n```\n\n## Growing blocks: s × 2^n ##\n"
                     "\n## [Linked](x.md) _under_score\n",
    "docs/other.md": "[back](../README.md#quick-start) [up](#nowhere)\n",
}

LINK_SAMPLES = [
    # (name, text of README.md, line numbers that must be flagged)
    ("file links", "# Quick start\n[l](LICENSE), [a](api/openapi.json),\n"
     "![img](docs/guide.md), [dir](docs/), [dir](docs)\n", []),
    ("missing file", "text\n[x](docs/gone.md) [y](docs/guide.md)\n", [2]),
    ("missing file behind ..", "[x](../README.md)\n", [1]),
    ("anchors as GitHub makes them",
     "[a](docs/guide.md#running-redis-for-abuseguard)\n"
     "[b](docs/guide.md#post-report-login)\n"
     "[c](docs/guide.md#where-a-checks-time-goes-and-why)\n"
     "[d](docs/guide.md#notes) [e](docs/guide.md#notes-1)\n"
     "[f](docs/guide.md#growing-blocks-s--2n)\n"
     "[g](docs/guide.md#linked-_under_score)\n", []),
    ("missing anchor", "[a](docs/guide.md#running-redis)\n"
     "[b](docs/guide.md#notes-2)\n[c](docs/guide.md#Notes)\n", [1, 2, 3]),
    ("a heading in a code block is no anchor",
     "[x](docs/guide.md#not-a-heading)\n", [1]),
    ("anchor in the same file",
     "# Quick start\n## Quick start\n[a](#quick-start) [b](#quick-start-1)"
     "\n[c](#install)\n", [4]),
    ("anchor after a title and in angle brackets",
     '[a](docs/guide.md#notes "Notes") [b](<docs/guide.md#nope>)\n', [1]),
    ("anchors into non-Markdown files are not checked",
     "[l](LICENSE#L1) [m](api/openapi.json#/paths)\n", []),
    ("URLs with a scheme are not followed",
     "[a](https://example.com/x.md#y) [b](mailto:a@b.c) "
     "[c](//example.com/z)\n", []),
    ("links in code are not links",
     "```\n[a](gone.md)\n```\n`[b](gone.md)` and ``[c](`gone`.md)``\n"
     "`a span\nacross lines [d](gone.md)` [e](gone.md)\n", [6]),
    ("an unmatched backtick is text", "a ` b [x](gone.md)\n", [1]),
    ("parentheses in a destination",
     "[a](docs/gone_(x).md) [b](LICENSE)\n", [1]),
    ("percent-escapes are decoded", "[a](docs/guide.md#notes%2D1)\n"
     "[b](docs%2Fguide.md)\n", []),
]


def self_test():
    failed = 0
    total = len(SAMPLES) + len(LINK_SAMPLES)
    cases = [(name, check_text(text), want) for name, text, want in SAMPLES]
    for name, text, want in LINK_SAMPLES:
        files = SampleFiles(dict(LINK_FILES, **{"README.md": text}))
        cases.append((name, check_links(text, "README.md", files), want))
    other = LINK_FILES["docs/other.md"]
    files = SampleFiles(dict(LINK_FILES, **{"README.md": "# Quick start\n"}))
    cases.append(("links from a subfolder",
                  check_links(other, "docs/other.md", files), [1]))
    total += 1
    for name, problems, want in cases:
        got = [n for n, _ in problems]
        if got != want:
            failed += 1
            print("self-test: %s: flagged lines %s, expected %s" %
                  (name, got, want), file=sys.stderr)
            for n, message in problems:
                print("    %d: %s" % (n, message), file=sys.stderr)
    if failed:
        print("self-test: %d of %d samples failed" % (failed, total),
              file=sys.stderr)
        return 1
    print("check_markdown self-test: %d samples ok" % total)
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
        problems = check_text(text) + check_links(text, path, Files())
        for n, message in problems:
            print("%s:%d: %s" % (path, n, message))
            count += 1
    if count:
        print("check_markdown: %d problem(s)" % count, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
