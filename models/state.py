"""The model's state: databases, streams, consumer groups, PELs, clients.

Field names follow the spec's glossary (``spec/glossary.md``) and Redis's own
names where they are visible to users (``last-generated-id`` is
``Stream.last_id``). Ordered collections are ``SortedDict``s keyed the way
Redis's radix trees order them (IDs numerically, names bytewise), so every
reply that walks them comes out in Redis's order and every lookup is
logarithmic. The PELs are :class:`~xspec.models.ordered.LazySortedDict`s,
dicts walked in ID order whose removals leave the order alone, so that XACK's
cost does not grow with the PEL, as a radix tree removal's does not.

Every class has ``freeze()``: a canonical, hashable value of the state, for
the explorer and for equality tests. Mutation stays on the plain objects.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from sortedcontainers import SortedDict

from xspec.models.clock import Duration, Instant
from xspec.models.layout import NodeLayout
from xspec.models.ordered import LazySortedDict
from xspec.spec.ids import MIN_ID, StreamID
from xspec.spec.resp import Reply

Fields = tuple[bytes, ...]  # field, value, field, value ... as stored (duplicates kept)


class Nack:
    """A pending entry (streamNACK): who has it, since when, how many deliveries."""

    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, delivery_time: Instant, delivery_count: int, consumer: Consumer | None) -> None:
        self.delivery_time = delivery_time
        self.delivery_count = delivery_count
        self.consumer = consumer

    def freeze(self) -> tuple[Any, ...]:
        return (self.delivery_time, self.delivery_count,
                None if self.consumer is None else self.consumer.name)


NEVER_ACTIVE: Final = Instant(-1)
"""The active-time of a consumer that was never active (7.2+), reported as -1."""


class Consumer:
    """A consumer of a group; ``pel`` holds the same Nack objects as the group PEL."""

    __slots__ = ("name", "seen_time", "active_time", "pel")

    def __init__(self, name: bytes, seen_time: Instant, active_time: Instant = NEVER_ACTIVE) -> None:
        self.name = name
        self.seen_time = seen_time
        self.active_time = active_time  # 7.2+
        self.pel = LazySortedDict()  # StreamID -> Nack

    def freeze(self) -> tuple[Any, ...]:
        return (self.name, self.seen_time, self.active_time, tuple(self.pel))


class Group:
    """A consumer group (streamCG)."""

    __slots__ = ("name", "last_id", "entries_read", "pel", "consumers")

    def __init__(self, name: bytes, last_id: StreamID, entries_read: int) -> None:
        self.name = name
        self.last_id = last_id  # last-delivered-id
        self.entries_read = entries_read  # -1 means invalid (shown as nil)
        self.pel = LazySortedDict()  # StreamID -> Nack
        self.consumers: SortedDict = SortedDict()  # name -> Consumer

    def freeze(self) -> tuple[Any, ...]:
        return (self.name, self.last_id, self.entries_read,
                tuple((i, n.freeze()) for i, n in self.pel.items()),
                tuple(c.freeze() for c in self.consumers.values()))


class Stream:
    """A stream value: entries, metadata, groups and the node layout."""

    __slots__ = ("entries", "last_id", "first_id", "max_deleted_id", "entries_added",
                 "groups", "groups_allocated", "layout")

    def __init__(self) -> None:
        self.entries: SortedDict = SortedDict()  # StreamID -> Fields
        self.last_id: StreamID = MIN_ID  # last-generated-id
        self.first_id: StreamID = MIN_ID  # recorded-first-entry-id
        self.max_deleted_id: StreamID = MIN_ID  # max-deleted-entry-id
        self.entries_added = 0
        self.groups: SortedDict = SortedDict()  # name -> Group
        # 7.0 allocates the groups' radix tree at the first XGROUP CREATE and keeps it even
        # when emptied; walks over it then touch errno (XADD-14).
        self.groups_allocated = False
        self.layout = NodeLayout()

    @property
    def length(self) -> int:
        if self.layout.disordered:
            return self.layout.length  # LAYOUT-4: entries Redis lost track of count too
        return len(self.entries)

    def last_live_id(self) -> StreamID:
        """The ID of the last live entry, 0-0 when empty (streamLastValidID)."""
        if self.layout.disordered:
            return self.layout.last_live() or MIN_ID  # LAYOUT-3
        return self.entries.peekitem(-1)[0] if self.entries else MIN_ID

    def freeze(self) -> tuple[Any, ...]:
        return ("stream", tuple(self.entries.items()), self.last_id, self.first_id,
                self.max_deleted_id, self.entries_added,
                tuple(g.freeze() for g in self.groups.values()), self.groups_allocated, self.layout.freeze())


class ListValue:
    """A list value (quicklist): its elements from head (LPUSH's side, index 0) to tail.

    Never empty while stored: the command that pops the last element deletes the key.
    """

    __slots__ = ("items",)

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        self.items: deque[bytes] = deque(items)

    def freeze(self) -> tuple[Any, ...]:
        return ("list", tuple(self.items))


SET_ENCODINGS: Final = ("intset", "listpack", "hashtable")


class SetValue:
    """A set value: its members and its encoding (which decides SMEMBERS's order).

    ``members`` is a dict used as an insertion-ordered set. ``encoding`` is
    ``intset`` (members listed in numeric order), ``listpack`` (7.2+: insertion
    order, removals leave the rest in place) or ``hashtable`` (no promised order).
    Never empty while stored.
    """

    __slots__ = ("members", "encoding")

    def __init__(self, members: Iterable[bytes] = (), encoding: str = "intset") -> None:
        self.members: dict[bytes, None] = dict.fromkeys(members)
        self.encoding = encoding

    def ordered(self) -> list[bytes]:
        """The members in the order the encoding lists them (any order for a hashtable)."""
        if self.encoding == "intset":
            return sorted(self.members, key=int)
        return list(self.members)

    def freeze(self) -> tuple[Any, ...]:
        members = tuple(self.ordered()) if self.encoding != "hashtable" else tuple(sorted(self.members))
        return ("set", self.encoding, members)


Value = Stream | bytes | ListValue | SetValue  # a key holds a stream, a string (SET/GET), a list or a set


def value_size(v: Value) -> int:
    """The number of elements (entries, items, members) or, for a string, of bytes that ``v`` holds."""
    if isinstance(v, Stream):
        return v.length
    if isinstance(v, ListValue):
        return len(v.items)
    if isinstance(v, SetValue):
        return len(v.members)
    return len(v)


def type_name(v: Value) -> str:
    if isinstance(v, Stream):
        return "stream"
    if isinstance(v, ListValue):
        return "list"
    if isinstance(v, SetValue):
        return "set"
    return "string"


def freeze_value(v: Value) -> Any:
    return ("string", v) if isinstance(v, bytes) else v.freeze()


@dataclass
class BlockState:
    """A client blocked in XREAD/XREADGROUP: on which keys, until when, and how to serve it.

    ``serve(call, key)`` is called, in FIFO order, when ``key`` is signalled
    as ready (``call`` is a :class:`xspec.models.server.Call` for the blocked
    client and its original argv); it returns the semantic reply that unblocks
    the client, or None to leave it blocked. ``payload`` is the blocking command's own data.
    """

    keys: list[bytes]
    db: int
    deadline: Instant | None  # None blocks forever
    timeout_ms: Duration
    argv: list[bytes]
    payload: Any
    serve: Callable[..., Reply | None]
    timeout_reply: Reply
    kind: str = "stream"  # what it waits for: "stream" (XREAD, XREADGROUP) or "list" (BLPOP, BRPOP, BLMOVE)


@dataclass
class Client:
    """One connection's state."""

    id: int
    proto: int = 2
    db: int = 0
    name: bytes | None = None
    in_multi: bool = False
    multi_queue: list[list[bytes]] = field(default_factory=list)
    multi_error: bool = False  # a command was rejected while queuing: EXEC aborts
    watched: dict[tuple[int, bytes], None] = field(default_factory=dict)
    dirty_cas: bool = False  # a watched key was touched: EXEC fails
    blocked: BlockState | None = None
    closed: bool = False
    last_cmd: str = "NULL"
    multi_used: bool = False  # MULTI was called once (Valkey's CLIENT LIST shows multi=0 then)
    no_evict: bool = False  # CLIENT NO-EVICT ON (flag e)
    no_touch: bool = False  # CLIENT NO-TOUCH ON, 7.2+ (flag T)
    lib_name: bytes | None = None  # CLIENT SETINFO LIB-NAME, 7.2+
    lib_ver: bytes | None = None  # CLIENT SETINFO LIB-VER, 7.2+
    # Pub/Sub (models/pubsub.py): channels and shard channels as hash tables (their walk's order
    # is the server's hash order), patterns as a list in subscription order; pushes_sent counts
    # the messages and pushed confirmations this connection was sent without a request.
    channels: dict[bytes, None] = field(default_factory=dict)
    patterns: dict[bytes, None] = field(default_factory=dict)
    shard_channels: dict[bytes, None] = field(default_factory=dict)
    pushes_sent: int = 0

    @property
    def subscriptions(self) -> int:
        """``clientTotalPubSubSubscriptionCount``: while positive the client is in Pub/Sub mode."""
        return len(self.channels) + len(self.patterns) + len(self.shard_channels)

    def freeze(self) -> tuple[Any, ...]:
        b = self.blocked
        blocked = None if b is None else (tuple(b.keys), b.db, b.deadline, tuple(b.argv), repr(b.payload))
        return (self.id, self.proto, self.db, self.name, self.in_multi,
                tuple(tuple(c) for c in self.multi_queue), self.multi_error,
                tuple(self.watched), self.dirty_cas, blocked, self.no_evict, self.no_touch) + (
                    (tuple(self.channels), tuple(self.patterns), tuple(self.shard_channels), self.pushes_sent)
                    if self.subscriptions or self.pushes_sent else ())
