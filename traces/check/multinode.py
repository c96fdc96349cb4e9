"""Conformance of trace/2 histories: several nodes, replication, faults (trace format rules 7-11).

The search of :mod:`xspec.traces.check.checker` drives a
:class:`~xspec.models.replication.Deployment` instead of one server, through that
search's hooks for a model with internal steps: each connection's commands run on
its node (rule 7), and the deployment's own steps (rule 8) join the decisions. A
replica's synchronisation (handshake, snapshot, load, applying the stream) is
placed canonically: each step as soon as it can run, or only after the replica's
next observer (:meth:`_MultiSearch._advance`), which explores every execution that
a replica's clients, acknowledgements and harness events can tell apart and no
other. A PING is placed only right before a step that reads offsets; the
periodic acknowledgement is tried last, so an execution without it is preferred
(rule 9). Where a link has ``repl`` events they fix its traffic: a replica applies
only the commands the proxy already passed, which must be, in order, the ones the
primary fed; a ``sync`` event must match the resynchronisation the model decides;
an ``ack`` sets the primary's acknowledged offset. Crash, restart, pause, resume
and link events change the deployment where they stand; a restart keeps what
rule 10 says the node's persistence keeps (under ``everysec`` a crash loses at most
the writes acknowledged in the last two seconds and a cron period, AOF-8). What was sent to a crashed node
and not answered may or may not have run, as the search decides before the crash.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import re
from typing import Any

from xspec.models.persistence import AppendOnlyFile
from xspec.models.replication import (
    NO_REPLID,
    REPLICATION_DIALECTS,
    Deployment,
    Link,
    aof_load,
    everysec_loss_ms,
    setting,
)
from xspec.spec import commands
from xspec.spec.dialect import Dialect, UnknownDialect, dialect_for_server
from xspec.spec.ids import parse_ll
from xspec.spec.resp import Array, Bulk, Error, Reply, Simple, Verbatim, show
from xspec.spec.trace_format import V2_ONLY_EVENTS as V2_ONLY
from xspec.spec.trace_format import Crash, Event, Pause, ReplAck, ReplCmd, ReplSync, Restart, Resume, Trace
from xspec.spec.trace_format import Link as LinkEvent
from xspec.traces.check import checker as base
from xspec.traces.check.checker import Op, Verdict, _Failure, _Search, _Unsupported
from xspec.traces.check.reload_cache import LoadedStates, ReloadCache
from xspec.traces.check.symbolic import UNBOUNDED, Infeasible, RenderedTime, Time

_CRASH, _RESTART, _PAUSE, _RESUME, _LINK, _REPL_CMD, _REPL_SYNC, _REPL_ACK = range(20, 28)
_HARNESS_KIND = {Crash: _CRASH, Restart: _RESTART, Pause: _PAUSE, Resume: _RESUME, LinkEvent: _LINK,
                 ReplCmd: _REPL_CMD, ReplSync: _REPL_SYNC, ReplAck: _REPL_ACK}


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
        # replicas whose next internal steps wait until after their next observer (see _advance)
        self.postponed: set[str] = set()
        # node -> for each unit of its AOF after the base, when its write was acknowledged to a
        # client (trace time, µs; None: never acknowledged, or a replica's applied write)
        self.aof_acks: dict[str, list[int | None]] = {}
        self.crashed_at: dict[str, int | None] = {}  # node -> the trace time (µs) of its last crash
        # (primary, replica) of held links that were cut: the hold outlives the cut, so the replica's
        # reconnection waits for the link's flowing event (rule 8)
        self.held_cut: set[tuple[str, str]] = set()
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

    def freeze(self, woff_readers: frozenset[int] | None = None, files: bool = True,
               loads: dict[str, Any] | None = None) -> tuple[Any, ...]:
        """The state, canonically; with ``woff_readers``, each node's per-client write offsets
        (``woff``, read only by WAIT and WAITAOF) are kept for those clients only; without
        ``files``, what only a restart or a persistence command reads is left out (each node's
        RDB file, AOF, changes since the last save and fsynced offset). ``loads``: for nodes whose
        AOF only reloads read, what those reloads load (:meth:`_MultiSearch._aof_loads`), which
        stands for the AOF and for its units' acknowledgement times."""
        deployment = self.d.freeze()
        loads = loads or {}
        if woff_readers is not None or not files or loads:
            nodes = []
            for n in deployment[0]:
                kept = list(n)
                if woff_readers is not None:
                    kept[_WOFF] = tuple(kv for kv in n[_WOFF] if kv[0] in woff_readers)
                if not files:
                    for i in _FILE_FIELDS:
                        kept[i] = None
                elif n[0] in loads:
                    kept[_AOF] = (_LOADS, loads[n[0]])
                nodes.append(tuple(kept))
            deployment = (tuple(nodes), *deployment[1:])
        acks = tuple(sorted((k, tuple(v)) for k, v in self.aof_acks.items() if k not in loads)) if files else ()
        return (deployment, tuple(sorted(self.held_cut)), tuple(sorted(self.released.items())),
                tuple(sorted(self.names.items())), tuple(sorted(self.postponed)), acks)

    def freeze_quiet(self, relevant: set[str], woff_readers: frozenset[int]) -> tuple[Any, ...]:
        """The state as far as a quiet rest of the trace (:meth:`_MultiSearch._quiet_nodes`) can
        tell it apart: the data, clients and settings of the ``relevant`` nodes, their roles, and
        what their links still carry to them; not the offsets, IDs, backlogs, acknowledgements
        and files (no later event reads them), nor any other node (no later event reads it, and
        nothing flows from it to a node that one does)."""
        nodes = []
        for name, node in sorted(self.d.nodes.items()):
            if name not in relevant:
                continue
            nodes.append((name, node.server.freeze(), node.master, node.up, node.paused,
                          tuple(sorted((c, o) for c, o in node.woff.items() if c in woff_readers))))
        links = []
        for name, link in sorted(self.d.links.items()):
            if name in relevant:
                links.append((link.primary, name, link.phase, link.held, tuple(tuple(a) for _, a in link.pending),
                              None if link.snapshot is None else link.snapshot.freeze()))
        return (_QUIET, tuple(nodes), tuple(links), tuple(sorted(n for n in self.postponed if n in relevant)),
                tuple(sorted(self.held_cut)))

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


_WOFF = 13
"""The place of ``woff`` in :meth:`Node.freeze`'s tuple."""
_FILE_FIELDS = (11, 12, 17, 18)
"""The places of ``rdb``, ``aof``, ``dirty`` and ``fsynced`` in :meth:`Node.freeze`'s tuple."""
_AOF = 12
_LOADS = "\x00loads"
_UNREAD = "\x00unread"


class _NodeDown(Exception):
    def __init__(self, node: str) -> None:
        super().__init__(node)
        self.node = node


class _MultiSearch(_Search):
    """The search of the single-server checker over a deployment and its internal steps."""

    INTERNAL_STEPS = True

    def __init__(self, trace: Trace, kinds: list[int], at: list[Op | None], dialects: dict[str, Dialect],
                 observed_links: set[tuple[str, str]] | None = None) -> None:
        """``observed_links``: the links whose traffic the trace shows (default: those with ``repl``
        events in ``trace``; a prefix of a trace keeps the whole trace's)."""
        self.client_nodes = trace.client_nodes()
        self.node_dialects = dialects
        specs = trace.header.node_specs()
        self.node_specs = {name: {"dialect": dialects[name], "addrs": list(s.addrs), "config": dict(s.config),
                                  "skew_ms": s.skew_ms or 0} for name, s in specs.items()}
        self.observed_links = observed_links if observed_links is not None else {
            (e.primary, e.replica) for e in trace.events if isinstance(e, ReplCmd | ReplSync | ReplAck)}
        super().__init__(trace, next(iter(dialects.values())), kinds, at)
        self.times_shown = False
        self.zone.choose = self._time_choice
        # client -> the last event at which a WAIT or WAITAOF of its own may still run (the client's
        # last event, which covers an EXEC that runs a queued one; the end when a reply never came):
        # after it, the client's write offset (``woff``) is read by nothing
        self.woff_until: dict[int, int] = {}
        last_event: dict[int, int] = {}
        for i, e in enumerate(trace.events):
            c = getattr(e, "c", None)
            if c is not None:
                last_event[c] = i
        for op in at:
            if op is not None and op.argv and op.argv[0].upper() in (b"WAIT", b"WAITAOF"):
                end = self.n if op.resp is None else max(op.resp, last_event.get(op.client, op.resp))
                self.woff_until[op.client] = max(end, self.woff_until.get(op.client, -1))
        # operations that only read (flagged readonly): see _lone_read
        self.pure_reads: set[int] = set()
        for op in at:
            if op is not None and op.argv:
                spec = commands.lookup(op.argv)
                if spec is not None and "readonly" in spec.flags and not spec.subcommands:
                    self.pure_reads.add(op.inv)
        # quiet_from[p]: no event from p on is a harness event or a _LOUD command; future_nodes[p]:
        # the nodes with commands from p on (see _quiet_nodes)
        self.quiet_from = [True] * (self.n + 1)
        self.future_nodes: list[frozenset[str]] = [frozenset()] * (self.n + 1)
        for p in range(self.n - 1, -1, -1):
            op = at[p]
            quiet, nodes = self.quiet_from[p + 1], self.future_nodes[p + 1]
            if kinds[p] >= _CRASH:
                quiet = False
            else:
                if op is not None and op.inv == p and kinds[p] in (base._CALL, base._SEND) \
                        and op.argv and op.argv[0].upper() in _LOUD:
                    quiet = False
                client = getattr(trace.events[p], "c", None)  # a command, a reply, a message, a close
                if client in self.client_nodes:
                    nodes = nodes | {self.client_nodes[client]}
            self.quiet_from[p], self.future_nodes[p] = quiet, nodes
        # files_quiet_from[p]: no crash or restart from p on, and no command that reads or writes
        # persistence state (_READS_FILES): the nodes' files cannot matter any more
        self.files_quiet_from = [True] * (self.n + 1)
        for p in range(self.n - 1, -1, -1):
            op = at[p]
            self.files_quiet_from[p] = self.files_quiet_from[p + 1] and kinds[p] not in (_CRASH, _RESTART) and not (
                op is not None and op.inv == p and op.argv and op.argv[0].upper() in _READS_FILES)
        # files_read_from[p]: a command invoked from p on reads or writes persistence state
        # (_READS_FILES); crashes[node]: the positions of the node's crash events (see _aof_loads)
        self.files_read_from = [False] * (self.n + 1)
        for p in range(self.n - 1, -1, -1):
            op = at[p]
            self.files_read_from[p] = self.files_read_from[p + 1] or bool(
                op is not None and op.inv == p and op.argv and op.argv[0].upper() in _READS_FILES)
        self.crashes: dict[str, list[int]] = {}
        for i, e in enumerate(trace.events):
            if isinstance(e, Crash):
                self.crashes.setdefault(e.node, []).append(i)
        # Each restart multiplies the executions to try: which commands in flight ran before the kill,
        # which AOF prefix survived, each with a reload; the budget grows with the restarts.
        self.budget += RESTART_STEP_BUDGET * sum(1 for k in kinds if k == _RESTART)
        self.stream_positions: dict[str, list[int]] = {}  # primary -> its repl cmd events, in order
        for i, e in enumerate(trace.events):
            if isinstance(e, ReplCmd):
                self.stream_positions.setdefault(e.primary, []).append(i)

    # -- state ----------------------------------------------------------------------
    def _fresh(self) -> None:
        super()._fresh()
        deployment = Deployment(self.node_specs, self.clock)  # type: ignore[arg-type]
        for node in deployment.nodes.values():
            node.server.chooser = self.model_chooser
        if self.wall:  # every alternative at a crash reloads the files: the loads share their start
            if getattr(self, "reloads", None) is None:
                self.reloads = ReloadCache(self.clock, self.dialect)  # type: ignore[arg-type]
            deployment.aof_replayer = self.reloads  # type: ignore[attr-defined]
            if getattr(self, "loaded_states", None) is None:  # one for the whole search, like the reloads
                self.loaded_states = LoadedStates(self.clock, self.dialect)  # type: ignore[arg-type]
        self.server = _DeploymentView(deployment, self.client_nodes)  # type: ignore[assignment]

    def _shared(self) -> dict[int, Any]:
        shared = super()._shared()
        reloads = getattr(self, "reloads", None)
        if reloads is not None:  # one cache for the whole search, never copied into a checkpoint
            shared[id(reloads)] = reloads
        return shared

    @property
    def deployment(self) -> Deployment:
        return self.server.d  # type: ignore[attr-defined, no-any-return]

    # -- running ----------------------------------------------------------------------
    def _close(self, client: int) -> None:
        if self.deployment.nodes[self.client_nodes[client]].up:
            super()._close(client)
        else:  # a crash closed it already
            self._forget_client(client)

    def _heads(self) -> list[Op]:
        """As for one server, but a crashed or paused node runs none of its clients' commands.

        Every decision starts here: the replicas first apply what became applicable since the last
        one (:meth:`_advance`), which may serve blocked clients and so change the heads.
        """
        self._advance()
        nodes, client_nodes = self.deployment.nodes, self.client_nodes
        heads = []
        for client, queue in self.queues.items():
            if queue and client not in self.blocked:
                head = queue[0]
                node = nodes[client_nodes[client]]
                if not node.up or node.paused:
                    continue
                since = self.deferred.get(head.inv)
                if since is None or self.max_inv > since:
                    heads.append(head)
        heads.sort(key=lambda o: o.inv)
        return heads

    def _other_event(self, p: int, e: Any) -> None:
        """A harness event: a fault, a link's state, what the proxy saw pass (rules 8-10)."""
        d = self.deployment
        view: _DeploymentView = self.server  # type: ignore[assignment]
        self.times_shown = False
        for name in self._observed_by(e):
            self._observed(name)
        self.path.append((base._STEP_CONNECT, p, f"event {p}", len(self.zone.lo)))
        if isinstance(e, Crash):
            view.crashed_at[e.node] = _event_us(e)
            for client, node in self.client_nodes.items():
                if node == e.node:
                    self._forget_client(client)
            d.crash(e.node)
            t = _event_ms(e)
            zone = self.zone
            if self.wall and t is not None and len(d.nodes) == 1 and not zone.unchained and len(zone.lo) > 1:
                # Rule 10: a lone node's commands that ran before the kill read its clock before it
                # (with more nodes, the search may run another node's later commands before this event).
                try:
                    zone.add_le(len(zone.lo) - 1, 0, t + self.trace.header.slack_ms)
                except Infeasible as why:
                    raise _Failure(p, f"no clock reading fits the time windows: {why}") from None
                zone.forget_trail()
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
            if d.nodes[e.node].aof is not None:  # what the restart loaded is in the files: never lost
                view.aof_acks[e.node] = [_ON_DISK] * len(d.nodes[e.node].aof.units)  # type: ignore[union-attr]
            d.nodes[e.node].server.chooser = self.model_chooser
            self.checkpoint_next = True  # backtracking past here need not reload the files again
        elif isinstance(e, Pause):
            d.pause(e.node)
        elif isinstance(e, Resume):
            d.resume(e.node)
        elif isinstance(e, LinkEvent):
            link = d.links.get(e.replica)
            held = link is not None and link.primary == e.primary and link.held
            d.set_link(e.primary, e.replica, e.state)
            if e.state == "cut":
                view.released.pop(e.replica, None)
                if held or (e.primary, e.replica) in view.held_cut:
                    view.held_cut.add((e.primary, e.replica))
            elif e.state == "flowing":
                view.held_cut.discard((e.primary, e.replica))
            elif e.state == "held" and (link is None or link.primary != e.primary):
                view.held_cut.add((e.primary, e.replica))  # held while no connection is up
        elif isinstance(e, ReplSync):
            self._sync(p, e)
        elif isinstance(e, ReplCmd):
            link = self._link(p, e.primary, e.replica)
            if link.child:  # REPL-19: the stream kept since the fork goes out once the child is reaped,
                self._internal(p, ("bgsave-done", e.primary))
            if link.bulk:  # and after a disk-based sync's file
                self._internal(p, ("bulk-sent", e.primary))
            k = view.released.get(e.replica, 0)
            if e.cmd == PING and link.fed == k:
                self._internal(p, ("ping", e.primary))  # REPL-13: the cron's PING, where the proxy saw it
                self._undefer_after_ping(p, e.primary)
            if link.fed <= k:
                raise _Failure(p, f"node {e.primary} has not sent a command number {k + 1} to {e.replica} here; "
                                  f"the model's stream holds {link.fed}")
            argv = link.pending[k - link.applied][1]
            if not self._same_command(argv, e.cmd):
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
            if e.fack is not None:  # WAITAOF-2: the replica's fsynced offset
                link.fack = max(link.fack, e.fack)
            self._served(d._serve_waiting(d.nodes[e.primary]).served)

    def _may_move_on(self, p: int, heads: list[Op]) -> bool:
        """As for one server, and also past a ``repl`` event showing the cron's PING: a command sent
        before it may run after it (the cron fed the PING while the command waited to be read,
        REPL-13), which the deferral's reasoning misses, since the PING changes the stream."""
        e = self.trace.events[p]
        if isinstance(e, ReplCmd) and e.cmd == PING:
            return True
        return super()._may_move_on(p, heads)

    def _undefer_after_ping(self, p: int, primary: str) -> None:
        """The commands of ``primary``'s clients passed over at the PING at ``p`` run in another state
        after it (their propagation follows the PING): they are not the same order tried again."""
        for inv, since in list(self.deferred.items()):
            op = self.live.get(inv)
            if since == p and op is not None and self.client_nodes.get(op.client) == primary:
                del self.deferred[inv]

    def _same_command(self, argv: list[bytes], shown: list[bytes]) -> bool:
        """Whether the stream's command ``argv`` is the one the proxy showed: a time the stream keeps
        symbolic (:class:`RenderedTime`) is the integer shown there, if the clock allows it (then
        that equality is added to the clock's constraints)."""
        if len(argv) != len(shown):
            return False
        zone = self.zone
        mark = zone.mark()
        with zone.assuming():
            for a, b in zip(argv, shown, strict=True):
                if type(a) is RenderedTime:
                    value = parse_ll(b)
                    same = value is not None and b == b"%d" % value and len(b) == len(a) and a.stands_for == value
                else:
                    same = a == b
                if not same:
                    zone.undo(mark)
                    return False
        return True

    def _observed_by(self, e: Any) -> list[str]:
        """The replicas whose applied stream a harness event depends on: what a crash, a held or cut
        link or a paused primary leaves them, the offset a sync or an acknowledgement shows."""
        d = self.deployment
        if isinstance(e, Crash):
            return [e.node, *(link.replica for link in d.replicas_of(d.nodes[e.node]))]
        if isinstance(e, Pause):
            return [link.replica for link in d.replicas_of(d.nodes[e.node])]
        if isinstance(e, LinkEvent):
            return [e.replica] if e.state != "flowing" else []
        if isinstance(e, ReplSync | ReplAck):
            return [e.replica]
        return []

    def _applicable(self, name: str) -> int:
        """How many commands replica ``name`` can apply now (rule 8): those its primary fed it,
        as far as the proxy passed them where ``repl`` events show the link; 0 when the link is
        not online or held, or either node is down or paused, or while the primary's sync child
        still runs (REPL-19: the stream kept since the fork goes out at the reap)."""
        d = self.deployment
        link = d.links.get(name)
        if link is None or link.phase != "online" or link.held or link.child:
            return 0
        primary, replica = d.nodes[link.primary], d.nodes[name]
        if not primary.up or not replica.up or primary.paused or replica.paused:
            return 0
        if (link.primary, name) in self.observed_links:
            view: _DeploymentView = self.server  # type: ignore[assignment]
            return min(len(link.pending), view.released.get(name, 0) - link.applied)
        return len(link.pending)

    def _next_step(self, name: str) -> tuple[str, str] | None:
        """The next internal step of replica ``name``'s synchronisation, None when it has none now:
        its handshake, its primary's snapshot, loading it, the primary reaping the snapshot's child,
        applying the next command of the stream (on a link with ``repl`` events, its sync event does
        the handshake and the snapshot, and it applies only what the proxy passed)."""
        d = self.deployment
        node = d.nodes[name]
        if not node.up or node.paused or node.master is None:
            return None
        link = d.links.get(name)
        if link is None:
            primary = d.primary_of(node)
            if primary is None or not primary.up or primary.paused or (primary.name, name) in self.observed_links:
                return None
            view: _DeploymentView = self.server  # type: ignore[assignment]
            if (primary.name, name) in view.held_cut:
                return None  # the hold outlives the cut: the handshake waits for the flowing event
            if not d._accepts_sync(primary, node):
                return None  # REPL-16: refused while the primary fails over; the replica retries later
            return "connect", name
        primary = d.nodes[link.primary]
        if link.held or not primary.up or primary.paused:
            return None
        if link.phase == "wait-bgsave":  # REPL-19: the child starts once no other child runs
            observed = (primary.name, name) in self.observed_links
            return None if observed or not d.can_fork(primary) else ("fork", primary.name)
        if link.phase == "transfer" and d.can_load(link):
            return "load", name
        # REPL-19: the primary's sync child ends and is reaped (a disk-based file is sent after it), a
        # step of this replica's synchronisation here; still a lazy step of the primary too, for the
        # orders this one does not reach (a diskless replica loading after the reap)
        if link.child:
            return "bgsave-done", primary.name
        if link.bulk:
            return "bulk-sent", primary.name
        if link.phase == "transfer":
            return None
        return ("apply", name) if self._applicable(name) > 0 else None

    def _advance(self) -> None:
        """Rule 8 in canonical form: each replica takes its synchronisation's next step (handshake,
        snapshot, load, applying a command) as soon as it can, or only after its next observer.

        These steps commute with every step that neither reads the replica nor depends on what
        it applied, so the moments at which a replica may take them differ only as its observers
        (its clients' commands, its acknowledgements, the harness events that touch it:
        :meth:`_observed_by`) tell them apart. The search places each as early as possible in its
        interval between observers: at once (the preferred choice, as on a fast link), or after
        the next observer, where the choice is made again; once one step waits, the later ones
        wait too (a replica works in order).

        The replicas are taken one after the other, in the header's order, but two replicas
        run at the same time: where a replica's steps here only load or apply what its primary
        (itself no replica) sent it, and it feeds no replica of its own, its clock readings start
        a branch of the clock's chain after the last reading before these steps
        (:attr:`Zone.branch_from`), and the branches join before anything else reads the clock
        (rule 2 orders the readings of one execution; it does not order two nodes' steps that
        neither sees).
        """
        view: _DeploymentView = self.server  # type: ignore[assignment]
        quiet = self._quiet_nodes()
        zone = self.zone if self.wall else None
        start = len(self.zone.lo) - 1  # the latest reading before these steps
        lasts: list[int] = []  # the latest reading of each replica whose steps here read the clock
        for name, node in list(self.deployment.nodes.items()):
            if quiet is not None and name not in quiet:
                continue  # nothing later observes it (_quiet_nodes): its steps may as well not run
            if name in view.postponed:
                if self._next_step(name) is not None:
                    continue
                view.postponed.discard(name)  # nothing waits any more: the same state as never postponed
            if node.master is None:
                continue
            first = len(self.zone.lo)
            try:
                while (step := self._next_step(name)) is not None:
                    if self.choose(2):
                        view.postponed.add(name)
                        break
                    if zone is not None and first == len(zone.lo):  # no reading yet in this replica's steps
                        branch = lasts and step[0] in ("load", "apply") and self._on_its_own(name)
                        zone.branch_from = start if branch else None
                    self._internal(self.pos, step)
            finally:
                if zone is not None:
                    zone.branch_from = None
            if len(self.zone.lo) > first:
                lasts.append(len(self.zone.lo) - 1)
        if zone is not None and zone.unchained and zone.unchained[-1] > start:  # some replica branched
            zone.join(lasts)

    def _on_its_own(self, name: str) -> bool:
        """Whether replica ``name``'s loading and applying touch no other node's state: its primary is
        no replica (so nothing else here feeds it) and it feeds no replica of its own."""
        d = self.deployment
        link = d.links.get(name)
        if link is None or d.nodes[link.primary].master is not None:
            return False
        return not any(other.primary == name for other in d.links.values())

    def _lone_read(self) -> str | None:
        """The node of the one command that can run now, when it is a read (a command flagged
        ``readonly``) whose reply is the event being decided and no client is blocked; else None.

        Such a read must run before the search moves on, and it changes nothing but its own
        client and the node's counters, so an internal step that neither touches this node
        (:meth:`_touches`: an acknowledgement or a PING of another primary) nor reads the clock
        commutes with it: ``step; read`` and ``read; step`` reach the same state, and the search
        takes only the second (partial-order reduction). With a second runnable command or a
        blocked client (whose timeout may read what the step changes) the order of the step
        against those matters, and nothing is left out.
        """
        if self.blocked or self.pos >= self.n:
            return None
        op = self.at[self.pos]
        if op is None or op.resp != self.pos or op.inv not in self.pure_reads or op.inv not in self.live:
            return None
        queue = self.queues.get(op.client)
        if not queue or queue[0] is not op:
            return None
        nodes = self.deployment.nodes
        for client, q in self.queues.items():
            if q and client != op.client:
                since = self.deferred.get(q[0].inv)
                node = nodes[self.client_nodes[client]]
                if node.up and not node.paused and (since is None or self.max_inv > since):
                    return None
        name = self.client_nodes[op.client]
        node = nodes[name]
        return name if node.up and not node.paused else None

    def _next_lone_read(self) -> str | None:
        """When nothing is left to run at a command's event and the next event is a read that will
        run alone (:meth:`_lone_read`), its node: a step that commutes with that read is taken
        after it rather than before the search moves on (the same executions, once)."""
        p = self.pos
        if self.blocked or p + 1 >= self.n or self.kinds[p] not in (base._CALL, base._RECV) \
                or self.kinds[p + 1] != base._CALL or any(self.queues.values()):
            return None
        op = self.at[p + 1]
        if op is None or op.inv not in self.pure_reads:
            return None
        name = self.client_nodes[op.client]
        node = self.deployment.nodes[name]
        return name if node.up and not node.paused else None

    def _observed(self, name: str) -> None:
        """Replica ``name``'s state is observed now: what waited may go on afterwards."""
        view: _DeploymentView = self.server  # type: ignore[assignment]
        view.postponed.discard(name)

    def _aof_units(self, name: str) -> tuple[list[Any], int] | None:
        """Node ``name``'s AOF units after the base (the list itself and its length), None without an AOF."""
        aof = self.deployment.nodes[name].aof
        return None if aof is None else (aof.units, len(aof.units))

    def _track_aof(self, name: str, before: tuple[list[Any], int] | None, acked: int | None) -> None:
        """Keep ``aof_acks`` beside the AOF's units after a step that may have appended to them
        (acknowledged at ``acked``) or replaced them (a rewrite starts a new list)."""
        view: _DeploymentView = self.server  # type: ignore[assignment]
        aof = self.deployment.nodes[name].aof
        acks = view.aof_acks.setdefault(name, [])
        if aof is None:
            acks.clear()
            return
        if before is None or aof.units is not before[0]:
            acks.clear()  # a new file, or a rewrite: its base holds what came before
        del acks[len(aof.units):]
        acks.extend([acked] * (len(aof.units) - len(acks)))

    def _aof_kept(self, node: Any) -> int | None:
        """How many AOF units survived the crash (rule 10, AOF-3): all under ``always``; under
        ``everysec`` a prefix the search chooses, the longest first, that holds every write
        acknowledged more than two seconds and a cron period before the crash (AOF-8: a write
        ``everysec`` postponed while a background fsync ran is forced out then); under ``no``, a prefix that holds
        every write acknowledged before the crash (AOF-3: the write to the file, never postponed
        under ``no``, precedes the reply, and a killed process loses nothing the OS has)."""
        fsync = None if node.aof is None else setting(node.server, "appendfsync")
        if fsync is None or fsync == "always":
            return None
        n = len(node.aof.units)
        least = self._aof_least(node, self.server.crashed_at.get(node.name))  # type: ignore[attr-defined]
        return n - (self.choose(n - least + 1) if n > least else 0)

    def _aof_least(self, node: Any, crashed: int | None) -> int:
        """How many of ``node``'s AOF units a crash at trace time ``crashed`` (µs) cannot lose
        (see :meth:`_aof_kept`): under ``everysec`` and ``no``, up to the last one acknowledged
        long enough before it."""
        fsync = setting(node.server, "appendfsync")
        least = 0
        if crashed is not None and fsync in ("everysec", "no"):
            bound = (everysec_loss_ms(node) + self.trace.header.slack_ms) * 1000 if fsync == "everysec" else 0
            acks = self.server.aof_acks.get(node.name, [])  # type: ignore[attr-defined]
            for i, acked in enumerate(acks[:len(node.aof.units)]):
                if acked is not None and crashed - acked >= bound:
                    least = i + 1
        return least

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
            if not d.can_fork(d.nodes[e.primary]) and d.child_of(d.nodes[e.primary]) == "rdb":
                self._internal(p, ("bgsave-done", e.primary))  # REPL-19: the running child ends first
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
            if b.argv and b.argv[0].upper() in _READS_ACKS:
                with_replicas(self.client_nodes[b.client])
            else:
                out.add(self.client_nodes[b.client])
        if self.pos < self.n and self.kinds[self.pos] >= _CRASH and self.kinds[self.pos] != _REPL_CMD:
            e = self.trace.events[self.pos]
            for attr in ("node", "primary", "replica"):
                name = getattr(e, attr, None)
                if isinstance(name, str) and name in d.nodes:
                    with_replicas(name)
        return out

    def _acks_read(self, heads: list[Op]) -> set[str]:
        """The replicas whose acknowledgement can matter before the next decision.

        An acknowledgement carries the replica's offset (and fsynced offset) to its primary and
        changes nothing on the replica, so the replica's own commands cannot tell whether it came
        before them: only what reads the primary's record of it can (WAIT, WAITAOF, ROLE, INFO,
        FAILOVER, running or blocked there, a FAILOVER in progress there), and a harness event
        touching either node (after a cut or a hold the acknowledgement could not pass).
        """
        d = self.deployment
        primaries: set[str] = set()
        for op in (*heads, *self.blocked.values()):
            if op.argv and op.argv[0].upper() in _READS_ACK_RECORD:
                primaries.add(self.client_nodes[op.client])
        for name, node in d.nodes.items():
            if node.failover is not None:
                primaries.add(name)
        touched: set[str] = set()
        # (a crash is left out: the crashed node's record of acknowledgements, and the link an
        # acknowledgement to or from it travels on, are gone with it)
        if self.pos < self.n and self.kinds[self.pos] >= _CRASH and self.kinds[self.pos] not in (_REPL_CMD, _CRASH):
            e = self.trace.events[self.pos]
            touched = {getattr(e, attr, None) for attr in ("node", "primary", "replica")}  # type: ignore[misc]
        return {name for name, link in d.links.items()
                if link.primary in primaries or link.primary in touched or name in touched}

    def _offsets_observed(self, primary: str, heads: list[Op]) -> bool:
        """Whether what comes next can tell the offsets of ``primary``'s stream apart: a PING (no
        client causes it, it reads no clock) commutes with everything else, so the search places
        one only right before such a step: a command reading or changing replication state on the
        primary or a replica of it, a blocked WAIT there, a harness event touching them."""
        d = self.deployment
        group = {primary, *(link.replica for link in d.replicas_of(d.nodes[primary]))}
        for op in (*heads, *self.blocked.values()):
            if self.client_nodes[op.client] in group and op.argv and op.argv[0].upper() in _READS_OFFSETS:
                return True
        if self.pos < self.n and self.kinds[self.pos] >= _CRASH:
            e = self.trace.events[self.pos]
            return any(getattr(e, attr, None) in group for attr in ("node", "primary", "replica"))
        return False

    def _internal_options(self, heads: list[Op]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """The deployment's steps a decision may take besides :meth:`_advance`'s: applying where a
        blocked client waits and the answer to GETACK first; the cron's steps, the periodic
        acknowledgement and PING last."""
        reading = self._lone_read() if len(heads) == 1 else self._next_lone_read() if not heads else None
        relevant = self._relevant(heads)
        acks_read = self._acks_read(heads)
        d = self.deployment
        view: _DeploymentView = self.server  # type: ignore[assignment]
        eager: list[tuple[str, str]] = []
        lazy: list[tuple[str, str]] = []
        blocked_on = {self.client_nodes[b.client] for b in self.blocked.values()}
        for kind, name in d.steps():
            if kind not in ("connect", "fork", "load", "apply", "ack", "getack"):  # those: _advance, below
                lazy.append((kind, name))
        for name, link in d.links.items():
            primary, replica = d.nodes[link.primary], d.nodes[name]
            if link.phase != "online" or link.held or not primary.up or not replica.up or primary.paused \
                    or replica.paused:
                continue
            observed = (link.primary, name) in self.observed_links
            if name in blocked_on and self._applicable(name) > 0:
                # a replicated command may serve a blocked client, whose window decides when (rule 3)
                eager.append(("apply", name))
            if observed:
                continue  # an observed link acknowledges only where its ack events stand
            if link.getacks and name in relevant:
                eager.append(("getack", name))
            if (link.ack < replica.offset or link.fack < replica.fsynced) and name in acks_read:
                lazy.append(("ack", name))
        now = _event_ms(self.trace.events[self.pos]) if self.pos < self.n else None
        for name, node in d.nodes.items():
            if node.is_replica or not node.up or node.paused or node.backlog is None or now is None \
                    or not self._offsets_observed(name, heads):
                continue
            links = [link for link in d.replicas_of(node) if link.phase != "wait-bgsave"]
            if not links or any((name, link.replica) in self.observed_links for link in links):
                continue
            period = int(setting(node.server, "repl-ping-replica-period")) * 1000
            last = view.last_ping.get(name)
            if last is None or now - last >= period - 1000:  # REPL-13: once a period, at most
                lazy.append(("ping", name))
        quiet = self._quiet_nodes()
        if quiet is not None:  # only the data flow to nodes that later commands read can matter
            eager = [s for s in eager if s[0] in _DATA_STEPS and self._touches(s) & quiet]
            lazy = [s for s in lazy if s[0] in _DATA_STEPS and self._touches(s) & quiet]
        if reading is not None:  # see _lone_read: what commutes with the read is decided after it
            eager = [s for s in eager if self._reads_clock(s) or reading in self._touches(s)]
            lazy = [s for s in lazy if self._reads_clock(s) or reading in self._touches(s)]
        return eager, lazy

    def _reads_clock(self, step: tuple[str, str]) -> bool:
        """Whether an internal step may read the clock, whose readings never decrease along the
        execution (rule 2): then its order against a command's readings matters. Applying and
        loading run commands and serve blocked readers; a handshake may end a FAILOVER, which runs
        the commands its pause held, as may an acknowledgement to a node that fails over."""
        kind, name = step
        if kind in ("ack", "getack"):
            link = self.deployment.links.get(name)
            return link is None or self.deployment.nodes[link.primary].failover is not None
        return kind in _READS_CLOCK

    def _touches(self, step: tuple[str, str]) -> set[str]:
        """The nodes whose state (data, clients, replication record) an internal step changes or
        reads, beyond a replica's own offset (which no read changes)."""
        kind, name = step
        if kind in ("ack", "getack"):  # the primary's record of the replica, and its WAITs
            link = self.deployment.links.get(name)
            return {link.primary} if link is not None else {name}
        if kind == "connect":
            primary = self.deployment.primary_of(self.deployment.nodes[name])
            return {name} if primary is None else {name, primary.name}
        return {name}

    def _internal(self, p: int, step: tuple[str, str]) -> None:
        self.steps += 1
        if self.steps > self.budget:
            raise base._Exhausted()
        self.times_shown = False
        if self.wall:
            self.clock.set_window(-UNBOUNDED, UNBOUNDED, None)  # type: ignore[union-attr]
            self.zone.forget_trail()
        self.path.append((base._STEP_CONNECT, self.pos, f"{step[0]} {step[1]}", len(self.zone.lo)))
        view: _DeploymentView = self.server  # type: ignore[assignment]
        if step[0] == "ping" and self.pos < self.n:
            view.last_ping[step[1]] = _event_ms(self.trace.events[self.pos]) or 0
        try:
            before = self._aof_units(step[1])
            out = self.deployment.step(*step)
            if before is not None or self.deployment.nodes[step[1]].aof is not None:
                self._track_aof(step[1], before, None)  # a replica's applied write: no client waits for it
        except Infeasible as e:
            raise _Failure(p, f"no clock reading fits the time windows: {e}") from None
        if out.served:
            self._served(out.served)

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
            elif name == "master_sync_perc":  # REPL-19: a percentage with two decimals ("-0.00")
                if not _PERCENT.fullmatch(g):
                    return f"{name} is {g!r}, not a percentage"
            elif name in _HOST_FIELDS or name.startswith("master_sync_"):
                if not _INTEGER.fullmatch(g):
                    return f"{name} is {g!r}, not a number"
            elif name.startswith("slave") and name[5:].isdigit():
                # the lag (seconds since the last ack) measures the host; what follows it (Valkey's
                # ``,type=replica``) does not
                gs, ws = g.rsplit(",lag=", 1), w.rsplit(",lag=", 1)
                glag, _, grest = gs[-1].partition(",")
                wlag, _, wrest = ws[-1].partition(",")
                if gs[0] != ws[0] or len(gs) != 2 or len(ws) != 2 or not _INTEGER.fullmatch(glag) or grest != wrest:
                    return f"{name} is {g}, the model has {w}"
            elif g != w:
                return f"{name} is {g}, the model has {w}"
        return None

    def _frozen(self) -> tuple[Any, Any]:
        """The state for pruning, symbolic times included (a deployment's state holds many: delivery
        and seen times on every node): each stored time that is one clock reading plus a constant
        becomes a name for its reading, and the clock's constraints are kept as their projection on
        those readings and the latest one (for difference constraints, the closed form's entries
        between them: each variable's bounds and the largest difference of each pair), which is
        all the future can depend on, since later readings follow the latest one."""
        pos = self.pos
        readers = frozenset(c for c, end in self.woff_until.items() if end >= pos)
        relevant = self._quiet_nodes()
        view: _DeploymentView = self.server  # type: ignore[assignment]
        if relevant is None:
            files = not self.files_quiet_from[min(pos + 1, self.n)] \
                or pos < self.n and self.kinds[pos] in (_CRASH, _RESTART) \
                or any(op.argv and op.argv[0].upper() in _READS_FILES for op in self.live.values())
            state = view.freeze(readers, files=files, loads=self._aof_loads() if files else None)
        else:
            state = view.freeze_quiet(relevant, readers)
        try:
            hash(state)
            return state, self.zone.lo[-1]
        except TypeError:
            pass
        zone = self.zone
        readings: dict[int, int] = {}

        def named(x: Any) -> Any:
            kind = type(x)
            if kind is tuple:
                try:
                    hash(x)
                    return x  # no time inside
                except TypeError:
                    return tuple(named(item) for item in x)
            if kind is list:
                return tuple(named(item) for item in x)
            if kind is RenderedTime:  # a time the stream or the AOF keeps symbolic: the time itself
                x, kind = x.stands_for, Time
            if kind is Time:
                if x.neg or not x.pos:
                    raise TypeError("a difference of readings")  # no exact name: no pruning
                return (_READING, readings.setdefault(x.pos, len(readings)), x.c)
            return x

        abstract = named(state)
        variables = [*readings, len(zone.lo) - 1]
        bounds = tuple((zone.lo[v], zone.hi[v]) for v in variables)
        if zone.edges == 0:
            return abstract, (bounds, _chain_order(zone, variables))
        gaps = tuple(zone.max_diff(a, b) for a in variables for b in variables if a != b)
        return abstract, (bounds, gaps)

    def _aof_loads(self) -> dict[str, Any]:
        """For :meth:`_frozen`: the nodes whose AOF the rest of the trace reads only by reloading it
        at restarts, each with what those reloads may load (in place of the file in the memo's key).

        Nothing reads a node's AOF but its reload (AOF-4) while no command from here on reads or
        writes persistence state (:data:`_READS_FILES`: INFO's sizes, a rewrite, CONFIG...). The
        file is replayed in order, so two files that load to the same state still do with the
        same units appended; which prefix a restart keeps (rule 10) is chosen by its length,
        counted from the longest. So the key holds, for each prefix the next restart may keep
        (under ``always`` the whole file), the state it loads to: :class:`LoadedStates`. While a
        rewrite runs, its end may come first (AOF-7: its base replaces the older files), so the
        key holds the states loaded from that base too. A node with no crash ahead is never
        reloaded: its file does not count at all. A wall trace only (a virtual one runs in file
        order and never branches there).
        """
        p = self.pos
        if not self.wall or self.files_read_from[p] \
                or any(op.argv and op.argv[0].upper() in _READS_FILES for op in self.live.values()):
            return {}
        view: _DeploymentView = self.server  # type: ignore[assignment]
        out: dict[str, Any] = {}
        for name, node in self.deployment.nodes.items():
            aof = node.aof
            if aof is None:
                continue
            if node.up:
                crashes = self.crashes.get(name, [])
                nxt = bisect.bisect_left(crashes, p)
                if nxt == len(crashes):
                    out[name] = _UNREAD
                    continue
                crashed = _event_us(self.trace.events[crashes[nxt]])
            else:
                crashed = view.crashed_at.get(name)
            least = self._aof_least(node, crashed)
            fsync = setting(node.server, "appendfsync")
            files = [aof] if aof.rewriting is None else [aof, AppendOnlyFile(aof.rewriting, aof.units)]
            loads = []
            for file in files:
                preamble, replayed, boundaries = aof_load(file)
                kept = boundaries[-1:] if fsync == "always" else boundaries[least:]  # as _aof_kept chooses
                loaded = self.loaded_states.prefixes(functools.partial(self.deployment._new_server, name), name,
                                                     preamble, replayed, kept)
                if loaded is None:
                    break
                loads.append(loaded)
            else:
                out[name] = tuple(loads)
        return out

    def _quiet_nodes(self) -> set[str] | None:
        """When the rest of the trace is quiet, the nodes whose state it can still tell apart; None
        when it is not quiet.

        Quiet: from here on no harness event, no command that reads or changes replication
        state, persistence or settings (:data:`_LOUD`), none waiting to run or blocked, no
        FAILOVER in progress and no ``min-replicas-to-write``. What is left to observe is then
        only data, through commands on some nodes (and the links carrying data to them): the
        nodes with later commands or commands still to run, and, transitively, their primaries.
        """
        p = self.pos  # the event being decided: a harness event there comes after the decision
        if p < self.n and self.kinds[p] >= _CRASH or not self.quiet_from[min(p + 1, self.n)]:
            return None
        d = self.deployment
        relevant = set(self.future_nodes[min(p + 1, self.n)])
        for op in self.live.values():
            if op.argv and op.argv[0].upper() in _LOUD:
                return None
            relevant.add(self.client_nodes[op.client])
        for node in d.nodes.values():
            if node.failover is not None or setting(node.server, "min-replicas-to-write") != "0":
                return None
        grown = True
        while grown:
            grown = False
            for name in list(relevant):
                node = d.nodes[name]
                link = d.links.get(name)
                feeders = {link.primary} if link is not None else set()
                if node.master is not None:
                    primary = d.primary_of(node)
                    if primary is not None:
                        feeders.add(primary.name)
                for f in feeders - relevant:
                    relevant.add(f)
                    grown = True
        return relevant

    def _time_choice(self, n: int, complete: bool = True) -> int:
        """A choice of the symbolic clock (:meth:`Time.id_ms` picks an exact ms among the first few
        feasible values, the trace's first). On a primary whose every link is observed, an exact
        time the model makes is the one the proxy shows in the stream or the reply shows (an ID):
        the hinted values are all that can succeed, so the values left untried do not matter."""
        return self.choose(n, complete or self.times_shown)

    def _begin(self, op: Op) -> None:
        super()._begin(op)
        if self.wall and op.resp is not None and isinstance(op.expected, Bulk) and op.argv \
                and op.argv[0].upper() == b"XADD":
            self.zone.ids_shown = True  # XADD-11: the reply is the ID the clock's millisecond makes
        d = self.deployment
        node = d.nodes[self.client_nodes[op.client]]
        links = d.replicas_of(node) if not node.is_replica else []
        self.times_shown = bool(links) and all((node.name, link.replica) in self.observed_links for link in links)
        if self.wall and self.observed_links:
            hints = self._stream_hints(self.client_nodes[op.client])
            if hints:  # the times the proxy saw in the stream come first when a time is made exact
                self.zone.expected = Array((op.expected or Array(()), *hints))

    def _stream_hints(self, node: str) -> tuple[Bulk, ...]:
        """Integers of the next commands the proxy saw leave ``node``, as ID-like hints."""
        hints: list[Bulk] = []
        positions = self.stream_positions.get(node, [])
        start = bisect.bisect_left(positions, self.pos)
        for i in positions[start:start + 8]:
            e = self.trace.events[i]
            hints.extend(Bulk(a + b"-0") for a in e.cmd if a.isdigit() and len(a) >= 10)  # type: ignore[union-attr]
        return tuple(hints)

    def _execute(self, op: Op) -> None:
        name = self.client_nodes[op.client]
        before = self._aof_units(name)
        try:
            super()._execute(op)
        except _NodeDown as e:
            raise _Failure(self.pos, f"node {e.node} is not running") from None
        if before is not None or self.deployment.nodes[name].aof is not None:
            acked = None if op.resp is None else _event_us(self.trace.events[op.resp])
            self._track_aof(name, before, acked)
        if not _refused_unread(op.expected):
            self._observed(name)
            for link in self.deployment.replicas_of(self.deployment.nodes[name]):
                if link.child or link.bulk:  # REPL-19: their next step is this node's (its child's end)
                    self._observed(link.replica)


_READING = "\x00reading"
_HEX40 = re.compile(r"[0-9a-f]{40}")
_INTEGER = re.compile(r"-?[0-9]+")
_PERCENT = re.compile(r"-?[0-9]+\.[0-9]{2}")
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


_ON_DISK = -UNBOUNDED
RESTART_STEP_BUDGET = 50_000
"""The search's step budget grows by this much per restart in the trace."""
"""The acknowledgement time given to AOF units a restart found in the file (older than any crash)."""
_READS_ACKS = frozenset({b"WAIT", b"ROLE", b"INFO"})
_QUIET = "\x00quiet"
_LOUD = frozenset({b"WAIT", b"WAITAOF", b"ROLE", b"INFO", b"REPLICAOF", b"SLAVEOF", b"FAILOVER", b"CONFIG",
                   b"DEBUG", b"SYNC", b"PSYNC", b"REPLCONF", b"SAVE", b"BGSAVE", b"BGREWRITEAOF", b"SHUTDOWN",
                   b"CLIENT", b"MONITOR", b"LASTSAVE", b"RESET", b"HELLO"})
"""Commands that read or change replication state, persistence or settings (see _quiet_nodes)."""
_READS_FILES = frozenset({b"DEBUG", b"SAVE", b"BGSAVE", b"BGREWRITEAOF", b"LASTSAVE", b"INFO", b"CONFIG",
                          b"SHUTDOWN", b"WAITAOF"})
"""Commands that read or write what a node's persistence holds (see files_quiet_from)."""
_DATA_STEPS = frozenset({"connect", "fork", "load", "apply"})
"""Internal steps that move data to a replica; the others (acknowledgements, PING, GETACK, the
cron's refresh, fsync and save) change only what _LOUD commands and harness events read."""
_READS_CLOCK = frozenset({"apply", "load", "connect", "failover"})
"""Internal steps that may read the clock (see _MultiSearch._reads_clock)."""
_READS_ACK_RECORD = frozenset({b"WAIT", b"WAITAOF", b"ROLE", b"INFO", b"FAILOVER"})
"""Commands that read a primary's record of its replicas' acknowledgements."""
# WAIT compares acknowledgements with the client's own last write, which a PING after it does not move
_READS_OFFSETS = frozenset({b"ROLE", b"INFO", b"REPLICAOF", b"SLAVEOF", b"FAILOVER", b"EXEC"})


def _chain_order(zone: Any, variables: list[int]) -> tuple[Any, ...]:
    """With no difference edges, what a zone says between ``variables`` besides their bounds: the
    largest difference of a pair is its bounds' unless the implicit chain orders them, so their
    order (by reading) and where the chain breaks between neighbours in that order say it all, in
    O(v log v) rather than one query per pair."""
    order = sorted(range(len(variables)), key=variables.__getitem__)
    ranked = [variables[i] for i in order]
    breaks = tuple(not zone.chained(a, b) for a, b in itertools.pairwise(ranked))
    return tuple(order), breaks


def _refused_unread(reply: Reply | None) -> bool:
    """A reply given before the command read any data: a refused write (REPL-10, REPL-11) or a
    command queued in MULTI. Such a command does not observe what its replica applied."""
    if isinstance(reply, Error):
        return reply.text.startswith(("READONLY ", "NOREPLICAS "))
    return isinstance(reply, Simple) and reply.text == "QUEUED"
PING = [b"ping"]  # shared.ping: 7.0 sends it in lower case


def _event_ms(e: Any) -> int | None:
    """The trace time of an event in ms (the end of a call), None in a virtual trace."""
    t = getattr(e, "t1", None) or getattr(e, "t", None)
    return None if t is None else t // 1000


def _event_us(e: Any) -> int | None:
    """The trace time of an event in µs (the end of a call), None when it has none."""
    t = getattr(e, "t1", None) or getattr(e, "t", None)
    if t is None and getattr(e, "now", None) is not None:
        t = e.now * 1000  # a virtual trace: the node's own time
    return t  # type: ignore[no-any-return]


def _show(argv: list[bytes]) -> str:
    return " ".join(a.describe() if type(a) is RenderedTime else a.decode("latin-1") for a in argv)


MODELLED_DIALECTS = REPLICATION_DIALECTS
"""The dialects whose replication the deployment models (rule 6: other traces are unsupported)."""


def _scope_reason(trace: Trace, dialects: dict[str, Dialect]) -> str | None:
    """Why a trace/2 is outside the model's scope (rule 6), None if it is inside."""
    if len(dialects) > 1 or any(isinstance(e, V2_ONLY) for e in trace.events):
        for name, d in dialects.items():
            if d.name not in MODELLED_DIALECTS:
                return f"node {name} is {d.name}, whose replication the model does not cover yet"
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
    observed = {(e.primary, e.replica) for e in trace.events if isinstance(e, ReplCmd | ReplSync | ReplAck)}

    def search(part: Trace) -> Verdict:
        kinds, at = base._operations(part)
        for i, event in enumerate(part.events):
            k = _HARNESS_KIND.get(type(event))
            if k is not None:
                kinds[i] = k
        return _MultiSearch(part, kinds, at, dialects, observed).run()

    try:
        verdict = search(trace)
    except _Unsupported as why:
        return Verdict("unsupported", n, message=why.reason)
    if verdict.status == "diverge":
        # The search explores every execution (its choices are complete), so none got past the
        # furthest event it reached: only a failure reported at a later reply needs prefixes.
        verdict = base._first_unexplained(trace, None, verdict, search, reached=True)
    if verdict.status == "diverge" and verdict.witness is not None and verdict.witness.divergence is not None:
        div = verdict.witness.divergence
        at_event = trace.events[div.event]
        node = getattr(at_event, "node", None) or trace.client_nodes().get(getattr(at_event, "c", -1))
        if node is not None and not verdict.message.startswith("node "):
            verdict.message = f"node {node}: {verdict.message}"
    return verdict


base.MULTINODE_CHECKERS.append(check_multinode)


def without_repl(trace: Trace) -> Trace:
    """``trace`` as a recorder that sees only the clients and the harness's own actions would have
    written it: every ``repl`` event left out (the format allows it, rule 8), and the header's
    expected event renumbered to the same event in the shorter trace."""
    events: list[Event] = []
    renumbered: dict[int, int] = {}
    for i, e in enumerate(trace.events, 1):
        if not isinstance(e, ReplCmd | ReplSync | ReplAck):
            events.append(e)
            renumbered[i] = len(events)
    header = trace.header
    expect = header.expect
    if expect and isinstance(expect.get("event"), int) and expect["event"] in renumbered:
        header = dataclasses.replace(header, expect={**expect, "event": renumbered[expect["event"]]})
    return Trace(header, events, trace.path)
