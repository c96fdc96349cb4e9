"""The model's transitions as Z3 terms: one function per command (or per step of a looping command).

Each function mirrors one handler of :mod:`xspec.models` after argument
parsing, branch by branch, with the same rule ids; it takes a :class:`State`
and the command's parameters (Z3 terms: symbolic for proofs, concrete for the
cross-check) and returns a :class:`Step`: the post-state, the constraints that
define its *oracles* (fresh constants standing for "the first pending ID from
here", which an unbounded collection cannot compute by a loop) and what the
step reports (outcome code, the new ID, whether it claimed...).

Commands that loop over entries (XREADGROUP, XAUTOCLAIM, a history read,
XCLAIM and XDEL with several IDs) are sequences of the steps here; the
cross-check runs those sequences the way the model's loops do.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from xspec.models import lag as model_lag
from xspec.models import streams as model_streams
from xspec.proofs import ids
from xspec.proofs.ids import ID_SORT, U64, ZERO
from xspec.proofs.state import CONSUMER, MINUS_ONE, State
from xspec.spec.ids import I64_MAX, I64_MIN, U64_MAX

_names = itertools.count()


def fresh_name(base: str) -> str:
    return f"{base}!{next(_names)}"


def as_u64(v: z3.ArithRef) -> z3.ArithRef:
    """The model's ``as_u64`` for a value within 2^64 of the range: C's ``uint64_t`` wrap."""
    return z3.If(v < 0, v + 2**64, z3.If(v > U64_MAX, v - 2**64, v))


def as_i64(v: z3.ArithRef) -> z3.ArithRef:
    """The model's ``as_i64`` for a value within 2^64 of the range: C's ``long long`` wrap."""
    return z3.If(v < I64_MIN, v + 2**64, z3.If(v > I64_MAX, v - 2**64, v))


Universe = list[z3.BitVecRef] | None


@dataclass(frozen=True)
class Step:
    post: State
    side: tuple[z3.BoolRef, ...] = ()
    out: dict[str, z3.ExprRef] = field(default_factory=dict)
    # The conditions the step branches on: proofs split on them, one small proof per branch.
    cases: tuple[z3.BoolRef, ...] = ()


def first_from(member: Callable[[z3.BitVecRef], z3.BoolRef], start: z3.BitVecRef, *, strict: bool,
               name: str, universe: Universe = None) -> tuple[z3.BoolRef, z3.BitVecRef, tuple[z3.BoolRef, ...]]:
    """An oracle for the smallest member at or after (``strict``: after) ``start``.

    Returns (found, id, defining constraints); the constraints pin both
    constants down uniquely. With a ``universe`` (IDs in increasing order that
    include every possible member, as a concrete state has) the answer is a
    plain expression over it instead, with no quantifier: same meaning, faster.
    """
    after = ids.lt if strict else ids.le
    if universe is not None:
        found: z3.BoolRef = z3.BoolVal(False)
        first: z3.BitVecRef = ZERO
        for k in reversed(universe):
            hit = z3.And(member(k), after(start, k))
            found, first = z3.Or(hit, found), z3.If(hit, k, first)
        return found, first, ()
    found = z3.Bool(fresh_name(f"{name}_found"))
    first = ids.fresh_id(fresh_name(name))
    y = z3.BitVec(fresh_name("y"), ID_SORT)
    side = (
        z3.Implies(found, z3.And(member(first), after(start, first),
                                 z3.ForAll([y], z3.Implies(z3.And(member(y), after(start, y)), ids.le(first, y))))),
        z3.Implies(z3.Not(found), z3.ForAll([y], z3.Implies(member(y), z3.Not(after(start, y))))),
    )
    return found, first, side


# -- XADD (XADD-6 .. XADD-17) ------------------------------------------------------------------
AUTO, EXPLICIT, MS_STAR = 0, 1, 2  # the ID argument: ``*``, ``ms-seq``, ``ms-*``
OK, ERR_ZERO, ERR_EXHAUSTED, ERR_NOT_ABOVE, ERR_TOO_LARGE = range(5)
XADD_ERRORS = {
    ERR_ZERO: model_streams.ERR_ID_ZERO,
    ERR_EXHAUSTED: model_streams.ERR_EXHAUSTED,
    ERR_NOT_ABOVE: model_streams.ERR_ID_NOT_ABOVE_TOP,
    ERR_TOO_LARGE: model_streams.ERR_TOO_LARGE,
}


def xadd(s: State, form: z3.ArithRef, given: z3.BitVecRef, now: z3.BitVecRef,
         errno_edom: z3.BoolRef) -> Step:
    """XADD with ID ``*`` (clock reading ``now``), ``given`` or ``ms(given)-*``; ``errno_edom`` is XADD-14's errno."""
    auto_id = z3.If(z3.UGT(now, ids.ms(s.T)), ids.make(now, z3.BitVecVal(0, U64)),  # XADD-11
                    ids.successor(s.T)[1])
    same_ms = ids.ms(given) == ids.ms(s.T)
    star_id = z3.If(same_ms, ids.make(ids.ms(s.T), ids.seq(s.T) + 1),  # XADD-13
                    ids.make(ids.ms(given), z3.BitVecVal(0, U64)))
    new = z3.If(form == AUTO, auto_id, z3.If(form == EXPLICIT, given, star_id))  # XADD-12
    star_exhausted = z3.And(form == MS_STAR, same_ms, ids.seq(s.T) == ids.U64_TOP)
    outcome = z3.If(z3.And(form == EXPLICIT, given == ZERO), ERR_ZERO,  # XADD-6
              z3.If(s.T == ids.TOP, ERR_EXHAUSTED,  # XADD-9
              z3.If(star_exhausted, z3.If(errno_edom, ERR_NOT_ABOVE, ERR_TOO_LARGE),  # XADD-14
              z3.If(ids.le(new, s.T), ERR_NOT_ABOVE, OK))))  # XADD-15
    ok = outcome == OK
    post = s.but(  # XADD-17
        E=z3.If(ok, z3.Store(s.E, new, True), s.E),
        rk=z3.If(ok, z3.Store(s.rk, new, s.L), s.rk),
        un=z3.If(ok, z3.Store(s.un, s.L, new), s.un),
        L=z3.If(ok, s.L + 1, s.L),
        T=z3.If(ok, new, s.T),
        A=z3.If(ok, as_u64(s.A + 1), s.A),  # LAG-6
        F=z3.If(z3.And(ok, s.L == 0), new, s.F))
    return Step(post, (z3.And(0 <= form, form <= 2),), {"outcome": outcome, "id": new}, (ok,))


# -- XDEL, trimming, XSETID -------------------------------------------------------------------------
def xdel(s: State, x: z3.BitVecRef) -> Step:
    """XDEL of one ID (XDEL-3, XDEL-4); several IDs are several steps."""
    present = s.E[x]
    r = s.rk[x]
    i = z3.Int(fresh_name("i"))
    y = ids.fresh_id(fresh_name("y"))
    un = z3.If(present, z3.Lambda([i], z3.If(i < r, s.un[i], s.un[i + 1])), s.un)
    length = z3.If(present, s.L - 1, s.L)
    post = s.but(
        E=z3.Store(s.E, x, False), L=length, un=un,
        rk=z3.If(present, z3.Lambda([y], z3.If(ids.lt(x, y), s.rk[y] - 1, s.rk[y])), s.rk),
        D=z3.If(present, ids.maximum(s.D, x), s.D),
        F=z3.If(present, z3.If(length == 0, ZERO, z3.If(x == s.F, un[0], s.F)), s.F))
    return Step(post, (), {"deleted": present}, (present,))


def trim(s: State, removed: z3.ArithRef) -> Step:
    """Any trim (XTRIM-9, XTRIM-10, XADD-18): the ``removed`` oldest live entries go.

    MAXLEN and MINID, exact or ``~``, all remove a prefix of the live entries;
    :func:`exact_minid` and :func:`exact_maxlen` say how long that prefix is.
    """
    i = z3.Int(fresh_name("i"))
    y = ids.fresh_id(fresh_name("y"))
    length = s.L - removed
    post = s.but(
        E=z3.Lambda([y], z3.And(s.E[y], s.rk[y] >= removed)),
        un=z3.Lambda([i], s.un[i + removed]),
        rk=z3.Lambda([y], s.rk[y] - removed),
        L=length,
        F=z3.If(length == 0, ZERO, s.un[removed]))
    return Step(post, (0 <= removed, removed <= s.L), {"removed": removed})


def exact_minid(s: State, removed: z3.ArithRef, minid: z3.BitVecRef) -> z3.BoolRef:
    """``removed`` is the number of live entries below ``minid`` (XTRIM MINID =)."""
    return z3.And(z3.Or(removed == s.L, ids.le(minid, s.un[removed])),
                  z3.Or(removed == 0, ids.lt(s.un[removed - 1], minid)))


def exact_maxlen(s: State, maxlen: z3.ArithRef) -> z3.ArithRef:
    """The number of entries XTRIM MAXLEN = removes."""
    return z3.If(s.L > maxlen, s.L - maxlen, 0)


SETID_OK, SETID_BELOW_MAXDELETED, SETID_BELOW_TOP, SETID_ENTRIES_ADDED = range(4)
XSETID_ERRORS = {
    SETID_BELOW_MAXDELETED: model_streams.ERR_SETID_BELOW_MAXDELETED,
    SETID_BELOW_TOP: model_streams.ERR_SETID_BELOW_TOP,
    SETID_ENTRIES_ADDED: model_streams.ERR_SETID_ENTRIES_ADDED,
}


def xsetid(s: State, last: z3.BitVecRef, has_added: z3.BoolRef, added: z3.ArithRef,
           max_deleted: z3.BitVecRef) -> Step:
    """XSETID last [ENTRIESADDED added] [MAXDELETEDID max_deleted] (0-0: not given) (XSETID-2 .. XSETID-5)."""
    outcome = z3.If(z3.And(max_deleted != ZERO, ids.lt(last, max_deleted)), SETID_BELOW_MAXDELETED,  # XSETID-2
              z3.If(z3.And(s.L > 0, ids.lt(last, s.un[s.L - 1])), SETID_BELOW_TOP,  # XSETID-4
              z3.If(z3.And(s.L > 0, has_added, s.L > added), SETID_ENTRIES_ADDED, SETID_OK)))
    ok = outcome == SETID_OK
    post = s.but(  # XSETID-5
        T=z3.If(ok, last, s.T),
        A=z3.If(z3.And(ok, has_added), added, s.A),
        D=z3.If(z3.And(ok, max_deleted != ZERO), max_deleted, s.D))
    return Step(post, (z3.Implies(has_added, z3.And(0 <= added, added <= I64_MAX)),), {"outcome": outcome}, (ok,))


# -- XGROUP ---------------------------------------------------------------------------------
def entries_read_valid(value: z3.ArithRef) -> z3.BoolRef:
    """An ENTRIESREAD argument that parses: -1 or a non-negative 64-bit integer (XGROUP-2)."""
    return z3.Or(value == MINUS_ONE, z3.And(0 <= value, value <= I64_MAX))


def group_setid(s: State, last: z3.BitVecRef, entries_read: z3.ArithRef) -> Step:
    """XGROUP SETID (XGROUP-11); ``$`` is ``last = T``."""
    return Step(s.but(G=last, R=entries_read), (entries_read_valid(entries_read),))


def create_consumer(s: State, c: z3.BitVecRef) -> Step:
    """XGROUP CREATECONSUMER (XGROUP-13)."""
    return Step(s.but(CS=z3.Store(s.CS, c, True)), (), {"created": z3.Not(s.CS[c])})


def delete_consumer(s: State, c: z3.BitVecRef) -> Step:
    """XGROUP DELCONSUMER (XGROUP-14): its pending entries leave the group PEL too."""
    present = s.CS[c]
    y = ids.fresh_id(fresh_name("y"))
    d = z3.BitVec(fresh_name("d"), CONSUMER)
    return Step(s.but(
        P=z3.If(present, z3.Lambda([y], z3.And(s.P[y], z3.Not(s.CP[c, y]))), s.P),
        CP=z3.If(present, z3.Lambda([d, y], z3.And(s.CP[d, y], d != c)), s.CP),
        CS=z3.Store(s.CS, c, False)), cases=(present,))


# -- XACK ------------------------------------------------------------------------------------
def xack(s: State, x: z3.BitVecRef) -> Step:
    """XACK of one ID (XACK-3)."""
    pending = s.P[x]
    return Step(s.but(P=z3.Store(s.P, x, False),
                      CP=z3.If(pending, z3.Store(s.CP, s.OW[x], x, False), s.CP)),
                (), {"acked": pending}, (pending,))


# -- entries-read and lag, Redis 7.0 (LAG-1 .. LAG-4) ------------------------------------------------
def tombstone_after(s: State, a: z3.BitVecRef) -> z3.BoolRef:
    """LAG-1: ``streamRangeHasTombstones(a, +inf)``."""
    return z3.And(s.L != 0, s.D != ZERO, z3.Not(ids.lt(s.D, s.F)), ids.le(a, s.D))


INVALID = z3.IntVal(model_lag.INVALID_ENTRIES_READ)


def estimate(s: State, i: z3.BitVecRef) -> z3.ArithRef:
    """LAG-2: the entries-read of a group at ``i``, or -1."""
    behind = z3.Or(s.D == ZERO, ids.lt(s.D, s.F))
    added = as_i64(s.A)  # LAG-6
    return z3.If(s.A == 0, z3.IntVal(0),
           z3.If(z3.And(s.L == 0, ids.le(i, s.T)), added,
           z3.If(i == s.T, added,
           z3.If(ids.lt(s.T, i), INVALID,
           z3.If(z3.And(behind, ids.lt(i, s.F)), as_i64(s.A - s.L),
           z3.If(z3.And(behind, i == s.F), as_i64(s.A - s.L + 1), INVALID))))))


def lag(s: State) -> tuple[z3.BoolRef, z3.ArithRef]:
    """LAG-3: (is a number, the number) of the group's lag."""
    guess = estimate(s, s.G)
    exact = z3.And(s.R != MINUS_ONE, z3.Not(tombstone_after(s, s.G)))
    defined = z3.Or(s.A == 0, exact, guess != INVALID)
    value = z3.If(s.A == 0, z3.IntVal(0), as_i64(as_i64(s.A) - z3.If(exact, s.R, guess)))
    return defined, value


def advanced_entries_read(s: State, e: z3.BitVecRef) -> z3.ArithRef:
    """LAG-4: entries-read after a ``>`` read delivers ``e`` (tombstones looked for from ``e``: the 7.0 bug)."""
    return z3.If(z3.And(s.R != MINUS_ONE, z3.Not(tombstone_after(s, e))), as_i64(s.R + 1), estimate(s, e))


# -- XREADGROUP ----------------------------------------------------------------------------
def next_entry(s: State, after: z3.BitVecRef) -> tuple[z3.BoolRef, z3.BitVecRef, tuple[z3.BoolRef, ...]]:
    """The first live entry greater than ``after``, through the ranking (no quantifier)."""
    j = z3.Int(fresh_name("j"))
    found = z3.And(s.L > 0, ids.lt(after, s.un[s.L - 1]))
    side = (z3.Implies(found, z3.And(0 <= j, j < s.L, ids.lt(after, s.un[j]),
                                     z3.Or(j == 0, ids.le(s.un[j - 1], after)))),)
    return found, s.un[j], side


def give(s: State, x: z3.BitVecRef, c: z3.BitVecRef) -> z3.ArrayRef:
    """``pel.give``'s consumer PELs: ``x`` leaves its old owner's PEL (if pending) and joins ``c``'s."""
    released = z3.If(s.P[x], z3.Store(s.CP, s.OW[x], x, False), s.CP)
    return z3.Store(released, c, x, True)


def deliver(s: State, c: z3.BitVecRef, now: z3.ArithRef, noack: z3.BoolRef,
            entries_read: Callable[[State, z3.BitVecRef], z3.ArithRef] = advanced_entries_read) -> Step:
    """One entry of ``XREADGROUP GROUP g c ... >`` (XREADGROUP-7, -9, -10, LAG-4); none if nothing is new.

    ``entries_read`` is the LAG-4 update; the lag properties swap in the 8.0 one.
    """
    found, e, side = next_entry(s, s.G)
    track = z3.And(found, z3.Not(noack))
    post = s.but(
        CS=z3.If(found, z3.Store(s.CS, c, True), s.CS),  # XREADGROUP-9
        R=z3.If(found, entries_read(s, e), s.R),
        G=z3.If(found, e, s.G),
        P=z3.If(track, z3.Store(s.P, e, True), s.P),  # XREADGROUP-10
        DT=z3.If(track, z3.Store(s.DT, e, now), s.DT),
        N=z3.If(track, z3.Store(s.N, e, z3.BitVecVal(1, U64)), s.N),
        OW=z3.If(track, z3.Store(s.OW, e, c), s.OW),
        CP=z3.If(track, give(s, e, c), s.CP))
    return Step(post, side, {"found": found, "id": e}, (found, track))


def redeliver(s: State, c: z3.BitVecRef, after: z3.BitVecRef, now: z3.ArithRef, universe: Universe = None) -> Step:
    """One entry of a history read ``XREADGROUP GROUP g c ... <id>`` (XREADGROUP-6, -9).

    The next pending entry of ``c`` after ``after``: a live one is delivered
    again (new delivery time, count + 1), a deleted one is left alone.
    """
    found, x, side = first_from(lambda y: s.CP[c, y], after, strict=True, name="history", universe=universe)
    again = z3.And(found, s.E[x])
    post = s.but(
        CS=z3.Store(s.CS, c, True),
        DT=z3.If(again, z3.Store(s.DT, x, now), s.DT),
        N=z3.If(again, z3.Store(s.N, x, s.N[x] + 1), s.N))
    return Step(post, side, {"found": found, "id": x}, (again,))


# -- XCLAIM and XAUTOCLAIM ---------------------------------------------------------------------
def xclaim(s: State, x: z3.BitVecRef, c: z3.BitVecRef, min_idle: z3.ArithRef, now: z3.ArithRef, *,
           force: z3.BoolRef, justid: z3.BoolRef, retry: z3.BitVecRef, has_time: z3.BoolRef,
           time: z3.ArithRef, last_id: z3.BitVecRef) -> Step:
    """XCLAIM of one ID (XCLAIM-6 .. XCLAIM-14); ``retry`` < 0 is "no RETRYCOUNT", ``last_id`` 0-0 "no LASTID".

    IDLE ms is ``time = now - ms``. Several IDs are several steps (LASTID is idempotent).
    """
    threshold = z3.If(min_idle < 0, 0, min_idle)  # XCLAIM-2
    delivery_time = z3.If(z3.And(has_time, time >= 0, time <= now), time, now)  # XCLAIM-7
    live = s.E[x]
    pending = s.P[x]
    owner = s.OW[x]
    removed = z3.And(z3.Not(live), pending)  # XCLAIM-9
    too_recent = z3.And(pending, threshold != 0, now - s.DT[x] < threshold)  # XCLAIM-12
    claimed = z3.And(live, z3.Or(pending, force), z3.Not(too_recent))  # XCLAIM-10, XCLAIM-11
    count = z3.If(pending, s.N[x], z3.BitVecVal(1, U64))  # XCLAIM-10: a forced NACK starts at 1
    new_count = z3.If(retry >= 0, retry, z3.If(justid, count, count + 1))  # XCLAIM-14
    post = s.but(
        G=z3.If(ids.lt(s.G, last_id), last_id, s.G),  # XCLAIM-6
        P=z3.If(claimed, z3.Store(s.P, x, True), z3.If(removed, z3.Store(s.P, x, False), s.P)),
        CP=z3.If(claimed, give(s, x, c), z3.If(removed, z3.Store(s.CP, owner, x, False), s.CP)),
        OW=z3.If(claimed, z3.Store(s.OW, x, c), s.OW),
        N=z3.If(claimed, z3.Store(s.N, x, new_count), s.N),
        DT=z3.If(claimed, z3.Store(s.DT, x, delivery_time), s.DT),
        CS=z3.If(claimed, z3.Store(s.CS, c, True), s.CS))  # XCLAIM-13
    return Step(post, (), {"claimed": claimed, "removed": removed}, (claimed, removed))


def autoclaim_visit(s: State, position: z3.BitVecRef, c: z3.BitVecRef, min_idle: z3.ArithRef,
                    now: z3.ArithRef, justid: z3.BoolRef, universe: Universe = None) -> Step:
    """One visited PEL entry of XAUTOCLAIM, the first at or after ``position`` (XAUTOCLAIM-6 .. -9)."""
    found, p, side = first_from(lambda y: s.P[y], position, strict=False, name="visit", universe=universe)
    threshold = z3.If(min_idle < 0, 0, min_idle)  # XAUTOCLAIM-1
    deleted = z3.And(found, z3.Not(s.E[p]))  # XAUTOCLAIM-7
    skipped = z3.And(found, s.E[p], threshold != 0, now - s.DT[p] < threshold)  # XAUTOCLAIM-8
    claimed = z3.And(found, s.E[p], z3.Not(skipped))  # XAUTOCLAIM-9
    post = s.but(
        P=z3.If(deleted, z3.Store(s.P, p, False), s.P),
        CP=z3.If(deleted, z3.Store(s.CP, s.OW[p], p, False), z3.If(claimed, give(s, p, c), s.CP)),
        OW=z3.If(claimed, z3.Store(s.OW, p, c), s.OW),
        DT=z3.If(claimed, z3.Store(s.DT, p, now), s.DT),
        N=z3.If(z3.And(claimed, z3.Not(justid)), z3.Store(s.N, p, s.N[p] + 1), s.N),
        CS=z3.If(claimed, z3.Store(s.CS, c, True), s.CS))
    has_next, after = ids.successor(p)
    return Step(post, side, {"found": found, "id": p, "deleted": deleted, "claimed": claimed,
                             "has_next": has_next, "next": after}, (deleted, claimed))


def autoclaim_cursor(s: State, resume: z3.BitVecRef, resumable: z3.BoolRef,
                     universe: Universe = None) -> tuple[z3.BitVecRef, tuple[z3.BoolRef, ...]]:
    """XAUTOCLAIM-10: the first pending ID at or after where the walk stopped, else 0-0."""
    found, first, side = first_from(lambda y: s.P[y], resume, strict=False, name="cursor", universe=universe)
    return z3.If(z3.And(resumable, found), first, ZERO), side
