"""Replies of the random commands (SRANDMEMBER, ZRANDMEMBER): equal to every reply the server may draw.

A real server draws with its own random generator, so the model cannot say which members come back,
only what makes a draw valid: how many, from which members, whether they may repeat. These replies
compare equal to exactly the valid draws (ENV-RANDOM). They are already rendered for the client's
protocol (the handler wraps them in ``PreRendered``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xspec.spec.resp import Array, Bulk, Reply


class Sample(Array):
    """An array of ``size`` units drawn from ``pool`` (a unit: the ``width`` items one member takes, e.g. a
    member and its score), all different when ``distinct``. ``items`` holds one valid draw, for display."""

    __slots__ = ("pool", "size", "width", "distinct")
    pool: frozenset[tuple[str, ...]]
    size: int
    width: int
    distinct: bool

    @classmethod
    def of(cls, pool: Sequence[tuple[Reply, ...]], size: int, distinct: bool) -> Sample:
        width = len(pool[0]) if pool else 1
        shown = [item for unit in (pool[:size] if distinct else [pool[i % len(pool)] for i in range(size)])
                 for item in unit] if pool else []
        sample = cls(tuple(shown))
        object.__setattr__(sample, "pool", frozenset(_key(u) for u in pool))
        object.__setattr__(sample, "size", size)
        object.__setattr__(sample, "width", width)
        object.__setattr__(sample, "distinct", distinct)
        return sample

    def __eq__(self, other: object) -> bool:
        if type(other) is not Array or len(other.items) != self.size * self.width:
            return False
        units = [_key(other.items[i:i + self.width]) for i in range(0, len(other.items), self.width)]
        if any(u not in self.pool for u in units):
            return False
        return not self.distinct or len(set(units)) == len(units)

    def __hash__(self) -> int:
        return hash((self.pool, self.size, self.distinct))


class OneOf(Bulk):
    """A bulk string that may be any of ``choices`` (SRANDMEMBER without a count)."""

    __slots__ = ("choices",)
    choices: frozenset[bytes]

    @classmethod
    def of(cls, choices: Sequence[bytes]) -> OneOf:
        one = cls(choices[0])
        object.__setattr__(one, "choices", frozenset(choices))
        return one

    def __eq__(self, other: object) -> bool:
        return type(other) is Bulk and other.value in self.choices

    def __hash__(self) -> int:
        return hash(self.choices)


def _key(unit: Sequence[Any]) -> tuple[str, ...]:
    return tuple(repr(i) for i in unit)
