"""Reading and writing traces, versions 1 and 2 (spec/trace-format.md).

A :class:`Trace` is a header plus a list of events. :func:`load` reads a
``.jsonl`` or ``.jsonl.gz`` file of either version and validates every line,
raising :class:`TraceError` with the file and line number for anything
malformed; :func:`dump` writes one deterministically (one way to write each
trace), as ``trace/1`` when the trace has one node and no event that only
version 2 has, and as ``trace/2`` otherwise.

A ``trace/1`` header has ``nodes`` ``None`` and names its one server in
``server_name``/``server_version``/``config``; a ``trace/2`` header names its
servers in ``nodes``. :meth:`Header.node_specs` gives both as nodes (a
``trace/1`` trace's one node is called :data:`SINGLE_NODE`).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xspec.spec.resp import Reply, arg_from_json, arg_to_json, from_json, to_json

FORMAT = "trace/1"
FORMAT_2 = "trace/2"
FORMATS = (FORMAT, FORMAT_2)

SINGLE_NODE = "server"
"""The name of a ``trace/1`` trace's one server when it is seen as a node."""

# The settings a trace/2 node's config must name (the contract's list, less the
# ones that decide nothing under the node's other settings: the contract's own
# examples leave them out).
REQUIRED_NODE_CONFIG = ("save", "appendonly")
REQUIRED_WITH_AOF = ("appendfsync", "aof-use-rdb-preamble")

LINK_STATES = ("held", "flowing", "cut")
LINK_CAUSES = ("harness", "server")

_REPLID = re.compile(r"[0-9a-f]{40}")
_ADDR = re.compile(r"(?P<host>[^\s:]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")


class TraceError(ValueError):
    """A trace file that does not follow the format; says where."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass
class NodeSpec:
    """One server of a trace/2 header: its software, its addresses, its config."""

    server_name: str = "redis"
    server_version: str = "7.0.15"
    addrs: list[str] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    skew_ms: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys, kept on rewrite

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"server": {"name": self.server_name, "version": self.server_version},
                             "addrs": list(self.addrs), "config": dict(self.config)}
        if self.skew_ms is not None:
            d["skew_ms"] = self.skew_ms
        d.update(self.extra)
        return d


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
    # trace/2: the servers by name. None for a trace/1 header, whose one server
    # is server_name/server_version/config above (those are unused when set).
    nodes: dict[str, NodeSpec] | None = None

    def node_specs(self) -> dict[str, NodeSpec]:
        """The trace's servers as nodes, for either version."""
        if self.nodes is not None:
            return self.nodes
        return {SINGLE_NODE: NodeSpec(self.server_name, self.server_version, [], dict(self.config))}

    def node_of_addr(self, host: str, port: int | str) -> str | None:
        """The node reached at ``host:port`` (as ``REPLICAOF host port`` names it), or None."""
        addr = f"{host}:{port}"
        for name, spec in self.node_specs().items():
            if addr in spec.addrs:
                return name
        return None

    def to_json(self) -> dict[str, Any]:
        """The header as trace/1 writes it (see :func:`header_to_json` for both versions)."""
        d: dict[str, Any] = {"xspec": FORMAT,
                             "server": {"name": self.server_name, "version": self.server_version},
                             "clock": self.clock}
        if self.slack_ms != 1:
            d["slack_ms"] = self.slack_ms
        d["config"] = dict(self.config)
        self._common_to_json(d)
        return d

    def to_json_v2(self) -> dict[str, Any]:
        """The header as trace/2 writes it."""
        d: dict[str, Any] = {"xspec": FORMAT_2,
                             "nodes": {name: spec.to_json() for name, spec in self.node_specs().items()},
                             "clock": self.clock}
        if self.slack_ms != 1:
            d["slack_ms"] = self.slack_ms
        self._common_to_json(d)
        return d

    def _common_to_json(self, d: dict[str, Any]) -> None:
        for k in ("expect", "title", "source", "tags"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        d.update(self.extra)


# ---------------------------------------------------------------------------
# Client events (both versions). ``node`` is the node a connection talks to
# (trace/2); it is None in a trace/1 trace.


@dataclass
class Call:
    """Client ``c`` sent ``cmd`` at ``t0`` and got ``reply`` at ``t1``, nothing in between."""

    c: int
    cmd: list[bytes]
    reply: Reply
    t0: int | None = None
    t1: int | None = None
    now: int | None = None
    node: str | None = None


@dataclass
class Send:
    """Client ``c`` sent ``cmd`` (or ``raw`` bytes) at ``t``; the reply is a later Recv."""

    c: int
    cmd: list[bytes] | None
    t: int | None = None
    raw: bytes | None = None
    now: int | None = None
    node: str | None = None


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
    node: str | None = None


@dataclass
class Close:
    c: int
    by: str
    t: int | None = None


@dataclass
class Note:
    text: str


# ---------------------------------------------------------------------------
# Events only trace/2 has.


@dataclass
class Push:
    """Client ``c`` received ``reply`` without a request of its own (RESP3 push, Pub/Sub message)."""

    c: int
    reply: Reply
    t: int | None = None
    now: int | None = None


@dataclass
class Crash:
    """``node``'s process was killed (SIGKILL): its connections close, its links drop."""

    node: str
    t: int | None = None
    now: int | None = None


@dataclass
class Restart:
    """``node`` was started again with the header's config and what its persistence kept."""

    node: str
    t: int | None = None
    now: int | None = None


@dataclass
class Pause:
    """``node``'s process was stopped (SIGSTOP)."""

    node: str
    t: int | None = None
    now: int | None = None


@dataclass
class Resume:
    """``node``'s stopped process was continued (SIGCONT)."""

    node: str
    t: int | None = None
    now: int | None = None


@dataclass
class Link:
    """The replication connection from ``primary`` to ``replica`` became ``state``.

    ``state`` is ``held``, ``flowing`` or ``cut``; ``by`` is ``harness`` or, for a
    cut only, ``server``. JSON: ``from`` is ``primary``, ``to`` is ``replica``.
    """

    primary: str
    replica: str
    state: str
    by: str = "harness"
    t: int | None = None
    now: int | None = None


@dataclass
class ReplCmd:
    """One command of the replication stream from ``primary`` to ``replica``."""

    primary: str
    replica: str
    cmd: list[bytes]
    t: int | None = None
    now: int | None = None


@dataclass
class ReplSync:
    """A resynchronisation starts: ``full`` (``+FULLRESYNC replid offset``) or ``partial`` (``+CONTINUE replid``)."""

    primary: str
    replica: str
    sync: str
    replid: str
    offset: int | None = None  # full only: the snapshot is the primary's data at this offset
    t: int | None = None
    now: int | None = None


@dataclass
class ReplAck:
    """``REPLCONF ACK ack [FACK fack]`` from ``replica`` to ``primary``."""

    primary: str
    replica: str
    ack: int
    fack: int | None = None
    t: int | None = None
    now: int | None = None


Repl = ReplCmd | ReplSync | ReplAck
NodeEvent = Crash | Restart | Pause | Resume
HarnessEvent = Crash | Restart | Pause | Resume | Link | ReplCmd | ReplSync | ReplAck
Event = Call | Send | Recv | Connect | Close | Note | Push | Crash | Restart | Pause | Resume | Link | \
    ReplCmd | ReplSync | ReplAck

V2_ONLY_EVENTS = (Push, Crash, Restart, Pause, Resume, Link, ReplCmd, ReplSync, ReplAck)


@dataclass
class Trace:
    header: Header
    events: list[Event]
    path: str = "<memory>"

    def client_nodes(self) -> dict[int, str]:
        """The node each connection talks to (for trace/1, every client's is :data:`SINGLE_NODE`)."""
        nodes = self.header.node_specs()
        only = next(iter(nodes)) if len(nodes) == 1 else None
        out: dict[int, str] = {}
        for e in self.events:
            if isinstance(e, (Call, Send, Connect)) and e.c not in out:
                node = e.node if e.node is not None else only
                if node is not None:
                    out[e.c] = node
        return out


def format_of(trace: Trace) -> str:
    """The version :func:`dumps` writes the trace in: trace/1 for one node and no version 2 event."""
    h = trace.header
    if h.nodes is not None:
        if len(h.nodes) != 1 or any(spec.skew_ms is not None for spec in h.nodes.values()) \
                or (h.expect is not None and "node" in h.expect):
            return FORMAT_2
    if any(isinstance(e, V2_ONLY_EVENTS) for e in trace.events):
        return FORMAT_2
    return FORMAT


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


def _nonneg_int(obj: dict[str, Any], key: str, where: tuple[str, int]) -> int:
    v = _require(obj, key, int, where)
    if v < 0:
        raise TraceError(where[0], where[1], f"field {key!r} must not be negative: {v!r}")
    return v


def _cmd(obj: dict[str, Any], where: tuple[str, int]) -> list[bytes]:
    cmd = _require(obj, "cmd", list, where)
    if not cmd:
        raise TraceError(where[0], where[1], "'cmd' is an empty array")
    try:
        return [a.encode("utf-8") if type(a) is str else arg_from_json(a) for a in cmd]
    except ValueError as e:
        raise TraceError(where[0], where[1], f"bad argument in 'cmd': {e}") from None


def _reply(obj: dict[str, Any], where: tuple[str, int]) -> Reply:
    if "reply" not in obj:
        raise TraceError(where[0], where[1], "missing field 'reply'")
    try:
        return from_json(obj["reply"])
    except ValueError as e:
        raise TraceError(where[0], where[1], f"bad reply: {e}") from None


def _config(obj: dict[str, Any], path: str, what: str) -> dict[str, str]:
    config = obj.get("config", {})
    if not isinstance(config, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                               for k, v in config.items()):
        raise TraceError(path, 1, f"{what}'config' must map setting names to string values")
    return dict(config)


def _server(obj: dict[str, Any], path: str, what: str) -> tuple[str, str]:
    server = _require(obj, "server", dict, (path, 1))
    name = server.get("name")
    version = server.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise TraceError(path, 1, f"{what}'server' needs string 'name' and 'version'")
    return name, version


def _common_header(obj: dict[str, Any], path: str) -> tuple[str, int, dict[str, Any] | None]:
    clock = obj.get("clock", "wall")
    if clock not in ("wall", "virtual"):
        raise TraceError(path, 1, f"'clock' must be \"wall\" or \"virtual\", got {clock!r}")
    slack = obj.get("slack_ms", 1)
    if not isinstance(slack, int) or isinstance(slack, bool) or slack < 0:
        raise TraceError(path, 1, f"'slack_ms' must be a non-negative integer, got {slack!r}")
    expect = obj.get("expect")
    if expect is not None:
        if not isinstance(expect, dict) or expect.get("verdict") not in (
                "conform", "diverge", "unsupported", "inconclusive"):
            raise TraceError(path, 1, f"bad 'expect': {expect!r}")
    return clock, slack, expect


def parse_header(obj: Any, path: str) -> Header:
    """Read line 1 of a trace of either version."""
    if not isinstance(obj, dict):
        raise TraceError(path, 1, "the header must be a JSON object")
    if obj.get("xspec") == FORMAT_2:
        return _parse_header_v2(obj, path)
    if obj.get("xspec") != FORMAT:
        raise TraceError(path, 1, f"not a trace/1 header (\"xspec\": {obj.get('xspec')!r}), "
                                  f"nor a trace/2 one")
    name, version = _server(obj, path, "")
    clock, slack, expect = _common_header(obj, path)
    config = _config(obj, path, "")
    known = {"xspec", "server", "clock", "slack_ms", "config", "expect", "title", "source", "tags"}
    return Header(server_name=name, server_version=version, clock=clock, slack_ms=slack,
                  config=config, expect=expect, title=obj.get("title"), source=obj.get("source"),
                  tags=obj.get("tags"), extra={k: v for k, v in obj.items() if k not in known})


def _parse_addr(addr: Any, path: str, what: str) -> str:
    m = _ADDR.fullmatch(addr) if isinstance(addr, str) else None
    if m is None or not 0 < int(m["port"]) < 65536:
        raise TraceError(path, 1, f"{what}: an address is \"host:port\", got {addr!r}")
    return str(addr)


def _parse_node(name: str, obj: Any, path: str) -> NodeSpec:
    what = f"node {name!r}"
    if not isinstance(obj, dict):
        raise TraceError(path, 1, f"{what} must be a JSON object")
    server_name, server_version = _server(obj, path, f"{what}: ")
    addrs = obj.get("addrs")
    if not isinstance(addrs, list):
        raise TraceError(path, 1, f"{what}: 'addrs' must be a list of \"host:port\" strings")
    addrs = [_parse_addr(a, path, what) for a in addrs]
    config = _config(obj, path, f"{what}: ")
    skew = obj.get("skew_ms")
    if skew is not None and (not isinstance(skew, int) or isinstance(skew, bool)):
        raise TraceError(path, 1, f"{what}: 'skew_ms' must be an integer, got {skew!r}")
    known = {"server", "addrs", "config", "skew_ms"}
    return NodeSpec(server_name, server_version, addrs, config, skew,
                    {k: v for k, v in obj.items() if k not in known})


def missing_persistence_config(spec: NodeSpec) -> list[str]:
    """The settings deciding what survives a restart or a resynchronisation that ``spec`` leaves unnamed."""
    missing = [k for k in REQUIRED_NODE_CONFIG if k not in spec.config]
    if spec.config.get("appendonly") == "yes":
        missing += [k for k in REQUIRED_WITH_AOF if k not in spec.config]
    return missing


def _parse_header_v2(obj: dict[str, Any], path: str) -> Header:
    for key in ("server", "config"):
        if key in obj:
            raise TraceError(path, 1, f"trace/2 header: a top-level {key!r} belongs to trace/1; "
                                      f"name it inside each node")
    raw_nodes = obj.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        raise TraceError(path, 1, "trace/2 header: missing field 'nodes' (a non-empty object: "
                                  "node name → server, addrs, config)")
    nodes: dict[str, NodeSpec] = {}
    seen: dict[str, str] = {}
    for name, spec in raw_nodes.items():
        if not name:
            raise TraceError(path, 1, "trace/2 header: a node's name must not be empty")
        nodes[name] = _parse_node(name, spec, path)
        for addr in nodes[name].addrs:
            if addr in seen:
                raise TraceError(path, 1, f"address {addr} is given to nodes {seen[addr]!r} and {name!r}")
            seen[addr] = name
    clock, slack, expect = _common_header(obj, path)
    if expect is not None and "node" in expect and expect["node"] not in nodes:
        raise TraceError(path, 1, f"'expect' names node {expect['node']!r}, which the header does not have")
    known = {"xspec", "nodes", "clock", "slack_ms", "expect", "title", "source", "tags"}
    return Header(clock=clock, slack_ms=slack, expect=expect, title=obj.get("title"),
                  source=obj.get("source"), tags=obj.get("tags"),
                  extra={k: v for k, v in obj.items() if k not in known}, nodes=nodes)


def parse_event(obj: Any, path: str, line: int) -> Event:
    """Read one trace/1 event line (fields only; see :class:`_V2Reader` for version 2)."""
    where = (path, line)
    if not isinstance(obj, dict):
        raise TraceError(path, line, "an event must be a JSON object")
    ev = obj.get("ev")
    if ev == "call":
        c, t0, t1, now = obj.get("c"), obj.get("t0"), obj.get("t1"), obj.get("now")
        if type(c) is int and (t0 is None or type(t0) is int) and (t1 is None or type(t1) is int) and (
                now is None or type(now) is int):  # well-formed fields (most lines): no checks to repeat
            return Call(c=c, cmd=_cmd(obj, where), reply=_reply(obj, where), t0=t0, t1=t1, now=now)
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
    if ev in ("push", "crash", "restart", "pause", "resume", "link", "repl"):
        raise TraceError(path, line, f"a {ev!r} event needs a trace/2 header")
    raise TraceError(path, line, f"unknown event type {ev!r}")


class _V2Reader:
    """Reads trace/2 events and checks what the contract says across lines.

    Per line: each field's presence and type. Across lines: a connection talks
    to one node all its life and is never used after it closed (a crash closes
    every connection to the node), pause/resume alternate, a crashed node is
    restarted before it is crashed, paused or resumed again, and a link names
    two different nodes of the header.
    """

    def __init__(self, header: Header, path: str) -> None:
        assert header.nodes is not None
        self.nodes = header.nodes
        self.only = next(iter(self.nodes)) if len(self.nodes) == 1 else None
        self.virtual = header.clock == "virtual"
        self.path = path
        self.client_node: dict[int, str] = {}
        self.closed: dict[int, str] = {}  # client → why ("close" or "crash")
        self.crashed: set[str] = set()
        self.paused: set[str] = set()

    def fail(self, line: int, message: str) -> TraceError:
        return TraceError(self.path, line, message)

    def _node(self, obj: dict[str, Any], key: str, line: int, *, optional: bool = False) -> str:
        node = obj.get(key)
        if node is None:
            if optional and self.only is not None:
                return self.only
            if optional:
                raise self.fail(line, f"missing field {key!r} (the header has {len(self.nodes)} nodes)")
            raise self.fail(line, f"missing field {key!r}")
        if not isinstance(node, str) or node not in self.nodes:
            raise self.fail(line, f"{key!r} names {node!r}, which is not a node of the header "
                                  f"({', '.join(self.nodes)})")
        return node

    def _times(self, obj: dict[str, Any], line: int) -> tuple[int | None, int | None]:
        where = (self.path, line)
        t, now = _opt_int(obj, "t", where), _opt_int(obj, "now", where)
        if self.virtual and now is None:
            raise self.fail(line, f"a {obj['ev']!r} event in a virtual trace needs 'now'")
        if not self.virtual and t is None:
            raise self.fail(line, f"a {obj['ev']!r} event in a wall trace needs 't'")
        return t, now

    def _client(self, c: int, line: int, node: str | None, *, closing: bool = False) -> None:
        """Bind ``c`` to ``node`` (when given) and refuse a connection that was closed."""
        why = self.closed.get(c)
        if why is not None and not (closing and why == "crash"):
            raise self.fail(line, f"client {c} was closed ({why}); a connection that reconnects is a new 'c'")
        if node is None:
            if c not in self.client_node and self.only is None:
                raise self.fail(line, f"client {c} has not sent anything yet, so its node is unknown")
            return
        bound = self.client_node.setdefault(c, node)
        if bound != node:
            raise self.fail(line, f"client {c} talks to node {bound!r}, not {node!r}: "
                                  f"a connection talks to one node all its life")

    def event(self, obj: Any, line: int) -> Event:
        if not isinstance(obj, dict):
            raise self.fail(line, "an event must be a JSON object")
        ev = obj.get("ev")
        if ev in ("call", "send", "connect"):
            e = parse_event(obj, self.path, line)
            assert isinstance(e, (Call, Send, Connect))
            node = self._node(obj, "node", line, optional=True)
            self._client(e.c, line, node)
            e.node = node
            return e
        if ev in ("recv", "close", "push"):
            where = (self.path, line)
            c = _require(obj, "c", int, where)
            said = self._node(obj, "node", line) if "node" in obj else None
            self._client(c, line, said, closing=ev == "close")
            if ev == "push":
                t, now = _opt_int(obj, "t", where), _opt_int(obj, "now", where)
                return Push(c=c, reply=_reply(obj, where), t=t, now=now)
            e = parse_event(obj, self.path, line)
            if isinstance(e, Close):
                if self.closed.get(c) == "crash" and e.by != "server":
                    raise self.fail(line, f"client {c}'s node crashed: its close is by \"server\"")
                self.closed[c] = "close"
            return e
        if ev == "note":
            return parse_event(obj, self.path, line)
        if ev in ("crash", "restart", "pause", "resume"):
            return self._node_event(ev, obj, line)
        if ev == "link":
            return self._link(obj, line)
        if ev == "repl":
            return self._repl(obj, line)
        raise self.fail(line, f"unknown event type {ev!r}")

    def _node_event(self, ev: str, obj: dict[str, Any], line: int) -> NodeEvent:
        node = self._node(obj, "node", line)
        t, now = self._times(obj, line)
        if ev == "crash":
            if node in self.crashed:
                raise self.fail(line, f"node {node!r} crashed already and was not restarted")
            self.crashed.add(node)
            self.paused.discard(node)  # SIGKILL ends a stopped process too
            for c, n in self.client_node.items():
                if n == node and c not in self.closed:
                    self.closed[c] = "crash"
            return Crash(node, t, now)
        if node in self.crashed and ev != "restart":
            raise self.fail(line, f"node {node!r} crashed and was not restarted: it cannot be {ev}d")
        if ev == "restart":
            if node in self.paused:
                raise self.fail(line, f"node {node!r} is paused: it cannot be restarted")
            self.crashed.discard(node)
            return Restart(node, t, now)
        if ev == "pause":
            if node in self.paused:
                raise self.fail(line, f"node {node!r} is paused already")
            self.paused.add(node)
            return Pause(node, t, now)
        if node not in self.paused:
            raise self.fail(line, f"node {node!r} is not paused, so it cannot be resumed")
        self.paused.discard(node)
        return Resume(node, t, now)

    def _ends(self, obj: dict[str, Any], line: int) -> tuple[str, str]:
        primary = self._node(obj, "from", line)
        replica = self._node(obj, "to", line)
        if primary == replica:
            raise self.fail(line, f"a replication link joins two nodes, not {primary!r} to itself")
        return primary, replica

    def _link(self, obj: dict[str, Any], line: int) -> Link:
        primary, replica = self._ends(obj, line)
        state = obj.get("state")
        if state not in LINK_STATES:
            raise self.fail(line, f"'state' must be \"held\", \"flowing\" or \"cut\", got {state!r}")
        by = obj.get("by", "harness")
        if by not in LINK_CAUSES:
            raise self.fail(line, f"'by' must be \"harness\" or \"server\", got {by!r}")
        if by == "server" and state != "cut":
            raise self.fail(line, f"only the harness makes a link {state}; a server can only cut it")
        t, now = self._times(obj, line)
        return Link(primary, replica, state, by, t, now)

    def _repl(self, obj: dict[str, Any], line: int) -> Repl:
        primary, replica = self._ends(obj, line)
        kinds = [k for k in ("cmd", "sync", "ack") if k in obj]
        if len(kinds) != 1:
            raise self.fail(line, "a 'repl' event has exactly one of 'cmd', 'sync' and 'ack', "
                                  f"not {' and '.join(map(repr, kinds)) or 'none'}")
        t, now = self._times(obj, line)
        where = (self.path, line)
        if kinds == ["cmd"]:
            return ReplCmd(primary, replica, _cmd(obj, where), t, now)
        if kinds == ["ack"]:
            fack = _nonneg_int(obj, "fack", where) if "fack" in obj else None
            return ReplAck(primary, replica, _nonneg_int(obj, "ack", where), fack, t, now)
        sync = obj["sync"]
        if sync not in ("full", "partial"):
            raise self.fail(line, f"'sync' must be \"full\" or \"partial\", got {sync!r}")
        replid = obj.get("replid")
        if not isinstance(replid, str) or not _REPLID.fullmatch(replid):
            raise self.fail(line, f"'replid' must be 40 lowercase hexadecimal characters, got {replid!r}")
        if sync == "full":
            return ReplSync(primary, replica, "full", replid, _nonneg_int(obj, "offset", where), t, now)
        if "offset" in obj:
            raise self.fail(line, "a partial resynchronisation (+CONTINUE) has no 'offset'")
        return ReplSync(primary, replica, "partial", replid, None, t, now)


def _events(header: Header, lines: Iterable[tuple[int, Any]], path: str) -> list[Event]:
    if header.nodes is None:
        return [parse_event(obj, path, n) for n, obj in lines]
    reader = _V2Reader(header, path)
    events = [reader.event(obj, n) for n, obj in lines]
    # Persistence decides something once there is a second node or a restart;
    # a one-node trace written as trace/2 for its pushes needs no such settings.
    if len(header.nodes) > 1 or any(isinstance(e, (Crash, Restart)) for e in events):
        for name, spec in header.nodes.items():
            missing = missing_persistence_config(spec)
            if missing:
                raise TraceError(path, 1, f"node {name!r}: 'config' must name "
                                          f"{', '.join(repr(k) for k in missing)} "
                                          f"(what survives a restart or a resynchronisation)")
    return events


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
    """Read and validate one trace file of either version."""
    path = Path(path)
    lines = iter_lines(path)
    first = next(lines, None)
    if first is None:
        raise TraceError(str(path), 1, "empty file: a trace starts with its header line")
    header = parse_header(first[1], str(path))
    return Trace(header, _events(header, lines, str(path)), str(path))


def loads(text: str, path: str = "<string>") -> Trace:
    """Parse a trace of either version from a string (tests, generated traces)."""
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
    return Trace(header, _events(header, objs[1:], path), path)


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


def _times_to_json(d: dict[str, Any], t: int | None, now: int | None) -> dict[str, Any]:
    if t is not None:
        d["t"] = t
    if now is not None:
        d["now"] = now
    return d


def event_to_json(e: Event) -> dict[str, Any]:
    """One event as its line writes it; ``node`` is written when the event has one."""
    d: dict[str, Any]
    if isinstance(e, Call):
        d = {"ev": "call", "c": e.c}
        if e.node is not None:
            d["node"] = e.node
        d["cmd"] = [arg_to_json(a) for a in e.cmd]
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
        if e.node is not None:
            d["node"] = e.node
        if e.raw is not None:
            d["raw"] = {"b64": base64.b64encode(e.raw).decode("ascii")}
        else:
            assert e.cmd is not None
            d["cmd"] = [arg_to_json(a) for a in e.cmd]
        return _times_to_json(d, e.t, e.now)
    if isinstance(e, (Recv, Push)):
        d = _times_to_json({"ev": "recv" if isinstance(e, Recv) else "push", "c": e.c}, e.t, e.now)
        d["reply"] = to_json(e.reply)
        return d
    if isinstance(e, Connect):
        d = {"ev": "connect", "c": e.c}
        if e.node is not None:
            d["node"] = e.node
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
    if isinstance(e, (Crash, Restart, Pause, Resume)):
        return _times_to_json({"ev": type(e).__name__.lower(), "node": e.node}, e.t, e.now)
    if isinstance(e, Link):
        return _times_to_json({"ev": "link", "from": e.primary, "to": e.replica, "state": e.state,
                               "by": e.by}, e.t, e.now)
    if isinstance(e, ReplCmd):
        return _times_to_json({"ev": "repl", "from": e.primary, "to": e.replica,
                               "cmd": [arg_to_json(a) for a in e.cmd]}, e.t, e.now)
    if isinstance(e, ReplSync):
        d = {"ev": "repl", "from": e.primary, "to": e.replica, "sync": e.sync, "replid": e.replid}
        if e.offset is not None:
            d["offset"] = e.offset
        return _times_to_json(d, e.t, e.now)
    if isinstance(e, ReplAck):
        d = {"ev": "repl", "from": e.primary, "to": e.replica, "ack": e.ack}
        if e.fack is not None:
            d["fack"] = e.fack
        return _times_to_json(d, e.t, e.now)
    raise TypeError(f"not an event: {e!r}")


def header_to_json(trace: Trace) -> dict[str, Any]:
    """The header line, in the version :func:`format_of` chooses."""
    h = trace.header
    if format_of(trace) == FORMAT:
        if h.nodes is None:
            return h.to_json()
        (spec,) = h.nodes.values()
        one = replace(h, server_name=spec.server_name, server_version=spec.server_version,
                      config=dict(spec.config), nodes=None)
        return one.to_json()
    return h.to_json_v2()


def _written_events(trace: Trace) -> Iterator[Event]:
    """The events as the chosen version writes them: ``node`` on every client event of trace/2, none in trace/1."""
    v2 = format_of(trace) == FORMAT_2
    nodes = trace.header.node_specs()
    only = next(iter(nodes)) if len(nodes) == 1 else None
    for e in trace.events:
        if isinstance(e, (Call, Send, Connect)):
            if v2 and e.node is None:
                if only is None:
                    raise ValueError(f"client {e.c}'s {type(e).__name__.lower()} names no node, "
                                     f"and the trace has {len(nodes)}")
                e = replace(e, node=only)
            elif not v2 and e.node is not None:
                e = replace(e, node=None)
        yield e


def dumps(trace: Trace) -> str:
    lines = [json.dumps(header_to_json(trace), ensure_ascii=False, separators=(", ", ": "))]
    lines.extend(json.dumps(event_to_json(e), ensure_ascii=False, separators=(",", ":"))
                 for e in _written_events(trace))
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
