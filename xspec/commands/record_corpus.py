"""``xspec record-corpus``: record the scenario corpus from a private redis-server (:mod:`xspec.traces.scenarios`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click


def _server_binary(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A ``--redis-server`` that exists and can be run (a path, or a name on PATH)."""
    if value is not None and shutil.which(value) is None:
        raise click.BadParameter(f"{value!r}: no such executable file", ctx=ctx, param=param)
    return value


@click.command("record-corpus")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Corpus folder to write, e.g. traces/redis-7.0.15.")
@click.option("--only", help="Record only the scenarios whose topic/name matches this glob or contains this text.")
@click.option("--redis-server", "redis_server", callback=_server_binary,
              help="redis-server binary (default: the one on PATH).")
@click.option("--list", "list_only", is_flag=True, help="List the selected scenarios and exit.")
def record_corpus_command(out: Path, only: str | None, redis_server: str | None, list_only: bool) -> None:
    """Record the scenario corpus from a private redis-server on a free loopback port."""
    from xspec.traces.scenarios.__main__ import main as scenarios_main
    argv = ["--out", str(out)]
    if only:
        argv += ["--only", only]
    if redis_server:
        argv += ["--redis-server", redis_server]
    if list_only:
        argv.append("--list")
    sys.exit(scenarios_main(argv))
