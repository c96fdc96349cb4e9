"""``xspec fuzz``: the differential fuzzer. Generated command sequences run on every target; each
target's conversation is checked against the model; every divergence is shrunk to a minimal trace.

A campaign runs in *rounds*. In each round Hypothesis generates cases
(:func:`xspec.traces.fuzz.strategies.cases`: sequences over the whole stream API,
several clients, blocking reads, MULTI/EXEC, RESP2 and RESP3, valid and
invalid commands) from a seed derived from the campaign's seed, so the same
seed gives the same run against the model. Every case runs on every target
(``Target.run_steps``: a fresh, flushed and configured state; blocked
clients confirmed blocked before the next step), and each recorded trace is
checked for conformance exactly as ``xspec replay`` does
(:func:`xspec.traces.check.checker.check_trace`: ``*`` IDs, idle times and
timeouts explained by time windows, never masked). When two or more live
targets run, their replies are also compared with each other, step by step.

A divergence has a *signature*: the target, the command, the checker's
message and where the reply first differs. The first case showing a
signature not seen before ends the round's generation. Against the model,
Hypothesis shrinks it first (the test fails only for that signature); then
delta debugging finishes the job: drop chunks of steps, then make single
steps plainer (client 1, not pipelined, fewer arguments), keeping every
candidate that still diverges with the same signature. Against a live server
the minimal sequence is run again several times and reported only if it
diverges every time. Against live servers a case is checked on another
thread while the next one runs (the server's waits leave the time for it).

The checker reports the first divergence of a trace only, so a server with a
divergence in a common command (XADD's reply, say) would hide everything
behind it. Once a signature is known it is *looked past*: the diverging
reply is replaced by the one the model allows and the trace checked again,
so later cases find what comes after it.

Each finding is written under ``--out`` as the trace of its minimal run,
with ``expect`` in its header (``xspec replay`` then checks that it still
diverges where it did), and the campaign ends with a report that groups the
findings by command and by the spec rules on the path of the diverging
command (``report.md``, ``report.json``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from xspec.spec.environment import environment_matches
from xspec.spec.resp import Array, Bulk, Error, Int, Map, Reply, Set, Simple, show
from xspec.spec.trace_format import Call, Close, Recv, Send, Trace, dump
from xspec.traces.check.checker import Verdict, check_trace
from xspec.traces.fuzz.generate import Profile, Step, describe
from xspec.traces.fuzz.strategies import FUZZ_PROFILES, Case, cases, with_clients
from xspec.traces.harness.targets import Run, Target, parse_target

CASE_LENGTH = 100
"""Steps per generated case, at most (Hypothesis draws the length)."""

ROUND_EXAMPLES = 25
"""Cases Hypothesis generates per round (a round also ends at its first new divergence)."""

HYPOTHESIS_SHRINK_CALLS = 150
"""Runs Hypothesis may spend shrinking one divergence before delta debugging takes over."""

DDMIN_RUNS = 400
"""Runs delta debugging may spend on one divergence."""

DDMIN_RUNS_LIVE = 150
"""The same against live servers, where every run takes real time."""

CONFIRM_RUNS = 3
"""A live target's minimal sequence must diverge this many times in a row to be reported."""

# ---------------------------------------------------------------------------
# Divergences


@dataclass(frozen=True)
class Signature:
    """What a divergence is, to tell a new one from one already found (and a shrunk case from another bug)."""

    target: str
    command: str
    message: str  # the checker's message, up to its first colon
    where: str  # where the reply first differs from what the model allows

    def text(self) -> str:
        return f"{self.command}: {self.message}" + (f" ({self.where})" if self.where else "")


@dataclass
class Outcome:
    """One case on one target: the run and its verdict."""

    target: str
    run: Run
    verdict: Verdict
    signature: Signature | None  # None: no divergence
    first_event: int | None = None  # where the recorded trace first diverges (a masked divergence's event)
    masked: tuple[Signature, ...] = ()  # known divergences seen past on the way to ``signature``
    checked: Trace | None = None  # the trace the verdict is about: the run's, mended past ``masked``


@dataclass
class Finding:
    """A divergence, shrunk and (against live servers) confirmed."""

    signature: Signature
    steps: list[Step]
    config: dict[str, str]
    trace: Trace  # the minimal run's trace, ``expect`` in its header
    verdict: Verdict
    original_steps: int
    rules: list[str] = field(default_factory=list)
    confirmed: bool = True
    kind: str = "model"  # model: the target diverges from the model; cross: two targets differ
    path: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.signature.target, "command": self.signature.command, "kind": self.kind,
                "message": self.signature.message, "where": self.signature.where, "rules": self.rules,
                "steps": [describe(s) for s in self.steps], "original_steps": self.original_steps,
                "config": self.config, "confirmed": self.confirmed, "event": self.verdict.event,
                "detail": self.verdict.describe(), "trace": str(self.path) if self.path else None}


@dataclass
class CampaignProgress:
    """Where a campaign is, for progress displays."""

    steps: int
    total_steps: int | None
    elapsed: float
    budget_s: float | None
    cases: int
    findings: int


@dataclass
class CampaignResult:
    targets: list[str]
    dialect: str | None
    seed: int
    steps: int = 0  # steps generated (each ran on every target)
    cases: int = 0
    elapsed: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)  # verdicts of every checked trace
    unsupported: Counter[str] = field(default_factory=Counter)
    inconclusive: Counter[str] = field(default_factory=Counter)
    coverage: Counter[str] = field(default_factory=Counter)  # commands sent, by name
    skipped: list[str] = field(default_factory=list)
    report_path: Path | None = None

    @property
    def divergences(self) -> list[Finding]:
        return [f for f in self.findings if f.confirmed]

    @property
    def ok(self) -> bool:
        return not self.divergences

    def steps_per_second(self) -> float:
        return self.steps / self.elapsed if self.elapsed else 0.0

    def groups(self) -> dict[str, dict[str, list[Finding]]]:
        """Findings by command, then by the spec rules on the diverging command's path."""
        out: dict[str, dict[str, list[Finding]]] = {}
        for f in self.findings:
            rules = ", ".join(f.rules) or "(no rule traced)"
            out.setdefault(f.signature.command, {}).setdefault(rules, []).append(f)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"targets": self.targets, "dialect": self.dialect, "seed": self.seed, "steps": self.steps,
                "cases": self.cases, "elapsed_s": round(self.elapsed, 3),
                "steps_per_second": round(self.steps_per_second(), 1), "verdicts": dict(self.statuses),
                "unsupported": dict(self.unsupported), "inconclusive": dict(self.inconclusive),
                "coverage": dict(self.coverage), "skipped": self.skipped,
                "findings": [f.to_json() for f in self.findings], "ok": self.ok}

    def report(self) -> str:
        """The Markdown report: a summary, then the findings grouped by command and spec rule."""
        lines = ["# xspec fuzz report", "",
                 f"- targets: {', '.join(self.targets)}",
                 f"- dialect: {self.dialect or 'per target'}",
                 f"- seed {self.seed}: {self.cases} cases, {self.steps} steps in {self.elapsed:.1f} s "
                 f"({self.steps_per_second():,.0f} steps/s)",
                 "- verdicts: " + (", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items())) or "none"),
                 f"- divergences: {len(self.divergences)}"
                 + (f" (and {len(self.findings) - len(self.divergences)} that did not reproduce)"
                    if len(self.findings) > len(self.divergences) else "")]
        for reason, n in sorted(self.unsupported.items()):
            lines.append(f"- unsupported ({n} traces): {reason}")
        for reason, n in sorted(self.inconclusive.items()):
            lines.append(f"- inconclusive ({n} traces): {reason}")
        for reason in self.skipped:
            lines.append(f"- skipped: {reason}")
        for command, by_rule in sorted(self.groups().items()):
            lines += ["", f"## {command}"]
            for rules, findings in sorted(by_rule.items()):
                lines += ["", f"### rules: {rules}"]
                for f in findings:
                    status = "" if f.confirmed else " **(did not reproduce: not counted)**"
                    lines += ["", f"- {f.kind} divergence on `{f.signature.target}`: {f.signature.text()}{status}",
                              f"  - shrunk from {f.original_steps} to {len(f.steps)} steps; config {f.config or '{}'}"]
                    if f.path is not None:
                        lines.append(f"  - trace: `{f.path}`")
                    lines += ["", "```", *[describe(s) for s in f.steps], "", *f.verdict.describe().split("\n"),
                              "```"]
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Running and checking one case


def command_name(argv: Sequence[bytes]) -> str:
    """``XCLAIM``, ``XGROUP CREATE``: the command and, for containers, the subcommand."""
    name = argv[0].decode("latin-1").upper() if argv else "?"
    if name in ("XGROUP", "XINFO", "CONFIG", "CLIENT") and len(argv) > 1:
        name += " " + argv[1].decode("latin-1").upper()
    return name


def diverging_command(trace: Trace, event: int) -> list[bytes]:
    """The command whose reply (or lack of one) is event ``event`` (1-based) of ``trace``."""
    events = trace.events
    e = events[event - 1]
    if isinstance(e, (Call, Send)) and e.cmd is not None:
        return e.cmd
    if isinstance(e, Recv):
        sent: list[list[bytes]] = []
        for earlier in events[:event - 1]:
            if isinstance(earlier, Send) and earlier.c == e.c and earlier.cmd is not None:
                sent.append(earlier.cmd)
            elif isinstance(earlier, Recv) and earlier.c == e.c and sent:
                sent.pop(0)
            elif isinstance(earlier, Close) and earlier.c == e.c:
                sent.clear()
        if sent:
            return sent[0]
    for earlier in reversed(events[:event]):
        if isinstance(earlier, (Call, Send)) and earlier.cmd is not None:
            return earlier.cmd
    return []


def reply_difference(got: Reply | None, allowed: Reply | None) -> str:
    """A path to where two replies first differ (``[2]/[0]``, ``lag``), or what differs at the top."""
    if got is None or allowed is None:
        return "no reply" if got is None else ""
    if type(got) is not type(allowed):
        return f"{type(got).__name__} instead of {type(allowed).__name__}"
    if isinstance(got, Map) and isinstance(allowed, Map):
        for (gk, gv), (ak, av) in zip(got.pairs, allowed.pairs, strict=False):
            if gk != ak:
                return f"field {show(gk)} instead of {show(ak)}"
            if gv != av:
                label = gk.value.decode("latin-1") if isinstance(gk, Bulk) else show(gk)
                return f"{label}/{reply_difference(gv, av)}".rstrip("/")
        return "number of fields"
    if isinstance(got, (Array, Set)) and isinstance(allowed, (Array, Set)):
        for i, (g, a) in enumerate(zip(got.items, allowed.items, strict=False)):
            if g == a:
                continue
            previous = got.items[i - 1] if i else None
            named = i % 2 == 1 and isinstance(previous, Bulk) and previous == allowed.items[i - 1]
            label = previous.value.decode("latin-1") if named and isinstance(previous, Bulk) else f"[{i}]"
            return f"{label}/{reply_difference(g, a)}".rstrip("/")
        return "length"
    if isinstance(got, Error):
        return "error text"
    if isinstance(got, Int):
        return "value"
    return ""


def signature_of(target: str, trace: Trace, verdict: Verdict) -> Signature | None:
    if verdict.status != "diverge" or verdict.event is None:
        return None
    command = command_name(diverging_command(trace, verdict.event))
    message = verdict.message.split(":")[0]
    where = reply_difference(verdict.got, verdict.allowed[0] if verdict.allowed else None)
    return Signature(target, command, message, where)


MASK_LIMIT = 200
"""How many known divergences one check may see past (each one costs a check of the trace)."""


_ID_TEXT = re.compile(r"^\d+-\d+$")


def _mended(trace: Trace, verdict: Verdict) -> Trace | None:
    """``trace`` with the diverging reply replaced by the one the model allows, to look past a known
    divergence; the same text with the model's RESP type when that is all that differs."""
    if verdict.event is None or not verdict.allowed:
        return None
    got = verdict.got
    retyped: list[Reply] = [Bulk(got.text.encode("utf-8", "surrogateescape"))] if isinstance(got, Simple) else []
    allowed = next((a for a in verdict.allowed if a in retyped), verdict.allowed[0])
    index = verdict.event - 1
    event = trace.events[index]
    if not isinstance(event, (Call, Recv)):
        return None
    events = list(trace.events)
    events[index] = replace(event, reply=allowed)
    if retyped:  # the same type slip in later replies of this command is the same divergence
        name = command_name(diverging_command(trace, verdict.event))
        for later in range(index + 1, len(events)):
            e = events[later]
            if isinstance(e, (Call, Recv)) and isinstance(e.reply, Simple) and _ID_TEXT.match(e.reply.text) \
                    and command_name(diverging_command(trace, later + 1)) == name:
                events[later] = replace(e, reply=Bulk(e.reply.text.encode("utf-8", "surrogateescape")))
    return Trace(trace.header, events, trace.path)


def check_run(target: Target, dialect: str | None, run: Run, masked: frozenset[Signature] = frozenset()) -> Outcome:
    """Check a run; divergences in ``masked`` (already known) are looked past to find what lies behind them."""
    trace = run.trace
    name = dialect or target.dialect
    verdict = check_trace(trace, name)
    first = verdict.event if verdict.status == "diverge" else None
    signature = signature_of(target.url, trace, verdict)
    seen: list[Signature] = []
    while signature is not None and signature in masked and len(seen) < MASK_LIMIT:
        mended = _mended(trace, verdict)
        if mended is None:
            break
        seen.append(signature)
        trace = mended
        verdict = check_trace(trace, name)
        signature = signature_of(target.url, trace, verdict)
    return Outcome(target.url, run, verdict, signature, first, tuple(dict.fromkeys(seen)), trace)


def run_case(target: Target, dialect: str | None, steps: Sequence[Step], config: dict[str, str],
             title: str = "", masked: frozenset[Signature] = frozenset()) -> Outcome:
    return check_run(target, dialect, target.run_steps(list(steps), config=config, title=title), masked)


# ---------------------------------------------------------------------------
# Comparing two live targets


_CLOCK_ID = re.compile(rb"^(\d{13,})-(\d+)$")
_TIME_FIELDS = frozenset({b"idle", b"seen-time", b"active-time", b"inactive", b"delivery-time"})


def _normalised(reply: Reply, ids: dict[bytes, bytes]) -> Reply:
    """A reply with what depends on the host's clock replaced: IDs from the clock by their order of
    appearance, times and idle times by a placeholder."""
    if isinstance(reply, Bulk):
        m = _CLOCK_ID.match(reply.value)
        if m:
            return Bulk(ids.setdefault(m.group(1), b"T%d" % len(ids)) + b"-" + m.group(2))
        return reply
    if isinstance(reply, Int) and reply.value >= 10**12:
        return Int(-1)
    if isinstance(reply, Map):
        return Map(tuple((k, Int(-1) if isinstance(k, Bulk) and k.value in _TIME_FIELDS and isinstance(v, Int)
                          else _normalised(v, ids)) for k, v in reply.pairs))
    if isinstance(reply, (Array, Set)):
        items = list(reply.items)
        out: list[Reply] = []
        for i, item in enumerate(items):
            previous = items[i - 1] if i % 2 == 1 else None
            if isinstance(previous, Bulk) and previous.value in _TIME_FIELDS and isinstance(item, Int):
                out.append(Int(-1))
            else:
                out.append(_normalised(item, ids))
        return type(reply)(tuple(out))
    return reply


def _replies_by_step(run: Run) -> dict[int, list[tuple[list[bytes], Reply]]]:
    """Every reply of a run, with its command, by the step that sent the command."""
    out: dict[int, list[tuple[list[bytes], Reply]]] = {}
    events = run.trace.events
    for index, e in enumerate(events):
        if isinstance(e, (Call, Recv)):
            cmd = e.cmd if isinstance(e, Call) else diverging_command(run.trace, index + 1)
            out.setdefault(run.step_of_event[index], []).append((cmd, e.reply))
    return out


def _pending_row_times(cmd: list[bytes], reply: Reply) -> Reply:
    """XPENDING's extended form: the idle time of every row (its third item) depends on the host."""
    if command_name(cmd) != "XPENDING" or len(cmd) < 6 or not isinstance(reply, Array):
        return reply
    rows = [Array((*r.items[:2], Int(-1), *r.items[3:])) if isinstance(r, Array) and len(r.items) == 4 else r
            for r in reply.items]
    return Array(tuple(rows))


def compare_runs(a: Run, b: Run, names: tuple[str, str]) -> Signature | None:
    """The first step where two targets' replies differ beyond the host's clock, as a signature."""
    ids_a: dict[bytes, bytes] = {}
    ids_b: dict[bytes, bytes] = {}
    replies_a, replies_b = _replies_by_step(a), _replies_by_step(b)
    for step in sorted(set(replies_a) | set(replies_b)):
        ra, rb = replies_a.get(step, []), replies_b.get(step, [])
        for (cmd, x), (_, y) in zip(ra, rb, strict=False):
            nx = _normalised(_pending_row_times(cmd, x), ids_a)
            ny = _normalised(_pending_row_times(cmd, y), ids_b)
            if nx != ny and not environment_matches(cmd, nx, ny):  # HELLO's id and version, CLIENT ID ...
                return Signature(f"{names[0]} vs {names[1]}", command_name(cmd), "replies differ",
                                 reply_difference(nx, ny))
        if len(ra) != len(rb):
            cmd = (ra or rb)[0][0]
            return Signature(f"{names[0]} vs {names[1]}", command_name(cmd), "one target did not reply", "")
    return None


# ---------------------------------------------------------------------------
# Shrinking


def _simpler(step: Step) -> list[Step]:
    """Plainer variants of a step: not pipelined, client 1, without one or two adjacent arguments,
    a number above 1 made 1 (a smaller COUNT needs fewer entries to show the same thing)."""
    if not step.argv:
        return [] if step.pause <= 1 else [replace(step, pause=1)]
    options = [replace(step, pipelined=False)] if step.pipelined else []
    if step.client != 1:
        options.append(replace(step, client=1))
    for width in (2, 1):
        options += [replace(step, argv=step.argv[:j] + step.argv[j + width:])
                    for j in range(len(step.argv) - width, 0, -1)]
    options += [replace(step, argv=step.argv[:j] + (b"1",) + step.argv[j + 1:])
                for j, a in enumerate(step.argv) if isinstance(a, bytes) and a.isdigit() and int(a) > 1]
    return options


def ddmin(steps: list[Step], still_fails: Callable[[list[Step]], bool], budget: int) -> list[Step]:
    """Delta debugging: the shortest sub-sequence, then the plainest steps, that still fail; again while
    plainer steps let more go; within ``budget`` runs."""
    runs = 0

    def test(candidate: list[Step]) -> bool:
        nonlocal runs
        runs += 1
        return bool(candidate) and still_fails(candidate)

    def shorter(current: list[Step]) -> list[Step]:
        n = 2
        while len(current) >= 2 and runs < budget:
            chunk = max(1, len(current) // n)
            for start in range(0, len(current), chunk):
                candidate = current[:start] + current[start + chunk:]
                if test(candidate):
                    current, n = candidate, max(n - 1, 2)
                    break
                if runs >= budget:
                    break
            else:
                if chunk == 1:
                    break
                n = min(len(current), n * 2)
        return current

    def plainer(current: list[Step]) -> tuple[list[Step], bool]:
        changed = False
        for i in range(len(current)):
            improved = True
            while improved and runs < budget:
                improved = False
                for option in _simpler(current[i]):
                    if runs >= budget:
                        break
                    candidate = current[:i] + [option] + current[i + 1:]
                    if test(candidate):
                        current, improved, changed = candidate, True, True
                        break
        return current, changed

    current, changed = plainer(shorter(steps))
    while changed and runs < budget:
        shortened = shorter(current)
        if len(shortened) == len(current):
            break
        current, changed = plainer(shortened)
    return current


# ---------------------------------------------------------------------------
# Which spec rules the diverging command ran through


def rules_on_path(trace: Trace, verdict: Verdict, dialect: str | None) -> list[str]:
    """The rules whose model lines ran while the model executed the diverging command.

    The trace is cut after the diverging event, whose reply is replaced by the
    one the model allows; that conforming trace is replayed by ``xspec explain``,
    which follows the model's lines and the rules they cite.
    """
    from xspec.traces.check.explain import explain

    if verdict.event is None or not verdict.allowed:
        return []
    index = verdict.event - 1
    event = trace.events[index]
    allowed = verdict.allowed[0]
    if isinstance(event, Call):
        event = replace(event, reply=allowed)
    elif isinstance(event, Recv):
        event = replace(event, reply=allowed)
    else:
        return []
    cut = Trace(trace.header, [*trace.events[:index], event], trace.path)
    try:
        explanation = explain(cut, dialect)
    except Exception:  # explaining is a courtesy of the report; a failure leaves the rules out
        return []
    line = index + 2  # explain numbers the file's lines: the header is line 1
    for step in reversed(explanation.steps):
        if step.line == line or any(s.line == line for s in step.served):
            rules = list(step.rules or step.checked)
            own = [r for r in rules if not r.startswith(_PLUMBING)]
            return own or rules
    return []


_PLUMBING = ("DISPATCH-", "CONN-", "PROP-", "INV-")
"""Rules every command passes through (lookup, arity, connections): left out of a finding's rules."""


# ---------------------------------------------------------------------------
# The campaign


def _derived_seed(seed: int, *parts: object) -> int:
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class _FoundDivergence(Exception):
    """Raised inside the Hypothesis test: this case shows the divergence being hunted."""


class Campaign:
    """One fuzzing campaign over a set of targets (see the module docstring)."""

    def __init__(self, targets: list[Target], *, dialect: str | None, steps: int | None, seed: int,
                 clients: int | None, out: Path | None, budget_s: float | None,
                 progress: Callable[[CampaignProgress], None] | None, length: int = CASE_LENGTH,
                 profiles: dict[str, Profile] | None = None, max_findings: int | None = None) -> None:
        if steps is None and budget_s is None:
            raise ValueError("a campaign needs a number of steps or a time budget")
        self.targets = targets
        self.dialect = dialect
        self.total_steps = steps
        self.seed = seed
        self.out = out
        self.budget_s = budget_s
        self.max_findings = max_findings
        self.progress = progress
        self.length = length
        self.profiles = with_clients(profiles or FUZZ_PROFILES, clients)
        # one strategy object for the whole campaign: Hypothesis labels a composite strategy by its
        # identity, and a fresh one per draw would make generation depend on memory layout
        self.cases = cases(self.profiles, length)
        self.live = [t for t in targets if not t.url.startswith("model:")]
        self.result = CampaignResult([t.url for t in targets], dialect, seed)
        self.known: set[Signature] = set()
        self.started = 0.0
        self.executor: ThreadPoolExecutor | None = None
        self.pending: tuple[Case, Future[list[Outcome]]] | None = None

    # -- budget --------------------------------------------------------------------------
    def exhausted(self) -> bool:
        r = self.result
        if self.total_steps is not None and r.steps >= self.total_steps:
            return True
        if self.max_findings is not None and len(r.findings) >= self.max_findings:
            return True
        return self.budget_s is not None and time.monotonic() - self.started >= self.budget_s

    def _tick(self) -> None:
        r = self.result
        r.elapsed = time.monotonic() - self.started
        if self.progress is not None:
            self.progress(CampaignProgress(r.steps, self.total_steps, r.elapsed, self.budget_s, r.cases,
                                           len(r.findings)))

    # -- running cases -------------------------------------------------------------------
    def run_everywhere(self, case: Case, count: bool) -> list[Outcome]:
        """The case on every target, checked; cross-target differences as extra outcomes."""
        return self.judge(self.execute(case, count), count)

    def execute(self, case: Case, count: bool) -> list[Run]:
        """The case on every target, in turn."""
        runs = [t.run_steps(list(case.steps), config=case.config) for t in self.targets]
        if count:
            r = self.result
            r.cases += 1
            r.steps += len(case.steps)
            r.coverage.update(command_name([a for a in s.argv if isinstance(a, bytes)])
                              for s in case.steps if s.argv)
        return runs

    def judge(self, runs: list[Run], count: bool) -> list[Outcome]:
        """Each target's run checked against the model; live targets' replies compared with each other."""
        masked = frozenset(self.known)
        outcomes = [check_run(t, self.dialect, run, masked) for t, run in zip(self.targets, runs, strict=True)]
        if count:
            r = self.result
            for o in outcomes:
                r.statuses[o.verdict.status] += 1
                if o.verdict.status == "unsupported":
                    r.unsupported[o.verdict.message] += 1
                elif o.verdict.status == "inconclusive":
                    r.inconclusive[o.verdict.message.split(";")[0]] += 1
                for reason in o.run.skipped:
                    if reason not in r.skipped:
                        r.skipped.append(reason)
        for i, a in enumerate(self.live):
            for b in self.live[i + 1:]:
                oa, ob = outcomes[self.targets.index(a)], outcomes[self.targets.index(b)]
                cross = compare_runs(oa.run, ob.run, (a.url, b.url))
                if cross is not None:
                    outcomes.append(Outcome(cross.target, ob.run, ob.verdict, cross))
        return outcomes

    def reproduces(self, wanted: Signature, steps: Sequence[Step], config: dict[str, str]) -> Outcome | None:
        """Run ``steps`` where ``wanted`` was seen; the outcome if it shows the same divergence."""
        case = Case("shrink", config, tuple(steps))
        if " vs " in wanted.target:
            outcomes = self.run_everywhere(case, count=False)
        else:
            target = next(t for t in self.targets if t.url == wanted.target)
            outcomes = [run_case(target, self.dialect, steps, config, masked=frozenset(self.known - {wanted}))]
        return next((o for o in outcomes if o.signature == wanted), None)

    # -- rounds ----------------------------------------------------------------------------
    def run(self) -> CampaignResult:
        self.started = time.monotonic()
        round_number = 0
        # Against live servers a case spends most of its time waiting for the server (pauses, block
        # timeouts, round trips): the previous case is checked meanwhile, on another thread.
        switch = sys.getswitchinterval()
        if self.live:
            self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xspec-check")
            sys.setswitchinterval(0.0005)  # hand the interpreter back to the driving thread quickly
        try:
            while not self.exhausted():
                self._round(_derived_seed(self.seed, "round", round_number))
                round_number += 1
                self._tick()
            self._finish_leftover(self._checked_before())
        finally:
            if self.executor is not None:
                self.executor.shutdown()
                self.executor = None
            sys.setswitchinterval(switch)
        self._tick()
        return self.result

    def _new_divergence(self, outcomes: list[Outcome]) -> Signature | None:
        return next((o.signature for o in outcomes if o.signature is not None and o.signature not in self.known),
                    None)

    def _checked_before(self) -> tuple[Case, list[Outcome]] | None:
        """The previous case and its outcomes, once its check (running in the background) is done."""
        pending, self.pending = self.pending, None
        if pending is None:
            return None
        case, future = pending
        return case, future.result()

    def _round(self, round_seed: int) -> None:
        hunted: dict[str, Any] = {"signature": None, "case": None, "calls": 0}

        @settings(database=None, deadline=None, max_examples=ROUND_EXAMPLES, derandomize=False,
                  phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck),
                  report_multiple_bugs=False, print_blob=False, verbosity=Verbosity.quiet)
        @hypothesis_seed(round_seed)
        @given(st.data())
        def test(data: st.DataObject) -> None:
            wanted = hunted["signature"]
            if wanted is None:
                if self.exhausted():
                    return
                case = data.draw(self.cases)
                if self.executor is None:
                    outcomes = self.run_everywhere(case, count=True)
                else:  # run this case while the previous one is checked; report the previous one
                    runs = self.execute(case, count=True)
                    previous = self._checked_before()
                    self.pending = (case, self.executor.submit(self.judge, runs, True))
                    if previous is None:
                        return
                    case, outcomes = previous
                self._tick()
                found = self._new_divergence(outcomes)
                if found is not None:
                    hunted.update(signature=found, case=case, original=len(case.steps))
                    raise _FoundDivergence()
                return
            if self.executor is not None or hunted["calls"] >= HYPOTHESIS_SHRINK_CALLS:
                return  # live targets: delta debugging alone (a run there costs real time)
            hunted["calls"] += 1
            case = data.draw(self.cases)
            best = hunted["case"]
            if case.steps == best.steps and case.config == best.config:
                raise _FoundDivergence()  # Hypothesis replaying the smallest case so far
            if len(case.steps) >= len(best.steps):
                return  # not smaller: not worth a run
            if self.reproduces(wanted, case.steps, case.config) is not None:
                hunted["case"] = case
                raise _FoundDivergence()

        try:
            test()
        except (_FoundDivergence, Flaky):  # Flaky: a live server that stopped reproducing while shrinking
            pass
        # the case still being checked, if the round ends here (shrinking runs checks of its own)
        leftover = self._checked_before() if self.exhausted() or hunted["signature"] is not None else None
        if hunted["signature"] is not None:
            self._finish(hunted["signature"], hunted["case"], hunted["original"])
        self._finish_leftover(leftover)

    def _finish_leftover(self, leftover: tuple[Case, list[Outcome]] | None) -> None:
        if leftover is not None:
            case, outcomes = leftover
            found = self._new_divergence(outcomes)
            if found is not None:
                self._finish(found, case, len(case.steps))

    def _finish(self, wanted: Signature, case: Case, original: int) -> None:
        """Delta debugging, confirmation and the written trace of one divergence."""
        self.known.add(wanted)
        config = case.config
        steps = list(case.steps)
        first = self.reproduces(wanted, steps, config)
        if first is not None and first.verdict.event is not None and " vs " not in wanted.target:
            # nothing after the diverging step matters
            cut = steps[:first.run.step_of_event[first.verdict.event - 1] + 1]
            if cut != steps and self.reproduces(wanted, cut, config) is not None:
                steps = cut
        budget = DDMIN_RUNS if self.executor is None else DDMIN_RUNS_LIVE
        steps = ddmin(steps, lambda s: self.reproduces(wanted, s, config) is not None, budget)
        outcome = self.reproduces(wanted, steps, config)
        if outcome is None:  # a live target that stopped reproducing while shrinking
            steps = list(case.steps)
            outcome = self.reproduces(wanted, steps, config)
        confirmed = outcome is not None
        if confirmed and self.live and not wanted.target.startswith("model:"):
            confirmed = all(self.reproduces(wanted, steps, config) is not None for _ in range(CONFIRM_RUNS - 1))
        if outcome is None:
            target = next((t for t in self.targets if t.url == wanted.target), self.targets[0])
            outcome = run_case(target, self.dialect, steps, config, masked=frozenset(self.known - {wanted}))
        kind = "cross" if " vs " in wanted.target else "model"
        trace = outcome.run.trace
        verdict = outcome.verdict
        if kind == "model" and outcome.first_event is not None:
            trace.header.expect = {"verdict": "diverge", "dialect": self._dialect_of(wanted.target),
                                   "event": outcome.first_event}
        trace.header.title = f"fuzz: {wanted.text()}"
        if outcome.masked:  # the trace first shows divergences found before; this one comes later
            trace.header.title += f" (at event {verdict.event}, after: {'; '.join(m.text() for m in outcome.masked)})"
        rules = rules_on_path(outcome.checked or trace, verdict, self.dialect) if kind == "model" else []
        finding = Finding(wanted, steps, config, trace, verdict, original, rules, confirmed, kind)
        if self.out is not None:
            finding.path = self._write(finding, len(self.result.findings) + 1)
        self.result.findings.append(finding)

    def _dialect_of(self, url: str) -> str:
        if self.dialect:
            return self.dialect
        return next((t.dialect for t in self.targets if t.url == url), "redis-7.0")

    def _write(self, finding: Finding, number: int) -> Path:
        assert self.out is not None
        slug = re.sub(r"[^a-z0-9]+", "-", finding.signature.command.lower()).strip("-")
        path = self.out / f"{number:03d}-{slug}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        dump(finding.trace, path)
        return path


def run_campaign(targets: list[str], *, dialect: str | None = None, steps: int | None = None, seed: int = 0,
                 clients: int | None = None, out: Path | str | None = None, budget_s: float | None = None,
                 progress: Callable[[CampaignProgress], None] | None = None, allow_flush: bool = False,
                 length: int = CASE_LENGTH, profiles: Sequence[str] | None = None,
                 max_findings: int | None = None) -> CampaignResult:
    """Fuzz ``targets`` (URLs) for ``steps`` steps or ``budget_s`` seconds, whichever ends first.

    ``profiles`` names the generator profiles to draw from (default: all of
    :data:`~xspec.traces.fuzz.strategies.FUZZ_PROFILES`); ``max_findings`` ends the campaign early.

    Every finding's minimal trace is written under ``out`` (when given), with
    ``report.md`` and ``report.json``. Raises :class:`~xspec.traces.harness.targets.TargetError` for a
    target that cannot be used.
    """
    unknown = sorted(set(profiles or ()) - set(FUZZ_PROFILES))
    if unknown:
        raise ValueError(f"unknown profiles {', '.join(unknown)}; known: {', '.join(sorted(FUZZ_PROFILES))}")
    chosen = {name: FUZZ_PROFILES[name] for name in profiles} if profiles else None
    opened: list[Target] = []
    try:
        for url in targets:
            opened.append(parse_target(url, dialect=dialect, allow_flush=allow_flush))
        folder = Path(out) if out is not None else None
        if dialect == "nearest":  # spec.dialect.NEAREST: each live target resolved its own
            dialect = None
        campaign = Campaign(opened, dialect=dialect, steps=steps, seed=seed, clients=clients, out=folder,
                            budget_s=budget_s, progress=progress, length=length, profiles=chosen,
                            max_findings=max_findings)
        result = campaign.run()
    finally:
        for t in opened:
            t.close()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.md").write_text(result.report())
        (folder / "report.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
        result.report_path = folder / "report.md"
    return result
