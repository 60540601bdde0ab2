# SPDX-License-Identifier: Apache-2.0
"""The check loops (issue 30): a request whose answer is made on Redis
waits in libmicrohttpd unsuspended and is answered from its loop; these
tests hold the cases that design has to get right. Two checks pipelined
in one write are both answered, in order, although the second was read
while the first waited for Redis; clients that leave while their checks
wait in a paused Redis (by closing, or by a reset that ends the
connection at once) cost the service nothing but those checks, which
the store still records, and the next check is answered."""
import json
import socket
import struct
import time
import unittest

from harness import ServiceTest, wait_until


def read_responses(sock, n):
    """n responses read in order from one buffer over sock (pipelined
    answers may come in one segment: a reader a response would lose the
    bytes the first one buffered): each as (status, JSON body)."""
    f = sock.makefile("rb")
    out = []
    for _ in range(n):
        status = int(f.readline().split()[1])
        length = 0
        for line in iter(f.readline, b"\r\n"):
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        out.append((status, json.loads(f.read(length))))
    return out


def check_request(user, ip):
    body = json.dumps({"user": user, "ip": ip}).encode()
    return (b"POST /check-login HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


class LoopTest(ServiceTest):

    def remaining(self, resp, policy):
        return next(d["remaining"] for d in resp.json["decisions"]
                    if d["policy"] == policy)

    def test_pipelined_checks_are_answered_in_order(self):
        svc = self.service()
        # Warm: the loops' Redis connections are made.
        self.assertEqual(self.login(svc, "warm@example.com").status, 200)
        for n in (2, 5):
            sock = socket.create_connection(("127.0.0.1", svc.port), 10)
            self.addCleanup(sock.close)
            sock.settimeout(10)
            user = "pipe%d@example.com" % n
            sock.sendall(b"".join(check_request(user, "198.51.100.%d" % i)
                                  for i in range(n)))
            # login.user counts down with each check of the user, so the
            # answers' order is the requests' order.
            answers = read_responses(sock, n)
            self.assertEqual([status for status, _ in answers], [200] * n)
            got = [next(d["remaining"] for d in body["decisions"]
                        if d["policy"] == "login.user")
                   for _, body in answers]
            self.assertEqual(got, [19 - i for i in range(n)])

    def test_clients_that_leave_while_redis_waits_cost_only_their_checks(
            self):
        svc = self.service()
        self.assertEqual(self.login(svc, "warm@example.com").status, 200)
        user = "gone@example.com"
        # Redis holds every command for a while: the checks sent now wait
        # in the service, their requests read in full.
        self.redis.cmd("CLIENT", "PAUSE", "1500", "ALL")
        socks = [svc.send("/check-login",
                          {"user": user, "ip": "203.0.113.%d" % i})
                 for i in range(12)]
        for i, s in enumerate(socks):
            if i % 2:
                # A reset: the service learns at once that the client is
                # gone, while its check is still in Redis.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
            s.close()
        # Once Redis runs them (a check that finds its loop's connection
        # still being made goes by a dispatcher, so the order of arrival
        # is not the order sent), the next check finds the twelve
        # abandoned checks counted.
        # (the first check may run as a script, before the service knows
        # Redis took the function library)
        calls = lambda: sum(self.redis.command_stats().get(
            c, {}).get("calls", 0) for c in ("fcall", "evalsha"))
        self.assertTrue(wait_until(lambda: calls() >= 1 + 12, 20.0),
                        calls())
        r = self.login(svc, user, "203.0.113.99")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.remaining(r, "login.user"), 20 - 13)
        # The stop (tearDown) drains cleanly: nothing is left waiting, and
        # under the sanitizers nothing was touched after it was freed.


if __name__ == "__main__":
    unittest.main()
