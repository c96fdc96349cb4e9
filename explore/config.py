"""Bounded configurations for ``xspec explore --config`` (spec/exploration.md, EXPLORE-CFG-1 .. EXPLORE-CFG-3).

A configuration names a stream ``s`` with ``groups`` groups (``g``, or ``g1``,
``g2``, ... when there are several; every consumer acts in each), ``consumers``
consumers ``c1``, ``c2``, ... (process ``i`` is consumer ``c{i+1}`` on client
``i + 1``), an admin process on the last client that creates the groups and adds
or deletes entries, the entries (IDs ``1-0``, ``2-0``, ...), and the actions
every consumer may take in any order:

========== ==================================================================
read       ``XREADGROUP GROUP g c COUNT 1 STREAMS s >``
history    ``XREADGROUP GROUP g c COUNT 1 STREAMS s 0``
ack        ``XACK s g id``
claim      ``XCLAIM s g c <min-idle> id``
autoclaim  ``XAUTOCLAIM s g c <min-idle> 0-0 COUNT 1``
crash      the consumer dies and restarts: its connection closes, a new one opens
delete     (admin) ``XDEL s id``
add        (admin) ``XADD s <n>-0 f v`` while fewer than ``entries`` were added
tick       the clock moves ``tick_ms`` forward
========== ==================================================================

``commands`` adds command templates: ``{consumer}``, ``{group}`` and ``{id}``
stand for every consumer (who then sends it), group and entry ID; a template
without ``{consumer}`` is sent by the admin.

With ``arguments = "relevant"`` the IDs an action names are the ones that can
matter (ack: the consumer's own pending entries in the group; claim: entries
pending at another consumer; delete: live entries); with ``"all"`` every entry ID.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xspec.explore.abstraction import Abstraction, GroupView
from xspec.explore.engine import State, Step, Successor
from xspec.explore.execution import CRASH, Executor, initial_server
from xspec.models.server import Server
from xspec.spec.ids import StreamID

STREAM = b"s"
GROUP = b"g"
CONSUMER_ACTIONS = ("read", "history", "ack", "claim", "autoclaim", "crash")
ADMIN_ACTIONS = ("delete", "add")
ACTIONS = CONSUMER_ACTIONS + ADMIN_ACTIONS + ("tick",)


@dataclass
class Configuration:
    """A bounded configuration (EXPLORE-CFG-1); see the module docstring."""

    name: str
    consumers: int = 2
    entries: int = 2
    prefill: bool = True
    groups: int = 1
    actions: tuple[str, ...] = ("read", "ack", "claim", "autoclaim", "delete", "crash", "tick")
    arguments: str = "relevant"
    min_idle_ticks: int = 1
    horizon_ticks: int = 0  # ages are capped at max(min_idle_ticks, horizon_ticks) ticks
    tick_ms: int = 100
    count_cap: int = 1
    server_config: dict[str, str] = field(default_factory=dict)
    commands: tuple[tuple[str, ...], ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        self.actions = tuple(self.actions)
        self.commands = tuple(tuple(c) for c in self.commands)
        for template in self.commands:
            words = [w.upper() for w in template]
            if not words or "BLOCK" in words or (words[0] == "XADD" and "*" in words):
                # EXPLORE-KEY-3: blocked clients and clock-made IDs are out of scope.
                raise ValueError(f"command {' '.join(template)!r}: no blocking, no XADD with '*'")
        unknown = [a for a in self.actions if a not in ACTIONS]
        if unknown:
            raise ValueError(f"unknown actions {unknown}; known: {', '.join(ACTIONS)}")
        if self.arguments not in ("relevant", "all"):
            raise ValueError("arguments is 'relevant' or 'all'")
        if not 1 <= self.consumers <= 9 or self.entries < 0 or self.min_idle_ticks < 0 or self.tick_ms < 1:
            # At most 9 consumers: their names c1..c9 must have one length (EXPLORE-SYM-1).
            raise ValueError("1 <= consumers <= 9, entries >= 0, min_idle_ticks >= 0, tick_ms >= 1")
        if not 1 <= self.groups <= 9:
            raise ValueError("1 <= groups <= 9")

    @property
    def group_names(self) -> tuple[bytes, ...]:
        """``g`` for one group; ``g1``, ``g2``, ... for several."""
        return (GROUP,) if self.groups == 1 else tuple(b"g%d" % (i + 1) for i in range(self.groups))

    @property
    def min_idle_ms(self) -> int:
        return self.min_idle_ticks * self.tick_ms

    @property
    def horizon_ms(self) -> int:
        """Ages are capped here (EXPLORE-ABS-1): every time threshold a command uses must be at most this."""
        return max(self.min_idle_ticks, self.horizon_ticks) * self.tick_ms

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["actions"] = list(self.actions)
        return d


# EXPLORE-CFG-2: the named configurations.
NAMED: dict[str, Configuration] = {c.name: c for c in (
    Configuration("tiny", consumers=2, entries=1, actions=("read", "ack", "claim", "crash", "tick"),
                  description="2 consumers, 1 entry: read, ack, claim, crash, clock"),
    Configuration("compact", consumers=2, entries=3,
                  description="2 consumers x 3 entries: read, ack, claim, autoclaim, delete, crash, clock"),
    Configuration("standard", consumers=3, entries=4,
                  description="3 consumers x 4 entries: read, ack, claim, autoclaim, delete, crash, clock"),
    Configuration("producer", consumers=2, entries=3, prefill=False,
                  actions=("add", "read", "history", "ack", "autoclaim", "crash", "tick"),
                  description="2 consumers, entries added while they read: add, read, history, ack, "
                              "autoclaim, crash, clock"),
)}


def load_configuration(spec: str) -> Configuration:
    """A named configuration, or one read from a JSON file with the fields of :class:`Configuration` (EXPLORE-CFG-2)."""
    if spec in NAMED:
        return NAMED[spec]
    path = Path(spec)
    if not path.exists():
        raise ValueError(f"no configuration named {spec!r} (known: {', '.join(NAMED)}) and no such file")
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{spec}: expected a JSON object with the fields of a configuration, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    return Configuration(**data)


def entry_id(n: int) -> bytes:
    return b"%d-0" % n


class ConfigSystem:
    """The processes of a :class:`Configuration`: consumers taking any action, the admin, the clock."""

    safety_properties: tuple[str, ...] = ()

    def __init__(self, config: Configuration, *, symmetry: bool = True) -> None:
        self.config = config
        n = config.consumers
        self.names = tuple(b"c%d" % (i + 1) for i in range(n))
        self.admin = n
        self.process_names = tuple(x.decode() for x in self.names) + ("admin",)
        self.abstraction = Abstraction(
            names=self.names + (None,), classes=(0,) * n + (1,), horizon_ms=config.horizon_ms,
            count_cap=config.count_cap, symmetry=symmetry, config=config.server_config)
        self.executor = Executor(self.abstraction)
        self.tick_ms = config.tick_ms
        # (shape, ties) -> (steps the model runs, their (process, argv, memo slot), the tick if any)
        self._plans: dict[tuple[int, tuple[bool, ...]], tuple[list[Step], list[Any], list[Step]]] = {}
        self._step_lists: dict[tuple[Any, tuple[bool, ...]], list[Step]] = {}
        self._steps: dict[Step, Step] = {}
        actions = set(config.actions)
        self._consumer_actions = [a for a in CONSUMER_ACTIONS if a in actions]
        self._admin_actions = [a for a in ADMIN_ACTIONS if a in actions]
        self._tick = "tick" in actions

    def setup(self) -> list[tuple[int, tuple[bytes, ...]]]:
        """The admin's commands before exploring: the groups (and the entries when prefilled; EXPLORE-CFG-1)."""
        cmds: list[tuple[int, tuple[bytes, ...]]] = [
            (self.admin, (b"XGROUP", b"CREATE", STREAM, group, b"0", b"MKSTREAM")) for group in self.config.group_names]
        if self.config.prefill:
            cmds.extend((self.admin, (b"XADD", STREAM, entry_id(i + 1), b"f", b"v"))
                        for i in range(self.config.entries))
        return cmds

    def initial(self) -> tuple[State, Server]:
        server = initial_server(self.abstraction, self.setup())
        local = ((),) * (self.config.consumers + 1)
        return (self.abstraction.key(server), local, ()), server

    def safety(self, state: State) -> Iterator[tuple[str, str]]:
        return iter(())

    def successors(self, state: State, skip: tuple[bool, ...]) -> Iterable[Successor]:
        key, local, ghost = state
        shape = key[0]
        plan = self._plans.get((shape, skip))
        if plan is None:  # the plan depends on the shape only (EXPLORE-MEMO-5)
            views = tuple(self.abstraction.group_view(key, STREAM, group) for group in self.config.group_names)
            # The steps depend on the live IDs, the count of entries added and who holds what only.
            holders = tuple((view.live, view.entries_added, tuple((e, owner) for e, (owner, _) in view.pending.items()))
                            for view in views)
            steps = self._step_lists.get((holders, skip))
            if steps is None:
                steps = self._step_lists[(holders, skip)] = self._plan(views, skip)
            slot = self.executor.slot
            runs = [(step.proc, argv, slot(shape, step.proc, argv))
                    for step in steps if step.kind != "tick"
                    for argv in (CRASH if step.kind == "crash" else step.argv,)]
            # The tick, when there is one, is the plan's last step (:meth:`_new_plan`): the order is kept.
            plan = self._plans[(shape, skip)] = (steps[:len(runs)], runs, steps[len(runs):])
        server_steps, runs, ticks = plan
        out: list[Successor] = [(step, state if new is key else (new, local, ghost), server)
                                for step, (_, new, server) in zip(server_steps, self.executor.outcomes(key, runs),
                                                                  strict=True)]
        if ticks:
            out.append((ticks[0], (self.abstraction.advance(key, self.config.tick_ms), local, ghost), None))
        return out

    def _plan(self, views: tuple[GroupView, ...], skip: tuple[bool, ...]) -> list[Step]:
        """The steps the processes can take where the stream and its groups look like ``views`` (EXPLORE-CFG-1).

        Equal steps of different plans are one object, so that dictionaries keyed by steps find them by identity.
        """
        return [self._steps.setdefault(step, step) for step in self._new_plan(views, skip)]

    def _new_plan(self, views: tuple[GroupView, ...], skip: tuple[bool, ...]) -> list[Step]:
        live = list(views[0].live)
        plan: list[Step] = []
        for proc, name in enumerate(self.names):
            if skip[proc]:
                continue
            for action in self._consumer_actions:
                for group, view in zip(self.config.group_names, views, strict=True):
                    pending = {entry: owner for entry, (owner, _) in view.pending.items()}
                    plan.extend(Step(proc, "command", argv)
                                for argv in self._consumer_commands(action, proc, name, group, pending))
                if action == "crash":
                    plan.append(Step(proc, "crash", text="crashes and restarts (new connection)"))
        for action in self._admin_actions:
            plan.extend(Step(self.admin, "command", argv)
                        for argv in self._admin_commands(action, live, views[0].entries_added))
        for template in self.config.commands:
            plan.extend(self._template_steps(template, skip))
        if self._tick:
            plan.append(Step(-1, "tick", text=f"+{self.config.tick_ms} ms"))
        return plan

    def _template_steps(self, template: tuple[str, ...], skip: tuple[bool, ...]) -> list[Step]:
        """A ``commands`` template instantiated (EXPLORE-CFG-3): every consumer, group and entry ID it names."""
        words = " ".join(template)
        procs = [(p, n.decode()) for p, n in enumerate(self.names) if not skip[p]] if "{consumer}" in words \
            else [(self.admin, "")]
        groups = [g.decode() for g in self.config.group_names] if "{group}" in words else [""]
        ids = [entry_id(i + 1).decode() for i in range(self.config.entries)] if "{id}" in words else [""]
        return [Step(proc, "command", tuple(w.format(consumer=name, group=group, id=i).encode() for w in template))
                for proc, name in procs for group in groups for i in ids]

    def _ids(self, candidates: Iterable[StreamID]) -> list[bytes]:
        """The IDs an action names: the relevant ``candidates``, or every entry ID (EXPLORE-CFG-1's ``arguments``)."""
        if self.config.arguments == "all":
            return [entry_id(i + 1) for i in range(self.config.entries)]
        return [i.encode() for i in candidates]

    def _consumer_commands(self, action: str, proc: int, name: bytes, group: bytes,
                           pending: dict[StreamID, int]) -> list[tuple[bytes, ...]]:
        idle = b"%d" % self.config.min_idle_ms
        if action == "read":
            return [(b"XREADGROUP", b"GROUP", group, name, b"COUNT", b"1", b"STREAMS", STREAM, b">")]
        if action == "history":
            return [(b"XREADGROUP", b"GROUP", group, name, b"COUNT", b"1", b"STREAMS", STREAM, b"0")]
        if action == "ack":
            return [(b"XACK", STREAM, group, i)
                    for i in self._ids(e for e, owner in pending.items() if owner == proc)]
        if action == "claim":
            return [(b"XCLAIM", STREAM, group, name, idle, i)
                    for i in self._ids(e for e, owner in pending.items() if owner != proc)]
        if action == "autoclaim":
            return [(b"XAUTOCLAIM", STREAM, group, name, idle, b"0-0", b"COUNT", b"1")]
        return []

    def _admin_commands(self, action: str, live: list[StreamID], added: int) -> list[tuple[bytes, ...]]:
        if action == "delete":
            return [(b"XDEL", STREAM, i) for i in self._ids(live)]
        if action == "add" and added < self.config.entries:
            return [(b"XADD", STREAM, entry_id(added + 1), b"f", b"v")]
        return []
