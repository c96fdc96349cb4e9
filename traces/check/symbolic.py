"""Symbolic time for exact conformance checking.

In a wall-clock trace the server's clock readings are unknown: each one lies
in the time window of the command that made it, and readings never decrease
along the execution. The checker runs the model on a :class:`SymbolicClock`
whose readings are variables ``t_i``; the model computes with them as if they
were integers (``+``, ``-``, comparisons, ``max``/``min``), and every value it
can build is a *difference term* ``t_p - t_n + c`` (:class:`Time`).

What is known about the variables is a conjunction of difference constraints
``t_p - t_n <= w``, kept in a :class:`Zone`: the tightest bounds ``lo[v]``,
``hi[v]`` of every variable (the shortest paths from and to the reference
variable ``t_0 = 0``) and a sparse graph of the constraints between variables.
Adding a constraint propagates bounds incrementally and detects an
inconsistent (negative) cycle; the maximum of ``t_p - t_n`` is a shortest path
computed on demand with Dijkstra on reduced costs, pruned by the window widths.

A comparison the model makes is decided by entailment when the zone implies
it either way; otherwise the zone asks its chooser (the checker's search) for
a branch and adds the chosen constraint. While the checker compares a model
reply with the trace's reply (:meth:`Zone.assuming`), ``==`` on a
:class:`Time` *adds* the equality instead of branching, and answers whether it
is consistent.

A time leaves the model only through the named conversions of
:class:`xspec.models.clock.Instant` and :class:`~xspec.models.clock.Duration`,
which hand a non-``int`` value to its method of the same name; :class:`Time`
implements them: :meth:`Time.id_ms` (an XADD ID) branches over the feasible
values, those hinted by the expected reply first; :meth:`Time.reply_ms` and
:meth:`Time.propagated_ms` keep the value symbolic, and so does
:meth:`Time.rendered` (an argument of the replication stream or the AOF), as a
:class:`RenderedTime` that parses back to the time; :meth:`Time.exact_ms`
refuses. Every other way to an integer or a text (``int()``, ``str()``,
``hash()``, formatting, a truth value) raises.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from xspec.models.clock import Instant

UNBOUNDED = 1 << 62
"""Bounds beyond every real time; a variable with no window lies in [-UNBOUNDED, UNBOUNDED]."""

CONCRETE_LIMIT = 64
"""How many values :meth:`SymbolicClock.concrete` offers beyond the hinted ones."""


class Infeasible(Exception):
    """The constraints added on this branch have no solution."""


class Ambiguous(Exception):
    """A comparison the zone cannot decide, with no chooser to branch."""


Chooser = Callable[[int, bool], int]
"""``choose(n, complete)``: pick one of ``n`` alternatives (0 is preferred); ``complete`` is
False when the alternatives offered are not all there are."""


def _no_chooser(n: int, complete: bool) -> int:
    raise Ambiguous("a comparison of symbolic times needs a branch, and nothing can branch here")


# Trail records, undone in reverse order by Zone.undo.
_LO, _HI, _EDGE, _VAR = 0, 1, 2, 3


class Zone:
    """A conjunction of difference constraints over clock readings ``t_1 .. t_n`` and ``t_0 = 0``.

    Readings are created in execution order and each is constrained to be at
    least the previous one (the chain ``t_{i-1} <= t_i`` is implicit, not
    stored as edges), except a reading that starts a branch of the chain
    (:attr:`branch_from`): that one follows a given earlier reading instead, so
    that the steps of two nodes taken one after the other in the search need not
    read their clocks in that order (:meth:`join` closes the branches). ``lo``/``hi`` are always the exact
    bounds implied by all constraints, so the zone is consistent exactly when
    no propagation failed.
    """

    def __init__(self) -> None:
        self.lo: list[int] = [0]
        self.hi: list[int] = [0]
        # edge n -> p with weight w stands for t_p - t_n <= w
        self.out: dict[int, list[tuple[int, int]]] = {}
        self.inn: dict[int, list[tuple[int, int]]] = {}
        self.edges = 0
        # readings not chained to the one before (branches; sorted), and the same as a set
        self.unchained: list[int] = []
        self.unchained_set: set[int] = set()
        # set by the checker: the next reading starts a branch after this reading (0: after none)
        self.branch_from: int | None = None
        self.trail: list[tuple[int, int, int]] = []
        self.assume = False  # inside assuming(): == adds equalities
        self.choose: Chooser = _no_chooser
        # The reply the command being run should give: its IDs hint Time.id_ms's choices.
        self.expected: Any = None
        # Set by the checker when the command's reply shows the ID it makes (an answered XADD):
        # then only the hinted values of Time.id_ms can succeed, and no other is tried.
        self.ids_shown = False

    # -- snapshots ------------------------------------------------------------------
    def snapshot(self) -> tuple[Any, ...]:
        return (self.lo[:], self.hi[:], {k: v[:] for k, v in self.out.items()},
                {k: v[:] for k, v in self.inn.items()}, self.edges, self.unchained[:])

    def restore(self, snap: tuple[Any, ...]) -> None:
        """Load a snapshot in place (the :class:`Time` values of the model keep pointing here)."""
        lo, hi, out, inn, edges, *rest = snap
        self.unchained = rest[0][:] if rest else []
        self.unchained_set = set(self.unchained)
        self.branch_from = None
        self.lo = lo[:]
        self.hi = hi[:]
        self.out = {k: v[:] for k, v in out.items()}
        self.inn = {k: v[:] for k, v in inn.items()}
        self.edges = edges
        self.trail.clear()

    def reset(self) -> None:
        self.restore(([0], [0], {}, {}, 0))

    def mark(self) -> int:
        return len(self.trail)

    def undo(self, mark: int) -> None:
        """Take back every change made since ``mark``."""
        trail = self.trail
        while len(trail) > mark:
            kind, a, b = trail.pop()
            if kind == _LO:
                self.lo[a] = b
            elif kind == _HI:
                self.hi[a] = b
            elif kind == _EDGE:
                self.out[a].pop()
                self.inn[b].pop()
                self.edges -= 1
            else:
                v = len(self.lo) - 1
                self.lo.pop()
                self.hi.pop()
                if self.unchained and self.unchained[-1] == v:
                    self.unchained.pop()
                    self.unchained_set.discard(v)

    def forget_trail(self) -> None:
        """Changes made so far will not be undone (the checker calls this between commands)."""
        self.trail.clear()

    # -- variables ------------------------------------------------------------------
    def new_reading(self, lo: int, hi: int) -> int:
        """A new variable in ``[lo, hi]``, after every earlier reading (or, starting a branch, after
        :attr:`branch_from` only)."""
        v = len(self.lo)
        after = self.branch_from
        if after is not None:
            self.branch_from = None
            return self._branch_reading(v, after, lo, hi)
        if v > 1:
            lo = max(lo, self.lo[v - 1])
        if lo > hi:
            raise Infeasible(f"the clock would have to read at least {_show_bound(lo)} (the window's start or "
                             f"an earlier reading) and at most {_show_bound(hi)}")
        self.lo.append(lo)
        self.hi.append(hi)
        self.trail.append((_VAR, v, 0))
        if v > 1 and self.hi[v - 1] > hi:
            self._lower_hi(v - 1, hi, -1)
        return v

    def _branch_reading(self, v: int, after: int, lo: int, hi: int) -> int:
        if after > 0:
            lo = max(lo, self.lo[after])
        if lo > hi:
            raise Infeasible(f"the clock would have to read at least {_show_bound(lo)} (the window's start or "
                             f"an earlier reading) and at most {_show_bound(hi)}")
        self.lo.append(lo)
        self.hi.append(hi)
        self.trail.append((_VAR, v, 0))
        self.unchained.append(v)
        self.unchained_set.add(v)
        if after > 0:
            self.add_le(after, v, 0)
        return v

    def join(self, branches: list[int]) -> int:
        """A reading (of no command) after the latest one and after each of ``branches``: the chain
        goes on from there, so every later reading follows all of them."""
        v = self.new_reading(-UNBOUNDED, UNBOUNDED)
        for b in branches:
            if b and b != v - 1:
                self.add_le(b, v, 0)
        return v

    def chained(self, p: int, n: int) -> bool:
        """Whether the implicit chain runs from reading ``p`` to a later reading ``n`` (no branch starts
        between them)."""
        unchained = self.unchained
        if not unchained:
            return True
        i = bisect.bisect_right(unchained, p)
        return i == len(unchained) or unchained[i] > n

    # -- constraints ------------------------------------------------------------------
    def add_le(self, p: int, n: int, w: int) -> None:
        """Add ``t_p - t_n <= w`` (0 is the reference). Raises :class:`Infeasible`."""
        if p == n:
            if w < 0:
                raise Infeasible("t - t < 0")
            return
        if n == 0:
            self._lower_hi(p, w, -1)
            return
        if p == 0:
            self._raise_lo(n, -w, -1)
            return
        if self.hi[p] - self.lo[n] <= w:
            return  # implied by the bounds alone
        self.out.setdefault(n, []).append((p, w))
        self.inn.setdefault(p, []).append((n, w))
        self.edges += 1
        self.trail.append((_EDGE, n, p))
        self._lower_hi(p, self.hi[n] + w, n)
        self._raise_lo(n, self.lo[p] - w, p)

    def add_eq(self, p: int, n: int, d: int) -> None:
        """Add ``t_p - t_n == d``."""
        self.add_le(p, n, d)
        self.add_le(n, p, -d)

    def _lower_hi(self, start: int, value: int, guard: int) -> None:
        lo, hi, out, trail = self.lo, self.hi, self.out, self.trail
        stack = [(start, value)]
        while stack:
            v, val = stack.pop()
            if val >= hi[v]:
                continue
            if v == guard or val < lo[v]:
                raise Infeasible(f"t{v} cannot be at most {val}")
            trail.append((_HI, v, hi[v]))
            hi[v] = val
            if v > 1 and hi[v - 1] > val and v not in self.unchained_set:
                stack.append((v - 1, val))
            for b, w in out.get(v, ()):
                if hi[b] > val + w:
                    stack.append((b, val + w))

    def _raise_lo(self, start: int, value: int, guard: int) -> None:
        lo, hi, inn, trail = self.lo, self.hi, self.inn, self.trail
        last = len(lo) - 1
        stack = [(start, value)]
        while stack:
            v, val = stack.pop()
            if val <= lo[v]:
                continue
            if v == guard or val > hi[v]:
                raise Infeasible(f"t{v} cannot be at least {val}")
            trail.append((_LO, v, lo[v]))
            lo[v] = val
            if 0 < v < last and lo[v + 1] < val and v + 1 not in self.unchained_set:
                stack.append((v + 1, val))
            for u, w in inn.get(v, ()):
                if lo[u] < val - w:
                    stack.append((u, val - w))

    # -- queries ------------------------------------------------------------------
    def max_diff(self, p: int, n: int) -> int:
        """The largest value ``t_p - t_n`` can take (the shortest path n -> p)."""
        if p == n:
            return 0
        if n == 0:
            return self.hi[p]
        if p == 0:
            return -self.lo[n]
        hi, lo = self.hi, self.lo
        best = hi[p] - lo[n]  # through the reference
        if self.edges == 0:
            # Only the chain: t_p <= t_n when p comes first.
            return min(best, 0) if p < n and self.chained(p, n) else best
        # Dijkstra from n on reduced costs w + hi[a] - hi[b] >= 0, not through t_0;
        # paths longer than the one through t_0 are cut off.
        limit = best + hi[n] - hi[p]
        dist = {n: 0}
        heap = [(0, n)]
        out = self.out
        while heap:
            d, a = heapq.heappop(heap)
            if d > dist.get(a, limit) or d >= limit:
                continue
            if a == p:
                return min(best, d - hi[n] + hi[p])
            if a > 1 and a not in self.unchained_set:
                nd = d + hi[a] - hi[a - 1]
                if nd < dist.get(a - 1, limit):
                    dist[a - 1] = nd
                    heapq.heappush(heap, (nd, a - 1))
            for b, w in out.get(a, ()):
                nd = d + w + hi[a] - hi[b]
                if nd < dist.get(b, limit):
                    dist[b] = nd
                    heapq.heappush(heap, (nd, b))
        return best

    def decide_le(self, p: int, n: int, w: int) -> bool | None:
        """True if ``t_p - t_n <= w`` is implied, False if its negation is, None if both are possible."""
        if p != 0 and n != 0:
            # Bounds and the order of readings first: cheap and usually enough.
            upper = self.hi[p] - self.lo[n]
            lower = self.lo[p] - self.hi[n]
            if p < n:
                if self.chained(p, n):
                    upper = min(upper, 0)
            elif self.chained(n, p):
                lower = max(lower, 0)
            if upper <= w:
                return True
            if lower > w:
                return False
        if self.max_diff(p, n) <= w:
            return True
        if -self.max_diff(n, p) > w:
            return False
        return None

    def test_le(self, p: int, n: int, w: int) -> bool:
        """Does ``t_p - t_n <= w`` hold on this branch? Branches (adding the answer) when undecided."""
        known = self.decide_le(p, n, w)
        if known is not None:
            return known
        if self.choose(2, True) == 0:
            self.add_le(p, n, w)
            return True
        self.add_le(n, p, -w - 1)
        return False

    def test_eq(self, p: int, n: int, d: int) -> bool:
        """Does ``t_p - t_n == d`` hold? In assuming mode, adds it and answers whether that is consistent."""
        if self.assume:
            mark = self.mark()
            try:
                self.add_eq(p, n, d)
            except Infeasible:
                self.undo(mark)
                return False
            return True
        top = self.max_diff(p, n)
        bottom = -self.max_diff(n, p)
        if d < bottom or d > top:
            return False
        if bottom == top:
            return True
        options = ["eq"]
        if bottom < d:
            options.append("lt")
        if d < top:
            options.append("gt")
        pick = options[self.choose(len(options), True)]
        if pick == "eq":
            self.add_eq(p, n, d)
            return True
        if pick == "lt":
            self.add_le(p, n, d - 1)
        else:
            self.add_le(n, p, -d - 1)
        return False

    def range_of(self, p: int, n: int) -> tuple[int, int]:
        """The feasible values of ``t_p - t_n``."""
        return -self.max_diff(n, p), self.max_diff(p, n)

    @contextmanager
    def assuming(self) -> Iterator[None]:
        """While comparing replies: ``Time == int`` adds the equality instead of branching."""
        self.assume = True
        try:
            yield
        finally:
            self.assume = False


class Time:
    """The symbolic value ``t_pos - t_neg + c`` (0 stands for no variable).

    Immutable; arithmetic returns new values, and a plain ``int`` when the
    variables cancel. Comparisons return ``bool`` after consulting the zone
    (possibly branching). The model's conversions (``Instant.id_ms(t)``...,
    models/clock.py) call the methods of the same name here. Anything else
    that would need the concrete value — ``bool()``, ``int()``, ``str()``,
    formatting, hashing — raises, because a model that does it is not using
    time the way the checker can follow.
    """

    __slots__ = ("pos", "neg", "c", "zone")

    def __init__(self, pos: int, neg: int, c: int, zone: Zone) -> None:
        self.pos = pos
        self.neg = neg
        self.c = c
        self.zone = zone

    # -- arithmetic ------------------------------------------------------------------
    def _combine(self, pos2: int, neg2: int, c2: int) -> Time | int:
        pos = [v for v in (self.pos, pos2) if v]
        neg = [v for v in (self.neg, neg2) if v]
        for v in list(pos):
            if v in neg:
                pos.remove(v)
                neg.remove(v)
        if len(pos) > 1 or len(neg) > 1:
            raise TypeError("symbolic time: only differences of two readings are supported "
                            f"({self!r} combined with t{pos2}-t{neg2}{c2:+d})")
        c = self.c + c2
        if not pos and not neg:
            return c
        return Time(pos[0] if pos else 0, neg[0] if neg else 0, c, self.zone)

    def __add__(self, other: object) -> Time | int:
        if isinstance(other, int) and not isinstance(other, bool):
            return Time(self.pos, self.neg, self.c + other, self.zone)
        if isinstance(other, Time):
            return self._combine(other.pos, other.neg, other.c)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> Time | int:
        if isinstance(other, int) and not isinstance(other, bool):
            return Time(self.pos, self.neg, self.c - other, self.zone)
        if isinstance(other, Time):
            return self._combine(other.neg, other.pos, -other.c)
        return NotImplemented

    def __rsub__(self, other: object) -> Time | int:
        if isinstance(other, int) and not isinstance(other, bool):
            return Time(self.neg, self.pos, other - self.c, self.zone)
        return NotImplemented

    def __neg__(self) -> Time:
        return Time(self.neg, self.pos, -self.c, self.zone)

    def __pos__(self) -> Time:
        return self

    # -- comparisons ------------------------------------------------------------------
    def _diff(self, other: object) -> Time | int | None:
        if isinstance(other, (int, Time)) and not isinstance(other, bool):
            return self - other
        return None

    def __lt__(self, other: object) -> bool:
        e = self._diff(other)
        if e is None:
            return NotImplemented
        return _le(e, -1)

    def __le__(self, other: object) -> bool:
        e = self._diff(other)
        if e is None:
            return NotImplemented
        return _le(e, 0)

    def __gt__(self, other: object) -> bool:
        e = self._diff(other)
        if e is None:
            return NotImplemented
        return _le(-e, -1)

    def __ge__(self, other: object) -> bool:
        e = self._diff(other)
        if e is None:
            return NotImplemented
        return _le(-e, 0)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        e = self._diff(other)
        if e is None:
            return False
        if isinstance(e, int):
            return e == 0
        return e.zone.test_eq(e.pos, e.neg, -e.c)

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    # -- the model's conversions (models/clock.py) --------------------------------------
    def id_ms(self) -> int:
        """The exact ms of an XADD ID: one feasible value, the expected reply's IDs first (a branch)."""
        zone = self.zone
        low, high = zone.range_of(self.pos, self.neg)
        low, high = low + self.c, high + self.c
        if low == high:
            return low
        expected = zone.expected
        if isinstance(expected, LaterIds):
            # A command never answered (its node crashed): the IDs later replies show, if any fit;
            # the other values stay untried, so running out of these is inconclusive, not a verdict.
            candidates = expected.between(low, high)
            if len(candidates) < high - low + 1:
                if low not in candidates:  # an ID no reply shows: the least, which bounds later IDs least
                    candidates.append(low)
                value = candidates[zone.choose(len(candidates), False)]
                zone.add_eq(self.pos, self.neg, value - self.c)
                return value
        else:
            candidates = [h for h in id_hints(expected) if low <= h <= high]
            if zone.ids_shown:
                # The command's one ID: any other value makes an ID the reply does not show, and that
                # branch fails at the reply, so leaving it untried loses no execution.
                zone.ids_shown = False
                value = candidates[zone.choose(len(candidates), True)] if len(candidates) > 1 else \
                    candidates[0] if candidates else low
                zone.add_eq(self.pos, self.neg, value - self.c)
                return value
        complete = True
        v = low
        while v <= high:
            if len(candidates) >= CONCRETE_LIMIT + 1:
                complete = False
                break
            if v not in candidates:
                candidates.append(v)
            v += 1
        pick = zone.choose(len(candidates), complete) if len(candidates) > 1 or not complete else 0
        value = candidates[pick]
        zone.add_eq(self.pos, self.neg, value - self.c)
        return value

    def rendered(self) -> bytes:
        """The digits of a propagated or persisted argument (the replication stream, the AOF).

        A clock reading (plus a constant) whose feasible values all have the same number of
        digits stays symbolic: a :class:`RenderedTime` as long as those digits (all an offset
        counts), which a replica or a reload reads back as this value. Anything else takes one
        exact value, as :meth:`id_ms` does (a branch).
        """
        if self.pos and not self.neg:
            low, high = self.zone.range_of(self.pos, 0)
            low, high = low + self.c, high + self.c
            if 0 <= low and len(str(low)) == len(str(high)):
                return RenderedTime(self, len(str(low)))
        return b"%d" % self.id_ms()

    def reply_ms(self) -> Time:
        """The integer of a reply: this value, equated with the trace's when replies are compared."""
        return self

    def propagated_ms(self) -> Time:
        """An argument of a propagated command: this value (propagation is not rendered here)."""
        return self

    def exact_ms(self) -> int:
        """Refused: code that needs one exact value runs the model on a concrete clock."""
        return self._concrete_use("an exact value (exact_ms)")  # type: ignore[no-any-return]

    # -- what a model must not do with a time ---------------------------------------
    __hash__ = None  # type: ignore[assignment]

    def _concrete_use(self, what: str) -> Any:
        raise TypeError(f"symbolic time {self!r} used as {what}; the model may only add, subtract, "
                        "compare and store times, and convert them with Instant.id_ms, reply_ms "
                        "and propagated_ms (models/clock.py)")

    def __bool__(self) -> bool:
        return self._concrete_use("a truth value")  # type: ignore[no-any-return]

    def __int__(self) -> int:
        return self._concrete_use("int()")  # type: ignore[no-any-return]

    def __index__(self) -> int:
        return self._concrete_use("an integer index or %d")  # type: ignore[no-any-return]

    def __float__(self) -> float:
        return self._concrete_use("float()")  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self._concrete_use("str()")  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        return self._concrete_use("a formatted string")  # type: ignore[no-any-return]

    def __copy__(self) -> Time:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Time:
        return self

    def __repr__(self) -> str:
        parts = []
        if self.pos:
            parts.append(f"t{self.pos}")
        if self.neg:
            parts.append(f"-t{self.neg}")
        if self.c or not parts:
            parts.append(f"{self.c:+d}" if parts else str(self.c))
        return "".join(parts)

    def describe(self) -> str:
        """The value with its feasible range on the current branch (for reports)."""
        low, high = self.zone.range_of(self.pos, self.neg)
        low, high = low + self.c, high + self.c
        if low == high:
            return str(low)
        return f"{_show_bound(low)}..{_show_bound(high)}"


class RenderedTime(bytes):
    """A symbolic time as an argument the replication stream or the AOF holds (:meth:`Time.rendered`).

    Its bytes are ``?`` placeholders, as many as the time has digits, so that lengths (a
    replication offset counts them) are exact; ``stands_for`` is the time, which the model's
    integer parsing returns in place of a value (``xspec.spec.ids.parse_ll``), so that a replica
    applying the command, or a reload of the AOF, stores the symbolic time itself. Code that reads
    the bytes as digits gets no number: it fails rather than take a wrong value. Not hashable,
    like :class:`Time` (the checker names it when it freezes a state).
    """

    stands_for: Time

    def __new__(cls, time: Time, width: int) -> RenderedTime:
        rendered = super().__new__(cls, b"?" * width)
        rendered.stands_for = time
        return rendered

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return RenderedTime, (self.stands_for, len(self))

    def __copy__(self) -> RenderedTime:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> RenderedTime:
        return self

    def __repr__(self) -> str:
        return f"RenderedTime({self.stands_for!r})"

    def describe(self) -> str:
        """The time with its feasible range on the current branch (for reports)."""
        return self.stands_for.describe()


def _show_bound(v: int) -> str:
    if v >= UNBOUNDED // 2:
        return "+inf"
    if v <= -UNBOUNDED // 2:
        return "-inf"
    return str(v)


def _le(e: Time | int, w: int) -> bool:
    """Does ``e <= w`` hold (branching if undecided)?"""
    if isinstance(e, int):
        return e <= w
    return e.zone.test_le(e.pos, e.neg, w - e.c)


def require_at_least(a: Time | Instant, b: Time | Instant) -> None:
    """Add ``a >= b`` to the zone. Raises :class:`Infeasible` when it cannot hold."""
    e: Time | int = a - b  # type: ignore[operator,assignment]  # Time or int at run time
    if isinstance(e, int):
        if e < 0:
            raise Infeasible(f"{a!r} < {b!r}")
        return
    e.zone.add_le(e.neg, e.pos, e.c)


_ID_LIKE = re.compile(rb"^(\d{1,20})-(\d{1,20})$")


def id_hints(reply: Any) -> list[int]:
    """The ``ms`` parts of ID-looking bulk strings in a reply, in order, without repeats."""
    found: list[int] = []
    stack = [reply]
    while stack:
        r = stack.pop()
        value = getattr(r, "value", None)
        if isinstance(value, bytes):
            m = _ID_LIKE.match(value)
            if m:
                ms = int(m.group(1))
                if ms not in found:
                    found.append(ms)
            continue
        items = getattr(r, "items", None)
        if items is not None:
            stack.extend(reversed(items))
            continue
        pairs = getattr(r, "pairs", None)
        if pairs is not None:
            for k, v in reversed(pairs):
                stack.append(v)
                stack.append(k)
    return found


class LaterIds:
    """Hints for a command whose reply never came (its node crashed): the ``ms`` of every ID-looking
    bulk string in the replies of the trace, sorted, so that an XADD the trace never answered tries
    first the IDs that later reads show (a later XRANGE shows the entry if it survived)."""

    def __init__(self, replies: Iterable[Any]) -> None:
        found: set[int] = set()
        for reply in replies:
            found.update(id_hints(reply))
        self.ms = sorted(found)

    def between(self, low: int, high: int) -> list[int]:
        return self.ms[bisect.bisect_left(self.ms, low):bisect.bisect_right(self.ms, high)]


class SymbolicClock:
    """A :class:`xspec.models.clock.Clock` whose readings are zone variables.

    The checker sets the window of the command being executed (``lo``, ``hi``,
    in ms) and the reply it expects (hints for :meth:`Time.id_ms`) before running it.
    """

    def __init__(self, zone: Zone | None = None) -> None:
        self.zone = zone if zone is not None else Zone()
        self.lo = -UNBOUNDED
        self.hi = UNBOUNDED
        self.expected: Any = None

    def set_window(self, lo: int, hi: int, expected: Any = None) -> None:
        self.lo = lo
        self.hi = hi
        self.expected = expected
        self.zone.expected = expected
        self.zone.ids_shown = False

    def now_ms(self) -> Time:
        return Time(self.zone.new_reading(self.lo, self.hi), 0, 0, self.zone)

    def concrete(self, t: int | Time) -> int:
        """The exact value of ``t`` on this branch (:meth:`Time.id_ms`); an ``int`` is itself."""
        return t if isinstance(t, int) else t.id_ms()


def _register_shared() -> None:
    """A copy of the model's data (a snapshot, a load) keeps symbolic readings as they are."""
    from xspec.models.persistence import SHARED_IN_COPIES
    SHARED_IN_COPIES.add(Time)


_register_shared()
