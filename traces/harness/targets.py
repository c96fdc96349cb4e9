"""Targets: the servers a command sequence runs on, named by URL.

==========================================  =============================================
``redis://[user:password@]host:port[/db]``  a live server (``rediss://``: over TLS)
``model:<dialect>``                         the model, on a virtual clock
``model:<dialect>+mutant:<name>``           the model with a seeded bug (``xspec.models.mutants``)
``embedded:``                               the reference server (``xspec serve``), started for the run
==========================================  =============================================

:func:`parse_target` turns a URL into a :class:`Target`; ``run(steps)``
executes generated steps (:mod:`xspec.traces.fuzz.generate`) on a fresh state and
returns the conversation as a trace.

Live targets are flushed (``FLUSHALL``) and configured (``CONFIG SET``) before
every run; a target that holds keys the first time is refused unless
``allow_flush``. The dialect is detected from ``INFO server`` (Valkey names
itself in ``server_name`` and ``valkey_version``) unless one is given. Every
connection logs in (AUTH) and selects the URL's database before the recorded
conversation starts; RESET steps are then left out, and with a database other
than 0 so are SELECT, SWAPDB and MOVE. A blocking command is confirmed blocked
(``CLIENT LIST ID`` on a control connection shows flag ``b``) before the next
step, so the order in which clients block is part of the trace; when the
steps use CLIENT LIST, CLIENT KILL or INFO, the control connection is closed
after each use, so they do not see it. Where FLUSHALL is renamed or disabled, the run is confined
to a fresh key prefix instead: every key argument is prefixed, and the steps
that see or change the whole keyspace or other databases (FLUSHALL, FLUSHDB,
SWAPDB, KEYS, SCAN, DBSIZE, SELECT, ...) are left out and listed in
``skipped``. Where CONFIG is unavailable, the requested stream settings are
not applied, the trace assumes the dialect's defaults, CONFIG steps are left
out, and that is listed in ``skipped`` too.

``embedded:`` starts the reference server (``xspec serve``, wall clock) in a
child process on a free loopback port, tests it as a live target, and stops it
by pid on :meth:`Target.close`.

Model targets run on :class:`xspec.models.server.Server` with a
:class:`~xspec.models.ManualClock` that moves only with the sequence's pauses
(and to time out short blocked reads a client must wait for), so the same
steps always give the same virtual-clock trace.
"""

from __future__ import annotations

import contextlib
import ssl
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from xspec.models import Instant, ManualClock, Server
from xspec.spec import commands as table
from xspec.spec.dialect import (
    DIALECTS,
    NEAREST,
    REDIS_70,
    Dialect,
    UnknownDialect,
    dialect_for_server,
    get_dialect,
    nearest_dialect,
)
from xspec.spec.resp import Bulk, Error, Int, ProtocolError, Reply, Simple
from xspec.spec.trace_format import Call, Close, Event, Header, Note, Recv, Send, Trace
from xspec.traces.fuzz.generate import Arg, Step, resolve
from xspec.traces.record.client import ConnectionClosed, RespConnection
from xspec.traces.record.recorder import Recorder

BLOCK_WAIT = 0.005
"""Seconds a runner waits for a possibly-blocking command's reply before asking whether it blocked."""

FINITE_BLOCK_MS = 1000
"""A blocked read whose timeout is at most this is waited for; a longer one is ended by closing its client."""

MODEL_EPOCH_MS = 1_700_000_000_000
"""Where a model target's virtual clock starts."""

DEFAULT_PORT = 6379
PROBE_TIMEOUT = 5.0
"""Seconds to wait for a new target to accept a connection and to answer its first command."""


class TargetError(ValueError):
    """A target URL that cannot be used, or a target that refuses to be tested; says why."""


@dataclass
class Run:
    """One sequence run on a target: the trace, which step produced each event, what was left out."""

    trace: Trace
    step_of_event: list[int]  # for every trace event, the index of the step that produced it
    skipped: list[str] = field(default_factory=list)


class Target(Protocol):
    url: str
    dialect: str

    def run(self, steps: Sequence[Step], *, config: dict[str, str] | None = None, title: str = "") -> Trace:
        """Execute ``steps`` on a fresh state and return the recorded trace."""
        ...

    def run_steps(self, steps: Sequence[Step], *, config: dict[str, str] | None = None, title: str = "") -> Run:
        """Like :meth:`run`, with the step of every event and the checks left out."""
        ...

    def close(self) -> None:
        ...


# ---------------------------------------------------------------------------------------------
# URLs


def parse_target(url: str, *, dialect: str | None = None, allow_flush: bool = False) -> Target:
    """The target a URL names (see the module docstring); raises :class:`TargetError` for bad URLs."""
    if dialect == NEAREST and not url.lower().startswith(("redis:", "rediss:")):
        dialect = None  # only a live server can have a version no dialect models
    if dialect is not None and dialect not in ("auto", NEAREST):
        _dialect(dialect)
    elif dialect != NEAREST:
        dialect = None
    scheme, sep, rest = url.partition(":")
    if not sep:
        raise TargetError(f"{url!r} is not a target URL: use redis://host:port, rediss://host:port, "
                          "model:<dialect>[+mutant:<name>] or embedded:")
    scheme = scheme.lower()
    if scheme == "model":
        name, _, mutant = rest.partition("+")
        if mutant and not mutant.startswith("mutant:"):
            raise TargetError(f"{url!r}: after '+' a model target takes 'mutant:<name>'")
        model_dialect = _dialect(name or dialect or REDIS_70.name)
        return ModelTarget(url, model_dialect, mutant.removeprefix("mutant:") or None)
    if scheme == "embedded":
        if rest:
            raise TargetError(f"{url!r}: embedded: takes nothing after the colon")
        return EmbeddedTarget(url, dialect=dialect)
    if scheme in ("redis", "rediss"):
        return LiveTarget(url, parse_endpoint(url), dialect=dialect, allow_flush=allow_flush)
    raise TargetError(f"{url!r}: unknown scheme {scheme!r}; use redis, rediss, model or embedded")


def _dialect(name: str) -> Dialect:
    try:
        return get_dialect(name)
    except UnknownDialect as e:
        raise TargetError(str(e)) from None


@dataclass(frozen=True)
class Endpoint:
    """Where a live server listens and how to log in."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    db: int = 0
    tls: bool = False
    # rediss:// options (as redis-py names them): ssl_cert_reqs=none|required, ssl_ca_certs,
    # ssl_certfile, ssl_keyfile
    tls_options: tuple[tuple[str, str], ...] = ()

    def ssl_context(self) -> ssl.SSLContext:
        options = dict(self.tls_options)
        context = ssl.create_default_context(cafile=options.get("ssl_ca_certs"))
        if options.get("ssl_certfile"):
            context.load_cert_chain(options["ssl_certfile"], options.get("ssl_keyfile"))
        if options.get("ssl_cert_reqs", "required").lower() in ("none", "optional"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


_TLS_OPTIONS = ("ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile")


def parse_endpoint(url: str) -> Endpoint:
    """``redis://[user:password@]host:port[/db]`` (or ``rediss://``) as an :class:`Endpoint`."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise TargetError(f"{url!r}: not a redis:// or rediss:// URL")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise TargetError(f"{url!r}: the port must be a number from 1 to 65535") from None
    if not parts.hostname:
        raise TargetError(f"{url!r}: no host (redis://host:port)")
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise TargetError(f"{url!r}: the path must be a database number (/0, /1 ...), got /{path}")
    query = parse_qs(parts.query)
    unknown = sorted(set(query) - set(_TLS_OPTIONS))
    if unknown or (query and parts.scheme != "rediss"):
        raise TargetError(f"{url!r}: unknown options {', '.join(unknown or sorted(query))}; "
                          f"rediss:// takes {', '.join(_TLS_OPTIONS)}")
    return Endpoint(host=parts.hostname, port=port,
                    username=unquote(parts.username) if parts.username else None,
                    password=unquote(parts.password) if parts.password is not None else None,
                    db=int(path) if path else 0, tls=parts.scheme == "rediss",
                    tls_options=tuple((k, v[-1]) for k, v in sorted(query.items())))


# ---------------------------------------------------------------------------------------------
# Driving a recorder with steps (live servers)


def block_ms(step: Step) -> int | None:
    """The BLOCK argument as a number of ms, None when it is not a plain non-negative number."""
    argv = step.argv
    for i, a in enumerate(argv[1:-1], start=1):
        if isinstance(a, bytes) and a.upper() == b"BLOCK":
            nxt = argv[i + 1]
            return int(nxt) if isinstance(nxt, bytes) and nxt.isdigit() else None
    return None


def ends_soon(step: Step) -> bool:
    """The step's reply comes by itself soon: it cannot block, or it blocks for at most FINITE_BLOCK_MS."""
    ms = block_ms(step)
    return not step.may_block or (ms is not None and 0 < ms <= FINITE_BLOCK_MS)


def drive(rec: Recorder, steps: Sequence[Step], *, blocked: Callable[[int], bool] | None = None,
          on_close: Callable[[int], None] | None = None) -> list[int]:
    """Run ``steps`` through ``rec`` (a fresh recorder on a reset server); returns the step of every event.

    Each logical client is one connection (a new one after QUIT or after its
    connection was closed). A possibly-blocking command is sent and, unless
    its reply comes, confirmed blocked with ``blocked(trace_client)`` (by
    default: no reply within BLOCK_WAIT s) before the next step. A client's
    replies that are not read at once (a blocked read, pipelined commands)
    are collected as they arrive; before the client's next unpipelined
    command they are awaited when they must come (short timeouts only),
    otherwise the client closes its connection and a new one takes its place.
    ``on_close(trace_client)`` is told when a connection closes; a server that
    closes a connection unexpectedly gets a ``close`` event ``by`` server.
    """
    conn: dict[int, int] = {}  # logical client -> trace client (a new one after each close)
    pending: dict[int, int] = {}  # logical client -> replies not read yet
    will_come: dict[int, bool] = {}  # logical client -> every pending reply arrives by itself soon
    step_of_event: list[int] = []
    next_client = 1
    confirm = blocked or (lambda c: rec.is_waiting(c, wait=BLOCK_WAIT))

    def trace_client(c: int) -> int:
        nonlocal next_client
        if c not in conn:
            conn[c] = next_client
            next_client += 1
        return conn[c]

    def mark(i: int) -> None:
        step_of_event.extend([i] * (len(rec.events) - len(step_of_event)))

    def forget(c: int) -> None:
        pending.pop(c, None)
        will_come.pop(c, None)

    def hang_up(c: int, by: str) -> None:
        tc = conn.pop(c)
        forget(c)
        if by == "client":
            rec.close(tc)
        else:
            rec.conns.pop(tc).close()
            rec.pending.pop(tc, None)
            rec.events.append(Close(c=tc, by="server", t=time.time_ns() // 1000))
        if on_close is not None:
            on_close(tc)

    def settle() -> None:
        """Read the replies that have arrived meanwhile."""
        for c in list(pending):
            try:
                while pending[c] and not rec.is_waiting(conn[c], wait=0):
                    rec.recv(conn[c])
                    pending[c] -= 1
            except ConnectionClosed:
                hang_up(c, "server")
                continue
            if not pending[c]:
                forget(c)

    def drain(c: int) -> None:
        """Before client ``c`` sends a command it waits for: all its replies, or a new connection."""
        if will_come.get(c, True):
            try:
                for _ in range(pending[c]):
                    rec.recv(conn[c], timeout=5)
            except ConnectionClosed:
                hang_up(c, "server")
                return
            forget(c)
        else:
            hang_up(c, "client")

    for i, step in enumerate(steps):
        if not step.argv:
            time.sleep(step.pause / 1000)
            settle()
            mark(i)
            continue
        c = step.client
        pipelined = step.pipelined and not step.closes
        if c in pending and not pipelined:
            drain(c)
        tc = trace_client(c)
        argv = resolve(step.argv, time.time_ns() // 1_000_000)
        try:
            if pipelined:
                rec.send(tc, *argv)
                pending[c] = pending.get(c, 0) + 1
                will_come[c] = will_come.get(c, True) and ends_soon(step)
            elif step.may_block:
                rec.send(tc, *argv)
                if confirm(tc):
                    pending[c] = 1
                    will_come[c] = ends_soon(step)
                else:
                    rec.recv(tc)
            else:
                rec.call(tc, *argv)
                if step.closes:
                    hang_up(c, "client")
        except ConnectionClosed:
            hang_up(c, "server")
        settle()
        mark(i)
    for c in list(pending):
        if will_come.get(c, True):
            drain(c)
    mark(len(steps) - 1)
    attribute_replies(rec.events, step_of_event)
    return step_of_event


def attribute_replies(events: Sequence[Event], step_of_event: list[int]) -> None:
    """A reply read later belongs to the step that sent its command, not the one it was read in."""
    sent: dict[int, list[int]] = {}
    for index, e in enumerate(events):
        if isinstance(e, Send):
            sent.setdefault(e.c, []).append(step_of_event[index])
        elif isinstance(e, Recv) and sent.get(e.c):
            step_of_event[index] = sent[e.c].pop(0)
        elif isinstance(e, Close):
            sent.pop(e.c, None)


# ---------------------------------------------------------------------------------------------
# Live servers


class _Connection(RespConnection):
    """A connection to an endpoint: TLS, AUTH and SELECT done before any recorded command."""

    def __init__(self, endpoint: Endpoint, timeout: float = 10.0) -> None:
        super().__init__(endpoint.host, endpoint.port, timeout)
        if endpoint.tls:
            self.sock = endpoint.ssl_context().wrap_socket(self.sock, server_hostname=endpoint.host)
        if endpoint.password is not None:
            auth = [b"AUTH", endpoint.password.encode()]
            if endpoint.username:
                auth.insert(1, endpoint.username.encode())
            self._setup(auth)
        if endpoint.db:
            self._setup([b"SELECT", b"%d" % endpoint.db])

    def _setup(self, argv: list[bytes]) -> None:
        reply = self.call(argv)
        if isinstance(reply, Error):
            self.close()
            raise TargetError(f"{argv[0].decode()} failed: {reply.text}")


class LiveRecorder(Recorder):
    """A recorder whose connections go to an endpoint; it knows every connection's CLIENT ID."""

    def __init__(self, target: LiveTarget, header: Header) -> None:
        super().__init__(target.endpoint.host, target.endpoint.port)
        self.header = header
        self.target = target
        self.client_ids: dict[int, int] = {}  # trace client -> server's CLIENT ID

    def conn(self, c: int) -> RespConnection:
        if c not in self.conns:
            connection = _Connection(self.target.endpoint)
            reply = connection.call([b"CLIENT", b"ID"])
            if isinstance(reply, Int):
                self.client_ids[c] = reply.value
            self.conns[c] = connection
            self.pending[c] = 0
        return self.conns[c]

    def blocked(self, c: int) -> bool:
        """Wait until client ``c``'s last command has either replied (False) or blocked (True)."""
        client_id = self.client_ids.get(c)
        deadline = time.monotonic() + 5
        while True:
            if not self.is_waiting(c, wait=BLOCK_WAIT if client_id is None else 0.0005):
                return False
            if client_id is None:
                return True  # no CLIENT ID: a reply that has not come within BLOCK_WAIT means blocked
            if self.target.is_blocked(client_id) or time.monotonic() > deadline:
                return True


@dataclass
class ServerInfo:
    name: str  # redis, valkey, ...
    version: str


def parse_info(text: str) -> dict[str, str]:
    """INFO's ``field:value`` lines as a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith("#"):
            out[key.strip()] = value.strip()
    return out


def server_info(info: dict[str, str]) -> ServerInfo:
    """Which server INFO describes: Valkey says ``server_name:valkey`` and ``valkey_version``."""
    name = info.get("server_name", "redis") or "redis"
    version = info.get(f"{name}_version") or info.get("redis_version") or "?"
    return ServerInfo(name, version)


CONFINED_OUT = frozenset({"flushall", "flushdb", "swapdb", "keys", "scan", "dbsize", "randomkey", "select",
                          "move", "info", "client|list", "client|kill"})
"""Commands that see or change more than the run's own keys: left out of a run confined to a prefix."""

OTHER_DATABASES = frozenset({"select", "swapdb", "move"})
"""Commands that reach other databases: left out of a run in the database a URL names (``/2``)."""


def _detect_dialect(url: str, server: str, version: str, *, nearest: bool) -> tuple[str, str]:
    """The dialect of a server from its INFO identity, and how it was chosen; with ``nearest``, a
    version no dialect models gets the nearest one, else it is refused by name."""
    try:
        return dialect_for_server(server, version).name, f"detected from INFO ({server} {version})"
    except UnknownDialect:
        pass
    close = nearest_dialect(server, version)
    if nearest and close is not None:
        return close.name, f"{close.name}, the nearest: no dialect models {server} {version} (--dialect nearest)"
    hint = (f"pass --dialect nearest to check it as {close.name}, the nearest, or --dialect NAME"
            if close is not None else "pass --dialect NAME to choose one")
    raise TargetError(f"{url}: {server} {version} has no dialect (known: {', '.join(sorted(DIALECTS))}); {hint}")


class LiveTarget:
    """A live server at a redis:// or rediss:// URL (see the module docstring)."""

    def __init__(self, url: str, endpoint: Endpoint, *, dialect: str | None = None,
                 allow_flush: bool = False) -> None:
        self.url = url
        self.endpoint = endpoint
        self.allow_flush = allow_flush
        self.control: _Connection | None = None  # opened when needed, closed while a run goes on
        try:
            self.server = server_info(self._probe())
            # how the dialect was chosen, for the reports
            self.dialect_source = "given with --dialect"
            if dialect is None or dialect == NEAREST:
                dialect, self.dialect_source = _detect_dialect(url, self.server.name, self.server.version,
                                                               nearest=dialect == NEAREST)
            self.can_flush = self._has_command(b"flushall")
            self.can_config = self._has_command(b"config")
        finally:
            self.release()
        self.dialect = dialect
        self.checked_empty = False
        # the control connection may stay open while a run goes on: nothing in it can see other connections
        self.keep_control = False
        self.skipped: list[str] = []  # every check left out so far, once each
        self.previous_clients: list[int] = []  # CLIENT IDs of the last run's connections

    # -- the control connection ------------------------------------------------------------
    def _open(self, timeout: float = 10.0) -> _Connection:
        try:
            return _Connection(self.endpoint, timeout)
        except TimeoutError:
            raise TargetError(f"{self.url}: cannot connect: no answer within {timeout:g} s") from None
        except ProtocolError as e:
            raise TargetError(f"{self.url}: not a Redis server (its reply is not RESP: {e})") from None
        except (OSError, ssl.SSLError) as e:
            raise TargetError(f"{self.url}: cannot connect: {e}") from None

    def _probe(self) -> dict[str, str]:
        """INFO server from a first connection that waits at most :data:`PROBE_TIMEOUT` for each answer:
        a port that is not a Redis server is told apart here, in one line, rather than by a failed run."""
        self.control = self._open(PROBE_TIMEOUT)
        try:
            self.control.send([b"INFO", b"server"])
            reply = self.control.recv(PROBE_TIMEOUT)
        except (OSError, ProtocolError) as e:
            self.control.close()  # no QUIT: a server that does not answer would not answer that either
            self.control = None
            if isinstance(e, TimeoutError):
                why = f"connected, but no reply to INFO within {PROBE_TIMEOUT:g} s: is it a Redis server?"
            elif isinstance(e, ConnectionClosed):
                why = "connected, but the connection closed before a reply to INFO came: is it a Redis server?"
            elif isinstance(e, ProtocolError):
                why = f"not a Redis server (its reply to INFO is not RESP: {e})"
            else:
                why = f"the connection failed: {e}"
            raise TargetError(f"{self.url}: {why}") from None
        if not isinstance(reply, Bulk):
            raise TargetError(f"{self.url}: INFO server failed: {reply}")
        return parse_info(reply.value.decode("utf-8", "replace"))

    def _call(self, *argv: bytes) -> Reply:
        if self.control is None:
            self.control = self._open()
        return self.control.call(list(argv))

    def release(self) -> None:
        """Close the control connection and wait until the server has dropped it, so that the
        conversation's CLIENT LIST and INFO do not show it."""
        control, self.control = self.control, None
        if control is None:
            return
        try:
            control.send([b"QUIT"])
            while True:
                control.recv(timeout=5)
        except (ConnectionClosed, OSError):
            pass
        finally:
            control.close()

    def _info(self, section: str) -> dict[str, str]:
        reply = self._call(b"INFO", section.encode())
        if not isinstance(reply, Bulk):
            raise TargetError(f"{self.url}: INFO {section} failed: {reply}")
        return parse_info(reply.value.decode("utf-8", "replace"))

    def _has_command(self, name: bytes) -> bool:
        """Is ``name`` callable under its own name? (COMMAND INFO answers nil for a renamed one)."""
        reply = self._call(b"COMMAND", b"INFO", name)
        items = getattr(reply, "items", None)
        if items is not None:
            return bool(items) and hasattr(items[0], "items")
        probe = self._call(name, b"xspec-probe")  # COMMAND unavailable: a syntax error means it exists
        return not (isinstance(probe, Error) and probe.text.startswith("ERR unknown command"))

    def is_blocked(self, client_id: int) -> bool:
        """Does the server show the connection with this CLIENT ID as blocked (flag ``b``)?"""
        reply = self._call(b"CLIENT", b"LIST", b"ID", b"%d" % client_id)
        if not self.keep_control:
            self.release()
        if not isinstance(reply, Bulk):
            return False
        fields = dict(part.split("=", 1) for part in reply.value.decode("latin-1").split() if "=" in part)
        return "b" in fields.get("flags", "")

    def _skip(self, reason: str) -> None:
        if reason not in self.skipped:
            self.skipped.append(reason)

    # -- a fresh state --------------------------------------------------------------------
    def holds_keys(self) -> bool:
        return any(key.startswith("db") and not value.startswith("keys=0")
                   for key, value in self._info("keyspace").items())

    def refuse_unless_flushable(self) -> None:
        """Raise :class:`TargetError` if testing would flush keys without ``allow_flush`` (checked once)."""
        if self.can_flush and not self.checked_empty and not self.allow_flush and self.holds_keys():
            raise TargetError(f"{self.url} holds keys; testing flushes every database: "
                              "pass --allow-flush to allow it")
        self.checked_empty = True

    def reset(self, config: dict[str, str]) -> tuple[dict[str, str], bytes | None]:
        """Empty the server (or choose a fresh prefix) and configure it; (header config, prefix)."""
        for client_id in self.previous_clients:  # a connection of the last run still blocked
            self._call(b"CLIENT", b"KILL", b"ID", b"%d" % client_id)
        self.previous_clients = []
        prefix: bytes | None = None
        if self.can_flush:
            self.refuse_unless_flushable()
            reply = self._call(b"FLUSHALL")
            if reply != Simple("OK"):
                raise TargetError(f"{self.url}: FLUSHALL failed: {reply}")
            # the script cache and the function libraries outlive FLUSHALL (SCRIPT-2, FUNCTION-2): a fresh
            # model has neither; a server without FUNCTION (6.2) answers an error, which is fine
            self._call(b"SCRIPT", b"FLUSH")
            self._call(b"FUNCTION", b"FLUSH")
        else:
            prefix = b"xspec:" + uuid.uuid4().hex[:12].encode() + b":"
            self._skip("FLUSHALL is renamed or disabled: each run is confined to a fresh key prefix; steps "
                       f"using {', '.join(sorted(CONFINED_OUT))} are left out, and empty key names are not tested")
        if self.endpoint.db:
            self._skip(f"the URL names database {self.endpoint.db}: steps using SELECT, SWAPDB and MOVE are left out")
        if self.endpoint.db or self.endpoint.password is not None:
            self._skip("the URL logs in or names a database: RESET steps are left out (RESET would undo it)")
        try:
            defaults = get_dialect(self.dialect).config_defaults
        except UnknownDialect:
            defaults = REDIS_70.config_defaults
        wanted = {**defaults, **(config or {})}
        if not self.can_config:
            self._skip("CONFIG is renamed or disabled: stream settings are not applied (the server's own are "
                       "assumed to be the dialect's defaults), CONFIG steps are left out")
            self.release()
            return {}, prefix
        for name, value in wanted.items():
            reply = self._call(b"CONFIG", b"SET", name.encode(), value.encode())
            if reply != Simple("OK"):
                raise TargetError(f"{self.url}: CONFIG SET {name} {value} failed: {reply}")
        self.release()
        return wanted, prefix

    def left_out(self, prefix: bytes | None) -> frozenset[str]:
        """Commands a run leaves out: they would see or change more than the run's own keys and database."""
        names: set[str] = set()
        if prefix is not None:
            names |= CONFINED_OUT
        if self.endpoint.db:
            names |= OTHER_DATABASES
        if self.endpoint.db or self.endpoint.password is not None:
            names.add("reset")  # it would log the connection out and select database 0
        if not self.can_config:
            names.add("config")
        return frozenset(names)

    def admit(self, argv: Sequence[Arg], prefix: bytes | None) -> tuple[Arg, ...] | None:
        """The command as this run sends it (keys prefixed when confined), None when it is left out."""
        name = _command(argv)
        if name is not None:
            left_out = self.left_out(prefix)
            if name in left_out or name.split("|")[0] in left_out:
                return None
        return tuple(argv) if prefix is None else prefix_keys(argv, prefix)

    def confine(self, steps: Sequence[Step], prefix: bytes | None) -> tuple[list[Step], list[int]]:
        """The steps this target can run (see :meth:`admit`) and the index of each."""
        kept: list[Step] = []
        index: list[int] = []
        for i, step in enumerate(steps):
            argv = self.admit(step.argv, prefix) if step.argv else step.argv
            if argv is None:
                continue
            kept.append(Step(step.client, argv, step.pause, step.pipelined))
            index.append(i)
        return kept, index

    def run_steps(self, steps: Sequence[Step], *, config: dict[str, str] | None = None, title: str = "") -> Run:
        applied, prefix = self.reset(dict(config or {}))
        kept, index = self.confine(steps, prefix)
        header = Header(server_name=self.server.name, server_version=self.server.version, clock="wall",
                        config=applied, title=title or None, source="generated",
                        extra={"target": self.url})
        rec = LiveRecorder(self, header)
        self.keep_control = not any(sees_connections(step.argv) for step in kept)
        try:
            step_of_event = drive(rec, kept, blocked=rec.blocked)
        finally:
            self.keep_control = False
            self.previous_clients = list(rec.client_ids.values())
            rec.close_all()
            if prefix is not None:
                self._delete_prefixed(kept, prefix)
            self.release()
        dropped = len(steps) - len(kept)
        skipped = list(self.skipped)
        if dropped:
            rec.events.insert(0, Note(f"{dropped} of {len(steps)} steps left out: " + "; ".join(skipped)))
            step_of_event.insert(0, 0)
        return Run(rec.trace(), [index[s] if index else 0 for s in step_of_event], skipped)

    def _delete_prefixed(self, steps: Sequence[Step], prefix: bytes) -> None:
        keys = {a for step in steps for a in step.argv if isinstance(a, bytes) and a.startswith(prefix)}
        if keys:
            self._call(b"DEL", *sorted(keys))

    def run(self, steps: Sequence[Step], *, config: dict[str, str] | None = None, title: str = "") -> Trace:
        return self.run_steps(steps, config=config, title=title).trace

    def close(self) -> None:
        self.release()


def _command(argv: Sequence[Arg]) -> str | None:
    """The table's full name of a command (``xgroup|create``), None for unknown ones."""
    if not argv or not isinstance(argv[0], bytes):
        return None
    words = [a if isinstance(a, bytes) else b"" for a in argv[:2]]
    spec = table.lookup(words)
    return spec.fullname if spec is not None else None


OBSERVERS = frozenset({"client|list", "client|kill", "info"})
"""Commands whose replies show (or act on) other connections, such as a control connection."""


def sees_connections(argv: Sequence[Arg]) -> bool:
    return _command(argv) in OBSERVERS


def key_positions(argv: Sequence[Arg]) -> list[int]:
    """Which arguments are key names (per the command table; XREAD/XREADGROUP: the first half after STREAMS)."""
    words = [a if isinstance(a, bytes) else b"" for a in argv]
    spec = table.lookup(words[:2])
    if spec is None:
        return []
    if spec.name in ("xread", "xreadgroup"):
        upper = [w.upper() for w in words]
        if b"STREAMS" not in upper:
            return []
        start = upper.index(b"STREAMS") + 1
        return list(range(start, start + (len(words) - start) // 2))
    if spec.first_key <= 0:
        return []
    last = spec.last_key if spec.last_key > 0 else len(argv) + spec.last_key
    return list(range(spec.first_key, min(last, len(argv) - 1) + 1, spec.key_step or 1))


def prefix_keys(argv: Sequence[Arg], prefix: bytes) -> tuple[Arg, ...]:
    out = list(argv)
    for i in key_positions(argv):
        a = out[i]
        if isinstance(a, bytes):
            out[i] = prefix + a
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The model


def _mutant(name: str | None) -> contextlib.AbstractContextManager[object]:
    if name is None:
        return contextlib.nullcontext()
    try:
        from xspec.models import mutants
    except ImportError:
        raise TargetError("model mutants are not available (xspec.models.mutants is missing)") from None
    known = getattr(mutants, "MUTANTS", {})
    if name not in known:
        raise TargetError(f"unknown mutant {name!r}; known: {', '.join(sorted(known)) or 'none'}")
    return mutants.apply(name)  # type: ignore[no-any-return]



class EmbeddedTarget(LiveTarget):
    """``embedded:``: the reference server in a child process, tested as a live server."""

    def __init__(self, url: str, *, dialect: str | None = None) -> None:
        from xspec.traces.harness.servers import ReferenceProcess
        try:
            self.process = ReferenceProcess(dialect=dialect or REDIS_70.name).start()
        except (RuntimeError, OSError) as e:
            raise TargetError(f"embedded: {e}") from None
        try:
            # The server was started empty for this run: flushing it is always allowed.
            super().__init__(url, parse_endpoint(f"redis://127.0.0.1:{self.process.port}"),
                             dialect=dialect, allow_flush=True)
        except BaseException:
            self.process.stop()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.process.stop()


class ModelTarget:
    """The model of one dialect (optionally with a mutant applied) on a virtual clock."""

    def __init__(self, url: str, dialect: Dialect, mutant: str | None = None) -> None:
        self.url = url
        self.dialect = dialect.name
        self.model_dialect = dialect
        self.mutant = mutant
        if mutant is not None:
            with _mutant(mutant):  # a bad mutant name is an error of the URL, reported now
                pass

    def run_steps(self, steps: Sequence[Step], *, config: dict[str, str] | None = None, title: str = "") -> Run:
        applied = {**self.model_dialect.config_defaults, **(config or {})}
        header = Header(server_name=self.model_dialect.server, server_version=self.model_dialect.version,
                        clock="virtual", config=applied, title=title or None, source="generated",
                        extra={"target": self.url})
        with _mutant(self.mutant):
            run = _ModelRun(Server(self.model_dialect, ManualClock(MODEL_EPOCH_MS), applied))
            step_of_event = run.drive(steps)
        return Run(Trace(header, run.events), step_of_event)

    def run(self, steps: Sequence[Step], *, config: dict[str, str] | None = None, title: str = "") -> Trace:
        return self.run_steps(steps, config=config, title=title).trace

    def close(self) -> None:
        pass


class _ModelRun:
    """One sequence on the model, with the same client policy as :func:`drive` on a live server.

    Events are written in the order the model executes: a command that
    completes at once is a ``call`` (a pipelined one a ``send`` and its
    ``recv``), a blocked one a ``send`` whose ``recv`` comes when it is served
    or times out. Commands a client pipelined behind its blocked read wait
    until it is unblocked, as a real server leaves them unread.
    """

    def __init__(self, server: Server) -> None:
        self.server = server
        self.clock: ManualClock = server.clock  # type: ignore[assignment]
        self.events: list[Event] = []
        self.step_of_event: list[int] = []
        self.conn: dict[int, int] = {}  # logical client -> trace client
        self.next_client = 1
        self.waiting: dict[int, list[tuple[list[bytes], int]]] = {}  # trace client -> queued (argv, step)
        self.blocked_step: dict[int, int] = {}  # trace client -> the step of its blocked command
        self.will_come: dict[int, bool] = {}  # logical client -> every pending reply arrives by itself soon

    def emit(self, event: Event, step: int) -> None:
        self.events.append(event)
        self.step_of_event.append(step)

    def trace_client(self, c: int) -> int:
        if c not in self.conn:
            self.conn[c] = self.next_client
            self.next_client += 1
        return self.conn[c]

    def pending(self, c: int) -> bool:
        tc = self.conn.get(c)
        return tc is not None and (tc in self.blocked_step or bool(self.waiting.get(tc)))

    # -- execution ----------------------------------------------------------------------
    def execute(self, tc: int, argv: list[bytes], step: int, pipelined: bool) -> None:
        """Run one command now; serve, unblock and continue the clients it woke."""
        now = self.clock.ms
        out = self.server.execute(tc, argv)
        if out.blocked:
            self.emit(Send(c=tc, cmd=argv, now=now), step)
            self.blocked_step[tc] = step
        elif pipelined:
            self.emit(Send(c=tc, cmd=argv, now=now), step)
            if out.reply is not None:
                self.emit(Recv(c=tc, reply=out.reply, now=now), step)
        else:
            assert out.reply is not None
            self.emit(Call(c=tc, cmd=argv, reply=out.reply, now=now), step)
        woken = []
        for cid, reply in out.served:
            self.emit(Recv(c=cid, reply=reply, now=now), self.blocked_step.pop(cid))
            woken.append(cid)
        self.resume(woken)

    def resume(self, clients: list[int]) -> None:
        """Unblocked clients read what they pipelined meanwhile (after the command that freed them)."""
        for tc in clients:
            queue = self.waiting.get(tc, [])
            while queue and tc not in self.blocked_step and tc in self.server.clients:
                argv, step = queue.pop(0)
                self.execute(tc, argv, step, pipelined=True)

    def advance(self, ms: int, step: int) -> None:
        """Time passes: blocked reads whose deadline has passed time out."""
        self.clock.advance(ms)
        due = self.server.due_timeouts(Instant(self.clock.ms))
        for cid, reply in due:
            self.emit(Recv(c=cid, reply=reply, now=self.clock.ms), self.blocked_step.pop(cid))
        self.resume([cid for cid, _ in due])

    def wait_for(self, c: int, step: int) -> None:
        """Client ``c`` waits for its blocked reads to time out (short timeouts only)."""
        tc = self.conn[c]
        while tc in self.blocked_step:
            state = self.server.clients[tc].blocked
            assert state is not None and state.deadline is not None
            self.advance(max(Instant.exact_ms(state.deadline) + 1 - self.clock.ms, 0), step)

    def hang_up(self, c: int, step: int) -> None:
        tc = self.conn.pop(c)
        self.server.close(tc)
        self.blocked_step.pop(tc, None)
        self.waiting.pop(tc, None)
        self.will_come.pop(c, None)
        self.emit(Close(c=tc, by="client"), step)

    def drive(self, steps: Sequence[Step]) -> list[int]:
        for i, step in enumerate(steps):
            if not step.argv:
                self.advance(step.pause, i)
                continue
            c = step.client
            pipelined = step.pipelined and not step.closes
            if self.pending(c) and not pipelined:
                if self.will_come.get(c, True):
                    self.wait_for(c, i)
                else:
                    self.hang_up(c, i)
            if not self.pending(c):
                self.will_come.pop(c, None)
            tc = self.trace_client(c)
            argv = resolve(step.argv, self.clock.ms)
            if pipelined or step.may_block:
                self.will_come[c] = self.will_come.get(c, True) and ends_soon(step)
            if self.pending(c):  # behind a blocked read: the server does not read it yet
                self.waiting.setdefault(tc, []).append((argv, i))
                continue
            self.execute(tc, argv, i, pipelined)
            if step.closes:
                self.hang_up(c, i)
        for c in list(self.conn):
            if self.pending(c) and self.will_come.get(c, True):
                self.wait_for(c, len(steps) - 1)
        return self.step_of_event
