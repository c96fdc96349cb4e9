"""Handlers of Pub/Sub (spec/rules/pubsub.md): SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs,
PUBLISH, SPUBLISH and PUBSUB; PING and RESET as a subscribed client sees them.

A client's subscriptions live on its :class:`~xspec.models.state.Client` (``channels``,
``patterns``, ``shard_channels``); the server's tables of subscribers are those of its
clients. Messages go to :attr:`Server.pushes` as ``(client id, reply)``, rendered for the
receiving client's protocol, and ``Client.pushes_sent`` counts them, so a checker can pair
the n-th message of a client with the n-th ``push`` event of a trace.

A command that confirms several channels answers several replies: the handler returns them as
one array (rendered as the client receives each), which a checker compares with the ``recv``
events of that command taken together; one confirmation is returned as itself.

Where Redis walks a hash table whose order depends on its random seed (a client's channels for
an UNSUBSCRIBE without arguments, the server's patterns for PUBLISH, PUBSUB CHANNELS) the model
asks ``Server.chooser`` for the order (PUBSUB-4, PUBSUB-7) or answers in any order (PUBSUB-9).
"""

from __future__ import annotations

from xspec.models.messages import hash_order, publish_message, send_push, subscribers
from xspec.models.server import HANDLERS, Call, CommandError, Handler, HandlerResult, PreRendered, Server, command
from xspec.models.sets import AnyOrderArray
from xspec.models.state import Client
from xspec.spec.errors import subcommand_syntax
from xspec.spec.glob import pattern_matches
from xspec.spec.pubsub import (
    PSUBSCRIBE,
    PUNSUBSCRIBE,
    SMESSAGE,
    SSUBSCRIBE,
    SUBSCRIBE,
    SUNSUBSCRIBE,
    UNSUBSCRIBE,
    pubsub_help,
)
from xspec.spec.resp import Array, Bulk, Int, NullBulk, Push, Reply, Simple, for_protocol


# -- helpers ------------------------------------------------------------------------------------
def _count(c: Client, shard: bool) -> int:
    """PUBSUB-11: the count a confirmation carries: channels and patterns, or shard channels."""
    return len(c.shard_channels) if shard else len(c.channels) + len(c.patterns)


def _confirmation(c: Client, kind: bytes, name: bytes | None, shard: bool = False) -> Reply:
    """PUBSUB-2: ``[kind, channel or pattern, count]``: a push in RESP3, an array in RESP2;
    no channel is a null (PUBSUB-4)."""
    return Push((Bulk(kind), NullBulk() if name is None else Bulk(name), Int(_count(c, shard))))


def _answer(call: Call, replies: list[Reply]) -> HandlerResult:
    """One reply per confirmation: a single one as it is, several as one array of them, each
    rendered for the client (the trace's ``recv`` events of the command, taken together)."""
    if len(replies) == 1:
        return replies[0]
    proto = call.client.proto
    return PreRendered(Array(tuple(for_protocol(r, proto) for r in replies)))


_hash_order = hash_order
_send = send_push
_subscribers = subscribers


def _deny_blocking(call: Call, name: str) -> None:
    """PUBSUB-12: inside EXEC a client may not block; SUBSCRIBE and PSUBSCRIBE are let through
    there for compatibility, SSUBSCRIBE is not."""
    if call.in_exec and name == "SSUBSCRIBE":
        raise CommandError(f"ERR {name} isn't allowed for a DENY BLOCKING client")


# -- SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE ------------------------------------------------------------
@command("subscribe")
def subscribe(call: Call) -> HandlerResult:
    c = call.client
    replies: list[Reply] = []
    for channel in call.argv[1:]:  # PUBSUB-1: each channel in turn, confirmed even when already subscribed
        c.channels.setdefault(channel, None)
        replies.append(_confirmation(c, SUBSCRIBE, channel))
    return _answer(call, replies)


@command("psubscribe")
def psubscribe(call: Call) -> HandlerResult:
    c = call.client
    replies: list[Reply] = []
    for pattern in call.argv[1:]:  # PUBSUB-5
        c.patterns.setdefault(pattern, None)
        replies.append(_confirmation(c, PSUBSCRIBE, pattern))
    return _answer(call, replies)


@command("ssubscribe")
def ssubscribe(call: Call) -> HandlerResult:
    _deny_blocking(call, "SSUBSCRIBE")  # PUBSUB-12
    c = call.client
    replies: list[Reply] = []
    for channel in call.argv[1:]:  # PUBSUB-6
        c.shard_channels.setdefault(channel, None)
        replies.append(_confirmation(c, SSUBSCRIBE, channel, shard=True))
    return _answer(call, replies)


# -- UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE ------------------------------------------------------
def _unsubscribe(call: Call, table: str, kind: bytes, shard: bool, hashed: bool) -> HandlerResult:
    c = call.client
    subs: dict[bytes, None] = getattr(c, table)
    replies: list[Reply] = []
    if len(call.argv) > 1:
        names = call.argv[1:]  # PUBSUB-3: each as given, confirmed even when not subscribed
    elif hashed:
        names = _hash_order(call.server, subs)  # PUBSUB-4: the client's hash table, in its walk's order
    else:
        names = list(subs)  # PUBSUB-5: the client's list of patterns, in subscription order
    for name in names:
        subs.pop(name, None)
        replies.append(_confirmation(c, kind, name, shard))
    if not replies:  # PUBSUB-4: subscribed to nothing, still one confirmation
        replies.append(_confirmation(c, kind, None, shard))
    return _answer(call, replies)


@command("unsubscribe")
def unsubscribe(call: Call) -> HandlerResult:
    return _unsubscribe(call, "channels", UNSUBSCRIBE, False, True)


@command("punsubscribe")
def punsubscribe(call: Call) -> HandlerResult:
    # PUBSUB-5; PUBSUB-DIALECT-3: 7.2+ and Valkey keep a client's patterns in a hash table too
    return _unsubscribe(call, "patterns", PUNSUBSCRIBE, False, call.server.dialect.name not in ("redis-6.2", "redis-7.0"))


@command("sunsubscribe")
def sunsubscribe(call: Call) -> HandlerResult:
    return _unsubscribe(call, "shard_channels", SUNSUBSCRIBE, True, True)


# -- PUBLISH / SPUBLISH ---------------------------------------------------------------------------
@command("publish")
def publish(call: Call) -> Reply:
    receivers = publish_message(call.server, call.argv[1], call.argv[2])
    call.propagate_verbatim()  # PUBSUB-8: forced to the replicas, whoever listens
    return Int(receivers)


@command("spublish")
def spublish(call: Call) -> Reply:
    server = call.server
    channel, payload = call.argv[1], call.argv[2]
    receivers = 0
    for c in _subscribers(server, "shard_channels", channel):  # PUBSUB-6: shard subscribers only
        _send(server, c, Push((Bulk(SMESSAGE), Bulk(channel), Bulk(payload))))
        receivers += 1
    call.propagate_verbatim()  # PUBSUB-8
    return Int(receivers)


# -- PUBSUB -----------------------------------------------------------------------------------------
def _active(server: Server, table: str) -> dict[bytes, int]:
    """The server's table: each channel with at least one subscriber, and how many."""
    counts: dict[bytes, int] = {}
    for c in server.clients.values():
        for name in getattr(c, table):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _channel_list(call: Call, table: str) -> HandlerResult:
    if len(call.argv) > 3:  # PUBSUB-9: at most one pattern
        raise CommandError(subcommand_syntax(call.argv[1], b"pubsub", call.server.dialect.subcommand_table))
    pattern = call.argv[2] if len(call.argv) == 3 else None
    names = [n for n in _active(call.server, table) if pattern is None or pattern_matches(pattern, n)]
    return PreRendered(AnyOrderArray(tuple(Bulk(n) for n in names)))  # PUBSUB-9: the server's hash order


def _numsub(call: Call, table: str) -> Reply:
    counts = _active(call.server, table)
    items: list[Reply] = []
    for name in call.argv[2:]:  # PUBSUB-9: each as asked, patterns not counted
        items += [Bulk(name), Int(counts.get(name, 0))]
    return Array(tuple(items))


@command("pubsub|channels")
def pubsub_channels(call: Call) -> HandlerResult:
    return _channel_list(call, "channels")


@command("pubsub|shardchannels")
def pubsub_shardchannels(call: Call) -> HandlerResult:
    return _channel_list(call, "shard_channels")


@command("pubsub|numsub")
def pubsub_numsub(call: Call) -> Reply:
    return _numsub(call, "channels")


@command("pubsub|shardnumsub")
def pubsub_shardnumsub(call: Call) -> Reply:
    return _numsub(call, "shard_channels")


@command("pubsub|numpat")
def pubsub_numpat(call: Call) -> Reply:
    return Int(len(_active(call.server, "patterns")))  # PUBSUB-9: distinct patterns


@command("pubsub|help")
def pubsub_help_(call: Call) -> Reply:
    dialect = call.server.dialect
    sharded = dialect.lookup([b"ssubscribe", b"x"]) is not None
    return Array(tuple(Simple(line) for line in pubsub_help(sharded, dialect.help_last_line)))  # PUBSUB-10


@command("pubsub|*")
def pubsub_refused(call: Call) -> Reply:
    """6.2 without a subcommand table: an unknown subcommand or a wrong count (PUBSUB-DIALECT-1)."""
    raise CommandError(subcommand_syntax(call.argv[1], b"pubsub", False))


# -- PING and RESET in Pub/Sub mode -----------------------------------------------------------------
def _wrap_ping(ping: Handler) -> Handler:
    def ping_in_context(call: Call) -> HandlerResult:
        c = call.client
        if c.proto == 2 and c.subscriptions and len(call.argv) <= 2:
            # PUBSUB-CTX-2: a RESP2 subscriber gets ["pong", argument or ""]
            return Array((Bulk(b"pong"), Bulk(call.argv[1] if len(call.argv) == 2 else b"")))
        return ping(call)

    return ping_in_context


def _wrap_reset(reset: Handler) -> Handler:
    def reset_with_pubsub(call: Call) -> HandlerResult:
        c = call.client
        # PUBSUB-CTX-3: RESET leaves every channel, pattern and shard channel, confirming none
        c.channels.clear()
        c.patterns.clear()
        c.shard_channels.clear()
        return reset(call)

    return reset_with_pubsub


HANDLERS["ping"] = _wrap_ping(HANDLERS["ping"])
HANDLERS["reset"] = _wrap_reset(HANDLERS["reset"])
