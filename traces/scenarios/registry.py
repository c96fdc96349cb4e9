"""The scenario registry: what a scenario is and where the topic modules are.

A scenario is a function that drives a :class:`~xspec.traces.record.recorder.Recorder`
(client numbers, ``call``/``send``/``recv``/``is_waiting``) on an empty server
whose stream settings are the defaults plus the scenario's ``config``. It may
check structural assumptions (that a client really is blocked) and raise
:class:`ScenarioError` when the server does not behave as the script needs;
it never asserts on reply contents: the recorded replies are the expectations.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from xspec.traces.record.recorder import Recorder

ScenarioFn = Callable[[Recorder], None]

TOPIC_MODULES = (
    "xadd", "ranges", "trim", "xsetid", "xgroup", "xread", "xreadgroup", "pending", "claim",
    "xinfo", "lag", "blocking", "transactions", "generic", "resp3", "seeds", "dump", "lists",
    "stats", "pubsub", "notify", "tracking", "zsets", "scripting", "collections", "strings",
)
"""Topic modules of this package, imported in this order by :func:`all_scenarios`."""

SKIPPED_EDGE_CASES: dict[int, str] = {
    10: "the propagated MINID is replication, not visible to a client",
    15: "that nothing is propagated is not visible to a client",
    24: "BLOCK inside EVAL needs Lua, outside the model's scope (the MULTI half is recorded)",
    43: "the propagated MAXLEN = form is not visible to a client",
    54: "the propagated XGROUP SETID is not visible to a client",
    71: "replication stream of XADD/XTRIM: needs a replica, not a client trace",
    72: "replication stream of XREADGROUP: needs a replica",
    73: "AOF rewrite and reload",
    74: "replica state after XREADGROUP",
}
"""Edge cases of the reference's §10, or the parts of them, that no client trace can show, and why."""


class ScenarioError(RuntimeError):
    """The server did not behave as the script needs (e.g. a client that should block did not)."""


@dataclass(frozen=True)
class Scenario:
    topic: str
    name: str
    title: str
    run: ScenarioFn
    tags: tuple[str, ...] = ()
    config: dict[str, str] = field(default_factory=dict)
    edge_cases: tuple[int, ...] = ()

    @property
    def path(self) -> str:
        """Where the trace goes under the corpus folder."""
        return f"{self.topic}/{self.name}.jsonl"

    @property
    def all_tags(self) -> list[str]:
        return [self.topic, *self.tags, *(f"edge-{n}" for n in self.edge_cases)]


_REGISTERED: list[Scenario] = []


def topic(name: str) -> Callable[..., Callable[[ScenarioFn], ScenarioFn]]:
    """A decorator factory registering scenarios under topic ``name``.

    ``@scenario("title", tags=[...], config={...}, edge=(3, 4))`` on a function
    ``def invalid_ids(r)`` registers ``<topic>/invalid-ids``.
    """

    def scenario(title: str, *, tags: tuple[str, ...] | list[str] = (), config: dict[str, str] | None = None,
                 edge: tuple[int, ...] | list[int] = (), name: str | None = None
                 ) -> Callable[[ScenarioFn], ScenarioFn]:
        def register(fn: ScenarioFn) -> ScenarioFn:
            _REGISTERED.append(Scenario(topic=name_of_topic, name=name or fn.__name__.replace("_", "-"),
                                        title=title, run=fn, tags=tuple(tags), config=dict(config or {}),
                                        edge_cases=tuple(edge)))
            return fn
        return register

    name_of_topic = name
    return scenario


def all_scenarios() -> list[Scenario]:
    """Every registered scenario, topic modules in :data:`TOPIC_MODULES` order (whichever module was
    imported first), each module's in the order it registers them."""
    for module in TOPIC_MODULES:
        importlib.import_module(f"xspec.traces.scenarios.{module}")
    order = {f"xspec.traces.scenarios.{module}": n for n, module in enumerate(TOPIC_MODULES)}
    return sorted(_REGISTERED, key=lambda s: order.get(s.run.__module__, len(order)))
