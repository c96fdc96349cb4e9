"""The reference server's stream value: compact nodes, consumer groups, PELs, entries-read and lag.

An independent implementation of what spec/rules/streams.md, groups.md and
info.md describe; the model (xspec.models) is the oracle it is tested against,
not a library it uses. Only pure size arithmetic is shared: the byte sizes of
listpack elements (:mod:`xspec.spec.listpack`), which decide where Redis
starts a new node.

IDs are single ints, ``ms << 64 | seq``: they order as Redis orders them, and
the successor and predecessor of ID-9 are ``+ 1`` and ``- 1``.

Entries live in :class:`Node` s that mirror Redis's listpack nodes: the first
entry's ID is the node's master, its field names are the master fields, later
entries with the same names store only their values (the SAMEFIELDS trick), and
deletion leaves a tombstone until the node empties. A node keeps its IDs in two
``array('Q')`` (milliseconds, sequences) and its entries in one byte buffer
(length-prefixed strings), a few dozen bytes per entry. The nodes' radix tree
is replayed by :class:`RaxShape` only to count its nodes (XINFO
``radix-tree-nodes``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import attrgetter, lshift, or_

from xspec.spec.ids import I64_MAX
from xspec.spec.limits import LISTPACK_MAX_SIZE
from xspec.spec.listpack import as_listpack_int, element_size, int_element_size

U64 = (1 << 64) - 1
MAX_KEY = (1 << 128) - 1  # 18446744073709551615-18446744073709551615
INVALID_ENTRIES_READ = -1

_LP_HEADER_AND_END = 7  # 4-byte total size, 2-byte element count, 0xFF terminator
_SMALL_INT = 2  # an integer 0..127 as a listpack element (the flags, the master terminator)
_SAME_FIELDS = 0  # first byte of an encoded entry that stores only values
_OWN_FIELDS = 1  # first byte of an encoded entry that stores its field names too


SMALL_DECIMALS = tuple(b"%d" % n for n in range(1024))  # the text of the commonest sequence numbers


def id_bytes(key: int) -> bytes:
    """``ms-seq`` of an ID key."""
    return b"%d-%d" % (key >> 64, key & U64)


def as_i64(v: int) -> int:
    """``v`` read as a C ``long long`` (wrapped)."""
    v &= U64
    return v - (1 << 64) if v >> 63 else v


# -- entry encoding ----------------------------------------------------------------------


def _put(buf: bytearray, data: bytes) -> None:
    n = len(data)
    while n >= 0x80:
        buf.append((n & 0x7F) | 0x80)
        n >>= 7
    buf.append(n)
    buf += data


def _length_at(buf: bytes | bytearray, p: int) -> tuple[int, int]:
    """A length prefix of more than one byte: (length, position after the prefix)."""
    n = 0
    shift = 0
    while True:
        b = buf[p]
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, p
        shift += 7


_NUMERIC_START = frozenset(b"-0123456789")


def _element_size(v: bytes) -> int:
    """``element_size``, without its cache (which would keep up to 65536 values alive) and
    without the integer test for strings that cannot be integers."""
    n = len(v)
    if n < 64 and (not n or v[0] not in _NUMERIC_START):
        return n + 2  # a 6-bit length string
    if n <= 20:
        as_int = as_listpack_int(v)
        return n + 2 if as_int is None else int_element_size(as_int)
    return element_size(v)


def _signed_delta_size(new: int, base: int) -> int:
    """Listpack bytes of ``new - base`` as Redis stores an ID delta: a uint64 difference read as int64."""
    d = new - base
    if 0 <= d < 128:
        return 2
    return int_element_size(as_i64(d))


def _int_size(v: int) -> int:
    return 2 if 0 <= v < 128 else int_element_size(v)


# -- nodes -------------------------------------------------------------------------------


class Node:
    """One listpack node: IDs, encoded entries, tombstones and the listpack's byte size."""

    __slots__ = ("master", "master_ms", "master_seq", "fields", "reply_format", "ms", "seq", "offs", "data",
                 "dead", "live", "deleted", "head", "body", "ordered")

    def __init__(self, key: int, names: tuple[bytes, ...]) -> None:
        self.master = key
        self.master_ms = key >> 64
        self.master_seq = key & U64
        self.fields = names
        self.reply_format = _entry_reply_format(names)
        self.ms = array("Q")
        self.seq = array("Q")
        self.offs = array("I", (0,))  # entry i is data[offs[i]:offs[i + 1]]
        self.data: bytes | bytearray = bytearray()
        self.dead: bytearray | None = None  # allocated at the first tombstone
        self.live = 0
        self.deleted = 0
        self.head = 0  # every entry before this index is a tombstone
        # listpack bytes but the two counters, whose encodings depend on their values
        self.body = (_LP_HEADER_AND_END + _int_size(len(names)) + sum(map(_element_size, names))
                     + _SMALL_INT)
        # IDs ascend strictly in the listpack, so seek() may bisect. Not so once an entry went in at
        # or below a tombstone (XSETID lowered last-generated-id under deleted IDs): see Stream.
        self.ordered = True

    def key(self, i: int) -> int:
        return self.ms[i] << 64 | self.seq[i]

    def keys(self, start: int, end: int) -> list[int]:
        """The IDs of entries ``start`` .. ``end - 1`` (``ms << 64 | seq`` of each, computed by C functions)."""
        return list(map(or_, map(lshift, self.ms[start:end], repeat(64)), self.seq[start:end]))

    def last_key(self) -> int:
        """The node's last ID, tombstone or not."""
        return self.ms[-1] << 64 | self.seq[-1]

    def seek(self, key: int) -> int:
        """The index of the first ID >= ``key`` (``len(self.ms)`` when none), in an ordered node."""
        ms = key >> 64
        lo = bisect_left(self.ms, ms)
        if lo == len(self.ms) or self.ms[lo] != ms:
            return lo
        return bisect_left(self.seq, key & U64, lo, bisect_right(self.ms, ms, lo))

    def is_dead(self, i: int) -> bool:
        return self.dead is not None and self.dead[i] == 1

    def seal(self) -> None:
        """No more appends: keep the entry bytes immutable (slices of them are ready-made ``bytes``)."""
        self.data = bytes(self.data)

    def fields_at(self, i: int) -> tuple[bytes, ...]:
        """The flat field, value, ... tuple of entry ``i``."""
        data = self.data
        p = self.offs[i]
        end = self.offs[i + 1]
        copy = type(data) is bytearray  # a slice of the tail's buffer is a bytearray
        out: list[bytes] = []
        if data[p] == _SAME_FIELDS:
            p += 1
            for name in self.fields:
                n = data[p]
                p += 1
                if n >= 0x80:
                    n, p = _length_at(data, p - 1)
                v = data[p:p + n]
                out.append(name)
                out.append(bytes(v) if copy else v)  # type: ignore[arg-type]
                p += n
            return tuple(out)
        p += 1
        while p < end:
            n = data[p]
            p += 1
            if n >= 0x80:
                n, p = _length_at(data, p - 1)
            v = data[p:p + n]
            out.append(bytes(v) if copy else v)  # type: ignore[arg-type]
            p += n
        return tuple(out)

    def reply_at(self, i: int) -> bytes:
        """Entry ``i`` as a reply shows it (:meth:`replies`)."""
        return self.replies(i, i + 1)[0]

    def replies(self, start: int, end: int) -> list[bytes]:
        """Entries ``start`` .. ``end - 1`` as a reply shows each, in RESP: ``[ID, [field, value, ...]]``
        (the same bytes in RESP2 and RESP3). Written straight from the stored bytes, a run of entries
        at a time: reads run this for every entry they return."""
        data = self.data
        offs = self.offs
        ms = self.ms
        seq = self.seq
        reply_format = self.reply_format
        one_field = len(self.fields) == 1
        out: list[bytes] = []
        prefix_ms = -1
        prefix = b""
        for i in range(start, end):
            p = offs[i]
            if ms[i] != prefix_ms:  # entries often share their millisecond: its text is made once
                prefix_ms = ms[i]
                prefix = b"%d-" % prefix_ms
            sequence = seq[i]
            entry_id = prefix + SMALL_DECIMALS[sequence] if sequence < 1024 else b"%b%d" % (prefix, sequence)
            if data[p] != _SAME_FIELDS:
                fields = self.fields_at(i)
                out.append(b"".join([b"*2\r\n$%d\r\n%b\r\n*%d\r\n" % (len(entry_id), entry_id, len(fields)),
                                     *(b"$%d\r\n%b\r\n" % (len(v), v) for v in fields)]))
                continue
            if one_field:  # the commonest shape (one field: a payload), without the loop below
                n = data[p + 1]
                p += 2
                if n >= 0x80:
                    n, p = _length_at(data, p - 1)
                out.append(reply_format % (len(entry_id), entry_id, n, data[p:p + n]))
                continue
            args: list[object] = [len(entry_id), entry_id]  # object: the tail's slices are bytearrays
            p += 1
            for _ in self.fields:  # each value's length and bytes, into the master fields' format
                n = data[p]
                if n < 0x80:
                    p += 1
                else:
                    n, p = _length_at(data, p)
                args.append(n)
                args.append(data[p:p + n])
                p += n
            out.append(reply_format % tuple(args))
        return out

    def kill(self, i: int) -> None:
        """Flag live entry ``i`` deleted."""
        dead = self.dead
        if dead is None:
            dead = self.dead = bytearray(len(self.ms))
        dead[i] = 1
        self.live -= 1
        self.deleted += 1
        n = len(self.ms)
        h = self.head
        while h < n and dead[h]:
            h += 1
        self.head = h


def _entry_reply_format(names: tuple[bytes, ...]) -> bytes:
    """The RESP of an entry with the master fields ``names``, as a ``%`` format taking the ID's length,
    the ID, then each value's length and the value (:meth:`Node.replies`)."""
    head = b"*2\r\n$%%d\r\n%%b\r\n*%d\r\n" % (2 * len(names))
    return head + b"".join(b"$%d\r\n%b\r\n$%%d\r\n%%b\r\n" % (len(n), n.replace(b"%", b"%%")) for n in names)


# -- the radix tree's shape ---------------------------------------------------------------


class _RaxNode:
    __slots__ = ("is_key", "compressed", "chars", "kids")

    def __init__(self, chars: bytes = b"", kids: list[_RaxNode] | None = None, compressed: bool = False,
                 is_key: bool = False) -> None:
        self.is_key = is_key
        self.compressed = compressed
        self.chars = chars  # a compressed node's run, or a normal node's edge bytes in order
        self.kids = kids if kids is not None else []


class RaxShape:
    """Redis's rax insert and remove on 16-byte keys, kept only to count nodes as rax.c does."""

    __slots__ = ("root", "nodes")

    def __init__(self) -> None:
        self.root = _RaxNode()
        self.nodes = 1

    def _descend(self, key: bytes, path: list[tuple[_RaxNode, int]] | None
                 ) -> tuple[int, _RaxNode, _RaxNode | None, int, int]:
        """Follow ``key``: (bytes consumed, node reached, its parent, its index there, position in a run)."""
        node = self.root
        parent: _RaxNode | None = None
        slot = 0
        i = 0
        n = len(key)
        while node.chars and i < n:
            if node.compressed:
                run = node.chars
                j = 0
                while j < len(run) and i < n and run[j] == key[i]:
                    i += 1
                    j += 1
                if j < len(run):
                    return i, node, parent, slot, j
                at = 0
            else:
                at = node.chars.find(key[i])
                if at < 0:
                    break
                i += 1
            if path is not None:
                path.append((node, at))
            parent, slot, node = node, at, node.kids[at]
        return i, node, parent, slot, 0

    def _replace(self, parent: _RaxNode | None, slot: int, node: _RaxNode) -> None:
        if parent is None:
            self.root = node
        else:
            parent.kids[slot] = node

    def insert(self, key: bytes) -> None:
        i, node, parent, slot, j = self._descend(key, None)
        n = len(key)
        if node.compressed and (i < n or j):
            run = node.chars
            if i == n:  # the key ends inside the run: cut it, the lower part holds the key
                low = _RaxNode(run[j:], node.kids, len(run) - j > 1, is_key=True)
                self._replace(parent, slot, _RaxNode(run[:j], [low], j > 1, node.is_key))
                self.nodes += 1
                return
            # a mismatch inside the run: a branching node at the mismatching byte
            fork = _RaxNode(run[j:j + 1], node.kids)
            rest = run[j + 1:]
            if rest:
                fork.kids = [_RaxNode(rest, node.kids, len(rest) > 1)]
                self.nodes += 1
            if j:
                self._replace(parent, slot, _RaxNode(run[:j], [fork], j > 1, node.is_key))
                self.nodes += 1
            else:
                fork.is_key = node.is_key
                self._replace(parent, slot, fork)
            node = fork
        while i < n:
            child = _RaxNode()
            if not node.chars and n - i > 1:
                node.compressed = True
                node.chars = key[i:]
                node.kids = [child]
                i = n
            else:
                at = bisect_left(node.chars, key[i])
                node.chars = node.chars[:at] + key[i:i + 1] + node.chars[at:]
                node.kids.insert(at, child)
                i += 1
            self.nodes += 1
            node = child
        node.is_key = True

    def remove(self, key: bytes) -> None:
        path: list[tuple[_RaxNode, int]] = []
        i, node, _, _, j = self._descend(key, path)
        if i != len(key) or (node.compressed and j) or not node.is_key:
            return
        node.is_key = False
        compress = False
        if not node.chars:
            freed: _RaxNode | None = None
            while node is not self.root:
                freed = node
                self.nodes -= 1
                node, at = path.pop()
                if node.is_key or (not node.compressed and len(node.chars) != 1):
                    break
            if freed is not None:
                if node.compressed:
                    node.compressed = False
                    node.chars = b""
                    node.kids = []
                else:
                    at = next(k for k, kid in enumerate(node.kids) if kid is freed)
                    node.chars = node.chars[:at] + node.chars[at + 1:]
                    del node.kids[at]
                compress = len(node.chars) == 1 and not node.is_key
        elif len(node.chars) == 1:
            compress = True
        if compress:
            self._merge_chain(node, path)

    def _merge_chain(self, node: _RaxNode, path: list[tuple[_RaxNode, int]]) -> None:
        """Fold the chain of single-child non-key nodes through ``node`` into one compressed node."""
        parent: _RaxNode | None = None
        slot = 0
        while path:
            up, at = path.pop()
            if up.is_key or (not up.compressed and len(up.chars) != 1):
                parent, slot = up, at
                break
            node = up
        runs = [node.chars]
        count = 1
        tail = node
        while tail.chars:
            tail = tail.kids[-1]
            if tail.is_key or (not tail.compressed and len(tail.chars) != 1):
                break
            count += 1
            runs.append(tail.chars)
        if count > 1:
            self.nodes += 1 - count
            self._replace(parent, slot, _RaxNode(b"".join(runs), [tail], True))


def rax_key(key: int) -> bytes:
    return key.to_bytes(16, "big")


# -- consumer groups --------------------------------------------------------------------

_OWNER = attrgetter("owner")  # a NACK's owner, read by C code for a whole XACK


class Nack:
    """A pending entry: delivery time, delivery count (a uint64) and owner."""

    __slots__ = ("time", "count", "owner")

    def __init__(self, time: int, count: int, owner: Consumer | None) -> None:
        self.time = time
        self.count = count
        self.owner = owner

    def shown_count(self) -> int:
        """The delivery count as Redis prints it: signed 64-bit."""
        c = self.count
        return c - (1 << 64) if c >> 63 else c


class Pel:
    """A pending entries list: ID key -> :class:`Nack`, walked in ID order.

    A dict holds the NACKs; ``order`` holds their keys sorted, plus keys
    already removed (holes), which walks skip and which are dropped in bulk
    once they are half of it: removing a key touches the dict alone. No key
    present comes before ``order[start]`` (holes before it are not looked at
    again). Deliveries arrive mostly in ID order, so adding is mostly an
    append. No walk may be running over a PEL while keys are added to it or
    removed.
    """

    __slots__ = ("map", "order", "holes", "start")

    def __init__(self) -> None:
        self.map: dict[int, Nack] = {}
        self.order: list[int] = []
        self.holes = 0
        self.start = 0

    def __len__(self) -> int:
        return len(self.map)

    def __getitem__(self, key: int) -> Nack:
        return self.map[key]

    def get(self, key: int) -> Nack | None:
        return self.map.get(key)

    def __setitem__(self, key: int, nack: Nack) -> None:
        m = self.map
        if key in m:
            m[key] = nack
            return
        m[key] = nack
        self._place(key)

    def add_new(self, nacks: dict[int, Nack], ascending: bool) -> None:
        """``self[k] = nack`` for each item, for keys that are not in the PEL: a read's deliveries,
        added at once (``ascending``: their keys are in order; most often they are all above every
        key there too, and are appended at once)."""
        self.map.update(nacks)
        keys = list(nacks)
        order = self.order
        if ascending and (not order or keys[0] > order[-1]):
            order += keys
            return
        for k in keys:
            self._place(k)

    def _place(self, key: int) -> None:
        """Put a key just added to the map in its place in ``order``."""
        order = self.order
        if not order or key > order[-1]:
            order.append(key)
            return
        at = bisect_left(order, key)
        if order[at] == key:
            self.holes -= 1  # a removed key comes back
        else:
            order.insert(at, key)
        if at < self.start:
            self.start = at

    def pop(self, key: int) -> Nack | None:
        nack = self.map.pop(key, None)
        if nack is not None:
            self._removed(1)
        return nack

    def remove(self, keys: list[int]) -> list[Nack | None]:
        """:meth:`pop` of each key in turn, in one call: the NACKs removed, None where a key was not there."""
        m = self.map
        size = len(m)
        popped = list(map(m.pop, keys, repeat(None)))
        if len(m) < size:
            self._removed(size - len(m))
        return popped

    def _removed(self, n: int) -> None:
        """``n`` keys left the map and are holes in ``order`` now: holes are dropped in bulk once they are
        half of it (sorting the map's keys, which are in order already but for out-of-order additions)."""
        self.holes += n
        if self.holes > 32 and self.holes * 2 > len(self.order):
            self.order = sorted(self.map)
            self.holes = 0
            self.start = 0

    def keys_from(self, low: int) -> Iterator[int]:
        """The keys >= ``low``, ascending."""
        m = self.map
        order = self.order
        i = max(bisect_left(order, low), self.start)
        while i < len(order):
            k = order[i]
            if k in m:
                yield k
            i += 1

    def __iter__(self) -> Iterator[int]:
        return self.keys_from(0)

    def items_head(self, count: int) -> list[tuple[int, Nack]]:
        """The first ``count`` (key, NACK) pairs; 0 means all."""
        out = []
        for k in self.keys_from(0):
            out.append((k, self.map[k]))
            if len(out) == count:
                break
        return out

    def first_from(self, low: int) -> int | None:
        for k in self.keys_from(low):
            return k
        return None

    def first(self) -> int:
        """The smallest key of a non-empty PEL."""
        m = self.map
        order = self.order
        i = self.start
        while order[i] not in m:
            i += 1
        self.start = i
        return order[i]

    def last(self) -> int:
        """The largest key of a non-empty PEL."""
        m = self.map
        order = self.order
        while order[-1] not in m:
            order.pop()
            self.holes -= 1
        return order[-1]


class Consumer:
    __slots__ = ("name", "seen", "active", "pel")

    def __init__(self, name: bytes, seen: int) -> None:
        self.name = name
        self.seen = seen
        self.active = -1  # active-time (7.2+, XINFO-DIALECT-3): the last delivery or claim; -1 never
        self.pel = Pel()  # the same Nack objects as the group PEL


class Group:
    __slots__ = ("name", "last_id", "entries_read", "pel", "consumers")

    def __init__(self, name: bytes, last_id: int, entries_read: int) -> None:
        self.name = name
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = Pel()
        self.consumers: dict[bytes, Consumer] = {}

    def consumers_in_order(self) -> list[Consumer]:
        """Consumers in radix-tree (bytewise name) order."""
        return [self.consumers[n] for n in sorted(self.consumers)]

    def add_consumer(self, name: bytes, now: int) -> Consumer:
        c = Consumer(name, now)
        self.consumers[name] = c
        return c

    def add_pending(self, nacks: dict[int, Nack], consumer: Consumer, ascending: bool) -> None:
        """New pending entries (in no PEL yet), delivered to ``consumer`` (``ascending``: in key order)."""
        self.pel.add_new(nacks, ascending)
        consumer.pel.add_new(nacks, ascending)

    def give(self, key: int, nack: Nack, consumer: Consumer) -> None:
        """Make ``consumer`` the owner of ``nack`` (in the group PEL under ``key``)."""
        old = nack.owner
        if old is not consumer:
            if old is not None:
                old.pel.pop(key)
            nack.owner = consumer
            consumer.pel[key] = nack
        self.pel[key] = nack

    def acknowledge(self, keys: list[int]) -> int:
        """XACK: the pending entries ``keys`` leave the group PEL and their owners'; how many were pending."""
        pel = self.pel
        size = len(pel)
        popped = pel.remove(keys)
        owners = set(map(_OWNER, filter(None, popped)))  # the NACKs' owners (a NACK is never false)
        if len(owners) == 1:  # the commonest case: a consumer acknowledging what it read
            owner = owners.pop()
            if owner is not None:
                owner.pel.remove(keys)  # a consumer PEL holds keys of the group PEL only: the others are not there
        else:
            for k, nack in zip(keys, popped, strict=True):
                if nack is not None and nack.owner is not None:
                    nack.owner.pel.pop(k)
        return size - len(pel)

    def drop(self, key: int) -> Nack | None:
        """Remove a pending entry from the group PEL and its owner's."""
        nack = self.pel.pop(key)
        if nack is not None and nack.owner is not None:
            nack.owner.pel.pop(key)
        return nack


# -- the stream -----------------------------------------------------------------------------


class Stream:
    """A stream value: nodes, counters, groups.

    ``nodes`` are in radix-tree order (by master ID), as Redis walks them, and
    Redis appends to the last of them, the one with the highest master
    (LAYOUT-1). Live entries ascend along that walk: each new ID is above
    last-generated-id, which XSETID keeps at or above the last live entry.
    Deleted entries need not: after XSETID lowers last-generated-id below
    tombstones, a node can take IDs below its master or below its own
    tombstones (it is then not ``ordered``), and a new node can have a master
    below older nodes' masters (whose nodes then hold tombstones only, so live
    entries still ascend). While no node is unordered, walks bisect their way
    in; otherwise they follow Redis's iterator entry by entry (LAYOUT-2), and
    live entries may come out of ID order or not at all. ``unordered`` counts
    those nodes; ``lost`` counts the live entries of nodes that a new node with
    the same master replaced (LAYOUT-4): gone from every walk, still in
    ``length``.
    """

    __slots__ = ("nodes", "masters", "length", "last_id", "first_id", "max_deleted", "entries_added",
                 "groups", "groups_allocated", "rax", "unordered", "lost")

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.masters: list[int] = []  # nodes[i].master, ascending, for bisection
        self.unordered = 0  # nodes that are not ordered
        self.lost = 0  # live entries no walk reaches (LAYOUT-4)
        self.length = 0
        self.last_id = 0  # last-generated-id
        self.first_id = 0  # recorded-first-entry-id
        self.max_deleted = 0  # max-deleted-entry-id
        self.entries_added = 0  # a uint64
        self.groups: dict[bytes, Group] = {}
        # 7.0 allocates the groups' tree at the first XGROUP CREATE and keeps it (errno, XADD-14)
        self.groups_allocated = False
        self.rax = RaxShape()

    # -- finding entries -------------------------------------------------------------

    def locate(self, key: int) -> tuple[int, int] | None:
        """(node index, entry index) of the live entry ``key`` as a one-entry walk finds it, None when it
        does not (LAYOUT-2: in an unordered layout a live entry can be out of the walk's reach)."""
        if self.unordered:
            for node, i in self.forward(key):
                return (self.nodes.index(node), i) if node.key(i) == key else None
            return None
        ni = bisect_right(self.masters, key) - 1
        if ni < 0:
            return None
        node = self.nodes[ni]
        i = node.seek(key)
        if i == len(node.ms) or node.key(i) != key or node.is_dead(i):
            return None
        return ni, i

    def lookup_runs_off(self, key: int) -> bool:
        """Whether a one-entry walk for ``key``, having not found it, ran off the tree (errno, XADD-14)
        rather than stopping at a live entry above it."""
        if self.unordered:
            return next(self.forward(key), None) is None
        last = self.last_live()
        return last is None or last <= key

    def first_live(self) -> int | None:
        """The first live entry of a forward walk over everything (streamGetEdgeID, LAYOUT-3)."""
        at = self.first_live_at()
        return None if at is None else at[0].key(at[1])

    def first_live_at(self) -> tuple[Node, int] | None:
        for node in self.nodes:
            if node.live:
                return node, node.head
        return None

    def last_live(self) -> int | None:
        """The first live entry of a backward walk from the last node (streamLastValidID, LAYOUT-3)."""
        at = self.last_live_at()
        return None if at is None else at[0].key(at[1])

    def last_live_at(self) -> tuple[Node, int] | None:
        for node in reversed(self.nodes):
            if node.live:
                i = len(node.ms) - 1
                while node.is_dead(i):
                    i -= 1
                return node, i
        return None

    def top(self) -> int:
        """The last live entry XSETID, XREAD and XREADGROUP compare against; 0-0 when no walk finds one
        (7.0.15 aborts there when the length is not 0, LAYOUT-4)."""
        if self.nodes and self.nodes[-1].dead is None:  # no tombstone in the last node: its last entry
            return self.nodes[-1].last_key()
        last = self.last_live()
        return 0 if last is None else last

    def recorded_first(self) -> int:
        """recorded-first-entry-id recomputed (XDEL-4, XTRIM-10, LAYOUT-3): 0-0 when empty, the maximum
        ID when only lost entries are left."""
        if not self.length:
            return 0
        first = self.first_live()
        return MAX_KEY if first is None else first

    def forward(self, low: int) -> Iterator[tuple[Node, int]]:
        """Live entries with ID >= ``low``, ascending, as (node, index)."""
        for node, start, end in self.forward_runs(low):
            for i in range(start, end):
                yield node, i

    def forward_runs(self, low: int) -> Iterator[tuple[Node, int, int]]:
        """:meth:`forward` a run of entries at a time: ``(node, start, end)`` for the live entries
        ``start`` .. ``end - 1`` of ``node``, between tombstones.

        No live entry >= ``low`` lies in a node before the last one whose
        master is <= ``low``; in ordered nodes after it every ID is above
        ``low``. In an unordered layout the runs are single entries.
        """
        nodes = self.nodes
        ni = max(bisect_right(self.masters, low) - 1, 0)
        if ni >= len(nodes):
            return
        if self.unordered:
            for node, i in self._forward_filtered(ni, low):
                yield node, i, i + 1
            return
        node = nodes[ni]
        i = node.seek(low)
        while True:
            dead = node.dead
            n = len(node.ms)
            if dead is None:
                if i < n:
                    yield node, i, n
            else:
                while (i := dead.find(0, i)) >= 0:  # the next live entry, then the next tombstone
                    end = dead.find(1, i)
                    if end < 0:
                        end = n
                    yield node, i, end
                    i = end
            ni += 1
            if ni == len(nodes):
                return
            node = nodes[ni]
            i = node.head

    def _forward_filtered(self, ni: int, low: int) -> Iterator[tuple[Node, int]]:
        for node in self.nodes[ni:]:
            for i in range(node.head, len(node.ms)):
                if not node.is_dead(i) and node.key(i) >= low:
                    yield node, i

    def backward(self, high: int) -> Iterator[tuple[Node, int]]:
        """Live entries with ID <= ``high``, descending, from the last node whose master is <= ``high``.

        Like 7.0's reverse iterator, the walk starts at that node (the last node
        when there is none), so an unordered node after it is not visited even
        if it holds IDs <= ``high``: 7.0.15 leaves those out of XREVRANGE.
        """
        nodes = self.nodes
        ni = bisect_right(self.masters, high) - 1
        if self.unordered:
            for node in reversed(nodes[:ni + 1] if ni >= 0 else nodes):
                for i in range(len(node.ms) - 1, node.head - 1, -1):
                    if not node.is_dead(i) and node.key(i) <= high:
                        yield node, i
            return
        if ni < 0:
            return
        node = nodes[ni]
        i = node.seek(high + 1) - 1
        while True:
            dead = node.dead
            while i >= 0:
                if dead is None or not dead[i]:
                    yield node, i
                i -= 1
            ni -= 1
            if ni < 0:
                return
            node = nodes[ni]
            i = len(node.ms) - 1

    # -- changes ------------------------------------------------------------------------

    def append(self, key: int, fields: Sequence[bytes], payload: int, max_entries: int, max_bytes: int) -> None:
        """streamAppendItem: ``payload`` is the total length of fields and values.

        The node's side (encoding the entry, counting its listpack bytes) is done here too:
        this runs for every XADD, and one call less shows.
        """
        names = (fields[0],) if len(fields) == 2 else tuple(fields[0::2])
        tail = self.nodes[-1] if self.nodes else None  # the last node in radix-tree order
        if tail is not None:
            limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
            live = tail.live
            deleted = tail.deleted
            lp_bytes = (tail.body + (2 if live < 128 else int_element_size(live))
                        + (2 if deleted < 128 else int_element_size(deleted)))
            if (max_entries and len(tail.ms) >= max_entries) or lp_bytes + payload >= limit:
                tail.seal()
                tail = None
            elif tail.ordered and key <= (tail.ms[-1] << 64 | tail.seq[-1]):  # not above a tombstone
                tail.ordered = False  # of its node (last_key(), inline: this runs for every XADD)
                self.unordered += 1
        if tail is None:
            tail = Node(key, names)
            masters = self.masters
            at = bisect_left(masters, key)
            if at == len(masters):
                masters.append(key)
                self.nodes.append(tail)
            elif masters[at] == key:
                # A tombstone master of an older node: raxInsert replaces that node, whose
                # entries drop out of every walk (7.0 loses them; its length still counts them).
                replaced = self.nodes[at]
                self.unordered -= not replaced.ordered
                self.lost += replaced.live  # LAYOUT-4
                self.nodes[at] = tail
            else:
                masters.insert(at, key)
                self.nodes.insert(at, tail)
            self.rax.insert(rax_key(key))
        # The entry goes at the end of the tail, in the node's encoding, its listpack bytes
        # counted (they decide where the next node starts).
        ms = key >> 64
        seq = key & U64
        data = tail.data
        if type(data) is not bytearray:  # sealed, and the tail again (a later node went, the limits grew)
            data = tail.data = bytearray(data)
        d = ms - tail.master_ms
        size = 4 if 0 <= d < 128 else 2 + _signed_delta_size(ms, tail.master_ms)  # flags, ms delta
        d = seq - tail.master_seq  # below the master's when the master came late in its millisecond
        size += 2 if 0 <= d < 128 else 3 if -4096 <= d < 4096 else _signed_delta_size(seq, tail.master_seq)
        n = len(names)
        if names == tail.fields:
            data.append(_SAME_FIELDS)
            for v in (fields[1],) if n == 1 else fields[1::2]:
                k = len(v)
                if k < 64 and (not k or v[0] not in _NUMERIC_START):
                    size += k + 2
                    data.append(k)
                    data += v
                else:
                    size += _element_size(v)
                    _put(data, v)
            elements = n + 3  # values, flags, ms delta, seq delta
        else:
            data.append(_OWN_FIELDS)
            for f in fields:
                _put(data, f)
                size += _element_size(f)
            size += _int_size(n)
            elements = 2 * n + 4  # and the field names with their count
        tail.body += size + (2 if elements < 128 else int_element_size(elements))
        tail.ms.append(ms)
        tail.seq.append(seq)
        tail.offs.append(len(data))
        if tail.dead is not None:
            tail.dead.append(0)
        tail.live += 1
        self.length += 1
        self.last_id = key
        self.entries_added = (self.entries_added + 1) & U64
        if self.length == 1:
            self.first_id = key

    def _drop_node(self, ni: int) -> None:
        self.unordered -= not self.nodes[ni].ordered
        self.rax.remove(rax_key(self.masters[ni]))
        del self.masters[ni]
        del self.nodes[ni]

    def delete(self, key: int) -> bool:
        """XDEL of one ID: False when it is not a live entry."""
        found = self.locate(key)
        if found is None:
            return False
        ni, i = found
        node = self.nodes[ni]
        self.length -= 1
        if node.live == 1:
            self._drop_node(ni)
        else:
            node.kill(i)
        if key > self.max_deleted:
            self.max_deleted = key
        return True

    def trim(self, maxlen: int | None, minid: int | None, approx: bool, limit: int) -> int:
        """streamTrim (XTRIM-9, XTRIM-10): the number of entries removed."""
        removed = 0
        nodes = self.nodes
        while nodes:
            if maxlen is not None and self.length <= maxlen:
                break
            node = nodes[0]
            live = node.live
            if limit and removed + live > limit:
                break
            if maxlen is not None:
                whole = self.length - live >= maxlen
            else:
                whole = node.last_key() < minid  # type: ignore[operator]
            if whole:
                self.length -= live
                removed += live
                self._drop_node(0)
                continue
            if approx:
                break
            i = node.head if node.ordered else 0  # LAYOUT-5: a tombstone may stop a MINID trim
            n = len(node.ms)
            while i < n:
                if maxlen is not None:
                    if self.length <= maxlen:
                        break
                elif node.key(i) >= minid:  # type: ignore[operator]
                    break
                if not node.is_dead(i):
                    node.kill(i)
                    self.length -= 1
                    removed += 1
                i += 1
            break
        if removed or not self.length:  # XTRIM-10: a trim that removed nothing leaves it
            self.first_id = self.recorded_first()
        return removed

    # -- lag (LAG-1 .. LAG-4; ``fixed``: LAG-DIALECT-1, the fixes of Redis 8.0 that Valkey has) ---------

    def tombstone_at_or_after(self, key: int, fixed: bool = False) -> bool:
        """streamRangeHasTombstones(key, +inf) (LAG-1); 7.0 also answers False when the newest deletion
        is older than the recorded first entry, the fixed code does not."""
        md = self.max_deleted
        if not self.length or not md or (not fixed and self.first_id > md):
            return False
        return key <= md

    def estimate_read(self, key: int, fixed: bool = False) -> int:
        """streamEstimateDistanceFromFirstEverEntry (LAG-2): entries-read of a group at ``key``, or -1."""
        added = self.entries_added
        if not added:
            return 0
        if not self.length and key <= self.last_id:
            return as_i64(added)
        if fixed and key and key < self.max_deleted:  # LAG-DIALECT-1
            return INVALID_ENTRIES_READ
        if key == self.last_id:
            return as_i64(added)
        if key > self.last_id:
            return INVALID_ENTRIES_READ
        if not self.max_deleted or self.max_deleted < self.first_id:
            if key < self.first_id:
                return as_i64(added - self.length)
            if key == self.first_id:
                return as_i64(added - self.length + 1)
        return INVALID_ENTRIES_READ

    def lag(self, group: Group, fixed: bool = False) -> int | None:
        """The lag XINFO shows (LAG-3); None is nil."""
        if not self.entries_added:
            return 0
        if group.entries_read != INVALID_ENTRIES_READ and not self.tombstone_at_or_after(group.last_id, fixed):
            return as_i64(as_i64(self.entries_added) - group.entries_read)
        estimate = self.estimate_read(group.last_id, fixed)
        if estimate == INVALID_ENTRIES_READ:
            return None
        return as_i64(as_i64(self.entries_added) - estimate)

    def advance(self, group: Group, keys: list[int], fixed: bool = False) -> None:
        """A ``>`` read delivers ``keys``, one after the other (LAG-4): 7.0 looks for tombstones from the
        entry, the fixed code from the group's old position, which must not be below the recorded first
        entry. With no entry ever deleted there is no tombstone to look for."""
        never_deleted = not self.max_deleted
        n = len(keys)
        if (never_deleted and 0 <= group.entries_read <= I64_MAX - n
                and (not fixed or group.last_id >= self.first_id)):
            # No tombstone and a counter that stays valid: every key is known, the counter counts them.
            group.entries_read += n
            group.last_id = keys[-1]
            return
        for key in keys:
            if fixed:
                known = (group.entries_read != INVALID_ENTRIES_READ and group.last_id >= self.first_id
                         and (never_deleted or not self.tombstone_at_or_after(group.last_id, True)))
            else:
                known = group.entries_read != INVALID_ENTRIES_READ and (
                    never_deleted or not self.tombstone_at_or_after(key))
            if known:
                group.entries_read = as_i64(group.entries_read + 1)
            else:
                group.entries_read = self.estimate_read(key, fixed)
            group.last_id = key
