"""Conformance of trace/2 histories: several nodes, replication, faults (trace format rules 7-11).

The search of :mod:`xspec.traces.check.checker` drives a
:class:`~xspec.models.replication.Deployment` instead of one server: each
connection's commands run on its node (rule 7), and at every decision point
the search may also take one of the deployment's internal steps (a replica's
handshake, the snapshot of a full sync, its load, the application of the next
command of a primary's stream, an acknowledgement; rule 8). The steps a fast
loopback link takes at once (handshake, snapshot, load, apply, the answer to
``REPLCONF GETACK``) are tried first; the periodic acknowledgement last, so
that an execution without it is preferred and one with it found when a
reply needs it (rule 9). Where a link has ``repl`` events they fix its
traffic: a replica applies only the commands the proxy already passed, which
must be, in order, the ones the primary fed; a ``sync`` event must match the
resynchronisation the model decides; an ``ack`` sets the primary's
acknowledged offset. Crash, restart, pause, resume and link events change the
deployment where they stand (rule 10); what was sent to a crashed node and not
answered may or may not have run, as the search decides before the crash.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from xspec.models.replication import NO_REPLID, Deployment, Link, setting
from xspec.spec.dialect import Dialect, UnknownDialect, dialect_for_server
from xspec.spec.resp import Array, Bulk, Error, Reply, Verbatim, show
from xspec.spec.trace_format import V2_ONLY_EVENTS as V2_ONLY
from xspec.spec.trace_format import Call, Crash, Pause, Recv, ReplAck, ReplCmd, ReplSync, Restart, Resume, Trace
from xspec.spec.trace_format import Link as LinkEvent
from xspec.traces.check import checker as base
from xspec.traces.check.checker import Op, Verdict, _Failure, _Search, _Unsupported
from xspec.traces.check.symbolic import UNBOUNDED, Infeasible

_CRASH, _RESTART, _PAUSE, _RESUME, _LINK, _REPL_CMD, _REPL_SYNC, _REPL_ACK = range(20, 28)
_HARNESS_KIND = {Crash: _CRASH, Restart: _RESTART, Pause: _PAUSE, Resume: _RESUME, LinkEvent: _LINK,
                 ReplCmd: _REPL_CMD, ReplSync: _REPL_SYNC, ReplAck: _REPL_ACK}
_EAGER = ("connect", "fork", "load", "apply", "getack")


class _Clients:
    """``server.clients`` across the nodes: a client is found on the node it talks to."""

    def __init__(self, view: _DeploymentView) -> None:
        self.view = view

    def __getitem__(self, client: int) -> Any:
        return self.view.server_of(client).clients[client]


class _DeploymentView:
    """The deployment behind the interface the single-server search drives (``execute``, ``timeout``...)."""

    def __init__(self, deployment: Deployment, client_nodes: dict[int, str]) -> None:
        self.d = deployment
        self.client_nodes = client_nodes
        self.released: dict[str, int] = {}  # replica -> repl cmd events passed on its link since its sync
        self.names: dict[str, str] = {}  # the model's replication IDs -> the trace's (rule 9: names)
        self.last_ping: dict[str, int] = {}  # primary -> the trace time (ms) of its last PING
        self.clients = _Clients(self)

    def server_of(self, client: int) -> Any:
        return self.d.nodes[self.client_nodes[client]].server

    def client(self, client: int) -> Any:
        return self.server_of(client).client(client)

    def close(self, client: int) -> None:
        self.server_of(client).close(client)

    def execute(self, client: int, argv: list[bytes]) -> Any:
        name = self.client_nodes[client]
        node = self.d.nodes[name]
        if not node.up or node.paused:
            raise _NodeDown(name)
        return self.d.execute(name, client, argv)

    def timeout(self, client: int) -> Reply:
        return self.server_of(client).timeout(client)  # type: ignore[no-any-return]

    def freeze(self) -> tuple[Any, ...]:
        return (self.d.freeze(), tuple(sorted(self.released.items())), tuple(sorted(self.names.items())))

    def same_name(self, model: str, trace: str) -> bool:
        """Rule 9: a replication ID is a name; the same model ID is always the same trace ID, and
        two model IDs are never one trace ID."""
        if model == NO_REPLID or trace == NO_REPLID:
            return model == trace
        if not _HEX40.fullmatch(trace):
            return False
        known = self.names.get(model)
        if known is not None:
            return known == trace
        if trace in self.names.values():
            return False
        self.names[model] = trace
        return True


class _NodeDown(Exception):
    def __init__(self, node: str) -> None:
        super().__init__(node)
        self.node = node


class _MultiSearch(_Search):
    """The search of the single-server checker over a deployment and its internal steps."""

    def __init__(self, trace: Trace, kinds: list[int], at: list[Op | None], dialects: dict[str, Dialect]) -> None:
        self.client_nodes = trace.client_nodes()
        self.node_dialects = dialects
        specs = trace.header.node_specs()
        self.node_specs = {name: {"dialect": dialects[name], "addrs": list(s.addrs), "config": dict(s.config),
                                  "skew_ms": s.skew_ms or 0} for name, s in specs.items()}
        self.observed_links = {(e.primary, e.replica) for e in trace.events if isinstance(e, ReplCmd | ReplSync | ReplAck)}
        super().__init__(trace, next(iter(dialects.values())), kinds, at)

    # -- state ----------------------------------------------------------------------
    def _fresh(self) -> None:
        super()._fresh()
        deployment = Deployment(self.node_specs, self.clock)  # type: ignore[arg-type]
        for node in deployment.nodes.values():
            node.server.chooser = self.model_chooser
        self.server = _DeploymentView(deployment, self.client_nodes)  # type: ignore[assignment]

    @property
    def deployment(self) -> Deployment:
        return self.server.d  # type: ignore[attr-defined, no-any-return]

    # -- running ----------------------------------------------------------------------
    def _run(self) -> None:
        kinds, at = self.kinds, self.at
        n = self.n
        while self.pos < n:
            p = self.pos
            if p == self.checkpoint_at:
                self.checkpoint_at = -1
                self._take_checkpoint()
            kind = kinds[p]
            op = at[p]
            if kind >= _CRASH:
                self._decide(p, None)
                self._harness(p, self.trace.events[p])
            elif kind == base._CALL:
                assert op is not None
                # unlike one server, internal steps may have to run before even a lone call
                self.queues.setdefault(op.client, []).append(op)
                self.live[op.inv] = op
                self._decide(p, op)
            elif kind == base._SEND:
                assert op is not None
                self.queues.setdefault(op.client, []).append(op)
                self.live[op.inv] = op
            elif kind == base._RECV:
                if op is None:
                    e = self.trace.events[p]
                    raise _Failure(p, "a reply to no command: the client has nothing outstanding",
                                   e.reply)  # type: ignore[union-attr]
                if op.inv in self.live:
                    self._decide(p, op)
            elif kind == base._CLOSE:
                self._decide(p, None)
                client = self.trace.events[p].c  # type: ignore[union-attr]
                node = self.deployment.nodes[self.client_nodes[client]]
                if node.up:
                    self._close(client)
                else:
                    self._forget_client(client)
            elif kind == base._CONNECT:
                client = self.trace.events[p].c  # type: ignore[union-attr]
                self.path.append((base._STEP_CONNECT, p, client, len(self.zone.lo)))
                self.server.client(client)
            self.pos = p + 1

    def _harness(self, p: int, e: Any) -> None:
        d = self.deployment
        view: _DeploymentView = self.server  # type: ignore[assignment]
        self.path.append((base._STEP_CONNECT, p, f"event {p}", len(self.zone.lo)))
        if isinstance(e, Crash):
            for client, node in self.client_nodes.items():
                if node == e.node:
                    self._forget_client(client)
            d.crash(e.node)
        elif isinstance(e, Restart):
            keep = self._aof_kept(d.nodes[e.node])
            self.path.append((base._MODEL_CHOICE, p, -1 if keep is None else keep, 0))
            if self.wall:  # the reload (AOF-4) reads the clock after the process started again
                t = _event_ms(e)
                self.clock.set_window(-UNBOUNDED if t is None else t - self.trace.header.slack_ms,  # type: ignore[union-attr]
                                      UNBOUNDED, None)
                self.zone.forget_trail()
            try:
                d.restart(e.node, keep)
            except Infeasible as why:
                raise _Failure(p, f"no clock reading fits the time windows: {why}") from None
            d.nodes[e.node].server.chooser = self.model_chooser
        elif isinstance(e, Pause):
            d.pause(e.node)
        elif isinstance(e, Resume):
            d.resume(e.node)
        elif isinstance(e, LinkEvent):
            d.set_link(e.primary, e.replica, e.state)
            if e.state == "cut":
                view.released.pop(e.replica, None)
        elif isinstance(e, ReplSync):
            self._sync(p, e)
        elif isinstance(e, ReplCmd):
            link = self._link(p, e.primary, e.replica)
            k = view.released.get(e.replica, 0)
            if e.cmd == PING and link.fed == k:
                d.ping(e.primary)  # REPL-13: the cron's PING, where the proxy saw it
                view.last_ping[e.primary] = _event_ms(e) or 0
            if link.fed <= k:
                raise _Failure(p, f"node {e.primary} has not sent a command number {k + 1} to {e.replica} here; "
                                  f"the model's stream holds {link.fed}")
            argv = link.pending[k - link.applied][1]
            if [a for a in argv] != e.cmd:
                raise _Failure(p, f"the replication stream from {e.primary} to {e.replica} differs: trace says "
                                  f"{_show(e.cmd)}, the model sends {_show(argv)}")
            view.released[e.replica] = k + 1
        elif isinstance(e, ReplAck):
            link = self._link(p, e.primary, e.replica)
            replica = d.nodes[e.replica]
            if link.phase == "transfer" and not link.held:
                self._internal(p, ("load", e.replica))  # a replica acknowledges once it has loaded
            if link.phase != "online":
                raise _Failure(p, f"node {e.replica} acknowledges before the model has it synchronised")
            if e.ack > replica.offset:
                raise _Failure(p, f"node {e.replica} acknowledges offset {e.ack}, but the model has it at "
                                  f"{replica.offset}")
            link.ack = max(link.ack, e.ack)
            self._served(d._serve_waiting(d.nodes[e.primary]))

    def _aof_kept(self, node: Any) -> int | None:
        """How many AOF units survived the crash (rule 10, AOF-3): all under ``always``; under
        ``everysec`` and ``no`` a prefix the search chooses, the longest first."""
        if node.aof is None or setting(node.server, "appendfsync") == "always":
            return None
        n = len(node.aof.units)
        return n - (self.choose(n + 1) if n else 0)

    def _link(self, p: int, primary: str, replica: str) -> Link:
        link = self.deployment.links.get(replica)
        if link is None or link.primary != primary:
            raise _Failure(p, f"the model has no link from {primary} to {replica} here")
        return link

    def _sync(self, p: int, e: ReplSync) -> None:
        d = self.deployment
        view: _DeploymentView = self.server  # type: ignore[assignment]
        if e.replica not in d.links and ("connect", e.replica) in d.steps():
            self._internal(p, ("connect", e.replica))
        link = self._link(p, e.primary, e.replica)
        if e.sync == "full" and link.phase == "wait-bgsave":
            self._internal(p, ("fork", e.primary))
        if link.sync is None or link.sync[0] != e.sync:
            model = ("full" if link.phase == "wait-bgsave" else "none yet") if link.sync is None else link.sync[0]
            raise _Failure(p, f"node {e.replica} resynchronises from {e.primary}: trace says {e.sync}, "
                              f"the model decides {model}")
        if not view.same_name(link.sync[1], e.replid):
            raise _Failure(p, f"node {e.primary} answers PSYNC with replication ID {e.replid}; the model's ID "
                              f"{link.sync[1][:8]}… is already another name")
        if e.sync == "full" and e.offset != link.sync[2]:
            raise _Failure(p, f"full resynchronisation of {e.replica}: trace says offset {e.offset}, "
                              f"the model's snapshot is at {link.sync[2]}")
        view.released[e.replica] = 0 if e.sync == "full" else 0
        if e.sync == "partial":
            link.fed -= 0

    def _forget_client(self, client: int) -> None:
        for op in self.queues.pop(client, []):
            self.live.pop(op.inv, None)
            self.deferred.pop(op.inv, None)
        blocked = self.blocked.pop(client, None)
        if blocked is not None:
            self.live.pop(blocked.inv, None)
            self.timeout_deferred.pop(blocked.inv, None)

    # -- internal steps ------------------------------------------------------------------
    def _relevant(self, heads: list[Op]) -> set[str]:
        """The replicas whose applying or acknowledging can matter before the next decision.

        Applying a replica's stream commutes with everything that neither reads that replica
        nor its acknowledgements, so the search applies only where it can be observed: before a
        command of the replica's clients, a command that reads acknowledgements (WAIT, ROLE,
        INFO) on its primary, while a client is blocked, or at a harness event touching it.
        """
        d = self.deployment
        out: set[str] = set()

        def with_replicas(name: str) -> None:
            out.add(name)
            out.update(link.replica for link in d.links.values() if link.primary == name)

        for h in heads:
            node = self.client_nodes[h.client]
            out.add(node)
            if h.argv and h.argv[0].upper() in _READS_ACKS:
                with_replicas(node)
        for b in self.blocked.values():
            with_replicas(self.client_nodes[b.client])
        if self.pos < self.n:
            e = self.trace.events[self.pos]
            for attr in ("node", "primary", "replica"):
                name = getattr(e, attr, None)
                if isinstance(name, str) and name in d.nodes and self.kinds[self.pos] >= _CRASH:
                    with_replicas(name)
        return out

    def _internal_options(self, relevant: set[str] | None = None) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        d = self.deployment
        view: _DeploymentView = self.server  # type: ignore[assignment]
        eager: list[tuple[str, str]] = []
        lazy: list[tuple[str, str]] = []
        for kind, name in d.steps():
            link = d.links.get(name)
            observed = link is not None and (link.primary, name) in self.observed_links
            if observed:
                if kind in ("ack", "getack"):
                    continue  # an observed link acknowledges only where its ack events stand
                if kind == "apply" and link is not None and link.applied >= view.released.get(name, 0):
                    continue
            if kind in ("apply", "load", "ack", "getack") and relevant is not None and name not in relevant \
                    and not observed:
                continue  # commutes with what comes next (see _relevant)
            if kind == "connect":
                primary = d.primary_of(d.nodes[name])
                if primary is not None and (primary.name, name) in self.observed_links:
                    continue  # its sync event does the handshake
            if kind == "fork" and any((name, r.replica) in self.observed_links
                                      for r in d.replicas_of(d.nodes[name]) if r.phase == "wait-bgsave"):
                continue
            (eager if kind in _EAGER else lazy).append((kind, name))
        now = _event_ms(self.trace.events[self.pos]) if self.pos < self.n else None
        for name, node in d.nodes.items():
            if node.is_replica or not node.up or node.paused or node.backlog is None or now is None:
                continue
            links = [link for link in d.replicas_of(node) if link.phase != "wait-bgsave"]
            if not links or any((name, link.replica) in self.observed_links for link in links):
                continue
            period = int(setting(node.server, "repl-ping-replica-period")) * 1000
            last = view.last_ping.get(name)
            if last is None or now - last >= period - 1000:  # REPL-13: once a period, at most
                lazy.append(("ping", name))
        return eager, lazy

    def _internal(self, p: int, step: tuple[str, str]) -> None:
        self.steps += 1
        if self.steps > self.budget:
            raise base._Exhausted()
        if self.wall:
            self.clock.set_window(-UNBOUNDED, UNBOUNDED, None)  # type: ignore[union-attr]
            self.zone.forget_trail()
        self.path.append((base._STEP_CONNECT, self.pos, f"{step[0]} {step[1]}", len(self.zone.lo)))
        if step[0] == "ping" and self.pos < self.n:
            view: _DeploymentView = self.server  # type: ignore[assignment]
            view.last_ping[step[1]] = _event_ms(self.trace.events[self.pos]) or 0
        try:
            out = self.deployment.step(*step)
        except Infeasible as e:
            raise _Failure(p, f"no clock reading fits the time windows: {e}") from None
        self._served(out)

    def _served(self, out: Any) -> None:
        for cid, reply in out.served:
            served = self.blocked.pop(cid, None)
            if served is None:
                continue
            self.path.append((base._SERVED, self.pos, served, 0))
            self.live.pop(served.inv, None)
            self.timeout_deferred.pop(served.inv, None)
            self._check(served, reply)

    def _decide(self, p: int, required: Op | None) -> None:
        """As the single-server search decides, with the deployment's internal steps among the options."""
        live = self.live
        while True:
            options: list[tuple[int, Any]] = []
            heads = []
            for client, queue in self.queues.items():
                if queue and client not in self.blocked:
                    head = queue[0]
                    node = self.deployment.nodes[self.client_nodes[client]]
                    if not node.up or node.paused:
                        continue
                    since = self.deferred.get(head.inv)
                    if since is None or self.max_inv > since:
                        heads.append(head)
            heads.sort(key=lambda o: o.inv)
            eager, lazy = self._internal_options(self._relevant(heads))
            options.extend((3, s) for s in eager)
            options.extend((0, h) for h in heads)
            done = required is None or required.inv not in live
            if required is not None and not done and self.blocked.get(required.client) is required \
                    and self._can_time_out(required):
                options.append((1, required))
            if done and self._may_move_on(p, heads):
                options.append((2, None))
            if self.branching:
                for b in sorted(self.blocked.values(), key=lambda o: o.inv):
                    if b is not required and self._can_time_out(b):
                        options.append((1, b))
            options.extend((3, s) for s in lazy)
            if not options:
                raise self._stuck(p, required)
            if (len(heads) > 1 or self.searching) and self.branching and self.k == len(self.log):
                self._visit()
            kind, item = options[self.choose(len(options)) if len(options) > 1 else 0]
            if kind == 0:
                self._execute(item)
            elif kind == 1:
                self._time_out(item)
            elif kind == 3:
                self._internal(p, item)
            else:
                for h in heads:
                    self.deferred[h.inv] = p
                if self.branching:
                    for b in self.blocked.values():
                        self.timeout_deferred[b.inv] = p
                return

    def _check(self, op: Op, reply: Reply | None) -> None:
        if reply is not None and op.expected is not None and op.resp is not None and op.argv \
                and op.argv[0].upper() == b"INFO":
            problem = self._info_replication(op.expected, reply)
            if problem is not None:
                raise _Failure(op.resp, f"INFO replication: {problem}", op.expected, reply, show(reply))
        super()._check(op, reply)

    def _info_replication(self, expected: Reply, model: Reply) -> str | None:
        """Rule 9: the replication section's fields, exactly, but the host's measures and the IDs' names."""
        got, want = _section(expected), _section(model)
        if want is None:
            return None
        if got is None:
            return "the section is missing"
        view: _DeploymentView = self.server  # type: ignore[assignment]
        names = list(want)
        if list(got) != names:
            return f"fields {list(got)}, the model has {names}"
        for name in names:
            g, w = got[name], want[name]
            if name in ("master_replid", "master_replid2"):
                if not view.same_name(w, g):
                    return f"{name} is {g}, the model's ID is already named otherwise"
            elif name in _HOST_FIELDS or name.startswith("master_sync_"):
                if not _INTEGER.fullmatch(g):
                    return f"{name} is {g!r}, not a number"
            elif name.startswith("slave") and name[5:].isdigit():
                gs, ws = g.rsplit(",lag=", 1), w.rsplit(",lag=", 1)
                if gs[0] != ws[0] or len(gs) != 2 or not _INTEGER.fullmatch(gs[1]):
                    return f"{name} is {g}, the model has {w}"
            elif g != w:
                return f"{name} is {g}, the model has {w}"
        return None

    def _begin(self, op: Op) -> None:
        super()._begin(op)
        if self.wall and self.observed_links:
            hints = self._stream_hints(self.client_nodes[op.client])
            if hints:  # the times the proxy saw in the stream come first when a time is made exact
                self.zone.expected = Array((op.expected or Array(()), *hints))

    def _stream_hints(self, node: str) -> tuple[Bulk, ...]:
        """Integers of the next commands the proxy saw leave ``node``, as ID-like hints."""
        hints: list[Bulk] = []
        seen = 0
        for e in itertools.islice(self.trace.events, self.pos, None):
            if isinstance(e, ReplCmd) and e.primary == node:
                hints.extend(Bulk(a + b"-0") for a in e.cmd if a.isdigit() and len(a) >= 10)
                seen += 1
                if seen >= 8:
                    break
        return tuple(hints)

    def _execute(self, op: Op) -> None:
        try:
            super()._execute(op)
        except _NodeDown as e:
            raise _Failure(self.pos, f"node {e.node} is not running") from None


_HEX40 = re.compile(r"[0-9a-f]{40}")
_INTEGER = re.compile(r"-?[0-9]+")
_HOST_FIELDS = frozenset({"master_last_io_seconds_ago", "master_link_down_since_seconds"})


def _section(reply: Reply) -> dict[str, str] | None:
    """The ``# Replication`` section of an INFO reply as fields, None when it has none."""
    if isinstance(reply, Bulk):
        text = reply.value.decode("latin-1")
    elif isinstance(reply, Verbatim):
        text = reply.text.decode("latin-1")
    else:
        return None
    start = text.find("# Replication\r\n")
    if start < 0:
        return None
    body = text[start:].split("\r\n\r\n", 1)[0]
    fields: dict[str, str] = {}
    for line in body.split("\r\n")[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v
    return fields


_READS_ACKS = frozenset({b"WAIT", b"ROLE", b"INFO"})
PING = [b"ping"]  # shared.ping: 7.0 sends it in lower case


def _event_ms(e: Any) -> int | None:
    """The trace time of an event in ms (the end of a call), None in a virtual trace."""
    t = getattr(e, "t1", None) or getattr(e, "t", None)
    return None if t is None else t // 1000


def _show(argv: list[bytes]) -> str:
    return " ".join(a.decode("latin-1") for a in argv)


MODELLED_DIALECTS = frozenset({"redis-7.0"})
"""The dialects whose replication the deployment models (rule 6: other traces are unsupported)."""


def _scope_reason(trace: Trace, dialects: dict[str, Dialect]) -> str | None:
    """Why a trace/2 is outside the model's scope (rule 6), None if it is inside."""
    if len(dialects) > 1 or any(isinstance(e, V2_ONLY) for e in trace.events):
        for name, d in dialects.items():
            if d.name not in MODELLED_DIALECTS:
                return f"node {name} is {d.name}, whose replication the model does not cover yet"
    for e in trace.events:
        cmd = getattr(e, "cmd", None)
        reply = getattr(e, "reply", None)
        if isinstance(e, Call | Recv) and reply is not None and not isinstance(reply, Error):
            argv = cmd if isinstance(e, Call) else None
            if argv and argv[0].upper() == b"FAILOVER" and not (len(argv) == 2 and argv[1].upper() == b"ABORT"):
                return "uses a FAILOVER that starts a handover, which the model does not implement yet"
    return None


def node_dialects(trace: Trace, override: str | None = None) -> dict[str, Dialect]:
    """Each node's dialect: ``override``, else its header's server (rule 7)."""
    from xspec.spec.dialect import get_dialect
    out: dict[str, Dialect] = {}
    for name, spec in trace.header.node_specs().items():
        if override and override != "auto":
            out[name] = get_dialect(override)
        else:
            out[name] = dialect_for_server(spec.server_name, spec.server_version)
    return out


def check_multinode(trace: Trace, dialect: str | None = None) -> Verdict:
    """Does some execution of a deployment of the model explain the trace/2 ``trace``? (rules 1-11)."""
    n = len(trace.events)
    try:
        dialects = node_dialects(trace, dialect)
    except UnknownDialect as err:
        return Verdict("unsupported", n, message=str(err))
    reason = _scope_reason(trace, dialects)
    if reason is not None:
        return Verdict("unsupported", n, message=reason)
    try:
        kinds, at = base._operations(trace)
    except _Unsupported as why:
        return Verdict("unsupported", n, message=why.reason)
    for i, event in enumerate(trace.events):
        k = _HARNESS_KIND.get(type(event))
        if k is not None:
            kinds[i] = k
    verdict = _MultiSearch(trace, kinds, at, dialects).run()
    if verdict.status == "diverge" and verdict.witness is not None and verdict.witness.divergence is not None:
        div = verdict.witness.divergence
        at_event = trace.events[div.event]
        node = getattr(at_event, "node", None) or trace.client_nodes().get(getattr(at_event, "c", -1))
        if node is not None and not verdict.message.startswith("node "):
            verdict.message = f"node {node}: {verdict.message}"
    return verdict


base.MULTINODE_CHECKERS.append(check_multinode)
