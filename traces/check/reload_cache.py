"""The checker's cache of AOF loads: a restart's reload replays only what earlier loads did not.

The search tries every set and order of the commands in flight at a ``crash`` (trace/2 rule 10), and
each alternative restarts the node, whose load (AOF-4) replays the whole AOF through the model. The
alternatives share the files up to the first command in flight, so the cache keeps the model's data
after some of a load's units (keyed by a digest of the preamble and those units) and a later load with
the same start replays only its own tail.

A load depends on more than the files: it reads the clock (new zone variables, after those of the
commands before it) and the model compares times (zone queries). A cached prefix is used only when
redoing it would do the same: the same clock window; no branch, no added constraint, no choice while it
was loaded; every query it asked answered the same now (with its own readings renumbered after the
variables the zone has now). Its readings are made again, so the zone ends as a fresh load leaves it.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xspec.models.persistence import SharedUnpickler, Snapshot
from xspec.models.replication import AofUnits, replay_aof
from xspec.models.server import Server
from xspec.traces.check.symbolic import UNBOUNDED, Infeasible, RenderedTime, SymbolicClock, Time, Zone

TAIL_MARKS = (4, 8, 16, 32, 64)
"""Where a load keeps the model's data for later loads: that many units before its end."""
MAX_ENTRIES = 256
"""At most this many kept prefixes (the oldest go first)."""
MAX_LOADED = 2048
"""At most this many states :class:`LoadedStates` keeps (the oldest go first)."""

_QUERIES = ("decide_le", "test_le", "max_diff", "range_of")
"""The zone's questions a cached load may have asked (each is answered again before it is used)."""
_CHANGES = ("add_le", "add_eq", "test_eq", "join", "choose")
"""What a load must not have done to be cached: constrain or branch the zone, or choose."""

# The zone and renumbering in force while cached data is read back (see _time).
_READING: tuple[Zone, int, int] | None = None


def _pickled(server: Server, zone: Any, clock: Any, dialect: Any) -> tuple[bytes, list[Any]] | None:
    """The model's data of ``server`` pickled, the zone, clock and dialect kept out by reference (with the
    list of them the unpickler needs); None when something in the data does not pickle."""
    shared = {id(zone): zone, id(clock): clock, id(dialect): dialect}
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, shared).dump(_state(server))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return buffer.getvalue(), list(shared.values())


def _time(pos: int, neg: int, c: int) -> Time:
    """A cached :class:`Time`, its load's own readings (from the load's first variable on) renumbered."""
    assert _READING is not None
    zone, first, shift = _READING
    return Time(pos + shift if pos >= first else pos, neg + shift if neg >= first else neg, c, zone)


class _Pickler(pickle.Pickler):
    def __init__(self, buffer: io.BytesIO, shared: dict[int, Any]) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.refs = {key: n for n, key in enumerate(shared)}

    def persistent_id(self, obj: Any) -> int | None:
        return self.refs.get(id(obj))

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is Time:
            return _time, (obj.pos, obj.neg, obj.c)
        return NotImplemented


@dataclass
class _Entry:
    data: bytes  # the model's data after the prefix (see _state)
    shared: list[Any]
    first: int  # the zone's first variable the load made
    readings: int  # how many readings the prefix made
    queries: list[tuple[str, tuple[int, ...], Any]]  # what it asked the zone, with the answers
    window: tuple[int, int]


def _state(server: Server) -> tuple[Any, ...]:
    """What a load changes in the model: the data and what the replayed commands count."""
    return (server.dbs, server.stats, server.errno, server.scripts, server.libraries)


def _set_state(server: Server, state: tuple[Any, ...]) -> None:
    server.dbs[:], server.stats, server.errno, server.scripts, server.libraries = state


class ReloadCache:
    """A deployment's ``aof_replayer`` in the checker (models/replication.py ``_load_aof``)."""

    def __init__(self, clock: SymbolicClock, dialect: Any) -> None:
        self.clock = clock
        self.zone = clock.zone
        self.dialect = dialect
        self.entries: dict[bytes, _Entry] = {}
        self.hits = 0
        self.misses = 0
        self.replayed = 0  # units replayed, for measurements

    def __deepcopy__(self, memo: dict[int, Any]) -> ReloadCache:
        return self

    def __reduce__(self) -> Any:
        raise pickle.PicklingError("the reload cache is shared, never copied")

    verify = False
    """Tests: check every load against a load from scratch (:meth:`_from_scratch`)."""

    def __call__(self, server: Server, preamble: Snapshot | None, units: AofUnits) -> None:
        expected = self._from_scratch(server, preamble, units) if self.verify else None
        digests = self._digests(preamble, units)
        window = (self.clock.lo, self.clock.hi)
        start = 0
        for k in range(len(units) - 1, 0, -1):
            entry = self.entries.get(digests[k])
            if entry is not None and entry.window == window:
                state = self._reuse(entry)
                if state is not None:
                    start = k
                    self.hits += 1
                    self.replayed += len(units) - k

                    def put_back(i: int, state: tuple[Any, ...] = state, k: int = k) -> None:
                        if i == k:  # after the AOF client's connection and SELECT, as it was then
                            _set_state(server, state)
                    replay_aof(server, None, units, k, put_back)
                    break
        else:
            self.misses += 1
            self._load(server, preamble, units, digests, window)
        if expected is not None and repr(server.freeze()) != expected:
            got = repr(server.freeze())
            at = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                      min(len(got), len(expected)))
            raise AssertionError(f"a load through the cache (from unit {start} of {len(units)}) differs: "
                                 f"{got[max(0, at - 300):at + 200]!r} / {expected[max(0, at - 300):at + 200]!r}")

    # -- loading -------------------------------------------------------------------------------
    def _load(self, server: Server, preamble: Snapshot | None, units: AofUnits, digests: list[bytes],
              window: tuple[int, int]) -> None:
        """Replay every unit, keeping the data at the marks not kept yet while nothing forbids it."""
        n = len(units)
        self.replayed += n
        marks = {n - t for t in TAIL_MARKS if 0 < n - t and digests[n - t] not in self.entries}
        zone = self.zone
        first = len(zone.lo)
        if not marks or zone.branch_from is not None:
            replay_aof(server, preamble, units)
            return
        queries: list[tuple[str, tuple[int, ...], Any]] = []
        spoilt = [False]
        depth = [0]
        saved_choose = zone.choose
        edges, unchained = zone.edges, len(zone.unchained)

        def asking(name: str) -> Callable[..., Any]:
            method = getattr(Zone, name)

            def ask(*args: int) -> Any:
                depth[0] += 1
                try:
                    answer = method(zone, *args)
                finally:
                    depth[0] -= 1
                if depth[0] == 0:
                    queries.append((name, args, answer))
                return answer
            return ask

        def spoiling(original: Callable[..., Any]) -> Callable[..., Any]:
            def spoil(*args: Any) -> Any:
                spoilt[0] = True
                return original(*args)
            return spoil

        def keep(i: int) -> None:
            if i in marks and not spoilt[0] and zone.edges == edges and len(zone.unchained) == unchained:
                self._keep(digests[i], server, first, len(zone.lo) - first, list(queries), window)

        for name in _QUERIES:
            setattr(zone, name, asking(name))
        for name in _CHANGES:
            setattr(zone, name, spoiling(getattr(zone, name)))
        try:
            replay_aof(server, preamble, units, 0, keep)
        finally:
            for name in (*_QUERIES, *_CHANGES):
                zone.__dict__.pop(name, None)
            zone.choose = saved_choose

    def _from_scratch(self, server: Server, preamble: Snapshot | None, units: AofUnits) -> str:
        """The state a plain load into a new server gives, its readings taken back afterwards."""
        mark = self.zone.mark()
        scratch = Server(server.dialect, server.clock, dict(server.config))
        replay_aof(scratch, preamble, units)
        frozen = repr(scratch.freeze())
        self.zone.undo(mark)
        return frozen

    def _keep(self, key: bytes, server: Server, first: int, readings: int,
              queries: list[tuple[str, tuple[int, ...], Any]], window: tuple[int, int]) -> None:
        pickled = _pickled(server, self.zone, self.clock, self.dialect)
        if pickled is None:
            return  # something in the data does not pickle: no entry
        if len(self.entries) >= MAX_ENTRIES:
            del self.entries[next(iter(self.entries))]
        self.entries[key] = _Entry(*pickled, first, readings, queries, window)

    # -- reusing -------------------------------------------------------------------------------
    def _reuse(self, entry: _Entry) -> tuple[Any, ...] | None:
        """Make the prefix's readings again and check its questions: its data then, else None (and the
        zone as it was)."""
        global _READING
        zone = self.zone
        if zone.branch_from is not None:
            return None
        mark = zone.mark()
        first = len(zone.lo)
        shift = first - entry.first
        for _ in range(entry.readings):
            self.clock.now_ms()

        def moved(v: int) -> int:
            return v + shift if v >= entry.first else v

        for name, args, answer in entry.queries:
            p, n, *rest = args
            p, n = moved(p), moved(n)
            if name in ("decide_le", "test_le"):
                again: Any = zone.decide_le(p, n, *rest)
            elif name == "max_diff":
                again = zone.max_diff(p, n)
            else:
                again = zone.range_of(p, n)
            if again != answer:
                zone.undo(mark)
                return None
        _READING = (zone, entry.first, shift)
        try:
            state: tuple[Any, ...] = SharedUnpickler(io.BytesIO(entry.data), entry.shared).load()
        finally:
            _READING = None
        return state

    @staticmethod
    def _digests(preamble: Snapshot | None, units: AofUnits) -> list[bytes]:
        """``digests[k]``: a digest of the preamble and the first ``k`` units."""
        h = hashlib.blake2b(repr(None if preamble is None else preamble.freeze()).encode(), digest_size=20)
        out = [h.digest()]
        for unit in units:
            h.update(repr(unit).encode())
            out.append(h.copy().digest())
        return out


# -- what an AOF loads to, for the search's memo --------------------------------------------------
class _Uncertain(Exception):
    """A load asked the clock's constraints or the search something: its outcome may depend on the branch."""


LOAD_READING = "\x00load reading"
"""Stands for a clock reading a load made, in a state :class:`LoadedStates` gives."""


class LoadedStates:
    """What an AOF loads to (AOF-4), as the search's memo compares it (traces/check/multinode.py).

    Before a node's crash the search tries every set and order of the commands in flight, and the
    AOFs these leave often differ only in the order of units that commute: after the restart,
    which replays the file, nothing tells them apart. The search's key for a state then holds
    the frozen state each reload the rest of the trace may make would load (every prefix a
    restart may keep, rule 10) in place of the file itself.

    A load stands for the restart's only when the restart's would do the same on this branch,
    whatever comes between. It may compare times, but only where the answer is implied now: by
    the constraints on the times the file keeps (which only grow along a branch), or, for a
    reading of its own, by the chain of readings alone (a reading comes after every earlier
    one). It constrains nothing, asks no other question of the zone (a time made exact, a
    range) and makes no model choice; else it is *uncertain* and the file itself stays in the
    key. Its own readings are then constrained only by the chain and the window, which the rest
    of the key fixes, so they are left out as :data:`LOAD_READING`; a time from before the load
    (a delivery time the file keeps) stays a :class:`Time`, for the key to name with its bounds
    (:func:`_compact`: the rest of the state goes into the key as a digest, a short key for the
    many prefixes ``everysec`` may keep). A load is kept with the answers it was given about the
    file's times, and used again only where the zone gives the same ones; it goes on from the
    data a shorter file's load kept where it can (:meth:`_load`).
    """

    def __init__(self, clock: SymbolicClock, dialect: Any) -> None:
        self.clock = clock
        self.zone = clock.zone
        self.dialect = dialect
        # digest of (node, preamble, the commands loaded) -> the state as _compact gives it (None:
        # uncertain) and the comparisons of the file's times the load made, ((p, n, w), answer)
        self.states: dict[bytes, tuple[tuple[bytes, tuple[Time, ...]] | None, list[_Asked]]] = {}
        # digest of the commands before the last one a load ran -> the model's data there, for a
        # longer file's load to go on from (see _keep)
        self.resumable: dict[bytes, _Resumable] = {}
        self.loads = 0  # loads made, for measurements

    def __deepcopy__(self, memo: dict[int, Any]) -> LoadedStates:
        return self

    def __reduce__(self) -> Any:
        raise pickle.PicklingError("the loaded states are shared, never copied")

    def prefixes(self, new_server: Callable[[], Server], node: str, preamble: Snapshot | None, units: AofUnits,
                 lengths: list[int]) -> tuple[Any, ...] | None:
        """The states (:func:`_compact`) that loading ``preamble`` then ``units[:k]`` into
        ``new_server()`` gives, each with the database its last command ran in, for each ``k`` in ``lengths`` (ascending);
        None when one of these loads is uncertain."""
        h = hashlib.blake2b(repr((node, None if preamble is None else preamble.freeze())).encode(),
                            digest_size=20)
        digests = [h.digest()]
        for unit in units[:lengths[-1]]:
            h.update(repr(unit).encode())
            digests.append(h.copy().digest())
        out = []
        for k in lengths:
            entry = self.states.get(digests[k])
            if entry is None or not self._same_answers(entry[1]):
                if len(self.states) >= MAX_LOADED:
                    del self.states[next(iter(self.states))]
                entry = self.states[digests[k]] = self._load(new_server(), preamble, units[:k], digests)
            if entry[0] is None:
                return None
            # with the loading client's database, where a longer file's next command would run
            out.append((entry[0], units[k - 1][0] if k else 0))
        return tuple(out)

    def _same_answers(self, asked: list[_Asked]) -> bool:
        return all(self.zone.decide_le(*q) is answer for q, answer in asked)

    def _load(self, server: Server, preamble: Snapshot | None, units: AofUnits, digests: list[bytes]
              ) -> tuple[tuple[bytes, tuple[Time, ...]] | None, list[_Asked]]:
        """One load into ``server``, taken back from the zone afterwards: its state as :func:`_compact`
        gives it (None when uncertain) and its comparisons of the file's times. It goes on from the longest of the
        last :data:`RESUME_WINDOW` prefixes kept whose answers still hold, and keeps its own data
        before its last command for a longer file's load."""
        self.loads += 1
        zone, clock = self.zone, self.clock
        mark, first = zone.mark(), len(zone.lo)
        edges, unchained = zone.edges, len(zone.unchained)
        window = (clock.lo, clock.hi, clock.expected, zone.expected, zone.ids_shown)
        saved_choose = zone.choose
        asked: list[_Asked] = []
        inside = [False]  # the zone answering: its own queries go through

        def implied(p: int, n: int, w: int) -> bool:
            if p < first and n < first:  # the file's times (or the reference): what the zone implies now
                inside[0] = True
                try:
                    known = Zone.decide_le(zone, p, n, w)
                finally:
                    inside[0] = False
                if known is None:
                    raise _Uncertain()
                asked.append(((p, n, w), known))
                return known
            # a reading of the load's own: only what the chain implies (t_p <= t_n when p comes first)
            if p and n and zone.chained(min(p, n), max(p, n)):
                if p < n and w >= 0:
                    return True
                if p > n and w < 0:
                    return False
            raise _Uncertain()

        def refusing(name: str) -> Callable[..., Any]:
            method = getattr(Zone, name, None)

            def refuse(*args: Any) -> Any:
                if inside[0] and method is not None:
                    return method(zone, *args)
                raise _Uncertain()
            return refuse

        n = len(units)
        start, resumed = 0, None
        for j in range(n - 1, max(0, n - 1 - RESUME_WINDOW), -1):
            kept = self.resumable.get(digests[j])
            if kept is not None and self._same_answers(kept.asked):
                start, resumed = j, kept
                break
        for name in (*_QUERIES, *_CHANGES):
            setattr(zone, name, refusing(name))
        zone.decide_le = zone.test_le = implied  # type: ignore[method-assign]
        server.chooser = refusing("")
        clock.lo, clock.hi = -UNBOUNDED, UNBOUNDED  # the window matters to no answer given
        data: tuple[Any, ...] | None = None

        def at_unit(i: int) -> None:
            if i == start and data is not None:  # after the loading client's connection and SELECT
                _set_state(server, data)
            if i == n - 1:
                self._keep(digests[i], server, first, len(zone.lo) - first, list(asked))

        try:
            if resumed is not None:
                asked.extend(resumed.asked)
                data = self._resume(resumed)
            replay_aof(server, preamble if data is None else None, units, start, at_unit)
            if zone.edges != edges or len(zone.unchained) != unchained:
                return None, asked
            return _compact(server.freeze(), first), asked
        except (_Uncertain, Infeasible):
            return None, asked
        finally:
            for name in (*_QUERIES, *_CHANGES):
                zone.__dict__.pop(name, None)
            zone.choose = saved_choose
            clock.lo, clock.hi, clock.expected, zone.expected, zone.ids_shown = window
            zone.undo(mark)

    def _keep(self, key: bytes, server: Server, first: int, readings: int, asked: list[_Asked]) -> None:
        """Keep the model's data in the middle of a load (before command ``i``), for a later load of a
        longer file to go on from; its readings from ``first`` on are renumbered then (see _time)."""
        if key in self.resumable:
            return
        pickled = _pickled(server, self.zone, self.clock, self.dialect)
        if pickled is None:
            return  # something in the data does not pickle: no entry
        if len(self.resumable) >= MAX_ENTRIES:
            del self.resumable[next(iter(self.resumable))]
        self.resumable[key] = _Resumable(*pickled, first, readings, asked)

    def _resume(self, kept: _Resumable) -> tuple[Any, ...]:
        """The data ``kept`` holds, its load's readings made again after the zone's last one."""
        global _READING
        shift = len(self.zone.lo) - kept.first
        for _ in range(kept.readings):
            self.clock.now_ms()
        _READING = (self.zone, kept.first, shift)
        try:
            data: tuple[Any, ...] = SharedUnpickler(io.BytesIO(kept.data), kept.shared).load()
        finally:
            _READING = None
        return data


_Asked = tuple[tuple[int, int, int], bool]
"""A comparison ``t_p - t_n <= w`` of the file's times a load made, and its answer."""
RESUME_WINDOW = 8
"""How many shorter prefixes a load looks among for one to go on from."""


@dataclass
class _Resumable:
    data: bytes  # the model's data in the middle of a load (see ReloadCache._state)
    shared: list[Any]
    first: int  # the zone's first variable the load made
    readings: int  # how many readings it had made then
    asked: list[_Asked]


def _compact(state: Any, first: int) -> tuple[bytes, tuple[Time, ...]]:
    """A loaded ``state`` as the memo's key holds it: a digest of its shape, in which each time from
    before the load is the number of its first appearance and each reading of the load's own (from
    ``first`` on, plus a constant) is :data:`LOAD_READING` with its place among them, and the times
    from before the load in that order, for the key to name with their bounds. Two states are the
    same exactly when both parts are (the key digests its times' names the same way, _visit)."""
    times: dict[tuple[int, int, int], int] = {}

    def shape(x: Any) -> Any:
        kind = type(x)
        if kind is tuple or kind is list:
            return tuple(shape(item) for item in x)
        if kind is RenderedTime:
            x, kind = x.stands_for, Time
        if kind is Time:
            if x.pos >= first and not x.neg:
                return (LOAD_READING, x.pos - first, x.c)
            key = (x.pos, x.neg, x.c)
            seen = times.get(key)
            if seen is None:
                seen = times[key] = len(times)
                found.append(x)
            return (_EARLIER_TIME, seen)
        return x

    found: list[Time] = []
    digest = hashlib.blake2b(repr(shape(state)).encode(), digest_size=20).digest()
    return digest, tuple(found)


_EARLIER_TIME = "\x00earlier time"
