"""``xspec explain``: a trace step by step, with the state after each step and the rules that changed it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from xspec.commands.options import dialect_option


@click.command("explain")
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plain", is_flag=True, help="Plain text, no colours or boxes (the default when not a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every step with its state and rules.")
@click.option("--changes-only", is_flag=True, help="Leave out the state tables after each step.")
@click.option("--dialect", default="auto", show_default=True, callback=dialect_option,
              help="Dialect, or 'auto' from the trace header.")
def explain_command(trace_path: Path, plain: bool, as_json: bool, changes_only: bool, dialect: str) -> None:
    """Replay a trace on the model and show, after each command, the state and the rules that changed it.

    Exit status: 0 when the trace conforms, 1 when it does not (it is shown up to where it
    diverges), 2 for a file that is not a valid trace or a dialect the model does not have.
    """
    from xspec.spec.dialect import UnknownDialect
    from xspec.spec.trace_format import TraceError, load
    from xspec.traces.check.explain import explain_trace

    try:
        trace = load(trace_path)
        plain = plain or not sys.stdout.isatty()
        e = explain_trace(trace, plain=plain, as_json=as_json, dialect=None if dialect == "auto" else dialect,
                          tables=not changes_only)
    except (TraceError, UnknownDialect) as err:
        click.echo(f"xspec explain: {err}", err=True)
        sys.exit(2)
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    sys.exit(0 if e.verdict.status == "conform" else 1)
