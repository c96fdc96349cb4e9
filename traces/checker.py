"""Conformance checking of a trace against the model (first version: sequential).

This version executes events in file order with a concrete clock at the start
of each command's window. It is exact for traces whose replies do not depend
on the choice of order or time; the search over orders and symbolic time
windows replaces it (same API).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xspec.models import ManualClock, Server
from xspec.models.dialect import Dialect, dialect_for_server, get_dialect
from xspec.spec import commands as table
from xspec.spec.resp import Reply, show
from xspec.traces.format import Call, Close, Connect, Note, Recv, Send, Trace


@dataclass
class Verdict:
    status: str  # conform | diverge | unsupported | inconclusive
    events: int
    event: int | None = None  # 1-based event index (line number minus 1) of the first problem
    message: str = ""
    got: Reply | None = None
    allowed: list[Reply] = field(default_factory=list)

    def describe(self) -> str:
        if self.status == "conform":
            return "conform"
        where = f" at event {self.event}" if self.event is not None else ""
        s = f"{self.status}{where}: {self.message}"
        if self.got is not None:
            s += f"\n    trace says: {show(self.got)}"
        for a in self.allowed:
            s += f"\n    model allows: {show(a)}"
        return s


def trace_dialect(trace: Trace, override: str | None = None) -> Dialect:
    if override and override != "auto":
        return get_dialect(override)
    return dialect_for_server(trace.header.server_name, trace.header.server_version)


def unsupported_command(trace: Trace) -> str | None:
    """The first command outside the model's scope, if any."""
    for e in trace.events:
        cmd = e.cmd if isinstance(e, (Call, Send)) else None
        if cmd:
            name = cmd[0].decode("latin-1").lower()
            if name in table.OUT_OF_SCOPE:
                return name
    return None


def check_trace(trace: Trace, dialect: str | None = None) -> Verdict:
    d = trace_dialect(trace, dialect)
    n = len(trace.events)
    bad = unsupported_command(trace)
    if bad is not None:
        return Verdict("unsupported", n, message=f"uses {bad.upper()}, outside the model's scope")
    if any(isinstance(e, Send) and e.raw is not None for e in trace.events):
        return Verdict("unsupported", n, message="raw protocol bytes are not modelled yet")
    clock = ManualClock(0)
    model = Server(d, clock, trace.header.config)
    waiting: dict[int, list[Reply]] = {}
    outstanding: dict[int, int] = {}
    for i, e in enumerate(trace.events, 1):
        if isinstance(e, Note):
            continue
        if isinstance(e, Connect):
            model.client(e.c)
            continue
        if isinstance(e, Close):
            model.close(e.c)
            continue
        if isinstance(e, Call):
            clock.set(e.now if e.now is not None else (e.t0 or 0) // 1000)
            out = model.execute(e.c, e.cmd)
            for cid, r in out.served:
                waiting.setdefault(cid, []).append(r)
            if out.reply != e.reply:
                return Verdict("diverge", n, i, "reply differs", e.reply,
                               [] if out.reply is None else [out.reply])
            continue
        if isinstance(e, Send):
            assert e.cmd is not None
            clock.set(e.now if e.now is not None else (e.t or 0) // 1000)
            client = model.clients.get(e.c)
            if client is not None and client.blocked is not None:
                return Verdict("inconclusive", n, i, "pipelining behind a blocked command is not checked yet")
            out = model.execute(e.c, e.cmd)
            for cid, r in out.served:
                waiting.setdefault(cid, []).append(r)
            if not out.blocked and out.reply is not None:
                waiting.setdefault(e.c, []).append(out.reply)
            outstanding[e.c] = outstanding.get(e.c, 0) + 1
            continue
        if isinstance(e, Recv):
            q = waiting.get(e.c)
            if q:
                r = q.pop(0)
            else:
                client = model.clients.get(e.c)
                if client is None or client.blocked is None:
                    return Verdict("diverge", n, i, "a reply the model never produced", e.reply)
                clock.set(e.now if e.now is not None else (e.t or 0) // 1000)
                r = model.timeout(e.c)
            if r != e.reply:
                return Verdict("diverge", n, i, "reply differs", e.reply, [r])
            continue
    return Verdict("conform", n)
