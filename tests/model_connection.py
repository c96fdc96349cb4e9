"""The model behind a connection-like interface, so that a script written for a real server's
``RespConnection`` (``call``, ``send``, ``recv``, ``close``) runs on the model unchanged.

Time is the model's :class:`ManualClock`; a ``recv`` for a client still blocked moves the clock
past its deadline and lets it time out, as waiting on a real server would.
"""

from __future__ import annotations

from xspec.models.clock import ManualClock
from xspec.models.server import Outcome, Server
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Reply


class ModelServer:
    """One model server of a dialect, counting from a fresh start (STATS-0)."""

    def __init__(self, dialect: str) -> None:
        self.clock = ManualClock(1_700_000_000_000)
        self.server = Server(get_dialect(dialect), self.clock)
        self.server.stats.assume_fresh()
        self.inbox: dict[int, list[Reply]] = {}

    def connect(self) -> ModelConnection:
        return ModelConnection(self)

    def deliver(self, out: Outcome) -> None:
        for cid, reply in out.served:
            self.inbox.setdefault(cid, []).append(reply)


class ModelConnection:
    """A client of a :class:`ModelServer`."""

    def __init__(self, model: ModelServer) -> None:
        self.model = model
        self.id = model.server.connect()

    def send(self, argv: list[bytes]) -> None:
        out = self.model.server.execute(self.id, argv)
        if not out.blocked and out.reply is not None:
            self.model.inbox.setdefault(self.id, []).append(out.reply)
        self.model.deliver(out)

    def recv(self, timeout: float = 5) -> Reply:
        waiting = self.model.inbox.get(self.id)
        if not waiting:
            blocked = self.model.server.clients[self.id].blocked
            if blocked is None or blocked.deadline is None:
                raise TimeoutError(f"client {self.id} has no reply and waits for ever")
            self.model.clock.set(int(blocked.deadline) + 1)
            for cid, reply in self.model.server.due_timeouts(self.model.clock.now_ms()):
                self.model.inbox.setdefault(cid, []).append(reply)
            waiting = self.model.inbox[self.id]
        return waiting.pop(0)

    def call(self, argv: list[bytes]) -> Reply:
        self.send(argv)
        return self.recv()

    def close(self) -> None:
        self.model.server.close(self.id)
