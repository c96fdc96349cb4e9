"""The refinement check of a compact system against the model (spec/exploration.md, EXPLORE-COMPACT-3).

From a model server in some state, the compact system, started from the
abstraction of that state, must offer exactly the steps the model's
configuration offers, and each step must give the same reply, the same
propagated commands (abstracted: times as capped ages, counts capped) and a
successor whose abstraction is the compact successor. :func:`check_state` does
this for one server; :func:`random_walks` follows random steps of the model
on a concrete server (a real :class:`ManualClock`, no abstraction but the
one checked), and :func:`check_model_states` covers every state the model's
engine reached.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from xspec.explore.abstraction import BASE_MS
from xspec.explore.compact import CompactConfig, abstract_propagation, render_reply
from xspec.explore.config import STREAM, ConfigSystem, Configuration
from xspec.explore.engine import Step
from xspec.models.clock import ManualClock
from xspec.models.server import Server

_WRAPPERS = (b"SELECT", b"MULTI", b"EXEC")


@dataclass
class Mismatch:
    where: str
    step: str
    what: str
    model: object
    compact: object

    def __str__(self) -> str:
        return f"{self.where}: {self.step}: {self.what} differs: model {self.model!r}, compact {self.compact!r}"


@dataclass
class Refinement:
    states: int = 0
    transitions: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)


def run_step(server: Server, step: Step, tick_ms: int) -> tuple[object, list[list[bytes | int]]]:
    """Run ``step`` on a model server: (reply, propagated commands without SELECT/MULTI/EXEC)."""
    if step.kind == "tick":
        clock = server.clock
        assert isinstance(clock, ManualClock)
        clock.advance(tick_ms)
        return None, []
    if step.kind == "crash":
        server.close(step.proc + 1)
        server.connect(step.proc + 1)
        return None, []
    out = server.execute(step.proc + 1, list(step.argv))
    return out.reply, [p for p in out.propagated if p[0] not in _WRAPPERS]


def model_plan(model: ConfigSystem, server: Server) -> list[Step]:
    """The steps the model's configuration offers in the state of ``server`` (no process skipped)."""
    key = model.abstraction.key(server)
    views = tuple(model.abstraction.group_view(key, STREAM, g) for g in model.config.group_names)
    return model._new_plan(views, (False,) * (len(model.names) + 1))


def check_state(compact: CompactConfig, model: ConfigSystem, server: Server, where: str,
                out: Refinement, copy_server: Callable[[Server], Server]) -> None:
    """Every step of the state ``server`` is in, on the model and on the compact system (see the module docstring)."""
    s = compact.alpha(server)
    out.states += 1
    steps = compact.plan(s)
    expected = model_plan(model, server)
    got = [compact.steps[i] for i in steps]
    if got != expected:
        out.mismatches.append(Mismatch(where, "-", "the steps offered", [x.describe(model.process_names) for x in
                                                                         expected],
                                       [x.describe(model.process_names) for x in got]))
        return
    for sid in steps:
        step = compact.steps[sid]
        after = copy_server(server)
        now: int = after.clock.now_ms()  # type: ignore[assignment]  # an instant is its int at run time
        reply, propagated = run_step(after, step, compact.tick_ms)
        token, prop, nxt = compact.apply(s, sid)
        out.transitions += 1
        label = step.describe(model.process_names)
        if (None if token is None else render_reply(compact, token)) != reply:
            out.mismatches.append(Mismatch(where, label, "reply", reply, token))
        abstracted = [abstract_propagation(compact, p, now, step) for p in propagated]
        if abstracted != prop:
            out.mismatches.append(Mismatch(where, label, "propagation", abstracted, prop))
        if compact.alpha(after) != nxt:
            out.mismatches.append(Mismatch(where, label, "next state", compact.decode(compact.alpha(after)),
                                           compact.decode(nxt)))


def check_model_states(config: Configuration, every: int = 1) -> Refinement:
    """The refinement check from every state (``every``: every so many) the model's engine reaches in ``config``,
    without symmetry reduction."""
    from xspec.explore.engine import explore

    model = ConfigSystem(config, symmetry=False)
    compact = CompactConfig(config, symmetry=False)
    result, _ = explore(model, keep_edges=False, check_invariants=False)
    keys = [state[0] for state in result.states[::every]]
    out = Refinement()
    for n, key in enumerate(keys):
        check_state(compact, model, model.abstraction.thaw(key), f"model state {n}", out,  # type: ignore[arg-type]
                    lambda srv: model.abstraction.thaw(key))  # type: ignore[arg-type]  # noqa: B023
    return out


def random_walks(config: Configuration, walks: int, length: int, seed: int = 0) -> Refinement:
    """``walks`` random walks of ``length`` steps on a concrete model server, each state checked."""
    from xspec.explore.execution import initial_server

    model = ConfigSystem(config, symmetry=False)
    compact = CompactConfig(config, symmetry=False)
    rng = random.Random(seed)
    out = Refinement()
    for w in range(walks):
        server = initial_server(model.abstraction, model.setup())
        assert server.clock.now_ms() == BASE_MS  # type: ignore[comparison-overlap]
        for n in range(length):
            check_state(compact, model, server, f"walk {w} step {n}", out, copy.deepcopy)
            steps = compact.plan(compact.alpha(server))
            if not steps:
                break
            run_step(server, compact.steps[rng.choice(steps)], compact.tick_ms)
    return out
