"""The symbolic state the proofs reason about: one stream and one consumer group, unbounded.

Every field is a Z3 term, so the same :class:`State` describes a symbolic
state (for proofs: every field a fresh constant) and a concrete one (for the
cross-check: every field built from a model :class:`~xspec.models.state.Stream`
by :func:`encode`). Collections are Z3 arrays, so no size is fixed:

* ``E`` the live entries (a set of IDs). ``L`` their number, kept honest by a
  ghost ranking: ``un`` lists the entries in ID order (``un[0]`` is the first,
  ``un[L-1]`` the last) and ``rk`` is its inverse. INV-2 (length = number of
  live entries) is stated as "``un``/``rk`` are an order-preserving bijection
  between ``E`` and ``[0, L)``", which needs no cardinality operator.
* ``T`` last-generated-id, ``F`` recorded-first-entry-id, ``D``
  max-deleted-entry-id, ``A`` entries-added (an unsigned 64-bit counter in Redis: an
  integer in [0, 2^64) here, its wrap written out, as the model's ``as_u64`` does).
* the group: ``G`` last-delivered-id, ``R`` entries-read (a signed 64-bit
  integer, -1 unknown, wrapped as the model's ``as_i64`` does), ``P`` the
  group PEL (set of IDs) with, per ID, owner ``OW``, delivery count ``N``
  (unsigned 64-bit) and delivery time ``DT``; ``CS`` the consumers (a set of
  consumer numbers) and ``CP`` their PELs (consumer, ID).

One group stands for all: no command reads one group while changing another,
so an invariant of a group is preserved for all groups iff for one.
Times are mathematical integers, as in the model (which may hold symbolic times).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import z3

from xspec.proofs import ids
from xspec.proofs.ids import ID_SORT, U64, ZERO
from xspec.spec.ids import I64_MAX, I64_MIN, U64_MAX

CONSUMER = z3.BitVecSort(64)  # a consumer is a number: 2^64 of them is as good as unbounded
INDEX = z3.IntSort()  # positions in the ghost ranking, and the length
TIME = z3.IntSort()
MINUS_ONE = z3.IntVal(-1)


@dataclass(frozen=True)
class State:
    E: z3.ArrayRef
    L: z3.ArithRef
    rk: z3.ArrayRef
    un: z3.ArrayRef
    T: z3.BitVecRef
    F: z3.BitVecRef
    D: z3.BitVecRef
    A: z3.ArithRef
    G: z3.BitVecRef
    R: z3.ArithRef
    P: z3.ArrayRef
    OW: z3.ArrayRef
    N: z3.ArrayRef
    DT: z3.ArrayRef
    CS: z3.ArrayRef
    CP: z3.ArrayRef

    def but(self, **changes: z3.ExprRef) -> State:
        return replace(self, **changes)

    def first(self) -> z3.BitVecRef:
        """The first live entry (meaningful when ``L > 0``)."""
        return self.un[0]

    def last_live(self) -> z3.BitVecRef:
        """``streamLastValidID``: the last live entry, 0-0 when empty."""
        return z3.If(self.L == 0, ZERO, self.un[self.L - 1])

    def field_items(self) -> list[tuple[str, z3.ExprRef]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


def fresh(prefix: str = "") -> State:
    """A state whose every field is a fresh constant: any state at all."""
    p = prefix
    return State(
        E=z3.Array(f"{p}E", ID_SORT, z3.BoolSort()), L=z3.Int(f"{p}L"),
        rk=z3.Array(f"{p}rk", ID_SORT, INDEX), un=z3.Array(f"{p}un", INDEX, ID_SORT),
        T=ids.fresh_id(f"{p}T"), F=ids.fresh_id(f"{p}F"), D=ids.fresh_id(f"{p}D"),
        A=z3.Int(f"{p}A"), G=ids.fresh_id(f"{p}G"), R=z3.Int(f"{p}R"),
        P=z3.Array(f"{p}P", ID_SORT, z3.BoolSort()), OW=z3.Array(f"{p}OW", ID_SORT, CONSUMER),
        N=z3.Array(f"{p}N", ID_SORT, U64), DT=z3.Array(f"{p}DT", ID_SORT, TIME),
        CS=z3.Array(f"{p}CS", CONSUMER, z3.BoolSort()),
        CP=z3.Array(f"{p}CP", CONSUMER, ID_SORT, z3.BoolSort()))


# -- invariants (spec/invariants.md) --------------------------------------------------------------
_x = z3.BitVec("x", ID_SORT)
_i = z3.Int("i")
_j = z3.Int("j")
_c = z3.BitVec("c", CONSUMER)


def inv_length(s: State) -> z3.BoolRef:
    """INV-2: ``L`` is the number of live entries (``un``/``rk`` order-preserving bijection)."""
    return z3.And(
        s.L >= 0,
        z3.ForAll([_x], z3.Implies(s.E[_x], z3.And(0 <= s.rk[_x], s.rk[_x] < s.L, s.un[s.rk[_x]] == _x))),
        z3.ForAll([_i], z3.Implies(z3.And(0 <= _i, _i < s.L), z3.And(s.E[s.un[_i]], s.rk[s.un[_i]] == _i))),
        z3.ForAll([_i, _j], z3.Implies(z3.And(0 <= _i, _i < _j, _j < s.L), ids.lt(s.un[_i], s.un[_j]))))


def inv_ordered_log(s: State) -> z3.BoolRef:
    """INV-1: the last live ID is at most last-generated-id (order itself is INV-2's ranking)."""
    return z3.Implies(s.L > 0, ids.le(s.un[s.L - 1], s.T))


def inv_entries_added(s: State) -> z3.BoolRef:
    """INV-3: entries-added is an unsigned 64-bit value at least the length.

    Without INV-3's exception (a wrapped counter), which the state cannot see: so
    XADD at entries-added 2^64 - 1 breaks it (IND-XADD) and nothing below the wrap does.
    """
    return z3.And(0 <= s.L, s.L <= s.A, s.A <= U64_MAX)


def inv_first_entry(s: State) -> z3.BoolRef:
    """INV-4: recorded-first-entry-id is the first live ID, or 0-0 when empty."""
    return s.F == z3.If(s.L == 0, ZERO, s.un[0])


def inv_pel_ownership(s: State) -> z3.BoolRef:
    """INV-6: every group-PEL entry has an owner in the group whose PEL holds it."""
    return z3.ForAll([_x], z3.Implies(s.P[_x], z3.And(s.CS[s.OW[_x]], s.CP[s.OW[_x], _x])))


def inv_consumer_pels(s: State) -> z3.BoolRef:
    """INV-7: a consumer PEL holds only group-PEL entries it owns (and only consumers have PELs)."""
    return z3.ForAll([_c, _x], z3.Implies(s.CP[_c, _x], z3.And(s.P[_x], s.OW[_x] == _c, s.CS[_c])))


def inv_counters(s: State) -> z3.BoolRef:
    """INV-8: entries-read is a signed 64-bit value (delivery counts are 64-bit bit-vectors: unsigned by sort).

    It is -1 or non-negative only until a counter wraps (LAG-6); ENTRIES-READ-NOWRAP proves that part.
    """
    return z3.And(I64_MIN <= s.R, s.R <= I64_MAX)


def aux_no_zero_id(s: State) -> z3.BoolRef:
    """AUX-1 (a lemma of the proofs): 0-0 is never an entry nor pending, so a 0-0 cursor means "done"."""
    return z3.And(z3.Not(s.E[ZERO]), z3.Not(s.P[ZERO]))


Invariant = tuple[str, Callable[[State], z3.BoolRef]]
INVARIANTS: list[Invariant] = [
    ("INV-1", inv_ordered_log),
    ("INV-2", inv_length),
    ("INV-3", inv_entries_added),
    ("INV-4", inv_first_entry),
    ("INV-6", inv_pel_ownership),
    ("INV-7", inv_consumer_pels),
    ("INV-8", inv_counters),
    ("AUX-1", aux_no_zero_id),
]

# The fields each invariant reads: an invariant whose fields a step leaves as they were
# (the very same Z3 term) is preserved without asking the solver.
READS: dict[str, tuple[str, ...]] = {
    "INV-1": ("L", "un", "T"),
    "INV-2": ("E", "L", "rk", "un"),
    "INV-3": ("A", "L"),
    "INV-4": ("F", "L", "un"),
    "INV-6": ("P", "OW", "CS", "CP"),
    "INV-7": ("P", "OW", "CS", "CP"),
    "INV-8": ("R",),
    "AUX-1": ("E", "P"),
}


def invariant(s: State) -> z3.BoolRef:
    return z3.And(*(f(s) for _, f in INVARIANTS))


def initial(group_last: z3.BitVecRef, entries_read: z3.BitVecRef) -> State:
    """A new, empty stream (XADD-8, XGROUP CREATE MKSTREAM) with a new group (XGROUP-10)."""
    return State(
        E=z3.K(ID_SORT, z3.BoolVal(False)), L=z3.IntVal(0),
        rk=z3.K(ID_SORT, z3.IntVal(0)), un=z3.K(INDEX, ZERO),
        T=ZERO, F=ZERO, D=ZERO, A=z3.IntVal(0), G=group_last, R=entries_read,
        **empty_group())


def empty_group() -> dict[str, z3.ExprRef]:
    """The PEL and consumer fields of a group with no consumers and nothing pending."""
    return dict(P=z3.K(ID_SORT, z3.BoolVal(False)), OW=z3.K(ID_SORT, z3.BitVecVal(0, CONSUMER)),
                N=z3.K(ID_SORT, z3.BitVecVal(0, U64)), DT=z3.K(ID_SORT, z3.IntVal(0)),
                CS=z3.K(CONSUMER, z3.BoolVal(False)),
                CP=z3.Lambda([_c, _x], z3.BoolVal(False)))
