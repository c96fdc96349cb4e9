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

from xspec.traces.fuzz.generate import PROFILES, Generator, Profile, Step

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
