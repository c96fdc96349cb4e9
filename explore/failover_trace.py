"""A failover counterexample as a model-only trace/2 (spec/exploration.md, EXPLORE-FAIL-10).

The path's steps run on a :class:`~xspec.models.replication.Deployment` of model servers, as the refinement
test runs them (explore/failover_refinement.py), and what clients saw is written as a ``virtual`` trace/2:
nodes ``n0`` (the primary) .. ``n2``, each client command a ``call`` with ``now`` (the standing clock ``T``)
and the model's reply, a ``WAIT`` that blocks a ``send`` and its ``recv`` (served by the replica's
acknowledgement, or timed out 100 ms later), a cut a ``link`` event, a crash a ``crash`` event, a promotion
the ``REPLICAOF NO ONE`` (or ``FAILOVER TO``) call, and a ``note`` naming each step. The replication stream
is left out (trace format, rule 8: ``repl`` events are optional), so the checker finds where each replica
applied; ``xspec replay`` judges the file ``conform`` and ``xspec explain`` renders it.
"""

from __future__ import annotations

from typing import Any

from xspec.explore.failover import ACK, ADD, CLAIM, DEAD, MARK, PRODUCER, FailoverSystem, T
from xspec.explore.failover_refinement import CLIENT_OF, apply_one_operation, deployment
from xspec.models.replication import Deployment, announced
from xspec.spec.resp import Int, Reply, Simple
from xspec.spec.trace_format import Call, Crash, Event, Header, Link, NodeSpec, Note, Recv, Send, Trace

SETUP_CLIENT = 9  # the deployment's client for REPLICAOF and the group's creation
PROBE_CLIENT = 8  # reads the serving node's stream after each step
TIMEOUT_MS = 100  # the WAIT after each write (EXPLORE-FAIL-3)


class ModelTraceError(RuntimeError):
    """The path did not run on the model as the compact system says (a refinement failure)."""


class _Writer:
    """Events of one trace, with a connection number per (process, node)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.clock = T * 1000  # microseconds: the standing clock's millisecond, then 10 µs an event
        self.conns: dict[tuple[int, str], int] = {}
        self.opened = 0

    def conn(self, client: int, node: str) -> int:
        key = (client, node)
        if key not in self.conns:
            self.opened += 1
            self.conns[key] = self.opened
        return self.conns[key]

    def tick(self, us: int = 10) -> int:
        self.clock += us
        return self.clock

    def call(self, client: int, node: str, argv: list[bytes], reply: Reply) -> None:
        t0 = self.tick()
        self.events.append(Call(self.conn(client, node), list(argv), reply, t0=t0, t1=self.tick(), node=node))

    def crash(self, node: str) -> None:
        self.events.append(Crash(node, t=self.tick()))
        for key in [k for k in self.conns if k[1] == node]:
            del self.conns[key]  # a connection is not used after its node crashed


def model_trace(system: FailoverSystem, steps: list[tuple[int, Any]], title: str = "") -> Trace:
    """The counterexample ``steps`` (from the initial state, as :func:`check_failover` reports them) run on
    the model and written as a virtual trace/2."""
    config = system.config
    names = [f"n{i}" for i in range(1 + config.replicas)]
    nodes = {n: NodeSpec(addrs=[f"127.0.0.1:{7000 + i}"],
                         config={"save": "", "appendonly": "no", "repl-ping-replica-period": "3600"})
             for i, n in enumerate(names)}
    w = _Writer()
    d = _setup(config, w, names)
    s = system.initial()
    waiting: dict[int, int] = {}  # client -> the connection its WAIT was sent on
    for n, (sid, nxt) in enumerate(steps, 1):
        step = system.steps[sid]
        w.events.append(Note(f"step {n}: {step.describe(system.process_names)}"))
        serving = f"n{s[1]}"
        _run(system, d, w, s, step, nxt, serving, waiting)
        s = nxt
        if s[2] and n == len(steps):  # the probe after the last step, as a reproduction reads it (EXPLORE-REPRO-3)
            probe = [b"XRANGE", b"s", b"-", b"+"]
            reply = d.execute(f"n{s[1]}", PROBE_CLIENT, probe).reply
            assert reply is not None
            w.call(PROBE_CLIENT, f"n{s[1]}", probe, reply)
    regime = config.regime
    tags = ["replication", "failover-command" if regime == "coordinated" else "failover", "explore"] + \
        (["wait"] if regime == "wait" else [])
    header = Header(clock="wall", nodes=nodes, source="written", tags=tags,
                    title=title or f"{config.name} (xspec explore counterexample, run on the model)")
    return Trace(header, w.events)


def _setup(config: Any, w: _Writer, names: list[str]) -> Deployment:
    """The refinement's deployment, its setup commands written as calls."""
    d = deployment(config)
    for name in names[1:]:
        w.call(SETUP_CLIENT, name, [b"REPLICAOF", b"127.0.0.1", b"7000"], Simple("OK"))
    w.call(SETUP_CLIENT, "n0", [b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"], Simple("OK"))
    return d


def _run(system: FailoverSystem, d: Deployment, w: _Writer, s: Any, step: Any, nxt: Any, serving: str,
         waiting: dict[int, int]) -> None:
    if step.kind == "command":
        client = CLIENT_OF[step.proc]
        if step.argv[0] == b"WAIT":  # the WAIT sent after the write times out
            timed_out = d.nodes[serving].server.timeout(client)
            if timed_out != Int(0):
                raise ModelTraceError(f"WAIT timed out with {timed_out!r}")
            w.events.append(Recv(waiting.pop(client), Int(0), t=w.tick(TIMEOUT_MS * 1000)))
            return
        reply = d.execute(serving, client, list(step.argv)).reply
        assert reply is not None
        w.call(client, serving, list(step.argv), reply)
        local = nxt[5]
        if step.proc < len(local) and local[step.proc][1]:  # WAIT 1 follows the write, blocked for now
            argv = [b"WAIT", b"1", b"%d" % TIMEOUT_MS]
            if d.execute(serving, client, argv).reply is not None:
                raise ModelTraceError("WAIT 1 answered at once")
            c = w.conn(client, serving)
            w.events.append(Send(c, argv, t=w.tick(), node=serving))
            waiting[client] = c
    elif step.kind == "apply":
        r = int(step.argv[0])
        head = s[3][r][0][0]
        if head[0] in (ADD, CLAIM, ACK, DEAD):
            apply_one_operation(d, r)
        elif head[0] == MARK:
            client = CLIENT_OF[0 if head[1] == PRODUCER else head[1]]
            served = dict(d.step("ack", f"n{r}").served)
            if served.get(client) != Int(1):
                raise ModelTraceError(f"the acknowledgement served {served}")
            w.events.append(Recv(waiting.pop(client), Int(1), t=w.tick()))
    elif step.kind == "cut":
        r = int(step.argv[0])
        d.set_link(serving, f"n{r}", "cut")
        w.events.append(Link(serving, f"n{r}", "cut", t=w.tick()))
    elif step.kind == "repair":
        d.step("connect", f"n{int(step.argv[0])}")  # the replica reconnects by itself (trace format: `link`)
    elif step.kind == "crash":
        d.crash(serving)
        w.crash(serving)
        waiting.clear()
    elif step.kind == "failover":
        _failover(system, d, w, serving, f"n{int(step.argv[0])}")
        waiting.clear()
    else:
        raise ModelTraceError(f"no way to run {step.describe(system.process_names)} on the model")


def _failover(system: FailoverSystem, d: Deployment, w: _Writer, serving: str, target: str) -> None:
    if system.config.regime == "coordinated":
        host, port = announced(d.nodes[target])
        argv = [b"FAILOVER", b"TO", host.encode(), b"%d" % port]
        reply = d.execute(serving, SETUP_CLIENT, argv).reply
        if reply != Simple("OK"):
            raise ModelTraceError(f"FAILOVER replied {reply!r}")
        w.call(SETUP_CLIENT, serving, argv, Simple("OK"))
        for _ in range(200):
            if d.nodes[target].master is None and d.nodes[serving].failover is None:
                break
            due = [x for x in d.steps() if x[0] in ("apply", "ack", "getack", "connect", "failover", "fork", "load")]
            if not due:
                raise ModelTraceError(f"FAILOVER TO {target} did not hand over")
            d.step(*due[0])
    else:
        argv = [b"REPLICAOF", b"NO", b"ONE"]
        reply = d.execute(target, SETUP_CLIENT, argv).reply
        assert reply is not None
        w.call(SETUP_CLIENT, target, argv, reply)
    for other in list(d.nodes):  # the rest leaves the deployment (one failover per run)
        if other != target and d.nodes[other].up:
            d.crash(other)
            w.crash(other)
