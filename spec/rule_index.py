"""The rule index: every rule id of the spec, its text, and the places that name it.

Rules are defined in the normative markdown (:func:`definition_files`) by a paragraph that starts
with the id in bold (``**XCLAIM-6** ...``); the families of :data:`UNNUMBERED_FAMILIES` name their
rules instead of numbering them (``**ENV-HELLO** ...``). Code and tests name a rule by writing its id: the model
and the reference in comments and docstrings (``# XCLAIM-6``), tests in docstrings, comments or
names, and corpus traces in their free text only (the header's ``title`` and ``note`` events: the
trace format has no field for rules).

The index is built from the source tree by :func:`build` and shipped as ``rule_index.json`` beside
this module, with the requirements matrix ``requirements.md``; ``python -m xspec.spec.rule_index
--write`` regenerates both. At run time :func:`load_index` reads only the JSON, so an installed
xspec has the index without its sources.

It also holds, for every line of the model's modules, the rules that govern that line
(:class:`LineRules`), which ``xspec explain`` follows while the model runs; :func:`file_rules`
documents how they are derived from the comments.

This module imports nothing of xspec: it reads the other folders as text (``ast``, ``tokenize``).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import json
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

SPEC_DIR = Path(__file__).resolve().parent
ROOT = SPEC_DIR.parent
"""The repository when this module runs from a checkout; the builder needs one."""

INDEX_JSON = SPEC_DIR / "rule_index.json"
REQUIREMENTS_MD = SPEC_DIR / "requirements.md"
WRITE_COMMAND = "python -m xspec.spec.rule_index --write"
FORMAT = 1

# ---------------------------------------------------------------------------
# Reading rule ids

UNNUMBERED_FAMILIES = ("ENV",)
"""The families whose rules have names instead of numbers (``ENV-HELLO``, spec/rules/environment.md).
Only these may: so a word such as ``NOT-FLAGS`` or ``LIB-NAME`` is never taken for a rule id."""

_UNNUMBERED = rf"(?:{'|'.join(UNNUMBERED_FAMILIES)})(?:-[A-Z]+)+(?![-\w])"
"""An unnumbered id: its family, then words (``ENV-CLIENT-LIST``), and nothing id-like after them."""

DEFINITION = re.compile(rf"\*\*([A-Z][A-Z]*(?:-[A-Z]+)?-\d+\b|{_UNNUMBERED}(?=\*\*))")
"""A rule's definition: its id in bold, at the start of its paragraph (an unnumbered id alone in the bold)."""

CITATION = re.compile(rf"\b(?:([A-Z][A-Z]+(?:-[A-Z]+)?)-(\d+)((?:\s*,\s*-\d+)*)|({_UNNUMBERED}))")
"""A citation; ``XREADGROUP-7, -10`` names two rules, ``ENV-HELLO`` one."""

RANGE = re.compile(r"\b([A-Z][A-Z]+(?:-[A-Z]+)?)-(\d+)\s*\.\.\s*([A-Z][A-Z]+(?:-[A-Z]+)?)?-?(\d+)")
"""A range of rules: ``XREAD-1 .. XREAD-7``, ``XREADGROUP-2..4``."""

NOT_RULES = re.compile(r"^(UTF|SHA|CVE|RFC|ISO|PR|RESP|LP|INT|UINT)-")
"""Words that look like rule ids but are not (encodings, hash algorithms, ...)."""

_HEADING = re.compile(r"^#+ ")
_ANY_DEFINITION = re.compile(r"^\*\*[A-Z][A-Z]*(?:-[A-Z0-9]+)+\b")
"""Where a rule's text ends: the next heading, or the next bold id (also the unnumbered ``**ENV-HELLO**``)."""
_SECTION = re.compile(r"^## (.+)$")
_DIALECT_LIST = re.compile(r"\s*\(((?:`[\w.-]+`(?:,\s*)?)+)")
"""A dialect rule starts with the dialects it is about: ``**XREADGROUP-DIALECT-1** (`redis-7.2`, ...)``."""
_TITLE = re.compile(r"^\s*\(([^)]*)\)\s*\.?\s*$")


def command_rule_files(spec_dir: Path = SPEC_DIR) -> list[Path]:
    """The files of rules about commands: a section heading names the commands its rules are about."""
    return [*sorted((spec_dir / "rules").glob("*.md")), spec_dir / "invariants.md"]


def definition_files(spec_dir: Path = SPEC_DIR) -> list[Path]:
    """Every file that defines rules: the command rules, the explorer's and the proof catalogue's.

    ``dialects.md`` and the other documents only cite rules.
    """
    return [*command_rule_files(spec_dir), spec_dir / "exploration.md", spec_dir / "proofs.md"]


def _cited_ids(m: re.Match[str]) -> list[str]:
    """The ids one :data:`CITATION` match names."""
    if m.group(4):
        return [m.group(4)]
    return [f"{m.group(1)}-{n}" for n in [m.group(2), *re.findall(r"-(\d+)", m.group(3))]]


def rule_prefix(rule: str) -> str:
    """The id without its number (``XREAD-DIALECT`` for XREAD-DIALECT-1); an unnumbered id's family (``ENV``)."""
    head, _, last = rule.rpartition("-")
    return head if last.isdigit() else rule.split("-", 1)[0]


def defined_ids(spec_dir: Path = SPEC_DIR) -> Counter[str]:
    """How many times each rule id is defined (more than once is an error of the spec)."""
    count: Counter[str] = Counter()
    for md in definition_files(spec_dir):
        count.update(DEFINITION.findall(md.read_text(encoding="utf-8")))
    return count


def mentioned_ids(text: str) -> list[str]:
    """Every rule id ``text`` writes out, defined or not, in order and once each.

    ``XREADGROUP-7, -10`` is two ids; a range gives its two ends. Words that only look like
    rule ids (``UTF-8``) are left out.
    """
    out: list[str] = []
    for m in CITATION.finditer(text):
        for rule in _cited_ids(m):
            if not NOT_RULES.match(rule) and rule not in out:
                out.append(rule)
    return out


def named_rules(text: str, defined: Iterable[str] | Mapping[str, Any]) -> list[str]:
    """The defined rules ``text`` names, in order: its citations, and every rule within a range."""
    known = defined if isinstance(defined, Mapping) else set(defined)
    out = [r for r in mentioned_ids(text) if r in known]
    for m in RANGE.finditer(text):
        prefix, first, other, last = m.group(1), int(m.group(2)), m.group(3), int(m.group(4))
        if other not in (None, prefix):
            continue
        for n in range(first, last + 1):
            rule = f"{prefix}-{n}"
            if rule in known and rule not in out:
                out.append(rule)
    return out


def cited_rules(text: str, defined: Iterable[str] | Mapping[str, Any]) -> tuple[str, ...]:
    """The defined rules a comment or docstring cites, in order (``XREADGROUP-7, -10`` is two).

    Ranges (``XREAD-1 .. XREAD-7``) are left out: they summarise a function, they do not say
    which rule a line implements.
    """
    known = defined if isinstance(defined, Mapping) else set(defined)
    out: list[str] = []
    for m in CITATION.finditer(RANGE.sub(" ", text)):
        for rule in _cited_ids(m):
            if rule in known and rule not in out:
                out.append(rule)
    return tuple(out)


# ---------------------------------------------------------------------------
# The rules governing each line of the model


Levels = tuple[tuple[str, ...], ...]
"""Candidate rules of a moment, most specific first: the line's, its enclosing blocks', its
function's docstring's, then its caller's. ``xspec explain`` reports the first level that names
a rule of the step's commands."""


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


def _comment_rules(source: str, defined: Mapping[str, Any]) -> tuple[dict[int, tuple[str, ...]], set[int]]:
    """Rule citations per line, and the lines holding only a comment."""
    by_line: dict[int, tuple[str, ...]] = {}
    code_lines: set[int] = set()
    comment_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comment_lines.add(tok.start[0])
            rules = cited_rules(tok.string, defined)
            if rules:
                by_line[tok.start[0]] = by_line.get(tok.start[0], ()) + rules
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            for n in range(tok.start[0], tok.end[0] + 1):
                code_lines.add(n)
    return by_line, comment_lines - code_lines


def chain(*levels: tuple[str, ...]) -> Levels:
    """The non-empty levels, each once, in order."""
    out: list[tuple[str, ...]] = []
    for level in levels:
        if level and level not in out:
            out.append(level)
    return tuple(out)


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


def file_rules(source: str, defined: Mapping[str, Any], filename: str = "<model>") -> dict[int, LineRules]:
    """Which rules govern each line of one model module.

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

    Levels 3 and 5 are the tracer's (``xspec explain``); this gives 1, 2 and 4 per line. Lines
    outside every statement (blank lines, comments between statements) have no entry.
    """
    by_line, comment_only = _comment_rules(source, defined)
    text_lines = source.splitlines()
    tree = ast.parse("\n".join(text_lines) + "\n", filename)
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
                suite(stmt.body, (), cited_rules(docstring, defined))
                continue
            if isinstance(stmt, ast.ClassDef):
                suite(stmt.body, (), ())
                continue
            blocks = _blocks(stmt)
            mine = own(stmt, bool(blocks))
            levels = chain(mine, *enclosing) if mine else chain(*siblings, *enclosing)
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
                        branch = chain(cited, *enclosing) if cited else governed
                    suite(body, branch, doc)
                    if body:
                        last_end = body[-1].end_lineno or body[-1].lineno
            else:
                mark(stmt.lineno, stmt.end_lineno or stmt.lineno, LineRules(levels, mine, doc, mine))

    suite(tree.body, (), ())
    return out


# ---------------------------------------------------------------------------
# The index as loaded at run time


SITE_KINDS = ("model", "reference", "tests", "traces")
"""Where a rule can be named: the model, the reference server, the tests, the corpus traces."""


@dataclass(frozen=True)
class Rule:
    """One rule: its text and every place that names it (``path:line``, paths from the repository root)."""

    id: str
    text: str  # the definition's markdown after the bold id (and after a title in parentheses)
    title: str  # ``ordered log`` for ``**INV-1 (ordered log).**``; mostly empty
    defined_at: str  # spec/rules/groups.md:20
    dialects: tuple[str, ...] = ()  # a dialect rule's dialects (XCLAIM-DIALECT-1); empty for the others
    model: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    traces: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        """The spec file defining it: ``spec/rules/groups.md``."""
        return self.defined_at.rsplit(":", 1)[0]

    @property
    def family(self) -> str:
        """``XCLAIM`` for XCLAIM-6 and for XCLAIM-DIALECT-1."""
        return self.id.split("-", 1)[0]

    @property
    def summary(self) -> str:
        """The first paragraph of the text on one line, for tables."""
        return " ".join(self.text.split("\n\n", 1)[0].split())

    def sites(self, kind: str) -> tuple[str, ...]:
        """The places of one kind (:data:`SITE_KINDS`)."""
        if kind not in SITE_KINDS:
            raise ValueError(f"unknown kind of site {kind!r}; one of {', '.join(SITE_KINDS)}")
        out: tuple[str, ...] = getattr(self, kind)
        return out


@dataclass
class RuleIndex:
    """Every rule (:attr:`rules`, in spec order), the commands' rule families, and the rules of each model line."""

    rules: dict[str, Rule]
    families: dict[str, frozenset[str]]  # COMMAND -> rule prefixes of the spec sections that name it
    module_paths: dict[str, str]  # model module (xspec.models.groups) -> its file (models/groups.py)
    _ranges: dict[str, list[Any]] = field(repr=False)
    _lines: dict[str, dict[int, LineRules]] = field(default_factory=dict, repr=False)

    def defined(self, rule: str) -> bool:
        return rule in self.rules

    def cited_rules(self, text: str) -> tuple[str, ...]:
        """The defined rules ``text`` cites (:func:`cited_rules`)."""
        return cited_rules(text, self.rules)

    def module_lines(self, module: str) -> dict[int, LineRules]:
        """Every line of a model module that has rules, with them (``xspec.models.groups``).

        Raises KeyError for a module that is not part of the model.
        """
        lines = self._lines.get(module)
        if lines is None:
            lines = {}
            for first, last, levels, direct, doc, own in self._ranges[module]:
                rules = LineRules(tuple(tuple(level) for level in levels), tuple(direct), tuple(doc), tuple(own))
                for n in range(first, last + 1):
                    lines[n] = rules
            self._lines[module] = lines
        return lines

    def line_rules(self, module: str, line: int) -> LineRules | None:
        """The rules governing ``line`` of a model module, or None for a line outside every statement."""
        return self.module_lines(module).get(line)


def _rule_from_json(rule_id: str, d: Mapping[str, Any]) -> Rule:
    return Rule(rule_id, d["text"], d.get("title", ""), d["defined_at"], tuple(d.get("dialects", ())),
                *(tuple(d.get(kind, ())) for kind in SITE_KINDS))


def index_from_json(data: Mapping[str, Any]) -> RuleIndex:
    """A :class:`RuleIndex` from the content of ``rule_index.json``."""
    if data.get("format") != FORMAT:
        raise ValueError(f"rule index format {data.get('format')!r}, expected {FORMAT}: run {WRITE_COMMAND}")
    rules = {rule_id: _rule_from_json(rule_id, d) for rule_id, d in data["rules"].items()}
    families = {name: frozenset(prefixes) for name, prefixes in data["families"].items()}
    modules = data["model_lines"]
    return RuleIndex(rules, families, {m: modules[m]["path"] for m in modules},
                     {m: modules[m]["lines"] for m in modules})


@cache
def load_index() -> RuleIndex:
    """The index shipped in the package (``rule_index.json``); read once per process."""
    return index_from_json(json.loads(INDEX_JSON.read_text(encoding="utf-8")))


# ---------------------------------------------------------------------------
# Building the index from the source tree


class SourceTreeMissing(Exception):
    """The builder runs in a checkout: it reads models/, reference/, tests/ and traces/."""


def _definitions(spec_dir: Path, root: Path) -> dict[str, dict[str, Any]]:
    """Each rule's text, title, definition site and dialects, in spec order (first definition wins)."""
    out: dict[str, dict[str, Any]] = {}
    for md in definition_files(spec_dir):
        rel = md.relative_to(root).as_posix()
        lines = md.read_text(encoding="utf-8").splitlines()
        starts = [(n, m.group(1)) for n, line in enumerate(lines) if (m := DEFINITION.match(line))]
        for k, (n, rule) in enumerate(starts):
            if rule in out:
                continue
            end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
            body = [lines[n]]
            for line in lines[n + 1:end]:
                if _HEADING.match(line) or _ANY_DEFINITION.match(line):
                    break
                body.append(line)
            text = "\n".join(body).strip()
            # The bold span holds the id, and maybe a title and a full stop: **INV-1 (ordered log).**
            bold_end = text.find("**", 2)
            head, text = text[2 + len(rule):bold_end], text[bold_end + 2:].strip()
            title_match = _TITLE.match(head)
            entry: dict[str, Any] = {"text": text, "defined_at": f"{rel}:{n + 1}"}
            if title_match:
                entry["title"] = title_match.group(1)
            named = _DIALECT_LIST.match(text)
            if named:
                entry["dialects"] = re.findall(r"`([\w.-]+)`", named.group(1))
            out[rule] = entry
    return out


def _families(spec_dir: Path) -> dict[str, list[str]]:
    """COMMAND -> the prefixes of the rules defined in the spec sections whose heading names it."""
    families: dict[str, set[str]] = {}
    for md in command_rule_files(spec_dir):
        commands: list[str] = []
        for line in md.read_text(encoding="utf-8").splitlines():
            heading = _SECTION.match(line)
            if heading:
                commands = [w for w in re.split(r"[\s,/]+", heading.group(1)) if re.fullmatch(r"[A-Z]+", w)]
                continue
            for rule in DEFINITION.findall(line):
                for c in commands:
                    families.setdefault(c, set()).add(rule_prefix(rule))
    return {c: sorted(p) for c, p in sorted(families.items())}


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def code_sites(folder: Path, root: Path, defined: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(rule, ``path:line``) for every line of the Python files under ``folder`` that names a defined rule."""
    for path in python_files(folder):
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for rule in named_rules(line, defined):
                yield rule, f"{rel}:{n}"


def trace_files(folder: Path) -> list[Path]:
    return sorted([*folder.rglob("*.jsonl"), *folder.rglob("*.jsonl.gz")])


def _trace_lines(path: Path) -> list[str]:
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8").splitlines()


def trace_sites(folder: Path, root: Path, defined: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(rule, ``path:line``) for the rules a trace's free text names: its header's title, its notes."""
    for path in trace_files(folder):
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(_trace_lines(path), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the corpus tests report broken traces
            if not isinstance(record, dict):
                continue
            texts = [record.get("title")] if n == 1 else [record.get("text")] if record.get("ev") == "note" else []
            for text in texts:
                for rule in named_rules(text, defined) if isinstance(text, str) else ():
                    yield rule, f"{rel}:{n}"


def model_modules(root: Path) -> dict[str, Path]:
    """The model's modules, by dotted name (``xspec.models.groups``)."""
    out: dict[str, Path] = {}
    for path in sorted((root / "models").glob("*.py")):
        out["xspec.models" if path.stem == "__init__" else f"xspec.models.{path.stem}"] = path
    return out


def _line_ranges(lines: Mapping[int, LineRules]) -> list[list[Any]]:
    """Consecutive lines with the same rules as one ``[first, last, levels, direct, doc, own]``."""
    out: list[list[Any]] = []
    for n in sorted(lines):
        r = lines[n]
        row = [[list(level) for level in r.levels], list(r.direct), list(r.doc), list(r.own)]
        if out and out[-1][1] == n - 1 and out[-1][2:] == row:
            out[-1][1] = n
        else:
            out.append([n, n, *row])
    return out


def build(root: Path = ROOT) -> dict[str, Any]:
    """The index of the source tree at ``root``, as stored in ``rule_index.json``."""
    spec_dir = root / "spec"
    missing = [name for name in ("spec", "models", "reference", "tests", "traces") if not (root / name).is_dir()]
    if missing:
        raise SourceTreeMissing(f"{root} is not an xspec checkout (no {', '.join(m + '/' for m in missing)}): "
                                "the rule index is built from the source tree")
    rules = _definitions(spec_dir, root)
    sites: dict[str, dict[str, list[str]]] = {rule: {kind: [] for kind in SITE_KINDS} for rule in rules}
    found = [("model", code_sites(root / "models", root, rules)),
             ("reference", code_sites(root / "reference", root, rules)),
             ("tests", code_sites(root / "tests", root, rules)),
             ("traces", trace_sites(root / "traces", root, rules))]
    for kind, pairs in found:
        for rule, site in pairs:
            sites[rule][kind].append(site)
    for rule, entry in rules.items():
        entry.update({kind: places for kind, places in sites[rule].items() if places})
    lines = {}
    for module, path in model_modules(root).items():
        mapping = file_rules(path.read_text(encoding="utf-8"), rules, str(path))
        lines[module] = {"path": path.relative_to(root).as_posix(), "lines": _line_ranges(mapping)}
    return {"format": FORMAT, "rules": rules, "families": _families(spec_dir), "model_lines": lines}


def render_json(data: Mapping[str, Any]) -> str:
    """The JSON text: one rule, one family, one range of model lines per line, so diffs stay readable."""
    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    rules = ",\n".join(f"  {compact(k)}: {compact(v)}" for k, v in data["rules"].items())
    families = ",\n".join(f"  {compact(k)}: {compact(v)}" for k, v in data["families"].items())
    modules = []
    for name, module in data["model_lines"].items():
        ranges = ",\n".join(f"    {compact(r)}" for r in module["lines"])
        modules.append(f"  {compact(name)}: {{\"path\": {compact(module['path'])}, \"lines\": [\n{ranges}\n  ]}}")
    return (f"{{\"format\": {data['format']},\n\"rules\": {{\n{rules}\n}},\n\"families\": {{\n{families}\n}},\n"
            f"\"model_lines\": {{\n" + ",\n".join(modules) + "\n}}\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _sites_cell(places: Sequence[str]) -> str:
    """``models/groups.py:12, 40; models/pel.py:8``: lines grouped by file."""
    by_file: dict[str, list[str]] = {}
    for place in places:
        path, line = place.rsplit(":", 1)
        by_file.setdefault(path, []).append(line)
    return "; ".join(f"{path}:{', '.join(lines)}" for path, lines in by_file.items())


def render_requirements(index: RuleIndex) -> str:
    """The requirements matrix (``requirements.md``)."""
    rules = list(index.rules.values())
    untested = [r.id for r in rules if not r.tests and not r.traces]
    out = [
        "# Requirements matrix",
        "",
        f"Generated by `{WRITE_COMMAND}` from the spec, the model, the reference server, the tests "
        "and the corpus traces; do not edit. `xspec rules RULE` shows one rule with its places.",
        "A place is a line that names the rule: a comment or docstring of the model or the reference, "
        "any line of a test, the title or a note of a trace (`path:line`; a trace's line 1 is its header).",
        "",
        "| | rules |",
        "| --- | --- |",
        f"| defined | {len(rules)} |",
        f"| with a model site | {sum(1 for r in rules if r.model)} |",
        f"| with a reference site | {sum(1 for r in rules if r.reference)} |",
        f"| named by a test | {sum(1 for r in rules if r.tests)} |",
        f"| named by a corpus trace | {sum(1 for r in rules if r.traces)} |",
        f"| named by no test and no trace | {len(untested)} |",
        "",
    ]
    if untested:
        out += ["Named by no test and no trace: " + ", ".join(untested) + ".", ""]
    current = None
    for r in rules:
        if r.file != current:
            current = r.file
            out += ["", f"## {current}", "", "| rule | model | reference | tests | traces |",
                    "| --- | --- | --- | --- | --- |"]
        out.append(f"| {r.id} | " + " | ".join(_cell(_sites_cell(r.sites(k))) for k in SITE_KINDS) + " |")
    return "\n".join(out) + "\n"


def generated(root: Path = ROOT) -> dict[Path, str]:
    """The generated files and their content for the source tree at ``root``."""
    data = build(root)
    spec_dir = root / "spec"
    return {spec_dir / INDEX_JSON.name: render_json(data),
            spec_dir / REQUIREMENTS_MD.name: render_requirements(index_from_json(data))}


def _differing(files: Mapping[Path, str]) -> list[Path]:
    return [path for path, text in files.items() if not path.exists() or path.read_text(encoding="utf-8") != text]


def stale(root: Path = ROOT) -> list[Path]:
    """The generated files whose content differs from what the source tree gives."""
    return _differing(generated(root))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xspec.spec.rule_index",
                                     description="Build the rule index and the requirements matrix.")
    parser.add_argument("--write", action="store_true",
                        help="write spec/rule_index.json and spec/requirements.md (default: only check them)")
    args = parser.parse_args(argv)
    try:
        files = generated()
    except (SourceTreeMissing, OSError, SyntaxError) as e:
        print(f"rule_index: {e}", file=sys.stderr)
        return 2
    changed = _differing(files)
    if args.write:
        for path in changed:
            path.write_text(files[path], encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    for path in changed:
        print(f"{path.relative_to(ROOT)} is out of date: run {WRITE_COMMAND}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
