# SPDX-License-Identifier: Apache-2.0
"""The HTTP transport: a small pool of kept-alive ``http.client``
connections to one abuseguard, every exchange bounded by its call's
deadline.

A connection serves one call at a time: taken from the pool, given back
once its answer was read whole. Before one is reused it must have been
idle less than the idle timeout (kept below the service's
``--conn-timeout-s``, after which the service closes it) and must not be
readable: an idle connection that polls readable was closed by the peer
(EOF or reset), or holds bytes no request asked for, and would fail the
request written on it after the request may have been counted.

Thread-safety: a ``Pool`` is shared by all the threads of a client; the
idle list changes under one lock, and connecting, sending and reading
happen outside it. Fork-safety: a child process (a pre-fork server's
worker) never reuses a connection it inherited: parent and child would
read each other's answers.
"""

from __future__ import annotations

import collections
import http.client
import os
import select
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Deque, List, Literal, Mapping, Optional

MAX_BODY = 1 << 20
"""Bytes: an answer longer than this is no abuseguard answer (the
largest, a padded range, is about 40 KiB) and is dropped."""

MAX_IDLE = 8
"""Idle connections kept for reuse. More concurrent calls open more
connections; those beyond this are closed when given back."""


Reason = Literal["timeout", "unavailable"]
"""Why no answer came: the deadline passed, or anything else."""


class TransportFailure(Exception):
    """No usable answer: ``reason`` is ``"timeout"`` or ``"unavailable"``,
    as ``Verdict.failed`` says; ``sent`` is False when the request never
    reached the service whole (refused, or failed while being written), the
    one case in which a retry cannot make the service count it twice."""

    def __init__(self, reason: Reason, sent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sent = sent


@dataclass(frozen=True)
class Answer:
    """An HTTP answer read whole."""

    status: int
    data: bytes
    retry_after: Optional[str] = None
    """The ``Retry-After`` header, if any."""


class _DeadlineSocket(socket.socket):
    """A socket whose every send and receive waits only until ``deadline``
    (a ``time.monotonic()`` value): a fixed timeout per operation would let
    an answer trickled a byte at a time run far past the call's deadline."""

    deadline = 0.0

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        self.settimeout(left)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._arm()
        super().sendall(data, flags)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._arm()
        return super().recv_into(buffer, nbytes, flags)


class _Connection(http.client.HTTPConnection):
    """An ``HTTPConnection`` on a ``_DeadlineSocket`` that writes a request
    in one piece, remembering when it was last given back to the pool (on
    the client's clock)."""

    idle_since = 0.0
    _held_body: Optional[bytes] = None

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.timeout)
        try:
            # One small request and one small answer per call: Nagle's wait
            # for an ACK would only add latency.
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = _DeadlineSocket(fileno=raw.detach())
        finally:
            raw.close()

    def endheaders(self, message_body: Any = None, *,
                   encode_chunked: bool = False) -> None:
        # http.client writes the head and the body apart: two packets, and
        # the service woken for a head it cannot act on yet. The body is
        # held back and written with the head (send below) in one sendall.
        if isinstance(message_body, bytes) and not encode_chunked:
            self._held_body, message_body = message_body, None
        super().endheaders(message_body, encode_chunked=encode_chunked)

    def send(self, data: Any) -> None:
        if self._held_body is not None:
            data, self._held_body = data + self._held_body, None
        super().send(data)


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection's socket has anything to read, an EOF or
    an error included: then it cannot carry another request."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        ready, _, _ = select.select([sock], [], [], 0)
        return bool(ready)
    except (OSError, ValueError):
        return True


class Pool:
    """Kept-alive connections to one host and port."""

    def __init__(self, host: str, port: int, idle_timeout: float,
                 clock: Callable[[], float]) -> None:
        self._host = host
        self._port = port
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        # Oldest first: given back at the right, reused from the right (the
        # warmest), expired from the left.
        self._idle: Deque[_Connection] = collections.deque()

    def request(self, method: str, path: str, body: Optional[bytes],
                headers: Mapping[str, str], deadline: float) -> Answer:
        """One exchange, bounded by ``deadline`` (``time.monotonic()``).
        Raises ``TransportFailure`` when no answer was read whole."""
        conn = self._take()
        if conn is None:
            conn = self._connect(deadline)
        try:
            answer = self._exchange(conn, method, path, body, headers,
                                    deadline)
        except BaseException:
            conn.close()
            raise
        if answer is None:
            conn.close()
            raise TransportFailure("unavailable", True)
        return answer

    def close(self) -> None:
        """Closes the idle connections. The pool stays usable: a later
        request opens a new one."""
        with self._lock:
            idle = list(self._idle)
            self._idle.clear()
        for conn in idle:
            conn.close()

    def _take(self) -> Optional[_Connection]:
        if self._pid != os.getpid():
            # Forked: the idle sockets are shared with the parent, and the
            # answers to one would reach the other. They are dropped
            # (closing the child's copies sends nothing while the parent
            # holds them), and the lock is new: a thread the child lacks
            # may have held the old one.
            self._start()
            return None
        now = self._clock()
        stale: List[_Connection] = []
        found = None
        with self._lock:
            while self._idle and found is None:
                conn = self._idle.pop()
                if (now - conn.idle_since >= self._idle_timeout
                        or _readable(conn.sock)):
                    stale.append(conn)
                else:
                    found = conn
            while (self._idle and now - self._idle[0].idle_since
                   >= self._idle_timeout):
                stale.append(self._idle.popleft())
        for conn in stale:
            conn.close()
        return found

    def _give(self, conn: _Connection) -> None:
        conn.idle_since = self._clock()
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self, deadline: float) -> _Connection:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TransportFailure("timeout", False)
        conn = _Connection(self._host, self._port, timeout=left)
        try:
            conn.connect()
        except socket.timeout:
            conn.close()
            raise TransportFailure("timeout", False) from None
        except OSError:
            conn.close()
            raise TransportFailure("unavailable", False) from None
        return conn

    def _exchange(self, conn: _Connection, method: str, path: str,
                  body: Optional[bytes], headers: Mapping[str, str],
                  deadline: float) -> Optional[Answer]:
        """Sends on ``conn`` and reads the answer whole; gives ``conn``
        back when it can carry another request. None: the answer is
        longer than ``MAX_BODY``."""
        assert isinstance(conn.sock, _DeadlineSocket)
        conn.sock.deadline = deadline
        try:
            # One sendall (_Connection.send): a failure here means the
            # service never had the request whole.
            conn.request(method, path, body=body, headers=headers)
        except socket.timeout:
            raise TransportFailure("timeout", False) from None
        except (OSError, http.client.HTTPException):
            raise TransportFailure("unavailable", False) from None
        try:
            response = conn.getresponse()
            data = response.read(MAX_BODY + 1)
        except socket.timeout:
            raise TransportFailure("timeout", True) from None
        except (OSError, http.client.HTTPException):
            raise TransportFailure("unavailable", True) from None
        if len(data) > MAX_BODY:
            return None
        answer = Answer(response.status, data,
                        response.getheader("Retry-After"))
        # will_close: the service said Connection: close (the connection
        # cap's 503 does). Not closed yet: a body longer than it said.
        if response.will_close or not response.isclosed():
            conn.close()
        else:
            self._give(conn)
        return answer
