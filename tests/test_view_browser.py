"""``xspec view`` pages opened in headless Chromium (Debian's ``chromium``, driven by Playwright).

The state panel is compared with the model's own state, taken by running the checker's
witness on a fresh model here; the diff marks with the rows that the model's state changed.
One browser serves the whole session.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xspec.models.state import Stream
from xspec.spec.rule_index import load_index
from xspec.spec.trace_format import load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace, trace_dialect
from xspec.traces.check.state_tables import state_rows
from xspec.traces.check.witness import WitnessReplay
from xspec.viewer.pages import write_trace_page
from xspec.viewer.trace_data import row_id

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CLAIM = CORPUS_DIR / "tutorial" / "4-claim-too-early.jsonl"
FINDING = CORPUS_DIR / "findings" / "fakeredis-2.40.0" / "binary-key-utf8-error.jsonl"


def chromium_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    if not shutil.which(CHROMIUM):
        return f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    missing = chromium_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing + "; ./dev test installs it")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.errors = errors
    pg.requests = requests
    yield pg
    context.close()
    assert errors == [], errors
    assert all(u.startswith("file://") for u in requests), requests  # nothing from the network


@pytest.fixture(scope="session")
def claim_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "claim.html"
    write_trace_page(load(CLAIM), out)
    return out


def model_states(path: Path) -> list[dict[tuple[Any, ...], tuple[Any, ...]]]:
    """The model's state rows after each step the page shows (every witness step but connects),
    taken by running the checker's witness on a fresh model."""
    trace = load(path)
    verdict = check_trace(trace)
    assert verdict.witness is not None
    readings = verdict.witness.readings()
    replay = WitnessReplay(trace, trace_dialect(trace, None),
                           readings[0] if trace.header.clock == "wall" and readings else 0)
    out = []
    for step in verdict.witness.steps:
        replay.run(step)
        if step.kind != "connect":
            out.append(state_rows(replay.server))
    out.insert(0, {})
    return out


def pel_of(path: Path, after: int) -> dict[str, tuple[str, int]]:
    """{entry id: (owner, deliveries)} of group workers on stream orders after step ``after``, read from the model."""
    trace = load(path)
    verdict = check_trace(trace)
    assert verdict.witness is not None
    replay = WitnessReplay(trace, trace_dialect(trace, None))
    done = 0
    for step in verdict.witness.steps:
        if done == after:
            break
        replay.run(step)
        done += step.kind != "connect"
    stream = replay.server.dbs[0][b"orders"]
    assert isinstance(stream, Stream)
    group = stream.groups[b"workers"]
    return {str(i): (n.consumer.name.decode() if n.consumer else "-", n.delivery_count) for i, n in group.pel.items()}


def dom_table(pg: Any, table: str) -> dict[str, dict[str, str]]:
    """{row id: {column: cell text}} of a state table on the page."""
    return pg.evaluate("""(name) => {
      const out = {};
      for (const tr of document.querySelectorAll(`table[data-table="${name}"] tr[data-row]`)) {
        const cells = {};
        for (const td of tr.querySelectorAll("td[data-col]")) cells[td.dataset.col] = td.firstChild.textContent;
        out[tr.dataset.row] = cells;
      }
      return out; }""", table)


def dom_marks(pg: Any) -> dict[str, tuple[str, list[str]]]:
    """{row id: (mark, changed columns)} of every marked row of the state panel."""
    return {k: (v[0], v[1]) for k, v in pg.evaluate("""() => {
      const out = {};
      for (const tr of document.querySelectorAll("#state tr[data-mark]"))
        out[tr.dataset.row] = [tr.dataset.mark, [...tr.querySelectorAll("td.chg")].map((td) => td.dataset.col)];
      return out; }""").items()}


def test_open_at_a_step_then_next_key_shows_the_models_next_state(page: Any, claim_page: Path) -> None:
    k = 3  # alice has read 1-0; the next step is bob's XAUTOCLAIM
    page.goto(claim_page.as_uri() + f"#step={k}")
    assert page.evaluate("document.body.dataset.step") == str(k)
    assert {r: (c["owner"], int(c["deliveries"])) for r, c in dom_table(page, "pending").items()} == {
        f"pending|orders|workers|{i}": v for i, v in pel_of(CLAIM, k).items()}
    page.keyboard.press("j")
    assert page.evaluate("document.body.dataset.step") == str(k + 1)
    page.wait_for_function("location.hash.includes('step=4')", timeout=5000)  # written once the key is handled
    pel = pel_of(CLAIM, k + 1)
    assert pel == {"1-0": ("bob", 2)}
    assert {r: (c["owner"], int(c["deliveries"])) for r, c in dom_table(page, "pending").items()} == {
        f"pending|orders|workers|{i}": v for i, v in pel.items()}
    # The diff marks exactly the rows the model's state changed, and in changed rows the changed columns.
    states = model_states(CLAIM)
    before, after = states[k], states[k + 1]
    changed = {row_id(r) for r in set(before) | set(after) if before.get(r) != after.get(r)}
    marks = dom_marks(page)
    assert set(marks) == changed
    assert marks["pending|orders|workers|1-0"] == ("chg", ["owner", "idle", "deliveries"])
    assert marks["consumers|orders|workers|bob"][0] == "add"
    assert marks["consumers|orders|workers|alice"] == ("chg", ["pending"])
    # The rule that fired, linked to its text from the rule index.
    page.click("#step .rules:not(.checked) a[data-rule='XAUTOCLAIM-9']")
    assert load_index().rules["XAUTOCLAIM-9"].text[:40] in page.inner_text("#ruletext")
    page.wait_for_function("location.hash.includes('rule=XAUTOCLAIM-9')", timeout=5000)
    # And back: the previous step's state again, with its own marks.
    page.keyboard.press("k")
    assert dom_table(page, "pending")["pending|orders|workers|1-0"]["owner"] == "alice"
    assert dom_marks(page)["pending|orders|workers|1-0"][0] == "add"


def test_every_step_of_the_page_equals_the_models_state(page: Any, claim_page: Path) -> None:
    page.goto(claim_page.as_uri())
    states = model_states(CLAIM)
    n = page.evaluate("xspecView.steps")
    assert n == len(states) - 1
    for k in range(1, n + 1):
        page.evaluate(f"xspecView.select({k})")
        rows = page.evaluate("""() => [...document.querySelectorAll('#state tr[data-row]')]
            .filter((tr) => tr.dataset.mark !== 'del').map((tr) => tr.dataset.row)""")
        assert sorted(rows) == sorted(row_id(r) for r in states[k]), k


def test_search_finds_commands_and_ids(page: Any, claim_page: Path) -> None:
    page.goto(claim_page.as_uri())
    page.keyboard.press("/")
    page.keyboard.type("xack")
    assert page.inner_text("#found") == "2 steps match"
    page.keyboard.press("Enter")
    assert page.evaluate("document.body.dataset.step") == "5"
    page.keyboard.press("Enter")
    assert page.evaluate("document.body.dataset.step") == "6"
    assert page.locator(".box.hit").count() == 2


def test_divergence_page_shows_trace_and_model_side_by_side(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "divergence.html"
    write_trace_page(load(FINDING), out)
    verdict = check_trace(load(FINDING))
    assert verdict.status == "diverge"
    page.goto(out.as_uri())
    says = page.inner_text("#divergence .says pre")
    allows = page.inner_text("#divergence .allows pre")
    divergence = verdict.witness.divergence if verdict.witness else None
    assert divergence is not None and divergence.got is not None
    assert "utf-8" in says and "NOGROUP" in allows
    assert page.locator(".box.diverge").count() == 1
    page.screenshot(path=str(tmp_path / "divergence.png"))
    assert (tmp_path / "divergence.png").stat().st_size > 10_000


def test_screenshot_of_the_tutorial_page(page: Any, claim_page: Path, tmp_path: Path) -> None:
    page.goto(claim_page.as_uri() + "#step=4")
    shot = tmp_path / "claim.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
    # The diagram is DOM text: the command boxes can be read, not only seen.
    assert "XAUTOCLAIM orders workers bob" in page.inner_text(".box.sel")


def test_graph_page_marks_violations_and_shows_the_shortest_trace(page: Any, tmp_path: Path) -> None:
    from xspec.explore.protocols import PROTOCOLS
    from xspec.explore.report import check_protocol
    from xspec.viewer.graph_data import graph_page_data
    from xspec.viewer.html import write_page

    report, system = check_protocol(PROTOCOLS["short-min-idle"])
    out = tmp_path / "graph.html"
    write_page(out, graph_page_data(report.title, report.result, system.abstraction, system.process_names), "graph.js")
    violation = report.result.violations["no duplicate without a crash"].state
    page.goto(out.as_uri())
    assert page.locator("#graph .node.violation").count() == 1
    assert page.evaluate("document.body.dataset.state") == str(violation)  # opens at the violation
    steps = page.locator("#path li").all_inner_texts()
    assert steps == [s.describe(system.process_names) for s, _ in report.result.path(violation)]
    page.click("#graph [data-state='3']")
    assert page.evaluate("document.body.dataset.state") == "3"
    page.wait_for_function("location.hash.includes('state=3')", timeout=5000)
    assert "PEL 1-0→c1×1" in page.inner_text("#label")
    page.screenshot(path=str(tmp_path / "graph.png"))
    assert (tmp_path / "graph.png").stat().st_size > 10_000


# -- trace/2: a lane per node ------------------------------------------------------------------------

LESSON = CORPUS_DIR / "replication" / "lessons" / "consumer-group-across-failover.jsonl"
CRASH = CORPUS_DIR / "replication" / "redis-7.0.15" / "failover" / "primary-crash-promote.jsonl"


def test_trace2_page_steps_through_the_nodes_states(page: Any, tmp_path: Path) -> None:
    """A trace/2 page: two node lanes in SVG; opened at a step, the next-step key shows the
    deployment's state the model reaches after the next step (an ``apply`` on the replica moves
    its offset), and the diff marks exactly the rows that changed."""
    from xspec.traces.check.explain_multinode import explain_multinode
    from xspec.viewer.trace_data import node_row_id

    e = explain_multinode(load(LESSON))
    k = next(n for n, s in enumerate(e.steps, 1) if s.kind == "internal" and s.mark == "apply" and n > 5) - 1
    out = tmp_path / "lesson.html"
    write_trace_page(load(LESSON), out)
    page.goto(out.as_uri() + f"#step={k}")
    heads = [" ".join(t.split()) for t in page.locator("#lanes-head > div").all_inner_texts()]
    assert heads == ["node a redis 7.0.15", "node b redis 7.0.15"]
    assert page.locator("#lanes-svg").count() == 1 and page.locator(".box").count() == 0
    page.keyboard.press("j")
    assert page.evaluate("document.body.dataset.step") == str(k + 1)
    before, after = e.steps[k - 1].state, e.steps[k].state
    nodes = dom_table(page, "nodes")
    assert {r: int(c["offset"]) for r, c in nodes.items()} == {
        node_row_id(r): v[3] for r, v in after.items() if r[0] == "nodes"}
    changed = {node_row_id(r) for r in set(before) | set(after) if before.get(r) != after.get(r)}
    marks = dom_marks(page)
    assert set(marks) == changed and "nodes|b" in marks and "offset" in marks["nodes|b"][1]
    # The selected step is the replica applying its primary's stream: an arrow from lane a to lane b.
    selected = page.locator(f"#lanes-svg g[data-step='{k + 1}']")
    assert selected.get_attribute("class").split()[:1] == ["st"] and "m-apply" in selected.get_attribute("class")
    x1, x2 = (float(selected.locator("line.arrow2").get_attribute(a) or 0) for a in ("x1", "x2"))
    lanes = page.evaluate("[...document.querySelectorAll('#lanes-head > div')].map((d) => d.getBoundingClientRect().x)")
    assert x1 < x2 and lanes[0] < lanes[1]  # a is left of b
    assert "b: apply" in page.inner_text("#step")
    assert "REPL-12" in page.locator("#step .rules.checked").inner_text()  # the rules the replica's apply ran
    page.screenshot(path=str(tmp_path / "lesson.png"))
    assert (tmp_path / "lesson.png").stat().st_size > 20_000


def test_trace2_crash_mark_and_divergence_on_its_node(page: Any, tmp_path: Path) -> None:
    from tests.test_view import lost_write_claimed

    out = tmp_path / "crash.html"
    write_trace_page(load(CRASH), out)
    page.goto(out.as_uri())
    page.keyboard.press("/")
    page.keyboard.type("crash")
    page.keyboard.press("Enter")
    step = page.evaluate("document.body.dataset.step")
    mark = page.locator(f"#lanes-svg g[data-step='{step}'] .mark")
    assert mark.text_content() == "✕"
    assert page.locator("#lanes-svg rect.down").count() >= 1  # the crashed node's lane is shaded while down
    out = tmp_path / "claimed.html"
    write_trace_page(load(lost_write_claimed(tmp_path)), out)
    page.goto(out.as_uri())  # a divergence opens at its step
    diverge = page.locator("#lanes-svg g.diverge")
    assert diverge.count() == 1
    assert "node a · client 7 · the trace diverges" in page.inner_text("#headline")
    box = float(diverge.locator("rect").get_attribute("x") or 0)
    assert box < 40 + 280  # on lane a, the first
    assert "never replicated" in page.inner_text("#divergence .says pre")
    assert "never replicated" not in page.inner_text("#divergence .allows")


def test_line_fragment_opens_the_step_of_a_trace_line(page: Any, claim_page: Path, tmp_path: Path) -> None:
    """``#line=L`` (the audit report's links) selects the step of line L of the trace file, or the next."""
    from xspec.viewer.trace_data import trace_page_data

    def opens(url: str, step: int) -> bool:
        """Go to ``url``; True once the page shows ``step`` (a same-page fragment change is handled by a
        hashchange event after goto returns)."""
        page.goto(url)
        try:
            page.wait_for_function(f"document.body.dataset.step === '{step}'", timeout=3000)
        except Exception:
            return False
        return True

    steps = trace_page_data(load(CLAIM))["steps"]
    for k, s in enumerate(steps, 1):
        if s["l"] is not None:
            assert opens(claim_page.as_uri() + f"#line={s['l']}", k), (s, page.evaluate("document.body.dataset.step"))
    assert opens(claim_page.as_uri() + "#line=1", 1)  # the header: the first step
    out = tmp_path / "owners.html"
    two_owners = CORPUS_DIR / "replication" / "redis-7.0.15" / "failover" / "two-owners.jsonl"
    write_trace_page(load(two_owners), out)
    data = trace_page_data(load(two_owners))
    lines = [s["l"] for s in data["steps"]]
    line = max(x for x in lines if x is not None)
    assert opens(out.as_uri() + f"#line={line}", lines.index(line) + 1)


# -- a big state: rows kept in place, fixed columns, the step read out -------------------------------


def big_stream_trace() -> Any:
    """50 entries read by one consumer (a PEL of 50, each row's idle time moving at every step),
    then more entries: the entries and pending tables are bigger than the panel shows whole."""
    from xspec.models import ManualClock, Server
    from xspec.spec.dialect import get_dialect
    from xspec.spec.trace_format import Call, Header, Trace

    clock = ManualClock(1_700_000_000_000)
    server = Server(get_dialect("redis-7.0"), clock)
    events: list[Call] = []

    def call(c: int, *argv: bytes) -> None:
        events.append(Call(c=c, cmd=list(argv), reply=server.execute(c, list(argv)).reply, now=clock.ms))
        clock.ms += 7

    server.client(1)
    server.client(2)
    call(1, b"XGROUP", b"CREATE", b"orders", b"workers", b"$", b"MKSTREAM")
    for i in range(1, 51):
        call(1, b"XADD", b"orders", b"%d-0" % i, b"n", b"%d" % i)
    call(2, b"XREADGROUP", b"GROUP", b"workers", b"alice", b"COUNT", b"50", b"STREAMS", b"orders", b">")
    for i in range(51, 56):
        call(1, b"XADD", b"orders", b"%d-0" % i, b"n", b"%d" % i)
    header = Header(server_name="redis", server_version="7.0.15", clock="virtual", config={}, title="big state")
    return Trace(header, events, "<big>")


def test_a_step_moves_no_unchanged_row_and_keeps_the_columns(page: Any, tmp_path: Path) -> None:
    """The next-step key on a big state: the rows the step leaves alone stay where they are (the
    rows it adds or marks are the only ones inserted), the columns keep their widths, and the
    live region says the step in one line."""
    out = tmp_path / "big.html"
    write_trace_page(big_stream_trace(), out)
    k = 53  # the first XADD after the read: 51 entries, 50 pending; the next step adds 52-0
    page.goto(out.as_uri() + f"#step={k}")
    assert "(11 unchanged rows not shown)" in page.inner_text("#state")
    widths = page.evaluate("""() => [...document.querySelectorAll('#state th')].map((th) => th.getBoundingClientRect().width)""")
    page.evaluate("""() => {
      window.moved = [];
      window.observer = new MutationObserver((records) => { for (const r of records) window.moved.push(...r.removedNodes); });
      for (const t of document.querySelectorAll('#state table')) observer.observe(t, {childList: true});
      window.rowsBefore = new Set(document.querySelectorAll('#state tr[data-row]')); }""")
    page.keyboard.press("j")
    assert page.evaluate("document.body.dataset.step") == str(k + 1)
    moved = page.evaluate("""() => { observer.takeRecords().forEach((r) => window.moved.push(...r.removedNodes));
      const now = new Set(document.querySelectorAll('#state tr[data-row]'));
      return window.moved.filter((tr) => now.has(tr)).map((tr) => tr.dataset.row); }""")
    assert moved == []
    inserted = page.evaluate("""() => [...document.querySelectorAll('#state tr[data-row]')]
      .filter((tr) => !window.rowsBefore.has(tr)).map((tr) => tr.dataset.row)""")
    # only the rows whose mark changed are drawn again: those of this step's diff and of the one before
    marked = page.evaluate(f"[...XSPEC.steps[{k - 1}].d, ...XSPEC.steps[{k}].d].map((d) => d[0])")
    assert "entries|orders|52-0" in inserted and set(inserted) <= set(marked), (inserted, marked)
    assert page.evaluate("""() => [...document.querySelectorAll('#state th')].map((th) => th.getBoundingClientRect().width)""") == widths
    pending = dom_table(page, "pending")
    assert len(pending) == 40 and all(c["idle"].endswith(" ms") for c in pending.values())
    changes = page.evaluate(f"XSPEC.steps[{k}].d.length")
    assert page.inner_text("#announce") == f"Step {k + 1}: XADD orders 52-0 n 52, reply '52-0', {changes} state changes"
    assert page.locator("#state tr.add").evaluate("tr => getComputedStyle(tr.cells[0], '::before').content") == '"+ "'
