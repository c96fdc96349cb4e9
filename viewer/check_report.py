"""``xspec check``'s report with its divergences grouped by root cause, each group linked to a page.

The job (:mod:`xspec.traces.job.checkjob`) finds the divergences; this module diagnoses each
(:func:`xspec.traces.check.report.diagnose`: the command, the first rule id at the divergence,
the class of difference), groups them (:func:`~xspec.traces.check.report.group_by_root_cause`),
writes the ``xspec view`` page of every group's smallest trace under ``views/``, and writes the
report's four forms (Markdown, HTML, JSON, JUnit XML) with the same groups: errors first, then
the new groups with "trace says / model allows" and the rule's text, the groups a baseline
accepts, and the coverage table last. With a baseline (``--baseline FILE``, a JSON list of
keys) the job fails only on new groups.
"""

from __future__ import annotations

import html
import json
import os
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xspec.spec.rule_index import load_index
from xspec.spec.trace_format import TraceError, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.report import (
    DIFFERENCE_CLASSES,
    Diagnosis,
    RootCause,
    RootCauseGroup,
    diagnose,
    group_by_root_cause,
)
from xspec.traces.job.checkjob import Divergence, Report, to_json
from xspec.viewer.pages import write_trace_page

VIEWS = "views"


def trace_file(d: Divergence, report_dir: Path) -> Path | None:
    """Where a divergence's trace is: as given, under the report folder, or in the bundled corpus."""
    if not d.trace:
        return None
    given = Path(d.trace)
    for p in (given, report_dir / given, CORPUS_DIR / given):
        if p.is_file():
            return p
    return None


def _fallback(d: Divergence) -> Diagnosis:
    """The diagnosis of a divergence whose trace cannot be read again: from its message."""
    text = f"{d.message}\n{d.detail}"
    difference = next((c for c in DIFFERENCE_CLASSES if c in text), "value")
    rule = (d.rule or "").split(",")[0].strip()
    return Diagnosis(RootCause(d.command, rule, difference), None, [], 1 << 30, d.trace)


def diagnose_all(report: Report, report_dir: Path) -> list[tuple[Divergence, Diagnosis]]:
    """Every divergence of the report with its diagnosis (its trace checked again)."""
    out = []
    for d in report.divergences:
        path = trace_file(d, report_dir)
        diagnosis = None
        if path is not None:
            try:
                trace = load(path)
                diagnosis = diagnose(trace, None if report.dialect == "auto" else report.dialect)
                diagnosis.trace = str(path)
            except (TraceError, ValueError):
                diagnosis = None
        out.append((d, diagnosis or _fallback(d)))
    return out


def build_groups(report: Report, report_dir: Path, baseline: Iterable[RootCause] = (),
                 views: bool = True) -> list[RootCauseGroup]:
    """The report's divergences grouped by root cause; with ``views``, each group's smallest trace
    written as a page under ``report_dir/views/``."""
    groups = group_by_root_cause(diagnose_all(report, report_dir), baseline)
    if views:
        for n, g in enumerate(groups, 1):
            smallest = g.smallest
            if smallest.trace is None:
                continue
            page = report_dir / VIEWS / f"{n:02d}-{_slug(g.cause)}.html"
            try:
                write_trace_page(load(smallest.trace), page)
            except (TraceError, ValueError, OSError):
                continue
            g.view = os.path.relpath(page, report_dir)
    return groups


def _slug(cause: RootCause) -> str:
    text = f"{cause.command}-{cause.rule}-{cause.difference}".lower()
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-")[:60]


def passed(report: Report, groups: list[RootCauseGroup]) -> bool:
    """Nothing new diverged: every group is in the baseline, and there were no errors."""
    return not report.errors and all(g.known for g in groups)


def verdict(report: Report, groups: list[RootCauseGroup]) -> str:
    new = [g for g in groups if not g.known]
    known = len(groups) - len(new)
    if passed(report, groups):
        return "PASS: nothing new diverged" + (f" ({known} known differences)" if known else "")
    return (f"FAIL: {len(new)} new root causes ({sum(len(g.members) for g in new)} divergences)"
            + (f", {known} known" if known else "") + f", {len(report.errors)} errors")


def _rule_text(rule: str) -> str:
    found = load_index().rules.get(rule) if rule else None
    return found.text if found is not None else ""


def _coverage_rows(report: Report) -> list[tuple[str, int, int, int, str]]:
    return [(label, c.calls, c.errors, c.fuzzed, ", ".join(f"{o} ×{n}" for o, n in sorted(c.options.items())))
            for label, c in sorted(report.coverage.items())]


def where(d: Diagnosis) -> str:
    """Where the trace's reply first differs from the model's (``groups/[0]/lag``), or ""."""
    if d.got is None or d.allowed_reply is None:
        return ""
    from xspec.traces.fuzz.fuzzer import reply_difference
    return reply_difference(d.got, d.allowed_reply)


def _members(g: RootCauseGroup) -> list[str]:
    return [d.trace or "(no trace)" for d in g.diagnoses]


# ---------------------------------------------------------------------------------------------
# The four forms


def to_markdown(report: Report, groups: list[RootCauseGroup]) -> str:
    counts = Counter(r.status for r in report.corpus)
    lines = [f"# xspec conformance report: {verdict(report, groups)}", "",
             f"- target: `{report.target}`: {report.description}",
             f"- dialect: {report.dialect}", f"- started: {report.started}, took {report.seconds} s",
             f"- corpus: {len(report.corpus)} traces: " + ", ".join(f"{counts[s]} {s}" for s in sorted(counts)),
             "- fuzz campaign: " + (", ".join(f"{k}: {v}" for k, v in report.campaign.items())
                                    if report.campaign else report.campaign_note or "none"), ""]
    if report.errors:
        lines += ["## Errors", "", *[f"- {e}" for e in report.errors], ""]
    for title, chosen in (("Divergences by root cause", [g for g in groups if not g.known]),
                          ("Known differences (baseline)", [g for g in groups if g.known])):
        if not chosen and title.startswith("Known"):
            continue
        lines += [f"## {title}", ""]
        if not chosen:
            lines += ["None.", ""]
            continue
        lines += ["| # | command | first rule | difference | divergences | smallest trace | page |",
                  "| --- | --- | --- | --- | ---: | --- | --- |"]
        for n, g in enumerate(chosen, 1):
            s = g.smallest
            lines.append(f"| {n} | {g.cause.command} | {g.cause.rule or '-'} | {g.cause.difference} | "
                         f"{len(g.members)} | {s.trace or '-'} | {g.view or '-'} |")
        lines.append("")
        for n, g in enumerate(chosen, 1):
            s = g.smallest
            lines += [f"### {n}. {g.cause.text()} ({len(g.members)})", ""]
            if g.cause.rule and _rule_text(g.cause.rule):
                lines += [f"> **{g.cause.rule}** " + _rule_text(g.cause.rule).replace("\n", " "), ""]
            if where(s):
                lines += [f"differs at: `{where(s)}`", ""]
            lines += ["```", f"trace says:   {s.says if s.says is not None else '(no reply)'}",
                      *[f"model allows: {a}" for a in s.allows or ["(no reply)"]], "```", ""]
            lines += [f"smallest trace: `{s.trace}` ({s.events} events)" + (f"; page: {g.view}" if g.view else ""), ""]
            others = _members(g)[1:] if len(g.members) > 1 else []
            if others:
                lines += ["also: " + ", ".join(f"`{t}`" for t in sorted(set(_members(g)) - {s.trace or ''})), ""]
    lines += ["## Coverage: commands and options exercised", "",
              "| command | corpus calls | corpus errors | fuzz steps | options (corpus) |",
              "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {label} | {calls} | {errors} | {fuzzed} | {options} |"
              for label, calls, errors, fuzzed, options in _coverage_rows(report)]
    lines.append("")
    if report.skipped:
        lines += ["## Checks skipped", "", *[f"- {s}" for s in report.skipped], ""]
    return "\n".join(lines)


def to_html(report: Report, groups: list[RootCauseGroup]) -> str:
    e = html.escape
    ok = passed(report, groups)
    counts = Counter(r.status for r in report.corpus)
    parts = [f"<h1 style=\"color:{'#1a7f37' if ok else '#cf222e'}\">{e(verdict(report, groups))}</h1>",
             f"<p>Target <code>{e(report.target)}</code>: {e(report.description)}; dialect {e(report.dialect)}; "
             f"started {e(report.started)}, took {report.seconds} s.</p>",
             f"<p>Corpus: {len(report.corpus)} traces: {e(', '.join(f'{counts[s]} {s}' for s in sorted(counts)))}. "
             f"Fuzz campaign: {e(', '.join(f'{k}: {v}' for k, v in (report.campaign or {}).items()) or report.campaign_note or 'none')}.</p>"]
    if report.errors:
        parts.append('<h2 id="errors">Errors</h2><ul class="errors">'
                     + "".join(f"<li>{e(x)}</li>" for x in report.errors) + "</ul>")
    for title, chosen, anchor in (("Divergences by root cause", [g for g in groups if not g.known], "groups"),
                                  ("Known differences (baseline)", [g for g in groups if g.known], "known")):
        if not chosen and anchor == "known":
            continue
        parts.append(f'<h2 id="{anchor}">{title}</h2>')
        if not chosen:
            parts.append("<p>None.</p>")
        for g in chosen:
            s = g.smallest
            allows = "".join(f"<pre>{e(a)}</pre>" for a in s.allows) or "<pre>(no reply)</pre>"
            rule = _rule_text(g.cause.rule)
            others = sorted(set(_members(g)) - {s.trace or ""})
            view = f' · <a class="view" href="{e(g.view)}">step through it (xspec view)</a>' if g.view else ""
            parts.append(
                f'<section class="group" data-key="{e(json.dumps(g.cause.key()))}">'
                f"<h3>{e(g.cause.command)} · <code>{e(g.cause.rule or 'no rule traced')}</code> · "
                f"{e(g.cause.difference)} <small>({len(g.members)} divergences)</small></h3>"
                + (f'<blockquote class="rule"><b>{e(g.cause.rule)}</b> {e(rule)}</blockquote>' if rule else "")
                + (f'<p class="where">differs at: <code>{e(where(s))}</code></p>' if where(s) else "")
                + f'<div class="side"><div class="says"><b>trace says</b><pre>{e(s.says or "(no reply)")}</pre></div>'
                f'<div class="allows"><b>model allows</b>{allows}</div></div>'
                f"<p>smallest trace: <code>{e(s.trace or '-')}</code> ({s.events} events){view}</p>"
                + (f"<details><summary>{len(others)} more traces</summary><ul>"
                   + "".join(f"<li><code>{e(t)}</code></li>" for t in others) + "</ul></details>" if others else "")
                + "</section>")
    rows = "".join(f"<tr><td>{e(label)}</td><td>{calls}</td><td>{errors}</td><td>{fuzzed}</td><td>{e(options)}</td></tr>"
                   for label, calls, errors, fuzzed, options in _coverage_rows(report))
    parts.append('<h2 id="coverage">Coverage: commands and options exercised</h2><table><tr><th>command</th>'
                 "<th>corpus calls</th><th>corpus errors</th><th>fuzz steps</th><th>options (corpus)</th></tr>"
                 + rows + "</table>")
    if report.skipped:
        parts.append("<h2>Checks skipped</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in report.skipped) + "</ul>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>xspec conformance report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}pre{{margin:2px 0;white-space:pre-wrap}}
.group{{border:1px solid #d0d7de;border-radius:6px;padding:4px 12px;margin:10px 0}}
.side{{display:flex;gap:10px}}.side>div{{flex:1;border-radius:6px;padding:4px 8px}}
.says{{background:#ffebe9}}.allows{{background:#dafbe1}}.rule{{color:#57606a;margin:4px 0 8px 0}}
.errors li{{color:#cf222e}}</style></head>
<body>{''.join(parts)}</body></html>
"""


def to_json_form(report: Report, groups: list[RootCauseGroup]) -> dict[str, Any]:
    data = to_json(report)
    data["passed"] = passed(report, groups)
    data["verdict"] = verdict(report, groups)
    data["groups"] = [{
        "key": g.cause.key(), "command": g.cause.command, "rule": g.cause.rule, "difference": g.cause.difference,
        "known": g.known, "divergences": len(g.members), "rule_text": _rule_text(g.cause.rule),
        "smallest": {"trace": g.smallest.trace, "events": g.smallest.events, "trace_says": g.smallest.says,
                     "differs_at": where(g.smallest),
                     "model_allows": g.smallest.allows, "view": g.view},
        "traces": _members(g)} for g in groups]
    return data


def to_junit(report: Report, groups: list[RootCauseGroup]) -> str:
    suites = ET.Element("testsuites", name="xspec check", time=str(report.seconds))
    corpus = ET.SubElement(suites, "testsuite", name="corpus on the model", tests=str(len(report.corpus)),
                           failures=str(sum(not r.met for r in report.corpus)))
    for r in report.corpus:
        case = ET.SubElement(corpus, "testcase", classname="corpus", name=r.path)
        if not r.met:
            ET.SubElement(case, "failure", message=f"expected {r.expected}, got {r.status}").text = r.message
    new = [g for g in groups if not g.known]
    suite = ET.SubElement(suites, "testsuite", name=f"root causes on {report.target}", tests=str(max(1, len(groups))),
                          failures=str(len(new)), errors=str(len(report.errors)),
                          skipped=str(len(groups) - len(new)))
    for error in report.errors:
        case = ET.SubElement(suite, "testcase", classname="error", name=error[:80])
        ET.SubElement(case, "error", message=error)
    for g in groups:
        s = g.smallest
        case = ET.SubElement(suite, "testcase", classname=f"divergence.{g.cause.command.replace(' ', '_')}",
                             name=g.cause.text())
        body = "\n".join([*([f"differs at: {where(s)}"] if where(s) else []), f"trace says:   {s.says or '(no reply)'}", *[f"model allows: {a}" for a in s.allows],
                          f"smallest trace: {s.trace} ({s.events} events)",
                          *([f"page: {g.view}"] if g.view else []), f"{len(g.members)} divergences:",
                          *_members(g)])
        if g.known:
            ET.SubElement(case, "skipped", message="known difference (baseline)").text = body
        else:
            ET.SubElement(case, "failure", message=f"trace says {s.says or '(no reply)'}; model allows "
                          + (" | ".join(s.allows) or "(no reply)")).text = body
    if not groups:
        case = ET.SubElement(suite, "testcase", classname="fuzz", name="campaign")
        if report.campaign is None:
            ET.SubElement(case, "skipped", message=report.campaign_note or "no campaign")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def write_grouped_report(report: Report, folder: Path, baseline: Iterable[RootCause] = ()) -> list[RootCauseGroup]:
    """Group the report's divergences, write their pages and the four forms into ``folder``."""
    groups = build_groups(report, folder, baseline)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(to_markdown(report, groups), encoding="utf-8")
    (folder / "report.html").write_text(to_html(report, groups), encoding="utf-8")
    (folder / "report.json").write_text(json.dumps(to_json_form(report, groups), indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    (folder / "junit.xml").write_text(to_junit(report, groups), encoding="utf-8")
    return groups


__all__ = ["build_groups", "passed", "to_html", "to_json_form", "to_junit", "to_markdown", "verdict",
           "write_grouped_report"]
