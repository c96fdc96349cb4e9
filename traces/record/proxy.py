"""``xspec record``: a RESP proxy that records every conversation passing through it as one trace.

Clients connect to the proxy as they would to the server; each connection
gets its own connection to the upstream, and the bytes are forwarded in
both directions unchanged, as soon as they arrive (a copy is parsed for the
trace afterwards, so parsing never delays or alters traffic). Every
connection is one trace client, numbered in the order they connect:

* a command whose reply comes back before anything else happens in the
  trace is a ``call``; otherwise a ``send`` and, when the reply comes, a
  ``recv`` (pipelines, blocked reads, overlapping clients);
* ``t0``/``t`` is when the command's bytes reached the proxy (before they
  are forwarded), ``t1``/``t`` when its reply's last byte arrived from the
  upstream, on one clock (``clock: wall``);
* commands in the inline form (``PING\\r\\n``) are split on spaces like
  Redis does for unquoted text; bytes that are not a well-formed command
  are recorded as ``raw`` sends;
* replies are read with :class:`xspec.spec.resp.Parser`, which knows every
  RESP2 and RESP3 type, so a connection's ``HELLO 3`` (or ``RESET``) needs
  no switch of parser, and each reply keeps its exact wire type;
* messages the server sends on its own are ``push`` events: RESP3 pushes
  (``>``) other than a subscribe command's confirmations, and in RESP2 the
  ``message``/``pmessage``/``smessage`` arrays a connection gets while it is
  subscribed (there nothing else can look like them: a subscribed RESP2
  connection may send only the subscribe commands, PING, QUIT and RESET);
  the proxy follows each connection's protocol (HELLO, RESET) and
  subscriptions (from the confirmations) to tell them apart. A
  (P|S)(UN)SUBSCRIBE is a ``send`` and a ``recv`` per confirmation. The
  file starts as ``trace/1`` and becomes ``trace/2`` with one node when the
  first push is written, as the format asks (its header rewritten once).
  Anything else that answers no command (MONITOR's output) is a ``note``;
* a connection that ends becomes ``close`` ``by`` client or server.

The header names the upstream's server and version (INFO) and its stream
settings (CONFIG GET) when the proxy starts (with the URL's credentials, on a
connection of its own). A conversation recorded against a server that was not
empty does not start from the empty state a trace assumes: the proxy says so
in a note and a ``nonempty-start`` tag. The trace file is created when the
proxy starts (a file that cannot be written is refused before any client
connects), and events are appended to it as they are recorded, in batches
at most :data:`FLUSH_DELAY` apart, so a long recording does not grow in
memory and a killed proxy loses only its last moment. The file is synced to
disk when the proxy stops; a failed write stops the proxy
(:attr:`RecordingProxy.ended`) with the reason in
:attr:`RecordingProxy.failure`. The proxy runs on uvloop when it is
installed; ``benchmarks/bench_proxy.py`` measures its cost.

    xspec record --listen 127.0.0.1:7000 --upstream redis://127.0.0.1:6379 --out session.jsonl
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import os
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from xspec.spec.pubsub import CONFIRMING
from xspec.spec.resp import Array, Bulk, Error, Parser, ProtocolError, Push, Reply, encode_command, show
from xspec.spec.trace_format import Call, Close, Connect, Event, Header, Note, Recv, Send, Trace, dumps, load
from xspec.spec.trace_format import Push as PushEvent
from xspec.traces.harness.targets import Endpoint, TargetError, parse_endpoint, parse_info, server_info
from xspec.traces.record.client import now_us

CHUNK = 1 << 16
STREAM_SETTINGS = ("stream-node-max-entries", "stream-node-max-bytes")
UPSTREAM_TIMEOUT = 5.0
"""Seconds to wait for the upstream to accept the proxy's own connection and to answer each of its commands."""
FLUSH_DELAY = 0.05
"""Seconds a recorded event may wait in memory before it is written (one write per batch, not per event)."""


class RecordingError(Exception):
    """The trace file cannot be written: the recording stops rather than lose events unnoticed."""


class CommandReader:
    """Splits the bytes a client sends into commands: RESP arrays of bulk strings, or inline lines.

    :meth:`next` returns a command (a list of arguments), ``bytes`` for input
    that is not a well-formed command (everything from there on: the server
    closes such a connection), or None when the next command is incomplete.
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0
        self.need = 0  # the buffer must grow to this before a parse can succeed
        self.broken = False

    def feed(self, data: bytes) -> None:
        if self.pos and self.pos * 2 > len(self.buf):
            del self.buf[:self.pos]
            self.need -= self.pos
            self.pos = 0
        self.buf += data

    def next(self) -> list[bytes] | bytes | None:
        if self.pos >= len(self.buf) or len(self.buf) < self.need:
            return None
        if self.broken:
            return self._rest()
        try:
            if self.buf[self.pos] == ord("*"):
                return self._multibulk()
            return self._inline()
        except ProtocolError:
            self.broken = True
            return self._rest()

    def _rest(self) -> bytes:
        data = bytes(self.buf[self.pos:])
        self.pos = len(self.buf)
        return data

    def _line(self, start: int) -> tuple[bytes, int] | None:
        end = self.buf.find(b"\r\n", start)
        if end < 0:
            if len(self.buf) - start > 64 * 1024:
                raise ProtocolError("line too long")
            return None
        return bytes(self.buf[start:end]), end + 2

    def _multibulk(self) -> list[bytes] | bytes | None:
        head = self._line(self.pos)
        if head is None:
            return None
        line, at = head
        count = _length(line[1:])
        argv: list[bytes] = []
        for _ in range(count):
            head = self._line(at)
            if head is None:
                return None
            line, at = head
            if not line.startswith(b"$"):
                raise ProtocolError(f"expected '$', got {line[:1]!r}")
            size = _length(line[1:])
            if len(self.buf) < at + size + 2:
                self.need = at + size + 2
                return None
            if self.buf[at + size:at + size + 2] != b"\r\n":
                raise ProtocolError("bulk string not terminated by CRLF")
            argv.append(bytes(self.buf[at:at + size]))
            at += size + 2
        self.pos = at
        self.need = 0
        if not argv:  # "*0": Redis reads it as nothing
            return self.next()
        return argv

    def _inline(self) -> list[bytes] | bytes | None:
        end = self.buf.find(b"\n", self.pos)
        if end < 0:
            if len(self.buf) - self.pos > 64 * 1024:
                raise ProtocolError("inline command too long")
            return None
        line = bytes(self.buf[self.pos:end]).rstrip(b"\r")
        if b'"' in line or b"'" in line:
            raise ProtocolError("quoted inline command")  # recorded raw rather than split wrongly
        self.pos = end + 1
        argv = line.split()
        return argv if argv else self.next()


def _length(text: bytes) -> int:
    try:
        n = int(text)
    except ValueError:
        raise ProtocolError(f"bad length {text[:20]!r}") from None
    if n < 0:
        raise ProtocolError(f"negative length {n}")
    return n


@dataclass
class _Connection:
    """What the proxy knows about one client connection, for the trace."""

    c: int
    commands: CommandReader = field(default_factory=CommandReader)
    replies: Parser = field(default_factory=Parser)
    outstanding: list[int] = field(default_factory=list)  # event index of each send awaiting its reply
    sent: list[list[bytes] | None] = field(default_factory=list)  # their commands (None: raw bytes)
    closed: bool = False
    unreadable: bool = False  # the upstream sent bytes that are not RESP: replies are no longer recorded
    resp3: bool = False  # after a HELLO 3 the server accepted, until HELLO 2 or RESET
    # What the connection is subscribed to, by kind (as the confirmations name them), and how many
    # confirmations the oldest outstanding (P|S)(UN)SUBSCRIBE still gets.
    subscribed: dict[bytes, set[bytes]] = field(default_factory=lambda: {b"": set(), b"p": set(), b"s": set()})
    confirmations: int = 0

    def in_subscriber_context(self) -> bool:
        return any(self.subscribed.values())

    def is_message(self, reply: Reply) -> bool:
        """A message the server sent on its own (not the reply to the oldest outstanding command)."""
        head = self.sent[0] if self.sent else None
        if isinstance(reply, Push):
            return not (head and _confirmation_kind(reply) == head[0].lower())
        return (not self.resp3 and self.in_subscriber_context() and isinstance(reply, Array)
                and _confirmation_kind(reply) in (b"message", b"pmessage", b"smessage"))

    def confirm(self, name: bytes, reply: Reply) -> bool:
        """Take one confirmation of the oldest outstanding (P|S)(UN)SUBSCRIBE ``name``; True when it was the last."""
        kind = b"p" if name.startswith(b"p") else b"s" if name in (b"ssubscribe", b"sunsubscribe") else b""
        items = reply.items if isinstance(reply, Array | Push) else ()
        channel = items[1].value if len(items) == 3 and isinstance(items[1], Bulk) else None
        if self.confirmations == 0:  # the first: how many there will be
            argc = len(self.sent[0] or ()) - 1
            self.confirmations = argc or max(len(self.subscribed[kind]), 1)
        if channel is not None:
            if b"unsubscribe" in name:
                self.subscribed[kind].discard(channel)
            else:
                self.subscribed[kind].add(channel)
        self.confirmations -= 1
        return self.confirmations <= 0

    def answered(self, cmd: list[bytes] | None, reply: Reply) -> None:
        """What a reply to ``cmd`` changes in how later replies are read (HELLO, RESET)."""
        if not cmd or isinstance(reply, Error):
            return
        name = cmd[0].lower()
        if name == b"hello" and len(cmd) > 1 and cmd[1] in (b"2", b"3"):
            self.resp3 = cmd[1] == b"3"
        elif name == b"reset":
            self.resp3 = False
            for names in self.subscribed.values():
                names.clear()


def _confirmation_kind(reply: Reply) -> bytes | None:
    items = reply.items if isinstance(reply, Array | Push) else ()
    return items[0].value.lower() if items and isinstance(items[0], Bulk) else None


class RecordingProxy:
    """The proxy: :meth:`start` listens, :meth:`stop` closes everything and writes the trace."""

    def __init__(self, listen_host: str, listen_port: int, upstream: Endpoint, out: Path | None = None,
                 title: str | None = None) -> None:
        self.listen_host = listen_host
        self.listen_port = listen_port
        self.upstream = upstream
        self.out = out
        self.events: list[Event] = []  # not written yet (with no ``out``: every event)
        self.written = 0  # events already written to ``out``
        self.sink: io.TextIOWrapper | None = None
        self.raw: BinaryIO | None = None  # the file under ``sink`` (under gzip for .gz), synced at the end
        self.finished = False  # the trace file is complete and closed
        self.failure: str | None = None  # why writing ``out`` failed; nothing more is written after that
        self.ended = asyncio.Event()  # set on a failure; the caller sets it to stop (a signal)
        self.flush_scheduled = False
        self.header = Header(clock="wall", title=title, source="recorded")
        self.version2 = False  # the file's header says trace/2 (once a push was written)
        self.next_client = 1
        self.open: set[asyncio.Task[None]] = set()
        self.server: asyncio.Server | None = None
        self.commands = 0

    # -- setup ----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Describe the upstream, create the trace file, and listen; raises :class:`TargetError` or
        :class:`RecordingError` if the upstream or the file cannot be used."""
        await self._describe_upstream()
        if self.out is not None:
            self._open_sink()
        self.server = await asyncio.start_server(self._accept, self.listen_host, self.listen_port)
        self.listen_port = self.server.sockets[0].getsockname()[1]

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        context: ssl.SSLContext | None = self.upstream.ssl_context() if self.upstream.tls else None
        return await asyncio.open_connection(self.upstream.host, self.upstream.port, ssl=context,
                                             server_hostname=self.upstream.host if context else None)

    async def _describe_upstream(self) -> None:
        """Header fields from a connection of the proxy's own (with the URL's credentials)."""
        where = f"the upstream {self.upstream.host}:{self.upstream.port}"
        try:
            reader, writer = await asyncio.wait_for(self._connect_upstream(), UPSTREAM_TIMEOUT)
        except TimeoutError:
            raise TargetError(f"cannot connect to {where}: no answer within {UPSTREAM_TIMEOUT:g} s") from None
        except (OSError, ssl.SSLError) as e:
            raise TargetError(f"cannot connect to {where}: {e}") from None
        parser = Parser()

        async def read_reply() -> Reply:
            while (reply := parser.get()) is None:
                data = await reader.read(CHUNK)
                if not data:
                    raise TargetError(f"{where} closed the connection before replying: is it a Redis server?")
                parser.feed(data)
            return reply

        async def call(*argv: bytes) -> Reply:
            writer.write(encode_command(list(argv)))
            try:
                return await asyncio.wait_for(read_reply(), UPSTREAM_TIMEOUT)
            except TimeoutError:
                raise TargetError(f"{where} accepted the connection but did not reply to {argv[0].decode()} "
                                  f"within {UPSTREAM_TIMEOUT:g} s: is it a Redis server?") from None
            except ProtocolError as e:
                raise TargetError(f"{where} is not a Redis server (its reply is not RESP: {e})") from None
            except OSError as e:
                raise TargetError(f"{where}: {e}") from None

        try:
            if self.upstream.password is not None:
                await call(b"AUTH", *([self.upstream.username.encode()] if self.upstream.username else []),
                           self.upstream.password.encode())
            info = await call(b"INFO", b"server")
            if isinstance(info, Bulk):
                who = server_info(parse_info(info.value.decode("utf-8", "replace")))
                self.header.server_name, self.header.server_version = who.name, who.version
            config: dict[str, str] = {}
            for name in STREAM_SETTINGS:
                reply = await call(b"CONFIG", b"GET", name.encode())
                items = getattr(reply, "items", None) or [p for kv in getattr(reply, "pairs", ()) for p in kv]
                if len(items) == 2 and isinstance(items[1], Bulk):
                    config[name] = items[1].value.decode()
            self.header.config = config
            keyspace = await call(b"INFO", b"keyspace")
            if isinstance(keyspace, Bulk) and any(k.startswith("db") for k in parse_info(keyspace.value.decode())):
                self.header.tags = ["nonempty-start"]
                self.events.append(Note("the upstream held keys when recording started: the trace does not "
                                        "start from an empty server"))
        finally:
            writer.close()

    # -- one connection -------------------------------------------------------------------------
    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        conn = _Connection(self.next_client)
        self.next_client += 1
        t = now_us()
        try:
            up_reader, up_writer = await self._connect_upstream()
        except OSError:
            client_writer.close()
            return
        self.events.append(Connect(c=conn.c, t=t))
        task = asyncio.current_task()
        assert task is not None
        self.open.add(task)
        upstream_done = asyncio.ensure_future(self._pump(conn, up_reader, client_writer, self._replies, "server"))
        try:
            await self._pump(conn, client_reader, up_writer, self._commands, "client")
            await upstream_done
        except asyncio.CancelledError:  # the proxy stops: the connection ends unrecorded
            upstream_done.cancel()
        finally:
            for w in (client_writer, up_writer):
                w.close()
            self.open.discard(task)
            if not self.open:
                self.flush()

    async def _pump(self, conn: _Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    record: Callable[[_Connection, bytes, int], None], sender: str) -> None:
        """Forward what ``reader`` reads to ``writer`` as it comes, then ``record`` it; at the end of the
        input, a ``close`` by ``sender`` (the first side to end the connection)."""
        while True:
            try:
                data = await reader.read(CHUNK)
            except (ConnectionError, OSError):
                data = b""
            t = now_us()
            if not data:
                if not conn.closed:
                    conn.closed = True
                    self.events.append(Close(c=conn.c, by=sender, t=t))
                with contextlib.suppress(OSError, RuntimeError):
                    if sender == "client" and writer.can_write_eof():
                        writer.write_eof()  # the server sees the client's end of input
                    else:
                        writer.close()
                return
            writer.write(data)
            record(conn, data, t)
            self._schedule_flush()
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    def _commands(self, conn: _Connection, data: bytes, t: int) -> None:
        """Record the commands these bytes from the client complete."""
        conn.commands.feed(data)
        while (cmd := conn.commands.next()) is not None:
            if isinstance(cmd, bytes):
                self.events.append(Send(c=conn.c, cmd=None, raw=cmd, t=t))
                conn.sent.append(None)
            else:
                self.events.append(Send(c=conn.c, cmd=cmd, t=t))
                conn.sent.append(cmd)
                self.commands += 1
            conn.outstanding.append(self.written + len(self.events) - 1)

    def _replies(self, conn: _Connection, data: bytes, t: int) -> None:
        """Record the replies these bytes from the upstream complete."""
        if conn.unreadable:
            return
        conn.replies.feed(data)
        try:
            while (reply := conn.replies.get()) is not None:
                self._reply(conn, reply, t)
        except ProtocolError as e:
            conn.unreadable = True
            self.events.append(Note(f"client {conn.c}: unreadable reply bytes ({e}); later replies are not recorded"))

    def _reply(self, conn: _Connection, reply: Reply, t: int) -> None:
        if conn.is_message(reply):
            self.events.append(PushEvent(c=conn.c, reply=reply, t=t))
            return
        if not conn.outstanding:
            self.events.append(Note(f"client {conn.c} received {show(reply)} (answering no command)"))
            return
        cmd = conn.sent[0]
        name = cmd[0].lower() if cmd else b""
        if name.decode("latin-1") in CONFIRMING and not isinstance(reply, Error):
            self.events.append(Recv(c=conn.c, reply=reply, t=t))  # one per channel: never a call
            if conn.confirm(name, reply):
                conn.outstanding.pop(0)
                conn.sent.pop(0)
            return
        index = conn.outstanding.pop(0)
        conn.sent.pop(0)
        conn.answered(cmd, reply)
        last = self.events[-1] if self.events else None
        if (index == self.written + len(self.events) - 1 and isinstance(last, Send) and last.cmd is not None
                and not conn.outstanding):
            self.events[-1] = Call(c=conn.c, cmd=last.cmd, reply=reply, t0=last.t, t1=t)
        else:
            self.events.append(Recv(c=conn.c, reply=reply, t=t))

    # -- the trace ------------------------------------------------------------------------------
    def trace(self) -> Trace:
        """Everything recorded so far (read back from ``out`` when the proxy writes one)."""
        if self.out is None:
            return Trace(self.header, list(self.events))
        self.flush(final=True)
        if self.failure is not None:
            raise RecordingError(self.failure)
        return load(self.out)

    def _open_sink(self) -> None:
        """Create ``out`` and write the header; :class:`RecordingError` if it cannot be written."""
        assert self.out is not None
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.raw = open(self.out, "wb")
        except OSError as e:
            raise RecordingError(f"cannot write {self.out}: {e.strerror or e}") from None
        binary: BinaryIO = self.raw
        if self.out.name.endswith(".gz"):
            binary = gzip.GzipFile(fileobj=self.raw, mode="wb")  # type: ignore[assignment]
        self.sink = io.TextIOWrapper(binary, encoding="utf-8")
        try:
            self.sink.write(dumps(Trace(self.header, [])))
            self.sink.flush()
        except OSError as e:
            for stream in (self.sink, self.raw):
                with contextlib.suppress(OSError):
                    stream.close()
            self.sink = self.raw = None
            raise RecordingError(f"cannot write {self.out}: {e.strerror or e}") from None

    def _schedule_flush(self) -> None:
        """Flush :data:`FLUSH_DELAY` s from now: one write for everything recorded in the meantime,
        however many connections it came from."""
        if self.out is not None and not self.flush_scheduled:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_later(FLUSH_DELAY, self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self.flush_scheduled = False
        self.flush()

    def _fail(self, e: Exception) -> None:
        reason = str(e)
        if isinstance(e, OSError) and e.strerror:
            reason = e.strerror
        self.failure = f"writing {self.out} failed after {self.written} events: {reason}"
        self.ended.set()

    def flush(self, final: bool = False) -> None:
        """Append the recorded events to ``out``; the last stays in memory (a send that may become a call)
        unless ``final``. A failure is kept in :attr:`failure` and ends the recording."""
        if self.out is None or self.finished or self.failure is not None:
            return
        try:
            if self.sink is None:
                self._open_sink()
            assert self.sink is not None
            done = self.events if final else self.events[:-1]
            if not self.version2 and any(isinstance(e, PushEvent) for e in done):
                self._become_version2()
            if done:
                self.sink.write(dumps(Trace(self.header, done)).split("\n", 1)[1])
                self.written += len(done)
                del self.events[:len(done)]
            self.sink.flush()
        except (OSError, RecordingError) as e:
            self._fail(e)

    def _become_version2(self) -> None:
        """The first push: rewrite the file's header as trace/2 with one node (beside the file, then
        renamed over it, so a failure leaves the trace/1 file whole) and go on appending."""
        assert self.out is not None and self.sink is not None and self.raw is not None
        self.sink.flush()
        if self.sink.buffer is not self.raw:
            self.sink.close()  # GzipFile: its trailer ends the member written so far
        self.raw.close()
        self.sink = self.raw = None
        gz = self.out.name.endswith(".gz")
        opener = gzip.open if gz else open
        header = dumps(Trace(self.header, [PushEvent(c=0, reply=Bulk(b""))])).split("\n", 1)[0] + "\n"
        spare = self.out.with_name(self.out.name + ".xspec-tmp")
        with opener(self.out, "rt", encoding="utf-8") as old, opener(spare, "wt", encoding="utf-8") as new:
            old.readline()
            new.write(header)
            for line in old:
                new.write(line)
        os.replace(spare, self.out)
        self.version2 = True
        self.raw = open(self.out, "ab")  # noqa: SIM115 - open while recording
        binary: BinaryIO = self.raw
        if gz:
            binary = gzip.GzipFile(fileobj=self.raw, mode="wb")  # type: ignore[assignment]  # a new member
        self.sink = io.TextIOWrapper(binary, encoding="utf-8")

    def close_sink(self) -> None:
        """Write what is left, sync the file to disk and close it."""
        self.flush(final=True)
        sink, raw = self.sink, self.raw
        self.sink = self.raw = None
        if sink is not None and raw is not None:
            try:
                if self.failure is None:
                    sink.flush()
                    if sink.buffer is not raw:
                        sink.close()  # GzipFile: its trailer goes to the file, which stays open
                    raw.flush()
                    os.fsync(raw.fileno())
            except (OSError, ValueError) as e:
                self._fail(e)
            finally:
                for stream in (sink, raw):
                    with contextlib.suppress(OSError):
                        stream.close()
        self.finished = self.out is not None

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        for task in list(self.open):
            task.cancel()
        for task in list(self.open):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.close_sink()


# ---------------------------------------------------------------------------------------------
# Running it


def event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop when it is installed (the proxy forwards faster), asyncio's otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class BackgroundProxy:
    """A :class:`RecordingProxy` on its own event loop thread (tests, benchmarks)."""

    def __init__(self, proxy: RecordingProxy) -> None:
        self.proxy = proxy
        self.loop = event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> BackgroundProxy:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop).result(10)
        return self

    @property
    def port(self) -> int:
        return self.proxy.listen_port

    def stop(self) -> Trace:
        """Stop the proxy and return its trace."""
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.proxy.stop(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
        return self.proxy.trace()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def recording(upstream: str, out: Path | None = None, listen: str = "127.0.0.1:0") -> Iterator[BackgroundProxy]:
    """A recording proxy in front of ``upstream`` for the ``with`` block."""
    host, port = parse_listen(listen)
    with BackgroundProxy(RecordingProxy(host, port, parse_endpoint(upstream), out)) as running:
        yield running


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT``, or ``:PORT`` for 127.0.0.1) as (host, port); ValueError otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{text!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)
