"""Whole RDB files, as Redis and Valkey write and load them (``rdbSaveRio`` / ``rdbLoadRio``).

A file is the magic (``REDIS`` and the version in four digits; Valkey 9's own
versions from 80 on: ``VALKEY`` and three digits), the aux fields (opcode
``0xFA``, a string key and a string value), the function libraries (``0xF5``,
one string of code each), then per non-empty database ``0xFE`` SELECTDB and
its number, ``0xFB`` RESIZEDB with the key count and the count of keys with a
TTL, and each key: ``0xFC`` and its expiry in ms (8 bytes LE) when it has one,
the value's type byte, the key as a string and the value as
:mod:`xspec.spec.rdb` encodes it; then ``0xFF`` and the CRC64 of everything
before it (8 bytes LE; a zero CRC means "not computed", and loading skips the
check). Loading also takes what older versions wrote: ``0xFD`` (an expiry in
seconds), the LRU and LFU opcodes (``0xF8``, ``0xF9``, read and ignored), and
every object type of versions 1 to the server's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xspec.spec import rdb
from xspec.spec.crc64 import crc64

OP_FUNCTION2 = 0xF5
OP_FUNCTION_PRE_GA = 0xF6
OP_MODULE_AUX = 0xF7
OP_IDLE = 0xF8
OP_FREQ = 0xF9
OP_AUX = 0xFA
OP_RESIZEDB = 0xFB
OP_EXPIRETIME_MS = 0xFC
OP_EXPIRETIME = 0xFD
OP_SELECTDB = 0xFE
OP_EOF = 0xFF
OP_SLOT_INFO = 0xF4  # 7.4+ in cluster mode: slot id, slot size, expires slot size

VALKEY_FIRST_OWN_VERSION = 80


class RdbFileError(ValueError):
    """A file the server refuses to load; the text says why, as the server's log line does."""


@dataclass
class RdbKey:
    """One key of a database: its value as the codec holds it, and its expiry (ms since the epoch)."""

    key: bytes
    value: rdb.RdbValue
    expire_ms: int | None = None


@dataclass
class RdbFile:
    """What a file holds, in file order."""

    version: int
    aux: list[tuple[bytes, bytes]] = field(default_factory=list)
    functions: list[bytes] = field(default_factory=list)
    dbs: dict[int, list[RdbKey]] = field(default_factory=dict)
    skipped_expired: int = 0  # keys whose expiry had passed when loaded (not in ``dbs``)
    skipped_empty: int = 0  # empty lists and sets (RDB_LOAD_ERR_EMPTY_KEY), not in ``dbs``
    end: int = 0  # where the file ends in the bytes it was read from (an AOF base is followed by commands)

    def aux_value(self, name: bytes) -> bytes | None:
        for k, v in self.aux:
            if k == name:
                return v
        return None


def magic(version: int) -> bytes:
    """The first 9 bytes of a file of ``version``."""
    if version >= VALKEY_FIRST_OWN_VERSION:
        return b"VALKEY%03d" % version
    return b"REDIS%04d" % version


def standard_aux(version: int, server_name: str, server_version: str, ctime: int, used_mem: int,
                 aof_base: bool, repl: tuple[int, str, int] | None = None) -> list[tuple[bytes, bytes]]:
    """The aux fields ``rdbSaveInfoAuxFields`` writes: the server's version (``redis-ver``, Valkey's
    ``valkey-ver``), ``redis-bits``, ``ctime``, ``used-mem``, the replication info when given
    (``repl-stream-db``, ``repl-id``, ``repl-offset``), and whether the file is an AOF base
    (``aof-base``; 6.2 and older call it ``aof-preamble``)."""
    name = b"valkey-ver" if server_name == "valkey" else b"redis-ver"
    aux = [(name, server_version.encode()), (b"redis-bits", b"64"), (b"ctime", b"%d" % ctime),
           (b"used-mem", b"%d" % used_mem)]
    if repl is not None:
        db, replid, offset = repl
        aux += [(b"repl-stream-db", b"%d" % db), (b"repl-id", replid.encode()), (b"repl-offset", b"%d" % offset)]
    aux.append((b"aof-preamble" if version < 10 else b"aof-base", b"1" if aof_base else b"0"))
    return aux


# -- writing ----------------------------------------------------------------------------------------


def write_chunks(f: RdbFile, checksum: bool = True) -> Iterable[bytes]:
    """The file's bytes in pieces, the last the CRC (zero when ``checksum`` is off: ``rdbchecksum no``)."""
    fmt = rdb.rdb_format(f.version)
    crc = 0
    out: list[bytes] = [magic(f.version)]
    for name, v in f.aux:
        out += [bytes((OP_AUX,)), rdb.encode_string(name), rdb.encode_string(v)]
    for code in f.functions:
        out += [bytes((OP_FUNCTION2,)), rdb.encode_string(code)]
    for dbid in sorted(f.dbs):
        keys = f.dbs[dbid]
        if not keys:
            continue
        expiring = sum(1 for k in keys if k.expire_ms is not None)
        out += [bytes((OP_SELECTDB,)), rdb.encode_length(dbid),
                bytes((OP_RESIZEDB,)), rdb.encode_length(len(keys)), rdb.encode_length(expiring)]
        for k in keys:
            if k.expire_ms is not None:
                out += [bytes((OP_EXPIRETIME_MS,)), (k.expire_ms & rdb._U64).to_bytes(8, "little")]
            body = rdb.encode_value(k.value, fmt)
            out += [body[:1], rdb.encode_string(k.key), body[1:]]
            if len(out) > 256:
                chunk = b"".join(out)
                if checksum:
                    crc = crc64(crc, chunk)
                yield chunk
                out = []
    out.append(bytes((OP_EOF,)))
    chunk = b"".join(out)
    if checksum:
        crc = crc64(crc, chunk)
    yield chunk
    yield crc.to_bytes(8, "little")


def write_rdb(f: RdbFile, checksum: bool = True) -> bytes:
    """The whole file as bytes."""
    return b"".join(write_chunks(f, checksum))


# -- reading ----------------------------------------------------------------------------------------


def file_version(data: bytes) -> int:
    """The version a file's magic names; :class:`RdbFileError` for a wrong signature."""
    head = data[:9]
    if len(head) < 9:
        raise RdbFileError("Short read or OOM loading DB. Unrecoverable error, aborting now.")
    if head.startswith(b"REDIS") and head[5:].isdigit():
        return int(head[5:])
    if head.startswith(b"VALKEY") and head[6:].isdigit():
        return int(head[6:])
    raise RdbFileError("Wrong signature trying to load DB from file")


def read_rdb(data: bytes, server_version: int, now_ms: int | None = None, check_crc: bool = True,
             drop_expired: bool = True) -> RdbFile:
    """Load a file as a server writing RDB ``server_version`` does (``rdbLoadRio``).

    A key whose expiry is before ``now_ms`` is left out when ``drop_expired`` (a primary loading
    an RDB file does so; not an AOF base) and counted in ``skipped_expired``; empty lists and sets
    are left out and counted. Raises :class:`RdbFileError` for what the server refuses, and
    :class:`xspec.spec.rdb.UnmodelledType` for a value type this project does not hold."""
    version = file_version(data)
    accepted = rdb.version_accepted(version, server_version) if version >= 1 else False
    if not accepted or (version >= VALKEY_FIRST_OWN_VERSION and not data.startswith(b"VALKEY")):
        raise RdbFileError(f"Can't handle RDB format version {version}")
    fmt = rdb.rdb_format(server_version)
    r = rdb.Reader(data)
    r.pos = 9
    f = RdbFile(version)
    dbid = 0
    expire: int | None = None
    try:
        while True:
            op = r.byte()
            if op == OP_EXPIRETIME:
                expire = int.from_bytes(r.take(4), "little", signed=True) * 1000
                continue
            if op == OP_EXPIRETIME_MS:
                expire = r.millis()
                continue
            if op == OP_FREQ:
                r.byte()
                continue
            if op == OP_IDLE:
                r.plain_length()
                continue
            if op == OP_EOF:
                break
            if op == OP_SELECTDB:
                dbid = r.plain_length()
                f.dbs.setdefault(dbid, [])
                continue
            if op == OP_RESIZEDB:
                r.plain_length()
                r.plain_length()
                continue
            if op == OP_SLOT_INFO:
                for _ in range(3):
                    r.plain_length()
                continue
            if op == OP_AUX:
                f.aux.append((r.string(), r.string()))
                continue
            if op == OP_MODULE_AUX:
                raise RdbFileError("Module aux data in an RDB file: modules are not supported")
            if op == OP_FUNCTION_PRE_GA:
                raise RdbFileError("Pre-release function format not supported.")
            if op == OP_FUNCTION2:
                f.functions.append(r.string())
                continue
            key = r.string()
            try:
                value = rdb.read_object(r, op, fmt)
            except rdb.EmptyKey:
                f.skipped_empty += 1
                expire = None
                continue
            if drop_expired and expire is not None and now_ms is not None and expire < now_ms:
                f.skipped_expired += 1
            else:
                f.dbs.setdefault(dbid, []).append(RdbKey(key, value, expire))
            expire = None
        if version >= 5:
            stored = int.from_bytes(r.take(8), "little")
            if check_crc and stored and crc64(0, data[:r.pos - 8]) != stored:
                raise RdbFileError("Wrong RDB checksum. Aborting now.")
        f.end = r.pos
    except rdb.RdbFormatError as e:
        raise RdbFileError(f"Short read or OOM loading DB. Unrecoverable error, aborting now. ({e})") from e
    f.dbs = {k: v for k, v in f.dbs.items() if v}
    return f
