"""``xspec sentinel``'s network side: the links to monitored instances, the timer, and the client listener.

The decisions are :mod:`xspec.reference.sentinel_state`'s; this module connects to every instance it
knows (a command connection, and for primaries and replicas a second one subscribed to
``__sentinel__:hello``), carries out the state's requests in order on the command connection, hands each
reply back, runs the timer every 100 ms, and serves clients (:mod:`xspec.reference.sentinel_commands`),
publishing the state's events to subscribed clients. The clock is the host's, or a virtual one moved by
``XSPEC.CLOCK`` as in ``xspec serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import itertools
import secrets
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from xspec.reference.clock import Clock, WallClock
from xspec.reference.protocol import RequestError, encode_reply, parse_requests
from xspec.reference.sentinel_commands import Context, Session, execute
from xspec.reference.sentinel_state import HELLO_CHANNEL, Flag, Instance, Request, Sentinel
from xspec.spec.resp import Array, Bulk, Error, Int, NullBulk, Parser, ProtocolError, Push, Reply, Simple

TIMER_PERIOD = 0.1
CONNECT_TIMEOUT = 1.0
MAX_BULK = 512 * 1024 * 1024


@dataclass
class _InstanceLink:
    """The connections to one instance, at the address they were opened to: commands, and hello messages."""

    instance: Instance
    address: tuple[str, int]
    cmd: asyncio.StreamWriter | None = None
    pubsub: asyncio.StreamWriter | None = None
    waiting: deque[Request] = field(default_factory=deque)
    outbox: list[bytes] = field(default_factory=list)  # commands sent while the connection is being opened
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    connecting: bool = False

    @property
    def wants_pubsub(self) -> bool:
        return not self.instance.flags & Flag.SENTINEL  # Sentinels get no hello subscription

    @property
    def complete(self) -> bool:
        return self.cmd is not None and (self.pubsub is not None or not self.wants_pubsub)

    def close_cmd(self) -> None:
        if self.cmd is not None:
            self.cmd.close()
        self.cmd = None
        self.waiting.clear()
        self.outbox.clear()

    def close_pubsub(self) -> None:
        if self.pubsub is not None:
            self.pubsub.close()
        self.pubsub = None

    def close(self) -> None:
        self.close_cmd()
        self.close_pubsub()
        for task in self.tasks:
            task.cancel()
        self.tasks.clear()

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


@dataclass
class _Subscriber:
    session: Session
    writer: asyncio.StreamWriter


class SentinelServer:
    """A Sentinel listening on ``host:port``; ``monitors`` are (name, host, port, quorum) to start with."""

    def __init__(self, host: str = "127.0.0.1", port: int = 26379, *, clock: Clock | None = None,
                 down_after_ms: int | None = None, failover_timeout_ms: int | None = None,
                 monitors: tuple[tuple[str, str, int, int], ...] = ()) -> None:
        self.host, self.port = host, port
        self.clock: Clock = clock or WallClock()
        self.run_id = secrets.token_hex(20)
        self.sentinel = Sentinel(publish=self._publish, announce_host=host, announce_port=port)
        self._monitors = monitors
        self._down_after = down_after_ms
        self._failover_timeout = failover_timeout_ms
        self._links: dict[int, _InstanceLink] = {}
        self._subscribers: dict[int, _Subscriber] = {}
        self._ids = itertools.count(1)
        self._server: asyncio.base_events.Server | None = None
        self._timer: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        self.started_ms = 0
        # (ms, channel, message): the latest events published, for tests and tools; bounded, as the server runs long
        self.events: deque[tuple[int, str, str]] = deque(maxlen=10_000)

    # -- life cycle ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.started_ms = self.clock.now_ms()
        for name, host, port, quorum in self._monitors:
            master = self.sentinel.monitor(name, host, port, quorum, self.clock.now_ms())
            if self._down_after is not None:
                master.down_after = self._down_after
            if self._failover_timeout is not None:
                master.failover_timeout = self._failover_timeout
        self._server = await asyncio.start_server(self._serve_client, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.sentinel.announce_port = self.port
        self._timer = asyncio.create_task(self._run_timer())

    async def serve_forever(self) -> None:
        await self._stopped.wait()
        await self.stop()

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for link in self._links.values():
            link.close()
        self._links.clear()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for sub in self._subscribers.values():
            sub.writer.close()
        self._stopped.set()

    # -- the timer ----------------------------------------------------------------------------------------

    async def _run_timer(self) -> None:
        while True:
            self._step()
            await asyncio.sleep(TIMER_PERIOD)

    def _step(self) -> None:
        now = self.clock.now_ms()
        self._reconcile_links(now)
        for request in self.sentinel.tick(now):
            self._send(request)

    def _instances(self) -> list[Instance]:
        found: list[Instance] = []
        for m in self.sentinel.masters.values():
            found += [m, *m.slaves.values(), *m.sentinels.values()]
        return found

    def _reconcile_links(self, now: int) -> None:
        """Close links to forgotten instances or old addresses; open the missing connections, at most once
        a second per instance (SENTINEL-LINK-1)."""
        live = {id(ri): ri for ri in self._instances()}
        for key in [k for k, link in self._links.items()
                    if k not in live or link.instance is not live[k] or link.address != live[k].address]:
            self._links.pop(key).close()
        for key, ri in live.items():
            link = self._links.get(key)
            if link is None:
                link = self._links[key] = _InstanceLink(ri, ri.address)
            if link.complete or link.connecting or now - ri.link.last_reconnect_time < 1000:
                continue
            ri.link.last_reconnect_time = now
            link.connecting = True
            if link.cmd is None:
                tag = self.sentinel.my_id[:8]
                link.waiting.append(Request(ri, (), "discard"))
                link.outbox.append(_command("CLIENT", "SETNAME", f"sentinel-{tag}-cmd"))
                # A PING at once on every new command connection (SENTINEL-LINK-2).
                ri.link.pending_commands = 1
                ri.link.last_ping_time = now
                if ri.link.act_ping_time == 0:
                    ri.link.act_ping_time = now
                link.waiting.append(Request(ri, ("PING",), "ping"))
                link.outbox.append(_command("PING"))
            # As Redis, the instance counts as connected from the moment the connections are being opened;
            # a failure to open one disconnects it again.
            self.sentinel.on_connected(ri, now)
            link.spawn(self._connect(link))

    async def _open(self, address: tuple[str, int]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await asyncio.wait_for(asyncio.open_connection(*address), CONNECT_TIMEOUT)
        except (TimeoutError, OSError):
            return None

    async def _connect(self, link: _InstanceLink) -> None:
        ri = link.instance
        tag = self.sentinel.my_id[:8]
        try:
            if link.cmd is None:
                opened = await self._open(link.address)
                if opened is None:
                    link.waiting.clear()
                    link.outbox.clear()
                    self.sentinel.on_disconnected(ri, self.clock.now_ms())
                    return
                reader, link.cmd = opened
                link.cmd.write(b"".join(link.outbox))
                link.outbox.clear()
                link.spawn(self._read_cmd(link, reader, link.cmd))
            if link.wants_pubsub and link.pubsub is None:
                opened = await self._open(link.address)
                if opened is None:
                    self.sentinel.on_disconnected(ri, self.clock.now_ms())
                    return
                reader, link.pubsub = opened
                link.pubsub.write(_command("CLIENT", "SETNAME", f"sentinel-{tag}-pubsub")
                                  + _command("SUBSCRIBE", HELLO_CHANNEL))
                link.spawn(self._read_pubsub(link, reader, link.pubsub))
        finally:
            link.connecting = False

    def _send(self, request: Request) -> None:
        link = self._links.get(id(request.target))
        if link is None or link.instance is not request.target or (link.cmd is None and not link.connecting):
            return
        link.waiting.append(request)
        if link.cmd is None:
            link.outbox.append(_command(*request.argv))
        else:
            link.cmd.write(_command(*request.argv))

    def _lost(self, link: _InstanceLink, writer: asyncio.StreamWriter) -> None:
        """One of the two connections closed: the instance counts as disconnected until both are back."""
        if self._links.get(id(link.instance)) is not link:
            return
        if link.cmd is writer:
            link.close_cmd()
        elif link.pubsub is writer:
            link.close_pubsub()
        else:
            return
        self.sentinel.on_disconnected(link.instance, self.clock.now_ms())

    async def _read(self, link: _InstanceLink, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    handle: Callable[[Reply], None]) -> None:
        """Hand every reply read on one of the link's connections to ``handle``, until it closes."""
        parser = Parser()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                parser.feed(data)
                while (reply := parser.get()) is not None:
                    handle(reply)
        except (OSError, ProtocolError):
            pass
        except asyncio.CancelledError:
            return
        self._lost(link, writer)

    def _read_cmd(self, link: _InstanceLink, reader: asyncio.StreamReader,
                  writer: asyncio.StreamWriter) -> Coroutine[Any, Any, None]:
        def handle(reply: Reply) -> None:
            if link.waiting and link.cmd is writer:  # replies come in the order the requests went
                self._on_reply(link.waiting.popleft(), reply)
        return self._read(link, reader, writer, handle)

    def _on_reply(self, request: Request, reply: Reply) -> None:
        ri, now, s = request.target, self.clock.now_ms(), self.sentinel
        if not request.argv:
            return
        if request.purpose == "ping":
            text = reply.text if isinstance(reply, Simple | Error) else ""
            if isinstance(reply, Simple | Error):
                s.on_ping_reply(ri, text, now)
            else:
                ri.link.last_pong_time = now
        elif request.purpose == "info":
            if isinstance(reply, Bulk):
                for follow in s.on_info(ri, reply.value.decode(errors="replace"), now):
                    self._send(follow)
            else:
                s.on_discarded_reply(ri)
        elif request.purpose == "hello":
            s.on_hello_published(ri, not isinstance(reply, Error), now)
        elif request.purpose == "ask":
            items = reply.items if isinstance(reply, Array) else ()
            if (len(items) == 3 and isinstance(items[0], Int) and isinstance(items[1], Bulk)
                    and isinstance(items[2], Int)):
                s.on_is_master_down_reply(ri, items[0].value, items[1].value.decode(errors="replace"),
                                          items[2].value, now)
            else:
                s.on_discarded_reply(ri)
        else:
            s.on_discarded_reply(ri)

    def _read_pubsub(self, link: _InstanceLink, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> Coroutine[Any, Any, None]:
        def handle(reply: Reply) -> None:
            items = reply.items if isinstance(reply, Array | Push) else ()
            if len(items) == 3 and items[0] == Bulk(b"message") and isinstance(items[2], Bulk):
                payload = items[2].value.decode(errors="replace")
                if self.sentinel.my_id not in payload:  # our own hello comes back too
                    self.sentinel.on_hello(payload, self.clock.now_ms())
        return self._read(link, reader, writer, handle)

    # -- events and clients -------------------------------------------------------------------------------

    def _publish(self, channel: str, message: str) -> None:
        self.events.append((self.clock.now_ms(), channel, message))
        chan = channel.encode()
        for sub in list(self._subscribers.values()):
            for pattern in sorted(sub.session.patterns):
                if fnmatch.fnmatchcase(channel, pattern.decode(errors="replace")):
                    self._push(sub, (Bulk(b"pmessage"), Bulk(pattern), Bulk(chan), Bulk(message.encode())))
            if chan in sub.session.channels:
                self._push(sub, (Bulk(b"message"), Bulk(chan), Bulk(message.encode())))

    @staticmethod
    def _push(sub: _Subscriber, items: tuple[Reply, ...]) -> None:
        reply: Reply = Push(items) if sub.session.proto == 3 else Array(items)
        sub.writer.write(encode_reply(reply, sub.session.proto))

    def _subscribe(self, session: Session, channel: bytes, pattern: bool) -> Reply:
        (session.patterns if pattern else session.channels).add(channel)
        count = len(session.channels) + len(session.patterns)
        items = (Bulk(b"psubscribe" if pattern else b"subscribe"), Bulk(channel), Int(count))
        return Push(items) if session.proto == 3 else Array(items)

    def _unsubscribe(self, session: Session, names: list[bytes], pattern: bool) -> list[Reply]:
        pool = session.patterns if pattern else session.channels
        kind = b"punsubscribe" if pattern else b"unsubscribe"
        targets = names or sorted(pool)
        replies: list[Reply] = []
        if not targets:  # nothing to leave: one reply naming no channel (SENTINEL-CMD-2)
            empty: tuple[Reply, ...] = (Bulk(kind), NullBulk(), Int(len(session.channels) + len(session.patterns)))
            return [Push(empty) if session.proto == 3 else Array(empty)]
        for name in targets:
            pool.discard(name)
            items = (Bulk(kind), Bulk(name), Int(len(session.channels) + len(session.patterns)))
            replies.append(Push(items) if session.proto == 3 else Array(items))
        return replies

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = Session(client_id=next(self._ids))
        self._subscribers[session.client_id] = _Subscriber(session, writer)
        ctx = Context(self.sentinel, self.clock, self.clock.now_ms, self.port, self.started_ms, self.run_id,
                      lambda: len(self._subscribers), self._stopped.set, self._subscribe, self._unsubscribe)
        buf = b""
        try:
            while not session.close_after_reply:
                data = await reader.read(65536)
                if not data:
                    break
                buf += data
                commands: list[list[bytes]] = []
                try:
                    used, _ = parse_requests(buf, MAX_BULK, False, commands)
                except RequestError as e:
                    for argv in commands:
                        self._answer(ctx, session, writer, argv)
                    writer.write(encode_reply(Error(e.text), session.proto))
                    break
                buf = buf[used:]
                for argv in commands:
                    self._answer(ctx, session, writer, argv)
                    if session.close_after_reply:
                        break
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._subscribers.pop(session.client_id, None)
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()

    @staticmethod
    def _answer(ctx: Context, session: Session, writer: asyncio.StreamWriter, argv: list[bytes]) -> None:
        for reply in execute(ctx, session, argv):
            writer.write(encode_reply(reply, session.proto))


def _command(*argv: str) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        data = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class SentinelThread:
    """A Sentinel on its own event loop in a background thread (tests and the pytest plugin)."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.server: SentinelServer | None = None

    def __enter__(self) -> SentinelServer:
        self._thread.start()

        async def make() -> SentinelServer:
            server = SentinelServer(**self._kwargs)
            await server.start()
            return server

        self.server = asyncio.run_coroutine_threadsafe(make(), self._loop).result(10)
        return self.server

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
