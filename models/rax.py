"""The shape of a Redis radix tree (rax.c), tracked so its node count is exact.

Redis reports a stream's ``radix-tree-nodes`` straight from the rax's node
counter, and the rax's shape depends on the order of inserts and removals, not
only on the keys it holds: insertion splits compressed nodes, removal frees
childless nodes and recompresses only the chain it touched. This module replays
both algorithms step for step on a tree of small node objects (no values are
stored; a stream keeps its listpacks elsewhere).

A node is either *compressed* (a run of two or more edge bytes leading to a
single child) or *normal* (one edge byte per child, in byte order; a leaf has
none). ``len(edges)`` is Redis's ``node->size``. ``iskey`` marks a node whose
path spells a stored key.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any


class RaxNode:
    """One rax node: its edge bytes and the children they lead to."""

    __slots__ = ("iskey", "iscompr", "edges", "children")

    def __init__(self, edges: bytes = b"", children: list[RaxNode] | None = None,
                 iscompr: bool = False, iskey: bool = False) -> None:
        self.iskey = iskey
        self.iscompr = iscompr
        self.edges = edges
        self.children: list[RaxNode] = children if children is not None else []

    def add_child(self, byte: int) -> RaxNode:
        """Give a normal node a new empty child under ``byte``, keeping edges in byte order."""
        at = bisect_left(self.edges, byte)
        child = RaxNode()
        self.edges = self.edges[:at] + bytes((byte,)) + self.edges[at:]
        self.children.insert(at, child)
        return child

    def remove_child(self, child: RaxNode) -> None:
        """Drop ``child``; a compressed node becomes an empty normal node."""
        if self.iscompr:
            self.iscompr = False
            self.edges = b""
            self.children = []
            return
        at = _index_of(self.children, child)
        self.edges = self.edges[:at] + self.edges[at + 1:]
        del self.children[at]

    def clone(self) -> RaxNode:
        return RaxNode(self.edges, [c.clone() for c in self.children], self.iscompr, self.iskey)

    def shape(self) -> tuple[Any, ...]:
        return (self.iskey, self.iscompr, self.edges, tuple(c.shape() for c in self.children))


def _index_of(nodes: list[RaxNode], node: RaxNode) -> int:
    for at, candidate in enumerate(nodes):
        if candidate is node:
            return at
    raise ValueError("not a child")


class Rax:
    """A radix tree's shape and its ``numnodes``/``numele`` counters (1 node when empty)."""

    __slots__ = ("head", "numnodes", "numele")

    def __init__(self) -> None:
        self.head = RaxNode()
        self.numnodes = 1
        self.numele = 0

    def copy(self) -> Rax:
        twin = Rax()
        twin.head = self.head.clone()
        twin.numnodes = self.numnodes
        twin.numele = self.numele
        return twin

    def shape(self) -> tuple[Any, ...]:
        return self.head.shape()

    def _walk(self, key: bytes, stack: list[RaxNode] | None
              ) -> tuple[int, RaxNode, RaxNode | None, int, int]:
        """raxLowWalk: (bytes matched, stop node, its parent, the parent's child index for it,
        split position in a compressed stop node)."""
        h = self.head
        parent: RaxNode | None = None
        link = 0
        i = 0
        j = 0
        n = len(key)
        while h.edges and i < n:
            edges = h.edges
            if h.iscompr:
                j = 0
                size = len(edges)
                while j < size and i < n and edges[j] == key[i]:
                    j += 1
                    i += 1
                if j != size:
                    break
                child_at = 0
            else:
                child_at = edges.find(key[i])
                if child_at < 0:
                    break
                i += 1
            if stack is not None:
                stack.append(h)
            parent = h
            link = child_at
            h = h.children[child_at]
            j = 0
        return i, h, parent, link, j

    def _relink(self, parent: RaxNode | None, link: int, new: RaxNode) -> None:
        """Point ``parent``'s child ``link`` (the head when there is no parent) at ``new``."""
        if parent is None:
            self.head = new
        else:
            parent.children[link] = new

    def insert(self, key: bytes) -> bool:
        """raxInsert: add ``key``; False when it was already present (the tree is unchanged)."""
        i, h, parent, link, j = self._walk(key, None)
        n = len(key)
        if i == n and (not h.iscompr or j == 0):
            if h.iskey:
                return False
            h.iskey = True
            self.numele += 1
            return True

        if h.iscompr and i != n:
            # Mismatch inside a compressed node: split it around the mismatching byte.
            nxt = h.children[0]
            postfix_edges = h.edges[j + 1:]
            split = RaxNode(h.edges[j:j + 1], [nxt])
            if postfix_edges:
                split.children[0] = RaxNode(postfix_edges, [nxt], iscompr=len(postfix_edges) > 1)
                self.numnodes += 1
            if j == 0:
                split.iskey = h.iskey
                self._relink(parent, link, split)
            else:
                trimmed = RaxNode(h.edges[:j], [split], iscompr=j > 1, iskey=h.iskey)
                self._relink(parent, link, trimmed)
                self.numnodes += 1
            h = split
        elif h.iscompr:
            # The key ends inside a compressed node: cut it, the lower half holds the key.
            postfix_edges = h.edges[j:]
            postfix = RaxNode(postfix_edges, [h.children[0]], iscompr=len(postfix_edges) > 1, iskey=True)
            trimmed = RaxNode(h.edges[:j], [postfix], iscompr=j > 1, iskey=h.iskey)
            self._relink(parent, link, trimmed)
            self.numnodes += 1
            self.numele += 1
            return True

        while i < n:
            if not h.edges and n - i > 1:
                child = RaxNode()
                h.iscompr = True
                h.edges = key[i:]
                h.children = [child]
                i = n
            else:
                child = h.add_child(key[i])
                i += 1
            self.numnodes += 1
            h = child
        h.iskey = True
        self.numele += 1
        return True

    def remove(self, key: bytes) -> bool:
        """raxRemove: delete ``key``, freeing and recompressing nodes as Redis does."""
        stack: list[RaxNode] = []
        i, h, _, _, j = self._walk(key, stack)
        if i != len(key) or (h.iscompr and j != 0) or not h.iskey:
            return False
        h.iskey = False
        self.numele -= 1

        trycompress = False
        if not h.edges:
            child: RaxNode | None = None
            while h is not self.head:
                child = h
                self.numnodes -= 1
                h = stack.pop()
                if h.iskey or (not h.iscompr and len(h.edges) != 1):
                    break
            if child is not None:
                h.remove_child(child)
                if len(h.edges) == 1 and not h.iskey:
                    trycompress = True
        elif len(h.edges) == 1:
            trycompress = True

        if trycompress:
            self._recompress(h, stack)
        return True

    def _recompress(self, h: RaxNode, stack: list[RaxNode]) -> None:
        """Merge the chain of single-child non-key nodes through ``h`` into one compressed node."""
        parent: RaxNode | None
        while True:
            parent = stack.pop() if stack else None
            if parent is None or parent.iskey or (not parent.iscompr and len(parent.edges) != 1):
                break
            h = parent
        start = h
        merged = [h.edges]
        nodes = 1
        while h.edges:
            h = h.children[-1]
            if h.iskey or (not h.iscompr and len(h.edges) != 1):
                break
            nodes += 1
            merged.append(h.edges)
        if nodes > 1:
            self.numnodes += 1 - nodes
            merged_node = RaxNode(b"".join(merged), [h], iscompr=True)
            self._relink(parent, _index_of(parent.children, start) if parent else 0, merged_node)
