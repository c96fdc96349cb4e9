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
    # sets over several keys (spec/rules/sets.md, models/set_operations.py)
    _c("sinter", -2, "readonly", (1, -1, 1)),
    _c("sinterstore", -3, "write denyoom", (1, -1, 1)),
    _c("sintercard", -3, "readonly"),
    _c("sunion", -2, "readonly", (1, -1, 1)),
    _c("sunionstore", -3, "write denyoom", (1, -1, 1)),
    _c("sdiff", -2, "readonly", (1, -1, 1)),
    _c("sdiffstore", -3, "write denyoom", (1, -1, 1)),
    _c("smove", 4, "write fast", (1, 2, 1)),
    _c("smismember", -3, "readonly fast", (1, 1, 1)),
    _c("sscan", -3, "readonly", (1, 1, 1)),
    # lists by position and value (spec/rules/lists.md, models/list_positions.py)
    _c("lpushx", -3, "write denyoom fast", (1, 1, 1)),
    _c("rpushx", -3, "write denyoom fast", (1, 1, 1)),
    _c("linsert", 5, "write denyoom", (1, 1, 1)),
    _c("lindex", 3, "readonly", (1, 1, 1)),
    _c("lset", 4, "write denyoom", (1, 1, 1)),
    _c("ltrim", 4, "write", (1, 1, 1)),
    _c("lpos", -3, "readonly", (1, 1, 1)),
    _c("lrem", 4, "write", (1, 1, 1)),
    _c("rpoplpush", 3, "write denyoom", (1, 2, 1)),
    _c("lmpop", -4, "write"),
    _c("brpoplpush", 4, "write denyoom noscript blocking", (1, 2, 1)),
    _c("blmpop", -5, "write blocking"),
    _c("spop", -2, "write fast", (1, 1, 1)),
    _c("hrandfield", -2, "readonly", (1, 1, 1)),
    # SORT (spec/rules/sort.md)
    _c("sort", -2, "write denyoom", (1, 1, 1)),
    _c("sort_ro", -2, "readonly", (1, 1, 1)),
    # bit fields of strings (spec/rules/bitfield.md)
    _c("bitfield", -2, "write denyoom", (1, 1, 1)),
    _c("bitfield_ro", -2, "readonly fast", (1, 1, 1)),
    # sorted sets (spec/rules/zsets.md)
    _c("zadd", -4, "write denyoom fast", (1, 1, 1)),
    _c("zincrby", 4, "write denyoom fast", (1, 1, 1)),
    _c("zrem", -3, "write fast", (1, 1, 1)),
    _c("zcard", 2, "readonly fast", (1, 1, 1)),
    _c("zscore", 3, "readonly fast", (1, 1, 1)),
    _c("zmscore", -3, "readonly fast", (1, 1, 1)),
    _c("zrank", 3, "readonly fast", (1, 1, 1)),
    _c("zrevrank", 3, "readonly fast", (1, 1, 1)),
    _c("zcount", 4, "readonly fast", (1, 1, 1)),
    _c("zlexcount", 4, "readonly fast", (1, 1, 1)),
    _c("zrange", -4, "readonly", (1, 1, 1)),
    _c("zrangestore", -5, "write denyoom", (1, 2, 1)),
    _c("zrevrange", -4, "readonly", (1, 1, 1)),
    _c("zrangebyscore", -4, "readonly", (1, 1, 1)),
    _c("zrevrangebyscore", -4, "readonly", (1, 1, 1)),
    _c("zrangebylex", -4, "readonly", (1, 1, 1)),
    _c("zrevrangebylex", -4, "readonly", (1, 1, 1)),
    _c("zremrangebyrank", 4, "write", (1, 1, 1)),
    _c("zremrangebyscore", 4, "write", (1, 1, 1)),
    _c("zremrangebylex", 4, "write", (1, 1, 1)),
    _c("zunionstore", -4, "write denyoom", (1, 1, 1)),
    _c("zinterstore", -4, "write denyoom", (1, 1, 1)),
    _c("zdiffstore", -4, "write denyoom", (1, 1, 1)),
    _c("zunion", -3, "readonly"),
    _c("zinter", -3, "readonly"),
    _c("zdiff", -3, "readonly"),
    _c("zintercard", -3, "readonly"),
    _c("zpopmin", -2, "write fast", (1, 1, 1)),
    _c("zpopmax", -2, "write fast", (1, 1, 1)),
    _c("bzpopmin", -3, "write noscript fast blocking", (1, -2, 1)),
    _c("bzpopmax", -3, "write noscript fast blocking", (1, -2, 1)),
    _c("zmpop", -4, "write"),
    _c("bzmpop", -5, "write blocking"),
    _c("zscan", -3, "readonly", (1, 1, 1)),
    _c("zrandmember", -2, "readonly", (1, 1, 1)),
    _c("srandmember", -2, "readonly", (1, 1, 1)),
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
    # functions (spec/rules/functions.md)
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
    # scripting (spec/rules/scripting.md); EVAL's keys come from its numkeys argument
    _c("eval", -3, "noscript skip_monitor may_replicate no_mandatory_keys stale"),
    _c("evalsha", -3, "noscript skip_monitor may_replicate no_mandatory_keys stale"),
    _c("eval_ro", -3, "noscript skip_monitor no_mandatory_keys stale readonly"),
    _c("evalsha_ro", -3, "noscript skip_monitor no_mandatory_keys stale readonly"),
    _c("fcall", -3, "noscript skip_monitor may_replicate no_mandatory_keys stale"),
    _c("fcall_ro", -3, "noscript skip_monitor no_mandatory_keys stale readonly"),
    _c("script", -2, "", subs=[
        _c("debug", 3, "noscript"),
        _c("exists", -3, "noscript"),
        _c("flush", -2, "noscript"),
        _c("help", 2, "loading stale"),
        _c("kill", 2, "noscript allow_busy"),
        _c("load", 3, "noscript stale"),
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
    # strings (spec/rules/strings.md)
    _c("getdel", 2, "write fast", (1, 1, 1)),
    _c("getex", -2, "write fast", (1, 1, 1)),
    _c("getset", 3, "write denyoom fast", (1, 1, 1)),
    _c("setnx", 3, "write denyoom fast", (1, 1, 1)),
    _c("setex", 4, "write denyoom", (1, 1, 1)),
    _c("psetex", 4, "write denyoom", (1, 1, 1)),
    _c("mget", -2, "readonly fast", (1, -1, 1)),
    _c("mset", -3, "write denyoom", (1, -1, 2)),
    _c("msetnx", -3, "write denyoom", (1, -1, 2)),
    _c("incr", 2, "write denyoom fast", (1, 1, 1)),
    _c("decr", 2, "write denyoom fast", (1, 1, 1)),
    _c("incrby", 3, "write denyoom fast", (1, 1, 1)),
    _c("decrby", 3, "write denyoom fast", (1, 1, 1)),
    _c("incrbyfloat", 3, "write denyoom fast", (1, 1, 1)),
    _c("append", 3, "write denyoom fast", (1, 1, 1)),
    _c("strlen", 2, "readonly fast", (1, 1, 1)),
    _c("getrange", 4, "readonly", (1, 1, 1)),
    _c("substr", 4, "readonly", (1, 1, 1)),
    _c("setrange", 4, "write denyoom", (1, 1, 1)),
    # hashes (spec/rules/hashes.md)
    _c("hset", -4, "write denyoom fast", (1, 1, 1)),
    _c("hmset", -4, "write denyoom fast", (1, 1, 1)),
    _c("hsetnx", 4, "write denyoom fast", (1, 1, 1)),
    _c("hget", 3, "readonly fast", (1, 1, 1)),
    _c("hmget", -3, "readonly fast", (1, 1, 1)),
    _c("hgetall", 2, "readonly", (1, 1, 1)),
    _c("hdel", -3, "write fast", (1, 1, 1)),
    _c("hexists", 3, "readonly fast", (1, 1, 1)),
    _c("hincrby", 4, "write denyoom fast", (1, 1, 1)),
    _c("hincrbyfloat", 4, "write denyoom fast", (1, 1, 1)),
    _c("hkeys", 2, "readonly", (1, 1, 1)),
    _c("hvals", 2, "readonly", (1, 1, 1)),
    _c("hlen", 2, "readonly fast", (1, 1, 1)),
    _c("hstrlen", 3, "readonly fast", (1, 1, 1)),
    _c("hscan", -3, "readonly", (1, 1, 1)),
    # key expiry (spec/rules/expiry.md)
    _c("expire", -3, "write fast", (1, 1, 1)),
    _c("pexpire", -3, "write fast", (1, 1, 1)),
    _c("expireat", -3, "write fast", (1, 1, 1)),
    _c("pexpireat", -3, "write fast", (1, 1, 1)),
    _c("ttl", 2, "readonly fast", (1, 1, 1)),
    _c("pttl", 2, "readonly fast", (1, 1, 1)),
    _c("expiretime", 2, "readonly fast", (1, 1, 1)),
    _c("pexpiretime", 2, "readonly fast", (1, 1, 1)),
    _c("persist", 2, "write fast", (1, 1, 1)),
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
    # COMMAND (spec/rules/command.md): answered from the measured tables of spec/command_table.py
    _c("command", -1, "loading stale", subs=[
        _c("count", 2, "loading stale"),
        _c("docs", -2, "loading stale"),
        _c("getkeys", -4, "loading stale"),
        _c("getkeysandflags", -4, "loading stale"),
        _c("help", 2, "loading stale"),
        _c("info", -2, "loading stale"),
        _c("list", -2, "loading stale"),
    ]),
]

COMMANDS: dict[str, CommandSpec] = {c.name: c for c in _TABLE}

# Commands that exist in Redis 7.0 but are outside the model's scope: a trace
# that uses one is "unsupported", not "diverge". Also XSPEC.FAULT, the reference
# server's fault injection, which its --trace writes as a call when it changes replies.
OUT_OF_SCOPE: frozenset[str] = frozenset(
    """monitor sync psync
    debug object memory module acl shutdown
    migrate cluster readonly readwrite
    copy move randomkey renamenx touch
    pfadd pfcount
    pfmerge setbit getbit bitcount bitpos bitop geoadd geodist geopos
    georadius geosearch lastsave time lolwut latency slowlog swapdb_ object
    xspec.fault
    """.split()
)

# Commands that name their keys through a count (``numkeys``): the count's position, and the
# destination key the STORE forms write after reading their sources (looked up last).
KEYNUM_COMMANDS: dict[str, tuple[int, int | None]] = {
    "zunion": (1, None), "zinter": (1, None), "zdiff": (1, None), "zintercard": (1, None), "zmpop": (1, None),
    "bzmpop": (2, None), "lmpop": (1, None), "blmpop": (2, None), "sintercard": (1, None),
    "zunionstore": (2, 1), "zinterstore": (2, 1), "zdiffstore": (2, 1),
}


def keynum_keys(name: str, argv: list[bytes]) -> list[bytes] | None:
    """The keys of a :data:`KEYNUM_COMMANDS` command in the order it looks them up (None for other
    commands; what a malformed count names is left to the handler's errors)."""
    found = KEYNUM_COMMANDS.get(name)
    if found is None:
        return None
    at, dst = found
    count = parse_count(argv[at]) if at < len(argv) else None
    keys = [] if count is None else argv[at + 1:at + 1 + count]
    return keys + ([argv[dst]] if dst is not None else [])


def command_keys(spec: CommandSpec, argv: list[bytes]) -> list[bytes]:
    """The keys 7.0's ``getKeysFromCommand`` finds, in the order the command looks them up: XREAD's and
    XREADGROUP's after STREAMS (``xreadGetKeys``), a :data:`KEYNUM_COMMANDS` command's after its count,
    every other command's by its table entry (first, last, step). Lazy expiry and client tracking use it."""
    keys = keynum_keys(spec.fullname, argv)
    if keys is not None:
        return keys
    if spec.fullname in ("xread", "xreadgroup"):
        return _stream_keys(argv)
    if not spec.first_key:
        return []
    last = spec.last_key if spec.last_key >= 0 else len(argv) + spec.last_key
    return argv[spec.first_key:last + 1:spec.key_step or 1]


def _stream_keys(argv: list[bytes]) -> list[bytes]:
    # The options before STREAMS are skipped with their arguments; anything else ends the search.
    skip = {b"block": 1, b"count": 1, b"group": 2, b"noack": 0}
    i = 1
    while i < len(argv):
        word = c_string(argv[i]).lower()
        if word == b"streams":
            rest = argv[i + 1:]
            return [] if not rest or len(rest) % 2 else rest[:len(rest) // 2]
        if word not in skip:
            return []
        i += 1 + skip[word]
    return []


def parse_count(arg: bytes) -> int | None:
    """A positive decimal count, None otherwise."""
    return int(arg) if arg.isdigit() and 0 < len(arg) < 19 and int(arg) > 0 else None


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
