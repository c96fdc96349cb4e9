"""``xspec rules [RULE]``: the spec's rules and the places in the model, the reference, the tests
and the corpus traces that name them (the index of :mod:`xspec.spec.rule_index`)."""

from __future__ import annotations

import difflib
import os
import sys
from typing import TextIO

import click

from xspec.spec.rule_index import SITE_KINDS, Rule, RuleIndex, load_index

SUMMARY_WIDTH = 70
COLUMN_TITLES = {"model": "model", "reference": "ref", "tests": "tests", "traces": "traces"}


def _short(text: str, width: int = SUMMARY_WIDTH) -> str:
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def render_table_plain(index: RuleIndex, out: TextIO) -> None:
    """One line per rule: id, counts of places per kind, the start of its text."""
    id_width = max(len(r) for r in index.rules)
    header = "rule".ljust(id_width) + "".join(f"  {COLUMN_TITLES[k]:>6}" for k in SITE_KINDS) + "  text"
    out.write(header + "\n")
    for rule in index.rules.values():
        counts = "".join(f"  {len(rule.sites(k)):>6}" for k in SITE_KINDS)
        out.write(f"{rule.id.ljust(id_width)}{counts}  {_short(rule.summary)}\n")


def render_table_rich(index: RuleIndex, out: TextIO) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=out, force_terminal=True, highlight=False)
    id_width = max(len(r) for r in index.rules)
    count_widths = [max(len(COLUMN_TITLES[k]), 3) for k in SITE_KINDS]
    # Every column but the text keeps its width; the text gets the rest of the line (cut with …).
    text_width = max(20, console.width - id_width - sum(count_widths) - 3 * (len(count_widths) + 1))
    table = Table(show_edge=False, header_style="bold", pad_edge=False)
    table.add_column("rule", style="bold magenta", no_wrap=True, width=id_width)
    for kind, width in zip(SITE_KINDS, count_widths, strict=True):
        table.add_column(COLUMN_TITLES[kind], justify="right", no_wrap=True, width=width)
    table.add_column("text", no_wrap=True, overflow="ellipsis", width=text_width)
    for rule in index.rules.values():
        counts = [str(len(rule.sites(k))) if rule.sites(k) else "[dim]-[/dim]" for k in SITE_KINDS]
        table.add_row(rule.id, *counts, escape(_short(rule.summary, text_width)))
    console.print(table)


def render_rule(rule: Rule, out: TextIO) -> None:
    """The rule's full text, where it is defined, and every place that names it."""
    title = f" ({rule.title})" if rule.title else ""
    out.write(f"{rule.id}{title}  {rule.defined_at}\n\n{rule.text}\n")
    for kind in SITE_KINDS:
        places = rule.sites(kind)
        out.write(f"\n{kind} ({len(places)})" + (":\n" if places else "\n"))
        for place in places:
            out.write(f"  {place}\n")


def _unknown(rule_id: str, index: RuleIndex) -> str:
    close = difflib.get_close_matches(rule_id, list(index.rules), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `xspec rules` lists them all"
    return f"xspec rules: the spec defines no rule '{rule_id}'{hint}"


@click.command("rules")
@click.argument("rule_id", metavar="[RULE]", required=False)
@click.option("--plain", is_flag=True, help="Plain text, no colours (the default when not a terminal).")
def rules_command(rule_id: str | None, plain: bool) -> None:
    """List the spec's rules with how many places name each, or show one RULE with its text and places.

    The places (path:line) are lines of the model, the reference server, the tests and the
    corpus traces that name the rule; spec/requirements.md is the same matrix as a document.
    Exit status 2 for a rule the spec does not define.
    """
    index = load_index()
    try:
        if rule_id is None:
            if plain or not sys.stdout.isatty():
                render_table_plain(index, sys.stdout)
            else:
                render_table_rich(index, sys.stdout)
            sys.stdout.flush()
            return
        rule = index.rules.get(rule_id.strip().upper())
        if rule is None:
            click.echo(_unknown(rule_id.strip().upper(), index), err=True)
            sys.exit(2)
        render_rule(rule, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
