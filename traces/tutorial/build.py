"""The traces of spec/tutorial.md: five consumer-group counterexamples (and one lag anomaly).

Each lesson is a short script of client commands, run two ways:

* on the model with a virtual clock (``python -m xspec.traces.tutorial.build``): every reply
  in ``traces/tutorial/<name>.jsonl`` is the model's own, never typed by hand;
* on a real redis-server (``--record``, a private server on a free loopback port, real
  sleeps for the idle times): ``traces/tutorial/recorded/<name>.jsonl``.

Both traces must conform to the model (``xspec replay traces/tutorial``); the build checks it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from xspec.models import ManualClock, Server
from xspec.spec.trace_format import Call, Close, Event, Header, Note, Trace, dump
from xspec.traces.check.checker import check_trace
from xspec.traces.record.recorder import Arg, Recorder, to_argv
from xspec.traces.scenarios.runner import RedisProcess, reset_server

HERE = Path(__file__).resolve().parent
START_MS = 1_700_000_000_000


class Driver(Protocol):
    """What a lesson script needs: numbered clients, crashes, passing time, narration."""

    def call(self, c: int, *args: Arg) -> object: ...

    def close(self, c: int) -> None: ...

    def sleep(self, ms: int) -> None: ...

    def note(self, text: str) -> None: ...


class ModelDriver:
    """Runs a lesson on the model with a virtual clock and writes down the model's replies."""

    def __init__(self) -> None:
        self.clock = ManualClock(START_MS)
        self.server = Server(clock=self.clock)
        self.events: list[Event] = []

    def call(self, c: int, *args: Arg) -> object:
        argv = to_argv(args)
        out = self.server.execute(c, argv)
        assert out.reply is not None and not out.blocked, "tutorial lessons do not block"
        self.events.append(Call(c=c, cmd=argv, reply=out.reply, now=self.clock.ms))
        return out.reply

    def close(self, c: int) -> None:
        self.server.close(c)
        self.events.append(Close(c=c, by="client"))

    def sleep(self, ms: int) -> None:
        self.clock.advance(ms)

    def note(self, text: str) -> None:
        self.events.append(Note(text=text))


class ServerDriver:
    """Runs a lesson on a real server through the recorder; time passes for real."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def call(self, c: int, *args: Arg) -> object:
        return self.recorder.call(c, *args)

    def close(self, c: int) -> None:
        self.recorder.close(c)

    def sleep(self, ms: int) -> None:
        time.sleep(ms / 1000)

    def note(self, text: str) -> None:
        self.recorder.note(text)


@dataclass(frozen=True)
class Lesson:
    name: str
    title: str
    script: Callable[[Driver], None]


LESSONS: list[Lesson] = []


def lesson(name: str, title: str) -> Callable[[Callable[[Driver], None]], Callable[[Driver], None]]:
    def register(fn: Callable[[Driver], None]) -> Callable[[Driver], None]:
        LESSONS.append(Lesson(name, title, fn))
        return fn

    return register


# Clients: 1 is the producer (and the admin), 2 and 3 are consumer processes, 4 a restarted one.
PRODUCER, ALICE, BOB, ALICE_AGAIN = 1, 2, 3, 4


def _setup(d: Driver, *ids: str) -> None:
    d.call(PRODUCER, "XGROUP", "CREATE", "orders", "workers", "$", "MKSTREAM")
    for n, entry_id in enumerate(ids, 1):
        d.call(PRODUCER, "XADD", "orders", entry_id, "order", str(n))


@lesson("1-crash-recovered", "At-least-once: a crash after XREADGROUP leaves the message pending; "
                             "the restarted consumer gets it back by reading its history with ID 0")
def crash_recovered(d: Driver) -> None:
    _setup(d, "1-0", "2-0")
    d.note("alice reads one new message and starts processing it")
    d.call(ALICE, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "orders", ">")
    d.note("alice crashes before XACK: her connection drops")
    d.close(ALICE)
    d.sleep(500)
    d.note("alice restarts and, as the seed consumer does, first reads her own history with ID 0")
    d.call(ALICE_AGAIN, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "10", "STREAMS", "orders", "0")
    d.call(ALICE_AGAIN, "XACK", "orders", "workers", "1-0")
    d.note("history empty: alice switches to new messages with >")
    d.call(ALICE_AGAIN, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "10", "STREAMS", "orders", "0")
    d.call(ALICE_AGAIN, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "orders", ">")
    d.call(ALICE_AGAIN, "XACK", "orders", "workers", "2-0")


@lesson("2-ack-before-processing", "Lost message: XACK before processing, then a crash")
def ack_before_processing(d: Driver) -> None:
    _setup(d, "1-0")
    d.call(ALICE, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "orders", ">")
    d.note("alice acknowledges first, planning to process afterwards")
    d.call(ALICE, "XACK", "orders", "workers", "1-0")
    d.note("alice crashes before processing 1-0")
    d.close(ALICE)
    d.sleep(500)
    d.note("restarted, alice finds no history and nothing new; a recovery worker finds nothing pending")
    d.call(ALICE_AGAIN, "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "orders", "0")
    d.call(ALICE_AGAIN, "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "orders", ">")
    d.call(BOB, "XAUTOCLAIM", "orders", "workers", "bob", "100", "0-0")
    d.call(PRODUCER, "XPENDING", "orders", "workers")


@lesson("3-noack", "Lost message: a NOACK reader crashes; nothing was ever pending")
def noack(d: Driver) -> None:
    _setup(d, "1-0")
    d.call(ALICE, "XREADGROUP", "GROUP", "workers", "alice", "NOACK", "COUNT", "1", "STREAMS", "orders", ">")
    d.note("alice crashes while processing 1-0")
    d.close(ALICE)
    d.sleep(500)
    d.call(ALICE_AGAIN, "XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "orders", "0")
    d.call(BOB, "XAUTOCLAIM", "orders", "workers", "bob", "100", "0-0")
    d.call(PRODUCER, "XPENDING", "orders", "workers")


@lesson("4-claim-too-early", "Duplicate: a recovery worker whose min-idle (100 ms) is shorter than "
                             "the processing time (300 ms) steals a message from a live consumer")
def claim_too_early(d: Driver) -> None:
    _setup(d, "1-0")
    d.note("alice reads 1-0; processing it takes 300 ms")
    d.call(ALICE, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "orders", ">")
    d.sleep(150)
    d.note("bob's recovery loop claims whatever has been idle for 100 ms")
    d.call(BOB, "XAUTOCLAIM", "orders", "workers", "bob", "100", "0-0", "COUNT", "10")
    d.note("bob processes 1-0 too: the order is handled twice")
    d.sleep(150)
    d.note("alice finishes and acknowledges; XACK does not check who owns the entry")
    d.call(ALICE, "XACK", "orders", "workers", "1-0")
    d.sleep(150)
    d.call(BOB, "XACK", "orders", "workers", "1-0")


@lesson("5-poison-pill", "A poison pill is claimed forever without a delivery limit; the "
                         "dead-letter fix moves it aside after 3 deliveries")
def poison_pill(d: Driver) -> None:
    _setup(d, "1-0")
    d.call(ALICE, "XREADGROUP", "GROUP", "workers", "alice", "COUNT", "1", "STREAMS", "orders", ">")
    d.note("processing 1-0 crashes alice")
    d.close(ALICE)
    for _ in range(2):
        d.sleep(200)
        d.note("the recovery worker claims it and crashes on it as well")
        d.call(BOB, "XAUTOCLAIM", "orders", "workers", "bob", "100", "0-0", "COUNT", "10")
        d.close(BOB)
    d.sleep(200)
    d.note("the fixed worker first looks at delivery counts: 1-0 was delivered 3 times, the limit")
    d.call(BOB, "XPENDING", "orders", "workers", "IDLE", "100", "-", "+", "10")
    d.call(BOB, "XRANGE", "orders", "1-0", "1-0")
    d.call(BOB, "XADD", "orders:dead", "*", "order", "1", "source-id", "1-0", "deliveries", "3")
    d.call(BOB, "XACK", "orders", "workers", "1-0")
    d.call(BOB, "XAUTOCLAIM", "orders", "workers", "bob", "100", "0-0", "COUNT", "10")


@lesson("6-lag-after-xdel", "entries-read and lag after XDEL: 7.0 misses a tombstone the group "
                            "skipped over (LAG-4), so the lag stays one too high")
def lag_after_xdel(d: Driver) -> None:
    d.call(PRODUCER, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
    for n in range(1, 6):
        d.call(PRODUCER, "XADD", "s", f"{n}-0", "n", str(n))
    d.call(ALICE, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    d.call(PRODUCER, "XINFO", "GROUPS", "s")
    d.call(PRODUCER, "XDEL", "s", "2-0")
    d.call(PRODUCER, "XINFO", "GROUPS", "s")
    d.call(ALICE, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    d.call(PRODUCER, "XINFO", "GROUPS", "s")
    d.call(ALICE, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    d.call(PRODUCER, "XINFO", "GROUPS", "s")
    d.note("every entry was read, yet the lag is 1")


def model_trace(les: Lesson) -> Trace:
    """Run the lesson on the model with a virtual clock; the replies are the model's."""
    driver = ModelDriver()
    les.script(driver)
    header = Header(clock="virtual", title=les.title, source="generated", tags=["tutorial"],
                    extra={"generator": "traces/tutorial/build.py (replies by the model)"})
    return Trace(header, driver.events, f"{les.name}.jsonl")


def recorded_trace(les: Lesson, host: str, port: int, version: str) -> Trace:
    """Run the lesson on the (emptied) real server at host:port and record it."""
    reset_server(host, port, {})
    rec = Recorder(host, port, server_version=version, title=les.title, tags=["tutorial"])
    try:
        les.script(ServerDriver(rec))
    finally:
        rec.close_all()
    return rec.trace()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=HERE, help="folder to write (default: this one)")
    ap.add_argument("--record", action="store_true", help="also record every lesson from a real redis-server")
    ap.add_argument("--redis-server", help="redis-server binary (default: the one on PATH)")
    args = ap.parse_args(argv)
    traces: list[tuple[Path, Trace]] = [(args.out / f"{les.name}.jsonl", model_trace(les)) for les in LESSONS]
    if args.record:
        with RedisProcess(args.redis_server) as server:
            version = server.version()
            for les in LESSONS:
                traces.append((args.out / "recorded" / f"{les.name}.jsonl", recorded_trace(les, server.host, server.port, version)))
    failed = 0
    for path, trace in traces:
        verdict = check_trace(trace)
        print(f"{path}: {verdict.describe()}")
        if verdict.status != "conform":
            failed += 1
            continue
        dump(trace, path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
