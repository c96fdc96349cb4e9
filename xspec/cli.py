"""The ``xspec`` command line."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from xspec import __version__

# The commands that live in their own modules, imported only when used: some
# of those modules pull in z3, networkx or hypothesis, and a ``replay`` or a
# ``check`` should not wait a second for them.
_MODULE_COMMANDS = {
    "check": "xspec.traces.job.checkjob:check_command",
    "explain": "xspec.traces.check.explain:explain_command",
    "explore": "xspec.explore.cli:explore_command",
    "fuzz": "xspec.traces.fuzz.fuzzer:fuzz_command",
    "prove": "xspec.proofs.cli:prove_command",
    "record": "xspec.traces.record.proxy:record_command",
    "serve": "xspec.reference.cli:serve_command",
}


class _LazyGroup(click.Group):
    """A group whose commands from ``_MODULE_COMMANDS`` are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_MODULE_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _MODULE_COMMANDS:
            module, attr = _MODULE_COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module), attr)
            if command.name != cmd_name:
                raise RuntimeError(f"{_MODULE_COMMANDS[cmd_name]} is named {command.name!r}, not {cmd_name!r}")
            self.add_command(command)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xspec")
def main() -> None:
    """xspec: the executable formal specification of Redis Streams and consumer groups."""


def _check_dialect_option(dialect: str) -> None:
    from xspec.spec.dialect import UnknownDialect, get_dialect
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
        from xspec.traces.harness.live import run_live_replay
        sys.exit(run_live_replay(list(paths), against, None if dialect == "auto" else dialect, out, allow_flush,
                                 quiet))
    from xspec.traces.check.report import run_replay
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
