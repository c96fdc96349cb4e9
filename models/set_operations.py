"""Handlers of the set commands over several sets (spec/rules/sets.md, SETS-6 to SETS-10).

SINTER, SINTERSTORE, SINTERCARD, SUNION, SUNIONSTORE, SDIFF, SDIFFSTORE, SMOVE,
SMISMEMBER and SSCAN, as Redis 7.0.15 runs them. A result is built the way Redis
builds it, as a set that starts as an intset and takes its members one by one
(SETS-ENC-2), so its encoding, and the order a reply lists it in, are Redis's; a
member order that depends on a hash table's walk is any order (SETS-4).
"""

from __future__ import annotations

from collections.abc import Iterable

from xspec.models.cerrno import note_strtoull
from xspec.models.generic import parse_cursor
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import Call, CommandError, HandlerResult, PreRendered, command
from xspec.models.sets import AnyOrderArray, AnyOrderSet, add_member, new_set, set_at
from xspec.models.state import SetValue
from xspec.spec import commands as table
from xspec.spec import zsets as vocab
from xspec.spec.errors import INVALID_CURSOR
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import Array, Bulk, Int, Reply, Set

TOO_MANY_KEYS = "ERR Number of keys can't be greater than number of args"


def inputs(call: Call, keys: Iterable[bytes]) -> list[SetValue | None]:
    """Every key looked up as a set, in order: WRONGTYPE at the first other type (SETS-6)."""
    return [set_at(call, key) for key in keys]


def walk(value: SetValue) -> list[bytes]:
    """``setTypeInitIterator``'s order: an intset's numeric order, a listpack's insertion order; a hash
    table's walk depends on the seed (the model takes its own order and marks the result unordered)."""
    return value.ordered()


def build(call: Call, members: Iterable[bytes]) -> SetValue:
    """A result set as Redis builds one: an intset taking the members in order (SETS-ENC-2)."""
    result = SetValue(encoding="intset")
    for member in members:
        add_member(call, result, member)
    return result


def listed(call: Call, result: SetValue, ordered: bool) -> HandlerResult:
    """A result as a set reply (an array in RESP2): in its encoding's order when that order is known."""
    items = tuple(Bulk(m) for m in result.ordered())
    if ordered and result.encoding != "hashtable":
        return Set(items)
    return PreRendered(AnyOrderSet(items) if call.client.proto == 3 else AnyOrderArray(items))


def store(call: Call, dst: bytes, result: SetValue, event: str) -> Int:
    """``setKey`` of a non-empty result, or the deletion of ``dst`` (SETS-8)."""
    if result.members:
        old = call.db.get(dst)
        call.db[dst] = result
        if old is None:
            notify_new(call, dst)  # NOTIFY-3
        else:
            call.deleted(dst, old)
        call.modified(dst)
        notify_keyspace_event(call, "s", event, dst)  # NOTIFY-4
        call.changed()  # STATS-4
        call.propagate_verbatim()
        return Int(len(result.members))
    old = call.db.pop(dst, None)
    if old is not None:
        call.deleted(dst, old)
        call.modified(dst)
        notify_keyspace_event(call, "g", "del", dst)
        call.changed()
        call.propagate_verbatim()
    return Int(0)


def intersection(sets: list[SetValue | None], limit: int = 0) -> tuple[list[bytes], bool] | None:
    """``sinterGenericCommand``'s walk: the smallest set's members found in every other (stopping at
    ``limit`` when it is not 0), and whether the walk's order is known; None when a set is missing."""
    present = [s for s in sets if s is not None]
    if len(present) != len(sets):
        return None
    present.sort(key=lambda s: len(s.members))  # SETS-6: smallest first (a stable sort)
    first, rest = present[0], present[1:]
    found: list[bytes] = []
    for member in walk(first):
        if all(member in s.members for s in rest if s is not first):
            found.append(member)
            if limit and len(found) >= limit:
                break
    return found, first.encoding != "hashtable"


def inter_command(call: Call, keys: list[bytes], dst: bytes | None) -> HandlerResult:
    sets = inputs(call, keys)  # SETS-6
    walked = intersection(sets)
    if walked is None:  # SETS-6: a missing key makes the result empty at once
        if dst is not None:
            return store(call, dst, SetValue(), "sinterstore")
        return Set(())
    members, ordered = walked
    result = build(call, members)
    if dst is not None:
        return store(call, dst, result, "sinterstore")
    if ordered:  # SETS-6: the reply lists the members as the walk found them
        return Set(tuple(Bulk(m) for m in members))
    return listed(call, result, False)


@command("sinter")
def sinter(call: Call) -> HandlerResult:
    return inter_command(call, call.argv[1:], None)


@command("sinterstore")
def sinterstore(call: Call) -> HandlerResult:
    return inter_command(call, call.argv[2:], call.argv[1])


@command("sintercard")
def sintercard(call: Call) -> Reply:
    argv = call.argv
    numkeys = parse_ll(argv[1])
    if numkeys is None or numkeys < 1:  # SETS-7
        raise CommandError(vocab.NUMKEYS_NOT_POSITIVE)
    if numkeys > len(argv) - 2:
        raise CommandError(TOO_MANY_KEYS)
    limit = 0
    j = 2 + numkeys
    while j < len(argv):
        if c_string(argv[j]).lower() == b"limit" and len(argv) - 1 - j > 0:
            value = parse_ll(argv[j + 1])
            if value is None or value < 0:
                raise CommandError(vocab.LIMIT_NEGATIVE)
            limit = value
            j += 2
        else:
            raise CommandError(table.SYNTAX)
    walked = intersection(inputs(call, argv[2:2 + numkeys]), limit)
    return Int(0 if walked is None else len(walked[0]))


def union_diff_command(call: Call, keys: list[bytes], dst: bytes | None, op: str) -> HandlerResult:
    """``sunionDiffGenericCommand`` (SETS-8)."""
    sets = inputs(call, keys)
    ordered = True
    result = SetValue(encoding="intset")
    if op == "union":
        members: list[bytes] = []
        for s in sets:
            if s is not None:
                ordered = ordered and s.encoding != "hashtable"
                members += walk(s)
        result = build(call, members)
    elif sets[0] is not None and not any(s is sets[0] for s in sets[1:]):  # SETS-8: a key named twice: empty
        first = sets[0]
        ordered = first.encoding != "hashtable"
        others = [s for s in sets[1:] if s is not None]
        one = len(first.members) * (1 + len(others)) // 2  # SETS-8: the cheaper of Redis's two walks
        if one <= len(first.members) + sum(len(s.members) for s in others):
            result = build(call, [m for m in walk(first) if not any(m in s.members for s in others)])
        else:  # every member of the first set, then the others' removed: the encoding follows the adds
            result = build(call, walk(first))
            for s in others:
                for m in walk(s):
                    result.members.pop(m, None)
                if not result.members:
                    break
    if dst is not None:
        return store(call, dst, result, "sunionstore" if op == "union" else "sdiffstore")
    return listed(call, result, ordered)


@command("sunion")
def sunion(call: Call) -> HandlerResult:
    return union_diff_command(call, call.argv[1:], None, "union")


@command("sunionstore")
def sunionstore(call: Call) -> HandlerResult:
    return union_diff_command(call, call.argv[2:], call.argv[1], "union")


@command("sdiff")
def sdiff(call: Call) -> HandlerResult:
    return union_diff_command(call, call.argv[1:], None, "diff")


@command("sdiffstore")
def sdiffstore(call: Call) -> HandlerResult:
    return union_diff_command(call, call.argv[2:], call.argv[1], "diff")


@command("smove")
def smove(call: Call) -> Reply:
    src_key, dst_key, member = call.argv[1], call.argv[2], call.argv[3]
    source = call.db.get(src_key)
    if source is None:  # SETS-9
        return Int(0)
    source = set_at(call, src_key)
    target = set_at(call, dst_key)
    assert source is not None
    if source is target:  # SETS-9: the same set: only membership is answered
        return Int(int(member in source.members))
    if member not in source.members:
        return Int(0)
    del source.members[member]
    notify_keyspace_event(call, "s", "srem", src_key)  # NOTIFY-4
    if not source.members:
        del call.db[src_key]
        notify_keyspace_event(call, "g", "del", src_key)
    if target is None:
        target = new_set(call, member, 1)  # SETS-ENC-1
        call.db[dst_key] = target
        notify_new(call, dst_key)
    call.modified(src_key)
    call.changed()  # STATS-4
    if add_member(call, target, member):
        call.changed()
        call.modified(dst_key)
        notify_keyspace_event(call, "s", "sadd", dst_key)
    call.propagate_verbatim()
    return Int(1)


@command("smismember")
def smismember(call: Call) -> Reply:
    value = set_at(call, call.argv[1])  # SETS-9: a missing key is an empty set
    return Array(tuple(Int(int(value is not None and m in value.members)) for m in call.argv[2:]))


@command("sscan")
def sscan(call: Call) -> HandlerResult:
    argv = call.argv
    note_strtoull(call.server, overflow=False)  # XADD-14: the cursor goes through strtoul after errno = 0
    if parse_cursor(argv[2]) is None:  # SETS-10: the cursor first
        raise CommandError(INVALID_CURSOR)
    value = set_at(call, argv[1])
    if value is None:
        return Array((Bulk(b"0"), Array(())))
    pattern: bytes | None = None
    i = 3
    while i < len(argv):  # SETS-10: SCAN's options without TYPE
        opt = c_string(argv[i]).lower()
        if opt == b"count" and len(argv) - i >= 2:
            count = parse_ll(argv[i + 1])
            if count is None:
                raise CommandError(table.NOT_INTEGER)
            if count < 1:
                raise CommandError(table.SYNTAX)
        elif opt == b"match" and len(argv) - i >= 2:
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        else:
            raise CommandError(table.SYNTAX)
        i += 2
    members = tuple(Bulk(m) for m in value.ordered() if pattern is None or pattern_matches(pattern, m))
    if value.encoding != "hashtable":  # SETS-10: an intset or listpack is listed whole, in order
        return Array((Bulk(b"0"), Array(members)))
    return PreRendered(Array((Bulk(b"0"), AnyOrderArray(members))))  # ENV-SCAN
