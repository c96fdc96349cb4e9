"""One client's transaction and blocking state, and how a command of its own changes it (INV-10, INV-11).

The state is the part of :class:`~xspec.models.state.Client` the invariants
read: in MULTI (``M``), the number of queued commands (``Q``), the EXECABORT
flag (``X``), the touched-watch flag (``W``) and whether the client is
blocked (``B``). A command is described by what the dispatcher decides from
the command table before running anything (DISPATCH-1 .. DISPATCH-5): its
kind, whether it is rejected, and whether, run outside MULTI, it would block
(which depends on data, not on this state). Other clients act on this one
only by touching a watched key and by serving or timing out its blocked read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import z3

MULTI, EXEC, DISCARD, RESET, WATCH, UNWATCH, OTHER = range(7)
# The commands the dispatcher runs inside MULTI instead of queuing them (Server._execute).
RUN_INSIDE_MULTI = (MULTI, EXEC, DISCARD, RESET, WATCH)


@dataclass(frozen=True)
class ClientState:
    M: z3.BoolRef
    Q: z3.ArithRef
    X: z3.BoolRef
    W: z3.BoolRef
    B: z3.BoolRef

    def but(self, **changes: z3.ExprRef) -> ClientState:
        return replace(self, **changes)


def fresh(prefix: str) -> ClientState:
    return ClientState(z3.Bool(f"{prefix}M"), z3.Int(f"{prefix}Q"), z3.Bool(f"{prefix}X"),
                       z3.Bool(f"{prefix}W"), z3.Bool(f"{prefix}B"))


def inv_blocked_idle(s: ClientState) -> z3.BoolRef:
    """INV-10: a blocked client is not in a transaction."""
    return z3.Implies(s.B, z3.Not(s.M))


def inv_transactions(s: ClientState) -> z3.BoolRef:
    """INV-11: outside MULTI, no queued command and no EXECABORT flag (and a queue is never negative)."""
    return z3.And(s.Q >= 0, z3.Implies(z3.Not(s.M), z3.And(s.Q == 0, z3.Not(s.X))))


CLIENT_INVARIANTS = [("INV-10", inv_blocked_idle), ("INV-11", inv_transactions)]


def _cleared(s: ClientState) -> ClientState:
    """``discardTransaction``: out of MULTI, queue and flags dropped, watches gone."""
    return s.but(M=z3.BoolVal(False), Q=z3.IntVal(0), X=z3.BoolVal(False), W=z3.BoolVal(False))


def command(s: ClientState, kind: z3.ArithRef, rejected: z3.BoolRef, blocks: z3.BoolRef) -> ClientState:
    """The client sends one command (it is not blocked: a blocked client cannot send)."""
    inside = z3.Or(*(kind == k for k in RUN_INSIDE_MULTI))
    queued = z3.And(z3.Not(rejected), s.M, z3.Not(inside))  # DISPATCH-4
    run = z3.And(z3.Not(rejected), z3.Not(queued))
    cleared = _cleared(s)

    def pick(field: str, when_run: z3.ExprRef) -> z3.ExprRef:
        current = getattr(s, field)
        on_reject = z3.If(kind == EXEC, getattr(cleared, field), current)  # EXEC-6: a rejected EXEC aborts
        if field == "X":
            on_reject = z3.If(kind == EXEC, z3.BoolVal(False), z3.Or(s.X, s.M))  # DISPATCH-5
        on_queue = z3.If(z3.Or(s.X, s.W), s.Q, s.Q + 1) if field == "Q" else current  # DISPATCH-4
        return z3.If(rejected, on_reject, z3.If(queued, on_queue, when_run))

    ends = z3.And(z3.Or(kind == DISCARD, kind == EXEC), s.M)  # DISCARD-2, EXEC-2 .. EXEC-5
    resets = z3.Or(ends, kind == RESET)  # CONN-4
    return ClientState(
        M=pick("M", z3.If(resets, z3.BoolVal(False), z3.Or(s.M, kind == MULTI))),  # MULTI-1, MULTI-2
        Q=pick("Q", z3.If(resets, z3.IntVal(0), s.Q)),
        X=pick("X", z3.If(resets, z3.BoolVal(False), s.X)),
        W=pick("W", z3.If(z3.Or(resets, kind == UNWATCH), z3.BoolVal(False), s.W)),  # WATCH-6
        B=pick("B", z3.And(run, kind == OTHER, blocks)))  # XREAD-11: only a command that ran blocks


def others(s: ClientState, touched: z3.BoolRef, woken: z3.BoolRef) -> ClientState:
    """Another client touches a watched key (WATCH-3) and/or serves this client's blocked read (BLOCK-2, BLOCK-8)."""
    return s.but(W=z3.Or(s.W, touched), B=z3.And(s.B, z3.Not(woken)))
