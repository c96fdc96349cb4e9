"""The trace/2 checker on kill -9 crash traces: record them with the crash campaign of tests/test_aof_crash.py,
then judge each, one JSON line per trace (verdict, steps, CPU seconds, reloads, loads of the memo's key).

    python benchmarks/bench_crash_checker.py record /tmp/crash 30 --policy always --seed 1
    python benchmarks/bench_crash_checker.py record /tmp/crash 20 --policy everysec --seed 2
    python benchmarks/bench_crash_checker.py judge /tmp/crash > judged.jsonl

``record``: ``kills`` traces of one kill each (three writers, two consumers, the kill 10 to 40 events into
the load, as the slow campaign makes them), written to the folder unjudged. ``judge``: every ``*.jsonl`` in
the folders or files given, in name order; steps and reloads are the whole trace's search (not the prefix
searches a divergence adds)."""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from xspec.spec import trace_format
from xspec.spec.trace_format import Trace


def record(folder: Path, kills: int, policy: str, seed: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import test_aof_crash as crash

    random.seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    made = crash.record_kills
    count = [0]

    def record_kills(*args: Any, **kwargs: Any) -> tuple[Trace, list[str]]:
        trace, lost = made(*args, **kwargs)
        trace_format.dump(trace, folder / f"{policy}-{seed}-{count[0]:03d}.jsonl")
        count[0] += 1
        return trace, lost

    crash.record_kills = record_kills
    with tempfile.TemporaryDirectory() as data:
        campaign = crash.campaign(Path(data), kills, (policy,), load=(0.02, 2.0), events=(10, 40), judge=False)
    print(crash._report(campaign))


def judge(paths: list[Path]) -> None:
    from xspec.traces.check import multinode
    from xspec.traces.check.checker import check_trace

    stats: dict[str, Any] = {}
    run = multinode._MultiSearch.run

    def measured(search: multinode._MultiSearch) -> Any:
        try:
            return run(search)
        finally:
            if "steps" not in stats:  # the whole trace's search comes first
                stats["steps"] = search.steps
                reloads = getattr(search, "reloads", None)
                if reloads is not None:
                    stats["reloads"] = reloads.hits + reloads.misses
                loaded = getattr(search, "loaded_states", None)
                if loaded is not None:
                    stats["loads"] = loaded.loads

    multinode._MultiSearch.run = measured  # type: ignore[method-assign]
    files = sorted(f for p in paths for f in (p.glob("*.jsonl") if p.is_dir() else [p]))
    for path in files:
        stats.clear()
        trace = trace_format.load(path)
        began = time.process_time()
        verdict = check_trace(trace)
        cpu = time.process_time() - began
        print(json.dumps({"trace": path.name, "events": len(trace.events), "status": verdict.status,
                          "cpu": round(cpu, 2), **stats}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("folder", type=Path)
    rec.add_argument("kills", type=int)
    rec.add_argument("--policy", choices=("always", "everysec"), default="always")
    rec.add_argument("--seed", type=int, default=1)
    jud = sub.add_parser("judge")
    jud.add_argument("paths", type=Path, nargs="+")
    args = parser.parse_args()
    if args.what == "record":
        record(args.folder, args.kills, args.policy, args.seed)
    else:
        judge(args.paths)


if __name__ == "__main__":
    main()
