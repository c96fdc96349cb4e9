"""Fuzz fakeredis's ``TcpFakeServer`` (Redis 7.0 mode) against the redis-7.0 model and keep what diverges.

    python traces/findings/run_fakeredis.py [--steps 20000] [--seed 1] [--out traces/findings/fakeredis-<version>]

Starts ``TcpFakeServer(server_type="redis", server_version=(7, 0))`` in a
child process on a free loopback port and runs ``xspec fuzz`` against it with
``--dialect redis-7.0``. fakeredis answers neither INFO nor CONFIG: the
target is named from the fakeredis package (server ``fakeredis``, its
version), stream settings stay at their defaults and CONFIG steps are left
out (the report says so). Every divergence is shrunk and written under
``--out`` with ``expect`` in its header; replay them with
``xspec replay <folder> --dialect redis-7.0``.

Each finding must conform on a real Redis 7.0.15: ``--verify-on redis://host:port``
runs every finding's minimal steps there too and prints whether that conversation
conforms (it must: the divergence is fakeredis's, not the model's).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from xspec.traces.fuzz.fuzzer import Campaign, run_case
from xspec.traces.fuzz.generate import describe
from xspec.traces.harness.targets import BLOCK_WAIT, LiveTarget, TargetError, parse_endpoint, parse_target
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import free_port

SERVE = """
import sys
from fakeredis import TcpFakeServer
TcpFakeServer(("127.0.0.1", int(sys.argv[1])), server_type="redis", server_version=(7, 0)).serve_forever()
"""


class FakeredisTarget(LiveTarget):
    """A live target for a server without INFO: it names itself after the fakeredis package."""

    def _info(self, section: str) -> dict[str, str]:
        try:
            return super()._info(section)
        except TargetError:
            self.release()  # fakeredis's TCP server closes a connection after any error reply
            if section != "server":
                return {}
            return {"server_name": "fakeredis", "fakeredis_version": version("fakeredis")}

    def is_blocked(self, client_id: int) -> bool:
        """fakeredis has no CLIENT LIST: a command still unanswered after a short wait counts as blocked."""
        time.sleep(BLOCK_WAIT)
        return True


def start_fakeredis() -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            RespConnection("127.0.0.1", port, timeout=1).call([b"PING"])
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("fakeredis did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / f"fakeredis-{version('fakeredis')}")
    parser.add_argument("--verify-on", help="a real Redis 7.0 (redis://host:port) where every finding must conform")
    args = parser.parse_args()
    proc, port = start_fakeredis()
    try:
        url = f"redis://127.0.0.1:{port}"
        target = FakeredisTarget(url, parse_endpoint(url), dialect="redis-7.0", allow_flush=True)
        campaign = Campaign([target], dialect="redis-7.0", steps=args.steps, seed=args.seed, clients=None,
                            out=args.out, budget_s=None, progress=None)
        result = campaign.run()
    finally:
        proc.terminate()
        proc.wait()
    print(result.report())
    if args.verify_on:
        real = parse_target(args.verify_on, dialect="redis-7.0", allow_flush=True)
        try:
            for finding in result.findings:
                outcome = run_case(real, "redis-7.0", finding.steps, finding.config)
                print(f"{finding.path}: on {args.verify_on}: {outcome.verdict.status}; "
                      f"{' / '.join(describe(s) for s in finding.steps)}")
        finally:
            real.close()


if __name__ == "__main__":
    main()
