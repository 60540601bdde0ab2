# SPDX-License-Identifier: Apache-2.0
"""abuseguard pwned import|check|verify, the real binary: imports from one
file, a folder of prefix files and standard input give a corpus whose
counts `check` reads back for known passwords (SHA-1 and NTLM, computed
here); a refused import exits 2 naming the file and line and leaves the
previous output untouched with no temporary file beside it; usage errors
exit 2, I/O failures 1; without a terminal the import prints one summary
line, on one it shows its progress."""
import hashlib
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import unittest

from harness import BINARY, wait_until

SUMMARY = re.compile(
    r"^abuseguard pwned import: (\d+) entries kept, (\d+) dropped by "
    r"--min-count (\d+), (\d+) lines; (.+): (\d+) bytes \([^)]*\); "
    r"[^;]+ \(\d+ lines/s\)")


def md4(data):
    """MD4 (RFC 1320): hashlib's may be missing, as OpenSSL 3 keeps it in
    the legacy provider."""
    def rotl(x, n):
        return ((x << n) | (x >> (32 - n))) & 0xffffffff
    n = len(data)
    data += b"\x80" + b"\0" * ((55 - n) % 64) + struct.pack("<Q", n * 8)
    h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]
    rounds = [
        (lambda b, c, d: (b & c) | (~b & d), 0, range(16), [3, 7, 11, 19]),
        (lambda b, c, d: (b & c) | (b & d) | (c & d), 0x5a827999,
         [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15],
         [3, 5, 9, 13]),
        (lambda b, c, d: b ^ c ^ d, 0x6ed9eba1,
         [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15],
         [3, 9, 11, 15]),
    ]
    for i in range(0, len(data), 64):
        x = struct.unpack("<16I", data[i:i + 64])
        a, b, c, d = h
        for f, k, order, shifts in rounds:
            for j, w in enumerate(order):
                t = rotl((a + f(b, c, d) + x[w] + k) & 0xffffffff,
                         shifts[j % 4])
                a, b, c, d = d, t, b, c
        h = [(p + q) & 0xffffffff for p, q in zip(h, (a, b, c, d))]
    return struct.pack("<4I", *h).hex().upper()


def sha1(pw):
    return hashlib.sha1(pw.encode()).hexdigest().upper()


def ntlm(pw):
    return md4(pw.encode("utf-16le"))


# Passwords with the counts the test corpus gives them.
KNOWN = {"password": 10434004, "123456": 37359195, "letmein": 532,
         "hunter2": 42, "correct horse battery staple": 1,
         "pässwörd": 7}
UNKNOWN = ["not in the corpus", "Tr0ub4dor&3x", ""]


class PwnedCliTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ag-pwned-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.out = self.path("corpus.agp")

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def run_cli(self, *args, stdin=None):
        return subprocess.run([BINARY, "pwned", *args], input=stdin,
                              capture_output=True, text=True, timeout=60)

    def import_(self, *inputs, mode="sha1", min_count=None, stdin=None):
        args = ["import", "--mode", mode, "--output", self.out]
        if min_count is not None:
            args += ["--min-count", str(min_count)]
        return self.run_cli(*args, *inputs, stdin=stdin)

    def check(self, passwords, file=None):
        r = self.run_cli("check", "--file", file or self.out,
                         stdin="".join(p + "\n" for p in passwords))
        self.assertEqual(r.returncode, 0, r.stderr)
        for p in passwords:
            if p:
                self.assertNotIn(p, r.stdout + r.stderr)
        return [int(v) for v in r.stdout.splitlines()]

    def rows(self, hasher):
        return sorted((hasher(p), c) for p, c in KNOWN.items())

    def write(self, name, text, newline="\n"):
        with open(self.path(name), "w", newline=newline) as f:
            f.write(text)
        return self.path(name)

    def single_file(self, hasher, name="pwned.txt", crlf=False):
        text = "".join("%s:%d\n" % r for r in self.rows(hasher))
        return self.write(name, text, "\r\n" if crlf else "\n")

    def summary(self, r):
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        m = SUMMARY.match(lines[0])
        self.assertIsNotNone(m, lines[0])
        return [int(v) for v in m.group(1, 2, 3, 4)] + [m.group(5),
                                                        int(m.group(6))]

    def leftovers(self):
        return [n for n in os.listdir(self.dir) if ".tmp." in n]

    def test_single_file_imports_and_check_reads_the_counts(self):
        r = self.import_(self.single_file(sha1, crlf=True))
        self.assertEqual(r.returncode, 0, r.stderr)
        kept, dropped, min_count, lines, out, size = self.summary(r)
        self.assertEqual((kept, dropped, min_count, lines),
                         (len(KNOWN), 0, 1, len(KNOWN)))
        self.assertEqual(out, self.out)
        self.assertEqual(size, os.path.getsize(self.out))
        self.assertEqual(r.stdout, "")
        pws = list(KNOWN) + UNKNOWN
        self.assertEqual(self.check(pws),
                         [KNOWN[p] for p in KNOWN] + [0] * len(UNKNOWN))
        self.assertEqual(self.leftovers(), [])
        v = self.run_cli("verify", "--file", self.out)
        self.assertEqual(v.returncode, 0, v.stderr)
        self.assertIn("mode sha1, %d entries, min-count 1" % len(KNOWN),
                      v.stdout)

    def test_lower_case_lf_ntlm_file_imports(self):
        text = "".join("%s:%d\n" % (h.lower(), c) for h, c in
                       self.rows(ntlm))
        r = self.import_(self.write("ntlm.txt", text), mode="ntlm")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.check(["hunter2", "pässwörd", "password",
                                     "nope"]),
                         [42, 7, 10434004, 0])

    def test_folder_of_prefix_files_imports_in_prefix_order(self):
        folder = self.path("hashes")
        os.mkdir(folder)
        by_prefix = {}
        for h, c in self.rows(ntlm):
            by_prefix.setdefault(h[:5], []).append("%s:%d" % (h[5:], c))
        # Written in reverse, as the range API answers them: CRLF, and no
        # line end after the last line.
        for prefix in sorted(by_prefix, reverse=True):
            self.write(os.path.join("hashes", prefix + ".txt"),
                       "\r\n".join(by_prefix[prefix]), newline="")
        r = self.import_(folder, mode="ntlm")
        self.assertEqual(r.returncode, 0, r.stderr)
        kept = self.summary(r)[0]
        self.assertEqual(kept, len(KNOWN))
        # A folder with fewer than all 16^5 files says so in its one line.
        self.assertIn("%d prefix files of 1048576" % len(by_prefix),
                      r.stderr)
        self.assertEqual(self.check(list(KNOWN)), list(KNOWN.values()))

    def test_standard_input_imports_with_min_count(self):
        text = "".join("%s:%d\n" % r for r in self.rows(sha1))
        r = self.import_("-", min_count=50, stdin=text)
        self.assertEqual(r.returncode, 0, r.stderr)
        kept, dropped, min_count, lines = self.summary(r)[:4]
        rare = sum(1 for c in KNOWN.values() if c < 50)
        self.assertEqual((kept, dropped, min_count, lines),
                         (len(KNOWN) - rare, rare, 50, len(KNOWN)))
        self.assertEqual(self.check(["letmein", "hunter2"]), [532, 0])

    def assert_refused(self, r, *needles):
        self.assertEqual(r.returncode, 2, r.stderr)
        for n in needles:
            self.assertIn(n, r.stderr)

    def test_malformed_line_is_exit_2_and_leaves_the_old_corpus(self):
        r = self.import_(self.single_file(sha1))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.out, "rb") as f:
            before = f.read()
        rows = ["%s:%d" % row for row in self.rows(sha1)]
        rows[3] += "x"  # after the count of line 4
        bad = self.write("bad.txt", "\n".join(rows) + "\n")
        r = self.import_(bad)
        self.assert_refused(r, bad + " line 4:",
                            "neither a digit of the count")
        with open(self.out, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(self.leftovers(), [])
        # A hash of the wrong length for the mode names its line too.
        r = self.import_(self.single_file(sha1, "sha1.txt"), mode="ntlm")
        self.assert_refused(r, "sha1.txt line 1:",
                            "has 40 hex digits, --mode ntlm needs 32")

    def test_out_of_order_or_duplicate_is_exit_2_asking_for_sort(self):
        rows = ["%s:%d" % row for row in self.rows(sha1)]
        swapped = rows[:]
        swapped[1], swapped[2] = swapped[2], swapped[1]
        r = self.import_(self.write("swapped.txt", "\n".join(swapped)))
        self.assert_refused(r, "swapped.txt line 3:", "lower than",
                            "LC_ALL=C sort")
        dup = rows[:3] + [rows[2]] + rows[3:]
        r = self.import_(self.write("dup.txt", "\n".join(dup)))
        self.assert_refused(r, "dup.txt line 4:", "the same as")
        self.assertFalse(os.path.exists(self.out))
        self.assertEqual(self.leftovers(), [])

    def test_interrupted_import_removes_its_temporary_file(self):
        self.assertEqual(self.import_(self.single_file(sha1)).returncode, 0)
        with open(self.out, "rb") as f:
            before = f.read()
        # Half the input on a pipe that stays open: the import waits in a
        # read, its temporary file made, until the signal.
        rows = ["%s:%d\n" % r for r in self.rows(sha1)]
        p = subprocess.Popen([BINARY, "pwned", "import", "--mode", "sha1",
                              "--output", self.out, "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        p.stdin.write("".join(rows[:3]))
        p.stdin.flush()
        self.assertTrue(wait_until(lambda: self.leftovers(), timeout=30))
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("interrupted; the output is left as it was", err)
        self.assertEqual(self.leftovers(), [])
        with open(self.out, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_usage_errors_are_exit_2(self):
        good = self.single_file(sha1)
        for args in (["import", "--output", self.out, good],
                     ["import", "--mode", "md5", "--output", self.out, good],
                     ["import", "--mode", "sha1", good],
                     ["import", "--mode", "sha1", "--output", self.out],
                     ["import", "--mode", "sha1", "--min-count", "0",
                      "--output", self.out, good],
                     ["import", "--mode", "sha1", "--min-count", "x",
                      "--output", self.out, good],
                     ["import", "--mode", "sha1", "--frobnicate",
                      "--output", self.out, good],
                     ["import", "--mode", "sha1", "--output", self.out,
                      self.path("missing.txt")],
                     ["check"], ["frobnicate"], []):
            r = self.run_cli(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertTrue(r.stderr.startswith("abuseguard pwned")
                            or r.stderr.startswith("usage:"), r.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_io_failure_is_exit_1(self):
        r = self.run_cli("import", "--mode", "sha1", "--output",
                         self.path("no-such-folder", "c.agp"),
                         self.single_file(sha1))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no-such-folder", r.stderr)
        r = self.run_cli("check", "--file", self.path("missing.agp"),
                         stdin="password\n")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("missing.agp", r.stderr)

    def test_damaged_corpus_is_refused_by_check_and_verify(self):
        self.assertEqual(self.import_(self.single_file(sha1)).returncode, 0)
        size = os.path.getsize(self.out)
        # A flipped byte in the last record: open cannot see it, verify
        # reads everything and does.
        with open(self.out, "r+b") as f:
            f.seek(size - 10)
            b = f.read(1)
            f.seek(size - 10)
            f.write(bytes([b[0] ^ 0xff]))
        r = self.run_cli("verify", "--file", self.out)
        self.assert_refused(r, self.out, "checksum does not match")
        # Cut short, it does not open at all.
        os.truncate(self.out, size - 1)
        r = self.run_cli("check", "--file", self.out, stdin="password\n")
        self.assert_refused(r, self.out, "truncated or damaged")

    def test_a_creation_time_no_one_can_print_is_refused(self):
        # The header's created field set to 2^63 - 1 with the header's own
        # checksum made to fit: verify used to print it from a struct tm
        # gmtime_r had not filled (a stack over-read under ASan).
        self.assertEqual(self.import_(self.single_file(sha1)).returncode, 0)
        with open(self.out, "r+b") as f:
            hdr = bytearray(f.read(160))
            hdr[40:48] = struct.pack("<q", 2**63 - 1)
            hdr[128:160] = hashlib.blake2b(bytes(hdr[:128]),
                                           digest_size=32).digest()
            f.seek(0)
            f.write(hdr)
        r = self.run_cli("verify", "--file", self.out)
        self.assert_refused(r, self.out, "creation time")
        self.assertEqual(r.stdout, "")
        r = self.run_cli("check", "--file", self.out, stdin="password\n")
        self.assert_refused(r, self.out, "creation time")

    def test_a_folder_among_the_prefix_files_is_refused_input(self):
        folder = self.path("hashes")
        os.makedirs(os.path.join(folder, "00000.txt"))
        self.write(os.path.join("hashes", "00001.txt"), "%s:3\n" % ("A" * 35))
        r = self.import_(folder)
        self.assert_refused(r, os.path.join(folder, "00000.txt"),
                            "a folder, not a prefix file")
        self.assertFalse(os.path.exists(self.out))

    def test_an_output_that_is_an_input_is_refused(self):
        good = self.single_file(sha1)
        self.assertEqual(self.import_(good).returncode, 0)
        with open(self.out, "rb") as f:
            before = f.read()
        r = self.import_(good, self.out)
        self.assert_refused(r, self.out, "is the output")
        with open(self.out, "rb") as f:
            r = subprocess.run([BINARY, "pwned", "import", "--mode", "sha1",
                                "--output", self.out, "-"], stdin=f,
                               capture_output=True, text=True, timeout=60)
        self.assert_refused(r, "standard input is the output")
        # A folder to import that the output would be written into.
        folder = self.path("hashes")
        os.mkdir(folder)
        self.write(os.path.join("hashes", "00001.txt"), "%s:3\n" % ("A" * 35))
        r = self.run_cli("import", "--mode", "sha1", "--output",
                         os.path.join(folder, "c.agp"), folder)
        self.assert_refused(r, folder, "holds the output")
        self.assertEqual(os.listdir(folder), ["00001.txt"])
        with open(self.out, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_check_refuses_a_line_over_4096_bytes_naming_it(self):
        self.assertEqual(self.import_(self.single_file(sha1)).returncode, 0)
        # 4096 bytes and a CR LF is the longest line; the count of the
        # line before is printed, nothing after.
        r = self.run_cli("check", "--file", self.out,
                         stdin="password\r\n" + "x" * 4096 + "\r\n" +
                         "y" * 4097 + "\npassword\n")
        self.assert_refused(r, "standard input line 3:",
                            "longer than 4096 bytes")
        self.assertEqual(r.stdout, "10434004\n0\n")
        self.assertNotIn("yyyy", r.stderr)
        # A last line without its line end is read too.
        r = self.run_cli("check", "--file", self.out,
                         stdin="hunter2\npassword")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "42\n10434004\n")

    def test_progress_is_shown_on_a_terminal(self):
        good = self.single_file(sha1)
        master, slave = pty.openpty()
        p = subprocess.Popen([BINARY, "pwned", "import", "--mode", "sha1",
                              "--output", self.out, good],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
        self.assertEqual(p.wait(timeout=60), 0, seen)
        text = seen.decode()
        self.assertIn("importing: ", text)
        self.assertIn(" of %d B (100%%)" % os.path.getsize(good), text)
        self.assertIn("\r\033[K", text)
        self.assertRegex(text, r"%d entries kept" % len(KNOWN))


if __name__ == "__main__":
    unittest.main()
