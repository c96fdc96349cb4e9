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

from sortedcontainers import SortedDict, SortedList

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


class ZSetValue:
    """A sorted set: each member's score, the members in score order, and the encoding.

    ``order`` holds ``(score, member)`` pairs sorted as Redis's skiplist is: by
    score, ties by member bytes. ``encoding`` is ``listpack`` (``ziplist`` in
    6.2: the dialect names it) or ``skiplist``; it decides how -0 is kept, how
    ZSCAN walks the set and how the set is persisted. Never empty while stored.
    """

    __slots__ = ("scores", "order", "encoding")

    def __init__(self, encoding: str = "listpack") -> None:
        self.scores: dict[bytes, float] = {}
        self.order: SortedList = SortedList()
        self.encoding = encoding

    def insert(self, member: bytes, score: float) -> None:
        """Add a member that is not there yet."""
        self.scores[member] = score
        self.order.add((score, member))

    def remove(self, member: bytes) -> float:
        """Remove a member that is there; its score."""
        score = self.scores.pop(member)
        self.order.remove((score, member))
        return score

    def rank(self, member: bytes) -> int:
        """The 0-based rank of a member that is there, lowest score first."""
        return int(self.order.index((self.scores[member], member)))

    def reload(self, unsigned_zero: bool) -> None:
        """What loading the set from an RDB payload makes of it (RESTORE-11, ZSET-ENC-2, ZSET-ENC-3): a
        listpack of more than 128 members becomes a skiplist; a skiplist that fits a listpack (at most 128
        members, none longer than 64 bytes) becomes one, -0 then losing its sign when ``unsigned_zero``."""
        if self.encoding == "listpack":
            if len(self.scores) > 128:
                self.encoding = "skiplist"
            return
        if len(self.scores) > 128 or any(len(m) > 64 for m in self.scores):
            return
        self.encoding = "listpack"
        if unsigned_zero:
            for member in [m for m, score in self.scores.items() if score == 0]:
                self.remove(member)
                self.insert(member, 0.0)

    def freeze(self) -> tuple[Any, ...]:
        return ("zset", self.encoding, tuple((m, repr(s)) for s, m in self.order))


class HashValue:
    """A hash: its fields and their values, and the encoding (which decides HGETALL's and HSCAN's order).

    ``fields`` keeps insertion order, which is a ``listpack``'s order (a removal leaves the rest in
    place; ``ziplist`` in 6.2, which the dialect names). A ``hashtable`` promises no order. Never
    empty while stored.
    """

    __slots__ = ("fields", "encoding")

    def __init__(self, encoding: str = "listpack") -> None:
        self.fields: dict[bytes, bytes] = {}
        self.encoding = encoding

    def freeze(self) -> tuple[Any, ...]:
        pairs = tuple(self.fields.items()) if self.encoding != "hashtable" else tuple(sorted(self.fields.items()))
        return ("hash", self.encoding, pairs)


Value = Stream | bytes | ListValue | SetValue | ZSetValue | HashValue  # what a key holds: the types the model has


class Keyspace(dict[bytes, Value]):
    """One database: its keys, and each expiring key's absolute expiry time (``db->expires``).

    A key leaves ``expires`` whenever it leaves the database or is given a new value with
    ``db[key] = value`` (``setKey`` without KEEPTTL, ``dbDelete``, FLUSHDB); a command that
    changes a value and keeps its time (INCR, APPEND, SET KEEPTTL, HSET) stores it with
    :meth:`replace`. Copies (snapshots, checkpoints) carry the times along.
    """

    __slots__ = ("expires",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.expires: dict[bytes, Instant] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_keyspace, (dict(self), dict(self.expires)))

    def __deepcopy__(self, memo: dict[int, Any]) -> Keyspace:
        from copy import deepcopy
        return _keyspace(deepcopy(dict(self), memo), dict(self.expires))

    def __setitem__(self, key: bytes, value: Value) -> None:
        if self.expires:
            self.expires.pop(key, None)
        dict.__setitem__(self, key, value)

    def replace(self, key: bytes, value: Value) -> None:
        """Store ``value`` at ``key`` keeping its expiry time, if it has one."""
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: bytes) -> None:
        dict.__delitem__(self, key)
        if self.expires:
            self.expires.pop(key, None)

    def pop(self, key: bytes, *default: Any) -> Any:  # type: ignore[override]
        if self.expires:
            self.expires.pop(key, None)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[bytes, Value]:
        key, value = dict.popitem(self)
        self.expires.pop(key, None)
        return key, value

    def clear(self) -> None:
        dict.clear(self)
        self.expires.clear()

    def update(self, *args: Any) -> None:  # type: ignore[override]
        """Add the keys of another database, with their times when it is a :class:`Keyspace`."""
        for other in args:
            dict.update(self, other)
            if isinstance(other, Keyspace):
                self.expires.update(other.expires)

    def setdefault(self, key: bytes, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)


def _keyspace(data: dict[bytes, Value], expires: dict[bytes, Instant]) -> Keyspace:
    ks = Keyspace(data)
    ks.expires.update(expires)
    return ks


def value_size(v: Value) -> int:
    """The number of elements (entries, items, members) or, for a string, of bytes that ``v`` holds."""
    if isinstance(v, Stream):
        return v.length
    if isinstance(v, ListValue):
        return len(v.items)
    if isinstance(v, SetValue):
        return len(v.members)
    if isinstance(v, ZSetValue):
        return len(v.scores)
    if isinstance(v, HashValue):
        return len(v.fields)
    return len(v)


def type_name(v: Value) -> str:
    if isinstance(v, Stream):
        return "stream"
    if isinstance(v, ListValue):
        return "list"
    if isinstance(v, SetValue):
        return "set"
    if isinstance(v, ZSetValue):
        return "zset"
    if isinstance(v, HashValue):
        return "hash"
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
class TrackingOptions:
    """CLIENT TRACKING ON's options for one client (models/tracking.py), while tracking is on."""

    redirect: int = 0  # the client id messages go to (0: the client itself)
    bcast: bool = False
    optin: bool = False
    optout: bool = False
    noloop: bool = False
    caching: bool = False  # CLIENT CACHING given for the next command (or transaction)
    broken: bool = False  # the redirect client was gone when a message was due
    prefixes: tuple[bytes, ...] = ()  # BCAST prefixes, in byte order

    def freeze(self) -> tuple[Any, ...]:
        return (self.redirect, self.bcast, self.optin, self.optout, self.noloop, self.caching, self.broken,
                self.prefixes)


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
    # CLIENT TRACKING (models/tracking.py): the options while on; the keys the tracking table holds
    # under this client's id (kept after tracking is turned off, as Redis forgets them lazily).
    tracking: TrackingOptions | None = None
    tracked_keys: dict[bytes, None] = field(default_factory=dict)
    # Watched keys that had expired (not yet deleted) when WATCHed (EXPIRE-WATCH-1).
    watched_expired: set[tuple[int, bytes]] = field(default_factory=set)

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
                    if self.subscriptions or self.pushes_sent else ()) + (
                    (None if self.tracking is None else self.tracking.freeze(), tuple(sorted(self.tracked_keys)))
                    if self.tracking is not None or self.tracked_keys else ()) + (
                    (tuple(sorted(self.watched_expired & self.watched.keys())),)
                    if self.watched_expired & self.watched.keys() else ())
