"""Throughput of the differential fuzzer against a real Redis on loopback.

Starts a private ``redis-server`` 7.0 on a free loopback port and sets
``hz 100`` (the server's timer then ends short BLOCK timeouts within 10 ms
instead of up to 100 ms late; stream semantics are the same), runs a fuzz campaign against it
(generation with Hypothesis, every case run on the server, recorded, checked
against the model with time windows, the previous case checked while the next
one runs) and prints the steps per second, end to end. Also prints the
campaign against the model alone, for comparison.

    python benchmarks/bench_fuzz.py [--steps 10000] [--seed 1] [--redis-server PATH]
"""

from __future__ import annotations

import argparse

from xspec.traces.fuzz.fuzzer import run_campaign
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import RedisProcess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--redis-server", help="redis-server 7.0 binary (default: found on PATH or in /usr/bin)")
    args = parser.parse_args()
    server = RedisProcess(args.redis_server).start()
    try:
        RespConnection(server.host, server.port).call([b"CONFIG", b"SET", b"hz", b"100"])
        live = run_campaign([f"redis://{server.host}:{server.port}"], steps=args.steps, seed=args.seed,
                            allow_flush=True)
    finally:
        server.stop()
    model = run_campaign(["model:redis-7.0"], steps=args.steps, seed=args.seed)
    for name, r in ((f"real Redis on loopback ({server.binary})", live), ("the model (virtual clock)", model)):
        print(f"fuzzing {name}: {r.steps_per_second():,.0f} steps/s "
              f"({r.steps} steps, {r.cases} cases in {r.elapsed:.1f} s; verdicts {dict(r.statuses)}; "
              f"{len(r.divergences)} divergences)")


if __name__ == "__main__":
    main()
