"""The replication encoding checked against models/replication.py on random concrete states
(spec/proofs.md, "Replication"; ``xspec prove --cross-check``).

A random walk of a :class:`~xspec.models.replication.Deployment` (three nodes; writes on the primary,
the deployment's own steps, cuts, ``REPLICAOF NO ONE`` on a replica and the others following it) is
read, after every step, as the encoding's variables: per node its IDs, offsets and backlog, per replica
whether its link is online and its acknowledged offset, and its history as far as its backlog shows it
(two histories agree where both backlogs show the same command over the same bytes; bytes before a
backlog are not known). Every conjunct of the invariant (REPL-INV-*) must hold of those values, so every
reachable state the model shows is one the proofs cover.
"""

from __future__ import annotations

import random
from typing import Any

import z3

from xspec.models.clock import ManualClock
from xspec.models.replication import NO_REPLID, Deployment, Node, resp_length
from xspec.proofs.replication import NONE, NodeVars, ReplicaVars, invariant_parts
from xspec.proofs.replication import Deployment as Encoded

NAMES = ("n0", "n1", "n2")
REPLICATION_WALKS = "replication walks"


def new_deployment() -> Deployment:
    nodes = {name: {"addrs": [f"127.0.0.1:{7000 + i}"], "config": {"repl-ping-replica-period": "3600"}}
             for i, name in enumerate(NAMES)}
    return Deployment(nodes, ManualClock(1_700_000_000_000))


class _Ids:
    """Replication IDs as positive integers (equal names, equal numbers)."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def __call__(self, replid: str) -> int:
        if replid == NO_REPLID:
            return NONE
        return self.numbers.setdefault(replid, len(self.numbers) + 1)


Units = dict[int, tuple[int, tuple[bytes, ...]]]  # end offset -> (start offset, command)


def _units(node: Node) -> Units:
    """The commands of the node's history its backlog still shows, by end offset."""
    if node.backlog is None:
        return {}
    return {end: (end - resp_length(list(argv)), tuple(argv)) for end, argv in node.backlog.units}


def agree_concrete(x: Units, y: Units, upto: Any) -> bool:
    """Histories agree on bytes 1 .. ``upto`` as far as both backlogs show them: a command one shows ending
    there is the command the other has over the same bytes."""
    limit = z3.simplify(upto).as_long() if isinstance(upto, z3.ExprRef) else upto
    for end, (_, argv) in x.items():
        if end > limit:
            continue
        for other_end, (other_start, other_argv) in y.items():
            if other_start < end <= other_end and (other_end, other_argv) != (end, argv):
                return False
    return True


def encode(d: Deployment, primary: str, ids: _Ids) -> Encoded:
    """The deployment's values as the encoding's variables, with ``primary`` as P."""
    order = [primary] + [n for n in NAMES if n != primary]
    nodes: list[NodeVars] = []
    for name, tag in zip(order, ("P", "A", "B"), strict=True):
        node = d.nodes[name]
        first, hist = (node.backlog.first, node.backlog.histlen) if node.backlog is not None else (node.offset + 1, 0)
        nodes.append(NodeVars(tag, ids(node.replid), ids(node.replid2),  # type: ignore[arg-type]
                              node.second_offset if node.replid2 != NO_REPLID else 0, node.offset, first, hist,
                              _units(node)))
    replicas = []
    for name, v in zip(order[1:], nodes[1:], strict=True):
        link = d.links.get(name)
        linked = link is not None and link.primary == primary and link.phase == "online"
        replicas.append(ReplicaVars(v, linked, link.ack if linked and link is not None else 0))  # type: ignore[arg-type]
    return Encoded(nodes[0], replicas[0], replicas[1])


def check_state(d: Deployment, primary: str, ids: _Ids) -> str | None:
    """None when the invariant holds of the deployment's state (with ``primary`` as P), else the conjunct
    that does not."""
    enc = encode(d, primary, ids)
    for label, part in invariant_parts(enc, agree_concrete):
        if not z3.is_true(z3.simplify(z3.BoolVal(part) if isinstance(part, bool) else part)):
            values = {name: (n.replid[:6], n.replid2[:6], n.second_offset, n.offset,
                             None if n.backlog is None else (n.backlog.first, n.backlog.histlen),
                             None if name not in d.links else (d.links[name].phase, d.links[name].ack))
                      for name, n in d.nodes.items()}
            return f"{label} does not hold with {primary} as primary: {values}"
    return None


def random_walk(rng: random.Random, length: int) -> str | None:
    """A random walk, checked after every step; the first problem, or None."""
    d = new_deployment()
    ids = _Ids()
    primary = "n0"
    for name in ("n1", "n2"):
        d.execute(name, 9, [b"REPLICAOF", b"127.0.0.1", b"7000"])
    promoted = False
    n = 0
    for n in range(length):
        kind = rng.random()
        internal = [s for s in d.steps() if s[0] not in ("ping", "failover")]
        if kind < 0.3 and d.nodes[primary].up:
            d.execute(primary, 1, [b"XADD", b"s", b"*", b"f", b"%d" % rng.randrange(100)])
            d.clock.advance(rng.choice([0, 1]))  # type: ignore[attr-defined]
        elif kind < 0.85 and internal:
            d.step(*rng.choice(internal))
        elif kind < 0.93:
            replicas = [r for r in d.links if d.links[r].primary == primary]
            if replicas:
                d.set_link(primary, rng.choice(replicas), "cut")
        elif not promoted and n > length // 3:
            promoted = True
            new = rng.choice([x for x in NAMES if x != primary])
            d.execute(new, 9, [b"REPLICAOF", b"NO", b"ONE"])
            port = 7000 + NAMES.index(new)
            for other in NAMES:
                if other != new and rng.random() < 0.8:
                    d.execute(other, 9, [b"REPLICAOF", b"127.0.0.1", b"%d" % port])
            primary = new
        problem = check_state(d, primary, ids)
        if problem is not None:
            return f"step {n}: {problem}"
    return None


def check_replication_once(rng: random.Random) -> str | None:
    """One sample for the cross-check: a walk of 30 steps."""
    return random_walk(rng, 30)
