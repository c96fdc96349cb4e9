"""Realistic consumer-group histories with known anomalies (``xspec workload``; spec/audit.md, "Workloads").

A workload is a set of streams, each with one consumer group and a cast of actors that follow a
consumer algorithm, correct or buggy (the explorer's protocols):

============================  ======================================================================
``correct``                   read ``>``, process, XACK; a claimer whose min-idle exceeds processing
``crash-before-ack``          a consumer crashes (closes its connection) holding unacked entries; a
                              correct claimer recovers them
``crash-unclaimed``           the same with no claimer: the entries stay pending (``stuck``)
``ack-before-processing``     XACK first, then process (the loss is invisible to the server)
``short-claimer``             a slow consumer and a claimer whose min-idle is below the processing time
                              (``double-processing``)
``poison``                    a message consumers always fail on, reclaimed for ever (``poison``)
``poison-limit``              the same with a dead-letter limit: XADD to a dead-letter stream, then XACK
``trimmed``                   the producer trims with exact MAXLEN while consumers lag (``lost``,
                              ``deleted-while-pending``)
``replayed``                  an operator rewinds the group (XGROUP SETID 0) after everything was acked
                              (``redelivered-after-ack``; ``double-processing`` where another consumer
                              gets it)
============================  ======================================================================

The run is driven against a target, and the clients' conversation is recorded as a trace: on
the model (``model:<dialect>``, a virtual clock: the same seed gives the same trace) or on a live
server (``redis://…``, ``embedded:`` for ``xspec serve``) through the recorder. While it runs, the
generator keeps its own account of what each actor did with what it received; from that account
it writes the set of (kind, key, group, id) anomalies it caused, which the audit must find
exactly.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xspec.models import ManualClock, Server
from xspec.spec.dialect import get_dialect
from xspec.spec.resp import Array, Bulk, Error, Int, NullArray, Reply
from xspec.spec.trace_format import Header, Note, Trace, dump
from xspec.traces.tutorial.build import START_MS
from xspec.traces.tutorial.build import ModelDriver as ScriptDriver

ALGORITHMS = ("correct", "crash-before-ack", "crash-unclaimed", "ack-before-processing", "short-claimer", "poison",
              "poison-limit", "trimmed", "replayed")


class WorkloadError(ValueError):
    """A target or option the workload cannot use (one line for the user)."""


class Driver(Protocol):
    """Clients talking to one server, recorded as a trace."""

    def call(self, c: int, *args: bytes) -> Reply: ...
    def close(self, c: int) -> None: ...
    def sleep(self, ms: int) -> None: ...
    def now_us(self) -> int: ...
    def trace(self) -> Trace: ...
    def stop(self) -> None: ...


class ModelDriver(ScriptDriver):
    """The model on a virtual clock (the tutorial's driver, for any dialect): ``call`` events carrying ``now``."""

    def __init__(self, dialect: str = "redis-7.0", title: str = "") -> None:
        super().__init__()
        d = get_dialect(dialect)
        self.server = Server(d, ManualClock(START_MS), dict(d.config_defaults))
        self.clock: ManualClock = self.server.clock  # type: ignore[assignment]
        self.header = Header(server_name=d.server, server_version=d.version, clock="virtual",
                             config=dict(d.config_defaults), title=title or None, source="generated",
                             extra={"target": f"model:{d.name}"})

    def call(self, c: int, *args: str | bytes | int) -> Reply:
        reply = super().call(c, *args)
        assert isinstance(reply, Reply)
        return reply

    def now_us(self) -> int:
        return self.clock.ms * 1000

    def trace(self) -> Trace:
        return Trace(self.header, list(self.events))

    def stop(self) -> None:
        pass


class LiveDriver:
    """A live server through the recorder (wall clock); ``embedded:`` starts ``xspec serve`` for the run."""

    def __init__(self, url: str, title: str = "", allow_flush: bool = False) -> None:
        from xspec.traces.harness.targets import TargetError, parse_target
        from xspec.traces.record.recorder import Recorder
        try:
            self.target = parse_target(url, allow_flush=allow_flush)
        except TargetError as e:
            raise WorkloadError(str(e)) from None
        endpoint = getattr(self.target, "endpoint", None)
        if endpoint is None:
            raise WorkloadError(f"{url}: not a live target")
        try:
            if self.target.holds_keys():  # type: ignore[attr-defined]
                self.target.refuse_unless_flushable()  # type: ignore[attr-defined]
            self.target._call(b"FLUSHALL")  # type: ignore[attr-defined]
            self.target.release()  # type: ignore[attr-defined]
            info = self.target.server  # type: ignore[attr-defined]
        except TargetError as e:
            self.target.close()
            raise WorkloadError(str(e)) from None
        self.rec = Recorder(endpoint.host, endpoint.port, server_name=info.name, server_version=info.version,
                            title=title or None)
        self.rec.header.source = "generated"

    def call(self, c: int, *args: bytes) -> Reply:
        return self.rec.call(c, *args)

    def close(self, c: int) -> None:
        self.rec.close(c)

    def sleep(self, ms: int) -> None:
        time.sleep(ms / 1000)

    def now_us(self) -> int:
        e = self.rec.events[-1]
        return int(getattr(e, "t1", None) or getattr(e, "t", None) or 0)

    def trace(self) -> Trace:
        return self.rec.trace()

    def stop(self) -> None:
        self.rec.close_all()
        self.target.close()


def driver_for(target: str, title: str = "", allow_flush: bool = False) -> Driver:
    if target.startswith("model:"):
        try:
            return ModelDriver(target[len("model:"):] or "redis-7.0", title)
        except Exception as e:
            raise WorkloadError(f"{target}: {e}") from None
    if target.startswith(("redis://", "rediss://", "embedded:")):
        return LiveDriver(target, title, allow_flush)
    raise WorkloadError(f"{target!r} is not a target: use model:<dialect>, redis://host:port or embedded:")


# ---------------------------------------------------------------------------------------------
# The generator's own account


@dataclass
class _Fate:
    """What the generator knows happened to one entry in the group."""

    added_with_group: bool = True
    delivered: list[tuple[str, int, int]] = field(default_factory=list)  # (consumer, time µs, step)
    acks: list[tuple[str, int, bool]] = field(default_factory=list)  # (consumer, step, included)
    pending: bool = False
    in_stream: bool = True
    removed_pending: bool = False


@dataclass
class Params:
    """Knobs of one workload trace (times in ms of the target's clock)."""

    streams: int = 4
    messages: int = 30  # per stream
    tick_ms: int = 10
    process_ms: int = 30
    claim_min_idle_ms: int = 200  # a correct claimer's min-idle: longer than processing
    short_min_idle_ms: int = 5  # the buggy claimer's
    poison_limit: int = 3
    trim_maxlen: int = 5
    stuck_after_ms: int = 1_000
    final_idle_ms: int = 2_000  # quiet time before the last event (longer than stuck_after_ms)
    algorithms: tuple[str, ...] = ALGORITHMS


class _Stream:
    """One stream, its group and its actors."""

    def __init__(self, gen: Workload, n: int, algorithm: str) -> None:
        self.gen = gen
        self.algorithm = algorithm
        self.key = f"{algorithm}:{n}".encode()
        self.group = b"g"
        self.fates: dict[str, _Fate] = {}
        self.order: list[str] = []  # IDs in the stream, oldest first
        self.produced = 0
        self.consumers: list[dict[str, Any]] = []
        self.claimer: dict[str, Any] | None = None
        self.rewound = False

    # -- bookkeeping -------------------------------------------------------------------------
    def delivered(self, consumer: str, entries: list[tuple[str, list[bytes] | None]]) -> list[tuple[str, list[bytes]]]:
        got = []
        now = self.gen.driver.now_us()
        for entry_id, fields in entries:
            if fields is None:
                continue
            f = self.fates.setdefault(entry_id, _Fate(added_with_group=False))
            f.delivered.append((consumer, now, self.gen.step))
            f.pending = True
            got.append((entry_id, fields))
        return got

    def acked(self, consumer: str, c: int, ids: list[str]) -> None:
        reply = self.gen.call(c, b"XACK", self.key, self.group, *[i.encode() for i in ids])
        n = reply.value if isinstance(reply, Int) else 0
        pend = [i for i in ids if self.fates[i].pending]
        included = set(ids) if n >= len(ids) else set(pend[:n])
        for i in ids:
            f = self.fates[i]
            f.acks.append((consumer, self.gen.step, i in included))
            if i in included:
                f.pending = False

    def removed(self, ids: list[str]) -> None:
        for i in ids:
            f = self.fates[i]
            f.in_stream = False
            if f.pending:
                f.removed_pending = True
            self.order.remove(i)

    # -- actors ------------------------------------------------------------------------------
    def produce(self) -> None:
        for _ in range(self.gen.rng.choice((0, 1, 1, 2))):
            self._produce_one()

    def _produce_one(self) -> None:
        if self.produced >= self.gen.params.messages:
            return
        self.produced += 1
        poison = self.algorithm in ("poison", "poison-limit") and self.produced == 2
        fields = [b"n", str(self.produced).encode(), b"kind", b"poison" if poison else b"ok"]
        trim = [b"MAXLEN", b"=", str(self.gen.params.trim_maxlen).encode()] if self.algorithm == "trimmed" else []
        reply = self.gen.call(self.gen.producer, b"XADD", self.key, *trim, b"*", *fields)
        assert isinstance(reply, Bulk), reply
        entry_id = reply.value.decode()
        self.fates[entry_id] = _Fate()
        self.order.append(entry_id)
        if trim:
            excess = len(self.order) - self.gen.params.trim_maxlen
            if excess > 0:
                self.removed(self.order[:excess])

    def read(self, consumer: dict[str, Any], count: int = 3) -> list[tuple[str, list[bytes]]]:
        reply = self.gen.call(consumer["c"], b"XREADGROUP", b"GROUP", self.group, consumer["name"].encode(),
                              b"COUNT", str(count).encode(), b"STREAMS", self.key, b">")
        return self.delivered(consumer["name"], _stream_entries(reply))

    def consume(self, consumer: dict[str, Any]) -> None:
        if consumer["crashed"]:
            return
        now = self.gen.now_ms()
        if consumer["holding"] and now >= consumer["busy_until"]:
            ok = [i for i, fields in consumer["holding"] if b"poison" not in fields]
            consumer["holding"] = []
            if ok and consumer["ack"] == "after":
                self.acked(consumer["name"], consumer["c"], ok)
        if consumer["holding"]:
            return
        if self.algorithm == "trimmed" and self.produced < self.gen.params.messages and self.gen.tick % 6:
            return  # lagging behind the producer
        got = self.read(consumer, 2 if self.algorithm == "trimmed" else 3)
        if not got:
            return
        if consumer["ack"] == "before":
            self.acked(consumer["name"], consumer["c"], [i for i, f in got if b"poison" not in f])
        consumer["holding"] = got
        consumer["busy_until"] = now + consumer["process_ms"]
        if consumer.get("crash_after_read"):
            consumer["crash_after_read"] = False
            consumer["crashed"] = True
            self.gen.driver.close(consumer["c"])

    def claim(self) -> None:
        cl = self.claimer
        if cl is None:
            return
        now = self.gen.now_ms()
        if cl["holding"]:
            if now < cl["busy_until"]:
                return
            ok = [i for i, fields in cl["holding"] if b"poison" not in fields]
            cl["holding"] = []
            if ok:
                self.acked(cl["name"], cl["c"], ok)
        reply = self.gen.call(cl["c"], b"XAUTOCLAIM", self.key, self.group, cl["name"].encode(),
                              str(cl["min_idle"]).encode(), b"0-0", b"COUNT", b"10")
        entries, deleted = _autoclaim(reply)
        for i in deleted:
            f = self.fates.get(i)
            if f is not None:
                f.pending = False
        got = self.delivered(cl["name"], entries)
        if not got:
            return
        limit = self.gen.params.poison_limit
        for entry_id, fields in list(got):
            if b"poison" in fields and self.algorithm == "poison-limit" and \
                    len(self.fates[entry_id].delivered) >= limit:
                self.gen.call(cl["c"], b"XADD", b"dead:" + self.key, b"*", *fields)
                self.acked(cl["name"], cl["c"], [entry_id])
                got.remove((entry_id, fields))
        cl["holding"] = got
        cl["busy_until"] = now + cl["process_ms"]

    def rewind(self) -> None:
        if self.algorithm == "replayed" and not self.rewound and self.produced >= self.gen.params.messages and \
                all(not f.pending for f in self.fates.values()) and self.fates:
            self.rewound = True
            self.gen.call(self.gen.producer, b"XGROUP", b"SETID", self.key, self.group, b"0")
            for consumer in self.consumers:  # the next reads see everything again, on other consumers
                consumer["name"] = consumer["name"] + "-replay"


def _stream_entries(reply: Reply) -> list[tuple[str, list[bytes] | None]]:
    if isinstance(reply, NullArray) or not isinstance(reply, Array) or not reply.items:
        return []
    per_key = reply.items[0]
    assert isinstance(per_key, Array)
    return _entries(per_key.items[1])


def _entries(arr: Reply) -> list[tuple[str, list[bytes] | None]]:
    out: list[tuple[str, list[bytes] | None]] = []
    assert isinstance(arr, Array), arr
    for e in arr.items:
        assert isinstance(e, Array)
        ident, payload = e.items
        assert isinstance(ident, Bulk)
        fields = [f.value for f in payload.items if isinstance(f, Bulk)] if isinstance(payload, Array) else None
        out.append((ident.value.decode(), fields))
    return out


def _autoclaim(reply: Reply) -> tuple[list[tuple[str, list[bytes] | None]], list[str]]:
    assert isinstance(reply, Array), reply
    entries = _entries(reply.items[1])
    deleted = [i.value.decode() for i in reply.items[2].items if isinstance(i, Bulk)] \
        if len(reply.items) > 2 and isinstance(reply.items[2], Array) else []
    return entries, deleted


class Workload:
    """One generated trace: streams with their algorithms, run tick by tick on a driver."""

    def __init__(self, driver: Driver, params: Params, seed: int = 0) -> None:
        self.driver = driver
        self.params = params
        self.rng = random.Random(seed)
        self.step = 0
        self.tick = 0
        self.producer = 1
        self.next_client = 2
        algos = list(params.algorithms)
        self.streams = [_Stream(self, n, algos[n % len(algos)]) for n in range(params.streams)]
        self.rng.shuffle(self.streams)

    def call(self, c: int, *args: bytes) -> Reply:
        self.step += 1
        reply = self.driver.call(c, *args)
        if isinstance(reply, Error):
            raise WorkloadError(f"the target refused {b' '.join(args[:3]).decode(errors='replace')}: {reply.text}")
        return reply

    def now_ms(self) -> int:
        return self.driver.now_us() // 1000

    def client(self) -> int:
        self.next_client += 1
        return self.next_client - 1

    def _cast(self, s: _Stream) -> None:
        p = self.params
        self.call(self.producer, b"XGROUP", b"CREATE", s.key, s.group, b"$", b"MKSTREAM")

        def consumer(name: str, **kw: Any) -> dict[str, Any]:
            d = {"c": self.client(), "name": name, "holding": [], "busy_until": 0, "crashed": False, "ack": "after",
                 "process_ms": p.process_ms, **kw}
            s.consumers.append(d)
            return d

        def claimer(min_idle: int) -> None:
            s.claimer = {"c": self.client(), "name": "claimer", "holding": [], "busy_until": 0, "min_idle": min_idle,
                         "process_ms": p.process_ms}

        a = s.algorithm
        if a in ("correct", "trimmed", "replayed"):
            consumer("c1")
            consumer("c2")
            if a == "correct":
                claimer(p.claim_min_idle_ms)
        elif a in ("crash-before-ack", "crash-unclaimed"):
            consumer("c1", crash_after_read=True)
            consumer("c2")
            if a == "crash-before-ack":
                claimer(p.claim_min_idle_ms)
        elif a == "ack-before-processing":
            consumer("c1", ack="before")
        elif a == "short-claimer":
            consumer("slow", process_ms=p.process_ms * 4)
            claimer(p.short_min_idle_ms)
        elif a in ("poison", "poison-limit"):
            consumer("c1")
            claimer(p.short_min_idle_ms)

    def run(self) -> None:
        p = self.params
        for s in self.streams:
            self._cast(s)
        busy_ticks = 0
        while busy_ticks < 1000:
            self.tick += 1
            for s in self.streams:
                s.produce()
            for s in self.streams:
                for consumer in s.consumers:
                    s.consume(consumer)
                s.claim()
                s.rewind()
            self.driver.sleep(p.tick_ms)
            done = all(s.produced >= p.messages for s in self.streams) and all(
                not c["holding"] for s in self.streams for c in s.consumers if not c["crashed"])
            if done and (self.tick > p.messages + 40 or all(
                    not any(f.pending for f in s.fates.values()) or s.algorithm in (
                        "poison", "crash-unclaimed") for s in self.streams)):
                break
            busy_ticks += 1
        # every consumer finishes what it holds, then the system goes quiet and a last PING ends the trace
        for s in self.streams:
            for consumer in s.consumers:
                if consumer["holding"] and not consumer["crashed"]:
                    consumer["busy_until"] = 0
                    s.consume(consumer)
        self.driver.sleep(p.final_idle_ms)
        self.call(self.producer, b"PING")

    # -- expectations -----------------------------------------------------------------------
    def expected(self) -> list[dict[str, Any]]:
        """The anomalies this run caused, from the generator's own account."""
        end = self.driver.now_us()
        p = self.params
        out = []
        for s in self.streams:
            for entry_id, f in s.fates.items():
                def add(kind: str, s: _Stream = s, entry_id: str = entry_id) -> None:
                    out.append({"kind": kind, "key": s.key.decode(), "group": s.group.decode(), "id": entry_id})
                if f.added_with_group and not f.delivered and not f.in_stream:
                    add("lost")
                if f.pending and f.delivered and end - f.delivered[-1][1] >= p.stuck_after_ms * 1000:
                    add("stuck")
                if len(f.delivered) >= 5 and not any(ok for _, _, ok in f.acks):
                    add("poison")
                processed = {name for name, _, step in f.delivered
                             if any(a == name and astep > step for a, astep, _ in f.acks)}
                if len(processed) >= 2:
                    add("double-processing")
                if f.removed_pending:
                    add("deleted-while-pending")
                acked_at = [step for _, step, ok in f.acks if ok]
                if acked_at and any(step > min(acked_at) for _, _, step in f.delivered):
                    add("redelivered-after-ack")
        return sorted(out, key=lambda a: (a["kind"], a["key"], a["group"], a["id"]))


# ---------------------------------------------------------------------------------------------
# Failover drills (trace/2): what a promotion loses, and the IDs the new primary gives again


class FailoverDrill:
    """Producers and readers on a primary and its replica, a partition and a promotion (``cluster:<server>``).

    Each stream has no group. Its first entries reach the replica; then the link is held and the
    producer adds more on the primary, some of which a reader reads (``XREAD``) there. The replica
    is promoted and the old primary resynchronises from it, so what was added during the partition
    is in no node's stream any more: an entry that was read is a ``phantom``, one nobody read is
    ``lost`` (group-less, spec/audit.md "trace/2"). The producer then adds, on the new primary,
    entries under some of those IDs with other payloads (``id-reuse``, and no longer absent).
    Every stream is read whole on both nodes at the end.
    """

    def __init__(self, server: str, params: Params, seed: int = 0, title: str = "") -> None:
        from xspec.traces.cluster.harness import Cluster
        from xspec.traces.cluster.nodes import KNOWN_SERVERS, find_server
        if server not in KNOWN_SERVERS:
            raise WorkloadError(f"cluster:{server}: unknown server; known: {', '.join(KNOWN_SERVERS)}")
        try:
            kind = find_server(server)
        except FileNotFoundError as e:
            raise WorkloadError(f"cluster:{server}: {e}") from None
        self.params = params
        self.rng = random.Random(seed)
        self.cluster = Cluster(kind, ("a", "b"), title=title or None, tags=["workload", "failover"])
        self.caused: list[dict[str, Any]] = []

    def run(self) -> None:
        h = self.cluster
        rng = self.rng
        keys = [f"drill:{n}".encode() for n in range(self.params.streams)]
        h.replicaof("b", "a")
        producer, reader = h.client("a"), h.client("a")
        last_read = dict.fromkeys(keys, b"0-0")
        for key in keys:
            for i in range(1, rng.randint(1, 3) + 1):
                producer.call("XADD", key, f"{i}-1", "n", str(i), "phase", "replicated")
        h.settle("b")
        h.hold("a", "b")
        unreplicated: dict[bytes, list[str]] = {}
        for key in keys:
            top = 3
            ids = []
            for i in range(top + 1, top + 1 + rng.randint(1, max(1, self.params.messages // 10))):
                producer.call("XADD", key, f"{i}-1", "n", str(i), "phase", "partitioned")
                ids.append(f"{i}-1")
            unreplicated[key] = ids
        read: set[tuple[bytes, str]] = set()
        for key in keys:
            k = rng.randint(0, len(unreplicated[key]))  # the reader gets this far before the partition ends
            if k == 0:
                continue
            reply = reader.call("XREAD", "COUNT", str(k + 3), "STREAMS", key, last_read[key])
            for entry_id, fields in _stream_entries(reply):
                if fields is not None:
                    read.add((key, entry_id))
        h.promote("b")
        h.flow("a", "b")
        h.replicaof("a", "b")
        producer2 = h.client("b")
        for key in keys:
            reissued = [i for i in unreplicated[key] if rng.random() < 0.4]
            for entry_id in reissued:
                producer2.call("XADD", key, entry_id, "n", entry_id, "phase", "after the promotion")
                self.caused.append({"kind": "id-reuse", "key": key.decode(), "group": None, "id": entry_id})
            for entry_id in unreplicated[key]:
                if entry_id in reissued:
                    continue
                kind = "phantom" if (key, entry_id) in read else "lost"
                self.caused.append({"kind": kind, "key": key.decode(), "group": None, "id": entry_id})
        h.settle("a")
        final_b, final_a = h.client("b"), h.client("a")
        for key in keys:
            final_b.call("XRANGE", key, "-", "+")
            final_a.call("XRANGE", key, "-", "+")

    def expected(self) -> list[dict[str, Any]]:
        return sorted(self.caused, key=lambda a: (a["kind"], a["key"], a["id"]))


def _drill(target: str, params: Params, seed: int, title: str) -> tuple[Trace, list[dict[str, Any]]]:
    drill = FailoverDrill(target[len("cluster:"):], params, seed, title)
    from xspec.traces.cluster.harness import HarnessError
    try:
        with drill.cluster:
            drill.run()
            trace = drill.cluster.trace()
    except (HarnessError, OSError) as e:
        raise WorkloadError(f"{target}: {e}") from None
    return trace, drill.expected()


def generate(target: str, out: Path, *, traces: int = 1, params: Params | None = None, seed: int = 0,
             allow_flush: bool = False, gzip: bool = False) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """Run ``traces`` workloads on ``target``; write each trace and its ``.expected.json`` into ``out``."""
    params = params or Params()
    out.mkdir(parents=True, exist_ok=True)
    for n in range(traces):
        title = f"workload {n} (seed {seed + n})"
        if target.startswith("cluster:"):
            trace, expected = _drill(target, params, seed + n, title)
            yield _write(out, n, trace, expected, params, gzip)
            continue
        driver = driver_for(target, title, allow_flush)
        try:
            w = Workload(driver, params, seed + n)
            w.run()
            trace = driver.trace()
            expected = w.expected()
        finally:
            driver.stop()
        trace.header.tags = ["workload"]
        trace.events.insert(0, Note(text=f"xspec workload: {', '.join(s.algorithm for s in w.streams)}"))
        yield _write(out, n, trace, expected, params, gzip)


def _write(out: Path, n: int, trace: Trace, expected: list[dict[str, Any]], params: Params,
           gzip: bool) -> tuple[Path, list[dict[str, Any]]]:
    path = out / f"workload-{n:04d}.jsonl{'.gz' if gzip else ''}"
    dump(trace, path)
    expected_path = out / f"workload-{n:04d}.expected.json"
    expected_path.write_text(json.dumps({"trace": str(path), "stuck_after_ms": params.stuck_after_ms,
                                         "poison_deliveries": 5, "anomalies": expected}, indent=1) + "\n")
    return path, expected
