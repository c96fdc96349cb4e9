"""The ``xspec`` command line."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from xspec import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xspec")
def main() -> None:
    """xspec: the executable formal specification of Redis Streams and consumer groups."""


def _check_dialect_option(dialect: str) -> None:
    from xspec.models.dialect import UnknownDialect, get_dialect
    if dialect != "auto":
        try:
            get_dialect(dialect)
        except UnknownDialect as e:
            raise click.BadParameter(str(e), param_hint="--dialect") from None


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--against", default="model", show_default=True,
              help="'model' checks the traces themselves; a URL (redis://host:port, rediss://...) replays them "
                   "on that server and checks the live conversation.")
@click.option("--dialect", default="auto", show_default=True,
              help="Dialect to check against: 'auto' takes it from each trace's header (or the server's INFO).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("xspec-replay"), show_default=True,
              help="With --against URL: folder for the live traces.")
@click.option("--allow-flush", is_flag=True, help="With --against URL: test a server that holds keys (flushed).")
@click.option("-q", "--quiet", is_flag=True, help="Print only divergences and the summary.")
def replay(paths: tuple[Path, ...], against: str, dialect: str, out: Path, allow_flush: bool, quiet: bool) -> None:
    """Check traces (files, or every trace under folders) for conformance, or replay them on a live server."""
    if not paths:
        raise click.UsageError("give at least one trace file or folder")
    _check_dialect_option(dialect)
    if against != "model":
        from xspec.traces.live import run_live_replay
        sys.exit(run_live_replay(list(paths), against, None if dialect == "auto" else dialect, out, allow_flush,
                                 quiet))
    from xspec.traces.report import run_replay
    sys.exit(run_replay(list(paths), dialect, quiet=quiet))


@main.command("record-corpus")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="Corpus folder to write, e.g. traces/redis-7.0.15.")
@click.option("--only", help="Record only the scenarios whose topic/name matches this glob or contains this text.")
@click.option("--redis-server", "redis_server", help="redis-server binary (default: the one on PATH).")
@click.option("--list", "list_only", is_flag=True, help="List the selected scenarios and exit.")
def record_corpus(out: Path, only: str | None, redis_server: str | None, list_only: bool) -> None:
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


def _register() -> None:
    """Commands that live in their own modules."""
    from xspec.models.explore.cli import explore_command
    from xspec.reference.cli import serve_command
    from xspec.spec.proofs.cli import prove_command
    from xspec.traces.checkjob import check_command
    from xspec.traces.explain import explain_command
    from xspec.traces.fuzz import fuzz_command
    from xspec.traces.proxy import record_command
    main.add_command(check_command)
    main.add_command(explain_command)
    main.add_command(explore_command)
    main.add_command(fuzz_command)
    main.add_command(prove_command)
    main.add_command(serve_command)
    main.add_command(record_command)


_register()
