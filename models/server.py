"""The model's server: command dispatch, transactions, blocking and propagation.

:class:`Server` is the state machine. :meth:`Server.execute` runs one command
of one client the way Redis 7.0's ``processCommand`` and ``call`` do (rules
DISPATCH-*): look the command up, check its arity, queue it inside MULTI,
otherwise run its handler, then serve the clients blocked on keys the command
made ready, then hand what it propagated to replicas to the caller.

Handlers live in one module per command family and register with
:func:`command`. A handler receives a :class:`Call` and returns a semantic
reply, or :data:`BLOCKED` after calling :meth:`Call.block`. It reports an
error reply by raising :class:`CommandError`.

PYTEST_DONT_REWRITE: the seeded bugs of models/mutants.py recompile this module's functions from
their source and compare bytecode; pytest would otherwise rewrite its asserts wherever xspec's
pytest plugin is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from errno import EAGAIN
from typing import Any, ClassVar, TypeVar

from xspec.models.clock import Clock, Duration, Instant, ManualClock
from xspec.models.state import (
    BlockState,
    Client,
    Keyspace,
    ListValue,
    Stream,
    Value,
    ZSetValue,
    freeze_value,
    value_size,
)
from xspec.models.stats import Stats, count_call, count_rejection, count_served, count_timeout
from xspec.spec import commands as table
from xspec.spec.dialect import REDIS_70, Dialect
from xspec.spec.errors import DEBUG_NOT_ALLOWED, NOAUTH, NOT_ALLOWED_IN_MULTI, exec_aborted
from xspec.spec.limits import NUM_DATABASES
from xspec.spec.pubsub import SUBSCRIBER_COMMANDS, subscriber_context_error
from xspec.spec.resp import QUEUED as _QUEUED
from xspec.spec.resp import Bulk, Error, Int, NullArray, Reply, Simple, for_protocol


class CommandError(Exception):
    """Raised by a handler to reply with an error (the full text, code included)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _Blocked:
    def __repr__(self) -> str:
        return "BLOCKED"


BLOCKED = _Blocked()


@dataclass(frozen=True)
class PreRendered:
    """A reply its handler already rendered for the client's protocol (EXEC); sent as is."""

    reply: Reply


HandlerResult = Reply | _Blocked | PreRendered
V = TypeVar("V", bound=Value)
Handler = Callable[["Call"], HandlerResult]
HANDLERS: dict[str, Handler] = {}
# CLIENT TRACKING's work at a key's modification, after a read-only command and at a command's end:
# installed by models/tracking.py, and only called once a client turned tracking on.
TRACKING_HOOKS: dict[str, Callable[..., Any]] = {}
# The deployment's persistence steps, for a server on its own too (models/replication.py sets "step").
PERSISTENCE_HOOKS: dict[str, Callable[[Server, str], bool]] = {}
# FLUSHALL's save and child kill, once the data is gone (FLUSH-6; models/replication.py installs it).
FLUSHALL_SAVE: list[Callable[[Server], None]] = []

# Work after every command that ran (a lone server's AOF: models/debug_persistence.py).
AFTER_COMMAND: list[Callable[..., None]] = []


def command(fullname: str) -> Callable[[Handler], Handler]:
    """Register the handler of ``fullname`` (``xadd``, ``xgroup|create``)."""

    def register(fn: Handler) -> Handler:
        if fullname in HANDLERS:
            raise ValueError(f"two handlers for {fullname}")
        HANDLERS[fullname] = fn
        return fn

    return register


@dataclass(slots=True)
class Outcome:
    """What one :meth:`Server.execute` produced.

    ``reply`` is rendered for the calling client's protocol, or None when the
    client blocked or the command produced no reply. ``served`` lists replies
    that other (blocked) clients received because of this command, in the
    order Redis sends them. ``propagated`` is what goes to replicas and the
    AOF, SELECT and MULTI/EXEC wrapping included.
    """

    reply: Reply | None
    blocked: bool = False
    served: list[tuple[int, Reply]] = field(default_factory=list)
    propagated: list[list[bytes | int]] = field(default_factory=list)
    closed: bool = False
    # Messages sent to clients without a request of their own (Pub/Sub), in the order sent,
    # each rendered for its client's protocol (models/pubsub.py).
    pushes: list[tuple[int, Reply]] = field(default_factory=list)


class Call:
    """The context of one command execution, passed to its handler."""

    __slots__ = ("server", "client", "argv", "spec", "db", "ops", "can_block", "in_exec", "served")

    def __init__(self, server: Server, client: Client, argv: list[bytes], spec: table.CommandSpec,
                 ops: list[tuple[int, list[bytes | int]]], *, in_exec: bool = False) -> None:
        if server.expired_aside:  # EXPIRE-PAUSE-1: the previous command of an EXEC or a script has ended
            server.restore_aside()
        self.server = server
        self.client = client
        self.argv = argv
        self.spec = spec
        self.db: dict[bytes, Value] = server.dbs[client.db]
        self.ops = ops
        self.in_exec = in_exec
        # XREAD-12: inside MULTI/EXEC a blocking command answers at once.
        self.can_block = not in_exec
        # Replies this command sends other clients (CLIENT UNBLOCK), rendered for their protocols.
        self.served: list[tuple[int, Reply]] | None = None

    # -- time ---------------------------------------------------------------
    def now(self) -> Instant:
        """One reading of the server clock (see models/clock.py)."""
        return self.server.now()

    # -- keys -----------------------------------------------------------------
    def lookup(self, key: bytes) -> Value | None:
        return self.db.get(key)

    def expire_if_needed(self, key: bytes) -> bool:
        """``expireIfNeeded`` on the command's database: delete ``key`` if its time has passed (EXPIRE-LAZY-1)."""
        return self.server.expire_if_needed(self.client.db, key, self.ops, reader=self.reader())

    def reader(self) -> bool:
        """The command only reads, for a client other than the master link (EXPIRE-REPLICA-1)."""
        return "readonly" in self.spec.flags and self.client.id >= 0

    def expire_keys(self) -> None:
        """Lazy expiry of every key the command names, in order, before its handler runs (EXPIRE-LAZY-2).

        The families whose handlers look their keys up themselves (strings, hashes, the expiry
        commands: ``SELF_EXPIRING``) are left to do it at the point Redis does.
        """
        name = self.spec.fullname
        if name == "watch" or name == "exec":
            self.server.watch_expiry(self.client, name == "exec", self.argv)  # EXPIRE-WATCH-1
            return
        expires = getattr(self.db, "expires", None)
        if not expires or name in SELF_EXPIRING:
            return
        for key in table.command_keys(self.spec, self.argv):
            if key in expires:
                self.server.expire_if_needed(self.client.db, key, self.ops, reader=self.reader())

    def typed(self, key: bytes, kind: type[V]) -> V | None:
        """The value at ``key`` when it is a ``kind``, None if missing; WRONGTYPE for another type."""
        v = self.db.get(key)
        if v is None or isinstance(v, kind):
            return v
        raise CommandError(table.WRONGTYPE)

    def size(self, key: bytes, kind: type[Value]) -> int:
        """How many elements the ``kind`` value at ``key`` holds, 0 if missing; WRONGTYPE for another type."""
        v = self.typed(key, kind)
        return 0 if v is None else value_size(v)

    def stream(self, key: bytes) -> Stream | None:
        """The stream at ``key``, None if missing; WRONGTYPE for another type."""
        v = self.db.get(key)
        if v is None or isinstance(v, Stream):
            return v
        raise CommandError(table.WRONGTYPE)

    def modified(self, key: bytes) -> None:
        """``signalModifiedKey``: WATCHers of the key will fail their EXEC."""
        self.server.touch_watched(self.client.db, key)

    def ready(self, key: bytes, kind: str = "stream") -> None:
        """``signalKeyAsReady``: clients blocked on the key get a chance to be served.

        ``kind`` is the type of the value that made the key ready (``stream`` or ``list``).
        """
        self.server.signal_ready(self.client.db, key, kind)

    def deleted(self, key: bytes, old: Value | None = None) -> None:
        """A key was removed or overwritten (DEL, SET, FLUSH...): watchers and blocked readers learn.

        ``old`` is the value the key held, when the caller has it: Redis signals
        blocked readers only when that value was a stream (``signalDeletedKeyAsReady``).
        """
        self.server.touch_watched(self.client.db, key)
        if old is None or isinstance(old, Stream):
            self.server.signal_deleted(self.client.db, key)

    def changed(self, n: int = 1) -> None:
        """``server.dirty += n``: the command changed the data set ``n`` times (STATS-4)."""
        self.server.stats.dirty += n

    # -- replication ------------------------------------------------------------
    def propagate(self, argv: list[bytes | int]) -> None:
        """``alsoPropagate``: send ``argv`` to replicas and the AOF after this command.

        Integers (counts, and times through ``Instant.propagated_ms``) are
        kept as values and rendered by :func:`render_op`, so a symbolic time
        never has to be made concrete just to be propagated.
        """
        self.ops.append((self.client.db, argv))

    def propagate_verbatim(self) -> None:
        argv: list[bytes | int] = list(self.argv)
        self.propagate(argv)

    # -- blocking -------------------------------------------------------------------
    def block(self, keys: list[bytes], timeout_ms: Duration, payload: Any,
              serve: Callable[..., Reply | None], timeout_reply: Reply | None = None,
              *, read_at: Instant | None = None, kind: str = "stream") -> _Blocked:
        """Block the client on ``keys`` (FIFO per key); ``timeout_ms`` 0 blocks forever.

        A key named twice is waited on once. Like 7.0's ``getTimeoutFromObjectOrReply``
        the clock is read only for a positive timeout; the deadline is that reading
        plus ``timeout_ms``, and the client times out once the clock has passed it
        (BLOCK-8). ``read_at`` is that reading when the caller took it while parsing,
        as 7.0 does; without it the clock is read here.
        """
        if timeout_ms == 0:
            deadline = None
        else:
            deadline = (self.now() if read_at is None else read_at) + timeout_ms
        self.client.blocked = BlockState(
            keys=keys, db=self.client.db, deadline=deadline, timeout_ms=timeout_ms,
            argv=list(self.argv), payload=payload, serve=serve,
            timeout_reply=NullArray() if timeout_reply is None else timeout_reply, kind=kind)
        for k in dict.fromkeys(keys):
            self.server.blocking.setdefault((self.client.db, k), []).append(self.client.id)
        return BLOCKED


class Server:
    """The whole modelled server: databases, clients, configuration, blocked clients."""

    # The keyspace notification of an expired key's deletion, installed by models/expiry.py
    # (which sits above models/notify.py): called as ``self.expired_hook(dbid, key)``.
    expired_hook: ClassVar[Callable[[Server, int, bytes], None] | None] = None
    # Set by the conformance checker where it takes the active expiry cycle's deletions as steps: DBSIZE
    # then counts exactly the keys stored (EXPIRE-ACTIVE-2; models/expiry.py).
    active_expiry_steps = False
    active_expire_enabled = True  # DEBUG SET-ACTIVE-EXPIRE 0 stops the cycle (DEBUG-2)
    # CLIENT PAUSE (models/clients.py): when the pause ends, None when there is none (EXPIRE-PAUSE-2).
    client_pause_end: Instant | None = None
    client_pause_all = False  # the pause holds every command back (CLIENT PAUSE ... ALL), not only writes
    # Ends the pause when the running command is one it holds back, installed by models/clients.py.
    pause_hold: ClassVar[Callable[[Server, Client, table.CommandSpec], None] | None] = None
    # Keys that lazy expiry found expired while clients were paused: missing for the running command,
    # stored again when it ends (EXPIRE-PAUSE-1). A tuple, replaced rather than changed.
    expired_aside: tuple[tuple[int, bytes, Value, Instant], ...] = ()

    def __init__(self, dialect: Dialect = REDIS_70, clock: Clock | None = None,
                 config: dict[str, str] | None = None) -> None:
        self.dialect = dialect
        self.clock: Clock = clock if clock is not None else ManualClock()
        self.config: dict[str, str] = dict(dialect.config_defaults)
        if config:
            self.config.update(config)
        self.dbs: list[dict[bytes, Value]] = [Keyspace() for _ in range(NUM_DATABASES)]
        # The time lazy expiry compares with during one command (``server.mstime`` while
        # ``fixed_time_expire`` holds it): read at the first check, forgotten before the next command.
        self.expiry_now: Instant | None = None
        self.clients: dict[int, Client] = {}
        # Connections that have not authenticated (AUTH-4); they must while requirepass is set.
        # Immutable, replaced at each change (the explorer shares immutable attributes).
        self.unauthenticated: frozenset[int] = frozenset()
        self.next_client_id = 1
        # (db, key) -> client ids blocked on it, in the order they blocked
        self.blocking: dict[tuple[int, bytes], list[int]] = {}
        self.ready_keys: dict[tuple[int, bytes], None] = {}
        self.repl_db = -1  # the database the replication stream last SELECTed
        self._snapshot: Instant | None = None
        # The C errno of Redis's main thread, as far as it shows: 7.0's XADD
        # words one failure after it (XADD-14). Stream handlers update it
        # where Redis's code sets it; 0 until something does.
        self.errno = 0
        # Picks one of n alternatives where the real server's choice depends on
        # something the model cannot know (its random hash seed: SWAPDB-8).
        # None: always the first, the canonical order; the conformance checker
        # installs its search here so that every alternative is explored.
        self.chooser: Callable[[int], int] | None = None
        # The deployment node this server is one of (models/replication.py); None on its own.
        self.node: Any = None
        # INFO's lifetime counters (models/stats.py): unknown until CONFIG RESETSTAT or assume_fresh().
        self.stats = Stats()
        # Pushes the running command sent (models/pubsub.py); Outcome.pushes takes them. A tuple,
        # replaced rather than changed, so that copies of the server may share it.
        self.pushes: tuple[tuple[int, Reply], ...] = ()
        # CLIENT TRACKING (models/tracking.py): whether any client turned it on; the BCAST prefixes;
        # the (prefix, key, modifying client) noted during the running command; the running client's
        # id (NOLOOP). Tuples, replaced rather than changed, so that copies of the server may share them.
        self.tracking_in_use = False
        self.tracking_prefixes: tuple[bytes, ...] = ()
        self.tracking_noted: tuple[tuple[bytes, bytes, int], ...] = ()
        self.tracking_running = 0
        # The script cache (models/scripting.py): (SHA1, body) pairs; and the function libraries
        # (models/functions.py). Empty until a script or library is loaded; tuples, replaced
        # rather than changed, so that copies of the server may share them.
        self.scripts: tuple[tuple[str, bytes], ...] = ()
        self.libraries: tuple[Any, ...] = ()

    # -- configuration -------------------------------------------------------
    def config_int(self, name: str) -> int:
        return int(self.config[name])

    # -- time ---------------------------------------------------------------
    def now(self) -> Instant:
        if self._snapshot is not None:
            return self._snapshot
        return self.clock.now_ms()

    def debug_allowed(self) -> bool:
        """``enable-debug-command`` allows DEBUG (DISPATCH-9): ``yes``, or ``local`` (every modelled
        connection is a local one); 6.2 has no such setting."""
        if not self.dialect.debug_needs_enabling:
            return True
        return self.config.get("enable-debug-command", "no") in ("yes", "local")

    def password_required(self) -> bool:
        """``requirepass`` is set: the default user has a password (AUTH-4)."""
        return bool(self.config.get("requirepass"))

    def set_authenticated(self, client_id: int, authenticated: bool) -> None:
        if authenticated:
            self.unauthenticated = self.unauthenticated - {client_id}
        else:
            self.unauthenticated = self.unauthenticated | {client_id}

    def auth_required(self, c: Client, spec: table.CommandSpec | None) -> bool:
        """``authRequired``: the client must authenticate before it may run ``spec`` (DISPATCH-8)."""
        return c.id in self.unauthenticated and self.password_required() and (
            spec is None or "no_auth" not in spec.flags)

    # -- clients ----------------------------------------------------------
    def connect(self, client_id: int | None = None) -> int:
        """Open a connection (CONN-2: RESP2, database 0, no name); returns its client id."""
        cid = self.next_client_id if client_id is None else client_id
        if cid in self.clients:
            raise ValueError(f"client {cid} already connected")
        self.next_client_id = max(self.next_client_id, cid) + 1
        self.clients[cid] = Client(id=cid)
        # AUTH-4: a connection made while requirepass is set must authenticate
        self.set_authenticated(cid, not self.password_required())
        # The accept loop stops at the accept4() that fails with EAGAIN (XADD-14).
        self.errno = EAGAIN
        return cid

    def close(self, client_id: int) -> None:
        """The connection closed: forget its blocked state, watches and transaction (CONN-1, BLOCK-10)."""
        c = self.clients.pop(client_id, None)
        if c is None:
            return
        self.set_authenticated(client_id, True)
        if c.blocked is not None:
            self._unblock(c)
        c.watched.clear()
        c.closed = True

    def client(self, client_id: int) -> Client:
        c = self.clients.get(client_id)
        if c is None:
            self.connect(client_id)
            c = self.clients[client_id]
        return c

    # -- dispatch -------------------------------------------------------------
    def execute(self, client_id: int, argv: list[bytes]) -> Outcome:
        """Run one command from one client (DISPATCH-1 .. DISPATCH-7)."""
        c = self.clients.get(client_id) or self.client(client_id)
        if c.blocked is not None:
            raise RuntimeError(f"client {client_id} is blocked and cannot send commands")
        self.expiry_now = None
        if self.tracking_in_use:
            return self._execute_tracked(c, argv)
        if not self.dialect.time_snapshot_per_command:
            return self._execute(c, argv)
        self._snapshot = self.clock.now_ms()
        try:
            return self._execute(c, argv)
        finally:
            self._snapshot = None

    def _execute_tracked(self, c: Client, argv: list[bytes]) -> Outcome:
        """:meth:`execute` once a client used CLIENT TRACKING: its end-of-command work (models/tracking.py)."""
        self.tracking_running = c.id
        if self.dialect.time_snapshot_per_command:
            self._snapshot = self.clock.now_ms()
        try:
            out = self._execute(c, argv)
        finally:
            self._snapshot = None
        TRACKING_HOOKS["after_command"](self, c, out)
        return out

    def _execute(self, c: Client, argv: list[bytes]) -> Outcome:
        spec = self.dialect.lookup(argv)  # DISPATCH-DIALECT-1: 6.2 looks up argv[0] only
        # CONN-5: the client's last command (CLIENT LIST cmd=) is set by the
        # lookup, before any check; NULL when the lookup fails.
        c.last_cmd = spec.fullname if spec is not None else "NULL"
        if self.unauthenticated and self.dialect.auth_before_lookup and self.auth_required(c, spec):
            # DISPATCH-DIALECT-2: Valkey refuses before the lookup and arity checks
            return self._reject(c, NOAUTH, spec)
        if spec is None:  # DISPATCH-1
            return self._reject(c, self.dialect.unknown_command_error(argv))
        if not spec.arity_ok(len(argv)):  # DISPATCH-2
            return self._reject(c, table.arity_error(spec), spec)
        if "protected" in spec.flags and not self.debug_allowed():  # DISPATCH-9
            return self._reject(c, DEBUG_NOT_ALLOWED, spec)
        if self.unauthenticated and self.auth_required(c, spec):  # DISPATCH-8
            return self._reject(c, NOAUTH, spec)
        if self.node is not None:  # REPL-10, REPL-11: NOREPLICAS and READONLY come before queuing
            refusal = self.node.deployment.refuse(self.node, c, spec)
            if refusal is not None:
                return self._reject(c, refusal, spec)
            if self.node.deployment.postpones(self.node, c, spec, argv):  # FAILOVER-4: writes wait out a pause
                return Outcome(None, blocked=True)
        if self.client_pause_end is not None and c.id >= 0 and (hold := Server.pause_hold) is not None:
            hold(self, c, spec)  # CLIENT-PAUSE-2, EXPIRE-PAUSE-2: a held command runs once the pause is over
        name = spec.fullname
        if c.proto == 2 and c.subscriptions and name not in SUBSCRIBER_COMMANDS:  # PUBSUB-CTX-1
            return self._reject(c, subscriber_context_error(name, self.dialect.lookup([b"ssubscribe", b"x"]) is not None),
                                spec)
        if c.in_multi and name not in table.RUN_INSIDE_MULTI:
            if "no_multi" in spec.flags:  # DISPATCH-3
                return self._reject(c, NOT_ALLOWED_IN_MULTI)
            # DISPATCH-4: a doomed transaction (rejected command or touched
            # watch) answers QUEUED but stops growing its queue.
            if not (c.multi_error or c.dirty_cas):
                c.multi_queue.append(list(argv))
            return Outcome(self._render(c, _QUEUED))
        handler = HANDLERS.get(name)
        if handler is None:
            # A command in the table that the model does not implement yet.
            self.stats.forget()  # STATS-0: the server counted it in a way the model does not know
            return Outcome(self._render(c, Error(f"ERR xspec model: '{name}' is not modelled")))
        ops: list[tuple[int, list[bytes | int]]] = []
        call = Call(self, c, argv, spec, ops)
        try:
            call.expire_keys()  # EXPIRE-LAZY-2
            result = handler(call)
        except CommandError as e:
            result = Error(e.text)
        if self.expired_aside:  # EXPIRE-PAUSE-1: the keys set aside are stored again
            self.restore_aside()
        if c.tracking is not None and "readonly" in spec.flags:
            _remember_keys(call)  # TRACKING-2: whatever the reply
        count_call(self, name, result, blocked=result is BLOCKED)  # STATS-1, STATS-2
        if result is BLOCKED:
            out = Outcome(None, blocked=True)
        elif type(result) is PreRendered:
            out = Outcome(result.reply)  # type: ignore[union-attr]
        elif result is None or type(result) in _SAME_IN_EVERY_PROTOCOL:
            out = Outcome(result)  # type: ignore[arg-type]
        else:
            out = Outcome(for_protocol(result, c.proto))  # type: ignore[arg-type]
        if self.pushes:
            out.pushes, self.pushes = list(self.pushes), ()
        if call.served:  # replies the command sent to other clients (CLIENT UNBLOCK)
            out.served.extend(call.served)
        if ops:
            out.propagated = self._wrap(ops, name == "exec")  # DISPATCH-6, PROP-1
        if c.closed:  # CONN-3: QUIT closes the connection after its reply
            out.closed = True
            self.close(c.id)
        if self.ready_keys:
            self._handle_ready(out)  # DISPATCH-7
            if self.expired_aside:  # EXPIRE-PAUSE-1
                self.restore_aside()
            if self.pushes:  # messages the served clients' commands sent (keyspace notifications)
                out.pushes.extend(self.pushes)
                self.pushes = ()
        for hook in AFTER_COMMAND:
            hook(self, c, out)
        return out

    def _reject(self, c: Client, text: str, spec: table.CommandSpec | None = None) -> Outcome:
        """``rejectCommand``: reply with the error; inside MULTI the transaction is doomed (DISPATCH-5).

        A rejected EXEC, in MULTI or not, discards the transaction and unwatches
        every key, and its error says so (``execCommandAbort``, EXEC-6).
        """
        is_exec = spec is not None and spec.fullname == "exec"
        count_rejection(self, c, exec_aborted(text) if is_exec else text)  # STATS-1, STATS-2
        if spec is not None and spec.fullname == "exec":
            c.in_multi = False
            c.multi_queue = []
            c.multi_error = False
            c.watched.clear()
            c.dirty_cas = False
            return Outcome(self._render(c, Error(exec_aborted(text))))
        if c.in_multi:
            c.multi_error = True
        return Outcome(self._render(c, Error(text)))

    def _render(self, c: Client, r: Reply) -> Reply:
        return for_protocol(r, c.proto)

    def run_queued(self, c: Client, ops: list[tuple[int, list[bytes | int]]]) -> list[Reply]:
        """Run a transaction's queued commands for EXEC (EXEC-4, EXEC-5).

        Each reply is rendered for the protocol in force when its command ran.
        The queue stays in place while it runs (CLIENT INFO inside EXEC shows
        it) and is emptied afterwards.
        """
        replies: list[Reply] = []
        dirty = self.stats.dirty
        for argv in c.multi_queue:
            spec = self.dialect.lookup(argv)
            assert spec is not None
            handler = HANDLERS.get(spec.fullname)
            if handler is None:
                replies.append(Error(f"ERR xspec model: '{spec.fullname}' is not modelled"))
                continue
            call = Call(self, c, argv, spec, ops, in_exec=True)
            try:
                call.expire_keys()  # EXPIRE-LAZY-2
                r = handler(call)
            except CommandError as e:
                r = Error(e.text)
            if c.tracking is not None and "readonly" in spec.flags:
                _remember_keys(call)  # TRACKING-2
            assert not isinstance(r, _Blocked), "a command blocked inside EXEC"
            count_call(self, spec.fullname, r)  # STATS-2: each queued command counts when EXEC runs it
            replies.append(r.reply if isinstance(r, PreRendered) else self._render(c, r))
        c.multi_queue = []
        if self.dialect.exec_counts_itself and self.stats.dirty != dirty:  # STATS-DIALECT-8
            self.stats.dirty += 1
        return replies

    # -- propagation ------------------------------------------------------------
    def _wrap(self, ops: list[tuple[int, list[bytes | int]]], transaction: bool = False) -> list[list[bytes | int]]:
        """``propagatePendingCommands``: wrap several ops in MULTI/EXEC, add SELECTs (PROP-1).

        ``transaction``: these are an EXEC's ops. 6.2 wraps exactly those, even a
        single one (PROP-DIALECT-3).
        """
        if not ops:
            return []
        wrap = len(ops) > 1
        if transaction or wrap:
            wrap = transaction if self.dialect.wraps_transactions_only else wrap
        if len(ops) == 1 and ops[0][0] == self.repl_db and not wrap:  # the common case: one command, no SELECT
            return [ops[0][1]]
        out: list[list[bytes | int]] = []
        if wrap:
            if not self.dialect.select_after_multi:  # PROP-DIALECT-4: 7.2+ selects inside the transaction
                self._select(ops[0][0], out)
            out.append([b"MULTI"])
        for db, argv in ops:
            if db != self.repl_db:
                self._select(db, out)
            out.append(argv)
        if wrap:
            out.append([b"EXEC"])
        return out

    def _select(self, db: int, out: list[list[bytes | int]]) -> None:
        if db != self.repl_db:
            out.append([b"SELECT", str(db).encode()])
            self.repl_db = db

    # -- expiry -----------------------------------------------------------------
    def keyspace(self, dbid: int) -> Keyspace:
        """Database ``dbid`` with its expiry table (a plain dict put there by a copier becomes a Keyspace)."""
        db = self.dbs[dbid]
        if not isinstance(db, Keyspace):
            db = self.dbs[dbid] = Keyspace(db)
        return db

    def deletion_word(self, setting: str) -> bytes:
        """``DEL``, or ``UNLINK`` when the ``lazyfree-lazy-*`` ``setting`` is on (its default is the dialect's)."""
        value = self.config.get(setting)
        if value is None:
            value = self.dialect.config_listed().get(setting, "no")
        return b"UNLINK" if value == "yes" else b"DEL"

    def expiry_time(self) -> Instant:
        """The time keys expire against in the running command (EXPIRE-LAZY-1): one reading per command."""
        if self._snapshot is not None:
            return self._snapshot
        if self.expiry_now is None:
            self.expiry_now = self.clock.now_ms()
        return self.expiry_now

    def key_is_expired(self, dbid: int, key: bytes) -> bool:
        """``keyIsExpired``: the key has a time and the clock has passed it (EXPIRE-LAZY-1)."""
        expires = getattr(self.dbs[dbid], "expires", None)
        when = None if expires is None else expires.get(key)
        return when is not None and self.expiry_time() > when

    def expire_if_needed(self, dbid: int, key: bytes, ops: list[tuple[int, list[bytes | int]]], *,
                         reader: bool = False) -> bool:
        """``expireIfNeeded``: delete an expired key and propagate its deletion; whether it had expired.

        EXPIRE-LAZY-1: the deletion propagates as DEL, or UNLINK under ``lazyfree-lazy-expire``, with the
        command's own writes; watchers learn (``signalModifiedKey``), blocked stream readers too.
        While clients are paused, or on a replica for a command that only reads (``reader``), the key is
        only set aside, missing to the rest of the command (EXPIRE-PAUSE-1, EXPIRE-REPLICA-1).
        """
        if not self.key_is_expired(dbid, key):
            return False
        if reader and (node := self.node) is not None and node.is_replica:  # EXPIRE-REPLICA-1
            self._set_aside(dbid, key)
            return True
        if self.clients_paused():  # EXPIRE-PAUSE-1: missing for the command, kept, nothing notified or counted
            self._set_aside(dbid, key)
            return True
        db = self.dbs[dbid]
        old = db.pop(key)
        hook = Server.expired_hook
        if hook is not None:
            hook(self, dbid, key)
        self.touch_watched(dbid, key)
        if isinstance(old, Stream):
            self.signal_deleted(dbid, key)
        ops.append((dbid, [self.deletion_word("lazyfree-lazy-expire"), key]))
        return True

    def active_expire(self, dbid: int, key: bytes) -> list[list[bytes | int]]:
        """An internal step: the active expiry cycle deletes ``key``, whose time has passed (EXPIRE-ACTIVE-1).

        Returns what it propagates. The step is the model's to take between commands at any time
        after the key's expiry; a key that has not expired yet is left alone.
        """
        self.expiry_now = None
        ops: list[tuple[int, list[bytes | int]]] = []
        # DEBUG-2: not while DEBUG SET-ACTIVE-EXPIRE stopped it; EXPIRE-ACTIVE-4: nor while clients are paused
        if self.active_expire_enabled and not self.clients_paused():
            self.expire_if_needed(dbid, key, ops)
        self.expiry_now = None
        return self._wrap(ops)

    def clients_paused(self) -> bool:
        """``checkClientPauseTimeoutAndReturnIfPaused`` at the running command's time (EXPIRE-PAUSE-2).

        A FAILOVER pauses writes until it ends; a CLIENT PAUSE until its end, which the command's time
        (the one lazy expiry compares with) may have passed: the pause then ends here.
        """
        node = self.node
        if node is not None and node.failover is not None:  # FAILOVER-4: paused until the failover ends
            return True
        end = self.client_pause_end
        if end is None:
            return False
        now = self.expiry_time()
        if now <= end if self.dialect.pause_holds_at_its_end else now < end:  # EXPIRE-PAUSE-2
            return True
        self.client_pause_end = None
        self.client_pause_all = False
        return False

    def _set_aside(self, dbid: int, key: bytes) -> None:
        """Take an expired key out of its database until the running command ends (EXPIRE-PAUSE-1)."""
        db = self.keyspace(dbid)
        when = db.expires[key]
        value = db.pop(key)
        self.expired_aside = (*self.expired_aside, (dbid, key, value, when))

    def restore_aside(self) -> None:
        """Store again, with their times, the keys set aside during the command that ended (EXPIRE-PAUSE-1).

        A key the command wrote meanwhile keeps the new value (EXPIRE-PAUSE-4).
        """
        aside, self.expired_aside = self.expired_aside, ()
        for dbid, key, value, when in aside:
            db = self.keyspace(dbid)
            if key not in db:
                db[key] = value
                db.expires[key] = when

    def aof_rewrite_done(self) -> bool:
        """An internal step: the running BGREWRITEAOF's child finished and its base takes over (AOF-7,
        the deployment's ``rewrite`` step); False when no rewrite runs."""
        node = self.node
        if node is None or ("rewrite", node.name) not in node.deployment.steps():
            return False
        node.deployment.step("rewrite", node.name)
        return True

    def persistence_step(self, kind: str) -> bool:
        """An internal step of the cron about children (FORK-2, RDB-7, AOF-AUTO-1; see
        :func:`xspec.models.replication.persistence_step`); False when the model cannot take it now."""
        return PERSISTENCE_HOOKS["step"](self, kind)

    def expired_keys(self) -> list[tuple[int, bytes]]:
        """Every key whose time has passed and that is still stored: candidates for :meth:`active_expire`."""
        now = self.clock.now_ms()
        return [(dbid, key) for dbid, db in enumerate(self.dbs)
                for key, when in _expires_of(db).items() if now > when]

    # -- WATCH ------------------------------------------------------------------
    def watch_expiry(self, c: Client, at_exec: bool, argv: list[bytes]) -> None:
        """WATCH notes which keys had already expired; EXEC fails when another has expired since (EXPIRE-WATCH-1).

        WATCH looks no key up (nothing is deleted); EXEC checks each watched key against the clock.
        """
        if not at_exec:
            if not self.dialect.watch_remembers_expired:  # EXPIRE-DIALECT-3
                return
            if not c.watched:
                c.watched_expired.clear()
            for key in argv[1:]:
                if (c.db, key) in c.watched:
                    continue  # already watched: WATCH keeps the first record
                if self.key_is_expired(c.db, key):
                    c.watched_expired.add((c.db, key))
                else:
                    c.watched_expired.discard((c.db, key))
            return
        if c.in_multi and any(w not in c.watched_expired and self.key_is_expired(*w) for w in c.watched):
            c.dirty_cas = True

    def touch_watched(self, db: int, key: bytes) -> None:
        watched_key = (db, key)
        for c in self.clients.values():
            if watched_key in c.watched:
                if watched_key in c.watched_expired and key not in self.dbs[db]:
                    c.watched_expired.discard(watched_key)  # EXPIRE-WATCH-1: an expired key deleted is no change
                    continue
                c.dirty_cas = True
        if self.tracking_in_use:  # signalModifiedKey's trackingInvalidateKey (TRACKING-3)
            TRACKING_HOOKS["key_modified"](self, key)

    # -- blocking ---------------------------------------------------------------
    def signal_ready(self, db: int, key: bytes, kind: str = "stream") -> None:
        """``signalKeyAsReady``: queue ``key`` once, if a client is blocked on it (BLOCK-2).

        A value of type ``kind`` queues it only while some client, on any key,
        waits for that type (BLIST-9).
        """
        if self.blocking and (db, key) in self.blocking and any(
                c.blocked is not None and c.blocked.kind == kind for c in self.clients.values()):
            self.ready_keys[(db, key)] = None

    def signal_deleted(self, db: int, key: bytes) -> None:
        """``signalDeletedKeyAsReady``: a stream key was deleted or overwritten (BLOCK-5).

        It is queued like a ready key; what the blocked clients get depends on
        what the key holds when it is handled (see models/reads.py).
        """
        if self.dialect.deleted_key_wakes_readgroup:  # BLOCK-DIALECT-1: 6.2 signals no deletion
            self.signal_ready(db, key)

    def _handle_ready(self, out: Outcome) -> None:
        """``handleClientsBlockedOnKeys``: serve blocked clients, FIFO per key (BLOCK-2, BLOCK-9).

        Keys are handled in the order they were signalled; each leaves the queue
        just before it is handled, so a key signalled again while it waits is
        handled once. Each served client's derived commands are propagated as
        their own unit, after the command that woke it (7.0 calls
        ``afterCommand`` per served client).
        """
        snapshot = self.dialect.time_snapshot_per_command
        while self.ready_keys:
            for db, key in list(self.ready_keys):
                del self.ready_keys[(db, key)]
                for cid in self._serving_order(db, key):
                    c = self.clients.get(cid)
                    if c is None or c.blocked is None or cid not in self.blocking.get((db, key), ()):
                        continue
                    if snapshot:  # BLOCK-DIALECT-2: a re-executed command takes its own snapshot
                        self._snapshot = self.clock.now_ms()
                    ops: list[tuple[int, list[bytes | int]]] = []
                    spec = self.dialect.lookup(c.blocked.argv)
                    assert spec is not None
                    call = Call(self, c, c.blocked.argv, spec, ops)
                    call.db = self.dbs[db]
                    try:
                        r = c.blocked.serve(call, key)
                    except CommandError as e:
                        r = Error(e.text)
                    if r is None:
                        continue
                    count_served(self, spec.fullname, r)  # STATS-3
                    if c.blocked is not None:  # BLOCK-DIALECT-2: a re-executed command unblocked it itself
                        self._unblock(c)
                    out.served.append((cid, self._render(c, r)))
                    out.propagated.extend(self._wrap(ops))

    def _serving_order(self, db: int, key: bytes) -> list[int]:
        """The clients blocked on ``key`` that its handling tries, in order (BLIST-9).

        7.2+ tries every client blocked at this moment, FIFO (BLOCK-DIALECT-2).
        7.0 and 6.2 try, FIFO, those waiting for the type the key holds; then,
        when it holds no stream, the stream readers (BLOCK-5), whose serve
        functions leave them blocked in 6.2 (BLIST-DIALECT-3).
        """
        waiting = list(self.blocking.get((db, key), ()))
        if self.dialect.blocked_reexecution:
            return waiting
        value = self.dbs[db].get(key)
        kinds = {cid: self.clients[cid].blocked.kind for cid in waiting  # type: ignore[union-attr]
                 if cid in self.clients and self.clients[cid].blocked is not None}
        if isinstance(value, Stream):
            return [cid for cid in waiting if kinds.get(cid) == "stream"]
        own = "list" if isinstance(value, ListValue) else "zset" if isinstance(value, ZSetValue) else None
        first = [cid for cid in waiting if kinds.get(cid) == own] if own else []  # BZSET-2
        return first + [cid for cid in waiting if kinds.get(cid) == "stream"]

    def _unblock(self, c: Client) -> None:
        b = c.blocked
        assert b is not None
        for k in dict.fromkeys(b.keys):
            q = self.blocking.get((b.db, k))
            if q is not None:
                q.remove(c.id)
                if not q:
                    del self.blocking[(b.db, k)]
        c.blocked = None

    def timeout(self, client_id: int) -> Reply:
        """The blocked client's timeout fires now: unblock it and return its reply (BLOCK-8)."""
        c = self.clients[client_id]
        if c.blocked is None:
            raise RuntimeError(f"client {client_id} is not blocked")
        r = c.blocked.timeout_reply
        blocked_spec = self.dialect.lookup(c.blocked.argv)
        if blocked_spec is not None:
            count_timeout(self, blocked_spec.fullname)
        self._unblock(c)
        if not any(o.blocked is not None and o.blocked.deadline is not None for o in self.clients.values()):
            # XADD-14: the walk over the timeout table found no later deadline to stop
            # at, so its raxNext ran off the tree and left errno 0.
            self.errno = 0
        return self._render(c, r)

    def due_timeouts(self, now: Instant) -> list[tuple[int, Reply]]:
        """Time out every blocked client whose deadline is before ``now``, earliest first (BLOCK-8).

        7.0's ``handleBlockedClientsTimeout`` unblocks a client when ``deadline < now``.
        """
        due = sorted((c.blocked.deadline, c.id) for c in self.clients.values()
                     if c.blocked is not None and c.blocked.deadline is not None
                     and c.blocked.deadline < now)
        return [(cid, self.timeout(cid)) for _, cid in due]

    def blocked_clients(self) -> list[int]:
        return [c.id for c in self.clients.values() if c.blocked is not None]

    # -- canonical state --------------------------------------------------------------
    def freeze(self) -> tuple[Any, ...]:
        """A canonical hashable value of the whole state (for explorers and tests)."""
        dbs = tuple(
            tuple(sorted((k, freeze_value(v)) for k, v in db.items()))
            + ((("expires", tuple(sorted(expires.items()))),) if (expires := _expires_of(db)) else ())
            for db in self.dbs)
        clients = tuple(c.freeze() for _, c in sorted(self.clients.items()))
        blocking = tuple(sorted((k, tuple(v)) for k, v in self.blocking.items()))
        # STATS-0: INFO's counters join the last element once a later INFO can show them, so that a
        # model whose counters are unknown (explorers, most checks) freezes to the same six values.
        stats = self.stats
        errno: Any = (self.errno, stats.freeze()) if stats.known or stats.dirty_known else self.errno
        if self.scripts or self.libraries:  # loaded scripts and libraries join it likewise
            errno = (errno, tuple(sorted(self.scripts)), tuple(sorted((lib.name, lib.body) for lib in self.libraries)))
        if self.client_pause_end is not None:  # a pause in force joins it likewise (EXPIRE-PAUSE-2)
            errno = (errno, ("pause", self.client_pause_end, self.client_pause_all))
        return (self.dialect.name, dbs, clients, blocking, tuple(sorted(self.config.items())), errno)


# The commands whose handlers run lazy expiry themselves, where Redis looks their keys up (EXPIRE-LAZY-2).
SELF_EXPIRING: set[str] = set()


def _remember_keys(call: Call) -> None:
    TRACKING_HOOKS["remember"](call)


def _expires_of(db: dict[bytes, Value]) -> dict[bytes, Instant]:
    """A database's expiry table (empty for a plain dict)."""
    return db.expires if isinstance(db, Keyspace) else {}


def render_op(argv: list[bytes | int]) -> list[bytes]:
    """A propagated command as bytes (integers in decimal)."""
    return [a if isinstance(a, bytes) else b"%d" % a for a in argv]


# Replies that for_protocol renders as themselves on RESP2 and RESP3 alike.
_SAME_IN_EVERY_PROTOCOL = frozenset({Simple, Error, Int, Bulk})
