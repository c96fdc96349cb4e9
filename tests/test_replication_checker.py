"""The trace/2 checker's rules that the recorded corpora do not pin down (issue 12, part 3): rule 10's
bound under ``appendfsync everysec``, verdicts without ``repl`` events, and a trace/2 written by a
recorder of this test's own (not the harness) against a real Redis 7.0.15 primary and replica."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from xspec.spec.trace_format import loads
from xspec.traces.check.checker import check_trace

T0 = 1_700_000_000_000_000
ROOT = Path(__file__).resolve().parent.parent


def _aof_trace(fsync: str, crash_after_ms: int, xlen: int) -> str:
    """Two XADDs acknowledged at 0 ms and half-way, a crash ``crash_after_ms`` after the first, a
    restart, and XLEN answering ``xlen``."""
    config = {"save": "", "appendonly": "yes", "appendfsync": fsync, "aof-use-rdb-preamble": "yes"}
    half, crash = T0 + crash_after_ms * 500, T0 + crash_after_ms * 1000
    lines: list[dict[str, Any]] = [
        {"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"},
                                             "addrs": ["127.0.0.1:7001"], "config": config}},
         "clock": "wall", "source": "written"},
        {"ev": "call", "c": 1, "node": "a", "cmd": ["XADD", "s", "1-1", "f", "v"], "t0": T0, "t1": T0 + 100,
         "reply": {"bulk": "1-1"}},
        {"ev": "call", "c": 1, "node": "a", "cmd": ["XADD", "s", "2-1", "f", "v"], "t0": half, "t1": half + 100,
         "reply": {"bulk": "2-1"}},
        {"ev": "crash", "node": "a", "t": crash},
        {"ev": "close", "c": 1, "by": "server", "t": crash},
        {"ev": "restart", "node": "a", "t": crash + 10},
        {"ev": "call", "c": 2, "node": "a", "cmd": ["XLEN", "s"], "t0": crash + 20_000, "t1": crash + 20_100,
         "reply": {"int": xlen}}]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.mark.parametrize("fsync, crash_after_ms, kept", [
    ("always", 1000, {2}),  # every acknowledged write
    ("everysec", 1000, {0, 1, 2}),  # both acknowledged within the last two seconds: any prefix
    ("everysec", 3000, {1, 2}),  # the first 3 s before the crash must be there, the second (1.5 s) may be lost
    ("everysec", 5000, {2}),  # both more than two seconds old
    ("no", 5000, {2}),  # written before each reply: a killed process loses nothing acknowledged
    ("no", 1000, {2}),
])
def test_rule_10_what_an_aof_keeps_after_a_crash(fsync: str, crash_after_ms: int, kept: set[int]) -> None:
    for xlen in (0, 1, 2):
        verdict = check_trace(loads(_aof_trace(fsync, crash_after_ms, xlen)))
        if xlen in kept:
            assert verdict.status == "conform", (xlen, verdict.describe())
        else:  # a restart that lost an older write is rejected at the read that shows it
            assert verdict.status == "diverge" and verdict.event == 6, (xlen, verdict.describe())
            assert verdict.message.startswith("node a: ")


def _without_repl(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [lines[0]] + [line for line in lines[1:] if json.loads(line).get("ev") != "repl"]


# Corpus traces with their repl events taken out (as a recorder without a proxy writes them) and one
# reply changed: each is decided, at the changed event or a later one that no execution explains.
WITHOUT_REPL = [("failover/two-owners.jsonl", 10), ("wait/wait-met.jsonl", 0)]


@pytest.mark.parametrize("name, event", WITHOUT_REPL)
def test_a_trace_without_repl_events_is_decided(name: str, event: int) -> None:
    lines = _without_repl(ROOT / "traces" / "replication" / "redis-7.0.15" / name)
    assert check_trace(loads("\n".join(lines) + "\n")).status == "conform"
    if not event:
        return
    e = json.loads(lines[event])
    reply = e["reply"]
    e["reply"] = {"simple": reply["simple"] + "x"} if "simple" in reply else {"error": "ERR changed"}
    lines[event] = json.dumps(e)
    began = time.process_time()
    verdict = check_trace(loads("\n".join(lines) + "\n"))
    assert verdict.status == "diverge" and verdict.event == event, verdict.describe()
    assert time.process_time() - began < 10


# -- an independent recorder ----------------------------------------------------------------------


def _encode(argv: list[str]) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        data = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class _Conn:
    """A RESP2 connection that writes each command's exchange as a trace/2 ``call``."""

    def __init__(self, port: int, c: int, node: str, lines: list[dict[str, Any]]) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")
        self.c, self.node, self.lines = c, node, lines

    def call(self, *argv: str) -> Any:
        t0 = time.time_ns() // 1000
        self.sock.sendall(_encode(list(argv)))
        reply = self._read()
        t1 = time.time_ns() // 1000 + 1
        self.lines.append({"ev": "call", "c": self.c, "node": self.node, "cmd": list(argv), "t0": t0, "t1": t1,
                           "reply": reply})
        return reply

    def _read(self) -> Any:
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:].decode()
        if kind == b"+":
            return {"simple": rest}
        if kind == b"-":
            return {"error": rest}
        if kind == b":":
            return {"int": int(rest)}
        if kind == b"$":
            if rest == "-1":
                return {"null": "bulk"}
            data = self.file.read(int(rest) + 2)[:-2]
            return {"bulk": data.decode()}
        if rest == "-1":
            return {"null": "array"}
        return {"array": [self._read() for _ in range(int(rest))]}

    def close(self) -> None:
        self.file.close()
        self.sock.close()


REDIS_7015 = "/usr/bin/redis-server"


def _redis_7015() -> str | None:
    import subprocess
    if not os.path.exists(REDIS_7015):
        return None
    out = subprocess.run([REDIS_7015, "--version"], capture_output=True, text=True).stdout
    return REDIS_7015 if "v=7.0.15" in out else None


@pytest.mark.skipif(_redis_7015() is None, reason="needs Redis 7.0.15 at /usr/bin/redis-server")
def test_a_trace_2_recorded_by_another_recorder_conforms() -> None:
    """Rule 7-9 as the contract states them, checked on a recording made without the harness: two
    real servers, no proxy (so no repl events), the header written by hand."""
    import subprocess

    from xspec.traces.scenarios.runner import free_port, stop_process

    config = {"save": "", "appendonly": "no", "repl-diskless-sync-delay": "0"}
    workdir = tempfile.mkdtemp(prefix="xspec-trace2-")
    procs: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    conns: list[_Conn] = []
    lines: list[dict[str, Any]] = []
    try:
        for name in ("a", "b"):
            port = free_port()
            os.makedirs(os.path.join(workdir, name))
            procs.append(subprocess.Popen(
                [REDIS_7015, "--port", str(port), "--bind", "127.0.0.1", "--dir", os.path.join(workdir, name),
                 *(arg for k, v in config.items() for arg in (f"--{k}", v)),
                 "--daemonize", "no", "--logfile", os.path.join(workdir, f"{name}.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            ports.append(port)
        for port in ports:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port)).close()
                    break
                except OSError:
                    time.sleep(0.02)
        a, b = _Conn(ports[0], 1, "a", lines), _Conn(ports[1], 2, "b", lines)
        conns += [a, b]
        assert b.call("REPLICAOF", "127.0.0.1", str(ports[0])) == {"simple": "OK"}
        watcher = _Conn(ports[1], 0, "b", [])  # unrecorded: the trace says nothing about this wait
        conns.append(watcher)
        for _ in range(200):
            if "master_link_status:up" in watcher.call("INFO", "replication")["bulk"]:
                break
            time.sleep(0.05)
        a.call("XADD", "s", "1-1", "f", "v1")
        a.call("XGROUP", "CREATE", "s", "g", "0")
        a.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
        assert a.call("WAIT", "1", "2000") == {"int": 1}
        b.call("XRANGE", "s", "-", "+")
        b.call("XPENDING", "s", "g")
        b.call("XADD", "s", "*", "f", "v")  # READONLY
        b.call("XLEN", "s")
    finally:
        for conn in conns:
            conn.close()
        for proc in procs:
            stop_process(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    header = {"xspec": "trace/2", "clock": "wall", "source": "recorded", "title": "an independent recorder",
              "nodes": {name: {"server": {"name": "redis", "version": "7.0.15"}, "addrs": [f"127.0.0.1:{port}"],
                               "config": config} for name, port in zip("ab", ports, strict=True)}}
    text = "\n".join(json.dumps(line) for line in [header, *lines]) + "\n"
    verdict = check_trace(loads(text))
    assert verdict.status == "conform", verdict.describe() + "\n" + text


WAITAOF_TRACES = sorted((Path(__file__).resolve().parent.parent / "traces" / "replication" / "waitaof").rglob("*.jsonl"))


@pytest.mark.parametrize("path", WAITAOF_TRACES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_waitaof_counts_the_fsynced_acknowledgements(path: Path) -> None:
    """WAITAOF-2: the replicas' FACKs decide WAITAOF's count; the trace conforms, and its first WAITAOF
    reply changed is rejected at that event."""
    from xspec.spec.resp import Array, Int
    from xspec.spec.trace_format import Call, Recv, Send, load

    trace = load(path)
    assert check_trace(trace).status == "conform"
    at, waiting = None, set()
    for i, e in enumerate(trace.events):  # the first WAITAOF reply: a call's, or the recv after a send
        if isinstance(e, Call) and e.cmd[0].upper() == b"WAITAOF" and isinstance(e.reply, Array):
            at = i
            break
        if isinstance(e, Send) and e.cmd is not None and e.cmd[0].upper() == b"WAITAOF":
            waiting.add(e.c)
        elif isinstance(e, Recv) and e.c in waiting and isinstance(e.reply, Array):
            at = i
            break
    assert at is not None
    event = trace.events[at]
    assert isinstance(event, Call | Recv) and isinstance(event.reply, Array)
    local, replicas = event.reply.items
    assert isinstance(replicas, Int)
    trace.events[at] = type(event)(**{**event.__dict__, "reply": Array((local, Int(replicas.value + 1)))})
    verdict = check_trace(trace)
    assert verdict.status == "diverge" and verdict.event == at + 1, verdict.describe()  # events count from 1
