"""The invariants of spec/invariants.md as executable predicates over model states.

``violations(server)`` returns one readable line per broken invariant (empty
when the state is sound). It reads the model's state objects but does not
depend on how commands change them, so it checks the model rather than
restating it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from xspec.spec.ids import I64_MAX, I64_MIN, MIN_ID, U64_MAX

if TYPE_CHECKING:
    from xspec.models.server import Server
    from xspec.models.state import Stream


def violations(server: Server) -> list[str]:
    """Every invariant violation in ``server``'s state, as text; [] if none."""
    out: list[str] = []
    from xspec.models.state import Stream
    for dbi, db in enumerate(server.dbs):
        for key, value in db.items():
            if isinstance(value, Stream):
                out.extend(f"db {dbi} key {key!r}: {v}" for v in _stream(value))
    out.extend(_clients(server))
    return out


def _stream(s: Stream) -> Iterator[str]:
    ids = list(s.entries.keys())
    ordered = not s.layout.disordered  # INV-1, INV-4: a disordered layout (LAYOUT-1) is exempt
    if ordered and any(a >= b for a, b in itertools.pairwise(ids)):
        yield "INV-1: live IDs are not strictly increasing"
    if ordered and ids and ids[-1] > s.last_id:
        yield f"INV-1: last live ID {ids[-1]} exceeds last-generated-id {s.last_id}"
    nodes = s.layout.node_sizes()  # (master id, live, deleted, bytes) per node
    live = sum(n[1] for n in nodes)
    if live != len(ids):
        yield f"INV-2: layout holds {live} live entries, stream has {len(ids)}"
    if not 0 <= s.entries_added <= U64_MAX:
        yield f"INV-3: entries-added {s.entries_added} is not an unsigned 64-bit value"
    elif s.entries_added < len(ids):  # Redis gets here only by wrapping the counter: 2^63 XADDs at least
        yield f"INV-3: entries-added {s.entries_added} < length {len(ids)}"
    expected_first = ids[0] if ids else MIN_ID
    if ordered and s.first_id != expected_first:
        yield f"INV-4: recorded-first-entry-id {s.first_id}, first live entry {expected_first}"
    if any(n[1] + n[2] == 0 for n in nodes):
        yield "INV-5: a node holds no entry at all"
    if s.layout.radix_tree_keys != len(nodes):
        yield f"INV-5: radix-tree-keys {s.layout.radix_tree_keys}, {len(nodes)} nodes"
    for g in s.groups.values():
        name = g.name
        for entry_id, nack in g.pel.items():
            owner = nack.consumer
            if owner is None or g.consumers.get(owner.name) is not owner:
                yield f"INV-6: group {name!r} PEL entry {entry_id} has no owner in the group"
            elif owner.pel.get(entry_id) is not nack:
                yield f"INV-6: group {name!r} PEL entry {entry_id} missing from owner {owner.name!r}'s PEL"
            if not 0 <= nack.delivery_count <= U64_MAX:
                yield f"INV-8: group {name!r} entry {entry_id} has delivery count {nack.delivery_count}, " \
                      "not an unsigned 64-bit value"
        for c in g.consumers.values():
            for entry_id, nack in c.pel.items():
                if g.pel.get(entry_id) is not nack or nack.consumer is not c:
                    yield f"INV-7: consumer {c.name!r} of group {name!r} holds {entry_id}, not its own in the group PEL"
        if not I64_MIN <= g.entries_read <= I64_MAX:  # any negative value once a counter wrapped (LAG-6)
            yield f"INV-8: group {name!r} entries-read {g.entries_read} is not a signed 64-bit value"


def _clients(server: Server) -> Iterator[str]:
    queued: dict[int, set[tuple[int, bytes]]] = {}
    for (db, key), q in server.blocking.items():
        if not q:
            yield f"INV-9: empty blocking queue for db {db} key {key!r}"
        if len(q) != len(set(q)):
            yield f"INV-9: a client is queued twice on db {db} key {key!r}"
        for cid in q:
            queued.setdefault(cid, set()).add((db, key))
    for c in server.clients.values():
        b = c.blocked
        want = set() if b is None else {(b.db, k) for k in b.keys}
        if queued.get(c.id, set()) != want:
            yield f"INV-9: client {c.id} blocked on {sorted(want)} but queued on {sorted(queued.get(c.id, set()))}"
        if b is not None and c.in_multi:
            yield f"INV-10: client {c.id} is blocked inside MULTI"
        if not c.in_multi and (c.multi_queue or c.multi_error):
            yield f"INV-11: client {c.id} has a transaction state outside MULTI"
    for cid in queued:
        if cid not in server.clients:
            yield f"INV-9: closed client {cid} is still queued"
