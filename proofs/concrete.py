"""Between the model's concrete states and the proofs' Z3 states.

:func:`encode` turns a model stream and group into a concrete :class:`State`
(the ghost ranking built from the sorted entries); :func:`differences` is the
Z3 condition "these two states differ in something a client could observe";
:func:`describe` renders a state from a Z3 model, for counterexamples.
"""

from __future__ import annotations

from collections.abc import Iterable

import z3

from xspec.models.clock import Instant
from xspec.models.state import Group, Stream
from xspec.proofs import ids
from xspec.proofs.ids import ID_SORT, U64, ZERO, id_value
from xspec.proofs.state import CONSUMER, INDEX, State, empty_group


class Consumers:
    """Consumer names as the numbers the encoding uses, stable across the states of one check."""

    def __init__(self) -> None:
        self.numbers: dict[bytes, int] = {}

    def number(self, name: bytes) -> z3.BitVecNumRef:
        n = self.numbers.setdefault(name, len(self.numbers))
        return z3.BitVecVal(n, CONSUMER)


def _stores(array: z3.ArrayRef, items: Iterable[tuple[z3.ExprRef, z3.ExprRef]]) -> z3.ArrayRef:
    for k, v in items:
        array = z3.Store(array, k, v)
    return array


def u64(v: int) -> z3.BitVecNumRef:
    return z3.BitVecVal(v & ids.U64_TOP.as_long(), U64)


def encode(stream: Stream, group: Group | None, consumers: Consumers) -> State:
    """The concrete State of ``stream`` and ``group`` (an empty group at 0-0 when None)."""
    keys = [id_value(k) for k in stream.entries]
    state = State(
        E=_stores(z3.K(ID_SORT, z3.BoolVal(False)), ((k, z3.BoolVal(True)) for k in keys)),
        L=z3.IntVal(len(keys)),
        rk=_stores(z3.K(ID_SORT, z3.IntVal(0)), ((k, z3.IntVal(n)) for n, k in enumerate(keys))),
        un=_stores(z3.K(INDEX, ZERO), ((z3.IntVal(n), k) for n, k in enumerate(keys))),
        T=id_value(stream.last_id), F=id_value(stream.first_id), D=id_value(stream.max_deleted_id),
        A=z3.IntVal(stream.entries_added), G=ZERO, R=z3.IntVal(-1), **empty_group())
    if group is None:
        return state
    pel = [(id_value(k), n) for k, n in group.pel.items()]
    cp = state.CP
    for c in group.consumers.values():
        number = consumers.number(c.name)
        for k in c.pel:
            cp = z3.Store(cp, number, id_value(k), z3.BoolVal(True))
    return state.but(
        G=id_value(group.last_id), R=z3.IntVal(group.entries_read),
        P=_stores(state.P, ((k, z3.BoolVal(True)) for k, _ in pel)),
        OW=_stores(state.OW, ((k, consumers.number(n.consumer.name)) for k, n in pel if n.consumer is not None)),
        N=_stores(state.N, ((k, u64(n.delivery_count)) for k, n in pel)),
        DT=_stores(state.DT, ((k, z3.IntVal(Instant.exact_ms(n.delivery_time))) for k, n in pel)),
        CS=_stores(state.CS, ((consumers.number(name), z3.BoolVal(True)) for name in group.consumers)),
        CP=cp)


def differences(a: State, b: State) -> list[tuple[str, z3.BoolRef]]:
    """Per field, the condition that ``a`` and ``b`` differ observably.

    NACK data counts only for pending IDs, the ranking only inside the length:
    what lies outside is never read.
    """
    y = ids.fresh_id("probe")
    i = z3.Int("probe_i")
    out = []
    for name, x in a.field_items():
        other = getattr(b, name)
        if name in ("OW", "N", "DT"):
            out.append((name, z3.Exists([y], z3.And(a.P[y], x[y] != other[y]))))
        elif name == "un":
            out.append((name, z3.Exists([i], z3.And(0 <= i, i < a.L, x[i] != other[i]))))
        elif name == "rk":
            out.append((name, z3.Exists([y], z3.And(a.E[y], x[y] != other[y]))))
        else:
            out.append((name, x != other))
    return out


# -- rendering counterexamples ----------------------------------------------------------------
def _numerals(e: z3.ExprRef, sort: z3.SortRef, found: set[int]) -> None:
    todo = [e]
    seen: set[int] = set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_bv_value(t) and t.sort() == sort:
            found.add(t.as_long())
        todo.extend(t.children())


def mentioned(m: z3.ModelRef, terms: Iterable[z3.ExprRef], sort: z3.SortRef) -> list[int]:
    """Every value of ``sort`` the model mentions for ``terms``: what a readable state must show."""
    found: set[int] = {0}
    for t in terms:
        _numerals(m.eval(t, model_completion=True), sort, found)
    return sorted(found)


def describe(m: z3.ModelRef, s: State, extra: Iterable[z3.ExprRef] = ()) -> list[str]:
    """A state under a Z3 model, as lines of text."""
    def ev(t: z3.ExprRef) -> z3.ExprRef:
        return m.eval(t, model_completion=True)

    def show(t: z3.ExprRef) -> str:
        return ids.render(ev(t).as_long())

    length = ev(s.L).as_long()
    shown = min(length, 6)
    entries = [show(s.un[k]) for k in range(shown)]
    if length > shown:
        entries[-1:] = ["...", show(s.un[length - 1])]
    extra = list(extra)
    candidates = mentioned(m, [s.P, s.E, s.T, s.G, s.D, *extra], ID_SORT)
    pel = []
    for v in candidates:
        x = id_value(ids.as_stream_id(v))
        if z3.is_true(ev(s.P[x])):
            pel.append(f"{ids.render(v)}: owner c{ev(s.OW[x]).as_long()}, count {ev(s.N[x]).as_long()}, "
                       f"time {ev(s.DT[x])}{'' if z3.is_true(ev(s.E[x])) else ' (entry deleted)'}")
    named = mentioned(m, [s.OW, s.CS, *extra], CONSUMER)
    consumers = [f"c{n}" for n in named if z3.is_true(ev(s.CS[z3.BitVecVal(n, CONSUMER)]))]
    return [
        f"entries ({length}): {', '.join(entries) or '-'}",
        f"last-generated-id {show(s.T)}, first {show(s.F)}, max-deleted {show(s.D)}, "
        f"entries-added {ev(s.A)}",
        f"group: last-delivered-id {show(s.G)}, entries-read {ev(s.R)}, "
        f"consumers {', '.join(consumers) or '-'}",
        f"pending: {'; '.join(pel) or '-'}",
    ]


def render_value(m: z3.ModelRef, t: z3.ExprRef) -> str:
    """One parameter's value, IDs as ``ms-seq``."""
    v = m.eval(t, model_completion=True)
    if z3.is_bv_value(v) and v.sort() == ID_SORT:
        return ids.render(v.as_long())
    return str(v)

