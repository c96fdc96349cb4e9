"""Fuzz fakeredis's ``TcpFakeServer`` (Redis 7.0 mode by default) against the model and keep what diverges.

    python traces/findings/run_fakeredis.py [--steps 20000] [--seed 1] [--out traces/findings/fakeredis-<version>]
        [--server-type redis|valkey|dragonfly|kividb] [--server-version 7.4] [--dialect redis-7.4]

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
TcpFakeServer(("127.0.0.1", int(sys.argv[1])), server_type=sys.argv[2],
              server_version=tuple(int(p) for p in sys.argv[3].split("."))).serve_forever()
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

    def _probe(self) -> dict[str, str]:
        try:
            return super()._probe()
        except TargetError:
            self.release()  # fakeredis has no INFO: name the server after the package
            return {"server_name": "fakeredis", "fakeredis_version": version("fakeredis")}

    def is_blocked(self, client_id: int) -> bool:
        """fakeredis has no CLIENT LIST: a command still unanswered after a short wait counts as blocked."""
        time.sleep(BLOCK_WAIT)
        return True


def start_fakeredis(server_type: str = "redis", server_version: str = "7.0") -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port), server_type, server_version])
    deadline = time.monotonic() + 60  # importing fakeredis takes seconds on a loaded machine
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
    parser.add_argument("--verify-on", help="a real server of the dialect (redis://host:port) where every finding "
                        "must conform")
    parser.add_argument("--server-type", default="redis", choices=["redis", "valkey", "dragonfly", "kividb"],
                        help="fakeredis's server mode (TcpFakeServer's server_type)")
    parser.add_argument("--server-version", default="7.0", help="fakeredis's server_version, e.g. 7.4")
    parser.add_argument("--dialect", default="redis-7.0", help="the dialect to check it against")
    parser.add_argument("--max-findings", type=int, help="stop after this many shrunk divergences")
    args = parser.parse_args()
    proc, port = start_fakeredis(args.server_type, args.server_version)
    try:
        url = f"redis://127.0.0.1:{port}"
        target = FakeredisTarget(url, parse_endpoint(url), dialect=args.dialect, allow_flush=True)
        campaign = Campaign([target], dialect=args.dialect, steps=args.steps, seed=args.seed, clients=None,
                            out=args.out, budget_s=None, progress=None, max_findings=args.max_findings)
        result = campaign.run()
    finally:
        proc.terminate()
        proc.wait()
    print(result.report())
    if args.verify_on:
        real = parse_target(args.verify_on, dialect=args.dialect, allow_flush=True)
        try:
            for finding in result.findings:
                outcome = run_case(real, args.dialect, finding.steps, finding.config)
                print(f"{finding.path}: on {args.verify_on}: {outcome.verdict.status}; "
                      f"{' / '.join(describe(s) for s in finding.steps)}")
        finally:
            real.close()


if __name__ == "__main__":
    main()
