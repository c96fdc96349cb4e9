"""Handlers of the keyspace and connection-basics commands (spec/rules/generic.md).

PING, ECHO, SELECT, SWAPDB, DEL, UNLINK, EXISTS, TYPE, RENAME, KEYS, SCAN,
DBSIZE, FLUSHDB, FLUSHALL, as Redis 7.0.15 runs them (SET and GET are in
models/strings.py, key expiry in models/expiry.py).

Every removal or overwrite of a value goes through :func:`_removed` so that
WATCH and blocked readers learn about it the way ``signalDeletedKeyAsReady``
and ``signalModifiedKey`` tell them.
"""

from __future__ import annotations

from xspec.models.cerrno import note_strtoull
from xspec.models.expiry import key_count
from xspec.models.notify import notify_keyspace_event, notify_new
from xspec.models.server import FLUSHALL_SAVE, Call, CommandError, HandlerResult, PreRendered, Server, command
from xspec.models.state import ListValue, Stream, Value, ZSetValue, type_name
from xspec.spec import commands as table
from xspec.spec.errors import (
    DB_OUT_OF_RANGE,
    INT_OUT_OF_RANGE,
    INVALID_CURSOR,
    INVALID_FIRST_DB,
    INVALID_SECOND_DB,
    SCAN_NOSCORES,
    SCAN_NOVALUES,
    unknown_type_name,
)
from xspec.spec.glob import matching_keys
from xspec.spec.ids import c_string, parse_ll, strtoull
from xspec.spec.limits import NUM_DATABASES
from xspec.spec.resp import OK, Array, Bulk, Int, Reply, Simple


# -- PING / ECHO ------------------------------------------------------------------
@command("ping")
def ping(call: Call) -> Reply:
    if len(call.argv) > 2:  # PING-1: arity is -1, but more than one argument is refused here
        raise CommandError(table.arity_error(call.spec))
    if len(call.argv) == 2:  # PING-2
        return Bulk(call.argv[1])
    return Simple("PONG")  # PING-2


@command("echo")
def echo(call: Call) -> Reply:
    return Bulk(call.argv[1])  # ECHO-1


# -- databases ----------------------------------------------------------------------
def parse_int(arg: bytes) -> int | None:
    """``getIntFromObject``: a strict 64-bit integer that also fits a C int."""
    v = parse_ll(arg)
    if v is None or not -(1 << 31) <= v < (1 << 31):
        return None
    return v


@command("select")
def select(call: Call) -> Reply:
    db = parse_ll(call.argv[1])
    if db is None:  # SELECT-1
        raise CommandError(table.NOT_INTEGER)
    if not -(1 << 31) <= db < (1 << 31):  # SELECT-1: getIntFromObjectOrReply's own range error
        raise CommandError(INT_OUT_OF_RANGE)
    if not 0 <= db < NUM_DATABASES:  # SELECT-2
        raise CommandError(DB_OUT_OF_RANGE)
    call.client.db = db  # SELECT-3
    call.db = call.server.dbs[db]
    return OK


@command("swapdb")
def swapdb(call: Call) -> Reply:
    first = parse_int(call.argv[1])
    if first is None:  # SWAPDB-1
        raise CommandError(INVALID_FIRST_DB)
    second = parse_int(call.argv[2])
    if second is None:  # SWAPDB-1
        raise CommandError(INVALID_SECOND_DB)
    if not (0 <= first < NUM_DATABASES and 0 <= second < NUM_DATABASES):  # SWAPDB-2
        raise CommandError(DB_OUT_OF_RANGE)
    if first != second:  # SWAPDB-3
        swap_databases(call.server, first, second)
    call.changed()  # STATS-5
    call.propagate_verbatim()  # SWAPDB-4: always counted as a change, even for one database
    return OK


def swap_databases(server: Server, first: int, second: int) -> None:
    """``dbSwapDatabases``: swap contents; clients, watches and blocked keys stay put."""
    touch_watched_in_db(server, first, second)  # SWAPDB-5
    touch_watched_in_db(server, second, first)
    signal_streams_lost(server, first, second)  # SWAPDB-6
    signal_streams_lost(server, second, first)
    server.dbs[first], server.dbs[second] = server.dbs[second], server.dbs[first]
    signal_streams_present(server, first)  # SWAPDB-7
    signal_streams_present(server, second)


def touch_watched_in_db(server: Server, emptied: int, replaced_with: int | None) -> None:
    """``touchAllWatchedKeysInDb``: a key watched in ``emptied`` is touched if it
    exists there now or (for SWAPDB) in the database that replaces it."""
    old = server.dbs[emptied]
    new = server.dbs[replaced_with] if replaced_with is not None else {}
    for c in server.clients.values():
        for db, key in c.watched:
            if db == emptied and (key in old or key in new):
                c.dirty_cas = True


def signal_streams_lost(server: Server, emptied: int, replaced_with: int | None) -> None:
    """``scanDatabaseForDeletedKeys``: a blocked-on stream key that disappears or
    stops being a stream is signalled as deleted."""
    if not server.dialect.deleted_key_wakes_readgroup:  # BLOCK-DIALECT-1: 6.2 signals no deletion
        return
    old = server.dbs[emptied]
    new = server.dbs[replaced_with] if replaced_with is not None else {}
    lost = [key for db, key in server.blocking
            if db == emptied and isinstance(old.get(key), Stream) and not isinstance(new.get(key), Stream)]
    for key in scan_order(server, emptied, lost):  # SWAPDB-8
        server.signal_deleted(emptied, key)


def signal_streams_present(server: Server, dbid: int) -> None:
    """``scanDatabaseForReadyKeys``: every blocked-on key that holds a stream (or a list) is ready."""
    present = [key for db, key in server.blocking
               if db == dbid and isinstance(server.dbs[db].get(key), Stream | ListValue | ZSetValue)]
    for key in scan_order(server, dbid, present):  # SWAPDB-8
        server.signal_ready(dbid, key, type_name(server.dbs[dbid][key]))


def scan_order(server: Server, dbid: int, keys: list[bytes]) -> list[bytes]:
    """The order in which one walk over ``db->blocking_keys`` signals ``keys`` (SWAPDB-8).

    That walk follows a hash table whose layout depends on the process's random
    hash seed, so any order of the keys it newly queues is possible (a key
    already queued keeps its place). The model's own execution takes the
    canonical order, the order in which clients first blocked on the keys;
    under the conformance checker ``server.chooser`` picks the keys one by one,
    so every order is an alternative of the search.
    """
    fresh = [key for key in keys if (dbid, key) not in server.ready_keys]
    choose = server.chooser
    if choose is None or len(fresh) < 2:
        return fresh
    ordered = []
    while len(fresh) > 1:
        ordered.append(fresh.pop(choose(len(fresh))))
    return ordered + fresh


# -- flushing -----------------------------------------------------------------------
def _flush_mode(call: Call) -> None:
    """``getFlushCommandFlags``: nothing, SYNC or ASYNC (case-insensitive)."""
    if len(call.argv) > 2:  # FLUSH-1
        raise CommandError(table.SYNTAX)
    if len(call.argv) == 2 and c_string(call.argv[1]).lower() not in (b"sync", b"async"):  # FLUSH-1
        raise CommandError(table.SYNTAX)


def flush_database(server: Server, dbid: int) -> None:
    """``signalFlushedDb`` then empty: blocked readers and watchers learn first."""
    signal_streams_lost(server, dbid, None)  # FLUSH-3
    touch_watched_in_db(server, dbid, None)  # FLUSH-4
    server.dbs[dbid].clear()


@command("flushdb")
def flushdb(call: Call) -> Reply:
    _flush_mode(call)
    call.changed(len(call.db))  # STATS-5: one change per key removed
    flush_database(call.server, call.client.db)  # FLUSH-2
    call.propagate_verbatim()  # FLUSH-5: propagated even when the database was empty
    return OK


@command("flushall")
def flushall(call: Call) -> Reply:
    _flush_mode(call)
    # STATS-5: one change per key removed; STATS-DIALECT-3: 6.2 adds one for the command
    call.changed(sum(map(len, call.server.dbs)) + call.server.dialect.flushall_counts_itself)
    for dbid in range(NUM_DATABASES):  # FLUSH-2
        flush_database(call.server, dbid)
    for hook in FLUSHALL_SAVE:  # FLUSH-6
        hook(call.server)
    call.propagate_verbatim()  # FLUSH-5
    return OK


# -- removing and replacing values --------------------------------------------------
def _removed(call: Call, key: bytes, old: Value) -> None:
    """A value left ``key`` (deleted or overwritten): tell blocked readers and WATCH.

    ``signalDeletedKeyAsReady`` only signals types a client can block on, which
    ``Call.deleted`` decides from ``old``; ``signalModifiedKey`` follows.
    """
    call.deleted(key, old)
    call.modified(key)


def _delete_keys(call: Call) -> Reply:
    deleted = 0
    for key in call.argv[1:]:
        old = call.db.pop(key, None)
        if old is None:  # DEL-2: missing (or already deleted) keys count nothing
            continue
        _removed(call, key, old)  # DEL-3
        notify_keyspace_event(call, "g", "del", key)  # NOTIFY-4
        deleted += 1
    if deleted:  # DEL-4
        call.changed(deleted)  # STATS-5
        call.propagate_verbatim()
    return Int(deleted)  # DEL-1


@command("del")
def del_(call: Call) -> Reply:
    return _delete_keys(call)


@command("unlink")
def unlink(call: Call) -> Reply:
    return _delete_keys(call)  # DEL-5: UNLINK is DEL with lazy freeing, which nobody can see


@command("exists")
def exists(call: Call) -> Reply:
    return Int(sum(1 for key in call.argv[1:] if key in call.db))  # EXISTS-1


@command("type")
def type_(call: Call) -> Reply:
    v = call.db.get(call.argv[1])
    return Simple("none" if v is None else type_name(v))  # TYPE-1


@command("dbsize")
def dbsize(call: Call) -> HandlerResult:
    count = key_count(call)  # DBSIZE-1
    return PreRendered(count) if type(count) is not Int else count


@command("rename")
def rename(call: Call) -> Reply:
    src, dst = call.argv[1], call.argv[2]
    value = call.db.get(src)
    if value is None:  # RENAME-1 (also when source and destination are the same)
        raise CommandError(table.NO_SUCH_KEY)
    if src == dst:  # RENAME-2: nothing happens, nothing is signalled or propagated
        return OK
    old = call.db.pop(dst, None)
    if old is not None:  # RENAME-3: the destination is deleted first
        call.deleted(dst, old)
    call.db[dst] = value
    if isinstance(value, Stream | ListValue | ZSetValue):  # RENAME-3: dbAdd signals a blockable type as ready
        call.ready(dst, type_name(value))
    notify_new(call, dst)  # NOTIFY-3
    expires = getattr(call.db, "expires", {})
    when = expires.pop(src, None)
    del call.db[src]
    if when is not None:  # EXPIRE-KEYS-1: the time moves with the value
        expires[dst] = when
    call.deleted(src, value)
    call.modified(src)  # RENAME-4
    call.modified(dst)
    notify_keyspace_event(call, "g", "rename_from", src)  # NOTIFY-4
    notify_keyspace_event(call, "g", "rename_to", dst)
    call.changed()  # STATS-5
    call.propagate_verbatim()  # RENAME-5
    return OK


# -- KEYS and SCAN ------------------------------------------------------------------
@command("keys")
def keys(call: Call) -> Reply:
    pattern = call.argv[1]
    everything = pattern == b"*"  # KEYS-2
    found = matching_keys(call.db, None if everything else pattern, None, type_name)  # KEYS-1
    if getattr(call.db, "expires", None):  # EXPIRE-LAZY-3: expired keys are left out, not deleted
        found = [k for k in found if not call.server.key_is_expired(call.client.db, k.value)]
    return Array(tuple(found))


def parse_cursor(arg: bytes) -> int | None:
    """``parseScanCursorOrReply``: C ``strtoul`` that must consume the whole C string."""
    text = c_string(arg)
    if text[:1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r"):
        return None
    parsed = strtoull(text)
    if parsed is None:
        return None
    value, consumed = parsed
    if consumed != len(text):
        return None
    return value


@command("scan")
def scan(call: Call) -> Reply:
    # XADD-14: the cursor goes through strtoul after errno = 0, valid or not.
    note_strtoull(call.server, overflow=False)
    cursor = parse_cursor(call.argv[1])
    if cursor is None:  # SCAN-1
        raise CommandError(INVALID_CURSOR)
    pattern: bytes | None = None
    type_filter: bytes | None = None
    i = 2
    argv = call.argv
    dialect = call.server.dialect
    while i < len(argv):  # SCAN-2: options in any order, the last of each kind wins
        option = c_string(argv[i]).lower()
        more = len(argv) - i
        if option == b"count" and more >= 2:
            count = parse_ll(argv[i + 1])
            if count is None:
                raise CommandError(table.NOT_INTEGER)
            if count < 1:
                raise CommandError(table.SYNTAX)
            i += 2
        elif option == b"match" and more >= 2:
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
            i += 2
        elif option == b"type" and more >= 2:
            type_filter = argv[i + 1]
            if dialect.scan_type_known_names and c_string(type_filter).lower() not in KNOWN_TYPE_NAMES:
                raise CommandError(unknown_type_name(type_filter))  # SCAN-DIALECT-1
            i += 2
        elif option.decode("latin-1") in dialect.scan_refused_flags:  # SCAN-DIALECT-1
            raise CommandError(SCAN_NOVALUES if option == b"novalues" else SCAN_NOSCORES)
        else:
            raise CommandError(table.SYNTAX)
    # SCAN-3: the model answers every SCAN with the whole matching keyspace and
    # cursor 0; which part of it a real server returns, and its next cursor,
    # depend on its hash seed (spec/rules/environment.md ENV-SCAN).
    if type_filter is None or dialect.scan_type_known_names:
        found = matching_keys(call.db, pattern, type_filter, type_name)
        skipped = _unvisited(call, found)
        if getattr(call.db, "expires", None):  # SCAN-4: expired keys are deleted and left out
            found = [k for k in found if k.value not in skipped and not call.expire_if_needed(k.value)]
        return Array((_cursor(skipped), Array(tuple(found))))
    matching = matching_keys(call.db, pattern, None, type_name)
    skipped = _unvisited(call, matching)
    return Array((_cursor(skipped), Array(tuple(_scan_type_lookups(call, matching, skipped, type_filter)))))


# SCAN-6: at most this many expired keys are each a choice of the checker (2^n branches); with more, the
# model takes the call to have visited every one (a whole iteration).
SCAN_VISIT_CHOICES = 6


def _unvisited(call: Call, keys: list[Bulk]) -> set[bytes]:
    """SCAN-6: the expired keys among ``keys`` the call did not visit, so did not expire. A real call that
    returns early visited part of the table (ENV-SCAN); under the checker the model asks its chooser, key
    by key, whether the call visited it (first: yes). Without a chooser every key was visited."""
    choose = call.server.chooser
    if choose is None or not getattr(call.db, "expires", None):
        return set()
    dbid = call.client.db
    expired = [k.value for k in keys if call.server.key_is_expired(dbid, k.value)]
    if len(expired) > SCAN_VISIT_CHOICES:
        return set()
    return {key for key in expired if choose(2) == 1}


def _cursor(skipped: set[bytes]) -> Bulk:
    """SCAN-6: a call that left a key unvisited did not walk the whole table: its cursor is not 0 (the
    model's ``1`` stands for any; ENV-SCAN)."""
    return Bulk(b"1" if skipped else b"0")


# SCAN-DIALECT-1: the names Valkey's TYPE option knows (no module types are loaded).
KNOWN_TYPE_NAMES = frozenset({b"string", b"list", b"set", b"zset", b"hash", b"stream"})


def _scan_type_lookups(call: Call, matching: list[Bulk], skipped: set[bytes], type_filter: bytes) -> list[Bulk]:
    """Redis's TYPE filter: a read lookup of each visited key passing MATCH, which expires it first (SCAN-4)."""
    wanted = c_string(type_filter).lower()
    server, dbid = call.server, call.client.db
    found = []
    for k in matching:
        if k.value in skipped:  # SCAN-6: not visited
            continue
        if getattr(call.db, "expires", None) and call.expire_if_needed(k.value):  # SCAN-4: whatever its type
            kept = any(d == dbid and key == k.value for d, key, _, _ in server.expired_aside)
            # SCAN-5: deleted, the key is no longer expired the second time and passes TYPE none
            if wanted == b"none" and not kept and call.server.dialect.scan_type_none_lists_expired:
                found.append(k)
            continue
        if type_name(call.db[k.value]).encode() == wanted:
            found.append(k)
    return found
