"""Operations on consumer groups' pending entries lists, shared by XREADGROUP,
XCLAIM, XAUTOCLAIM, XACK and XGROUP.

The invariant these keep (spec INV-6, INV-7): every NACK in a group PEL is
owned by exactly one consumer of that group, and appears in that consumer's
PEL as the same object; a consumer PEL holds nothing else.
"""

from __future__ import annotations

from xspec.models.clock import Instant
from xspec.models.server import Call
from xspec.models.state import Consumer, Group, Nack
from xspec.spec.ids import StreamID

_U64_MASK = (1 << 64) - 1


def count_delivery(nack: Nack) -> None:
    """One more delivery: the count is an unsigned 64-bit integer in Redis, so it wraps."""
    nack.delivery_count = (nack.delivery_count + 1) & _U64_MASK


def reported_count(nack: Nack) -> int:
    """The delivery count as replies and propagation show it: Redis prints it as signed 64-bit.

    A count past 2^63 - 1 (possible after ``XCLAIM ... RETRYCOUNT 9223372036854775807``
    and one more delivery) shows as negative.
    """
    n = nack.delivery_count
    return n - (1 << 64) if n >= 1 << 63 else n


def create_consumer(group: Group, name: bytes, now: Instant) -> Consumer:
    """``streamCreateConsumer``: a new consumer whose seen-time is ``now``."""
    c = Consumer(name, seen_time=now)
    group.consumers[name] = c
    return c


def give(group: Group, entry_id: StreamID, nack: Nack, consumer: Consumer) -> None:
    """Make ``consumer`` the owner of ``nack`` (already or newly in the group PEL)."""
    old = nack.consumer
    if old is not None and old is not consumer:
        old.pel.pop(entry_id, None)
    nack.consumer = consumer
    consumer.pel[entry_id] = nack
    group.pel[entry_id] = nack


def remove(group: Group, entry_id: StreamID) -> Nack | None:
    """Drop a pending entry from the group PEL and its owner's PEL."""
    nack: Nack | None = group.pel.pop(entry_id, None)
    if nack is not None and nack.consumer is not None:
        nack.consumer.pel.pop(entry_id, None)
    return nack


def propagate_claim(call: Call, key: bytes, group: Group, consumer_name: bytes,
                    id_arg: bytes, nack: Nack) -> None:
    """``streamPropagateXCLAIM``: the idempotent XCLAIM that replicates one PEL change."""
    call.propagate([b"XCLAIM", key, group.name, consumer_name, b"0", id_arg,
                    b"TIME", Instant.propagated_ms(nack.delivery_time), b"RETRYCOUNT", reported_count(nack),
                    b"FORCE", b"JUSTID", b"LASTID", group.last_id.encode()])


def propagate_group_id(call: Call, key: bytes, group: Group) -> None:
    """``streamPropagateGroupID``: XGROUP SETID with ENTRIESREAD."""
    if not call.server.dialect.stream_counters:  # PROP-DIALECT-1: 6.2 has no ENTRIESREAD
        call.propagate([b"XGROUP", b"SETID", key, group.name, group.last_id.encode()])
        return
    call.propagate([b"XGROUP", b"SETID", key, group.name, group.last_id.encode(),
                    b"ENTRIESREAD", group.entries_read])


def propagate_consumer_creation(call: Call, key: bytes, group: Group, consumer_name: bytes) -> None:
    """``streamPropagateConsumerCreation``: XGROUP CREATECONSUMER."""
    call.propagate([b"XGROUP", b"CREATECONSUMER", key, group.name, consumer_name])
