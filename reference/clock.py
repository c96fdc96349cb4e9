"""The reference server's clocks: the host's wall clock, or a virtual one moved by XSPEC.CLOCK."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What the core reads of a clock. A protocol rather than ``WallClock | VirtualClock``: tests bring
    clocks of their own, which a mypyc-compiled core would refuse under the union."""

    virtual: bool

    def now_ms(self) -> int: ...


class WallClock:
    """Milliseconds since the epoch, read from the host every time."""

    virtual = False

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class VirtualClock:
    """A clock that only moves when told to (``XSPEC.CLOCK SET`` / ``ADVANCE``); it may go backwards."""

    virtual = True

    def __init__(self, ms: int | None = None) -> None:
        self.ms = time.time_ns() // 1_000_000 if ms is None else ms

    def now_ms(self) -> int:
        return self.ms

    def set(self, ms: int) -> None:
        self.ms = ms


def make_clock(kind: str) -> WallClock | VirtualClock:
    """``--clock wall`` or ``--clock virtual``."""
    if kind == "wall":
        return WallClock()
    if kind == "virtual":
        return VirtualClock()
    raise ValueError(f"unknown clock {kind!r}: expected 'wall' or 'virtual'")
