"""``python -m xspec.traces.scenarios --out DIR [--only PATTERN] [--redis-server PATH]``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from xspec.traces.scenarios.registry import all_scenarios
from xspec.traces.scenarios.runner import record_corpus, select


def _reason(e: Exception) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xspec.traces.scenarios",
                                     description="Record the scenario corpus from a private redis-server.")
    parser.add_argument("--out", type=Path, required=True, help="corpus folder, e.g. traces/redis-7.0.15")
    parser.add_argument("--only", help="record only topic/name matching this glob or containing this text")
    parser.add_argument("--redis-server", help="redis-server binary (default: the one on PATH)")
    parser.add_argument("--list", action="store_true", help="list the selected scenarios and exit")
    args = parser.parse_args(argv)
    scenarios = select(all_scenarios(), args.only)
    if not scenarios:
        print(f"no scenario matches {args.only!r}", file=sys.stderr)
        return 2
    if args.list:
        for s in scenarios:
            print(f"{s.path}: {s.title}")
        return 0
    started = time.monotonic()
    try:
        files, failed = record_corpus(args.out, scenarios, args.redis_server, write_readme=args.only is None)
    except (RuntimeError, OSError) as e:  # no server binary, one that does not start, an unwritable --out
        print(f"error: {_reason(e)}", file=sys.stderr)
        return 2
    print(f"{len(files)} traces in {time.monotonic() - started:.1f}s; {len(failed)} scenarios failed")
    for message in failed:
        print(f"  {message}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
