"""The physical layout of a Redis 7.0 stream: its listpack nodes and their radix tree.

Redis keeps a stream's entries in listpacks ("nodes"), each keyed in a radix
tree by the ID of its first entry, the "master ID". The layout shows through in
three places: approximate trimming removes whole nodes only, XINFO STREAM
reports ``radix-tree-keys`` (nodes) and ``radix-tree-nodes`` (the rax's node
count), and node boundaries depend on listpack byte sizes. This module tracks
every node's entry IDs, tombstones and exact byte size, and replays the rax.

What a node's listpack holds (t_stream.c, streamAppendItem):

* header counters: live entries, deleted entries, master field count, the
  master fields, a 0 terminator;
* per entry: flags, ms delta and seq delta from the master ID, then either the
  values only (when the fields equal the master's, SAMEFIELDS flag) or the field
  count and all fields and values, then the number of elements of the entry.

Normally IDs ascend along the walk Redis makes (nodes in radix-tree order,
entries in listpack order), and the model reads entries from ``Stream.entries``.
XSETID can lower last-generated-id below deleted IDs (LAYOUT-1), and then an
XADD can land below IDs already in the nodes: the layout becomes *disordered*
(``disordered``), keeps every entry's fields in its nodes, and the stream's
reads follow Redis's iterator exactly through :class:`EntryWalk` (LAYOUT-2 ..
LAYOUT-5). A disordered layout stays so until it has no node and lost nothing.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterator, Mapping

from xspec.models.rax import Rax
from xspec.spec.ids import MAX_ID, MIN_ID, StreamID
from xspec.spec.limits import LISTPACK_MAX_SIZE
from xspec.spec.listpack import LISTPACK_OVERHEAD, element_size, int_element_size

_U64 = (1 << 64) - 1
_FLAGS_SIZE = int_element_size(0)  # flags are 0..3: always a 1-byte integer
_MASTER_TERMINATOR_SIZE = int_element_size(0)
_KEY = struct.Struct(">QQ")

Fields = tuple[bytes, ...]


def _delta_size(new: int, base: int) -> int:
    """Bytes of ``new - base`` stored as Redis does: unsigned subtraction read back as int64."""
    if 0 <= new - base <= 127:
        return 2  # the common case: a small forward step, a 7-bit integer
    delta = (new - base) & _U64
    if delta > _U64 >> 1:
        delta -= 1 << 64
    return int_element_size(delta)


def rax_key(master: StreamID) -> bytes:
    """The 128-bit big-endian radix-tree key of a node."""
    return _KEY.pack(master.ms, master.seq)


class _Node:
    """One listpack: its master, entry IDs in order with tombstone flags, and byte size.

    ``values`` holds each entry's fields (None for tombstones) once the layout
    is disordered, and is None before.
    """

    __slots__ = ("master", "master_fields", "ids", "dead", "head", "live", "deleted", "body_bytes", "values",
                 "stored")

    def __init__(self, master: StreamID, master_fields: tuple[bytes, ...]) -> None:
        self.master = master
        self.master_fields = master_fields
        self.ids: list[StreamID] = []
        self.dead: list[bool] = []
        self.head = 0  # every entry before this index is a tombstone
        self.live = 0
        self.deleted = 0
        # Everything but the two counters, whose encodings vary with their values.
        self.body_bytes = (LISTPACK_OVERHEAD + int_element_size(len(master_fields))
                           + sum(map(element_size, master_fields)) + _MASTER_TERMINATOR_SIZE)
        self.values: list[Fields | None] | None = None
        # Every entry's fields as the listpack keeps them, tombstones included (DUMP writes them).
        self.stored: list[Fields] = []

    def lp_bytes(self) -> int:
        """lpBytes: the listpack's total size."""
        live, deleted = self.live, self.deleted
        # counts up to 127 (all of a default-sized node's) are 2-byte 7-bit integers
        return (self.body_bytes + (2 if live <= 127 else int_element_size(live))
                + (2 if deleted <= 127 else int_element_size(deleted)))

    def kill(self, index: int) -> None:
        """Flag live entry ``index`` deleted."""
        self.dead[index] = True
        self.live -= 1
        self.deleted += 1
        if self.values is not None:
            self.values[index] = None
        while self.head < len(self.dead) and self.dead[self.head]:
            self.head += 1

    def clone(self) -> _Node:
        twin = _Node.__new__(_Node)
        twin.master = self.master
        twin.master_fields = self.master_fields
        twin.ids = self.ids.copy()
        twin.dead = self.dead.copy()
        twin.head = self.head
        twin.live = self.live
        twin.deleted = self.deleted
        twin.body_bytes = self.body_bytes
        twin.values = None if self.values is None else self.values.copy()
        twin.stored = self.stored.copy()
        return twin

    def freeze(self) -> Hashable:
        return (self.master, self.master_fields, tuple(self.ids), tuple(self.dead),
                self.live, self.deleted, self.body_bytes, None if self.values is None else tuple(self.values),
                tuple(self.stored))


class EntryWalk:
    """streamIteratorStart + streamIteratorGetID over a disordered layout: the live entries Redis's
    iterator emits for [``start``, ``end``], in the order it emits them (LAYOUT-2).

    Forward, the walk starts at the last node whose master is <= ``start`` (the
    first node when there is none), takes the live entries >= ``start`` in
    listpack order and node after node, and ends at the first of them above
    ``end``. Backward, it starts at the last node whose master is <= ``end``
    (the last node when there is none), goes back through listpacks and nodes
    taking the live entries <= ``end``, and ends at the first of them below
    ``start``. ``ran_off`` tells, once the walk is over, whether it ran off the
    tree rather than stopping at an entry out of range (errno, XADD-14). The
    layout must not change while a walk is in use.
    """

    __slots__ = ("ran_off", "_steps")

    def __init__(self, layout: NodeLayout, start: StreamID, end: StreamID, rev: bool) -> None:
        self.ran_off = False
        self._steps = self._backward(layout, start, end) if rev else self._forward(layout, start, end)

    def __iter__(self) -> Iterator[tuple[StreamID, Fields]]:
        """The walk's entries as (ID, fields)."""
        for node, index in self._steps:
            fields = node.values[index]  # type: ignore[index]
            assert fields is not None, "a disordered layout keeps every live entry's fields"
            yield node.ids[index], fields

    def positions(self) -> Iterator[tuple[_Node, int]]:
        """The walk's entries as (node, index in the node)."""
        return self._steps

    def _forward(self, layout: NodeLayout, start: StreamID, end: StreamID) -> Iterator[tuple[_Node, int]]:
        nodes = layout._nodes
        for at in range(max(bisect_right(layout._masters, start) - 1, 0), len(nodes)):
            node = nodes[at]
            ids = node.ids
            dead = node.dead
            for index in range(len(ids)):
                if dead[index] or ids[index] < start:
                    continue
                if ids[index] > end:
                    return
                yield node, index
        self.ran_off = True

    def _backward(self, layout: NodeLayout, start: StreamID, end: StreamID) -> Iterator[tuple[_Node, int]]:
        nodes = layout._nodes
        at = bisect_right(layout._masters, end) - 1
        if at < 0:
            at = len(nodes) - 1
        for node in reversed(nodes[:at + 1]):
            ids = node.ids
            dead = node.dead
            for index in range(len(ids) - 1, -1, -1):
                if dead[index] or ids[index] > end:
                    continue
                if ids[index] < start:
                    return
                yield node, index
        self.ran_off = True


class NodeLayout:
    """A stream's nodes in master-ID order, their tombstones and byte sizes, and the rax over them."""

    __slots__ = ("_masters", "_nodes", "_length", "_rax", "_frozen", "disordered", "lost")

    def __init__(self) -> None:
        self._masters: list[StreamID] = []
        self._nodes: list[_Node] = []
        self._length = 0  # the stream's length: live entries in all nodes, and the lost ones
        self._rax = Rax()
        self._frozen: Hashable | None = None
        self.disordered = False  # some walk may meet IDs out of order (see the module docstring)
        self.lost = 0  # live entries of nodes that a new node with the same master replaced

    # -- queries -------------------------------------------------------------

    @property
    def radix_tree_keys(self) -> int:
        """XINFO STREAM radix-tree-keys: the number of nodes."""
        return len(self._nodes)

    @property
    def radix_tree_nodes(self) -> int:
        """XINFO STREAM radix-tree-nodes: the rax's node count (1 for an empty stream)."""
        return self._rax.numnodes

    @property
    def length(self) -> int:
        """The stream's length as Redis counts it: lost entries included (LAYOUT-4)."""
        return self._length

    def first_id(self) -> StreamID | None:
        """The first entry of the first node, tombstone or not; None when there are no nodes."""
        return self._nodes[0].ids[0] if self._nodes else None

    def node_sizes(self) -> list[tuple[StreamID, int, int, int]]:
        """(master ID, live, deleted, listpack bytes) per node, for inspection and tests."""
        return [(n.master, n.live, n.deleted, n.lp_bytes()) for n in self._nodes]

    # -- the walks of a disordered layout (LAYOUT-2) -------------------------------

    def walk(self, start: StreamID, end: StreamID, rev: bool = False) -> EntryWalk:
        """Redis's stream iterator over [``start``, ``end``]: see :class:`EntryWalk`."""
        return EntryWalk(self, start, end, rev)

    def lookup(self, entry_id: StreamID) -> tuple[Fields | None, bool]:
        """streamEntryExists, or a one-entry range read: the fields of ``entry_id`` as the walk over
        [``entry_id``, ``entry_id``] finds it (None when it does not), and whether it ran off the tree."""
        walk = self.walk(entry_id, entry_id)
        for _, fields in walk:
            return fields, False
        return None, walk.ran_off

    def first_live(self) -> StreamID | None:
        """streamGetEdgeID(first, skipping tombstones): the first live entry of a forward walk."""
        for entry_id, _ in self.walk(MIN_ID, MAX_ID):
            return entry_id
        return None

    def last_live(self) -> StreamID | None:
        """streamLastValidID: the first live entry of a backward walk from the last node (LAYOUT-3)."""
        for entry_id, _ in self.walk(MIN_ID, MAX_ID, rev=True):
            return entry_id
        return None

    def live_entries(self) -> dict[StreamID, Fields]:
        """The live entries the walks can reach, by ID (the later of two equal IDs wins), in walk order."""
        out: dict[StreamID, Fields] = {}
        for node in self._nodes:
            assert node.values is not None
            for entry_id, fields in zip(node.ids, node.values, strict=True):
                if fields is not None:
                    out[entry_id] = fields
        return out

    # -- changes ---------------------------------------------------------------

    def append(self, entry_id: StreamID, fields: Fields, max_entries: int, max_bytes: int,
               entries: Mapping[StreamID, Fields] | None = None) -> None:
        """streamAppendItem: add an entry to the node with the highest master, or to a new node.

        ``fields`` is the flat field, value, ... tuple; ``max_entries`` and
        ``max_bytes`` are stream-node-max-entries and stream-node-max-bytes.
        ``entries`` (the stream's live entries by ID) gives the nodes their
        fields when this append disorders the layout; a layout kept without
        them tracks sizes only.
        """
        self._frozen = None
        names = fields[0::2]
        tail = self._nodes[-1] if self._nodes else None  # raxSeek "$": the node with the highest master
        if tail is not None:
            if not self.disordered and entry_id <= tail.ids[-1]:
                self._disorder(entries or {})  # LAYOUT-1
            limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
            if ((max_entries and tail.live + tail.deleted >= max_entries)
                    or tail.lp_bytes() + sum(map(len, fields)) >= limit):
                tail = None
        if tail is None:
            tail = _Node(entry_id, names)
            if self.disordered:
                tail.values = []
                self._insert_node(tail)
            else:
                self._masters.append(entry_id)
                self._nodes.append(tail)
                self._rax.insert(rax_key(entry_id))
            same_fields = True
        else:
            same_fields = names == tail.master_fields
        master = tail.master
        ms_delta = entry_id.ms - master.ms
        seq_delta = entry_id.seq - master.seq
        size = (_FLAGS_SIZE + sum(map(element_size, fields[1::2]))
                # a small forward step, the common case, inline: a 2-byte 7-bit integer
                + (2 if 0 <= ms_delta <= 127 else _delta_size(entry_id.ms, master.ms))
                + (2 if 0 <= seq_delta <= 127 else _delta_size(entry_id.seq, master.seq)))
        elements = len(names) + 3  # values, flags, ms delta, seq delta
        if not same_fields:
            size += int_element_size(len(names)) + sum(map(element_size, names))
            elements += len(names) + 1  # field names and their count
        size += int_element_size(elements)
        tail.body_bytes += size
        tail.ids.append(entry_id)
        tail.dead.append(False)
        if tail.values is not None:
            tail.values.append(fields)
        tail.stored.append(fields)
        tail.live += 1
        self._length += 1

    def _disorder(self, entries: Mapping[StreamID, Fields]) -> None:
        """Switch to exact walks: every node keeps its entries' fields from now on (LAYOUT-1)."""
        self.disordered = True
        for node in self._nodes:
            node.values = [None if dead else entries.get(i) for i, dead in zip(node.ids, node.dead, strict=True)]

    def _insert_node(self, node: _Node) -> None:
        """raxInsert of a new node in a disordered layout; a node with the same master is replaced (LAYOUT-4)."""
        at = bisect_left(self._masters, node.master)
        if at < len(self._masters) and self._masters[at] == node.master:
            self.lost += self._nodes[at].live  # still counted in the length, never walked again
            self._nodes[at] = node
            return
        self._masters.insert(at, node.master)
        self._nodes.insert(at, node)
        self._rax.insert(rax_key(node.master))

    def delete(self, entry_id: StreamID) -> bool:
        """XDEL of one ID (streamDeleteItem): flag the live entry deleted, dropping its node when it was
        the last live one; False when it is not found."""
        self._frozen = None
        if self.disordered:
            return self._delete_walked(entry_id)
        at = bisect_right(self._masters, entry_id) - 1
        if at < 0:
            return False
        node = self._nodes[at]
        index = bisect_right(node.ids, entry_id) - 1
        if node.ids[index] != entry_id or node.dead[index]:
            return False
        self._kill(at, index)
        return True

    def _delete_walked(self, entry_id: StreamID) -> bool:
        """``delete`` in a disordered layout: the entry is found by the walk, or not at all (LAYOUT-2)."""
        for node, index in self.walk(entry_id, entry_id).positions():
            self._kill(self._nodes.index(node), index)
            return True
        return False

    def _kill(self, at: int, index: int) -> None:
        self._length -= 1
        node = self._nodes[at]
        if node.live == 1:
            self._remove_node(at)
        else:
            node.kill(index)

    def trim(self, *, maxlen: int | None, minid: StreamID | None, approx: bool, limit: int) -> list[StreamID]:
        """streamTrim with MAXLEN ``maxlen`` or MINID ``minid``; returns the live IDs removed, in order.

        ``limit`` caps the entries removed (0: no cap; negative, as 6.2 can make it:
        nothing is removed); Redis never lets it split a node, so it only matters
        with ``approx``. Without a strategy nothing is trimmed.
        """
        removed: list[StreamID] = []
        if maxlen is None and minid is None:
            return removed
        self._frozen = None
        while self._nodes:
            if maxlen is not None and self._length <= maxlen:
                break
            node = self._nodes[0]
            entries = node.live
            if limit and len(removed) + entries > limit:
                break
            if maxlen is not None:
                remove_node = self._length - entries >= maxlen
            else:
                assert minid is not None
                remove_node = node.ids[-1] < minid  # the node's last ID, tombstone or not
            if remove_node:
                removed.extend(i for i, dead in zip(node.ids[node.head:], node.dead[node.head:], strict=True)
                               if not dead)
                self._length -= entries
                self._remove_node(0)
                continue
            if approx:
                break
            self._trim_inside(node, maxlen, minid, removed)
            break
        return removed

    def _trim_inside(self, node: _Node, maxlen: int | None, minid: StreamID | None, removed: list[StreamID]) -> None:
        """Flag entries deleted from the head of ``node`` until the trim's bound; the node stays, maybe empty.

        Redis walks from the node's first entry and a MINID trim stops at the
        first ID at or above the bound, tombstone or not. In order, starting
        after the leading tombstones decides the same.
        """
        ids = node.ids
        dead = node.dead
        count = 0
        index = node.head
        if self.disordered:
            index = 0  # LAYOUT-5: a leading tombstone may stop a MINID trim
        while index < len(ids):
            if maxlen is not None:
                if self._length <= maxlen:
                    break
            elif ids[index] >= minid:  # type: ignore[operator]
                break
            if not dead[index]:
                dead[index] = True
                if node.values is not None:
                    node.values[index] = None
                removed.append(ids[index])
                self._length -= 1
                count += 1
            index += 1
        node.head = max(node.head, index)
        node.live -= count
        node.deleted += count

    def _remove_node(self, at: int) -> None:
        self._rax.remove(rax_key(self._masters[at]))
        del self._masters[at]
        del self._nodes[at]
        if not self._nodes and not self.lost:
            self.disordered = False  # nothing out of order is left

    # -- DUMP and RESTORE (spec/rules/dump.md) ------------------------------------------

    def dump_nodes(self) -> list[tuple[StreamID, list[tuple[StreamID, Fields, bool]]]]:
        """Each node's master and its entries in listpack order: (ID, fields, deleted) (DUMP-3)."""
        return [(n.master, list(zip(n.ids, n.stored, n.dead, strict=True))) for n in self._nodes]

    @classmethod
    def restored(cls, nodes: list[tuple[StreamID, list[tuple[StreamID, Fields, bool]]]],
                 lp_bytes: list[int]) -> NodeLayout:
        """The layout of nodes loaded from an RDB value (RESTORE-8): ``nodes`` in master order, as
        :meth:`dump_nodes` gives them, and each node's listpack size. The layout is disordered when
        IDs do not ascend strictly along the walk (LAYOUT-1)."""
        layout = cls()
        previous: StreamID | None = None
        for (master, entries), size in zip(nodes, lp_bytes, strict=True):
            names = entries[0][1][0::2] if entries else ()
            node = _Node(master, names)
            for entry_id, fields, dead in entries:
                if previous is not None and entry_id <= previous:
                    layout.disordered = True
                previous = entry_id
                node.ids.append(entry_id)
                node.dead.append(dead)
                node.stored.append(fields)
                if dead:
                    node.deleted += 1
                else:
                    node.live += 1
            while node.head < len(node.dead) and node.dead[node.head]:
                node.head += 1
            node.body_bytes = size - node.lp_bytes() + node.body_bytes
            layout._masters.append(master)
            layout._nodes.append(node)
            layout._rax.insert(rax_key(master))
            layout._length += node.live
        if layout.disordered:
            for node in layout._nodes:
                node.values = [None if dead else fields for fields, dead in zip(node.stored, node.dead, strict=True)]
        return layout

    # -- state -------------------------------------------------------------------

    def copy(self) -> NodeLayout:
        twin = NodeLayout.__new__(NodeLayout)
        twin._masters = self._masters.copy()
        twin._nodes = [n.clone() for n in self._nodes]
        twin._length = self._length
        twin._rax = self._rax.copy()
        twin._frozen = self._frozen
        twin.disordered = self.disordered
        twin.lost = self.lost
        return twin

    def freeze(self) -> Hashable:
        """A hashable value equal for layouts that behave alike: nodes, sizes and the rax's shape."""
        if self._frozen is None:
            self._frozen = (tuple(n.freeze() for n in self._nodes), self._rax.numnodes, self._rax.shape(),
                            self.disordered, self.lost)
        return self._frozen
