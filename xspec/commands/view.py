"""``xspec view``: a trace, a divergence or a counterexample as one self-contained HTML page."""

from __future__ import annotations

import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from xspec.commands.options import dialect_option, writable_file, writable_folder


def _open(page: Path) -> None:
    """Open ``page`` in the default browser; one line when there is none."""
    try:
        opened = webbrowser.open(page.resolve().as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        click.echo(f"xspec view: no browser to open {page}; open it by hand", err=True)


@click.command("view")
@click.argument("source", metavar="TRACE|DIR", required=False, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path),
              help="The page to write (default: TRACE's name with .html, in the current folder); for a DIR, "
                   "the folder for its pages (default: DIR's name with -view).")
@click.option("--open", "open_page", is_flag=True, help="Open the page in the default browser.")
@click.option("--dialect", default="auto", show_default=True, callback=dialect_option,
              help="Dialect, or 'auto' from each trace's header.")
@click.option("--tutorial", "tutorial_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write spec/tutorial.md's lessons as pages into this folder (with index.html).")
@click.option("--from-audit", "audit_dir", type=click.Path(file_okay=False, path_type=Path),
              help="An `xspec audit --out` folder: write the page of every trace its anomalies name where its "
                   "report.html links them (view/<trace>.html#line=L).")
def view_command(source: Path | None, out: Path | None, open_page: bool, dialect: str,
                 tutorial_dir: Path | None, audit_dir: Path | None) -> None:
    """Write a trace (a recording, a divergence found by check or fuzz, an explorer counterexample) as
    one HTML page: a lane per client, the model's state after every step with what changed, the rules
    that fired, and where the trace diverges, side by side with what the model allows.

    The page needs no server and no network: open it from disk or attach it to a bug report.
    Open it at step K with the fragment #step=K, or at the step of the trace file's line L with
    #line=L (the links of an audit's report.html; see --from-audit). Exit status: 0 when every trace conforms, 1 when one
    does not (its page shows where), 2 for bad input.
    """
    from xspec.spec.dialect import UnknownDialect
    from xspec.spec.trace_format import TraceError, load
    from xspec.viewer.pages import NotViewable, Written, write_folder, write_trace_page, write_tutorial

    chosen = None if dialect == "auto" else dialect
    if sum(x is not None for x in (source, tutorial_dir, audit_dir)) != 1:
        raise click.UsageError("give a TRACE or DIR, or --tutorial DIR, or --from-audit DIR")

    def say(w: Written) -> None:
        click.echo(f"wrote {w.page} ({w.status}, {w.size // 1024 or 1} KB)")

    try:
        if audit_dir is not None:
            sys.exit(_from_audit(audit_dir, chosen, say))
        if tutorial_dir is not None:
            writable_folder(tutorial_dir, "--tutorial")
            pages = write_tutorial(tutorial_dir, say)
            index = tutorial_dir / "index.html"
            click.echo(f"wrote {index}")
            if open_page:
                _open(index)
            sys.exit(0 if all(w.status == "conform" for w in pages) else 1)
        assert source is not None
        if not source.exists():
            raise click.BadParameter(f"{str(source)!r}: no such file or folder", param_hint="TRACE|DIR")
        if source.is_dir():
            folder = out if out is not None else Path(source.resolve().name + "-view")
            writable_folder(folder, "--out")
            pages = write_folder(source, folder, chosen, on_page=say)
            if not pages:
                raise click.BadParameter(f"no trace files (*.jsonl, *.jsonl.gz) under {str(source)!r}",
                                         param_hint="TRACE|DIR")
            click.echo(f"wrote {folder / 'index.html'}")
            if open_page:
                _open(folder / "index.html")
            sys.exit(0 if all(w.status == "conform" for w in pages) else 1)
        name = source.name.removesuffix(".gz").removesuffix(".jsonl")
        page = out if out is not None else Path(name + ".html")
        if page.is_dir():
            raise click.BadParameter(f"{str(page)!r} is a folder; give a file name", param_hint="--out")
        writable_file(page, "--out")
        w = write_trace_page(load(source), page, chosen)
        say(w)
        if open_page:
            _open(page)
        sys.exit(0 if w.status == "conform" else 1)
    except (TraceError, UnknownDialect, NotViewable) as err:
        click.echo(f"xspec view: {err}", err=True)
        sys.exit(2)
    except OSError as err:
        click.echo(f"xspec view: {err.filename or ''}: {err.strerror or err}", err=True)
        sys.exit(2)


def _from_audit(folder: Path, dialect: str | None, say: Callable[[Any], None]) -> int:
    """The pages an audit's report.html links to, for the traces its anomalies name (summary.json)."""
    import json

    from xspec.audit.report import view_link
    from xspec.spec.trace_format import TraceError, load
    from xspec.viewer.pages import write_trace_page

    summary = folder / "summary.json"
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
        traces = sorted({str(a["trace"]) for a in data["anomalies"]})
    except OSError as err:
        raise click.BadParameter(f"{str(summary)!r}: {err.strerror or err} (is it an `xspec audit --out` folder?)",
                                 param_hint="--from-audit") from None
    except (ValueError, KeyError, TypeError) as err:
        raise click.BadParameter(f"{str(summary)!r}: not an audit summary ({err})", param_hint="--from-audit") from None
    if not traces:
        click.echo(f"{summary}: no anomalies, no pages to write")
        return 0
    missing = 0
    for trace in traces:
        page = folder / view_link(trace).split("#")[0]
        writable_folder(page.parent, "--from-audit")
        try:
            say(write_trace_page(load(Path(trace)), page, dialect))
        except (OSError, TraceError) as err:  # one trace the audit read is gone or unreadable: the others still
            missing += 1
            click.echo(f"xspec view: {trace}: {getattr(err, 'strerror', None) or err}", err=True)
    return 1 if missing else 0
