"""What the recovery worker's poison-pill limit does across failures (spec/exploration.md, EXPLORE-FAIL-11).

The ``worker`` configurations' recovery worker claims a pending entry, asks XPENDING for its delivery count
and, above the limit, moves it to the dead-letter stream ``dlq`` before its XACK (EXPLORE-FAIL-2). Beyond
the seven properties, a breadth-first walk of the configuration's states (no symmetry reduction, so every
path is concrete and shortest) looks for the situations a dead-letter queue is meant to rule out:

* ``limit-evaded``: the worker processes a claimed entry because XPENDING shows it delivered at most
  ``poison_limit`` times, although clients received it at least twice (from a ``>`` read, and from the
  worker's own claim): the count the limit reads undercounts;
* ``dead-lettered-after-ack``: an entry whose XACK replied 1 is moved to ``dlq`` afterwards;
* ``acked-after-dead-letter``: a consumer's XACK of an entry already in ``dlq`` replies 1 (processed and
  dead-lettered);
* ``dead-letter-refused``: ``XADD dlq <id>`` fails because ``dlq`` already holds that ID or a later one;
* ``dead-letter-lost``: a dead letter acknowledged to the worker is missing from the primary that serves.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from xspec.explore.failover import DLQ_BIT, FailoverConfig, FailoverSystem

QUESTIONS = ("limit-evaded", "dead-lettered-after-ack", "acked-after-dead-letter", "dead-letter-refused",
             "dead-letter-lost")


@dataclass
class PoisonReport:
    """Each question's shortest path (``(step id, next state)`` from the initial state), None where no
    reachable state shows it."""

    system: FailoverSystem
    states: int
    found: dict[str, list[tuple[int, Any]] | None] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = []
        for q in QUESTIONS:
            path = self.found.get(q)
            out.append(f"{self.system.config.name} {q}: " + ("never" if path is None else f"{len(path)} steps"))
        return out

    def describe(self, question: str) -> list[str]:
        path = self.found.get(question) or []
        return [self.system.steps[sid].describe(self.system.process_names) for sid, _ in path]


def _seen(system: FailoverSystem, s: Any, sid: int, t: Any) -> str | None:
    """The question the step ``sid`` from ``s`` to ``t`` shows, if any."""
    step = system.steps[sid]
    worker = 1 + system.consumers
    nodes, serving = s[0], s[1]
    if step.proc == worker and step.kind == "command":
        if step.argv[0] == b"XPENDING":
            held = s[5][worker][0]
            pending = [x for x in nodes[serving][2] if x[0] == held[0]]
            limit = system.config.poison_limit
            if pending and limit is not None and pending[0][2] <= limit and pending[0][2] < 2:
                return "limit-evaded"
        elif step.argv[:2] == (b"XADD", b"dlq"):
            if t[5][worker][3] == s[5][worker][3] and "error" in step.text:
                return "dead-letter-refused"
            if s[6][2] >> s[5][worker][0][1] & 1:
                return "dead-lettered-after-ack"
    if 1 <= step.proc <= system.consumers and step.argv[:1] == (b"XACK",) and t[6][2] != s[6][2]:
        seq = s[5][step.proc][0][0]
        if nodes[serving][4] >> seq & 1:
            return "acked-after-dead-letter"
    if t[2] and t[6][1] >> DLQ_BIT & ~t[0][t[1]][4]:
        return "dead-letter-lost"
    return None


def poison_questions(config: FailoverConfig) -> PoisonReport:
    """Walk every state of ``config`` (which must have a worker with a poison-pill limit) breadth first."""
    if not config.worker_claims or config.poison_limit is None:
        raise ValueError(f"{config.name}: no recovery worker with a poison-pill limit")
    system = FailoverSystem(config, symmetry=False)
    start = system.normal(system.initial())
    parent: dict[Any, tuple[Any, int] | None] = {start: None}
    queue = deque([start])
    found: dict[str, list[tuple[int, Any]] | None] = dict.fromkeys(QUESTIONS)
    while queue:
        s = queue.popleft()
        for sid, raw in system.expand(s):
            t = system.normal(raw)
            q = _seen(system, s, sid, t)
            if q is not None and found[q] is None:
                found[q] = _path(parent, s) + [(sid, t)]
            if t not in parent:
                parent[t] = (s, sid)
                queue.append(t)
    return PoisonReport(system, len(parent), found)


def _path(parent: dict[Any, tuple[Any, int] | None], s: Any) -> list[tuple[int, Any]]:
    out = []
    while (link := parent[s]) is not None:
        out.append((link[1], s))
        s = link[0]
    return out[::-1]
