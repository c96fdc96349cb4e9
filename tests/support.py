"""Differential test harness: run commands on real Redis, record a trace, check it on the model.

A test writes a scenario against the real server; the expectations are the
server's own replies, never typed in by hand. ``check()`` asserts that the
model explains the whole recorded conversation (the conformance checker,
with time windows), and prints the divergence otherwise.

    def test_xadd_lenient_ids(redis):
        s = redis.scenario()
        s.call(1, "XADD", "s", " 1-1", "f", "v")
        s.check()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xspec.spec.resp import Reply
from xspec.traces.checker import check_trace
from xspec.traces.format import Trace, dumps
from xspec.traces.recorder import Arg, Recorder

if TYPE_CHECKING:
    from tests.conftest import RealRedis


class Scenario:
    def __init__(self, server: RealRedis, title: str | None = None,
                 config: dict[str, str] | None = None) -> None:
        self.server = server
        self.config = dict(config or {})
        if self.config:
            c = server.connection()
            try:
                for k, v in self.config.items():
                    r = c.call([b"CONFIG", b"SET", k.encode(), v.encode()])
                    assert r.__class__.__name__ == "Simple", f"CONFIG SET {k} {v}: {r}"
            finally:
                c.close()
        self.rec = Recorder(server.host, server.port, server_version=server.version,
                            config=self.config, title=title)

    def call(self, c: int, *args: Arg) -> Reply:
        return self.rec.call(c, *args)

    def send(self, c: int, *args: Arg) -> None:
        self.rec.send(c, *args)

    def recv(self, c: int, timeout: float = 10.0) -> Reply:
        return self.rec.recv(c, timeout)

    def is_waiting(self, c: int, wait: float = 0.05) -> bool:
        return self.rec.is_waiting(c, wait)

    def close(self, c: int) -> None:
        self.rec.close(c)

    def trace(self) -> Trace:
        return self.rec.trace()

    def check(self) -> Trace:
        """Assert that the model explains the recorded conversation."""
        self.rec.close_all()
        t = self.trace()
        v = check_trace(t)
        assert v.status == "conform", f"{v.describe()}\n--- trace ---\n{dumps(t)}"
        return t
