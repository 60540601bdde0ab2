# SPDX-License-Identifier: Apache-2.0
"""Connection floods: whatever one client or a handful of addresses do with
connections (hold them idle, trickle a header line at a time, open more
than the service takes), a well-behaved client from another address gets
its answer within a second, and the excess is refused at once instead of
waiting in the backlog. Every flood is bounded in connections and time,
from 127.0.0.x source addresses on loopback."""
import os
import select
import signal
import socket
import threading
import time
import unittest

from harness import ServiceTest, wait_until

PROMPT = 1.0  # seconds a well-behaved client may wait, at most


def connect(svc, source):
    return socket.create_connection(("127.0.0.1", svc.port), 5,
                                    source_address=(source, 0))


def read_until_closed(s, timeout):
    """What the server sends before it closes s, and whether it closed it
    within timeout."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False
    except OSError:
        return data, True


def metric(svc, name):
    text = svc.request("GET", "/metrics").raw.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("%s not in /metrics" % name)


class Prober:
    """Asks /healthz from its own address every 100 ms while a flood runs,
    each on a new connection, and keeps the slowest answer."""

    def __init__(self, svc, source):
        self.svc, self.source = svc, source
        self.times, self.failures = [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self):
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                r = self.svc.request("GET", "/healthz", timeout=5,
                                     source=self.source)
                if r.status != 200:
                    self.failures.append(r.status)
            except OSError as e:
                self.failures.append(repr(e))
            self.times.append(time.monotonic() - start)
            self._stop.wait(0.1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


class FloodTest(ServiceTest):
    def assert_prompt(self, prober, at_least):
        self.assertEqual(prober.failures, [])
        self.assertGreaterEqual(len(prober.times), at_least)
        self.assertLess(max(prober.times), PROMPT, prober.times)

    def test_idle_flood_over_the_cap_never_delays_another_client(self):
        # Five addresses hold 24 idle connections each, 120 against a cap
        # of 64, and reopen every one the service closes, for 3 s.
        svc = self.service(extra=["--max-conns", "64",
                                  "--max-conns-per-ip", "24"])
        sources = ["127.0.0.%d" % i for i in range(11, 16)]
        held, stop = [], threading.Event()
        opened = [0]

        def flood():
            while not stop.is_set():
                for src in sources:
                    mine = [s for s in held if s.getsockname()[0] == src]
                    for _ in range(24 - len(mine)):
                        try:
                            held.append(connect(svc, src))
                            opened[0] += 1
                        except OSError:
                            pass
                # Drop the ones the service ended, to reopen them.
                ready, _, _ = select.select(held, [], [], 0.05)
                for s in ready:
                    held.remove(s)
                    s.close()

        t = threading.Thread(target=flood)
        t.start()
        try:
            time.sleep(0.5)
            with Prober(svc, "127.0.0.20") as prober:
                time.sleep(3)
        finally:
            stop.set()
            t.join(10)
            for s in held:
                s.close()
        self.assert_prompt(prober, 10)
        self.assertGreater(opened[0], 120)  # the service kept making room
        self.assertGreater(metric(svc, "abuseguard_http_connections_"
                                       "reclaimed_total"), 0)

    def test_trickling_connections_end_at_the_deadline(self):
        # One header byte every 300 ms would hold a connection for ever
        # if each byte extended the timeout.
        svc = self.service(extra=["--conn-timeout-s", "2"])
        socks = [connect(svc, "127.0.0.%d" % (30 + i % 2)) for i in range(40)]
        start = time.monotonic()
        ended = {}
        try:
            with Prober(svc, "127.0.0.32") as prober:
                line = b"POST /check-login HTTP/1.1\r\nHost: x\r\nX-Slow: "
                i = 0
                while len(ended) < len(socks) and \
                        time.monotonic() - start < 5:
                    for s in socks:
                        if s in ended:
                            continue
                        try:
                            s.send(line[i:i + 1] if i < len(line) else b"a")
                        except OSError:
                            ended[s] = time.monotonic() - start
                    ready, _, _ = select.select(
                        [s for s in socks if s not in ended], [], [], 0.3)
                    for s in ready:
                        try:
                            gone = s.recv(1) == b""
                        except OSError:
                            gone = True
                        if gone:
                            ended[s] = time.monotonic() - start
                    i += 1
        finally:
            for s in socks:
                s.close()
        self.assertEqual(len(ended), 40, "some trickled past the deadline")
        self.assertGreaterEqual(min(ended.values()), 1.5)
        self.assertLess(max(ended.values()), 3.5)
        self.assert_prompt(prober, 10)
        self.assertGreaterEqual(metric(svc, "abuseguard_http_connections_"
                                            "expired_total"), 40)

    def test_half_open_connections_from_one_address_end_at_the_deadline(self):
        # All from one address, over its default cap: this test is about
        # the timeout, the next one about the cap.
        svc = self.service(extra=["--conn-timeout-s", "2",
                                  "--max-conns-per-ip", "400"])
        idle = []
        for _ in range(300):
            s = connect(svc, "127.0.0.1")
            s.sendall(b"POST /check-login HTTP/1.1\r\nHost: x\r\n")
            idle.append(s)
        try:
            start = time.monotonic()
            r = self.login(svc, "a@example.com", "203.0.113.7")
            self.assertEqual(r.status, 200)
            self.assertLess(time.monotonic() - start, PROMPT)
            time.sleep(2.5)
            closed = sum(read_until_closed(s, 1)[1] for s in idle)
            self.assertEqual(closed, 300)
        finally:
            for s in idle:
                s.close()

    def test_one_address_over_its_cap_gets_503_at_once(self):
        # Without the per-address cap, 30 of the 40 would take every
        # connection the service has.
        svc = self.service(extra=["--max-conns", "30",
                                  "--max-conns-per-ip", "20"])
        flood = [connect(svc, "127.0.0.2") for _ in range(40)]
        try:
            time.sleep(0.3)
            start = time.monotonic()
            r = svc.request("GET", "/healthz", timeout=5, source="127.0.0.3")
            self.assertEqual(r.status, 200)
            self.assertLess(time.monotonic() - start, PROMPT)
            # The excess was answered and closed at once, not left in the
            # backlog; the first 20 stay open.
            refused = [s for s in flood
                       if read_until_closed(s, 0.2)[1] is True]
            self.assertEqual(len(refused), 20)
        finally:
            for s in flood:
                s.close()
        self.assertGreaterEqual(metric(svc, "abuseguard_http_connections_"
                                            "refused_total"), 20)

    def test_refusal_is_a_503_with_retry_after(self):
        svc = self.service(extra=["--max-conns-per-ip", "2"])
        held = [connect(svc, "127.0.0.4") for _ in range(2)]
        try:
            start = time.monotonic()
            data, closed = read_until_closed(connect(svc, "127.0.0.4"), 2)
            self.assertTrue(closed)
            self.assertLess(time.monotonic() - start, PROMPT)
            head, _, body = data.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 503 "), data)
            self.assertIn(b"\r\nRetry-After: 1", head)
            self.assertIn(b"this address", body)
        finally:
            for s in held:
                s.close()

    def test_idle_keep_alive_connection_makes_room_at_the_cap(self):
        svc = self.service(extra=["--max-conns", "3"])
        pooled = []
        for i in range(3):
            s = connect(svc, "127.0.0.%d" % (50 + i))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(b"200 OK", s.recv(4096))
            pooled.append(s)
            time.sleep(0.05)
        try:
            r = svc.request("GET", "/healthz", timeout=5, source="127.0.0.60")
            self.assertEqual(r.status, 200)
            # The one idle longest made room; the others are still open.
            self.assertTrue(read_until_closed(pooled[0], 1)[1])
            for s in pooled[1:]:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertIn(b"200 OK", s.recv(4096))
        finally:
            for s in pooled:
                s.close()

    def test_over_the_cap_with_every_connection_busy_refuses_at_once(self):
        # Four checks wait on a stopped Redis, holding all four
        # connections busy; none can make room, so a fifth is refused at
        # once instead of waiting in the backlog.
        svc = self.service(extra=["--max-conns", "4",
                                  "--redis-timeout-ms", "3000"])
        self.open_every_connection(svc)
        wait_until(lambda: metric(svc, "abuseguard_http_connections") == 0, 5)
        os.kill(self.redis.proc.pid, signal.SIGSTOP)
        try:
            waiting = [threading.Thread(
                target=self.login, args=(svc, "busy%d@x.org" % i),
                kwargs={"ip": "192.0.2.%d" % (i + 1)}) for i in range(4)]
            for t in waiting:
                t.start()
            time.sleep(0.5)
            start = time.monotonic()
            data, closed = read_until_closed(connect(svc, "127.0.0.70"), 2)
            self.assertTrue(closed)
            self.assertLess(time.monotonic() - start, PROMPT)
            self.assertTrue(data.startswith(b"HTTP/1.1 503 "), data)
        finally:
            os.kill(self.redis.proc.pid, signal.SIGCONT)
        for t in waiting:
            t.join(10)


if __name__ == "__main__":
    unittest.main()
