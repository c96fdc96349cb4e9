"""``xspec explain TRACE``: replay a trace on the model and show, step by step, the state that
matters and the spec rules that changed it.

How a trace is replayed:

* **Order and time.** The conformance checker (:mod:`xspec.traces.check.checker`) decides in which
  order the server executed overlapping commands and which clock readings explain the
  trace. This module reruns the checker's search, recording the order of the steps it
  settled on (commands, timeouts, closes) and, in wall-clock traces, takes the smallest
  time of every clock reading that its constraints allow (the least solution of a system of
  difference constraints satisfies them all). It then replays that order on a fresh
  :class:`~xspec.models.server.Server` whose clock returns those readings, so every reply
  comes out as the checker explained it. When the checker cannot settle an order
  (inconclusive), the file's order is used instead and the output says so.
* **State.** After every step the tables show the keys, stream entries, groups
  (last-delivered-id, entries-read, lag), pending entries (owner, idle time, delivery count),
  consumers and the clients that are blocked or inside a transaction. Rows and cells that
  changed are highlighted.
* **Rules.** The model cites the spec rule of every branch in a comment (``# XCLAIM-6``).
  :class:`RuleMap` reads those comments once per model file and gives every line the rules
  that govern it (see its docstring); while a step runs, :class:`RuleTracer` follows the
  executed lines of the model with :func:`sys.settrace` and snapshots the state whenever the
  governing rules change, so each change is attributed to the rules in force when it happened.

:func:`explain_trace` is the entry point; :func:`render_steps` prints steps (the explorer
reuses it for counterexamples); ``--json`` gives the same content for tools.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import sys
import tokenize
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TextIO

import click

from xspec.models import ManualClock, Server
from xspec.models import lag as lag_rules
from xspec.models.server import HANDLERS, CommandError
from xspec.models.state import Stream
from xspec.spec import commands as table
from xspec.spec.environment import environment_matches
from xspec.spec.resp import Reply, arg_to_json, show, to_json
from xspec.spec.trace_format import Call, Close, Connect, Note, Recv, Send, Trace, TraceError, load
from xspec.traces.check import checker

MODELS_DIR = Path(lag_rules.__file__).resolve().parent
SPEC_DIR = Path(table.__file__).resolve().parent

# ---------------------------------------------------------------------------
# The rules: where they are defined and which model lines cite them

_DEFINITION = re.compile(r"\*\*([A-Z][A-Z]*(?:-[A-Z]+)?-\d+)\b")
_CITATION = re.compile(r"\b([A-Z][A-Z]+(?:-[A-Z]+)?)-(\d+)((?:\s*,\s*-\d+)*)")
_RANGE = re.compile(r"\b[A-Z][A-Z]+(?:-[A-Z]+)?-\d+\s*\.\.\s*(?:[A-Z][A-Z]+(?:-[A-Z]+)?)?-?\d+")
_HEADING = re.compile(r"^## (.+)$")
_DIALECT_LIST = re.compile(r"\s*\(((?:`[\w.-]+`(?:,\s*)?)+)")
"""A dialect rule starts with the dialects it is about: ``**XREADGROUP-DIALECT-1** (`redis-7.2`, ...)``."""

READS_SHARE_XREAD = {"XREADGROUP": "XREAD"}
"""XREADGROUP-1: XREADGROUP parses its options with XREAD's rules, so XREAD-* rules cited in
docstrings of the shared helpers apply to it."""


@dataclass(frozen=True)
class SpecIndex:
    """Every rule id the spec defines, the file defining it, and which rule families a command uses."""

    files: dict[str, str]  # rule id -> spec file, relative to the repository (spec/rules/groups.md)
    families: dict[str, frozenset[str]]  # COMMAND -> rule prefixes of the sections that name it
    dialects: dict[str, frozenset[str]]  # a dialect rule (XCLAIM-DIALECT-1) -> the dialects it is about

    def defined(self, rule: str) -> bool:
        return rule in self.files

    def command_families(self, name: str) -> set[str]:
        name = name.upper()
        out = set(self.families.get(name, ())) | {name}
        if name in READS_SHARE_XREAD:
            out.add(READS_SHARE_XREAD[name])
        return out


@cache
def spec_index() -> SpecIndex:
    files: dict[str, str] = {}
    families: dict[str, set[str]] = {}
    dialects: dict[str, frozenset[str]] = {}
    for md in [*sorted((SPEC_DIR / "rules").glob("*.md")), SPEC_DIR / "invariants.md"]:
        rel = f"spec/{md.relative_to(SPEC_DIR)}"
        commands: list[str] = []
        for line in md.read_text(encoding="utf-8").splitlines():
            heading = _HEADING.match(line)
            if heading:
                commands = [w for w in re.split(r"[\s,/]+", heading.group(1)) if re.fullmatch(r"[A-Z]+", w)]
                continue
            for rule in _DEFINITION.findall(line):
                files.setdefault(rule, rel)
                named = _DIALECT_LIST.match(line.split(f"**{rule}", 1)[1].lstrip("*"))
                if named:
                    dialects[rule] = frozenset(re.findall(r"`([\w.-]+)`", named.group(1)))
                prefix = rule.rsplit("-", 1)[0]
                for c in commands:
                    families.setdefault(c, set()).add(prefix)
    return SpecIndex(files, {k: frozenset(v) for k, v in families.items()}, dialects)


def _is_command_family(prefix: str) -> bool:
    return prefix.lower() in table.COMMANDS


def rule_family(rule: str) -> str:
    """``XCLAIM`` for XCLAIM-6 and for XCLAIM-DIALECT-1."""
    return rule.split("-", 1)[0]


def cited_rules(text: str) -> tuple[str, ...]:
    """The rule ids a comment or docstring cites, in order (``XREADGROUP-7, -10`` is two rules).

    Ranges (``XREAD-1 .. XREAD-7``) are left out: they summarise a function, they do not say
    which rule a line implements. Words that only look like rule ids (``UTF-8``) are ignored.
    """
    index = spec_index()
    out: list[str] = []
    for m in _CITATION.finditer(_RANGE.sub(" ", text)):
        prefix = m.group(1)
        numbers = [m.group(2), *re.findall(r"-(\d+)", m.group(3))]
        for n in numbers:
            rule = f"{prefix}-{n}"
            if index.defined(rule) and rule not in out:
                out.append(rule)
    return tuple(out)


Levels = tuple[tuple[str, ...], ...]
"""Candidate rules of a moment, most specific first: the line's, its enclosing blocks', its
function's docstring's, then its caller's. The first level that names a rule of the step's
commands (:func:`rule_filter`) is the one reported."""


@dataclass(frozen=True)
class LineRules:
    """The rules governing one source line.

    ``levels``: its statement's own (``direct``) or its earlier siblings', then its enclosing
    blocks', inner first; ``doc``: its function's docstring citations; ``own``: what the statement
    itself cites (reported as ``checked``).
    """

    levels: Levels = ()
    direct: tuple[str, ...] = ()
    doc: tuple[str, ...] = ()
    own: tuple[str, ...] = ()


class RuleMap:
    """Which spec rules govern each line of the model's source files, computed once per file.

    A statement's *own* rules are those its comments cite: an inline comment on any of its
    lines (for a compound statement, on its header), or comment lines right above it. A line's
    candidate rules, most specific first (:data:`Levels`):

    1. its statement's own rules; for a statement without, those of the earlier statements
       of the same block that had own rules, nearest first, up to the last blank line (a
       blank line ends a paragraph of code): ``nack.delivery_time = now`` right after
       ``if consumer is None:  # XAUTOCLAIM-9`` is XAUTOCLAIM-9's work;
    2. the rules of each enclosing compound statement, inner first (``if ...:  # XCLAIM-6``
       governs its body; an ``else:  # XREAD-6`` its own branch); an ``if`` without rules of
       its own passes on those of the statements before it (level 1), a loop does not;
    3. at run time, the rules the calling line cites itself (level 1 of the caller), if any:
       ``call.block(...)  # BLOCK-1`` says more about what the callee does there than the
       callee's docstring, which may mention rules in passing;
    4. the rule citations of the function's docstring (``advance_group``: LAG-4);
    5. the rest of the caller's levels (a command handler starts afresh).
    """

    def __init__(self, folder: Path = MODELS_DIR) -> None:
        self.lines: dict[str, dict[int, LineRules]] = {}
        for path in sorted(folder.glob("*.py")):
            mapping = _file_rules(path)
            for name in {str(path), str(path.resolve())}:
                self.lines[name] = mapping
        self.handler_codes: set[CodeType] = {fn.__code__ for fn in HANDLERS.values()}


def _comment_rules(path: Path) -> tuple[dict[int, tuple[str, ...]], set[int], list[str]]:
    """Rule citations per line, the lines holding only a comment, and the source lines."""
    source = path.read_text(encoding="utf-8")
    by_line: dict[int, tuple[str, ...]] = {}
    code_lines: set[int] = set()
    comment_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comment_lines.add(tok.start[0])
            rules = cited_rules(tok.string)
            if rules:
                by_line[tok.start[0]] = by_line.get(tok.start[0], ()) + rules
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            for n in range(tok.start[0], tok.end[0] + 1):
                code_lines.add(n)
    return by_line, comment_lines - code_lines, source.splitlines()


def _chain(*levels: tuple[str, ...]) -> Levels:
    out: list[tuple[str, ...]] = []
    for level in levels:
        if level and level not in out:
            out.append(level)
    return tuple(out)


def _file_rules(path: Path) -> dict[int, LineRules]:
    by_line, comment_only, text_lines = _comment_rules(path)
    tree = ast.parse("\n".join(text_lines) + "\n", str(path))
    out: dict[int, LineRules] = {}

    def above(line: int) -> tuple[str, ...]:
        """Citations in the comment lines directly above ``line``."""
        rules: tuple[str, ...] = ()
        n = line - 1
        while n in comment_only:
            rules = by_line.get(n, ()) + rules
            n -= 1
        return rules

    def header_end(stmt: ast.stmt) -> int:
        first_body = min((s.lineno for s in _blocks(stmt)[0][1]), default=stmt.lineno + 1)
        return max(stmt.lineno, first_body - 1)

    def own(stmt: ast.stmt, compound: bool) -> tuple[str, ...]:
        last = header_end(stmt) if compound else (stmt.end_lineno or stmt.lineno)
        rules = above(stmt.lineno)
        for n in range(stmt.lineno, last + 1):
            rules += tuple(r for r in by_line.get(n, ()) if r not in rules)
        return rules

    def mark(first: int, last: int, rules: LineRules) -> None:
        for n in range(first, last + 1):
            out.setdefault(n, rules)

    def blank_between(a: int, b: int) -> bool:
        return any(not text_lines[n - 1].strip() for n in range(a + 1, b) if 0 < n <= len(text_lines))

    def suite(stmts: Sequence[ast.stmt], enclosing: Levels, doc: tuple[str, ...]) -> None:
        siblings: list[tuple[str, ...]] = []  # own rules of the paragraph's earlier statements, nearest first
        previous_end = None
        for stmt in stmts:
            if previous_end is not None and blank_between(previous_end, stmt.lineno):
                siblings = []
            previous_end = stmt.end_lineno or stmt.lineno
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(stmt, clean=False) or ""
                suite(stmt.body, (), cited_rules(docstring))
                continue
            if isinstance(stmt, ast.ClassDef):
                suite(stmt.body, (), ())
                continue
            blocks = _blocks(stmt)
            mine = own(stmt, bool(blocks))
            levels = _chain(mine, *enclosing) if mine else _chain(*siblings, *enclosing)
            if mine:
                siblings.insert(0, mine)
            if blocks:
                mark(stmt.lineno, header_end(stmt), LineRules(levels, mine, doc, mine))
                last_end = header_end(stmt)
                # A block is governed by its header's rules. A conditional without rules of its
                # own continues the statements before it (``nack.delivery_time = ...  # XCLAIM-14``
                # then ``if opts.retry_count >= 0: ...``); a loop or any other block starts afresh
                # (``fixed = ...  # LAG-DIALECT-1`` says nothing about the loop after it).
                governed = levels if mine or isinstance(stmt, ast.If) else enclosing
                for n, (_, body) in enumerate(blocks):
                    branch = governed
                    if n and body:  # an else/except/finally header between the blocks
                        between = range(last_end + 1, body[0].lineno)
                        cited = tuple(r for k in between for r in by_line.get(k, ()))
                        branch = _chain(cited, *enclosing) if cited else governed
                    suite(body, branch, doc)
                    if body:
                        last_end = body[-1].end_lineno or body[-1].lineno
            else:
                mark(stmt.lineno, stmt.end_lineno or stmt.lineno, LineRules(levels, mine, doc, mine))

    suite(tree.body, (), ())
    return out


def _blocks(stmt: ast.stmt) -> list[tuple[str, list[ast.stmt]]]:
    """The statement blocks of a compound statement (empty for a simple one)."""
    blocks: list[tuple[str, list[ast.stmt]]] = []
    for name in ("body", "orelse", "finalbody"):
        body = getattr(stmt, name, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            blocks.append((name, body))
    for handler in getattr(stmt, "handlers", ()):
        blocks.insert(len(blocks) - (1 if getattr(stmt, "finalbody", None) else 0), ("except", handler.body))
    for case in getattr(stmt, "cases", ()):
        blocks.append(("case", case.body))
    return blocks


@dataclass
class _Frame:
    frame: FrameType
    lines: dict[int, LineRules]
    caller_direct: tuple[str, ...]  # what the calling line cites itself
    caller: Levels  # all the calling line's levels
    current: Levels = ()
    direct: tuple[str, ...] = ()


Snapshot = dict[tuple[Any, ...], tuple[Any, ...]]


@dataclass
class RawChange:
    row: tuple[Any, ...]
    old: tuple[Any, ...] | None
    new: tuple[Any, ...] | None
    governing: list[Levels]  # the levels in force while it happened (several once the budget ran out)


SNAPSHOT_BUDGET = 200_000
"""Rows a step may snapshot. A step that delivers or trims thousands of entries on a big
state would otherwise take seconds; past the budget, the changes of the rest of the step
are attributed to every rule in force during it together."""


class RuleTracer:
    """Follows the model's executed lines during one step (``sys.settrace``).

    The *governing levels* at any moment are those of the innermost model frame's current
    line (:class:`RuleMap`). Whenever they change, the state is snapshotted and compared
    with the previous snapshot; the differences are attributed to the levels that governed
    until then. ``checked`` lists the rules cited by every statement that ran, in order, and
    ``error_levels`` the levels governing the line that raised an error reply. Snapshots stop
    when :data:`SNAPSHOT_BUDGET` is spent (see there).
    """

    def __init__(self, rules: RuleMap, snapshot: Callable[[], Snapshot]) -> None:
        self.rules = rules
        self.snapshot = snapshot
        self.stack: list[_Frame] = []
        self.active: Levels = ()
        self.checked: list[str] = []
        self.changes: list[RawChange] = []
        self.error_levels: Levels | None = None
        self.last = snapshot()
        self.budget = SNAPSHOT_BUDGET
        self.unsettled: list[Levels] = []  # levels in force since the budget ran out
        self.previous_trace: Any = None

    def __enter__(self) -> RuleTracer:
        self.previous_trace = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self.previous_trace)
        self._settle()

    # -- tracing ------------------------------------------------------------------
    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        lines = self.rules.lines.get(frame.f_code.co_filename)
        if lines is None:
            return None
        if frame.f_code in self.rules.handler_codes or not self.stack:
            self.stack.append(_Frame(frame, lines, (), ()))
        else:
            caller = self.stack[-1]
            self.stack.append(_Frame(frame, lines, caller.direct, caller.current, caller.current))
        return self._local

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            top = self.stack[-1] if self.stack and self.stack[-1].frame is frame else self._find(frame)
            if top is not None:
                here = top.lines.get(frame.f_lineno)
                if here is None:
                    top.current, top.direct = top.caller, ()
                else:
                    top.current = _chain(*here.levels, top.caller_direct, here.doc, *top.caller)
                    top.direct = here.direct
                    for r in here.own:
                        if r not in self.checked:
                            self.checked.append(r)
                self._moved()
        elif event == "return":
            while self.stack:
                popped = self.stack.pop()
                if popped.frame is frame:
                    break
            self._moved()
        elif event == "exception" and self.error_levels is None and isinstance(arg[1], CommandError):
            self.error_levels = self.active
        return self._local

    def _find(self, frame: FrameType) -> _Frame | None:
        for f in reversed(self.stack):
            if f.frame is frame:
                return f
        return None

    def _moved(self) -> None:
        active = self.stack[-1].current if self.stack else ()
        if active != self.active:
            if self.budget > 0:
                self._settle()
            elif active not in self.unsettled:
                self.unsettled.append(active)
            self.active = active

    def _settle(self) -> None:
        """Attribute what changed since the last snapshot to the levels that governed meanwhile."""
        now = self.snapshot()
        self.budget -= len(now)
        governing = [self.active, *(u for u in self.unsettled if u != self.active)]
        if now != self.last:
            for row in sorted(set(self.last) | set(now), key=repr):
                old, new = self.last.get(row), now.get(row)
                if old != new:
                    self.changes.append(RawChange(row, old, new, governing))
            self.last = now


# ---------------------------------------------------------------------------
# The state that matters, as rows of tables

TABLES: dict[str, tuple[str, ...]] = {
    "keys": ("type", "length", "last-generated-id", "entries-added", "max-deleted-id", "first-id"),
    "entries": ("fields",),
    "groups": ("last-delivered-id", "entries-read", "lag", "pending", "consumers"),
    "pending": ("owner", "delivery-time", "deliveries"),
    "consumers": ("pending", "seen-time"),
    "clients": ("blocked-on", "command", "deadline", "transaction"),
}
"""Each table's value columns. A row is keyed ``(table, ...)``: keys by (db, key), entries by
(db, key, id), groups by (db, key, group), pending entries by (db, key, group, id), consumers
by (db, key, group, name), clients by (client id,)."""

KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "keys": ("key",), "entries": ("key", "id"), "groups": ("key", "group"),
    "pending": ("key", "group", "id"), "consumers": ("key", "group", "consumer"), "clients": ("client",),
}
TITLES = {"keys": "Keys", "entries": "Entries", "groups": "Groups", "pending": "Pending entries (PEL)",
          "consumers": "Consumers", "clients": "Clients"}
TIME_COLUMNS = {"delivery-time": "idle", "seen-time": "seen", "deadline": "deadline"}
"""Absolute times, shown relative to the step's clock (idle = now - delivery time)."""


def text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def state_rows(server: Server) -> Snapshot:
    """The state of ``server`` that explain shows, as {row key: column values}."""
    rows: Snapshot = {}
    for db, keys in enumerate(server.dbs):
        for key, value in keys.items():
            if not isinstance(value, Stream):
                rows[("keys", db, key)] = ("string", len(value), None, None, None, None)
                continue
            s = value
            rows[("keys", db, key)] = ("stream", s.length, str(s.last_id), s.entries_added,
                                       str(s.max_deleted_id), str(s.first_id))
            for entry_id, fields in s.entries.items():
                rows[("entries", db, key, entry_id)] = (fields,)
            for gname, g in s.groups.items():
                rows[("groups", db, key, gname)] = (str(g.last_id), None if g.entries_read == -1 else g.entries_read,
                                                    lag_rules.group_lag(s, g), len(g.pel), len(g.consumers))
                for entry_id, nack in g.pel.items():
                    owner = None if nack.consumer is None else text(nack.consumer.name)
                    rows[("pending", db, key, gname, entry_id)] = (owner, nack.delivery_time, nack.delivery_count)
                for cname, c in g.consumers.items():
                    rows[("consumers", db, key, gname, cname)] = (len(c.pel), c.seen_time)
    for cid, client in sorted(server.clients.items()):
        b = client.blocked
        transaction = None
        if client.in_multi:
            transaction = f"MULTI, {len(client.multi_queue)} queued" + (" (will abort)" if client.multi_error else "")
        elif client.watched:
            transaction = "WATCH " + " ".join(text(k) for _, k in client.watched) + (
                " (touched)" if client.dirty_cas else "")
        if b is None and transaction is None:
            continue
        blocked_on = None if b is None else " ".join(text(k) for k in dict.fromkeys(b.keys))
        command = None if b is None else " ".join(text(a) for a in b.argv)
        deadline = None if b is None else b.deadline
        rows[("clients", cid)] = (blocked_on, command, deadline, transaction)
    return rows


# ---------------------------------------------------------------------------
# Steps


@dataclass
class Change:
    """One row added, removed or changed by a step, with the rules that made each column change."""

    table: str
    row: dict[str, Any]  # the key columns
    kind: str  # added | removed | changed
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    rules: list[str]  # every rule behind the change, in order
    column_rules: dict[str, list[str]] = field(default_factory=dict)  # changed column -> its rules

    def columns(self) -> list[str]:
        if self.kind != "changed":
            return []
        assert self.old is not None and self.new is not None
        return [c for c in self.old if self.old[c] != self.new[c]]


@dataclass
class Served:
    client: int
    reply: Reply
    line: int | None  # the recv's line in the trace file
    expected: Reply | None

    @property
    def matches(self) -> bool:
        return self.expected is None or _same_reply(None, self.expected, self.reply)


@dataclass
class Step:
    """One thing the server did: a command, a blocked client's timeout, a connection closing."""

    kind: str  # command | timeout | close | connect
    client: int
    line: int | None  # line of the trace file (events are line - 1)
    now: int | None
    command: list[bytes] | None = None
    reply: Reply | None = None  # the model's reply; None when the client blocked
    expected: Reply | None = None  # the trace's reply, when it has one
    blocked: bool = False
    served: list[Served] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)  # rules that changed state or decided an error
    checked: list[str] = field(default_factory=list)  # every rule whose lines ran
    state: Snapshot = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # the trace's notes just before this step

    @property
    def matches(self) -> bool:
        """The model's reply is the trace's (replies about the host compared by shape: spec/rules/environment.md)."""
        if self.expected is None or self.reply is None:
            return True
        return _same_reply(self.command, self.expected, self.reply)


def _same_reply(argv: list[bytes] | None, expected: Reply, reply: Reply) -> bool:
    if reply == expected:
        return True
    return argv is not None and bool(environment_matches(argv, expected, reply))


@dataclass
class Explanation:
    trace: Trace
    verdict: checker.Verdict
    order: str  # "checker" or "file"
    note: str
    steps: list[Step]
    start: int | None  # the first clock reading, for relative times


def _row_key(table_name: str, row: tuple[Any, ...]) -> dict[str, Any]:
    parts = row[1:]
    names = KEY_COLUMNS[table_name]
    if table_name == "clients":
        return {"client": parts[0]}
    db, key, *rest = parts
    out: dict[str, Any] = {"key": text(key) if db == 0 else f"db{db}:{text(key)}"}
    for name, value in zip(names[1:], rest, strict=True):
        out[name] = str(value) if name == "id" else text(value)
    return out


def _values(table_name: str, values: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    out = dict(zip(TABLES[table_name], values, strict=True))
    if table_name == "entries":
        out["fields"] = [text(f) for f in values[0]]
    return out


class _Replayer:
    """Runs steps on a fresh model, tracing rules and collecting state after each."""

    def __init__(self, trace: Trace, dialect: Any, clock: ManualClock) -> None:
        self.server = Server(dialect, clock, trace.header.config)
        self.clock = clock
        self.rules = RuleMap()
        self.steps: list[Step] = []
        self.notes: list[str] = []
        self.blocked: dict[int, tuple[Step, int | None, Reply | None]] = {}  # client -> step, recv line, reply

    def _families(self, argv: Sequence[bytes] | None, client: int) -> set[str]:
        index = spec_index()
        names = [argv[0]] if argv else []
        c = self.server.clients.get(client)
        if argv and argv[0].lower() == b"exec" and c is not None:
            names += [q[0] for q in c.multi_queue]
        names += [o.blocked.argv[0] for o in self.server.clients.values() if o.blocked is not None]
        out: set[str] = set()
        for n in names:
            out |= index.command_families(text(n))
        return out

    def run(self, step: Step, action: Callable[[], Any]) -> Any:
        keep = rule_filter(self._families(step.command, step.client), self.server.dialect.name)
        tracer = RuleTracer(self.rules, lambda: state_rows(self.server))
        with tracer:
            result = action()
        step.now = self.clock.ms if step.now is None else step.now
        step.changes = _merge_changes(tracer.changes, keep)
        for change in step.changes:
            _add(step.rules, change.rules)
        if tracer.error_levels:
            _add(step.rules, _resolve(tracer.error_levels, keep))
        step.checked = [r for r in tracer.checked if keep(r)]
        step.state = tracer.last
        step.notes, self.notes = self.notes, []
        self.steps.append(step)
        return result

    # -- the kinds of step ------------------------------------------------------------
    def execute(self, client: int, argv: list[bytes], line: int | None, expected: Reply | None,
                recv_line: int | None, now: int | None) -> None:
        step = Step("command", client, line, now, command=argv, expected=None)
        out = self.run(step, lambda: self.server.execute(client, argv))
        if out.blocked:
            step.blocked = True
            self.blocked[client] = (step, recv_line, expected)
        else:
            step.reply = out.reply
            step.expected = expected
        for cid, reply in out.served:
            _, served_line, served_expected = self.blocked.pop(cid, (None, None, None))
            step.served.append(Served(cid, reply, served_line, served_expected))

    def time_out(self, client: int, line: int | None, expected: Reply | None, now: int | None) -> None:
        step = Step("timeout", client, line, now, expected=expected)
        self.blocked.pop(client, None)
        step.reply = self.run(step, lambda: self.server.timeout(client))

    def close(self, client: int, line: int | None) -> None:
        self.blocked.pop(client, None)
        if client in self.server.clients:
            self.run(Step("close", client, line, None), lambda: self.server.close(client))

    def connect(self, client: int) -> None:
        self.server.client(client)


def rule_filter(families: set[str], dialect: str) -> Callable[[str], bool]:
    """Keeps the rules of the step's commands and the rules of no command (BLOCK, LAG, ID ...).

    Helpers shared by several commands cite all their commands' rules (``XPENDING-6,
    XCLAIM-1``); only the step's own apply. XADD-14 (the C errno that one XADD error text
    depends on) is cited wherever a command touches errno, and so is kept for XADD only.
    A dialect rule (``XREADGROUP-DIALECT-1``) is kept only for the dialects it names: in
    the others the code it cites only checks a switch.
    """
    index = spec_index()

    def keep(rule: str) -> bool:
        named = index.dialects.get(rule)
        if named is not None and dialect not in named:
            return False
        family = rule_family(rule)
        return family in families or not _is_command_family(family)

    return keep


def _resolve(levels: Levels, keep: Callable[[str], bool]) -> list[str]:
    """The rules of the most specific level that names a rule of the step."""
    for level in levels:
        kept = [r for r in level if keep(r)]
        if kept:
            return kept
    return []


def _merge_changes(raw: list[RawChange], keep: Callable[[str], bool]) -> list[Change]:
    """One change per row: first old value, last new value, and per column the rules that moved it."""
    merged: dict[tuple[Any, ...], tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, dict[int, list[str]],
                                        list[str]]] = {}
    for change in raw:
        rules: list[str] = []
        for levels in change.governing:
            _add(rules, _resolve(levels, keep))
        width = len(TABLES[change.row[0]])
        touched: list[int]
        if change.old is None or change.new is None:
            touched = list(range(width))
        else:
            touched = [i for i in range(width) if change.old[i] != change.new[i]]
        first_old, _, per_column, all_rules = merged.get(change.row, (change.old, None, {}, []))
        for i in touched:
            _add(per_column.setdefault(i, []), rules)
        _add(all_rules, rules)
        merged[change.row] = (first_old, change.new, per_column, all_rules)
    out: list[Change] = []
    for row, (old, new, per_column, all_rules) in merged.items():
        if old == new:
            continue  # changed and changed back within the step
        table_name = row[0]
        kind = "added" if old is None else "removed" if new is None else "changed"
        names = TABLES[table_name]
        column_rules = {names[i]: r for i, r in per_column.items()
                        if old is None or new is None or old[i] != new[i]}
        out.append(Change(table_name, _row_key(table_name, row), kind, _values(table_name, old),
                          _values(table_name, new), all_rules, column_rules))
    return out


def _add(into: list[str], rules: Iterable[str]) -> None:
    for r in rules:
        if r not in into:
            into.append(r)


# ---------------------------------------------------------------------------
# Replaying in the checker's order


class _ReplayClock(ManualClock):
    """Returns the readings the checker's solution chose, in order (wall traces)."""

    def __init__(self, readings: list[int]) -> None:
        super().__init__(readings[0] if readings else 0)
        self.queue = deque(readings)

    def now_ms(self) -> int:
        if self.queue:
            self.ms = self.queue.popleft()
        return super().now_ms()


class _OrderRecordingSearch(checker._Search):
    """The checker's search, noting the steps of the execution it settles on.

    Steps are logged as the search makes them; a checkpoint remembers how many there were,
    and going back to a checkpoint forgets the later ones, so when the search ends the log is
    the order of the execution that explains the trace.
    """

    def _fresh(self) -> None:
        super()._fresh()
        self.order: list[tuple[str, int, Any]] = []

    def _take_checkpoint(self) -> None:
        super()._take_checkpoint()
        self.checkpoints[-1].logged = len(self.order)  # type: ignore[attr-defined]

    def _restore(self, cp: Any) -> None:
        super()._restore(cp)
        del self.order[getattr(cp, "logged", 0):]

    def _execute(self, op: checker.Op) -> None:
        self.order.append(("exec", self.pos, op))
        super()._execute(op)

    def _time_out(self, op: checker.Op) -> None:
        self.order.append(("timeout", self.pos, op))
        super()._time_out(op)

    def _close(self, client: int) -> None:
        self.order.append(("close", self.pos, client))
        super()._close(client)

    def _model_choice(self, n: int) -> int:
        chosen = super()._model_choice(n)  # SWAPDB-8: which of n keys the walk signals next
        self.order.append(("choice", self.pos, chosen))
        return chosen


def _resolved_order(trace: Trace, dialect: Any) -> tuple[list[tuple[str, int, Any]], list[int]] | None:
    """The checker's order of steps and its clock readings, or None if it finds no execution."""
    kinds, at = checker._operations(trace)
    search = _OrderRecordingSearch(trace, dialect, kinds, at)
    if search.run().status != "conform":
        return None
    readings = search.zone.lo[1:] if search.wall else []
    return search.order, readings


def _replay_ordered(trace: Trace, dialect: Any, order: list[tuple[str, int, Any]],
                    readings: list[int]) -> _Replayer:
    wall = trace.header.clock == "wall"
    clock: ManualClock = _ReplayClock(readings) if wall else ManualClock(0)
    r = _Replayer(trace, dialect, clock)
    # The model's own choices (SWAPDB-8), made again in the order the search made them.
    choices = iter([item for kind, _, item in order if kind == "choice"])
    r.server.chooser = lambda n: next(choices, 0)
    by_pos: dict[int, list[tuple[str, Any]]] = {}
    for kind, pos, item in order:
        if kind != "choice":
            by_pos.setdefault(pos, []).append((kind, item))
    for p, e in enumerate(trace.events):
        if isinstance(e, Connect):
            r.connect(e.c)
        elif isinstance(e, Note):
            r.notes.append(e.text)
        for kind, item in by_pos.get(p, ()):
            if kind == "close":
                r.close(item, p + 2)
                continue
            op: checker.Op = item
            now = None  # wall traces: the step's last clock reading, known once it ran
            if kind == "exec":
                if not wall:
                    clock.ms = op.now  # type: ignore[assignment]
                    now = op.now
                r.execute(op.client, op.argv, op.inv + 2, op.expected,
                          None if op.resp is None else op.resp + 2, now)
            else:
                if wall:
                    clock.now_ms()  # the reading at which the timeout fired (BLOCK-8)
                    now = clock.ms
                else:
                    clock.ms = op.recv_now  # type: ignore[assignment]
                    now = op.recv_now
                r.time_out(op.client, None if op.resp is None else op.resp + 2, op.expected, now)
    return r


def _replay_file_order(trace: Trace, dialect: Any) -> _Replayer:
    """Every command executes when it is sent; a client still blocked at its recv times out then.

    The clock is the event's ``now``, or its time (``t0``/``t``) in ms, never going back.
    """
    clock = ManualClock(0)
    r = _Replayer(trace, dialect, clock)
    answers: dict[int, tuple[int, Recv]] = {}  # send event -> its recv (event, event)
    waiting: dict[int, list[int]] = {}
    for p, e in enumerate(trace.events):
        if isinstance(e, Send):
            waiting.setdefault(e.c, []).append(p)
        elif isinstance(e, Recv) and waiting.get(e.c):
            answers[waiting[e.c].pop(0)] = (p, e)

    def at(now: int | None, t: int | None) -> int:
        if now is not None:
            return now
        return max(clock.ms, t // 1000) if t is not None else clock.ms

    for p, e in enumerate(trace.events):
        line = p + 2
        if isinstance(e, Call):
            clock.ms = at(e.now, e.t0)
            r.execute(e.c, e.cmd, line, e.reply, line, clock.ms)
        elif isinstance(e, Send) and e.cmd is not None:
            blocked = e.c in r.server.clients and r.server.clients[e.c].blocked is not None
            if blocked:
                continue  # pipelined behind a blocked command: the model cannot run it yet
            clock.ms = at(e.now, e.t)
            answer = answers.get(p)
            r.execute(e.c, e.cmd, line, None if answer is None else answer[1].reply,
                      None if answer is None else answer[0] + 2, clock.ms)
        elif isinstance(e, Recv):
            entry = r.blocked.get(e.c)
            if entry is not None and entry[1] == line:
                clock.ms = at(e.now, e.t)
                r.time_out(e.c, line, e.reply, clock.ms)
        elif isinstance(e, Close):
            r.close(e.c, line)
        elif isinstance(e, Connect):
            r.connect(e.c)
        elif isinstance(e, Note):
            r.notes.append(e.text)
    return r


def explain(trace: Trace, dialect: str | None = None) -> Explanation:
    """Replay ``trace`` on the model (in the checker's order when it finds one) and collect its steps."""
    d = checker.trace_dialect(trace, dialect)
    resolved = None
    if checker._config_reason(trace, d) is None:
        try:
            resolved = _resolved_order(trace, d)
        except checker._Unsupported:
            resolved = None
    if resolved is not None:
        verdict = checker.Verdict("conform", len(trace.events))
    else:
        verdict = checker.check_trace(trace, dialect)
    if verdict.status == "unsupported":
        return Explanation(trace, verdict, "none", f"not replayed: {verdict.message}", [], None)
    order_note = ""
    prefix = trace
    if verdict.status == "diverge" and verdict.event is not None:
        prefix = Trace(trace.header, trace.events[:verdict.event - 1], trace.path)
        order_note = (f"replayed up to event {verdict.event - 1} (line {verdict.event}); "
                      f"event {verdict.event} (line {verdict.event + 1}) is where the trace diverges")
        resolved = _resolved_order(prefix, d)
    if resolved is not None:
        replayer = _replay_ordered(prefix, d, *resolved)
        order, note = "checker", "order and clock readings as the conformance checker explained the trace"
    else:
        replayer = _replay_file_order(prefix, d)
        order = "file"
        note = ("the checker settled no order, so commands run in the file's order at the times the "
                "trace gives; replies may differ from the trace")
    if order_note:
        note += "; " + order_note
    readings = [s.now for s in replayer.steps if s.now is not None]
    return Explanation(trace, verdict, order, note, replayer.steps, min(readings) if readings else None)


# ---------------------------------------------------------------------------
# Rendering: plain text, rich, JSON


def _show_value(column: str, value: Any, now: int | None) -> str:
    if value is None:
        return "never" if column == "deadline" else "nil" if column in ("entries-read", "lag") else "-"
    if column in TIME_COLUMNS and now is not None:
        if column == "deadline":
            return f"in {value - now} ms"
        return f"{now - value} ms"
    if column == "fields":
        return " ".join(value if isinstance(value, list) else [text(v) for v in value])
    return str(value)


def _column_title(column: str) -> str:
    return TIME_COLUMNS.get(column, column)


def _relative(now: int | None, start: int | None) -> str:
    if now is None:
        return ""
    if start is None:
        return f"now {now}"
    return f"t+{now - start} ms"


def _command_text(argv: Sequence[bytes]) -> str:
    return " ".join(_quote(text(a)) for a in argv)


def _quote(s: str) -> str:
    return s if s and re.fullmatch(r"[\w.:$>*+\-()=~#@/]+", s) else json.dumps(s, ensure_ascii=False)


def _rules_note(rules: list[str]) -> str:
    return f"[{', '.join(rules)}]" if rules else "[no rule cited]"


def change_text(change: Change, now: int | None) -> str:
    """One line: ``~ pending s g 1-0: owner alice -> bob [XCLAIM-14]; ...``."""
    name = " ".join(str(v) for v in change.row.values())
    label = {"keys": "key", "entries": "entry", "groups": "group", "pending": "pending",
             "consumers": "consumer", "clients": "client"}[change.table] + f" {name}"
    if change.kind == "added":
        assert change.new is not None
        body = ", ".join(f"{_column_title(c)} {_show_value(c, v, now)}" for c, v in change.new.items()
                         if v is not None)
        return f"+ {label}: {body}  {_rules_note(change.rules)}"
    if change.kind == "removed":
        return f"- {label}  {_rules_note(change.rules)}"
    assert change.old is not None and change.new is not None
    columns = change.columns()
    per_column = [change.column_rules.get(c, []) for c in columns]
    same = all(r == per_column[0] for r in per_column)
    parts = []
    for c, rules in zip(columns, per_column, strict=True):
        part = f"{_column_title(c)} {_show_value(c, change.old[c], now)} -> {_show_value(c, change.new[c], now)}"
        parts.append(part if same else f"{part} {_rules_note(rules)}")
    body = "; ".join(parts)
    return f"~ {label}: {body}  {_rules_note(per_column[0])}" if same else f"~ {label}: {body}"


def _table_rows(step: Step) -> dict[str, list[tuple[dict[str, Any], dict[str, Any], str, Change | None]]]:
    """Per table: (key columns, values, mark, change) for the current rows and the removed ones."""
    changes = {(c.table, tuple(c.row.values())): c for c in step.changes}
    out: dict[str, list[tuple[dict[str, Any], dict[str, Any], str, Change | None]]] = {t: [] for t in TABLES}
    for row, values in step.state.items():
        t = row[0]
        key = _row_key(t, row)
        change = changes.get((t, tuple(key.values())))
        mark = " " if change is None else "+" if change.kind == "added" else "*"
        vals = _values(t, values)
        assert vals is not None
        out[t].append((key, vals, mark, change))
    for change in step.changes:
        if change.kind == "removed" and change.old is not None:
            out[change.table].append((change.row, change.old, "-", change))
    return out


ENTRY_ROWS_SHOWN = 12

ROUTINE_PREFIXES = ("DISPATCH-", "CONN-", "PROP-")
"""Rules the dispatcher checks for every command; the text output lists them only when they
changed something or decided an error (the JSON output always does)."""


def also_checked(step: Step) -> list[str]:
    return [r for r in step.checked if r not in step.rules and not r.startswith(ROUTINE_PREFIXES)]


def _visible(rows: list[Any]) -> tuple[list[Any], int]:
    """At most ENTRY_ROWS_SHOWN entries per table: the changed ones and the newest."""
    if len(rows) <= ENTRY_ROWS_SHOWN:
        return rows, 0
    changed = [r for r in rows if r[2] != " "]
    rest = [r for r in rows if r[2] == " "][-(max(ENTRY_ROWS_SHOWN - len(changed), 0)):]
    keep = {id(r) for r in changed + rest}
    shown = [r for r in rows if id(r) in keep]
    return shown, len(rows) - len(shown)


def _plain_table(title: str, header: list[str], rows: list[list[str]], marks: list[str], out: TextIO) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out.write(f"  {title}\n")
    out.write("      " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n")
    for mark, row in zip(marks, rows, strict=True):
        out.write(f"    {mark} " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def _cells(key: dict[str, Any], vals: dict[str, Any], change: Change | None, now: int | None,
           was: bool) -> list[str]:
    cells = [str(v) for v in key.values()]
    changed = change.columns() if change is not None else []
    for c, v in vals.items():
        cell = _show_value(c, v, now)
        if was and c in changed and change is not None and change.old is not None:
            cell += f" (was {_show_value(c, change.old[c], now)})"
        cells.append(cell)
    return cells


def _headline(step: Step, start: int | None) -> str:
    where = f"line {step.line}" if step.line is not None else "generated"
    when = _relative(step.now, start)
    if step.kind == "command":
        return f"{where} · client {step.client} · {when}"
    if step.kind == "timeout":
        return f"{where} · client {step.client} times out (BLOCK-8) · {when}"
    return f"{where} · client {step.client} closes its connection · {when}"


def _reply_lines(step: Step) -> list[tuple[str, bool]]:
    """(text, is a mismatch) lines about the step's reply and the clients it served."""
    lines: list[tuple[str, bool]] = []
    if step.blocked:
        lines.append(("< (blocks)", False))
    elif step.reply is not None:
        lines.append((f"< {show(step.reply)}", False))
        if not step.matches and step.expected is not None:
            lines.append((f"! the trace says {show(step.expected)}", True))
    for s in step.served:
        where = f" (line {s.line})" if s.line is not None else ""
        lines.append((f"< client {s.client} is served{where}: {show(s.reply)}", False))
        if not s.matches and s.expected is not None:
            lines.append((f"! the trace says {show(s.expected)}", True))
    return lines


def render_plain(steps: Sequence[Step], out: TextIO, start: int | None = None, tables: bool = True) -> None:
    for n, step in enumerate(steps, 1):
        for note in step.notes:
            out.write(f"\n# {note}\n")
        out.write(f"\n[{n}] {_headline(step, start)}\n")
        if step.command is not None:
            out.write(f"  > {_command_text(step.command)}\n")
        for line, _ in _reply_lines(step):
            out.write(f"  {line}\n")
        if step.changes:
            out.write("  changes:\n")
            for change in step.changes:
                out.write(f"    {change_text(change, step.now)}\n")
        else:
            out.write("  no state change\n")
        if step.rules:
            out.write(f"  rules: {', '.join(step.rules)}\n")
        other = also_checked(step)
        if other:
            out.write(f"  also checked: {', '.join(other)}\n")
        for t, rows in _table_rows(step).items() if tables else ():
            rows, hidden = _visible(rows) if t == "entries" else (rows, 0)
            if not rows:
                continue
            header = list(KEY_COLUMNS[t]) + [_column_title(c) for c in TABLES[t]]
            cells = [_cells(k, v, c, step.now, True) for k, v, _, c in rows]
            title = TITLES[t] + (f" ({hidden} unchanged not shown)" if hidden else "")
            _plain_table(title, header, cells, [m for _, _, m, _ in rows], out)


def render_rich(steps: Sequence[Step], out: TextIO, start: int | None = None, tables: bool = True) -> None:
    from rich.console import Console, Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=False)
    for n, step in enumerate(steps, 1):
        for note in step.notes:
            console.print(Text(f"# {note}", style="italic cyan"))
        parts: list[Any] = []
        if step.command is not None:
            parts.append(Text("> " + _command_text(step.command), style="bold"))
        for line, bad in _reply_lines(step):
            parts.append(Text(line, style="bold red" if bad else "green"))
        for change in step.changes:
            style = {"added": "green", "removed": "red", "changed": "yellow"}[change.kind]
            parts.append(Text(change_text(change, step.now), style=style))
        if not step.changes:
            parts.append(Text("no state change", style="dim"))
        other = also_checked(step)
        if step.rules or other:
            t = Text("rules: ", style="bold")
            t.append(", ".join(step.rules) or "-", style="bold magenta")
            if other:
                t.append("   also checked: " + ", ".join(other), style="dim")
            parts.append(t)
        for name, rows in _table_rows(step).items() if tables else ():
            rows, hidden = _visible(rows) if name == "entries" else (rows, 0)
            if not rows:
                continue
            title = TITLES[name] + (f" ({hidden} unchanged not shown)" if hidden else "")
            table = Table(title=title, title_justify="left", title_style="bold", show_edge=False,
                          header_style="dim", pad_edge=False)
            for c in [*KEY_COLUMNS[name], *(_column_title(c) for c in TABLES[name])]:
                table.add_column(c)
            for key, vals, mark, row_change in rows:
                row_changed = row_change.columns() if row_change is not None else []
                cells = _cells(key, vals, row_change, step.now, False)
                styled: list[Text] = []
                n_keys = len(key)
                for i, cell in enumerate(cells):
                    column = None if i < n_keys else list(vals)[i - n_keys]
                    if mark == "+":
                        styled.append(Text(cell, style="green"))
                    elif mark == "-":
                        styled.append(Text(cell, style="red strike"))
                    elif column in row_changed and row_change is not None and row_change.old is not None:
                        t = Text(cell, style="bold yellow")
                        t.append(f" (was {_show_value(column, row_change.old[column], step.now)})", style="dim")
                        styled.append(t)
                    else:
                        styled.append(Text(cell))
                table.add_row(*styled)
            parts.append(table)
        console.print(Panel(Group(*parts), title=f"[{n}] {_headline(step, start)}", title_align="left",
                            border_style="blue"))


def render_steps(steps: Sequence[Step], *, plain: bool = True, out: TextIO | None = None,
                 start: int | None = None, tables: bool = True) -> None:
    """Print steps with rich (boxes, colours) or as plain text.

    ``start`` is the time shown as t+0; ``tables=False`` leaves out the state tables and
    keeps the changes. Steps come from :func:`explain` (a counterexample is a trace too).
    """
    out = out if out is not None else sys.stdout
    if not plain:
        try:
            render_rich(steps, out, start, tables)
            return
        except ImportError:  # rich is optional: without it the text form is the output
            pass
    render_plain(steps, out, start, tables)


def _json_value(v: Any) -> Any:
    if isinstance(v, bytes):
        return arg_to_json(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    return v


def step_json(step: Step) -> dict[str, Any]:
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    for row, values in step.state.items():
        t = row[0]
        d = _row_key(t, row)
        vals = _values(t, values)
        assert vals is not None
        for c, v in vals.items():
            d[c] = _json_value(v)
            if c in TIME_COLUMNS and v is not None and step.now is not None:
                d["idle" if c == "delivery-time" else "seen-idle" if c == "seen-time" else "remaining"] = (
                    v - step.now if c == "deadline" else step.now - v)
        tables[t].append(d)
    return {
        "kind": step.kind,
        "line": step.line,
        "client": step.client,
        "now": step.now,
        "command": None if step.command is None else [arg_to_json(a) for a in step.command],
        "blocked": step.blocked,
        "reply": None if step.reply is None else to_json(step.reply),
        "trace_reply": None if step.expected is None else to_json(step.expected),
        "matches": step.matches,
        "served": [{"client": s.client, "line": s.line, "reply": to_json(s.reply),
                    "matches": s.matches} for s in step.served],
        "rules": step.rules,
        "checked": step.checked,
        "changes": [{"table": c.table, "row": c.row, "kind": c.kind, "column_rules": c.column_rules,
                     "old": None if c.old is None else {k: _json_value(v) for k, v in c.old.items()},
                     "new": None if c.new is None else {k: _json_value(v) for k, v in c.new.items()},
                     "rules": c.rules} for c in step.changes],
        "state": tables,
        "notes": step.notes,
    }


def explanation_json(e: Explanation) -> dict[str, Any]:
    index = spec_index()
    used = sorted({r for s in e.steps for r in [*s.rules, *s.checked]})
    v = e.verdict
    return {
        "trace": e.trace.path,
        "title": e.trace.header.title,
        "verdict": {"status": v.status, "event": v.event, "message": v.message},
        "order": e.order,
        "note": e.note,
        "steps": [step_json(s) for s in e.steps],
        "rule_files": {r: index.files[r] for r in used},
    }


def explain_trace(trace: Trace, *, plain: bool = False, out: TextIO | None = None, as_json: bool = False,
                  dialect: str | None = None, tables: bool = True) -> Explanation:
    """Replay ``trace`` on the model and print it step by step (or as JSON); returns what was shown."""
    out = out if out is not None else sys.stdout
    e = explain(trace, dialect)
    if as_json:
        json.dump(explanation_json(e), out, ensure_ascii=False, indent=1)
        out.write("\n")
        return e
    title = trace.header.title or Path(trace.path).name
    out.write(f"{title}\n{trace.path} · {trace.header.server_name} {trace.header.server_version} · "
              f"{trace.header.clock} clock · {e.note}\n")
    render_steps(e.steps, plain=plain, out=out, start=e.start, tables=tables)
    out.write(f"\nverdict: {e.verdict.describe()}\n")
    return e


@click.command("explain")
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plain", is_flag=True, help="Plain text, no colours or boxes (the default when not a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every step with its state and rules.")
@click.option("--changes-only", is_flag=True, help="Leave out the state tables after each step.")
@click.option("--dialect", default="auto", show_default=True, help="Dialect, or 'auto' from the trace header.")
def explain_command(trace_path: Path, plain: bool, as_json: bool, changes_only: bool, dialect: str) -> None:
    """Replay a trace on the model and show, after each command, the state and the rules that changed it.

    Exit status: 0 when the trace conforms, 1 when it does not (it is shown up to where it
    diverges), 2 for a file that is not a valid trace.
    """
    try:
        trace = load(trace_path)
        plain = plain or not sys.stdout.isatty()
        e = explain_trace(trace, plain=plain, as_json=as_json, dialect=None if dialect == "auto" else dialect,
                          tables=not changes_only)
    except TraceError as err:
        click.echo(f"xspec explain: {err}", err=True)
        sys.exit(2)
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    sys.exit(0 if e.verdict.status == "conform" else 1)


__all__ = ["Change", "Explanation", "RuleMap", "RuleTracer", "Step", "explain", "explain_command",
           "explain_trace", "render_steps", "state_rows"]
