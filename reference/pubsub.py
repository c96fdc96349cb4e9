"""Pub/Sub (spec/rules/pubsub.md): SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH,
SPUBLISH and PUBSUB, and what a subscribed connection may still do.

The server keeps one :class:`Registry` (``Core.pubsub``): each channel, pattern and shard channel
with its subscribers in the order they subscribed. A client that subscribed to something has a
:class:`Subscriptions` in ``Client.pubsub`` (None again once it has left everything, so a
connection that never subscribes pays nothing). Messages are written to the receiving
connection at once (``Connection.write``), in its protocol: a RESP3 push, a RESP2 array;
a message for the publishing client itself goes out just before its reply. Several
confirmations are written one after another as the answer to one command.

This module imports nothing of the core (which calls :func:`drop_client` when a connection
ends); handlers see the core's context and client as ``Any``.
"""

from __future__ import annotations

from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.protocol import Pushed, encode_into
from xspec.reference.values import Handler, handler_table, int_reply
from xspec.spec.errors import subcommand_syntax
from xspec.spec.glob import pattern_matches
from xspec.spec.pubsub import (
    MESSAGE,
    PMESSAGE,
    PSUBSCRIBE,
    PUNSUBSCRIBE,
    SMESSAGE,
    SSUBSCRIBE,
    SUBSCRIBE,
    SUNSUBSCRIBE,
    UNSUBSCRIBE,
    pubsub_help,
)
from xspec.spec.resp import Array, Bulk, Int, NullBulk, Push, Reply, Simple

HANDLERS, _handler = handler_table()


class Subscriptions:
    """One client's channels, patterns (in subscription order) and shard channels."""

    __slots__ = ("channels", "patterns", "shard")

    def __init__(self) -> None:
        self.channels: dict[bytes, None] = {}
        self.patterns: dict[bytes, None] = {}
        self.shard: dict[bytes, None] = {}

    def total(self) -> int:
        return len(self.channels) + len(self.patterns) + len(self.shard)


class Registry:
    """The server's side: who listens to what, in subscription order."""

    __slots__ = ("channels", "patterns", "shard")

    def __init__(self) -> None:
        self.channels: dict[bytes, dict[Any, None]] = {}
        self.patterns: dict[bytes, dict[Any, None]] = {}
        self.shard: dict[bytes, dict[Any, None]] = {}


def drop_client(registry: Registry, c: Any) -> None:
    """The connection ended, or RESET (PUBSUB-CTX-3): leave everything without a confirmation."""
    subs: Subscriptions | None = c.pubsub
    if subs is None:
        return
    for mine, table in ((subs.channels, registry.channels), (subs.patterns, registry.patterns),
                        (subs.shard, registry.shard)):
        for name in mine:
            _leave(table, name, c)
        mine.clear()
    c.pubsub = None


def _leave(table: dict[bytes, dict[Any, None]], name: bytes, c: Any) -> None:
    listeners = table.get(name)
    if listeners is not None:
        listeners.pop(c, None)
        if not listeners:
            del table[name]  # a channel nobody listens to is forgotten (PUBSUB CHANNELS)


def _mine(c: Any) -> Subscriptions:
    subs: Subscriptions | None = c.pubsub
    if subs is None:
        subs = c.pubsub = Subscriptions()
    return subs


def _settle(c: Any) -> None:
    """Out of Pub/Sub mode once subscribed to nothing (PUBSUB-3)."""
    if c.pubsub is not None and not c.pubsub.total():
        c.pubsub = None


def _count(c: Any, shard: bool) -> int:
    """PUBSUB-11: channels and patterns, or shard channels."""
    subs: Subscriptions | None = c.pubsub
    if subs is None:
        return 0
    return len(subs.shard) if shard else len(subs.channels) + len(subs.patterns)


def _confirm(c: Any, kind: bytes, name: bytes | None, shard: bool = False) -> Push:
    """PUBSUB-2: ``[kind, name, count]`` (a null name when there was nothing to leave)."""
    return Push((Bulk(kind), NullBulk() if name is None else Bulk(name), Int(_count(c, shard))))


def _answer(replies: list[Reply]) -> Any:
    """One confirmation is the reply; several are written one after another."""
    if len(replies) == 1:
        return replies[0]
    return Pushed(replies[:-1], replies[-1], [])


def _write(c: Any, message: Push) -> None:
    """A message for another client, now, in its protocol (pushed even under CLIENT REPLY OFF)."""
    if c.conn is not None:
        out: list[bytes] = []
        encode_into(message, c.proto, out)
        c.conn.write(out)
        observer = c.ctx.core.observer
        if observer is not None:  # --trace, --checked: a push event
            observer.pushed(c, message)


# -- subscribing ----------------------------------------------------------------------------------
def _subscribe(ctx: Any, attr: str, table: dict[bytes, dict[Any, None]], kind: bytes, shard: bool) -> Any:
    c = ctx.client
    subs = _mine(c)
    mine: dict[bytes, None] = getattr(subs, attr)
    replies: list[Reply] = []
    for name in ctx.argv[1:]:  # PUBSUB-1, PUBSUB-5, PUBSUB-6: each in turn, confirmed even when already in
        if name not in mine:
            mine[name] = None
            table.setdefault(name, {})[c] = None
        replies.append(_confirm(c, kind, name, shard))
    return _answer(replies)


@_handler("subscribe")
def subscribe(ctx: Any) -> Any:
    return _subscribe(ctx, "channels", ctx.core.pubsub.channels, SUBSCRIBE, False)


@_handler("psubscribe")
def psubscribe(ctx: Any) -> Any:
    return _subscribe(ctx, "patterns", ctx.core.pubsub.patterns, PSUBSCRIBE, False)


@_handler("ssubscribe")
def ssubscribe(ctx: Any) -> Any:
    if not ctx.can_block:  # PUBSUB-12: inside EXEC a client may not block, and SSUBSCRIBE has no exception
        raise ReplyError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    return _subscribe(ctx, "shard", ctx.core.pubsub.shard, SSUBSCRIBE, True)


def _unsubscribe(ctx: Any, attr: str, table: dict[bytes, dict[Any, None]], kind: bytes, shard: bool) -> Any:
    c = ctx.client
    subs: Subscriptions | None = c.pubsub
    mine: dict[bytes, None] = getattr(subs, attr) if subs is not None else {}
    names = ctx.argv[1:] if len(ctx.argv) > 1 else list(mine)  # PUBSUB-3, PUBSUB-4
    replies: list[Reply] = []
    for name in names:
        if name in mine:
            del mine[name]
            _leave(table, name, c)
        replies.append(_confirm(c, kind, name, shard))
    if not replies:  # PUBSUB-4: nothing to leave, still one confirmation
        replies.append(_confirm(c, kind, None, shard))
    _settle(c)
    return _answer(replies)


@_handler("unsubscribe")
def unsubscribe(ctx: Any) -> Any:
    return _unsubscribe(ctx, "channels", ctx.core.pubsub.channels, UNSUBSCRIBE, False)


@_handler("punsubscribe")
def punsubscribe(ctx: Any) -> Any:
    return _unsubscribe(ctx, "patterns", ctx.core.pubsub.patterns, PUNSUBSCRIBE, False)


@_handler("sunsubscribe")
def sunsubscribe(ctx: Any) -> Any:
    return _unsubscribe(ctx, "shard", ctx.core.pubsub.shard, SUNSUBSCRIBE, True)


# -- publishing -----------------------------------------------------------------------------------
def _deliver(ctx: Any, to: Any, message: Push, own: list[Reply]) -> None:
    if to is ctx.client:
        own.append(message)  # the publisher's own message precedes its reply
    else:
        _write(to, message)


def _reply(ctx: Any, n: int, own: list[Reply]) -> Any:
    if not own:
        return int_reply(n)
    if ctx.core.dialect.name not in ("redis-6.2", "redis-7.0"):  # PUBSUB-DIALECT-2: 7.2+ and Valkey: after the reply
        return Pushed([], Int(n), own)
    return Pushed(own, Int(n), [])


@_handler("publish")
def publish(ctx: Any) -> Any:
    registry = ctx.core.pubsub
    if not registry.patterns and ctx.argv[1] not in registry.channels:
        return int_reply(0)  # PUBSUB-7: nobody listens
    own: list[Reply] = []
    n = publish_message(registry, ctx.argv[1], ctx.argv[2], ctx.client, own)
    return _reply(ctx, n, own)


def publish_message(registry: Registry, channel: bytes, payload: bytes, current: Any, own: list[Reply]) -> int:
    """``pubsubPublishMessage``: the message to the channel's subscribers, then each matching pattern's;
    how many got it. Messages for ``current`` (the running client) go to ``own``, the others out
    at once (PUBLISH; keyspace notifications, reference/notify.py)."""
    n = 0
    for c in list(registry.channels.get(channel, ())):  # PUBSUB-7: the channel's subscribers, in order
        _deliver_to(current, c, Push((Bulk(MESSAGE), Bulk(channel), Bulk(payload))), own)
        n += 1
    for pattern, listeners in list(registry.patterns.items()):  # PUBSUB-7: then each matching pattern's
        if pattern_matches(pattern, channel):
            for c in list(listeners):
                _deliver_to(current, c, Push((Bulk(PMESSAGE), Bulk(pattern), Bulk(channel), Bulk(payload))), own)
                n += 1
    return n


def _deliver_to(current: Any, to: Any, message: Push, own: list[Reply]) -> None:
    if to is current:
        own.append(message)
    else:
        _write(to, message)


@_handler("spublish")
def spublish(ctx: Any) -> Any:
    registry: Registry = ctx.core.pubsub
    channel, payload = ctx.argv[1], ctx.argv[2]
    own: list[Reply] = []
    n = 0
    for c in list(registry.shard.get(channel, ())):  # PUBSUB-6: shard subscribers only
        _deliver(ctx, c, Push((Bulk(SMESSAGE), Bulk(channel), Bulk(payload))), own)
        n += 1
    return _reply(ctx, n, own)


# -- PUBSUB ---------------------------------------------------------------------------------------
def _listing(ctx: Any, table: dict[bytes, dict[Any, None]]) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:  # PUBSUB-9
        raise ReplyError(subcommand_syntax(argv[1], b"pubsub", ctx.core.dialect.subcommand_table))
    pattern = argv[2] if len(argv) == 3 else None
    return Array(tuple(Bulk(name) for name in table if pattern is None or pattern_matches(pattern, name)))


def _numbers(ctx: Any, table: dict[bytes, dict[Any, None]]) -> Reply:
    items: list[Reply] = []
    for name in ctx.argv[2:]:  # PUBSUB-9
        items += (Bulk(name), Int(len(table.get(name, ()))))
    return Array(tuple(items))


@_handler("pubsub|channels")
def pubsub_channels(ctx: Any) -> Reply:
    return _listing(ctx, ctx.core.pubsub.channels)


@_handler("pubsub|shardchannels")
def pubsub_shardchannels(ctx: Any) -> Reply:
    return _listing(ctx, ctx.core.pubsub.shard)


@_handler("pubsub|numsub")
def pubsub_numsub(ctx: Any) -> Reply:
    return _numbers(ctx, ctx.core.pubsub.channels)


@_handler("pubsub|shardnumsub")
def pubsub_shardnumsub(ctx: Any) -> Reply:
    return _numbers(ctx, ctx.core.pubsub.shard)


@_handler("pubsub|numpat")
def pubsub_numpat(ctx: Any) -> Reply:
    return Int(len(ctx.core.pubsub.patterns))  # PUBSUB-9


@_handler("pubsub|help")
def pubsub_help_(ctx: Any) -> Reply:
    dialect = ctx.core.dialect
    sharded = ctx.core.lookup([b"ssubscribe", b"x"]) is not None
    return Array(tuple(Simple(line) for line in pubsub_help(sharded, dialect.help_last_line)))  # PUBSUB-10


@_handler("pubsub|*")
def pubsub_refused(ctx: Any) -> Reply:
    raise ReplyError(subcommand_syntax(ctx.argv[1], b"pubsub", False))  # PUBSUB-DIALECT-1


# -- PING and RESET -------------------------------------------------------------------------------
def add_pubsub(handlers: dict[str, Handler]) -> None:
    """Put the Pub/Sub commands into a handler table, with PING and RESET as a subscriber sees them."""
    handlers.update(HANDLERS)
    ping, reset = handlers["ping"], handlers["reset"]

    def ping_subscribed(ctx: Any) -> Any:
        c = ctx.client
        if c.pubsub is not None and c.proto == 2 and len(ctx.argv) <= 2:
            # PUBSUB-CTX-2: ["pong", the argument or ""]
            return Array((Bulk(b"pong"), Bulk(ctx.argv[1] if len(ctx.argv) == 2 else b"")))
        return ping(ctx)

    def reset_subscribed(ctx: Any) -> Any:
        drop_client(ctx.core.pubsub, ctx.client)  # PUBSUB-CTX-3
        return reset(ctx)

    handlers["ping"] = ping_subscribed
    handlers["reset"] = reset_subscribed
