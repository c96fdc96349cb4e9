"""The reference server's connections: reading, running and answering one client (``asyncio`` protocol).

:class:`ClientConnection` is what the event loop calls for a client's socket
(``connection_made``, ``data_received``, ...; asyncio and uvloop call these by
name, so it needs no ``asyncio.Protocol`` base, and stays a class mypyc can
compile natively: the optional build of setup.py does). Each chunk read is
parsed (``reference.protocol``), its commands run one after the other on the
:class:`~xspec.reference.core.Core`, and their replies are queued until the
loop turn's input is all handled (:meth:`ServerState.flush_all`). The
fairness, flow control and limits it applies are described in
``reference.server``.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from typing import Any, Final, Protocol

from xspec.reference.api import POSTPONED, Encoded, PreRendered
from xspec.reference.core import Client, Core
from xspec.reference.protocol import (
    BULK_HEADERS,
    BULK_TYPE,
    ENCODERS,
    FAST_SCAN,
    INT_TYPE,
    RequestError,
    encode_into,
    parse_fast_scan,
    parse_fast_split,
    parse_requests,
)
from xspec.spec.resp import OK, Reply, encode

MAX_CLIENTS_REACHED = b"-ERR max number of clients reached\r\n"
DENIED = (
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for "
    b"the default user. In this mode connections are only accepted from the loopback interface. If you want to "
    b"connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable "
    b"protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by "
    b"connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly "
    b"accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    b"Alternatively you can just disable the protected mode by editing the Redis configuration file, and "
    b"setting the protected mode option to 'no', and then restarting the server. 3) If you started the server "
    b"manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an "
    b"authentication password for the default user. NOTE: You only need to do one of the above things in "
    b"order for the server to start accepting connections from the outside.\r\n")
TURN_COMMANDS: Final = 512  # commands of one client per loop turn (about 20 KB of small pipelined commands)
TURN_REPLY_PIECES: Final = 16384  # reply pieces (bulk strings, headers) of one client per loop turn
TURN_INPUT: Final = 65536  # a read this large pauses reading until the next loop turn
OUTPUT_HIGH_WATER = 1 << 20  # unsent reply bytes past which a client's commands wait (pause_writing)
OUTPUT_LOW_WATER = 1 << 18  # ... until they are down to this (resume_writing)



def _addr(sockaddr: Any) -> str:
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        host = sockaddr[0]
        return f"[{host}]:{sockaddr[1]}" if ":" in host else f"{host}:{sockaddr[1]}"
    return f"{sockaddr}:0"


def _is_loopback(sockaddr: Any) -> bool:
    if not isinstance(sockaddr, tuple):
        return True  # a unix socket
    try:
        ip = ipaddress.ip_address(sockaddr[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback

class ServerState:
    """What every command's path reads of the server, and the replies waiting for the end of the loop turn.

    ``reference.server.ReferenceServer`` keeps one and shows its fields as its own attributes; they
    live here so that the compiled connections read them without a Python attribute lookup.
    """

    def __init__(self) -> None:
        self.shutdown_asap = False  # a shutdown was asked for: no further command runs
        self.paused = False  # XSPEC.NODE PAUSE: connections read nothing until RESUME
        self.delays: dict[int, float] = {}  # client id (0: everyone) -> seconds, XSPEC.FAULT DELAY
        # Called before any reply leaves (reference.aof: appendfsync always syncs what the commands wrote)
        self.before_replies: Callable[[], None] | None = None
        self.to_flush: list[ClientConnection] = []  # connections with queued replies, in queuing order

    def flush_all(self) -> None:
        """The end of a loop turn: every queued reply leaves (``handleClientsWithPendingWrites``)."""
        conns, self.to_flush = self.to_flush, []
        for conn in conns:
            conn.flush()


class Hub(Protocol):
    """What a connection uses of its server (``reference.server.ReferenceServer``)."""

    core: Core
    connections: set[ClientConnection]
    state: ServerState

    def output_limits(self) -> tuple[int, int, int] | None: ...

    def reply_delay(self, c: Client | None) -> float: ...


def _held(c: Client, core: Core) -> bool:
    """Whether ``c`` waits (blocked or paused). A function of its own: the loop in
    ClientConnection.process tests ``c.blocked is None``, and mypy keeps that narrowing past
    the commands that block the client (which mypyc would then check and refuse)."""
    return c.blocked is not None or c in core.postponed


class ClientConnection:
    """One client connection: input buffering and parsing, running, writing replies.

    The event loop's protocol for the connection (asyncio and uvloop call its methods by name).
    """

    def __init__(self, server: Hub) -> None:
        self.server = server
        self.core = server.core
        self.state = server.state
        # Any, not asyncio.Transport: uvloop's transports do not derive from it, and mypyc checks annotations.
        self.transport: Any = None
        self.client: Client | None = None
        self.buf = b""
        self.need = 0  # the buffer length worth parsing again at
        self.parts: list[bytes] | None = None  # chunks of a long command, joined once it is complete
        self.parts_len = 0
        self.pending: list[list[bytes]] = []  # parsed commands waiting for a blocked client
        self.pending_error: RequestError | None = None
        self.closing = False  # close once the replies so far are written
        self.closed_by_server = False
        self.delayed_until = 0.0
        self.queued: list[bytes] | None = None  # replies waiting for the end of the loop turn (flush)
        self.deferred = False  # the turn's budget is used: reading paused, the rest runs on the next turn
        self.output_full = False  # unsent replies over the high-water mark: no command runs
        self.high_water = OUTPUT_HIGH_WATER  # raised to let the buffer reach client-output-buffer-limit
        self.over_soft_limit_since = 0.0  # loop time the soft output limit was first exceeded (0: it is not)
        self.eof = False  # the client half-closed while commands it sent were held for a later turn
        self.paused_input: list[bytes] = []  # read while the server was paused (XSPEC.NODE PAUSE)

    # -- asyncio callbacks ------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:  # Any: see self.transport
        self.transport = transport
        core = self.core
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("socket")
        if len(core.clients) >= core.int_setting("maxclients"):
            core.stat_rejected_connections += 1
            self._refuse(MAX_CLIENTS_REACHED)
            return
        if core.config["protected-mode"] == "yes" and core.requirepass is None and not _is_loopback(peer):
            core.stat_rejected_connections += 1
            self._refuse(DENIED)
            return
        self.client = core.connect(self, _addr(peer), _addr(transport.get_extra_info("sockname")),
                                   sock.fileno() if sock is not None else -1)
        self._set_high_water(OUTPUT_HIGH_WATER)
        self.server.connections.add(self)
        if self.state.paused:  # XSPEC.NODE PAUSE (reference/replication_deployment.py): nothing is read
            transport.pause_reading()

    def _refuse(self, text: bytes) -> None:
        assert self.transport is not None
        self.transport.write(text)
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        if self.client is not None:
            self.core.disconnect(self.client, "server" if self.closed_by_server else "client")
            self.client = None

    def data_received(self, data: bytes) -> None:
        c = self.client
        if (c is not None and not self.buf and not self.need and self.parts is None and not self.pending
                and c.blocked is None and self.pending_error is None and not self.closing and not self.output_full
                and len(data) < TURN_INPUT):
            state = self.state
            core = self.core
            if (not state.paused and not state.shutdown_asap and not core.postponed
                    and (c.authenticated or core.requirepass is None)):
                # process() for the common read: a client at rest, nothing held, whole canonical commands
                cmds: list[list[bytes]] = []
                if (parse_fast_scan(data, cmds) if FAST_SCAN else parse_fast_split(data, cmds)) == len(data):
                    out: list[bytes] = []
                    done = self.run(cmds, out)
                    if done < len(cmds) or _held(c, core):
                        self.pending = cmds[done:]
                        more = not _held(c, core)
                    else:  # what process() finds at the top of its loop with nothing left to parse
                        more = ((done >= TURN_COMMANDS or len(out) >= TURN_REPLY_PIECES) and c.blocked is None
                                and not self.closing and not state.shutdown_asap and not self.output_full)
                    if out:
                        self.write(out)
                    if self.closing:
                        self.close_after_writes()
                    elif more:
                        self._defer()
                    return
        self._data_received(data)

    def _data_received(self, data: bytes) -> None:
        if self.client is None or self.closing or self.state.shutdown_asap:
            return
        if self.state.paused:  # XSPEC.NODE PAUSE: kept unread until RESUME (reference/replication_deployment.py)
            self.transport.pause_reading()
            self.paused_input.append(data)
            return
        if len(data) >= TURN_INPUT:
            self._defer()  # one full read per loop turn; this one still runs now
        c = self.client
        takes_input = (c.blocked is None and not self.pending and not self.output_full
                       and c not in self.core.postponed)
        if self.parts is not None:
            self.parts.append(data)
            self.parts_len += len(data)
            if self.parts_len < self.need or not takes_input:
                self._check_query_buffer(self.parts_len)
                return
            data = b"".join(self.parts)
            self.parts = None
        elif self.buf:
            if not takes_input:  # held input is collected in parts, joined once when it runs
                self.parts, self.parts_len = [self.buf, data], len(self.buf) + len(data)
                self.buf = b""
                self._check_query_buffer(self.parts_len)
                return
            data = self.buf + data
        self.buf = data
        if len(data) < self.need:
            self._check_query_buffer(len(data))
            if self.need - len(data) > 65536:
                self.parts, self.parts_len = [data], len(data)
                self.buf = b""
            return
        if not takes_input:
            self._check_query_buffer(len(data))
            return
        self.process()

    def eof_received(self) -> bool:
        """The client half-closed: the commands it sent before still run, then the connection closes.

        Redis runs all it reads before it reads again, so every command that came before the end
        of input has run (and its reply was sent) when Redis sees the end and frees the client.
        Input held back here (a slow reader's) therefore still runs, output high-water mark or
        not, a turn's budget at a time; a client blocked or paused is closed now, as Redis does.
        """
        self.flush()
        c = self.client
        if c is None or c.blocked is not None or c in self.core.postponed or not self._has_input():
            return False
        self.eof = True
        self.resume()
        return True  # the transport stays open until _finish_after_eof

    def _finish_after_eof(self) -> None:
        self.flush()
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        """The transport holds more than ``OUTPUT_HIGH_WATER`` unsent bytes: run nothing more for now."""
        self.output_full = True

    def resume_writing(self) -> None:
        """The unsent replies are down to ``OUTPUT_LOW_WATER``: run what was held back."""
        self.output_full = False
        if self._has_input():
            self.resume()

    def _runnable(self) -> bool:
        """Whether this client's next command may run now (not blocked, paused, closing or output-full)."""
        c = self.client
        return (c is not None and c.blocked is None and not self.closing
                and (not self.output_full or self.eof) and c not in self.core.postponed)

    def _has_input(self) -> bool:
        return bool(self.pending or self.pending_error or self.buf or self.parts)

    def _defer(self) -> None:
        """Stop reading for the rest of this loop turn; carry on at the next one (``_next_turn``)."""
        if not self.deferred and self.transport is not None:
            self.deferred = True
            self.transport.pause_reading()
            asyncio.get_running_loop().call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self.deferred = False
        if self.transport is None or self.transport.is_closing() or self.client is None or self.closing:
            return  # closed meanwhile (CLIENT KILL, XSPEC.FAULT CLOSE): what it sent is dropped, as in Redis
        if not self.eof:
            self.transport.resume_reading()
        if self._runnable() and self._has_input():
            self.process()
        elif self.eof:
            self._finish_after_eof()

    # -- running commands ----------------------------------------------------------------------
    def process(self) -> None:
        """Run what the buffer holds, until it is used up, the client blocks or the connection closes."""
        c = self.client
        assert c is not None
        core = self.core
        state = self.state
        out: list[bytes] = []
        if self.parts is not None and self.parts_len >= self.need:  # input held while the client waited
            self.buf = b"".join(self.parts)
            self.parts = None
        budget = TURN_COMMANDS
        more = False  # the turn's budget ran out with commands left
        while (c.blocked is None and not self.closing and not state.shutdown_asap
               and (self.eof or not self.output_full)):
            if budget <= 0 or len(out) >= TURN_REPLY_PIECES:
                more = True
                break
            if self.pending or self.pending_error:
                cmds, error = self.pending, self.pending_error
                self.pending, self.pending_error = [], None
            else:
                buf = self.buf
                if not buf or len(buf) < self.need:
                    break
                cmds = []
                error = None
                auth_required = not c.authenticated and core.requirepass is not None
                # The canonical commands first; the exact parser only for what they leave. A long
                # buffer is parsed a turn's input at a time (what is parsed runs this turn).
                window = buf if len(buf) <= TURN_INPUT else buf[:TURN_INPUT]
                consumed = (0 if auth_required else parse_fast_scan(window, cmds) if FAST_SCAN
                            else parse_fast_split(window, cmds))
                if consumed == len(buf):
                    self.buf = b""
                    self.need = 0
                elif consumed and window is not buf:
                    self.buf = buf[consumed:]
                    self.need = 0
                else:
                    try:
                        used, self.need = parse_requests(buf[consumed:] if consumed else buf, core.max_bulk(),
                                                         auth_required, cmds)
                        consumed += used
                    except RequestError as e:
                        error = e
                        consumed = len(buf)
                        self.need = 0
                    self.buf = buf[consumed:] if consumed < len(buf) else b""
                    if not cmds and error is None and not consumed:
                        break
            done = self.run(cmds, out, budget)
            budget -= done
            held = _held(c, core)
            if done < len(cmds) or held:
                self.pending, self.pending_error = cmds[done:], error
                more = not held
                break
            if error is not None:
                out.append(b"-%s\r\n" % error.text.encode("utf-8", "surrogateescape"))
                core.count_error(error.text)  # STATS-1: a protocol error is an error reply too
                if core.observer is not None:
                    core.observer.protocol_error(c, error.raw, error.text)
                self.closing = True
        if out:
            self.write(out)
        if self.closing:
            self.close_after_writes()
            return
        if more:
            self._defer()  # after write(): this turn's replies are flushed before the next batch runs
        elif self.eof:
            self._finish_after_eof()
        if self.buf:
            self._check_query_buffer(len(self.buf))

    def run(self, cmds: list[list[bytes]], out: list[bytes], budget: int = TURN_COMMANDS) -> int:
        """Run parsed commands in order; stop after one that blocks or closes, or when ``budget``
        commands ran or ``TURN_REPLY_PIECES`` reply pieces are out. Returns how many ran."""
        c = self.client
        assert c is not None
        core = self.core
        plain = not core.snapshot_per_command
        state = self.state
        max_pieces = TURN_REPLY_PIECES
        bulk_headers = BULK_HEADERS
        n = 0
        for argv in cmds:
            n += 1
            r: Any = core.execute_plain(c, argv) if plain else core.execute(c, argv)  # Any: the type tests below
            if r is not None:
                t = type(r)
                if c.reply_mode != "on":
                    if r is POSTPONED:  # CLIENT PAUSE: this command and the rest wait for resume()
                        return n - 1
                    self._skip_reply(c)
                elif t is BULK_TYPE:  # the commonest replies, encoded here (as encode_into does)
                    v = r.value
                    try:
                        out += (bulk_headers[len(v)], v, b"\r\n")  # no formatting: the header is made
                    except IndexError:
                        out.append(b"$%d\r\n%b\r\n" % (len(v), v))
                elif t is INT_TYPE:
                    out.append(b":%d\r\n" % r.value)
                elif r is OK:
                    out.append(b"+OK\r\n")
                elif t is Encoded:
                    out += r.parts
                elif t is PreRendered:
                    out.append(encode(r.reply))
                elif r is POSTPONED:
                    return n - 1
                else:
                    ENCODERS[c.proto][t](r, out)
            if c.blocked is not None or self.closing or state.shutdown_asap:
                break  # a shutdown signal stops the pipeline between two commands
            if n >= budget or len(out) >= max_pieces:
                break
        return n

    @staticmethod
    def _skip_reply(c: Client) -> None:
        # CLIENT REPLY OFF drops every reply; SKIP drops its own and the next one.
        if c.reply_mode == "skip":
            c.reply_mode = "skip-next"
        elif c.reply_mode == "skip-next":
            c.reply_mode = "on"

    def _check_query_buffer(self, size: int) -> None:
        if size > self.core.int_setting("client-query-buffer-limit"):
            self.close_now()  # Redis logs it and closes the client without a reply

    # -- core's Connection interface ----------------------------------------------------------------
    def deliver(self, reply: Reply | Encoded) -> None:
        """A reply for a client that was blocked; its pipelined commands run next."""
        c = self.client
        if c is None or self.transport is None:
            return
        out: list[bytes] = []
        if c.reply_mode != "on":
            self._skip_reply(c)
        else:
            encode_into(reply, c.proto, out)
        self.write(out)
        if self._has_input():
            self.resume()

    def resume(self) -> None:
        """Carry on with the input held back (after a block or a pause), on the next loop turn."""
        asyncio.get_running_loop().call_soon(self._resume)

    def _resume(self) -> None:
        if self._runnable() and self.transport is not None and not self.transport.is_closing():
            self.process()

    def close_after_reply(self) -> None:
        self.closing = True

    def close_now(self) -> None:
        self.closed_by_server = True
        if self.transport is not None:
            self.flush()  # what was answered before the kill still leaves, as it did unqueued
            self.transport.abort()

    def shut(self) -> None:
        """Server shutdown: what is answered leaves if the socket takes it; the connection closes now.

        Nothing is waited for (a slow reader's full buffer, a half-closed peer): the transport is
        aborted and the client is forgotten by the core here, so its ``close`` is traced at once.
        """
        self.flush()
        self.closed_by_server = True
        if self.transport is not None:
            self.transport.abort()
        if self.client is not None:
            self.core.disconnect(self.client, "server")
            self.client = None

    def close_after_writes(self) -> None:
        self.closed_by_server = True
        assert self.transport is not None
        self.flush()
        delay = self.delayed_until - asyncio.get_running_loop().time()
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self.transport.close)
        else:
            self.transport.close()

    # -- output -------------------------------------------------------------------------------------
    def write(self, out: list[bytes]) -> None:
        """Queue replies; they leave in one write per connection when the loop turn's input is done.

        As Redis answers from beforeSleep: every connection that was readable runs its commands
        first, then the replies go out, so waking the clients does not interrupt the work.
        """
        if not out or self.transport is None:
            return
        state = self.state
        if not state.delays and self.delayed_until == 0.0:
            if self.queued is None:
                self.queued = out
                to_flush = state.to_flush  # the first reply of the turn schedules the flush
                if not to_flush:
                    asyncio.get_running_loop().call_soon(state.flush_all)
                to_flush.append(self)
            else:
                self.queued += out
            return
        self.flush()  # delayed replies come after the ones already answered
        data = out[0] if len(out) == 1 else b"".join(out)
        delay = self.server.reply_delay(self.client)
        loop = asyncio.get_running_loop()
        due = max(loop.time() + delay, self.delayed_until)  # delayed replies keep their order
        self.delayed_until = due
        loop.call_at(due, self._write_later, data, due)

    def flush(self) -> None:
        """Write the queued replies now."""
        out = self.queued
        if out is not None:
            self.queued = None
            before_replies = self.state.before_replies
            if before_replies is not None:
                before_replies()
            transport = self.transport
            if transport is not None and not transport.is_closing():
                transport.write(out[0] if len(out) == 1 else b"".join(out))
                unsent = transport.get_write_buffer_size()  # 0 unless the socket is full: no limit is near
                if unsent:
                    self._check_output_limits(unsent)
                elif self.over_soft_limit_since:
                    self.over_soft_limit_since = 0.0

    def _set_high_water(self, high: int) -> None:
        assert self.transport is not None
        self.high_water = high
        self.transport.set_write_buffer_limits(high, OUTPUT_LOW_WATER)

    def _check_output_limits(self, unsent: int) -> None:
        """``checkClientOutputBufferLimits`` for the normal class: close a client over the hard limit,
        or over the soft limit for longer than its seconds (Redis frees it without a reply)."""
        limits = self.server.output_limits()
        hard, soft, soft_seconds = limits if limits is not None else (0, 0, 0)
        high = max(OUTPUT_HIGH_WATER, hard + 1)  # the buffer may reach the hard limit (Redis lets it)
        if high != self.high_water:
            self._set_high_water(high)
            if self.output_full and unsent < high:
                self.resume_writing()  # paused at the old mark, on this very write
        if hard and unsent >= hard:
            self.close_now()
            return
        if not soft or unsent < soft:
            self.over_soft_limit_since = 0.0
            return
        now = asyncio.get_running_loop().time()
        if not self.over_soft_limit_since:
            self.over_soft_limit_since = now
        elif now - self.over_soft_limit_since > soft_seconds:
            self.close_now()

    def _write_later(self, data: bytes, due: float) -> None:
        before_replies = self.state.before_replies
        if before_replies is not None:
            before_replies()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
        if self.delayed_until == due:
            self.delayed_until = 0.0
