"""Model speed: throughput on a mixed workload, and per-command cost at small vs large sizes.

    python benchmarks/bench_model.py [--large 1000000] [--skip-redis]

1. Mixed workload (XADD, XREADGROUP, XACK, XRANGE, XPENDING, XLEN, XCLAIM on one
   core): commands per second of the model, and of a real redis-server 7.0.15
   given the same commands pipelined over loopback (the peer, measured in the
   same run), with their ratio. Target: >= 200k commands/s for the model.
2. Scaling: the cost of XADD, XACK, XPENDING, XCLAIM, XAUTOCLAIM and XRANGE on a
   stream of 10^3 entries (all pending) versus one of 10^6 (all pending), and
   the ratio. Target: <= 2x growth.

No assertion is made; the figures are printed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xspec.models import ManualClock, Server  # noqa: E402


def mixed_workload(n: int) -> list[list[bytes]]:
    """A consumer-group workload: produce, consume in batches of 10, ack, inspect."""
    cmds: list[list[bytes]] = [[b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"]]
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


def run_model(cmds: list[list[bytes]]) -> float:
    server = Server(clock=ManualClock(1_700_000_000_000))
    execute = server.execute
    t = time.perf_counter()
    for argv in cmds:
        execute(1, argv)
    return len(cmds) / (time.perf_counter() - t)


def run_redis(cmds: list[list[bytes]]) -> float | None:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    from tests.conftest import start_redis  # the same launcher the tests use
    from xspec.spec.resp import encode_command
    from xspec.traces.client import RespConnection
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        proc, port = start_redis(binary, d)
        try:
            conn = RespConnection("127.0.0.1", port)
            payload = [encode_command(a) for a in cmds]
            t = time.perf_counter()
            for i in range(0, len(payload), 1000):
                chunk = payload[i:i + 1000]
                conn.send_raw(b"".join(chunk))
                for _ in chunk:
                    conn.recv()
            rate = len(cmds) / (time.perf_counter() - t)
            conn.close()
            return rate
        finally:
            proc.terminate()
            proc.wait()


def build(size: int) -> tuple[Server, ManualClock]:
    """A stream of ``size`` entries, every one pending for consumer c1."""
    clock = ManualClock(1_700_000_000_000)
    server = Server(clock=clock)
    ex = server.execute
    ex(1, [b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"])
    for i in range(1, size + 1):
        ex(1, [b"XADD", b"s", b"%d-0" % i, b"f", b"v"])
    for _ in range(0, size, 10000):
        ex(1, [b"XREADGROUP", b"GROUP", b"g", b"c1", b"COUNT", b"10000", b"STREAMS", b"s", b">"])
    clock.advance(100_000)
    return server, clock


def per_op(server: Server, size: int, make: Callable[[int], list[bytes]], reps: int) -> float:
    ex = server.execute
    step = max(1, size // reps)
    t = time.perf_counter()
    for k in range(reps):
        ex(1, make(1 + (k * step) % size))
    return (time.perf_counter() - t) / reps * 1e6


OPS: dict[str, Callable[[int, int], list[bytes]]] = {
    "XADD": lambda i, size: [b"XADD", b"s", b"*", b"f", b"v"],
    "XACK": lambda i, size: [b"XACK", b"s", b"g", b"%d-0" % i],
    "XPENDING": lambda i, size: [b"XPENDING", b"s", b"g", b"%d-0" % i, b"+", b"10"],
    "XCLAIM": lambda i, size: [b"XCLAIM", b"s", b"g", b"c2", b"1000", b"%d-0" % i],
    "XAUTOCLAIM": lambda i, size: [b"XAUTOCLAIM", b"s", b"g", b"c3", b"1000", b"%d-0" % i, b"COUNT", b"10"],
    "XRANGE": lambda i, size: [b"XRANGE", b"s", b"%d-0" % i, b"+", b"COUNT", b"10"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commands", type=int, default=200_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=2_000)
    ap.add_argument("--skip-redis", action="store_true")
    a = ap.parse_args()

    cmds = mixed_workload(a.commands)
    model = run_model(cmds)
    print(f"mixed workload, {len(cmds)} commands: model {model:,.0f} commands/s (target 200,000)")
    if not a.skip_redis:
        real = run_redis(cmds)
        if real is not None:
            print(f"  redis-server 7.0.15, pipelined over loopback: {real:,.0f} commands/s; "
                  f"model/redis = {model / real:.2f}")

    print(f"\nper-command cost (microseconds), stream of N entries all pending; ratio large/small (target <= 2)")
    t = time.perf_counter()
    small, _ = build(a.small)
    large, _ = build(a.large)
    print(f"  (built both states in {time.perf_counter() - t:.1f} s)")
    print(f"  {'command':<11} {'N=' + str(a.small):>12} {'N=' + str(a.large):>14} {'ratio':>7}")
    for name, make in OPS.items():
        cs = per_op(small, a.small, lambda i, m=make, n=a.small: m(i, n), a.reps)
        cl = per_op(large, a.large, lambda i, m=make, n=a.large: m(i, n), a.reps)
        print(f"  {name:<11} {cs:>12.2f} {cl:>14.2f} {cl / cs:>7.2f}")


if __name__ == "__main__":
    main()
