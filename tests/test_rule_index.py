"""The rule index (spec/rule_index.py): the committed JSON and requirements matrix are up to date,
its per-line rules are those ``xspec explain`` derives, and ``xspec rules`` shows them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.commands.rules import render_table_rich
from xspec.spec import rule_index
from xspec.spec.rule_index import SITE_KINDS, WRITE_COMMAND, LineRules, RuleIndex, load_index

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fresh() -> RuleIndex:
    """The index of the source tree as it is now (the committed one may be stale: see the first test)."""
    return rule_index.index_from_json(rule_index.build(ROOT))


def test_generated_files_are_up_to_date():
    stale = [path.relative_to(ROOT).as_posix() for path in rule_index.stale(ROOT)]
    assert not stale, f"{', '.join(stale)} out of date: run {WRITE_COMMAND}"


def test_every_rule_points_at_its_definition(fresh: RuleIndex):
    index = fresh
    assert index.rules
    for rule in index.rules.values():
        path, line = rule.defined_at.rsplit(":", 1)
        assert (ROOT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1].startswith(f"**{rule.id}")
        assert rule.text and "**" + rule.id not in rule.text


def test_every_site_names_its_rule(fresh: RuleIndex):
    for rule in fresh.rules.values():
        for kind in SITE_KINDS:
            for place in rule.sites(kind):
                path, line = place.rsplit(":", 1)
                text = (ROOT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
                assert rule.id in rule_index.named_rules(text, fresh.rules), (rule.id, place)


def test_line_rules_cover_every_model_module(fresh: RuleIndex):
    index = fresh
    modules = set(rule_index.model_modules(ROOT))
    assert set(index.module_paths) == modules
    assert any(isinstance(index.line_rules(m, n), LineRules) for m in modules for n in range(1, 200))
    with pytest.raises(KeyError):
        index.line_rules("xspec.models.nosuchmodule", 1)


def _old_explain() -> object:
    explain = pytest.importorskip("xspec.traces.check.explain")
    if not hasattr(explain, "_file_rules"):
        pytest.skip("explain no longer derives line rules itself")
    return explain


def test_line_rules_are_explains(fresh: RuleIndex):
    """While explain still derives line rules from the model's source, the index gives the same for every line."""
    explain = _old_explain()
    index = fresh
    for module, path in index.module_paths.items():
        old = explain._file_rules(ROOT / path)  # type: ignore[attr-defined]
        new = index.module_lines(module)
        assert set(old) == set(new), module
        for n, rules in old.items():
            got = index.line_rules(module, n)
            assert got is not None
            assert (rules.levels, rules.direct, rules.doc, rules.own) == (got.levels, got.direct, got.doc, got.own), \
                f"{path}:{n}"


def test_rule_data_is_explains(fresh: RuleIndex):
    """Rule files, dialect rules and command families are those of explain's spec index, while it has one."""
    explain = _old_explain()
    old = explain.spec_index()  # type: ignore[attr-defined]
    index = fresh
    assert {r: index.rules[r].file for r in old.files} == old.files
    assert {r.id: frozenset(r.dialects) for r in index.rules.values() if r.dialects} == old.dialects
    assert index.families == old.families


def test_cited_rules(fresh: RuleIndex):
    index = fresh
    first, second, third = [r for r in index.rules if r.startswith("XREADGROUP-")][:3]
    n2, n3 = second.rsplit("-", 1)[1], third.rsplit("-", 1)[1]
    assert index.cited_rules(f"deliver ({first}, -{n2}, -{n3})") == (first, second, third)
    assert index.cited_rules(f"options ({first} .. {third}); UTF-8") == ()
    assert rule_index.named_rules(f"options ({first} .. {third})", index.rules) == [first, third, second]


def test_rules_table():
    result = CliRunner().invoke(main, ["rules"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:6] == ["rule", "model", "ref", "tests", "traces", "text"]
    assert len(lines) == 1 + len(load_index().rules)


def test_rules_one_rule():
    index = load_index()
    rule = max(index.rules.values(), key=lambda r: len(r.model) + len(r.reference))
    result = CliRunner().invoke(main, ["rules", rule.id.lower()])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{rule.id}")
    assert rule.defined_at in result.output and rule.text in result.output
    for kind in SITE_KINDS:
        for place in rule.sites(kind):
            assert f"  {place}\n" in result.output


def test_rules_unknown_rule():
    result = CliRunner().invoke(main, ["rules", "NOSUCH-99"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["xspec rules: the spec defines no rule 'NOSUCH-99'; `xspec rules` lists them all"]


def test_load_index_reads_only_the_shipped_json(monkeypatch: pytest.MonkeyPatch):
    read: list[Path] = []
    original = Path.read_text

    def spy(self: Path, *args: object, **kwargs: object) -> str:
        read.append(self)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", spy)
    rule_index.load_index.cache_clear()
    try:
        index = load_index()
    finally:
        rule_index.load_index.cache_clear()
    assert read == [rule_index.INDEX_JSON]
    assert index.rules and index.module_paths


def test_rules_table_on_a_terminal():
    out = io.StringIO()
    render_table_rich(load_index(), out)
    text = out.getvalue()
    assert "\x1b[" in text
    assert all(rule in text for rule in load_index().rules)
