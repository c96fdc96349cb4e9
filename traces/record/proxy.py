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
* RESP3 push messages (``>``) answer no command and become ``note`` s
  (RESP2 Pub/Sub messages and MONITOR output cannot be told from replies:
  such sessions are outside what the proxy records faithfully);
* a connection that ends becomes ``close`` ``by`` client or server.

The header names the upstream's server and version (INFO) and its stream
settings (CONFIG GET) when the proxy starts (with the URL's credentials, on a
connection of its own). A conversation recorded against a server that was not
empty does not start from the empty state a trace assumes: the proxy says so
in a note and a ``nonempty-start`` tag. Events are appended to the trace file
as they are recorded (a few thousand at a time, and whenever no connection is
open), so a long recording does not grow in memory. The proxy runs on uvloop
when it is installed; ``benchmarks/bench_proxy.py`` measures its cost.

    xspec record --listen 127.0.0.1:7000 --upstream redis://127.0.0.1:6379 --out session.jsonl
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import signal
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import click

from xspec.spec.resp import Bulk, Parser, ProtocolError, Push, Reply, encode_command, show
from xspec.spec.trace_format import Call, Close, Connect, Event, Header, Note, Recv, Send, Trace, dumps, load
from xspec.traces.harness.targets import Endpoint, TargetError, parse_endpoint, parse_info, server_info
from xspec.traces.record.client import now_us

CHUNK = 1 << 16
FLUSH_EVERY = 2000
"""Recorded events kept in memory before they are appended to the trace file."""
STREAM_SETTINGS = ("stream-node-max-entries", "stream-node-max-bytes")


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
    closed: bool = False
    unreadable: bool = False  # the upstream sent bytes that are not RESP: replies are no longer recorded


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
        self.sink: TextIO | None = None
        self.finished = False  # the trace file is complete and closed
        self.header = Header(clock="wall", title=title, source="recorded")
        self.next_client = 1
        self.open: set[asyncio.Task[None]] = set()
        self.server: asyncio.Server | None = None
        self.commands = 0

    # -- setup ----------------------------------------------------------------------------------
    async def start(self) -> None:
        await self._describe_upstream()
        self.server = await asyncio.start_server(self._accept, self.listen_host, self.listen_port)
        self.listen_port = self.server.sockets[0].getsockname()[1]

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        context: ssl.SSLContext | None = self.upstream.ssl_context() if self.upstream.tls else None
        return await asyncio.open_connection(self.upstream.host, self.upstream.port, ssl=context,
                                             server_hostname=self.upstream.host if context else None)

    async def _describe_upstream(self) -> None:
        """Header fields from a connection of the proxy's own (with the URL's credentials)."""
        try:
            reader, writer = await self._connect_upstream()
        except OSError as e:
            raise TargetError(f"cannot connect to the upstream {self.upstream.host}:{self.upstream.port}: {e}") \
                from None
        parser = Parser()

        async def call(*argv: bytes) -> Reply:
            writer.write(encode_command(list(argv)))
            while (reply := parser.get()) is None:
                data = await reader.read(CHUNK)
                if not data:
                    raise TargetError("the upstream closed the connection")
                parser.feed(data)
            return reply

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
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    def _commands(self, conn: _Connection, data: bytes, t: int) -> None:
        """Record the commands these bytes from the client complete."""
        conn.commands.feed(data)
        while (cmd := conn.commands.next()) is not None:
            if isinstance(cmd, bytes):
                self.events.append(Send(c=conn.c, cmd=None, raw=cmd, t=t))
            else:
                self.events.append(Send(c=conn.c, cmd=cmd, t=t))
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
        if isinstance(reply, Push) or not conn.outstanding:
            self.events.append(Note(f"client {conn.c} received {show(reply)} (answering no command)"))
            return
        index = conn.outstanding.pop(0)
        last = self.events[-1] if self.events else None
        if (index == self.written + len(self.events) - 1 and isinstance(last, Send) and last.cmd is not None
                and not conn.outstanding):
            self.events[-1] = Call(c=conn.c, cmd=last.cmd, reply=reply, t0=last.t, t1=t)
        else:
            self.events.append(Recv(c=conn.c, reply=reply, t=t))
            if len(self.events) > FLUSH_EVERY:
                self.flush()

    # -- the trace ------------------------------------------------------------------------------
    def trace(self) -> Trace:
        """Everything recorded so far (read back from ``out`` when the proxy writes one)."""
        if self.out is None:
            return Trace(self.header, list(self.events))
        self.flush(final=True)
        return load(self.out)

    def flush(self, final: bool = False) -> None:
        """Append the recorded events to ``out``; the last stays in memory (a send that may become a call)
        unless ``final``."""
        if self.out is None or self.finished:
            return
        if self.sink is None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.sink = (gzip.open(self.out, "wt", encoding="utf-8") if self.out.name.endswith(".gz")
                         else open(self.out, "w", encoding="utf-8"))
            self.sink.write(dumps(Trace(self.header, [])))
        done = self.events if final else self.events[:-1]
        if done:
            self.sink.write(dumps(Trace(self.header, done)).split("\n", 1)[1])
            self.written += len(done)
            del self.events[:len(done)]
        self.sink.flush()

    def close_sink(self) -> None:
        self.flush(final=True)
        if self.sink is not None:
            self.sink.close()
            self.sink = None
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
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{text!r}: expected HOST:PORT", param_hint="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _serve(proxy: RecordingProxy) -> None:
    await proxy.start()
    click.echo(f"recording {proxy.listen_host}:{proxy.listen_port} -> {proxy.upstream.host}:{proxy.upstream.port}"
               f" into {proxy.out} (Ctrl-C to stop)", err=True)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped.set)
    await stopped.wait()
    await proxy.stop()
    click.echo(f"{proxy.next_client - 1} connections, {proxy.commands} commands, {proxy.written} events "
               f"written to {proxy.out}", err=True)


@click.command("record")
@click.option("--listen", required=True, help="Where clients connect: HOST:PORT (port 0: any free port).")
@click.option("--upstream", required=True, help="The server: redis://[user:password@]host:port or rediss://...")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Trace file to write (.jsonl[.gz]).")
@click.option("--title", help="The trace's title.")
def record_command(listen: str, upstream: str, out: Path, title: str | None) -> None:
    """Record every conversation between clients and a server through a RESP proxy, as one trace.

    Bytes pass through unchanged; events are appended to the trace as they
    are recorded, and the proxy runs until Ctrl-C or SIGTERM.
    """
    host, port = parse_listen(listen)
    try:
        endpoint = parse_endpoint(upstream)
    except TargetError as e:
        raise click.BadParameter(str(e), param_hint="--upstream") from None
    if endpoint.db:
        raise click.BadParameter("the proxy forwards clients' own SELECTs: give no /db", param_hint="--upstream")
    try:
        with asyncio.Runner(loop_factory=event_loop) as runner:
            runner.run(_serve(RecordingProxy(host, port, endpoint, out, title)))
    except TargetError as e:
        raise click.ClickException(str(e)) from None

