"""Model speed: throughput on a mixed workload, and per-command cost at small vs large sizes.

    python benchmarks/bench_model.py [--large 1000000] [--skip-redis]

1. Mixed workload (XADD with MAXLEN ~, XREADGROUP COUNT 10, XACK, XCLAIM JUSTID,
   XRANGE COUNT 5, XPENDING summary, XLEN on one core): commands per second of
   the model, every reply read (``Outcome.reply``), best of ``--rounds`` runs
   on fresh servers. The model's figures are CPU time of this process
   (``time.process_time``), so that other work on a shared machine does not
   count against it. The peer is a real redis-server 7.0.15 given the same
   commands pipelined over loopback, in chunks each ended by an ECHO of a
   marker; the client only reads raw bytes until the marker's reply arrives,
   so the figure is the server's (and the kernel's), not a Python parser's.
   Target: >= 200k commands/s for the model. Two Python peers run the same
   commands in this process, measured the same way: the reference server's
   core (``xspec.reference``, the independent implementation written for
   speed, without its network layer) and fakeredis (its command layer,
   without RESP encoding). fakeredis slows as the stream grows, so it and the
   model's figure beside it run the first ``--peer-commands`` commands only.
2. Scaling: the cost of XADD, XPENDING (extended, COUNT 10), XRANGE (COUNT 10),
   XCLAIM, XAUTOCLAIM (COUNT 10) and XACK on a stream of 10^3 entries, all
   pending, versus one of 10^6 entries, all pending, and the ratio. Target:
   <= 2x growth. Every command does the same work at both sizes: the clock
   moves past the min-idle time before each one so claims always claim, and
   its repetitions target entries spread evenly over the stream that no other
   command touched (at 10^6 their owner, consumer c1, still holds a million),
   so a claim or an ack never lands on an entry an earlier measurement moved
   into a small, cache-warm consumer PEL. Each of ``--rounds`` rounds builds
   the states afresh; the best round counts. The built state is moved out of
   the cyclic garbage collector's reach (``gc.freeze``), so that no full
   collection of a million objects, which CPython charges to whichever command
   happens to trigger it, lands inside one measurement.

No assertion is made; the figures are printed.
"""

from __future__ import annotations

import argparse
import gc
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xspec.models import ManualClock, Server  # noqa: E402
from xspec.spec.resp import encode_command  # noqa: E402
from xspec.traces.harness.servers import find_redis_server  # noqa: E402

Command = list[bytes]


def mixed_workload(n: int) -> list[Command]:
    """A consumer-group workload: produce, consume in batches of 10, ack, inspect."""
    cmds: list[Command] = [[b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"]]
    seq = 0
    while len(cmds) < n:
        batch = []
        for _ in range(10):
            seq += 1
            batch.append(b"%d-0" % seq)
            cmds.append([b"XADD", b"s", b"MAXLEN", b"~", b"10000", b"%d-0" % seq, b"f", b"v%d" % seq])
        cmds.append([b"XREADGROUP", b"GROUP", b"g", b"c%d" % (seq % 3), b"COUNT", b"10", b"STREAMS", b"s", b">"])
        cmds.append([b"XACK", b"s", b"g", *batch[:8]])
        cmds.append([b"XCLAIM", b"s", b"g", b"c9", b"0", batch[8], b"JUSTID"])
        cmds.append([b"XRANGE", b"s", batch[0], batch[-1], b"COUNT", b"5"])
        cmds.append([b"XPENDING", b"s", b"g"])
        cmds.append([b"XLEN", b"s"])
    return cmds[:n]


def run_model(cmds: list[Command]) -> float:
    """Commands per second (of CPU time) of one model server running ``cmds`` from a fresh state."""
    server = Server(clock=ManualClock(1_700_000_000_000))
    execute = server.execute
    t = time.process_time()
    for argv in cmds:
        execute(1, argv).reply  # noqa: B018 -- a reply is part of the work
    return len(cmds) / (time.process_time() - t)


MARKER = b"xspec-bench-marker"


def run_redis(cmds: list[Command], chunk: int = 10_000) -> float | None:
    """Commands per second of a real redis-server given ``cmds`` pipelined, ``chunk`` at a time."""
    binary = find_redis_server("7.0")
    if binary is None:
        return None
    from tests.conftest import start_redis  # the same launcher the tests use

    marker_reply = b"$%d\r\n%s\r\n" % (len(MARKER), MARKER)
    payloads = [b"".join(encode_command(a) for a in cmds[i:i + chunk]) + encode_command([b"ECHO", MARKER])
                for i in range(0, len(cmds), chunk)]
    with tempfile.TemporaryDirectory() as d:
        proc, port = start_redis(binary, d)
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t = time.perf_counter()
            for payload in payloads:
                sock.sendall(payload)
                tail = b""
                while not tail.endswith(marker_reply):
                    data = sock.recv(1 << 20)
                    if not data:
                        raise ConnectionError("redis-server closed the connection")
                    tail = (tail + data)[-len(marker_reply):]
            elapsed = time.perf_counter() - t
            sock.close()
            return len(cmds) / elapsed
        finally:
            proc.terminate()
            proc.wait()


def run_reference_core(cmds: list[Command]) -> float:
    """Commands per second (of CPU time) of the reference server's core, in process, from a fresh state."""
    from xspec.reference.handlers import new_core

    core = new_core(clock=ManualClock(1_700_000_000_000))
    client = core.connect(None)
    execute = core.execute
    t = time.process_time()
    for argv in cmds:
        execute(client, argv)
    return len(cmds) / (time.process_time() - t)


def run_fakeredis(cmds: list[Command]) -> float | None:
    """Commands per second (of CPU time) of fakeredis's command layer, or None when it cannot run.

    Commands go to its socket's ``_process_command`` (a private method: fakeredis
    has no public in-process entry point) and replies are collected before RESP
    encoding, as the model's are.
    """
    try:
        import fakeredis

        server = fakeredis.FakeServer(version=(7, 0))
        connection = fakeredis.FakeStrictRedis(server=server).connection_pool.get_connection()
        connection.connect()
        sock = connection._sock
        process = sock._process_command
    except (ImportError, AttributeError, TypeError) as e:
        print(f"  (fakeredis not measured: {e})")
        return None
    replies: list[object] = []
    sock.put_response = replies.append
    t = time.process_time()
    for argv in cmds:
        process(argv)
    elapsed = time.process_time() - t
    failed = [r for r in replies if isinstance(r, Exception)]
    if failed:
        print(f"  (fakeredis answered {len(failed)} commands with errors, first: {failed[0]})")
    return len(cmds) / elapsed


def build(size: int) -> tuple[Server, ManualClock]:
    """A stream of ``size`` entries ``1-0`` .. ``size-0``, every one pending for consumer c1."""
    clock = ManualClock(1_700_000_000_000)
    server = Server(clock=clock)
    ex = server.execute
    ex(1, [b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"])
    for i in range(1, size + 1):
        ex(1, [b"XADD", b"s", b"%d-0" % i, b"f", b"v"])
    for _ in range(0, size, 10000):
        ex(1, [b"XREADGROUP", b"GROUP", b"g", b"c1", b"COUNT", b"10000", b"STREAMS", b"s", b">"])
    return server, clock


def per_op(server: Server, clock: ManualClock, size: int, make: Callable[[int], Command], reps: int,
           shift: int = 0) -> float:
    """Microseconds of CPU time per command: ``reps`` commands on entries spread evenly over the stream."""
    ex = server.execute
    step = max(1, size // reps)
    argvs = [make(1 + (k * step + shift) % size) for k in range(reps)]
    t = time.process_time()
    for argv in argvs:
        clock.advance(2_000)  # past every min-idle time used below
        ex(1, argv).reply  # noqa: B018
    return (time.process_time() - t) / reps * 1e6


# name -> the command for entry i; each command gets its own offset within the
# spacing of its targets (XAUTOCLAIM's COUNT 10 takes the 10 entries from i).
OPS: dict[str, Callable[[int], Command]] = {
    "XADD": lambda i: [b"XADD", b"s", b"*", b"f", b"v"],
    "XPENDING": lambda i: [b"XPENDING", b"s", b"g", b"%d-0" % i, b"+", b"10"],
    "XRANGE": lambda i: [b"XRANGE", b"s", b"%d-0" % i, b"+", b"COUNT", b"10"],
    "XCLAIM": lambda i: [b"XCLAIM", b"s", b"g", b"c2", b"1000", b"%d-0" % i],
    "XAUTOCLAIM": lambda i: [b"XAUTOCLAIM", b"s", b"g", b"c3", b"1000", b"%d-0" % i, b"COUNT", b"10"],
    "XACK": lambda i: [b"XACK", b"s", b"g", b"%d-0" % i],
}


def scaling_costs(size: int, reps: int) -> dict[str, float]:
    """Microseconds per command of every command in OPS, on one freshly built state."""
    server, clock = build(size)
    gc.collect()
    gc.freeze()
    spacing = max(1, size // reps)
    costs = {name: per_op(server, clock, size, make, reps, shift=k * spacing // len(OPS))
             for k, (name, make) in enumerate(OPS.items())}
    del server
    gc.unfreeze()
    gc.collect()
    return costs


def best_scaling_costs(size: int, reps: int, rounds: int) -> dict[str, float]:
    runs = [scaling_costs(size, reps) for _ in range(rounds)]
    return {name: min(r[name] for r in runs) for name in OPS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commands", type=int, default=200_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=1_000, help="commands per scaling measurement (<= --small)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-redis", action="store_true")
    ap.add_argument("--peer-commands", type=int, default=20_000,
                    help="how many of the mixed workload's commands fakeredis runs")
    a = ap.parse_args()

    cmds = mixed_workload(a.commands)
    model = max(run_model(cmds) for _ in range(a.rounds))
    print(f"mixed workload, {len(cmds)} commands: model {model:,.0f} commands/s (target 200,000)")
    core = max(run_reference_core(cmds) for _ in range(a.rounds))
    print(f"  reference server's core, in process: {core:,.0f} commands/s; model/core = {model / core:.2f}")
    prefix = cmds[:a.peer_commands]
    fake = run_fakeredis(prefix)
    if fake is not None:
        model_prefix = max(run_model(prefix) for _ in range(a.rounds))
        print(f"  first {len(prefix)} commands: model {model_prefix:,.0f} commands/s, fakeredis in process "
              f"{fake:,.0f}; model/fakeredis = {model_prefix / fake:.1f}")
    if not a.skip_redis:
        real = run_redis(cmds)
        if real is not None:
            print(f"  redis-server 7.0.15, pipelined over loopback: {real:,.0f} commands/s; "
                  f"model/redis = {model / real:.2f}")

    print("\nper-command cost (microseconds), stream of N entries all pending; ratio large/small (target <= 2)")
    t = time.perf_counter()
    small = best_scaling_costs(a.small, min(a.reps, a.small), a.rounds)
    large = best_scaling_costs(a.large, min(a.reps, a.small), a.rounds)
    print(f"  (built and measured both states in {time.perf_counter() - t:.1f} s)")
    print(f"  {'command':<11} {'N=' + str(a.small):>12} {'N=' + str(a.large):>14} {'ratio':>7}")
    for name in OPS:
        print(f"  {name:<11} {small[name]:>12.2f} {large[name]:>14.2f} {large[name] / small[name]:>7.2f}")


if __name__ == "__main__":
    main()
