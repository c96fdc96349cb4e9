"""The hash commands (spec/rules/hashes.md), as Redis 7.0.15's ``t_hash.c`` runs them.

A hash is a :class:`~xspec.models.state.HashValue`. While small it is a listpack, whose order
(insertion order; an update keeps the field's place, a removal closes the gap) every reply that
walks it follows: HGETALL, HKEYS, HVALS, HSCAN. Once a value or field is longer than
``hash-max-listpack-value`` (64) or the hash has more than ``hash-max-listpack-entries`` (128)
fields it becomes a hash table for good, whose walk follows the server's random hash seed: those
replies are then equal to any order of the same pairs (HASH-11).
"""

from __future__ import annotations

from typing import Any

from xspec.models.expiry import keyspace, lookup
from xspec.models.generic import parse_cursor
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.samples import OneOf, Sample
from xspec.models.server import SELF_EXPIRING, Call, CommandError, HandlerResult, PreRendered, command
from xspec.models.sets import AnyOrderArray, random_count
from xspec.models.state import HashValue
from xspec.models.strings import add_long_doubles
from xspec.spec import commands as table
from xspec.spec.errors import INVALID_CURSOR
from xspec.spec.floats import string2ld
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import I64_MAX, I64_MIN, c_string, parse_ll
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Map, Reply

SELF_EXPIRING.update("hset hsetnx hmset hget hmget hgetall hdel hexists hincrby hincrbyfloat hkeys hvals hlen "
                     "hstrlen hscan hrandfield".split())

HASH_MAX_LISTPACK_ENTRIES = 128
HASH_MAX_LISTPACK_VALUE = 64


def _limit(call: Call, name: str, default: int) -> int:
    for setting in (f"hash-max-listpack-{name}", f"hash-max-ziplist-{name}"):
        if setting in call.server.config:
            return call.server.config_int(setting)
    return default


def hash_at(call: Call, key: bytes) -> HashValue | None:
    """``lookupKey`` + ``checkType``: the hash at ``key``, None if missing; WRONGTYPE for another type."""
    v = lookup(call, key)
    if v is None or isinstance(v, HashValue):
        return v
    raise CommandError(table.WRONGTYPE)  # HASH-1


def _hash_for_write(call: Call, key: bytes) -> HashValue:
    """``hashTypeLookupWriteOrCreate``: the hash at ``key``, created empty (not stored yet) if missing."""
    h = hash_at(call, key)
    return HashValue() if h is None else h


def _store(call: Call, key: bytes, h: HashValue, event: str) -> None:
    """A hash that a write left non-empty: stored if new (a new key has no time), watchers told, ``event``."""
    db = keyspace(call)
    if db.get(key) is not h:
        db[key] = h
        notify_new(call, key)  # NOTIFY-3
    call.modified(key)
    notify_keyspace_event(call, "h", event, key)  # NOTIFY-1


def _try_conversion(call: Call, h: HashValue, args: list[bytes]) -> None:
    """``hashTypeTryConversion``: a field or value longer than the listpack limit makes it a hash table (HASH-10)."""
    if h.encoding == "hashtable":
        return
    limit = _limit(call, "value", HASH_MAX_LISTPACK_VALUE)
    if any(len(a) > limit for a in args):
        h.encoding = "hashtable"


def _set(call: Call, h: HashValue, field: bytes, value: bytes) -> bool:
    """``hashTypeSet``: whether the field is new; a listpack grown past its entry limit converts (HASH-10)."""
    new = field not in h.fields
    h.fields[field] = value
    if h.encoding != "hashtable" and len(h.fields) > _limit(call, "entries", HASH_MAX_LISTPACK_ENTRIES):
        h.encoding = "hashtable"
    return new


# -- writes ----------------------------------------------------------------------------------
def _hset(call: Call, legacy_reply: bool) -> Reply:
    argv = call.argv
    if len(argv) % 2 == 1:  # HSET-1
        raise CommandError(table.arity_error(call.spec))
    key = argv[1]
    h = _hash_for_write(call, key)
    _try_conversion(call, h, argv[2:])  # HASH-10
    created = sum(_set(call, h, f, v) for f, v in zip(argv[2::2], argv[3::2], strict=True))
    _store(call, key, h, "hset")
    call.changed((len(argv) - 2) // 2)  # HSET-2
    call.propagate_verbatim()
    return OK if legacy_reply else Int(created)  # HSET-2: HMSET answers OK


@command("hset")
def hset(call: Call) -> Reply:
    return _hset(call, legacy_reply=False)


@command("hmset")
def hmset(call: Call) -> Reply:
    return _hset(call, legacy_reply=True)


@command("hsetnx")
def hsetnx(call: Call) -> Reply:
    key, field, value = call.argv[1], call.argv[2], call.argv[3]
    h = _hash_for_write(call, key)
    if field in h.fields:  # HSETNX-1
        return Int(0)
    _try_conversion(call, h, [field, value])
    _set(call, h, field, value)
    _store(call, key, h, "hset")
    call.changed()
    call.propagate_verbatim()
    return Int(1)


@command("hdel")
def hdel(call: Call) -> Reply:
    key = call.argv[1]
    h = hash_at(call, key)
    if h is None:  # HDEL-1
        return Int(0)
    deleted = 0
    for field in call.argv[2:]:
        if h.fields.pop(field, None) is not None:
            deleted += 1
            if not h.fields:  # HDEL-2: the emptied hash is deleted, the rest of the fields not looked at
                del call.db[key]
                call.deleted(key, h)
                break
    if deleted:
        call.modified(key)
        notify_keyspace_event(call, "h", "hdel", key)  # NOTIFY-1
        if key not in call.db:
            notify_keyspace_event(call, "g", "del", key)
        call.changed(deleted)
        call.propagate_verbatim()
    return Int(deleted)


@command("hincrby")
def hincrby(call: Call) -> Reply:
    key, field = call.argv[1], call.argv[2]
    incr = parse_ll(call.argv[3])
    if incr is None:  # HINCRBY-1: the increment first
        raise CommandError(table.NOT_INTEGER)
    h = _hash_for_write(call, key)
    old = h.fields.get(field)
    value = 0
    if old is not None:
        parsed = parse_ll(old)
        if parsed is None:  # HINCRBY-2
            raise CommandError("ERR hash value is not an integer")
        value = parsed
    if (incr < 0 and value < 0 and incr < I64_MIN - value) or (incr > 0 and value > 0 and incr > I64_MAX - value):
        raise CommandError("ERR increment or decrement would overflow")  # HINCRBY-3
    value += incr
    _set(call, h, field, b"%d" % value)
    _store(call, key, h, "hincrby")
    call.changed()
    call.propagate_verbatim()
    return Int(value)


@command("hincrbyfloat")
def hincrbyfloat(call: Call) -> Reply:
    key, field = call.argv[1], call.argv[2]
    incr = string2ld(call.argv[3])
    if incr is None:  # HINCRBYFLOAT-1
        raise CommandError("ERR value is not a valid float")
    if isinstance(incr, float):
        raise CommandError("ERR value is NaN or Infinity")
    h = _hash_for_write(call, key)
    old = h.fields.get(field)
    if old is not None and string2ld(old) is None:  # HINCRBYFLOAT-2
        raise CommandError("ERR hash value is not a float")
    new = add_long_doubles(old, call.argv[3], "ERR hash value is not a float")
    _set(call, h, field, new)
    _store(call, key, h, "hincrbyfloat")
    call.changed()
    call.propagate([b"HSET", key, field, new])  # HINCRBYFLOAT-3
    return Bulk(new)


# -- reads -----------------------------------------------------------------------------------
@command("hget")
def hget(call: Call) -> Reply:
    h = hash_at(call, call.argv[1])
    v = None if h is None else h.fields.get(call.argv[2])
    return NULL_BULK if v is None else Bulk(v)  # HGET-1


@command("hmget")
def hmget(call: Call) -> Reply:
    h = hash_at(call, call.argv[1])  # HGET-2: WRONGTYPE, unlike MGET
    fields = {} if h is None else h.fields
    return Array(tuple(NULL_BULK if (v := fields.get(f)) is None else Bulk(v) for f in call.argv[2:]))


@command("hexists")
def hexists(call: Call) -> Reply:
    h = hash_at(call, call.argv[1])
    return Int(int(h is not None and call.argv[2] in h.fields))  # HGET-3


@command("hlen")
def hlen(call: Call) -> Reply:
    h = hash_at(call, call.argv[1])
    return Int(0 if h is None else len(h.fields))  # HGET-3


@command("hstrlen")
def hstrlen(call: Call) -> Reply:
    h = hash_at(call, call.argv[1])
    v = None if h is None else h.fields.get(call.argv[2])
    return Int(0 if v is None else len(v))  # HGET-3


class AnyOrderPairs(Array):
    """A flat field-value array of a hash table's walk: equal to one with the same pairs in any order (HASH-11)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Array and _pairs(self.items) == _pairs(other.items)

    def __hash__(self) -> int:
        return hash(_pairs(self.items))


class AnyOrderMap(Map):
    """A RESP3 map of a hash table's walk: equal to one with the same pairs in any order (HASH-11)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Map and sorted(map(repr, self.pairs)) == sorted(map(repr, other.pairs))

    def __hash__(self) -> int:
        return hash(tuple(sorted(map(repr, self.pairs))))


def _pairs(items: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(items) % 2:
        return ("odd", items)
    return tuple(sorted((repr(items[i]), repr(items[i + 1])) for i in range(0, len(items), 2)))


@command("hgetall")
def hgetall(call: Call) -> HandlerResult:
    h = hash_at(call, call.argv[1])
    pairs = () if h is None else tuple((Bulk(f), Bulk(v)) for f, v in h.fields.items())
    if h is None or h.encoding != "hashtable":  # HASH-11: a listpack's order
        return Map(pairs)
    if call.client.proto == 3:
        return PreRendered(AnyOrderMap(pairs))
    return PreRendered(AnyOrderPairs(tuple(x for pair in pairs for x in pair)))


def _walk(call: Call, values: bool) -> HandlerResult:
    h = hash_at(call, call.argv[1])
    items = () if h is None else tuple(Bulk(v if values else f) for f, v in h.fields.items())
    if h is None or h.encoding != "hashtable":  # HASH-11
        return Array(items)
    return PreRendered(AnyOrderArray(items))


@command("hkeys")
def hkeys(call: Call) -> HandlerResult:
    return _walk(call, values=False)


@command("hvals")
def hvals(call: Call) -> HandlerResult:
    return _walk(call, values=True)


@command("hscan")
def hscan(call: Call) -> Reply:
    argv = call.argv
    if parse_cursor(argv[2]) is None:  # HSCAN-1: the cursor first
        raise CommandError(INVALID_CURSOR)
    h = hash_at(call, argv[1])
    if h is None:  # HSCAN-1: a missing key answers an empty page, whatever the options
        return Array((Bulk(b"0"), Array(())))
    pattern: bytes | None = None
    i = 3
    while i < len(argv):  # HSCAN-2: SCAN's options without TYPE
        opt = c_string(argv[i]).lower()
        more = len(argv) - i
        if opt == b"count" and more >= 2:
            count = parse_ll(argv[i + 1])
            if count is None:
                raise CommandError(table.NOT_INTEGER)
            if count < 1:
                raise CommandError(table.SYNTAX)
        elif opt == b"match" and more >= 2:
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        else:
            raise CommandError(table.SYNTAX)
        i += 2
    flat: list[Reply] = []
    for f, v in h.fields.items():
        if pattern is None or pattern_matches(pattern, f):
            flat += (Bulk(f), Bulk(v))
    # HSCAN-3: a listpack answers whole, in order, with cursor 0; a hash table's pages follow the
    # seed (ENV-SCAN): the model gives the whole walk, which a page of the real server is part of.
    return Array((Bulk(b"0"), Array(tuple(flat))))


HRANDFIELD_OUT_OF_RANGE = "ERR value is out of range"


@command("hrandfield")
def hrandfield(call: Call) -> HandlerResult:
    argv = call.argv
    if len(argv) == 2:  # HASH-13: a field drawn at random
        h = hash_at(call, argv[1])
        return NULL_BULK if h is None else PreRendered(OneOf.of(list(h.fields)))  # ENV-RANDOM
    count = random_count(argv[2])  # HASH-13: the count first
    if len(argv) > 4 or (len(argv) == 4 and c_string(argv[3]).lower() != b"withvalues"):
        raise CommandError(table.SYNTAX)
    withvalues = len(argv) == 4
    if withvalues and not -(I64_MAX // 2) <= count <= I64_MAX // 2:  # HASH-13
        raise CommandError(HRANDFIELD_OUT_OF_RANGE)
    h = hash_at(call, argv[1])
    if h is None or count == 0:
        return Array(())
    pool: list[tuple[Reply, ...]] = []
    for f, v in h.fields.items():
        if not withvalues:
            pool.append((Bulk(f),))
        elif call.client.proto == 3:  # HASH-13: RESP3 nests each pair
            pool.append((Array((Bulk(f), Bulk(v))),))
        else:
            pool.append((Bulk(f), Bulk(v)))
    size = min(count, len(pool)) if count > 0 else -count
    return PreRendered(Sample.of(pool, size, distinct=count > 0))  # ENV-RANDOM
