"""Hypothesis strategies for the differential fuzzer: command sequences whose every choice shrinks.

The command generator of :mod:`xspec.traces.fuzz.generate` knows the stream API
(every option, boundary and malformed IDs, empty and binary names, blocking
reads, MULTI/EXEC, RESP3, wrong types, missing keys and groups); here
Hypothesis drives it. A case draws a profile, the stream settings, a length,
and then, per command, two choices: the command family (weighted as the
profile says) and a small seed for the command's details. Hypothesis
shrinks the length (cutting the tail), the families towards XADD and the
detail seeds towards 0, so a failing case shrinks into a shorter, plainer
one; the fuzzer then finishes the job by delta debugging (``traces/fuzz/fuzzer.py``).

The generator keeps its state across the commands of a case (the next
explicit ID, the IDs handed out, the groups probably created, the clients
inside MULTI), so commands keep meeting each other's data however the case
was shrunk.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from itertools import accumulate

from hypothesis import strategies as st

from xspec.traces.fuzz import scripting as _scripting  # noqa: F401  # registers the "scripting" family
from xspec.traces.fuzz.generate import FAMILIES, KEYS, PROFILES, Arg, Generator, Profile, Step

DETAIL_SEEDS = 1 << 16
"""Detail seeds of one command are drawn from ``range(DETAIL_SEEDS)``."""

STREAM_CONFIGS: tuple[dict[str, str], ...] = (
    {},
    {"stream-node-max-entries": "100"},
    {"stream-node-max-entries": "1"},
    {"stream-node-max-entries": "2"},
    {"stream-node-max-entries": "3"},
    {"stream-node-max-entries": "0"},
    {"stream-node-max-entries": "4", "stream-node-max-bytes": "60"},
    {"stream-node-max-entries": "100", "stream-node-max-bytes": "1"},
    {"stream-node-max-entries": "2", "stream-node-max-bytes": "200"},
)
"""Stream layout settings, simplest first: small nodes make node boundaries matter."""

LIST_KEYS: tuple[bytes, ...] = (KEYS[0], KEYS[1], b"l", b"m")
"""Keys the list and set commands use: the streams' keys too, so types meet on one key."""
INTSET_KEY = b"ints"
"""The one set SMEMBERS reads: integer members only, an intset, listed in a fixed order."""


def lists_family(gen: Generator, client: int) -> list[Arg]:
    """A list, set or FUNCTION command, mostly on the keys the stream commands use (WRONGTYPE both
    ways, a list or set replacing a stream that readers block on). No blocking pops: a runner waits
    for the reply of any command but XREAD/XREADGROUP, and whether a client is inside MULTI (where
    they answer at once) is only the generator's guess (tests/test_lists.py covers them)."""
    rng = gen.rng
    key = _pick(rng, LIST_KEYS)
    elements = [_pick(rng, (b"a", b"b", b"1", b"", b"x" * 70)) for _ in range(rng.randrange(1, 4))]
    side = [rng.choice((b"LEFT", b"right", b"left", b"up"))]
    kind = rng.randrange(13)
    if kind in (0, 1):
        return [rng.choice((b"LPUSH", b"RPUSH")), key, *elements]
    if kind == 2:
        count = [rng.choice((b"0", b"1", b"2", b"10", b"-1"))] if gen.chance(0.5) else []
        return [rng.choice((b"LPOP", b"RPOP")), key, *count]
    if kind == 3:
        return [b"LRANGE", key, rng.choice((b"0", b"-2", b"1")), rng.choice((b"-1", b"0", b"5"))]
    if kind == 4:
        return [b"LLEN", key]
    if kind == 5:
        return [b"LMOVE", key, _pick(rng, LIST_KEYS), *side, rng.choice((b"LEFT", b"RIGHT"))]
    if kind in (6, 7):
        members = [_pick(rng, (b"1", b"2", b"-3", b"10"))] if gen.chance(0.5) else elements
        target = INTSET_KEY if members[0].lstrip(b"-").isdigit() and gen.chance(0.5) else key
        if target == INTSET_KEY:
            members = [m for m in members if m.lstrip(b"-").isdigit()] or [b"1"]
        return [b"SADD", target, *members]
    if kind == 8:
        return [b"SREM", rng.choice((key, INTSET_KEY)), *elements, _pick(rng, (b"1", b"2"))]
    if kind == 9:
        return [rng.choice((b"SCARD", b"SMEMBERS")), INTSET_KEY] if gen.chance(0.5) else [b"SCARD", key]
    if kind == 10:
        return [b"SISMEMBER", rng.choice((key, INTSET_KEY)), _pick(rng, (b"a", b"1"))]
    if kind == 11:
        return [b"FUNCTION", b"FLUSH", *([rng.choice((b"ASYNC", b"sync", b"x"))] if gen.chance(0.5) else [])]
    return [b"FUNCTION", b"LIST", *([b"WITHCODE"] if gen.chance(0.5) else [])]


def _pick(rng: random.Random, items: tuple[bytes, ...]) -> bytes:
    return items[rng.randrange(len(items))]


FAMILIES.setdefault("lists", lists_family)

ZSET_KEYS: tuple[bytes, ...] = (KEYS[0], b"z", b"y", b"l")
SCORES: tuple[bytes, ...] = (b"1", b"2.5", b"-0.0", b"1.1", b"inf", b"-inf", b"1e-7", b"x", b"0x10", b"")
MEMBERS: tuple[bytes, ...] = (b"a", b"b", b"1", b"", b"m" * 70)


def zsets_family(gen: Generator, client: int) -> list[Arg]:
    """A sorted-set command on the keys the stream and list commands use (WRONGTYPE both ways, a sorted
    set replacing a stream that readers block on): ZADD with its options, ranges, stores, pops. No
    blocking pops, for the reason :func:`lists_family` gives (tests/test_zsets.py covers them)."""
    rng = gen.rng
    key = _pick(rng, ZSET_KEYS)
    kind = rng.randrange(12)
    if kind in (0, 1, 2):
        flags = [f for f in (b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR") if gen.chance(0.15)]
        pairs = [x for _ in range(rng.randrange(1, 3)) for x in (_pick(rng, SCORES), _pick(rng, MEMBERS))]
        return [b"ZADD", key, *flags, *pairs]
    if kind == 3:
        return [b"ZINCRBY", key, _pick(rng, SCORES), _pick(rng, MEMBERS)]
    if kind == 4:
        return [rng.choice((b"ZREM", b"ZSCORE", b"ZRANK", b"ZREVRANK")), key, _pick(rng, MEMBERS)]
    if kind == 5:
        by = [rng.choice((b"BYSCORE", b"BYLEX"))] if gen.chance(0.4) else []
        bounds = (b"(1", b"+inf") if by == [b"BYSCORE"] else (b"[a", b"+") if by else (b"0", b"-1")
        extra = [w for w in (b"REV", b"WITHSCORES") if gen.chance(0.3)]
        limit = [b"LIMIT", b"0", rng.choice((b"1", b"-1"))] if by and gen.chance(0.3) else []
        return [b"ZRANGE", key, *bounds, *by, *extra, *limit]
    if kind == 6:
        return [rng.choice((b"ZCARD", b"ZPOPMIN", b"ZPOPMAX")), key]
    if kind == 7:
        return [rng.choice((b"ZPOPMIN", b"ZPOPMAX")), key, rng.choice((b"0", b"2", b"-1"))]
    if kind == 8:
        return [rng.choice((b"ZUNIONSTORE", b"ZINTERSTORE", b"ZDIFFSTORE")), _pick(rng, ZSET_KEYS), b"2", key,
                _pick(rng, (*ZSET_KEYS, INTSET_KEY))]
    if kind == 9:
        return [rng.choice((b"ZREMRANGEBYSCORE", b"ZCOUNT")), key, rng.choice((b"-inf", b"(1")), b"2"]
    if kind == 10:
        return [b"ZMPOP", b"2", key, _pick(rng, ZSET_KEYS), rng.choice((b"MIN", b"MAX")), b"COUNT", b"2"]
    return [b"ZRANGESTORE", _pick(rng, ZSET_KEYS), key, b"0", b"1"]


FAMILIES.setdefault("zsets", zsets_family)


def collections_family(gen: Generator, client: int) -> list[Arg]:
    """A list command by position or value, or a set command over several keys, on the keys the list and
    stream commands use (WRONGTYPE both ways; results stored where stream readers may block)."""
    rng = gen.rng
    key = _pick(rng, LIST_KEYS)
    other = _pick(rng, (*LIST_KEYS, INTSET_KEY))
    element = _pick(rng, (b"a", b"b", b"1", b"", b"x" * 70))
    kind = rng.randrange(12)
    if kind == 0:
        return [b"LINSERT", key, rng.choice((b"BEFORE", b"after", b"middle")), element, _pick(rng, (b"n", b"2"))]
    if kind == 1:
        index = rng.choice((b"0", b"-1", b"5", b"x"))
        return [b"LSET", key, index, element] if gen.chance(0.5) else [b"LINDEX", key, index]
    if kind == 2:
        return [b"LPOS", key, element, *([b"RANK", rng.choice((b"1", b"-1", b"0"))] if gen.chance(0.5) else []),
                *([b"COUNT", rng.choice((b"0", b"2"))] if gen.chance(0.5) else [])]
    if kind == 3:
        return [b"LREM", key, rng.choice((b"0", b"1", b"-1")), element]
    if kind == 4:
        return [b"LTRIM", key, rng.choice((b"0", b"1", b"-2")), rng.choice((b"-1", b"0", b"3"))]
    if kind == 5:
        return [rng.choice((b"RPOPLPUSH", b"LPUSHX")), key, _pick(rng, LIST_KEYS) if gen.chance(0.5) else element]
    if kind == 6:
        return [b"LMPOP", b"2", key, other, rng.choice((b"LEFT", b"RIGHT")), b"COUNT", b"2"]
    if kind in (7, 8):
        return [rng.choice((b"SINTER", b"SUNION", b"SDIFF")), key, other]
    if kind == 9:
        return [rng.choice((b"SINTERSTORE", b"SUNIONSTORE", b"SDIFFSTORE")), _pick(rng, LIST_KEYS), key, other]
    if kind == 10:
        return [b"SMOVE", key, other, _pick(rng, (b"a", b"1", b"2"))]
    if kind == 11 and gen.chance(0.5):
        return [b"SMISMEMBER", other, b"a", b"1"]
    if kind == 11:
        # Only the draws every target agrees on (targets' replies are compared step by step): SPOP's errors,
        # a count of 0, a missing key; HRANDFIELD on the list and set keys (WRONGTYPE or missing); the
        # blocking pops' argument errors, which answer at once.
        draws: tuple[list[Arg], ...] = (
            [b"SPOP", key, rng.choice((b"0", b"-1", b"x"))], [b"SPOP", b"nokey", rng.choice((b"2", b"0"))],
            [b"HRANDFIELD", key, *([rng.choice((b"1", b"-2", b"x"))] if gen.chance(0.5) else [])],
            [b"BRPOPLPUSH", key, other, rng.choice((b"x", b"-1"))],
            [b"BLMPOP", rng.choice((b"x", b"0")), b"2", key, other, rng.choice((b"UP", b"LEFT")), b"COUNT", b"0"],
        )
        return rng.choice(draws)
    return [b"SMISMEMBER", other, b"a", b"1"]


FAMILIES.setdefault("collections", collections_family)

FUZZ_PROFILES: dict[str, Profile] = {
    **PROFILES,
    # long PELs, COUNT and XAUTOCLAIM's scan budget, entries deleted and trimmed while pending
    "scan": Profile(idle_matches=0.2, weights=(("burst", 5), ("xautoclaim", 14), ("xpending", 8), ("xclaim", 8),
                                               ("xdel", 6), ("xtrim", 4), ("xack", 4), ("pause", 4), ("xinfo", 4))),
    # claiming around the idle-time boundary: pauses, min-idle equal to the time since delivery,
    # JUSTID, RETRYCOUNT, IDLE, TIME, and delivery counts read back
    "claims": Profile(idle_matches=0.35, weights=(("xreadgroup", 12), ("xclaim", 16), ("xautoclaim", 8),
                                                  ("xpending", 14), ("pause", 10), ("xack", 2), ("xinfo", 4),
                                                  ("keyspace", 1), ("multi", 1), ("xadd", 10))),
    # several clients blocked on one key or group, woken by another (FIFO order, DESTROY, deletion)
    "contention": Profile(clients=4, weights=(("contend", 8), ("xadd", 10), ("xreadgroup", 8), ("xread", 4),
                                              ("xgroup", 4), ("keyspace", 3), ("xinfo", 2), ("pause", 2),
                                              ("xpending", 2))),
    # lists, sets, sorted sets and streams on the same keys: their writes where stream readers block
    # (UNBLOCKED for XREADGROUP, XREAD left waiting), WRONGTYPE both ways, transactions mixing them
    "mixed": Profile(clients=4, weights=(("lists", 18), ("zsets", 8), ("collections", 6), ("xadd", 10), ("xread", 6),
                                         ("xreadgroup", 8), ("xgroup", 3), ("keyspace", 4), ("multi", 3), ("transaction", 2),
                                         ("contend", 2))),
}
"""The profiles a campaign draws from: the generator's, and one for large pending entries lists."""


@dataclass(frozen=True, slots=True)
class Case:
    """One generated sequence: the profile it came from, the stream settings, the steps.

    Slotted without ``__weakref__`` on purpose: Hypothesis keeps weak references to drawn values
    that allow them and lets later generation depend on whether they are still alive, which would
    make a campaign depend on what else the process holds; without them, the same seed gives the
    same cases.
    """

    profile: str
    config: dict[str, str] = field(hash=False)
    steps: tuple[Step, ...]


def with_clients(profiles: dict[str, Profile], clients: int | None) -> dict[str, Profile]:
    """The profiles with ``clients`` logical clients each (unchanged when None)."""
    if clients is None:
        return dict(profiles)
    return {name: replace(p, clients=clients) for name, p in profiles.items()}


class _WeightedFamilies:
    """A profile's command families, picked by an integer in ``range(total)`` (0 is the first family)."""

    def __init__(self, profile: Profile) -> None:
        table = profile.family_weights()
        self.names = list(table)
        self.bounds = list(accumulate(table.values()))
        self.choices = st.integers(0, self.bounds[-1] - 1)  # built once: drawing is the fuzzer's hot loop

    def pick(self, n: int) -> str:
        return self.names[bisect_right(self.bounds, n)]


_PERCENT = st.integers(0, 99)
_PRELUDE = st.integers(0, 4)
_DETAIL = st.integers(0, DETAIL_SEEDS - 1)


_FAMILY_TABLES: dict[tuple[str, Profile], _WeightedFamilies] = {}


def _families(name: str, profile: Profile) -> _WeightedFamilies:
    key = (name, profile)
    if key not in _FAMILY_TABLES:
        _FAMILY_TABLES[key] = _WeightedFamilies(profile)
    return _FAMILY_TABLES[key]


@st.composite
def cases(draw: st.DrawFn, profiles: dict[str, Profile] | None = None, length: int = 100) -> Case:
    """A :class:`Case` of at most ``length`` steps from one of ``profiles`` (default :data:`FUZZ_PROFILES`)."""
    profiles = profiles or FUZZ_PROFILES
    # indexes rather than sampled_from: Hypothesis labels sampled_from by hashing its elements, which
    # for strings and dicts varies between processes, and the same seed must give the same cases
    names = sorted(profiles)
    name = names[draw(st.integers(0, len(names) - 1))]
    profile = profiles[name]
    config = STREAM_CONFIGS[draw(st.integers(0, len(STREAM_CONFIGS) - 1))]
    families = _families(name, profile)
    gen = Generator(random.Random(0), profile)
    gen.clock = draw(_PERCENT) < profile.clock_mode * 100
    n = draw(st.integers(1, length))
    steps: list[Step] = []
    if n >= 4 and draw(_PRELUDE):  # most sequences start with a stream and a group
        gen.rng = random.Random(draw(_DETAIL))
        steps += gen.prelude()
    while len(steps) < n:
        family = families.pick(draw(families.choices))
        gen.rng = random.Random(draw(_DETAIL))
        steps += gen.next_steps(family)
    return Case(name, dict(config), tuple(steps[:n]))
