"""``xspec check``: replay the bundled corpora on the model, fuzz a target, write a conformance report.

The job itself is :func:`xspec.traces.job.checkjob.run_check`; this module
reads the options and refuses, before any work, what would only fail later:
an unknown dialect, a target that cannot be used or holds keys (without
``--allow-flush``), a report folder that cannot be written.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from xspec.commands.options import dialect_option, writable_folder
from xspec.traces.harness.targets import LiveTarget, TargetError, parse_target
from xspec.traces.job.checkjob import DEFAULT_BUDGET, DEFAULT_REPORT, run_check, to_markdown


def _refuse_unusable_target(url: str, dialect: str | None, allow_flush: bool) -> None:
    """One line and exit 2 for a target the job could not test; the target is closed again."""
    try:
        target = parse_target(url, dialect=dialect, allow_flush=allow_flush)
    except TargetError as e:
        raise click.BadParameter(str(e), param_hint="--target") from None
    try:
        if isinstance(target, LiveTarget):
            target.refuse_unless_flushable()
    except TargetError as e:
        raise click.UsageError(str(e)) from None
    finally:
        target.close()


@click.command("check")
@click.option("--target", "target_url", help="Server to test: redis://host:port, rediss://..., model:<dialect>"
              "[+mutant:<name>] or embedded:. Default: the reference server, else a redis-server on PATH, "
              "else the model alone.")
@click.option("--dialect", callback=dialect_option,
              help="Dialect to check the target against (default: detected from INFO; 'nearest': for a "
                   "server version no dialect models, the nearest one).")
@click.option("--budget", type=float, default=DEFAULT_BUDGET, show_default=True,
              help="Seconds for the whole job (the corpus replay, then the fuzz campaign).")
@click.option("--report", "report_dir", type=click.Path(path_type=Path), default=DEFAULT_REPORT,
              show_default=True, help="Folder for report.md, report.html, report.json and junit.xml.")
@click.option("--allow-flush", is_flag=True, help="Test a --target that holds keys (testing flushes it).")
@click.option("--seed", type=int, default=0, show_default=True, help="The fuzz campaign's seed.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Known differences: a JSON list of [command, rule, difference] keys (report.json's groups "
                   "have them). Only divergences with other root causes fail the job.")
def check_command(target_url: str | None, dialect: str | None, budget: float, report_dir: Path,
                  allow_flush: bool, seed: int, quiet: bool, baseline_file: Path | None) -> None:
    """Replay the bundled corpora on the model, fuzz the target, and write a conformance report.

    The report groups divergences by root cause (command, first rule at the divergence, class of
    difference), each with its smallest trace as an `xspec view` page under views/.
    Exits 0 only if nothing diverged (with --baseline: nothing outside the baseline).
    """
    from xspec.traces.check.report import BaselineError, load_baseline

    writable_folder(report_dir, "--report")
    baseline = []
    if baseline_file is not None:
        try:
            baseline = load_baseline(baseline_file)
        except BaselineError as e:
            raise click.BadParameter(str(e), param_hint="--baseline") from None
    if target_url is not None:
        _refuse_unusable_target(target_url, dialect, allow_flush)
    progress = None if quiet else (lambda text: click.echo(f"[{time.strftime('%H:%M:%S')}] {text}", err=True))
    from xspec.viewer.pages import write_page_of_file

    report = run_check(target_url, dialect, budget, report_dir, allow_flush, progress, seed=seed, baseline=baseline,
                       page_writer=write_page_of_file)
    click.echo(to_markdown(report))
    click.echo(f"report written to {report_dir}/ (report.md, report.html, report.json, junit.xml, views/)", err=True)
    raise SystemExit(0 if report.passed else 1)
