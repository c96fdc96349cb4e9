"""spec/trace-format.md: it names everything the shared contract names, and its example is a real trace.

The contract is ``shared/TRACE-FORMAT.md`` beside the repository (``../shared``
seen from the repository root); every event type, event field and header field
it names must appear in the page. A clone without it skips those tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xspec.spec.trace_format import dumps, loads
from xspec.traces.check.checker import check_trace

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT.parent / "shared" / "TRACE-FORMAT.md"
OWN = ROOT / "spec" / "trace-format.md"

needs_contract = pytest.mark.skipif(not CONTRACT.is_file(), reason=f"no shared contract at {CONTRACT}")


def table_rows(text: str, first_header: str) -> list[list[str]]:
    """The body rows, split into cells, of every Markdown table whose first column is headed ``first_header``."""
    rows: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if not line.startswith("|"):
            inside = False
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells and cells[0] == first_header:
            inside = True
        elif inside and not set(cells[0]) <= {"-", " "}:
            rows.append(cells)
    return rows


def quoted(cell: str) -> set[str]:
    """The names written in backticks in a table cell."""
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cell))


def contract_names() -> tuple[set[str], set[str], set[str]]:
    """Event types, event fields and header fields named by the contract."""
    text = CONTRACT.read_text(encoding="utf-8")
    events: set[str] = set()
    fields: set[str] = set()
    for row in table_rows(text, "`ev`"):
        events |= quoted(row[0])
        fields |= quoted(row[1])
    # An event defined in a list item rather than a table: "- `push`, with `c`, `t` and `reply`, ...".
    for name, rest in re.findall(r"^- `([a-z]+)`, with ([^.]*)", text, re.MULTILINE):
        events.add(name)
        fields |= quoted(rest.split(" is ")[0])
    header: set[str] = set()
    for row in table_rows(text, "key"):
        header |= quoted(row[0])
    return events, fields, header


def own_names() -> set[str]:
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", OWN.read_text(encoding="utf-8")))


@needs_contract
def test_the_contract_is_parsed() -> None:
    events, fields, header = contract_names()
    assert {"call", "send", "recv", "connect", "close", "note", "push", "crash", "restart", "link", "repl"} <= events
    assert {"c", "cmd", "t0", "t1", "reply", "raw", "by", "text", "node", "from", "to", "state"} <= fields
    assert {"xspec", "server", "clock", "slack_ms", "config", "expect", "title", "source", "tags", "nodes",
            "skew_ms"} <= header


@needs_contract
def test_every_event_type_is_described() -> None:
    events, _, _ = contract_names()
    assert events - own_names() == set()


@needs_contract
def test_every_event_field_is_described() -> None:
    _, fields, _ = contract_names()
    assert fields - own_names() == set()


@needs_contract
def test_every_header_field_is_described() -> None:
    _, _, header = contract_names()
    assert header - own_names() == set()


def json_blocks(text: str) -> list[str]:
    """The contents of the page's ```json code blocks."""
    return re.findall(r"^```json\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_version_1_example_is_a_conforming_trace_in_its_one_spelling() -> None:
    examples = [b for b in json_blocks(OWN.read_text(encoding="utf-8")) if b.startswith('{"xspec": "trace/1"')
                and "\n" in b.strip()]
    assert len(examples) == 1
    trace = loads(examples[0])
    assert dumps(trace) == examples[0]
    assert check_trace(trace).status == "conform"


def test_the_shared_contract_is_said_to_govern() -> None:
    text = OWN.read_text(encoding="utf-8")
    assert re.search(r"`\.\./shared/TRACE-FORMAT\.md`[^\n]*governs", text)
    assert '"trace/1"' in text and '"trace/2"' in text
