"""A failover counterexample run on real servers (``xspec explore ... --reproduce``; spec/exploration.md,
EXPLORE-REPRO-1 .. EXPLORE-REPRO-4).

The counterexample's steps are driven, one for one, on a deployment of real servers recorded by
:class:`~xspec.traces.cluster.harness.Cluster` (node ``a`` the primary, ``b`` and ``c`` its replicas, every
replication connection through the harness's proxies): client commands on the node that serves, a replica
applying the next command of its link by letting exactly one stream write pass on a *stepped* link
(:meth:`~xspec.traces.cluster.harness.Cluster.release`), a cut of the connection, a ``kill -9`` of the
primary, a promotion by ``REPLICAOF NO ONE`` or by the ``FAILOVER`` command, and ``WAIT 1`` answered by the
replica's acknowledgement (acknowledgements pass only when the step says so). What clients saw is
recorded as one trace/2 and judged by :class:`RealObserver`, a second reading of the seven properties over
the real replies (not the compact system's ghosts): the reproduction says which properties the real
servers violated.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xspec.explore.failover import ACK, ADD, CLAIM, DEAD, DLQ_BIT, MARK, PROPERTIES, FailoverSystem, T
from xspec.spec.resp import Array, Bulk, Int, Reply
from xspec.spec.trace_format import Call, Crash, Note, Recv, Send, Trace
from xspec.traces.cluster.harness import Client, Cluster, HarnessError
from xspec.traces.cluster.nodes import KNOWN_SERVERS, ServerKind, find_server

NODE_NAMES = ("a", "b", "c")
ANOMALY = {"acked-add-durable": "acked-add-lost", "acked-never-redelivered": "acked-pending-again",
           "single-owner": "two-owners", "last-delivered-monotone": "last-delivered-regressed",
           "delivery-count-monotone": "delivery-count-regressed", "no-id-reuse": "id-reissued",
           "consumer-persists": "consumer-vanished"}
"""Each property's anomaly, as spec/anomalies.md names it (the recordings' tags)."""
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")  # Debian's libfaketime
FROZEN_AT = "2023-11-14 22:13:20"  # T, in UTC: the standing clock of EXPLORE-FAIL-1
WAIT_MS = 3000  # a WAIT the step says is met: the replica's acknowledgement comes within a second
TIMEOUT_MS = 100  # a WAIT the step says times out


class ReproduceError(RuntimeError):
    """The real deployment could not be driven through the counterexample."""


def server_kind(target: str) -> ServerKind:
    """A dialect label (``redis-7.0.15``, ``redis-6.2.14``, ``valkey-9.1.2`` ...) or a server binary's path.

    Raises ReproduceError with one line saying what is wrong."""
    if target in KNOWN_SERVERS:
        try:
            return find_server(target)
        except FileNotFoundError as e:
            raise ReproduceError(str(e)) from None
    if not os.path.isfile(target) or not os.access(target, os.X_OK):
        raise ReproduceError(f"--reproduce {target}: neither a known server ({', '.join(KNOWN_SERVERS)}) nor an "
                             f"executable file")
    try:
        out = subprocess.run([target, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise ReproduceError(f"--reproduce {target}: cannot run it ({e})") from None
    found = re.search(r"(Redis|Valkey) server v=(\d+\.\d+\.\d+)", out)
    if found is None:
        raise ReproduceError(f"--reproduce {target}: not a Redis or Valkey server (its --version says {out.strip()!r})")
    return ServerKind(found.group(1).lower(), found.group(2), target)


# ---------------------------------------------------------------------------------------------------
# The properties, read from real replies


def _id(reply: Reply) -> tuple[int, int]:
    assert isinstance(reply, Bulk), reply
    ms, seq = reply.value.split(b"-")
    return int(ms), int(seq)


def _entries(reply: Reply) -> list[tuple[tuple[int, int], int]]:
    """``[(id, payload)]`` of an entry list ``[[id, [p, k]], ...]`` (deleted entries' nils left out)."""
    out = []
    if isinstance(reply, Array):
        for item in reply.items:
            if isinstance(item, Array) and len(item.items) == 2 and isinstance(item.items[1], Array):
                fields = item.items[1].items
                if len(fields) == 2 and isinstance(fields[1], Bulk):
                    out.append((_id(item.items[0]), int(fields[1].value)))
    return out


def _read_entries(reply: Reply) -> list[tuple[tuple[int, int], int]]:
    """The entries of an XREADGROUP reply on one stream (nil: none)."""
    if not isinstance(reply, Array) or not reply.items:
        return []
    stream = reply.items[0]
    assert isinstance(stream, Array)
    return _entries(stream.items[1])


@dataclass
class RealObserver:
    """The seven properties (EXPLORE-FAIL-4) judged from what clients of the real servers saw.

    Payloads identify entries across ID reuse; the entry under an ID is the one the serving node's
    latest ``XRANGE`` (the probe after each step) shows."""

    wait_regime: bool
    violated: dict[str, int] = field(default_factory=dict)  # property -> step number where first seen
    given: dict[tuple[int, int], int] = field(default_factory=dict)
    acked_adds: set[int] = field(default_factory=set)
    acked_entries: set[int] = field(default_factory=set)
    first_reader: dict[int, str] = field(default_factory=dict)
    last_delivered: tuple[int, int] = (0, 0)
    counts: dict[int, int] = field(default_factory=dict)
    consumers_seen: set[bytes] = field(default_factory=set)
    view: dict[tuple[int, int], int] = field(default_factory=dict)  # the serving node's entries
    awaiting: dict[str, tuple[str, int]] = field(default_factory=dict)  # client -> (what, payload)
    replicated: bool = True  # the serving node has replicas (a write is acknowledged by its WAIT)
    step: int = 0

    def _flag(self, prop: str) -> None:
        self.violated.setdefault(prop, self.step)

    def _delivered(self, payload: int) -> None:
        if payload in self.acked_entries:
            self._flag("acked-never-redelivered")

    def reply(self, who: str, argv: tuple[bytes, ...], reply: Reply) -> None:
        head = argv[0].upper()
        if head == b"XADD" and argv[1] == b"dlq":
            return  # the worker's dead letter: the properties are read on stream s (EXPLORE-REPRO-3)
        if head == b"XADD" and isinstance(reply, Bulk):
            entry, payload = _id(reply), int(argv[-1])
            if self.given.get(entry, payload) != payload:
                self._flag("no-id-reuse")
            self.given[entry] = payload
            self.view[entry] = payload
            self._acknowledged(who, "add", payload)
        elif head == b"XREADGROUP":
            for entry, payload in _read_entries(reply):
                self._delivered(payload)
                if argv[-1] == b">":
                    reader = self.first_reader.setdefault(payload, who)
                    if reader != who:
                        self._flag("single-owner")
                    if entry <= self.last_delivered:
                        self._flag("last-delivered-monotone")
                    self.last_delivered = max(self.last_delivered, entry)
        elif head == b"XAUTOCLAIM" and isinstance(reply, Array):
            for _, payload in _entries(reply.items[1]):
                self._delivered(payload)
        elif head == b"XACK" and isinstance(reply, Int) and reply.value == 1:
            acked = self.view.get(_id(Bulk(argv[3])))
            if acked is not None:
                self._acknowledged(who, "ack", acked)
        elif head == b"WAIT" and isinstance(reply, Int):
            what = self.awaiting.pop(who, None)
            if what is not None and reply.value >= 1:
                (self.acked_adds if what[0] == "add" else self.acked_entries).add(what[1])
        elif head == b"XPENDING" and isinstance(reply, Array):
            for item in reply.items:
                assert isinstance(item, Array)
                entry, count = _id(item.items[0]), item.items[3]
                pending = self.view.get(entry)
                assert isinstance(count, Int)
                if pending is None:
                    continue
                if count.value < self.counts.get(pending, 0):
                    self._flag("delivery-count-monotone")
                self.counts[pending] = max(self.counts.get(pending, 0), count.value)
        elif head == b"XINFO" and isinstance(reply, Array):
            names = set()
            for item in reply.items:
                assert isinstance(item, Array)
                name = item.items[1]
                assert isinstance(name, Bulk)
                names.add(name.value)
            if self.consumers_seen - names:
                self._flag("consumer-persists")
            self.consumers_seen |= names

    def _acknowledged(self, who: str, what: str, payload: int) -> None:
        if self.wait_regime and self.replicated:
            self.awaiting[who] = (what, payload)
        else:
            (self.acked_adds if what == "add" else self.acked_entries).add(payload)

    def probe(self, reply: Reply) -> None:
        """``XRANGE s - +`` on the serving node after a step: acked-add-durable, and the entries' IDs."""
        entries = _entries(reply)
        self.view = dict(entries)
        if self.acked_adds - {payload for _, payload in entries}:
            self._flag("acked-add-durable")

    def lost_connection(self, who: str) -> None:
        self.awaiting.pop(who, None)


_STEP_NOTE = re.compile(r"step (\d+): ([\w-]+): ")
_HARNESS_COMMANDS = (b"REPLICAOF", b"FAILOVER", b"XGROUP")


def judge_recording(trace: Trace) -> dict[str, int]:
    """The properties a recorded (or model-run) counterexample violates, read from the file alone
    (EXPLORE-REPRO-3): the ``step N: who: ...`` notes say which process each connection serves, every
    ``XRANGE s - +`` is the probe after a step, a ``crash`` or a promotion drops the WAITs in flight; the
    rest goes to :class:`RealObserver` as the reproduction fed it. Property -> first step."""
    regime_wait = "wait" in (trace.header.tags or [])
    observer = RealObserver(regime_wait)
    who_of: dict[int, str] = {}
    sent: dict[int, list[bytes]] = {}
    step_who = ""
    for e in trace.events:
        if isinstance(e, Note):
            found = _STEP_NOTE.match(e.text)
            if found:
                observer.step, step_who = int(found.group(1)), found.group(2)
        elif isinstance(e, Crash):
            for proc in list(observer.awaiting):
                observer.lost_connection(proc)
        elif isinstance(e, (Call, Send)):
            argv = tuple(e.cmd or ())
            if argv[:1] == (b"XRANGE",):
                if isinstance(e, Call):
                    observer.probe(e.reply)
                continue
            if argv[:1] in ((b"REPLICAOF",), (b"FAILOVER",)) and observer.step:  # a promotion
                for proc in list(observer.awaiting):
                    observer.lost_connection(proc)
                observer.replicated = False
            if not argv or argv[0] in _HARNESS_COMMANDS or not observer.step:
                continue
            who = who_of.setdefault(e.c, step_who)
            if isinstance(e, Call):
                observer.reply(who, argv, e.reply)
            else:
                sent[e.c] = list(argv)
        elif isinstance(e, Recv) and e.c in sent:
            observer.reply(who_of[e.c], tuple(sent.pop(e.c)), e.reply)
    return dict(observer.violated)


# ---------------------------------------------------------------------------------------------------
# Driving the deployment


@dataclass
class Reproduction:
    """What a counterexample did on real servers."""

    prop: str
    server: ServerKind
    trace: Trace
    violated: dict[str, int]  # properties the real servers violated -> first step (1-based) where seen
    log: list[str]
    differences: list[str] = field(default_factory=list)  # where the real acknowledgements differ from the path's

    @property
    def reproduced(self) -> bool:
        return self.prop in self.violated


class _Driver:
    def __init__(self, system: FailoverSystem, h: Cluster) -> None:
        self.system = system
        self.h = h
        self.names = NODE_NAMES[:1 + system.config.replicas]
        self.clients: dict[int, Client] = {}
        self.held: dict[int, bytes] = {}  # process -> the real ID of the entry it was last given
        self.probe_client: Client | None = None
        self.base_offset: dict[str, int] = {}
        self.observer = RealObserver(system.config.regime == "wait")
        self.log: list[str] = []
        # `<ms>-*` (the milliseconds named, the sequence generated) came with Redis 7.0.
        self.explicit_ms = not _without_explicit_ms(h.kind)

    def setup(self) -> None:
        h = self.h
        for replica in self.names[1:]:
            h.replicaof(replica, "a")
        if h.kind.name == "valkey":  # its first PING follows the sync by a second: let it pass before the setup's
            h.settle(*self.names[1:])  # write, so that no recording races it (EXPLORE-REPRO-1)
            deadline = time.monotonic() + 3
            while int(h.info("a").get("master_repl_offset", "0")) == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
        h.client("a").call("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
        h.settle(*self.names[1:])
        for replica in self.names[1:]:
            h.step_link("a", replica)
            self.base_offset[replica] = int(h.info(replica)["slave_repl_offset"])
        h.note("the counterexample starts: every link steps (one stream write at a time)")

    def client(self, proc: int, node: str) -> Client:
        c = self.clients.get(proc)
        if c is None or c.node != node or c.closed:
            c = self.clients[proc] = self.h.client(node)
        return c

    def call(self, proc: int, node: str, *argv: bytes | str) -> Reply:
        who = self.system.process_names[proc]
        reply = self.client(proc, node).call(*argv)
        args = tuple(a.encode() if isinstance(a, str) else a for a in argv)
        got = _read_entries(reply) if args[0] == b"XREADGROUP" else \
            _entries(reply.items[1]) if args[0] == b"XAUTOCLAIM" and isinstance(reply, Array) else []
        if got:
            self.held[proc] = b"%d-%d" % got[0][0]
        self.observer.reply(who, args, reply)
        self.log.append(f"{who} on {node}: {' '.join(a.decode() for a in args)} -> {reply!r}")
        return reply

    def probe(self, node: str) -> None:
        if self.probe_client is None or self.probe_client.node != node or self.probe_client.closed:
            self.probe_client = self.h.client(node)
        self.observer.probe(self.probe_client.call("XRANGE", "s", "-", "+"))

    def caught_up(self, replica: str, passed: int, timeout: float = 5.0) -> None:
        """Wait until ``replica`` has processed every byte passed to it (its offset says so)."""
        want = self.base_offset[replica] + passed
        deadline = time.monotonic() + timeout
        while int(self.h.info(replica).get("slave_repl_offset", "-1")) < want:
            if time.monotonic() > deadline:
                raise ReproduceError(f"replica {replica} did not apply what passed within {timeout} s")
            time.sleep(0.005)

    def run(self, before: Any, sid: int, after: Any) -> None:
        step = self.system.steps[sid]
        serving = self.names[before[1]]
        names = self.system.process_names
        self.observer.step += 1
        self.h.note(f"step {self.observer.step}: {step.describe(names)}")
        if step.kind == "command":
            argv = step.argv
            if argv[:2] == (b"XADD", b"s") and self.explicit_ms:  # the standing clock (EXPLORE-REPRO-2)
                argv = (b"XADD", b"s", b"%d-*" % T) + argv[3:]
            if argv[0] == b"WAIT":
                argv = (b"WAIT", b"1", b"%d" % TIMEOUT_MS)
            if argv[0] == b"XACK" and step.proc in self.held:  # the ID the client was given
                argv = argv[:3] + (self.held[step.proc],)
            if argv[0] == b"XPENDING" and argv[3] != b"-" and step.proc in self.held:  # the worker's inspection
                argv = argv[:3] + (self.held[step.proc],) * 2 + argv[5:]
            if argv[:2] == (b"XADD", b"dlq") and step.proc in self.held:  # its dead letter, under that ID
                argv = (b"XADD", b"dlq", self.held[step.proc], b"id", self.held[step.proc])
            self.call(step.proc, serving, *argv)
        elif step.kind == "apply":
            r = int(step.argv[0])
            replica = self.names[r]
            op = before[3][r][0][0]
            if op[0] in (ADD, CLAIM, ACK, DEAD):
                self.caught_up(replica, self.h.release(serving, replica, 1))
            elif op[0] == MARK:  # WAIT 1 of the write's client, met by this replica's acknowledgement
                proc = 0 if op[1] < 0 else op[1]
                self.h.open_acks(serving, replica)
                try:
                    self.call(proc, serving, "WAIT", "1", str(WAIT_MS))
                finally:
                    self.h.open_acks(serving, replica, False)
        elif step.kind == "cut":
            self.h.cut(serving, self.names[int(step.argv[0])])
        elif step.kind == "repair":
            pass  # the replica reconnects by itself after the cut; its stream writes still wait their turn
        elif step.kind == "crash":
            self.h.crash(serving)
            for proc in list(self.observer.awaiting):
                self.observer.lost_connection(proc)
        elif step.kind == "failover":
            target = self.names[int(step.argv[0])]
            if self.system.config.regime == "coordinated":
                self._failover_command(serving, target)
            else:
                self.h.promote(target)
            for proc in list(self.observer.awaiting):
                self.observer.lost_connection(proc)
            self.observer.replicated = False  # the rest of the deployment left
        else:
            raise ReproduceError(f"no way to run {step.describe(names)} on real servers")
        if after[2]:
            self.probe(self.names[after[1]])

    def _failover_command(self, primary: str, target: str) -> None:
        """``FAILOVER TO <target>`` on the primary; wait until the roles have swapped."""
        h = self.h
        h.open_acks(primary, target)
        host, port = h.addr(target)
        h.client(primary).call("FAILOVER", "TO", host, str(port))
        deadline = time.monotonic() + 10
        while h.info(target).get("role") != "master" or h.info(primary).get("role") != "slave":
            if time.monotonic() > deadline:
                raise ReproduceError(f"FAILOVER TO {target} did not complete within 10 s")
            time.sleep(0.02)


def reproduce(system: FailoverSystem, steps: list[tuple[int, Any]], prop: str, server: ServerKind,
              *, title: str | None = None) -> Reproduction:
    """Run a counterexample (``steps`` from the initial state, as :func:`check_failover` reports them) on a
    fresh deployment of ``server`` and say which properties the real servers violated."""
    if prop not in PROPERTIES:
        raise ValueError(prop)
    names = NODE_NAMES[:1 + system.config.replicas]
    config = {"repl-ping-replica-period": "3600"}  # no PINGs to interleave with the stepped writes
    regime = system.config.regime
    tags = ["replication", "failover-command" if regime == "coordinated" else "failover", ANOMALY[prop]] + \
        (["wait"] if regime == "wait" else [])
    frozen = _needs_frozen_clock(system, steps, prop, server)
    title = title or f"{system.config.name}: {prop} (xspec explore counterexample)"
    with tempfile.TemporaryDirectory(prefix="xspec-faketime-") as folder:
        if frozen:
            server = frozen_clock(server, Path(folder))
            title += "; every node's clock frozen at 1700000000000 ms by libfaketime"
        h = Cluster(server, names, config=config, tags=tags, title=title)
        r = _drive(system, steps, prop, server, h)
    if frozen:
        r.trace.header.expect = _frozen_clock_verdict(r.trace)
    return r


def _frozen_clock_verdict(trace: Trace) -> dict[str, Any]:
    """What the checker says of a recording under a frozen clock (EXPLORE-REPRO-5): the first ``XADD s *``
    replies an ID of the frozen millisecond, which no reading of the trace's wall clock gives."""
    for i, e in enumerate(trace.events):
        if isinstance(e, Call) and e.cmd[:3] == [b"XADD", b"s", b"*"] and e.node is not None:
            return {"verdict": "diverge", "event": i + 1, "node": e.node}
    raise ReproduceError("a frozen-clock recording without XADD s *")


def _needs_frozen_clock(system: FailoverSystem, steps: list[tuple[int, Any]], prop: str,
                        server: ServerKind) -> bool:
    """Whether the counterexample runs with every node's clock frozen at T (EXPLORE-REPRO-5): a clock-skew
    counterexample (``no-id-reuse``) on a server without ``<ms>-*`` (Redis 6.2), when libfaketime is installed
    and no WAIT must time out (a frozen clock never ends one)."""
    if prop != "no-id-reuse" or not _without_explicit_ms(server) or not LIBFAKETIME.exists():
        return False
    return not any(system.steps[sid].argv[:1] == (b"WAIT",) for sid, _ in steps)


def _without_explicit_ms(kind: ServerKind) -> bool:
    """``<ms>-*`` (the milliseconds named, the sequence generated) came with Redis 7.0."""
    return kind.name == "redis" and int(kind.version.split(".")[0]) < 7


def frozen_clock(server: ServerKind, folder: Path) -> ServerKind:
    """``server`` started by a script in ``folder`` that preloads libfaketime with the wall clock standing at
    T (the monotonic clock, which the event loop's timers read, left alone)."""
    script = folder / Path(server.binary).name
    script.write_text("#!/bin/sh\n"
                      f"LD_PRELOAD={shlex.quote(str(LIBFAKETIME))} FAKETIME={shlex.quote(FROZEN_AT)} "
                      f"FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC exec {shlex.quote(server.binary)} \"$@\"\n")
    script.chmod(0o755)
    return ServerKind(server.name, server.version, str(script))


def _drive(system: FailoverSystem, steps: list[tuple[int, Any]], prop: str, server: ServerKind,
           h: Cluster) -> Reproduction:
    try:
        with h:
            driver = _Driver(system, h)
            driver.setup()
            state = system.initial()
            for sid, after in steps:
                driver.run(state, sid, after)
                state = after
            trace = h.trace()
            differences = _acknowledgements(state, driver.observer)
    except (HarnessError, OSError) as e:
        raise ReproduceError(f"{system.config.name} {prop}: the real deployment failed: {e}") from None
    return Reproduction(prop, server, trace, dict(driver.observer.violated), driver.log, differences)


def _acknowledgements(state: Any, observer: RealObserver) -> list[str]:
    """Where the writes acknowledged on the real servers are not those the path's last state says were."""
    ghost = state[6]
    out = []
    adds = ghost[1] & ((1 << DLQ_BIT) - 1)  # the dead-letter stream's are not read on the real servers
    for what, bits, real in (("XADD", adds, observer.acked_adds), ("XACK", ghost[2], observer.acked_entries)):
        model = {p for p in range(bits.bit_length()) if bits >> p & 1}
        if model != real:
            out.append(f"acknowledged {what}s: the path {sorted(model)}, the real servers {sorted(real)}")
    return out
