"""Overhead of the recording proxy: redis-benchmark directly against redis-server, then through ``xspec record``.

Starts a private redis-server and the proxy (``xspec record`` in its own
process, writing its trace to a temporary file), runs the same redis-benchmark
workloads against both ports, and prints requests per second for each and the
ratio (through the proxy / direct). Workloads: PING, XADD with ``*`` IDs,
XRANGE of the first 10 entries and XLEN, each unpipelined and with a pipeline
of 16. On 2 cores the server, the proxy and the benchmark share the CPUs.

    python benchmarks/bench_proxy.py [--requests 20000] [--clients 10]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from xspec.spec.trace_format import load
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import RedisProcess, free_port

WORKLOADS = {
    "PING": ["PING"],
    "XADD *": ["XADD", "bench", "*", "field", "value"],
    "XRANGE 10": ["XRANGE", "bench", "-", "+", "COUNT", "10"],
    "XLEN": ["XLEN", "bench"],
}


def requests_per_second(port: int, command: list[str], requests: int, clients: int, pipeline: int) -> float:
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(requests), "-c", str(clients), "-P", str(pipeline), "-q",
         *command], capture_output=True, text=True, check=True).stdout
    found = re.findall(r"([\d.]+) requests per second", out.replace("\r", "\n"))
    if not found:
        raise RuntimeError(f"unexpected redis-benchmark output: {out!r}")
    return float(found[-1])


def start_proxy(upstream: int, out: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from xspec.commands.record import record_command; record_command()",
         "--listen", f"127.0.0.1:{port}", "--upstream", f"redis://127.0.0.1:{upstream}", "--out", out],
        stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    proc.stderr.readline()  # "recording ...": it listens
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            RespConnection("127.0.0.1", port, timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the proxy did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--clients", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("redis-benchmark") is None:
        sys.exit("redis-benchmark is not installed")
    workdir = tempfile.mkdtemp(prefix="xspec-bench-proxy-")
    out = os.path.join(workdir, "bench.jsonl")
    with RedisProcess() as server:
        proxy, port = start_proxy(server.port, out)
        try:
            print(f"{'workload':<14} {'pipeline':>8} {'direct req/s':>13} {'proxy req/s':>12} {'ratio':>6}")
            ratios = []
            for name, command in WORKLOADS.items():
                for pipeline in (1, 16):
                    direct = requests_per_second(server.port, command, args.requests, args.clients, pipeline)
                    through = requests_per_second(port, command, args.requests, args.clients, pipeline)
                    ratios.append(through / direct)
                    print(f"{name:<14} {pipeline:>8} {direct:>13.0f} {through:>12.0f} {through / direct:>6.2f}")
        finally:
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(60)
    events = len(load(out).events)
    shutil.rmtree(workdir, ignore_errors=True)
    geometric = 1.0
    for r in ratios:
        geometric *= r
    geometric **= 1 / len(ratios)
    print(f"throughput through the proxy / direct: geometric mean {geometric:.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); the proxy recorded {events} events")


if __name__ == "__main__":
    main()
