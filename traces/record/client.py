"""A small synchronous RESP client that keeps every reply's wire type.

redis-py and hiredis fold ``$-1``, ``*-1`` and ``_`` into one ``None``; a
recorder and a differential test must not, so they use this client.
"""

from __future__ import annotations

import socket
import time

from xspec.spec.resp import Parser, Reply, encode_command


class ConnectionClosed(ConnectionError):
    """The server closed the connection before a whole reply arrived."""


def now_us() -> int:
    """Microseconds since the epoch, the trace clock."""
    return time.time_ns() // 1000


class RespConnection:
    """One connection; ``send`` and ``recv`` can be split for pipelines and blocking reads."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.parser = Parser()
        self.closed = False

    def send(self, argv: list[bytes]) -> None:
        self.sock.sendall(encode_command(argv))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout: float | None = 10.0) -> Reply:
        """The next reply; raises TimeoutError if none arrives in time."""
        self.sock.settimeout(timeout)
        while True:
            r = self.parser.get()
            if r is not None:
                return r
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                raise TimeoutError("no reply") from None
            if not data:
                self.closed = True
                raise ConnectionClosed("server closed the connection")
            self.parser.feed(data)

    def poll(self, wait: float = 0.0) -> Reply | None:
        """A reply if one is (or becomes, within ``wait`` s) available, else None."""
        try:
            return self.recv(timeout=wait if wait > 0 else 0.000001)
        except TimeoutError:
            return None

    def call(self, argv: list[bytes]) -> Reply:
        self.send(argv)
        return self.recv()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass
