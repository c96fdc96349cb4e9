"""Running scenarios against a real redis-server and writing the corpus.

:class:`RedisProcess` starts a private redis-server on a free loopback port
(no persistence) and stops it by its pid; :func:`start_redis` and
:func:`stop_process`, which it uses, also serve the tests' server fixtures.
:func:`record_scenario` resets the server to an empty state with the default
stream settings, applies the scenario's settings with CONFIG SET, and records
the scenario as a trace.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from xspec.spec.resp import Bulk, Simple
from xspec.spec.trace_format import Trace, dump, find_traces
from xspec.traces.harness.servers import find_redis_server
from xspec.traces.record.client import RespConnection
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.registry import SKIPPED_EDGE_CASES, Scenario, ScenarioError

DEFAULT_STREAM_CONFIG = {"stream-node-max-entries": "100", "stream-node-max-bytes": "4096"}
"""The settings every scenario starts from (7.0.15's defaults), before its own ``config``."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(binary: str, workdir: str, extra: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``binary`` on a free loopback port, without persistence, its files in ``workdir``, with the
    further arguments ``extra`` (``--enable-debug-command yes``, ...).

    Returns the process and its port once the server answers PING; tries five
    ports, then raises RuntimeError.
    """
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--daemonize", "no", "--logfile", os.path.join(workdir, f"redis-{port}.log"), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                conn = RespConnection("127.0.0.1", port, timeout=1)
                conn.call([b"PING"])
                conn.close()
                return proc, port
            except OSError:
                time.sleep(0.05)
        stop_process(proc)
    raise RuntimeError(f"could not start {binary}")


def config_args(config: dict[str, str]) -> list[str]:
    """``config`` as the command line arguments :func:`start_redis` takes as ``extra``."""
    return [word for name, value in config.items() for word in (f"--{name}", value)]


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server this module started: SIGTERM to its pid, SIGKILL after 10 s."""
    proc.terminate()  # signals this pid only
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class RedisProcess:
    """A private redis-server on 127.0.0.1: no RDB, no AOF, its own working folder."""

    def __init__(self, binary: str | None = None) -> None:
        found = binary or find_redis_server("7.0")
        if found is None:
            raise FileNotFoundError("redis-server 7.0 not found; pass --redis-server PATH")
        self.binary = found
        self.workdir = tempfile.mkdtemp(prefix="xspec-record-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.host = "127.0.0.1"
        self.port = 0

    def start(self) -> RedisProcess:
        self.proc, self.port = start_redis(self.binary, self.workdir)
        return self

    def version(self) -> str:
        return self.identity()[1]

    def identity(self) -> tuple[str, str]:
        """The server's name and version as a trace header names them, from INFO server.

        Valkey reports ``server_name:valkey`` and its own ``valkey_version`` (its
        ``redis_version`` is a fixed compatibility value); Redis has neither.
        """
        conn = RespConnection(self.host, self.port)
        try:
            info = conn.call([b"INFO", b"server"])
        finally:
            conn.close()
        assert isinstance(info, Bulk)
        fields = dict(line.split(":", 1) for line in info.value.decode().splitlines() if ":" in line)
        name = fields.get("server_name", "redis").strip()
        return name, fields.get(f"{name}_version", fields.get("redis_version", "?")).strip()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def reset_server(host: str, port: int, config: dict[str, str]) -> None:
    """Empty every database, drop every other client, and set the stream settings."""
    conn = RespConnection(host, port)
    try:
        conn.call([b"CLIENT", b"KILL", b"TYPE", b"normal", b"SKIPME", b"yes"])
        conn.call([b"FLUSHALL"])
        # the script cache and the function libraries outlive FLUSHALL (SCRIPT-2, FUNCTION-2); a server
        # without FUNCTION (6.2) answers an error, which is fine
        conn.call([b"SCRIPT", b"FLUSH"])
        conn.call([b"FUNCTION", b"FLUSH"])
        configure(conn, {**DEFAULT_STREAM_CONFIG, **config})
    finally:
        conn.close()


def configure(conn: RespConnection, settings: dict[str, str]) -> None:
    """CONFIG SET every setting; ScenarioError names the first one the server refuses."""
    for name, value in settings.items():
        reply = conn.call([b"CONFIG", b"SET", name.encode(), value.encode()])
        if reply != Simple("OK"):
            raise ScenarioError(f"CONFIG SET {name} {value}: {reply}")


def record_scenario(scenario: Scenario, host: str, port: int, version: str = "7.0.15",
                    server_name: str = "redis") -> Trace:
    """Run one scenario on a freshly reset server and return its trace."""
    reset_server(host, port, scenario.config)
    rec = Recorder(host, port, server_name=server_name, server_version=version, config=scenario.config,
                   title=scenario.title, tags=scenario.all_tags)
    try:
        scenario.run(rec)
    finally:
        rec.close_all()
    return rec.trace()


def select(scenarios: Iterable[Scenario], pattern: str | None) -> list[Scenario]:
    """The scenarios whose ``topic/name`` matches the glob (or contains the text) ``pattern``."""
    chosen = []
    for s in scenarios:
        full = f"{s.topic}/{s.name}"
        if pattern is None or fnmatch.fnmatch(full, pattern) or pattern in full:
            chosen.append(s)
    return chosen


def edge_case_readme(scenarios: list[Scenario], version: str, server_name: str = "redis") -> str:
    """The corpus README: what is here and which trace covers each §10 edge case."""
    by_case: dict[int, list[str]] = {}
    for s in scenarios:
        for n in s.edge_cases:
            by_case.setdefault(n, []).append(s.path)
    rerecord = f"    python -m xspec.traces.scenarios --out traces/{server_name}-{version}"
    if (server_name, version) != ("redis", "7.0.15"):
        rerecord += f" --redis-server PATH-TO-{server_name}-server-{version}"
    lines = [
        f"# Recorded corpus: {server_name.capitalize()} {version}",
        "",
        f"Every trace here was recorded from a real {server_name}-server by the scripts in",
        "`traces/scenarios/` (one module per topic). Re-record with",
        "",
        rerecord,
        "",
        "which starts its own redis-server on a free loopback port, runs each scenario on a",
        "freshly flushed server with the scenario's settings (the header's `config`), and",
        "writes `<topic>/<name>.jsonl`. Replies depending on the host (HELLO `id`/`version`,",
        "CLIENT ID, INFO, CLIENT LIST) and on real time (`*` IDs, idle and delivery times)",
        "differ between recordings; everything else is reproducible.",
        "",
        "Replication, AOF and Lua are out of reach of client traces: edge cases 71-74 and the",
        "propagation or Lua parts of a few others are not recorded (marked below).",
        "",
        "## Edge cases of redis-streams-semantics.md §10",
        "",
        "| # | traces |",
        "| --- | --- |",
    ]
    for n in range(1, 76):
        files = by_case.get(n, [])
        cell = ", ".join(f"`{p}`" for p in files) if files else "—"
        if n in SKIPPED_EDGE_CASES:
            cell = (cell + "; " if files else "") + f"not recorded: {SKIPPED_EDGE_CASES[n]}"
        lines.append(f"| {n} | {cell} |")
    lines += ["", "## Traces", "", "| trace | title |", "| --- | --- |"]
    lines += [f"| `{s.path}` | {s.title} |" for s in scenarios]
    return "\n".join(lines) + "\n"


def record_corpus(out: Path, scenarios: list[Scenario], binary: str | None = None,
                  write_readme: bool = True, log: bool = True) -> tuple[list[Path], list[str]]:
    """Start a server, record every scenario under ``out``, stop the server.

    Returns the files written and one message per scenario that failed (its trace is not written).
    """
    written: list[Path] = []
    failed: list[str] = []
    with RedisProcess(binary) as server:
        name, version = server.identity()
        if log:
            print(f"recording from {name} {version}")
        for s in scenarios:
            started = time.monotonic()
            try:
                trace = record_scenario(s, server.host, server.port, version, name)
            except (ScenarioError, OSError) as e:
                failed.append(f"{s.path}: {type(e).__name__}: {e}")
                if log:
                    print(f"FAILED {failed[-1]}")
                continue
            path = out / s.path
            dump(trace, path)
            written.append(path)
            if log:
                print(f"{path}: {len(trace.events)} events, {time.monotonic() - started:.2f}s")
        if write_readme:
            (out / "README.md").write_text(edge_case_readme(scenarios, version, name), encoding="utf-8")
            stale = sorted(set(find_traces([out])) - set(written))
            if stale and log:
                print(f"warning: {len(stale)} trace files under {out} belong to no scenario: "
                      + ", ".join(str(p) for p in stale))
    return written, failed
