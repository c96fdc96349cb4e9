"""DUMP and RESTORE in the reference server (spec/rules/dump.md).

The payload codec is the spec's (:mod:`xspec.spec.rdb`); this module turns the
server's own values (:mod:`xspec.reference.streams` nodes and groups, strings,
and the list and set types when the server has them) into its neutral records
and back. A restored stream gets its nodes exactly as the payload has them,
so that a later DUMP writes the same listpacks and later XADDs split nodes
where Redis would.

Key expiry is not implemented by this server (SET-7): a RESTORE with a TTL is
checked and decided as Redis does (a past expiry creates nothing), and the key
then never expires. IDLETIME and FREQ are checked and otherwise ignored.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from xspec.reference.api import ReplyError
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.streams import U64, Consumer, Group, Nack, Node, Stream, rax_key
from xspec.spec import commands as table
from xspec.spec import rdb
from xspec.spec.dialect import Dialect
from xspec.spec.errors import (
    BAD_DATA_FORMAT,
    BUSYKEY,
    DUMP_PAYLOAD_WRONG,
    INVALID_FREQ,
    INVALID_IDLETIME,
    INVALID_TTL,
)
from xspec.spec.ids import I64_MAX, MAX_ID, StreamID, c_string, string2ll
from xspec.spec.listpack import int_element_size
from xspec.spec.resp import NULL_BULK, OK, Bulk, Reply

if TYPE_CHECKING:
    from xspec.reference.core import Context

HANDLERS: dict[str, Any] = {}
_ZERO = StreamID(0, 0)


def _id(key: int) -> StreamID:
    return StreamID(key >> 64, key & U64)


def _key(i: StreamID) -> int:
    return i.ms << 64 | i.seq


# -- values to records -------------------------------------------------------------------------


def _stream_record(s: Stream) -> rdb.StreamRecord:
    nodes = []
    for node in s.nodes:
        entries = [rdb.StreamEntry(_id(node.key(i)), node.fields_at(i), node.is_dead(i)) for i in range(len(node.ms))]
        nodes.append(rdb.StreamNode(_id(node.master), entries))
    groups = []
    for name in sorted(s.groups):
        g = s.groups[name]
        pending = [rdb.PendingRecord(_id(k), g.pel[k].time, g.pel[k].count) for k in g.pel]
        consumers = [rdb.ConsumerRecord(c.name, c.seen, c.active, [_id(k) for k in c.pel])
                     for c in g.consumers_in_order()]
        groups.append(rdb.GroupRecord(name, _id(g.last_id), g.entries_read & U64, pending, consumers))
    return rdb.StreamRecord(nodes, s.length, _id(s.last_id), _id(s.first_id), _id(s.max_deleted),
                            s.entries_added, groups)


def value_record(value: object) -> rdb.RdbValue:
    """A value of this server as the RDB codec's neutral record (DUMP, RDB files)."""
    if type(value) is bytes:
        return value
    if isinstance(value, Stream):
        return _stream_record(value)
    if isinstance(value, deque):
        return rdb.ListRecord(list(value))
    if getattr(value, "kind", None) == "zset":
        return rdb.ZSetRecord(list(value.walk()), value.encoding)  # type: ignore[attr-defined]
    if getattr(value, "kind", None) == "hash":  # HASH-12
        return rdb.HashRecord(list(value.items()), value.encoding)  # type: ignore[attr-defined]
    members = getattr(value, "members", None)
    encoding = getattr(value, "encoding", "hashtable")
    if members is None:
        raise ReplyError(f"ERR xspec: DUMP of a {type(value).__name__} is not implemented")
    ordered = sorted(members, key=int) if encoding == "intset" else list(members)
    return rdb.SetRecord(ordered, encoding)


# -- records to values --------------------------------------------------------------------------


def _put(buf: bytearray, data: bytes) -> None:
    """A length-prefixed string in a node's entry buffer (7 bits a byte, low bits first)."""
    n = len(data)
    while n >= 0x80:
        buf.append((n & 0x7F) | 0x80)
        n >>= 7
    buf.append(n)
    buf += data


def _counter_size(n: int) -> int:
    return 2 if 0 <= n < 128 else int_element_size(n)


def _node(record: rdb.StreamNode) -> Node:
    """A node holding a loaded listpack's entries, its byte size that of the listpack (RESTORE-8)."""
    names = record.master_fields
    node = Node(_key(record.master), names)
    data = bytearray()
    dead = bytearray()
    previous = -1
    for e in record.entries:
        key = _key(e.id)
        if key <= previous:
            node.ordered = False
        previous = key
        if e.fields[0::2] == names:
            data.append(0)  # the values only: the names are the master's
            for v in e.fields[1::2]:
                _put(data, v)
        else:
            data.append(1)
            for f in e.fields:
                _put(data, f)
        node.ms.append(e.id.ms)
        node.seq.append(e.id.seq)
        node.offs.append(len(data))
        dead.append(1 if e.deleted else 0)
    node.data = bytes(data)
    node.deleted = sum(dead)
    node.live = len(dead) - node.deleted
    if node.deleted:
        node.dead = dead
        while node.head < len(dead) and dead[node.head]:
            node.head += 1
    size = len(rdb.stream_node_listpack(record))
    node.body = size - _counter_size(node.live) - _counter_size(node.deleted)
    return node


def _stream(r: rdb.StreamRecord, dialect: Dialect) -> Stream:
    s = Stream()
    for record in r.nodes:
        node = _node(record)
        s.nodes.append(node)
        s.masters.append(node.master)
        s.unordered += not node.ordered
        s.rax.insert(rax_key(node.master))
    s.length = r.length
    s.last_id = _key(r.last_id)
    if r.entries_added is None:  # RESTORE-9: the counters a 6.2 payload lacks
        s.entries_added = r.length
        s.max_deleted = 0
        first = s.first_live()
        s.first_id = _key(MAX_ID) if first is None else first
    else:
        s.entries_added = r.entries_added
        s.first_id = _key(r.first_id or _ZERO)
        s.max_deleted = _key(r.max_deleted_id or _ZERO)
    fixed = dialect.lag_fixes
    for gr in r.groups:
        if gr.entries_read is None:
            entries_read = s.estimate_read(_key(gr.last_id), fixed)
        else:
            entries_read = gr.entries_read - (1 << 64) if gr.entries_read >> 63 else gr.entries_read
        g = Group(gr.name, _key(gr.last_id), entries_read)
        for p in gr.pending:
            g.pel[_key(p.id)] = Nack(p.delivery_time, p.delivery_count, None)
        for cr in gr.consumers:
            c = Consumer(cr.name, cr.seen_time)
            c.active = cr.active_time if cr.active_time is not None else cr.seen_time  # RESTORE-10
            for pid in cr.pending:
                k = _key(pid)
                nack = g.pel[k]
                nack.owner = c
                c.pel[k] = nack
            g.consumers[cr.name] = c
        s.groups[gr.name] = g
        s.groups_allocated = True
    return s


def record_value(record: rdb.RdbValue, dialect: Dialect) -> object:
    """A neutral record as a value of this server in ``dialect`` (RESTORE, loading RDB files)."""
    if isinstance(record, bytes):
        return record
    if isinstance(record, rdb.StreamRecord):
        return _stream(record, dialect)
    if isinstance(record, rdb.ListRecord):
        try:
            from xspec.reference.lists import RefList  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise ReplyError("ERR xspec: lists are not implemented by this server") from None
        return RefList(record.items)
    if isinstance(record, rdb.ZSetRecord):
        return _zset(record, dialect)
    if isinstance(record, rdb.HashRecord):
        return _hash(record)
    try:
        from xspec.reference.sets import RefSet  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ReplyError("ERR xspec: sets are not implemented by this server") from None
    return _set(RefSet, record, rdb.rdb_format(dialect.rdb_version).set_listpack)


def _hash(r: rdb.HashRecord) -> object:
    """HASH-12: a loaded hash is a listpack while it fits the listpack limits, else a hash table."""
    try:
        from xspec.reference.hashes import RefHash  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ReplyError("ERR xspec: hashes are not implemented by this server") from None
    value = RefHash()
    value.update(r.pairs)
    if len(value) > 128 or any(len(f) > 64 or len(v) > 64 for f, v in r.pairs):
        value.encoding = "hashtable"
    return value


def _zset(r: rdb.ZSetRecord, dialect: Dialect) -> object:
    """RESTORE-11, ZSET-ENC-2, ZSET-ENC-3: a listpack of more than 128 becomes a skiplist, a skiplist
    that fits becomes a listpack (its integral scores stored as integers)."""
    try:
        from xspec.reference.zsets import RefZSet  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ReplyError("ERR xspec: sorted sets are not implemented by this server") from None
    n = len(r.pairs)
    if r.encoding == "listpack":
        value = RefZSet("listpack" if n <= 128 else "skiplist")
        for member, score in r.pairs:
            value.put(member, score, False)
        return value
    fits = n <= 128 and max(len(m) for m, _ in r.pairs) <= 64
    value = RefZSet("listpack" if fits else "skiplist")
    for member, score in r.pairs:
        value.put(member, score, not dialect.zset_ziplist)
    return value


def _set(make: Any, r: rdb.SetRecord, set_listpack: bool) -> object:
    """RESTORE-11: an intset or a listpack stays one; a member list gets the smallest encoding."""
    encoding = r.encoding
    if encoding == "listpack" and not set_listpack:
        encoding = "hashtable"
    elif encoding == "hashtable":
        if len(r.members) <= 512 and all(string2ll(m) is not None for m in r.members):
            encoding = "intset"
        elif set_listpack and len(r.members) <= 128 and max(map(len, r.members)) <= 64:
            encoding = "listpack"
    value = make(encoding)
    value.members = dict.fromkeys(r.members)
    return value


# -- the commands ------------------------------------------------------------------------------


def _dump(ctx: Context) -> Reply:
    value = ctx.db.get(ctx.argv[1])
    if value is None:  # DUMP-1
        return NULL_BULK
    return Bulk(rdb.dump_payload(value_record(value), ctx.dialect.rdb_version))  # DUMP-2, DUMP-3


def _options(argv: list[bytes]) -> tuple[bool, bool]:
    """RESTORE-1: REPLACE, ABSTTL, IDLETIME n (not after FREQ), FREQ n (not after IDLETIME)."""
    replace = absttl = False
    idle = freq = -1
    i = 4
    while i < len(argv):
        word = c_string(argv[i]).lower()
        has_value = i + 1 < len(argv)
        if word == b"replace":
            replace = True
        elif word == b"absttl":
            absttl = True
        elif word == b"idletime" and has_value and freq < 0:
            idle = _integer(argv[i + 1])
            if idle < 0:
                raise ReplyError(INVALID_IDLETIME)
            i += 1
        elif word == b"freq" and has_value and idle < 0:
            freq = _integer(argv[i + 1])
            if freq < 0 or freq > 255:
                raise ReplyError(INVALID_FREQ)
            i += 1
        else:
            raise ReplyError(table.SYNTAX)
        i += 1
    return replace, absttl


def _integer(arg: bytes) -> int:
    v = string2ll(arg)
    if v is None:
        raise ReplyError(table.NOT_INTEGER)
    return v


def _restore(ctx: Context) -> Reply:
    argv = ctx.argv
    key = argv[1]
    replace, absttl = _options(argv)
    db = ctx.db
    if key in db and not replace:  # RESTORE-2
        raise ReplyError(BUSYKEY)
    ttl = _integer(argv[2])  # RESTORE-3
    if ttl < 0:
        raise ReplyError(INVALID_TTL)
    payload = argv[3]
    server = ctx.dialect.rdb_version
    version = rdb.payload_version(payload)
    if version is None or not rdb.version_accepted(version, server) or not rdb.checksum_ok(payload):
        raise ReplyError(DUMP_PAYLOAD_WRONG)  # RESTORE-4, DUMP-DIALECT-1
    try:
        record = rdb.decode_value(payload, rdb.rdb_format(server))
    except rdb.RdbFormatError:
        raise ReplyError(BAD_DATA_FORMAT) from None  # RESTORE-5, DUMP-5, DUMP-6
    except rdb.UnmodelledType as e:
        raise ReplyError(f"ERR xspec: {e} (RESTORE-5)") from None
    value = record_value(record, ctx.dialect)
    old = db.pop(key, None) if replace else None  # RESTORE-6
    if old is not None:
        if type(old) is bytes:
            ctx.modified(key)
        else:
            ctx.deleted(key)
    if ttl:
        when = ttl if absttl else ctx.now_ms() + ttl
        if when > I64_MAX:
            when -= 1 << 64  # C's signed sum wraps to a time long past
        if when <= ctx.now_ms():  # RESTORE-7
            if old is not None:
                notify_keyspace_event(ctx, "g", "del", key)  # NOTIFY-4
                ctx.changed()
            return OK
    db[key] = value  # RESTORE-8
    if ttl:
        db.expires[key] = when  # type: ignore[attr-defined]  # EXPIRE-KEYS-1
    notify_new(ctx, key)  # NOTIFY-3
    if isinstance(value, Stream):
        ctx.ready(key)
    elif isinstance(value, deque):
        ctx.ready(key, "list")
    elif getattr(value, "kind", None) == "zset":
        ctx.ready(key, "zset")  # BZSET-2
    ctx.modified(key)
    notify_keyspace_event(ctx, "g", "restore", key)  # NOTIFY-4
    ctx.changed()
    return OK


HANDLERS["dump"] = _dump
HANDLERS["restore"] = _restore
