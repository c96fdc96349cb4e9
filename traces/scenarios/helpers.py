"""Small building blocks the scenario scripts share."""

from __future__ import annotations

import time
from collections.abc import Iterable

from xspec.spec.resp import Array, Bulk, Reply
from xspec.traces.record.recorder import Arg, Recorder
from xspec.traces.scenarios.registry import ScenarioError

MAX_ID = "18446744073709551615-18446744073709551615"
U64_MAX = "18446744073709551615"


def add(r: Recorder, key: str, ids: Iterable[str | int], c: int = 1, field: str = "f") -> None:
    """XADD one entry per ID (an int ``n`` means ``n-0``), value = the ID's position."""
    for n, i in enumerate(ids, 1):
        r.call(c, "XADD", key, f"{i}-0" if isinstance(i, int) else i, field, str(n))


def block(r: Recorder, c: int, *args: Arg) -> None:
    """Send a blocking command and make sure the server has blocked the client before going on."""
    r.send(c, *args)
    if not r.is_waiting(c):
        raise ScenarioError(f"client {c} was expected to block on {args!r}")


def sleep_ms(ms: int) -> None:
    """Let real time pass on the server (idle times, `*` IDs)."""
    time.sleep(ms / 1000)


def resp3(r: Recorder, c: int) -> None:
    """Switch client ``c`` to RESP3."""
    r.call(c, "HELLO", "3")


def items(reply: Reply) -> tuple[Reply, ...]:
    """The elements of an array reply that a scenario relies on; fails the scenario otherwise."""
    if not isinstance(reply, Array):
        raise ScenarioError(f"expected an array reply, got {reply!r}")
    return reply.items


def bulk(reply: Reply) -> bytes:
    """The bytes of a bulk-string reply that a scenario relies on; fails the scenario otherwise."""
    if not isinstance(reply, Bulk):
        raise ScenarioError(f"expected a bulk string reply, got {reply!r}")
    return reply.value
