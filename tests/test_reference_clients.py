"""Real client programs against the reference server (`xspec serve`) and against Redis 7.0.15.

Each test runs one consumer-group program, unchanged, on both servers and asserts
that the two runs observe the same things (replies as the client library parses
them), plus a few facts about what the program must have done, so that two
equally broken servers cannot pass. Entry IDs are explicit wherever the outcome
shows them, so the outcomes do not depend on the clock.

Time: the reference server runs with `--clock virtual`; a program that waits for
a min-idle time moves the server's clock with `XSPEC.CLOCK ADVANCE` (the seed's
60-second recovery loop then takes milliseconds), while against Redis it sleeps
for a short min-idle time.

Clients: redis-py sync and asyncio with RESP2 and RESP3, redis-cli (RESP2 and
`-3`), and ioredis from npm (tests/js: `npm ci` into a temporary folder; skipped
when node/npm are missing or the registry cannot be reached).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis as redispy
import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.conftest import RealRedis
from xspec.traces.harness.servers import ReferenceProcess

JS_FOLDER = Path(__file__).parent / "js"
# Real sleeps against Redis: short, but longer than the few round trips a program makes between a delivery
# and the claim that must find it not yet idle (its "too early" XAUTOCLAIM, the claim right after a cycle, a
# BLOCK the program must see blocked): at 40 ms a loaded machine's pause made Redis claim it.
REDIS_MIN_IDLE_MS = 250
VIRTUAL_MIN_IDLE_MS = 60_000  # the seed's min-idle: free on the virtual clock
POISON_LIMIT = 3  # deliveries after which the recovery worker dead-letters an entry


@dataclass
class Target:
    """One server the programs run on, and how time passes there."""

    name: str
    port: int
    virtual_clock: bool

    @property
    def min_idle(self) -> int:
        return VIRTUAL_MIN_IDLE_MS if self.virtual_clock else REDIS_MIN_IDLE_MS

    def client(self, protocol: int, retries: int = 3) -> redispy.Redis:
        return redispy.Redis(port=self.port, protocol=protocol, decode_responses=True, socket_timeout=10,
                             retry=Retry(NoBackoff(), retries))

    def aclient(self, protocol: int) -> aioredis.Redis:
        return aioredis.Redis(port=self.port, protocol=protocol, decode_responses=True, socket_timeout=10)

    def let_time_pass(self, r: redispy.Redis, ms: int) -> None:
        if self.virtual_clock:
            r.execute_command("XSPEC.CLOCK", "ADVANCE", ms + 1)
        else:
            time.sleep((ms + 15) / 1000)

    async def alet_time_pass(self, r: aioredis.Redis, ms: int) -> None:
        if self.virtual_clock:
            await r.execute_command("XSPEC.CLOCK", "ADVANCE", ms + 1)
        else:
            await asyncio.sleep((ms + 15) / 1000)


@pytest.fixture(scope="module")
def reference_server() -> Iterator[ReferenceProcess]:
    server = ReferenceProcess(clock="virtual").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def targets(redis: RealRedis, reference_server: ReferenceProcess) -> list[Target]:
    """Redis 7.0.15 (emptied by the fixture) and the reference server (emptied here)."""
    with redispy.Redis(port=reference_server.port) as r:
        r.flushall()
    return [Target("redis", redis.port, False), Target("xspec", reference_server.port, True)]


def same_on_both(targets: list[Target], program: Callable[[Target], Any]) -> Any:
    """Run ``program`` on each server; assert equal outcomes; return Redis's."""
    on_redis, on_xspec = (program(t) for t in targets)
    assert on_xspec == on_redis
    return on_redis


def wait_blocked(r: redispy.Redis, count: int) -> None:
    """Until ``count`` clients are blocked on the server (INFO clients)."""
    deadline = time.monotonic() + 5
    while int(r.info("clients")["blocked_clients"]) < count:
        assert time.monotonic() < deadline, "the readers never blocked"
        time.sleep(0.005)


async def await_blocked(r: aioredis.Redis, count: int) -> None:
    deadline = time.monotonic() + 5
    while int((await r.info("clients"))["blocked_clients"]) < count:
        assert time.monotonic() < deadline, "the readers never blocked"
        await asyncio.sleep(0.005)


def entry_ids(reply: Any) -> list[str]:
    """The IDs in an XREAD/XREADGROUP reply as redis-py parses it.

    RESP2: ``[[key, [(id, fields), ...]], ...]``; RESP3: ``{key: [[(id, fields), ...]]}``.
    """
    if isinstance(reply, dict):
        return [entry[0] for [entries] in reply.values() for entry in entries]
    return [entry[0] for _, entries in reply for entry in entries]


# --- the seed documents' consumer loop (redis-py sync) ---

def consumer_loop(target: Target, protocol: int) -> dict[str, Any]:
    """Crash after reading 3 entries, restart: history from 0 until empty, then '>' (woken by a producer)."""
    with target.client(protocol) as r, target.client(protocol) as producer:
        r.xgroup_create("orders", "workers", id="0", mkstream=True)
        for n in range(1, 7):
            r.xadd("orders", {"n": n}, id=f"{n}-0")
        crashed = r.xreadgroup("workers", "alice", {"orders": ">"}, count=3)
        processed: list[str] = []
        last_id, check_backlog = "0-0", True
        feeder: threading.Thread | None = None
        while len(processed) < 8:
            if not check_backlog and len(processed) == 6 and feeder is None:
                def feed() -> None:
                    wait_blocked(producer, 1)
                    producer.xadd("orders", {"n": 7}, id="7-0")
                    producer.xadd("orders", {"n": 8}, id="8-0")
                feeder = threading.Thread(target=feed)
                feeder.start()
            items = r.xreadgroup("workers", "alice", {"orders": last_id if check_backlog else ">"},
                                 count=10, block=2000)
            if not items:
                continue
            ids = entry_ids(items)
            if not ids:
                check_backlog = False
            for entry_id in ids:
                processed.append(entry_id)
                r.xack("orders", "workers", entry_id)
                last_id = entry_id
        assert feeder is not None
        feeder.join()
        return {"crashed": crashed, "processed": processed, "pending": r.xpending("orders", "workers"),
                "groups": r.xinfo_groups("orders")}


@pytest.mark.parametrize("protocol", [2, 3])
def test_seed_consumer_loop(targets: list[Target], protocol: int) -> None:
    outcome = same_on_both(targets, lambda t: consumer_loop(t, protocol))
    assert outcome["processed"] == [f"{n}-0" for n in range(1, 9)]
    assert outcome["pending"]["pending"] == 0


# --- the XAUTOCLAIM recovery worker with a poison-pill limit (redis-py sync) ---

def recovery_worker(target: Target, protocol: int) -> dict[str, Any]:
    """Entry 3 crashes its consumer every time; after POISON_LIMIT deliveries it goes to jobs:dead."""
    with target.client(protocol) as r:
        r.xgroup_create("jobs", "workers", id="0", mkstream=True)
        for n in range(1, 6):
            r.xadd("jobs", {"n": n, "poison": "yes" if n == 3 else "no"}, id=f"{n}-0")
        r.xreadgroup("workers", "crashed", {"jobs": ">"})
        too_early = r.xautoclaim("jobs", "workers", "recovery", target.min_idle, "0-0", count=10)
        cycles: list[list[tuple[str, int]]] = []
        while r.xpending("jobs", "workers")["pending"] and len(cycles) < 6:
            target.let_time_pass(r, target.min_idle)
            claimed: list[tuple[str, int]] = []
            cursor = "0-0"
            while True:
                cursor, messages, _deleted = r.xautoclaim("jobs", "workers", "recovery", target.min_idle,
                                                          cursor, count=2)
                for entry_id, fields in messages:
                    [info] = r.xpending_range("jobs", "workers", entry_id, entry_id, 1)
                    claimed.append((entry_id, info["times_delivered"]))
                    if info["times_delivered"] > POISON_LIMIT:
                        r.xadd("jobs:dead", {"id": entry_id, **fields})
                        r.xack("jobs", "workers", entry_id)
                    elif fields["poison"] == "no":
                        r.xack("jobs", "workers", entry_id)
                if cursor == "0-0":
                    break
            again = r.xautoclaim("jobs", "workers", "recovery", target.min_idle, "0-0", justid=True)
            cycles.append(claimed + [("claimable right after the cycle", len(again))])
        dead = [fields for _, fields in r.xrange("jobs:dead")]
        return {"too_early": too_early, "cycles": cycles, "dead": dead,
                "pending": r.xpending("jobs", "workers")}


@pytest.mark.parametrize("protocol", [2, 3])
def test_recovery_worker_with_poison_pill(targets: list[Target], protocol: int) -> None:
    outcome = same_on_both(targets, lambda t: recovery_worker(t, protocol))
    assert outcome["too_early"][1] == []
    assert outcome["cycles"][0][:5] == [(f"{n}-0", 2) for n in range(1, 6)]
    assert [c[:-1] for c in outcome["cycles"][1:]] == [[("3-0", 3)], [("3-0", 4)]]
    assert outcome["dead"] == [{"id": "3-0", "n": "3", "poison": "yes"}]
    assert outcome["pending"]["pending"] == 0


# --- transactions, trimming and a blocked reader's stream going away (redis-py sync) ---

def blocked_read_outcome(target: Target, protocol: int, disturb: Callable[[redispy.Redis], Any]) -> Any:
    """What a reader blocked in XREADGROUP on ``s`` gets when ``disturb`` runs (reply or error text)."""
    outcome: list[Any] = []

    def read() -> None:
        with target.client(protocol, retries=0) as reader:
            try:
                outcome.append(reader.xreadgroup("g", "c1", {"s": ">"}, block=0))
            except redispy.ResponseError as e:
                outcome.append(f"error: {e}")
            except redispy.ConnectionError:
                outcome.append("connection closed")
    with target.client(protocol) as r:
        r.xgroup_create("s", "g", id="$", mkstream=True)
        thread = threading.Thread(target=read)
        thread.start()
        wait_blocked(r, 1)
        disturbed = disturb(r)
        if thread.is_alive() and not outcome:
            thread.join(0.2)
        still_blocked = int(r.info("clients")["blocked_clients"])
        if thread.is_alive():
            r.xadd("s", {"wake": "up"}, id="99-0")
        thread.join(5)
        consumers = [c["name"] for c in r.xinfo_consumers("s", "g")] if r.exists("s") and r.xinfo_groups("s") else []
        r.delete("s")
        return {"disturbed": disturbed, "still_blocked": still_blocked, "reply": outcome, "consumers": consumers}


def transactions_and_trimming(target: Target, protocol: int) -> dict[str, Any]:
    with target.client(protocol) as r, target.client(protocol) as other:
        with r.pipeline(transaction=True) as tx:
            tx.xgroup_create("t", "g", id="$", mkstream=True)
            tx.xadd("t", {"k": "v"}, id="1-0")
            tx.xreadgroup("g", "c", {"t": ">"})
            tx.xack("t", "g", "1-0", "2-0")
            tx.xadd("t", {"k": "v"}, id="1-0")
            in_multi = tx.execute(raise_on_error=False)
        try:
            with r.pipeline(transaction=True) as tx:
                tx.watch("t")
                other.xadd("t", {"k": "w"}, id="2-0")
                tx.multi()
                tx.xlen("t")
                watched: Any = tx.execute()
        except redispy.WatchError as e:
            watched = f"watch error: {e}"
        lengths = []
        for n in range(1, 301):
            r.xadd("big", {"field": "x" * (n % 7)}, id=f"{n}-1", maxlen=100, approximate=True)
            if n % 50 == 0:
                lengths.append(r.xlen("big"))
        lengths.append(r.xtrim("big", minid="250-0", approximate=True))
        lengths.append(r.xtrim("big", maxlen=10, approximate=True, limit=20))
        return {"in_multi": [str(x) for x in in_multi], "watched": watched, "lengths": lengths,
                "first": r.xrange("big", count=1)}


@pytest.mark.parametrize("protocol", [2, 3])
def test_transactions_and_approximate_trimming(targets: list[Target], protocol: int) -> None:
    outcome = same_on_both(targets, lambda t: transactions_and_trimming(t, protocol))
    assert outcome["watched"].startswith("watch error")
    assert "equal or smaller" in outcome["in_multi"][-1]


@pytest.mark.parametrize("disturbance", ["destroy-group", "delete-key", "flushall", "ack-nothing", "kill-reader"])
@pytest.mark.parametrize("protocol", [2, 3])
def test_blocked_reader_when_its_stream_changes(targets: list[Target], protocol: int, disturbance: str) -> None:
    disturb: dict[str, Callable[[redispy.Redis], Any]] = {
        "destroy-group": lambda r: r.xgroup_destroy("s", "g"),
        "delete-key": lambda r: r.delete("s"),
        "flushall": lambda r: r.flushall(),
        "ack-nothing": lambda r: r.xack("s", "g", "1-0"),
        "kill-reader": lambda r: r.client_kill_filter(_type="normal", skipme=True),
    }
    outcome = same_on_both(targets, lambda t: blocked_read_outcome(t, protocol, disturb[disturbance]))
    assert len(outcome["reply"]) == 1


# --- asyncio: NOACK readers, blocking readers on several streams, a blocking timeout ---

async def noack_and_blocking(target: Target, protocol: int) -> dict[str, Any]:
    streams = ["a", "b", "c"]
    producer, xreader, greader, noacker = (target.aclient(protocol) for _ in range(4))
    try:
        for key in streams:
            await producer.xgroup_create(key, "g", id="$", mkstream=True)
            await producer.xgroup_create(key, "quiet", id="$")
        plain = asyncio.create_task(xreader.xread({k: "$" for k in streams}, block=0))
        grouped = asyncio.create_task(greader.xreadgroup("g", "c1", {k: ">" for k in streams}, block=0))
        silent = asyncio.create_task(noacker.xreadgroup("quiet", "n1", {k: ">" for k in streams},
                                                        block=0, noack=True))
        await await_blocked(producer, 3)
        await producer.xadd("b", {"f": "1"}, id="5-0")
        woken = await asyncio.gather(plain, grouped, silent)
        await producer.xadd("c", {"f": "2"}, id="6-0")
        await producer.xadd("a", {"f": "3"}, id="7-0")
        noack_more = await noacker.xreadgroup("quiet", "n1", {k: ">" for k in streams}, noack=True)
        acked_more = await greader.xreadgroup("g", "c1", {k: ">" for k in streams})
        timing_out = asyncio.create_task(greader.xreadgroup("g", "c1", {"a": ">", "b": ">"}, count=1,
                                                            block=target.min_idle))
        await await_blocked(producer, 1)
        await producer.xack("a", "g", "0-1")  # touches no PEL entry: the reader keeps waiting
        await target.alet_time_pass(producer, target.min_idle)
        timed_out = await asyncio.wait_for(timing_out, 10)
        return {"woken": woken, "noack_more": noack_more, "acked_more": acked_more, "timed_out": timed_out,
                "pending": {k: await producer.xpending(k, "g") for k in streams},
                "quiet_pending": {k: await producer.xpending(k, "quiet") for k in streams},
                "groups": {k: await producer.xinfo_groups(k) for k in streams}}
    finally:
        for c in (producer, xreader, greader, noacker):
            await c.aclose()


@pytest.mark.parametrize("protocol", [2, 3])
def test_asyncio_noack_and_blocking_readers(targets: list[Target], protocol: int) -> None:
    outcome = same_on_both(targets, lambda t: asyncio.run(noack_and_blocking(t, protocol)))
    assert all(entry_ids(reply) == ["5-0"] for reply in outcome["woken"])
    assert sorted(entry_ids(outcome["noack_more"])) == ["6-0", "7-0"]
    assert sorted(entry_ids(outcome["acked_more"])) == ["6-0", "7-0"]
    assert not outcome["timed_out"]
    assert [outcome["pending"][k]["pending"] for k in "abc"] == [1, 1, 1]
    assert all(p["pending"] == 0 for p in outcome["quiet_pending"].values())


async def async_consumer_loop(target: Target, protocol: int) -> list[str]:
    """The seed loop with redis.asyncio; the producer runs as a task of the same loop."""
    async with target.aclient(protocol) as r, target.aclient(protocol) as producer:
        await r.xgroup_create("orders", "workers", id="0", mkstream=True)
        for n in range(1, 4):
            await r.xadd("orders", {"n": n}, id=f"{n}-0")
        await r.xreadgroup("workers", "bob", {"orders": ">"}, count=2)

        async def feed() -> None:
            await await_blocked(producer, 1)
            for n in range(4, 6):
                await producer.xadd("orders", {"n": n}, id=f"{n}-0")
        feeder = asyncio.create_task(feed())
        processed: list[str] = []
        last_id, check_backlog = "0-0", True
        while len(processed) < 5:
            items = await r.xreadgroup("workers", "bob", {"orders": last_id if check_backlog else ">"},
                                       count=10, block=2000)
            ids = entry_ids(items) if items else []
            if items and not ids:
                check_backlog = False
            for entry_id in ids:
                processed.append(entry_id)
                await r.xack("orders", "workers", entry_id)
                last_id = entry_id
        await feeder
        return processed


@pytest.mark.parametrize("protocol", [2, 3])
def test_asyncio_seed_consumer_loop(targets: list[Target], protocol: int) -> None:
    processed = same_on_both(targets, lambda t: asyncio.run(async_consumer_loop(t, protocol)))
    assert processed == [f"{n}-0" for n in range(1, 6)]


# --- redis-cli ---

REDIS_CLI_SCRIPT = """\
XGROUP CREATE s g $ MKSTREAM
XADD s 1-1 name ada lang en
XADD s 2-0 name bob
XADD s 1-0 late x
XREADGROUP GROUP g c1 COUNT 1 STREAMS s >
XREADGROUP GROUP g c2 NOACK STREAMS s >
XPENDING s g
XACK s g 1-1 9-9
XAUTOCLAIM s g c3 0 0-0 JUSTID
XINFO GROUPS s
XREAD COUNT 5 STREAMS s 0
XRANGE s - + COUNT 1
XREVRANGE s + -
XTRIM s MAXLEN = 1
XLEN s
XDEL s 2-0 3-0
XSETID s 5-0
XADD s * only-if
XINFO STREAM s
"""


def redis_cli(port: int, *options: str) -> str:
    done = subprocess.run(["redis-cli", "-p", str(port), *options], input=REDIS_CLI_SCRIPT, text=True,
                          capture_output=True, timeout=20, check=True)
    return done.stdout


@pytest.mark.parametrize("options", [(), ("-3",), ("--no-raw",), ("-3", "--no-raw"), ("--json",)],
                         ids=["resp2-raw", "resp3-raw", "resp2-formatted", "resp3-formatted", "resp3-json"])
def test_redis_cli_script(targets: list[Target], options: tuple[str, ...]) -> None:
    if shutil.which("redis-cli") is None:
        pytest.skip("redis-cli is not installed")
    outputs = [redis_cli(t.port, *options) for t in targets]
    assert outputs[1] == outputs[0]
    assert "ERR The ID specified in XADD is equal or smaller" in outputs[0]
    assert "wrong number of arguments" in outputs[0]


# --- ioredis (node) ---

@pytest.fixture(scope="session")
def ioredis_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/js with its locked dependencies installed by ``npm ci`` into a temporary copy."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the ioredis programs")
    folder = tmp_path_factory.mktemp("ioredis")
    for name in ("package.json", "package-lock.json", "programs.js"):
        shutil.copy(JS_FOLDER / name, folder / name)
    try:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=folder, capture_output=True,
                       timeout=120, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"npm ci could not install ioredis (registry unreachable?): {e}")
    return folder


def test_ioredis_consumer_group_programs(targets: list[Target], ioredis_folder: Path) -> None:
    def run(target: Target) -> dict[str, Any]:
        done = subprocess.run(["node", "programs.js", str(target.port), str(target.min_idle),
                               "virtual" if target.virtual_clock else "wall"],
                              cwd=ioredis_folder, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))
    outcome = same_on_both(targets, run)
    assert [entry[0] for entry in outcome["consumerLoop"]["processed"]] == [f"{n}-0" for n in range(1, 9)]
    recovery = outcome["recoveryWorker"]
    assert recovery["tooEarly"][1] == []
    assert recovery["cycles"] == [[[f"{n}-0", 2] for n in range(1, 6)], [["3-0", 3]], [["3-0", 4]]]
    assert recovery["dead"] == [["id", "3-0", "n", "3", "poison", "yes"]]
