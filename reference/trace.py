"""``--trace FILE`` and ``--checked``: recording the server's traffic and judging it with the model.

:class:`TraceWriter` writes every connection's traffic as a trace
(spec/trace-format.md) while the server runs: ``connect``, a ``call`` for each
command answered at once (``t0`` when the server took it up, ``t1`` after it
ran, on the host's clock in microseconds), ``send``/``recv`` for a command
that blocked and its later answer, ``send`` with ``raw`` bytes and the error
for a protocol error, ``close`` (by the client, or by the server: QUIT,
CLIENT KILL, XSPEC.FAULT, protocol errors). With ``--clock virtual`` each
``call``/``send``/``recv`` carries the server's ``now`` and the header says
``"clock": "virtual"``. The header names the dialect's server (``redis``,
``valkey``) and version (tagged ``xspec-serve``) so that ``xspec check``
judges it against that dialect without options.

:class:`CheckedRun` runs every command on a checker too (``--checked``: the
model, which ``xspec serve`` builds and hands in as a
:data:`~xspec.reference.api.CheckerFactory`; this package never imports it),
with the server's ``--requirepass``, feeding the checker's clock the readings
the server's own handlers made for that command, and compares replies,
blocking, the clients each command served and timeouts. Replies that describe
the host (HELLO's id, CLIENT LIST, INFO, ...) are compared by shape
(``xspec.spec.environment``); commands the model does not run (COMMAND,
DEBUG, WAIT, XSPEC.*, some CLIENT and CONFIG forms) are skipped. A divergence
is logged (logger ``xspec.serve``) together with the path of a trace of the
whole run so far, which shows it.

Injected faults (XSPEC.FAULT): a command an error fault refused did not run,
so the checker does not run it either; a transaction it doomed is discarded on
the checker when its EXEC is refused; ``RESTART EMPTY`` empties the checker's
databases too. In the trace, the refused command is the ``call`` the client
saw, with its error. Trace format version 1 has no event for a fault, so
``XSPEC.FAULT ERROR`` and ``RESTART`` (the forms that change what a client sees
of the data) are written as the ``call`` events they were: XSPEC.FAULT is
outside the model's scope (``spec.commands.OUT_OF_SCOPE``), so ``xspec replay``
judges such a trace ``unsupported`` (rule 6) rather than diverging on the
faults' errors. The other forms, and XSPEC.CLOCK, are ``note`` events: their
effects show as ``close`` events, timing and ``now``.

Messages the server sends without a request of their own (Pub/Sub messages,
keyspace notifications, CLIENT TRACKING invalidations, in RESP2 or RESP3) are
``push`` events of the client that received them, written after the event of
the command that sent them. A (P|S)(UN)SUBSCRIBE is a ``send`` and one
``recv`` per confirmation. The format writes a one-server trace with pushes
as ``trace/2`` with one node, so the file starts as ``trace/1`` and its header
is rewritten as ``trace/2`` when the first push is written (the events stay
as they are: ``node`` may be left out with one node).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import IO, Any

from xspec.reference.api import Checker, CheckerFactory, Encoded, PreRendered
from xspec.reference.core import Client, Core, RunResult
from xspec.reference.protocol import Pushed, Raw, decoded, encode_into
from xspec.spec.environment import environment_matches
from xspec.spec.pubsub import CONFIRMING
from xspec.spec.resp import QUEUED, Array, Error, Reply, Simple, for_protocol, show
from xspec.spec.trace_format import Call, Close, Connect, Event, Header, Note, Recv, Send, event_to_json
from xspec.spec.trace_format import Push as PushEvent

log = logging.getLogger("xspec.serve")


def now_us() -> int:
    return time.time_ns() // 1000


def wire(result: Reply | Encoded | PreRendered | Pushed | Raw, proto: int) -> Reply:
    """A result as the client received it (of a result with push messages around it, the reply)."""
    reply: Reply | Encoded | PreRendered | Raw = result.reply if isinstance(result, Pushed) else result
    if isinstance(reply, PreRendered):
        return reply.reply
    if isinstance(reply, Raw):  # bytes already in RESP (a redirected invalidation's null)
        return decoded(Encoded([reply.data]))
    return for_protocol(decoded(reply), proto)


def as_received(message: Any, proto: int) -> Reply:
    """A message the server wrote on its own (it may hold bytes already in RESP: a tracking null), as
    its client read it."""
    out: list[bytes] = []
    encode_into(message, proto, out)
    return decoded(Encoded(out))


def confirming(argv: list[bytes]) -> bool:
    """A (P|S)(UN)SUBSCRIBE: answered by one confirmation per channel (one ``recv`` each)."""
    return argv[0].decode("latin-1").lower() in CONFIRMING


def json_line(obj: object, separators: tuple[str, str] = (",", ":")) -> str:
    """One trace line. Text that is not UTF-8 (an error echoing binary bytes holds surrogate
    escapes) is written with JSON escapes, which read back to the same string."""
    line = json.dumps(obj, ensure_ascii=False, separators=separators)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj, separators=separators)
    return line + "\n"


_LINK_COMMANDS = (b"psync", b"sync", b"replconf")


class TraceWriter:
    """Turns the core's events into trace events; writes them to ``path`` as they happen (or keeps them)."""

    def __init__(self, core: Core, path: str | None) -> None:
        self.core = core
        self.virtual = core.clock.virtual
        self.header = Header(server_name=core.dialect.server, server_version=core.dialect.version,
                             clock="virtual" if self.virtual else "wall",
                             config={k: core.config[k] for k in ("stream-node-max-entries", "stream-node-max-bytes")}
                             # save points decide what FLUSHALL does to the changes counter (FLUSH-6)
                             | ({"save": core.config["save"]} if core.config.get("save", "").split() else {}),
                             title="xspec serve", source="recorded", tags=["xspec-serve"])
        self.events: list[Event] = []
        self.served_now: list[Event] = []  # answers to blocked clients, written after the command that served them
        self.file: IO[str] | None = None
        if path is not None:
            with contextlib.suppress(FileExistsError):  # a file in the way: open() says what is wrong
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - open for the server's lifetime
            self.file.write(self._header_line())
        self.path = path
        self.keep = path is None
        self.version2 = False  # written as trace/2 with one node once a push was written

    def _header_line(self) -> str:
        header = self.header.to_json_v2() if getattr(self, "version2", False) else self.header.to_json()
        return json_line(header, (", ", ": "))

    def _become_version2(self) -> None:
        """The first push: the header says trace/2 from now on, in the file too (rewritten beside
        it and renamed over it, so a failure leaves the trace/1 file whole)."""
        self.version2 = True
        if self.file is None or self.path is None:
            return
        self.file.close()
        spare = f"{self.path}.xspec-tmp"
        try:
            with open(self.path, encoding="utf-8") as old, open(spare, "w", encoding="utf-8") as new:
                old.readline()
                new.write(self._header_line())
                for line in old:
                    new.write(line)
            os.replace(spare, self.path)
        except OSError as e:
            log.error("cannot rewrite the trace %s as trace/2: %s", self.path, e)
            with contextlib.suppress(OSError):
                os.unlink(spare)
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the server's lifetime

    def _now(self) -> int | None:
        return self.core.now_ms() if self.virtual else None

    def add(self, e: Event) -> None:
        if isinstance(e, PushEvent) and not self.version2:
            self._become_version2()
        if self.keep:
            self.events.append(e)
        if self.file is not None:
            self.file.write(json_line(event_to_json(e)))

    def dump(self, path: Path) -> None:
        """Write the events kept so far as a trace file."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._header_line())
            for e in self.events:
                f.write(json_line(event_to_json(e)))

    # -- Observer -----------------------------------------------------------------------------
    def connected(self, c: Client) -> None:
        self.add(Connect(c=c.id, t=now_us()))

    def closed(self, c: Client, by: str) -> None:
        self.add(Close(c=c.id, by=by, t=now_us()))

    def executed(self, c: Client, argv: list[bytes], result: RunResult, t0: int) -> None:
        if c.kind in ("replica", "master") or argv[0].lower() in _LINK_COMMANDS:
            served, self.served_now = self.served_now, []  # clients it served (an ACK ends a WAIT)
            for e in served:
                self.add(e)
            return  # a replication link's traffic (reference/replication.py), not a client's
        if argv[0][:6].lower() == b"xspec." and not (result is not None and _fault_seen_by_clients(argv, result)):
            # The server's own admin commands are not Redis traffic: a note says what they did
            # (virtual time shows in ``now``; faults show as the errors and closes they cause).
            shown = b" ".join(argv).decode("utf-8", "backslashreplace")
            reply = show(wire(result, c.proto)) if result is not None else "(blocked)"
            self.add(Note(text=f"client {c.id}: {shown} -> {reply}"))
        elif result is None:
            self.add(Send(c=c.id, cmd=list(argv), t=t0, now=self._now()))
        elif isinstance(result, Pushed) or (confirming(argv) and not isinstance(result, Error)):
            self._with_pushes(c, argv, result, t0)
        else:
            self.add(Call(c=c.id, cmd=list(argv), reply=wire(result, c.proto), t0=t0, t1=now_us(), now=self._now()))
        served, self.served_now = self.served_now, []
        for e in served:
            self.add(e)

    def _with_pushes(self, c: Client, argv: list[bytes], result: Any, t0: int) -> None:
        """A command whose answer is several items: a confirmation per channel (each a ``recv``),
        or a reply with push messages just before or after it (``push`` events around a ``recv``)."""
        now = self._now()
        if isinstance(result, Pushed):
            before, reply, after = result.before, result.reply, result.after
        else:
            before, reply, after = [], result, []
        if not before and not confirming(argv):
            self.add(Call(c=c.id, cmd=list(argv), reply=wire(reply, c.proto), t0=t0, t1=now_us(), now=now))
        else:
            self.add(Send(c=c.id, cmd=list(argv), t=t0, now=now))
            t = now_us()
            for item in before:
                if confirming(argv):
                    self.add(Recv(c=c.id, reply=as_received(item, c.proto), t=t, now=now))
                else:
                    self.add(PushEvent(c=c.id, reply=as_received(item, c.proto), t=t, now=now))
            self.add(Recv(c=c.id, reply=wire(reply, c.proto), t=t, now=now))
        for item in after:
            self.add(PushEvent(c=c.id, reply=as_received(item, c.proto), t=now_us(), now=now))

    def pushed(self, c: Client, message: Any) -> None:
        """The server wrote a message to ``c`` that answers no command of its (a Pub/Sub message,
        a keyspace notification, a tracking invalidation): after the event of the command that
        sent it, when a command is running."""
        e = PushEvent(c=c.id, reply=as_received(message, c.proto), t=now_us(), now=self._now())
        if self.core.executing:
            self.served_now.append(e)
        else:
            self.add(e)

    def refused(self, c: Client, argv: list[bytes], reply: Reply, t0: int) -> None:
        self.executed(c, argv, reply, t0)  # what the client saw: the command and the fault's error

    def served(self, c: Client, reply: Reply | Encoded, timed_out: bool) -> None:
        e = Recv(c=c.id, reply=wire(reply, c.proto), t=now_us(), now=self._now())
        if self.core.executing:
            self.served_now.append(e)
        else:
            self.add(e)

    def protocol_error(self, c: Client, raw: bytes, error: str) -> None:
        t = now_us()
        self.add(Send(c=c.id, cmd=None, raw=raw, t=t, now=self._now()))
        self.add(Recv(c=c.id, reply=Error(error), t=t, now=self._now()))

    def clock_moved(self) -> None:
        pass

    def actively_expired(self, dbid: int, key: bytes, now: int) -> None:
        """The active expiry cycle deleted a key: no client event (its ``expired`` messages are pushes)."""

    def aof_rewrite_done(self) -> None:
        """A BGREWRITEAOF finished: no client event (a checker finds the rewrite's step itself, AOF-7)."""

    def persistence_step(self, kind: str) -> None:
        """The cron took a step about children: no client event (a checker finds it itself, FORK-2)."""

    def finish(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def _fault_seen_by_clients(argv: list[bytes], result: Reply | Encoded | PreRendered) -> bool:
    """An XSPEC.FAULT that changes what clients see of the data: ERROR (errors instead of replies)
    and RESTART (the data may be gone), when it was accepted."""
    return (len(argv) > 1 and argv[0].lower() == b"xspec.fault" and argv[1].lower() in (b"error", b"restart")
            and not isinstance(result, Error))


class FedClock:
    """The checker's clock in checked mode: the readings the server made for the command, in order."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.readings: list[int] = []
        self.taken = 0  # readings the model took for the current command
        self.last = core.clock.now_ms()

    def now_ms(self) -> int:
        self.taken += 1
        if self.readings:
            self.last = self.readings.pop(0)
        return self.last


# Commands whose replies the model does not produce: the server's own XSPEC.* commands (no Redis
# traffic); CLIENT REPLY, which decides which replies the client gets at all.
_UNCHECKED = ("xspec.",
              "client|reply", *("psync", "sync", "replconf"))  # the last: a replication link's, reference/replication.py


class CheckedRun:
    """Runs a checker (the model) beside the server and reports where they disagree."""

    def __init__(self, core: Core, recorder: TraceWriter, report_dir: Path, factory: CheckerFactory) -> None:
        self.core = core
        self.recorder = recorder
        self.report_dir = report_dir
        self.clock = FedClock(core)
        config = {k: core.config[k] for k in (*core.dialect.config_defaults, "enable-debug-command",
                                              "appendonly", "aof-use-rdb-preamble",  # DEBUG-LOADAOF-1
                                              "save")  # FLUSH-6, RDB-7
                  if k in core.config}
        if core.requirepass is not None:  # --requirepass: the model's clients must authenticate too (AUTH-4)
            config["requirepass"] = core.requirepass
        self.model: Checker = factory(core.dialect, self.clock, config)
        self.just_served: list[tuple[int, Reply]] = []
        self.just_pushed: list[tuple[int, Reply]] = []  # messages the running command sent to others
        # The model's messages the server has not written yet, per client, with how many of the client's
        # commands have run since (7.0 writes a broadcast's invalidations before it sleeps, after the command).
        self.owed: dict[int, list[tuple[Reply, int]]] = {}
        self.expiry_pushed: list[tuple[int, Reply]] = []  # messages of the active expiry cycle's deletion
        self.doomed: set[int] = set()  # clients whose transaction an injected fault doomed
        # A rewrite the running command finished at once (no child): the model finishes it after the command.
        self.rewrite_owed = False
        # Per client in MULTI, for each command queued so far: whether the checker queued it too
        # (it does not run XSPEC.*, COMMAND, DEBUG ..., whose replies EXEC's array then lacks).
        self.queue_checked: dict[int, list[bool]] = {}
        self.divergences = 0
        self.enabled = True
        # Record the server's clock readings for the model.
        core_now = core.now_ms

        def reading() -> int:
            t = core_now()
            if core.executing:  # not the timers' own readings: the model reads only in commands
                self.clock.readings.append(t)
            return t

        core.now_ms = reading  # type: ignore[method-assign]

    def _diverge(self, what: str) -> None:
        self.divergences += 1
        path = self.report_dir / f"xspec-divergence-{self.divergences}.jsonl"
        self.recorder.dump(path)
        if len(what) > 600:
            what = what[:600] + " ..."
        log.error("divergence from the model: %s (trace: %s)", what, path)

    # -- Observer -------------------------------------------------------------------------
    def connected(self, c: Client) -> None:
        self.model.connect(client_id=c.id)
        self.clock.readings.clear()

    def closed(self, c: Client, by: str) -> None:
        self.doomed.discard(c.id)
        self.queue_checked.pop(c.id, None)
        self.model.close(c.id)

    def _run_unchecked(self, c: Client, argv: list[bytes]) -> None:
        """Run a command on the checker to keep its state the server's, whatever it replies."""
        try:
            self.model.execute(c.id, argv)
        except Exception as e:
            self._diverge(f"client {c.id} {argv!r}: the model raised {e!r}")
        finally:
            self.clock.readings.clear()

    def _unseen(self) -> None:
        """The server counted a command the checker did not run: the checker's INFO counters, if it
        keeps any (the model's ``stats``, STATS-0), are no longer the server's."""
        stats = getattr(self.model, "stats", None)
        forget = getattr(stats, "forget", None)
        if forget is not None:
            forget()

    def refused(self, c: Client, argv: list[bytes], reply: Reply, t0: int) -> None:
        """An injected fault rejected the command: it did not run, so the checker does not run it.
        Inside MULTI it doomed the transaction; a refused EXEC discarded it (and its watches)."""
        self._unseen()
        self.just_served, self.just_pushed = [], []
        self.clock.readings.clear()
        spec = self.core.lookup(argv)
        if spec is not None and spec.fullname == "exec":
            self.doomed.discard(c.id)
            self._run_unchecked(c, [b"DISCARD"])
            self._run_unchecked(c, [b"UNWATCH"])
        elif c.in_multi:
            self.doomed.add(c.id)

    def pushed(self, c: Client, message: Any) -> None:
        mine = (c.id, as_received(message, c.proto))
        if self.core.active_expiry is not None and self.core.active_expiry.deleting:  # also inside XSPEC.CLOCK
            self.expiry_pushed.append(mine)
        elif self.core.executing:
            self.just_pushed.append(mine)
        else:  # written after the command that sent it (a broadcast before the loop sleeps)
            self._match_pushes("after a command", [mine])

    def _match_pushes(self, what: str, server: list[tuple[int, Reply]],
                      model: list[tuple[int, Reply]] | None = None) -> None:
        """Owe the model's messages, then pay them with the server's, client by client in order: a message
        the model did not send (or sent otherwise) is a divergence at once, one it sent that the server has
        not written by the end of the client's next command is one then."""
        for cid, r in model or ():
            self.owed.setdefault(cid, []).append((r, 0))
        for cid, r in server:
            due = self.owed.get(cid)
            if due and due[0][0] == r:
                due.pop(0)
            else:
                expected = show(due[0][0]) if due else "nothing"
                self.owed.pop(cid, None)
                self._diverge(f"{what}: the server pushed client {cid} {show(r)}, the model {expected}")

    def actively_expired(self, dbid: int, key: bytes, now: int) -> None:
        """The server's active expiry cycle deleted ``key`` at ``now``: the model takes the same step
        (``active_expire``, EXPIRE-ACTIVE-1) and must send the same ``expired`` messages."""
        pushed, self.expiry_pushed = self.expiry_pushed, []
        expire = getattr(self.model, "active_expire", None)
        if expire is None:
            return
        self.clock.readings[:] = [now]
        try:
            expire(dbid, key)
        except Exception as e:
            self._diverge(f"active expiry of {key!r} in db {dbid}: the model raised {e!r}")
            return
        finally:
            self.clock.readings.clear()
        model_pushed = list(getattr(self.model, "pushes", ()))
        if model_pushed:
            self.model.pushes = ()  # type: ignore[attr-defined]  # taken here, not by the next command
        self._match_pushes(f"active expiry of {key!r} in db {dbid}", pushed, model_pushed)

    def aof_rewrite_done(self) -> None:
        """The server's AOF rewrite finished (``backgroundRewriteDoneHandler``): the model takes its
        ``rewrite`` step (AOF-7). A child reaped inside a command finished before it, so the step runs
        now, before the model runs that command; a rewrite the command itself did at once (no fork,
        CONFIG SET appendonly yes) the model has not started yet, so it is finished after the command."""
        done = getattr(self.model, "aof_rewrite_done", None)
        if done is None:
            return
        try:
            stepped = done()
        except Exception as e:
            self._diverge(f"the AOF rewrite's end: the model raised {e!r}")
            return
        if not stepped and self.core.executing:
            self.rewrite_owed = True

    def persistence_step(self, kind: str) -> None:
        """The server's cron (or a command that reaped a child first) took a step about children: a
        BGSAVE's child reaped, a scheduled rewrite or BGSAVE started (FORK-2), a save point's BGSAVE
        (RDB-7), an automatic rewrite (AOF-AUTO-1). The model takes the same step; one it cannot take
        is a divergence."""
        step = getattr(self.model, "persistence_step", None)
        if step is None:
            return
        try:
            taken = step(kind)
        except Exception as e:
            self._diverge(f"the persistence cron's {kind}: the model raised {e!r}")
            return
        if not taken:
            self._diverge(f"the persistence cron's {kind}: the model has no such step now")

    def executed(self, c: Client, argv: list[bytes], result: RunResult, t0: int) -> None:
        rewrite_owed, self.rewrite_owed = self.rewrite_owed, False
        served, self.just_served = self.just_served, []
        pushed, self.just_pushed = self.just_pushed, []
        if isinstance(result, Pushed):
            if confirming(argv):  # the model answers several confirmations as one array of them
                result = Array(tuple(wire(r, c.proto) for r in (*result.before, result.reply)))
            else:
                pushed += [(c.id, as_received(m, c.proto)) for m in (*result.before, *result.after)]
                result = wire(result, c.proto)
        spec = self.core.lookup(argv)
        name = spec.fullname if spec is not None else ""
        if name == "xspec.fault" and result is not None and _fault_seen_by_clients(argv, result) \
                and argv[2:3] and argv[2].lower() == b"empty":
            self._run_unchecked(c, [b"FLUSHALL"])  # RESTART EMPTY dropped every key
        queue_checked = self.queue_checked.pop(c.id, None) if name in ("exec", "discard", "reset") else None
        queued = isinstance(result, Simple) and result == QUEUED
        if c.id in self.doomed and name in ("exec", "discard", "reset"):
            self.doomed.discard(c.id)
            if name == "exec":  # the server discarded the transaction a fault doomed (EXECABORT)
                self._run_unchecked(c, [b"DISCARD"])
                return
        if spec is not None and (name.startswith(_UNCHECKED) or self.core.dialect.unsupported_reason(argv)):
            if not name.startswith("xspec."):  # the server's own commands are no Redis traffic
                self._unseen()
            self.clock.readings.clear()
            if queued:
                self.queue_checked.setdefault(c.id, []).append(False)
            return
        if queued:
            self.queue_checked.setdefault(c.id, []).append(True)
        offered = len(self.clock.readings)
        self.clock.taken = 0
        try:
            out = self.model.execute(c.id, argv)
        except Exception as e:  # the model refusing a state is a divergence too
            self._diverge(f"client {c.id} {argv!r}: the model raised {e!r}")
            return
        finally:
            self.clock.readings.clear()
        if rewrite_owed:
            self.aof_rewrite_done()
        if self.clock.taken != offered and not self.core.clock.virtual:
            # Times the model stores or replies can then differ by the readings' spread.
            log.warning("clock readings differ for %r: the server took %d, the model %d",
                        argv[:3], offered, self.clock.taken)
        if result is None:
            if not out.blocked:
                self._diverge(f"client {c.id} {argv!r}: the server blocked, the model replied {out.reply}")
        elif out.blocked:
            self._diverge(f"client {c.id} {argv!r}: the model blocked, the server replied {wire(result, c.proto)}")
        elif out.reply is not None:
            mine = wire(result, c.proto)
            if queue_checked is not None and not all(queue_checked) and isinstance(mine, Array) \
                    and len(mine.items) == len(queue_checked):  # EXEC: only the replies the checker has
                mine = Array(tuple(r for r, checked in zip(mine.items, queue_checked, strict=True) if checked))
            if mine != out.reply and not _not_modelled(out.reply) and not environment_matches(argv, mine, out.reply):
                self._diverge(f"client {c.id} {argv!r}: server {show(mine)}, model {show(out.reply)}")
        model_served = [(cid, r) for cid, r in out.served]
        if served != model_served:
            self._diverge(f"after client {c.id} {argv!r}: server served {_show_served(served)}, "
                          f"model served {_show_served(model_served)}")
        late = [r for r, age in self.owed.get(c.id, ()) if age >= 1]
        if late:
            self.owed.pop(c.id, None)
            self._diverge(f"before client {c.id} {argv!r}: the model pushed {show(late[0])}, the server never did")
        self.owed[c.id] = [(r, age + 1) for r, age in self.owed.get(c.id, ())]
        self._match_pushes(f"after client {c.id} {argv!r}", pushed, list(getattr(out, "pushes", ())))

    def served(self, c: Client, reply: Reply | Encoded, timed_out: bool) -> None:
        mine = wire(reply, c.proto)
        if not timed_out:
            self.just_served.append((c.id, mine))
            return
        try:
            theirs = self.model.timeout(c.id)
        except RuntimeError as e:
            self._diverge(f"client {c.id} timed out on the server; the model: {e}")
            return
        if theirs != mine:
            self._diverge(f"client {c.id} timed out with {show(mine)}, the model says {show(theirs)}")

    def protocol_error(self, c: Client, raw: bytes, error: str) -> None:
        self._unseen()  # the server counted an error reply the checker never sees (STATS-1)

    def clock_moved(self) -> None:
        self.clock.readings.clear()

    def finish(self) -> None:
        pass


def _not_modelled(r: Reply) -> bool:
    return isinstance(r, Error) and r.text.startswith("ERR xspec model:")


def _per_client(messages: list[tuple[int, Reply]]) -> dict[int, list[Reply]]:
    """Messages by receiving client, in the order each received them (the order across clients
    is the server's business: each connection has its own)."""
    out: dict[int, list[Reply]] = {}
    for cid, r in messages:
        out.setdefault(cid, []).append(r)
    return out


def _show_served(served: list[tuple[int, Reply]]) -> str:
    return "[" + ", ".join(f"{cid}: {show(r)}" for cid, r in served) + "]" if served else "nobody"


class Observers:
    """Several observers, called in order."""

    def __init__(self, *observers: Any) -> None:
        self.observers = observers

    def __getattr__(self, name: str) -> Any:
        methods = [getattr(o, name) for o in self.observers]

        def call(*args: Any) -> None:
            for m in methods:
                try:
                    m(*args)
                except Exception:  # watching must never break serving
                    log.exception("observer %s failed", name)
        return call


def attach_observers(core: Core, trace_path: str | None, checker: CheckerFactory | None) -> None:
    """Set up ``--trace`` and/or ``--checked`` (``checker`` builds what the server is checked against)."""
    writer = TraceWriter(core, trace_path)
    if checker is None:
        core.observer = Observers(writer)  # type: ignore[assignment]
        return
    writer.keep = True  # the checker writes the trace so far next to each divergence
    report_dir = Path(trace_path).parent if trace_path else Path.cwd()
    core.observer = Observers(writer, CheckedRun(core, writer, report_dir, checker))  # type: ignore[assignment]
