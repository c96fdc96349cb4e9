"""CLIENT PAUSE ends when the server clock reaches its end, even when the loop's timer fires early."""

from __future__ import annotations

from collections.abc import Callable

from xspec.reference.handlers import new_core


class SteppedWallClock:
    """A wall clock (not virtual: the core sets timers for it) that a test moves by hand."""

    virtual = False

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms


def test_a_pause_timer_that_fires_early_is_set_again_and_the_pause_ends_at_its_end() -> None:
    clock = SteppedWallClock(1_000_000)
    timers: list[tuple[float, Callable[[], None]]] = []
    core = new_core(clock=clock)
    core.timer_factory = lambda delay, callback: timers.append((delay, callback))
    c = core.connect(None)
    assert core.execute(c, [b"CLIENT", b"PAUSE", b"300", b"WRITE"]) is not None
    assert core.pause_until == 1_000_300 and len(timers) == 1

    # The loop's monotonic timer fires a millisecond before the server's clock reaches the end.
    clock.ms = 1_000_299
    timers.pop()[1]()
    assert core.pause_until == 1_000_300, "the pause must not end before its time"
    assert len(timers) == 1, "an early timer must be set again, or paused clients wait for ever"
    assert timers[0][0] == 0.001

    clock.ms = 1_000_300
    timers.pop()[1]()
    assert core.pause_until == 0 and not timers
