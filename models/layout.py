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
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Hashable

from xspec.models.listpack import LISTPACK_OVERHEAD, element_size, int_element_size
from xspec.models.rax import Rax
from xspec.spec.ids import StreamID

LISTPACK_MAX_SIZE = 1 << 30  # STREAM_LISTPACK_MAX_SIZE: the byte limit when stream-node-max-bytes is 0 or larger

_U64 = (1 << 64) - 1
_FLAGS_SIZE = int_element_size(0)  # flags are 0..3: always a 1-byte integer
_MASTER_TERMINATOR_SIZE = int_element_size(0)
_KEY = struct.Struct(">QQ")


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
    """One listpack: its master, entry IDs in order with tombstone flags, and byte size."""

    __slots__ = ("master", "master_fields", "ids", "dead", "head", "live", "deleted", "body_bytes")

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

    def lp_bytes(self) -> int:
        """lpBytes: the listpack's total size."""
        return self.body_bytes + int_element_size(self.live) + int_element_size(self.deleted)

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
        return twin

    def freeze(self) -> Hashable:
        return (self.master, self.master_fields, tuple(self.ids), tuple(self.dead),
                self.live, self.deleted, self.body_bytes)


class NodeLayout:
    """A stream's nodes in master-ID order, their tombstones and byte sizes, and the rax over them."""

    __slots__ = ("_masters", "_nodes", "_length", "_rax", "_frozen")

    def __init__(self) -> None:
        self._masters: list[StreamID] = []
        self._nodes: list[_Node] = []
        self._length = 0  # live entries in all nodes (the stream's length)
        self._rax = Rax()
        self._frozen: Hashable | None = None

    # -- queries -------------------------------------------------------------

    @property
    def radix_tree_keys(self) -> int:
        """XINFO STREAM radix-tree-keys: the number of nodes."""
        return len(self._nodes)

    @property
    def radix_tree_nodes(self) -> int:
        """XINFO STREAM radix-tree-nodes: the rax's node count (1 for an empty stream)."""
        return self._rax.numnodes

    def first_id(self) -> StreamID | None:
        """The first entry of the first node, tombstone or not; None when there are no nodes."""
        return self._nodes[0].ids[0] if self._nodes else None

    def node_sizes(self) -> list[tuple[StreamID, int, int, int]]:
        """(master ID, live, deleted, listpack bytes) per node, for inspection and tests."""
        return [(n.master, n.live, n.deleted, n.lp_bytes()) for n in self._nodes]

    # -- changes ---------------------------------------------------------------

    def append(self, entry_id: StreamID, fields: tuple[bytes, ...], max_entries: int, max_bytes: int) -> None:
        """streamAppendItem: add an entry (greater than every ID so far) to the tail node or a new node.

        ``fields`` is the flat field, value, ... tuple; ``max_entries`` and
        ``max_bytes`` are stream-node-max-entries and stream-node-max-bytes.
        """
        self._frozen = None
        names = fields[0::2]
        tail = self._nodes[-1] if self._nodes else None
        if tail is not None:
            limit = max_bytes if 0 < max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
            if ((max_entries and tail.live + tail.deleted >= max_entries)
                    or tail.lp_bytes() + sum(map(len, fields)) >= limit):
                tail = None
        if tail is None:
            tail = _Node(entry_id, names)
            self._masters.append(entry_id)
            self._nodes.append(tail)
            self._rax.insert(rax_key(entry_id))
            same_fields = True
        else:
            same_fields = names == tail.master_fields
        master = tail.master
        size = (_FLAGS_SIZE + _delta_size(entry_id.ms, master.ms) + _delta_size(entry_id.seq, master.seq)
                + sum(map(element_size, fields[1::2])))
        elements = len(names) + 3  # values, flags, ms delta, seq delta
        if not same_fields:
            size += int_element_size(len(names)) + sum(map(element_size, names))
            elements += len(names) + 1  # field names and their count
        size += int_element_size(elements)
        tail.body_bytes += size
        tail.ids.append(entry_id)
        tail.dead.append(False)
        tail.live += 1
        self._length += 1

    def delete(self, entry_id: StreamID) -> None:
        """streamIteratorRemoveEntry: flag a live entry deleted; drop its node when it was the last live one."""
        self._frozen = None
        at = bisect_right(self._masters, entry_id) - 1
        if at < 0:
            raise KeyError(entry_id)
        node = self._nodes[at]
        index = bisect_right(node.ids, entry_id) - 1
        if node.ids[index] != entry_id or node.dead[index]:
            raise KeyError(entry_id)
        self._length -= 1
        if node.live == 1:
            self._remove_node(at)
            return
        node.dead[index] = True
        node.live -= 1
        node.deleted += 1
        while node.dead[node.head]:
            node.head += 1

    def trim(self, *, maxlen: int | None, minid: StreamID | None, approx: bool, limit: int) -> list[StreamID]:
        """streamTrim with MAXLEN ``maxlen`` or MINID ``minid``; returns the live IDs removed, in order.

        ``limit`` caps the entries removed (0: no cap); Redis never lets it split
        a node, so it only matters with ``approx``. Without a strategy nothing is trimmed.
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

        Redis walks from the node's first entry; starting after the leading
        tombstones decides the same, since passing a tombstone changes nothing.
        """
        ids = node.ids
        dead = node.dead
        count = 0
        index = node.head
        while index < len(ids):
            if maxlen is not None:
                if self._length <= maxlen:
                    break
            elif ids[index] >= minid:  # type: ignore[operator]
                break
            if not dead[index]:
                dead[index] = True
                removed.append(ids[index])
                self._length -= 1
                count += 1
            index += 1
        node.head = index
        node.live -= count
        node.deleted += count

    def _remove_node(self, at: int) -> None:
        self._rax.remove(rax_key(self._masters[at]))
        del self._masters[at]
        del self._nodes[at]

    # -- state -------------------------------------------------------------------

    def copy(self) -> NodeLayout:
        twin = NodeLayout.__new__(NodeLayout)
        twin._masters = self._masters.copy()
        twin._nodes = [n.clone() for n in self._nodes]
        twin._length = self._length
        twin._rax = self._rax.copy()
        twin._frozen = self._frozen
        return twin

    def freeze(self) -> Hashable:
        """A hashable value equal for layouts that behave alike: nodes, sizes and the rax's shape."""
        if self._frozen is None:
            self._frozen = (tuple(n.freeze() for n in self._nodes), self._rax.numnodes, self._rax.shape())
        return self._frozen
