"""``xspec view`` on a 10,000-event trace, in headless Chromium: page size, load time, step time.

Generates a virtual-clock trace by running the model itself (so it conforms by
construction): four consumers on two streams adding, reading with ``>``, acknowledging,
claiming with XAUTOCLAIM and reading their history, the clock moving 7 ms per command.
Builds the page (the model replayed along the checker's witness, reported in seconds),
opens it in Debian's Chromium through Playwright, and prints:

* the page's size (target ≤ 5 MB);
* its load time: from navigation to the first step drawn (target ≤ 2 s);
* the 95th percentile of a step's time: the next-step key (a keydown event) at 300 places spread
  over the trace, each measured in the page from the key to the state panel laid out (target ≤ 50 ms);
* the same for jumps to a random step (``xspecView.select``), for information.

A step's time is split into the script's part (the key handler) and the layout it forces.
``--page A.html --page B.html`` measures pages written earlier (for example the same data drawn by
two versions of the page script) in one run, alternating between them round by round so that both
see the same machine load, and prints each one's figures and B's ratios to A.

    python benchmarks/bench_view.py [--events 10000] [--seed 1] [--out /tmp/bench-view.html]
    python benchmarks/bench_view.py --page before.html --page after.html [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from xspec.models import ManualClock, Server
from xspec.spec.dialect import get_dialect
from xspec.spec.trace_format import Call, Header, Note, Trace

START_MS = 1_700_000_000_000
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def make_trace(events: int, seed: int = 1) -> Trace:
    """A conforming virtual-clock trace of ``events`` call events (and a note every 500)."""
    rng = random.Random(seed)
    clock = ManualClock(START_MS)
    server = Server(get_dialect("redis-7.0"), clock)
    out: list[Call | Note] = []
    consumers = [b"alice", b"bob", b"carol", b"dave"]
    keys = [b"orders", b"payments"]
    next_id = dict.fromkeys(keys, 1)

    def call(c: int, *argv: bytes) -> object:
        cmd = list(argv)
        outcome = server.execute(c, cmd)
        out.append(Call(c=c, cmd=cmd, reply=outcome.reply, now=clock.ms))
        clock.ms += 7
        return outcome.reply

    for c in range(1, 6):
        server.client(c)
    for k in keys:
        call(5, b"XGROUP", b"CREATE", k, b"workers", b"$", b"MKSTREAM")
    while len(out) < events:
        if len(out) % 500 == 0:
            out.append(Note(f"event {len(out)}: the workload goes on"))
        k = rng.choice(keys)
        c = rng.randrange(4)
        name = consumers[c]
        r = rng.random()
        if r < 0.35:
            call(5, b"XADD", k, b"%d-0" % next_id[k], b"n", b"%d" % next_id[k])
            next_id[k] += 1
        elif r < 0.6:
            call(c + 1, b"XREADGROUP", b"GROUP", b"workers", name, b"COUNT", b"2", b"STREAMS", k, b">")
        elif r < 0.8:
            ids = [b"%d-0" % rng.randrange(1, next_id[k]) for _ in range(2)] if next_id[k] > 1 else [b"1-0"]
            call(c + 1, b"XACK", k, b"workers", *ids)
        elif r < 0.9:
            call(c + 1, b"XAUTOCLAIM", k, b"workers", name, b"50", b"0-0", b"COUNT", b"3")
        elif r < 0.97:
            call(c + 1, b"XREADGROUP", b"GROUP", b"workers", name, b"COUNT", b"3", b"STREAMS", k, b"0")
        else:
            call(c + 1, b"XTRIM", k, b"MAXLEN", b"200")
    header = Header(server_name="redis", server_version="7.0.15", clock="virtual", config={},
                    title=f"benchmark: {events} events on two streams, four consumers")
    return Trace(header, out[:events], "<bench_view>")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


STEP = """() => { const t0 = performance.now();
    document.dispatchEvent(new KeyboardEvent("keydown", {key: "j", bubbles: true}));
    const t1 = performance.now();
    document.getElementById("state").offsetHeight; return [t1 - t0, performance.now() - t1]; }"""
JUMP = """(k) => { const t = performance.now(); xspecView.select(k);
    document.getElementById('state').offsetHeight; return performance.now() - t; }"""


class Figures:
    """One page's measurements, gathered over the rounds."""

    def __init__(self) -> None:
        self.loads: list[float] = []
        self.script: list[float] = []
        self.layout: list[float] = []
        self.jumps: list[float] = []

    @property
    def steps(self) -> list[float]:
        return [a + b for a, b in zip(self.script, self.layout, strict=True)]


def measure(browser: Any, uri: str, figures: Figures, rng: random.Random, presses: int, jumps: int) -> None:
    """Open the page in a tab of its own and measure its load, ``presses`` next-step keys at random
    places and ``jumps`` jumps (a fresh tab: nothing left over from the page measured before)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(uri, wait_until="load")
    figures.loads.append(page.evaluate("xspecView.readyAt"))
    n = page.evaluate("xspecView.steps")
    for k in sorted(rng.randrange(1, n) for _ in range(presses)):
        page.evaluate(f"xspecView.select({k})")
        page.evaluate("document.body.offsetHeight")
        script, layout = page.evaluate(STEP)
        figures.script.append(script)
        figures.layout.append(layout)
    figures.jumps += [page.evaluate(JUMP, rng.randrange(1, n)) for _ in range(jumps)]
    page.close()


def report(name: str, f: Figures) -> None:
    steps = f.steps
    print(f"{name}load time: {statistics.median(f.loads):.0f} ms to the first step drawn "
          f"(median of {len(f.loads)}; target <= 2000 ms)")
    print(f"{name}step time: p95 {percentile(steps, 95):.1f} ms, median {statistics.median(steps):.1f} ms over "
          f"{len(steps)} next-step key presses (target p95 <= 50 ms); script p95 {percentile(f.script, 95):.1f} "
          f"median {statistics.median(f.script):.1f}, layout p95 {percentile(f.layout, 95):.1f} "
          f"median {statistics.median(f.layout):.1f}")
    print(f"{name}jump to a random step: p95 {percentile(f.jumps, 95):.1f} ms, median {statistics.median(f.jumps):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="Keep the page here.")
    parser.add_argument("--page", type=Path, action="append", default=None,
                        help="Measure this page (written by an earlier --out) instead of building one; "
                             "given twice or more, the pages are measured in one run, round by round.")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds (page loads) a page is measured in.")
    args = parser.parse_args()
    print("machine load (1, 5, 15 min): {:.1f} {:.1f} {:.1f} on {} cores".format(*os.getloadavg(), os.cpu_count()))

    from xspec.viewer.pages import write_trace_page

    if args.rounds < 1:
        raise SystemExit("bench_view: --rounds must be at least 1")
    if args.page:
        missing = [p for p in args.page if not p.is_file()]
        if missing:
            raise SystemExit(f"bench_view: no such page: {missing[0]}")
        pages = args.page
        print("pages: " + ", ".join(str(p) for p in pages) + " (not rebuilt)")
    else:
        trace = make_trace(args.events, args.seed)
        out = args.out or Path(tempfile.mkdtemp(prefix="bench-view-")) / "bench.html"
        started, cpu = time.perf_counter(), time.process_time()
        written = write_trace_page(trace, out)
        built, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"trace: {len(trace.events)} events; page built in {built:.1f} s ({cpu:.1f} s of CPU; {written.status})")
        pages = [out]
    for p in pages:
        print(f"page size: {p.stat().st_size / 1e6:.2f} MB (target <= 5 MB)" + (f": {p}" if len(pages) > 1 else ""))

    from playwright.sync_api import sync_playwright
    figures = {p: Figures() for p in pages}
    presses, jumps = -(-300 // args.rounds), -(-100 // args.rounds)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for r in range(args.rounds):
            order = pages if r % 2 == 0 else pages[::-1]  # neither page always goes first
            for p in order:  # the same places on every page, a round's load shared by all of them
                measure(browser, p.resolve().as_uri(), figures[p], random.Random(args.seed * 1000 + r), presses, jumps)
        browser.close()
    for p in pages:
        report(f"{p.name}: " if len(pages) > 1 else "", figures[p])
    if len(pages) > 1:
        first = figures[pages[0]]
        for p in pages[1:]:
            f = figures[p]
            print(f"{p.name} / {pages[0].name}: step p95 {percentile(f.steps, 95) / percentile(first.steps, 95):.2f}, "
                  f"median {statistics.median(f.steps) / statistics.median(first.steps):.2f}; jump p95 "
                  f"{percentile(f.jumps, 95) / percentile(first.jumps, 95):.2f}; load "
                  f"{statistics.median(f.loads) / statistics.median(first.loads):.2f}")
    print("machine load at the end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
