"""What an event's command names, as the audit's tables record it: its name (with its subcommand) and its keys.

Shared by ingest (the events table's ``op`` and ``keys`` columns) and by the checking of a large trace in
parts by key (``split``), so that neither imports the other.
"""

from __future__ import annotations

# Commands whose first argument is the one key they touch.
_FIRST_KEY = frozenset({
    "XADD", "XACK", "XCLAIM", "XAUTOCLAIM", "XDEL", "XLEN", "XRANGE", "XREVRANGE", "XTRIM", "XSETID",
    "XPENDING", "TYPE", "EXPIRE", "PEXPIRE", "TTL", "PTTL", "PERSIST", "OBJECT", "GET", "SET",
})
# Commands whose every argument is a key.
_ALL_KEYS = frozenset({"DEL", "UNLINK", "EXISTS", "TOUCH"})
_SUBCOMMAND = frozenset({"XGROUP", "XINFO", "CLIENT", "CONFIG", "OBJECT", "DEBUG", "COMMAND", "MEMORY"})


def op_name(cmd: list[bytes] | None) -> str | None:
    """``XADD``, ``XGROUP CREATE``...: the command's name in capitals, with its subcommand."""
    if not cmd:
        return None
    name = cmd[0].decode("latin-1").upper()
    if name in _SUBCOMMAND and len(cmd) > 1:
        return f"{name} {cmd[1].decode('latin-1').upper()}"
    return name


def streams_keys(cmd: list[bytes]) -> list[bytes]:
    """The keys of an XREAD/XREADGROUP: the first half of what follows STREAMS."""
    for i, a in enumerate(cmd):
        if i > 0 and a.upper() == b"STREAMS":
            rest = cmd[i + 1:]
            return list(rest[: len(rest) // 2])
    return []


def command_keys(cmd: list[bytes] | None) -> list[bytes] | None:
    """The keys a command names, [] for a keyless command, None when the audit does not know."""
    if not cmd:
        return []
    name = cmd[0].decode("latin-1").upper()
    if name in _FIRST_KEY:
        return [cmd[1]] if len(cmd) > 1 else []
    if name in _ALL_KEYS:
        return list(cmd[1:])
    if name in ("XREAD", "XREADGROUP"):
        return streams_keys(cmd)
    if name in ("XGROUP", "XINFO"):
        if len(cmd) > 2 and cmd[1].upper() != b"HELP":
            return [cmd[2]]
        return []
    if name in ("RENAME", "RENAMENX", "COPY"):
        return list(cmd[1:3])
    return None
