"""Recording traces from a live server by driving it with scripted clients.

:class:`Recorder` opens numbered connections to a server and writes every
command and reply as trace events, timestamped on the trace clock: ``call``
when a command's reply is read before anything else happens, ``send``/``recv``
when replies are awaited later (blocking reads, pipelines, overlapping
clients). Scenario scripts (``xspec.traces.scenarios``) use it to build the
corpus; the differential tests use it to run the same commands on a real
server and check the result against the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from xspec.spec.resp import Reply
from xspec.spec.trace_format import Call, Close, Connect, Event, Header, Note, Recv, Send, Trace
from xspec.traces.record.client import RespConnection, now_us

Arg = str | bytes | int


def to_argv(args: Sequence[Arg]) -> list[bytes]:
    out = []
    for a in args:
        if isinstance(a, bytes):
            out.append(a)
        elif isinstance(a, int):
            out.append(str(a).encode())
        else:
            out.append(a.encode("utf-8"))
    return out


class Recorder:
    """Drive a server with numbered clients and record the conversation."""

    def __init__(self, host: str, port: int, *, server_name: str = "redis",
                 server_version: str = "7.0.15", config: dict[str, str] | None = None,
                 title: str | None = None, tags: list[str] | None = None) -> None:
        self.host = host
        self.port = port
        self.header = Header(server_name=server_name, server_version=server_version, clock="wall",
                             config=dict(config or {}), title=title, source="recorded", tags=tags)
        self.events: list[Event] = []
        self.conns: dict[int, RespConnection] = {}
        self.pending: dict[int, int] = {}  # client -> replies still expected
        self.early: dict[int, list[tuple[Reply, int]]] = {}  # replies read ahead by is_waiting

    # -- connections -------------------------------------------------------
    def conn(self, c: int) -> RespConnection:
        if c not in self.conns:
            self.conns[c] = RespConnection(self.host, self.port)
            self.pending[c] = 0
        return self.conns[c]

    def connect(self, c: int) -> None:
        """Open client ``c`` explicitly (a ``connect`` event)."""
        t = now_us()
        self.conn(c)
        self.events.append(Connect(c=c, t=t))

    def close(self, c: int) -> None:
        """The client closes its connection (a ``close`` event)."""
        conn = self.conns.pop(c)
        t = now_us()
        conn.close()
        self.pending.pop(c, None)
        self.events.append(Close(c=c, by="client", t=t))

    # -- commands --------------------------------------------------------------
    def call(self, c: int, *args: Arg) -> Reply:
        """Send a command and wait for its reply; nothing else happens in between."""
        conn = self.conn(c)
        if self.pending.get(c):
            raise RuntimeError(f"client {c} has replies outstanding; use send/recv")
        argv = to_argv(args)
        t0 = now_us()
        conn.send(argv)
        reply = conn.recv()
        t1 = now_us()
        self.events.append(Call(c=c, cmd=argv, reply=reply, t0=t0, t1=t1))
        return reply

    def send(self, c: int, *args: Arg) -> None:
        """Send a command whose reply is read later with :meth:`recv`."""
        conn = self.conn(c)
        argv = to_argv(args)
        t = now_us()
        conn.send(argv)
        self.pending[c] += 1
        self.events.append(Send(c=c, cmd=argv, t=t))

    def recv(self, c: int, timeout: float = 10.0) -> Reply:
        """Read client ``c``'s next reply (its oldest outstanding send)."""
        early = self.early.get(c)
        if early:
            reply, t = early.pop(0)
        else:
            reply = self.conns[c].recv(timeout)
            t = now_us()
        self.pending[c] -= 1
        self.events.append(Recv(c=c, reply=reply, t=t))
        return reply

    def is_waiting(self, c: int, wait: float = 0.05) -> bool:
        """True if client ``c`` has no reply within ``wait`` seconds (it is blocked).

        A reply that did arrive is kept for the next :meth:`recv`.
        """
        if self.early.get(c):
            return False
        r = self.conns[c].poll(wait)
        if r is None:
            return True
        self.early.setdefault(c, []).append((r, now_us()))
        return False

    def note(self, text: str) -> None:
        self.events.append(Note(text=text))

    def trace(self) -> Trace:
        return Trace(self.header, list(self.events))

    def close_all(self) -> None:
        for conn in self.conns.values():
            conn.close()
        self.conns.clear()
