"""Abstract states of the model: compact keys, their materialisation, and symmetry.

The explorer never keeps :class:`~xspec.models.server.Server` objects. A state
is a *key*: the number of its *shape*, a nested tuple that holds everything
``Server.freeze()`` holds but the pending entries' ages, and those ages
(spec/exploration.md, "The key"). Small keys hash and compare fast, and what
depends on the shape only (memoised steps, symmetry signatures, plans) is
looked up by its number. These abstractions are applied:

* times are ages relative to the clock, capped at the horizon: two states whose
  pending entries and consumers differ only in ages at or past the horizon are
  one state (EXPLORE-ABS-1);
* delivery counts are capped (EXPLORE-ABS-2);
* unless ``consumer_times`` is set, consumers' seen-time and active-time are
  left out: in the model only XINFO reads them (EXPLORE-ABS-3);
* consumers and clients are named by *process labels* instead of names and
  connection ids, so relabelling processes of one symmetry class is a
  permutation of labels (EXPLORE-SYM-1).

:meth:`Abstraction.thaw` rebuilds a real ``Server`` from a key, with the clock
at :data:`BASE_MS` and every time at ``BASE_MS - age``; :meth:`Abstraction.key`
reads one back. Commands always run on the real model; only the bookkeeping of
which states were seen is abstract.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from sortedcontainers import SortedDict, SortedList

from xspec.models.clock import Instant, ManualClock
from xspec.models.layout import NodeLayout
from xspec.models.ordered import LazySortedDict
from xspec.models.server import Server
from xspec.models.state import Client, Consumer, Group, Nack, Stream, Value
from xspec.spec.dialect import REDIS_70, Dialect
from xspec.spec.limits import NUM_DATABASES

BASE_MS = 1_700_000_000_000
"""The clock of every materialised state; times are ``BASE_MS - age``."""

Shape = tuple[Any, ...]
"""A key without its ages: (databases, clients, errno, configuration), every pending entry as
(entry ID, capped delivery count, owner's process label)."""
Parts = tuple[int, tuple[tuple[Any, Any, int, int], ...], tuple[tuple[int, bytes], ...]]
"""A shape taken apart: (base number, per stream (header, groups, first age's position, ages), per
stream (database, key))."""
Key = tuple[int, tuple[int, ...]]
"""A labelled server key: the number of its shape, and the ages of its pending entries in shape order."""


class Unsupported(Exception):
    """A state the abstraction cannot represent faithfully (a blocked client, a stranger consumer...)."""


# The state fields the key covers, per class. A test compares them with the
# model's classes so that a field added to the model cannot be silently dropped.
COVERED_SLOTS = {
    Stream: ("entries", "last_id", "first_id", "max_deleted_id", "entries_added",
             "groups", "groups_allocated", "layout"),
    Group: ("name", "last_id", "entries_read", "pel", "consumers"),
    Consumer: ("name", "seen_time", "active_time", "pel"),
    Nack: ("delivery_time", "delivery_count", "consumer"),
}
CLIENT_KEY_FIELDS = ("proto", "db", "name", "in_multi", "multi_queue", "multi_error", "watched", "dirty_cas",
                     "multi_used", "no_evict", "no_touch", "lib_name", "lib_ver")
"""The client fields in a key. Not in it, like in ``Server.freeze()``: the id (the process label
stands for it), ``blocked`` (blocked clients are out of scope), ``closed`` (a closed client is
gone) and ``last_cmd`` (only CLIENT LIST shows it)."""
PUBSUB_CLIENT_FIELDS = ("channels", "patterns", "shard_channels", "pushes_sent", "tracking", "tracked_keys")
"""Pub/Sub state: out of scope like blocked clients (EXPLORE-KEY-3): a key of a client that has any is refused."""
# watched_expired: WATCHed keys that had expired (EXPIRE-WATCH-1); key expiry is outside the explorer's scope.
COVERED_CLIENT_FIELDS = ("id", "blocked", "closed", "last_cmd") + CLIENT_KEY_FIELDS + PUBSUB_CLIENT_FIELDS + (
    "watched_expired",)
_client_fields = attrgetter(*CLIENT_KEY_FIELDS)
_THAW_REPLACES = frozenset({"clock", "config", "dbs", "clients", "next_client_id", "blocking", "ready_keys",
                            "errno", "stats"})
_SHAREABLE = (int, str, bytes, bool, type(None), tuple, frozenset, Dialect)



class TimeReads:
    """What the step running reads: which thawed pending entries' delivery times it read before
    writing them (EXPLORE-MEMO-2), and its number, with which thawed streams mark the parts it
    touched (:class:`TracedStream`, EXPLORE-MEMO-4)."""

    origins: list[int] = []
    step = 0


class TracedNack(Nack):
    """A thawed pending entry that notices when the model reads its delivery time.

    ``origin`` is the entry's position among the pending entries of the key it
    was thawed from. Once the model writes the time (a new delivery), reading
    it back reveals nothing about the state it started from.
    """

    __slots__ = ("_time", "_fresh", "origin")
    _time: int
    _fresh: bool
    origin: int

    @property  # type: ignore[override]
    def delivery_time(self) -> int:
        if not self._fresh:
            TimeReads.origins.append(self.origin)
        return self._time

    @delivery_time.setter
    def delivery_time(self, value: int) -> None:
        self._time = value
        self._fresh = True



class ThawedConsumer(Consumer):
    """A thawed consumer whose PEL is built the first time anything uses it: a step touches the PEL of
    one consumer at most, and keys do not read consumers' PELs (the group PEL names the owners).
    ``owned`` holds the PEL's items, in key order, until then, and None after (EXPLORE-KEY-2)."""

    __slots__ = ("owned",)
    owned: list[tuple[Any, Nack]] | None


def _lazy_consumer_pel() -> property:
    """``pel``: the consumer's PEL, built from ``owned`` on first use."""
    pel_slot = Consumer.__dict__["pel"]
    get, put = pel_slot.__get__, pel_slot.__set__

    def read(self: ThawedConsumer) -> Any:
        owned = self.owned
        if owned is None:
            return get(self)
        self.owned = None
        pel = _new_pel(owned)
        put(self, pel)
        return pel

    def write(self: ThawedConsumer, value: Any) -> None:
        self.owned = None
        put(self, value)

    return property(read, write)


ThawedConsumer.pel = _lazy_consumer_pel()  # type: ignore[misc,assignment]  # a property over the slot


class TracedStream(Stream):
    """A thawed stream that notes which of its two parts a step touched (read or wrote): its header
    (every field but ``groups``: entries, IDs, counters, layout) or its groups. ``header_step`` and
    ``groups_step`` hold the number (:attr:`TimeReads.step`) of the last step that touched each, -1
    until one does (EXPLORE-MEMO-4)."""

    __slots__ = ("header_step", "groups_step")
    header_step: int
    groups_step: int


def _traced_field(name: str, mark: str) -> property:
    """A property standing in for ``Stream``'s field ``name`` that marks the part ``mark`` touched."""
    field_slot = Stream.__dict__[name]
    get, put = field_slot.__get__, field_slot.__set__
    put_mark = TracedStream.__dict__[mark].__set__

    def read(self: TracedStream) -> Any:
        put_mark(self, TimeReads.step)
        return get(self)

    def write(self: TracedStream, value: Any) -> None:
        put_mark(self, TimeReads.step)
        put(self, value)

    return property(read, write)


class LazyLayout:
    """What a thawed stream's ``layout`` holds until the model first uses it: the layout's number in keys
    and the layout it copies then. A step that never uses the layout (an XACK, a crash, a command
    refused before it looks at the stream) costs no copy, and the key of its stream reads the number
    without freezing (EXPLORE-KEY-2)."""

    __slots__ = ("number", "template")

    def __init__(self, number: int, template: NodeLayout) -> None:
        self.number = number
        self.template = template


class LayoutProxy:
    """A thawed stream's layout once the model has asked for it: answers ``disordered`` (and what the
    invariants read) from the shared template, and turns into a copy of it (in the stream too) at the
    first use of anything else.

    Most steps only ask whether the layout is disordered (an entry lookup, a range read), and their
    key reads the layout's number without freezing. The copy stands in the stream from its making
    on; a caller that kept the proxy reaches the copy through it (EXPLORE-KEY-2)."""

    __slots__ = ("lazy", "stream", "real")
    lazy: LazyLayout
    stream: TracedStream
    real: NodeLayout | None

    @property
    def disordered(self) -> bool:
        real = self.real
        return self.lazy.template.disordered if real is None else real.disordered

    # What the invariants read: values made afresh, so the template can answer for the copy.
    @property
    def radix_tree_keys(self) -> int:
        return (self.lazy.template if self.real is None else self.real).radix_tree_keys

    def node_sizes(self) -> list[tuple[Any, int, int, int]]:
        return (self.lazy.template if self.real is None else self.real).node_sizes()

    def __getattr__(self, name: str) -> Any:  # anything but ``disordered`` and the slots: the real layout
        if name.startswith("__") or name in LayoutProxy.__slots__:
            # Probes of special names (copy, pickle) and slots not yet set: NodeLayout defines none of
            # the first (a test checks), and asking for the second here would only recurse.
            raise AttributeError(name)
        real = self.real
        if real is None:
            real = self.real = self.lazy.template.copy()
            _put_layout(self.stream, real)
        return getattr(real, name)


def _traced_layout() -> property:
    """``layout``: traced as the header's other fields; a :class:`LayoutProxy` until the model uses more
    of it than ``disordered``."""
    traced = _traced_field("layout", "header_step")
    get, write = traced.fget, traced.fset
    assert get is not None

    def read(self: TracedStream) -> Any:
        value = get(self)
        if type(value) is LazyLayout:
            proxy = _new(LayoutProxy)
            proxy.lazy = value
            proxy.stream = self
            proxy.real = None
            _put_layout(self, proxy)
            return proxy
        return value

    return property(read, write)


for _field in Stream.__slots__:  # every field, also one the model may gain: none escapes the marks
    setattr(TracedStream, _field, _traced_layout() if _field == "layout" else
            _traced_field(_field, "groups_step" if _field == "groups" else "header_step"))
# A stream's fields read and written past a traced stream's marks, for thawing and reading keys.
_entries_of, _last_id_of, _first_id_of, _max_deleted_of, _added_of, _allocated_of, _layout_of, _groups_of = (
    Stream.__dict__[name].__get__ for name in ("entries", "last_id", "first_id", "max_deleted_id", "entries_added",
                                               "groups_allocated", "layout", "groups"))


class _BindOnUse:
    """A SortedDict attribute that is a bound method of its SortedList, bound the first time it is used."""

    __slots__ = ("attr", "method")

    def __init__(self, attr: str, method: str) -> None:
        self.attr = attr
        self.method = method

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        bound = getattr(obj._list, self.method)
        obj.__dict__[self.attr] = bound
        return bound


def _list_bindings() -> dict[str, _BindOnUse]:
    """The attributes ``SortedDict.__init__`` binds to its list's methods, found on a sample."""
    sample = SortedDict()
    return {name: _BindOnUse(name, value.__func__.__name__) for name, value in vars(sample).items()
            if getattr(value, "__self__", None) is sample._list}


class ThawedSortedDict(SortedDict):
    """A SortedDict that binds its list's methods lazily: thawing builds many that see few operations.

    Behaves as a SortedDict in every respect (it is one); only construction is cheaper.
    """


for _name, _binding in _list_bindings().items():
    setattr(ThawedSortedDict, _name, _binding)


_LOAD = SortedList.DEFAULT_LOAD_FACTOR
_new = object.__new__


def _sorted_list(keys: list[Any]) -> SortedList:
    """A SortedList of ``keys``, ascending and distinct (a list it may keep), built field by field as
    ``SortedList.__init__`` and ``update`` would leave it (one sublist, its ``_index`` rebuilt lazily),
    which is several times cheaper than through them."""
    lst = _new(SortedList)
    if not keys:
        lst.__dict__ = {"_len": 0, "_load": _LOAD, "_lists": [], "_maxes": [], "_index": [], "_offset": 0}
    elif len(keys) <= _LOAD:
        lst.__dict__ = {"_len": len(keys), "_load": _LOAD, "_lists": [keys], "_maxes": [keys[-1]], "_index": [],
                        "_offset": 0}
    else:
        lst.__init__()  # type: ignore[misc]
        lst.update(keys)
    return lst


def _sorted_dict(keys: list[Any], items: Iterable[tuple[Any, Any]]) -> SortedDict:
    """A SortedDict of ``items``, already in key order, whose keys are ``keys`` (a list the dict may keep)."""
    d = dict.__new__(ThawedSortedDict)
    d.__dict__ = {"_key": None, "_list": _sorted_list(keys)}
    dict.update(d, items)
    return d


def _new_pel(items: Iterable[tuple[Any, Nack]]) -> LazySortedDict:
    """A thawed PEL of ``items``, in key order: what ``LazySortedDict.from_sorted_items`` builds (a test
    compares them), without its constructors' layers."""
    d = dict.__new__(LazySortedDict)
    dict.update(d, items)
    d._order = _sorted_list(list(dict.keys(d)))
    d._holes = 0
    return d


_DATABASES = range(NUM_DATABASES)
_chain = itertools.chain.from_iterable


def _keys(mapping: Any) -> Sequence[Any]:
    """The keys of one of the model's ordered mappings, in order, to read and not to keep: read off a
    ``SortedDict``'s sorted sublists directly, or a ``LazySortedDict``'s without holes (their layout is
    pinned, see models/ordered.py; a small dict's only sublist itself), any other mapping by iterating it."""
    if type(mapping) is LazySortedDict:
        if mapping._holes:  # its ordered list also holds keys removed since: the dict's order skips them
            return list(mapping)
        lists = mapping._order._lists
    elif type(mapping) is ThawedSortedDict or type(mapping) is SortedDict:
        lists = mapping._list._lists
    else:
        return list(mapping)
    return lists[0] if len(lists) == 1 else list(_chain(lists))


_put_entries, _put_last_id, _put_first_id, _put_max_deleted, _put_added, _put_allocated, _put_layout, _put_groups = (
    Stream.__dict__[name].__set__ for name in ("entries", "last_id", "first_id", "max_deleted_id", "entries_added",
                                               "groups_allocated", "layout", "groups"))


def _thaw_stream(recipe: tuple[Any, ...], ages: tuple[int, ...]) -> TracedStream:
    """A stream from its recipe (:meth:`Abstraction._recipe`): its header (entries, their IDs, IDs, counters,
    layout), per group (name, last ID, entries read, consumer names and consumers (name, seen, active) in name
    order, pending entries (ID, count, owner's place among the consumers, position of its age)), group names."""
    (entries, entry_ids, last_id, first_id, max_deleted, added, allocated, layout), groups, names = recipe
    s = _new(TracedStream)
    _put_entries(s, _sorted_dict(list(entry_ids), entries))
    _put_last_id(s, last_id)
    _put_first_id(s, first_id)
    _put_max_deleted(s, max_deleted)
    _put_added(s, added)
    _put_allocated(s, allocated)
    _put_layout(s, layout)  # shared: copied when the model first uses it
    thawed_groups = []
    for gname, glast, entries_read, consumer_names, consumers_recipe, nacks in groups:
        g = _new(Group)
        g.name = gname
        g.last_id = glast
        g.entries_read = entries_read
        consumers = []
        owned: list[list[tuple[Any, Nack]]] = []
        for name, seen, active in consumers_recipe:
            c = _new(ThawedConsumer)
            c.name = name
            c.seen_time = seen
            c.active_time = active
            mine: list[tuple[Any, Nack]] = []
            c.owned = mine  # its PEL's items: the PEL is built when first used
            consumers.append(c)
            owned.append(mine)
        group_pel = []
        for entry_id, count, owner, origin in nacks:
            n = _new(TracedNack)
            n._time = BASE_MS - ages[origin]
            n._fresh = False
            n.origin = origin
            n.delivery_count = count
            n.consumer = consumers[owner]
            group_pel.append((entry_id, n))
            owned[owner].append((entry_id, n))
        g.pel = _new_pel(group_pel)
        g.consumers = _sorted_dict(list(consumer_names), zip(consumer_names, consumers, strict=True))
        thawed_groups.append(g)
    _put_groups(s, _sorted_dict(list(names), zip(names, thawed_groups, strict=True)))
    s.header_step = s.groups_step = -1  # untouched by any step yet
    return s


@dataclass
class Abstraction:
    """How concrete model states map to keys, for one exploration.

    ``names[i]`` is the consumer name process ``i`` uses (None for a process
    that is no consumer, such as a producer); process ``i`` talks over client
    id ``i + 1``. ``classes[i]`` is its symmetry class: processes of one class
    are interchangeable, and must be listed contiguously.
    """

    names: tuple[bytes | None, ...]
    classes: tuple[int, ...]
    horizon_ms: int
    count_cap: int
    symmetry: bool = True
    consumer_times: bool = False
    dialect: Dialect = REDIS_70
    config: dict[str, str] = field(default_factory=dict)
    _labels: dict[bytes, int] = field(init=False, repr=False)
    _timeless_consumers: dict[bytes, tuple[int, int, None]] = field(init=False, repr=False)
    # Parts of keys that are big and shared by many states (entries, layouts, clients, the
    # configuration) are numbered: a key holds the number, hashed and compared in no time.
    _ids: dict[Any, int] = field(init=False, repr=False, default_factory=dict)
    _values: list[Any] = field(init=False, repr=False, default_factory=lambda: [None])
    _layout_ids: dict[int, tuple[int, Any]] = field(init=False, repr=False, default_factory=dict)
    _layouts: dict[int, LazyLayout] = field(init=False, repr=False, default_factory=dict)
    _template: Server = field(init=False, repr=False)
    _client_template: dict[str, Any] = field(init=False, repr=False)
    _class_ranges: list[tuple[int, int]] = field(init=False, repr=False)
    # Per shape, what symmetry, relabelling and the configurations read off it: computed once.
    _skeletons: dict[int, Any] = field(init=False, repr=False, default_factory=dict)
    _relabelled: dict[tuple[int, tuple[int, ...]], int] = field(init=False, repr=False, default_factory=dict)
    _views: dict[tuple[int, bytes, bytes], GroupView] = field(init=False, repr=False, default_factory=dict)
    _parts: dict[int, Parts] = field(init=False, repr=False, default_factory=dict)
    _recipes: dict[int, tuple[Any, ...]] = field(init=False, repr=False, default_factory=dict)
    # Canonical states -> their ties (EXPLORE-SYM-3), found while canonicalising, until asked for.
    _ties: dict[tuple[Key, tuple[Any, ...]], tuple[bool, ...]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.classes):
            raise ValueError("one symmetry class per process")
        self._labels = {n: i for i, n in enumerate(self.names) if n is not None}
        # A consumer's part of a key without consumer times (EXPLORE-ABS-3), by its name.
        self._timeless_consumers = {n: (i, 0, None) for n, i in self._labels.items()}
        self._template = Server(self.dialect, ManualClock(BASE_MS), self.config)
        self._client_template = dict(vars(Client(id=0)))  # every field at its default
        self._default_client_fields = _client_fields(Client(id=0))
        d = self._default_client_fields
        self._default_client = self.number(d[:4] + ((), d[5], ()) + d[7:])
        self._config_values = dict(self._template.config)
        self._config_number = self.number(tuple(sorted(self._config_values.items())))
        shared = [name for name, value in vars(self._template).items()
                  if name not in _THAW_REPLACES and not isinstance(value, _SHAREABLE)]
        if shared:  # thaw copies the server's other attributes by reference: they must not change
            raise Unsupported(f"Server attributes the explorer does not know how to copy: {shared}")
        ranges: list[tuple[int, int]] = []
        for _, members in itertools.groupby(range(len(self.classes)), key=self.classes.__getitem__):
            span = list(members)
            ranges.append((span[0], span[-1] + 1))
        if len({self.classes[lo] for lo, _ in ranges}) != len(ranges):
            raise ValueError("processes of one symmetry class must be listed contiguously")
        self._class_ranges = [r for r in ranges if r[1] - r[0] > 1]
        self._symmetric = [i for lo, hi in self._class_ranges for i in range(lo, hi)]

    # -- reading a key off a server -------------------------------------------------------
    def key(self, server: Server, sources: list[int] | None = None) -> Key:
        """The labelled key of ``server`` (EXPLORE-KEY-1): its shape's number and its ages.

        With ``sources``, also appends for every pending entry, in key order,
        the ``origin`` of the thawed entry whose delivery time it still holds,
        or -1 when the time was written since the thaw (or the entry is new).
        """
        if server.blocking or server.ready_keys:
            raise Unsupported("a client is blocked: blocking commands are outside the explorer's scope")
        if server.unauthenticated:  # EXPLORE-KEY-3: thaw shares the template's (empty) set, the key would lose it
            raise Unsupported("a client is not authenticated: requirepass is outside the explorer's scope")
        # A ManualClock: the model's times here are plain ints, read as such below.
        now = Instant.exact_ms(server.clock.now_ms())
        ages: list[int] = []  # in key order, as ``sources``: keys are read in byte order
        value_key = self._value_key
        dbs = tuple([(i, tuple([(k, value_key(db[k], now, ages, sources)) for k in sorted(db)]))
                     for i, db in enumerate(server.dbs) if db])
        clients = [0] * len(self.names)  # 0: not connected
        for cid, c in server.clients.items():
            label = cid - 1
            if not 0 <= label < len(self.names):
                raise Unsupported(f"client {cid} belongs to no process")
            v = _client_fields(c)
            fields = c.__dict__
            if fields.get("channels") or fields.get("patterns") or fields.get("shard_channels") \
                    or fields.get("pushes_sent") or fields.get("tracking") or fields.get("tracked_keys"):
                raise Unsupported(f"client {cid} is subscribed or was sent pushes: Pub/Sub is out of scope")
            if v == self._default_client_fields:  # the usual case: nothing set since the connection opened
                clients[label] = self._default_client
            else:
                clients[label] = self.number(v[:4] + (tuple(map(tuple, v[4])), v[5], tuple(v[6])) + v[7:])
        if server.config == self._config_values:
            config = self._config_number
        else:
            config = self.number(tuple(sorted(server.config.items())))
        return (self.number((dbs, tuple(clients), server.errno, config)), tuple(ages))

    def _value_key(self, v: Value, now: int, ages: list[int], sources: list[int] | None) -> Any:
        if not isinstance(v, Stream):
            return v if isinstance(v, bytes) else v.freeze()
        cap = self.horizon_ms
        count_cap = self.count_cap
        labels = self._labels
        groups = []
        # The fields are read past a traced stream's marks (and a traced entry's): reading the key is no step.
        # Mappings are read by iterating their keys (in order) and looking each up: no views' layers.
        by_name = _groups_of(v)
        for g in map(by_name.__getitem__, _keys(by_name)):
            pel_of = g.pel
            ids = _keys(pel_of)
            pel = []
            for entry_id, n in zip(ids, map(pel_of.__getitem__, ids), strict=True):
                owner = labels.get(n.consumer.name) if n.consumer is not None else None
                if owner is None:
                    raise Unsupported(f"consumer {n.consumer.name if n.consumer else None!r} belongs to no process")
                count = n.delivery_count
                pel.append((entry_id, count if count < count_cap else count_cap, owner))
                if type(n) is TracedNack:
                    age = now - n._time
                    if sources is not None:
                        sources.append(-1 if n._fresh else n.origin)
                else:
                    age = now - n.delivery_time
                    if sources is not None:
                        sources.append(-1)
                ages.append(age if age < cap else cap)
            consumers_of = g.consumers
            names = _keys(consumers_of)
            if not self.consumer_times:
                try:
                    consumers = sorted(map(self._timeless_consumers.__getitem__, names))
                except KeyError as missing:
                    raise Unsupported(f"consumer {missing.args[0]!r} belongs to no process") from None
            else:
                consumers = []
                for name in names:
                    c = consumers_of[name]
                    label = labels.get(name)
                    if label is None:
                        raise Unsupported(f"consumer {name!r} belongs to no process")
                    active = None if c.active_time == -1 else min(now - c.active_time, cap)
                    consumers.append((label, min(now - c.seen_time, cap), active))
                consumers.sort()
            groups.append((g.name, g.last_id, g.entries_read, tuple(pel), tuple(consumers)))
        node_layout = _layout_of(v)
        if type(node_layout) is LazyLayout:  # never used since the thaw: unchanged
            layout = node_layout.number
        elif type(node_layout) is LayoutProxy:  # only asked whether it is disordered: unchanged
            layout = node_layout.lazy.number
        else:
            frozen = node_layout.freeze()  # cached by the layout until it changes, and shared by its copies
            known = self._layout_ids.get(id(frozen))
            if known is not None and known[1] is frozen:
                layout = known[0]
            else:
                layout = self.number(frozen)
                if layout not in self._layouts:
                    self._layouts[layout] = LazyLayout(layout, node_layout.copy())
                self._layout_ids[id(frozen)] = (layout, frozen)  # holding ``frozen`` keeps its id from reuse
        entries = _entries_of(v)
        ids = _keys(entries)
        return (self.number(tuple(zip(ids, map(entries.__getitem__, ids), strict=True))), _last_id_of(v),
                _first_id_of(v), _max_deleted_of(v), _added_of(v), _allocated_of(v), layout, tuple(groups))

    def shape(self, key: Key) -> Shape:
        """The shape of ``key``: its structure, every pending entry without its age."""
        return self._values[key[0]]

    def parts(self, shape: int) -> Parts:
        """A shape taken apart (EXPLORE-MEMO-4): the number of its *base* (the databases' keys and
        their non-stream values, the clients, errno, the configuration); per stream in key order,
        its header, its groups, and where its pending entries' ages start in the key's ages and
        how many there are; and where the streams are (database, key)."""
        found = self._parts.get(shape)
        if found is None:
            dbs_key, clients, errno, config = self._values[shape]
            streams = []
            places = []
            at = 0
            for dbi, items in dbs_key:
                for k, v in items:
                    if isinstance(v, tuple):
                        count = sum(len(group[3]) for group in v[7])
                        streams.append((v[:7], v[7], at, count))
                        places.append((dbi, k))
                        at += count
            base = (tuple((dbi, tuple((k, None if isinstance(v, tuple) else v) for k, v in items))
                          for dbi, items in dbs_key), clients, errno, config)
            found = self._parts[shape] = (self.number(base), tuple(streams), tuple(places))
        return found

    def compose(self, base: int, streams: Sequence[tuple[Any, ...]]) -> int:
        """The shape number of ``base`` with ``streams`` (each a stream's value: header + (groups,)) in
        its streams' places, in key order: the inverse of :meth:`parts`."""
        dbs_key, clients, errno, config = self._values[base]
        values = iter(streams)
        dbs = tuple((dbi, tuple((k, next(values) if v is None else v) for k, v in items)) for dbi, items in dbs_key)
        return self.number((dbs, clients, errno, config))

    def number(self, value: Any) -> int:
        """The number standing for ``value`` in keys (EXPLORE-KEY-1); equal values, equal numbers."""
        n = self._ids.get(value)
        if n is None:
            n = self._ids[value] = len(self._values)
            self._values.append(value)
        return n

    def value(self, number: int) -> Any:
        """The value a key's number stands for."""
        return self._values[number]

    # -- materialising a key ------------------------------------------------------------
    def thaw(self, key: Key) -> Server:
        """A real server in the state ``key`` names, its clock at :data:`BASE_MS` (EXPLORE-KEY-2), from the
        shape's recipe (worked out once) and the key's ages."""
        recipe = self._recipes.get(key[0])
        if recipe is None:
            recipe = self._recipes[key[0]] = self._recipe(self._values[key[0]])
        config, errno, plain, streams, clients, next_client_id = recipe
        ages = key[1]
        dbs: list[dict[bytes, Any]] = [{} for _ in _DATABASES]
        for dbi, k, v in plain:
            dbs[dbi][k] = v
        for dbi, k, stream in streams:
            dbs[dbi][k] = _thaw_stream(stream, ages)
        thawed_clients = {}
        for cid, fields, queued, watched in clients:
            client = _new(Client)
            client.__dict__ = fields | {"multi_queue": [list(q) for q in queued] if queued else [],
                                        "watched": dict.fromkeys(watched) if watched else {}}
            thawed_clients[cid] = client
        server = _new(Server)
        server.__dict__ = self._template.__dict__ | {
            "clock": ManualClock(BASE_MS), "config": config.copy(), "dbs": dbs, "clients": thawed_clients,
            "next_client_id": next_client_id, "blocking": {}, "ready_keys": {}, "errno": errno}
        if "stats" in server.__dict__:  # INFO's lifetime counters are no part of a key: each thaw starts its own
            server.stats = type(self._template.stats)()
        return server

    def _recipe(self, shape: Shape) -> tuple[Any, ...]:
        """What :meth:`thaw` builds for ``shape``, worked out once: (configuration, errno, plain values,
        streams (see :func:`_thaw_stream`), clients' fields, the next client id), each as (database, key, value)."""
        dbs_key, clients_key, errno, config = shape
        plain = []
        streams = []
        origin = 0  # pending entries are numbered in key order across streams and groups
        for dbi, items in dbs_key:
            for k, v in items:
                if not isinstance(v, tuple):
                    plain.append((dbi, k, v))
                    continue
                entries, last_id, first_id, max_deleted, added, allocated, layout, groups = v
                header = (self._values[entries], tuple(e for e, _ in self._values[entries]), last_id, first_id,
                          max_deleted, added, allocated, self._layouts[layout])
                thawed_groups = []
                for gname, glast, entries_read, pel, consumers_key in groups:
                    by_name = sorted(consumers_key, key=lambda c: self.names[c[0]] or b"")
                    at = {c[0]: i for i, c in enumerate(by_name)}
                    consumers = tuple((self.names[label], BASE_MS - seen, -1 if active is None else BASE_MS - active)
                                      for label, seen, active in by_name)
                    nacks = []
                    for entry_id, count, owner in pel:
                        nacks.append((entry_id, count, at[owner], origin))
                        origin += 1
                    thawed_groups.append((gname, glast, entries_read, tuple(c[0] for c in consumers), consumers,
                                          tuple(nacks)))
                streams.append((dbi, k, (header, tuple(thawed_groups), tuple(g[0] for g in groups))))
        clients = []
        for label, ck in enumerate(clients_key):
            if ck:
                fields = self._client_template | dict(zip(CLIENT_KEY_FIELDS, self._values[ck], strict=True))
                fields["id"] = label + 1
                clients.append((label + 1, fields, fields["multi_queue"], fields["watched"]))
        return (dict(self._values[config]), errno, tuple(plain), tuple(streams), tuple(clients),
                len(clients_key) + 1)

    # -- time ------------------------------------------------------------------------------
    def advance(self, key: Key, ms: int) -> Key:
        """The key of the same state ``ms`` milliseconds later: every age grows, capped (EXPLORE-ABS-1)."""
        cap = self.horizon_ms
        shape, ages = key
        older = tuple([a + ms if a + ms < cap else cap for a in ages])
        if not self.consumer_times:
            return (shape, older)

        def group(g: tuple[Any, ...]) -> tuple[Any, ...]:
            gname, glast, er, pel, cons = g
            return (gname, glast, er, pel, tuple((label, min(seen + ms, cap), None if active is None
                                                  else min(active + ms, cap)) for label, seen, active in cons))

        return (self.number(map_groups(self._values[shape], group)), older)

    # -- symmetry ----------------------------------------------------------------------------
    def canonical(self, key: Key, local: Sequence[Any]) -> tuple[Key, tuple[Any, ...], tuple[int, ...] | None]:
        """The representative of the orbit of (``key``, ``local``) under relabelling (EXPLORE-SYM-2).

        ``local`` holds one value per process (its program state). Within each
        symmetry class, processes are ordered by a signature that does not
        mention labels; processes whose signatures tie are indistinguishable,
        so any order among them gives the same key. Returns the relabelled key
        and locals and the permutation applied (``perm[old] = new``), None when
        it is the identity.
        """
        if not self.symmetry or not self._class_ranges:
            return key, tuple(local), None
        signatures = self._signatures(key, local)
        perm = list(range(len(self.names)))
        skip = [False] * len(self.names)
        identity = True
        for lo, hi in self._class_ranges:
            order = sorted(range(lo, hi), key=signatures.__getitem__)
            for new, old in enumerate(order, lo):
                perm[old] = new
                if new != old:
                    identity = False
                if new > lo:
                    skip[new] = signatures[old] == signatures[order[new - lo - 1]]
        if identity:
            canonical: tuple[Key, tuple[Any, ...], tuple[int, ...] | None] = (key, tuple(local), None)
        else:
            p = tuple(perm)
            canonical = (self.relabel(key, p), permute(local, p), p)
        self._ties[canonical[:2]] = tuple(skip)  # the signatures are at hand: :meth:`ties` will need them
        return canonical

    def ties(self, key: Key, local: Sequence[Any]) -> tuple[bool, ...]:
        """For a canonical state: ``True`` for each process indistinguishable from the one before it.

        Such a process's steps lead to relabellings of its twin's successors,
        so an explorer with symmetry on may skip them (EXPLORE-SYM-3).
        """
        skip = [False] * len(self.names)
        if not self.symmetry or not self._class_ranges:
            return tuple(skip)
        known = self._ties.pop((key, tuple(local)), None)
        if known is not None:
            return known
        signatures = self._signatures(key, local)
        for lo, hi in self._class_ranges:
            for i in range(lo + 1, hi):
                skip[i] = signatures[i] == signatures[i - 1]
        return tuple(skip)

    def _signatures(self, key: Key, local: Sequence[Any]) -> list[tuple[Any, ...]]:
        shape, ages = key
        skeleton = self._skeletons.get(shape)
        if skeleton is None:
            skeleton = self._skeletons[shape] = self._skeleton(self._values[shape])
        clients, member, owned = skeleton
        signatures: list[tuple[Any, ...]] = [()] * len(self.names)  # only processes with twins need one
        for i in self._symmetric:
            signatures[i] = (local[i], clients[i], member[i],
                             tuple([(k, gname, entry_id, ages[at], count) for k, gname, entry_id, at, count in owned[i]]))
        return signatures

    def _skeleton(self, shape: Shape) -> tuple[tuple[int, ...], list[tuple[Any, ...]], list[list[Any]]]:
        """What a shape says about each process for its signature: client, memberships, pending entries
        (each with the position of its age in the key's ages)."""
        owned: list[list[Any]] = [[] for _ in self.names]
        member: list[list[Any]] = [[] for _ in self.names]
        dbs_key, clients, _, _ = shape
        at = 0
        for _, items in dbs_key:
            for k, v in items:
                if not isinstance(v, tuple):
                    continue
                for gname, _, _, pel, consumers in v[7]:
                    for entry_id, count, owner in pel:
                        owned[owner].append((k, gname, entry_id, at, count))
                        at += 1
                    for label, seen, active in consumers:
                        member[label].append((k, gname, seen, -1 if active is None else active))
        return clients, [tuple(m) for m in member], owned

    def relabel(self, key: Key, perm: tuple[int, ...]) -> Key:
        """``key`` with process ``i`` renamed ``perm[i]``: consumers, PEL owners and clients follow.

        Pending entries keep their places (they are in ID order), so the ages do not move.
        """
        shape, ages = key
        done = self._relabelled.get((shape, perm))
        if done is None:
            def group(g: tuple[Any, ...]) -> tuple[Any, ...]:
                gname, glast, er, pel, cons = g
                return (gname, glast, er, tuple((i, n, perm[o]) for i, n, o in pel),
                        tuple(sorted((perm[label], seen, active) for label, seen, active in cons)))

            dbs, clients, errno, config = map_groups(self._values[shape], group)
            done = self._relabelled[(shape, perm)] = self.number((dbs, permute(clients, perm), errno, config))
        return (done, ages)

    # -- reading keys --------------------------------------------------------------------------
    def stream_ids(self, key: Key, stream: bytes) -> tuple[Any, ...]:
        """The live entry IDs of ``stream`` in database 0 (empty when missing)."""
        value = _stream_value(self._values[key[0]], stream)
        return () if value is None else tuple(e for e, _ in self._values[value[0]])

    def group_view(self, key: Key, stream: bytes, group: bytes) -> GroupView:
        """The :class:`GroupView` of ``stream`` and ``group`` in database 0."""
        found = self._views.get((key[0], stream, group))
        if found is None:
            found = self._views[(key[0], stream, group)] = self._group_view(self._values[key[0]], stream, group)
        return found

    def _group_view(self, shape: Shape, stream: bytes, group: bytes) -> GroupView:
        value = _stream_value(shape, stream)
        if value is None:
            return GroupView((), 0, None, {})
        live = tuple(e for e, _ in self._values[value[0]])
        for gname, last, _, pel, _ in value[7]:
            if gname == group:
                return GroupView(live, value[4], last, {entry: (owner, count) for entry, count, owner in pel})
        return GroupView(live, value[4], None, {})

    def orbit(self, key: Key, local: Sequence[Any]) -> set[tuple[Key, tuple[Any, ...]]]:
        """Every relabelling of (``key``, ``local``) within symmetry classes: its orbit, by brute force."""
        out = set()
        for perm in self._permutations():
            out.add((self.relabel(key, perm), permute(local, perm)))
        return out

    def _permutations(self) -> Iterator[tuple[int, ...]]:
        n = len(self.names)
        per_class = [list(itertools.permutations(range(lo, hi))) for lo, hi in self._class_ranges]
        for choice in itertools.product(*per_class):
            perm = list(range(n))
            for (lo, hi), images in zip(self._class_ranges, choice, strict=True):
                for old, new in zip(range(lo, hi), images, strict=True):
                    perm[old] = new
            yield tuple(perm)


def map_groups(shape: Shape, group: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> Shape:
    """``shape`` with every consumer group's part replaced by ``group(part)``, in key order."""
    dbs_key, clients, errno, config = shape
    dbs = []
    for dbi, items in dbs_key:
        new_items = []
        for k, v in items:
            if isinstance(v, tuple):
                v = v[:7] + (tuple(group(g) for g in v[7]),)
            new_items.append((k, v))
        dbs.append((dbi, tuple(new_items)))
    return (tuple(dbs), clients, errno, config)


def permute(values: Sequence[Any], perm: tuple[int, ...]) -> tuple[Any, ...]:
    """``values`` reordered so that the value of ``i`` lands at ``perm[i]``."""
    out: list[Any] = [None] * len(values)
    for old, new in enumerate(perm):
        out[new] = values[old]
    return tuple(out)


def invert(perm: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for old, new in enumerate(perm):
        out[new] = old
    return tuple(out)


@dataclass(frozen=True)
class GroupView:
    """What a key says about one stream and one of its groups (for properties and argument choices)."""

    live: tuple[Any, ...]  # live entry IDs
    entries_added: int
    last_delivered: Any  # the group's last-delivered-id, None without the group
    pending: dict[Any, tuple[int, int]]  # entry ID -> (owner process, capped delivery count)


def _stream_value(shape: Shape, stream: bytes) -> tuple[Any, ...] | None:
    for dbi, items in shape[0]:
        if dbi == 0:
            for k, v in items:
                if k == stream and isinstance(v, tuple):
                    return v
    return None
