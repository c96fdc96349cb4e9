"""``xspec replay PATH... --against redis://HOST:PORT``: replay traces on a live server and check what it says.

Each trace is replayed on the target from a fresh state (flushed, configured
as its header says): the same clients, the same order of events, and the
same pauses between commands (so idle times and block timeouts are alike).
A command the original trace saw blocked is confirmed blocked on the target
before the next event; a ``close`` closes the connection. The conversation
with the target is recorded as a new trace, checked for conformance with the
model, and compared with the original: every reply that differs is listed
(informative: the verdict is the conformance of the live trace).

Two things cannot be replayed byte for byte, because they depend on when
the replay runs:

* IDs the original server generated (``XADD ... *`` or ``ms-*``, also inside
  MULTI/EXEC) are *rebound*: a later argument equal to such an ID (or to it
  with ``(`` in front) is replaced by the ID the target generated.
* Explicit times near the original's clock (13-digit milliseconds, alone or
  as an ID's first part, within a minute of the original trace's time span:
  ``XCLAIM ... TIME``, IDs just ahead of the clock) are moved by the distance
  between the original's start and the replay's, so they keep their place
  relative to the clock.

The same translations are applied to the original replies before they are
compared with the live ones; replies that describe the host (HELLO's id,
CLIENT ID, INFO ...) are compared by shape, as the checker does.
"""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import click

from xspec.spec.dialect import UnknownDialect
from xspec.spec.environment import environment_matches
from xspec.spec.resp import Array, Bulk, Int, Map, Reply, Set, show
from xspec.spec.trace_format import (
    Call,
    Close,
    Connect,
    Event,
    Header,
    Note,
    Recv,
    Send,
    Trace,
    TraceError,
    dump,
    find_traces,
    load,
)
from xspec.spec.trace_format import Push as PushEvent
from xspec.traces.check import pushes as _pushes
from xspec.traces.check.checker import Verdict, check_trace
from xspec.traces.check.report import STATUSES
from xspec.traces.fuzz.generate import Step
from xspec.traces.harness.targets import LiveRecorder, LiveTarget, TargetError, parse_target, sees_connections
from xspec.traces.record.client import ConnectionClosed

REPLY_WAIT = 5.0
"""Seconds to wait for a reply beyond the moment the original trace received it."""

CLOSE_WAIT = 1.0
"""Seconds to wait for the target to close a connection the original server closed."""

TIME_MARGIN_MS = 60_000
"""How far outside the original trace's time span a 13-digit number still counts as a time."""

_TIME_ARG = re.compile(rb"^(\(?)(\d{13})((?:-(?:\d+|\*))?)$")


@dataclass
class Difference:
    event: int  # 1-based event index in the original trace
    command: list[bytes]
    original: Reply | None
    live: Reply | None

    @property
    def only_numbers(self) -> bool:
        """The replies have the same shape and differ only in integers (idle times, clock readings)."""
        return self.original is not None and self.live is not None and _numbers_only(self.original, self.live)

    def describe(self) -> str:
        cmd = " ".join(a.decode("utf-8", "backslashreplace") for a in self.command)[:100]
        original = "(no reply)" if self.original is None else show(self.original)
        live = "(no reply)" if self.live is None else show(self.live)
        return f"event {self.event} ({cmd}): original {original[:200]}, live {live[:200]}"


@dataclass
class Translation:
    """From the original trace's IDs and times to the replay's."""

    lo_ms: int
    hi_ms: int
    shift_ms: int = 0
    ids: dict[bytes, bytes] = field(default_factory=dict)

    def arg(self, a: bytes) -> bytes:
        if a in self.ids:
            return self.ids[a]
        if a[:1] == b"(" and a[1:] in self.ids:
            return b"(" + self.ids[a[1:]]
        m = _TIME_ARG.match(a)
        if m and self.lo_ms - TIME_MARGIN_MS <= int(m.group(2)) <= self.hi_ms + TIME_MARGIN_MS:
            return m.group(1) + b"%d" % (int(m.group(2)) + self.shift_ms) + m.group(3)
        return a

    def reply(self, r: Reply) -> Reply:
        """An original reply as the replay would show it: bound IDs and times translated."""
        if isinstance(r, Bulk):
            return Bulk(self.arg(r.value))
        if isinstance(r, Array):
            return Array(tuple(self.reply(i) for i in r.items))
        if isinstance(r, Set):
            return Set(tuple(self.reply(i) for i in r.items))
        if isinstance(r, Map):
            return Map(tuple((self.reply(k), self.reply(v)) for k, v in r.pairs))
        return r

    def bind(self, argv: list[bytes], original: Reply, live: Reply) -> None:
        """Remember the ID the target generated where the original server generated one."""
        if (argv and argv[0].upper() == b"XADD" and isinstance(original, Bulk) and isinstance(live, Bulk)
                and any(a == b"*" or a.endswith(b"-*") for a in argv[2:]) and original.value != live.value):
            self.ids[original.value] = live.value


def _numbers_only(a: Reply, b: Reply) -> bool:
    if isinstance(a, Int) and isinstance(b, Int):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (Array, Set)) and isinstance(b, (Array, Set)):
        return len(a.items) == len(b.items) and all(_numbers_only(x, y) for x, y in zip(a.items, b.items, strict=True))
    if isinstance(a, Map) and isinstance(b, Map):
        return len(a.pairs) == len(b.pairs) and all(
            ka == kb and _numbers_only(va, vb) for (ka, va), (kb, vb) in zip(a.pairs, b.pairs, strict=True))
    return a == b


def _time_span(trace: Trace) -> tuple[int, int] | None:
    """The original's first and last clock reading, ms (wall: t fields; virtual: now)."""
    times: list[int] = []
    for e in trace.events:
        if isinstance(e, Call):
            times += [t // 1000 for t in (e.t0, e.t1) if t is not None] if trace.header.clock == "wall" else \
                [e.now] if e.now is not None else []
        elif isinstance(e, (Send, Recv)):
            if trace.header.clock == "wall" and e.t is not None:
                times.append(e.t // 1000)
            elif trace.header.clock == "virtual" and e.now is not None:
                times.append(e.now)
    return (min(times), max(times)) if times else None


def _event_ms(trace: Trace, e: Recv) -> int | None:
    """When the original received a reply, ms on its own clock."""
    if trace.header.clock == "wall":
        return None if e.t is None else e.t // 1000
    return e.now


def _invocation_ms(trace: Trace, e: Event) -> int | None:
    """When the original sent a command, ms on its own clock."""
    if isinstance(e, Call):
        if trace.header.clock == "wall":
            return None if e.t0 is None else e.t0 // 1000
        return e.now
    if isinstance(e, Send):
        if trace.header.clock == "wall":
            return None if e.t is None else e.t // 1000
        return e.now
    return None


def may_block(argv: list[bytes]) -> bool:
    return Step(1, tuple(argv)).may_block


class Replay:
    """Replays one trace on a live target (see the module docstring)."""

    def __init__(self, target: LiveTarget, original: Trace) -> None:
        self.target = target
        self.original = original
        self.differences: list[Difference] = []
        # Replies that did not match when read: an ID in one may be bound only by a later reply (a blocked
        # reader's reply can arrive before the XADD reply that generated its ID), so they are judged at the end.
        self.unmatched: list[tuple[int, list[bytes], Reply, Reply | None]] = []
        self.skipped: list[str] = []
        span = _time_span(original) or (0, 0)
        self.translation = Translation(span[0], span[1])
        self.first_ms = next((ms for e in original.events if (ms := _invocation_ms(original, e)) is not None), None)
        self.start_ms = 0
        self.rec: LiveRecorder | None = None
        self.conn: dict[int, int] = {}  # original client -> live trace client
        self.next_client = 1
        self.sent: dict[int, list[tuple[int, list[bytes]]]] = {}  # original client -> (event, argv) awaiting replies
        self.queued: dict[int, list[list[bytes]]] = {}  # original client -> commands queued after MULTI
        self.exec_queues: dict[int, list[list[bytes]]] = {}  # EXEC event -> the commands it ran
        self.dropped: set[int] = set()  # original clients whose connection the replay gave up

    def run(self) -> Trace:
        original = self.original
        applied, prefix = self.target.reset(dict(original.header.config))
        header = Header(server_name=self.target.server.name, server_version=self.target.server.version,
                        clock="wall", config=applied, title=original.header.title, source="recorded",
                        tags=original.header.tags,
                        extra={"target": self.target.url, "replayed_from": original.path})
        self.rec = rec = LiveRecorder(self.target, header)
        self.start_ms = time.time_ns() // 1_000_000
        self.translation.shift_ms = self.start_ms - self.translation.lo_ms
        self.target.keep_control = not any(isinstance(e, (Call, Send)) and e.cmd is not None
                                           and sees_connections(e.cmd) for e in original.events)
        try:
            for index, e in enumerate(original.events):
                self._event(rec, index, e, prefix)
            self._judge_unmatched()
        finally:
            self.target.keep_control = False
            self.target.previous_clients = list(rec.client_ids.values())
            rec.close_all()
        return rec.trace()

    # -- one original event ---------------------------------------------------------------------
    def _event(self, rec: LiveRecorder, index: int, e: Event, prefix: bytes | None) -> None:
        if isinstance(e, Note):
            rec.note(e.text)
        elif isinstance(e, Connect):
            if e.c not in self.conn and e.c not in self.dropped:
                rec.connect(self._live(e.c))
        elif isinstance(e, (Call, Send)):
            self._invoke(rec, index, e, prefix)
        elif isinstance(e, Recv):
            if e.c in self.conn and self.sent.get(e.c):
                self._receive(rec, e.c, e.reply, self._until(_event_ms(self.original, e)))
        elif isinstance(e, PushEvent):
            if e.c in self.conn:
                self._push(rec, index, e)
        elif isinstance(e, Close) and e.c in self.conn:
            if e.by == "client":
                self._hang_up(rec, e.c)
            else:
                self._await_close(rec, e.c)

    def _invoke(self, rec: LiveRecorder, index: int, e: Call | Send, prefix: bytes | None) -> None:
        argv = [self.translation.arg(a) for a in e.cmd] if e.cmd is not None else None
        if argv is not None:
            admitted = self.target.admit(argv, prefix)
            if admitted is None:
                self.skipped.append(f"event {index + 1}: {argv[0].decode('latin-1').upper()} (see skipped checks)")
                return
            argv = [a for a in admitted if isinstance(a, bytes)]
        self._wait_until(_invocation_ms(self.original, e))
        c = self._live(e.c)
        if argv is not None:
            self._track_multi(e.c, index, argv)
        try:
            if isinstance(e, Call) and argv is not None and not self.sent.get(e.c):
                self._compare(index, argv, e.reply, rec.call(c, *argv))
                return
            if argv is None:
                assert isinstance(e, Send) and e.raw is not None
                rec.conn(c).send_raw(e.raw)
                rec.events.append(Send(c=c, cmd=None, raw=e.raw, t=time.time_ns() // 1000))
            else:
                rec.send(c, *argv)
            self.sent.setdefault(e.c, []).append((index, argv or []))
            more = self._more_confirmations(index, e)  # a multi-channel (UN)SUBSCRIBE: one reply each
            self.sent[e.c].extend([(index, argv or [])] * more)
            rec.pending[c] += more
            if isinstance(e, Call):  # a call while earlier replies are pending: read up to its reply now
                while self.sent.get(e.c):
                    self._receive(rec, e.c, e.reply, 0.0)
            elif argv is not None and may_block(argv) and not self._answered_next(index, e.c):
                rec.blocked(c)
        except ConnectionClosed:
            self._closed_by_server(rec, e.c)

    def _live(self, c: int) -> int:
        if c not in self.conn:
            self.conn[c] = self.next_client
            self.next_client += 1
        return self.conn[c]

    def _until(self, ms: int | None) -> float:
        """Seconds until the replay's moment that matches ``ms`` on the original's clock (0 if past)."""
        if ms is None or self.first_ms is None:
            return 0.0
        return max(0.0, (self.start_ms + (ms - self.first_ms) - time.time_ns() / 1_000_000) / 1000)

    def _wait_until(self, ms: int | None) -> None:
        """Keep the original's pace: its n-th ms after its first command is the replay's too."""
        delay = self._until(ms)
        if delay > 0:
            time.sleep(delay)

    def _track_multi(self, c: int, index: int, argv: list[bytes]) -> None:
        name = argv[0].upper()
        if name == b"MULTI":
            self.queued[c] = []
        elif name == b"EXEC":
            self.exec_queues[index] = self.queued.pop(c, [])
        elif name == b"DISCARD":
            self.queued.pop(c, None)
        elif c in self.queued:
            self.queued[c].append(argv)

    def _answered_next(self, index: int, c: int) -> bool:
        """The original's next event is this send's reply (so it was not blocked)."""
        nxt = self.original.events[index + 1] if index + 1 < len(self.original.events) else None
        return isinstance(nxt, Recv) and nxt.c == c

    def _more_confirmations(self, index: int, e: Call | Send) -> int:
        """How many more ``recv`` s than one the original has for this send (traces/check/pushes.py)."""
        if not isinstance(e, Send) or e.cmd is None:
            return 0
        wanted = _pushes.confirmation_count(e.cmd)
        if wanted is None:
            return 0
        if wanted:
            return wanted - 1
        events = self.original.events
        recvs = [i for i, ev in enumerate(events) if i > index and isinstance(ev, Recv) and ev.c == e.c]
        n = 0
        while n + 1 < len(recvs) and _pushes.more_confirmations(self.original, recvs[n], e.c, e.cmd):
            n += 1
        return n

    def _push(self, rec: LiveRecorder, index: int, e: PushEvent) -> None:
        """Read the message the original received here (a Pub/Sub message) and compare it."""
        c = self.conn[e.c]
        try:
            reply = rec.conn(c).recv(self._until(e.t // 1000 if e.t is not None else None) + REPLY_WAIT)
        except (TimeoutError, ConnectionClosed):
            self._compare(index, [b"(message)"], e.reply, None)
            return
        rec.events.append(PushEvent(c=c, reply=reply, t=time.time_ns() // 1000))
        self._compare(index, [b"(message)"], e.reply, reply)

    # -- replies ----------------------------------------------------------------------------------
    def _compare(self, index: int, argv: list[bytes], original: Reply, live: Reply | None) -> None:
        if live is not None:
            self.translation.bind(argv, original, live)
            queued = self.exec_queues.pop(index, None)
            if queued and isinstance(original, Array) and isinstance(live, Array) \
                    and len(original.items) == len(live.items) == len(queued):
                for q, o, v in zip(queued, original.items, live.items, strict=True):
                    self.translation.bind(q, o, v)  # IDs generated inside MULTI come back in EXEC's reply
        if not self._matches(argv, original, live):
            self.unmatched.append((index, argv, original, live))

    def _matches(self, argv: list[bytes], original: Reply, live: Reply | None) -> bool:
        expected = self.translation.reply(original)
        return live == expected or (live is not None and bool(environment_matches(argv, live, expected)))

    def _judge_unmatched(self) -> None:
        """Every reply that still differs once all generated IDs are bound is a difference."""
        for index, argv, original, live in self.unmatched:
            if not self._matches(argv, original, live):
                self.differences.append(Difference(index + 1, argv, original, live))
        self.unmatched = []

    def _receive(self, rec: LiveRecorder, c: int, original_reply: Reply, later: float) -> None:
        """Read client ``c``'s next reply; the original got it ``later`` s from now (plus REPLY_WAIT)."""
        index, argv = self.sent[c].pop(0)
        wait = later + REPLY_WAIT
        try:
            reply = rec.recv(self.conn[c], timeout=wait)
        except TimeoutError:
            self._compare(index, argv, original_reply, None)
            rec.note(f"client {self.conn[c]}: no reply within {wait:.1f} s; the connection is closed")
            self._hang_up(rec, c)
            self.dropped.add(c)
            return
        except ConnectionClosed:
            self._compare(index, argv, original_reply, None)
            self._closed_by_server(rec, c)
            return
        self._compare(index, argv, original_reply, reply)

    # -- connections ------------------------------------------------------------------------------
    def _hang_up(self, rec: LiveRecorder, c: int) -> None:
        live_c = self.conn.pop(c)
        self.sent.pop(c, None)
        if live_c in rec.conns:
            rec.close(live_c)

    def _closed_by_server(self, rec: LiveRecorder, c: int) -> None:
        live_c = self.conn.pop(c, None)
        self.sent.pop(c, None)
        if live_c is not None and live_c in rec.conns:
            rec.conns.pop(live_c).close()
            rec.pending.pop(live_c, None)
            rec.events.append(Close(c=live_c, by="server", t=time.time_ns() // 1000))

    def _await_close(self, rec: LiveRecorder, c: int) -> None:
        """The original server closed the connection: so should the target."""
        connection = rec.conns.get(self.conn[c])
        if connection is None:
            self.conn.pop(c)
            return
        try:
            extra = connection.recv(timeout=CLOSE_WAIT)
            rec.note(f"client {self.conn[c]}: the target sent {show(extra)} where the original server closed the "
                     "connection; the connection is closed")
        except TimeoutError:
            rec.note(f"client {self.conn[c]}: the target kept the connection open where the original server "
                     "closed it; the connection is closed")
        except ConnectionClosed:
            self._closed_by_server(rec, c)
            return
        self._hang_up(rec, c)


# ---------------------------------------------------------------------------------------------
# The command


def output_path(out: Path, root: Path, f: Path) -> Path:
    """Where the live trace of ``f`` (found under ``root``) goes."""
    relative = f.relative_to(root) if root.is_dir() else Path(f.name)
    return out / relative


def run_live_replay(paths: list[Path], url: str, dialect: str | None, out: Path | None, allow_flush: bool,
                    quiet: bool) -> int:
    """Replay every trace under ``paths`` on the target at ``url``; print one entry each and a summary.

    Returns the exit status: 0 only if every live trace conforms (or is
    unsupported: nothing shown to diverge) and every file could be read and replayed.
    """
    for p in paths:
        if not p.exists():
            click.echo(f"error: {p}: no such file or folder", err=True)
            return 2
    try:
        target = parse_target(url, dialect=dialect, allow_flush=allow_flush)
    except TargetError as e:
        click.echo(f"error: {e}", err=True)
        return 2
    if not isinstance(target, LiveTarget):
        target.close()
        click.echo(f"error: {url}: replay on the model is `xspec replay --against model`; give a redis:// or "
                   "rediss:// URL", err=True)
        return 2
    files = [(root, f) for root in paths for f in find_traces([root])]
    if not files:
        click.echo("error: no trace files (*.jsonl, *.jsonl.gz) found", err=True)
        target.close()
        return 2
    counts = dict.fromkeys(STATUSES, 0)
    ok = True
    differing = 0
    try:
        for n, (root, f) in enumerate(files, 1):
            try:
                original = load(f)
            except TraceError as e:
                click.echo(f"error: {e}", err=True)
                ok = False
                continue
            replay = Replay(target, original)
            try:
                trace = replay.run()
            except TargetError as e:
                click.echo(f"error: {e}", err=True)
                return 2
            if out is not None:
                trace.path = str(output_path(out, root, f))
                dump(trace, trace.path)
            verdict = _check(trace, target.dialect)
            counts[verdict.status] += 1
            ok = ok and verdict.status in ("conform", "unsupported")
            differing += bool(replay.differences)
            if quiet and verdict.status == "conform":
                continue
            first, *details = verdict.describe().split("\n")
            where = f" -> {trace.path}" if out is not None else ""
            changed = _differences_summary(replay.differences)
            click.echo("\n".join([f"[{n}/{len(files)}] {f}{where}: {first}{changed}", *details]))
            for d in replay.differences[:10]:
                click.echo(f"    differs at {d.describe()}")
            for s in replay.skipped[:5]:
                click.echo(f"    skipped {s}")
    finally:
        target.close()
    for reason in target.skipped:
        click.echo(f"skipped checks: {reason}")
    click.echo(f"{len(files)} traces replayed on {url} ({target.server.name} {target.server.version}, dialect "
               f"{target.dialect}): {counts['conform']} conform, {counts['diverge']} diverge, "
               f"{counts['unsupported']} unsupported, {counts['inconclusive']} inconclusive; "
               f"{differing} differ from their original")
    return 0 if ok else 1


def _differences_summary(differences: list[Difference]) -> str:
    if not differences:
        return ""
    numbers = sum(d.only_numbers for d in differences)
    detail = f", {numbers} only in integers such as idle times" if numbers else ""
    return f" ({len(differences)} replies differ from the original{detail})"


def _check(trace: Trace, dialect: str) -> Verdict:
    try:
        return check_trace(trace, dialect)
    except UnknownDialect as e:
        return Verdict("unsupported", len(trace.events), message=str(e))
    except Exception as e:  # a defect in the model or the checker: report it, go on
        where = traceback.extract_tb(e.__traceback__)[-1]
        return Verdict("inconclusive", len(trace.events),
                       message=f"internal error: {type(e).__name__}: {e} ({Path(where.filename).name}:{where.lineno})")
