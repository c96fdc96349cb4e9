"""The reference server's sorted-set commands (spec/rules/zsets.md).

Written apart from the model. A sorted set is a :class:`RefZSet`: a dict of
scores and the ``(score, member)`` pairs kept sorted, plus the encoding Redis
would have chosen (``listpack``, or ``skiplist``), which decides whether -0 keeps
its sign and how ZSCAN lists the set. Clients blocked in BZPOPMIN, BZPOPMAX and
BZMPOP wait with kind ``zset``; 7.0 and 6.2 serve each from the set when one
appears at the key (BZSET-2), 7.2+ run their command again.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator
from typing import Any

from sortedcontainers import SortedList

from xspec.reference.api import Blocked, ReplyError
from xspec.reference.core import Context, value_kind
from xspec.reference.lists import block_timeout
from xspec.reference.notify import notify_keyspace_event, notify_new
from xspec.reference.values import handler_table, random_count, random_draw, value_at
from xspec.spec import commands as table
from xspec.spec import zsets as z
from xspec.spec.doubles import packed_score_text, percent_g17, read_double, reply_text, strtod
from xspec.spec.errors import COUNT_NOT_POSITIVE, INVALID_CURSOR
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import c_string, string2ll, strtoull
from xspec.spec.resp import EMPTY_ARRAY, NULL_ARRAY, NULL_BULK, Array, Bulk, Double, Error, Int, Reply

__all__ = ["HANDLERS", "RefZSet"]

Pair = tuple[bytes, float]


class RefZSet:
    """A sorted set; never stored empty.

    ``score`` is the truth. The order of the pairs is brought up to date when it is read
    (:meth:`ranked`), not by each write: a write notes the member's score as the ordered
    list last had it, and the read moves the noted members one by one; once the writes
    since the last read are many (a quarter of the set), the read sorts the whole set
    again instead and the writes until then note nothing. Reads by rank stay O(log n)
    and a write costs O(log n) amortized, as in a skiplist.
    """

    __slots__ = ("score", "_ranked", "_moved", "_resort", "encoding")
    kind = "zset"

    def __init__(self, encoding: str) -> None:
        self.score: dict[bytes, float] = {}
        # the (score, member) pairs, in order, as they were at the last read of the order
        self._ranked: SortedList = SortedList()
        # the members written since then: their score in _ranked (None: not in it)
        self._moved: dict[bytes, float | None] = {}
        # the next read sorts the whole set again (_moved is then empty)
        self._resort = False
        self.encoding = encoding

    def __len__(self) -> int:
        return len(self.score)

    def __bool__(self) -> bool:  # mypyc takes an object without __bool__ as always true, __len__ or not
        return bool(self.score)

    def put(self, member: bytes, score: float, unsigned_zero: bool) -> None:
        scores = self.score
        if not self._resort and member not in self._moved:
            self._note(member, scores.get(member))
        if unsigned_zero and self.encoding == "listpack" and score == 0:
            score = 0.0  # ZSET-ENC-3: a listpack keeps an integral score as an integer
        scores[member] = score

    def add_new(self, member: bytes, score: float, unsigned_zero: bool) -> None:
        """Add a member that is not there, converting a full listpack first (ZSET-ENC-2, ZSET-ENC-3)."""
        scores = self.score
        if self.encoding == "listpack":
            if len(scores) >= z.MAX_LISTPACK_ENTRIES or len(member) > z.MAX_LISTPACK_VALUE:
                self.encoding = "skiplist"
            elif unsigned_zero and score == 0:
                score = 0.0
        if not self._resort and member not in self._moved:
            self._note(member, None)
        scores[member] = score

    def drop(self, member: bytes) -> None:
        old = self.score.pop(member)
        if self._resort:
            return
        moved = self._moved
        if member not in moved:
            self._note(member, old)
        elif moved[member] is None:
            del moved[member]  # added since the last read of the order: the ordered pairs never had it

    def _note(self, member: bytes, old: float | None) -> None:
        moved = self._moved
        moved[member] = old
        if len(moved) * 4 > len(self.score):  # sorting all costs about what four single moves do
            self._resort = True
            moved.clear()
            self._ranked = SortedList()  # not read again before the sort

    def ranked(self) -> SortedList:
        """The (score, member) pairs in order."""
        if self._resort:
            self._ranked = SortedList([(s, m) for m, s in self.score.items()])
            self._resort = False
        elif self._moved:
            ranked = self._ranked
            scores = self.score
            for m, old in self._moved.items():
                if old is not None:
                    ranked.remove((old, m))
                new = scores.get(m)
                if new is not None:
                    ranked.add((new, m))
            self._moved.clear()
        return self._ranked

    def pop_end(self, high: bool) -> Pair:
        """Remove and return the member with the highest (or lowest) score."""
        sc, m = self.ranked().pop(-1 if high else 0)
        del self.score[m]
        return m, sc

    def walk(self, reverse: bool = False) -> Iterator[Pair]:
        ranked = self.ranked()
        for s, m in (reversed(ranked) if reverse else ranked):
            yield m, s


HANDLERS, _handler = handler_table()
_ZADD_OPTIONS = frozenset({b"nx", b"xx", b"ch", b"incr", b"gt", b"lt"})


def _get(ctx: Context, key: bytes) -> RefZSet | None:
    return value_at(ctx.db, key, RefZSet)  # ZSET-1: WRONGTYPE for another type


def _err(text: str) -> ReplyError:
    return ReplyError(text)


def _unsigned_zero(ctx: Context) -> bool:
    return not ctx.dialect.zset_ziplist  # ZSET-ENC-3, ZSET-DIALECT-1


def _grow(ctx: Context, s: RefZSet, member: bytes) -> None:
    """A listpack about to take one more member converts when it would be too long (ZSET-ENC-2)."""
    if s.encoding == "listpack" and (len(s) >= z.MAX_LISTPACK_ENTRIES or len(member) > z.MAX_LISTPACK_VALUE):
        s.encoding = "skiplist"


def _dbl(ctx: Context, score: float) -> Double:
    return Double(reply_text(score, ctx.dialect.double_replies_shortest))  # ZSET-DOUBLE-1


def _with_scores(ctx: Context, pairs: Iterable[Pair], withscores: bool) -> Array:
    if not withscores:
        return Array(tuple(Bulk(m) for m, _ in pairs))
    if ctx.client.proto > 2:  # ZSET-10
        return Array(tuple(Array((Bulk(m), _dbl(ctx, s))) for m, s in pairs))
    return Array(tuple(item for m, s in pairs for item in (Bulk(m), _dbl(ctx, s))))


def _float(ctx: Context, arg: bytes, error: str = z.NOT_A_FLOAT) -> float:
    if len(arg) <= 15 and arg.isdigit():  # ASCII digits alone: an integer a double holds exactly
        ctx.errno = 0  # XADD-14
        return float(arg)
    v, erange = read_double(arg, ctx.dialect.fast_float_doubles)  # ZSET-DIALECT-3
    ctx.errno = 34 if erange else 0  # XADD-14: string2d clears errno before strtod
    if v is None:
        raise _err(error)
    return v


def _long(arg: bytes, error: str = table.NOT_INTEGER) -> int:
    v = string2ll(arg)
    if v is None:
        raise _err(error)
    return v


def _nonneg(arg: bytes, error: str = COUNT_NOT_POSITIVE) -> int:
    v = string2ll(arg)
    if v is None or v < 0:
        raise _err(error)
    return v


def _positive(arg: bytes, error: str) -> int:
    v = string2ll(arg)
    if v is None or v < 1:
        raise _err(error)
    return v


def _lower(arg: bytes) -> bytes:
    return c_string(arg).lower()


def _put_result(ctx: Context, dst: bytes, result: RefZSet | None, event: str) -> Int:
    """Store a non-empty result at ``dst`` (setKey), or delete ``dst`` for an empty one (ZSET-11), with
    the command's keyspace event or ``del`` (NOTIFY-4)."""
    if result:
        old = ctx.db.get(dst)
        ctx.db[dst] = result
        if old is None:
            ctx.ready(dst, "zset")  # BZSET-2
            notify_new(ctx, dst)  # NOTIFY-3
            ctx.modified(dst)
        elif value_kind(old) == "stream":
            ctx.deleted(dst)
        else:
            ctx.modified(dst)
        notify_keyspace_event(ctx, "z", event, dst)
        ctx.changed()
        return Int(len(result))
    if ctx.db.pop(dst, None) is not None:
        ctx.deleted(dst)
        notify_keyspace_event(ctx, "g", "del", dst)
        ctx.changed()
    return Int(0)


def _shrink(ctx: Context, key: bytes, s: RefZSet, event: str) -> None:
    ctx.modified(key)
    notify_keyspace_event(ctx, "z", event, key)  # NOTIFY-4
    if not s:
        del ctx.db[key]
        notify_keyspace_event(ctx, "g", "del", key)


# -- ZADD, ZINCRBY ------------------------------------------------------------------------------
def _zadd(ctx: Context, incr: bool) -> Reply:
    argv = ctx.argv
    opts: set[bytes] = set()
    i = 2
    while i < len(argv):  # ZSET-2
        word = _lower(argv[i])
        if word not in _ZADD_OPTIONS:
            break
        opts.add(word)
        i += 1
    incr = incr or b"incr" in opts
    n = len(argv) - i
    if n == 0 or n % 2:
        raise _err(table.SYNTAX)
    nx, xx, gt, lt = b"nx" in opts, b"xx" in opts, b"gt" in opts, b"lt" in opts
    if nx and xx:
        raise _err(z.XX_AND_NX)
    if nx and (gt or lt) or (gt and lt):
        raise _err(z.GT_LT_NX)
    if incr and n > 2:
        raise _err(z.INCR_SINGLE_PAIR)
    wanted = [(argv[j + 1], _float(ctx, argv[j])) for j in range(i, len(argv), 2)]
    key = argv[1]
    s = _get(ctx, key)
    touched = added = done = 0
    last = 0.0
    failed = False
    dialect = ctx.dialect
    unsigned = not dialect.zset_ziplist
    if s is not None or not xx:
        if s is None:
            hints = dialect.zset_size_hints  # ZSET-ENC-1, ZSET-DIALECT-2
            small = len(argv[i + 1]) <= z.MAX_LISTPACK_VALUE and (not hints or n // 2 <= z.MAX_LISTPACK_ENTRIES)
            s = RefZSet("listpack" if small else "skiplist")
            ctx.db[key] = s
            ctx.ready(key, "zset")
            notify_new(ctx, key)  # NOTIFY-3
        elif dialect.zset_size_hints and n // 2 > z.MAX_LISTPACK_ENTRIES:
            s.encoding = "skiplist"
        for member, score in wanted:  # ZSET-3
            old = s.score.get(member)
            if old is None:
                if xx:
                    continue
                s.add_new(member, score, unsigned)
                added += 1
                done += 1
                last = score
                continue
            if nx:
                continue
            if incr:
                score = old + score
                if math.isnan(score):
                    failed = True
                    break
            if (gt and score <= old) or (lt and score >= old):
                continue
            done += 1
            last = score
            if score != old:
                s.put(member, score, unsigned)
                touched += 1
    if added or touched:
        ctx.modified(key)
        notify_keyspace_event(ctx, "z", "zincr" if incr else "zadd", key)  # NOTIFY-4
        ctx.changed(added + touched)
    if failed:
        raise _err(z.NAN_RESULT)
    if incr:
        return _dbl(ctx, last) if done else NULL_BULK
    return Int(added + touched if b"ch" in opts else added)


@_handler("zadd")
def zadd(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) == 4 and argv[2][:1] in _NUMBER_STARTS:
        return _zadd_one(ctx, argv[1], argv[2], argv[3])
    return _zadd(ctx, False)


# The first bytes of a score: never of an option word, so ZADD key <this...> member has no option.
_NUMBER_STARTS = frozenset(bytes([b]) for b in b"0123456789+-.")


def _zadd_one(ctx: Context, key: bytes, score_arg: bytes, member: bytes) -> Reply:
    """ZADD key score member: what _zadd does for one pair without options, without its generality."""
    score = _float(ctx, score_arg)
    s = _get(ctx, key)
    dialect = ctx.dialect
    if s is None:
        hints = dialect.zset_size_hints  # ZSET-ENC-1, ZSET-DIALECT-2
        small = len(member) <= z.MAX_LISTPACK_VALUE and (not hints or 1 <= z.MAX_LISTPACK_ENTRIES)
        s = RefZSet("listpack" if small else "skiplist")
        ctx.db[key] = s
        ctx.ready(key, "zset")
        notify_new(ctx, key)  # NOTIFY-3
    elif dialect.zset_size_hints and 1 > z.MAX_LISTPACK_ENTRIES:
        s.encoding = "skiplist"
    old = s.score.get(member)  # ZSET-3
    if old is None:
        s.add_new(member, score, not dialect.zset_ziplist)
        reply = _ONE
    elif score != old:
        s.put(member, score, not dialect.zset_ziplist)
        reply = _ZERO
    else:
        return _ZERO
    ctx.modified(key)
    notify_keyspace_event(ctx, "z", "zadd", key)  # NOTIFY-4
    ctx.changed(1)
    return reply


_ZERO, _ONE = Int(0), Int(1)


@_handler("zincrby")
def zincrby(ctx: Context) -> Reply:
    return _zadd(ctx, True)  # ZSET-4


# -- single members ---------------------------------------------------------------------------------
@_handler("zrem")
def zrem(ctx: Context) -> Reply:
    key = ctx.argv[1]
    s = _get(ctx, key)
    gone = 0
    if s is not None:
        for m in ctx.argv[2:]:  # ZSET-5
            if m in s.score:
                s.drop(m)
                gone += 1
            if not s:
                break
        if gone:
            _shrink(ctx, key, s, "zrem")
            ctx.changed(gone)
    return Int(gone)


@_handler("zcard")
def zcard(ctx: Context) -> Reply:
    s = _get(ctx, ctx.argv[1])
    return Int(len(s) if s else 0)  # ZSET-6


@_handler("zscore")
def zscore(ctx: Context) -> Reply:
    s = _get(ctx, ctx.argv[1])
    if s is None or ctx.argv[2] not in s.score:
        return NULL_BULK
    return _dbl(ctx, s.score[ctx.argv[2]])  # ZSET-6


@_handler("zmscore")
def zmscore(ctx: Context) -> Reply:
    s = _get(ctx, ctx.argv[1])
    out: list[Reply] = []
    for m in ctx.argv[2:]:  # ZSET-6
        out.append(_dbl(ctx, s.score[m]) if s is not None and m in s.score else NULL_BULK)
    return Array(tuple(out))


def _rank(ctx: Context, reverse: bool) -> Reply:
    argv = ctx.argv
    if len(argv) > 4:  # ZSET-DIALECT-2
        assert ctx.spec is not None
        raise _err(table.arity_error(ctx.spec))
    withscore = len(argv) == 4
    if withscore and _lower(argv[3]) != b"withscore":
        raise _err(table.SYNTAX)
    s = _get(ctx, argv[1])  # ZSET-7
    score = None if s is None else s.score.get(argv[2])
    if s is None or score is None:
        return NULL_ARRAY if withscore else NULL_BULK
    at = s.ranked().index((score, argv[2]))
    rank = len(s) - 1 - at if reverse else at
    return Array((Int(rank), _dbl(ctx, score))) if withscore else Int(rank)


@_handler("zrank")
def zrank(ctx: Context) -> Reply:
    return _rank(ctx, False)


@_handler("zrevrank")
def zrevrank(ctx: Context) -> Reply:
    return _rank(ctx, True)


# -- ranges --------------------------------------------------------------------------------------------
def _scores(ctx: Context, low: bytes, high: bytes) -> z.ScoreRange:
    fast = ctx.dialect.fast_float_doubles  # ZSET-DIALECT-3
    for end in (low, high):  # XADD-14: only an out-of-range value writes errno
        if strtod(end[1:] if end.startswith(b"(") else end, fast)[2]:
            ctx.errno = 34
        if z.parse_score_range(end, end, fast) is None:
            break
    r = z.parse_score_range(low, high, fast)
    if r is None:  # ZSET-8
        raise _err(z.RANGE_NOT_A_FLOAT)
    return r


def _lex(low: bytes, high: bytes) -> z.LexRange:
    r = z.parse_lex_range(low, high)
    if r is None:  # ZSET-8
        raise _err(z.LEX_RANGE_INVALID)
    return r


def _by_rank(s: RefZSet, start: int, stop: int, reverse: bool) -> list[Pair]:
    n = len(s)  # ZSET-9
    start = start + n if start < 0 else start
    stop = stop + n if stop < 0 else stop
    start = max(0, start)
    if start > stop or start >= n:
        return []
    stop = min(stop, n - 1)
    ranked = s.ranked()
    if reverse:
        return [(m, sc) for sc, m in reversed(ranked[n - 1 - stop:n - start])]
    return [(m, sc) for sc, m in ranked[start:stop + 1]]


def _window(pairs: Iterable[Pair], offset: int, count: int) -> list[Pair]:
    if offset < 0:  # ZSET-9
        return []
    out: list[Pair] = []
    for i, p in enumerate(pairs):
        if i < offset:
            continue
        if 0 <= count <= len(out):
            break
        out.append(p)
    return out


class _Range:
    __slots__ = ("by", "rev", "withscores", "offset", "count", "bounds")

    def __init__(self) -> None:
        self.by = ""
        self.rev = False
        self.withscores = False
        self.offset = 0
        self.count = -1
        self.bounds: Any = None

    def pick(self, s: RefZSet) -> list[Pair]:
        if self.by == "rank":
            start, stop = self.bounds
            return _by_rank(s, start, stop, self.rev)
        inside = self.bounds.contains
        if self.by == "score":
            return _window((p for p in s.walk(self.rev) if inside(p[1])), self.offset, self.count)
        return _window((p for p in s.walk(self.rev) if inside(p[0])), self.offset, self.count)


def _parse_range(ctx: Context, at: int, store: bool, by: str, rev: bool | None) -> _Range:
    argv = ctx.argv
    r = _Range()
    j = at + 3
    while j < len(argv):  # ZSET-9
        w = _lower(argv[j])
        if w == b"withscores" and not store:
            r.withscores = True
        elif w == b"limit" and len(argv) - j - 1 >= 2:
            r.offset, r.count = _long(argv[j + 1]), _long(argv[j + 2])
            j += 2
        elif w == b"rev" and rev is None:
            rev = True
        elif w in (b"bylex", b"byscore") and not by:
            by = "lex" if w == b"bylex" else "score"
        else:
            raise _err(table.SYNTAX)
        j += 1
    r.by, r.rev = by or "rank", bool(rev)
    if r.count != -1 and r.by == "rank":
        raise _err(z.LIMIT_NEEDS_BY)
    if r.withscores and r.by == "lex":
        raise _err(z.WITHSCORES_WITH_BYLEX)
    first, second = argv[at + 1], argv[at + 2]
    if r.rev and r.by != "rank":
        first, second = second, first
    if r.by == "rank":
        r.bounds = (_long(first), _long(second))
    elif r.by == "score":
        r.bounds = _scores(ctx, first, second)
    else:
        r.bounds = _lex(first, second)
    return r


def _read_range(ctx: Context, by: str, rev: bool | None) -> Reply:
    r = _parse_range(ctx, 1, False, by, rev)
    s = _get(ctx, ctx.argv[1])
    return EMPTY_ARRAY if s is None else _with_scores(ctx, r.pick(s), r.withscores)


@_handler("zrange")
def zrange(ctx: Context) -> Reply:
    return _read_range(ctx, "", None)


@_handler("zrevrange")
def zrevrange(ctx: Context) -> Reply:
    return _read_range(ctx, "rank", True)


@_handler("zrangebyscore")
def zrangebyscore(ctx: Context) -> Reply:
    return _read_range(ctx, "score", False)


@_handler("zrevrangebyscore")
def zrevrangebyscore(ctx: Context) -> Reply:
    return _read_range(ctx, "score", True)


@_handler("zrangebylex")
def zrangebylex(ctx: Context) -> Reply:
    return _read_range(ctx, "lex", False)


@_handler("zrevrangebylex")
def zrevrangebylex(ctx: Context) -> Reply:
    return _read_range(ctx, "lex", True)


@_handler("zrangestore")
def zrangestore(ctx: Context) -> Reply:
    r = _parse_range(ctx, 2, True, "", None)
    src = _get(ctx, ctx.argv[2])  # ZSET-11
    picked = [] if src is None else r.pick(src)
    known = len(picked) if r.by == "rank" and src is not None else 0
    if ctx.dialect.zset_size_hints:  # ZSET-DIALECT-2
        enc = "listpack" if known <= z.MAX_LISTPACK_ENTRIES else "skiplist"
    else:  # ZSET-ENC-4
        enc = "skiplist" if known > z.MAX_LISTPACK_ENTRIES else "listpack"
    out = RefZSet(enc)
    for m, sc in picked:
        _grow(ctx, out, m)
        out.put(m, sc, _unsigned_zero(ctx))
    return _put_result(ctx, ctx.argv[1], out, "zrangestore")


@_handler("zcount")
def zcount(ctx: Context) -> Reply:
    r = _scores(ctx, ctx.argv[2], ctx.argv[3])  # ZSET-12
    s = _get(ctx, ctx.argv[1])
    return Int(0 if s is None else sum(r.contains(sc) for sc in s.score.values()))


@_handler("zlexcount")
def zlexcount(ctx: Context) -> Reply:
    r = _lex(ctx.argv[2], ctx.argv[3])  # ZSET-12
    s = _get(ctx, ctx.argv[1])
    return Int(0 if s is None else sum(r.contains(m) for m in s.score))


def _remove_range(ctx: Context, by: str) -> Reply:
    argv = ctx.argv
    r = _Range()
    r.by = by
    if by == "rank":  # ZSET-13
        r.bounds = (_long(argv[2]), _long(argv[3]))
    elif by == "score":
        r.bounds = _scores(ctx, argv[2], argv[3])
    else:
        r.bounds = _lex(argv[2], argv[3])
    key = argv[1]
    s = _get(ctx, key)
    if s is None:
        return Int(0)
    doomed = r.pick(s)
    for m, _ in doomed:
        s.drop(m)
    if doomed:
        _shrink(ctx, key, s, "zremrangeby" + by)
        ctx.changed(len(doomed))
    return Int(len(doomed))


@_handler("zremrangebyrank")
def zremrangebyrank(ctx: Context) -> Reply:
    return _remove_range(ctx, "rank")


@_handler("zremrangebyscore")
def zremrangebyscore(ctx: Context) -> Reply:
    return _remove_range(ctx, "score")


@_handler("zremrangebylex")
def zremrangebylex(ctx: Context) -> Reply:
    return _remove_range(ctx, "lex")


# -- ZUNION, ZINTER, ZDIFF, ZINTERCARD -------------------------------------------------------------------
def _members(value: Any) -> list[Pair]:
    if value is None:
        return []
    if isinstance(value, RefZSet):
        return list(value.walk())
    if value_kind(value) == "set":
        return [(m, 1.0) for m in value.listed()]
    raise _err(table.WRONGTYPE)


def _combine(how: bytes, acc: float, v: float) -> float:
    if how == b"sum":
        acc += v
        return 0.0 if acc != acc else acc
    if v != v:
        return acc
    return min(acc, v) if how == b"min" else max(acc, v)


def _times(score: float, weight: float) -> float:
    v = score * weight
    return 0.0 if v != v else v


def _setop(ctx: Context, op: str, dst: bytes | None, at: int, card: bool = False) -> Reply:
    argv = ctx.argv
    n = _long(argv[at])  # ZSET-14
    if n < 1:
        assert ctx.spec is not None
        raise _err(z.at_least_one_key(ctx.spec.fullname, ctx.dialect.zset_ziplist))
    if n > len(argv) - at - 1:
        raise _err(table.SYNTAX)
    inputs = [_members(ctx.db.get(k)) for k in argv[at + 1:at + 1 + n]]
    weights = [1.0] * n
    how, withscores, limit = b"sum", False, 0
    j = at + 1 + n
    while j < len(argv):
        left = len(argv) - j
        w = _lower(argv[j])
        if w == b"weights" and op != "diff" and not card and left > n:
            weights = [_float(ctx, a, z.WEIGHT_NOT_A_FLOAT) for a in argv[j + 1:j + 1 + n]]
            j += n + 1
        elif w == b"aggregate" and op != "diff" and not card and left >= 2:
            how = _lower(argv[j + 1])
            if how not in (b"sum", b"min", b"max"):
                raise _err(table.SYNTAX)
            j += 2
        elif w == b"withscores" and dst is None and not card:
            withscores = True
            j += 1
        elif w == b"limit" and card and left >= 2:
            limit = _nonneg(argv[j + 1], z.LIMIT_NEGATIVE)
            j += 2
        else:
            raise _err(table.SYNTAX)
    order = list(range(n))
    if op != "diff":
        order.sort(key=lambda i: len(inputs[i]))
    out: dict[bytes, float] = {}
    if op == "union":
        for i in order:
            for m, sc in inputs[i]:
                v = _times(sc, weights[i])
                out[m] = _combine(how, out[m], v) if m in out else v
    elif op == "inter":
        lookups = [dict(inputs[i]) for i in order]
        head = order[0]
        for m, sc in inputs[head]:
            acc = _times(sc, weights[head])
            hit = True
            for pos in range(1, n):
                other = lookups[pos].get(m)
                if other is None:
                    hit = False
                    break
                acc = _combine(how, acc, _times(other, weights[order[pos]]))
            if hit:
                out[m] = acc
                if card and limit and len(out) >= limit:
                    break
    else:
        others = [dict(x) for x in inputs[1:]]
        out = {m: sc for m, sc in inputs[0] if all(m not in o for o in others)}
    if card:
        return Int(len(out))
    ranked = sorted(out.items(), key=lambda p: (p[1], p[0]))
    if dst is None:
        return _with_scores(ctx, ranked, withscores)
    small = len(out) <= z.MAX_LISTPACK_ENTRIES and all(len(m) <= z.MAX_LISTPACK_VALUE for m in out)
    result = RefZSet("listpack" if small else "skiplist")  # ZSET-ENC-4
    for m, sc in ranked:
        result.put(m, sc, _unsigned_zero(ctx))
    return _put_result(ctx, dst, result, f"z{op}store")


@_handler("zunionstore")
def zunionstore(ctx: Context) -> Reply:
    return _setop(ctx, "union", ctx.argv[1], 2)


@_handler("zinterstore")
def zinterstore(ctx: Context) -> Reply:
    return _setop(ctx, "inter", ctx.argv[1], 2)


@_handler("zdiffstore")
def zdiffstore(ctx: Context) -> Reply:
    return _setop(ctx, "diff", ctx.argv[1], 2)


@_handler("zunion")
def zunion(ctx: Context) -> Reply:
    return _setop(ctx, "union", None, 1)


@_handler("zinter")
def zinter(ctx: Context) -> Reply:
    return _setop(ctx, "inter", None, 1)


@_handler("zdiff")
def zdiff(ctx: Context) -> Reply:
    return _setop(ctx, "diff", None, 1)


@_handler("zintercard")
def zintercard(ctx: Context) -> Reply:
    return _setop(ctx, "inter", None, 1, card=True)


# -- pops -------------------------------------------------------------------------------------------------------
def _take(ctx: Context, key: bytes, s: RefZSet, high: bool, count: int) -> list[Pair]:
    got: list[Pair] = []
    while s and len(got) < count:  # ZSET-15
        got.append(s.pop_end(high))
    _shrink(ctx, key, s, "zpopmax" if high else "zpopmin")
    ctx.changed(len(got))
    return got


def _flat(ctx: Context, got: list[Pair]) -> list[Reply]:
    return [item for m, sc in got for item in (Bulk(m), _dbl(ctx, sc))]


def _nested(ctx: Context, got: list[Pair]) -> Array:
    return Array(tuple(Array((Bulk(m), _dbl(ctx, sc))) for m, sc in got))


def _zpop(ctx: Context, high: bool) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:  # ZSET-15
        raise _err(table.SYNTAX)
    count = -1
    if len(argv) == 3:
        if ctx.dialect.zset_ziplist:  # ZSET-DIALECT-1
            count = _long(argv[2])
            if count <= 0:
                return EMPTY_ARRAY
        else:
            count = _nonneg(argv[2])
    s = _get(ctx, argv[1])
    if s is None or count == 0:
        return EMPTY_ARRAY
    got = _take(ctx, argv[1], s, high, max(count, 1))
    if count != -1 and ctx.client.proto > 2:
        return _nested(ctx, got)
    return Array(tuple(_flat(ctx, got)))


@_handler("zpopmin")
def zpopmin(ctx: Context) -> Reply:
    return _zpop(ctx, False)


@_handler("zpopmax")
def zpopmax(ctx: Context) -> Reply:
    return _zpop(ctx, True)


def _mpop_args(ctx: Context, at: int) -> tuple[list[bytes], bool, int]:
    argv = ctx.argv
    n = _positive(argv[at], z.NUMKEYS_NOT_POSITIVE)  # ZSET-16
    side_at = at + n + 1
    if side_at >= len(argv) or _lower(argv[side_at]) not in (b"min", b"max"):
        raise _err(table.SYNTAX)
    count = 0
    j = side_at + 1
    while j < len(argv):
        if count == 0 and _lower(argv[j]) == b"count" and j + 1 < len(argv):
            count = _positive(argv[j + 1], z.COUNT_NOT_ABOVE_ZERO)
            j += 2
        else:
            raise _err(table.SYNTAX)
    return argv[at + 1:at + 1 + n], _lower(argv[side_at]) == b"max", count or 1


def _first_zset(ctx: Context, keys: list[bytes]) -> tuple[bytes, RefZSet] | None:
    for k in keys:
        v = ctx.db.get(k)
        if v is None:
            continue
        if not isinstance(v, RefZSet):
            raise _err(table.WRONGTYPE)
        return k, v
    return None


@_handler("zmpop")
def zmpop(ctx: Context) -> Reply:
    keys, high, count = _mpop_args(ctx, 1)
    hit = _first_zset(ctx, keys)
    if hit is None:  # ZSET-16
        return NULL_ARRAY
    key, s = hit
    return Array((Bulk(key), _nested(ctx, _take(ctx, key, s, high, count))))


def _bzpop(ctx: Context, keys: list[bytes], high: bool, count: int | None, timeout_at: int,
           deadline: int | None = None) -> Reply | Blocked:
    timeout, read_at = block_timeout(ctx, ctx.argv[timeout_at])  # BZSET-1
    if deadline is not None:
        read_at = deadline - timeout
    for k in keys:
        v = ctx.db.get(k)
        if v is None:
            continue
        if not isinstance(v, RefZSet):
            raise _err(table.WRONGTYPE)
        got = _take(ctx, k, v, high, count or 1)
        return _answer(ctx, k, got, count)
    if not ctx.can_block:  # BZSET-3
        return NULL_ARRAY

    def serve(ctx: Context, key: bytes) -> Reply | None:  # BZSET-2
        s = ctx.db.get(key)
        if not isinstance(s, RefZSet) or not s:
            return None
        return _answer(ctx, key, _take(ctx, key, s, high, count or 1), count)

    if ctx.dialect.blocked_reexecution:  # BLIST-DIALECT-2
        first_deadline = None if read_at is None else read_at + timeout

        def rerun(ctx: Context, key: bytes) -> Reply | None:
            if not isinstance(ctx.db.get(key), RefZSet):
                return None
            try:
                result = _rerun_blocking(ctx, first_deadline)
            except ReplyError as e:
                return Error(e.text)
            return None if isinstance(result, Blocked) else result

        return ctx.block(keys, timeout, rerun, NULL_ARRAY, read_at, kind="zset")
    return ctx.block(keys, timeout, serve, NULL_ARRAY, read_at, kind="zset")


def _answer(ctx: Context, key: bytes, got: list[Pair], count: int | None) -> Array:
    if count is None:
        return Array((Bulk(key), *_flat(ctx, got)))
    return Array((Bulk(key), _nested(ctx, got)))


def _rerun_blocking(ctx: Context, deadline: int | None) -> Reply | Blocked:
    name = _lower(ctx.argv[0])
    if name == b"bzmpop":
        keys, high, count = _mpop_args(ctx, 2)
        return _bzpop(ctx, keys, high, count, 1, deadline)
    return _bzpop(ctx, ctx.argv[1:-1], name == b"bzpopmax", None, len(ctx.argv) - 1, deadline)


@_handler("bzpopmin")
def bzpopmin(ctx: Context) -> Reply | Blocked:
    return _bzpop(ctx, ctx.argv[1:-1], False, None, len(ctx.argv) - 1)


@_handler("bzpopmax")
def bzpopmax(ctx: Context) -> Reply | Blocked:
    return _bzpop(ctx, ctx.argv[1:-1], True, None, len(ctx.argv) - 1)


@_handler("bzmpop")
def bzmpop(ctx: Context) -> Reply | Blocked:
    keys, high, count = _mpop_args(ctx, 2)  # BZSET-1: the timeout after the rest
    return _bzpop(ctx, keys, high, count, 1)


# -- ZSCAN -------------------------------------------------------------------------------------------------------
@_handler("zscan")
def zscan(ctx: Context) -> Reply:
    argv = ctx.argv
    ctx.errno = 0  # XADD-14: strtoul after errno = 0
    text = c_string(argv[2])
    parsed = None if text[:1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r") else strtoull(text)
    if parsed is None or parsed[1] != len(text):  # ZSET-17
        raise _err(INVALID_CURSOR)
    s = _get(ctx, argv[1])
    if s is None:
        return Array((Bulk(b"0"), EMPTY_ARRAY))
    pattern: bytes | None = None
    j = 3
    while j < len(argv):
        w = _lower(argv[j])
        if w == b"count" and j + 1 < len(argv):
            if _long(argv[j + 1]) < 1:
                raise _err(table.SYNTAX)
        elif w == b"match" and j + 1 < len(argv):
            pattern = argv[j + 1]
        else:
            raise _err(table.SYNTAX)
        j += 2
    if s.encoding == "listpack":
        d = ctx.dialect
        packing = "ziplist" if d.zset_ziplist else "listpack-shortest" if d.double_replies_shortest else "listpack"

        def text_of(sc: float) -> bytes:
            return packed_score_text(sc, packing).encode()
    else:
        def text_of(sc: float) -> bytes:
            return percent_g17(sc).encode()
    items: list[Reply] = []
    for m, sc in s.walk():
        if pattern is None or pattern == b"*" or pattern_matches(pattern, m):
            items += (Bulk(m), Bulk(text_of(sc)))
    return Array((Bulk(b"0"), Array(tuple(items))))



@_handler("zrandmember")
def zrandmember(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) == 2:  # ZSET-18
        s = _get(ctx, argv[1])
        return NULL_BULK if s is None else Bulk(random.choice(list(s.score)))
    n, withscores = random_count(argv, b"withscores")  # ZSET-18
    s = _get(ctx, argv[1])
    if s is None or n == 0:
        return EMPTY_ARRAY
    drawn = random_draw(list(s.walk()), n)
    return _with_scores(ctx, drawn, withscores)
