"""Breadth-first walk of a compact transition system (spec/exploration.md, EXPLORE-COMPACT-*).

The states of a compact system are integers (each one the whole state, its
fingerprint: no hashing that could collide), canonical under symmetry. The walk
keeps, per state, the integer, its parent, the step that found it, the relabelling
that step's target needed, and its depth, in typed arrays: a few dozen bytes a
state (:attr:`CompactResult.bytes_per_state`).

A system gives ``initial()``, ``canonical(s)`` and ``canonical_fast(s)`` (the same,
remembered), ``expand(s)`` (pairs of step number and raw successor, in plan
order, the steps of processes tied with the one before left out: EXPLORE-SYM-3),
``violations(s)`` (its own invariants) and ``safety(s)`` (property name, message);
its ``steps`` list turns step numbers into :class:`~xspec.explore.engine.Step`.
"""

from __future__ import annotations

import gc
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from xspec.explore.engine import INVARIANTS, Step, Violation

Progress = Callable[[int, int, int], None]
PROGRESS_EVERY = 1024


class CompactSystem(Protocol):
    """A state is an ``int`` (the compact configurations) or a hashable tuple (the failover system)."""

    steps: list[Step]
    process_names: tuple[str, ...]

    def initial(self) -> Any: ...

    def canonical(self, s: Any) -> tuple[Any, tuple[int, ...] | None]: ...

    def canonical_fast(self, s: Any) -> tuple[Any, tuple[int, ...] | None]: ...

    def expand(self, s: Any) -> list[tuple[int, Any]]: ...

    def violations(self, s: Any) -> Iterator[str]: ...

    def safety(self, s: Any) -> Iterator[tuple[str, str]]: ...


@dataclass
class CompactResult:
    """EXPLORE-3's statistics of a compact walk, and what counterexamples need."""

    states: list[int]
    parent: array
    via: array
    perm: array  # index into ``perms`` of the relabelling applied to the edge's target (0: none)
    perms: list[tuple[int, ...] | None]
    depth: array
    transitions: int
    seconds: float
    cpu_seconds: float
    violations: dict[str, Violation] = field(default_factory=dict)
    complete: bool = True
    bytes_per_state: float = 0.0

    @property
    def max_depth(self) -> int:
        return max(self.depth) if len(self.depth) else 0

    def rate(self) -> float:
        return len(self.states) / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")

    def path(self, target: int, steps: list[Step]) -> list[tuple[Step, tuple[int, ...] | None]]:
        """The steps from the initial state to ``target``, each with its target's relabelling."""
        out = []
        i = target
        while self.parent[i] >= 0:
            out.append((steps[self.via[i]], self.perms[self.perm[i]]))
            i = self.parent[i]
        out.reverse()
        return out


def _fingerprint(s: Any) -> int:
    return s if type(s) is int else hash(s)


def replay_path(system: CompactSystem, result: CompactResult, target: int) -> list[tuple[int, Any]]:
    """The steps and concrete (not relabelled) states from the initial state to state ``target`` of a walk
    whose states are fingerprints: each step is the first successor whose canonical form has the next
    fingerprint on the path (EXPLORE-FAIL-7)."""
    chain = []
    i = target
    while i >= 0:
        chain.append(result.states[i])
        i = result.parent[i]
    chain.reverse()
    x = system.initial()
    out: list[tuple[int, Any]] = []
    for want in chain[1:]:
        for sid, y in system.expand(x):
            if _fingerprint(system.canonical(y)[0]) == want:
                out.append((sid, y))
                x = y
                break
        else:
            raise AssertionError("the path does not replay: a fingerprint collision or a nondeterministic system")
    return out


def walk(system: CompactSystem, *, max_states: int | None = None, check: bool = True,
         progress: Progress | None = None) -> tuple[CompactResult, tuple[int, ...] | None]:
    """Every reachable state of ``system``, breadth first (EXPLORE-1); returns the result and the initial relabelling."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _walk(system, max_states, check, progress)
    finally:
        if gc_was_enabled:
            gc.enable()


def _walk(system: CompactSystem, max_states: int | None, check: bool,
          progress: Progress | None) -> tuple[CompactResult, tuple[int, ...] | None]:
    started = time.perf_counter()
    cpu_started = time.process_time()
    first, perm0 = system.canonical(system.initial())
    # A state that is not an int is known by its fingerprint (its 64-bit hash) once expanded: only the
    # states still to expand are kept whole (EXPLORE-FAIL-7).
    whole = type(first) is int
    fp = _fingerprint
    index: dict[int, int] = {fp(first): 0}
    alias: dict[int, int] = {}  # raw non-canonical successor -> state number
    states = [fp(first)]
    queue: deque[Any] = deque([first])
    parent = array("i", [-1])
    via = array("i", [-1])
    perm_of = array("i", [0])
    perms: list[tuple[int, ...] | None] = [None]
    perm_ids: dict[tuple[int, ...] | None, int] = {None: 0}
    depth = array("H", [0])
    found: dict[str, Violation] = {}
    canonical = system.canonical_fast
    # A system whose states are hashed may take the raw state's hash and return the representative's, so that
    # no state is hashed twice (FailoverSystem.canonical_keyed).
    keyed = None if whole else getattr(system, "canonical_keyed", None)
    expand = system.expand
    safety = system.safety
    violations = system.violations
    transitions = 0
    complete = True
    limit = max_states if max_states is not None else sys.maxsize

    def inspect(j: int, s: int) -> None:
        if check:
            broken = list(violations(s))
            if broken and INVARIANTS not in found:
                found[INVARIANTS] = Violation(INVARIANTS, j, "; ".join(broken))
        for prop, message in safety(s):
            if prop not in found:
                found[prop] = Violation(prop, j, message)

    inspect(0, first)
    head = 0
    while head < len(states):
        i = head
        head += 1
        if progress is not None and head % PROGRESS_EVERY == 0:
            progress(len(states), depth[i], transitions)
        s = queue.popleft()
        d = depth[i] + 1
        succ = expand(s)
        transitions += len(succ)
        for step, raw in succ:
            if raw is s:  # a step that changed nothing (already known; a tuple is not hashed again)
                continue
            key = raw if whole else hash(raw)
            if key in index or key in alias:
                continue
            if keyed is not None:
                c, ckey = keyed(raw, key)
                perm = None
            else:
                c, perm = canonical(raw)
                ckey = key if c is raw else c if whole else hash(c)
            if c is not raw:
                j = index.get(ckey)
                if j is not None:
                    alias[key] = j
                    continue
            if len(states) >= limit:
                complete = False
                continue
            j = len(states)
            index[ckey] = j
            if c is not raw:
                alias[key] = j
            if perm is not None:
                pid = perm_ids.get(perm)
                if pid is None:
                    pid = perm_ids[perm] = len(perms)
                    perms.append(perm)
            else:
                pid = 0
            states.append(ckey)
            queue.append(c)
            parent.append(i)
            via.append(step)
            perm_of.append(pid)
            depth.append(d)
            inspect(j, c)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    size = (sys.getsizeof(index) + sys.getsizeof(alias) + sys.getsizeof(states) + sum(map(sys.getsizeof, states))
            + sum(sys.getsizeof(a) for a in (parent, via, perm_of, depth)))
    # (the walk's peak also holds its widest level whole: not counted here)
    result = CompactResult(states, parent, via, perm_of, perms, depth, transitions, seconds, cpu, found, complete,
                           size / len(states))
    return result, perm0
