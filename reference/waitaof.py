"""WAITAOF in the reference server (Redis 7.2+, Valkey; spec/rules/replication.md, WAITAOF-1 .. WAITAOF-3).

A node's fsynced offset (``fsynced_reploff``) is -1 without an AOF; with one it
is the replication offset at the moment everything the AOF was given reached
the disk, which ``appendfsync`` decides (``always``: before the replies of the
loop turn that wrote it; ``everysec``: the cron's sync, about once a second;
``no``: never after the start). A replica with an AOF adds ``FACK <fsynced
offset>`` to its ``REPLCONF ACK``; the primary keeps the largest one per
replica. A client blocked in WAITAOF is looked at again on every ACK and, as
Redis's ``blockedBeforeSleep`` does, every few hundredths of a second (an fsync
may have happened meanwhile).
"""

from __future__ import annotations

import asyncio
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Client, Context, Core
from xspec.spec.commands import NOT_INTEGER
from xspec.spec.errors import TIMEOUT_NEGATIVE, TIMEOUT_NOT_INTEGER
from xspec.spec.ids import string2ll
from xspec.spec.resp import Array, Error, Int, Reply

NO_AOF = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."  # WAITAOF-3
ON_REPLICA = ("ERR WAITAOF cannot be used with replica instances. Please also note that writes to "
              "replicas are just local and are not propagated.")  # WAITAOF-3
NUMLOCAL_RANGE = "ERR value is out of range, value must between 0 and 1"  # WAITAOF-1
NOT_POSITIVE = "ERR value is out of range, must be positive"  # WAITAOF-1
POLL_SECONDS = 0.05  # how soon a blocked WAITAOF sees an fsync (Redis: the next beforeSleep)


class AofWaiting:
    """A client blocked in WAITAOF: the offset it waits for and the counts it wants (WAITAOF-1)."""

    __slots__ = ("client", "state", "offset", "numlocal", "wanted")

    def __init__(self, client: Client, offset: int, numlocal: int, wanted: int) -> None:
        self.client = client
        self.state = client.blocked  # this WAITAOF's block: one that timed out is not served again
        self.offset = offset
        self.numlocal = numlocal
        self.wanted = wanted


def _aof(core: Core) -> Any:
    if core.persistence is None or getattr(core.persistence, "aof", None) is None:
        return None
    from xspec.reference.aof import aof_of
    return aof_of(core)


def has_waitaof(core: Core) -> bool:
    """Whether the dialect knows WAITAOF (7.2+, Valkey): only then does a replica send FACK (WAITAOF-2)."""
    return core.lookup([b"WAITAOF", b"0", b"0", b"0"]) is not None


def fsynced_offset(rep: Any) -> int:
    """``fsynced_reploff`` of the node of ``rep`` (a reference.replication.Replication): -1 without an
    AOF, else the offset when the AOF last had nothing unsynced (WAITAOF-1)."""
    aof = _aof(rep.core)
    if aof is None or aof.fd < 0:
        rep.fsynced = -1
        return -1
    if not aof.unsynced:
        rep.fsynced = rep.offset
    elif rep.fsynced < 0:
        rep.fsynced = 0  # 0 at start with appendonly yes
    return int(rep.fsynced)


def acked_aof(rep: Any, offset: int) -> int:
    """``replicationCountAOFAcksByOffset`` (WAITAOF-2): the online replicas whose FACK reached ``offset``."""
    return sum(1 for r in rep.replicas if r.state == "online" and r.fack >= offset)


def _aof_enabled(core: Core) -> bool:
    return core.config.get("appendonly", "no") == "yes"


def serve_aof_waiting(rep: Any) -> None:
    """``processClientsWaitingReplicas`` for the WAITAOF clients: those whose counts are met get them; one
    wanting the local fsync on a node whose AOF went off gets the error; the others' timeout reply is
    the counts now (WAITAOF-1, WAITAOF-3)."""
    if not rep.aof_waiting:
        return
    core = rep.core
    local_offset = fsynced_offset(rep)
    still: list[AofWaiting] = []
    for w in rep.aof_waiting:
        c = w.client
        b = c.blocked
        if b is None or b is not w.state or c.id not in core.clients:
            continue
        if w.numlocal and not _aof_enabled(core):  # WAITAOF-3
            core.unblock(c)
            core._deliver(c, Error(NO_AOF), timed_out=False)
            continue
        count = acked_aof(rep, w.offset)
        local = int(local_offset >= w.offset)
        reply = Array((Int(local), Int(count)))
        if count >= w.wanted and local >= w.numlocal:
            core.unblock(c)
            core._deliver(c, reply, timed_out=False)
        else:
            b.timeout_reply = reply
            still.append(w)
    rep.aof_waiting = still
    _arm_poll(rep)


def _arm_poll(rep: Any) -> None:
    if not rep.aof_waiting or rep.aof_poll is not None or rep.stopped:
        return

    def poll() -> None:
        rep.aof_poll = None
        serve_aof_waiting(rep)

    rep.aof_poll = asyncio.get_running_loop().call_later(POLL_SECONDS, poll)


def _long(arg: bytes) -> int:
    value = string2ll(arg)
    if value is None:
        raise ReplyError(NOT_INTEGER)
    return value


def waitaof_command(ctx: Context, rep: Any) -> Reply:
    """WAITAOF numlocal numreplicas timeout (WAITAOF-1 .. WAITAOF-3) on the node of ``rep`` (its
    reference.replication.Replication)."""
    core = ctx.core
    numlocal = _long(ctx.argv[1])
    if not 0 <= numlocal <= 1:
        raise ReplyError(NUMLOCAL_RANGE)
    wanted = string2ll(ctx.argv[2])
    if wanted is None or wanted < 0:  # getPositiveLongFromObjectOrReply: one error for both
        raise ReplyError(NOT_POSITIVE)
    timeout = string2ll(ctx.argv[3])
    if timeout is None:
        raise ReplyError(TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise ReplyError(TIMEOUT_NEGATIVE)
    if rep.master is not None:
        raise ReplyError(ON_REPLICA)  # WAITAOF-3
    if numlocal and not _aof_enabled(core):
        raise ReplyError(NO_AOF)  # WAITAOF-3
    c = ctx.client
    offset = c.woff  # WAIT-2
    count = acked_aof(rep, offset)
    local = int(fsynced_offset(rep) >= offset)
    reply = Array((Int(local), Int(count)))
    if (count >= wanted and local >= numlocal) or not ctx.can_block:  # WAITAOF-1
        return reply
    blocked = ctx.block([], timeout, lambda _ctx, _key: None, reply)
    rep.aof_waiting.append(AofWaiting(c, offset, numlocal, wanted))
    rep.ask_acks()  # WAIT-3: the replicas are asked for an ACK (with its FACK)
    _arm_poll(rep)
    return blocked  # type: ignore[return-value]


__all__ = ["AofWaiting", "acked_aof", "fsynced_offset", "has_waitaof", "serve_aof_waiting", "waitaof_command"]
