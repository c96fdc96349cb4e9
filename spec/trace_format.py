"""Reading and writing traces, version 1 (spec/trace-format.md).

A :class:`Trace` is a header plus a list of events. :func:`load` reads a
``.jsonl`` or ``.jsonl.gz`` file and validates every line, raising
:class:`TraceError` with the file and line number for anything malformed;
:func:`dump` writes one deterministically (one way to write each trace).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xspec.spec.resp import Reply, arg_from_json, arg_to_json, from_json, to_json

FORMAT = "trace/1"


class TraceError(ValueError):
    """A trace file that does not follow the format; says where."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass
class Header:
    server_name: str = "redis"
    server_version: str = "7.0.15"
    clock: str = "wall"  # or "virtual"
    slack_ms: int = 1
    config: dict[str, str] = field(default_factory=dict)
    expect: dict[str, Any] | None = None
    title: str | None = None
    source: str | None = None
    tags: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys, kept on rewrite

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"xspec": FORMAT,
                             "server": {"name": self.server_name, "version": self.server_version},
                             "clock": self.clock}
        if self.slack_ms != 1:
            d["slack_ms"] = self.slack_ms
        d["config"] = dict(self.config)
        for k in ("expect", "title", "source", "tags"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        d.update(self.extra)
        return d


@dataclass
class Call:
    """Client ``c`` sent ``cmd`` at ``t0`` and got ``reply`` at ``t1``, nothing in between."""

    c: int
    cmd: list[bytes]
    reply: Reply
    t0: int | None = None
    t1: int | None = None
    now: int | None = None


@dataclass
class Send:
    """Client ``c`` sent ``cmd`` (or ``raw`` bytes) at ``t``; the reply is a later Recv."""

    c: int
    cmd: list[bytes] | None
    t: int | None = None
    raw: bytes | None = None
    now: int | None = None


@dataclass
class Recv:
    c: int
    reply: Reply
    t: int | None = None
    now: int | None = None


@dataclass
class Connect:
    c: int
    t: int | None = None


@dataclass
class Close:
    c: int
    by: str
    t: int | None = None


@dataclass
class Note:
    text: str


Event = Call | Send | Recv | Connect | Close | Note


@dataclass
class Trace:
    header: Header
    events: list[Event]
    path: str = "<memory>"


# ---------------------------------------------------------------------------
# Reading


def _require(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: tuple[str, int]) -> Any:
    if key not in obj:
        raise TraceError(where[0], where[1], f"missing field {key!r}")
    v = obj[key]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise TraceError(where[0], where[1], f"field {key!r} has the wrong type: {v!r}")
    return v


def _opt_int(obj: dict[str, Any], key: str, where: tuple[str, int]) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        raise TraceError(where[0], where[1], f"field {key!r} must be an integer: {v!r}")
    return v


def _cmd(obj: dict[str, Any], where: tuple[str, int]) -> list[bytes]:
    cmd = _require(obj, "cmd", list, where)
    if not cmd:
        raise TraceError(where[0], where[1], "'cmd' is an empty array")
    try:
        return [arg_from_json(a) for a in cmd]
    except ValueError as e:
        raise TraceError(where[0], where[1], f"bad argument in 'cmd': {e}") from None


def _reply(obj: dict[str, Any], where: tuple[str, int]) -> Reply:
    if "reply" not in obj:
        raise TraceError(where[0], where[1], "missing field 'reply'")
    try:
        return from_json(obj["reply"])
    except ValueError as e:
        raise TraceError(where[0], where[1], f"bad reply: {e}") from None


def parse_header(obj: Any, path: str) -> Header:
    where = (path, 1)
    if not isinstance(obj, dict):
        raise TraceError(path, 1, "the header must be a JSON object")
    if obj.get("xspec") != FORMAT:
        raise TraceError(path, 1, f"not a trace/1 header (\"xspec\": {obj.get('xspec')!r})")
    server = _require(obj, "server", dict, where)
    name = server.get("name")
    version = server.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise TraceError(path, 1, "'server' needs string 'name' and 'version'")
    clock = obj.get("clock", "wall")
    if clock not in ("wall", "virtual"):
        raise TraceError(path, 1, f"'clock' must be \"wall\" or \"virtual\", got {clock!r}")
    slack = obj.get("slack_ms", 1)
    if not isinstance(slack, int) or isinstance(slack, bool) or slack < 0:
        raise TraceError(path, 1, f"'slack_ms' must be a non-negative integer, got {slack!r}")
    config = obj.get("config", {})
    if not isinstance(config, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                               for k, v in config.items()):
        raise TraceError(path, 1, "'config' must map setting names to string values")
    expect = obj.get("expect")
    if expect is not None:
        if not isinstance(expect, dict) or expect.get("verdict") not in (
                "conform", "diverge", "unsupported", "inconclusive"):
            raise TraceError(path, 1, f"bad 'expect': {expect!r}")
    known = {"xspec", "server", "clock", "slack_ms", "config", "expect", "title", "source", "tags"}
    return Header(server_name=name, server_version=version, clock=clock, slack_ms=slack,
                  config=dict(config), expect=expect, title=obj.get("title"), source=obj.get("source"),
                  tags=obj.get("tags"), extra={k: v for k, v in obj.items() if k not in known})


def parse_event(obj: Any, path: str, line: int) -> Event:
    where = (path, line)
    if not isinstance(obj, dict):
        raise TraceError(path, line, "an event must be a JSON object")
    ev = obj.get("ev")
    if ev == "call":
        return Call(c=_require(obj, "c", int, where), cmd=_cmd(obj, where), reply=_reply(obj, where),
                    t0=_opt_int(obj, "t0", where), t1=_opt_int(obj, "t1", where),
                    now=_opt_int(obj, "now", where))
    if ev == "send":
        c = _require(obj, "c", int, where)
        if "raw" in obj:
            try:
                raw = arg_from_json(obj["raw"])
            except ValueError as e:
                raise TraceError(path, line, f"bad 'raw': {e}") from None
            return Send(c=c, cmd=None, raw=raw, t=_opt_int(obj, "t", where), now=_opt_int(obj, "now", where))
        return Send(c=c, cmd=_cmd(obj, where), t=_opt_int(obj, "t", where), now=_opt_int(obj, "now", where))
    if ev == "recv":
        return Recv(c=_require(obj, "c", int, where), reply=_reply(obj, where),
                    t=_opt_int(obj, "t", where), now=_opt_int(obj, "now", where))
    if ev == "connect":
        return Connect(c=_require(obj, "c", int, where), t=_opt_int(obj, "t", where))
    if ev == "close":
        by = obj.get("by")
        if by not in ("client", "server"):
            raise TraceError(path, line, f"'by' must be \"client\" or \"server\", got {by!r}")
        return Close(c=_require(obj, "c", int, where), by=by, t=_opt_int(obj, "t", where))
    if ev == "note":
        return Note(text=_require(obj, "text", str, where))
    raise TraceError(path, line, f"unknown event type {ev!r}")


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")  # type: ignore[arg-type]
    return open(path, encoding="utf-8")


def iter_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for every non-empty line; errors name the line."""
    p = str(path)
    n = 0  # the last line read whole; a read error is in the line after it
    try:
        with _open_text(path) as f:
            for n, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    yield n, json.loads(text)
                except json.JSONDecodeError as e:
                    raise TraceError(p, n, f"not valid JSON ({e.msg} at column {e.colno})") from None
    except UnicodeDecodeError as e:
        raise TraceError(p, n + 1, f"not UTF-8 text: {e}") from None
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise TraceError(p, n + 1, f"cannot read: {e}") from None


def load(path: str | Path) -> Trace:
    """Read and validate one trace file."""
    path = Path(path)
    lines = iter_lines(path)
    first = next(lines, None)
    if first is None:
        raise TraceError(str(path), 1, "empty file: a trace starts with its header line")
    header = parse_header(first[1], str(path))
    events = [parse_event(obj, str(path), n) for n, obj in lines]
    return Trace(header, events, str(path))


def loads(text: str, path: str = "<string>") -> Trace:
    """Parse a trace from a string (tests, generated traces)."""
    objs: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                objs.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                raise TraceError(path, n, f"not valid JSON ({e.msg})") from None
    if not objs:
        raise TraceError(path, 1, "empty trace")
    header = parse_header(objs[0][1], path)
    return Trace(header, [parse_event(o, path, n) for n, o in objs[1:]], path)


def find_traces(paths: Iterable[str | Path]) -> list[Path]:
    """Every trace file named, or found under a named folder, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.is_file()
                              and (q.name.endswith(".jsonl") or q.name.endswith(".jsonl.gz"))))
        else:
            out.append(p)
    return out


# ---------------------------------------------------------------------------
# Writing


def event_to_json(e: Event) -> dict[str, Any]:
    d: dict[str, Any]
    if isinstance(e, Call):
        d = {"ev": "call", "c": e.c, "cmd": [arg_to_json(a) for a in e.cmd]}
        if e.t0 is not None:
            d["t0"] = e.t0
        if e.t1 is not None:
            d["t1"] = e.t1
        if e.now is not None:
            d["now"] = e.now
        d["reply"] = to_json(e.reply)
        return d
    if isinstance(e, Send):
        d = {"ev": "send", "c": e.c}
        if e.raw is not None:
            d["raw"] = {"b64": base64.b64encode(e.raw).decode("ascii")}
        else:
            assert e.cmd is not None
            d["cmd"] = [arg_to_json(a) for a in e.cmd]
        if e.t is not None:
            d["t"] = e.t
        if e.now is not None:
            d["now"] = e.now
        return d
    if isinstance(e, Recv):
        d = {"ev": "recv", "c": e.c}
        if e.t is not None:
            d["t"] = e.t
        if e.now is not None:
            d["now"] = e.now
        d["reply"] = to_json(e.reply)
        return d
    if isinstance(e, Connect):
        d = {"ev": "connect", "c": e.c}
        if e.t is not None:
            d["t"] = e.t
        return d
    if isinstance(e, Close):
        d = {"ev": "close", "c": e.c, "by": e.by}
        if e.t is not None:
            d["t"] = e.t
        return d
    if isinstance(e, Note):
        return {"ev": "note", "text": e.text}
    raise TypeError(f"not an event: {e!r}")


def dumps(trace: Trace) -> str:
    lines = [json.dumps(trace.header.to_json(), ensure_ascii=False, separators=(", ", ": "))]
    lines.extend(json.dumps(event_to_json(e), ensure_ascii=False, separators=(",", ":"))
                 for e in trace.events)
    return "\n".join(lines) + "\n"


def dump(trace: Trace, path: str | Path) -> None:
    """Write a trace (gzip when the name ends in .gz)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dumps(trace).encode("utf-8")
    if path.name.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
