"""Dialects: which server's behaviour the model reproduces.

A dialect is a named set of switches. ``redis-7.0`` is the baseline; later
dialects (6.2, 7.2, 7.4, 8.x, Valkey) are written as differences from it, each
switch named after the behaviour it changes and documented in ``spec/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dialect:
    """The behaviour switches of one server family and version range."""

    name: str
    server: str
    version: str  # the version the dialect is exact to
    # 7.0 reads the clock afresh at every reading; 7.2+ takes one snapshot per command.
    time_snapshot_per_command: bool = False
    # Default configuration (CONFIG GET names, string values).
    config_defaults: dict[str, str] = field(default_factory=dict)


_STREAM_DEFAULTS = {
    "stream-node-max-entries": "100",
    "stream-node-max-bytes": "4096",
}

REDIS_70 = Dialect(
    name="redis-7.0",
    server="redis",
    version="7.0.15",
    time_snapshot_per_command=False,
    config_defaults=dict(_STREAM_DEFAULTS),
)

DIALECTS: dict[str, Dialect] = {d.name: d for d in (REDIS_70,)}


class UnknownDialect(ValueError):
    """No dialect of that name, or none for that server version."""


def get_dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise UnknownDialect(
            f"unknown dialect {name!r}; known: {', '.join(sorted(DIALECTS))}") from None


def dialect_for_server(server: str, version: str) -> Dialect:
    """The dialect for a trace header's ``server`` (``redis``, ``7.0.15``)."""
    parts = version.split(".")
    if server == "redis" and parts[:2] == ["7", "0"]:
        return REDIS_70
    raise UnknownDialect(f"no dialect models {server} {version}; known: {', '.join(sorted(DIALECTS))}")
