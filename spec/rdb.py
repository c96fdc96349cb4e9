"""The RDB value encoding, as Redis writes and reads one value: DUMP/RESTORE payloads (rules DUMP-*).

A DUMP payload is ``type byte | value | RDB version (2 bytes LE) | CRC64 (8 bytes LE)``,
the CRC (:mod:`xspec.spec.crc64`) taken over everything before it. The value
is written as ``rdbSaveObject`` writes it in the RDB version of the server:

* lengths: 6 bits (``00``), 14 bits (``01``), 32 or 64 bits big-endian (``0x80``, ``0x81``);
* strings: a length and the bytes; strings of at most 11 bytes that read as a
  canonical integer in 32 bits as an 8, 16 or 32-bit little-endian integer
  (``0xC0``..``0xC2``); strings longer than 20 bytes LZF-compressed (``0xC3``,
  :mod:`xspec.spec.lzf`) when that saves more than 4 bytes (``rdbcompression yes``, the default);
* streams (types 15, 19 from 7.0, 21 from 7.2 and Valkey): the listpack nodes keyed by
  their 16-byte big-endian master ID, length, last-generated-id, then (19+)
  recorded-first-entry-id, max-deleted-entry-id and entries-added, then the groups
  in name order: name, last-delivered-id, (19+) entries-read, the PEL (raw
  16-byte IDs, delivery time as 8 bytes LE, delivery count), the consumers in name
  order: name, seen-time, (21) active-time, and their PEL IDs;
* lists: 6.2 a quicklist of ziplists (14), 7.0+ a quicklist of listpacks (18);
  sets: an intset (11), a listpack (20, 7.2+) or a plain member list (2).

The codec works on neutral data: ``bytes`` for a string, :class:`ListRecord`,
:class:`SetRecord` and :class:`StreamRecord`. The model and the reference
server each adapt it to their own value types.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from xspec.spec import lzf
from xspec.spec.crc64 import crc64
from xspec.spec.doubles import packed_score_text, strtod
from xspec.spec.ids import StreamID
from xspec.spec.listpack import as_listpack_int
from xspec.spec.listpack_codec import (
    CorruptContainer,
    Element,
    as_bytes,
    intset_decode,
    intset_encode,
    lp_check_header,
    lp_decode,
    lp_element,
    lp_encode,
    zl_decode,
    zl_encode,
)

# Object types (rdb.h).
TYPE_STRING = 0
TYPE_LIST = 1
TYPE_SET = 2
TYPE_ZSET = 3
TYPE_HASH = 4
TYPE_ZSET_2 = 5
TYPE_MODULE_PRE_GA = 6
TYPE_MODULE_2 = 7
TYPE_HASH_ZIPMAP = 9
TYPE_LIST_ZIPLIST = 10
TYPE_SET_INTSET = 11
TYPE_ZSET_ZIPLIST = 12
TYPE_HASH_ZIPLIST = 13
TYPE_LIST_QUICKLIST = 14
TYPE_STREAM_LISTPACKS = 15
TYPE_HASH_LISTPACK = 16
TYPE_ZSET_LISTPACK = 17
TYPE_LIST_QUICKLIST_2 = 18
TYPE_STREAM_LISTPACKS_2 = 19
TYPE_SET_LISTPACK = 20
TYPE_STREAM_LISTPACKS_3 = 21

_UNMODELLED_TYPES = frozenset({TYPE_MODULE_PRE_GA, TYPE_MODULE_2, TYPE_HASH_ZIPMAP, 22, 23, 24, 25})
_HASH_TYPES = frozenset({TYPE_HASH, TYPE_HASH_ZIPLIST, TYPE_HASH_LISTPACK})
_ZSET_TYPES = frozenset({TYPE_ZSET, TYPE_ZSET_2, TYPE_ZSET_ZIPLIST, TYPE_ZSET_LISTPACK})
_BINARY_DOUBLE = struct.Struct("<d")

_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3
_QUICKLIST_PLAIN, _QUICKLIST_PACKED = 1, 2
_STREAM_ITEM_DELETED = 1
_STREAM_ITEM_SAMEFIELDS = 2
_ID_KEY = struct.Struct(">QQ")
_U64 = (1 << 64) - 1
_LIST_NODE_BYTES = 8192  # list-max-listpack-size (list-max-ziplist-size in 6.2) -2: nodes up to 8 KB


class RdbFormatError(ValueError):
    """A payload Redis would fail to load (RESTORE replies ``ERR Bad data format``, DUMP-6)."""


class EmptyKey(RdbFormatError):
    """A list or set with no element: RESTORE refuses it, loading an RDB file skips the key
    (``RDB_LOAD_ERR_EMPTY_KEY``)."""


class UnmodelledType(Exception):
    """A well-formed payload of a value type this project does not hold (hashes, sorted sets, modules)."""

    def __init__(self, rdb_type: int) -> None:
        super().__init__(f"RDB object type {rdb_type} is not modelled")
        self.rdb_type = rdb_type


# -- what each RDB version writes and reads -------------------------------------------------------


@dataclass(frozen=True)
class RdbFormat:
    """What a server of one RDB version writes, and the object types it knows when loading."""

    version: int
    stream_type: int
    list_type: int
    set_listpack: bool  # small non-integer sets are listpacks (type 20)
    max_type: int  # rdbIsObjectType: types above this are refused

    def knows(self, rdb_type: int) -> bool:
        return 0 <= rdb_type <= 7 or 9 <= rdb_type <= self.max_type


def rdb_format(version: int) -> RdbFormat:
    """The format a server writing RDB ``version`` uses (9: 6.2, 10: 7.0, 11: 7.2, 12: 7.4, 80: Valkey 9)."""
    if version <= 9:
        return RdbFormat(version, TYPE_STREAM_LISTPACKS, TYPE_LIST_QUICKLIST, False, TYPE_STREAM_LISTPACKS)
    if version == 10:
        return RdbFormat(version, TYPE_STREAM_LISTPACKS_2, TYPE_LIST_QUICKLIST_2, False, TYPE_STREAM_LISTPACKS_2)
    return RdbFormat(version, TYPE_STREAM_LISTPACKS_3, TYPE_LIST_QUICKLIST_2, True, TYPE_STREAM_LISTPACKS_3)


# -- neutral values --------------------------------------------------------------------------------


@dataclass
class ListRecord:
    """A list, head first."""

    items: list[bytes]


@dataclass
class SetRecord:
    """A set: its members in the order its encoding keeps them, and that encoding
    (``intset``, ``listpack`` or ``hashtable``)."""

    members: list[bytes]
    encoding: str


@dataclass
class StreamEntry:
    """One entry of a node, deleted or not; ``fields`` is the flat field, value, ... tuple."""

    id: StreamID
    fields: tuple[bytes, ...]
    deleted: bool = False


@dataclass
class StreamNode:
    """One listpack node: its master ID and its entries in listpack order. The master fields
    are the field names of the node's first entry (the one that created it)."""

    master: StreamID
    entries: list[StreamEntry]

    @property
    def master_fields(self) -> tuple[bytes, ...]:
        return self.entries[0].fields[0::2] if self.entries else ()


@dataclass
class PendingRecord:
    """A group PEL entry (streamNACK)."""

    id: StreamID
    delivery_time: int
    delivery_count: int


@dataclass
class ConsumerRecord:
    """A consumer: ``active_time`` is None when the payload has none (types 15 and 19)."""

    name: bytes
    seen_time: int
    active_time: int | None
    pending: list[StreamID] = field(default_factory=list)


@dataclass
class GroupRecord:
    """A consumer group: ``entries_read`` is None when the payload has none (type 15), and a uint64."""

    name: bytes
    last_id: StreamID
    entries_read: int | None
    pending: list[PendingRecord] = field(default_factory=list)
    consumers: list[ConsumerRecord] = field(default_factory=list)


@dataclass
class StreamRecord:
    """A stream as an RDB value holds it. ``first_id``, ``max_deleted_id`` and
    ``entries_added`` are None when the payload has none (type 15)."""

    nodes: list[StreamNode]
    length: int
    last_id: StreamID
    first_id: StreamID | None
    max_deleted_id: StreamID | None
    entries_added: int | None
    groups: list[GroupRecord] = field(default_factory=list)


@dataclass
class ZSetRecord:
    """A sorted set: its (member, score) pairs, lowest first, and its encoding (``listpack``, which is
    a ziplist in RDB 9, or ``skiplist``)."""

    pairs: list[tuple[bytes, float]]
    encoding: str


@dataclass
class HashRecord:
    """A hash: its (field, value) pairs in the order the payload holds them, and its encoding
    (``listpack``, a ziplist in RDB 9, or ``hashtable``)."""

    pairs: list[tuple[bytes, bytes]]
    encoding: str


RdbValue = bytes | ListRecord | SetRecord | StreamRecord | ZSetRecord | HashRecord


# -- writing ---------------------------------------------------------------------------------------


def encode_length(n: int) -> bytes:
    """rdbSaveLen."""
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + (n & _U64).to_bytes(8, "big")


def _int_encoding(s: bytes) -> bytes | None:
    """rdbTryIntegerEncoding: a canonical integer string fitting 32 bits, as an encoded integer."""
    v = as_listpack_int(s) if len(s) <= 11 else None
    if v is None:
        return None
    if -(1 << 7) <= v < 1 << 7:
        return bytes((0xC0 | _ENC_INT8,)) + (v & 0xFF).to_bytes(1, "little")
    if -(1 << 15) <= v < 1 << 15:
        return bytes((0xC0 | _ENC_INT16,)) + (v & 0xFFFF).to_bytes(2, "little")
    if -(1 << 31) <= v < 1 << 31:
        return bytes((0xC0 | _ENC_INT32,)) + (v & 0xFFFFFFFF).to_bytes(4, "little")
    return None


def encode_string(s: bytes, compress: bool = True) -> bytes:
    """rdbSaveRawString: integer encoding, then LZF for strings over 20 bytes, then plain."""
    as_int = _int_encoding(s)
    if as_int is not None:
        return as_int
    if compress and len(s) > 20:
        packed = lzf.compress(s, len(s) - 4)
        if packed:  # rdbSaveLzfStringObject: only when it fits in len - 4 bytes
            return b"\xc3" + encode_length(len(packed)) + encode_length(len(s)) + packed
    return encode_length(len(s)) + s


def _id_key(i: StreamID) -> bytes:
    return _ID_KEY.pack(i.ms, i.seq)


def stream_node_listpack(node: StreamNode) -> bytes:
    """The listpack Redis holds for ``node`` (t_stream.c ``streamAppendItem``, with deletions flagged)."""
    names = node.master_fields
    live = sum(1 for e in node.entries if not e.deleted)
    elements: list[Element] = [live, len(node.entries) - live, len(names), *names, 0]
    master = node.master
    for e in node.entries:
        same = e.fields[0::2] == names
        flags = (_STREAM_ITEM_DELETED if e.deleted else 0) | (_STREAM_ITEM_SAMEFIELDS if same else 0)
        ms_delta = _as_i64(e.id.ms - master.ms)
        seq_delta = _as_i64(e.id.seq - master.seq)
        elements += [flags, ms_delta, seq_delta]
        if same:
            elements += e.fields[1::2]
            elements.append(len(names) + 3)
        else:
            elements.append(len(e.fields) // 2)
            elements += e.fields
            elements.append(len(e.fields) + 4)
    return lp_encode(elements)


def _as_i64(v: int) -> int:
    v &= _U64
    return v - (1 << 64) if v >> 63 else v


def _encode_stream(s: StreamRecord, fmt: RdbFormat, out: list[bytes]) -> None:
    stream_type = fmt.stream_type
    out.append(encode_length(len(s.nodes)))
    for node in s.nodes:
        out.append(encode_string(_id_key(node.master)))
        out.append(encode_string(stream_node_listpack(node)))
    out.append(encode_length(s.length))
    out += [encode_length(s.last_id.ms), encode_length(s.last_id.seq)]
    if stream_type >= TYPE_STREAM_LISTPACKS_2:
        first = s.first_id if s.first_id is not None else StreamID(0, 0)
        deleted = s.max_deleted_id if s.max_deleted_id is not None else StreamID(0, 0)
        out += [encode_length(first.ms), encode_length(first.seq),
                encode_length(deleted.ms), encode_length(deleted.seq),
                encode_length((s.entries_added if s.entries_added is not None else s.length) & _U64)]
    out.append(encode_length(len(s.groups)))
    for g in s.groups:
        out.append(encode_string(g.name))
        out += [encode_length(g.last_id.ms), encode_length(g.last_id.seq)]
        if stream_type >= TYPE_STREAM_LISTPACKS_2:
            out.append(encode_length((g.entries_read if g.entries_read is not None else -1) & _U64))
        out.append(encode_length(len(g.pending)))
        for p in g.pending:
            out += [_id_key(p.id), (p.delivery_time & _U64).to_bytes(8, "little"),
                    encode_length(p.delivery_count & _U64)]
        out.append(encode_length(len(g.consumers)))
        for c in g.consumers:
            out.append(encode_string(c.name))
            out.append((c.seen_time & _U64).to_bytes(8, "little"))
            if stream_type >= TYPE_STREAM_LISTPACKS_3:
                active = c.active_time if c.active_time is not None else c.seen_time
                out.append((active & _U64).to_bytes(8, "little"))
            out.append(encode_length(len(c.pending)))
            out += map(_id_key, c.pending)


def _ziplist_overhead(n: int) -> int:
    """6.2's estimate of the bytes besides the string a ziplist entry of ``n`` bytes takes."""
    return (1 if n < 254 else 5) + (1 if n < 64 else 2 if n < 16384 else 5)


def _list_nodes(items: list[bytes], ziplists: bool) -> list[list[bytes]]:
    """The quicklist nodes of a list built by pushing at the tail (``_quicklistNodeAllowInsert`` with
    ``list-max-listpack-size -2``): an item joins the tail node while the node's container bytes, the
    item's length and an overhead estimate (8 bytes; 6.2: by the ziplist entry's size) stay within 8 KB."""
    nodes: list[list[bytes]] = []
    size = 0
    for item in items:
        estimate = _ziplist_overhead(len(item)) if ziplists else 8
        if nodes and size + len(item) + estimate <= _LIST_NODE_BYTES:
            nodes[-1].append(item)
        else:
            nodes.append([item])
            size = 11 if ziplists else 7
        size += len(zl_encode([item])) - 11 if ziplists else len(lp_element(item))
    return nodes


def _encode_list(items: list[bytes], fmt: RdbFormat, out: list[bytes]) -> None:
    if fmt.list_type == TYPE_LIST_QUICKLIST:
        nodes = _list_nodes(items, ziplists=True)
        out.append(encode_length(len(nodes)))
        out += (encode_string(zl_encode(list[Element](n))) for n in nodes)
        return
    nodes = _list_nodes(items, ziplists=False)
    out.append(encode_length(len(nodes)))
    for n in nodes:
        out.append(encode_length(_QUICKLIST_PACKED))
        out.append(encode_string(lp_encode(list[Element](n))))


def _encode_zset(z: ZSetRecord, fmt: RdbFormat, out: list[bytes]) -> None:
    """A compact sorted set as a ziplist (RDB 9) or listpack of member, score pairs, each score as the
    encoding keeps it; a skiplist as ZSET_2: its members from the highest score down, each score a
    little-endian binary double (rdbSaveObject)."""
    if z.encoding == "listpack":
        packing = "ziplist" if fmt.version <= 9 else "listpack" if fmt.version == 10 else "listpack-shortest"
        elements: list[Element] = []
        for member, score in z.pairs:
            elements += (member, packed_score_text(score, packing).encode())
        if fmt.version <= 9:
            out += [bytes((TYPE_ZSET_ZIPLIST,)), encode_string(zl_encode(elements))]
        else:
            out += [bytes((TYPE_ZSET_LISTPACK,)), encode_string(lp_encode(elements))]
        return
    out += [bytes((TYPE_ZSET_2,)), encode_length(len(z.pairs))]
    for member, score in reversed(z.pairs):
        out += [encode_string(member), _BINARY_DOUBLE.pack(score)]


def _encode_hash(h: HashRecord, fmt: RdbFormat, out: list[bytes]) -> None:
    """A small hash as a ziplist (RDB 9) or listpack of field, value...; a hash table as HASH: its
    length, then each field and value (rdbSaveObject)."""
    if h.encoding == "listpack":
        elements: list[Element] = [x for pair in h.pairs for x in pair]
        if fmt.version <= 9:
            out += [bytes((TYPE_HASH_ZIPLIST,)), encode_string(zl_encode(elements))]
        else:
            out += [bytes((TYPE_HASH_LISTPACK,)), encode_string(lp_encode(elements))]
        return
    out += [bytes((TYPE_HASH,)), encode_length(len(h.pairs))]
    for f, v in h.pairs:
        out += [encode_string(f), encode_string(v)]


def encode_value(value: RdbValue, fmt: RdbFormat) -> bytes:
    """rdbSaveObjectType and rdbSaveObject of ``value`` in ``fmt``: the payload without its footer."""
    out: list[bytes] = []
    if isinstance(value, bytes):
        out += [bytes((TYPE_STRING,)), encode_string(value)]
    elif isinstance(value, StreamRecord):
        out.append(bytes((fmt.stream_type,)))
        _encode_stream(value, fmt, out)
    elif isinstance(value, ListRecord):
        out.append(bytes((fmt.list_type,)))
        _encode_list(value.items, fmt, out)
    elif isinstance(value, ZSetRecord):
        _encode_zset(value, fmt, out)
    elif isinstance(value, HashRecord):
        _encode_hash(value, fmt, out)
    elif value.encoding == "intset":
        out += [bytes((TYPE_SET_INTSET,)), encode_string(intset_encode([int(m) for m in value.members]))]
    elif value.encoding == "listpack" and fmt.set_listpack:
        out += [bytes((TYPE_SET_LISTPACK,)), encode_string(lp_encode(list[Element](value.members)))]
    else:
        out += [bytes((TYPE_SET,)), encode_length(len(value.members))]
        out += map(encode_string, value.members)
    return b"".join(out)


def dump_payload(value: RdbValue, version: int) -> bytes:
    """createDumpPayload: the value, the RDB version and the CRC64, both little-endian (DUMP-2)."""
    body = encode_value(value, rdb_format(version)) + version.to_bytes(2, "little")
    return body + crc64(0, body).to_bytes(8, "little")


# -- reading ---------------------------------------------------------------------------------------


def payload_version(payload: bytes) -> int | None:
    """The RDB version in a payload's footer; None when it is shorter than a footer (DUMP-4)."""
    if len(payload) < 10:
        return None
    return payload[-10] | payload[-9] << 8


def version_accepted(payload: int, server: int) -> bool:
    """Whether a server writing RDB ``server`` loads a payload of version ``payload`` (DUMP-4):
    Redis loads every version up to its own; Valkey 9 (80) also refuses version 0 and the
    versions 12..79 it leaves to Redis (``rdb-version-check strict``, DUMP-DIALECT-1)."""
    if server >= 80:
        return 1 <= payload <= 11 or 80 <= payload <= server
    return payload <= server


def checksum_ok(payload: bytes) -> bool:
    """The CRC64 in the footer is that of everything before it (DUMP-4)."""
    return len(payload) >= 10 and crc64(0, payload[:-8]).to_bytes(8, "little") == payload[-8:]


class Reader:
    """rio over a buffer: reads past the end fail as a short read does."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise RdbFormatError("short read")
        chunk = self.buf[self.pos:end]
        self.pos = end
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def length(self) -> tuple[int, bool]:
        """rdbLoadLenByRef: (length, is it an encoded-object marker)."""
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == 0x80:
            return int.from_bytes(self.take(4), "big"), False
        if b == 0x81:
            return int.from_bytes(self.take(8), "big"), False
        raise RdbFormatError(f"unknown length encoding {b:#x}")

    def plain_length(self) -> int:
        n, encoded = self.length()
        if encoded:
            raise RdbFormatError("an encoded object where a length was expected")
        return n

    def string(self) -> bytes:
        """rdbGenericLoadStringObject: integers come back as their decimal text."""
        n, encoded = self.length()
        if not encoded:
            return self.take(n)
        if n == _ENC_INT8:
            return b"%d" % int.from_bytes(self.take(1), "little", signed=True)
        if n == _ENC_INT16:
            return b"%d" % int.from_bytes(self.take(2), "little", signed=True)
        if n == _ENC_INT32:
            return b"%d" % int.from_bytes(self.take(4), "little", signed=True)
        if n == _ENC_LZF:
            clen = self.plain_length()
            size = self.plain_length()
            packed = self.take(clen)
            if size == 0:
                raise RdbFormatError("LZF string of length 0")
            try:
                return lzf.decompress(packed, size)
            except lzf.LzfError as e:
                raise RdbFormatError(f"invalid LZF data: {e}") from e
        raise RdbFormatError(f"unknown string encoding {n}")

    def millis(self) -> int:
        """rdbLoadMillisecondTime: 8 bytes little-endian, a signed 64-bit time."""
        return int.from_bytes(self.take(8), "little", signed=True)

    def stream_id(self) -> StreamID:
        return StreamID(*_ID_KEY.unpack(self.take(16)))


_Reader = Reader


def _decode_stream_node(master: StreamID, lp: bytes) -> StreamNode:
    """The entries of a stream node's listpack, deleted ones included."""
    try:
        elements = lp_decode(lp)
    except CorruptContainer as e:
        raise RdbFormatError(str(e)) from e
    if not elements:
        raise RdbFormatError("Empty listpack inside stream")
    it = iter(elements)
    try:
        _int(next(it))  # live count
        _int(next(it))  # deleted count
        names = tuple(as_bytes(next(it)) for _ in range(_int(next(it))))
        if _int(next(it)) != 0:
            raise RdbFormatError("stream master entry terminator")
        entries: list[StreamEntry] = []
        for flags in it:
            flags = _int(flags)
            ms = (master.ms + _int(next(it))) & _U64
            seq = (master.seq + _int(next(it))) & _U64
            if flags & _STREAM_ITEM_SAMEFIELDS:
                values = [as_bytes(next(it)) for _ in names]
                fields = tuple(x for pair in zip(names, values, strict=True) for x in pair)
            else:
                count = _int(next(it))
                fields = tuple(as_bytes(next(it)) for _ in range(2 * count))
            _int(next(it))  # lp-count, for walking backwards
            entries.append(StreamEntry(StreamID(ms, seq), fields, bool(flags & _STREAM_ITEM_DELETED)))
    except StopIteration as e:
        raise RdbFormatError("stream listpack ends inside an entry") from e
    return StreamNode(master, entries)


def _int(e: Element) -> int:
    if isinstance(e, int):
        return e
    raise RdbFormatError("a string where a stream listpack holds an integer")


def _decode_stream(r: _Reader, rdb_type: int) -> StreamRecord:
    nodes: list[StreamNode] = []
    seen: set[StreamID] = set()
    for _ in range(r.plain_length()):
        key = r.string()
        if len(key) != 16:
            raise RdbFormatError("Stream node key entry is not the size of a stream ID")
        lp = r.string()
        try:
            lp_check_header(lp)
        except CorruptContainer as e:
            raise RdbFormatError("Stream listpack integrity check failed.") from e
        master = StreamID(*_ID_KEY.unpack(key))
        if master in seen:
            raise RdbFormatError("Listpack re-added with existing key")
        seen.add(master)
        nodes.append(_decode_stream_node(master, lp))
    nodes.sort(key=lambda n: n.master)  # the radix tree orders them
    length = r.plain_length()
    last_id = StreamID(r.plain_length(), r.plain_length())
    first_id = max_deleted = None
    entries_added = None
    if rdb_type >= TYPE_STREAM_LISTPACKS_2:
        first_id = StreamID(r.plain_length(), r.plain_length())
        max_deleted = StreamID(r.plain_length(), r.plain_length())
        entries_added = r.plain_length()
    if length and not nodes:
        raise RdbFormatError("Stream length inconsistent with rax entries")
    record = StreamRecord(nodes, length, last_id, first_id, max_deleted, entries_added)
    names: set[bytes] = set()
    for _ in range(r.plain_length()):
        name = r.string()
        group_last = StreamID(r.plain_length(), r.plain_length())
        entries_read = r.plain_length() if rdb_type >= TYPE_STREAM_LISTPACKS_2 else None
        if name in names:
            raise RdbFormatError("Duplicated consumer group name")
        names.add(name)
        group = GroupRecord(name, group_last, entries_read)
        pel: dict[StreamID, PendingRecord] = {}
        for _ in range(r.plain_length()):
            pid = r.stream_id()
            nack = PendingRecord(pid, r.millis(), r.plain_length())
            if pid in pel:
                raise RdbFormatError("Duplicated global PEL entry loading stream consumer group")
            pel[pid] = nack
        group.pending = sorted(pel.values(), key=lambda p: p.id)
        consumers: dict[bytes, ConsumerRecord] = {}
        for _ in range(r.plain_length()):
            cname = r.string()
            if cname in consumers:
                raise RdbFormatError("Duplicate stream consumer detected.")
            seen_time = r.millis()
            active = r.millis() if rdb_type >= TYPE_STREAM_LISTPACKS_3 else None
            consumer = ConsumerRecord(cname, seen_time, active)
            owned: set[StreamID] = set()
            for _ in range(r.plain_length()):
                pid = r.stream_id()
                if pid not in pel:
                    raise RdbFormatError("Consumer entry not found in group global PEL")
                if pid in owned:
                    raise RdbFormatError("Duplicated consumer PEL entry loading a stream consumer group")
                owned.add(pid)
            consumer.pending = sorted(owned)
            consumers[cname] = consumer
        group.consumers = [consumers[n] for n in sorted(consumers)]
        record.groups.append(group)
    record.groups.sort(key=lambda g: g.name)
    return record


def _decode_list(r: _Reader, rdb_type: int) -> ListRecord:
    items: list[bytes] = []
    if rdb_type == TYPE_LIST:
        items = [r.string() for _ in range(r.plain_length())]
    elif rdb_type == TYPE_LIST_ZIPLIST:
        items = _container(zl_decode, r.string())
    else:
        for _ in range(r.plain_length()):
            if rdb_type == TYPE_LIST_QUICKLIST_2:
                container = r.plain_length()
                if container == _QUICKLIST_PLAIN:
                    items.append(r.string())
                    continue
                if container != _QUICKLIST_PACKED:
                    raise RdbFormatError(f"quicklist container {container}")
                items += _container(lp_decode, r.string())
            else:
                items += _container(zl_decode, r.string())
    if not items:
        raise EmptyKey("empty list")
    return ListRecord(items)


def _container(decode: Callable[[bytes], list[Element]], blob: bytes) -> list[bytes]:
    try:
        return [as_bytes(e) for e in decode(blob)]
    except CorruptContainer as e:
        raise RdbFormatError(str(e)) from e


def _decode_set(r: _Reader, rdb_type: int) -> SetRecord:
    if rdb_type == TYPE_SET:
        members = [r.string() for _ in range(r.plain_length())]
        encoding = "hashtable"
    elif rdb_type == TYPE_SET_INTSET:
        try:
            members = [b"%d" % v for v in intset_decode(r.string())]
        except CorruptContainer as e:
            raise RdbFormatError(str(e)) from e
        encoding = "intset"
    else:
        members = _container(lp_decode, r.string())
        encoding = "listpack"
    if not members:
        raise EmptyKey("empty set")
    if len(set(members)) != len(members):
        raise RdbFormatError("duplicate set member")
    return SetRecord(members, encoding)


def _decode_hash(r: _Reader, rdb_type: int) -> HashRecord:
    if rdb_type == TYPE_HASH:
        pairs = [(r.string(), r.string()) for _ in range(r.plain_length())]
        encoding = "hashtable"
    else:
        elements = _container(zl_decode if rdb_type == TYPE_HASH_ZIPLIST else lp_decode, r.string())
        if len(elements) % 2:
            raise RdbFormatError("hash with a field but no value")
        pairs = [(elements[i], elements[i + 1]) for i in range(0, len(elements), 2)]
        encoding = "listpack"
    if not pairs:
        raise EmptyKey("empty hash")
    if len({f for f, _ in pairs}) != len(pairs):
        raise RdbFormatError("duplicate hash field")
    return HashRecord(pairs, encoding)


def _packed_score(e: Element) -> float:
    """zzlGetScore: an integer entry, or a text read by strtod."""
    if isinstance(e, int):
        return float(e)
    value, consumed, _ = strtod(e[:127])
    if consumed == 0 or math.isnan(value):
        raise RdbFormatError("sorted set score is not a number")
    return value


def _text_double(r: _Reader) -> float:
    """rdbLoadDoubleValue (the old ZSET type): a length byte (253 nan, 254 inf, 255 -inf), then ASCII."""
    n = r.byte()
    if n == 253:
        return math.nan
    if n in (254, 255):
        return math.inf if n == 254 else -math.inf
    value, consumed, _ = strtod(r.take(n))
    if consumed == 0:
        raise RdbFormatError("sorted set score is not a number")
    return value


def _decode_zset(r: _Reader, rdb_type: int) -> ZSetRecord:
    pairs: list[tuple[bytes, float]] = []
    if rdb_type in (TYPE_ZSET, TYPE_ZSET_2):
        for _ in range(r.plain_length()):
            member = r.string()
            score = _BINARY_DOUBLE.unpack(r.take(8))[0] if rdb_type == TYPE_ZSET_2 else _text_double(r)
            if math.isnan(score):
                raise RdbFormatError("sorted set with a NaN score")
            pairs.append((member, score))
        encoding = "skiplist"
    else:
        decode = zl_decode if rdb_type == TYPE_ZSET_ZIPLIST else lp_decode
        try:
            elements = decode(r.string())
        except CorruptContainer as e:
            raise RdbFormatError(str(e)) from e
        if len(elements) % 2:
            raise RdbFormatError("sorted set with a member but no score")
        pairs = [(as_bytes(elements[i]), _packed_score(elements[i + 1])) for i in range(0, len(elements), 2)]
        encoding = "listpack"
    if not pairs:
        raise EmptyKey("empty sorted set")
    if len({m for m, _ in pairs}) != len(pairs):
        raise RdbFormatError("duplicate sorted set member")
    pairs.sort(key=lambda p: (p[1], p[0]))
    return ZSetRecord(pairs, encoding)


def decode_value(payload: bytes, fmt: RdbFormat) -> RdbValue:
    """rdbLoadObjectType and rdbLoadObject over a payload (its footer may follow; what the value
    does not use is ignored, as RESTORE ignores it). Raises :class:`RdbFormatError` for what
    Redis refuses and :class:`UnmodelledType` for a type this project does not hold."""
    r = _Reader(payload)
    return read_object(r, r.byte(), fmt)


def read_object(r: _Reader, rdb_type: int, fmt: RdbFormat) -> RdbValue:
    """rdbLoadObject: the value of type ``rdb_type`` at the reader's position (an RDB file's
    values follow their key). Raises as :func:`decode_value` does."""
    if not fmt.knows(rdb_type):
        raise RdbFormatError(f"unknown object type {rdb_type}")
    if rdb_type in _UNMODELLED_TYPES:
        raise UnmodelledType(rdb_type)
    if rdb_type == TYPE_STRING:
        return r.string()
    if rdb_type in (TYPE_LIST, TYPE_LIST_ZIPLIST, TYPE_LIST_QUICKLIST, TYPE_LIST_QUICKLIST_2):
        return _decode_list(r, rdb_type)
    if rdb_type in (TYPE_SET, TYPE_SET_INTSET, TYPE_SET_LISTPACK):
        return _decode_set(r, rdb_type)
    if rdb_type in _ZSET_TYPES:
        return _decode_zset(r, rdb_type)
    if rdb_type in _HASH_TYPES:
        return _decode_hash(r, rdb_type)
    return _decode_stream(r, rdb_type)


# -- what a stream value computes on load ------------------------------------------------------------


def first_live_id(nodes: list[StreamNode]) -> StreamID | None:
    """streamGetEdgeID(first, skipping tombstones) over freshly loaded nodes: None when none is live."""
    for node in nodes:
        for e in node.entries:
            if not e.deleted:
                return e.id
    return None
