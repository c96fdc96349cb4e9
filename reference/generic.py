"""The reference server's generic commands: connection, keyspace, transactions, server administration.

PING ECHO HELLO AUTH RESET QUIT SELECT SWAPDB DEL UNLINK EXISTS TYPE RENAME
KEYS SCAN DBSIZE FLUSHDB FLUSHALL SET GET, CLIENT (ID SETNAME GETNAME INFO
LIST KILL NO-EVICT TRACKING REPLY UNBLOCK ...), INFO, COMMAND, CONFIG
GET/SET/RESETSTAT, DEBUG SLEEP/SET-ACTIVE-EXPIRE/OBJECT, WAIT, MULTI EXEC
DISCARD WATCH UNWATCH, and the server's own XSPEC.CLOCK and XSPEC.FAULT (see
``reference/README.md``), with Redis 7.0.15's replies and errors
(spec/rules/generic.md, transactions.md, server.md), and the other dialects'
where they differ (spec/dialects.md; :func:`dialect_handlers` swaps in the
handlers of a dialect, the others read ``ctx.dialect``).

Written apart from the model's handlers; what is shared is data about Redis
(the command table, CONFIG's parameter list, INFO's field names, help texts)
and Redis's glob matcher.

Keys hold ``bytes`` (strings, SET/GET) or stream objects; string keys never
expire (expiry is outside the model's scope, SET-7), so EX/PX/... are checked
and forgotten.
"""

from __future__ import annotations

import functools
import os
import resource
import time
from collections.abc import Callable, Iterable
from errno import EINVAL, ENOENT
from typing import TYPE_CHECKING, Any, TypeVar

from xspec.reference import notify
from xspec.reference.api import Blocked, PreRendered, ReplyError
from xspec.reference.core import is_stream, value_kind
from xspec.reference.keyspace import expire_if_needed
from xspec.reference.persistence import flushall_save
from xspec.reference.protocol import decoded
from xspec.spec import commands as table
from xspec.spec.client_filters import ClientFilter, FilterError, parse_filters
from xspec.spec.command_table import CommandTable, GetKeysError, MovableKeys, command_keys
from xspec.spec.command_table import load as load_command_table
from xspec.spec.config import MEMORY_UNITS
from xspec.spec.errors import (
    AUTH_WITHOUT_PASSWORD,
    BAD_CLIENT_NAME,
    CONFIG_DUPLICATE,
    CONFIG_IMMUTABLE,
    CONFIG_NOT_INTEGER,
    CONFIG_NOT_MEMORY,
    CONFIG_RANGE,
    DB_OUT_OF_RANGE,
    DISCARD_WITHOUT_MULTI,
    EXEC_WITHOUT_MULTI,
    INT_OUT_OF_RANGE,
    INVALID_CLIENT_ID,
    INVALID_CURSOR,
    INVALID_FIRST_DB,
    INVALID_SECOND_DB,
    NESTED_MULTI,
    NOPROTO,
    PROTO_NOT_INTEGER,
    SCAN_NOSCORES,
    SCAN_NOVALUES,
    TIMEOUT_NEGATIVE,
    TIMEOUT_NOT_INTEGER,
    WATCH_INSIDE_MULTI,
    WRONGPASS,
    c_text,
    client_info_bad_characters,
    client_unrecognized_option,
    config_invalid_argument,
    config_set_failed,
    config_unknown_parameter,
    config_unsupported_parameter,
    error_text,
    hello_bad_option,
    hello_noauth,
    no_such_user,
    subcommand_syntax,
    unknown_client_type,
    unknown_subcommand,
    unknown_type_name,
)
from xspec.spec.glob import matching_keys, pattern_matches
from xspec.spec.help import (
    CLIENT_HELP,
    CLIENT_HELP_62,
    CLIENT_HELP_72,
    CLIENT_HELP_74,
    CLIENT_HELP_VALKEY,
    COMMAND_HELP,
    COMMAND_HELP_62,
    COMMAND_HELP_VALKEY,
    CONFIG_HELP,
)
from xspec.spec.ids import I64_MAX, c_atoi, c_string, string2ll, strtoull
from xspec.spec.info import INFO_ALL_SECTIONS, INFO_DEFAULT_SECTIONS, INFO_FIELDS
from xspec.spec.resp import (
    NULL_ARRAY,
    NULL_BULK,
    OK,
    Array,
    Bulk,
    Error,
    Int,
    Map,
    Reply,
    Set,
    Simple,
    Verbatim,
    for_protocol,
)

if TYPE_CHECKING:
    from xspec.reference.core import Client, Context, Core
    from xspec.spec.dialect import Dialect

__all__ = ["HANDLERS"]

GenericHandler = Callable[["Context"], "Reply | Blocked | PreRendered"]
HANDLERS: dict[str, GenericHandler] = {}
H = TypeVar("H", bound=GenericHandler)


def command(name: str) -> Callable[[H], H]:
    def register(fn: H) -> H:
        HANDLERS[name] = fn
        return fn
    return register


def _err(text: str) -> ReplyError:
    return ReplyError(text)


def lower(arg: bytes) -> bytes:
    """An option word as ``strcasecmp`` compares it."""
    return c_string(arg).lower()


def getint(arg: bytes) -> int | None:
    """``getIntFromObject``: a strict integer that fits a C int."""
    v = string2ll(arg)
    return v if v is not None and -(1 << 31) <= v < (1 << 31) else None


# -- connection ---------------------------------------------------------------------------
@command("ping")
def ping(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 2:  # PING-1
        raise _err(table.arity_error(ctx.spec))  # type: ignore[arg-type]
    return Bulk(argv[1]) if len(argv) == 2 else Simple("PONG")  # PING-2


@command("echo")
def echo(ctx: Context) -> Reply:
    return Bulk(ctx.argv[1])  # ECHO-1


def password_ok(core: Core, user: bytes, password: bytes) -> bool:
    """The only user is ``default``: any password without requirepass, else exactly it.

    A failure sets errno as ``ACLCheckUserCredentials`` does (XADD-14).
    """
    if user != b"default":
        core.errno = ENOENT
        return False
    if core.requirepass is None or password == core.requirepass.encode():
        return True
    core.errno = EINVAL
    return False


def check_name(name: bytes) -> None:
    """``validateClientName``: printable ASCII without spaces (CLIENT-3)."""
    if not all(0x21 <= b <= 0x7E for b in name):
        raise _err(BAD_CLIENT_NAME)


def set_name(c: Client, name: bytes) -> None:
    check_name(name)
    c.name = name


@command("hello")
def hello(ctx: Context) -> Reply:
    argv = ctx.argv
    c = ctx.client
    core = ctx.core
    version = 0
    i = 1
    if len(argv) >= 2:
        v = string2ll(argv[1])
        if v is None:  # HELLO-1
            raise _err(PROTO_NOT_INTEGER)
        if v < 2 or v > 3:  # HELLO-2
            raise _err(NOPROTO)
        version = v
        i = 2
    dialect = core.dialect
    # HELLO-DIALECT-2: Valkey parses every option first (the last AUTH and SETNAME win),
    # then authenticates, then sets the name; 7.0 applies each option as it comes (HELLO-3).
    deferred = dialect.hello_options_then_auth
    credentials: tuple[bytes, bytes] | None = None
    name: bytes | None = None
    while i < len(argv):
        opt = lower(argv[i])
        more = len(argv) - 1 - i
        if opt == b"auth" and more >= 2:
            credentials = (argv[i + 1], argv[i + 2])
            if not deferred:
                _hello_authenticate(c, core, credentials)  # HELLO-4
            i += 3
        elif opt == b"setname" and more >= 1:
            name = argv[i + 1]
            if deferred:
                check_name(name)  # HELLO-DIALECT-2: a bad name is reported before a bad password
            else:
                set_name(c, name)  # HELLO-5: kept even if a later option fails
            i += 2
        else:
            raise _err(hello_bad_option(argv[i]))
    if deferred and credentials is not None:
        _hello_authenticate(c, core, credentials)  # HELLO-DIALECT-2
    if not c.authenticated:  # HELLO-8: the connection's own flag, whether or not a password is set now
        raise _err(hello_noauth(dialect.hello_auth_form))
    if deferred and name is not None:
        c.name = name  # HELLO-DIALECT-2: only a HELLO that succeeds names the connection
    if version:  # HELLO-6: the reply is in the new protocol
        c.proto = version
    return Map((  # HELLO-7
        (Bulk(b"server"), Bulk(dialect.server_name.encode())),  # HELLO-DIALECT-1
        (Bulk(b"version"), Bulk(dialect.version.encode())),
        (Bulk(b"proto"), Int(c.proto)),
        (Bulk(b"id"), Int(c.id)),
        (Bulk(b"mode"), Bulk(b"standalone")),
        (Bulk(b"role"), Bulk(b"master")),
        (Bulk(b"modules"), _LUA_MODULES if dialect.lua_module else _NO_MODULES),
    ))


def _hello_authenticate(c: Client, core: Core, credentials: tuple[bytes, bytes]) -> None:
    """HELLO's AUTH option: WRONGPASS, or the connection is authenticated (HELLO-4)."""
    if not password_ok(core, *credentials):
        raise _err(WRONGPASS)
    c.authenticated = True


_NO_MODULES = Array(())
# HELLO-DIALECT-1: Valkey lists its Lua scripting engine as a module.
_LUA_MODULES = Array((Map(((Bulk(b"name"), Bulk(b"lua")), (Bulk(b"ver"), Int(1)), (Bulk(b"path"), Bulk(b"lua")),
                           (Bulk(b"args"), Array(())))),))


@command("auth")
def auth(ctx: Context) -> Reply:
    argv = ctx.argv
    core = ctx.core
    if len(argv) > 3:  # AUTH-1
        raise _err(table.SYNTAX)
    if len(argv) == 2:
        if core.requirepass is None:  # AUTH-2
            raise _err(AUTH_WITHOUT_PASSWORD)
        user, password = b"default", argv[1]
    else:
        user, password = argv[1], argv[2]
    if not password_ok(core, user, password):  # AUTH-3
        raise _err(WRONGPASS)
    ctx.client.authenticated = True
    return OK


@command("reset")
def reset(ctx: Context) -> Reply:
    c = ctx.client
    core = ctx.core
    core.discard_transaction(c)  # RESET-1: CONN-4's state, the ID kept
    c.db = 0
    c.proto = 2
    c.name = b""
    if core.dialect.reset_clears_no_evict:  # 7.0 keeps NO-EVICT across RESET
        c.no_evict = False
    c.no_touch = False
    core.tracking.disable(c)
    c.reply_mode = "on"
    c.authenticated = core.requirepass is None  # RESET-3
    return Simple("RESET")  # RESET-2


@command("quit")
def quit_(ctx: Context) -> Reply:
    if ctx.client.conn is not None:  # QUIT-1, CONN-3
        ctx.client.conn.close_after_reply()
    return OK


# -- databases --------------------------------------------------------------------------------
@command("select")
def select(ctx: Context) -> Reply:
    db = string2ll(ctx.argv[1])
    if db is None:  # SELECT-1
        raise _err(table.NOT_INTEGER)
    if not -(1 << 31) <= db < (1 << 31):
        raise _err(INT_OUT_OF_RANGE)
    if not 0 <= db < len(ctx.core.dbs):  # SELECT-2
        raise _err(DB_OUT_OF_RANGE)
    ctx.client.db = db  # SELECT-3
    ctx.db = ctx.core.dbs[db]
    return OK


@command("swapdb")
def swapdb(ctx: Context) -> Reply:
    first = getint(ctx.argv[1])
    if first is None:  # SWAPDB-1
        raise _err(INVALID_FIRST_DB)
    second = getint(ctx.argv[2])
    if second is None:
        raise _err(INVALID_SECOND_DB)
    n = len(ctx.core.dbs)
    if not (0 <= first < n and 0 <= second < n):  # SWAPDB-2
        raise _err(DB_OUT_OF_RANGE)
    if first != second:  # SWAPDB-3 (Core.swap_dbs: SWAPDB-5 .. SWAPDB-8)
        ctx.core.swap_dbs(first, second)
    ctx.changed()  # STATS-5
    return OK


def _flush_mode(argv: list[bytes]) -> None:
    """FLUSH-1: no argument, SYNC or ASYNC."""
    if len(argv) > 2 or (len(argv) == 2 and lower(argv[1]) not in (b"sync", b"async")):
        raise _err(table.SYNTAX)


@command("flushdb")
def flushdb(ctx: Context) -> Reply:
    _flush_mode(ctx.argv)
    ctx.changed(len(ctx.core.dbs[ctx.client.db]))  # STATS-5: one change per key removed
    ctx.core.flush_db(ctx.client.db)  # FLUSH-2 (Core.flush_db: FLUSH-3, FLUSH-4)
    ctx.core.tracking.flushed(ctx.client, ctx.dialect.tracking_flush_null_before_reply)  # TRACKING-DIALECT-1
    return OK


@command("flushall")
def flushall(ctx: Context) -> Reply:
    _flush_mode(ctx.argv)
    # STATS-5: one change per key removed; STATS-DIALECT-3: 6.2 adds one for the command
    ctx.changed(sum(map(len, ctx.core.dbs)) + ctx.dialect.flushall_counts_itself)
    for dbid in range(len(ctx.core.dbs)):  # FLUSH-2
        ctx.core.flush_db(dbid)
    flushall_save(ctx.core)  # FLUSH-6
    ctx.core.tracking.flushed(ctx.client, ctx.dialect.tracking_flush_null_before_reply)  # one null per FLUSHALL
    return OK


# -- keys ---------------------------------------------------------------------------------------
def _remove(ctx: Context, key: bytes) -> bool:
    """Delete ``key``; watchers and blocked readers learn (DEL-3). False if it was missing."""
    old = ctx.db.pop(key, None)
    if old is None:  # DEL-2: missing, or deleted earlier in the same command
        return False
    if is_stream(old):  # only a stream wakes blocked readers (signalDeletedKeyAsReady)
        ctx.deleted(key)
    else:
        ctx.modified(key)
    notify.notify_keyspace_event(ctx, "g", "del", key)  # NOTIFY-4
    return True


@command("del")
def del_(ctx: Context) -> Reply:
    removed = sum(_remove(ctx, key) for key in ctx.argv[1:])  # DEL-1, DEL-2
    ctx.changed(removed)  # STATS-5
    return Int(removed)


HANDLERS["unlink"] = del_  # DEL-5


@command("exists")
def exists(ctx: Context) -> Reply:
    db = ctx.db
    return Int(sum(1 for key in ctx.argv[1:] if key in db))  # EXISTS-1


def type_name(value: object) -> str:
    return value_kind(value) or "none"


@command("type")
def type_(ctx: Context) -> Reply:
    v = ctx.db.get(ctx.argv[1])
    return Simple("none" if v is None else type_name(v))  # TYPE-1


@command("dbsize")
def dbsize(ctx: Context) -> Reply:
    return Int(len(ctx.db))  # DBSIZE-1


@command("rename")
def rename(ctx: Context) -> Reply:
    src, dst = ctx.argv[1], ctx.argv[2]
    db = ctx.db
    value = db.get(src)
    if value is None:  # RENAME-1
        raise _err(table.NO_SUCH_KEY)
    if src == dst:  # RENAME-2
        return OK
    # 7.0 signals src, then dst; a stream dst is also signalled as deleted first (below) for blocked
    # readers, so src is signalled now: tracking clients hear about src first. Signalling a key twice
    # changes nothing.
    ctx.modified(src)  # RENAME-4
    old = db.pop(dst, None)  # RENAME-3
    if is_stream(old):
        ctx.deleted(dst)
    db[dst] = value
    kind = value_kind(value)
    if kind in ("stream", "list", "zset"):  # RENAME-3: dbAdd signals a blockable type
        ctx.ready(dst, kind)  # type: ignore[arg-type]
    notify.notify_new(ctx, dst)  # NOTIFY-3
    when = db.expires.pop(src, None)  # type: ignore[attr-defined]
    del db[src]
    if when is not None:  # EXPIRE-KEYS-1: the time moves with the value
        db.expires[dst] = when  # type: ignore[attr-defined]
    if is_stream(value):
        ctx.deleted(src)
    ctx.modified(dst)  # RENAME-4
    notify.notify_keyspace_event(ctx, "g", "rename_from", src)  # NOTIFY-4
    notify.notify_keyspace_event(ctx, "g", "rename_to", dst)
    ctx.changed()  # STATS-5
    return OK


@command("keys")
def keys(ctx: Context) -> Reply:
    pattern = ctx.argv[1]  # KEYS-2: "*" alone matches every key
    # KEYS-1: insertion order here (any order is the hash table's)
    found = matching_keys(ctx.db, None if pattern == b"*" else pattern, None, type_name)  # type: ignore[arg-type]
    expires = getattr(ctx.db, "expires", None)
    if expires:  # EXPIRE-LAZY-3
        now = ctx.now_ms()
        found = [k for k in found if not (k.value in expires and now > expires[k.value])]
    return Array(tuple(found))


@command("scan")
def scan(ctx: Context) -> Reply:
    """One call returns every matching key and cursor 0: a complete iteration (SCAN-3)."""
    argv = ctx.argv
    ctx.errno = 0  # XADD-14: the cursor goes through strtoul after errno = 0, valid or not
    text = c_string(argv[1])
    parsed = None if text[:1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r") else strtoull(text)
    if parsed is None or parsed[1] != len(text):  # SCAN-1
        raise _err(INVALID_CURSOR)
    pattern: bytes | None = None
    kind: bytes | None = None
    i = 2
    dialect = ctx.core.dialect
    while i < len(argv):  # SCAN-2
        opt = lower(argv[i])
        if opt in (b"novalues", b"noscores") and opt.decode() in dialect.scan_refused_flags:  # SCAN-DIALECT-1
            raise _err(SCAN_NOVALUES if opt == b"novalues" else SCAN_NOSCORES)
        if i + 1 >= len(argv):
            raise _err(table.SYNTAX)
        if opt == b"count":
            count = string2ll(argv[i + 1])
            if count is None:
                raise _err(table.NOT_INTEGER)
            if count < 1:
                raise _err(table.SYNTAX)
        elif opt == b"match":
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        elif opt == b"type":
            kind = argv[i + 1]
            if dialect.scan_type_known_names and lower(kind) not in _TYPE_NAMES:  # SCAN-DIALECT-1
                raise _err(unknown_type_name(kind))
        else:
            raise _err(table.SYNTAX)
        i += 2
    if kind is not None and not dialect.scan_type_known_names:
        return Array((Bulk(b"0"), Array(tuple(_scan_by_lookup(ctx, pattern, lower(kind))))))
    found = matching_keys(ctx.db, pattern, kind, type_name)  # type: ignore[arg-type]
    if getattr(ctx.db, "expires", None):  # SCAN-4: Valkey compares the type first, then expires
        now = ctx.now_ms()
        found = [k for k in found if not expire_if_needed(ctx.core, ctx.client.db, k.value, now)]
    return Array((Bulk(b"0"), Array(tuple(found))))


_TYPE_NAMES = (b"string", b"list", b"set", b"zset", b"hash", b"stream")  # Valkey's, without modules


def _scan_by_lookup(ctx: Context, pattern: bytes | None, kind: bytes) -> list[Bulk]:
    """Redis's SCAN TYPE: each key passing MATCH is looked up (and so lazily expired), then typed (SCAN-4)."""
    db, core, dbid = ctx.db, ctx.core, ctx.client.db
    expires = getattr(db, "expires", None)
    now = ctx.now_ms()
    out = []
    for k in matching_keys(db, pattern, None, type_name):  # type: ignore[arg-type]
        if expires and expire_if_needed(core, dbid, k.value, now):  # SCAN-4: expired whatever its type
            # SCAN-5: a key really deleted is not expired at the second look, and is of type none
            if kind == b"none" and core.dialect.scan_type_none_lists_expired and \
                    not any(kept[0] == dbid and kept[1] == k.value for kept in core.expired_aside):
                out.append(k)
        elif type_name(db[k.value]).encode() == kind:
            out.append(k)
    return out


# -- strings --------------------------------------------------------------------------------------
_EXPIRY = (b"ex", b"px", b"exat", b"pxat")


# SET-1: the flags each flag may not come after; SET-DIALECT-1: 6.2 also refuses NX and GET together.
_SET_EXCLUDES = {b"nx": frozenset({b"xx"}), b"xx": frozenset({b"nx"}), b"get": frozenset(), b"keepttl": frozenset()}
_SET_EXCLUDES_62 = {**_SET_EXCLUDES, b"nx": frozenset({b"xx", b"get"}), b"get": frozenset({b"nx"})}


def _set_options(ctx: Context) -> tuple[set[bytes], bytes | None, bytes]:
    """SET-1, left to right: the flags given, and the expiry's unit (None: none) and amount.

    An unknown word, a flag after one it excludes, KEEPTTL with an expiry, two
    expiry units, or an expiry without its value: ``ERR syntax error``.
    """
    argv = ctx.argv
    excludes = _SET_EXCLUDES if ctx.dialect.set_nx_with_get else _SET_EXCLUDES_62
    flags: set[bytes] = set()
    unit: bytes | None = None
    amount = b""
    i = 3
    while i < len(argv):
        word = lower(argv[i])
        if word in _EXPIRY:
            if b"keepttl" in flags or unit not in (None, word) or i + 1 == len(argv):
                raise _err(table.SYNTAX)
            unit, amount = word, argv[i + 1]
            i += 2
            continue
        refused = excludes.get(word)
        if refused is None or not refused.isdisjoint(flags) or (word == b"keepttl" and unit is not None):
            raise _err(table.SYNTAX)
        flags.add(word)
        i += 1
    return flags, unit, amount


@command("set")
def set_(ctx: Context) -> Reply:
    key, value = ctx.argv[1], ctx.argv[2]
    flags, unit, amount = _set_options(ctx)  # SET-1
    if unit is not None:  # SET-2
        _check_expiry(ctx, unit, amount)
    old = ctx.db.get(key)
    holds_string = old is None or type(old) is bytes
    answer_old = b"get" in flags
    if answer_old and not holds_string:  # SET-3
        raise _err(table.WRONGTYPE)
    if (b"nx" in flags and old is not None) or (b"xx" in flags and old is None):  # SET-4
        return (NULL_BULK if old is None else Bulk(old)) if answer_old else NULL_BULK
    ctx.db[key] = value  # SET-5
    ctx.changed()  # STATS-5
    if not is_stream(old):
        ctx.modified(key)
    else:
        ctx.deleted(key)
    if not answer_old:
        return OK
    return NULL_BULK if old is None else Bulk(old)  # SET-3


def _check_expiry(ctx: Context, unit: bytes, amount: bytes) -> None:
    ms = string2ll(amount)
    if ms is None:
        raise _err(table.NOT_INTEGER)
    invalid = ctx.dialect.set_invalid_expire_error  # SET-2, SET-DIALECT-1
    seconds = unit in (b"ex", b"exat")
    if ms <= 0 or (seconds and ms > I64_MAX // 1000):
        raise _err(invalid)
    if seconds:
        ms *= 1000
    if unit in (b"ex", b"px") and ms + ctx.now_ms() > I64_MAX:
        raise _err(invalid)


@command("get")
def get(ctx: Context) -> Reply:
    v = ctx.db.get(ctx.argv[1])  # GET-1
    if v is None:
        return NULL_BULK
    if type(v) is not bytes:
        raise _err(table.WRONGTYPE)
    return Bulk(v)


# -- transactions -------------------------------------------------------------------------------
@command("multi")
def multi(ctx: Context) -> Reply:
    c = ctx.client
    if c.in_multi:  # MULTI-2
        raise _err(NESTED_MULTI)
    c.in_multi = True  # MULTI-1
    c.multi_used = True
    return OK


@command("discard")
def discard(ctx: Context) -> Reply:
    if not ctx.client.in_multi:  # DISCARD-1
        raise _err(DISCARD_WITHOUT_MULTI)
    ctx.core.discard_transaction(ctx.client)  # DISCARD-2
    return OK


def _run_queued(core: Core, c: Client, argv: list[bytes]) -> Reply:
    """One command of a transaction, run by EXEC: its reply in the protocol in force when it ran (EXEC-5)."""
    spec = core.lookup(argv)
    assert spec is not None  # it was looked up when it was queued
    result = core.run(c, argv, spec, False)
    assert result is not None, "a command blocked inside EXEC"
    return result.reply if isinstance(result, PreRendered) else for_protocol(decoded(result), c.proto)


@command("exec")
def exec_(ctx: Context) -> Reply | PreRendered:
    c = ctx.client
    if not c.in_multi:  # EXEC-1
        raise _err(EXEC_WITHOUT_MULTI)
    if c.multi_error or c.dirty_cas:  # EXEC-2 (doomed) before EXEC-3 (a watched key touched)
        doomed = c.multi_error
        ctx.core.discard_transaction(c)
        return Error(table.EXECABORT) if doomed else NULL_ARRAY
    ctx.core.unwatch_all(c)  # EXEC-4: its own writes cannot fail it
    dirty = ctx.core.dirty
    replies = tuple(_run_queued(ctx.core, c, argv) for argv in c.multi_queue)
    if ctx.dialect.exec_counts_itself and ctx.core.dirty != dirty:  # STATS-DIALECT-8
        ctx.changed()
    c.multi_queue = []
    c.in_multi = c.multi_error = False
    return PreRendered(Array(replies))


@command("watch")
def watch(ctx: Context) -> Reply:
    c = ctx.client
    if c.in_multi:  # WATCH-2
        raise _err(WATCH_INSIDE_MULTI)
    for key in ctx.argv[1:]:  # WATCH-1
        ctx.core.watch(c, key)
    return OK


@command("unwatch")
def unwatch(ctx: Context) -> Reply:
    ctx.core.unwatch_all(ctx.client)  # WATCH-6
    return OK


# -- CLIENT -------------------------------------------------------------------------------------
@command("client|id")
def client_id(ctx: Context) -> Reply:
    return Int(ctx.client.id)  # CLIENT-1


@command("client|getname")
def client_getname(ctx: Context) -> Reply:
    return Bulk(ctx.client.name) if ctx.client.name else NULL_BULK  # CLIENT-2


@command("client|setname")
def client_setname(ctx: Context) -> Reply:
    set_name(ctx.client, ctx.argv[2])  # CLIENT-3, CLIENT-4
    return OK


def client_flags(c: Client) -> str:
    """CLIENT LIST's ``flags=``: a letter for each flag the client has, in Redis's order; ``N`` for none (CLIENT-6)."""
    options = c.ctx.core.tracking.of(c) if c.tracking else None
    letters = "".join(letter for letter, on in (
        ("x", c.in_multi), ("b", c.blocked is not None), ("t", c.tracking),
        ("R", options is not None and options.broken), ("B", options is not None and options.bcast),
        ("d", c.dirty_cas), ("e", c.no_evict), ("T", c.no_touch)) if on)
    return letters or "N"


# CLIENT LIST's fields in 7.0; other dialects name theirs (CLIENT-DIALECT-1).
_CLIENT_FIELDS_70 = tuple(
    "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp "
    "obl oll omem tot-mem events cmd user redir resp".split())


def client_line(c: Client, core: Core) -> str:
    """One CLIENT LIST line with the dialect's fields (CLIENT-6); buffer and memory figures are 0
    (ENV-CLIENT-LIST); ``cmd=`` is the last command looked up (CONN-5)."""
    dialect = core.dialect
    now = time.monotonic()
    if c.in_multi:
        multi = len(c.multi_queue)
    else:
        multi = 0 if c.multi_used and dialect.client_multi_kept else -1  # CLIENT-DIALECT-1
    # CLIENT-DIALECT-1: 6.2 names the container only.
    cmd = c.last_cmd if dialect.subcommand_table else c.last_cmd.split("|")[0]
    values = {"id": str(c.id), "addr": c.addr, "laddr": c.laddr, "fd": str(c.fd), "name": c_text(c.name),
              "age": str(int(now - c.created)), "idle": str(int(now - c.last_interaction)),
              "flags": client_flags(c), "capa": c.capa, "db": str(c.db), "multi": str(multi),
              "watch": str(len(c.watched)), "events": "r", "cmd": cmd, "user": "default",
              "redir": str(c.redirect if c.tracking else -1),
              "resp": str(c.proto), "lib-name": c_text(c.lib_name), "lib-ver": c_text(c.lib_ver)}
    return " ".join(f"{f}={values.get(f, '0')}" for f in dialect.client_list_fields or _CLIENT_FIELDS_70)


def _verbatim(text: str) -> Reply:
    return Verbatim("txt", text.encode("utf-8", "surrogateescape"))


@command("client|info")
def client_info(ctx: Context) -> Reply:
    return _verbatim(client_line(ctx.client, ctx.core) + "\n")  # CLIENT-5


_CLIENT_TYPES = (b"normal", b"slave", b"replica", b"pubsub", b"master")


@command("client|list")
def client_list(ctx: Context) -> Reply:
    argv = ctx.argv
    clients = list(ctx.core.clients.values())
    if ctx.dialect.client_filters_extended:
        matches, skipme = valkey_client_filter(ctx, skipme=False)
        chosen = [c for c in clients if matches(c) and not (skipme and c is ctx.client)]
    elif len(argv) == 4 and lower(argv[2]) == b"type":  # CLIENT-8
        kind = lower(argv[3])
        if kind not in _CLIENT_TYPES:
            raise _err(unknown_client_type(argv[3]))
        chosen = clients if kind == b"normal" else []
    elif len(argv) > 3 and lower(argv[2]) == b"id":  # CLIENT-9
        chosen = []
        for arg in argv[3:]:
            cid = string2ll(arg)
            if cid is None:
                raise _err(INVALID_CLIENT_ID)
            found = ctx.core.clients.get(cid)
            if found is not None:
                chosen.append(found)
    elif len(argv) != 2:  # CLIENT-10
        raise _err(table.SYNTAX)
    else:
        chosen = clients  # CLIENT-7: in the order the connections were opened
    return _verbatim("".join(client_line(c, ctx.core) + "\n" for c in chosen))


@command("client|kill")
def client_kill(ctx: Context) -> Reply:
    argv = ctx.argv
    core = ctx.core
    me = ctx.client
    if len(argv) == 3:  # the old form: CLIENT KILL addr:port
        victims = [c for c in core.clients.values() if c.addr.encode() == argv[2]]
        if not victims:
            raise _err("ERR No such client")
        _kill(me, victims)
        return OK
    if ctx.dialect.client_filters_extended:
        matches, skipme = valkey_client_filter(ctx, skipme=True)
        victims = [c for c in core.clients.values() if matches(c) and not (skipme and c is me)]
        _kill(me, victims)
        return Int(len(victims))
    if len(argv) % 2:
        raise _err(table.SYNTAX)
    wanted: dict[str, object] = {}  # field -> value every victim must have
    skipme = True
    for i in range(2, len(argv), 2):
        opt, val = lower(argv[i]), argv[i + 1]
        if opt == b"id":
            cid = string2ll(val)
            if not ctx.dialect.client_kill_id_positive and cid is None:  # 6.2 takes any integer
                raise _err(table.NOT_INTEGER)
            if cid is None or (cid <= 0 and ctx.dialect.client_kill_id_positive):
                raise _err("ERR client-id should be greater than 0")
            if cid != 0:  # 6.2's ID 0 is no filter at all
                wanted["id"] = cid
        elif opt == b"type":
            kind = lower(val)
            if kind not in _CLIENT_TYPES:
                raise _err(unknown_client_type(val))
            wanted["kind"] = kind.decode()
        elif opt == b"user":
            if val != b"default":
                raise _err(no_such_user(val))
        elif opt in (b"addr", b"laddr"):
            wanted[opt.decode()] = val.decode("utf-8", "surrogateescape")
        elif opt == b"skipme":
            if lower(val) not in (b"yes", b"no"):
                raise _err(table.SYNTAX)
            skipme = lower(val) == b"yes"
        else:
            raise _err(table.SYNTAX)
    victims = [c for c in core.clients.values()
               if all(getattr(c, f) == v for f, v in wanted.items()) and not (skipme and c is me)]
    _kill(me, victims)
    return Int(len(victims))


# Valkey 9.1.2's CLIENT LIST / KILL filters (spec/client_filters.py), all of which must hold.
ClientTest = Callable[["Client"], bool]


def valkey_client_filter(ctx: Context, skipme: bool) -> tuple[ClientTest, bool]:
    """Parse ``argv[2:]`` as Valkey's filters: a test every listed (or killed) client passes, and SKIPME."""
    try:
        filters, skipme = parse_filters(ctx.argv, skipme)
    except FilterError as e:
        raise _err(str(e)) from None
    checks = [_negation(_client_test(f)) if f.negated else _client_test(f) for f in filters]
    return (lambda c: all(t(c) for t in checks)), skipme


def _client_test(f: ClientFilter) -> ClientTest:
    """What a connection of this server must have to pass ``f``."""
    value: Any = f.value
    name = f.name
    if name == "id":
        return lambda c: c.id in value
    if name == "type":
        return lambda c: value == b"normal"  # every client here is a normal one
    if name == "user":
        return lambda c: True
    if name == "flags":
        return lambda c: set(value) <= set(client_flags(c))
    if name == "capa":
        return lambda c: set(value) <= set(c.capa)
    if name == "db":
        return lambda c: c.db == value
    if name == "maxage":
        return lambda c: time.monotonic() - c.created > value
    if name == "idle":
        return lambda c: time.monotonic() - c.last_interaction >= value
    if name == "ip":
        return lambda c: c.addr.rsplit(":", 1)[0].encode() == value
    attribute = {"addr": "addr", "laddr": "laddr", "name": "name", "lib-name": "lib_name", "lib-ver": "lib_ver"}[name]
    if attribute in ("addr", "laddr"):
        return lambda c: getattr(c, attribute).encode() == value
    return lambda c: getattr(c, attribute) == value


def _negation(test: ClientTest) -> ClientTest:
    return lambda c: not test(c)


def _kill(me: Client, victims: list[Client]) -> None:
    for c in victims:
        if c.conn is None:
            continue
        if c is me:
            c.conn.close_after_reply()
        else:
            c.conn.close_now()


def _on_off(arg: bytes) -> bool:
    v = lower(arg)
    if v not in (b"on", b"off"):
        raise _err(table.SYNTAX)
    return v == b"on"


@command("client|no-evict")
def client_no_evict(ctx: Context) -> Reply:
    ctx.client.no_evict = _on_off(ctx.argv[2])
    return OK


@command("client|tracking")
def client_tracking(ctx: Context) -> Reply:
    """CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP], checked in
    7.0.15's order: the options as they come, ON/OFF, then (for ON) how they combine."""
    argv = ctx.argv
    core = ctx.core
    redirect = 0
    options: set[bytes] = set()
    prefixes: list[bytes] = []
    i = 3
    while i < len(argv):
        opt = lower(argv[i])
        more = i + 1 < len(argv)
        if opt == b"redirect" and more:
            if redirect:
                raise _err("ERR A client can only redirect to a single other client")
            target = string2ll(argv[i + 1])
            if target is None:
                raise _err(table.NOT_INTEGER)
            if target not in core.clients:
                raise _err("ERR The client ID you want redirect to does not exist")
            redirect = target
            i += 1
        elif opt in (b"bcast", b"optin", b"optout", b"noloop"):
            options.add(opt)
        elif opt == b"prefix" and more:
            prefixes.append(argv[i + 1])
            i += 1
        else:
            raise _err(table.SYNTAX)
        i += 1
    c = ctx.client
    on = _on_off(argv[2])
    if not on:
        core.tracking.disable(c)
        return OK
    bcast = b"bcast" in options
    optin, optout = b"optin" in options, b"optout" in options
    if prefixes and not bcast:
        raise _err("ERR PREFIX option requires BCAST mode to be enabled")
    current = core.tracking.options.get(c)
    if current is not None and current.bcast != bcast:
        raise _err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
                   "and then re-enabling it with a different mode.")
    if bcast and (optin or optout):
        raise _err("ERR OPTIN and OPTOUT are not compatible with BCAST")
    if optin and optout:
        raise _err("ERR You can't specify both OPTIN mode and OPTOUT mode")
    if current is not None and ((optin and current.optout) or (optout and current.optin)):
        raise _err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
                   "and then re-enabling it with a different mode.")
    if bcast:
        error, go_on = core.tracking.overlap_error(c, prefixes)
        if error is not None and not go_on:
            raise _err(error)
        if error is not None:
            core.tracking.say_before_reply(c, Error(error))  # 7.0.15 answers the error, then goes on
    core.tracking.enable(c, redirect, bcast, optin, optout, b"noloop" in options, prefixes)
    return OK


@command("client|trackinginfo")
def client_trackinginfo(ctx: Context) -> Reply:
    c = ctx.client
    st = ctx.core.tracking.options.get(c)
    flags = [b"on" if c.tracking else b"off"]
    prefixes: list[bytes] = []
    if st is not None:
        if st.bcast:
            flags.append(b"bcast")
        if st.optin:
            flags += [b"optin", b"caching-yes"] if st.caching else [b"optin"]
        if st.optout:
            flags += [b"optout", b"caching-no"] if st.caching else [b"optout"]
        if st.noloop:
            flags.append(b"noloop")
        if st.broken:
            flags.append(b"broken_redirect")
        prefixes = sorted(st.prefixes)
    return Map(((Bulk(b"flags"), Set(tuple(Bulk(f) for f in flags))), (Bulk(b"redirect"), client_getredir(ctx)),
                (Bulk(b"prefixes"), Array(tuple(Bulk(p) for p in prefixes)))))


@command("client|getredir")
def client_getredir(ctx: Context) -> Reply:
    return Int(ctx.client.redirect if ctx.client.tracking else -1)


@command("client|caching")
def client_caching(ctx: Context) -> Reply:
    st = ctx.core.tracking.options.get(ctx.client)
    if st is None:
        raise _err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
                   "OPTOUT mode enabled")
    answer = lower(ctx.argv[2])
    if answer == b"yes":
        if not st.optin:
            raise _err("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    elif answer == b"no":
        if not st.optout:
            raise _err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    else:
        raise _err(table.SYNTAX)
    st.caching = True  # for the next command, or the next transaction (Tracking.finish)
    return OK


@command("client|reply")
def client_reply(ctx: Context) -> Reply | Blocked:
    mode = lower(ctx.argv[2])
    if mode not in (b"on", b"off", b"skip"):
        raise _err(table.SYNTAX)
    ctx.client.reply_mode = mode.decode()
    return OK


@command("client|unblock")
def client_unblock(ctx: Context) -> Reply:
    argv = ctx.argv
    error = False
    if len(argv) == 4:  # CLIENT-UNBLOCK-1: the reason before the ID
        reason = lower(argv[3])
        if reason not in (b"timeout", b"error"):
            raise _err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        error = reason == b"error"
    elif len(argv) > 4 and ctx.dialect.client_extra_arguments_refused:  # Valkey ignores them
        raise subcommand_syntax_error(ctx)
    cid = string2ll(argv[2])
    if cid is None:
        raise _err(table.NOT_INTEGER)
    target = ctx.core.clients.get(cid)
    if target is None or target.blocked is None:
        return Int(0)
    ctx.core.unblock_by_client(target, "UNBLOCKED client unblocked via CLIENT UNBLOCK" if error else None)
    return Int(1)


@command("client|pause")
def client_pause(ctx: Context) -> Reply:
    argv = ctx.argv
    timeout = string2ll(argv[2])
    if timeout is None:
        raise _err(TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise _err(TIMEOUT_NEGATIVE)
    everything = True
    if len(argv) == 4:
        mode = lower(argv[3])
        if mode not in (b"write", b"all"):
            raise _err("ERR CLIENT PAUSE mode must be WRITE or ALL")
        everything = mode == b"all"
    elif len(argv) > 4 and ctx.dialect.client_extra_arguments_refused:  # Valkey ignores them
        raise subcommand_syntax_error(ctx)
    ctx.core.pause(ctx.now_ms() + timeout, everything)
    return OK


@command("client|unpause")
def client_unpause(ctx: Context) -> Reply:
    ctx.core.unpause()
    return OK


@command("client|no-touch")
def client_no_touch(ctx: Context) -> Reply:
    raise _err(unknown_subcommand(ctx.argv[1], "client"))  # added in 7.2


def client_no_touch_72(ctx: Context) -> Reply:
    """7.2+: CLIENT NO-TOUCH ON|OFF (the flag shows as ``T``; nothing here keeps LRU/LFU stats)."""
    ctx.client.no_touch = _on_off(ctx.argv[2])
    return OK


def client_setinfo(ctx: Context) -> Reply:
    """7.2+: CLIENT SETINFO LIB-NAME|LIB-VER value, shown by CLIENT LIST (as Valkey 9.1.2 answers)."""
    attr, value = lower(ctx.argv[2]), ctx.argv[3]
    if attr not in (b"lib-name", b"lib-ver"):
        raise _err(client_unrecognized_option(ctx.argv[2]))
    if not all(0x21 <= b <= 0x7E for b in value):
        raise _err(client_info_bad_characters(attr.decode()))
    if attr == b"lib-name":
        ctx.client.lib_name = value
    else:
        ctx.client.lib_ver = value
    return OK


def client_capa(ctx: Context) -> Reply:
    """Valkey: CLIENT CAPA option ...; REDIRECT (any case) is the one it knows, others are ignored."""
    if any(lower(a) == b"redirect" for a in ctx.argv[2:]):
        ctx.client.capa = "r"
    return OK


def client_import_source(ctx: Context) -> Reply:
    raise _err("ERR Server is not in import mode")  # Valkey: import-mode is off by default


def subcommand_syntax_error(ctx: Context) -> ReplyError:
    """``addReplySubcommandSyntaxError``: the subcommand as typed, the container in capitals
    (6.2 capitalises "Unknown", DISPATCH-DIALECT-1)."""
    return _err(subcommand_syntax(ctx.argv[1], ctx.argv[0], ctx.dialect.subcommand_table))


def refused_subcommand(ctx: Context) -> Reply:
    """6.2's containers with an unknown subcommand or a count it does not take (DISPATCH-DIALECT-1)."""
    raise subcommand_syntax_error(ctx)


def _help(ctx: Context, lines: str | list[str]) -> Reply:
    """CLIENT-11's shape: the header, the lines, the dialect's closing line."""
    name = c_text(ctx.argv[0]).upper()
    body = lines.strip("\n").split("\n") if isinstance(lines, str) else lines
    header = f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    # HELP-DIALECT-1: the closing line is the dialect's
    return Array(tuple(Simple(line) for line in [header, *body[:-1], ctx.dialect.help_last_line]))


@command("client|help")
def client_help(ctx: Context) -> Reply:
    return _help(ctx, _client_help_text(ctx.dialect))  # CLIENT-11


def _client_help_text(dialect: Dialect) -> str:
    """CLIENT HELP as the real 6.2.14, 7.0.15, 7.2.6, 7.4.1 and Valkey 9.1.2 answer it."""
    return _CLIENT_HELP_TEXTS[dialect.help_texts]


# Dialect.help_texts -> its CLIENT HELP and COMMAND HELP lines.
_CLIENT_HELP_TEXTS = {"6.2": CLIENT_HELP_62, "7.0": CLIENT_HELP, "7.2": CLIENT_HELP_72, "7.4": CLIENT_HELP_74,
                      "valkey": CLIENT_HELP_VALKEY}
_COMMAND_HELP_TEXTS = {"6.2": COMMAND_HELP_62, "7.0": COMMAND_HELP, "7.2": COMMAND_HELP, "7.4": COMMAND_HELP,
                       "valkey": COMMAND_HELP_VALKEY}


# -- INFO ---------------------------------------------------------------------------------------------
def _info_values(core: Core) -> dict[str, str]:
    rss = _rss_bytes()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    uptime = int(time.time() - core.started)
    blocked = sum(1 for c in core.clients.values() if c.blocked is not None)
    timed = sum(1 for c in core.clients.values() if c.blocked is not None and c.blocked.deadline is not None)
    return {
        "redis_version": core.dialect.version, "redis_git_sha1": "00000000", "redis_build_id": "xspec",
        "redis_mode": "standalone", "os": os.uname().sysname, "arch_bits": "64",
        "multiplexing_api": "asyncio", "process_id": str(os.getpid()), "process_supervised": "no",
        "run_id": core.run_id, "tcp_port": core.config["port"],
        "server_time_usec": str(time.time_ns() // 1000), "uptime_in_seconds": str(uptime),
        "uptime_in_days": str(uptime // 86400), "hz": "10", "configured_hz": "10",
        "executable": "xspec", "config_file": "",
        "connected_clients": str(len(core.clients)), "maxclients": core.config["maxclients"],
        "blocked_clients": str(blocked), "clients_in_timeout_table": str(timed),
        "total_blocking_keys": str(len(core.blocking)),  # BLIST-10
        "total_blocking_keys_on_nokey": str(sum(
            any(c.blocked is not None and c.blocked.argv[0].lower() == b"xreadgroup" for c in waiting)
            for waiting in core.blocking.values())),
        "used_memory": str(rss), "used_memory_human": _human(rss), "used_memory_rss": str(rss),
        "used_memory_rss_human": _human(rss), "used_memory_peak": str(usage.ru_maxrss * 1024),
        "used_memory_peak_human": _human(usage.ru_maxrss * 1024), "maxmemory_human": "0B",
        "maxmemory_policy": "noeviction", "mem_allocator": "pymalloc",
        "mem_fragmentation_ratio": "1.00", "loading": "0", "rdb_last_bgsave_status": "ok",
        "aof_last_bgrewrite_status": "ok", "aof_last_write_status": "ok",
        "total_connections_received": str(core.stat_connections),
        "total_commands_processed": str(core.stat_commands),
        "expired_keys": str(core.expired_keys),  # EXPIRE-ACTIVE-1: lazy and active expiry's deletions
        "rejected_connections": str(core.stat_rejected_connections),
        "total_error_replies": str(core.stat_errors),
        "rdb_changes_since_last_save": str(core.dirty),  # STATS-4
        "role": "master", "connected_slaves": "0", "master_failover_state": "no-failover",
        "master_replid": core.run_id, "master_replid2": "0" * 40, "second_repl_offset": "-1",
        "repl_backlog_size": "1048576",
        "used_cpu_sys": f"{usage.ru_stime:.6f}", "used_cpu_user": f"{usage.ru_utime:.6f}",
        "used_cpu_sys_main_thread": f"{usage.ru_stime:.6f}", "used_cpu_user_main_thread": f"{usage.ru_utime:.6f}",
        "cluster_enabled": "0",
        **core.dialect.info_values,  # INFO-DIALECT-1: Valkey's identity
    }


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _human(n: int) -> str:
    if n < 1024:
        return f"{n}B"
    size = n / 1024
    for unit in ("K", "M"):
        if size < 1024:
            return f"{size:.2f}{unit}"
        size /= 1024
    return f"{size:.2f}G"


# Sections in ``INFO everything`` order -> (title, fields), for 7.0 (``INFO_FIELDS``).
InfoLayout = dict[str, tuple[str, list[str]]]
_LAYOUT_70: InfoLayout = {s: ("CPU" if s == "cpu" else s.capitalize(), INFO_FIELDS.get(
    "CPU" if s == "cpu" else s.capitalize(), [])) for s in INFO_ALL_SECTIONS}


@functools.cache
def info_layout(text: str | None) -> InfoLayout:
    """A dialect's ``info_layout`` ("# Title" lines, each followed by its fields) as sections
    (INFO-DIALECT-1); None: 7.0's."""
    if text is None:
        return _LAYOUT_70
    layout: InfoLayout = {}
    fields: list[str] = []
    for line in text.strip().splitlines():
        if line.startswith("# "):
            fields = []
            layout[line[2:].lower()] = (line[2:], fields)
        else:
            fields += line.split()
    return layout


def info_text(core: Core, argv: list[bytes]) -> str:
    layout = info_layout(core.dialect.info_layout)
    wanted: set[str] = set()
    if len(argv) == 1:  # INFO-1
        wanted.update(INFO_DEFAULT_SECTIONS)
    for arg in argv[1:]:
        name = c_text(arg).lower()
        if name == "default":
            wanted.update(INFO_DEFAULT_SECTIONS)
        elif name in ("all", "everything"):
            wanted.update(layout)
        else:
            wanted.add(name)
    values = _info_values(core)
    if "errorstats" in wanted:
        core.errno = 0  # XADD-14: the walk over the error-count tree runs off it
    parts = []
    for section, (title, fields) in layout.items():  # INFO-2
        if section not in wanted:
            continue
        lines = [f"# {title}"]
        if section == "keyspace":  # INFO-3
            lines += [f"db{i}:keys={len(db)},expires={len(getattr(db, 'expires', ()))},avg_ttl=0"
                      for i, db in enumerate(core.dbs) if db]
        elif section == "commandstats":  # STATS-2
            lines += [f"cmdstat_{name}:calls={calls},usec={usec},usec_per_call={usec / calls if calls else 0:.2f},"
                      f"rejected_calls={rejected},failed_calls={failed}"
                      for name, (calls, usec, rejected, failed) in core.command_stats.items()
                      if (calls or rejected or failed) and not name.startswith("xspec.")]  # no Redis traffic
        elif section == "errorstats":  # STATS-1
            lines += [f"errorstat_{code}:count={n}" for code, n in sorted(core.error_codes.items())]
        else:
            lines += [f"{f}:{values.get(f, '0')}" for f in fields]
        parts.append("".join(line + "\r\n" for line in lines))
    return "\r\n".join(parts)


@command("info")
def info(ctx: Context) -> Reply:
    if len(ctx.argv) > 2 and not ctx.dialect.info_multiple_sections:  # INFO-DIALECT-2: 6.2 takes one at most
        raise _err(table.SYNTAX)
    return _verbatim(info_text(ctx.core, ctx.argv))


# -- CONFIG -------------------------------------------------------------------------------------------
def _parse_number(value: bytes, low: int, high: int) -> str:
    v = string2ll(value)
    if v is None:
        raise ValueError(CONFIG_NOT_INTEGER)
    if not low <= v <= high:
        raise ValueError(CONFIG_RANGE.format(low, high))
    return str(v)


def _parse_memory(value: bytes, low: int) -> str:
    """``memtoull`` (unsigned wrap-around included), then the bounds ``low``..LONG_MAX."""
    text = c_string(value)
    digits = len(text) - len(text.lstrip(b"0123456789"))
    unit = text[digits:].lower()
    if text[:1] == b"-" or unit not in MEMORY_UNITS:
        raise ValueError(CONFIG_NOT_MEMORY)
    parsed = strtoull(text[:digits])
    number = (1 << 64) - 1 if parsed is None else parsed[0]
    result = (number * MEMORY_UNITS[unit]) & ((1 << 64) - 1)
    if not low <= result <= I64_MAX:
        raise ValueError(CONFIG_RANGE.format(low, I64_MAX))
    return str(result)


def _parse_yes_no(value: bytes) -> str:
    v = lower(value)
    if v not in (b"yes", b"no"):
        raise ValueError("argument must be 'yes' or 'no'")
    return v.decode()


# The parameters whose value the server checks (and, for the limits, uses).
def _decoded(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


_CONFIG_PARSERS: dict[str, Callable[[bytes], str]] = {
    "stream-node-max-entries": lambda v: _parse_number(v, 0, I64_MAX),
    "stream-node-max-bytes": lambda v: _parse_memory(v, 0),
    "proto-max-bulk-len": lambda v: _parse_memory(v, 1024 * 1024),
    "client-query-buffer-limit": lambda v: _parse_memory(v, 1024 * 1024),
    "maxclients": lambda v: _parse_number(v, 1, (1 << 32) - 1),
    "protected-mode": _parse_yes_no,
    "requirepass": _decoded,
    "hz": lambda v: _parse_number(v, 0, (1 << 31) - 1),
    "timeout": lambda v: _parse_number(v, 0, (1 << 31) - 1),
    # CONFIG-DIALECT-3: the testing knobs (C ints); the children read the save delay when they start (FORK-2)
    "rdb-key-save-delay": lambda v: _parse_number(v, -(1 << 31), (1 << 31) - 1),
    "key-load-delay": lambda v: _parse_number(v, -(1 << 31), (1 << 31) - 1),
    "watchdog-period": lambda v: _parse_number(v, 0, (1 << 31) - 1),
    "loading-process-events-interval-bytes": lambda v: _parse_number(v, 1024, (1 << 31) - 1),
    "use-exit-on-panic": _parse_yes_no,
    "appendonly": _parse_yes_no,  # AOF-SCHEDULE-1
}
_IMMUTABLE = frozenset("""daemonize databases enable-debug-command enable-module-command enable-protected-configs
    io-threads io-threads-do-reads logfile pidfile supervised syslog-enabled syslog-facility syslog-ident
    unixsocket unixsocketperm cluster-enabled cluster-config-file cluster-port aclfile always-show-logo
    appenddirname disable-thp set-proc-title tcp-backlog""".split())


@command("config|get")
def config_get(ctx: Context) -> Reply:
    config = ctx.core.config
    found: dict[str, tuple[str, str]] = {}  # CONFIG-3: each parameter once
    for arg in ctx.argv[2:]:
        text = c_text(arg)
        if not any(ch in text for ch in "[*?"):  # CONFIG-1
            if text.lower() in config and text.lower() not in found:
                found[text.lower()] = (text, config[text.lower()])
            continue
        for name in ctx.core.dialect.config_listed():  # CONFIG-2, CONFIG-DIALECT-3
            if name not in found and pattern_matches(c_string(arg), name.encode(), nocase=True):
                found[name] = (name, config[name])
    return _config_pairs(found.values())


def _config_pairs(pairs: Iterable[tuple[str, str]]) -> Reply:
    return Map(tuple((Bulk(n.encode()), Bulk(v.encode("utf-8", "surrogateescape"))) for n, v in pairs))


def config_get_62(ctx: Context) -> Reply:
    """6.2: one argument, always a pattern; the names as the table spells them (CONFIG-DIALECT-1,
    CONFIG-DIALECT-2)."""
    config = ctx.core.config
    pattern = c_string(ctx.argv[2])
    return _config_pairs((name, config[name]) for name in ctx.core.dialect.config_listed()
                         if pattern_matches(pattern, name.encode(), nocase=True))


@command("config|set")
def config_set(ctx: Context) -> Reply:
    argv = ctx.argv
    core = ctx.core
    if len(argv) % 2:  # CONFIG-4
        raise _err(table.SYNTAX)
    names = argv[2::2]
    seen: set[str] = set()
    for n in names:  # CONFIG-5
        name = c_text(n).lower()
        if name not in core.config:  # CONFIG-DIALECT-3: the dialect's parameters
            raise _err(config_unknown_parameter(n))
        if name in seen:  # CONFIG-6
            raise _err(config_set_failed(n, CONFIG_DUPLICATE))
        seen.add(name)
    new: dict[str, str] = {}
    for n, v in zip(names, argv[3::2], strict=True):  # CONFIG-7: all or nothing
        name = c_text(n).lower()
        if name in _IMMUTABLE:
            raise _err(config_set_failed(n, CONFIG_IMMUTABLE))
        try:
            new[name] = _parse_setting(core, name, v)
        except ValueError as e:  # CONFIG-7: named as the server spells it
            raise _err(config_set_failed(name.encode(), str(e))) from None
    _apply_settings(core, new)  # CONFIG-8
    return OK


def config_set_62(ctx: Context) -> Reply:
    """6.2: one parameter and value (the lookup checked the count), 6.2's texts (CONFIG-DIALECT-1)."""
    argv = ctx.argv
    name = c_text(argv[2]).lower()
    if name not in ctx.core.config or name in _IMMUTABLE:  # CONFIG-DIALECT-3
        raise _err(config_unsupported_parameter(argv[2]))
    try:
        value = _parse_setting(ctx.core, name, argv[3])
    except ValueError as e:
        if name == notify.SETTING:  # NOTIFY-2: 6.2 gives no reason
            raise _err(f"ERR Invalid argument '{error_text(argv[3])}' for CONFIG SET '{error_text(argv[2])}'") from None
        raise _err(config_invalid_argument(argv[3], argv[2], str(e))) from None
    _apply_settings(ctx.core, {name: value})
    return OK


def _parse_setting(core: Core, name: str, value: bytes) -> str:
    if name == notify.SETTING:  # NOTIFY-2
        return notify.parse_setting(value, core.dialect.keyspace_new_events)
    parser = _CONFIG_PARSERS.get(name)
    if parser is _CONFIG_PARSERS["stream-node-max-bytes"]:
        core.errno = 0  # XADD-14: memtoull sets errno before its strtoull
    return (parser or _decoded)(value)


def _apply_settings(core: Core, new: dict[str, str]) -> None:
    if notify.SETTING in new:  # NOTIFY-2: the classes in force; CONFIG GET prints them its own way
        core.notify_events = frozenset(new[notify.SETTING])
        new[notify.SETTING] = notify.shown(new[notify.SETTING])
    core.config.update(new)
    core.config_ints.clear()
    if "requirepass" in new:
        core.requirepass = new["requirepass"] or None


@command("config|resetstat")
def config_resetstat(ctx: Context) -> Reply:
    ctx.core.reset_stats()  # CONFIG-9
    return OK


@command("config|help")
def config_help(ctx: Context) -> Reply:
    return _help(ctx, CONFIG_HELP)  # CONFIG-10


# -- COMMAND ----------------------------------------------------------------------------------------
# COMMAND describes the real server's table, measured per dialect (spec/command_table.py, COMMAND-1):
# every command Redis has, whether or not this server runs it.
def _table(ctx: Context) -> CommandTable:
    found = load_command_table(ctx.dialect.name)
    if found is None:
        raise _err(f"ERR xspec: no command table was measured for {ctx.dialect.name}")
    return found


def _name_in(ctx: Context, t: CommandTable, name: bytes) -> str | None:
    """``lookupCommandBySds``: a command, or ``container|sub`` (7.0+), any case (COMMAND-4)."""
    found = t.find(c_string(name))
    return None if found is None or ("|" in found and not ctx.dialect.subcommand_table) else found


@command("command")
def command_all(ctx: Context) -> Reply:
    t = _table(ctx)
    return Array(tuple(t.info[n] for n in t.top))  # COMMAND-2


def command_all_62(ctx: Context) -> Reply:
    return command_all(ctx)


def command_info_62(ctx: Context) -> Reply:
    """6.2's COMMAND INFO: the named commands only (none named: an empty array) (COMMAND-DIALECT-1)."""
    return command_info_cmd(ctx) if len(ctx.argv) > 2 else Array(())


@command("command|count")
def command_count(ctx: Context) -> Reply:
    return Int(_table(ctx).count())  # COMMAND-3


@command("command|info")
def command_info_cmd(ctx: Context) -> Reply:
    t = _table(ctx)
    if len(ctx.argv) == 2:
        return command_all(ctx)  # COMMAND-4
    out: list[Reply] = []
    for name in ctx.argv[2:]:
        found = _name_in(ctx, t, name)
        out.append(NULL_BULK if found is None else t.info[found])
    return Array(tuple(out))


@command("command|docs")
def command_docs(ctx: Context) -> Reply:
    t = _table(ctx)
    docs = t.docs or {}
    names = ctx.argv[2:]
    found = list(t.top) if not names else [n for n in (_name_in(ctx, t, a) for a in names) if n is not None]
    return Map(tuple((Bulk(n.encode()), docs[n]) for n in found if n in docs))  # COMMAND-5


@command("command|list")
def command_list(ctx: Context) -> Reply:
    t = _table(ctx)
    argv = ctx.argv
    names = t.names()
    if len(argv) == 5 and lower(argv[2]) == b"filterby":  # COMMAND-6
        kind, value = lower(argv[3]), argv[4]
        if kind == b"pattern":
            names = [n for n in names if pattern_matches(value, n.encode(), nocase=True)]
        elif kind == b"aclcat":
            category = c_text(value).lower()
            names = [n for n in names if category in t.categories.get(n, ())]
        elif kind == b"module":
            names = []
        else:
            raise _err(table.SYNTAX)
    elif len(argv) != 2:
        raise _err(table.SYNTAX)
    return Array(tuple(Bulk(n.encode()) for n in names))


def _command_keys(ctx: Context) -> list[tuple[int, list[str]]]:
    try:
        return command_keys(_table(ctx), ctx.argv[2:], ctx.dialect.subcommand_table)  # COMMAND-7
    except GetKeysError as e:
        raise _err(e.text) from None
    except MovableKeys as movable:  # its own name: compiled, ``e`` above holds only a GetKeysError
        raise _err(f"ERR xspec: COMMAND GETKEYS of {movable} is not supported (COMMAND-8)") from None


@command("command|getkeys")
def command_getkeys(ctx: Context) -> Reply:
    argv = ctx.argv[2:]
    return Array(tuple(Bulk(argv[p]) for p, _ in _command_keys(ctx)))


@command("command|getkeysandflags")
def command_getkeysandflags(ctx: Context) -> Reply:
    argv = ctx.argv[2:]
    return Array(tuple(Array((Bulk(argv[p]), Set(tuple(Simple(f) for f in flags))))
                       for p, flags in _command_keys(ctx)))


@command("command|help")
def command_help(ctx: Context) -> Reply:
    return _help(ctx, _COMMAND_HELP_TEXTS[ctx.dialect.help_texts])


# -- DEBUG and WAIT -----------------------------------------------------------------------------------
@command("debug")
def debug(ctx: Context) -> Reply:
    argv = ctx.argv
    sub = lower(argv[1])
    if sub == b"sleep" and len(argv) == 3:
        try:
            seconds = float(c_string(argv[2]) or b"0")
        except ValueError:
            seconds = 0.0
        if seconds > 0:
            time.sleep(seconds)  # the whole server sleeps, as Redis's does
        return OK
    if sub == b"set-active-expire" and len(argv) == 3:
        ctx.core.active_expire_enabled = c_atoi(argv[2]) != 0  # DEBUG-2
        return OK
    if sub == b"object" and len(argv) == 3:
        v = ctx.db.get(argv[2])
        if v is None:
            raise _err(table.NO_SUCH_KEY)
        encoding = "embstr" if type(v) is bytes else getattr(v, "encoding", "stream")
        if encoding == "listpack" and value_kind(v) == "zset" and ctx.dialect.zset_ziplist:
            encoding = "ziplist"  # ZSET-DIALECT-1
        return Simple(f"Value at:0x{id(v):x} refcount:1 encoding:{encoding} serializedlength:0 lru:0 "
                      f"lru_seconds_idle:0")
    if sub == b"help" and len(argv) == 2:
        return _help(ctx, ["OBJECT <key>", "    Show low level info about `key` and associated value.",
                           "SET-ACTIVE-EXPIRE <0|1>", "    Setting it to 0 disables expiring keys in background.",
                           "SLEEP <seconds>", "    Stop the server for <seconds>. Decimals allowed.",
                           "HELP", "    Prints this help."])
    raise subcommand_syntax_error(ctx)


@command("wait")
def wait(ctx: Context) -> Reply | Blocked:
    replicas = string2ll(ctx.argv[1])
    if replicas is None:
        raise _err(table.NOT_INTEGER)
    timeout = string2ll(ctx.argv[2])
    if timeout is None:
        raise _err(TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise _err(TIMEOUT_NEGATIVE)
    if replicas <= 0 or not ctx.can_block:
        return Int(0)
    # No replica will ever acknowledge: wait out the timeout (forever for 0).
    return ctx.block([], timeout, lambda _ctx, _key: None, Int(0))


# -- XSPEC.CLOCK ------------------------------------------------------------------------------------
@command("xspec.clock")
def xspec_clock(ctx: Context) -> Reply:
    argv = ctx.argv
    core = ctx.core
    sub = lower(argv[1])
    if sub == b"get" and len(argv) == 2:
        return Int(core.now_ms())
    if sub in (b"set", b"advance") and len(argv) == 3:
        if not core.clock.virtual:
            raise _err("ERR XSPEC.CLOCK SET and ADVANCE need a server started with --clock virtual")
        ms = string2ll(argv[2])
        if ms is None:
            raise _err(table.NOT_INTEGER)
        target = ms if sub == b"set" else core.now_ms() + ms
        if not 0 <= target <= I64_MAX:
            raise _err("ERR the clock must stay between 0 and 9223372036854775807 ms")
        core.clock.set(target)  # type: ignore[attr-defined]  # the clock is virtual
        if core.observer is not None:
            core.observer.clock_moved()
        core.expire_timeouts()
        core.check_pause()
        from xspec.reference.active_expiry import clock_moved
        clock_moved(core)  # EXPIRE-ACTIVE-5: the cycles of the time that passed
        return Int(target)
    raise _err(f"ERR unknown subcommand or wrong number of arguments for '{c_text(argv[1])}'. "
               "Try XSPEC.CLOCK GET | SET <ms> | ADVANCE <ms>.")


# -- XSPEC.FAULT ------------------------------------------------------------------------------------
@command("xspec.fault")
def xspec_fault(ctx: Context) -> Reply:
    from xspec.reference.faults import fault_command
    return fault_command(ctx)



def dialect_handlers(dialect: Dialect) -> dict[str, GenericHandler]:
    """The handlers that answer as ``dialect``'s server does where its generic commands differ from 7.0's."""
    found: dict[str, GenericHandler] = {}
    if not dialect.subcommand_table:  # 6.2 (DISPATCH-DIALECT-1, CONFIG-DIALECT-1)
        # xgroup|* and xinfo|* answer only while the stream module has no 6.2 containers (core.handler_for).
        found.update({"client|*": refused_subcommand, "config|*": refused_subcommand,
                      "command|*": refused_subcommand, "xgroup|*": refused_subcommand,
                      "xinfo|*": refused_subcommand, "config|get": config_get_62, "config|set": config_set_62})
    if not dialect.command_docs:
        found.update({"command": command_all_62, "command|info": command_info_62})
    if dialect.client_no_touch:
        found["client|no-touch"] = client_no_touch_72
    if dialect.client_setinfo:
        found["client|setinfo"] = client_setinfo
    if dialect.client_capa:
        found.update({"client|capa": client_capa, "client|import-source": client_import_source})
    return found
