"""``xspec check``: the main job. Replay the bundled corpora on the model, fuzz a target, report.

1. Every bundled trace (``traces/<server>-<version>/...``) is checked against
   the model of the dialect its header names; each must meet its header's
   expectation (conform, unless it states otherwise).
2. A differential fuzz campaign runs against the target for the rest of the
   budget (:func:`xspec.traces.fuzz.fuzzer.run_campaign`); every divergence comes back
   as a minimal trace, under ``<report>/divergences/``.
3. The report: the target, a coverage table (which commands and options the
   corpus and the campaign exercised, and how often they failed), every
   divergence with its minimal trace, and the verdict. It is printed and
   written to the report folder as ``report.md``, ``report.html``,
   ``report.json`` and ``junit.xml`` (one test case per corpus trace and per
   divergence, for CI systems).

The exit status is 0 only if nothing diverged. Without ``--target`` the job
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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from xspec.spec import commands as table
from xspec.spec.dialect import UnknownDialect
from xspec.spec.resp import Error, Reply
from xspec.spec.trace_format import Call, Close, Recv, Send, Trace, TraceError, find_traces, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import Verdict, check_trace
from xspec.traces.check.report import expectation, meets
from xspec.traces.harness.targets import LiveTarget, TargetError, parse_target

DEFAULT_BUDGET = 60.0
DEFAULT_REPORT = Path("xspec-report")

OPTION_WORDS = frozenset(
    """NOMKSTREAM MAXLEN MINID LIMIT COUNT BLOCK STREAMS NOACK GROUP IDLE TIME RETRYCOUNT FORCE JUSTID LASTID
    FULL MKSTREAM ENTRIESREAD ENTRIESADDED MAXDELETEDID = ~""".split())
"""Arguments that are options (the coverage table counts them per command)."""

Progress = Callable[[str], None]


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
    divergences: list[Divergence] = field(default_factory=list)
    coverage: dict[str, CommandCoverage] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.divergences and not self.errors and all(r.met for r in self.corpus)

    @property
    def verdict(self) -> str:
        if self.passed:
            return "PASS: nothing diverged"
        return (f"FAIL: {len(self.divergences)} divergences, "
                f"{sum(not r.met for r in self.corpus)} corpus traces not as expected, {len(self.errors)} errors")


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


def check_corpora(report: Report, folders: list[Path], progress: Progress) -> list[Trace]:
    """Check every bundled trace on the model (dialect from each header); returns the traces read."""
    files = find_traces(folders)
    traces: list[Trace] = []
    for n, f in enumerate(files, 1):
        if n % 50 == 0 or n == len(files):
            progress(f"corpus: {n}/{len(files)} traces checked")
        try:
            trace = load(f)
        except TraceError as e:
            report.errors.append(str(e))
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
              corpora: list[Path] | None = None, seed: int = 0) -> Report:
    """The whole job; returns the report (also written to ``report_dir``)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if target_url is None:
            target_url, description = stack.enter_context(default_target(say))
            allow_flush = True  # a server of the job's own
        else:
            description = target_url
        report = Report(target=target_url, description=description, dialect=dialect or "auto",
                        started=datetime.now(UTC).isoformat(timespec="seconds"))
        traces = check_corpora(report, corpora or [CORPUS_DIR], say)
        add_coverage(report.coverage, traces)
        _campaign(report, target_url, dialect, allow_flush, budget - (time.monotonic() - started), report_dir, say,
                  seed)
    report.seconds = round(time.monotonic() - started, 1)
    write_report(report, report_dir)
    return report


def _campaign(report: Report, url: str, dialect: str | None, allow_flush: bool, budget: float, report_dir: Path,
              say: Progress, seed: int) -> None:
    if url.startswith("model:") and "+mutant:" not in url:
        report.campaign_note = "no campaign: the target is the model itself"
        return
    try:
        target = parse_target(url, dialect=dialect, allow_flush=allow_flush)
    except TargetError as e:
        report.errors.append(str(e))
        return
    try:
        report.dialect = target.dialect
        if isinstance(target, LiveTarget):
            report.description += f" ({target.server.name} {target.server.version}; dialect {target.dialect_source})"
            say(f"{url} is {target.server.name} {target.server.version}: dialect {target.dialect}, "
                f"{target.dialect_source}")
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
        report.campaign = {k: v for k, v in summary.items() if k not in ("divergences", "coverage", "skipped")}
        report.skipped.extend(summary.get("skipped", []))
        for d in summary.get("divergences", []):
            report.divergences.append(Divergence("fuzz", str(d.get("command", "?")), str(d.get("message", "")),
                                                 d.get("trace"), d.get("rule"), str(d.get("detail", ""))))
        for name, steps in (summary.get("coverage") or {}).items():
            label = command_label([w.encode("latin-1", "replace") for w in str(name).split(" ")[:2]]) or "(unknown commands)"
            report.coverage.setdefault(label, CommandCoverage()).fuzzed += steps
    finally:
        target.close()


# ---------------------------------------------------------------------------------------------
# Writing the report


def _coverage_rows(report: Report) -> list[tuple[str, int, int, int, str]]:
    return [(label, c.calls, c.errors, c.fuzzed, ", ".join(f"{o} ×{n}" for o, n in sorted(c.options.items())))
            for label, c in sorted(report.coverage.items())]


def _corpus_counts(report: Report) -> Counter[str]:
    return Counter(r.status for r in report.corpus)


def to_markdown(report: Report) -> str:
    counts = _corpus_counts(report)
    lines = [f"# xspec conformance report: {report.verdict}", "",
             f"- target: `{report.target}`: {report.description}",
             f"- dialect: {report.dialect}", f"- started: {report.started}, took {report.seconds} s", "",
             "## Corpus replayed on the model", "",
             f"{len(report.corpus)} traces: " + ", ".join(f"{counts[s]} {s}" for s in sorted(counts)) +
             f"; {sum(not r.met for r in report.corpus)} not as their header expects", ""]
    lines += ["## Fuzz campaign", ""]
    if report.campaign is not None:
        lines += [", ".join(f"{k}: {v}" for k, v in report.campaign.items()), ""]
    if report.campaign_note:
        lines += [report.campaign_note, ""]
    lines += ["## Divergences", ""]
    if not report.divergences:
        lines += ["None.", ""]
    else:
        lines += ["| # | from | command | rule | what | trace |", "| --- | --- | --- | --- | --- | --- |"]
        for n, d in enumerate(report.divergences, 1):
            what = d.message.split("\n")[0].replace("|", "\\|")
            lines.append(f"| {n} | {d.source} | {d.command} | {d.rule or ''} | {what} | {d.trace or ''} |")
        lines.append("")
        for n, d in enumerate(report.divergences, 1):
            lines += [f"### {n}. {d.command}", "", "```", d.message, *([d.detail] if d.detail else []), "```", ""]
    lines += ["## Coverage: commands and options exercised", "",
              "| command | corpus calls | corpus errors | fuzz steps | options (corpus) |", "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {label} | {calls} | {errors} | {fuzzed} | {options} |"
              for label, calls, errors, fuzzed, options in _coverage_rows(report)]
    lines.append("")
    if report.skipped:
        lines += ["## Checks skipped", "", *[f"- {s}" for s in report.skipped], ""]
    if report.errors:
        lines += ["## Errors", "", *[f"- {e}" for e in report.errors], ""]
    return "\n".join(lines)


def to_html(report: Report) -> str:
    e = html.escape
    counts = _corpus_counts(report)
    rows = "".join(f"<tr><td>{e(label)}</td><td>{calls}</td><td>{errors}</td><td>{fuzzed}</td><td>{e(options)}</td></tr>"
                   for label, calls, errors, fuzzed, options in _coverage_rows(report))
    divergences = "".join(
        f"<tr><td>{n}</td><td>{e(d.source)}</td><td>{e(d.command)}</td><td>{e(d.rule or '')}</td>"
        f"<td><pre>{e(d.message)}</pre></td><td>{e(d.trace or '')}</td></tr>"
        for n, d in enumerate(report.divergences, 1)) or "<tr><td colspan=6>None.</td></tr>"
    campaign = e(", ".join(f"{k}: {v}" for k, v in (report.campaign or {}).items()) or report.campaign_note)
    colour = "#1a7f37" if report.passed else "#cf222e"
    lists = "".join(f"<h2>{title}</h2><ul>{''.join(f'<li>{e(x)}</li>' for x in items)}</ul>"
                    for title, items in (("Checks skipped", report.skipped), ("Errors", report.errors)) if items)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>xspec conformance report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}pre{{margin:0}}</style></head>
<body><h1 style="color:{colour}">{e(report.verdict)}</h1>
<p>Target <code>{e(report.target)}</code>: {e(report.description)}; dialect {e(report.dialect)};
started {e(report.started)}, took {report.seconds} s.</p>
<h2>Corpus replayed on the model</h2><p>{len(report.corpus)} traces:
{e(", ".join(f"{counts[s]} {s}" for s in sorted(counts)))}</p>
<h2>Fuzz campaign</h2><p>{campaign}</p>
<h2>Divergences</h2><table><tr><th>#</th><th>from</th><th>command</th><th>rule</th><th>what</th><th>trace</th></tr>
{divergences}</table>
<h2>Coverage: commands and options exercised</h2>
<table><tr><th>command</th><th>corpus calls</th><th>corpus errors</th><th>fuzz steps</th><th>options (corpus)</th>
</tr>{rows}</table>{lists}
</body></html>
"""


def to_json(report: Report) -> dict[str, Any]:
    data = asdict(report)
    data["coverage"] = {label: {"corpus calls": c.calls, "corpus errors": c.errors, "fuzz steps": c.fuzzed,
                                "options": dict(c.options)} for label, c in sorted(report.coverage.items())}
    data["passed"] = report.passed
    data["verdict"] = report.verdict
    return data


def to_junit(report: Report) -> str:
    suites = ET.Element("testsuites", name="xspec check", time=str(report.seconds))
    corpus = ET.SubElement(suites, "testsuite", name="corpus on the model", tests=str(len(report.corpus)),
                           failures=str(sum(not r.met for r in report.corpus)))
    for r in report.corpus:
        case = ET.SubElement(corpus, "testcase", classname="corpus", name=r.path)
        if not r.met:
            ET.SubElement(case, "failure", message=f"expected {r.expected}, got {r.status}").text = r.message
    fuzz = [d for d in report.divergences if d.source == "fuzz"]
    campaign = ET.SubElement(suites, "testsuite", name=f"fuzz {report.target}", tests=str(max(1, len(fuzz))),
                             failures=str(len(fuzz)), errors=str(len(report.errors)))
    for d in fuzz:
        case = ET.SubElement(campaign, "testcase", classname="fuzz", name=f"{d.command}: {d.trace or ''}")
        ET.SubElement(case, "failure", message=d.message.split("\n")[0]).text = d.message + "\n" + d.detail
    if not fuzz:
        case = ET.SubElement(campaign, "testcase", classname="fuzz", name="campaign")
        if report.campaign is None:
            ET.SubElement(case, "skipped", message=report.campaign_note or "no campaign")
    for error in report.errors:
        case = ET.SubElement(campaign, "testcase", classname="error", name=error[:80])
        ET.SubElement(case, "error", message=error)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def write_report(report: Report, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(to_markdown(report), encoding="utf-8")
    (folder / "report.html").write_text(to_html(report), encoding="utf-8")
    (folder / "report.json").write_text(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    (folder / "junit.xml").write_text(to_junit(report), encoding="utf-8")
