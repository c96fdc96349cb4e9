"""``xspec view``: a trace, a divergence or a counterexample as one self-contained HTML page."""

from __future__ import annotations

import sys
import webbrowser
from pathlib import Path

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
def view_command(source: Path | None, out: Path | None, open_page: bool, dialect: str,
                 tutorial_dir: Path | None) -> None:
    """Write a trace (a recording, a divergence found by check or fuzz, an explorer counterexample) as
    one HTML page: a lane per client, the model's state after every step with what changed, the rules
    that fired, and where the trace diverges, side by side with what the model allows.

    The page needs no server and no network: open it from disk or attach it to a bug report.
    Open it at step K with the fragment #step=K. Exit status: 0 when every trace conforms, 1 when one
    does not (its page shows where), 2 for bad input.
    """
    from xspec.spec.dialect import UnknownDialect
    from xspec.spec.trace_format import TraceError, load
    from xspec.viewer.pages import NotViewable, Written, write_folder, write_trace_page, write_tutorial

    chosen = None if dialect == "auto" else dialect
    if (source is None) == (tutorial_dir is None):
        raise click.UsageError("give a TRACE or DIR, or --tutorial DIR")

    def say(w: Written) -> None:
        click.echo(f"wrote {w.page} ({w.status}, {w.size // 1024 or 1} KB)")

    try:
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
