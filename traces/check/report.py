"""``xspec replay``: check many traces against the model and print the conformance report; and the
grouping of divergences by root cause that ``xspec check``'s report uses.

One line per trace (conform, diverge, unsupported, inconclusive; for a
divergence the event, what the trace says there and what the model allows),
then the summary line ``N traces, M events: K conform, J diverge, U
unsupported, I inconclusive``. A trace's header may state what to expect
(``expect``: a verdict, for a dialect, at an event); the exit status is 0
only when every trace meets its expectation (conform when it states none)
and every file could be read.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from xspec.spec import commands as table
from xspec.spec.dialect import UnknownDialect
from xspec.spec.resp import Array, Error, Reply, show
from xspec.spec.rule_index import load_index
from xspec.spec.trace_format import Call, Recv, Send, Trace, TraceError, find_traces, load
from xspec.traces.check.checker import Verdict, check_trace, trace_dialect

STATUSES = ("conform", "diverge", "unsupported", "inconclusive")


def expected_status(header_expect: dict[str, Any] | None) -> str:
    """The verdict a header's ``expect`` states (conform when it states none)."""
    if not header_expect:
        return "conform"
    return str(header_expect.get("verdict", "conform"))


def expectation(trace: Trace, dialect: str) -> tuple[str, int | None]:
    """The verdict (and event, for a divergence) the header expects under ``dialect``.

    An ``expect`` stated for another dialect does not apply: the trace should
    then conform.
    """
    expect: dict[str, Any] | None = trace.header.expect
    if not expect:
        return "conform", None
    named = expect.get("dialect")
    if named is not None:
        try:
            used = trace_dialect(trace, dialect).name
        except UnknownDialect:
            used = None
        if used != named:
            return "conform", None
    event = expect.get("event")
    return expected_status(expect), event if isinstance(event, int) else None


def meets(verdict: Verdict, expected: str, event: int | None) -> bool:
    if verdict.status != expected:
        return False
    return expected != "diverge" or event is None or verdict.event == event


def run_replay(paths: list[Path], dialect: str, *, quiet: bool = False) -> int:
    """Check every trace under ``paths``; print one entry each and a summary. Returns the exit status."""
    for p in paths:
        if not p.exists():
            click.echo(f"error: {p}: no such file or folder", err=True)
            return 2
    files = find_traces(paths)
    if not files:
        click.echo("error: no trace files (*.jsonl, *.jsonl.gz) found", err=True)
        return 2
    counts = dict.fromkeys(STATUSES, 0)
    events = 0
    ok = True
    for f in files:
        try:
            trace = load(f)
        except TraceError as e:
            click.echo(f"error: {e}", err=True)
            ok = False
            continue
        try:
            verdict = check_trace(trace, dialect)
        except UnknownDialect as e:
            verdict = Verdict("unsupported", len(trace.events), message=str(e))
        except TraceError as e:
            click.echo(f"error: {e}", err=True)
            ok = False
            continue
        except Exception as e:  # a defect in the model or the checker: report it, go on
            where = traceback.extract_tb(e.__traceback__)[-1]
            click.echo(f"error: {f}: internal error: {type(e).__name__}: {e} "
                       f"({Path(where.filename).name}:{where.lineno})", err=True)
            ok = False
            continue
        events += verdict.events
        counts[verdict.status] += 1
        expected, event = expectation(trace, dialect)
        met = meets(verdict, expected, event)
        ok = ok and met
        if quiet and met and verdict.status == "conform":
            continue
        if met:
            mark = "" if expected == "conform" else "  (as expected)"
        else:
            at = f" at event {event}" if expected == "diverge" and event is not None else ""
            mark = f"  (expected {expected}{at})"
        first, *details = verdict.describe().split("\n")
        click.echo("\n".join([f"{f}: {first}{mark}", *details]))
    click.echo(f"{len(files)} traces, {events} events: {counts['conform']} conform, "
               f"{counts['diverge']} diverge, {counts['unsupported']} unsupported, "
               f"{counts['inconclusive']} inconclusive")
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# Divergences grouped by root cause (the forms of ``xspec check``'s report)
#
# Thirty divergences are often eight differences: the same command answering with the same
# wrong error text from many traces. A group's key is (command, the first rule id at the
# divergence, the class of difference); each group keeps its smallest trace.

DIFFERENCE_CLASSES = ("error text", "RESP type", "value", "missing reply", "extra reply", "not as expected")
"""How the trace's reply differs from what the model allows: another error text, another RESP
type, another value of the same type, no reply where the model replies, a reply where the
model gives none; ``not as expected`` for a corpus trace whose verdict is not its header's."""

PLUMBING = ("DISPATCH-", "CONN-", "PROP-", "INV-")
"""Rules every command passes through: never the first rule of a divergence."""


@dataclass(frozen=True, order=True)
class RootCause:
    """The key of a group of divergences."""

    command: str
    rule: str  # the first rule id at the divergence; "" when none was traced
    difference: str  # one of DIFFERENCE_CLASSES

    def key(self) -> list[str]:
        return [self.command, self.rule, self.difference]

    def text(self) -> str:
        return f"{self.command} · {self.rule or 'no rule traced'} · {self.difference}"


@dataclass
class Diagnosis:
    """One divergence's root cause, with what the trace says there and what the model allows."""

    cause: RootCause
    says: str | None
    allows: list[str]
    events: int  # the trace's length: the smallest trace of a group is the one shown
    trace: str | None
    got: Reply | None = None  # the reply that differs (inside an EXEC: the queued command's)
    allowed_reply: Reply | None = None  # the first reply the model allows there


def difference_class(got: Reply | None, allowed: Sequence[Reply]) -> str:
    """Which of :data:`DIFFERENCE_CLASSES` a divergence is (against the first reply allowed)."""
    if got is None:
        return "missing reply"
    if not allowed:
        return "extra reply"
    first = allowed[0]
    if isinstance(got, Error) and isinstance(first, Error):
        return "error text"
    if type(got) is not type(first):
        return "RESP type"
    return "value"


def first_rule_at(trace: Trace, verdict: Verdict, dialect: str | None = None, command: str | None = None) -> str:
    """The first rule the model's lines cite while it runs the diverging command (of ``command``'s
    families only, when given: the command inside an EXEC that answered differently).

    The trace is cut after the diverging event, whose reply becomes the one the model allows;
    that trace conforms, and ``xspec explain`` follows the model's lines through it.
    """
    from xspec.traces.check.explain import explain

    families: set[str] | None = None
    if command is not None:
        name = command.split()[0]
        families = {*load_index().families.get(command, frozenset()), *load_index().families.get(name, frozenset()),
                    name}

    if verdict.event is None or not verdict.allowed:
        return ""
    index = verdict.event - 1
    event = trace.events[index]
    if not isinstance(event, (Call, Recv)):
        return ""
    cut = Trace(trace.header, [*trace.events[:index], replace(event, reply=verdict.allowed[0])], trace.path)
    try:
        explanation = explain(cut, dialect)
    except Exception:  # the rule is a courtesy of the report; a model defect leaves it out
        return ""
    line = index + 2
    for step in reversed(explanation.steps):
        if step.line == line or any(s.line == line for s in step.served):
            for r in [*step.rules, *step.checked]:
                family = r.split("-", 1)[0]
                if not r.startswith(PLUMBING) and (families is None or family in families
                                                   or family.lower() not in table.COMMANDS):
                    return r
            return ""
    return ""


def command_of(argv: Sequence[bytes] | None) -> str:
    """``XGROUP CREATE``, ``XADD``: the command table's name, else the first word."""
    if not argv:
        return "?"
    spec = table.lookup(list(argv))
    if spec is not None:
        return spec.fullname.replace("|", " ").upper()
    return argv[0].decode("latin-1", "replace").upper()


def diagnose(trace: Trace, dialect: str | None = None, verdict: Verdict | None = None) -> Diagnosis:
    """The root cause of ``trace``'s divergence (checked again unless ``verdict`` is given)."""
    if verdict is None:
        verdict = check_trace(trace, dialect)
    divergence = verdict.witness.divergence if verdict.witness is not None else None
    if verdict.status != "diverge":
        command = "?"
        for e in trace.events:
            if isinstance(e, (Call, Send)) and e.cmd:
                command = command_of(e.cmd)
        return Diagnosis(RootCause(command, "", "not as expected"), None, [f"verdict {verdict.status}"],
                         len(trace.events), trace.path)
    argv = divergence.argv if divergence is not None else None
    if argv is None and verdict.event is not None:
        e = trace.events[verdict.event - 1]
        argv = e.cmd if isinstance(e, (Call, Send)) else None
    got = divergence.got if divergence is not None else verdict.got
    allowed = list(divergence.allowed) if divergence is not None else list(verdict.allowed)
    texts = list(divergence.allowed_text) if divergence is not None and divergence.allowed_text else (
        list(verdict.allowed_text) or [show(a) for a in allowed])
    command, inner = command_of(argv), None
    if command == "EXEC" and verdict.event is not None and got is not None and allowed:
        got, first, inner = inside_exec(trace, verdict.event - 1, got, allowed[0])
        allowed = [first]
        command = inner or command
    cause = RootCause(command, first_rule_at(trace, verdict, dialect, inner), difference_class(got, allowed))
    return Diagnosis(cause, None if divergence is None or divergence.got is None else show(divergence.got), texts,
                     len(trace.events), trace.path, got, allowed[0] if allowed else None)


def inside_exec(trace: Trace, index: int, got: Reply, allowed: Reply) -> tuple[Reply, Reply, str | None]:
    """For an EXEC whose reply differs: the first queued command's reply that differs (the trace's and
    the model's) and that command's name; the replies unchanged and None when that cannot be told."""
    if not (isinstance(got, Array) and isinstance(allowed, Array) and len(got.items) == len(allowed.items)):
        return got, allowed, None
    event = trace.events[index]
    client = getattr(event, "c", None)
    queued: list[list[bytes]] = []
    for e in trace.events[:index]:
        if isinstance(e, (Call, Send)) and e.c == client and e.cmd:
            word = e.cmd[0].upper()
            if word == b"MULTI":
                queued = []
            elif word not in (b"EXEC", b"DISCARD", b"WATCH", b"UNWATCH"):
                queued.append(e.cmd)
    if len(queued) != len(got.items):
        return got, allowed, None
    for cmd, g, a in zip(queued, got.items, allowed.items, strict=True):
        if g != a:
            return g, a, command_of(cmd)
    return got, allowed, None


@dataclass
class RootCauseGroup:
    """Divergences with one root cause; ``smallest`` is the one with the shortest trace."""

    cause: RootCause
    members: list[Any] = field(default_factory=list)  # the report's divergences
    diagnoses: list[Diagnosis] = field(default_factory=list)
    known: bool = False  # in the baseline: a difference accepted on purpose
    view: str | None = None  # the smallest trace's ``xspec view`` page, relative to the report

    @property
    def smallest(self) -> Diagnosis:
        return min(self.diagnoses, key=lambda d: (d.events, d.trace or ""))


def group_by_root_cause(items: Iterable[tuple[Any, Diagnosis]], baseline: Iterable[RootCause] = ()) -> list[RootCauseGroup]:
    """Divergences (each with its diagnosis) in groups by root cause, new groups first, then by key."""
    known = set(baseline)
    groups: dict[RootCause, RootCauseGroup] = {}
    for member, d in items:
        g = groups.setdefault(d.cause, RootCauseGroup(d.cause, known=d.cause in known))
        g.members.append(member)
        g.diagnoses.append(d)
    return sorted(groups.values(), key=lambda g: (g.known, g.cause))


class BaselineError(ValueError):
    """A baseline file that cannot be read as a list of root-cause keys."""


def load_baseline(path: Path) -> list[RootCause]:
    """``--baseline FILE``: a JSON list of keys, each ``[command, rule, difference]`` or an object with
    those three fields (the ``key`` of every group in ``report.json`` is one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BaselineError(f"{path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BaselineError(f"{path}: not JSON: {e}") from None
    if not isinstance(data, list):
        raise BaselineError(f"{path}: a baseline is a JSON list of [command, rule, difference] keys")
    out = []
    for n, item in enumerate(data, 1):
        if isinstance(item, dict):
            item = [item.get("command"), item.get("rule", ""), item.get("difference")]
        if not (isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)):
            raise BaselineError(f"{path}: item {n} is not a [command, rule, difference] key: {item!r}")
        if item[2] not in DIFFERENCE_CLASSES:
            raise BaselineError(f"{path}: item {n}: unknown class of difference {item[2]!r} "
                                f"(known: {', '.join(DIFFERENCE_CLASSES)})")
        out.append(RootCause(item[0], item[1], item[2]))
    return out
