"""The command table: names, arity, flags and the dispatcher's error texts.

Shared by the model, the reference server and the fuzzer, so the three agree
on what a command is before any of them runs it. Arity follows Redis's
convention: ``n > 0`` means exactly ``n`` arguments (the name included),
``-n`` means at least ``n``. Values are those of Redis 7.0.15's
``src/commands/*.json``; dialect differences go in :data:`DIALECT_OVERRIDES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from xspec.spec.errors import unknown_subcommand
from xspec.spec.ids import c_string


@dataclass(frozen=True)
class CommandSpec:
    """One entry of the command table."""

    name: str  # lowercase, as Redis's table spells it
    arity: int
    flags: frozenset[str] = frozenset()
    # first key, last key (-1: the last argument), step; 0 means no keys
    first_key: int = 0
    last_key: int = 0
    key_step: int = 0
    subcommands: dict[str, CommandSpec] = field(default_factory=dict)
    container: str | None = None  # the parent, for subcommands

    @cached_property
    def fullname(self) -> str:
        """``xgroup|create`` for subcommands, the name otherwise (used in arity errors)."""
        return f"{self.container}|{self.name}" if self.container else self.name

    def arity_ok(self, argc: int) -> bool:
        return argc == self.arity if self.arity > 0 else argc >= -self.arity


def _c(name: str, arity: int, flags: str = "", keys: tuple[int, int, int] = (0, 0, 0),
       subs: list[CommandSpec] | None = None) -> CommandSpec:
    sub_map = {}
    for s in subs or []:
        sub_map[s.name] = CommandSpec(s.name, s.arity, s.flags, s.first_key, s.last_key, s.key_step,
                                      container=name)
    return CommandSpec(name, arity, frozenset(flags.split()), keys[0], keys[1], keys[2], sub_map)


# Flags used by the dispatcher: write, readonly, denyoom, fast, blocking,
# noscript, loading, stale, no_multi (refused inside MULTI), allow_busy.
_TABLE: list[CommandSpec] = [
    # streams
    _c("xadd", -5, "write denyoom fast", (1, 1, 1)),
    _c("xlen", 2, "readonly fast", (1, 1, 1)),
    _c("xrange", -4, "readonly", (1, 1, 1)),
    _c("xrevrange", -4, "readonly", (1, 1, 1)),
    _c("xread", -4, "readonly blocking", (0, 0, 0)),
    _c("xreadgroup", -7, "write blocking", (0, 0, 0)),
    _c("xack", -4, "write fast", (1, 1, 1)),
    _c("xdel", -3, "write fast", (1, 1, 1)),
    _c("xtrim", -4, "write", (1, 1, 1)),
    _c("xsetid", -3, "write denyoom fast", (1, 1, 1)),
    _c("xpending", -3, "readonly", (1, 1, 1)),
    _c("xclaim", -6, "write fast", (1, 1, 1)),
    _c("xautoclaim", -6, "write fast", (1, 1, 1)),
    _c("xgroup", -2, "", subs=[
        _c("create", -5, "write denyoom", (2, 2, 1)),
        _c("setid", -5, "write", (2, 2, 1)),
        _c("destroy", 4, "write", (2, 2, 1)),
        _c("createconsumer", 5, "write denyoom", (2, 2, 1)),
        _c("delconsumer", 5, "write", (2, 2, 1)),
        _c("help", 2, "loading stale"),
    ]),
    _c("xinfo", -2, "", subs=[
        _c("stream", -3, "readonly", (2, 2, 1)),
        _c("groups", 3, "readonly", (2, 2, 1)),
        _c("consumers", 4, "readonly", (2, 2, 1)),
        _c("help", 2, "loading stale"),
    ]),
    # lists
    _c("lpush", -3, "write denyoom fast", (1, 1, 1)),
    _c("rpush", -3, "write denyoom fast", (1, 1, 1)),
    _c("lpop", -2, "write fast", (1, 1, 1)),
    _c("rpop", -2, "write fast", (1, 1, 1)),
    _c("llen", 2, "readonly fast", (1, 1, 1)),
    _c("lrange", 4, "readonly", (1, 1, 1)),
    _c("lmove", 5, "write denyoom", (1, 2, 1)),
    _c("blpop", -3, "write noscript blocking", (1, -2, 1)),
    _c("brpop", -3, "write noscript blocking", (1, -2, 1)),
    _c("blmove", 6, "write denyoom noscript blocking", (1, 2, 1)),
    # sets
    _c("sadd", -3, "write denyoom fast", (1, 1, 1)),
    _c("srem", -3, "write fast", (1, 1, 1)),
    _c("smembers", 2, "readonly", (1, 1, 1)),
    _c("scard", 2, "readonly fast", (1, 1, 1)),
    _c("sismember", 3, "readonly fast", (1, 1, 1)),
    # pub/sub (spec/rules/pubsub.md)
    _c("subscribe", -2, "pubsub noscript loading stale"),
    _c("psubscribe", -2, "pubsub noscript loading stale"),
    _c("unsubscribe", -1, "pubsub noscript loading stale"),
    _c("punsubscribe", -1, "pubsub noscript loading stale"),
    _c("ssubscribe", -2, "pubsub noscript loading stale", (1, -1, 1)),
    _c("sunsubscribe", -1, "pubsub noscript loading stale", (1, -1, 1)),
    _c("publish", 3, "pubsub loading stale fast"),
    _c("spublish", 3, "pubsub loading stale fast", (1, 1, 1)),
    _c("pubsub", -2, "", subs=[
        _c("channels", -2, "pubsub loading stale"),
        _c("numpat", 2, "pubsub loading stale"),
        _c("numsub", -2, "pubsub loading stale"),
        _c("shardchannels", -2, "pubsub loading stale"),
        _c("shardnumsub", -2, "pubsub loading stale"),
        _c("help", 2, "loading stale"),
    ]),
    # functions (the library is always empty: scripting is outside the model)
    _c("function", -2, "", subs=[
        _c("delete", 3, "write noscript"),
        _c("dump", 2, "noscript"),
        _c("flush", -2, "write noscript"),
        _c("help", 2, "loading stale"),
        _c("kill", 2, "noscript allow_busy"),
        _c("list", -2, "noscript"),
        _c("load", -3, "write denyoom noscript"),
        _c("restore", -3, "write denyoom noscript"),
        _c("stats", 2, "noscript allow_busy"),
    ]),
    # connection
    _c("ping", -1, "fast"),
    _c("echo", 2, "fast"),
    _c("hello", -1, "noscript loading stale fast no_auth allow_busy"),
    _c("auth", -2, "noscript loading stale fast no_auth allow_busy"),
    _c("reset", 1, "noscript loading stale fast no_auth allow_busy"),
    _c("quit", -1, "noscript loading stale fast no_auth allow_busy"),
    _c("select", 2, "loading stale fast"),
    _c("client", -2, "", subs=[
        _c("id", 2, "noscript loading stale"),
        _c("setname", 3, "noscript loading stale"),
        _c("getname", 2, "noscript loading stale"),
        _c("info", 2, "noscript loading stale"),
        _c("list", -2, "admin noscript loading stale"),
        _c("kill", -3, "admin noscript loading stale"),
        _c("help", 2, "loading stale"),
        _c("no-evict", 3, "admin noscript loading stale"),
        _c("tracking", -3, "noscript loading stale"),
        _c("reply", 3, "noscript loading stale"),
        _c("getredir", 2, "noscript loading stale"),
        _c("pause", -3, "admin noscript loading stale"),
        _c("unpause", 2, "admin noscript loading stale"),
        _c("unblock", -3, "admin noscript loading stale"),
        _c("caching", 3, "noscript loading stale"),
        _c("trackinginfo", 2, "noscript loading stale"),
        _c("no-touch", 3, "noscript loading stale"),
    ]),
    # keyspace
    _c("swapdb", 3, "write fast"),
    _c("del", -2, "write", (1, -1, 1)),
    _c("unlink", -2, "write fast", (1, -1, 1)),
    _c("exists", -2, "readonly fast", (1, -1, 1)),
    _c("type", 2, "readonly fast", (1, 1, 1)),
    _c("rename", 3, "write", (1, 2, 1)),
    _c("keys", 2, "readonly"),
    _c("scan", -2, "readonly"),
    _c("dbsize", 1, "readonly fast"),
    _c("flushdb", -1, "write"),
    _c("flushall", -1, "write"),
    _c("set", -3, "write denyoom", (1, 1, 1)),
    _c("get", 2, "readonly fast", (1, 1, 1)),
    _c("dump", 2, "readonly", (1, 1, 1)),  # spec/rules/dump.md
    _c("restore", -4, "write denyoom", (1, 1, 1)),
    # transactions
    _c("multi", 1, "noscript loading stale fast allow_busy"),
    _c("exec", 1, "noscript loading stale skip_slowlog"),
    _c("discard", 1, "noscript loading stale fast allow_busy"),
    _c("watch", -2, "noscript loading stale fast allow_busy", (1, -1, 1)),
    _c("unwatch", 1, "noscript loading stale fast allow_busy"),
    # server
    _c("info", -1, "loading stale"),
    _c("config", -2, "", subs=[
        _c("get", -3, "admin noscript loading stale"),
        _c("set", -4, "admin noscript loading stale"),
        _c("resetstat", 2, "admin noscript loading stale"),
        _c("help", 2, "loading stale"),
    ]),
    # replication and persistence (spec/rules/replication.md)
    _c("replicaof", 3, "no_async_loading admin noscript stale"),
    _c("slaveof", 3, "no_async_loading admin noscript stale"),
    _c("role", 1, "noscript loading stale fast sentinel"),
    _c("wait", 3, "noscript"),
    _c("failover", -1, "admin noscript stale"),
    _c("save", 1, "no_async_loading admin noscript no_multi"),
    _c("bgsave", -1, "no_async_loading admin noscript"),
    _c("bgrewriteaof", 1, "no_async_loading admin noscript"),
    # DEBUG's subcommands that are no persistence (spec/rules/debug.md); a trace using DEBUG is
    # still outside the model's scope (OUT_OF_SCOPE): a real server's DEBUG reaches its internals.
    _c("debug", -2, "admin noscript loading stale protected"),
]

COMMANDS: dict[str, CommandSpec] = {c.name: c for c in _TABLE}

# Commands that exist in Redis 7.0 but are outside the model's scope: a trace
# that uses one is "unsupported", not "diverge". Also XSPEC.FAULT, the reference
# server's fault injection, which its --trace writes as a call when it changes replies.
OUT_OF_SCOPE: frozenset[str] = frozenset(
    """eval evalsha eval_ro evalsha_ro fcall fcall_ro script monitor sync psync
    debug object memory module acl shutdown
    migrate cluster readonly readwrite expire pexpire expireat pexpireat ttl pttl
    persist expiretime pexpiretime copy move sort sort_ro randomkey renamenx touch incr decr
    incrby decrby incrbyfloat append strlen getrange setrange getset getdel getex mget mset msetnx
    setnx setex psetex lindex lset lrem ltrim linsert lpos
    brpoplpush lmpop blmpop rpoplpush lpushx rpushx
    smismember spop srandmember smove sinter sunion sdiff sinterstore sunionstore
    sdiffstore sintercard sscan zadd zrem zrange zscore zcard zincrby zrank zrevrank zcount
    zrangebyscore zpopmin zpopmax bzpopmin bzpopmax zmpop bzmpop zscan hset hget hdel hgetall
    hkeys hvals hlen hexists hincrby hmset hmget hsetnx hscan hstrlen hrandfield pfadd pfcount
    pfmerge setbit getbit bitcount bitpos bitop bitfield bitfield_ro geoadd geodist geopos
    georadius geosearch lastsave time lolwut latency slowlog command swapdb_ object
    xspec.fault
    """.split()
)

# DISPATCH-4: the commands that run at once inside MULTI instead of being queued.
RUN_INSIDE_MULTI = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})


def _table_name(arg: bytes) -> str:
    # The name as the case-insensitive table lookup sees it: a C string.
    return c_string(arg).decode("latin-1").lower()


# argv[0] as sent -> its table entry (None: unknown). A pure function of the
# bytes, remembered for the short names clients actually send; bounded in
# count and length so that a fuzzer's random names cannot grow it without end.
_BASE_BY_ARG: dict[bytes, CommandSpec | None] = {}
_BASE_BY_ARG_LIMIT = 4096
_BASE_BY_ARG_LONGEST = 32


def _base(arg: bytes) -> CommandSpec | None:
    if type(arg) is not bytes:  # a bytearray or the like: not hashable, not remembered
        return COMMANDS.get(_table_name(arg))
    try:
        return _BASE_BY_ARG[arg]
    except KeyError:
        base = COMMANDS.get(_table_name(arg))
        if len(_BASE_BY_ARG) < _BASE_BY_ARG_LIMIT and len(arg) <= _BASE_BY_ARG_LONGEST:
            _BASE_BY_ARG[arg] = base
        return base


def lookup(argv: list[bytes]) -> CommandSpec | None:
    """``lookupCommand``: the command, or the subcommand of a container command.

    A container called with no subcommand resolves to the container itself, so
    its arity check reports ``'xgroup'``. An unknown subcommand returns None;
    :func:`unknown_command_error` then words it as Redis does.
    """
    if not argv:
        return None
    base = _base(argv[0])
    if base is None or not base.subcommands or len(argv) == 1:
        return base
    return base.subcommands.get(_table_name(argv[1]))


def unknown_command_error(argv: list[bytes]) -> str:
    """The error text for a command (or subcommand) the table does not have (DISPATCH-1).

    The arguments are cut as C's ``%.*s`` cuts them (at a NUL, and to 128 bytes in all), so the
    text is built as bytes and read as an error line is read (:func:`rejected_text`).
    """
    base = _base(argv[0])
    if base is not None and base.subcommands:
        return unknown_subcommand(argv[1], base.name)
    args = b""
    for a in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'" + c_string(a)[:128 - len(args)] + b"' "
    return rejected_text(b"ERR unknown command '" + c_string(argv[0])[:128] + b"', with args beginning with: " + args)


def rejected_text(msg: bytes) -> str:
    """``rejectCommandFormat``: CR and LF become spaces so the error stays one line; the bytes are
    read as UTF-8 with surrogate escapes, as a client reads an error line, so they go out unchanged."""
    return msg.decode("utf-8", "surrogateescape").replace("\r", " ").replace("\n", " ")


def arity_error(spec: CommandSpec) -> str:
    return f"ERR wrong number of arguments for '{spec.fullname}' command"


# Error texts shared by many commands (server.c shared objects).
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NO_SUCH_KEY = "ERR no such key"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
