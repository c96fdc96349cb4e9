"""The reference server's network side: an asyncio server speaking RESP2/RESP3 over TCP.

One :class:`ClientConnection` (an ``asyncio.Protocol``; uvloop's loop when
uvloop is importable) per connection. Each chunk read is parsed into as many
commands as it holds (``reference.protocol``), they run one after the other on
the :class:`~xspec.reference.core.Core`, and their replies are queued; when the
loop turn's input is all handled, each connection's queued replies leave in one
write (Redis's ``beforeSleep``), so waking clients does not interrupt the work.
A blocked client stops there: the commands it pipelined after the blocking one
wait, parsed, until it is served or times out, and then run.

Fairness and flow control (Redis reads at most ``PROTO_IOBUF_LEN`` per client per
event-loop turn and answers in ``beforeSleep``; uvloop would read a ready socket up
to 32 times, 256 KB each, per turn):

* one loop turn runs at most ``TURN_COMMANDS`` commands of a client (or until
  its replies reach ``TURN_REPLY_PIECES`` pieces); the rest wait, parsed, for the
  next turn, with reading paused meanwhile, so every other ready client is served
  and the replies so far leave in between. A read of ``TURN_INPUT`` bytes or more
  also pauses reading until the next turn.
* a client whose unsent replies pass ``OUTPUT_HIGH_WATER`` (a slow reader) has
  no further command run until they drain below ``OUTPUT_LOW_WATER``. Its input
  is still read and kept (up to ``client-query-buffer-limit``, Redis's rule):
  a client that writes a whole pipeline before reading any reply (redis-py's
  pipelines do) is never left waiting on a server that waits on it.
* ``client-output-buffer-limit``'s ``normal`` class, as Redis: a client whose
  unsent replies reach the hard limit, or stay over the soft limit longer than
  its seconds, is closed without a further reply (0 0 0, the default: never).
  A hard limit above the high-water mark raises the mark to it, so a slow reader
  is closed where Redis closes it rather than held. Both are checked when
  replies are written, as Redis checks when it adds them.

Limits, with Redis's defaults and CONFIG control: ``proto-max-bulk-len`` and
the multibulk length (protocol errors), ``client-query-buffer-limit`` (a client
whose unprocessed input grows past it is closed, as Redis does, without a
reply), ``maxclients`` (``-ERR max number of clients reached``; the open-files
limit is raised at start for it, as Redis does). Protected mode: with
``protected-mode yes`` and no password, connections from outside the loopback
interface get Redis's ``-DENIED`` text and are closed.

Shutdown (:func:`run_server`): SIGTERM or SIGINT is taken by a Python-level
handler, which runs at the next bytecode even while the loop is busy inside a
callback; it stops commands from running at once and schedules
:meth:`ReferenceServer.stop` (listener, then connections, then the trace); a
second signal exits at once. ``XSPEC_SERVE_PARENT_PID`` makes the server shut
down when that process (its parent) is gone.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import ipaddress
import os
import resource
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from xspec.reference.api import POSTPONED, CheckerFactory, Encoded, PreRendered
from xspec.reference.clock import make_clock
from xspec.reference.core import Client, Core
from xspec.reference.handlers import new_core
from xspec.reference.protocol import BULK_HEADERS, ENCODERS, RequestError, encode_into, parse_fast, parse_requests
from xspec.spec.resp import OK, Bulk, Int, Reply, encode

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
RESERVED_FDS = 32  # CONFIG_MIN_RESERVED_FDS
PARENT_PID_ENV = "XSPEC_SERVE_PARENT_PID"  # shut down when this process (the parent) is gone
PARENT_DEATH_SIGNAL = signal.SIGHUP  # what the kernel sends when the parent's thread exits (PR_SET_PDEATHSIG)
PARENT_POLL_SECONDS = 0.5  # where PR_SET_PDEATHSIG is missing: how often the parent pid is looked at
SHUTDOWN_DEADLINE_SECONDS = 3  # after a shutdown signal, SIGALRM ends the process whatever it is doing
PR_SET_PDEATHSIG = 1
TURN_COMMANDS = 512  # commands of one client per loop turn (about 20 KB of small pipelined commands)
TURN_REPLY_PIECES = 16384  # reply pieces (bulk strings, headers) of one client per loop turn
TURN_INPUT = 65536  # a read this large pauses reading until the next loop turn
OUTPUT_HIGH_WATER = 1 << 20  # unsent reply bytes past which a client's commands wait (pause_writing)
OUTPUT_LOW_WATER = 1 << 18  # ... until they are down to this (resume_writing)
_MEMORY_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2, "g": 1000 ** 3,
                 "gb": 1024 ** 3}


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


def _held(c: Client, core: Core) -> bool:
    """Whether ``c`` waits (blocked or paused). A function of its own: the loop in
    ClientConnection.process tests ``c.blocked is None``, and mypy keeps that narrowing past
    the commands that block the client (which mypyc would then check and refuse)."""
    return c.blocked is not None or c in core.postponed


class ClientConnection(asyncio.Protocol):
    """One client connection: input buffering and parsing, running, writing replies."""

    def __init__(self, server: ReferenceServer) -> None:
        self.server = server
        self.core = server.core
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
        if self.server.paused:  # XSPEC.NODE PAUSE (reference/replication_deployment.py): nothing is read
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
            server = self.server
            core = self.core
            if (not server.paused and not server.shutdown_asap and not core.postponed
                    and (c.authenticated or core.requirepass is None)):
                cmds: list[list[bytes]] = []
                if parse_fast(data, cmds) == len(data):
                    self._run_read(c, cmds)
                    return
        self._data_received(data)

    def _run_read(self, c: Client, cmds: list[list[bytes]]) -> None:
        """:meth:`process` for the common read: a client at rest, nothing held, whole canonical commands."""
        out: list[bytes] = []
        done = self.run(cmds, out)
        if done < len(cmds) or _held(c, self.core):
            self.pending = cmds[done:]
            more = not _held(c, self.core)
        else:  # what process() finds at the top of its loop with nothing left to parse
            more = ((done >= TURN_COMMANDS or len(out) >= TURN_REPLY_PIECES) and c.blocked is None
                    and not self.closing and not self.server.shutdown_asap and not self.output_full)
        if out:
            self.write(out)
        if self.closing:
            self.close_after_writes()
        elif more:
            self._defer()

    def _data_received(self, data: bytes) -> None:
        if self.client is None or self.closing or self.server.shutdown_asap:
            return
        if self.server.paused:  # XSPEC.NODE PAUSE: kept unread until RESUME (reference/replication_deployment.py)
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
        server = self.server
        out: list[bytes] = []
        if self.parts is not None and self.parts_len >= self.need:  # input held while the client waited
            self.buf = b"".join(self.parts)
            self.parts = None
        budget = TURN_COMMANDS
        more = False  # the turn's budget ran out with commands left
        while (c.blocked is None and not self.closing and not server.shutdown_asap
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
                consumed = 0 if auth_required else parse_fast(window, cmds)
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
        execute = self.core.execute
        server = self.server
        max_pieces = TURN_REPLY_PIECES
        bulk_headers = BULK_HEADERS
        n = 0
        for argv in cmds:
            n += 1
            r: Any = execute(c, argv)  # a Result; Any for the type tests below
            if r is not None:
                t = type(r)
                if c.reply_mode != "on":
                    if r is POSTPONED:  # CLIENT PAUSE: this command and the rest wait for resume()
                        return n - 1
                    self._skip_reply(c)
                elif t is Bulk:  # the commonest replies, encoded here (as encode_into does)
                    v = r.value
                    try:
                        out += (bulk_headers[len(v)], v, b"\r\n")  # no formatting: the header is made
                    except IndexError:
                        out.append(b"$%d\r\n%b\r\n" % (len(v), v))
                elif t is Int:
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
            if c.blocked is not None or self.closing or server.shutdown_asap:
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
        if not self.server.delays and self.delayed_until == 0.0:
            if self.queued is None:
                self.queued = out
                self.server.queue_flush(self)
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
            if self.server.before_replies is not None:
                self.server.before_replies()
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
        if self.server.before_replies is not None:
            self.server.before_replies()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
        if self.delayed_until == due:
            self.delayed_until = 0.0


class StartError(Exception):
    """The server cannot start: its trace file cannot be written, or it cannot listen where asked."""


def _reason(e: OSError) -> str:
    """An OSError's cause in words, without the address asyncio repeats in its text."""
    if isinstance(e, socket.gaierror) or not e.errno or e.errno < 0:
        return e.strerror or str(e)
    return os.strerror(e.errno)


class ReferenceServer:
    """The listening socket, its connections and the core behind them."""

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, *, dialect: str = "redis-7.0",
                 clock: str = "wall", requirepass: str | None = None, trace: str | None = None,
                 checker: CheckerFactory | None = None, enable_debug: str = "no",
                 protected_mode: str = "yes", config: dict[str, str] | None = None) -> None:
        self.host = host
        self.port = port
        self.core = new_core(dialect=dialect, clock=make_clock(clock), requirepass=requirepass,
                             enable_debug=enable_debug, port=port,
                             config={"protected-mode": protected_mode, "bind": host, **(config or {})})
        self.core.server = self
        self.connections: set[ClientConnection] = set()
        self.delays: dict[int, float] = {}  # client id (0: everyone) -> seconds, XSPEC.FAULT DELAY
        self.trace_path = trace
        self.checker = checker  # --checked: what each command is checked against (``reference.trace``)
        self._server: Any = None  # asyncio's or uvloop's Server (not an asyncio.AbstractServer)
        self._stopped: asyncio.Event | None = None
        self.shutdown_asap = False  # a shutdown was asked for: no further command runs
        self.paused = False  # XSPEC.NODE PAUSE: connections read nothing until RESUME
        self.to_flush: list[ClientConnection] = []  # connections with queued replies, in queuing order
        self._output_limits: tuple[str, tuple[int, int, int] | None] = ("", None)
        # Called before any reply leaves (reference.aof: appendfsync always syncs what the commands wrote)
        self.before_replies: Callable[[], None] | None = None

    def output_limits(self) -> tuple[int, int, int] | None:
        """``client-output-buffer-limit``'s normal class as (hard bytes, soft bytes, soft seconds);
        None when it sets no limit (Redis's default ``normal 0 0 0``) or cannot be read."""
        text = self.core.config.get("client-output-buffer-limit", "")
        if text != self._output_limits[0]:
            self._output_limits = (text, normal_output_limits(text))
        return self._output_limits[1]

    def queue_flush(self, conn: ClientConnection) -> None:
        if not self.to_flush:
            asyncio.get_running_loop().call_soon(self.flush_all)
        self.to_flush.append(conn)

    def flush_all(self) -> None:
        """The end of a loop turn: every queued reply leaves (``handleClientsWithPendingWrites``)."""
        conns, self.to_flush = self.to_flush, []
        for conn in conns:
            conn.flush()

    def reply_delay(self, c: Client | None) -> float:
        if not self.delays:
            return 0.0
        return self.delays.get(c.id if c is not None else 0, self.delays.get(0, 0.0))

    async def start(self) -> None:
        """Open the trace (``--trace``) and the listener; :class:`StartError` if either cannot be."""
        loop = asyncio.get_running_loop()
        self.core.timer_factory = loop.call_later
        if self.trace_path is not None or self.checker is not None:
            from xspec.reference.trace import attach_observers
            try:
                attach_observers(self.core, self.trace_path, self.checker)
            except OSError as e:
                raise StartError(f"cannot write the trace {self.trace_path!r}: {_reason(e)}") from e
        raise_open_files_limit(int(self.core.config["maxclients"]))
        from xspec.reference.aof import LoadError, start_persistence
        try:
            start_persistence(self.core)  # the data on disk, and the cron of saves and fsyncs
        except LoadError as e:
            self._close_trace()
            raise StartError(str(e)) from e
        self._stopped = asyncio.Event()
        try:
            self._server = await loop.create_server(lambda: ClientConnection(self), self.host, self.port,
                                                    reuse_address=True, backlog=511)
        except OSError as e:
            self._close_trace()
            raise StartError(f"cannot listen on {self.host}:{self.port}: {_reason(e)}") from e
        sock = self._server.sockets[0]  # a list in uvloop, a tuple in asyncio
        self.port = sock.getsockname()[1]
        self.core.config["port"] = str(self.port)
        from xspec.reference.replica_link import replicaof_setting
        from xspec.reference.replication import start_replication
        start_replication(self.core, replicaof_setting(self.core))  # the replicaof setting: follow it
        from xspec.reference.active_expiry import start_active_expiry
        start_active_expiry(self.core)  # EXPIRE-ACTIVE-1: the cron's expiry cycle

    async def serve_until_stopped(self) -> None:
        assert self._stopped is not None
        if not self.shutdown_asap:
            await self._stopped.wait()
        self.stop()  # a signal may have come before the listener was open

    def stop(self) -> None:
        """Shut down, on the server's loop (SIGTERM): the listener, then every connection, then the trace.

        Nothing here waits on a client. May be called again (it then closes what is left).
        """
        from xspec.reference.aof import finish_persistence
        finish_persistence(self.core)  # once: the AOF synced, the final RDB save when save points are set
        from xspec.reference.replication import finish_replication
        finish_replication(self.core)  # the link to the primary closes
        self.shutdown_asap = True
        if self._server is not None:
            self._server.close()
        connections, self.connections = self.connections, set()
        for conn in connections:
            conn.shut()
        self._close_trace()
        if self._stopped is not None:
            self._stopped.set()


    def _close_trace(self) -> None:
        observer = self.core.observer
        if observer is not None and hasattr(observer, "finish"):
            observer.finish()


def normal_output_limits(text: str) -> tuple[int, int, int] | None:
    """The ``normal`` class of a ``client-output-buffer-limit`` value (``class hard soft seconds ...``)."""
    words = text.lower().split()
    for i in range(0, len(words) - 3, 4):
        if words[i] == "normal":
            try:
                hard, soft = (_memory_bytes(w) for w in words[i + 1:i + 3])
                seconds = int(words[i + 3])
            except (ValueError, KeyError):
                return None
            return (hard, soft, seconds) if hard or soft else None
    return None


def _memory_bytes(word: str) -> int:
    digits = word.rstrip("kmgb")
    return int(digits) * _MEMORY_UNITS[word[len(digits):]]


def raise_open_files_limit(maxclients: int) -> int:
    """``adjustOpenFilesLimit``: make room for ``maxclients`` connections plus reserved descriptors."""
    wanted = maxclients + RESERVED_FDS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
        except (ValueError, OSError):
            return soft
    return soft


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def say(text: str) -> None:
    """A log line on stderr that never blocks: dropped when stderr is a full pipe nobody reads."""
    try:
        if select.select([], [2], [], 0)[1]:
            os.write(2, f"xspec serve (pid {os.getpid()}): {text}\n".encode())
    except (OSError, ValueError):
        pass


class ShutdownSignals:
    """SIGTERM/SIGINT handling for a server run in the main thread, as Redis's ``sigShutdownHandler``.

    A Python-level handler rather than ``loop.add_signal_handler``: the loop only runs the latter
    between its turns, and one turn can read megabytes of pipelined input (libuv reads a ready
    socket up to 32 times), so a flooded server took seconds to notice SIGTERM. The handler here
    runs at the next bytecode, even inside a command loop: it logs, sets ``shutdown_asap`` (no
    further command runs) and schedules :meth:`ReferenceServer.stop` on the loop. A second signal
    exits at once with status 1 (Redis does so for a second SIGINT: "You insist... exiting now.").
    A shutdown still running ``SHUTDOWN_DEADLINE_SECONDS`` after the signal (one command that
    does not end) is ended by SIGALRM's default action, which needs no Python code to run.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, server: ReferenceServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.previous: dict[int, Any] = {}
        self.parent_pid: int | None = None
        self.direct_parent = False  # the pid given is this process's parent (not an ancestor further up)

    def install(self) -> None:
        try:
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, self.on_signal)
            self.previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, signal.SIG_DFL)
        except ValueError:  # not the main thread: the caller stops the server itself
            self.restore()

    def restore(self) -> None:
        if self.previous:
            signal.alarm(0)
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.server.shutdown_asap:
            say("You insist... exiting now.")
            os._exit(1)
        self.begin(f"Received {signal.Signals(signum).name} scheduling shutdown...")

    def begin(self, why: str) -> None:
        """Start the shutdown: log why, stop running commands, stop the server on its loop."""
        say(why)
        self.server.shutdown_asap = True
        if self.previous:
            signal.alarm(SHUTDOWN_DEADLINE_SECONDS)
        try:
            self.loop.call_soon_threadsafe(self.server.stop)
        except RuntimeError:  # the loop is closed: the server is down already
            pass

    # -- the parent ---------------------------------------------------------------------------------
    def watch_parent(self) -> None:
        """With ``XSPEC_SERVE_PARENT_PID`` set (by the process that started this one): shut down when it is gone.

        On Linux the kernel signals us when our parent exits (PR_SET_PDEATHSIG). It does so when
        the *thread* that started us exits, so the signal is a dedicated one (SIGHUP) whose
        handler looks before shutting down. The parent is also looked at right away (it may have
        died before the request) and then every ``PARENT_POLL_SECONDS`` (where the kernel cannot
        tell us). A pid that is not our parent's (a launcher between us) is watched by pid alone.
        """
        value = os.environ.pop(PARENT_PID_ENV, "")
        if not value.isdigit() or int(value) <= 1:
            return
        self.parent_pid = int(value)
        self.direct_parent = os.getppid() == self.parent_pid
        if self.direct_parent:
            try:
                self.previous[PARENT_DEATH_SIGNAL] = signal.signal(PARENT_DEATH_SIGNAL, self.on_parent_signal)
            except ValueError:
                pass
            else:
                set_parent_death_signal(PARENT_DEATH_SIGNAL)
        self.check_parent()

    def on_parent_signal(self, signum: int, frame: FrameType | None) -> None:
        self.check_parent(poll=False)

    def parent_alive(self) -> bool:
        if os.getppid() == self.parent_pid:
            return True
        # Reparented, so a direct parent is gone; a process further up is looked up by its pid.
        return not self.direct_parent and self.parent_pid is not None and process_exists(self.parent_pid)

    def check_parent(self, poll: bool = True) -> None:
        if self.server.shutdown_asap:
            return
        if not self.parent_alive():
            self.begin(f"parent process {self.parent_pid} is gone, scheduling shutdown...")
        elif poll:
            self.loop.call_later(PARENT_POLL_SECONDS, self.check_parent)


def process_exists(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not, where /proc tells)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[-1][:1] != b"Z"
    except OSError:
        return True


def set_parent_death_signal(sig: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)`` where there is one (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def run_server(server: ReferenceServer, ready: Any = None) -> None:
    """Run until SIGTERM/SIGINT (or the parent named by ``XSPEC_SERVE_PARENT_PID`` is gone).

    ``ready`` (if given) is called with the bound port.
    """
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    signals = ShutdownSignals(server, loop)
    signals.install()

    async def serve() -> None:
        await server.start()
        # What exists now lives as long as the server: out of the collector's way. The hot paths
        # make no cycles, so young collections can be rarer (they showed at 2-3% under load).
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)
        signals.watch_parent()
        if ready is not None and not server.shutdown_asap:
            ready(server.port)
        await server.serve_until_stopped()
        say("Ready to exit, bye bye...")

    try:
        loop.run_until_complete(serve())
    finally:
        loop.close()
        signals.restore()


class ServerThread:
    """A server running in a background thread of this process (tests, benchmarks).

    ``with ServerThread(clock="virtual") as st: ...`` binds a free loopback port
    (``st.port``); :meth:`call` runs a function on the server's loop.
    """

    def __init__(self, **options: Any) -> None:
        options.setdefault("port", 0)
        self.server = ReferenceServer(**options)
        self.loop = new_event_loop()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._run, name="xspec-serve", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
        finally:
            self._started.set()
        self.loop.run_until_complete(self.server.serve_until_stopped())
        self.loop.close()

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def core(self) -> Core:
        return self.server.core

    def call(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` on the server's thread; its result."""
        async def run() -> Any:
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        if not self._started.wait(10) or self.server._server is None:
            raise RuntimeError("the reference server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.server.stop)
        self.thread.join(10)


def main() -> None:
    """``python -m xspec.reference.server [port]``: a quick way to run it by hand."""
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    run_server(ReferenceServer(port=port), lambda p: print(f"xspec serve listening on 127.0.0.1:{p}", flush=True))


if __name__ == "__main__":
    main()
