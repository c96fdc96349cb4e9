"""The specification and the code refer to each other correctly.

Every rule id the model, the reference server, the shared spec code, the trace tools, the
explorer or the proofs cite is defined exactly once in the spec (spec/rules/*.md,
spec/invariants.md, spec/exploration.md, spec/proofs.md), and every defined rule is cited by the
code implementing it (the model, the spec's code, the explorer, the proofs) or named by a test
that exercises it. Rules the reference does not cite yet are not an error: spec/requirements.md lists them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xspec.spec.rule_index import defined_ids, mentioned_ids, python_files

ROOT = Path(__file__).resolve().parent.parent


def cited(folders: list[str]) -> dict[str, set[str]]:
    """Rule id -> the files under ``folders`` that write it out (defined or not)."""
    out: dict[str, set[str]] = {}
    for folder in folders:
        for py in python_files(ROOT / folder):
            for rule in mentioned_ids(py.read_text(encoding="utf-8")):
                out.setdefault(rule, set()).add(py.relative_to(ROOT).as_posix())
    return out


def test_every_rule_is_defined_once():
    dupes = [r for r, n in defined_ids().items() if n > 1]
    assert not dupes, f"rules defined more than once: {dupes}"


@pytest.mark.parametrize("folders", [["models"], ["reference"], ["spec", "traces", "explore", "proofs"]],
                         ids=lambda f: "+".join(f))
def test_every_cited_rule_is_defined(folders: list[str]):
    rules = defined_ids()
    missing = {r: sorted(files) for r, files in cited(folders).items() if r not in rules}
    assert not missing, f"cited but not defined in spec/: {missing}"


def test_every_rule_is_implemented_or_tested_by_name():
    users = cited(["models", "spec", "explore", "proofs", "tests"])
    uncited = sorted(r for r in defined_ids() if r not in users)
    assert not uncited, f"rules that neither model code nor a test names: {uncited}"


def test_unnumbered_rules_are_rule_ids():
    """The environment rules are named, not numbered; words that only look like them are not rule ids."""
    assert {"ENV-HELLO", "ENV-CLIENT-ID", "ENV-CLIENT-LIST", "ENV-INFO"} <= set(defined_ids())
    text = "ENV-HELLO, ENV-CLIENT-LIST (CLIENT LIST NOT-FLAGS, LIB-NAME); ENV-0"
    assert mentioned_ids(text) == ["ENV-HELLO", "ENV-CLIENT-LIST", "ENV-0"]
