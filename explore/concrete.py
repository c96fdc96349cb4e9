"""Making an abstract path concrete: a virtual-clock trace of what the real model replies.

A path found by the explorer is a list of steps between relabelled abstract
states. :func:`concretize` replays it from the empty server on one real
:class:`~xspec.models.server.Server` whose :class:`ManualClock` starts at
:data:`BASE_MS` and moves only on clock ticks, following each step's process
through the relabellings (:func:`engine.concrete_steps`). Every command
becomes a ``call`` event carrying ``now`` and the reply the model gave; a crash
closes the process's connection and opens a new one under a new client
number (``close`` and ``connect`` events); local steps and ticks become ``note``
events. The result is a trace in spec/trace-format.md's ``virtual`` clock, which the
conformance checker replays (tests/test_explore.py).

The replay also checks the abstraction: the concrete state it ends in must have
the abstract key of the state the explorer reported (EXPLORE-ABS-4). Since it is
an execution of the model, it comes with its witness (the checker's description
of an execution, :class:`~xspec.traces.check.witness.Witness`), so ``xspec
explain`` shows it step by step without searching for one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xspec.explore.abstraction import BASE_MS, Abstraction, Key, invert
from xspec.explore.engine import Result, Step, System, concrete_steps
from xspec.models.clock import ManualClock
from xspec.models.server import Server
from xspec.spec.trace_format import Call, Close, Connect, Header, Note, Trace
from xspec.traces.check.witness import Witness, WitnessStep


@dataclass
class Concrete:
    """A concrete replay of an abstract path: the trace, the real steps it took, and the execution
    of the model that produced the trace."""

    trace: Trace
    steps: list[Step]  # the path's steps with concrete process numbers and argv
    witness: Witness


class AbstractionMismatch(AssertionError):
    """The replayed path ended in a state the abstraction does not map to the reported one."""


def concretize(system: System, result: Result, target: int, initial_perm: tuple[int, ...] | None,
               title: str, path: list[tuple[Step, tuple[int, ...] | None]] | None = None) -> Concrete:
    """Replay ``path`` (default: the shortest path to state ``target``) on the model; it must end in ``target``.

    See the module docstring (EXPLORE-CEX-1).
    """
    abstraction = system.abstraction
    return replay(abstraction.names, abstraction.dialect, dict(abstraction.config), system.setup(), system.tick_ms,
                  system.process_names, result.path(target) if path is None else path, initial_perm, title,
                  lambda server, mapping: _check_abstraction(abstraction, server, result.states[target][0], mapping))


def replay(names: tuple[bytes | None, ...], dialect: Any, config: dict[str, str],
           setup: list[tuple[int, tuple[bytes, ...]]], tick_ms: int, process_names: tuple[str, ...],
           path: list[tuple[Step, tuple[int, ...] | None]], initial_perm: tuple[int, ...] | None, title: str,
           check: Callable[[Server, dict[int, int]], None]) -> Concrete:
    """Replay an abstract ``path`` on one model server from the empty state (EXPLORE-CEX-1); ``check`` is given
    the server at the end and the mapping from the path's labels to concrete processes."""
    server = Server(dialect, ManualClock(BASE_MS), dict(config))
    clock = server.clock
    assert isinstance(clock, ManualClock)
    events: list[Call | Close | Connect | Note] = []
    executed: list[WitnessStep] = []
    connection = {proc: proc + 1 for proc in range(len(names))}
    next_connection = len(names) + 1

    def run(proc: int, argv: tuple[bytes, ...]) -> None:
        out = server.execute(proc + 1, list(argv))
        assert out.reply is not None, "the explorer runs no blocking commands"
        n = len(events)
        events.append(Call(connection[proc], list(argv), out.reply, now=clock.ms))
        executed.append(WitnessStep("command", n, n, connection[proc], list(argv), n, (clock.ms,)))

    def connection_step(kind: str, proc: int) -> None:
        n = len(events)
        events.append(Connect(connection[proc]) if kind == "connect" else Close(connection[proc], by="client"))
        executed.append(WitnessStep(kind, n, n, connection[proc]))

    for proc in range(len(names)):
        server.connect(proc + 1)
        connection_step("connect", proc)
    for proc, argv in setup:
        run(proc, argv)
    real_steps: list[Step] = []
    steps, final_mapping = concrete_steps(path, len(names), initial_perm)
    for step, mapping in steps:
        proc = mapping[step.proc] if step.proc >= 0 else -1
        rename: dict[bytes, bytes] = {}
        for label, p in mapping.items():
            old_name, new_name = names[label], names[p]
            if old_name is not None and new_name is not None:
                rename[old_name] = new_name
        argv = tuple(rename.get(a, a) for a in step.argv)
        real = Step(proc, step.kind, argv, step.text)
        real_steps.append(real)
        if step.kind == "command":
            run(proc, argv)
        elif step.kind == "tick":
            clock.advance(tick_ms)
            events.append(Note(f"clock +{tick_ms} ms"))
        elif step.kind in ("crash", "local-crash"):
            events.append(Note(real.describe(process_names)))
            server.close(proc + 1)
            connection_step("close", proc)
            connection[proc] = next_connection
            next_connection += 1
            server.connect(proc + 1)
            connection_step("connect", proc)
        else:
            events.append(Note(real.describe(process_names)))
    check(server, final_mapping)
    header = Header(clock="virtual", config=dict(config), title=title, source="generated",
                    tags=["explore"])
    return Concrete(Trace(header, list(events)), real_steps, Witness.of(executed, len(events)))


def _check_abstraction(abstraction: Abstraction, server: Server, expected: Key, mapping: dict[int, int]) -> None:
    """EXPLORE-ABS-4: the concrete replay's key, relabelled as the path was, is the abstract state reported."""
    key = abstraction.key(server)
    to_label = invert(tuple(mapping[label] for label in range(len(mapping))))
    if abstraction.relabel(key, to_label) != expected:
        raise AbstractionMismatch("the concrete replay does not end in the abstract state reported")
