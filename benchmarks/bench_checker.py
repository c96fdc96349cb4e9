"""Throughput of the conformance checker on long traces of ``call`` events.

Generates a wall-clock trace by running the model itself under a
:class:`ManualClock` (so the trace conforms by construction): XADD with
explicit IDs, XRANGE, XLEN, XREADGROUP, XACK, XPENDING and, now and then,
XINFO CONSUMERS (whose idle times the checker must explain with its symbolic
clock). Commands are 20 µs apart, so many readings share each window. Prints the
checker's speed end to end, the part of it spent running the model (another
component's speed), and the checker's own work per event, all in CPU time of
this process (``time.process_time``), so that other work on a shared machine
does not count.

    python benchmarks/bench_checker.py [--events 100000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from xspec.models import ManualClock, Outcome, Server
from xspec.spec.resp import Array, Bulk, Reply
from xspec.spec.trace_format import Call, Header, Trace
from xspec.traces.check.checker import check_trace

START_US = 1_700_000_000_000_000
STEP_US = 20


def workload(n: int, seed: int) -> list[list[bytes]]:
    """``n`` commands on a few streams and groups, explicit IDs only."""
    rng = random.Random(seed)
    keys = [b"s%d" % i for i in range(4)]
    next_ms = dict.fromkeys(keys, 1)
    cmds: list[list[bytes]] = [[b"XGROUP", b"CREATE", k, b"g", b"$", b"MKSTREAM"] for k in keys]
    while len(cmds) < n:
        k = rng.choice(keys)
        r = rng.random()
        if r < 0.45:
            cmds.append([b"XADD", k, b"%d-1" % next_ms[k], b"field", b"value %d" % len(cmds)])
            next_ms[k] += rng.randint(1, 3)
        elif r < 0.60:
            cmds.append([b"XRANGE", k, b"-", b"+", b"COUNT", b"5"])
        elif r < 0.65:
            cmds.append([b"XLEN", k])
        elif r < 0.80:
            cmds.append([b"XREADGROUP", b"GROUP", b"g", b"c%d" % rng.randint(1, 3), b"COUNT", b"3",
                         b"STREAMS", k, b">"])
        elif r < 0.93:
            cmds.append([b"XACK", k, b"g", b"0-1"])  # record() acknowledges what was delivered
        elif r < 0.99:
            cmds.append([b"XPENDING", k, b"g"])
        else:
            cmds.append([b"XINFO", b"CONSUMERS", k, b"g"])
    return cmds[:n]


def _delivered_ids(reply: Reply) -> list[bytes]:
    """Entry IDs in an XREADGROUP reply (to acknowledge them later)."""
    if not isinstance(reply, Array) or not reply.items:
        return []
    stream = reply.items[0]
    assert isinstance(stream, Array)
    entries = stream.items[1]
    assert isinstance(entries, Array)
    return [e.items[0].value for e in entries.items if isinstance(e, Array) and isinstance(e.items[0], Bulk)]


def record(cmds: list[list[bytes]]) -> Trace:
    """Run the commands on the model under a manual clock: the trace they make."""
    clock = ManualClock(START_US // 1000)
    server = Server(clock=clock)
    events: list[Call] = []
    t = START_US
    pending_acks: dict[bytes, list[bytes]] = {}
    for argv in cmds:
        if argv[0] == b"XACK" and pending_acks.get(argv[1]):
            ids = pending_acks[argv[1]][:2]
            del pending_acks[argv[1]][:2]
            argv[3:] = ids
        clock.set(t // 1000)
        reply = server.execute(1, argv).reply
        assert reply is not None
        if argv[0] == b"XREADGROUP":
            pending_acks.setdefault(argv[7], []).extend(_delivered_ids(reply))
        events.append(Call(c=1, cmd=argv, reply=reply, t0=t, t1=t + STEP_US // 2))
        t += STEP_US
    return Trace(Header(title="checker benchmark", source="generated"), list(events))


def record_replicated(cmds: list[list[bytes]]) -> Trace:
    """The same commands on the primary of a model deployment, a replica applying each at once
    (``repl`` events for its stream and acknowledgements) and, every tenth, a read on the replica:
    a trace/2 that conforms by construction."""
    from xspec.models.replication import Deployment
    from xspec.spec.trace_format import NodeSpec, ReplAck, ReplCmd, ReplSync
    clock = ManualClock(START_US // 1000)
    config = {"save": "", "appendonly": "no", "repl-ping-replica-period": "3600"}
    d = Deployment({"a": {"addrs": ["127.0.0.1:7001"], "config": config},
                    "b": {"addrs": ["127.0.0.1:7002"], "config": config}}, clock)
    events: list[Any] = []
    t = START_US

    def call(node: str, c: int, argv: list[bytes]) -> None:
        nonlocal t
        clock.set(t // 1000)
        reply = d.execute(node, c, argv).reply
        assert reply is not None
        events.append(Call(c=c, cmd=argv, reply=reply, t0=t, t1=t + STEP_US // 2, node=node))
        t += STEP_US

    def settle() -> None:
        nonlocal t
        while True:
            steps = [s for s in d.steps() if s[0] not in ("ack", "getack")]
            if not steps:
                return
            kind, name = steps[0]
            link = d.links.get(name)
            if kind == "apply" and link is not None:
                events.append(ReplCmd("a", "b", list(link.pending[0][1]), t=t))
            d.step(kind, name)
            if kind == "fork" and (link := d.links.get("b")) is not None and link.sync is not None:
                events.append(ReplSync("a", "b", "full", "f" * 40, link.sync[2], t=t))
            if kind == "apply" and link is not None and not link.pending:
                events.append(ReplAck("a", "b", d.nodes["b"].offset, t=t))
                d.step("ack", "b")
            t += 1

    call("b", 2, [b"REPLICAOF", b"127.0.0.1", b"7001"])
    settle()
    pending_acks: dict[bytes, list[bytes]] = {}
    for n, argv in enumerate(cmds):
        if argv[0] == b"XACK" and pending_acks.get(argv[1]):
            ids = pending_acks[argv[1]][:2]
            del pending_acks[argv[1]][:2]
            argv[3:] = ids
        clock.set(t // 1000)
        before = len(events)
        call("a", 1, argv)
        if argv[0] == b"XREADGROUP":
            pending_acks.setdefault(argv[7], []).extend(_delivered_ids(events[before].reply))
        settle()
        if n % 10 == 9:
            call("b", 2, [b"XLEN", argv[1]] if len(argv) > 1 else [b"XLEN", b"s"])
    nodes = {name: NodeSpec(addrs=[f"127.0.0.1:{port}"], config=dict(config)) for name, port in (("a", 7001),
                                                                                                 ("b", 7002))}
    return Trace(Header(title="checker benchmark, replicated", source="generated", nodes=nodes), events)


def _timer_cost(calls: int = 200_000) -> float:
    """CPU seconds one inner measurement (two ``thread_time`` readings) adds to what it measures."""
    clock = time.thread_time
    began = clock()
    for _ in range(calls):
        clock()
        clock()
    return (clock() - began) / calls


def check_timed(trace: Trace) -> tuple[str, float, float]:
    """Check the trace; returns the verdict, the CPU seconds taken, and those spent inside the model.

    The trace is checked twice: once as it is, for the total (CPU time), and
    once with ``Server.execute`` wrapped in a timer, for the model's share. The
    inner timer is ``thread_time``, CPU time like the total (a wall-clock timer
    would charge the model for the time other processes take on a busy
    machine, and its share could exceed the total); each reading is a system
    call that costs about a fifth of a small command, so its calibrated cost
    per call is taken off.
    """
    began = time.process_time()
    verdict = check_trace(trace)
    total = time.process_time() - began
    if verdict.status != "conform":
        raise SystemExit(f"the generated trace does not conform: {verdict.describe()}")
    inside = 0.0
    calls = 0
    execute = Server.execute
    clock = time.thread_time

    def timed(self: Server, client_id: int, argv: list[bytes]) -> Outcome:
        nonlocal inside, calls
        began = clock()
        try:
            return execute(self, client_id, argv)
        finally:
            inside += clock() - began
            calls += 1

    Server.execute = timed  # type: ignore[method-assign]
    try:
        check_trace(trace)
    finally:
        Server.execute = execute  # type: ignore[method-assign]
    return verdict.status, total, max(0.0, inside - calls * _timer_cost())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    trace = record(workload(args.events, args.seed))
    n = len(trace.events)
    status, total, inside = check_timed(trace)
    own = total - inside
    print(f"checker, end to end:        {n / total:,.0f} events/s ({total:.2f} s for {n} events), {status}")
    print(f"  of which the model:       {inside:.2f} s ({n / inside:,.0f} events/s)")
    print(f"  the checker's own work:   {own:.2f} s, {own / n * 1e6:.1f} µs/event ({n / own:,.0f} events/s)")
    replicated = record_replicated(workload(max(1, args.events // 10), args.seed))
    m = len(replicated.events)
    began = time.process_time()
    verdict = check_trace(replicated)
    spent = time.process_time() - began
    print(f"trace/2 (primary + replica, repl events): {m / spent:,.0f} events/s ({spent:.2f} s for {m} events), "
          f"{verdict.status}")

if __name__ == "__main__":
    main()
