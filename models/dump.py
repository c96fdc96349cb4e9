"""DUMP and RESTORE (spec/rules/dump.md): a value as an RDB payload, and back.

The payload codec is the spec's (:mod:`xspec.spec.rdb`); this module adapts
the model's values to its neutral records and back, and runs the commands in
the order Redis's ``restoreCommand`` checks them.

Key expiry is outside the model's scope (SET-7): a RESTORE with a TTL is
checked, propagated and decided (an expiry already past creates nothing) as
Redis does, but the key then never expires (RESTORE-7). IDLETIME and FREQ set
the key's LRU or LFU data, which the model does not hold: they are only
parsed and checked (RESTORE-1).
"""

from __future__ import annotations

from sortedcontainers import SortedDict

from xspec.models.clock import Duration, Instant
from xspec.models.lag import estimate_entries_read
from xspec.models.layout import NodeLayout
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import Call, CommandError, command
from xspec.models.state import (
    NEVER_ACTIVE,
    Consumer,
    Group,
    HashValue,
    ListValue,
    Nack,
    SetValue,
    Stream,
    Value,
    ZSetValue,
)
from xspec.spec import commands as table
from xspec.spec import rdb
from xspec.spec.errors import (
    BAD_DATA_FORMAT,
    BUSYKEY,
    DUMP_PAYLOAD_WRONG,
    INVALID_FREQ,
    INVALID_IDLETIME,
    INVALID_TTL,
)
from xspec.spec.ids import I64_MAX, MAX_ID, MIN_ID, as_i64, c_string, parse_ll
from xspec.spec.listpack import as_listpack_int
from xspec.spec.resp import NULL_BULK, OK, Bulk, Reply

_U64 = (1 << 64) - 1
_SET_MAX_INTSET_ENTRIES = 512
_SET_MAX_LISTPACK_ENTRIES = 128
_SET_MAX_LISTPACK_VALUE = 64


class NotModelled(CommandError):
    """A RESTORE of a value type the model does not hold (hashes, sorted sets, modules)."""


# -- the model's values as RDB records ----------------------------------------------------------


def _stream_record(s: Stream) -> rdb.StreamRecord:
    # The payload holds clock readings as they are: on the checker's symbolic clock, Instant.id_ms
    # settles each on one feasible value (a branch of its search), as for an XADD ID.
    nodes = [rdb.StreamNode(master, [rdb.StreamEntry(i, fields, dead) for i, fields, dead in entries])
             for master, entries in s.layout.dump_nodes()]
    groups = []
    for g in s.groups.values():
        pending = [rdb.PendingRecord(i, Instant.id_ms(n.delivery_time), n.delivery_count)
                   for i, n in g.pel.items()]
        consumers = [rdb.ConsumerRecord(c.name, Instant.id_ms(c.seen_time),
                                        Instant.id_ms(c.active_time), list(c.pel))
                     for c in g.consumers.values()]
        groups.append(rdb.GroupRecord(g.name, g.last_id, g.entries_read & _U64, pending, consumers))
    return rdb.StreamRecord(nodes, s.length, s.last_id, s.first_id, s.max_deleted_id, s.entries_added, groups)


def value_record(v: Value) -> rdb.RdbValue:
    """The neutral record of a model value (DUMP-3)."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, Stream):
        return _stream_record(v)
    if isinstance(v, ListValue):
        return rdb.ListRecord(list(v.items))
    if isinstance(v, ZSetValue):
        return rdb.ZSetRecord([(m, score) for score, m in v.order], v.encoding)
    if isinstance(v, HashValue):
        return rdb.HashRecord(list(v.fields.items()), v.encoding)  # HASH-12
    return rdb.SetRecord(v.ordered(), v.encoding)


# -- RDB records as the model's values ------------------------------------------------------------


def _restored_stream(r: rdb.StreamRecord, call: Call) -> Stream:
    """rdbLoadObject of a stream (RESTORE-8): nodes as loaded, counters from the payload or, for
    type 15, computed as 7.0 computes them (RESTORE-9)."""
    s = Stream()
    nodes = [(n.master, [(e.id, e.fields, e.deleted) for e in n.entries]) for n in r.nodes]
    s.layout = NodeLayout.restored(nodes, [len(rdb.stream_node_listpack(n)) for n in r.nodes])
    if s.layout.disordered:
        s.entries = SortedDict(s.layout.live_entries())
    else:
        s.entries = SortedDict({e.id: e.fields for n in r.nodes for e in n.entries if not e.deleted})
    s.last_id = r.last_id
    fixed = call.server.dialect.lag_fixes
    if r.entries_added is None:  # RESTORE-9: a 6.2 payload
        s.max_deleted_id = MIN_ID
        s.entries_added = r.length
        if s.layout.disordered:
            first = s.layout.first_live()
        else:
            first = s.entries.peekitem(0)[0] if s.entries else None
        s.first_id = MAX_ID if first is None else first  # streamGetEdgeID finds no entry: the maximum
    else:
        s.first_id = r.first_id or MIN_ID
        s.max_deleted_id = r.max_deleted_id or MIN_ID
        s.entries_added = r.entries_added
    now_active = call.server.dialect.consumer_active_time
    for gr in r.groups:
        entries_read = (as_i64(gr.entries_read) if gr.entries_read is not None
                        else estimate_entries_read(s, gr.last_id, fixed))
        g = Group(gr.name, gr.last_id, entries_read)
        nacks = {p.id: Nack(Instant(p.delivery_time), p.delivery_count, None) for p in gr.pending}
        for p in gr.pending:
            g.pel[p.id] = nacks[p.id]
        for cr in gr.consumers:
            active = cr.active_time if cr.active_time is not None else cr.seen_time  # RESTORE-10
            c = Consumer(cr.name, Instant(cr.seen_time), Instant(active) if now_active else NEVER_ACTIVE)
            for pid in cr.pending:
                nacks[pid].consumer = c
                c.pel[pid] = nacks[pid]
            g.consumers[cr.name] = c
        s.groups[gr.name] = g
        s.groups_allocated = True
    return s


def _restored_set(r: rdb.SetRecord, set_listpack: bool) -> SetValue:
    """The encoding a loaded set gets (RESTORE-11): an intset or listpack stays one; a plain member
    list becomes the smallest encoding that holds it."""
    if r.encoding != "hashtable":
        return SetValue(r.members, r.encoding if set_listpack or r.encoding == "intset" else "hashtable")
    if len(r.members) <= _SET_MAX_INTSET_ENTRIES and all(as_listpack_int(m) is not None for m in r.members):
        return SetValue(r.members, "intset")
    if (set_listpack and len(r.members) <= _SET_MAX_LISTPACK_ENTRIES
            and all(len(m) <= _SET_MAX_LISTPACK_VALUE for m in r.members)):
        return SetValue(r.members, "listpack")
    return SetValue(r.members, "hashtable")


def restored_zset(r: rdb.ZSetRecord, unsigned_zero: bool) -> ZSetValue:
    """A loaded sorted set (RESTORE-11): its members, in the encoding loading gives (:meth:`ZSetValue.reload`)."""
    value = ZSetValue(r.encoding)
    for member, score in r.pairs:
        value.insert(member, score)
    value.reload(unsigned_zero)
    return value


def restored_hash(r: rdb.HashRecord) -> HashValue:
    """A loaded hash (HASH-12): a listpack stays one while it fits the listpack limits, a hash table
    that fits becomes one, in the payload's order."""
    value = HashValue()
    value.fields.update(r.pairs)
    if len(r.pairs) > 128 or any(len(f) > 64 or len(v) > 64 for f, v in r.pairs):
        value.encoding = "hashtable"
    return value


def restored_value(record: rdb.RdbValue, call: Call) -> Value:
    """The model value of a decoded payload."""
    if isinstance(record, bytes):
        return record
    if isinstance(record, rdb.StreamRecord):
        return _restored_stream(record, call)
    if isinstance(record, rdb.ListRecord):
        return ListValue(record.items)
    if isinstance(record, rdb.ZSetRecord):
        return restored_zset(record, not call.server.dialect.zset_ziplist)
    if isinstance(record, rdb.HashRecord):
        return restored_hash(record)
    return _restored_set(record, rdb.rdb_format(call.server.dialect.rdb_version).set_listpack)


# -- the commands ------------------------------------------------------------------------------


@command("dump")
def dump(call: Call) -> Reply:
    v = call.lookup(call.argv[1])
    if v is None:  # DUMP-1
        return NULL_BULK
    return Bulk(rdb.dump_payload(value_record(v), call.server.dialect.rdb_version))  # DUMP-2, DUMP-3


def _parse_options(argv: list[bytes]) -> tuple[bool, bool]:
    """RESTORE's options after the payload (RESTORE-1): (REPLACE, ABSTTL)."""
    replace = absttl = False
    idle = freq = -1
    j = 4
    while j < len(argv):
        opt = c_string(argv[j]).lower()
        more = len(argv) - j - 1
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more >= 1 and freq == -1:
            value = parse_ll(argv[j + 1])
            if value is None:
                raise CommandError(table.NOT_INTEGER)
            if value < 0:
                raise CommandError(INVALID_IDLETIME)
            idle = value
            j += 1
        elif opt == b"freq" and more >= 1 and idle == -1:
            value = parse_ll(argv[j + 1])
            if value is None:
                raise CommandError(table.NOT_INTEGER)
            if not 0 <= value <= 255:
                raise CommandError(INVALID_FREQ)
            freq = value
            j += 1
        else:
            raise CommandError(table.SYNTAX)
        j += 1
    return replace, absttl


def payload_accepted(payload: bytes, server_version: int) -> bool:
    """verifyDumpPayload (RESTORE-4): a footer, a version this server loads, the right CRC."""
    version = rdb.payload_version(payload)
    return version is not None and rdb.version_accepted(version, server_version) and rdb.checksum_ok(payload)


@command("restore")
def restore(call: Call) -> Reply:
    argv = call.argv
    key = argv[1]
    replace, absttl = _parse_options(argv)  # RESTORE-1
    if not replace and key in call.db:  # RESTORE-2
        raise CommandError(BUSYKEY)
    ttl = parse_ll(argv[2])
    if ttl is None:  # RESTORE-3
        raise CommandError(table.NOT_INTEGER)
    if ttl < 0:
        raise CommandError(INVALID_TTL)
    payload = argv[3]
    version = call.server.dialect.rdb_version
    if not payload_accepted(payload, version):  # RESTORE-4, DUMP-DIALECT-1
        raise CommandError(DUMP_PAYLOAD_WRONG)
    try:
        record = rdb.decode_value(payload, rdb.rdb_format(version))  # RESTORE-5, DUMP-5, DUMP-6
    except rdb.RdbFormatError:
        raise CommandError(BAD_DATA_FORMAT) from None
    except rdb.UnmodelledType as e:
        raise NotModelled(f"ERR xspec: {e} (RESTORE-5)") from None
    value = restored_value(record, call)
    old = call.db.pop(key, None) if replace else None  # RESTORE-6
    if old is not None:
        call.deleted(key, old)
    when: Instant | None = None
    if ttl:
        if absttl:
            when = Instant(ttl)
        else:
            start = call.now()
            # the C sum wraps past 2^63 - 1 to a time long past
            when = Instant(-1) if start > Instant(I64_MAX - ttl) else start + Duration(ttl)
        if when <= call.now():  # RESTORE-7: already expired, nothing is created
            if old is not None:
                call.modified(key)
                notify_keyspace_event(call, "g", "del", key)  # NOTIFY-4
                call.changed()  # STATS-5
                call.propagate([b"DEL", key])
            return OK
    call.db[key] = value  # RESTORE-8
    if when is not None:  # EXPIRE-KEYS-1: the key expires
        call.server.keyspace(call.client.db).expires[key] = when
    notify_new(call, key)  # NOTIFY-3
    if isinstance(value, Stream):  # dbAdd signals the types a client can block on
        call.ready(key)
    elif isinstance(value, ListValue):
        call.ready(key, "list")
    elif isinstance(value, ZSetValue):
        call.ready(key, "zset")  # BZSET-2
    call.modified(key)
    notify_keyspace_event(call, "g", "restore", key)  # NOTIFY-4
    call.changed()  # STATS-5
    if when is not None and not absttl:  # RESTORE-12: the TTL goes to replicas as an absolute time
        call.propagate([*argv[:2], Instant.propagated_ms(when), *argv[3:], b"ABSTTL"])
    else:
        call.propagate_verbatim()
    return OK
