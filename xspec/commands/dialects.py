"""``xspec dialects [A B]``: the dialect table, or only the switches where two dialects differ."""

from __future__ import annotations

from typing import Any

import click

from xspec.spec.dialect import DIALECTS, Dialect, get_dialect
from xspec.spec.dialect_table import differences, markdown, ordered_dialects
from xspec.spec.info import INFO_FIELDS


def _names(value: Any) -> set[str] | None:
    """The names a table-valued switch holds (parameters, fields, commands), None for a plain value."""
    if isinstance(value, dict):
        return {str(k) for k in value}
    if isinstance(value, tuple):
        return {str(v) for v in value}
    if isinstance(value, str) and "\n" in value.strip():
        return {w for line in value.splitlines() if not line.startswith("#") for w in line.split()} | {
            line for line in value.splitlines() if line.startswith("# ")}
    return None


def _resolved(dialect: Dialect, switch: str) -> Any:
    """A switch's value, with "7.0's" (None) spelled out where the table is known."""
    if switch == "config_parameters":
        return dialect.config_listed()
    value = getattr(dialect, switch)
    if switch == "info_layout" and value is None:
        return "\n".join(f"# {title}\n    " + " ".join(names) for title, names in INFO_FIELDS.items())
    return value


def _detail(a: Any, b: Any) -> str:
    """For a table-valued switch, what the second dialect adds and drops; else nothing."""
    left, right = _names(a), _names(b)
    if left is None or right is None or (not left and not right):
        return ""
    parts = []
    if right - left:
        parts.append("+ " + ", ".join(sorted(right - left)))
    if left - right:
        parts.append("- " + ", ".join(sorted(left - right)))
    if isinstance(a, dict) and isinstance(b, dict):
        changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
        parts += [f"~ {k}: {a[k]} -> {b[k]}" for k in changed]
    return "\n".join(f"      {p}" for p in parts)


def _dialect_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and value not in DIALECTS:
        raise click.BadParameter(f"unknown dialect {value!r}; known: {', '.join(ordered_dialects())}",
                                 ctx=ctx, param=param)
    return value


@click.command("dialects")
@click.argument("first", required=False, callback=_dialect_name)
@click.argument("second", required=False, callback=_dialect_name)
def dialects_command(first: str | None, second: str | None) -> None:
    """Without arguments, the whole dialect table (Markdown); with two dialects, only the switches where they differ.

    Each difference shows both values and what the switch changes; for a table
    (CONFIG parameters, INFO fields, CLIENT LIST fields) also what the second
    dialect adds (+), drops (-) and changes (~).
    """
    if first is None:
        click.echo(markdown())
        return
    if second is None:
        raise click.UsageError("give two dialects to compare, or none for the whole table")
    rows = differences(first, second)
    if not rows:
        click.echo(f"{first} and {second} do not differ")
        return
    click.echo(f"{len(rows)} switches differ between {first} and {second}:")
    a, b = get_dialect(first), get_dialect(second)
    for row in rows:
        click.echo(f"  {row.switch}: {row.values[first]} -> {row.values[second]}")
        if row.what:
            click.echo(f"      {row.what}")
        detail = _detail(_resolved(a, row.switch), _resolved(b, row.switch))
        if detail:
            click.echo(detail)
