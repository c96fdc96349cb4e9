"""Clocks the model reads time from. The model never reads the wall clock.

The model calls :meth:`Clock.now_ms` exactly where the dialect's server reads
its clock (Redis 7.0: afresh for every XADD ID, every delivery time and every
consumer seen-time). A concrete clock returns an ``int``. The conformance
checker passes a symbolic clock whose readings are variables constrained to
the trace's time windows; the model's arithmetic and comparisons on them go
through operator overloading, so the model code is the same in both cases.

:meth:`Clock.concrete` is called where a reading becomes data that must be an
exact integer (the ``ms`` half of an XADD-generated ID).
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """One reading of the server clock, in milliseconds since the epoch."""
        ...

    def concrete(self, t: int) -> int:
        """The exact integer value of a time the model stores as data."""
        ...


class ManualClock:
    """A clock that only moves when told to: tests, the explorer, virtual traces."""

    def __init__(self, ms: int = 1_700_000_000_000) -> None:
        self.ms = ms
        self.readings = 0

    def now_ms(self) -> int:
        self.readings += 1
        return self.ms

    def concrete(self, t: int) -> int:
        return t

    def set(self, ms: int) -> None:
        self.ms = ms

    def advance(self, ms: int) -> None:
        self.ms += ms
