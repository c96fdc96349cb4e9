"""Checks of option values the subcommands share: a known dialect, an output path that can be written.

Each raises :class:`click.BadParameter`, so that a bad value is refused with one
line before any work starts rather than after a long run.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click


def dialect_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A ``--dialect`` callback: the value unchanged if it names a known dialect (or is ``auto``/unset)."""
    from xspec.spec.dialect import UnknownDialect, get_dialect
    if value is not None and value not in ("auto", "nearest"):  # nearest: spec.dialect.NEAREST
        try:
            get_dialect(value)
        except UnknownDialect as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return value


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def writable_folder(folder: Path, option: str) -> None:
    """Create ``folder`` (with its parents) and make sure a file can be written in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise click.BadParameter(f"cannot write into {str(folder)!r}: {_reason(e)}", param_hint=option) from None


def writable_file(path: Path, option: str) -> None:
    """Make sure ``path`` can be written, leaving no file behind where there was none."""
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as e:
        raise click.BadParameter(f"cannot write {str(path)!r}: {_reason(e)}", param_hint=option) from None
    if not existed:
        path.unlink(missing_ok=True)
