"""Handlers of the sorted-set commands (spec/rules/zsets.md).

ZADD, ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT,
the ZRANGE family (ZRANGE, ZRANGESTORE, ZREVRANGE, Z[REV]RANGEBYSCORE,
Z[REV]RANGEBYLEX), ZREMRANGEBY{RANK,SCORE,LEX}, ZUNION, ZINTER, ZDIFF (and
their STORE forms), ZINTERCARD, ZPOPMIN, ZPOPMAX, ZMPOP, ZSCAN and the blocking
BZPOPMIN, BZPOPMAX and BZMPOP, as Redis 7.0.15 runs them, with the dialects'
differences.

A sorted set is a :class:`ZSetValue`, never empty while stored. Its encoding
(listpack, ziplist in 6.2, or skiplist) follows Redis's conversions, because it
decides what a client can see: whether -0 keeps its sign, and how ZSCAN walks
the set. A sorted set made at a key (dbAdd) signals the key as ready for clients
blocked on sorted sets (BZSET-2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from xspec.models.cerrno import note_strtoull
from xspec.models.generic import parse_cursor
from xspec.models.lists import parse_timeout, run_again
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.samples import OneOf, Sample
from xspec.models.server import Call, CommandError, HandlerResult, PreRendered, command
from xspec.models.sets import random_count
from xspec.models.state import SetValue, Value, ZSetValue
from xspec.spec import commands as table
from xspec.spec import zsets as vocab
from xspec.spec.doubles import packed_score_text, percent_g17, read_double, reply_text, strtod
from xspec.spec.errors import COUNT_NOT_POSITIVE, INVALID_CURSOR
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import I64_MAX, c_string, parse_ll
from xspec.spec.resp import EMPTY_ARRAY, NULL_BULK, Array, Bulk, Double, Error, Int, NullArray, Reply

MIN, MAX = "min", "max"
OUT_OF_RANGE = "ERR value is out of range"


# -- values and encodings ---------------------------------------------------------------------
def zset_at(call: Call, key: bytes) -> ZSetValue | None:
    """The sorted set at ``key``, None if missing; WRONGTYPE for another type (ZSET-1)."""
    return call.typed(key, ZSetValue)


def packs_zero_unsigned(call: Call, value: ZSetValue) -> bool:
    """Whether the set stores an integral score as an integer, losing -0's sign (ZSET-ENC-3)."""
    return value.encoding == "listpack" and not call.server.dialect.zset_ziplist


def kept_score(call: Call, value: ZSetValue, score: float) -> float:
    """The score as the set's encoding keeps it (ZSET-ENC-3)."""
    return 0.0 if score == 0 and packs_zero_unsigned(call, value) else score


def new_zset(call: Call, size_hint: int, longest_hint: int) -> ZSetValue:
    """The encoding a new sorted set starts with (ZSET-ENC-1)."""
    if call.server.dialect.zset_size_hints:  # ZSET-DIALECT-2: zsetTypeCreate
        small = size_hint <= vocab.MAX_LISTPACK_ENTRIES and longest_hint <= vocab.MAX_LISTPACK_VALUE
    else:
        small = longest_hint <= vocab.MAX_LISTPACK_VALUE
    return ZSetValue("listpack" if small else "skiplist")


def to_skiplist(value: ZSetValue) -> None:
    """``zsetConvert``: a listpack becomes a skiplist for good (ZSET-ENC-2)."""
    value.encoding = "skiplist"


def fits_listpack(members: Iterable[bytes], length: int) -> bool:
    """``zsetConvertToListpackIfNeeded``'s test for a stored result (ZSET-ENC-4)."""
    return length <= vocab.MAX_LISTPACK_ENTRIES and all(len(m) <= vocab.MAX_LISTPACK_VALUE for m in members)


def store_member(call: Call, value: ZSetValue, member: bytes, score: float) -> None:
    """``zsetAdd`` of a member not yet there: a listpack too long, or given a long member, converts first."""
    if value.encoding == "listpack" and (len(value.scores) + 1 > vocab.MAX_LISTPACK_ENTRIES
                                         or len(member) > vocab.MAX_LISTPACK_VALUE):
        to_skiplist(value)  # ZSET-ENC-2
    value.insert(member, kept_score(call, value, score))


def set_score(call: Call, value: ZSetValue, member: bytes, score: float) -> None:
    """Move an existing member to a new score."""
    value.remove(member)
    value.insert(member, kept_score(call, value, score))


def double_reply(call: Call, score: float) -> Double:
    """``addReplyDouble``: a RESP3 double, a bulk string in RESP2 (ZSET-DOUBLE-1, ZSET-DIALECT-2)."""
    return Double(reply_text(score, call.server.dialect.double_replies_shortest))


def pairs_reply(call: Call, pairs: Iterable[tuple[bytes, float]], withscores: bool) -> Array:
    """Members, with their scores when asked: flat in RESP2, pairs in RESP3 (ZSET-10)."""
    if not withscores:
        return Array(tuple(Bulk(m) for m, _ in pairs))
    if call.client.proto == 3:
        return Array(tuple(Array((Bulk(m), double_reply(call, s))) for m, s in pairs))
    flat: list[Reply] = []
    for m, s in pairs:
        flat += (Bulk(m), double_reply(call, s))
    return Array(tuple(flat))


def store_result(call: Call, dst: bytes, result: ZSetValue | None, size: int, event: str) -> Int:
    """``setKey`` of a non-empty result, or the deletion of ``dst`` for an empty one (ZSET-11); the
    command's keyspace event, or ``del`` for the deletion (NOTIFY-4)."""
    if result is not None and result.scores:
        old = call.db.get(dst)
        call.db[dst] = result
        if old is None:
            call.ready(dst, "zset")  # BZSET-2: dbAdd
            notify_new(call, dst)  # NOTIFY-3
        else:
            call.deleted(dst, old)
        call.modified(dst)
        notify_keyspace_event(call, "z", event, dst)  # NOTIFY-4
        call.changed()  # STATS-4
        call.propagate_verbatim()
        return Int(size)
    old = call.db.pop(dst, None)
    if old is not None:  # ZSET-11: an empty result deletes the destination
        call.deleted(dst, old)
        call.modified(dst)
        notify_keyspace_event(call, "g", "del", dst)  # NOTIFY-4
        call.changed()
        call.propagate_verbatim()
    return Int(0)


def removed(call: Call, key: bytes, value: ZSetValue, event: str) -> None:
    """A command took members out: the key is touched, the command's event sent, and an emptied set
    deleted with a ``del`` event (ZSET-5, NOTIFY-4)."""
    call.modified(key)
    notify_keyspace_event(call, "z", event, key)
    if not value.scores:
        del call.db[key]
        notify_keyspace_event(call, "g", "del", key)


# -- argument parsing --------------------------------------------------------------------------
def parse_score(call: Call, arg: bytes, error: str = vocab.NOT_A_FLOAT) -> float:
    """``getDoubleFromObjectOrReply`` (ZSET-2); ``string2d`` clears errno before its ``strtod`` (XADD-14)."""
    value, erange = read_double(arg, call.server.dialect.fast_float_doubles)  # ZSET-DIALECT-3
    note_strtoull(call.server, overflow=erange)
    if value is None:
        raise CommandError(error)
    return value


def parse_long(arg: bytes, error: str = table.NOT_INTEGER) -> int:
    """``getLongFromObjectOrReply``: a strict 64-bit integer, ``error`` otherwise."""
    value = parse_ll(arg)
    if value is None:
        raise CommandError(error)
    return value


def parse_positive(arg: bytes, error: str = COUNT_NOT_POSITIVE) -> int:
    """``getPositiveLongFromObjectOrReply``: 0 or more; anything else (not a number too) gives ``error``."""
    value = parse_ll(arg)
    if value is None or value < 0:
        raise CommandError(error)
    return value


def parse_at_least_one(arg: bytes, error: str) -> int:
    """``getRangeLongFromObjectOrReply(1, LONG_MAX, error)``."""
    value = parse_ll(arg)
    if value is None or value < 1:
        raise CommandError(error)
    return value


def word(arg: bytes) -> bytes:
    return c_string(arg).lower()


# -- ZADD, ZINCRBY -------------------------------------------------------------------------------
_ZADD_FLAGS = (b"nx", b"xx", b"ch", b"incr", b"gt", b"lt")


@command("zadd")
def zadd(call: Call) -> Reply:
    return add_command(call, incr=False)


@command("zincrby")
def zincrby(call: Call) -> Reply:
    return add_command(call, incr=True)  # ZSET-4


def add_command(call: Call, incr: bool) -> Reply:
    argv = call.argv
    flags: set[bytes] = {b"incr"} if incr else set()
    i = 2
    while i < len(argv) and word(argv[i]) in _ZADD_FLAGS:  # ZSET-2: options, until the first other word
        flags.add(word(argv[i]))
        i += 1
    rest = len(argv) - i
    if rest % 2 or not rest:  # ZSET-2
        raise CommandError(table.SYNTAX)
    nx, xx, gt, lt, incr = (f in flags for f in (b"nx", b"xx", b"gt", b"lt", b"incr"))
    if nx and xx:  # ZSET-2
        raise CommandError(vocab.XX_AND_NX)
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise CommandError(vocab.GT_LT_NX)
    pairs = rest // 2
    if incr and pairs > 1:
        raise CommandError(vocab.INCR_SINGLE_PAIR)
    scores = [parse_score(call, argv[i + 2 * j]) for j in range(pairs)]  # ZSET-2: all before the lookup
    key = argv[1]
    value = zset_at(call, key)  # ZSET-1
    added = updated = processed = 0
    score = 0.0
    reply: Reply | None = None
    if value is None and xx:  # ZSET-2: nothing is created
        pass
    else:
        if value is None:
            value = new_zset(call, pairs, len(argv[i + 1]))  # ZSET-ENC-1
            call.db[key] = value
            call.ready(key, "zset")  # BZSET-2: dbAdd
            notify_new(call, key)  # NOTIFY-3
        elif call.server.dialect.zset_size_hints and value.encoding == "listpack" \
                and pairs > vocab.MAX_LISTPACK_ENTRIES:
            to_skiplist(value)  # ZSET-DIALECT-2: zsetTypeMaybeConvert
        for j in range(pairs):
            outcome = add_one(call, value, argv[i + 1 + 2 * j], scores[j], nx, xx, gt, lt, incr)
            if outcome is None:  # ZSET-3: the increment made NaN
                reply = Error(vocab.NAN_RESULT)
                break
            kind, score = outcome
            added += kind == "added"
            updated += kind == "updated"
            processed += kind != "nop"
    if added or updated:  # ZSET-3: a change touches the key and is propagated
        call.modified(key)
        notify_keyspace_event(call, "z", "zincr" if incr else "zadd", key)  # NOTIFY-4
        call.changed(added + updated)  # STATS-4
        if reply is None:
            call.propagate_verbatim()
    if reply is not None:
        raise CommandError(cast(Error, reply).text)
    if incr:  # ZSET-3
        return double_reply(call, score) if processed else NULL_BULK
    return Int(added + updated if b"ch" in flags else added)


def add_one(call: Call, value: ZSetValue, member: bytes, score: float, nx: bool, xx: bool, gt: bool, lt: bool,
            incr: bool) -> tuple[str, float] | None:
    """``zsetAdd``: what happened to one member ("added", "updated", "same", "nop") and its new score;
    None when an increment made NaN (ZSET-3)."""
    current = value.scores.get(member)
    if current is not None:
        if nx:
            return "nop", score
        if incr:
            score += current
            if math.isnan(score):
                return None
        if (lt and score >= current) or (gt and score <= current):
            return "nop", score
        if score != current:
            set_score(call, value, member, score)
            return "updated", score
        return "same", score
    if xx:
        return "nop", score
    store_member(call, value, member, score)
    return "added", score


# -- ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK --------------------------------------------------------------
@command("zrem")
def zrem(call: Call) -> Reply:
    key = call.argv[1]
    value = zset_at(call, key)
    if value is None:  # ZSET-5
        return Int(0)
    deleted = 0
    for member in call.argv[2:]:
        if member in value.scores:
            value.remove(member)
            deleted += 1
        if not value.scores:  # ZSET-5: the removal that empties the set deletes it; later members are not looked at
            break
    if deleted:
        removed(call, key, value, "zrem")
        call.changed(deleted)  # STATS-4
        call.propagate_verbatim()
    return Int(deleted)


@command("zcard")
def zcard(call: Call) -> Reply:
    return Int(call.size(call.argv[1], ZSetValue))  # ZSET-6


@command("zscore")
def zscore(call: Call) -> Reply:
    value = zset_at(call, call.argv[1])
    score = None if value is None else value.scores.get(call.argv[2])
    return NULL_BULK if score is None else double_reply(call, score)  # ZSET-6


@command("zmscore")
def zmscore(call: Call) -> Reply:
    value = zset_at(call, call.argv[1])  # ZSET-6: a missing key answers like an empty set
    scores = [None if value is None else value.scores.get(m) for m in call.argv[2:]]
    return Array(tuple(NULL_BULK if s is None else double_reply(call, s) for s in scores))


@command("zrank")
def zrank(call: Call) -> Reply:
    return rank_command(call, reverse=False)


@command("zrevrank")
def zrevrank(call: Call) -> Reply:
    return rank_command(call, reverse=True)


def rank_command(call: Call, reverse: bool) -> Reply:
    argv = call.argv
    withscore = False
    if len(argv) > 4:  # ZSET-DIALECT-2: 7.2's handler checks its own arity
        raise CommandError(table.arity_error(call.spec))
    if len(argv) == 4:
        if word(argv[3]) != b"withscore":
            raise CommandError(table.SYNTAX)
        withscore = True
    value = zset_at(call, argv[1])  # ZSET-7
    if value is None or argv[2] not in value.scores:
        return NullArray() if withscore else NULL_BULK
    rank = value.rank(argv[2])
    if reverse:
        rank = len(value.scores) - 1 - rank
    if withscore:
        return Array((Int(rank), double_reply(call, value.scores[argv[2]])))
    return Int(rank)


# -- ranges ------------------------------------------------------------------------------------------
def score_range(call: Call, low: bytes, high: bytes) -> vocab.ScoreRange:
    fast = call.server.dialect.fast_float_doubles  # ZSET-DIALECT-3
    for end in (low, high):  # XADD-14: strtod leaves errno alone unless the value is out of range
        if strtod(end[1:] if end[:1] == b"(" else end, fast)[2]:
            note_strtoull(call.server, overflow=True)
        if vocab.parse_score_range(end, end, fast) is None:  # the second end is not read after a bad first
            break
    r = vocab.parse_score_range(low, high, fast)
    if r is None:  # ZSET-8
        raise CommandError(vocab.RANGE_NOT_A_FLOAT)
    return r


def lex_range(low: bytes, high: bytes) -> vocab.LexRange:
    r = vocab.parse_lex_range(low, high)
    if r is None:  # ZSET-8
        raise CommandError(vocab.LEX_RANGE_INVALID)
    return r


def rank_bounds(length: int, start: int, end: int) -> tuple[int, int] | None:
    """Z[REV]RANGE's and ZREMRANGEBYRANK's index clamping; None for an empty range (ZSET-9)."""
    if start < 0:
        start += length
    if end < 0:
        end += length
    start = max(start, 0)
    if start > end or start >= length:
        return None
    return start, min(end, length - 1)


def in_order(value: ZSetValue, reverse: bool) -> list[tuple[bytes, float]]:
    pairs = [(m, s) for s, m in value.order]
    return pairs[::-1] if reverse else pairs


def by_rank(value: ZSetValue, start: int, end: int, reverse: bool) -> list[tuple[bytes, float]]:
    bounds = rank_bounds(len(value.scores), start, end)
    if bounds is None:
        return []
    pairs = in_order(value, reverse)
    return pairs[bounds[0]:bounds[1] + 1]


def limited(pairs: Iterable[tuple[bytes, float]], offset: int, limit: int) -> list[tuple[bytes, float]]:
    """LIMIT: a negative offset gives nothing, a negative count everything after the offset (ZSET-9)."""
    if offset < 0:
        return []
    out = list(pairs)[offset:]
    return out if limit < 0 else out[:limit]


def by_score(value: ZSetValue, r: vocab.ScoreRange, reverse: bool, offset: int, limit: int) -> list[tuple[bytes, float]]:
    return limited((p for p in in_order(value, reverse) if r.contains(p[1])), offset, limit)


def by_lex(value: ZSetValue, r: vocab.LexRange, reverse: bool, offset: int, limit: int) -> list[tuple[bytes, float]]:
    return limited((p for p in in_order(value, reverse) if r.contains(p[0])), offset, limit)


@dataclass
class RangeRequest:
    """A parsed ZRANGE-family request (ZSET-9)."""

    kind: str  # "rank", "score", "lex"
    reverse: bool
    withscores: bool
    offset: int
    limit: int
    start: int = 0
    end: int = 0
    scores: vocab.ScoreRange | None = None
    lex: vocab.LexRange | None = None


def parse_range(call: Call, first: int, store: bool, kind: str | None, reverse: bool | None) -> RangeRequest:
    """``zrangeGenericCommand``'s steps 1 and 2: options, their conflicts, then the range."""
    argv = call.argv
    withscores = False
    offset, limit = 0, -1
    j = first + 3
    while j < len(argv):  # ZSET-9: options in any order
        opt = word(argv[j])
        left = len(argv) - j - 1
        if not store and opt == b"withscores":
            withscores = True
        elif opt == b"limit" and left >= 2:
            offset = parse_long(argv[j + 1])
            limit = parse_long(argv[j + 2])
            j += 2
        elif reverse is None and opt == b"rev":
            reverse = True
        elif kind is None and opt == b"bylex":
            kind = "lex"
        elif kind is None and opt == b"byscore":
            kind = "score"
        else:
            raise CommandError(table.SYNTAX)
        j += 1
    kind = kind or "rank"
    reverse = bool(reverse)
    if limit != -1 and kind == "rank":  # ZSET-9
        raise CommandError(vocab.LIMIT_NEEDS_BY)
    if withscores and kind == "lex":
        raise CommandError(vocab.WITHSCORES_WITH_BYLEX)
    low, high = argv[first + 1], argv[first + 2]
    if reverse and kind != "rank":  # ZSET-9: a reversed score or lex range is given as max, min
        low, high = high, low
    req = RangeRequest(kind, reverse, withscores, offset, limit)
    if kind == "rank":
        req.start, req.end = parse_long(low), parse_long(high)
    elif kind == "score":
        req.scores = score_range(call, low, high)
    else:
        req.lex = lex_range(low, high)
    return req


def select(value: ZSetValue, req: RangeRequest) -> list[tuple[bytes, float]]:
    if req.kind == "rank":
        return by_rank(value, req.start, req.end, req.reverse)
    if req.kind == "score":
        assert req.scores is not None
        return by_score(value, req.scores, req.reverse, req.offset, req.limit)
    assert req.lex is not None
    return by_lex(value, req.lex, req.reverse, req.offset, req.limit)


def range_command(call: Call, kind: str | None, reverse: bool | None) -> Reply:
    req = parse_range(call, 1, False, kind, reverse)
    value = zset_at(call, call.argv[1])  # ZSET-9: the key is looked up after the arguments
    if value is None:
        return EMPTY_ARRAY
    return pairs_reply(call, select(value, req), req.withscores)  # ZSET-10


@command("zrange")
def zrange(call: Call) -> Reply:
    return range_command(call, None, None)


@command("zrevrange")
def zrevrange(call: Call) -> Reply:
    return range_command(call, "rank", True)


@command("zrangebyscore")
def zrangebyscore(call: Call) -> Reply:
    return range_command(call, "score", False)


@command("zrevrangebyscore")
def zrevrangebyscore(call: Call) -> Reply:
    return range_command(call, "score", True)


@command("zrangebylex")
def zrangebylex(call: Call) -> Reply:
    return range_command(call, "lex", False)


@command("zrevrangebylex")
def zrevrangebylex(call: Call) -> Reply:
    return range_command(call, "lex", True)


@command("zrangestore")
def zrangestore(call: Call) -> Reply:
    req = parse_range(call, 2, True, None, None)
    source = zset_at(call, call.argv[2])  # ZSET-11
    pairs = [] if source is None else select(source, req)
    dialect = call.server.dialect
    size_hint = len(pairs) if req.kind == "rank" and source is not None else -1
    if dialect.zset_size_hints:  # ZSET-DIALECT-2: zsetTypeCreate(length, 0)
        result = new_zset(call, max(size_hint, 0), 0)
    else:  # ZSET-ENC-4: a rank range knows its length beforehand
        result = ZSetValue("skiplist" if size_hint > vocab.MAX_LISTPACK_ENTRIES else "listpack")
    for member, score in pairs:
        store_member(call, result, member, score)
    return store_result(call, call.argv[1], result, len(pairs), "zrangestore")


@command("zcount")
def zcount(call: Call) -> Reply:
    r = score_range(call, call.argv[2], call.argv[3])  # ZSET-12: the range before the key
    value = zset_at(call, call.argv[1])
    return Int(0 if value is None else sum(1 for s in value.scores.values() if r.contains(s)))


@command("zlexcount")
def zlexcount(call: Call) -> Reply:
    r = lex_range(call.argv[2], call.argv[3])  # ZSET-12
    value = zset_at(call, call.argv[1])
    return Int(0 if value is None else sum(1 for m in value.scores if r.contains(m)))


# -- ZREMRANGEBY* --------------------------------------------------------------------------------------
def remove_range(call: Call, kind: str) -> Reply:
    argv = call.argv
    if kind == "rank":  # ZSET-13: the range is parsed first
        start, end = parse_long(argv[2]), parse_long(argv[3])
    elif kind == "score":
        scores = score_range(call, argv[2], argv[3])
    else:
        lex = lex_range(argv[2], argv[3])
    key = argv[1]
    value = zset_at(call, key)
    if value is None:
        return Int(0)
    if kind == "rank":
        doomed = by_rank(value, start, end, False)
    elif kind == "score":
        doomed = by_score(value, scores, False, 0, -1)
    else:
        doomed = by_lex(value, lex, False, 0, -1)
    for member, _ in doomed:
        value.remove(member)
    if doomed:
        removed(call, key, value, "zremrangeby" + kind)
        call.changed(len(doomed))  # STATS-4
        call.propagate_verbatim()
    return Int(len(doomed))


@command("zremrangebyrank")
def zremrangebyrank(call: Call) -> Reply:
    return remove_range(call, "rank")


@command("zremrangebyscore")
def zremrangebyscore(call: Call) -> Reply:
    return remove_range(call, "score")


@command("zremrangebylex")
def zremrangebylex(call: Call) -> Reply:
    return remove_range(call, "lex")


# -- ZUNION, ZINTER, ZDIFF ---------------------------------------------------------------------------
@dataclass
class Source:
    """One input of a set operation: its members and scores (a plain set's are 1), and its weight."""

    pairs: list[tuple[bytes, float]]
    weight: float = 1.0

    @property
    def scores(self) -> dict[bytes, float]:
        return dict(self.pairs)


def source_of(value: Value | None) -> Source:
    """``zuiInitIterator``: a sorted set walked in score order, a set in its encoding's order."""
    if value is None:
        return Source([])
    if isinstance(value, ZSetValue):
        return Source([(m, s) for s, m in value.order])
    if isinstance(value, SetValue):
        return Source([(m, 1.0) for m in value.ordered()])
    raise CommandError(table.WRONGTYPE)


def aggregate(kind: bytes, total: float, score: float) -> float:
    """``zunionInterAggregate`` (ZSET-14): a sum that is NaN becomes 0."""
    if kind == b"sum":
        total = total + score
        return 0.0 if math.isnan(total) else total
    if kind == b"min":
        return min(total, score) if score == score else total
    return max(total, score) if score == score else total


def weighted(score: float, weight: float) -> float:
    product = weight * score
    return 0.0 if math.isnan(product) else product


def set_operation(call: Call, op: str, dst: bytes | None, numkeys_at: int, cardinality_only: bool = False) -> Reply:
    """``zunionInterDiffGenericCommand`` (ZSET-14)."""
    argv = call.argv
    setnum = parse_long(argv[numkeys_at])
    if setnum < 1:
        raise CommandError(vocab.at_least_one_key(call.spec.fullname, call.server.dialect.zset_ziplist))
    if setnum > len(argv) - (numkeys_at + 1):
        raise CommandError(table.SYNTAX)
    keys = argv[numkeys_at + 1:numkeys_at + 1 + setnum]
    sources: list[Source] = []
    for key in keys:  # ZSET-14: every input is looked up, and typed, before the options
        value = call.lookup(key)
        if value is not None and not isinstance(value, ZSetValue | SetValue):
            raise CommandError(table.WRONGTYPE)
        sources.append(source_of(value))
    how = b"sum"
    withscores = False
    limit = 0
    j = numkeys_at + 1 + setnum
    while j < len(argv):
        remaining = len(argv) - j
        opt = word(argv[j])
        if op != "diff" and not cardinality_only and remaining >= setnum + 1 and opt == b"weights":
            for i in range(setnum):
                sources[i].weight = parse_score(call, argv[j + 1 + i], vocab.WEIGHT_NOT_A_FLOAT)
            j += 1 + setnum
        elif op != "diff" and not cardinality_only and remaining >= 2 and opt == b"aggregate":
            how = word(argv[j + 1])
            if how not in (b"sum", b"min", b"max"):
                raise CommandError(table.SYNTAX)
            j += 2
        elif remaining >= 1 and dst is None and not cardinality_only and opt == b"withscores":
            withscores = True
            j += 1
        elif cardinality_only and remaining >= 2 and opt == b"limit":
            limit = parse_positive(argv[j + 1], vocab.LIMIT_NEGATIVE)
            j += 2
        else:
            raise CommandError(table.SYNTAX)
    if op != "diff":  # ZSET-14: smallest input first (a stable sort)
        sources.sort(key=lambda s: len(s.pairs))
    result: dict[bytes, float] = {}
    if op == "inter":
        result = intersect(sources, how, limit if cardinality_only else 0)
    elif op == "union":
        for source in sources:
            for member, score in source.pairs:
                product = weighted(score, source.weight)
                result[member] = aggregate(how, result[member], product) if member in result else product
    else:
        rest = [s.scores for s in sources[1:]]
        result = {m: s for m, s in sources[0].pairs if not any(m in other for other in rest)}
    if cardinality_only:
        return Int(len(result))
    ordered = sorted(result.items(), key=lambda p: (p[1], p[0]))
    if dst is None:
        return pairs_reply(call, ordered, withscores)
    stored = ZSetValue("listpack" if fits_listpack(result, len(result)) else "skiplist")  # ZSET-ENC-4
    for member, score in ordered:
        stored.insert(member, kept_score(call, stored, score))
    return store_result(call, dst, stored, len(result), f"z{op}store")


def intersect(sources: list[Source], how: bytes, limit: int) -> dict[bytes, float]:
    """ZINTER: the smallest input walked in its order, each member aggregated over the others in order."""
    result: dict[bytes, float] = {}
    first = sources[0]
    others = [s.scores for s in sources[1:]]
    for member, score in first.pairs:
        total = weighted(score, first.weight)
        for source, scores in zip(sources[1:], others, strict=True):
            if member not in scores:
                break
            total = aggregate(how, total, weighted(scores[member], source.weight))
        else:
            result[member] = total
            if limit and len(result) >= limit:
                break
    return result


@command("zunionstore")
def zunionstore(call: Call) -> Reply:
    return set_operation(call, "union", call.argv[1], 2)


@command("zinterstore")
def zinterstore(call: Call) -> Reply:
    return set_operation(call, "inter", call.argv[1], 2)


@command("zdiffstore")
def zdiffstore(call: Call) -> Reply:
    return set_operation(call, "diff", call.argv[1], 2)


@command("zunion")
def zunion(call: Call) -> Reply:
    return set_operation(call, "union", None, 1)


@command("zinter")
def zinter(call: Call) -> Reply:
    return set_operation(call, "inter", None, 1)


@command("zdiff")
def zdiff(call: Call) -> Reply:
    return set_operation(call, "diff", None, 1)


@command("zintercard")
def zintercard(call: Call) -> Reply:
    return set_operation(call, "inter", None, 1, cardinality_only=True)


# -- ZPOPMIN, ZPOPMAX, ZMPOP ----------------------------------------------------------------------------
def pop_pairs(call: Call, key: bytes, value: ZSetValue, where: str, count: int) -> list[tuple[bytes, float]]:
    """``genericZpopCommand``'s removal: up to ``count`` members from one end (ZSET-15)."""
    taken: list[tuple[bytes, float]] = []
    for _ in range(min(count, len(value.scores))):
        score, member = value.order[0 if where == MIN else -1]
        value.remove(member)
        taken.append((member, score))
    removed(call, key, value, "zpopmin" if where == MIN else "zpopmax")
    call.changed(len(taken))  # STATS-4
    return taken


def pop_reply(call: Call, key: bytes | None, pairs: list[tuple[bytes, float]], nested: bool) -> Array:
    """The reply shapes of ZPOP (flat, or pairs), BZPOP (key first, flat) and ZMPOP (key, pairs) (ZSET-15)."""
    if nested:
        body: Array = Array(tuple(Array((Bulk(m), double_reply(call, s))) for m, s in pairs))
    else:
        flat: list[Reply] = []
        for m, s in pairs:
            flat += (Bulk(m), double_reply(call, s))
        body = Array(tuple(flat))
    if key is None:
        return body
    if nested:
        return Array((Bulk(key), body))
    return Array((Bulk(key), *body.items))


def zpop_command(call: Call, where: str) -> Reply:
    argv = call.argv
    if len(argv) > 3:  # ZSET-15
        raise CommandError(table.SYNTAX)
    legacy = call.server.dialect.zset_ziplist
    count: int | None = None
    if len(argv) == 3:
        if legacy:  # ZSET-DIALECT-1: any integer; below 1 an empty array before the key is looked at
            count = parse_long(argv[2])
            if count <= 0:
                return EMPTY_ARRAY
        else:
            count = parse_positive(argv[2])
    key = argv[1]
    value = zset_at(call, key)
    if value is None:
        return EMPTY_ARRAY
    if count == 0:  # ZSET-15
        return EMPTY_ARRAY
    nested = call.client.proto == 3 and count is not None
    pairs = pop_pairs(call, key, value, where, 1 if count is None else count)
    call.propagate_verbatim()
    return pop_reply(call, None, pairs, nested)


@command("zpopmin")
def zpopmin(call: Call) -> Reply:
    return zpop_command(call, MIN)


@command("zpopmax")
def zpopmax(call: Call) -> Reply:
    return zpop_command(call, MAX)


def pop_op(where: str, key: bytes, count: int | None) -> list[bytes | int]:
    """What a blocking or multi-key pop propagates: ZPOPMIN/ZPOPMAX key [count] (BZSET-1)."""
    op: list[bytes | int] = [b"ZPOPMIN" if where == MIN else b"ZPOPMAX", key]
    return op if count is None else [*op, count]


def parse_mpop(call: Call, numkeys_at: int) -> tuple[list[bytes], str, int]:
    """``zmpopGenericCommand``'s parsing: numkeys, MIN|MAX, COUNT (ZSET-16)."""
    argv = call.argv
    numkeys = parse_at_least_one(argv[numkeys_at], vocab.NUMKEYS_NOT_POSITIVE)
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise CommandError(table.SYNTAX)
    side = word(argv[where_at])
    if side not in (b"min", b"max"):
        raise CommandError(table.SYNTAX)
    count = -1
    j = where_at + 1
    while j < len(argv):
        if count == -1 and word(argv[j]) == b"count" and len(argv) - 1 - j > 0:
            count = parse_at_least_one(argv[j + 1], vocab.COUNT_NOT_ABOVE_ZERO)
            j += 2
        else:
            raise CommandError(table.SYNTAX)
    keys = argv[numkeys_at + 1:numkeys_at + 1 + numkeys]
    return keys, MIN if side == b"min" else MAX, 1 if count == -1 else count


def first_candidate(call: Call, keys: Iterable[bytes]) -> tuple[bytes, ZSetValue] | None:
    """The first key holding a sorted set; WRONGTYPE stops the walk at the first other type (ZSET-16)."""
    for key in keys:
        value = call.lookup(key)
        if value is None:
            continue
        if not isinstance(value, ZSetValue):
            raise CommandError(table.WRONGTYPE)
        return key, value
    return None


@command("zmpop")
def zmpop(call: Call) -> Reply:
    keys, where, count = parse_mpop(call, 1)
    found = first_candidate(call, keys)
    if found is None:  # ZSET-16
        return NullArray()
    key, value = found
    pairs = pop_pairs(call, key, value, where, count)
    call.propagate(pop_op(where, key, len(pairs)))  # ZSET-16: as ZPOPMIN/ZPOPMAX with the count popped
    return pop_reply(call, key, pairs, nested=True)


# -- BZPOPMIN, BZPOPMAX, BZMPOP -----------------------------------------------------------------------
@dataclass(frozen=True)
class BlockedZPop:
    """What a client blocked in BZPOPMIN, BZPOPMAX or BZMPOP waits to do."""

    where: str
    count: int | None  # None: one member, a flat reply (BZPOP); else BZMPOP's count, a nested reply


def blocking_zpop(call: Call, keys: list[bytes], where: str, count: int | None, timeout_at: int) -> HandlerResult:
    """``blockingGenericZpopCommand`` (BZSET-1)."""
    timeout, read_at = parse_timeout(call, call.argv[timeout_at])  # BZSET-1: BLIST-2's timeout
    for key in keys:
        value = call.lookup(key)
        if value is None:
            continue
        if not isinstance(value, ZSetValue):
            raise CommandError(table.WRONGTYPE)
        pairs = pop_pairs(call, key, value, where, 1 if count is None else count)
        call.propagate(pop_op(where, key, None if count is None else len(pairs)))  # BZSET-1
        return pop_reply(call, key, pairs, nested=count is not None)
    if not call.can_block:  # BZSET-3
        return NullArray()
    return call.block(list(keys), timeout, BlockedZPop(where, count), _serve_function(call), NullArray(),
                      read_at=read_at, kind="zset")  # BZSET-2


@command("bzpopmin")
def bzpopmin(call: Call) -> HandlerResult:
    return blocking_zpop(call, call.argv[1:-1], MIN, None, len(call.argv) - 1)


@command("bzpopmax")
def bzpopmax(call: Call) -> HandlerResult:
    return blocking_zpop(call, call.argv[1:-1], MAX, None, len(call.argv) - 1)


@command("bzmpop")
def bzmpop(call: Call) -> HandlerResult:
    keys, where, count = parse_mpop(call, 2)  # BZSET-1: the timeout is read after the other arguments
    return blocking_zpop(call, keys, where, count, 1)


def _serve_function(call: Call) -> Callable[[Call, bytes], Reply | None]:
    return serve_by_reexecution if call.server.dialect.blocked_reexecution else serve_blocked


def serve_blocked(call: Call, key: bytes) -> Reply | None:
    """7.0, 6.2: ``serveClientsBlockedOnSortedSetKey``: one client popped from the set (BZSET-2).

    None leaves it blocked: an earlier client emptied the set.
    """
    value = call.lookup(key)
    if not isinstance(value, ZSetValue) or not value.scores:
        return None
    blocked = call.client.blocked
    assert blocked is not None
    b: BlockedZPop = blocked.payload
    length = len(value.scores)
    pairs = pop_pairs(call, key, value, b.where, 1 if b.count is None else b.count)
    call.propagate(pop_op(b.where, key, None if b.count is None else min(b.count, length)))  # BZSET-2
    return pop_reply(call, key, pairs, nested=b.count is not None)


def serve_by_reexecution(call: Call, key: bytes) -> Reply | None:
    """7.2+: the key holds a sorted set: the blocked command runs again (BLIST-DIALECT-2, BZSET-2)."""
    if not isinstance(call.lookup(key), ZSetValue):
        return None
    blocked = call.client.blocked
    assert blocked is not None
    name = c_string(blocked.argv[0]).lower()
    return run_again(call, {b"bzpopmin": bzpopmin, b"bzpopmax": bzpopmax}.get(name, bzmpop))


# -- ZSCAN ------------------------------------------------------------------------------------------------
class AnyOrderPairs(Array):
    """ZSCAN's page of a hash-table sorted set: equal to an array holding the same member-score pairs in
    any order (ENV-SCAN)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Array and _pairs(self.items) == _pairs(other.items)

    def __hash__(self) -> int:
        return hash(_pairs(self.items))


def _pairs(items: tuple[Any, ...]) -> tuple[Any, ...]:
    """The member-score pairs of a flat page, as a multiset."""
    if len(items) % 2:
        return ("odd", items)
    return tuple(sorted((repr(items[i]), repr(items[i + 1])) for i in range(0, len(items), 2)))


@command("zscan")
def zscan(call: Call) -> HandlerResult:
    argv = call.argv
    note_strtoull(call.server, overflow=False)  # XADD-14: the cursor goes through strtoul after errno = 0
    if parse_cursor(argv[2]) is None:  # ZSET-17: the cursor first
        raise CommandError(INVALID_CURSOR)
    value = zset_at(call, argv[1])
    if value is None:
        return Array((Bulk(b"0"), EMPTY_ARRAY))
    pattern: bytes | None = None
    i = 3
    while i < len(argv):  # ZSET-17: SCAN's options without TYPE
        opt = word(argv[i])
        more = len(argv) - i
        if opt == b"count" and more >= 2:
            count = parse_long(argv[i + 1])
            if count < 1:
                raise CommandError(table.SYNTAX)
        elif opt == b"match" and more >= 2:
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        else:
            raise CommandError(table.SYNTAX)
        i += 2
    listed = [(m, s) for s, m in value.order if pattern is None or pattern_matches(pattern, m)]
    flat: list[Reply] = []
    if value.encoding == "listpack":  # ZSET-17: the entries as the set keeps them, in order
        packing = "ziplist" if call.server.dialect.zset_ziplist else (
            "listpack-shortest" if call.server.dialect.double_replies_shortest else "listpack")
        for m, s in listed:
            flat += (Bulk(m), Bulk(packed_score_text(s, packing).encode()))
        return Array((Bulk(b"0"), Array(tuple(flat))))
    for m, s in listed:  # ENV-SCAN: a hash table's walk, whole here, in an order the seed decides
        flat += (Bulk(m), Bulk(percent_g17(s).encode()))
    return PreRendered(Array((Bulk(b"0"), AnyOrderPairs(tuple(flat)))))



# -- ZRANDMEMBER ----------------------------------------------------------------------------------------------
@command("zrandmember")
def zrandmember(call: Call) -> HandlerResult:
    argv = call.argv
    if len(argv) == 2:  # ZSET-18
        value = zset_at(call, argv[1])
        return NULL_BULK if value is None else PreRendered(OneOf.of([m for _, m in value.order]))  # ENV-RANDOM
    count = random_count(argv[2])  # ZSET-18: the count first
    if len(argv) > 4 or (len(argv) == 4 and word(argv[3]) != b"withscores"):
        raise CommandError(table.SYNTAX)
    withscores = len(argv) == 4
    if withscores and not -(I64_MAX // 2) <= count <= I64_MAX // 2:
        raise CommandError(OUT_OF_RANGE)
    value = zset_at(call, argv[1])
    if value is None or count == 0:
        return EMPTY_ARRAY
    pool: list[tuple[Reply, ...]] = []
    for score, member in value.order:
        if not withscores:
            pool.append((Bulk(member),))
        elif call.client.proto == 3:
            pool.append((Array((Bulk(member), double_reply(call, score))),))
        else:
            pool.append((Bulk(member), Bulk(double_reply(call, score).text.encode())))
    size = min(count, len(pool)) if count > 0 else -count
    return PreRendered(Sample.of(pool, size, distinct=count > 0))  # ENV-RANDOM
