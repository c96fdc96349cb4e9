"""The recording proxy: bytes pass unchanged, and the trace it writes conforms on the model."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RealRedis, free_port
from xspec.spec.resp import Bulk, encode_command
from xspec.spec.trace_format import Call, Close, Connect, Note, Recv, Send, Trace, load
from xspec.spec.trace_format import Push as PushEvent
from xspec.traces.check.checker import check_trace
from xspec.traces.check.report import run_replay
from xspec.traces.record.proxy import BackgroundProxy, CommandReader, recording

pytestmark = pytest.mark.redis


# -- splitting the client's bytes into commands --------------------------------------------------------
def test_commands_are_split_whatever_the_chunking() -> None:
    stream = (encode_command([b"XADD", b"s", b"*", b"f", b"\x00\r\n" * 3]) + b"PING\r\n" + b"  \r\n"
              + b"*0\r\n" + encode_command([b"GET", b"x" * 70000]) + b"ECHO  a   b\n")
    expected = [[b"XADD", b"s", b"*", b"f", b"\x00\r\n" * 3], [b"PING"], [b"GET", b"x" * 70000], [b"ECHO", b"a", b"b"]]
    for size in (1, 7, 1000, len(stream)):
        reader = CommandReader()
        got = []
        for i in range(0, len(stream), size):
            reader.feed(stream[i:i + size])
            while (cmd := reader.next()) is not None:
                got.append(cmd)
        assert got == expected, size


def test_malformed_input_is_kept_raw() -> None:
    reader = CommandReader()
    reader.feed(encode_command([b"PING"]) + b"*1\r\n:5\r\n" + b"more")
    assert reader.next() == [b"PING"]
    assert reader.next() == b"*1\r\n:5\r\nmore"
    reader.feed(b"later")
    assert reader.next() == b"later"
    quoted = CommandReader()
    quoted.feed(b'SET "a b" c\r\n')
    assert quoted.next() == b'SET "a b" c\r\n'


# -- through a real server ---------------------------------------------------------------------------
@pytest.fixture
def proxy(redis: RealRedis) -> Iterator[BackgroundProxy]:
    with recording(f"redis://{redis.host}:{redis.port}") as running:
        yield running


def _finish(proxy: BackgroundProxy) -> Trace:
    time.sleep(0.05)  # the last replies' bytes are recorded after they are forwarded
    trace = proxy.stop()
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict.describe()
    return trace


def _raw(port: int, data: bytes, until: bytes | None, timeout: float = 5.0) -> bytes:
    """Send ``data`` on a fresh socket and read until the bytes end with ``until`` (None: until closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        while until is None or not got.endswith(until):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            got += chunk
        return got


def test_bytes_pass_unchanged_and_pipelines_are_recorded(redis: RealRedis) -> None:
    big = bytes(range(256)) * 4000  # ~1 MB of every byte value
    batch = b"".join(encode_command(argv) for argv in [
        [b"HELLO", b"3"], [b"XADD", b"s", b"1-0", b"f", big], [b"XADD", b"s", b"2-0", b"\xff", b""],
        [b"XRANGE", b"s", b"-", b"+"], [b"XINFO", b"STREAM", b"s"], [b"XADD", b"s", b"bad", b"f", b"v"],
        [b"MULTI"], [b"XLEN", b"s"], [b"XDEL", b"s", b"1-0"], [b"EXEC"]]) + b"PING\r\n"
    direct = _raw(redis.port, batch, b"+PONG\r\n")
    redis.reset()
    with recording(f"redis://{redis.host}:{redis.port}") as running:
        through = _raw(running.port, batch, b"+PONG\r\n")
        trace = _finish(running)
    client_id = re.compile(rb"\$2\r\nid\r\n:\d+\r\n")  # HELLO's connection id: a new one each time
    assert client_id.sub(b"", through) == client_id.sub(b"", direct)
    sends = [e for e in trace.events if isinstance(e, Send)]
    recvs = [e for e in trace.events if isinstance(e, Recv)]
    assert len(sends) + sum(isinstance(e, Call) for e in trace.events) == 11
    assert [b"XADD", b"s", b"1-0", b"f", big] in [e.cmd for e in trace.events if isinstance(e, (Call, Send))]
    assert len(recvs) == len(sends)
    assert isinstance(trace.events[-1], Close) and trace.events[-1].by == "client"


def test_redis_py_resp2_resp3_transactions_and_a_blocked_read(proxy: BackgroundProxy) -> None:
    redis_py = pytest.importorskip("redis")
    r2 = redis_py.Redis(port=proxy.port, protocol=2)
    r3 = redis_py.Redis(port=proxy.port, protocol=3)
    blocker = redis_py.Redis(port=proxy.port, protocol=2)
    try:
        r2.xadd("s", {"f": "v"}, id="1-0")
        r2.xgroup_create("s", "g", "$")
        got: list[object] = []
        reader = threading.Thread(target=lambda: got.append(
            blocker.xreadgroup("g", "bob", {"s": ">"}, block=0)))
        reader.start()
        time.sleep(0.2)  # bob blocks: the group has nothing new
        assert r3.xreadgroup("g", "alice", {"s": ">"}) in ([], {}, None)
        pipe = r3.pipeline(transaction=True)
        pipe.xadd("s", {b"\xfe": b"\x00" * 300000}, id="2-0")
        pipe.xpending("s", "g")
        pipe.execute()
        reader.join(5)
        assert got and got[0]
        assert r3.xinfo_stream("s")["length"] == 2
    finally:
        for r in (r2, r3, blocker):
            r.close()
    trace = _finish(proxy)
    assert sum(isinstance(e, Connect) for e in trace.events) == 3
    blocked = [e for e in trace.events if isinstance(e, Send) and e.cmd and e.cmd[0].upper() == b"XREADGROUP"]
    assert blocked and b"BLOCK" in blocked[0].cmd  # type: ignore[operator]


def test_redis_cli_through_the_proxy(proxy: BackgroundProxy) -> None:
    cli = ["redis-cli", "-p", str(proxy.port)]
    subprocess.run([*cli, "XADD", "s", "5-1", "name", "\u00e9t\u00e9"], check=True, capture_output=True)
    out = b"".join(subprocess.run([*cli, *command.split()], check=True, capture_output=True).stdout
                   for command in ("XLEN s", "XRANGE s - +", "XADD s 1-0 a b"))
    assert out.startswith(b"1\n") and b"ERR The ID specified in XADD is equal or smaller" in out
    trace = _finish(proxy)
    cmds = [e.cmd[0].upper() for e in trace.events if isinstance(e, Call)]
    assert cmds.count(b"XADD") == 2 and b"XRANGE" in cmds


def test_a_client_that_disconnects_while_blocked(proxy: BackgroundProxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port)) as s:
        s.sendall(encode_command([b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]))
        time.sleep(0.1)
    reply = _raw(proxy.port, encode_command([b"XADD", b"s", b"1-0", b"f", b"v"]) + encode_command([b"QUIT"]),
                 b"+OK\r\n")
    assert reply == b"$3\r\n1-0\r\n+OK\r\n"
    trace = _finish(proxy)
    closes = [(e.c, e.by) for e in trace.events if isinstance(e, Close)]
    assert closes == [(1, "client"), (2, "server")]
    assert isinstance(trace.events[1], Send)  # the blocked read never got its reply


def test_garbage_from_a_client_is_recorded_raw(proxy: BackgroundProxy) -> None:
    reply = _raw(proxy.port, encode_command([b"PING"]) + b"*1\r\n$x\r\n", None)
    assert reply.startswith(b"+PONG\r\n-ERR Protocol error")
    time.sleep(0.05)
    trace = proxy.stop()
    raws = [e for e in trace.events if isinstance(e, Send) and e.raw is not None]
    assert raws and raws[0].raw == b"*1\r\n$x\r\n"
    assert check_trace(trace).status == "unsupported"


def test_record_command_writes_a_trace_that_replays(redis: RealRedis, tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from xspec.commands.record import record_command; record_command()",
         "--listen", f"127.0.0.1:{port}", "--upstream", f"redis://{redis.host}:{redis.port}", "--out", str(out),
         "--title", "a session"], stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stderr is not None and b"recording" in proc.stderr.readline()
        reply = _raw(port, encode_command([b"XADD", b"s", b"*", b"f", b"v"]) + encode_command([b"XLEN", b"s"]),
                     b":1\r\n")
        assert reply.endswith(b":1\r\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    trace = load(out)
    assert trace.header.title == "a session" and trace.header.server_version == "7.0.15"
    assert [type(e).__name__ for e in trace.events] in (["Connect", "Send", "Send", "Recv", "Recv", "Close"],
                                                       ["Connect", "Call", "Call", "Close"])
    assert run_replay([out], "auto") == 0


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_messages_the_server_sends_on_its_own_are_push_events(redis: RealRedis, tmp_path: Path, proto: int,
                                                              suffix: str) -> None:
    """Pub/Sub messages, keyspace notifications and tracking invalidations, in RESP2 and RESP3, are
    ``push`` events; a multi-channel SUBSCRIBE is a ``send`` and a ``recv`` per confirmation; the file
    becomes trace/2 with one node at the first push, and the real server's trace conforms."""
    from tests.pubsub_session import session

    redis.reset()
    out = tmp_path / f"session{suffix}"
    with recording(f"redis://{redis.host}:{redis.port}", out) as running:
        received = session(running.port, proto)
        time.sleep(0.05)
        running.stop()
    trace = load(out)
    assert trace.header.nodes is not None and len(trace.header.nodes) == 1
    pushes = [e for e in trace.events if isinstance(e, PushEvent)]
    assert len(pushes) == received  # what the clients read, and nothing for the PUBLISH nobody heard
    assert not [e for e in trace.events if isinstance(e, Note)], "every reply was matched or a push"
    subscribe = next(i for i, e in enumerate(trace.events)
                     if isinstance(e, Send) and e.cmd and e.cmd[0].upper() == b"SUBSCRIBE")
    client = trace.events[subscribe].c  # type: ignore[union-attr]
    confirmations = [e.reply for e in trace.events[subscribe + 1:] if isinstance(e, Recv) and e.c == client][:2]
    assert [r.items[1] for r in confirmations] == [Bulk(b"a"), Bulk(b"b")]  # type: ignore[attr-defined]
    verdict = check_trace(trace)
    assert verdict.status == "conform", verdict.describe()
    # The same session without messages stays trace/1.
    plain = tmp_path / f"plain{suffix}"
    with recording(f"redis://{redis.host}:{redis.port}", plain) as running:
        _raw(running.port, encode_command([b"PING"]), b"+PONG\r\n")
        running.stop()
    assert load(plain).header.nodes is None
