"""The specification and the model refer to each other correctly.

Every rule id the model or the shared spec code cites is defined exactly once
in spec/rules/*.md or spec/invariants.md, and every defined rule is cited by
the model or named by a test that exercises it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFINITION = re.compile(r"\*\*([A-Z][A-Z]*(?:-[A-Z]+)?-\d+)\b")
CITATION = re.compile(r"\b([A-Z][A-Z]+(?:-[A-Z]+)?-\d+)\b")
# Words in code that look like rule ids but are not (hash algorithms, encodings ...).
NOT_RULES = re.compile(r"^(UTF|SHA|CVE|RFC|ISO|PR|RESP|LP|INT|UINT)-")


def defined() -> Counter[str]:
    c: Counter[str] = Counter()
    # The normative files: command rules, invariants, and the rules of the
    # explorer and of the proof catalogue.
    normative = [ROOT / "spec" / name for name in ("invariants.md", "exploration.md", "proofs.md")]
    for md in [*sorted((ROOT / "spec" / "rules").glob("*.md")), *normative]:
        c.update(DEFINITION.findall(md.read_text()))
    return c


def cited(folders: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for folder in folders:
        for py in (ROOT / folder).rglob("*.py"):
            for rule in CITATION.findall(py.read_text()):
                if not NOT_RULES.match(rule):
                    out.setdefault(rule, set()).add(str(py.relative_to(ROOT)))
    return out


def test_every_rule_is_defined_once():
    dupes = [r for r, n in defined().items() if n > 1]
    assert not dupes, f"rules defined more than once: {dupes}"


def test_every_cited_rule_is_defined():
    rules = defined()
    missing = {r: sorted(files) for r, files in cited(["models", "spec", "traces"]).items() if r not in rules}
    assert not missing, f"cited but not defined in spec/: {missing}"


def test_every_rule_is_implemented_or_tested_by_name():
    users = cited(["models", "spec", "tests"])
    uncited = sorted(r for r in defined() if r not in users)
    assert not uncited, f"rules that neither model code nor a test names: {uncited}"
