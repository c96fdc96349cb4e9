"""``xspec replay``: check traces against the model, or replay them on a live server and check that."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from xspec.commands.options import dialect_option


@click.command("replay")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--against", default="model", show_default=True,
              help="'model' checks the traces themselves; a URL (redis://host:port, rediss://...) replays them "
                   "on that server and checks the live conversation.")
@click.option("--dialect", default="auto", show_default=True, callback=dialect_option,
              help="Dialect to check against: 'auto' takes it from each trace's header (or the server's INFO).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("xspec-replay"), show_default=True,
              help="With --against URL: folder for the live traces.")
@click.option("--allow-flush", is_flag=True, help="With --against URL: test a server that holds keys (flushed).")
@click.option("-q", "--quiet", is_flag=True, help="Print only divergences and the summary.")
def replay_command(paths: tuple[Path, ...], against: str, dialect: str, out: Path, allow_flush: bool,
                   quiet: bool) -> None:
    """Check traces (files, or every trace under folders) for conformance, or replay them on a live server."""
    if not paths:
        raise click.UsageError("give at least one trace file or folder")
    if against != "model":
        from xspec.traces.harness.live import run_live_replay
        sys.exit(run_live_replay(list(paths), against, None if dialect == "auto" else dialect, out, allow_flush,
                                 quiet))
    from xspec.traces.check.report import run_replay
    sys.exit(run_replay(list(paths), dialect, quiet=quiet))
