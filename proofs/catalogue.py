"""The catalogue of properties ``xspec prove`` checks (described for people in proofs.md).

A :class:`Property` builds one or more :class:`Obligation`: hypotheses and a
goal. The goal holds when hypotheses ∧ ¬goal is unsatisfiable; otherwise the
solver's model is a counterexample, rendered by the obligation's ``show``.
A property *expected violated* documents a known defect or limit: its
violation, with a counterexample, is the expected result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from xspec.proofs import clients, ids, steps
from xspec.proofs.concrete import describe, render_value
from xspec.proofs.ids import ID_SORT, TOP, U64, ZERO
from xspec.proofs.state import (
    CONSUMER,
    INVARIANTS,
    MINUS_ONE,
    READS,
    State,
    empty_group,
    fresh,
    initial,
    inv_ordered_log,
    invariant,
)
from xspec.proofs.steps import Step
from xspec.spec.ids import I64_MAX, U64_MAX
from xspec.spec.limits import AUTOCLAIM_ATTEMPTS_FACTOR

Show = Callable[[z3.ModelRef], list[str]]


@dataclass
class Obligation:
    label: str
    hypotheses: list[z3.BoolRef]
    goal: z3.BoolRef
    show: Show
    # Shapes tried in turn when the goal fails, for a small readable counterexample (and a fast
    # search: quantified invariants are easy to satisfy in small states); then none.
    small: list[list[z3.BoolRef]] = field(default_factory=list)
    # When the hypotheses are a selection: all of them, to confirm a counterexample.
    full: list[z3.BoolRef] = field(default_factory=list)
    # Conditions to split the proof on (each branch is proved apart, with the condition fixed).
    cases: tuple[z3.BoolRef, ...] = ()


@dataclass
class Property:
    name: str
    rules: str
    claim: str
    build: Callable[[], list[Obligation]]
    expect: str = "holds"  # or "violated"
    why: str = ""  # for an expected violation: what it shows


def _params(m: z3.ModelRef, params: dict[str, z3.ExprRef]) -> str:
    return ", ".join(f"{k}={render_value(m, v)}" for k, v in params.items())


def _show_step(pre: State, command: str, params: dict[str, z3.ExprRef], post: State | None = None) -> Show:
    def show(m: z3.ModelRef) -> list[str]:
        lines = ["state: " + line for line in describe(m, pre, params.values())]
        lines.append(f"command: {command} {_params(m, params)}")
        if post is not None:
            lines += ["after: " + line for line in describe(m, post, params.values())]
        return lines
    return show


def _small(s: State) -> list[list[z3.BoolRef]]:
    nobody = [s.P == z3.K(ID_SORT, z3.BoolVal(False)), s.CS == z3.K(CONSUMER, z3.BoolVal(False))]
    return [[s.L <= 1, *nobody], [s.L <= 3, s.A < 8, s.R < 8]]


# -- fresh parameters ----------------------------------------------------------------------------
def _id(name: str) -> z3.BitVecRef:
    return ids.fresh_id(steps.fresh_name(name))


def _u64(name: str) -> z3.BitVecRef:
    return z3.BitVec(steps.fresh_name(name), U64)


def _int(name: str) -> z3.ArithRef:
    return z3.Int(steps.fresh_name(name))


def _bool(name: str) -> z3.BoolRef:
    return z3.Bool(steps.fresh_name(name))


def _consumer(name: str) -> z3.BitVecRef:
    return z3.BitVec(steps.fresh_name(name), CONSUMER)


def _xclaim(s: State, x: z3.BitVecRef | None = None, c: z3.BitVecRef | None = None,
            min_idle: z3.ArithRef | None = None, now: z3.ArithRef | None = None,
            has_time: z3.BoolRef | None = None) -> tuple[Step, dict[str, z3.ExprRef]]:
    params: dict[str, z3.ExprRef] = dict(
        x=_id("x") if x is None else x, c=_consumer("c") if c is None else c,
        min_idle=_int("min_idle") if min_idle is None else min_idle, now=_int("now") if now is None else now,
        force=_bool("force"), justid=_bool("justid"), retry=_u64("retry"),
        has_time=_bool("has_time") if has_time is None else has_time, time=_int("time"), last_id=_id("lastid"))
    p = params
    step = steps.xclaim(s, p["x"], p["c"], p["min_idle"], p["now"], force=p["force"], justid=p["justid"],
                        retry=p["retry"], has_time=p["has_time"], time=p["time"], last_id=p["last_id"])
    return step, params


# -- ID arithmetic -------------------------------------------------------------------------------
def _id_order() -> list[Obligation]:
    a, b = _id("a"), _id("b")
    return [Obligation("order", [], ids.lt(a, b) == ids.lexicographic_lt(a, b),
                       lambda m: [f"a={render_value(m, a)} b={render_value(m, b)}"])]


def _id_successor() -> list[Obligation]:
    x, y = _id("x"), _id("y")
    defined, nxt = ids.successor(x)
    goal = z3.And(defined == (x != TOP),
                  z3.Implies(defined, z3.And(ids.lt(x, nxt), nxt == x + 1,
                                             z3.Not(z3.And(ids.lt(x, y), ids.lt(y, nxt))))))
    return [Obligation("successor", [], goal, lambda m: [f"x={render_value(m, x)} y={render_value(m, y)}"])]


def _id_predecessor() -> list[Obligation]:
    x, y = _id("x"), _id("y")
    defined, before = ids.predecessor(x)
    goal = z3.And(defined == (x != ZERO),
                  z3.Implies(defined, z3.And(ids.lt(before, x), before == x - 1,
                                             z3.Not(z3.And(ids.lt(before, y), ids.lt(y, x))))))
    return [Obligation("predecessor", [], goal, lambda m: [f"x={render_value(m, x)} y={render_value(m, y)}"])]


def _exclusive_start() -> list[Obligation]:
    x, y = _id("x"), _id("y")
    valid, start = ids.interval_start(x, z3.BoolVal(True))
    goal = z3.And(valid == (x != TOP), z3.Implies(valid, ids.le(start, y) == ids.lt(x, y)))
    return [Obligation("(x start", [], goal, lambda m: [f"x={render_value(m, x)} y={render_value(m, y)}"])]


def _exclusive_end() -> list[Obligation]:
    x, y = _id("x"), _id("y")
    valid, end = ids.interval_end(x, z3.BoolVal(True))
    goal = z3.And(valid == (x != ZERO), z3.Implies(valid, ids.le(y, end) == ids.lt(y, x)))
    return [Obligation("(x end", [], goal, lambda m: [f"x={render_value(m, x)} y={render_value(m, y)}"])]


def _incomplete() -> list[Obligation]:
    ms, y = z3.BitVec(steps.fresh_name("ms"), U64), _id("y")
    low, high = ids.incomplete(ms, 0), ids.incomplete(ms, U64_MAX)
    goal = z3.And(ids.le(low, y), ids.le(y, high)) == (ids.ms(y) == ms)
    return [Obligation("ms..ms", [], goal, lambda m: [f"ms={m.eval(ms)} y={render_value(m, y)}"])]


def _incomplete_exclusive() -> list[Obligation]:
    ms, y = z3.BitVec(steps.fresh_name("ms"), U64), _id("y")
    s_valid, start = ids.interval_start(ids.incomplete(ms, 0), z3.BoolVal(True))
    e_valid, end = ids.interval_end(ids.incomplete(ms, U64_MAX), z3.BoolVal(True))
    goal = z3.And(s_valid, e_valid,
                  ids.le(start, y) == z3.And(ids.le(ids.incomplete(ms, 0), y), y != ids.incomplete(ms, 0)),
                  ids.le(y, end) == z3.And(ids.le(y, ids.incomplete(ms, U64_MAX)), y != ids.incomplete(ms, U64_MAX)))
    return [Obligation("(ms bounds", [], goal, lambda m: [f"ms={m.eval(ms)} y={render_value(m, y)}"])]


# -- XADD ---------------------------------------------------------------------------------------------
def _xadd(form: int | None = None) -> tuple[State, Step, dict[str, z3.ExprRef]]:
    s = fresh(steps.fresh_name("s") + ".")
    params: dict[str, z3.ExprRef] = dict(
        form=z3.IntVal(form) if form is not None else _int("form"), id=_id("id"),
        now=_u64("now"), errno_edom=_bool("edom"))
    step = steps.xadd(s, params["form"], params["id"], params["now"], params["errno_edom"])
    return s, step, params


def _xadd_obligation(label: str, form: int | None, goal: Callable[[State, Step, dict], z3.BoolRef]) -> Obligation:
    s, step, params = _xadd(form)
    show = _show_step(s, "XADD", params)

    def shown(m: z3.ModelRef) -> list[str]:
        return show(m) + [f"outcome {m.eval(step.out['outcome'])}, id {render_value(m, step.out['id'])}"]
    return Obligation(label, [*step.side, inv_ordered_log(s)], goal(s, step, params), shown)


def _ok(step: Step) -> z3.BoolRef:
    return step.out["outcome"] == steps.OK


def _xadd_monotonic() -> list[Obligation]:
    return [_xadd_obligation(f"form {f}", f, lambda s, st, p: z3.Implies(_ok(st), ids.lt(s.T, st.out["id"])))
            for f in (steps.AUTO, steps.EXPLICIT, steps.MS_STAR)]


def _xadd_auto_total() -> list[Obligation]:
    return [_xadd_obligation("*", steps.AUTO, lambda s, st, p: z3.And(
        _ok(st) == (s.T != TOP), (st.out["outcome"] == steps.ERR_EXHAUSTED) == (s.T == TOP)))]


def _xadd_auto_clock() -> list[Obligation]:
    def goal(s: State, st: Step, p: dict) -> z3.BoolRef:
        ahead = z3.UGT(p["now"], ids.ms(s.T))
        return z3.Implies(_ok(st), z3.If(ahead, st.out["id"] == ids.make(p["now"], z3.BitVecVal(0, U64)),
                                          st.out["id"] == s.T + 1))
    return [_xadd_obligation("*", steps.AUTO, goal)]


def _xadd_explicit() -> list[Obligation]:
    def goal(s: State, st: Step, p: dict) -> z3.BoolRef:
        o = st.out["outcome"]
        return z3.And((o == steps.ERR_ZERO) == (p["id"] == ZERO),
                      (o == steps.ERR_EXHAUSTED) == z3.And(p["id"] != ZERO, s.T == TOP),
                      (o == steps.ERR_NOT_ABOVE) == z3.And(p["id"] != ZERO, s.T != TOP, ids.le(p["id"], s.T)),
                      _ok(st) == z3.And(p["id"] != ZERO, ids.lt(s.T, p["id"])))
    return [_xadd_obligation("ms-seq", steps.EXPLICIT, goal)]


def _xadd_ms_star() -> list[Obligation]:
    def goal(s: State, st: Step, p: dict) -> z3.BoolRef:
        o, ms = st.out["outcome"], ids.ms(p["id"])
        exhausted_seq = z3.And(s.T != TOP, ms == ids.ms(s.T), ids.seq(s.T) == ids.U64_TOP)
        return z3.And(
            (o == steps.ERR_EXHAUSTED) == (s.T == TOP),
            z3.Implies(exhausted_seq, o == z3.If(p["errno_edom"], steps.ERR_NOT_ABOVE, steps.ERR_TOO_LARGE)),
            _ok(st) == z3.And(s.T != TOP, z3.UGE(ms, ids.ms(s.T)), z3.Not(exhausted_seq)),
            z3.Implies(_ok(st), st.out["id"] == z3.If(ms == ids.ms(s.T), s.T + 1, ids.make(ms, z3.BitVecVal(0, U64)))))
    return [_xadd_obligation("ms-*", steps.MS_STAR, goal)]


def _xadd_never_zero() -> list[Obligation]:
    return [_xadd_obligation("any form", None, lambda s, st, p: z3.Implies(_ok(st), st.out["id"] != ZERO))]


# -- inductive invariants ---------------------------------------------------------------------------
def _inductive(make: Callable[[State], tuple[Step, dict[str, z3.ExprRef]]], command: str,
               extra: Callable[[State], list[z3.BoolRef]] = lambda s: []) -> Callable[[], list[Obligation]]:
    """Inv ∧ step ⇒ Inv′, one obligation per invariant the step may change."""
    def build() -> list[Obligation]:
        s = fresh(steps.fresh_name("s") + ".")
        step, params = make(s)
        common = [*step.side, *extra(s)]
        out = []
        for name, inv in INVARIANTS:
            if all(z3.eq(getattr(s, f), getattr(step.post, f)) for f in READS[name]):
                continue  # the step leaves everything this invariant reads as it was
            out.append(Obligation(name, [*_relevant(name, s), *common], inv(step.post),
                                  _show_step(s, command, params, step.post), _small(s),
                                  full=[invariant(s), *common], cases=step.cases))
        return out
    return build


# The invariants a proof of each invariant assumes first. Fewer quantifiers make proofs fast;
# a counterexample found under these is checked again under all of them (``Obligation.full``).
NEEDS: dict[str, tuple[str, ...]] = {
    "INV-1": ("INV-1", "INV-2"),
    "INV-2": ("INV-1", "INV-2"),
    "INV-3": ("INV-2", "INV-3"),
    "INV-4": ("INV-1", "INV-2", "INV-4"),
    "INV-6": ("INV-6", "INV-7"),
    "INV-7": ("INV-6", "INV-7"),
    "INV-8": ("INV-3", "INV-8"),
    "AUX-1": ("AUX-1", "INV-1"),
}


def _relevant(name: str, s: State) -> list[z3.BoolRef]:
    return [inv(s) for other, inv in INVARIANTS if other in NEEDS[name]]


def _ind_xadd(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(form=_int("form"), id=_id("id"), now=_u64("now"), errno_edom=_bool("edom"))
    return steps.xadd(s, p["form"], p["id"], p["now"], p["errno_edom"]), p


def _ind_xdel(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(id=_id("id"))
    return steps.xdel(s, p["id"]), p


def _ind_trim(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(removed=_int("removed"))
    return steps.trim(s, p["removed"]), p


def _ind_xsetid(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(last=_id("last"), has_added=_bool("has_added"), added=_int("added"),
                                    max_deleted=_id("maxdeleted"))
    return steps.xsetid(s, p["last"], p["has_added"], p["added"], p["max_deleted"]), p


def _ind_group_create(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(id=_id("id"), entries_read=_int("entries_read"))
    return Step(s.but(G=p["id"], R=p["entries_read"], **empty_group()),
                (steps.entries_read_valid(p["entries_read"]),)), p


def _ind_group_setid(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(id=_id("id"), entries_read=_int("entries_read"))
    return steps.group_setid(s, p["id"], p["entries_read"]), p


def _ind_create_consumer(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(c=_consumer("c"))
    return steps.create_consumer(s, p["c"]), p


def _ind_delete_consumer(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(c=_consumer("c"))
    return steps.delete_consumer(s, p["c"]), p


def _ind_deliver(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(c=_consumer("c"), now=_int("now"), noack=_bool("noack"))
    return steps.deliver(s, p["c"], p["now"], p["noack"]), p


def _ind_redeliver(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(c=_consumer("c"), after=_id("after"), now=_int("now"))
    return steps.redeliver(s, p["c"], p["after"], p["now"]), p


def _ind_xack(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(id=_id("id"))
    return steps.xack(s, p["id"]), p


def _ind_autoclaim(s: State) -> tuple[Step, dict[str, z3.ExprRef]]:
    p: dict[str, z3.ExprRef] = dict(position=_id("position"), c=_consumer("c"), min_idle=_int("min_idle"),
                                    now=_int("now"), justid=_bool("justid"))
    return steps.autoclaim_visit(s, p["position"], p["c"], p["min_idle"], p["now"], p["justid"]), p


def _initial() -> list[Obligation]:
    g, r = _id("id"), _int("entries_read")
    s = initial(g, r)
    return [Obligation(name, [steps.entries_read_valid(r)], inv(s), lambda m: [f"group at {render_value(m, g)}"])
            for name, inv in INVARIANTS]


def _client_step(others: bool) -> Callable[[], list[Obligation]]:
    """INV-10 and INV-11 across one command of the client, or one action of another client."""
    def build() -> list[Obligation]:
        s = clients.fresh(steps.fresh_name("client") + ".")
        kind, rejected, blocks = _int("kind"), _bool("rejected"), _bool("blocks")
        touched, woken = _bool("touched"), _bool("woken")
        if others:
            post, hyps = clients.others(s, touched, woken), []
            params: dict[str, z3.ExprRef] = dict(touched=touched, woken=woken)
        else:  # a blocked client sends nothing; the kinds are those of clients.py
            post, hyps = clients.command(s, kind, rejected, blocks), [z3.Not(s.B), 0 <= kind, kind <= clients.OTHER]
            params = dict(kind=kind, rejected=rejected, blocks=blocks)
        invariant_now = [inv(s) for _, inv in clients.CLIENT_INVARIANTS]

        def show(m: z3.ModelRef) -> list[str]:
            return [f"client {s} = {[m.eval(f, model_completion=True) for f in (s.M, s.Q, s.X, s.W, s.B)]}",
                    f"step: {_params(m, params)}"]
        return [Obligation(name, [*invariant_now, *hyps], inv(post), show) for name, inv in clients.CLIENT_INVARIANTS]
    return build


# -- claiming -----------------------------------------------------------------------------------------
def _two_claims(same_time_option: bool, zero_idle: bool) -> Callable[[], list[Obligation]]:
    """Two XCLAIMs of one entry, same min-idle, same clock reading, by two consumers: at most one succeeds."""
    def build() -> list[Obligation]:
        s = fresh(steps.fresh_name("s") + ".")
        x, now, min_idle = _id("x"), _int("now"), _int("min_idle")
        has_time = None if same_time_option else z3.BoolVal(False)
        first, p1 = _xclaim(s, x=x, now=now, min_idle=min_idle, has_time=has_time)
        second, p2 = _xclaim(first.post, x=x, now=now, min_idle=min_idle, has_time=has_time)
        hyps = [invariant(s), min_idle == 0 if zero_idle else min_idle > 0]

        def show(m: z3.ModelRef) -> list[str]:
            return (["state: " + line for line in describe(m, s, [x])]
                    + [f"first: XCLAIM {_params(m, p1)}", f"second: XCLAIM {_params(m, p2)}"])
        goal = z3.Not(z3.And(first.out["claimed"], second.out["claimed"]))
        return [Obligation("both claim", hyps, goal, show, _small(s))]
    return build


def _claim_counts() -> list[Obligation]:
    s = fresh(steps.fresh_name("s") + ".")
    step, p = _xclaim(s)
    x = p["x"]
    new, old = step.post.N[x], s.N[x]
    goal = z3.Implies(step.out["claimed"], z3.And(
        z3.Implies(p["retry"] >= 0, new == p["retry"]),
        z3.Implies(z3.And(p["retry"] < 0, p["justid"]), new == z3.If(s.P[x], old, 1)),
        z3.Implies(z3.And(p["retry"] < 0, z3.Not(p["justid"])), new == z3.If(s.P[x], old + 1, 2))))
    return [Obligation("XCLAIM", [invariant(s)], goal, _show_step(s, "XCLAIM", p, step.post))]


def _autoclaim_counts() -> list[Obligation]:
    s = fresh(steps.fresh_name("s") + ".")
    step, p = _ind_autoclaim(s)
    x = step.out["id"]
    goal = z3.Implies(step.out["claimed"], step.post.N[x] == z3.If(p["justid"], s.N[x], s.N[x] + 1))
    return [Obligation("XAUTOCLAIM", [invariant(s), *step.side], goal, _show_step(s, "XAUTOCLAIM", p, step.post))]


def _deliver_counts() -> list[Obligation]:
    s = fresh(steps.fresh_name("s") + ".")
    step, p = _ind_deliver(s)
    e = step.out["id"]
    fresh_read = z3.Implies(z3.And(step.out["found"], z3.Not(p["noack"])),
                            z3.And(step.post.N[e] == 1, step.post.OW[e] == p["c"], step.post.CP[p["c"], e]))
    history, hp = _ind_redeliver(s)
    x = history.out["id"]
    again = z3.Implies(z3.And(history.out["found"], s.E[x]), history.post.N[x] == s.N[x] + 1)
    return [Obligation(">", [invariant(s), *step.side], fresh_read, _show_step(s, "XREADGROUP >", p, step.post)),
            Obligation("history", [invariant(s), *history.side], again,
                       _show_step(s, "XREADGROUP history", hp, history.post))]


def _autoclaim_advances() -> list[Obligation]:
    s = fresh(steps.fresh_name("s") + ".")
    step, p = _ind_autoclaim(s)
    q = step.out["id"]
    y = _id("y")
    goal = z3.Implies(step.out["found"], z3.And(
        s.P[q], ids.le(p["position"], q),
        z3.Implies(step.out["has_next"], ids.lt(q, step.out["next"])),
        z3.Implies(step.post.P[y], s.P[y])))  # the walk never adds to the PEL
    return [Obligation("visit", [invariant(s), *step.side], goal, _show_step(s, "XAUTOCLAIM visit", p, step.post))]


def _autoclaim_cursor() -> list[Obligation]:
    """One visit from ``start``, then the cursor: 0-0 (done) or a pending ID beyond ``start``.

    Longer walks chain visits whose positions strictly increase (XAUTOCLAIM-ADVANCES).
    """
    s = fresh(steps.fresh_name("s") + ".")
    step, p = _ind_autoclaim(s)
    resumable = z3.And(step.out["found"], step.out["has_next"])
    cursor, side = steps.autoclaim_cursor(step.post, step.out["next"], resumable)
    y = _id("y")
    start = p["position"]
    advances = z3.Implies(cursor != ZERO, z3.And(ids.lt(start, cursor), step.post.P[cursor]))
    covers = z3.Implies(z3.And(s.P[y], ids.le(start, y), z3.Or(cursor == ZERO, ids.lt(y, cursor)),
                               z3.Or(resumable, z3.Not(step.out["found"]))),
                        z3.Or(y == step.out["id"], z3.Not(resumable)))
    hyps = [invariant(s), *step.side, *side]
    show = _show_step(s, "XAUTOCLAIM", p, step.post)
    return [Obligation("advances", hyps, advances, show),
            Obligation("covers", hyps, z3.Implies(step.out["found"], covers), show),
            Obligation("done only at the end", hyps,
                       z3.Implies(cursor == ZERO, z3.ForAll([y], z3.Implies(
                           z3.And(step.post.P[y], ids.le(start, y)), ids.le(y, step.out["id"])))), show)]


# -- entries-read and lag -----------------------------------------------------------------------------
HISTORY = 4  # the lag properties consider streams of up to this many entries ever added (IDs unbounded)


class _History:
    """A stream built by at most HISTORY XADDs and any XDELs, with its ghost history.

    The true entries-read of a group at ``g`` is the number of entries ever
    added up to ``g``; the true lag is the number of live entries after ``g``
    (what ``>`` reads would still deliver). Every field of the state is
    derived from the history the way the model derives it (XADD-17, XDEL-3,
    XDEL-4), so the properties need no quantifier and are exact up to HISTORY.
    Only XADD and XDEL ran (no trim, XSETID or ENTRIESREAD), so every removed
    entry is a deletion.
    """

    def __init__(self) -> None:
        self.count = _int("added")
        self.ids = [_id(f"h{k}") for k in range(HISTORY)]
        self.live = [_bool(f"live{k}") for k in range(HISTORY)]
        here = [z3.And(k < self.count, self.live[k]) for k in range(HISTORY)]
        gone = [z3.And(k < self.count, z3.Not(self.live[k])) for k in range(HISTORY)]
        rank = [z3.Sum([z3.If(here[m], 1, 0) for m in range(k)] or [z3.IntVal(0)]) for k in range(HISTORY)]
        y, i = _id("y"), _int("i")
        last, first, max_deleted = ZERO, ZERO, ZERO
        rk: z3.ArithRef = z3.IntVal(0)
        un: z3.BitVecRef = ZERO
        for k in reversed(range(HISTORY)):
            first = z3.If(here[k], self.ids[k], first)
            rk = z3.If(y == self.ids[k], rank[k], rk)
            un = z3.If(z3.And(here[k], i == rank[k]), self.ids[k], un)
        for k in range(HISTORY):
            last = z3.If(k < self.count, self.ids[k], last)
            max_deleted = z3.If(gone[k], self.ids[k], max_deleted)
        self.here = here
        self.s = State(
            E=z3.Lambda([y], z3.Or(*(z3.And(here[k], y == self.ids[k]) for k in range(HISTORY)))),
            L=z3.Sum([z3.If(h, 1, 0) for h in here]), rk=z3.Lambda([y], rk), un=z3.Lambda([i], un),
            T=last, F=first, D=max_deleted, A=self.count, G=_id("g"), R=_int("entries_read"), **empty_group())

    def facts(self) -> list[z3.BoolRef]:
        ordered = [z3.Implies(k + 1 < self.count, ids.lt(self.ids[k], self.ids[k + 1])) for k in range(HISTORY - 1)]
        # Only the order of IDs matters to these properties (no ID arithmetic), and any order of
        # HISTORY IDs and a group position fits in the IDs up to 0-(2 HISTORY): searching there
        # loses no generality and keeps the bit-vectors small.
        small = [ids.le(v, ids.make(z3.BitVecVal(0, U64), z3.BitVecVal(2 * HISTORY, U64)))
                 for v in (*self.ids, self.s.G)]
        return [0 <= self.count, self.count <= HISTORY, self.ids[0] != ZERO, *ordered, *small,
                ids.le(self.s.G, self.s.T)]

    def read_upto(self, g: z3.BitVecRef) -> z3.ArithRef:
        return z3.Sum([z3.If(z3.And(k < self.count, ids.le(self.ids[k], g)), 1, 0) for k in range(HISTORY)])

    def live_after(self, g: z3.BitVecRef) -> z3.ArithRef:
        return z3.Sum([z3.If(z3.And(self.here[k], ids.lt(g, self.ids[k])), 1, 0) for k in range(HISTORY)])

    def show(self, m: z3.ModelRef) -> str:
        n = m.eval(self.count).as_long()
        return "history: " + ", ".join(
            render_value(m, self.ids[k]) + ("" if z3.is_true(m.eval(self.live[k], model_completion=True))
                                            else " (deleted)") for k in range(n))


def _exact_or_unknown(h: _History, s: State) -> z3.BoolRef:
    return z3.Or(s.R == MINUS_ONE, s.R == h.read_upto(s.G))


def tombstone_after_80(s: State, a: z3.BitVecRef) -> z3.BoolRef:
    """8.0's tombstone test (reference §5): the ``F > D`` shortcut is gone."""
    return z3.And(s.L != 0, s.D != ZERO, ids.le(a, s.D))


def advanced_entries_read_80(s: State, e: z3.BitVecRef) -> z3.ArithRef:
    """8.0's LAG-4 (reference §5): tombstones are looked for from the group's old position."""
    return z3.If(z3.And(s.R != MINUS_ONE, z3.Not(tombstone_after_80(s, s.G))), steps.as_i64(s.R + 1),
                 steps.estimate(s, e))


def lag_80(s: State) -> tuple[z3.BoolRef, z3.ArithRef]:
    """8.0's lag (reference §5): 0 for an empty stream, the length for a group before every entry."""
    exact = z3.And(s.R != MINUS_ONE, z3.Not(tombstone_after_80(s, s.G)))
    guess = steps.estimate(s, s.G)
    before_all = z3.And(ids.lt(s.G, s.F), ids.lt(s.D, s.F))
    defined = z3.Or(s.A == 0, s.L == 0, before_all, exact, guess != steps.INVALID)
    value = z3.If(z3.Or(s.A == 0, s.L == 0), z3.IntVal(0),
                  z3.If(before_all, s.L, steps.as_i64(steps.as_i64(s.A) - z3.If(exact, s.R, guess))))
    return defined, value


def _entries_read_kept(update: Callable[[State, z3.BitVecRef], z3.ArithRef],
                       skipped_tombstone: bool) -> Callable[[], list[Obligation]]:
    def build() -> list[Obligation]:
        h = _History()
        s = h.s
        p: dict[str, z3.ExprRef] = dict(c=_consumer("c"), now=_int("now"), noack=_bool("noack"))
        step = steps.deliver(s, p["c"], p["now"], p["noack"], entries_read=update)
        hyps = [*h.facts(), *step.side, _exact_or_unknown(h, s)]
        if skipped_tombstone:  # steer the counterexample to the documented case (tombstone not before F)
            hyps.append(ids.le(s.F, s.D))
        base = _show_step(s, "XREADGROUP > (one entry)", p, step.post)

        def show(m: z3.ModelRef) -> list[str]:
            return [h.show(m), *base(m), f"true entries-read after: {m.eval(h.read_upto(step.post.G))}"]
        tombstone = tombstone_after_80(s, s.G) if update is advanced_entries_read_80 else \
            steps.tombstone_after(s, step.out["id"])
        return [Obligation("entries-read", hyps, _exact_or_unknown(h, step.post), show,
                           cases=(step.out["found"], tombstone, s.R == MINUS_ONE))]
    return build


def _lag_exact(lag: Callable[[State], tuple[z3.BoolRef, z3.ArithRef]]) -> Callable[[], list[Obligation]]:
    def build() -> list[Obligation]:
        h = _History()
        s = h.s
        defined, value = lag(s)
        true_lag = h.live_after(s.G)

        def show(m: z3.ModelRef) -> list[str]:
            return [h.show(m), *("state: " + line for line in describe(m, s)),
                    f"lag reported {m.eval(value)}, entries still to deliver {m.eval(true_lag)}"]
        return [Obligation("lag", [*h.facts(), _exact_or_unknown(h, s)],
                           z3.Implies(defined, value == true_lag), show)]
    return build


def _lag_defined() -> list[Obligation]:
    s = fresh(steps.fresh_name("s") + ".")
    defined, _ = steps.lag(s)
    return [Obligation("lag", [invariant(s)], z3.Implies(z3.And(s.D == ZERO, s.R != MINUS_ONE), defined),
                       lambda m: describe(m, s))]


# -- the catalogue ------------------------------------------------------------------------------------
def _nowrap_added(s: State) -> list[z3.BoolRef]:
    return [s.A != U64_MAX]


def _entries_read_nowrap() -> list[Obligation]:
    """A '>' delivery from entries-read -1 or >= 0 keeps it so, unless a counter wraps (INV-8, LAG-6)."""
    s = fresh(steps.fresh_name("s") + ".")
    step, params = _ind_deliver(s)

    def sign(r: z3.ArithRef) -> z3.BoolRef:
        return z3.Or(r == MINUS_ONE, r >= 0)

    nowrap = [s.R != I64_MAX, s.A <= I64_MAX]
    return [Obligation("INV-8", [inv(s) for name, inv in INVARIANTS if name in ("INV-3", "INV-8")]
                       + [*step.side, *nowrap, sign(s.R)], sign(step.post.R),
                       _show_step(s, "XREADGROUP >", params, step.post), _small(s),
                       full=[invariant(s), *step.side, *nowrap, sign(s.R)], cases=step.cases)]


def _ind(name: str, rules: str, make: Callable[[State], tuple[Step, dict[str, z3.ExprRef]]], command: str, *,
         expect: str = "holds", why: str = "", extra: Callable[[State], list[z3.BoolRef]] = lambda s: []) -> Property:
    return Property(name, rules, f"every invariant is preserved by {command}", _inductive(make, command, extra),
                    expect, why)


PROPERTIES: list[Property] = [
    Property("ID-ORDER", "ID-9", "128-bit order of ms‖seq is streamCompareID's order", _id_order),
    Property("ID-SUCC", "ID-9", "successor: none exactly at the maximum, else the next ID", _id_successor),
    Property("ID-PRED", "ID-9", "predecessor: none exactly at 0-0, else the previous ID", _id_predecessor),
    Property("RANGE-EXCL-START", "ID-8, XRANGE-1", "'(x' start: error exactly at the maximum, else IDs > x",
             _exclusive_start),
    Property("RANGE-EXCL-END", "ID-8, XRANGE-2", "'(x' end: error exactly at 0-0, else IDs < x", _exclusive_end),
    Property("RANGE-INCOMPLETE", "ID-5, XRANGE-1, XRANGE-2", "'ms' .. 'ms' covers exactly the IDs of that ms",
             _incomplete),
    Property("RANGE-INCOMPLETE-EXCL", "ID-5, ID-8", "'(ms' excludes only ms-0 as start, ms-MAX as end",
             _incomplete_exclusive),
    Property("XADD-MONOTONIC", "XADD-11..15", "a successful XADD's ID is above last-generated-id, every form",
             _xadd_monotonic),
    Property("XADD-AUTO-TOTAL", "XADD-9, XADD-11", "'*' fails exactly when last-generated-id is the maximum",
             _xadd_auto_total),
    Property("XADD-AUTO-CLOCK", "XADD-11", "'*' takes now-0 when the clock is ahead, else the successor "
             "(frozen, backwards, seq overflow)", _xadd_auto_clock),
    Property("XADD-EXPLICIT", "XADD-6, XADD-9, XADD-15", "explicit ID: each error fires exactly at its boundary",
             _xadd_explicit),
    Property("XADD-MS-STAR", "XADD-9, XADD-13, XADD-14", "ms-*: succeeds exactly when ms ≥ top ms and the "
             "sequence is not exhausted; errno words the error", _xadd_ms_star),
    Property("XADD-NEVER-ZERO", "XADD-6..13", "no XADD ever produces 0-0", _xadd_never_zero),
    Property("IND-INIT", "XADD-8, XGROUP-10", "a new stream with a new group satisfies every invariant", _initial),
    _ind("IND-XADD", "XADD-17", _ind_xadd, "XADD", expect="violated",
         why="INV-3 at entries-added 2^64-1: the counter wraps to 0 (LAG-6), the exception INV-3 states and "
             "the state cannot show; unreachable in practice (2^63 XADDs after the largest XSETID ENTRIESADDED)"),
    _ind("IND-XADD-NOWRAP", "XADD-17", _ind_xadd, "XADD below the entries-added wrap", extra=_nowrap_added),
    _ind("IND-XDEL", "XDEL-3, XDEL-4", _ind_xdel, "XDEL"),
    _ind("IND-TRIM", "XTRIM-9, XTRIM-10, XADD-18", _ind_trim, "XTRIM/XADD trimming"),
    _ind("IND-XSETID", "XSETID-4, XSETID-5", _ind_xsetid, "XSETID"),
    _ind("IND-XGROUP-CREATE", "XGROUP-10", _ind_group_create, "XGROUP CREATE"),
    _ind("IND-XGROUP-SETID", "XGROUP-11", _ind_group_setid, "XGROUP SETID"),
    _ind("IND-CREATECONSUMER", "XGROUP-13", _ind_create_consumer, "XGROUP CREATECONSUMER"),
    _ind("IND-DELCONSUMER", "XGROUP-14", _ind_delete_consumer, "XGROUP DELCONSUMER"),
    _ind("IND-READ-NEW", "XREADGROUP-7, XREADGROUP-10, LAG-4", _ind_deliver, "XREADGROUP >"),
    Property("ENTRIES-READ-NOWRAP", "XREADGROUP-10, LAG-4, LAG-6", "a '>' delivery keeps entries-read -1 or "
             "non-negative when it is below 2^63-1 and entries-added below 2^63", _entries_read_nowrap),
    _ind("IND-READ-HISTORY", "XREADGROUP-6", _ind_redeliver, "XREADGROUP history"),
    _ind("IND-XACK", "XACK-3", _ind_xack, "XACK"),
    _ind("IND-XCLAIM", "XCLAIM-6..14", _xclaim, "XCLAIM"),
    _ind("IND-XAUTOCLAIM", "XAUTOCLAIM-6..9", _ind_autoclaim, "XAUTOCLAIM"),
    Property("IND-CLIENT-COMMAND", "DISPATCH-1..5, EXEC-*, CONN-4", "INV-10 and INV-11 are "
             "preserved by every command a client sends", _client_step(False)),
    Property("IND-CLIENT-OTHERS", "WATCH-3, BLOCK-2, BLOCK-8", "INV-10 and INV-11 are preserved by what other "
             "clients do to it (touch a watched key, serve or time out its blocked read)", _client_step(True)),
    Property("XCLAIM-EXCLUSIVE", "XCLAIM-7, XCLAIM-12", "two XCLAIMs of one entry, same min-idle > 0, same "
             "time, no IDLE/TIME: not both succeed", _two_claims(False, False)),
    Property("XCLAIM-EXCLUSIVE-IDLE", "XCLAIM-5, XCLAIM-7", "... with IDLE/TIME allowed", _two_claims(True, False),
             expect="violated", why="IDLE/TIME back-dates the delivery, so the second claim finds it idle enough"),
    Property("XCLAIM-EXCLUSIVE-ZERO", "XCLAIM-12", "... with min-idle 0", _two_claims(False, True),
             expect="violated", why="min-idle 0 disables the idle check: every claim succeeds"),
    Property("CLAIM-COUNTS", "XCLAIM-10, XCLAIM-14", "RETRYCOUNT sets, JUSTID keeps, else +1 (FORCE: 1 or 2)",
             _claim_counts),
    Property("AUTOCLAIM-COUNTS", "XAUTOCLAIM-9", "XAUTOCLAIM adds 1 to the count unless JUSTID", _autoclaim_counts),
    Property("READ-COUNTS", "XREADGROUP-6, XREADGROUP-10", "'>' sets count 1 and the reader as owner; history +1",
             _deliver_counts),
    Property("AUTOCLAIM-ADVANCES", "XAUTOCLAIM-6", "each visit is a pending entry at or after the position; "
             "the position strictly grows; the PEL never grows", _autoclaim_advances),
    Property("AUTOCLAIM-CURSOR", "XAUTOCLAIM-10, AUX-1", "the cursor is 0-0 only at the end, else a pending ID "
             f"beyond start; all pending IDs before it were visited (a scan of ≥1 visit per call, budget "
             f"{AUTOCLAIM_ATTEMPTS_FACTOR}×COUNT, terminates)", _autoclaim_cursor),
    Property("LAG-DEFINED", "LAG-1, LAG-3", "with entries-read known and no deletion ever, lag is a number",
             _lag_defined),
    Property("LAG-READ-REDIS70", "LAG-4", "a '>' delivery keeps entries-read exact (or unknown), 7.0 rule",
             _entries_read_kept(steps.advanced_entries_read, True), expect="violated",
             why="the 7.0 bug: the tombstone test starts at the delivered entry, so a deletion the group "
                 "skipped over is missed and entries-read falls behind"),
    Property("LAG-READ-REDIS80", "LAG-4 (8.0)", "the same with 8.0's rule (reference §5), deletions only",
             _entries_read_kept(advanced_entries_read_80, False)),
    Property("LAG-EXACT-REDIS70", "LAG-1, LAG-3", "when the 7.0 lag is a number it counts the entries still to "
             "deliver", _lag_exact(steps.lag), expect="violated",
             why="the F > D shortcut: deleted entries between the group and the first entry are counted"),
    Property("LAG-EXACT-REDIS80", "LAG-3 (8.0)", "the same with 8.0's lag (reference §5), deletions only",
             _lag_exact(lag_80)),
]
