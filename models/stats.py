"""The server's lifetime counters: INFO commandstats, errorstats, total_error_replies and the dirty
counter behind ``rdb_changes_since_last_save`` (spec/rules/stats.md).

The model counts from the moment it starts, but a recorded trace starts on a server
with a history the model never saw. A counter is therefore *known* only from a
point where the real server's value is known too: the command and error counters
from a ``CONFIG RESETSTAT`` in the trace (or from the start, for a model that
shadows a freshly started server: ``xspec serve --checked``), the dirty counter
only from a fresh start. INFO prints an unknown counter as ``?`` and an unknown
Commandstats or Errorstats section as the single line ``?:?``, which the
comparison leaves free (ENV-INFO).

:class:`Server` (models/server.py) calls :func:`count_call`, :func:`count_rejection`,
:func:`count_served` and :func:`count_timeout`; handlers add their changes with
``Call.changed``.
"""

from __future__ import annotations

from typing import Any, Protocol

from xspec.models.state import Client
from xspec.spec.dialect import Dialect
from xspec.spec.info import UNKNOWN_COUNTER, UNKNOWN_SECTION_LINE
from xspec.spec.resp import Error

NOT_MODELLED = "ERR xspec model:"
"""How the model's error for a form it does not implement begins (models/server.py)."""


class Stats:
    """The counters of one server.

    ``commands`` maps a command's full name (``xgroup|create``) to ``[calls, rejected_calls,
    failed_calls]``; ``errors`` maps an error code to its count.
    """

    __slots__ = ("known", "dirty_known", "commands", "errors", "total_errors", "dirty", "refusing", "failing")

    def __init__(self, fresh: bool = False) -> None:
        self.known = fresh
        self.dirty_known = fresh
        self.commands: dict[str, list[int]] = {}
        self.errors: dict[str, int] = {}
        self.total_errors = 0
        self.dirty = 0
        # Set by a handler that words a refusal of Valkey's dispatcher (MULTI-DIALECT-1): the
        # command counts as rejected, not called.
        self.refusing = False
        # Set by a handler that sent another client an error (CLIENT UNBLOCK ... ERROR): the running
        # command counts as failed whatever it replies (STATS-9).
        self.failing = False

    def reset(self) -> None:
        """``CONFIG RESETSTAT``: STATS-1..3's counters start again from zero (not the dirty counter)."""
        self.known = True
        self.commands = {}
        self.errors = {}
        self.total_errors = 0

    def assume_fresh(self) -> None:
        """The server the model shadows has just started: every counter is zero and known."""
        self.reset()
        self.dirty_known = True
        self.dirty = 0

    def forget(self) -> None:
        """The server ran something the model did not see (``--checked``: a command it does not
        run, a fault's refusal): STATS-1..3's counters are unknown again until CONFIG RESETSTAT."""
        self.known = False

    def saved(self) -> None:
        """The data set was saved (SAVE, BGSAVE's end): the dirty counter is zero and known."""
        self.dirty_known = True
        self.dirty = 0

    def command(self, fullname: str) -> list[int]:
        found = self.commands.get(fullname)
        if found is None:
            found = self.commands[fullname] = [0, 0, 0]
        return found

    def error(self, text: str) -> None:
        """``afterErrorReply`` (STATS-1): the code is the first word of the line when a space ends it
        within its first 32 bytes (the ``-`` counted), else ERR."""
        self.total_errors += 1
        line = "-" + text
        space = line.find(" ", 0, 32)
        code = line[1:space] if space > 0 else "ERR"
        self.errors[code] = self.errors.get(code, 0) + 1

    def freeze(self) -> tuple[Any, ...]:
        """What of the counters a later INFO can show: nothing while they are unknown."""
        counters = (tuple(sorted((k, tuple(v)) for k, v in self.commands.items())),
                    tuple(sorted(self.errors.items())), self.total_errors) if self.known else ()
        return counters, (self.dirty if self.dirty_known else None)


class Server(Protocol):
    """What the counting needs of :class:`xspec.models.server.Server` (which imports this module)."""

    stats: Stats
    dialect: Dialect


def _is_error(reply: object) -> bool:
    return type(reply) is Error


def count_call(server: Server, fullname: str, reply: object, *, blocked: bool = False) -> None:
    """A command ran (STATS-2): one call, a failed one when its own reply is an error (STATS-1).

    A command that blocks counts its call then in 7.0 and 6.2; 7.2+ and Valkey count it when
    it is served or times out (STATS-DIALECT-7).
    """
    stats = server.stats
    if blocked:
        if not server.dialect.blocked_reexecution:
            stats.command(fullname)[0] += 1
        return
    if _is_error(reply) and reply.text.startswith(NOT_MODELLED):  # type: ignore[attr-defined]
        stats.forget()  # the real server ran something the model does not know how it counts
        return
    counters = stats.command(fullname)
    if stats.refusing:  # a refusal of the dispatcher: a rejected call (STATS-2)
        stats.refusing = False
        counters[1] += 1
        stats.error(reply.text)  # type: ignore[attr-defined]
        return
    counters[0] += 1
    if _is_error(reply):
        counters[2] += 1
        stats.error(reply.text)  # type: ignore[attr-defined]
    elif stats.failing:
        counters[2] += 1
    stats.failing = False


def count_rejection(server: Server, c: Client, text: str) -> None:
    """``rejectCommand`` (STATS-1, STATS-2): the error, and a rejected call of the command when the
    lookup found one."""
    stats = server.stats
    stats.error(text)
    if c.last_cmd != "NULL":
        stats.command(c.last_cmd)[1] += 1


def count_served(server: Server, fullname: str, reply: object) -> None:
    """A blocked client was served (STATS-3): an error counts, and fails the command (not in 6.2,
    STATS-DIALECT-1); 7.2+ re-executed the command, which counts as a call (STATS-DIALECT-7)."""
    stats = server.stats
    if server.dialect.blocked_reexecution:
        stats.command(fullname)[0] += 1
    if _is_error(reply):
        stats.error(reply.text)  # type: ignore[attr-defined]
        if server.dialect.unblock_error_fails_call:
            stats.command(fullname)[2] += 1


def count_unblocked(server: Server, fullname: str, error: str | None) -> None:
    """CLIENT UNBLOCK unblocked a client blocked in ``fullname``, with the ``error`` reply or its timeout
    reply (STATS-9, STATS-DIALECT-7): what each server adds to that command's counters, and the
    error, which also fails the running CLIENT UNBLOCK."""
    stats = server.stats
    dialect = server.dialect
    counters = stats.command(fullname)
    if dialect.blocked_reexecution:
        counters[0] += 1
    how = dialect.client_unblock_counts
    if how == "failed" or (error is not None and how == "failed-on-error"):
        counters[2] += 1
    elif error is not None and how == "rejected-on-error":
        counters[1] += 1
    if error is not None:
        stats.error(error)
        stats.failing = True


def count_timeout(server: Server, fullname: str) -> None:
    """A blocked client timed out: 7.2+ counts its call now (STATS-DIALECT-7)."""
    if server.dialect.blocked_reexecution:
        server.stats.command(fullname)[0] += 1


# -- INFO --------------------------------------------------------------------------------------
def _stat_name(server: Server, fullname: str) -> str:
    """The name a commandstats line shows: 6.2 counts a subcommand under its container (STATS-DIALECT-1)."""
    if server.dialect.subcommand_table:
        return fullname
    return fullname.split("|", 1)[0]


def commandstats_lines(server: Server) -> list[str]:
    """The Commandstats section's lines (STATS-2); ``usec`` is the host's, printed 0 (ENV-INFO)."""
    stats = server.stats
    if not stats.known:
        return [UNKNOWN_SECTION_LINE]
    merged: dict[str, list[int]] = {}
    for fullname, counters in stats.commands.items():
        if fullname.startswith("xspec."):
            continue
        total = merged.setdefault(_stat_name(server, fullname), [0, 0, 0])
        for i, n in enumerate(counters):
            total[i] += n
    return [f"cmdstat_{name}:calls={calls},usec=0,usec_per_call=0.00,rejected_calls={rejected},failed_calls={failed}"
            for name, (calls, rejected, failed) in merged.items() if calls or rejected or failed]


def errorstats_lines(server: Server) -> list[str]:
    """The Errorstats section's lines, bytewise by code (STATS-1)."""
    stats = server.stats
    if not stats.known:
        return [UNKNOWN_SECTION_LINE]
    return [f"errorstat_{code}:count={n}" for code, n in sorted(stats.errors.items(), key=lambda kv: kv[0].encode())]


def stats_values(server: Server) -> dict[str, str]:
    """The counters INFO prints as fields of the Stats and Persistence sections (STATS-1, STATS-4)."""
    stats = server.stats
    return {"total_error_replies": str(stats.total_errors) if stats.known else UNKNOWN_COUNTER,
            "rdb_changes_since_last_save": str(stats.dirty) if stats.dirty_known else UNKNOWN_COUNTER}
