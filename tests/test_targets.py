"""Targets: URL parsing, the model on a virtual clock, live servers (flushed, confined, blocking confirmed)."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RealRedis, free_port, redis_binary
from xspec.spec.resp import Array, Bulk, Int, NullArray, Simple
from xspec.spec.trace_format import Call, Close, Recv, Send, dumps
from xspec.traces.check.checker import check_trace
from xspec.traces.fuzz.generate import PROFILES, Generator, Step, random_config
from xspec.traces.harness.targets import (
    LiveTarget,
    ModelTarget,
    TargetError,
    parse_endpoint,
    parse_info,
    parse_target,
    prefix_keys,
    server_info,
)
from xspec.traces.record.client import RespConnection


def steps_of(*commands: tuple[int, str]) -> list[Step]:
    """Steps from ``(client, "XADD s * f v")``; client 0 with ``"pause N"`` is a pause."""
    out = []
    for client, text in commands:
        words = text.split()
        if words[0] == "pause":
            out.append(Step(0, (), int(words[1])))
        elif words[0] == "|":
            out.append(Step(client, tuple(w.encode() for w in words[1:]), pipelined=True))
        else:
            out.append(Step(client, tuple(w.encode() for w in words)))
    return out


# -- URLs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("url, message", [
    ("localhost:6379", "unknown scheme"),
    ("nothing", "not a target URL"),
    ("http://x:1", "unknown scheme"),
    ("redis://h:99999", "port"),
    ("redis://h:1/abc", "database number"),
    ("redis://:1", "no host"),
    ("redis://h:1?ssl_cert_reqs=none", "unknown options"),
    ("rediss://h:1?colour=red", "unknown options"),
    ("model:redis-0.1", "unknown dialect"),
    ("model:redis-7.0+bug:x", "mutant:<name>"),
    ("embedded:x", "takes nothing after the colon"),
])
def test_bad_urls_are_refused_with_a_reason(url: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target(url)


def test_bad_dialect_option_is_refused() -> None:
    with pytest.raises(TargetError, match="unknown dialect"):
        parse_target("model:redis-7.0", dialect="redis-0.1")


def test_endpoints_carry_credentials_database_and_tls_options() -> None:
    e = parse_endpoint("redis://alice:p%40ss@example.com:7000/3")
    assert (e.host, e.port, e.username, e.password, e.db, e.tls) == ("example.com", 7000, "alice", "p@ss", 3, False)
    e = parse_endpoint("rediss://:secret@[::1]:6380?ssl_cert_reqs=none")
    assert (e.host, e.port, e.username, e.password, e.tls) == ("::1", 6380, None, "secret", True)
    assert e.ssl_context().verify_mode.name == "CERT_NONE"
    assert parse_endpoint("redis://h").port == 6379


def test_server_identity_from_info() -> None:
    redis = parse_info("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n")
    assert server_info(redis).name == "redis" and server_info(redis).version == "7.0.15"
    valkey = parse_info("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n")
    assert (server_info(valkey).name, server_info(valkey).version) == ("valkey", "9.1.2")


def test_key_arguments_are_prefixed_and_nothing_else() -> None:
    p = b"x:"
    assert prefix_keys((b"XADD", b"s", b"*", b"s", b"v"), p) == (b"XADD", b"x:s", b"*", b"s", b"v")
    assert prefix_keys((b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"a", b"b", b">", b">"), p) == (
        b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"x:a", b"x:b", b">", b">")
    assert prefix_keys((b"XGROUP", b"CREATE", b"s", b"g", b"$"), p)[2:4] == (b"x:s", b"g")
    assert prefix_keys((b"DEL", b"a", b"b"), p) == (b"DEL", b"x:a", b"x:b")
    assert prefix_keys((b"RENAME", b"a", b"b"), p) == (b"RENAME", b"x:a", b"x:b")
    assert prefix_keys((b"PING",), p) == (b"PING",)


# -- the model -----------------------------------------------------------------------------------
def test_model_runs_are_deterministic_virtual_traces_that_conform() -> None:
    target = parse_target("model:redis-7.0")
    assert isinstance(target, ModelTarget) and target.dialect == "redis-7.0"
    for seed in range(12):
        rng = random.Random(seed)
        config = random_config(rng)
        steps = Generator(rng, PROFILES[list(PROFILES)[seed % len(PROFILES)]]).sequence(60)
        first = target.run_steps(steps, config=config)
        assert first.trace.header.clock == "virtual"
        assert len(first.step_of_event) == len(first.trace.events)
        assert dumps(target.run(steps, config=config)) == dumps(first.trace)
        verdict = check_trace(first.trace)
        assert verdict.status == "conform", verdict.describe()


def test_model_blocking_served_timed_out_and_pipelined_behind() -> None:
    steps = steps_of((1, "XADD s 1-0 f v"), (2, "XREAD BLOCK 0 STREAMS s $"), (2, "| PING"),
                     (3, "XREAD BLOCK 10 STREAMS t $"), (1, "XADD s 2-0 f v"), (0, "pause 11"), (1, "PING"))
    run = parse_target("model:redis-7.0").run_steps(steps)
    kinds = [(type(e).__name__, e.c) for e in run.trace.events]  # type: ignore[union-attr]
    assert kinds == [("Call", 1), ("Send", 2), ("Send", 3), ("Call", 1), ("Recv", 2), ("Send", 2), ("Recv", 2),
                     ("Recv", 3), ("Call", 1)]
    served, timed_out = run.trace.events[4], run.trace.events[7]
    assert isinstance(served, Recv) and isinstance(served.reply, Array)
    assert isinstance(timed_out, Recv) and timed_out.reply == NullArray() and timed_out.now is not None
    assert run.step_of_event == [0, 1, 3, 4, 1, 2, 2, 3, 6]
    assert check_trace(run.trace).status == "conform"


def test_model_client_waits_for_short_blocks_and_reconnects_after_long_ones() -> None:
    steps = steps_of((1, "XREAD BLOCK 5 STREAMS s $"), (1, "PING"), (2, "XREAD BLOCK 0 STREAMS s $"), (2, "PING"))
    trace = parse_target("model:redis-7.0").run(steps)
    assert [type(e).__name__ for e in trace.events] == ["Send", "Recv", "Call", "Send", "Close", "Call"]
    close, last = trace.events[4], trace.events[5]
    assert isinstance(close, Close) and close.c == 2 and isinstance(last, Call) and last.c == 3
    assert check_trace(trace).status == "conform"


def test_model_mutants_are_named_in_the_url() -> None:
    mutants = pytest.importorskip("xspec.models.mutants")
    with pytest.raises(TargetError, match="unknown mutant"):
        parse_target("model:redis-7.0+mutant:no-such-mutant")
    name = sorted(mutants.MUTANTS)[0]
    target = parse_target(f"model:redis-7.0+mutant:{name}")
    assert target.dialect == "redis-7.0"
    target.run(steps_of((1, "XADD s 1-0 f v")))


# -- live servers ----------------------------------------------------------------------------------
@pytest.fixture
def live(redis: RealRedis) -> Iterator[LiveTarget]:
    target = parse_target(f"redis://{redis.host}:{redis.port}", allow_flush=True)
    assert isinstance(target, LiveTarget)
    try:
        yield target
    finally:
        target.close()


@pytest.mark.redis
def test_live_dialect_is_detected_from_info(live: LiveTarget) -> None:
    assert live.dialect == "redis-7.0" and live.server.name == "redis" and live.server.version == "7.0.15"
    assert live.can_flush and live.can_config


@pytest.mark.redis
def test_live_sequences_conform(live: LiveTarget) -> None:
    for seed in range(8):
        rng = random.Random(100 + seed)
        config = random_config(rng)
        steps = Generator(rng, PROFILES[list(PROFILES)[seed % len(PROFILES)]]).sequence(60)
        run = live.run_steps(steps, config=config)
        assert run.trace.header.config["stream-node-max-entries"] == config["stream-node-max-entries"]
        assert len(run.step_of_event) == len(run.trace.events)
        verdict = check_trace(run.trace)
        assert verdict.status == "conform", f"seed {seed}: {verdict.describe()}"


def test_embedded_target_is_the_reference_server_started_and_stopped_for_the_run() -> None:
    target = parse_target("embedded:")
    try:
        assert target.dialect == "redis-7.0"
        pid = target.process.proc.pid  # type: ignore[attr-defined]
        for seed in range(4):
            rng = random.Random(500 + seed)
            steps = Generator(rng, PROFILES[list(PROFILES)[seed % len(PROFILES)]]).sequence(60)
            run = target.run_steps(steps, config=random_config(rng))
            verdict = check_trace(run.trace)
            assert verdict.status == "conform", f"seed {seed}: {verdict.describe()}"
    finally:
        target.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped


@pytest.mark.redis
def test_live_blocking_is_confirmed_before_the_next_step(live: LiveTarget) -> None:
    steps = steps_of((1, "XGROUP CREATE s g $ MKSTREAM"),
                     (2, "XREADGROUP GROUP g a BLOCK 0 STREAMS s >"),
                     (3, "XREADGROUP GROUP g b BLOCK 0 STREAMS s >"),
                     (1, "XADD s 1-0 f v"))
    for _ in range(5):  # FIFO: the client that blocked first is served, every time
        trace = live.run(steps)
        kinds = [(type(e).__name__, e.c) for e in trace.events]  # type: ignore[union-attr]
        assert kinds == [("Call", 1), ("Send", 2), ("Send", 3), ("Call", 1), ("Recv", 2)]
        assert check_trace(trace).status == "conform"


@pytest.mark.redis
def test_a_target_holding_keys_is_refused_without_allow_flush(redis: RealRedis) -> None:
    conn = redis.connection()
    try:
        conn.call([b"SELECT", b"3"])
        conn.call([b"SET", b"precious", b"1"])
        target = parse_target(f"redis://{redis.host}:{redis.port}")
        try:
            with pytest.raises(TargetError, match="--allow-flush"):
                target.run(steps_of((1, "PING")))
        finally:
            target.close()
        assert conn.call([b"GET", b"precious"]) == Bulk(b"1")
    finally:
        conn.close()


@pytest.fixture(scope="module")
def locked_down() -> Iterator[int]:
    """A redis-server whose FLUSHALL and CONFIG are disabled (``rename-command X ""``)."""
    binary = redis_binary()
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="xspec-locked-") as workdir:
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--logfile", os.path.join(workdir, "redis.log"),
             "--rename-command", "FLUSHALL", "", "--rename-command", "CONFIG", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    RespConnection("127.0.0.1", port, timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield port
        finally:
            proc.terminate()
            proc.wait(10)


@pytest.mark.redis
def test_disabled_flushall_and_config_confine_the_run_to_a_prefix(locked_down: int) -> None:
    conn = RespConnection("127.0.0.1", locked_down)
    try:
        conn.call([b"SET", b"theirs", b"1"])
        target = parse_target(f"redis://127.0.0.1:{locked_down}")  # keys present: no refusal, nothing flushed
        assert isinstance(target, LiveTarget) and not target.can_flush and not target.can_config
        try:
            for seed in range(6):
                rng = random.Random(seed)
                steps = Generator(rng, PROFILES["databases"]).sequence(50)
                run = target.run_steps(steps, config={"stream-node-max-entries": "2"})
                assert run.trace.header.config == {}
                cmds = [e.cmd for e in run.trace.events if isinstance(e, (Call, Send)) and e.cmd]
                names = {cmd[0].upper() for cmd in cmds}
                assert not names & {b"FLUSHALL", b"FLUSHDB", b"SWAPDB", b"SELECT", b"KEYS", b"CONFIG", b"DBSIZE"}
                xadds = [cmd for cmd in cmds if cmd[0].upper() == b"XADD"]
                assert xadds and all(cmd[1].startswith(b"xspec:") for cmd in xadds)
                verdict = check_trace(run.trace)
                assert verdict.status == "conform", verdict.describe()
            assert any("FLUSHALL" in s for s in run.skipped) and any("CONFIG" in s for s in run.skipped)
        finally:
            target.close()
        assert conn.call([b"KEYS", b"*"]) == Array((Bulk(b"theirs"),))
        assert conn.call([b"DBSIZE"]) == Int(1)
        assert conn.call([b"PING"]) == Simple("PONG")
    finally:
        conn.close()


def parse_info_keys(target: LiveTarget) -> list[str]:
    """The databases INFO keyspace lists (those holding keys)."""
    return sorted(name for name in target._info("keyspace") if name.startswith("db"))


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A redis-server speaking only TLS (a self-signed certificate for 127.0.0.1), password ``secret``."""
    binary = redis_binary()
    if binary is None or shutil.which("openssl") is None:
        pytest.skip("redis-server or openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1", "--tls-cert-file", str(cert),
         "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no",
         "--requirepass", "secret", "--save", "", "--appendonly", "no", "--dir", str(folder),
         "--logfile", str(folder / "redis.log")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port, cert
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.redis
def test_tls_password_and_database_from_the_url(tls_server: tuple[int, Path]) -> None:
    port, cert = tls_server
    with pytest.raises(TargetError, match="cannot connect|certificate"):
        parse_target(f"rediss://:secret@127.0.0.1:{port}")  # a self-signed certificate not trusted
    with pytest.raises(TargetError, match="AUTH failed"):
        parse_target(f"rediss://:wrong@127.0.0.1:{port}?ssl_cert_reqs=none")
    target = parse_target(f"rediss://default:secret@127.0.0.1:{port}/2?ssl_ca_certs={cert}")
    assert isinstance(target, LiveTarget) and target.dialect == "redis-7.0"
    try:
        for seed in range(4):
            rng = random.Random(seed)
            run = target.run_steps(Generator(rng, PROFILES["databases"]).sequence(50), config=random_config(rng))
            cmds = [e.cmd[0].upper() for e in run.trace.events if isinstance(e, (Call, Send)) and e.cmd]
            assert b"XADD" in cmds and not {b"SELECT", b"SWAPDB"} & set(cmds)
            verdict = check_trace(run.trace)
            assert verdict.status == "conform", verdict.describe()
        assert any("database 2" in s for s in run.skipped)
        target.run(steps_of((1, "XADD s 1-0 f v")))
        assert target.holds_keys() and parse_info_keys(target) == ["db2"]
    finally:
        target.close()
