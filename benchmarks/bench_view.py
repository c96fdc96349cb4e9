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
* the same for jumps to a random step (the URL fragment), for information.

    python benchmarks/bench_view.py [--events 10000] [--seed 1] [--out /tmp/bench-view.html]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="Keep the page here.")
    parser.add_argument("--page", type=Path, default=None,
                        help="Measure this page (written by an earlier --out) instead of building one.")
    args = parser.parse_args()
    print("machine load (1, 5, 15 min): {:.1f} {:.1f} {:.1f} on {} cores".format(*os.getloadavg(), os.cpu_count()))

    from xspec.viewer.pages import write_trace_page

    if args.page is not None:
        out = args.page
        print(f"page: {out} (not rebuilt)")
    else:
        trace = make_trace(args.events, args.seed)
        out = args.out or Path(tempfile.mkdtemp(prefix="bench-view-")) / "bench.html"
        started, cpu = time.perf_counter(), time.process_time()
        written = write_trace_page(trace, out)
        built, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"trace: {len(trace.events)} events; page built in {built:.1f} s ({cpu:.1f} s of CPU; {written.status})")
    print(f"page size: {out.stat().st_size / 1e6:.2f} MB (target <= 5 MB)")

    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        loads = []
        for _ in range(3):
            page.goto("about:blank")
            page.goto(out.as_uri(), wait_until="load")
            loads.append(page.evaluate("xspecView.readyAt"))
        print(f"load time: {statistics.median(loads):.0f} ms to the first step drawn (median of 3; target <= 2000 ms)")
        n = page.evaluate("xspecView.steps")
        rng = random.Random(args.seed)
        starts = sorted(rng.randrange(1, n) for _ in range(300))
        steps = []
        for k in starts:
            page.evaluate(f"xspecView.select({k})")
            page.evaluate("document.body.offsetHeight")
            steps.append(page.evaluate("""() => { const t0 = performance.now();
                document.dispatchEvent(new KeyboardEvent("keydown", {key: "j", bubbles: true}));
                document.getElementById("state").offsetHeight; return performance.now() - t0; }"""))
        jumps = [page.evaluate(f"""() => {{ const t = performance.now(); xspecView.select({rng.randrange(1, n)});
                 document.getElementById('state').offsetHeight; return performance.now() - t; }}""")
                 for _ in range(100)]
        browser.close()
    print(f"step time: p95 {percentile(steps, 95):.1f} ms, median {statistics.median(steps):.1f} ms over "
          f"{len(steps)} next-step key presses (target p95 <= 50 ms)")
    print(f"jump to a random step: p95 {percentile(jumps, 95):.1f} ms, median {statistics.median(jumps):.1f} ms")
    print("machine load at the end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
