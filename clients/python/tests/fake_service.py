# SPDX-License-Identifier: Apache-2.0
"""The tests' doubles. Above all a scripted stand-in for abuseguard: an
HTTP/1.1 server on a spare loopback port whose every answer the test
chooses, byte for byte; and a clock the test moves.

Each request is handed to the test's ``handler`` (a function of the
``Request``) which returns an action: ``reply(...)``, ``HANG``, ``DROP``
or ``trickle(...)``. The server records every connection and request and
when the client closed a connection, so that tests wait for those events
(``wait_until``) instead of sleeping.
"""

import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

Action = Callable[[socket.socket, "FakeService"], bool]
"""Answers on a connection; True keeps the connection for the next
request."""

ALLOWED = {"allowed": True, "device": "untrusted", "decisions": []}
"""The body of a 200 to a check."""


@dataclass
class Request:
    method: str
    path: str
    headers: Dict[str, str]  # names in lower case
    body: bytes
    connection: int  # 0 for the first connection accepted, and so on

    def json(self):
        return json.loads(self.body)


@dataclass
class _Connection:
    sock: socket.socket
    closed_by_client: bool = False


def reply(status: int, doc=None, *, raw: Optional[bytes] = None,
          headers: Optional[Dict[str, str]] = None, close: bool = False,
          then_close: bool = False) -> Action:
    """An answer with a JSON ``doc`` (or ``raw`` bytes) as its body.
    ``close``: with ``Connection: close``, as the connection cap's 503.
    ``then_close``: close silently after answering, as a server whose
    idle timeout ran out."""
    body = raw if raw is not None else (
        b"" if doc is None else json.dumps(doc).encode())
    head = ["HTTP/1.1 %d X" % status, "Content-Length: %d" % len(body)]
    if doc is not None:
        head.append("Content-Type: application/json")
    head += ["%s: %s" % kv for kv in (headers or {}).items()]
    if close:
        head.append("Connection: close")

    def act(sock: socket.socket, server: "FakeService") -> bool:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return not (close or then_close)
    return act


def HANG(sock: socket.socket, server: "FakeService") -> bool:
    """Never answers (until the server closes)."""
    server._stopping.wait()
    return False


def DROP(sock: socket.socket, server: "FakeService") -> bool:
    """Closes the connection without answering: a reset mid-exchange."""
    return False


def trickle(status: int, body: bytes, every: float) -> Action:
    """Sends the head, then the body one byte at a time, ``every``
    seconds apart: each read is quick, the whole answer is not."""
    def act(sock: socket.socket, server: "FakeService") -> bool:
        sock.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n"
                     % (status, len(body)))
        for i in range(len(body)):
            if server._stopping.wait(every):
                return False
            sock.sendall(body[i:i + 1])
        return True
    return act


def answering(*actions: Action) -> Callable[["Request"], Action]:
    """A handler answering with ``actions`` in turn, the last one for
    ever after."""
    queue = list(actions)

    def handler(request: "Request") -> Action:
        return queue.pop(0) if len(queue) > 1 else queue[0]
    return handler


class FakeClock:
    """A clock to inject (seconds), moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeService:
    """The server; ``with FakeService(handler) as fake:``."""

    def __init__(self, handler: Callable[[Request], Action]) -> None:
        self.handler = handler
        self.requests: List[Request] = []
        self.connections: List[_Connection] = []
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> "FakeService":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._stopping.set()
        self._listener.close()
        with self._changed:
            for conn in self.connections:
                _close(conn.sock)

    def wait_until(self, predicate: Callable[[], bool],
                   timeout: float = 5.0) -> None:
        """Waits for an event the server records (a request, a client's
        close); fails the test if it has not happened within ``timeout``."""
        end = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError("the fake service waited in vain")
                self._changed.wait(left)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._changed:
                self.connections.append(_Connection(sock))
                number = len(self.connections) - 1
                self._changed.notify_all()
            threading.Thread(target=self._serve, args=(sock, number),
                             daemon=True).start()

    def _serve(self, sock: socket.socket, number: int) -> None:
        reader = sock.makefile("rb")
        try:
            while True:
                request = _read_request(reader, number)
                if request is None:
                    with self._changed:
                        self.connections[number].closed_by_client = True
                        self._changed.notify_all()
                    return
                with self._changed:
                    self.requests.append(request)
                    self._changed.notify_all()
                if not self.handler(request)(sock, self):
                    return
        except OSError:
            return
        finally:
            reader.close()
            _close(sock)


def _read_request(reader, number: int) -> Optional[Request]:
    line = reader.readline()
    if not line:
        return None
    method, path, _ = line.decode().split(" ", 2)
    headers = {}
    while True:
        line = reader.readline().decode().rstrip("\r\n")
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = reader.read(int(headers.get("content-length", "0")))
    return Request(method, path, headers, body, number)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
