# SPDX-License-Identifier: Apache-2.0
"""bench/batch.lua, the batched checks that bench/script_cost.sh measures
(issue 20's experiment), against the library's own check: a batch must do
exactly the work of the same checks sent one by one, or its rows would
measure something else. One random trace runs as single FCALLs on one
redis-server and as batches on another, on a test clock set alike on both:
every answer and every key (its DUMP) must match. AG_BATCH_SEED picks the
trace's seed (default: the time), to replay one."""
import os
import random
import socket
import subprocess
import tempfile
import time
import unittest

from harness import BINARY, Redis

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BATCH_FN = "bench_batch"
CLOCK_FN = "ag_test_clock"
# The test clock, as tests/integration/test_store_redis.c has it: it
# replaces common.lua's clock with the time the test last set.
TEST_CLOCK = """local test_now
clock = function()
  return test_now or error('the test clock is not set')
end
redis.register_function('%s', function(keys, args)
  test_now = args[1]
  return 'OK'
end)
""" % CLOCK_FN


class RedisError:
    """An error reply, top-level or an element of an array."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return "RedisError(%r)" % self.text


class Conn:
    """One kept connection; replies as bytes, ints, lists and RedisError."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), 10)
        self.file = self.sock.makefile("rb")

    def close(self):
        self.file.close()
        self.sock.close()

    def __call__(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError("bad reply %r" % line)


def library():
    """The service's library with the test clock after common.lua, and the
    name of its check function."""
    text = subprocess.run([BINARY, "lua", "library"], capture_output=True,
                          text=True, check=True, timeout=30).stdout
    fn = subprocess.run([BINARY, "lua", "function"], capture_output=True,
                        text=True, check=True, timeout=30).stdout.strip()
    # ag_redis_code.c writes block_level_us right after common.lua (and
    # after a clock.lua, where the pieces hold one).
    at = text.index("\nblock_level_us = ") + 1
    return text[:at] + TEST_CLOCK + text[at:], fn


def batch_library(text):
    """The library as script_cost.sh makes it for its batch rows."""
    with open(os.path.join(ROOT, "bench", "batch.lua")) as f:
        return (text + f.read() +
                "redis.register_function('%s', check_batch)\n" % BATCH_FN)


# The policies of the trace: spec (lua/check.lua), whether it has a block
# key, a level key, and whether its member is the subject (distinct).
# Windows of a minute and more: a set's key expires a window after its
# last add by Redis's own clock (common.lua's set_add), which must not
# happen on one server and not the other while the trace runs.
POLICIES = [
    ("0 3 60000 0 1 0", False, False, False),             # sliding log
    ("1 4 90000 120000 1 0 1 120000", True, False, False),  # fixed, blocks
    ("2 3 60000 60000 1 0 2 600000", True, True, False),  # sliding window
    ("3 2 60000 0 1 0", False, False, False),             # token bucket
    ("4 2 120000 0 1 0", False, False, True),             # distinct
    ("5 2 60000 30000 1 0 1 30000", True, False, False),  # consecutive
    ("6 3 60000 0 1 0 r500000", False, False, False),     # conversion
    ("0 2 60000 0 1 1", False, False, False),             # shadow log
    ("1 5 60000 0 0 0", False, False, False),             # uncharged
]


def random_check(rng, seq):
    """(keys, args) of one random check in check.lua's layout."""
    mode = rng.choice(["check"] * 6 + ["record"] * 2 + ["peek"])
    chosen = rng.sample(range(len(POLICIES)), rng.randint(1, 3))
    subject = rng.choice("abc")
    keys, pairs = [], []
    for i in chosen:
        spec, block, level, distinct = POLICIES[i]
        keys.append("p%d:%s" % (i, subject))
        if block:
            keys.append("p%d:b:%s" % (i, subject))
        if level:
            keys.append("p%d:l:%s" % (i, subject))
        pairs += [spec, "m-" + rng.choice("xyz") if distinct else ""]
    args = ["n%d" % seq, mode]
    if mode == "record":
        fp = rng.choice(["", "fp1", "fp2"])
        args += [fp, "60000" if fp else "0"]
        if fp:
            keys.append("fp:%s" % subject)
    return keys, args + pairs


def batch_command(checks):
    keys, args = [], []
    for k, a in checks:
        keys += k
        args += [len(k), len(a)] + a
    return ["FCALL", BATCH_FN, len(keys)] + keys + args


def state(conn):
    return {k: conn("DUMP", k) for k in sorted(conn("KEYS", "*"))}


class BenchBatchTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="ag-batch-")
        self.single_redis = Redis(self.workdir + "/")
        os.makedirs(self.workdir + "/b")
        self.batch_redis = Redis(self.workdir + "/b")
        self.single = Conn(self.single_redis.port)
        self.batch = Conn(self.batch_redis.port)
        text, self.fn = library()
        for conn, lib in ((self.single, text), (self.batch,
                                                batch_library(text))):
            loaded = conn("FUNCTION", "LOAD", lib)
            self.assertNotIsInstance(loaded, RedisError,
                                     getattr(loaded, "text", ""))
        # Well ahead of Redis's own clock: no PEXPIREAT the trace sets
        # from it is due while the trace runs.
        self.now_us = (int(time.time()) + 3600) * 1_000_000

    def tearDown(self):
        self.single.close()
        self.batch.close()
        self.single_redis.stop()
        self.batch_redis.stop()
        subprocess.run(["rm", "-rf", self.workdir], check=False)

    def set_clock(self):
        for conn in (self.single, self.batch):
            self.assertEqual(conn("FCALL", CLOCK_FN, 0, self.now_us), b"OK")

    def singles(self, checks):
        return [self.single("FCALL", self.fn, len(k), *k, *a)
                for k, a in checks]

    def test_a_random_trace_batched_answers_and_writes_as_single_checks(self):
        seed = int(os.environ.get("AG_BATCH_SEED", time.time_ns()))
        print("AG_BATCH_SEED=%d" % seed)
        rng = random.Random(seed)
        seq, denied, errors = 0, 0, 0
        for step in range(150):
            self.now_us += rng.choice([0, 1, 999, 5_000_000, 20_000_000,
                                       61_000_000])
            self.set_clock()
            checks = []
            for _ in range(rng.randint(1, 8)):
                seq += 1
                checks.append(random_check(rng, seq))
            want = self.singles(checks)
            got = self.batch(*batch_command(checks))
            self.assertIsInstance(got, list, "step %d: %r" % (step, got))
            self.assertEqual(len(got), len(checks))
            for i, (w, g) in enumerate(zip(want, got)):
                where = "seed %d step %d check %d %r" % (seed, step, i,
                                                        checks[i])
                if isinstance(w, RedisError):
                    errors += 1
                    self.assertIsInstance(g, RedisError, where)
                else:
                    self.assertEqual(g, w, where)
                    width = 6 if checks[i][1][1] == "peek" else 4
                    denied += 0 in w[0::width]
            self.assertEqual(state(self.batch), state(self.single),
                             "seed %d step %d" % (seed, step))
        # The trace reached what it is for: denials, and no errors.
        self.assertGreater(denied, 20)
        self.assertEqual(errors, 0)

    def test_one_checks_error_in_a_batch_is_its_own_and_the_others_run(self):
        self.set_clock()
        good = (["p0:a"], ["n1", "check", POLICIES[0][0], ""])
        bad = (["p0:b"], ["n2", "check", "9 1 1000 0 1 0", ""])
        later = (["p0:c"], ["n3", "check", POLICIES[0][0], ""])
        got = self.batch(*batch_command([good, bad, later]))
        want = self.singles([good, bad, later])
        self.assertIsInstance(want[1], RedisError)
        self.assertIsInstance(got[1], RedisError)
        self.assertIn("bad policy spec", got[1].text)
        self.assertEqual([got[0], got[2]], [want[0], want[2]])
        self.assertEqual(state(self.batch), state(self.single))
        self.assertEqual(sorted(state(self.batch)), [b"p0:a", b"p0:c"])

    def test_a_batch_whose_counts_do_not_add_up_runs_nothing(self):
        self.set_clock()
        good = (["p0:a"], ["n1", "check", POLICIES[0][0], ""])
        cmd = batch_command([good, good])
        cmd[-5] = "5"  # the second check's argument count, one too many
        got = self.batch(*cmd)
        self.assertIsInstance(got, RedisError)
        self.assertIn("bad batch", got.text)
        self.assertEqual(state(self.batch), {})


if __name__ == "__main__":
    unittest.main()
