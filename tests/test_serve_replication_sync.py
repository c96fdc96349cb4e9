"""The full synchronisation's wait for more replicas (``repl-diskless-sync-delay``, REPL-5) in `xspec serve`
against real Redis 7.0.15, and the replica's reading of the stream (REPL-2, REPL-12, WAIT-3) in process."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support import ReplicaTap
from tests.test_serve_replication import Real, client, link_up, offsets, wait_until
from xspec.reference.handlers import new_core
from xspec.reference.replica_link import ReplicaLink
from xspec.reference.replication import replication_of, resp_command
from xspec.reference.server import ServerThread


@pytest.fixture(params=["redis-7.0.15", "xspec"])
def primary(request: pytest.FixtureRequest, real_binary: str) -> Iterator[redis.Redis]:
    """A primary of either kind, with two xspec replicas not yet linked (``.replicas``, ``.port``)."""
    real = Real(real_binary) if request.param == "redis-7.0.15" else None
    with ServerThread() as ours, ServerThread() as a, ServerThread() as b:
        r = real.r if real is not None else client(ours)
        r.port = real.port if real is not None else ours.port  # type: ignore[attr-defined]
        r.replicas = [client(a), client(b)]  # type: ignore[attr-defined]
        try:
            yield r
        finally:
            if real is not None:
                real.stop()


def replica_states(primary: redis.Redis) -> list[str]:
    info = primary.info("replication")
    return [info[f"slave{i}"]["state"] for i in range(info["connected_slaves"])]


def test_the_sync_waits_the_delay_for_more_replicas(primary: Any) -> None:
    """repl-diskless-sync-delay: the first replica waits (state wait_bgsave, link down), a second one asking
    meanwhile waits with it, and both are in sync once the delay from the first has passed."""
    primary.config_set("repl-diskless-sync-delay", 2)
    primary.xadd("s", {"before": "sync"}, id="1-0")
    first, second = primary.replicas
    started = time.monotonic()
    first.replicaof("127.0.0.1", primary.port)
    wait_until(lambda: replica_states(primary) == ["wait_bgsave"], what="the first replica waiting")
    second.replicaof("127.0.0.1", primary.port)
    wait_until(lambda: replica_states(primary) == ["wait_bgsave", "wait_bgsave"], what="both waiting")
    waited = time.monotonic() - started
    assert primary.info("replication")["connected_slaves"] == 2
    if waited < 1.5:  # the link may be up once the delay has passed (a slow machine's handshakes)
        assert not link_up(first)
    wait_until(lambda: link_up(first) and link_up(second), what="both in sync")
    assert time.monotonic() - started >= 1.9
    # Redis puts them online when it sees its child done (its cron), after they may say the link is up
    wait_until(lambda: replica_states(primary) == ["online", "online"], what="both online")
    primary.xadd("s", {"after": "sync"}, id="2-0")
    wait_until(lambda: offsets(first, second) == offsets(primary) * 2, what="the stream applied")
    assert first.xrange("s") == second.xrange("s") == primary.xrange("s")
    assert primary.info("stats")["sync_full"] == 2


def test_enough_waiting_replicas_start_the_sync_at_once(primary: Any) -> None:
    """repl-diskless-sync-max-replicas: that many waiting replicas start the sync before the delay ends."""
    primary.config_set("repl-diskless-sync-delay", 20)
    primary.config_set("repl-diskless-sync-max-replicas", 2)
    started = time.monotonic()
    for r in primary.replicas:
        r.replicaof("127.0.0.1", primary.port)
    wait_until(lambda: all(link_up(r) for r in primary.replicas), timeout=15, what="both in sync")
    assert time.monotonic() - started < 15
    wait_until(lambda: replica_states(primary) == ["online", "online"], what="both online")


def test_sync_answers_the_snapshot_alone(real_binary: str) -> None:
    """The old SYNC (redis-cli --replica, tests/support.ReplicaTap): no ``+FULLRESYNC``, the RDB bulk at once
    even with a diskless delay set (a replica without ``capa eof`` gets a disk-based sync), then the stream."""
    real = Real(real_binary)
    try:
        with ServerThread() as ours:
            streams = []
            for port in (real.port, ours.port):
                r = redis.Redis(port=port)
                r.config_set("repl-diskless-sync-delay", 5)
                r.xadd("s", {"f": "v"}, id="1-0")
                with socket.create_connection(("127.0.0.1", port), timeout=3) as raw:
                    raw.sendall(b"SYNC\r\n")
                    head = b""
                    while b"\r\n" not in head.lstrip(b"\n"):
                        head += raw.recv(1)
                    assert head.lstrip(b"\n").startswith(b"$"), head
                tap = ReplicaTap("127.0.0.1", port, timeout=3)
                try:
                    r.xadd("s", {"f": "w"}, id="2-0")
                    streams.append(tap.take())
                finally:
                    tap.close()
                assert r.info("stats")["sync_full"] == 2
            assert streams[1] == streams[0] == [[b"SELECT", b"0"], [b"XADD", b"s", b"2-0", b"f", b"w"]]
    finally:
        real.stop()


def silent_replica(port: int, command: bytes) -> socket.socket:
    """A replica that reads its snapshot (after ``PSYNC ? -1`` or ``SYNC``) and never acknowledges."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    raw.sendall(command)
    head = b""
    while True:
        head = head.lstrip(b"\n")
        if head.startswith(b"+") and b"\r\n" in head:
            head = head.split(b"\r\n", 1)[1]
            continue
        if head.startswith(b"$") and b"\r\n" in head:
            break
        head += raw.recv(4096)
    line, rest = head.split(b"\r\n", 1)
    size = int(line[1:])
    while len(rest) < size:
        rest += raw.recv(65536)
    return raw


def closed_within(raw: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``raw`` within ``seconds`` (what it streams meanwhile is read and dropped)."""
    raw.settimeout(0.2)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if not raw.recv(65536):
                return True
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True
    return False


def test_a_replica_silent_past_repl_timeout_is_dropped(real_binary: str) -> None:
    """repl-timeout: an online replica that acknowledges nothing for longer is disconnected by the primary's
    cron; one that attached with the old SYNC is never expected to acknowledge, and stays."""
    real = Real(real_binary)
    try:
        with ServerThread() as ours:
            for port in (real.port, ours.port):
                r = redis.Redis(port=port)
                assert r.config_get("repl-timeout") == {"repl-timeout": "60"}
                r.config_set("repl-timeout", 1)
                r.config_set("repl-diskless-sync-delay", 0)
                psync = silent_replica(port, b"PSYNC ? -1\r\n")
                sync = silent_replica(port, b"SYNC\r\n")
                assert closed_within(psync, 6), port
                assert not closed_within(sync, 1), port
                assert r.info("replication")["connected_slaves"] == 1
                psync.close()
                sync.close()
    finally:
        real.stop()


# -- the replica's reading of the stream, in process ----------------------------------------------------------


class Written:
    """The primary's end of a link: what the replica writes to it (its acknowledgements)."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


def linked_replica() -> tuple[Any, ReplicaLink, Written]:
    """A core following a primary that is not there: its link connected at offset 0."""
    core = new_core()
    rep = replication_of(core)
    rep.master = ("127.0.0.1", 1)
    link = rep.link = ReplicaLink(rep, "127.0.0.1", 1)
    rep.refresh()
    link._attach_client(0)
    link.state = "connected"
    rep.adopt("a" * 40, 0)
    link.applied = link.read_offset = 0
    written = Written()
    link.writer = written  # type: ignore[assignment]
    return core, link, written


def test_the_replica_applies_and_counts_every_form_of_the_stream() -> None:
    """Canonical commands, an argument holding CRLF, a keep-alive newline, a transaction and commands cut
    between two reads: all applied, the offset moved by every byte (a transaction's at its EXEC), the
    backlog holding the bytes as read, and GETACK answering the offset before it (WAIT-3)."""
    core, link, written = linked_replica()
    commands = [[b"XADD", b"s", b"1-0", b"f", b"v"], [b"XADD", b"s", b"2-0", b"f", b"a\r\nb"], b"\n",
                [b"MULTI"], [b"XADD", b"s", b"3-0", b"f", b"v"], [b"SET", b"k", b"x" * 5000], [b"EXEC"],
                [b"XADD", b"s", b"4-0", b"f", b"v"]]
    stream = b"".join(c if isinstance(c, bytes) else resp_command(c) for c in commands)
    getack = resp_command([b"REPLCONF", b"GETACK", b"*"])
    stream += getack + resp_command([b"SELECT", b"1"]) + resp_command([b"XADD", b"t", b"5-0", b"f", b"v"])
    for size in (1, 7, 64, len(stream)):
        core, link, written = linked_replica()
        rep = replication_of(core)
        in_transaction: list[int] = []
        for i in range(0, len(stream), size):
            link._received(stream[i:i + size])
            if link.client is not None and link.client.in_multi:
                in_transaction.append(link.applied)
        c = core.connect(None)
        assert core.execute(c, [b"XLEN", b"s"]).value == 4
        assert core.execute(c, [b"GET", b"k"]).value == b"x" * 5000
        assert core.dbs[1][b"t"].length == 1
        assert link.applied == rep.offset == len(stream)
        assert rep.backlog is not None and rep.backlog.since(1) == stream
        before_getack = stream.index(getack)
        assert written.data == resp_command([b"REPLCONF", b"ACK", b"%d" % before_getack])
        multi_at = stream.index(resp_command([b"MULTI"]))
        assert all(applied <= multi_at for applied in in_transaction)
