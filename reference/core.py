"""The reference server's core: databases, clients, dispatch, transactions, blocking, time.

:class:`Core` runs commands the way Redis 7.0.15's ``processCommand`` and
``call`` do, with no networking of its own: the server (``reference.server``)
feeds it parsed commands per connection and writes out what it returns.
Another dialect (``spec/dialect.py``, spec/dialects.md) changes what the
core reads from its switches once, when it is built: the lookup and the
unknown-command words (6.2 has no subcommand table, :func:`dialect_dispatch`),
one clock reading per command in 7.2+ (``Core.snapshot``), no wake-up on a
deleted key in 6.2, Valkey's "no-multi" MULTI and WATCH.

Dispatch, in Redis's order: look the command up in the shared command table
(``xspec.spec.commands``, plus the few server-only commands of
:data:`EXTRA_COMMANDS`), check its arity, refuse DEBUG unless enabled, refuse
unauthenticated clients (``NOAUTH``), apply injected faults (XSPEC.FAULT),
queue inside MULTI, else run the handler. A rejected command inside MULTI
dooms the transaction; a rejected EXEC discards it (``EXECABORT``).

After each command (after a whole EXEC), clients blocked on keys the command
made ready are retried in FIFO order per key, keys in the order they were
signalled (7.0's ``handleClientsBlockedOnKeys``); a served client's pipelined
commands run after that. Timeouts fire once the clock has passed the deadline
(``deadline < now``), from a timer with the wall clock or when XSPEC.CLOCK
moves the virtual clock.

Handlers (``reference.generic`` and the stream module's
``reference.xcommands.HANDLERS``, put together per dialect by
``reference.handlers``, which hands the table to the core: this module
imports no handler module) see the server through :class:`Context`,
which implements ``reference.api.Context`` and adds what the generic commands
need (the core, the command's table entry).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, MutableMapping
from errno import EAGAIN
from time import perf_counter_ns
from typing import Any, Final, Protocol

from xspec.reference.api import BLOCKED, POSTPONED, Blocked, Encoded, Postponed, PreRendered, ReplyError
from xspec.reference.clock import Clock, WallClock
from xspec.reference.keyspace import Database, expire_keys, restore_aside
from xspec.reference.propagation import Propagator
from xspec.reference.pubsub import Registry, drop_client
from xspec.reference.tracking import Tracking
from xspec.spec import commands as table
from xspec.spec.commands import CommandSpec
from xspec.spec.dialect import RANKS_72, Dialect, get_dialect
from xspec.spec.errors import (
    DEBUG_NOT_ALLOWED,
    NOAUTH,
    NOT_ALLOWED_IN_MULTI,
    command_not_allowed_in_multi,
    exec_aborted,
    unknown_subcommand,
)
from xspec.spec.ids import c_string
from xspec.spec.limits import NUM_DATABASES
from xspec.spec.pubsub import SUBSCRIBER_COMMANDS, subscriber_context_error
from xspec.spec.resp import QUEUED, Error, Reply

log = logging.getLogger("xspec.serve")

# A handler as the core calls it: the stream module's take ``api.Context``, the
# generic ones this module's richer :class:`Context` (which provides it).
Handler = Callable[[Any], Any]

# The dialects this server reproduces: every dialect the model has (spec/dialect.py).
SERVED_DIALECTS = ("redis-7.0", "redis-6.2", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1")

# MULTI-DIALECT-1: the commands Valkey flags "no-multi" among them.
_NO_MULTI_IN_VALKEY = frozenset({"multi", "watch"})
# What _call reads per command, as C statics when compiled (an imported name is a dict lookup per use).
_NOW_NS: Final = perf_counter_ns
_BLOCKED: Final = BLOCKED
_ERROR: Final = Error


def _spec(name: str, arity: int, flags: str = "", subs: tuple[tuple[str, int, str], ...] = ()) -> CommandSpec:
    children = {s: CommandSpec(s, a, frozenset(f.split()), container=name) for s, a, f in subs}
    return CommandSpec(name, arity, frozenset(flags.split()), subcommands=children)


# Server commands outside the shared table (which holds what the model runs):
# LASTSAVE and replication's commands as Redis 7.0.15 declares them, and the admin commands
# of the reference server itself.
EXTRA_COMMANDS: dict[str, CommandSpec] = {s.name: s for s in (
    _spec("lastsave", 1, "random loading stale fast"),
    _spec("xspec.clock", -2, "admin noscript loading stale fast allow_busy"),
    _spec("xspec.fault", -2, "admin noscript loading stale fast no_auth allow_busy"),
    # replication (reference/replication.py), as 7.0.15 declares them
    _spec("psync", -3, "admin noscript no_async_loading no_multi"),
    _spec("sync", 1, "admin noscript no_async_loading no_multi"),
    _spec("replconf", -1, "admin noscript loading stale allow_busy"),
    _spec("xspec.link", -2, "admin noscript loading stale fast allow_busy"),
    _spec("xspec.node", 3, "admin noscript loading stale fast allow_busy"),
)}


# Subcommands of the shared table's containers that only the server has: CONFIG REWRITE, which Sentinel
# sends inside its MULTI with REPLICAOF (reference/replication.py answers it as Redis without a config file).
EXTRA_SUBCOMMANDS: dict[tuple[str, str], CommandSpec] = {
    ("config", "rewrite"): CommandSpec("rewrite", 2, frozenset("admin noscript loading stale".split()),
                                       container="config"),
}


def lookup(argv: list[bytes]) -> CommandSpec | None:
    """The command (or subcommand) ``argv`` names in 7.0, from the shared table or :data:`EXTRA_COMMANDS`."""
    spec = table.lookup(argv)
    if spec is not None:
        return spec
    if len(argv) > 1 and EXTRA_SUBCOMMANDS:
        sub = EXTRA_SUBCOMMANDS.get((c_string(argv[0]).decode("latin-1").lower(),
                                     c_string(argv[1]).decode("latin-1").lower()))
        if sub is not None:
            return sub
    extra = EXTRA_COMMANDS.get(c_string(argv[0]).decode("latin-1").lower())
    if extra is None or not extra.subcommands or len(argv) == 1:
        return extra
    return extra.subcommands.get(c_string(argv[1]).decode("latin-1").lower())


def unknown_command_error(argv: list[bytes]) -> str:
    """Redis 7.0's words for an unknown command or an unknown subcommand of a container."""
    extra = EXTRA_COMMANDS.get(c_string(argv[0]).decode("latin-1").lower())
    if extra is not None and extra.subcommands:
        return unknown_subcommand(argv[1], extra.name)
    return table.unknown_command_error(argv)


# Subcommands newer servers have beyond 7.0's table, as Valkey 9.1.2 declares them: CLIENT
# SETINFO came with 7.2 (NO-TOUCH too; it is in the shared table), CAPA and IMPORT-SOURCE are Valkey's.
_CLIENT_SETINFO = _spec("client", -2, "", (("setinfo", 4, "noscript loading stale"),)).subcommands
_CLIENT_CAPA = _spec("client", -2, "", (
    ("capa", -3, "noscript loading stale"), ("import-source", 3, "noscript loading stale"))).subcommands
# What 6.2's COMMAND has: no DOCS or LIST.
_COMMAND_62 = frozenset({"count", "info", "getkeys", "help"})

Lookup = Callable[[list[bytes]], CommandSpec | None]


def dialect_dispatch(dialect: Dialect) -> tuple[Lookup, Callable[[list[bytes]], str]]:
    """The command lookup and unknown-command words of a dialect (DISPATCH-DIALECT-1).

    7.0 is :func:`lookup`; 7.2, 7.4 and Valkey know a few more CLIENT subcommands
    (``Dialect.client_setinfo``, ``Dialect.client_capa``).
    6.2 looks the command name up only: a container accepts any subcommand
    (arity -2) and refuses an unknown one, or a count of arguments it does not
    take, when it runs. Its lookup then gives the pseudo-subcommand
    ``<container>|*``, whose handler answers 6.2's error.
    """
    if not dialect.subcommand_table:
        return _legacy_lookup(dialect.lookup), dialect.unknown_command_error
    more = {**(_CLIENT_SETINFO if dialect.client_setinfo else {}), **(_CLIENT_CAPA if dialect.client_capa else {})}
    if not more:
        return lookup, unknown_command_error

    ranks = RANKS_72 if dialect.zset_size_hints else {}  # ZSET-DIALECT-2: ZRANK's WITHSCORE

    def lookup_newer(argv: list[bytes]) -> CommandSpec | None:
        spec = lookup(argv)
        if spec is not None and spec.container is None and spec.name in ranks:
            return ranks[spec.name]
        if spec is not None and spec.container == "command":
            return dialect.lookup(argv) or spec  # COMMAND-DIALECT-2: GETKEYS's arity
        if spec is None and argv and c_string(argv[0]).lower() == b"waitaof":
            return dialect.lookup(argv)  # WAITAOF-1: 7.2's table
        if spec is None and len(argv) > 1 and c_string(argv[0]).lower() == b"client":
            return more.get(c_string(argv[1]).decode("latin-1").lower())
        return spec

    return lookup_newer, unknown_command_error


_REFUSED: dict[str, CommandSpec] = {}  # container -> its 6.2 "<container>|*" entry


def refused_subcommand(container: CommandSpec) -> CommandSpec:
    """6.2's entry for a container's unknown subcommand or wrong count: the container's arity."""
    found = _REFUSED.get(container.name)
    if found is None:
        found = _REFUSED[container.name] = CommandSpec("*", container.arity, container.flags,
                                                       container=container.name)
    return found


def _legacy_lookup(dialect_lookup: Lookup) -> Lookup:
    def lookup_62(argv: list[bytes]) -> CommandSpec | None:
        spec = dialect_lookup(argv)
        if spec is not None:
            return spec
        extra = EXTRA_COMMANDS.get(c_string(argv[0]).decode("latin-1").lower())
        if extra is None or not extra.subcommands or len(argv) == 1:
            return extra
        name = c_string(argv[1]).decode("latin-1").lower()
        sub = extra.subcommands.get(name)
        if sub is None or name not in _COMMAND_62 or not sub.arity_ok(len(argv)):
            return refused_subcommand(extra)
        return sub

    return lookup_62


class Connection(Protocol):
    """What the core needs from a client's connection (the server's transport, or a test double)."""

    def deliver(self, reply: Reply | Encoded) -> None:
        """Send a reply that was not the answer to the command being run (a served or timed-out block)."""
        ...

    def close_after_reply(self) -> None: ...

    def close_now(self) -> None: ...

    def write(self, out: list[bytes]) -> None:
        """Queue bytes for the client in order with its replies (CLIENT TRACKING's push messages)."""
        ...

    def resume(self) -> None:
        """Run the commands held back (CLIENT PAUSE ended)."""
        ...


class BlockState:
    """Why and how a client waits: its keys (in one database), deadline and retry."""

    __slots__ = ("keys", "db", "deadline", "retry", "timeout_reply", "argv", "timer", "kind")

    def __init__(self, keys: list[bytes], db: int, deadline: int | None,
                 retry: Callable[[Any, bytes], Reply | Encoded | None], timeout_reply: Reply,
                 argv: list[bytes], kind: str = "stream") -> None:
        self.kind = kind  # what it waits for: "stream" (XREAD, XREADGROUP) or "list" (BLPOP ...)
        self.keys = keys
        self.db = db
        self.deadline = deadline
        self.retry = retry
        self.timeout_reply = timeout_reply
        self.argv = argv
        self.timer: Any = None


class Client:
    """One connection's server-side state."""

    __slots__ = ("id", "name", "proto", "db", "authenticated", "conn", "in_multi", "multi_queue",
                 "multi_error", "dirty_cas", "watched", "blocked", "last_cmd", "ctx", "addr", "laddr",
                 "fd", "created", "last_interaction", "no_evict", "tracking", "reply_mode", "kind",
                 "multi_used", "no_touch", "lib_name", "lib_ver", "capa", "redirect", "pubsub", "woff")

    def __init__(self, client_id: int, conn: Connection | None, authenticated: bool,
                 addr: str = "127.0.0.1:0", laddr: str = "127.0.0.1:0", fd: int = -1) -> None:
        self.id = client_id
        self.name = b""
        self.proto = 2
        self.db = 0
        self.authenticated = authenticated
        self.conn = conn
        self.in_multi = False
        self.multi_queue: list[list[bytes]] = []
        self.multi_error = False
        self.dirty_cas = False
        self.watched: dict[tuple[int, bytes], None] = {}
        self.blocked: BlockState | None = None
        self.last_cmd = "NULL"
        self.ctx = Context(None, self)
        self.addr = addr
        self.laddr = laddr
        self.fd = fd
        self.created = self.last_interaction = time.monotonic()
        self.no_evict = False
        self.tracking = False
        self.redirect = 0  # CLIENT TRACKING's REDIRECT target while tracking (0: none)
        self.reply_mode = "on"
        self.kind = "normal"
        self.multi_used = False  # CLIENT-DIALECT-1: Valkey's multi= is 0, not -1, once MULTI was used
        self.no_touch = False
        self.lib_name = self.lib_ver = b""  # CLIENT SETINFO (7.2+)
        self.capa = ""  # CLIENT CAPA (Valkey): "r" once the client can handle redirects
        self.pubsub: Any = None  # reference/pubsub.py's Subscriptions while subscribed to something
        self.woff = 0  # WAIT-2: the replication offset after the client's last command


class Context:
    """One command execution as a handler sees it (``reference.api.Context`` and more).

    Each client keeps one context and the core refills it for every command,
    so running a command allocates nothing here.
    """

    __slots__ = ("core", "client", "argv", "db", "can_block", "spec")

    def __init__(self, core: Core | None, client: Client) -> None:
        self.core: Core  # set by Core.connect when not given here
        if core is not None:
            self.core = core
        self.client = client
        self.argv: list[bytes] = []
        self.db: MutableMapping[bytes, Any] = {}
        self.can_block = True
        self.spec: CommandSpec | None = None

    def now_ms(self) -> int:
        """The clock: a fresh reading, or the command's snapshot in 7.2+ (spec/trace-format.md rule 2)."""
        core = self.core
        t = core.snapshot
        return core.now_ms() if t is None else t

    def clock(self) -> Callable[[], int]:
        core = self.core
        return core.now_ms if core.snapshot is None else core.read_snapshot

    @property
    def dialect(self) -> Dialect:
        """The dialect the server reproduces (its switches, ``spec.dialect``)."""
        return self.core.dialect

    @property
    def errno(self) -> int:
        """The server-wide C errno of 7.0's main thread (XADD-14)."""
        return self.core.errno

    @errno.setter
    def errno(self, value: int) -> None:
        self.core.errno = value

    def config_int(self, name: str) -> int:
        try:
            return self.core.config_ints[name]  # Core.int_setting, one call less on the XADD path
        except KeyError:
            return self.core.int_setting(name)

    def modified(self, key: bytes) -> None:
        if self.core.watchers:
            self.core.touch(self.client.db, key)
        if self.core.tracking.table or self.core.tracking.prefixes:
            self.core.tracking.invalidate(self.client, key)  # signalModifiedKey's trackingInvalidateKey

    def changed(self, n: int = 1) -> None:
        """``server.dirty += n``: the command changed the data set ``n`` times (STATS-4)."""
        self.core.dirty += n

    def ready(self, key: bytes, kind: str = "stream") -> None:
        """signalKeyAsReady; ``kind``: the type of the value that made the key ready (BLIST-9)."""
        if self.core.blocking:
            self.core.signal_ready(self.client.db, key, kind)

    def deleted(self, key: bytes) -> None:
        core = self.core
        if core.watchers:
            core.touch(self.client.db, key)
        if core.blocking and core.signal_deletions:  # BLOCK-DIALECT-1: not in 6.2
            core.signal_ready(self.client.db, key)
        if core.tracking.table or core.tracking.prefixes:
            core.tracking.invalidate(self.client, key)

    def block(self, keys: list[bytes], timeout_ms: int, retry: Callable[[Any, bytes], Reply | Encoded | None],
              timeout_reply: Reply, read_at: int | None = None, kind: str = "stream") -> Blocked:
        self.core.block(self.client, keys, timeout_ms, retry, timeout_reply, self.argv, read_at, kind)
        return BLOCKED


RunResult = Reply | Encoded | PreRendered | None  # None: the client blocked
Result = RunResult | Postponed


class Observer(Protocol):
    """Watches the core for ``--trace`` and ``--checked`` (``reference.trace``)."""

    def connected(self, c: Client) -> None: ...

    def closed(self, c: Client, by: str) -> None: ...

    def executed(self, c: Client, argv: list[bytes], result: RunResult, t0: int) -> None: ...

    def refused(self, c: Client, argv: list[bytes], reply: Reply, t0: int) -> None:
        """An injected fault (XSPEC.FAULT ERROR) rejected the command: it did not run."""
        ...

    def served(self, c: Client, reply: Reply | Encoded, timed_out: bool) -> None: ...

    def pushed(self, c: Client, message: Any) -> None:
        """The server wrote ``c`` a message that answers no command of its (Pub/Sub, tracking)."""
        ...

    def protocol_error(self, c: Client, raw: bytes, error: str) -> None: ...

    def clock_moved(self) -> None: ...


# The error replies XSPEC.FAULT can inject, in Redis 7.0.15's words.
FAULT_ERRORS = {
    "READONLY": "READONLY You can't write against a read only replica.",
    "LOADING": "LOADING Redis is loading the dataset in memory",
    "OOM": "OOM command not allowed when used memory > 'maxmemory'.",
    "BUSY": "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "MASTERDOWN": "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    "TRYAGAIN": "TRYAGAIN Multiple keys request during rehashing of slot",
}


class ErrorFault:
    """Fail commands with ``text``: the next ``count`` ones (-1: all), or only those named ``command``."""

    __slots__ = ("text", "count", "command")

    def __init__(self, text: str, count: int, command: str | None) -> None:
        self.text = text
        self.count = count
        self.command = command


class FastCommand:
    """A plain command (no subcommands) dispatched once: what each of its runs needs, read off its table
    entry once (``Core.fast_commands``)."""

    def __init__(self, spec: CommandSpec, handler: Handler) -> None:
        self.spec = spec
        self.name = spec.fullname
        self.arity = spec.arity
        self.handler = handler
        self.readonly = "readonly" in spec.flags


class Core:
    """The whole server state and the dispatcher."""

    def __init__(self, *, dialect: str = "redis-7.0", clock: Clock | None = None,
                 requirepass: str | None = None, config: dict[str, str] | None = None,
                 enable_debug: str = "no", port: int = 0,
                 handlers: Callable[[Dialect], dict[str, Handler]]) -> None:
        if dialect not in SERVED_DIALECTS:
            raise ValueError(f"xspec serve runs {', '.join(SERVED_DIALECTS)}; not {dialect!r} yet")
        self.dialect: Dialect = get_dialect(dialect)
        self.clock: Clock = clock if clock is not None else WallClock()
        self.config: dict[str, str] = dict(self.dialect.config_known())  # CONFIG-DIALECT-3
        self.config.update(self.dialect.config_defaults)
        self.config.update({"maxclients": "10000", "appendonly": "no", "daemonize": "no", "dir": os.getcwd(),
                            "port": str(port), "appenddirname": "appendonlydir",
                            "appendfilename": "appendonly.aof", "dbfilename": "dump.rdb", "supervised": "no",
                            "unixsocketperm": "0", "save": "", "pidfile": "", "logfile": ""})
        self.config["enable-debug-command"] = enable_debug
        if config:
            self.config.update(config)
        # As in Redis, an empty requirepass means no password (CONFIG SET requirepass "" does the same).
        self.requirepass = requirepass or None
        if requirepass is not None:
            self.config["requirepass"] = requirepass
        self.dbs: list[dict[bytes, Any]] = [Database() for _ in range(NUM_DATABASES)]
        self.clients: dict[int, Client] = {}
        self.next_client_id = 1
        self.blocking: dict[tuple[int, bytes], list[Client]] = {}
        self.ready_keys: dict[tuple[int, bytes], None] = {}
        self.watchers: dict[tuple[int, bytes], dict[Client, None]] = {}
        # Lazy expiry (reference/keyspace.py): keys deleted so far, and per client id the watched keys
        # that had expired when WATCHed (EXPIRE-WATCH-1). Declared here: the compiled Core has no __dict__.
        self.expired_keys = 0
        self.watched_expired: dict[int, set[tuple[int, bytes]]] = {}
        self.active_expiry: Any = None  # reference.active_expiry.ActiveExpiry, once the server started
        self.active_expire_enabled = True  # DEBUG SET-ACTIVE-EXPIRE (DEBUG-2)
        # Keys lazy expiry found expired while clients were paused, out of their database until the
        # running command ends: (db, key, value, time) (EXPIRE-PAUSE-1, reference/keyspace.py).
        self.expired_aside: list[tuple[int, bytes, Any, int]] = []
        # Whether the running command only reads, from a client other than the master link: on a
        # replica its lookups delete no expired key (EXPIRE-REPLICA-1, reference/keyspace.py).
        self.running_reads = False
        # The command handlers for this dialect: ``handlers`` is ``reference.handlers.load_handlers``
        # (a module above this one), or a test's own table.
        self.handlers: dict[str, Handler] = handlers(self.dialect)
        # The dialect's switches the dispatcher reads, read once here.
        self.lookup, self.unknown_command_error = dialect_dispatch(self.dialect)
        self.legacy_containers = legacy_container_handlers(self.dialect, self.handlers)
        self.no_multi = _NO_MULTI_IN_VALKEY if self.dialect.multi_watch_are_no_multi else frozenset()
        self.run_inside_multi = table.RUN_INSIDE_MULTI - self.no_multi
        # spec/trace-format.md rule 2: 7.2+ read the clock once per command (per EXEC, per re-executed
        # blocked command); ``snapshot`` is that reading while a command runs, else None.
        self.snapshot_per_command = self.dialect.time_snapshot_per_command
        self.snapshot: int | None = None
        self.blocked_reexecution = self.dialect.blocked_reexecution  # STATS-DIALECT-7, read per command
        # BLOCK-DIALECT-1: 6.2 wakes nobody when a key is deleted or overwritten.
        self.signal_deletions = self.dialect.deleted_key_wakes_readgroup
        self.auth_first = self.dialect.auth_before_lookup  # DISPATCH-DIALECT-2
        # 6.2: DEBUG is always allowed (enable-debug-command came with 7.0).
        self.debug_needs_enabling = self.dialect.debug_needs_enabling
        # argv[0] as sent -> the plain command it names, for those already seen.
        self.fast_commands: dict[bytes, FastCommand] = {}
        self.config_ints: dict[str, int] = {}  # parsed integer settings; cleared by CONFIG SET
        # The clock's reading (ms); the clock's own method: one call less per reading.
        self.now_ms: Callable[[], int] = self.clock.now_ms
        self.observer: Observer | None = None
        self.executing = False  # inside execute(), for observers: replies served now follow the command
        self.fault_refused = False  # for observers: an injected fault rejected the command just dispatched
        # Called with (seconds, callback) to arm a timeout timer; returns a
        # handle with cancel(). None: timeouts are only checked when asked.
        self.timer_factory: Callable[[float, Callable[[], None]], Any] | None = None
        self.error_faults: list[ErrorFault] = []
        # CLIENT PAUSE: until when (ms on the server clock, 0: not paused), whether every command
        # waits or only writes, and the clients with commands held back.
        self.pause_until = 0
        self.pause_all = False
        self.postponed: dict[Client, None] = {}
        self.started = time.time()
        self.run_id = os.urandom(20).hex()
        self.errno = 0  # the C errno of 7.0's main thread, which one XADD error shows (XADD-14)
        # CLIENT TRACKING (reference/tracking.py)
        self.pubsub = Registry()  # reference/pubsub.py
        self.notify_events: frozenset[str] = frozenset()  # notify-keyspace-events' classes (reference/notify.py)
        self.tracking = Tracking(self.clients, self.dialect.tracking_redirect_before_reply,
                                 self.dialect.tracking_overlap_then_ok)
        self.server: Any = None  # the reference.server.ReferenceServer serving this core, if any
        self.dirty = 0  # STATS-4: changes since the last save (no save ever happens here)
        self.persistence: Any = None  # reference.persistence.Persistence, once a file is saved or loaded
        self.scripting: Any = None  # reference.scripting.Scripting, once a script or library is loaded
        # reference.propagation.Propagator while an AOF is kept: told before and after every command
        self.propagation: Propagator | None = None
        self.replication: Any = None  # reference.replication.Replication, once the server started
        self.repl_offset = 0  # master_repl_offset, kept by reference.replication (WAIT-2)
        self.woff_after_propagation_only = self.dialect.woff_after_propagation_only  # WAIT-DIALECT-1
        # reference.replication's NOREPLICAS/READONLY check (REPL-10, REPL-11): an error text or None
        self.write_gate: Callable[[Client, CommandSpec], str | None] | None = None
        self.reset_stats()

    def read_snapshot(self) -> int:
        """The clock reading of a command in a dialect that reads it once per command (7.2+)."""
        assert self.snapshot is not None
        return self.snapshot

    def reset_stats(self) -> None:
        self.stat_commands = 0
        self.stat_connections = 0
        self.stat_rejected_connections = 0
        self.stat_errors = 0
        # STATS-2: per command (its stats name) [calls, usec, rejected_calls, failed_calls]
        self.command_stats: dict[str, list[int]] = {}
        self.error_codes: dict[str, int] = {}  # STATS-1: errorstats, per error code
        self.failing = False  # STATS-9: the running command sent another client an error

    def count_error(self, text: str) -> None:
        """``afterErrorReply``: one more error reply, counted under its code (STATS-1): the first word
        of the line when a space ends it within its first 32 bytes (the ``-`` included), else ERR."""
        self.stat_errors += 1
        line = "-" + text
        space = line.find(" ", 0, 32)
        code = line[1:space] if space > 0 else "ERR"
        self.error_codes[code] = self.error_codes.get(code, 0) + 1

    def command_stat(self, spec: CommandSpec) -> list[int]:
        """The counters of ``spec`` (STATS-2): 6.2 counts a subcommand under its container."""
        name = spec.fullname if self.dialect.subcommand_table or spec.container is None else spec.container
        found = self.command_stats.get(name)
        if found is None:
            found = self.command_stats[name] = [0, 0, 0, 0]
        return found

    # -- clients -------------------------------------------------------------------------
    def connect(self, conn: Connection | None, addr: str = "127.0.0.1:0", laddr: str = "127.0.0.1:0",
                fd: int = -1) -> Client:
        """A new connection: RESP2, database 0, the next client ID (CONN-2)."""
        c = Client(self.next_client_id, conn, self.requirepass is None, addr, laddr, fd)
        c.ctx.core = self
        self.next_client_id += 1
        self.clients[c.id] = c
        self.stat_connections += 1
        self.errno = EAGAIN  # the accept loop ends at the accept4() that fails with EAGAIN (XADD-14)
        if self.observer is not None:
            self.observer.connected(c)
        return c

    def disconnect(self, c: Client, by: str = "client") -> None:
        """The connection is gone: forget its block, watches and transaction (CONN-1, BLOCK-10)."""
        if self.clients.pop(c.id, None) is None:
            return
        self.postponed.pop(c, None)
        if c.blocked is not None:
            self.unblock(c)
        self.unwatch_all(c)
        self.tracking.disable(c)
        drop_client(self.pubsub, c)  # PUBSUB-CTX-3
        if self.replication is not None:
            self.replication.client_gone(c)
        c.in_multi = False
        c.multi_queue = []
        if self.observer is not None:
            self.observer.closed(c, by)

    def max_bulk(self) -> int:
        return self.int_setting("proto-max-bulk-len")

    def int_setting(self, name: str) -> int:
        """An integer setting, parsed once per CONFIG SET."""
        try:
            return self.config_ints[name]
        except KeyError:
            value = self.config_ints[name] = int(self.config[name])
            return value

    # -- dispatch ------------------------------------------------------------------------
    def execute(self, c: Client, argv: list[bytes]) -> Result:
        """Run one command of client ``c``; its reply (None when it blocked)."""
        if self.snapshot_per_command:
            return self._execute_with_snapshot(c, argv)
        return self.execute_plain(c, argv)

    def execute_plain(self, c: Client, argv: list[bytes]) -> Result:
        """:meth:`execute` in a dialect that reads the clock afresh each time (``snapshot_per_command``
        False): what the connections call then, one call less."""
        self.stat_commands += 1
        offset = self.repl_offset
        if self.observer is not None:
            observed = self._execute_observed(c, argv)
            if self.repl_offset != offset or not self.woff_after_propagation_only:  # WAIT-2, WAIT-DIALECT-1
                c.woff = self.repl_offset
            return observed
        fast = self.fast_commands.get(argv[0])
        if fast is not None and c.authenticated and not c.in_multi and not self.error_faults \
                and not self.pause_until and c.pubsub is None and (self.write_gate is None or c.kind == "master"):
            arity = fast.arity
            if (arity == len(argv)) if arity > 0 else (len(argv) >= -arity):
                # The common case, checked as _dispatch does: a known plain command, well formed,
                # from an authenticated client outside MULTI, with no injected fault or pause.
                name = c.last_cmd = fast.name
                result: Result = self._call(c, argv, fast.spec, True, fast.handler, name, name, fast.readonly)
            else:
                result = self._dispatch(c, argv)
        else:
            result = self._dispatch(c, argv)
        if self.repl_offset != offset or not self.woff_after_propagation_only:  # WAIT-2, WAIT-DIALECT-1
            c.woff = self.repl_offset
        if self.ready_keys:
            self.handle_ready()
        if c.tracking or self.tracking.owed:
            return self.tracking.finish(c, result)  # CLIENT CACHING lapses; invalidations join the reply
        return result

    def _execute_with_snapshot(self, c: Client, argv: list[bytes]) -> Result:
        """:meth:`execute` in a dialect with one clock reading per command (spec/trace-format.md rule 2)."""
        if self.observer is not None:
            return self.execute_plain(c, argv)  # _execute_observed takes the snapshot
        self.snapshot = self.now_ms()
        try:
            return self.execute_plain(c, argv)
        finally:
            self.snapshot = None

    def _execute_observed(self, c: Client, argv: list[bytes]) -> Result:
        assert self.observer is not None
        t0 = time.time_ns() // 1000
        self.executing = True
        self.fault_refused = False
        try:
            if self.snapshot_per_command:
                self.snapshot = self.now_ms()
            result = self._dispatch(c, argv)
            if self.ready_keys:
                self.handle_ready()
            if c.tracking or self.tracking.owed:
                # CLIENT CACHING lapses; invalidations join the reply, and the observer sees them with it
                result = self.tracking.finish(c, result)
        finally:
            self.executing = False
            self.snapshot = None
        if isinstance(result, Postponed):
            return result
        if self.fault_refused:
            assert type(result) is Error
            self.observer.refused(c, argv, result, t0)
        else:
            self.observer.executed(c, argv, result, t0)
        return result

    def _dispatch(self, c: Client, argv: list[bytes]) -> Result:
        spec = self.lookup(argv)
        if self.auth_first and not c.authenticated and self.requirepass is not None and (
                spec is None or "no_auth" not in spec.flags):
            # DISPATCH-DIALECT-2: Valkey refuses an unauthenticated client before the lookup and
            # arity checks; 6.2 and 7.0 after them (DISPATCH-8, below).
            c.last_cmd = "NULL" if spec is None else spec.fullname
            return self.reject(c, NOAUTH, spec)
        if spec is None:  # DISPATCH-1
            c.last_cmd = "NULL"
            return self.reject(c, self.unknown_command_error(argv), None)
        name = c.last_cmd = spec.fullname  # CONN-5: before the arity check and the queuing
        arity = spec.arity
        if (arity != len(argv)) if arity > 0 else (len(argv) < -arity):  # DISPATCH-2
            return self.reject(c, table.arity_error(spec), spec)
        if name == "debug" and self.debug_needs_enabling and self.config["enable-debug-command"] != "yes" and not (
                self.config["enable-debug-command"] == "local" and c.addr.startswith(("127.", "[::1]"))):
            return self.reject(c, DEBUG_NOT_ALLOWED, spec)
        if not c.authenticated and self.requirepass is not None and "no_auth" not in spec.flags:
            return self.reject(c, NOAUTH, spec)
        if self.error_faults and not name.startswith("xspec."):
            text = self.injected_error(name)
            if text is not None:
                self.fault_refused = True
                return self.reject(c, text, spec)
        if self.write_gate is not None:  # REPL-11, REPL-10: before the pause and the queuing
            text = self.write_gate(c, spec)
            if text is not None:
                return self.reject(c, text, spec)
        if self.pause_until and not name.startswith("xspec.") and self.paused_for(c, spec):
            self.postponed[c] = None
            return POSTPONED
        if c.pubsub is not None and c.proto == 2 and name not in SUBSCRIBER_COMMANDS:  # PUBSUB-CTX-1
            return self.reject(c, subscriber_context_error(name, self.lookup([b"ssubscribe", b"x"]) is not None), spec)
        if c.in_multi and name not in self.run_inside_multi:
            if name in self.no_multi:  # MULTI-DIALECT-1
                if not self.dialect.no_multi_error_names_command:  # MULTI-DIALECT-2
                    return self.reject(c, NOT_ALLOWED_IN_MULTI, spec)
                return self.reject(c, command_not_allowed_in_multi(name), spec)
            if "no_multi" in spec.flags:  # DISPATCH-3
                return self.reject(c, NOT_ALLOWED_IN_MULTI, spec)
            if not (c.multi_error or c.dirty_cas):  # DISPATCH-4
                c.multi_queue.append(argv)
            return QUEUED
        if (not spec.subcommands and spec.container is None and name != "debug"
                and len(self.fast_commands) < 1024 and len(argv[0]) <= 32):
            handler = self.handlers.get(name)
            if handler is not None:
                self.fast_commands[argv[0]] = FastCommand(spec, handler)
        return self.run(c, argv, spec, True)  # DISPATCH-6

    # -- CLIENT PAUSE ----------------------------------------------------------------------
    def paused_for(self, c: Client, spec: CommandSpec) -> bool:
        """Whether a pause holds this command back (``blockPostponeClient``): every command
        under ALL; under WRITE the writes, and an EXEC whose queue holds one."""
        if self.clock.now_ms() >= self.pause_until:  # not a reading of the command (--checked)
            self.unpause()
            return False
        if self.pause_all:
            return True
        if spec.fullname == "exec":
            return any("write" in (self.lookup(argv) or spec).flags for argv in c.multi_queue)
        return "write" in spec.flags

    def pause(self, until_ms: int, everything: bool) -> None:
        if until_ms > self.pause_until:
            self.pause_until = until_ms
        self.pause_all = self.pause_all or everything
        if not self.clock.virtual and self.timer_factory is not None:
            self.timer_factory(max(until_ms - self.clock.now_ms(), 0) / 1000, self.check_pause)

    def check_pause(self) -> None:
        """End the pause if the clock has reached its end (timers, XSPEC.CLOCK); else wait again.

        The loop's timers run on the monotonic clock and may fire a millisecond before the
        server clock reaches the end, so a timer that comes early is set again for the rest,
        or the paused clients would wait for ever.
        """
        if not self.pause_until:
            return
        left = self.pause_until - self.clock.now_ms()  # not a reading of any command (--checked)
        if left <= 0:
            self.unpause()
        elif not self.clock.virtual and self.timer_factory is not None:
            self.timer_factory(left / 1000, self.check_pause)

    def unpause(self) -> None:
        self.pause_until = 0
        self.pause_all = False
        waiting, self.postponed = self.postponed, {}
        for c in waiting:
            if c.conn is not None and c.id in self.clients:
                c.conn.resume()

    def run(self, c: Client, argv: list[bytes], spec: CommandSpec, can_block: bool,
            handler: Handler | None = None) -> RunResult:
        """Run a looked-up command's handler (alone, or queued inside EXEC with ``can_block`` False)."""
        if handler is None:
            handler = self.handler_for(spec)
        if handler is None:
            r: Any = Error(f"ERR xspec serve: '{spec.fullname}' is not available on this server")
            self.count_error(r.text)
            stat = self.command_stat(spec)
            stat[0] += 1
            stat[3] += 1
            return r  # type: ignore[no-any-return]
        return self._call(c, argv, spec, can_block, handler, spec.container or spec.name,
                          spec.fullname if spec.container is None else "", "readonly" in spec.flags)

    def _call(self, c: Client, argv: list[bytes], spec: CommandSpec, can_block: bool, handler: Handler,
              propagated_name: str, stat_name: str, readonly: bool) -> RunResult:
        """``call()``: :meth:`run` with what it reads off ``spec`` given: the name the propagator knows
        the command by (its container's for a subcommand), the name its counters go under ("" to look it
        up: a subcommand's depends on the dialect), whether it is flagged ``readonly``."""
        ctx = c.ctx
        ctx.argv = argv
        dbid = c.db
        db: Any = self.dbs[dbid]
        ctx.db = db
        ctx.can_block = can_block
        ctx.spec = spec
        started = _NOW_NS()
        propagation = self.propagation
        dirty = self.dirty
        token: Any = None
        if propagation is not None:
            token = propagation.before(propagated_name, db, argv)
        if db.expires or c.watched:
            self.running_reads = readonly and c.kind != "master"  # EXPIRE-REPLICA-1
            expire_keys(self, c, spec, argv, ctx.now_ms)  # EXPIRE-LAZY-2, EXPIRE-WATCH-1
        try:
            r = handler(ctx)
        except ReplyError as e:
            r = Error(e.text)
        except Exception as failure:  # its own name: compiled, ``e`` above holds only a ReplyError
            r = internal_error(spec, argv, failure)
        if self.expired_aside:
            restore_aside(self)  # EXPIRE-PAUSE-1: the keys set aside are stored again
        if propagation is not None:
            # call(): a command whose changes were undone by a load (DEBUG LOADAOF zeroes dirty) changed nothing
            propagation.after(propagated_name, dbid, self.dbs[dbid], argv, r, token, self.dirty > dirty)
        # after the command: CONFIG RESETSTAT and INFO count themselves then
        known = self.command_stats.get(stat_name) if stat_name else None
        stat = known if known is not None else self.command_stat(spec)
        # STATS-2: every call; STATS-DIALECT-7: 7.2+ counts one that blocks when it is unblocked
        if r is not _BLOCKED or not self.blocked_reexecution:
            stat[0] += 1
        stat[1] += (_NOW_NS() - started) // 1000
        if type(r) is _ERROR:  # STATS-2: the command's own error reply makes it a failed call
            self.count_error(r.text)
            stat[3] += 1
        elif self.failing:  # STATS-9
            stat[3] += 1
        self.failing = False
        if c.tracking and readonly:
            self.tracking.remember(c, spec, argv)  # call()'s trackingRememberKeys, whatever the reply
        if r is _BLOCKED:
            return None
        return r  # type: ignore[return-value]

    def handler_for(self, spec: CommandSpec) -> Handler | None:
        """The handler of a looked-up command: 6.2's XGROUP and XINFO check their subcommand themselves."""
        if spec.container is not None and self.legacy_containers:
            found = self.legacy_containers.get(spec.container)
            if found is not None:
                return found
        return self.handlers.get(spec.fullname)

    def reject(self, c: Client, text: str, spec: CommandSpec | None) -> Reply:
        """``rejectCommand``: the error; inside MULTI it dooms the transaction, for EXEC it discards it."""
        if spec is not None:
            self.command_stat(spec)[2] += 1  # STATS-2: rejected_calls
        if spec is not None and spec.fullname == "exec":  # EXEC-6
            self.discard_transaction(c)
            self.count_error(exec_aborted(text))
            return Error(exec_aborted(text))
        if c.in_multi:  # DISPATCH-5
            c.multi_error = True
        self.count_error(text)  # STATS-1
        return Error(text)

    def injected_error(self, name: str) -> str | None:
        """The error an active XSPEC.FAULT ERROR gives this command, if any (and count it)."""
        for fault in self.error_faults:
            if fault.command is not None and fault.command != name and not name.startswith(fault.command + "|"):
                continue
            if fault.count > 0:
                fault.count -= 1
                if fault.count == 0:
                    self.error_faults.remove(fault)
            return fault.text
        return None

    # -- transactions ---------------------------------------------------------------------
    def discard_transaction(self, c: Client) -> None:
        c.in_multi = False
        c.multi_queue = []
        c.multi_error = False
        self.unwatch_all(c)

    def watch(self, c: Client, key: bytes) -> None:
        k = (c.db, key)
        if k not in c.watched:
            c.watched[k] = None
            self.watchers.setdefault(k, {})[c] = None

    def unwatch_all(self, c: Client) -> None:
        for k in c.watched:
            w = self.watchers.get(k)
            if w is not None:
                w.pop(c, None)
                if not w:
                    del self.watchers[k]
        c.watched.clear()
        c.dirty_cas = False

    def touch(self, db: int, key: bytes) -> None:
        """``signalModifiedKey``: every client watching the key will fail its EXEC."""
        w = self.watchers.get((db, key))
        if w:
            for c in w:
                c.dirty_cas = True

    def touch_db(self, emptied: int, replaced_with: int | None) -> None:
        """``touchAllWatchedKeysInDb``: watched keys of ``emptied`` that exist there or in its replacement."""
        old = self.dbs[emptied]
        new = self.dbs[replaced_with] if replaced_with is not None else {}
        for (db, key), clients in self.watchers.items():
            if db == emptied and (key in old or key in new):
                for c in clients:
                    c.dirty_cas = True

    # -- blocking --------------------------------------------------------------------------
    def block(self, c: Client, keys: list[bytes], timeout_ms: int,
              retry: Callable[[Any, bytes], Reply | Encoded | None],
              timeout_reply: Reply, argv: list[bytes], read_at: int | None = None,
              kind: str = "stream") -> None:
        if c.blocked is not None:  # BLOCK-DIALECT-2: a re-executed command blocks again at the back
            self.unblock(c)
        keys = list(dict.fromkeys(keys))
        if timeout_ms == 0:
            deadline = None
        else:
            if read_at is None:
                read_at = self.now_ms() if self.snapshot is None else self.snapshot
            deadline = read_at + timeout_ms
        b = BlockState(keys, c.db, deadline, retry, timeout_reply, argv, kind)
        c.blocked = b
        for k in keys:
            self.blocking.setdefault((c.db, k), []).append(c)
        if deadline is not None and not self.clock.virtual and self.timer_factory is not None:
            self._arm_timer(c, b)

    def _arm_timer(self, c: Client, b: BlockState) -> None:
        assert b.deadline is not None
        delay = (b.deadline + 1 - self.clock.now_ms()) / 1000  # the timer's, not the command's reading

        def fire() -> None:
            if c.blocked is not b:
                return
            if self.now_ms() > b.deadline:  # type: ignore[operator]
                self.time_out(c)
            else:
                self._arm_timer(c, b)

        assert self.timer_factory is not None
        b.timer = self.timer_factory(max(delay, 0.0), fire)

    def unblock(self, c: Client) -> None:
        b = c.blocked
        assert b is not None
        for k in b.keys:
            q = self.blocking.get((b.db, k))
            if q is not None:
                q.remove(c)
                if not q:
                    del self.blocking[(b.db, k)]
        if b.timer is not None:
            b.timer.cancel()
        c.blocked = None

    def signal_ready(self, db: int, key: bytes, kind: str = "stream") -> None:
        """``signalKeyAsReady``: queue the key once, if a client is blocked on it and some client
        (on any key) waits for a value of type ``kind`` (BLIST-9)."""
        if (db, key) in self.blocking and any(
                c.blocked is not None and c.blocked.kind == kind for c in self.clients.values()):
            self.ready_keys[(db, key)] = None

    def _tried(self, k: tuple[int, bytes], waiting: list[Client]) -> list[Client]:
        """The blocked clients the handling of key ``k`` tries, in order (BLIST-9): 7.2+ every one
        blocked now; 7.0 and 6.2 those waiting for the key's type, then, when it holds no stream,
        the stream readers (BLOCK-5)."""
        if self.dialect.blocked_reexecution:
            return list(waiting)
        value = self.dbs[k[0]].get(k[1])
        kinds = [(c, c.blocked.kind if c.blocked is not None else "") for c in waiting]
        if is_stream(value):
            return [c for c, kind in kinds if kind == "stream"]
        held = value_kind(value)
        own = [c for c, kind in kinds if kind == held] if held in ("list", "zset") else []  # BZSET-2
        return own + [c for c, kind in kinds if kind == "stream"]

    def handle_ready(self) -> None:
        """``handleClientsBlockedOnKeys``: retry blocked clients, FIFO per key, keys in signal order
        (DISPATCH-7: after the command, after a whole EXEC)."""
        while self.ready_keys:
            for k in list(self.ready_keys):
                del self.ready_keys[k]
                waiting = self.blocking.get(k)
                if not waiting:
                    continue
                for c in self._tried(k, waiting):
                    b = c.blocked
                    if b is None or c not in self.blocking.get(k, ()):
                        continue
                    if self.snapshot_per_command:  # BLOCK-DIALECT-2: a re-executed command reads the clock anew
                        self.snapshot = self.now_ms()
                    ctx = c.ctx
                    ctx.argv = b.argv
                    ctx.db = self.dbs[b.db]
                    ctx.can_block = True
                    propagation = self.propagation
                    dirty = self.dirty
                    name = ""
                    token: Any = None
                    if propagation is not None:
                        name = c_string(b.argv[0]).decode("latin-1").lower()
                        token = propagation.before(name, ctx.db, b.argv)
                    try:
                        r = b.retry(ctx, k[1])
                    except ReplyError as e:
                        r = Error(e.text)
                    if propagation is not None:
                        propagation.after(name, b.db, self.dbs[b.db], b.argv, r, token,
                                          r is not None and self.dirty > dirty)
                    if self.expired_aside:
                        restore_aside(self)  # EXPIRE-PAUSE-1
                    if r is None:
                        continue
                    self.unblock(c)
                    self._deliver(c, r, timed_out=False)

    def _deliver(self, c: Client, r: Reply | Encoded, timed_out: bool) -> None:
        if self.dialect.blocked_reexecution and c.last_cmd != "NULL":  # STATS-DIALECT-7: the blocked call counts now
            self.command_stats.setdefault(c.last_cmd, [0, 0, 0, 0])[0] += 1
        if type(r) is Error:
            self.count_error(r.text)  # STATS-1
            if c.last_cmd != "NULL" and self.dialect.unblock_error_fails_call:  # STATS-3; STATS-DIALECT-1
                self.command_stats.setdefault(c.last_cmd, [0, 0, 0, 0])[3] += 1  # the blocked command
        if self.observer is not None:
            self.observer.served(c, r, timed_out)
        if c.conn is not None:
            c.conn.deliver(r)

    def time_out(self, c: Client, by_clock: bool = True) -> None:
        """The blocked client's deadline passed (or CLIENT UNBLOCK): it gets its timeout reply."""
        b = c.blocked
        assert b is not None
        self.unblock(c)
        if by_clock and not any(o.blocked is not None and o.blocked.deadline is not None
                                for o in self.clients.values()):
            # XADD-14: the walk over the timeout table found no later deadline and ran off it.
            self.errno = 0
        self._deliver(c, b.timeout_reply, timed_out=True)

    def unblock_by_client(self, c: Client, error: str | None) -> None:
        """CLIENT UNBLOCK: the blocked client gets ``error`` or its timeout reply, served now; what each
        server counts for it (STATS-9, STATS-DIALECT-7)."""
        b = c.blocked
        assert b is not None
        self.unblock(c)
        stat = self.command_stats.setdefault(c.last_cmd, [0, 0, 0, 0])
        if self.dialect.blocked_reexecution:
            stat[0] += 1
        how = self.dialect.client_unblock_counts
        if how == "failed" or (error is not None and how == "failed-on-error"):
            stat[3] += 1
        elif error is not None and how == "rejected-on-error":
            stat[2] += 1
        reply: Reply | Encoded = b.timeout_reply
        if error is not None:
            reply = Error(error)
            self.count_error(error)
            self.failing = True
        if self.observer is not None:
            self.observer.served(c, reply, False)
        if c.conn is not None:
            c.conn.deliver(reply)

    def expire_timeouts(self) -> None:
        """Time out every blocked client whose deadline the clock has passed, earliest first (BLOCK-8)."""
        now = self.now_ms()
        due = sorted((c.blocked.deadline, c.id) for c in self.clients.values()
                     if c.blocked is not None and c.blocked.deadline is not None and c.blocked.deadline < now)
        for _, cid in due:
            c = self.clients.get(cid)
            if c is not None and c.blocked is not None:
                self.time_out(c)

    # -- keyspace-wide changes (FLUSH*, SWAPDB, restarts) -----------------------------------------
    def signal_streams_lost(self, emptied: int, replaced_with: int | None) -> None:
        """``scanDatabaseForDeletedKeys``: blocked-on stream keys that stop being streams are signalled
        (FLUSH-3, SWAPDB-6; in the order of this server's walk, one of those SWAPDB-8 allows)."""
        if not self.signal_deletions:  # BLOCK-DIALECT-1: 6.2 has no such scan
            return
        old = self.dbs[emptied]
        new = self.dbs[replaced_with] if replaced_with is not None else {}
        for db, key in list(self.blocking):
            if db != emptied or not is_stream(old.get(key)):
                continue
            if not is_stream(new.get(key)):
                self.signal_ready(db, key)

    def signal_streams_present(self, dbid: int) -> None:
        """``scanDatabaseForReadyKeys``: every blocked-on key that holds a stream is ready (SWAPDB-7)."""
        for db, key in list(self.blocking):
            kind = value_kind(self.dbs[db].get(key))
            if db == dbid and kind in ("stream", "list", "zset"):  # lists and sorted sets too (BLIST-1, BZSET-2)
                self.signal_ready(db, key, kind)

    def flush_db(self, dbid: int) -> None:
        self.signal_streams_lost(dbid, None)  # FLUSH-3
        self.touch_db(dbid, None)  # FLUSH-4
        self.dbs[dbid].clear()

    def swap_dbs(self, first: int, second: int) -> None:
        self.touch_db(first, second)  # SWAPDB-5
        self.touch_db(second, first)
        self.signal_streams_lost(first, second)
        self.signal_streams_lost(second, first)
        self.dbs[first], self.dbs[second] = self.dbs[second], self.dbs[first]  # SWAPDB-3
        self.signal_streams_present(first)
        self.signal_streams_present(second)


def internal_error(spec: CommandSpec, argv: list[bytes], e: Exception) -> Reply:
    """A handler raised: log it and answer an error, so a bug takes down neither connection nor server."""
    log.error("internal error running %r", argv[:8], exc_info=e)
    return Error(f"ERR xspec serve internal error in '{spec.fullname}': {type(e).__name__}")


def is_stream(value: Any) -> bool:
    """Keys hold ``bytes`` (strings), lists and sets (whose classes name their ``kind``) or the
    stream module's stream objects."""
    return value is not None and type(value) is not bytes and getattr(value, "kind", "stream") == "stream"


def value_kind(value: Any) -> str | None:
    """The type name of a stored value (TYPE's word), None for a missing key."""
    if value is None:
        return None
    if type(value) is bytes:
        return "string"
    return getattr(value, "kind", "stream")


def legacy_container_handlers(dialect: Dialect, handlers: dict[str, Handler]) -> dict[str, Handler]:
    """6.2's XGROUP and XINFO: the stream module's container handlers (``xgroup``, ``xinfo``),
    which check the subcommand and its arguments as 6.2 does, run every subcommand."""
    if dialect.subcommand_table:
        return {}
    return {name: handlers[name] for name in ("xgroup", "xinfo") if name in handlers}
