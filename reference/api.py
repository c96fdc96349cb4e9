"""The contract between the reference server's core and its command modules.

The core (networking, dispatch, databases, MULTI/EXEC, blocking, clocks,
faults) calls a command module's handlers through :data:`Handler`; a handler
sees the server only through :class:`Context`. Keeping this seam small is what
lets the stream commands be written, tested and profiled on their own.

Replies are the semantic values of :mod:`xspec.spec.resp` (``Map``,
``NullBulk``, ``NullArray`` ...); the core renders them for the client's
protocol. A handler may instead write its reply in RESP itself, for the
calling client's protocol, and return it as :class:`Encoded` (the stream
commands do so for entries, straight from their stored bytes). Errors are
raised as :class:`ReplyError` with Redis's full text.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

from xspec.spec.dialect import Dialect
from xspec.spec.resp import Reply


class ReplyError(Exception):
    """A command failed; ``text`` is the whole error line (``ERR syntax error``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Encoded:
    """A whole reply already in RESP, as the calling client's protocol (``client.proto``) writes it.

    The server writes ``parts`` one after the other, as they are; each counts as
    one piece of the client's output for the server's flow control (a stream
    entry is one part). What looks at replies rather than writing them
    (``--trace``, ``--checked``, EXEC's array) reads them back with
    ``reference.protocol.decoded``, which gives the reply as that client
    received it (``for_protocol``'s form).
    """

    __slots__ = ("parts",)

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts


class Blocked:
    """Returned by a handler that blocked its client (see :meth:`Context.block`)."""

    __slots__ = ()


BLOCKED = Blocked()


class Postponed:
    """Returned for a command held back by CLIENT PAUSE: it runs from the start once the pause ends."""

    __slots__ = ()


POSTPONED = Postponed()


class PreRendered:
    """A reply already rendered for the wire (EXEC's array mixes protocols after a queued HELLO)."""

    __slots__ = ("reply",)

    def __init__(self, reply: Reply) -> None:
        self.reply = reply


class ClientView(Protocol):
    """What a handler may know about the calling client."""

    id: int
    name: bytes
    proto: int  # 2 or 3
    db: int


class Context(Protocol):
    """One command execution, as a handler sees the server."""

    client: ClientView
    argv: list[bytes]
    # The selected database: key -> value (bytes for strings, the stream
    # module's stream object for streams).
    db: MutableMapping[bytes, Any]
    # False inside MULTI/EXEC (and scripts): blocking commands answer at once.
    can_block: bool
    # The C errno of 7.0's main thread, which 7.0's XADD shows in one error
    # (spec/rules/streams.md XADD-14). Server-wide and persistent across
    # commands: stream handlers read and write it where 7.0's code writes it;
    # the core writes it too (EAGAIN when it accepts a connection, 0 for a
    # SCAN cursor parse, a blocked client's timeout, ... as XADD-14 lists).
    errno: int
    # The dialect served (``xspec serve --dialect``): its switches (``spec/dialect.py``, documented in
    # ``spec/dialects.md``) say where the server departs from 7.0.15. Handlers read them, as the model's do.
    dialect: Dialect

    def now_ms(self) -> int:
        """The server clock (wall or virtual), milliseconds since the epoch."""
        ...

    def clock(self) -> Callable[[], int]:
        """What :meth:`now_ms` calls, for this command: got once, it saves a call per reading in
        loops that read the clock for each entry. Each call is a reading, as ``now_ms()`` is."""
        ...

    def config_int(self, name: str) -> int:
        """An integer configuration value (``stream-node-max-entries`` ...)."""
        ...

    def modified(self, key: bytes) -> None:
        """signalModifiedKey: EXEC of clients WATCHing ``key`` will fail."""
        ...

    def ready(self, key: bytes) -> None:
        """signalKeyAsReady: clients blocked on ``key`` are retried after this command."""
        ...

    def changed(self, n: int = 1) -> None:
        """``server.dirty += n``: the command changed the data ``n`` times (spec/rules/stats.md STATS-4)."""
        ...

    def deleted(self, key: bytes) -> None:
        """A stream key was deleted or overwritten: blocked readers are retried and see it gone."""
        ...

    def block(self, keys: list[bytes], timeout_ms: int,
              retry: Callable[[Context, bytes], Reply | Encoded | None],
              timeout_reply: Reply, read_at: int | None = None) -> Blocked:
        """Block the client on ``keys`` (FIFO per key); ``timeout_ms`` 0 waits forever.

        The deadline is ``read_at + timeout_ms``: pass the clock reading taken
        where 7.0 reads it (parsing a positive BLOCK timeout, before the
        command runs); without it the core reads the clock here.

        When one of the keys is signalled (``ready``/``deleted``), the core
        calls ``retry(ctx, key)`` with a fresh context of the blocked client
        and the signalled key (7.0 serves only that key): a reply (or a
        raised :class:`ReplyError`) unblocks and answers it, None keeps it
        waiting in its place. At the deadline it gets ``timeout_reply``.
        """
        ...


# A command handler: ``argv[0]`` is the command name as sent.
Handler = Callable[[Context], Reply | Encoded | Blocked]


# -- ``--checked``: what the server needs from a checker ----------------------------------------
class CheckerClock(Protocol):
    """The clock the server hands its checker: the readings the server's own handlers made."""

    def now_ms(self) -> int:
        """The next reading the server made for the command being checked."""
        ...


class CheckedOutcome(Protocol):
    """What the checker says one command did."""

    @property
    def reply(self) -> Reply | None:
        """The reply, as the calling client's protocol renders it; None when it blocked or gave none."""
        ...

    @property
    def blocked(self) -> bool: ...

    @property
    def served(self) -> list[tuple[int, Reply]]:
        """The blocked clients this command served, in order, with their replies."""
        ...


class Checker(Protocol):
    """An executable specification run beside the server by ``xspec serve --checked``.

    The server feeds it every command it executes (not those it does not run
    itself, nor those an injected fault refused) and compares what comes back.
    """

    def connect(self, client_id: int | None = None) -> int:
        """A new connection with the server's client id."""
        ...

    def close(self, client_id: int) -> None: ...

    def execute(self, client_id: int, argv: list[bytes]) -> CheckedOutcome: ...

    def timeout(self, client_id: int) -> Reply:
        """The blocked client's deadline passed: its timeout reply."""
        ...


# Builds a checker for the served dialect, reading the given clock, with the server's
# configuration (the dialect's stream settings, ``requirepass`` when set).
CheckerFactory = Callable[[Dialect, CheckerClock, dict[str, str]], Checker]
