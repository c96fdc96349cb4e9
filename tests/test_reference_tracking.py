"""CLIENT TRACKING (server-assisted client-side caching) on the reference server, byte for byte as Redis 7.0.15.

Each scenario runs on the real 7.0.15 and on ``xspec serve`` over raw RESP2/RESP3 sockets; every
client's output after each step (replies and push messages, in the order they arrived) must be the
same bytes. After each step every client sends CLIENT ID, which neither server lets lapse a CLIENT
CACHING, and everything before its answer is that client's output for the step. Client ids are
replaced by the clients' names (both servers are first brought to ids of 100 and more, so no
other integer reply is taken for one). Host-describing CLIENT INFO fields are left out: only
``flags=`` and ``redir=`` are compared. Then redis-py's own client-side cache (RESP3,
``cache_config``) must see another client's write on both servers.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator

import pytest
import redis as redispy
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection

from tests.conftest import RealRedis
from tests.test_reference_dialects_core import real_and_reference  # noqa: F401  (a fixture)
from xspec.reference.handlers import new_core
from xspec.reference.protocol import encode_reply
from xspec.reference.server import ServerThread

FIRST_ID = 100  # ids below this are not replaced by names


def _encode(args: tuple[object, ...]) -> bytes:
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%b\r\n" % (len(p), p) for p in parts)


class Conn:
    """A raw socket client."""

    def __init__(self, port: int, proto: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.marker = b""
        self.id = 0
        self.sock.sendall(_encode(("CLIENT", "ID")))
        self.id = int(self._until(lambda data: data.endswith(b"\r\n"))[1:-2])
        self.marker = b":%d\r\n" % self.id
        if proto == 3:
            self.sock.sendall(_encode(("HELLO", "3")))
            self.sync()

    def _until(self, done: Callable[[bytes], bool]) -> bytes:
        data = b""
        while not done(data):
            chunk = self.sock.recv(65536)
            assert chunk, f"connection closed; got {data!r}"
            data += chunk
        return data

    def sync(self) -> bytes:
        """Everything the server sent before the answer to a CLIENT ID sent now."""
        self.sock.sendall(_encode(("CLIENT", "ID")))
        return self._until(lambda data: data.endswith(self.marker))[:-len(self.marker)]


class Session:
    """One run of a scenario on one server: named clients, every client's output after each step."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conns: dict[str, Conn] = {}
        self.ids: dict[str, int] = {}  # every client's id, closed ones too
        self.log: list[tuple[str, dict[str, bytes]]] = []

    def connect(self, *names: str, proto: int = 3) -> None:
        for name in names:
            conn = self.conns[name] = Conn(self.port, proto)
            self.ids[name] = conn.id

    def id(self, name: str) -> int:
        return self.conns[name].id

    def send(self, name: str, *commands: tuple[object, ...]) -> None:
        """Send commands (several: one pipelined write) from ``name``; record what each client got."""
        self.conns[name].sock.sendall(b"".join(_encode(c) for c in commands))
        step = " | ".join(" ".join(map(str, c)) for c in commands)
        self._collect(f"{name}: {step}", name)

    def __call__(self, name: str, *args: object) -> None:
        self.send(name, args)

    def close(self, name: str) -> None:
        conn = self.conns.pop(name)
        conn.sock.close()
        time.sleep(0.1)  # the server sees it go before the next step
        self._collect(f"{name}: closes")

    def info(self, name: str) -> None:
        """CLIENT INFO's flags= and redir= (the rest describes the host)."""
        conn = self.conns[name]
        conn.sock.sendall(_encode(("CLIENT", "INFO")))
        text = conn.sync().decode()
        fields = " ".join(re.findall(r"\b(?:flags|redir)=\S*", text))
        self.log.append((f"{name}: CLIENT INFO", {name: self._named(fields.encode())}))

    def _collect(self, step: str, actor: str | None = None) -> None:
        # The acting client first: once it has its answer, what its step sent the others is on its way.
        got = {actor: self.conns[actor].sync()} if actor is not None else {}
        for name, conn in self.conns.items():
            if name != actor:
                got[name] = conn.sync()
        self.log.append((step, {name: self._named(got[name]) for name in sorted(got)}))

    def _named(self, data: bytes) -> bytes:
        for name, cid in self.ids.items():
            data = data.replace(b":%d\r\n" % cid, b":<%b>\r\n" % name.encode())
            data = data.replace(b"redir=%d" % cid, b"redir=<%b>" % name.encode())
        return data

    def finish(self) -> None:
        for conn in self.conns.values():
            conn.sock.close()


@pytest.fixture(scope="module")
def reference_port() -> Iterator[int]:
    with ServerThread() as server:
        yield server.port


@pytest.fixture
def ports(real_and_reference: tuple[str, int, int]) -> tuple[int, int]:  # noqa: F811  (the imported fixture)
    """(real server, reference server of its dialect): 7.0.15, and 6.2.14 and Valkey 9.1.2 when installed."""
    _, real, reference = real_and_reference
    return real, reference


def _raise_ids(port: int) -> None:
    """Open connections until the next client id is at least FIRST_ID."""
    while True:
        conn = Conn(port, 2)
        conn.sock.close()
        if conn.id >= FIRST_ID:
            return


Scenario = Callable[[Session], None]


def same_bytes(ports: tuple[int, int], scenario: Scenario) -> list[tuple[str, dict[str, bytes]]]:
    """Run ``scenario`` on the real server, then on the reference server: the same bytes at every step."""
    logs = []
    for port in ports:
        _raise_ids(port)
        admin = Conn(port, 2)
        admin.sock.sendall(_encode(("FLUSHALL",)))
        admin.sync()
        admin.sock.close()
        s = Session(port)
        try:
            scenario(s)
        finally:
            s.finish()
        logs.append(s.log)
    on_redis, on_reference = logs
    for (step, real), (_, ours) in zip(on_redis, on_reference, strict=True):
        assert ours == real, step
    return on_redis


def test_default_mode(ports: tuple[int, int]) -> None:
    def scenario(s: Session) -> None:
        s.connect("a", "b")
        s("a", "CLIENT", "TRACKING", "ON")
        s("a", "GET", "k")
        s("a", "SET", "k", "1")  # its own key: the push follows the reply
        s("a", "GET", "k")
        s.send("a", ("GET", "k"), ("SET", "k", "2"), ("GET", "k"))  # pipelined: between two replies
        s.send("a", ("MULTI",), ("GET", "k"), ("SET", "k", "3"), ("SET", "j", "3"), ("EXEC",))  # after EXEC
        s("b", "SET", "k", "x")
        s("b", "SET", "k", "y")  # forgotten after one invalidation
        s("b", "XADD", "s", "1-1", "f", "v")
        s("a", "GET", "s")  # WRONGTYPE still remembers the key
        s("b", "DEL", "s")
        s("a", "EXISTS", "x", "y")
        s("b", "SET", "y", "1")
        s("b", "UNLINK", "x")
        s("b", "SET", "x", "1")
        s("a", "XREAD", "COUNT", "1", "STREAMS", "s1", "s2", "0", "0")
        s("b", "XADD", "s2", "1-1", "f", "v")
        s("a", "XRANGE", "s2", "-", "+")
        s("a", "XINFO", "STREAM", "s2")
        s("b", "XDEL", "s2", "1-1")
        s("a", "TYPE", "r1")
        s("b", "SET", "r1", "1")
        s("a", "GET", "r1")
        s("b", "RENAME", "r1", "r2")
        s("b", "XADD", "t1", "1-1", "f", "v")
        s("b", "XADD", "t2", "1-1", "f", "v")
        s("a", "XLEN", "t2")
        s("a", "XLEN", "t1")
        s("b", "RENAME", "t1", "t2")  # a stream over a stream: src's invalidation first, as any RENAME
        s("a", "GET", "k")
        s("b", "SWAPDB", "0", "1")  # invalidates nothing in 7.0.15
        s("b", "SWAPDB", "0", "1")
        s("a", "SELECT", "1")
        s("b", "SET", "k", "db0")  # one table for every database
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "CLIENT", "GETREDIR")
        s.info("a")

    same_bytes(ports, scenario)


def test_flush_noloop_and_lazy_forgetting(ports: tuple[int, int]) -> None:
    def scenario(s: Session) -> None:
        s.connect("a", "b")
        s.connect("c2", proto=2)
        s("a", "CLIENT", "TRACKING", "ON")
        s("c2", "CLIENT", "TRACKING", "ON")  # RESP2 without REDIRECT: never told anything
        s("c2", "GET", "k")
        s("a", "GET", "k")
        s("a", "FLUSHALL")
        s("b", "FLUSHDB")
        s("b", "SET", "k", "1")  # FLUSH* emptied the table: nothing more about k
        s("a", "CLIENT", "TRACKING", "ON", "NOLOOP")
        s("a", "GET", "n")
        s("a", "SET", "n", "1")
        s("a", "FLUSHDB", "ASYNC")  # NOLOOP does not hold back the null
        s("a", "CLIENT", "TRACKINGINFO")
        s("c2", "CLIENT", "TRACKINGINFO")
        s("a", "CLIENT", "TRACKING", "OFF")
        s("a", "CLIENT", "TRACKING", "ON")
        s("a", "GET", "lz")
        s("a", "CLIENT", "TRACKING", "OFF")
        s("b", "SET", "lz", "1")  # off: nothing, and the key is forgotten
        s("a", "CLIENT", "TRACKING", "ON")
        s("a", "GET", "lz")
        s("a", "CLIENT", "TRACKING", "OFF")
        s("a", "CLIENT", "TRACKING", "ON")
        s("b", "SET", "lz", "2")  # read before OFF, told after ON
        s("a", "GET", "lz")
        s("a", "RESET")
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "HELLO", "3", "SETNAME", "x")
        s("a", "CLIENT", "TRACKING", "ON")
        s("b", "SET", "lz", "3")  # RESET turned tracking off; the key stayed remembered

    same_bytes(ports, scenario)


def test_optin_optout(ports: tuple[int, int]) -> None:
    def scenario(s: Session) -> None:
        s.connect("a", "b")
        s("a", "CLIENT", "CACHING", "YES")
        s("a", "CLIENT", "TRACKING", "ON", "OPTIN")
        s("a", "CLIENT", "CACHING", "NO")
        s("a", "CLIENT", "CACHING", "maybe")
        s("a", "GET", "k1")
        s("b", "SET", "k1", "1")
        s("a", "CLIENT", "CACHING", "YES")
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "GET", "k2")
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "GET", "k3")
        s("b", "SET", "k2", "1")
        s("b", "SET", "k3", "1")
        for lapse in (("PING",), ("NOSUCH",), ("GET",)):  # any other command uses it up, even a rejected one
            s("a", "CLIENT", "CACHING", "YES")
            s("a", *lapse)
            s("a", "GET", "k4")
            s("b", "SET", "k4", "1")
        s.send("a", ("CLIENT", "CACHING", "YES"), ("MULTI",), ("GET", "k5"), ("GET", "k6"), ("EXEC",),
               ("GET", "k7"))
        for key in ("k5", "k6", "k7"):
            s("b", "SET", key, "1")
        s.send("a", ("MULTI",), ("CLIENT", "CACHING", "YES"), ("GET", "k5"), ("EXEC",), ("GET", "k7"))
        for key in ("k5", "k7"):
            s("b", "SET", key, "2")
        s("a", "CLIENT", "TRACKING", "ON", "OPTOUT")
        s("a", "CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT")
        s("a", "CLIENT", "TRACKING", "OFF")
        s("a", "CLIENT", "TRACKING", "ON", "OPTOUT")
        s("a", "CLIENT", "CACHING", "YES")
        s("a", "CLIENT", "CACHING", "NO")
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "GET", "o1")
        s("a", "GET", "o2")
        s("b", "SET", "o1", "1")
        s("b", "SET", "o2", "1")

    same_bytes(ports, scenario)


def test_bcast_and_prefixes(ports: tuple[int, int]) -> None:
    def scenario(s: Session) -> None:
        s.connect("a", "b", "c")
        for options in (("BCAST", "PREFIX", "a", "PREFIX", "ab"), ("PREFIX", "a"), ("BCAST", "OPTIN"),
                        ("BCAST", "OPTOUT"), ("OPTIN", "OPTOUT"), ("REDIRECT", "0"), ("REDIRECT", "x"),
                        ("NOLOOP", "FOO"), ("PREFIX",)):
            s("a", "CLIENT", "TRACKING", "ON", *options)
        s("a", "CLIENT", "TRACKING", "MAYBE", "BCAST")
        s("a", "CLIENT", "TRACKING", "OFF", "PREFIX", "a")
        s("a", "CLIENT", "TRACKINGINFO")
        # 7.0.15 answers a pair of overlapping new prefixes found from the second one on with the
        # error and then +OK, and keeps them all.
        s("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "a", "PREFIX", "ab")
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "abc")
        s("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz", "PREFIX", "z")
        s("a", "CLIENT", "TRACKING", "ON")
        s("a", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q")
        s.info("a")
        s("c", "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP")  # every key
        s("b", "SET", "ab", "1")
        s("b", "SET", "c", "1")
        s.send("b", ("SET", "ac", "1"), ("SET", "ab", "1"), ("SET", "q1", "1"), ("DEL", "ab", "zz"))
        s("a", "SET", "ab", "2")  # its own write: after the reply, once per matching prefix
        s("c", "SET", "x1", "1")  # NOLOOP: not to c
        s.send("c", ("SET", "x2", "1"), ("SET", "x3", "1"))
        s.send("b", ("SET", "x2", "2"), ("MULTI",), ("SET", "q2", "1"), ("EXEC",))
        s("a", "GET", "ab")  # BCAST remembers nothing
        s("a", "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP")  # no PREFIX: adds the empty one
        s("a", "CLIENT", "TRACKINGINFO")
        s("a", "SET", "ab", "3")
        s("a", "FLUSHALL")
        s("a", "CLIENT", "TRACKING", "OFF")
        s("b", "SET", "ab", "4")

    same_bytes(ports, scenario)


def test_redirect(ports: tuple[int, int]) -> None:
    def scenario(s: Session) -> None:
        s.connect("a", "r")
        s.connect("b", proto=2)
        s.connect("r3")
        s("a", "CLIENT", "TRACKING", "ON", "REDIRECT", s.id("r"), "REDIRECT", s.id("b"))
        s("a", "CLIENT", "TRACKING", "ON", "REDIRECT", s.id("r"))
        s("a", "GET", "k")
        s("r", "SET", "k", "1")  # to the running client: before its reply
        s("a", "GET", "k")
        s("a", "SET", "k", "2")
        s("a", "CLIENT", "GETREDIR")
        s("a", "CLIENT", "TRACKINGINFO")
        s.info("a")
        s("a", "GET", "k")
        s.close("r")  # nothing is said yet
        s("a", "CLIENT", "TRACKINGINFO")
        s("b", "SET", "k", "3")  # now: tracking-redir-broken
        s("a", "CLIENT", "TRACKINGINFO")
        s.info("a")
        s("a", "GET", "k")
        s("b", "SET", "k", "4")
        s("b", "FLUSHALL")
        s("a", "CLIENT", "TRACKING", "ON", "REDIRECT", s.id("r3"))  # a new redirect mends it
        s("a", "CLIENT", "TRACKINGINFO")
        # RESP2 tracking client, RESP3 redirect client: FLUSH*'s null is the tracking client's.
        s("b", "CLIENT", "TRACKING", "ON", "REDIRECT", s.id("r3"))
        s("b", "GET", "r2")
        s("a", "SET", "r2", "1")
        s("b", "FLUSHDB")
        s("b", "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", s.id("r3"))
        s("b", "CLIENT", "TRACKING", "OFF")
        s("b", "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", s.id("r3"), "PREFIX", "p")
        s.info("b")
        s("a", "SET", "p1", "1")
        s.close("r3")
        s("a", "SET", "p1", "2")  # RESP2: broken, but nothing can be said
        s.info("b")
        s("b", "CLIENT", "TRACKINGINFO")
        s("b", "HELLO", "3")
        s("a", "SET", "p1", "3")
        s("b", "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", s.id("a"))  # RESP2 redirect to RESP3 client

    same_bytes(ports, scenario)


@pytest.mark.parametrize("decode", [False, True])
def test_redis_py_client_side_cache_stays_fresh(redis: RealRedis, reference_port: int, decode: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py's own cache (RESP3, cache_config): another client's write reaches the cached reader."""
    # redis-py refuses caching below 7.4 by policy ("to maximize compatibility"); what it relies on,
    # RESP3 CLIENT TRACKING with invalidation pushes, is 7.0's, so the floor is lowered here.
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    outcomes = []
    for port in (redis.port, reference_port):
        cached = redispy.Redis(port=port, protocol=3, cache_config=CacheConfig(), decode_responses=decode)
        writer = redispy.Redis(port=port, protocol=3, decode_responses=decode)
        try:
            writer.flushall()
            writer.set("k", "1")
            seen = [cached.get("k"), cached.get("k")]
            cache = cached.get_cache()
            assert cache is not None
            cached_before = cache.size
            # Invalidations travel on their own: a round trip on the cached connection (its PING's
            # answer comes after the push) makes sure redis-py has read one before it looks.
            writer.set("k", "2")
            cached.ping()
            seen.append(cached.get("k"))
            writer.delete("k")
            cached.ping()
            seen.append(cached.get("k"))
            writer.set("k", "3")
            writer.flushall()
            cached.ping()
            seen.append(cached.get("k"))
            outcomes.append((seen, cached_before))
        finally:
            cached.close()
            writer.close()
    assert outcomes[1] == outcomes[0]
    seen, cached_before = outcomes[0]
    assert cached_before == 1
    assert [v if v is None or isinstance(v, str) else v.decode() for v in seen] == ["1", "1", "2", None, None]


class _Sink:
    """A connection double that keeps what the core writes to it."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, out: list[bytes]) -> None:
        self.out += out


def test_core_without_an_event_loop_sends_bcast_at_the_end_of_the_command() -> None:
    """Driven directly (no event loop), the core sends a BCAST round when the command ends: the
    running client's own keys after its reply, as the served scenarios above show 7.0.15 does."""
    core = new_core()
    sinks = [_Sink(), _Sink()]
    a, b = (core.connect(sink) for sink in sinks)  # type: ignore[arg-type]
    for c in (a, b):
        core.execute(c, [b"HELLO", b"3"])
    for key in (b"k1", b"k2", b"x"):
        core.execute(b, [b"SET", key, b"v"])
    core.execute(a, [b"CLIENT", b"TRACKING", b"ON", b"BCAST", b"PREFIX", b"k"])
    push = b">2\r\n$10\r\ninvalidate\r\n*2\r\n$2\r\nk1\r\n$2\r\nk2\r\n"
    assert encode_reply(core.execute(a, [b"DEL", b"k2", b"k1", b"x"]), 3) == b":3\r\n" + push
    assert sinks[0].out == []
    core.execute(b, [b"SET", b"k2", b"v"])
    core.execute(b, [b"SET", b"k1", b"v"])
    assert encode_reply(core.execute(b, [b"DEL", b"k1", b"k2"]), 3) == b":2\r\n"
    push1 = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk%d\r\n"
    assert b"".join(sinks[0].out) == push1 % 2 + push1 % 1 + push  # one round per command
    assert sinks[1].out == []
