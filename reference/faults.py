"""XSPEC.FAULT: injected faults, for testing how clients recover.

    XSPEC.FAULT ERROR <kind> [COUNT <n>] [COMMAND <name>]
        The next n commands (default 1; COUNT 0: every command until CLEAR),
        or only those named <name> (``xadd``, ``xgroup|create``; a container
        name matches its subcommands), fail with Redis 7.0.15's error for
        <kind>: READONLY, LOADING, OOM, BUSY, MASTERDOWN or TRYAGAIN. The
        error is a rejection: inside MULTI it dooms the transaction.
        XSPEC.* commands are never failed. Reply: OK.
    XSPEC.FAULT DELAY <ms> [CLIENT <id>]
        Hold every reply (or those of one client) for <ms> milliseconds,
        keeping their order; DELAY 0 ends it. Reply: OK.
    XSPEC.FAULT CLOSE ALL | <id> [<id> ...]
        Close connections (ALL: every one but the caller's; the caller's own
        id closes it after this reply). Reply: how many were closed.
    XSPEC.FAULT RESTART EMPTY | KEEP
        Close every connection, the caller's after this reply, as a restart
        does; EMPTY also drops all data. Faults are cleared. Reply: OK.
    XSPEC.FAULT CLEAR
        Remove every error fault and delay. Reply: OK.
    XSPEC.FAULT LIST
        The active faults, one status line each.

Closed connections appear in a ``--trace`` as ``close`` events by the server,
failed commands as their error replies, and ERROR and RESTART themselves as
``call`` events, which make ``xspec replay`` judge the trace ``unsupported``
(``reference.trace``). ``--checked`` does not run a refused command on the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from xspec.reference.api import ReplyError
from xspec.reference.core import FAULT_ERRORS, ErrorFault
from xspec.spec import commands as table
from xspec.spec.ids import c_string, string2ll
from xspec.spec.resp import OK, Array, Int, Reply, Simple

if TYPE_CHECKING:
    from xspec.reference.core import Context


class Network(Protocol):
    """What XSPEC.FAULT changes of the network server (``reference.server.ReferenceServer``)."""

    # client id (0: everyone) -> seconds each reply is held
    delays: dict[int, float]

class HeldTimer:
    """A timer of :class:`PausableTimers`: the loop's handle, and whether it was cancelled."""

    __slots__ = ("handle", "cancelled")

    def __init__(self) -> None:
        self.handle: Any = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.handle is not None:
            self.handle.cancel()


class PausableTimers:
    """A core's timer factory that holds what comes due while its node is paused (NODE-PAUSE-1).

    A SIGSTOPped Redis runs no time event: no cron (saves, the AOF's everysec fsync, automatic
    rewrites, replication's pings and timeouts), no active expiry, no blocked client's timeout. Here
    every timer a paused node's core set is held when it comes due, and runs on RESUME, in the order
    it came due, as a resumed Redis runs its late time events at once.
    """

    def __init__(self, call_later: Callable[[float, Callable[[], None]], Any], paused: Callable[[], bool]) -> None:
        self.call_later = call_later
        self.paused = paused
        self.held: list[tuple[HeldTimer, Callable[[], None]]] = []

    def __call__(self, delay: float, fn: Callable[[], None]) -> HeldTimer:
        timer = HeldTimer()

        def due() -> None:
            if timer.cancelled:
                return
            if self.paused():
                self.held.append((timer, fn))
                return
            fn()

        timer.handle = self.call_later(delay, due)
        return timer

    def resume(self) -> None:
        """The node runs again: what came due while it was paused runs on the next loop turns, in order
        (not inside the RESUME command, which another node runs)."""
        held, self.held = self.held, []
        for timer, fn in held:
            if not timer.cancelled:
                timer.handle = self.call_later(0, fn)


USAGE = "ERR usage: XSPEC.FAULT ERROR|DELAY|CLOSE|RESTART|CLEAR|LIST ... (see reference/README.md)"


def _number(arg: bytes) -> int:
    v = string2ll(arg)
    if v is None or v < 0:
        raise ReplyError(table.NOT_INTEGER)
    return v


def fault_command(ctx: Context) -> Reply:
    argv = ctx.argv
    core = ctx.core
    server: Network | None = getattr(core, "server", None)
    sub = c_string(argv[1]).lower()
    if sub == b"error" and len(argv) >= 3:
        kind = c_string(argv[2]).decode("latin-1").upper()
        if kind not in FAULT_ERRORS:
            raise ReplyError(f"ERR unknown fault error '{kind}', expected one of {', '.join(FAULT_ERRORS)}")
        count, name = 1, None
        i = 3
        while i < len(argv):
            opt = c_string(argv[i]).lower()
            if i + 1 >= len(argv):
                raise ReplyError(table.SYNTAX)
            if opt == b"count":
                count = _number(argv[i + 1]) or -1
            elif opt == b"command":
                name = c_string(argv[i + 1]).decode("latin-1").lower()
            else:
                raise ReplyError(table.SYNTAX)
            i += 2
        core.error_faults.append(ErrorFault(FAULT_ERRORS[kind], count, name))
        return OK
    if sub == b"delay" and len(argv) in (3, 5):
        ms = _number(argv[2])
        target = 0
        if len(argv) == 5:
            if c_string(argv[3]).lower() != b"client":
                raise ReplyError(table.SYNTAX)
            target = _number(argv[4])
        if server is None:
            raise ReplyError("ERR no network server to delay")
        if ms:
            server.delays[target] = ms / 1000
        else:
            server.delays.pop(target, None)
        return OK
    if sub == b"close" and len(argv) >= 3:
        if len(argv) == 3 and c_string(argv[2]).lower() == b"all":
            victims = [c for c in core.clients.values() if c is not ctx.client]
        else:
            ids = [_number(a) for a in argv[2:]]
            victims = [core.clients[i] for i in dict.fromkeys(ids) if i in core.clients]
        for c in victims:
            if c.conn is None:
                continue
            if c is ctx.client:
                c.conn.close_after_reply()
            else:
                c.conn.close_now()
        return Int(len(victims))
    if sub == b"restart" and len(argv) == 3:
        mode = c_string(argv[2]).lower()
        if mode not in (b"empty", b"keep"):
            raise ReplyError(table.SYNTAX)
        if server is None:
            raise ReplyError("ERR no network server to restart")
        me = ctx.client
        for c in list(core.clients.values()):
            if c is not me and c.conn is not None:
                c.conn.close_now()
        if mode == b"empty":
            for db in core.dbs:
                db.clear()
        core.error_faults.clear()
        server.delays.clear()
        if me.conn is not None:
            me.conn.close_after_reply()
        return OK
    if sub == b"clear" and len(argv) == 2:
        core.error_faults.clear()
        if server is not None:
            server.delays.clear()
        return OK
    if sub == b"list" and len(argv) == 2:
        lines = [f"error {f.text.split()[0]} count={f.count} command={f.command or '*'}" for f in core.error_faults]
        if server is not None:
            lines += [f"delay {int(s * 1000)}ms client={cid or '*'}" for cid, s in server.delays.items()]
        return Array(tuple(Simple(line) for line in lines))
    raise ReplyError(USAGE)
