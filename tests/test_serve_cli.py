"""``xspec serve`` as a user runs it: what it says when it cannot start, and its help.

Each case runs the command line in a subprocess: a server that cannot start
says why in one line on stderr and exits nonzero, without a traceback.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xspec", "serve", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """One line on stderr, naming what went wrong; a nonzero status; no traceback."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_in_use(busy_port: int) -> None:
    _refused(_serve("--port", str(busy_port)), f"cannot listen on 127.0.0.1:{busy_port}", "in use")


def test_an_address_that_is_not_this_hosts() -> None:
    _refused(_serve("--host", "192.0.2.1", "--port", "0"), "cannot listen on 192.0.2.1:0")  # TEST-NET-1


def test_a_trace_that_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    path = tmp_path / "file" / "run.jsonl"
    _refused(_serve("--port", "0", "--trace", str(path)), "cannot write the trace", str(path), "Not a directory")


def test_help_describes_the_server_commands() -> None:
    result = _serve("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for form in ("XSPEC.FAULT ERROR <kind> [COUNT <n>] [COMMAND <name>]", "XSPEC.FAULT DELAY <ms> [CLIENT <id>]",
                 "XSPEC.FAULT CLOSE ALL | <id> [<id> ...]", "XSPEC.FAULT RESTART EMPTY | KEEP",
                 "XSPEC.FAULT CLEAR", "XSPEC.FAULT LIST",
                 "READONLY", "LOADING", "OOM", "BUSY", "MASTERDOWN", "TRYAGAIN"):
        assert form in text, form
    assert "XSPEC.CLOCK ADVANCE <ms>" in text
    assert "may be negative" in text
