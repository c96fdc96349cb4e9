"""Clocks the model reads time from, and the types of the times it computes.

The model never reads the wall clock. It calls :meth:`Clock.now_ms` exactly
where the dialect's server reads its clock (Redis 7.0: afresh for every XADD
ID, every delivery time and every consumer seen-time). A concrete clock
(:class:`ManualClock`) returns an ``int``. The conformance checker passes a
symbolic clock (``xspec.traces.check.symbolic``) whose readings are variables
constrained to the trace's time windows.

Every time the model computes has one of two types (spec/README.md, "Time"):

* :class:`Instant`: a reading of the clock, in milliseconds since the epoch,
  and every time derived from one: delivery times, consumers' seen-time and
  active-time, a blocked client's deadline, an absolute expiry;
* :class:`Duration`: milliseconds between two instants: idle times,
  min-idle-time, a BLOCK timeout, a relative expiry.

Neither is ever instantiated: at run time an instant or a duration is the
``int`` itself on a concrete clock (``Instant(ms)`` returns ``ms``), or the
checker's symbolic value, so the model's hot paths pay nothing for the types.
The type checker sees only the operations the classes declare. A time leaves
the model (an ID, a reply, a propagated command, a value for a caller) only
through one of the named conversions, called through the class, as
``Instant.id_ms(now)``: on an ``int`` it returns the ``int``; on any other
value it calls that value's method of the same name, which is how the
checker's symbolic time takes part. ``int()``, ``str()``, ``hash()``,
``repr()``, ``%``-formatting and f-strings never apply to a time
(tests/test_time_types.py). A new way out (a time in an INFO field, say) is a
new conversion here and in the checker's symbolic time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol, overload


class Instant:
    """A reading of the server clock in ms since the epoch, or a time computed from one.

    Operations (the only ones the type checker allows):

    * ``Instant(ms)``: an ``int`` taken as an instant (an argument such as
      XCLAIM's TIME, a bound such as ``I64_MAX``, an ID's ``ms`` part);
    * ``t - u`` of two instants is a :class:`Duration`;
    * ``t + d`` and ``t - d`` with a duration ``d`` are instants;
    * ``<``, ``<=``, ``>``, ``>=`` between instants, so ``min``, ``max`` and
      sorting; ``==`` and ``!=`` with anything;
    * storing it in the model's state.

    Conversions, each called as ``Instant.<name>(t)``:

    * :meth:`id_ms`: the exact millisecond of an XADD-generated ID;
    * :meth:`reply_ms`: the integer of a reply;
    * :meth:`propagated_ms`: an integer argument of a propagated command;
    * :meth:`exact_ms`: the value, for code that runs the model on a concrete
      clock (explorer, proofs, harness); a symbolic time has none.
    """

    __slots__ = ()

    def __new__(cls, ms: int) -> Instant:
        return ms  # type: ignore[return-value]  # an instant is its int at run time

    if TYPE_CHECKING:
        def __add__(self, other: Duration) -> Instant: ...

        @overload
        def __sub__(self, other: Instant) -> Duration: ...

        @overload
        def __sub__(self, other: Duration) -> Instant: ...

        def __sub__(self, other: Instant | Duration) -> Instant | Duration: ...

        def __lt__(self, other: Instant) -> bool: ...

        def __le__(self, other: Instant) -> bool: ...

        def __gt__(self, other: Instant) -> bool: ...

        def __ge__(self, other: Instant) -> bool: ...

    def id_ms(self) -> int:
        """The exact ms of an entry ID that XADD generates from this reading.

        Symbolic: one of the values the reading can take, those in the expected
        reply's IDs first; the choice is a branch of the checker's search.
        """
        return self if type(self) is int else self.id_ms()

    def reply_ms(self) -> int:
        """The time as the integer of a reply (XINFO seen-time, delivery times).

        Symbolic: the symbolic value itself, which the checker equates with
        the trace's integer when it compares the replies.
        """
        return self if type(self) is int else self.reply_ms()

    def propagated_ms(self) -> int:
        """The time as an integer argument of a propagated command (XCLAIM ... TIME, SET ... PXAT).

        Symbolic: the symbolic value itself (the checker does not render propagation).
        """
        return self if type(self) is int else self.propagated_ms()

    def exact_ms(self) -> int:
        """The value of a time read from a concrete clock. Symbolic: a TypeError."""
        return self if type(self) is int else self.exact_ms()

    def rendered(self) -> bytes:
        """The time as the digits of an argument in the replication stream or the AOF.

        Symbolic: bytes of the right length that stand for the symbolic value, which
        ``parse_ll`` reads back (or, when its digits vary in number, one exact value, a branch).
        """
        return b"%d" % self if type(self) is int else self.rendered()


class Duration:
    """Milliseconds between two instants: an idle time, min-idle-time, a BLOCK timeout, an expiry.

    Operations (the only ones the type checker allows):

    * ``Duration(ms)``: an ``int`` taken as a duration (an argument such as
      XPENDING's IDLE or XREAD's BLOCK, a constant);
    * ``d + e``, ``d - e`` and ``-d`` are durations; ``d + t`` with an
      :class:`Instant` is an instant;
    * ``<``, ``<=``, ``>``, ``>=`` between durations, so ``min`` and ``max``;
      ``==`` and ``!=`` with anything; the truth value of a duration that came
      from an argument (0 is false);
    * storing it.

    Conversions, each called as ``Duration.<name>(d)``: :meth:`reply_ms`,
    :meth:`propagated_ms` and :meth:`exact_ms`, as for :class:`Instant`.
    """

    __slots__ = ()

    def __new__(cls, ms: int) -> Duration:
        return ms  # type: ignore[return-value]  # a duration is its int at run time

    if TYPE_CHECKING:
        @overload
        def __add__(self, other: Duration) -> Duration: ...

        @overload
        def __add__(self, other: Instant) -> Instant: ...

        def __add__(self, other: Duration | Instant) -> Duration | Instant: ...

        def __sub__(self, other: Duration) -> Duration: ...

        def __neg__(self) -> Duration: ...

        def __lt__(self, other: Duration) -> bool: ...

        def __le__(self, other: Duration) -> bool: ...

        def __gt__(self, other: Duration) -> bool: ...

        def __ge__(self, other: Duration) -> bool: ...

    def reply_ms(self) -> int:
        """The duration as the integer of a reply (XPENDING and XINFO idle times). Symbolic: itself."""
        return self if type(self) is int else self.reply_ms()

    def propagated_ms(self) -> int:
        """The duration as an integer argument of a propagated command (SET ... PX). Symbolic: itself."""
        return self if type(self) is int else self.propagated_ms()

    def exact_ms(self) -> int:
        """The value of a duration computed on a concrete clock. Symbolic: a TypeError."""
        return self if type(self) is int else self.exact_ms()


EPOCH: Final = Instant(0)
"""The instant 0, the Unix epoch (an XCLAIM TIME before it is ignored)."""

ZERO_DURATION: Final = Duration(0)
"""No time at all (idle times are reported as at least this)."""


class Clock(Protocol):
    def now_ms(self) -> Instant:
        """One reading of the server clock, in milliseconds since the epoch."""
        ...


class ManualClock:
    """A clock that only moves when told to: tests, the explorer, virtual traces.

    ``ms`` is a plain ``int`` that callers set and read; a reading is that int
    as an :class:`Instant`.
    """

    def __init__(self, ms: int = 1_700_000_000_000) -> None:
        self.ms = ms
        self.readings = 0

    def now_ms(self) -> Instant:
        self.readings += 1
        return self.ms  # type: ignore[return-value]  # an instant is its int at run time

    def set(self, ms: int) -> None:
        self.ms = ms

    def advance(self, ms: int) -> None:
        self.ms += ms
