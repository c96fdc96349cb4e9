"""Replication invariants over the model's replication transition relation (spec/proofs.md, "Replication").

A deployment is a primary ``P`` and two replicas ``A`` and ``B`` (models/replication.py, Redis 7.0), every
number unbounded. A node ``n`` is its replication ID ``id`` and secondary ID ``id2`` with
``off2`` (``second_replid_offset``), its offset ``off`` (``master_repl_offset``), its backlog
(``first``: the first byte it holds, ``hist``: how many bytes) and the bytes of its replication history
``C`` (an array: byte ``i`` for ``1 ≤ i ≤ off``); a replica also has ``linked`` (its link to ``P`` is
online) and ``ack`` (the offset its last ``REPLCONF ACK`` carried). IDs are integers (names: equal or
not); ``NONE`` is "no secondary ID".

The steps are the model's (``Deployment``): a write on the primary (its stream grows by ``n ≥ 1``
bytes; the backlog keeps a suffix), a replica applying the next ``k`` bytes of its link, its
acknowledgement, a cut, its ``PSYNC`` (``_partial_ok``: partial when its ID is the primary's, or the
secondary one and its next byte is not beyond ``off2``, and the backlog holds that byte; else a full
resynchronisation), and ``REPLICAOF NO ONE`` on ``A`` (``shiftReplicationId``: a fresh ID, the old one
secondary with ``off2 = off + 1``). Each ``REPL-IND-*`` property proves, for one step, the invariant
from itself (Inv ∧ step ⇒ Inv′); the others are consequences, or counterexamples where Redis gives less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from xspec.proofs.catalogue import Obligation, Property, Show

NONE = 0  # "no secondary ID" (Redis's all-zero replid2); every real ID is positive


@dataclass(frozen=True)
class NodeVars:
    name: str
    id: z3.ArithRef
    id2: z3.ArithRef
    off2: z3.ArithRef
    off: z3.ArithRef
    first: z3.ArithRef
    hist: z3.ArithRef
    C: z3.ArrayRef


@dataclass(frozen=True)
class ReplicaVars:
    node: NodeVars
    linked: z3.BoolRef
    ack: z3.ArithRef


@dataclass(frozen=True)
class Deployment:
    P: NodeVars
    A: ReplicaVars
    B: ReplicaVars

    @property
    def replicas(self) -> tuple[ReplicaVars, ReplicaVars]:
        return (self.A, self.B)


def node(name: str) -> NodeVars:
    i = z3.Int
    return NodeVars(name, i(f"{name}.id"), i(f"{name}.id2"), i(f"{name}.off2"), i(f"{name}.off"),
                    i(f"{name}.first"), i(f"{name}.hist"), z3.Array(f"{name}.C", z3.IntSort(), z3.IntSort()))


def replica(name: str) -> ReplicaVars:
    return ReplicaVars(node(name), z3.Bool(f"{name}.linked"), z3.Int(f"{name}.ack"))


def fresh(tag: str) -> Deployment:
    return Deployment(node(f"P{tag}"), replica(f"A{tag}"), replica(f"B{tag}"))


def agree(x: z3.ArrayRef, y: z3.ArrayRef, upto: z3.ArithRef) -> z3.BoolRef:
    """The histories agree on bytes 1 .. ``upto``."""
    i = z3.Int("i")
    return z3.ForAll([i], z3.Implies(z3.And(1 <= i, i <= upto), x[i] == y[i]))


# -- the invariant ---------------------------------------------------------------------------------


def node_ok(n: NodeVars) -> z3.BoolRef:
    """REPL-INV-1: offsets are non-negative; the backlog holds the bytes first .. off (REPL-3, REPL-4)."""
    return z3.And(n.off >= 0, n.id > 0, n.id2 >= 0, n.id != n.id2, 1 <= n.first, n.first <= n.off + 1,
                  n.hist == n.off - n.first + 1, z3.Implies(n.id2 != NONE, z3.And(n.off2 >= 1, n.off2 <= n.off + 1)))


Agree = Callable[[Any, Any, Any], Any]


def invariant_parts(d: Deployment, agree: Agree = agree) -> list[tuple[str, z3.BoolRef]]:
    """The invariant's conjuncts; ``agree`` decides history agreement (a quantified formula here, a
    comparison of concrete histories in the cross-check, replication_check.py)."""
    P = d.P
    parts = [("REPL-INV-1 P", node_ok(P))]
    for r in d.replicas:
        n = r.node
        parts += [
            (f"REPL-INV-1 {n.name[0]}", node_ok(n)),
            # REPL-INV-2: a linked replica has its primary's ID (it adopted it at PSYNC, REPL-7).
            (f"REPL-INV-2 {n.name[0]}", z3.Implies(r.linked, n.id == P.id)),
            # REPL-INV-3: a replica of the primary's ID has applied no byte the primary has not written,
            # and those bytes are the primary's.
            (f"REPL-INV-3 {n.name[0]}", z3.Implies(n.id == P.id, z3.And(n.off <= P.off, agree(n.C, P.C, n.off)))),
            # REPL-INV-5: an acknowledgement never exceeds what the replica applied.
            (f"REPL-INV-5 {n.name[0]}", z3.And(r.ack >= 0, r.ack <= n.off)),
            # REPL-INV-6: a replica's secondary ID is never the primary's current one.
            (f"REPL-INV-6 {n.name[0]}", z3.Implies(n.id2 != NONE, n.id2 != P.id)),
        ]
    # REPL-INV-4: an ID names one history: wherever two nodes hold the same ID (as their own, bytes
    # 1 .. off, or as their secondary one, bytes 1 .. off2 - 1), they agree on the bytes both have.
    nodes = [P, d.A.node, d.B.node]
    for x in range(3):
        for y in range(x + 1, 3):
            n, m = nodes[x], nodes[y]
            for id_n, len_n in ((n.id, n.off), (n.id2, n.off2 - 1)):
                for id_m, len_m in ((m.id, m.off), (m.id2, m.off2 - 1)):
                    both = z3.If(len_n < len_m, len_n, len_m)
                    parts.append((f"REPL-INV-4 {n.name[0]}{m.name[0]}",
                                  z3.Implies(z3.And(id_n != NONE, id_n == id_m), agree(n.C, m.C, both))))
    return parts


def invariant(d: Deployment) -> z3.BoolRef:
    return z3.And(*[p for _, p in invariant_parts(d)])


def partial_ok(primary: NodeVars, asked_id: z3.ArithRef, psync_offset: z3.ArithRef) -> z3.BoolRef:
    """``_partial_ok`` (REPL-6): the ID is the primary's, or its secondary one with the offset not beyond
    ``off2``; and the backlog holds byte ``psync_offset`` (or it is the next one)."""
    ids_ok = z3.Or(asked_id == primary.id,
                   z3.And(primary.id2 != NONE, asked_id == primary.id2, psync_offset <= primary.off2))
    return z3.And(ids_ok, primary.first <= psync_offset, psync_offset <= primary.first + primary.hist)


# -- the steps ---------------------------------------------------------------------------------------


def _same_node(x: NodeVars, y: NodeVars) -> z3.BoolRef:
    return z3.And(x.id == y.id, x.id2 == y.id2, x.off2 == y.off2, x.off == y.off, x.first == y.first,
                  x.hist == y.hist, x.C == y.C)


def _same_replica(x: ReplicaVars, y: ReplicaVars) -> z3.BoolRef:
    return z3.And(_same_node(x.node, y.node), x.linked == y.linked, x.ack == y.ack)


def _backlog_grows(pre: NodeVars, post: NodeVars) -> z3.BoolRef:
    """``Backlog.add``: the history grows to the new offset; whole blocks may go from its start."""
    return z3.And(post.first >= pre.first, post.first <= post.off + 1, post.hist == post.off - post.first + 1)


def step_write(d: Deployment, e: Deployment) -> tuple[list[z3.BoolRef], dict[str, z3.ExprRef]]:
    """A client's write on the primary: ``n`` more bytes of stream (REPL-2)."""
    n = z3.Int("n")
    P, Q = d.P, e.P
    return [n >= 1, Q.id == P.id, Q.id2 == P.id2, Q.off2 == P.off2, Q.off == P.off + n, _backlog_grows(P, Q),
            agree(Q.C, P.C, P.off), _same_replica(d.A, e.A), _same_replica(d.B, e.B)], {"n": n}


def step_apply(d: Deployment, e: Deployment, which: str) -> tuple[list[z3.BoolRef], dict[str, z3.ExprRef]]:
    """Replica ``which`` applies the next ``k`` bytes of its link: the primary's bytes off+1 .. off+k."""
    k = z3.Int("k")
    r, s = (d.A, e.A) if which == "A" else (d.B, e.B)
    other, other2 = (d.B, e.B) if which == "A" else (d.A, e.A)
    n, m = r.node, s.node
    i = z3.Int("i")
    copied = z3.ForAll([i], m.C[i] == z3.If(z3.And(n.off < i, i <= n.off + k), d.P.C[i], n.C[i]))
    return [r.linked, k >= 1, n.off + k <= d.P.off, m.off == n.off + k, m.id == n.id, m.id2 == n.id2,
            m.off2 == n.off2, _backlog_grows(n, m), copied, s.linked == r.linked, s.ack == r.ack,
            _same_node(d.P, e.P), _same_replica(other, other2)], {"k": k}


def step_ack(d: Deployment, e: Deployment, which: str) -> tuple[list[z3.BoolRef], dict[str, z3.ExprRef]]:
    """``REPLCONF ACK <offset>`` reaches the primary (WAIT-1): the link's ack is the larger."""
    r, s = (d.A, e.A) if which == "A" else (d.B, e.B)
    other, other2 = (d.B, e.B) if which == "A" else (d.A, e.A)
    return [r.linked, _same_node(r.node, s.node), s.linked, s.ack == z3.If(r.node.off > r.ack, r.node.off, r.ack),
            _same_node(d.P, e.P), _same_replica(other, other2)], {}


def step_cut(d: Deployment, e: Deployment, which: str) -> tuple[list[z3.BoolRef], dict[str, z3.ExprRef]]:
    r, s = (d.A, e.A) if which == "A" else (d.B, e.B)
    other, other2 = (d.B, e.B) if which == "A" else (d.A, e.A)
    return [_same_node(r.node, s.node), z3.Not(s.linked), s.ack == r.ack, _same_node(d.P, e.P),
            _same_replica(other, other2)], {}


def step_psync(d: Deployment, e: Deployment, which: str) -> tuple[list[z3.BoolRef], dict[str, z3.ExprRef]]:
    """The replica's ``PSYNC <id> <off+1>`` (REPL-5 .. REPL-7): partial, adopting the primary's ID (the old
    one secondary), or a full resynchronisation to a snapshot of the primary (its offset and history at
    the fork, at or before now; what follows is fed on the link)."""
    r, s = (d.A, e.A) if which == "A" else (d.B, e.B)
    other, other2 = (d.B, e.B) if which == "A" else (d.A, e.A)
    n, m, P = r.node, s.node, d.P
    partial = partial_ok(P, n.id, n.off + 1)
    adopted = z3.If(n.id == P.id, z3.And(m.id2 == n.id2, m.off2 == n.off2),
                    z3.And(m.id2 == n.id, m.off2 == n.off + 1))
    continued = z3.And(m.id == P.id, adopted, m.off == n.off, m.first == n.first, m.hist == n.hist, m.C == n.C)
    snapshot = z3.Int("snapshot")  # the primary's offset when its snapshot was taken (at or before now)
    full = z3.And(0 <= snapshot, snapshot <= P.off, m.id == P.id, m.id2 == NONE, m.off == snapshot,
                  m.first == snapshot + 1, m.hist == 0, agree(m.C, P.C, snapshot))
    # A replica without a cached primary offers no ID (PSYNC ? -1): a full resynchronisation even when
    # a partial one would be accepted.
    return [z3.Not(r.linked), s.linked, s.ack == 0, z3.Or(z3.And(partial, continued), full), _same_node(P, e.P),
            _same_replica(other, other2)], {"partial": partial, "snapshot": snapshot}


def step_promote(d: Deployment, e: Deployment) -> tuple[list[z3.BoolRef], dict[str, z3.ExprRef]]:
    """``REPLICAOF NO ONE`` on ``A`` (REPL-8): A is the new primary under a fresh ID, its old one secondary
    with off2 = off + 1; B is not linked to it (it reconnects with PSYNC); the old primary leaves and A's
    former place among the replicas is taken by the old primary's state, unlinked (it may follow A)."""
    fresh_id = z3.Int("fresh")
    A, Q = d.A.node, e.P
    ids = [d.P.id, d.P.id2, A.id, A.id2, d.B.node.id, d.B.node.id2]
    return [*[fresh_id != x for x in ids], fresh_id > 0,
            Q.id == fresh_id, Q.id2 == A.id, Q.off2 == A.off + 1, Q.off == A.off, Q.first == A.first,
            Q.hist == A.hist, Q.C == A.C,
            _same_node(d.B.node, e.B.node), z3.Not(e.B.linked), e.B.ack == d.B.ack,
            _same_node(d.P, e.A.node), z3.Not(e.A.linked), e.A.ack == 0], {"fresh": fresh_id}


STEPS = {
    "write": step_write,
    "apply A": lambda d, e: step_apply(d, e, "A"),
    "apply B": lambda d, e: step_apply(d, e, "B"),
    "ack A": lambda d, e: step_ack(d, e, "A"),
    "cut A": lambda d, e: step_cut(d, e, "A"),
    "psync A": lambda d, e: step_psync(d, e, "A"),
    "psync B": lambda d, e: step_psync(d, e, "B"),
    "promote A": step_promote,
}


# -- rendering ---------------------------------------------------------------------------------------


def _show(d: Deployment, e: Deployment | None, params: dict[str, z3.ExprRef], what: str) -> Show:
    def show(m: z3.ModelRef) -> list[str]:
        def v(t: z3.ExprRef) -> str:
            return str(m.eval(t, model_completion=True))

        def line(tag: str, x: Deployment) -> list[str]:
            out = [f"{tag} P: id {v(x.P.id)} id2 {v(x.P.id2)} off2 {v(x.P.off2)} off {v(x.P.off)} "
                   f"backlog {v(x.P.first)}+{v(x.P.hist)}"]
            for r in x.replicas:
                n = r.node
                out.append(f"{tag} {n.name[0]}: id {v(n.id)} id2 {v(n.id2)} off2 {v(n.off2)} off {v(n.off)} "
                           f"backlog {v(n.first)}+{v(n.hist)} linked {v(r.linked)} ack {v(r.ack)}")
            return out

        lines = line("state", d)
        lines.append(f"{what} " + ", ".join(f"{k}={v(t)}" for k, t in params.items()))
        if e is not None:
            lines += line("after", e)
        return lines
    return show


# -- the properties ----------------------------------------------------------------------------------


def _initial() -> list[Obligation]:
    """A primary and two replicas after their first full synchronisation (or not yet connected)."""
    d = fresh("")
    P = d.P
    hyp = [P.id > 0, P.id2 == NONE, P.off >= 0, P.first == P.off + 1, P.hist == 0]
    for r in d.replicas:
        n = r.node
        hyp += [n.id != P.id, n.id > 0, n.id2 == NONE, n.off == 0, n.first == 1, n.hist == 0,
                z3.Not(r.linked), r.ack == 0]
    hyp.append(d.A.node.id != d.B.node.id)
    return [Obligation(label, hyp, goal, _show(d, None, {}, "initial")) for label, goal in invariant_parts(d)]


def _inductive(name: str) -> list[Obligation]:
    d, e = fresh(""), fresh("'")
    side, params = STEPS[name](d, e)
    hyp = [invariant(d), *side]
    return [Obligation(f"{name}: {label}", hyp, goal, _show(d, e, params, name)) for label, goal in invariant_parts(e)]


def _partial_is_contiguous() -> list[Obligation]:
    """A PSYNC the primary continues: its stream resumes at the replica's next byte, which the backlog holds,
    and every byte the replica has is the primary's (nothing skipped, nothing repeated)."""
    d = fresh("")
    out = []
    for r in d.replicas:
        n = r.node
        hyp = [invariant(d), z3.Not(r.linked), partial_ok(d.P, n.id, n.off + 1)]
        goal = z3.And(d.P.first <= n.off + 1, n.off <= d.P.off, agree(n.C, d.P.C, n.off))
        out.append(Obligation(f"PSYNC {n.name[0]}", hyp, goal, _show(d, None, {}, "psync")))
    return out


def _promotion_continues(restrict: bool) -> list[Obligation]:
    """After REPLICAOF NO ONE on A, the other replica B of the old primary (its ID, not ahead of A; A's
    backlog holding B's next byte) continues partially from A, and A has every byte B has."""
    d, e = fresh(""), fresh("'")
    side, params = step_promote(d, e)
    B = d.B.node
    hyp = [invariant(d), *side, B.id == d.P.id, d.A.node.id == d.P.id, d.A.node.first <= B.off + 1]
    if restrict:
        hyp.append(B.off <= d.A.node.off)
    goal = z3.And(partial_ok(e.P, B.id, B.off + 1), agree(B.C, e.P.C, B.off))
    return [Obligation("promotion", hyp, goal, _show(d, e, params, "REPLICAOF NO ONE on A"))]


def _wait_count() -> list[Obligation]:
    """WAIT's count (the linked replicas whose acknowledged offset reached the write's) never exceeds the
    replicas that hold the write as the primary wrote it."""
    d = fresh("")
    w = z3.Int("woff")
    counted = sum(z3.If(z3.And(r.linked, r.ack >= w), 1, 0) for r in d.replicas)
    holding = sum(z3.If(z3.And(r.node.off >= w, agree(r.node.C, d.P.C, w)), 1, 0) for r in d.replicas)
    return [Obligation("WAIT count", [invariant(d), w >= 1, w <= d.P.off], counted <= holding,
                       _show(d, None, {"woff": w}, "WAIT"))]


def _wait_promoted(counted_one: bool) -> list[Obligation]:
    """A write WAIT 1 counted (A's acknowledgement reached it) is kept by a promotion of A: the new
    primary's history has it. With ``counted_one`` False the promoted replica is any replica: B."""
    d, e = fresh(""), fresh("'")
    side, params = step_promote(d, e)
    w = z3.Int("woff")
    acked = z3.Or(*[z3.And(r.linked, r.ack >= w) for r in d.replicas])
    hyp = [invariant(d), *side, w >= 1, w <= d.P.off, acked]
    if counted_one:
        hyp.append(z3.And(d.A.linked, d.A.ack >= w))
        return [Obligation("WAIT then promote A", hyp, z3.And(e.P.off >= w, agree(e.P.C, d.P.C, w)),
                           _show(d, e, {**params, "woff": w}, "REPLICAOF NO ONE on A"))]
    return [Obligation("WAIT then promote B", hyp, z3.And(d.B.node.off >= w, agree(d.B.node.C, d.P.C, w)),
                       _show(d, e, {**params, "woff": w}, "REPLICAOF NO ONE on B"))]


def _ind(step: str, rules: str) -> Property:
    return Property(f"REPL-IND-{step.upper().replace(' ', '-')}", rules,
                    f"the replication invariant (REPL-INV-1..6) is preserved by {step}", lambda: _inductive(step))


PROPERTIES: list[Property] = [
    Property("REPL-INIT", "REPL-3, REPL-5", "a primary and two replicas before their first synchronisation "
             "satisfy the replication invariant", _initial),
    _ind("write", "REPL-2, REPL-4"),
    _ind("apply A", "REPL-2, REPL-12"),
    _ind("apply B", "REPL-2, REPL-12"),
    _ind("ack A", "WAIT-1, WAIT-3"),
    _ind("cut A", "REPL-7"),
    _ind("psync A", "REPL-5, REPL-6, REPL-7"),
    _ind("psync B", "REPL-5, REPL-6, REPL-7"),
    _ind("promote A", "REPL-8"),
    Property("REPL-PSYNC-CONTIGUOUS", "REPL-6", "a partial resynchronisation resumes at the replica's next byte, "
             "held by the backlog, and the replica's bytes are the primary's: nothing skipped or repeated",
             _partial_is_contiguous),
    Property("REPL-PROMOTION-CONTINUES", "REPL-6, REPL-8", "after a promotion, a replica of the old primary that "
             "is not ahead of the promoted one continues partially (the secondary ID), and the new primary has "
             "every byte it has", lambda: _promotion_continues(True)),
    Property("REPL-PROMOTION-AHEAD", "REPL-6, REPL-8", "... any replica of the old primary continues partially",
             lambda: _promotion_continues(False), expect="violated",
             why="a replica ahead of the promoted one (it applied bytes the new primary never got) is refused by "
                 "the off2 test and resynchronises fully: what it applied beyond is lost"),
    Property("REPL-WAIT-COUNT", "WAIT-1, WAIT-3", "WAIT's count never exceeds the replicas that hold the write",
             _wait_count),
    Property("REPL-WAIT-PROMOTED", "WAIT-1, REPL-8", "a write WAIT counted A for survives promoting A",
             lambda: _wait_promoted(True)),
    Property("REPL-WAIT-OTHER", "WAIT-1, REPL-8", "a write WAIT 1 counted survives promoting any replica",
             lambda: _wait_promoted(False), expect="violated",
             why="WAIT 1 is met by one replica; the other may not have the write (the exploration's wait regime "
                 "promotes the one that acknowledged; traces/replication/*/failover/wait-met-by-the-other-replica)"),
]
