"""Labels of explored states by what matters: the PEL, the groups' cursors, the processes' places.

A state's server key is thawed into a real server (:meth:`Abstraction.thaw`) and summed up
in a few words: per group its last-delivered id and who holds which pending entry with how
many deliveries (``g ld 1-0 · PEL 1-0→c1×2``), the stream's entries when some were deleted
or never added, and per process its program's place (``c1: process``). The DOT and GraphML
exports and the ``--view`` page use the same label.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xspec.explore.abstraction import Abstraction
from xspec.explore.engine import Result, State
from xspec.models.clock import Duration
from xspec.models.server import Server
from xspec.models.state import Stream


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def server_summary(server: Server) -> list[str]:
    """One line per stream and per group: entries, cursor, pending entries with owner and deliveries."""
    lines = []
    for db, keys in enumerate(server.dbs):
        for key, value in sorted(keys.items()):
            name = _text(key) if db == 0 else f"db{db}:{_text(key)}"
            if not isinstance(value, Stream):
                lines.append(f"{name}: string")
                continue
            ids = " ".join(str(i) for i in value.entries)
            lines.append(f"{name}: [{ids}]")
            for gname, g in value.groups.items():
                now = server.clock.now_ms()
                pel = " ".join(f"{i}→{_text(n.consumer.name) if n.consumer else '?'}×{n.delivery_count}"
                               f" idle {Duration.exact_ms(now - n.delivery_time)}" for i, n in g.pel.items())
                lines.append(f"{_text(gname)} ld {g.last_id}" + (f" · PEL {pel}" if pel else " · PEL empty"))
    return lines


def _local_text(local: Any) -> str:
    if isinstance(local, tuple) and local and isinstance(local[0], str):
        return local[0]
    if local in ((), None):
        return ""
    return str(local)


def process_summary(state: State, names: Sequence[str]) -> list[str]:
    """``c1: read`` per process whose program has a place (configurations' consumers have none)."""
    out = []
    for name, local in zip(names, state[1], strict=False):
        text = _local_text(local)
        if text:
            out.append(f"{name}: {text}")
    return out


def state_label(server: Server, state: State, names: Sequence[str], number: int, depth: int) -> str:
    """The label of state ``number``: its number and depth, the server's summary, the processes' places."""
    return "\n".join([f"#{number} (depth {depth})", *server_summary(server), *process_summary(state, names)])


def state_labels(abstraction: Abstraction, result: Result, names: Sequence[str]) -> list[str]:
    """Every explored state's label (:func:`state_label`), by state number."""
    return [state_label(abstraction.thaw(state[0]), state, names, i, result.depth[i])
            for i, state in enumerate(result.states)]


__all__ = ["process_summary", "server_summary", "state_label", "state_labels"]
