"""The receiver's door: every new connection waits here, without a thread, until its request head is in;
only a webhook that presents the shared secret in it (or a health check) is let through to a thread.

Label Studio sends a webhook's head at once. A connection that sends nothing, trickles, or presents no
secret costs a socket here for at most `HEAD_SECONDS` and is answered or closed; when `MAX_PENDING`
connections wait, the one that has waited longest is closed to make room, so a flood of silent connections
cannot keep Label Studio's webhooks out, however often it is re-opened.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)
HEAD_SECONDS = 2.0
MAX_PENDING = 1024
MAX_HEAD = 16 * 2**10
FORBIDDEN = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@dataclass
class Waiting:
    address: Any
    since: float
    head: bytearray = field(default_factory=bytearray)


def presents(head: bytes, header: str, secret: bytes) -> bool:
    """Whether the request head carries `header` with the secret."""
    wanted = header.lower().encode() + b":"
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(wanted):
            return bool(secret) and hmac.compare_digest(line[len(wanted) :].strip(), secret)
    return False


class Doorman:
    """One thread holding the connections not yet let through. `admit(connection, address, head)` is
    called for each let through; `count(what)` for each one closed and why."""

    def __init__(
        self,
        header: str,
        secret: bytes,
        admit: Callable[[socket.socket, Any, bytes], None],
        count: Callable[[str], Any],
        head_seconds: float = HEAD_SECONDS,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.header, self.secret, self.admit, self.count = header, secret, admit, count
        self.head_seconds, self.max_pending = head_seconds, max_pending
        self._selector = selectors.DefaultSelector()
        self._waiting: OrderedDict[socket.socket, Waiting] = OrderedDict()
        self._arrived: list[tuple[socket.socket, Any]] = []
        self._lock = threading.Lock()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._selector.register(self._wake_reader, selectors.EVENT_READ)
        self._closed = threading.Event()
        threading.Thread(target=self._run, name="doorman", daemon=True).start()

    def add(self, connection: socket.socket, address: Any) -> None:
        with self._lock:
            self._arrived.append((connection, address))
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    def _run(self) -> None:
        while not self._closed.is_set():
            for key, _ in self._selector.select(timeout=min(0.25, self.head_seconds / 4)):
                if key.fileobj is self._wake_reader:
                    self._wake_reader.recv(4096)
                    self._take_arrivals()
                else:
                    self._read(key.fileobj)  # type: ignore[arg-type]
            self._cut_late()
        for connection in list(self._waiting):
            self._drop(connection, None)

    def _take_arrivals(self) -> None:
        with self._lock:
            arrived, self._arrived = self._arrived, []
        for connection, address in arrived:
            if len(self._waiting) >= self.max_pending:
                self._drop(next(iter(self._waiting)), "connections_evicted")
            connection.setblocking(False)
            self._waiting[connection] = Waiting(address, time.monotonic())
            self._selector.register(connection, selectors.EVENT_READ)

    def _read(self, connection: socket.socket) -> None:
        waiting = self._waiting[connection]
        try:
            chunk = connection.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            return self._drop(connection, "connections_closed_before_head")
        waiting.head += chunk
        end = waiting.head.find(b"\r\n\r\n")
        if end < 0:
            if len(waiting.head) > MAX_HEAD:
                self._drop(connection, "heads_too_long")
            return
        head = bytes(waiting.head)
        if head.startswith(b"GET ") or presents(head[:end], self.header, self.secret):
            self._let_through(connection, waiting.address, head)
        else:
            log.warning("refused a webhook from %s: wrong or missing secret", waiting.address[0])
            with contextlib.suppress(OSError):
                connection.send(FORBIDDEN)
            self._drop(connection, "refused")

    def _let_through(self, connection: socket.socket, address: Any, head: bytes) -> None:
        self._selector.unregister(connection)
        del self._waiting[connection]
        connection.setblocking(True)
        self.admit(connection, address, head)

    def _cut_late(self) -> None:
        cutoff = time.monotonic() - self.head_seconds
        while self._waiting:
            connection, waiting = next(iter(self._waiting.items()))
            if waiting.since >= cutoff:
                return
            self._drop(connection, "connections_cut_before_head")

    def _drop(self, connection: socket.socket, why: str | None) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(connection)
        self._waiting.pop(connection, None)
        with contextlib.suppress(OSError):
            connection.close()
        if why is not None:
            self.count(why)
