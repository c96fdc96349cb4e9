"""``xspec check``: the main job. Replay the bundled corpora on the model, fuzz a target, report.

1. Every bundled trace (``traces/<server>-<version>/...``) is checked against
   the model of the dialect its header names; each must meet its header's
   expectation (conform, unless it states otherwise).
2. A differential fuzz campaign runs against the target for the rest of the
   budget (:func:`xspec.traces.fuzz.fuzzer.run_campaign`); every divergence comes back
   as a minimal trace, under ``<report>/divergences/``.
3. The report: the target, the errors, the divergences grouped by root cause
   (the command, the first rule id at the divergence, the class of difference;
   :mod:`xspec.traces.check.report`), each group with what its smallest trace
   says and what the model allows, the rule's text and (given the viewer's page
   writer) a link to that trace's ``xspec view`` page under ``views/``; then a
   coverage table (which commands and options the corpus and the campaign
   exercised, and how often they failed) and the verdict. It is written to the
   report folder as ``report.md``, ``report.html``, ``report.json`` (``groups``,
   each with its ``key``) and ``junit.xml`` (one test case per corpus trace and
   per root cause, for CI systems), all with the same groups.

The exit status is 0 only if nothing diverged (given a baseline of known root
causes: nothing outside it). Without ``--target`` the job
uses the reference server (``embedded:``) when it is available, else a
private redis-server from PATH (started on a free loopback port and stopped
by its pid), else the model alone (the corpus replay, no campaign).
"""

from __future__ import annotations

import contextlib
import html
import json
import time
import traceback
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from xspec.spec import commands as table
from xspec.spec.dialect import UnknownDialect
from xspec.spec.resp import Error, Reply
from xspec.spec.rule_index import load_index
from xspec.spec.trace_format import Call, Close, Recv, Send, Trace, TraceError, find_traces, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import Verdict, check_trace, trace_dialect
from xspec.traces.check.report import (
    DIFFERENCE_CLASSES,
    Diagnosis,
    RootCause,
    RootCauseGroup,
    diagnose,
    expectation,
    group_by_root_cause,
    meets,
)
from xspec.traces.harness.targets import LiveTarget, TargetError, parse_target

DEFAULT_BUDGET = 60.0
DEFAULT_REPORT = Path("xspec-report")

OPTION_WORDS = frozenset(
    """NOMKSTREAM MAXLEN MINID LIMIT COUNT BLOCK STREAMS NOACK GROUP IDLE TIME RETRYCOUNT FORCE JUSTID LASTID
    FULL MKSTREAM ENTRIESREAD ENTRIESADDED MAXDELETEDID = ~""".split())
"""Arguments that are options (the coverage table counts them per command)."""

Progress = Callable[[str], None]
PageWriter = Callable[[Path, Path], None]
"""Writes the page of a trace file (first argument) to a file (second): the viewer's, given by ``xspec check``."""
VIEWS = "views"
"""The report's subfolder for the pages of the groups' smallest traces."""


# ---------------------------------------------------------------------------------------------
# What the job finds


@dataclass
class TraceResult:
    """One corpus trace checked on the model."""

    path: str
    status: str
    expected: str
    met: bool
    events: int
    message: str = ""


@dataclass
class Divergence:
    """Something that differs from the model, with the trace that shows it."""

    source: str  # "corpus" or "fuzz"
    command: str
    message: str
    trace: str | None = None  # the (minimal) trace's file
    rule: str | None = None
    detail: str = ""


@dataclass
class CommandCoverage:
    calls: int = 0  # in the corpus
    errors: int = 0  # error replies in the corpus
    options: Counter[str] = field(default_factory=Counter)  # in the corpus
    fuzzed: int = 0  # steps of the fuzz campaign


@dataclass
class Report:
    target: str
    description: str  # what the target turned out to be
    dialect: str
    started: str
    seconds: float = 0.0
    corpus: list[TraceResult] = field(default_factory=list)
    campaign: dict[str, Any] | None = None  # the fuzz campaign's summary
    campaign_note: str = ""  # why there was no campaign, or what limited it
    corpus_note: str = ""  # which bundled corpora were replayed, when not all
    divergences: list[Divergence] = field(default_factory=list)
    coverage: dict[str, CommandCoverage] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unreproduced: list[Divergence] = field(default_factory=list)  # fuzz findings that did not happen again
    groups: list[RootCauseGroup] = field(default_factory=list)  # the divergences by root cause (group_report)

    def known(self) -> set[int]:
        """The divergences (by id) that a baseline accepts."""
        return {id(d) for g in self.groups if g.known for d in g.members}

    @property
    def passed(self) -> bool:
        """No errors, every corpus trace as expected, and nothing diverged outside the baseline."""
        known = self.known()
        return not self.errors and all(r.met for r in self.corpus) and all(id(d) in known for d in self.divergences)

    @property
    def verdict(self) -> str:
        known = sum(g.known for g in self.groups)
        if self.passed:
            return ("PASS: nothing new diverged" + (f" ({known} known differences)" if known else "")
                    if known else "PASS: nothing diverged")
        new = [g for g in self.groups if not g.known]
        counted = (f"{len(new)} new root causes ({sum(len(g.members) for g in new)} divergences)"
                   if self.groups else f"{len(self.divergences)} divergences")
        return (f"FAIL: {counted}" + (f", {known} known" if known else "")
                + f", {sum(not r.met for r in self.corpus)} corpus traces not as expected, {len(self.errors)} errors")


# ---------------------------------------------------------------------------------------------
# Coverage


def command_label(argv: list[bytes]) -> str | None:
    """``XGROUP CREATE``, ``XADD``: the table's name of a command, None for unknown ones."""
    spec = table.lookup(argv)
    if spec is None:
        return None
    return spec.fullname.replace("|", " ").upper()


def add_coverage(coverage: dict[str, CommandCoverage], traces: Iterable[Trace]) -> None:
    """Count every command of ``traces``: calls, error replies, and the options it used."""
    for trace in traces:
        waiting: dict[int, list[str]] = {}
        for e in trace.events:
            if isinstance(e, (Call, Send)) and e.cmd is not None:
                label = command_label(e.cmd)
                if label is None:
                    continue
                entry = coverage.setdefault(label, CommandCoverage())
                entry.calls += 1
                entry.options.update(_options(label, e.cmd))
                if isinstance(e, Call):
                    entry.errors += _is_error(e.reply)
                else:
                    waiting.setdefault(e.c, []).append(label)
            elif isinstance(e, Recv) and waiting.get(e.c):
                coverage[waiting[e.c].pop(0)].errors += _is_error(e.reply)
            elif isinstance(e, Close):
                waiting.pop(e.c, None)


def _is_error(reply: Reply) -> bool:
    return isinstance(reply, Error)


def _options(label: str, argv: list[bytes]) -> list[str]:
    words = [a.upper().decode("latin-1") for a in argv[1:] if len(a) <= 16]
    found = [w for w in words if w in OPTION_WORDS]
    if label == "XADD":  # which kind of ID: * / ms-* / explicit
        ids = [a for a in argv[2:] if a == b"*" or a.endswith(b"-*")]
        found.append("ID *" if b"*" in ids else "ID ms-*" if ids else "ID explicit")
    return found


# ---------------------------------------------------------------------------------------------
# The steps of the job


def check_corpora(report: Report, folders: list[Path], progress: Progress, dialect: str | None = None) -> list[Trace]:
    """Check every bundled trace on the model (dialect from each header), or only those of ``dialect``;
    returns the traces checked."""
    files = find_traces(folders)
    traces: list[Trace] = []
    for n, f in enumerate(files, 1):
        if n % 50 == 0 or n == len(files):
            progress(f"corpus: {n}/{len(files)} traces read")
        try:
            trace = load(f)
        except TraceError as e:
            report.errors.append(str(e))
            continue
        if dialect is not None and _dialect_name(trace) != dialect:
            continue
        try:
            verdict = check_trace(trace)
        except UnknownDialect as e:
            verdict = Verdict("unsupported", len(trace.events), message=str(e))
        except Exception as e:  # a defect in the model or the checker: report it, go on
            where = traceback.extract_tb(e.__traceback__)[-1]
            report.errors.append(f"{f}: internal error: {type(e).__name__}: {e} "
                                 f"({Path(where.filename).name}:{where.lineno})")
            continue
        traces.append(trace)
        expected, event = expectation(trace, "auto")
        # A bundled trace of a feature the model does not cover yet (the replication of redis-6.2 and
        # valkey-9.1, FAILOVER's handover) says nothing about the target: listed as unsupported, not failed.
        met = meets(verdict, expected, event) or (verdict.status == "unsupported" and expected == "conform")
        relative = str(f.relative_to(CORPUS_DIR)) if f.is_relative_to(CORPUS_DIR) else str(f)
        report.corpus.append(TraceResult(relative, verdict.status, expected, met, verdict.events,
                                         "" if verdict.status == "conform" else verdict.describe()))
        if not met:
            command = _diverging_command(trace, verdict)
            report.divergences.append(Divergence("corpus", command, verdict.describe(), relative,
                                                 detail=f"expected {expected}"))
    return traces


def _dialect_name(trace: Trace) -> str | None:
    try:
        return trace_dialect(trace).name
    except UnknownDialect:
        return None


def _diverging_command(trace: Trace, verdict: Verdict) -> str:
    """The command a verdict is about: the one its witness's divergence names, else the one at its event."""
    divergence = verdict.witness.divergence if verdict.witness is not None else None
    if divergence is not None and divergence.argv:
        return command_label(divergence.argv) or divergence.argv[0].decode("latin-1", "replace").upper()
    return _command_at(trace, verdict.event)


def _command_at(trace: Trace, event: int | None) -> str:
    """The command a (1-based) event index is about: its own, or the one its recv answers."""
    if event is None or not 0 < event <= len(trace.events):
        return "?"
    e = trace.events[event - 1]
    if isinstance(e, (Call, Send)) and e.cmd is not None:
        return command_label(e.cmd) or e.cmd[0].decode("latin-1", "replace").upper()
    if isinstance(e, Recv):
        waiting: list[Send] = []
        for earlier in trace.events[:event - 1]:
            if isinstance(earlier, Send) and earlier.c == e.c:
                waiting.append(earlier)
            elif isinstance(earlier, Recv) and earlier.c == e.c and waiting:
                waiting.pop(0)
        if waiting and waiting[0].cmd is not None:
            return command_label(waiting[0].cmd) or "?"
    return "?"


def run_campaign_hook(url: str, dialect: str | None, allow_flush: bool, budget: float, out: Path,
                      progress: Progress, seed: int = 0) -> dict[str, Any] | None:
    """The differential fuzzer's campaign (:func:`xspec.traces.fuzz.fuzzer.run_campaign`) on ``url`` for ``budget`` s.

    Returns its summary: the campaign's figures, ``divergences`` (dicts with
    ``command``, ``rule``, ``message``, ``trace``, ``detail``) and ``coverage``
    (steps per command name); None when the fuzzer is not installed.
    """
    try:
        from xspec.traces.fuzz.fuzzer import CampaignProgress, run_campaign
    except ImportError:
        return None
    last = [0.0]

    def show(p: CampaignProgress) -> None:
        if p.elapsed - last[0] >= 5:
            last[0] = p.elapsed
            progress(f"fuzz: {p.steps} steps, {p.cases} cases, {p.findings} divergences, "
                     f"{p.elapsed:.0f}/{budget:.0f} s")

    result = run_campaign([url], dialect=dialect, budget_s=budget, out=out, progress=show, allow_flush=allow_flush,
                          seed=seed)
    return {"seed": result.seed, "cases": result.cases, "steps": result.steps, "seconds": round(result.elapsed, 1),
            "steps per second": round(result.steps_per_second()), "verdicts": dict(result.statuses),
            "report": str(result.report_path) if result.report_path else None,
            "skipped": list(result.skipped),
            "divergences": [{"command": f.signature.command, "rule": ", ".join(f.rules) or None,
                             "message": f.signature.text(), "trace": str(f.path) if f.path else None,
                             "detail": f.verdict.describe()} for f in result.divergences],
            # Seen once, then not again on its reruns (timing on a loaded host, a server's own
            # randomness): listed so that nothing the campaign saw is dropped, but not a failure.
            "unreproduced": [{"command": f.signature.command, "message": f.signature.text(),
                              "trace": str(f.path) if f.path else None}
                             for f in result.findings if not f.confirmed],
            "coverage": dict(result.coverage)}


@contextlib.contextmanager
def default_target(progress: Progress) -> Iterator[tuple[str, str]]:
    """(URL, description) of the target to use when none is given; see the module docstring."""
    from xspec.traces.harness.servers import ReferenceProcess
    try:
        reference = ReferenceProcess().start()
    except (RuntimeError, OSError):
        pass
    else:
        pid = reference.proc.pid if reference.proc else "?"
        progress(f"started the reference server (xspec serve) on 127.0.0.1:{reference.port} (pid {pid})")
        try:
            yield f"redis://127.0.0.1:{reference.port}", "the reference server (xspec serve, embedded)"
        finally:
            reference.stop()
        return
    from xspec.traces.scenarios.runner import RedisProcess
    try:
        server = RedisProcess().start()
    except (FileNotFoundError, RuntimeError, OSError):
        yield "model:redis-7.0", "the model alone (no reference server, no redis-server on PATH)"
        return
    progress(f"started {server.binary} on 127.0.0.1:{server.port} (pid {server.proc.pid if server.proc else '?'})")
    try:
        yield f"redis://127.0.0.1:{server.port}", f"a private redis-server from PATH ({server.binary})"
    finally:
        server.stop()


def run_check(target_url: str | None, dialect: str | None, budget: float, report_dir: Path,
              allow_flush: bool = False, progress: Progress | None = None,
              corpora: list[Path] | None = None, seed: int = 0, baseline: Iterable[RootCause] = (),
              page_writer: PageWriter | None = None) -> Report:
    """The whole job; returns the report, its divergences grouped by root cause (also written to
    ``report_dir``). ``baseline``: root causes known to differ on purpose; ``page_writer``: see
    :func:`group_report`."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        explicit_default = target_url is None
        if target_url is None:
            target_url, description = stack.enter_context(default_target(say))
            allow_flush = True  # a server of the job's own
        else:
            description = target_url
        report = Report(target=target_url, description=description, dialect=dialect or "auto",
                        started=datetime.now(UTC).isoformat(timespec="seconds"))
        target = _open_target(report, target_url, dialect, allow_flush, say)
        if target is not None:
            stack.callback(target.close)
        # A live server's job replays the bundled corpora of its dialect only: the others say nothing
        # about it. The model as the target (and the job's own server) replays them all.
        only = target.dialect if target is not None and not explicit_default and corpora is None else None
        if only is not None:
            report.corpus_note = f"the bundled corpora of {only}, the target's dialect"
        traces = check_corpora(report, corpora or [CORPUS_DIR], say, only)
        add_coverage(report.coverage, traces)
        if target is not None:
            _campaign(report, target, target_url, dialect, allow_flush, budget - (time.monotonic() - started),
                      report_dir, say, seed)
    if report.divergences:
        say(f"grouping {len(report.divergences)} divergences by root cause")
    group_report(report, report_dir, baseline, page_writer)
    report.seconds = round(time.monotonic() - started, 1)
    write_report(report, report_dir)
    return report


def _open_target(report: Report, url: str, dialect: str | None, allow_flush: bool,
                 say: Progress) -> Any:
    """The target to fuzz, its dialect known (detected from INFO for a live server); None for the model
    itself, or when it cannot be opened (the reason goes to the report's errors)."""
    if url.startswith("model:") and "+mutant:" not in url:
        report.campaign_note = "no campaign: the target is the model itself"
        return None
    try:
        target = parse_target(url, dialect=dialect, allow_flush=allow_flush)
    except TargetError as e:
        report.errors.append(str(e))
        return None
    report.dialect = target.dialect
    if isinstance(target, LiveTarget):
        report.description += f" ({target.server.name} {target.server.version}; dialect {target.dialect_source})"
        say(f"{url} is {target.server.name} {target.server.version}: dialect {target.dialect}, "
            f"{target.dialect_source}")
    return target


def _campaign(report: Report, target: Any, url: str, dialect: str | None, allow_flush: bool, budget: float,
              report_dir: Path, say: Progress, seed: int) -> None:
    """Fuzz the opened target for the rest of the budget; what it finds goes into the report."""
    if budget <= 0:
        report.campaign_note = "no campaign: the corpus replay used the whole budget"
        return
    say(f"fuzzing {url} (dialect {target.dialect}) for {budget:.0f} s")
    try:
        summary = run_campaign_hook(url, dialect, allow_flush, budget, report_dir / "divergences", say, seed)
    except TargetError as e:
        report.errors.append(str(e))
        return
    if summary is None:
        report.campaign_note = "no campaign: the differential fuzzer (xspec.traces.fuzz.fuzzer) is not installed"
        return
    report.campaign = {k: v for k, v in summary.items()
                       if k not in ("divergences", "coverage", "skipped", "unreproduced")}
    report.unreproduced = [Divergence("fuzz", str(d.get("command", "?")), str(d.get("message", "")), d.get("trace"))
                           for d in summary.get("unreproduced", [])]
    report.skipped.extend(summary.get("skipped", []))
    for d in summary.get("divergences", []):
        report.divergences.append(Divergence("fuzz", str(d.get("command", "?")), str(d.get("message", "")),
                                             d.get("trace"), d.get("rule"), str(d.get("detail", ""))))
    for name, steps in (summary.get("coverage") or {}).items():
        label = command_label([w.encode("latin-1", "replace") for w in str(name).split(" ")[:2]]) or "(unknown commands)"
        report.coverage.setdefault(label, CommandCoverage()).fuzzed += steps


# ---------------------------------------------------------------------------------------------
# The report: divergences grouped by root cause


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


def _diagnose(d: Divergence, report: Report, report_dir: Path) -> Diagnosis:
    """A divergence's root cause, its trace checked again (from its message when it cannot be)."""
    path = trace_file(d, report_dir)
    if path is not None:
        try:
            diagnosis = diagnose(load(path), None if report.dialect == "auto" else report.dialect)
        except (TraceError, ValueError):
            return _fallback(d)
        diagnosis.trace = str(path)
        return diagnosis
    return _fallback(d)


def group_report(report: Report, report_dir: Path, baseline: Iterable[RootCause] = (),
                 page_writer: PageWriter | None = None) -> list[RootCauseGroup]:
    """Group the report's divergences by root cause into ``report.groups`` (new groups first).

    With ``page_writer`` (the viewer's: ``xspec check`` passes it), each group's smallest trace is
    written as a page under ``report_dir/views/`` and the group links to it.
    """
    report.groups = group_by_root_cause(((d, _diagnose(d, report, report_dir)) for d in report.divergences),
                                        baseline)
    if page_writer is not None:
        for n, g in enumerate(report.groups, 1):
            if g.smallest.trace is None:
                continue
            page = report_dir / VIEWS / f"{n:02d}-{_slug(g.cause)}.html"
            try:
                page_writer(Path(g.smallest.trace), page)
            except (TraceError, ValueError, OSError):
                continue
            g.view = page.relative_to(report_dir).as_posix()
    return report.groups


def _slug(cause: RootCause) -> str:
    text = f"{cause.command}-{cause.rule}-{cause.difference}".lower()
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-")[:60]


def _rule_text(rule: str) -> str:
    found = load_index().rules.get(rule) if rule else None
    return found.text if found is not None else ""


def where(d: Diagnosis) -> str:
    """Where the trace's reply first differs from the model's (``groups/[0]/lag``), or ""."""
    if d.got is None or d.allowed_reply is None:
        return ""
    from xspec.traces.fuzz.fuzzer import reply_difference
    return reply_difference(d.got, d.allowed_reply)


def _members(g: RootCauseGroup) -> list[str]:
    return [d.trace or "(no trace)" for d in g.diagnoses]


def _others(g: RootCauseGroup) -> list[str]:
    """The group's traces other than its smallest."""
    return sorted(set(_members(g)) - {g.smallest.trace or ""})


def _coverage_rows(report: Report) -> list[tuple[str, int, int, int, str]]:
    return [(label, c.calls, c.errors, c.fuzzed, ", ".join(f"{o} ×{n}" for o, n in sorted(c.options.items())))
            for label, c in sorted(report.coverage.items())]


def _corpus_line(report: Report) -> str:
    counts = Counter(r.status for r in report.corpus)
    return ((f"{report.corpus_note}: " if report.corpus_note else "") + f"{len(report.corpus)} traces: " + ", ".join(f"{counts[s]} {s}" for s in sorted(counts))
            + f"; {sum(not r.met for r in report.corpus)} not as their header expects")


def _campaign_line(report: Report) -> str:
    return (", ".join(f"{k}: {v}" for k, v in report.campaign.items()) if report.campaign else "") \
        or report.campaign_note or "none"


def _sections(report: Report) -> list[tuple[str, str, list[RootCauseGroup]]]:
    """(title, anchor, groups): the new groups always, the known ones when there are any."""
    new = [g for g in report.groups if not g.known]
    known = [g for g in report.groups if g.known]
    return [("Divergences by root cause", "groups", new),
            *([("Known differences (baseline)", "known", known)] if known else [])]


def to_markdown(report: Report) -> str:
    lines = [f"# xspec conformance report: {report.verdict}", "",
             f"- target: `{report.target}`: {report.description}",
             f"- dialect: {report.dialect}", f"- started: {report.started}, took {report.seconds} s",
             f"- corpus replayed on the model: {_corpus_line(report)}",
             f"- fuzz campaign: {_campaign_line(report)}", ""]
    if report.errors:
        lines += ["## Errors", "", *[f"- {e}" for e in report.errors], ""]
    for title, _, chosen in _sections(report):
        lines += [f"## {title}", ""]
        if not chosen:
            lines += ["None.", ""]
            continue
        lines += ["| # | command | first rule | difference | divergences | smallest trace | page |",
                  "| --- | --- | --- | --- | ---: | --- | --- |"]
        for n, g in enumerate(chosen, 1):
            lines.append(f"| {n} | {g.cause.command} | {g.cause.rule or '-'} | {g.cause.difference} | "
                         f"{len(g.members)} | {g.smallest.trace or '-'} | {g.view or '-'} |")
        lines.append("")
        for n, g in enumerate(chosen, 1):
            s = g.smallest
            lines += [f"### {n}. {g.cause.text()} ({len(g.members)})", ""]
            if _rule_text(g.cause.rule):
                lines += [f"> **{g.cause.rule}** " + _rule_text(g.cause.rule).replace("\n", " "), ""]
            if where(s):
                lines += [f"differs at: `{where(s)}`", ""]
            lines += ["```", f"trace says:   {s.says if s.says is not None else '(no reply)'}",
                      *[f"model allows: {a}" for a in s.allows or ["(no reply)"]], "```", ""]
            lines += [f"smallest trace: `{s.trace}` ({s.events} events)" + (f"; page: {g.view}" if g.view else ""), ""]
            if _others(g):
                lines += ["also: " + ", ".join(f"`{t}`" for t in _others(g)), ""]
    lines += ["## Coverage: commands and options exercised", "",
              "| command | corpus calls | corpus errors | fuzz steps | options (corpus) |",
              "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {label} | {calls} | {errors} | {fuzzed} | {options} |"
              for label, calls, errors, fuzzed, options in _coverage_rows(report)]
    lines.append("")
    if report.unreproduced:
        lines += ["## Divergences that did not happen again", "", UNREPRODUCED, "",
                  *[f"- {d.command}: {d.message} (`{d.trace or '-'}`)" for d in report.unreproduced], ""]
    if report.skipped:
        lines += ["## Checks skipped", "", *[f"- {s}" for s in report.skipped], ""]
    return "\n".join(lines)


UNREPRODUCED = ("The campaign saw these once; rerun on the target, the same steps no longer diverged "
                "(timing on a loaded host, or the server's own randomness). They do not fail the check; "
                "replay their traces with `xspec replay` to look at them.")


def _html_group(g: RootCauseGroup) -> str:
    e = html.escape
    s = g.smallest
    allows = "".join(f"<pre>{e(a)}</pre>" for a in s.allows) or "<pre>(no reply)</pre>"
    rule = _rule_text(g.cause.rule)
    others = _others(g)
    view = f' · <a class="view" href="{e(g.view)}">step through it (xspec view)</a>' if g.view else ""
    return (f'<section class="group" data-key="{e(json.dumps(g.cause.key()))}">'
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


def to_html(report: Report) -> str:
    e = html.escape
    parts = [f"<h1 style=\"color:{'#1a7f37' if report.passed else '#cf222e'}\">{e(report.verdict)}</h1>",
             f"<p>Target <code>{e(report.target)}</code>: {e(report.description)}; dialect {e(report.dialect)}; "
             f"started {e(report.started)}, took {report.seconds} s.</p>",
             f"<p>Corpus replayed on the model: {e(_corpus_line(report))}. "
             f"Fuzz campaign: {e(_campaign_line(report))}.</p>"]
    if report.errors:
        parts.append('<h2 id="errors">Errors</h2><ul class="errors">'
                     + "".join(f"<li>{e(x)}</li>" for x in report.errors) + "</ul>")
    for title, anchor, chosen in _sections(report):
        parts.append(f'<h2 id="{anchor}">{title}</h2>' + ("".join(map(_html_group, chosen)) or "<p>None.</p>"))
    rows = "".join(f"<tr><td>{e(label)}</td><td>{calls}</td><td>{errors}</td><td>{fuzzed}</td><td>{e(options)}</td></tr>"
                   for label, calls, errors, fuzzed, options in _coverage_rows(report))
    parts.append('<h2 id="coverage">Coverage: commands and options exercised</h2><table><tr><th>command</th>'
                 "<th>corpus calls</th><th>corpus errors</th><th>fuzz steps</th><th>options (corpus)</th></tr>"
                 + rows + "</table>")
    if report.unreproduced:
        parts.append(f'<h2 id="unreproduced">Divergences that did not happen again</h2><p>{e(UNREPRODUCED)}</p><ul>'
                     + "".join(f"<li>{e(d.command)}: {e(d.message)} (<code>{e(d.trace or '-')}</code>)</li>"
                               for d in report.unreproduced) + "</ul>")
    if report.skipped:
        parts.append("<h2>Checks skipped</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in report.skipped) + "</ul>")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>xspec conformance report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}pre{{margin:2px 0;white-space:pre-wrap}}
.group{{border:1px solid #d0d7de;border-radius:6px;padding:4px 12px;margin:10px 0}}
.side{{display:flex;gap:10px}}.side>div{{flex:1;border-radius:6px;padding:4px 8px}}
.says{{background:#ffebe9}}.allows{{background:#dafbe1}}.rule{{color:#57606a;margin:4px 0 8px 0}}
.errors li{{color:#cf222e}}</style></head>
<body>{''.join(parts)}</body></html>
"""


def to_json(report: Report) -> dict[str, Any]:
    data = asdict(replace(report, groups=[]))
    data["coverage"] = {label: {"corpus calls": c.calls, "corpus errors": c.errors, "fuzz steps": c.fuzzed,
                                "options": dict(c.options)} for label, c in sorted(report.coverage.items())}
    data["passed"] = report.passed
    data["verdict"] = report.verdict
    data["groups"] = [{
        "key": g.cause.key(), "command": g.cause.command, "rule": g.cause.rule, "difference": g.cause.difference,
        "known": g.known, "divergences": len(g.members), "rule_text": _rule_text(g.cause.rule),
        "smallest": {"trace": g.smallest.trace, "events": g.smallest.events, "trace_says": g.smallest.says,
                     "differs_at": where(g.smallest), "model_allows": g.smallest.allows, "view": g.view},
        "traces": _members(g)} for g in report.groups]
    return data


def to_junit(report: Report) -> str:
    """One test case per corpus trace and one per root cause found on the target.

    A corpus trace that is not as its header expects fails in the corpus suite (it is about the
    model and the corpus, not the target); the root-cause suite holds the groups with a divergence
    of the target, a group in the baseline as skipped.
    """
    suites = ET.Element("testsuites", name="xspec check", time=str(report.seconds))
    corpus = ET.SubElement(suites, "testsuite", name="corpus on the model", tests=str(len(report.corpus)),
                           failures=str(sum(not r.met for r in report.corpus)))
    for r in report.corpus:
        case = ET.SubElement(corpus, "testcase", classname="corpus", name=r.path)
        if not r.met:
            ET.SubElement(case, "failure", message=f"expected {r.expected}, got {r.status}").text = r.message
    groups = [g for g in report.groups if any(d.source != "corpus" for d in g.members)]
    new = [g for g in groups if not g.known]
    suite = ET.SubElement(suites, "testsuite", name=f"root causes on {report.target}", tests=str(max(1, len(groups))),
                          failures=str(len(new)), errors=str(len(report.errors)), skipped=str(len(groups) - len(new)))
    for error in report.errors:
        case = ET.SubElement(suite, "testcase", classname="error", name=error[:80])
        ET.SubElement(case, "error", message=error)
    for g in groups:
        s = g.smallest
        case = ET.SubElement(suite, "testcase", classname=f"divergence.{g.cause.command.replace(' ', '_')}",
                             name=g.cause.text())
        body = "\n".join([*([f"differs at: {where(s)}"] if where(s) else []), f"trace says:   {s.says or '(no reply)'}",
                          *[f"model allows: {a}" for a in s.allows], f"smallest trace: {s.trace} ({s.events} events)",
                          *([f"page: {g.view}"] if g.view else []), f"{len(g.members)} divergences:", *_members(g)])
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


def write_report(report: Report, folder: Path) -> None:
    """The report's four forms, with its groups (:func:`group_report`), into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(to_markdown(report), encoding="utf-8")
    (folder / "report.html").write_text(to_html(report), encoding="utf-8")
    (folder / "report.json").write_text(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    (folder / "junit.xml").write_text(to_junit(report), encoding="utf-8")
