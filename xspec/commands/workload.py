"""``xspec workload``: generate consumer-group histories with known anomalies, recorded as traces."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from xspec.commands.options import writable_folder


@click.command("workload")
@click.option("--target", default="model:redis-7.0", show_default=True,
              help="model:<dialect> (virtual clock), redis://host:port (a live server, flushed), embedded: "
                   "(xspec serve, started for the run), or cluster:<server> (a failover drill on a primary and a "
                   "replica of redis-7.0.15, redis-6.2.14 or valkey-9.1.2, recorded as trace/2).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("xspec-workload"),
              show_default=True, help="Folder for the traces and their .expected.json files.")
@click.option("--traces", type=click.IntRange(min=1), default=1, show_default=True, help="How many traces.")
@click.option("--streams", type=click.IntRange(min=1), default=9, show_default=True,
              help="Streams per trace; each gets the next consumer algorithm in turn.")
@click.option("--messages", type=click.IntRange(min=1), default=30, show_default=True, help="Messages per stream.")
@click.option("--events", type=click.IntRange(min=0), default=0,
              help="Keep generating traces until they hold this many events in all (overrides --traces).")
@click.option("--duration", type=click.FloatRange(min=0), default=0.0,
              help="Keep generating traces for this many seconds (overrides --traces).")
@click.option("--stuck-after-ms", type=click.IntRange(min=1), default=1_000, show_default=True,
              help="The threshold the expectations assume (pass the same to xspec audit).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--gzip", is_flag=True, help="Write .jsonl.gz.")
@click.option("--allow-flush", is_flag=True, help="Use a live server that holds keys (it is flushed).")
def workload_command(target: str, out: Path, traces: int, streams: int, messages: int, events: int, duration: float,
                     stuck_after_ms: int, seed: int, gzip: bool, allow_flush: bool) -> None:
    """Generate realistic consumer-group histories: producers, and groups whose consumers follow correct and buggy
    algorithms (crash before ack, ack before processing, a claimer whose min-idle is shorter than processing, poison
    pills with and without a dead-letter limit, trimming while lagging, a group rewound after acking).

    Each trace comes with NAME.expected.json: the (kind, key, group, id) anomalies it caused, which
    `xspec audit --stuck-after-ms N` must find exactly.
    """
    from xspec.audit.workload import Params, WorkloadError, generate
    writable_folder(out, "--out")
    params = Params(streams=streams, messages=messages, stuck_after_ms=stuck_after_ms,
                    final_idle_ms=max(2 * stuck_after_ms, 100))
    if not target.startswith("model:"):  # real time: shorter ticks
        params.tick_ms = 5
    unbounded = events > 0 or duration > 0
    count = 10**9 if unbounded else traces
    started = time.monotonic()
    total = written = 0
    try:
        for path, expected in generate(target, out, traces=count, params=params, seed=seed, allow_flush=allow_flush,
                                       gzip=gzip):
            from xspec.spec.trace_format import load
            n = len(load(path).events)
            total += n
            written += 1
            click.echo(f"{path}: {n} events, {len(expected)} anomalies expected", err=True)
            if unbounded and ((events and total >= events) or (duration and time.monotonic() - started >= duration)):
                break
    except WorkloadError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    click.echo(f"{written} traces, {total} events in {out}")
