"""``xspec fuzz``: differential fuzzing of targets against the model (:func:`xspec.traces.fuzz.fuzzer.run_campaign`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from xspec.traces.fuzz.fuzzer import CampaignProgress, run_campaign
from xspec.traces.fuzz.strategies import FUZZ_PROFILES
from xspec.traces.harness.targets import TargetError


def _progress_printer() -> Callable[[CampaignProgress], None]:
    last = [0.0]

    def show_progress(p: CampaignProgress) -> None:
        if p.elapsed - last[0] < 2.0:
            return
        last[0] = p.elapsed
        total = f"/{p.total_steps}" if p.total_steps else ""
        rate = p.steps / p.elapsed if p.elapsed else 0.0
        click.echo(f"  {p.steps}{total} steps, {p.cases} cases, {p.findings} divergences, "
                   f"{p.elapsed:.0f} s ({rate:,.0f} steps/s)", err=True)

    return show_progress


@click.command("fuzz")
@click.option("--target", "targets", multiple=True, required=True,
              help="redis://host:port[/db], rediss://..., model:<dialect>[+mutant:<name>]; repeatable.")
@click.option("--dialect", default=None, help="Dialect to check against (default: detected per target).")
@click.option("--steps", type=click.IntRange(min=1), default=10_000, show_default=True, help="Steps to generate.")
@click.option("--budget", "budget_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop after this many seconds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed: the same seed gives the same run.")
@click.option("--clients", type=click.IntRange(min=1), default=None,
              help="Clients per sequence (default: per profile, 2 to 4).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("xspec-fuzz"), show_default=True,
              help="Folder for the minimal traces and the report.")
@click.option("--allow-flush", is_flag=True, help="Test a server whose databases hold keys (they are flushed).")
@click.option("--profile", "profiles", multiple=True, type=click.Choice(sorted(FUZZ_PROFILES)),
              help="Generator profile to draw from (repeatable; default: all of them).")
def fuzz_command(targets: tuple[str, ...], dialect: str | None, steps: int, budget_s: float | None, seed: int,
                 clients: int | None, out: Path, allow_flush: bool, profiles: tuple[str, ...]) -> None:
    """Differential fuzzing: generated sequences on every target, checked against the model;
    every divergence shrunk to a minimal trace under --out. Exit status 1 if any target diverged."""
    try:
        result = run_campaign(list(targets), dialect=dialect, steps=steps, seed=seed, clients=clients, out=out,
                              budget_s=budget_s, progress=_progress_printer(), allow_flush=allow_flush,
                              profiles=list(profiles) or None)
    except TargetError as e:
        raise click.ClickException(str(e)) from None
    click.echo(result.report())
    raise SystemExit(0 if result.ok else 1)
