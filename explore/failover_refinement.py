"""The failover system checked against models/replication.py (spec/exploration.md, EXPLORE-FAIL-8).

Random walks of the compact system (:class:`~xspec.explore.failover.FailoverSystem`) are run step for step
on a :class:`~xspec.models.replication.Deployment` of real model servers (node ``n0`` the primary, ``n1``
and ``n2`` replicas, connected and in sync after the group's creation): client commands by
``Deployment.execute`` on the serving node, a replica applying by ``Deployment.step("apply", ...)``, a cut
by ``set_link(..., "cut")`` and its repair by the replica's ``connect`` (``PSYNC``), a crash by
``Deployment.crash``, a promotion by ``REPLICAOF NO ONE``. After every step the abstraction of the
deployment (the serving node's and each linked replica's stream and group; each link's commands not yet
applied, from the link or, for a cut link, the primary's backlog) must be the compact state's, and every
client reply must be the one the compact step stands for.

Under ``wait`` the WAIT after each write runs on the model too: ``WAIT 1 100`` blocks after the write, a
mark's application is the replica's ``ack`` step, which must serve it with 1, and a timeout is the
server's timeout of the blocked client, which must answer 0. Under ``coordinated`` the promotion is the
model's ``FAILOVER TO <replica>`` on the primary, followed by the deployment's own steps (the
acknowledgement, ``PSYNC ... FAILOVER``) until the replica serves as a primary (FAILOVER-1 .. FAILOVER-5).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from xspec.explore.failover import ACK, ADD, CLAIM, DEAD, MARK, PRODUCER, FailoverConfig, FailoverSystem, T
from xspec.models.clock import ManualClock
from xspec.models.replication import Deployment, announced
from xspec.models.state import Stream
from xspec.spec.resp import Array, Bulk, Error, Int, NullArray, Simple

CONSUMER_NAMES = (b"c1", b"c2", b"w")
CLIENT_OF = {0: 1, 1: 2, 2: 3, 3: 4, 4: 5}  # process -> client id on every node


@dataclass
class Refinement:
    steps: int = 0
    walks: int = 0
    mismatches: list[str] = field(default_factory=list)
    waits: int = 0  # WAIT replies compared (a timeout's 0, an acknowledgement's 1)
    handovers: int = 0  # FAILOVER commands run to their handover
    inspections: int = 0  # the worker's XPENDING of what it claimed (the poison-pill limit)
    dead_letters: int = 0  # the worker's XADD to the dead-letter stream


def deployment(config: FailoverConfig) -> Deployment:
    """The deployment the compact system's initial state abstracts: group created, replicas in sync."""
    nodes = {f"n{i}": {"addrs": [f"127.0.0.1:{7000 + i}"], "config": {"repl-ping-replica-period": "3600"}}
             for i in range(1 + config.replicas)}
    d = Deployment(nodes, ManualClock(T))
    for i in range(1, 1 + config.replicas):
        d.execute(f"n{i}", 9, [b"REPLICAOF", b"127.0.0.1", b"7000"])
    _settle(d)
    d.execute("n0", 9, [b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"])
    _settle(d)
    return d


def _settle(d: Deployment) -> None:
    for _ in range(1000):
        steps = [s for s in d.steps() if s[0] != "ping"]
        if not steps:
            return
        d.step(*steps[0])


def _entry_id(text: bytes) -> int:
    ms, seq = text.split(b"-")
    assert int(ms) == T
    return int(seq)


def abstract_op(argv: list[bytes]) -> tuple[Any, ...] | None:
    """A command of the replication stream as a link operation of the compact system (None: not one)."""
    head = argv[0].upper()
    if head == b"XADD" and argv[1] == b"dlq":
        return (DEAD, _entry_id(argv[2]))
    if head == b"XADD":
        return (ADD, _entry_id(argv[2]), int(argv[4]))
    if head == b"XCLAIM":
        return (CLAIM, CONSUMER_NAMES.index(argv[3]), _entry_id(argv[5]), int(argv[9]), _entry_id(argv[13]))
    if head == b"XACK":
        return (ACK, _entry_id(argv[3]))
    return None



def apply_one_operation(d: Any, r: int) -> None:
    """Replica ``n{r}`` applies its link's next step, then the steps that are no operation of the compact
    system (SELECT, MULTI, PING, GETACK), so that one compact ``apply`` is one model operation."""
    link = f"n{r}"
    d.step("apply", link)
    while d.links[link].pending and abstract_op(d.links[link].pending[0][1]) is None:
        d.step("apply", link)

def abstract_node(d: Deployment, name: str) -> Any:
    server = d.nodes[name].server
    stream = server.dbs[0].get(b"s")
    if not isinstance(stream, Stream):
        return None
    group = stream.groups.get(b"g")
    entries = []
    for i, (entry, fields) in enumerate(stream.entries.items()):
        assert entry.ms == T and entry.seq == i, entry
        entries.append(int(fields[1]))
    pel = tuple((i.seq, CONSUMER_NAMES.index(n.consumer.name), n.delivery_count) for i, n in group.pel.items())
    cons = 0
    for cname in group.consumers:
        cons |= 1 << CONSUMER_NAMES.index(cname)
    ld = group.last_id.seq if group.last_id.ms == T else -1
    dead = 0
    letters = server.dbs[0].get(b"dlq")
    if isinstance(letters, Stream):
        for entry in letters.entries:
            assert entry.ms == T, entry
            dead |= 1 << entry.seq
    return (tuple(entries), ld, pel, cons, dead)


def abstract(d: Deployment, s: Any, cut: dict[int, bool]) -> Any:
    """The parts of a compact state the deployment decides: per node its data, per link its queued operations."""
    nodes, serving, up, links, *_ = s
    out_nodes: list[Any] = []
    out_links: list[Any] = []
    primary = d.nodes[f"n{serving}"]
    for i, node in enumerate(nodes):
        out_nodes.append(None if node is None or (i == serving and not up) else abstract_node(d, f"n{i}"))
        if links[i] is None:
            out_links.append(None)
            continue
        replica = d.nodes[f"n{i}"]
        link = d.links.get(f"n{i}")
        if not up:
            pending = []  # the primary is gone: nothing more reaches the replica
        elif link is not None:
            pending = [argv for _, argv in link.pending]
        else:  # cut: the primary's backlog holds what the replica will ask for
            assert primary.backlog is not None
            pending = [argv for _, argv in primary.backlog.since(replica.offset)]
        ops = tuple(op for op in map(abstract_op, pending) if op is not None)
        out_links.append((ops, link is None))
    return tuple(out_nodes), tuple(out_links)


def expected(s: Any) -> Any:
    nodes, serving, up, links, *_ = s
    return (tuple(None if node is None or (i == serving and not up) else node for i, node in enumerate(nodes)),
            tuple(None if link is None else (tuple(op for op in link[0] if op[0] in (ADD, CLAIM, ACK, DEAD)), link[1])
                  for link in links))


def _reply_matches(system: FailoverSystem, before: Any, after: Any, argv: tuple[bytes, ...], reply: Any) -> str:
    """'' when the model's ``reply`` is what the compact step from ``before`` to ``after`` stands for."""
    nodes, serving, *_ = before
    entries, ld, pel, cons, dead = nodes[serving]
    head = argv[0]

    def entry(seq: int) -> Any:
        return Array((Bulk(b"%d-%d" % (T, seq)), Array((Bulk(b"p"), Bulk(b"%d" % entries[seq])))))

    if head == b"XADD" and argv[1] == b"dlq":  # the ID named, or XADD-15's error
        if dead >> _entry_id(argv[2]):
            return "" if isinstance(reply, Error) else f"XADD dlq: model {reply!r}, compact an error"
        want: Any = Bulk(argv[2])
    elif head == b"XADD":
        want = Bulk(b"%d-%d" % (T, len(entries)))
    elif head == b"XREADGROUP" and argv[-1] == b">":
        want = NullArray() if ld + 1 >= len(entries) else Array((Array((Bulk(b"s"), Array((entry(ld + 1),)))),))
    elif head == b"XREADGROUP":
        i = CONSUMER_NAMES.index(argv[3])
        own = [x[0] for x in pel if x[1] == i]
        want = Array((Array((Bulk(b"s"), Array((entry(own[0]),) if own else ()))),))
    elif head == b"XACK":
        want = Int(int(any(x[0] == _entry_id(argv[3]) for x in pel)))
    elif head == b"XAUTOCLAIM":
        want = Array((Bulk(b"0-0" if len(pel) < 2 else b"%d-%d" % (T, pel[1][0])),
                      Array((entry(pel[0][0]),) if pel else ()), Array(())))
    elif head == b"XPENDING":  # the monitor's (- +) or the worker's (one ID)
        low = 0 if argv[3] == b"-" else _entry_id(argv[3])
        high = 1 << 30 if argv[4] == b"+" else _entry_id(argv[4])
        want = Array(tuple(Array((Bulk(b"%d-%d" % (T, seq)), Bulk(CONSUMER_NAMES[o]), Int(0), Int(c)))
                           for seq, o, c in pel if low <= seq <= high))
    elif head == b"XINFO":
        got = tuple(item.items[1].value for item in reply.items)
        names = tuple(CONSUMER_NAMES[b] for b in range(3) if cons >> b & 1)
        return "" if got == names else f"XINFO CONSUMERS: model {got}, compact {names}"
    else:
        return ""
    return "" if reply == want else f"reply: model {reply!r}, compact {want!r}"


def _waits(state: Any, proc: int) -> bool:
    """The process waits for its write's WAIT in ``state`` (the ``wait`` regime's producer and consumers)."""
    local = state[5]
    return proc < len(local) and bool(local[proc][1])


def _failover_command(d: Deployment, primary: str, target: str) -> str:
    """``FAILOVER TO <target>`` on the primary (FAILOVER-1 .. FAILOVER-5), then the deployment's own steps
    until the target serves as a primary: '' or what went wrong."""
    host, port = announced(d.nodes[target])
    reply = d.execute(primary, 9, [b"FAILOVER", b"TO", host.encode(), b"%d" % port]).reply
    if reply != Simple("OK"):
        return f"FAILOVER replied {reply!r}"
    for _ in range(200):
        if d.nodes[target].master is None and d.nodes[primary].failover is None:
            return ""
        steps = [x for x in d.steps() if x[0] in ("apply", "ack", "getack", "connect", "failover", "fork", "load")]
        if not steps:
            break
        d.step(*steps[0])
    return f"FAILOVER TO {target} did not hand over: {d.steps()}"


def random_walks(config: FailoverConfig, walks: int, length: int, seed: int = 0,
                 favour_worker: bool = False) -> Refinement:
    """See the module docstring. With ``favour_worker``, half the time the worker's step is taken when it
    claims something or holds something (so that walks reach its poison-pill branch)."""
    system = FailoverSystem(config, symmetry=False)
    rng = random.Random(seed)
    out = Refinement()
    for w in range(walks):
        d = deployment(config)
        s = system.initial()
        cut: dict[int, bool] = {}
        out.walks += 1
        for n in range(length):
            choices = system.expand(s)
            if not choices:
                break
            sid, nxt = rng.choice(choices)
            if favour_worker and system.has_worker and rng.random() < 0.5:
                w = 1 + system.consumers
                mine = [c for c in choices if system.steps[c[0]].proc == w
                        and (s[5][w][0] is not None or c[1][5][w][0] is not None)]
                if mine:
                    sid, nxt = rng.choice(mine)
            step = system.steps[sid]
            where = f"walk {w} step {n}: {step.describe(system.process_names)}"
            serving = f"n{s[1]}"
            if step.kind == "command":
                client = CLIENT_OF[step.proc]
                if step.argv[0] == b"WAIT":  # the WAIT sent after the write times out (WAIT-4)
                    timed_out = d.nodes[serving].server.timeout(client)
                    out.waits += 1
                    if timed_out != Int(0):
                        out.mismatches.append(f"{where}: WAIT timed out with {timed_out!r}, compact 0")
                    s = nxt
                    continue
                reply = d.execute(serving, client, list(step.argv)).reply
                out.inspections += step.argv[0] == b"XPENDING" and step.argv[3] != b"-"
                out.dead_letters += step.argv[:2] == (b"XADD", b"dlq")
                problem = _reply_matches(system, s, nxt, step.argv, reply)
                if problem:
                    out.mismatches.append(f"{where}: {problem}")
                if _waits(nxt, step.proc):  # WAIT 1 follows the write: blocked until a replica acknowledges
                    waited = d.execute(serving, client, [b"WAIT", b"1", b"100"])
                    if waited.reply is not None:
                        out.mismatches.append(f"{where}: WAIT 1 answered {waited.reply!r} at once")
            elif step.kind == "apply":
                r = int(step.argv[0])
                head = s[3][r][0][0]
                if head[0] in (ADD, CLAIM, ACK, DEAD):
                    apply_one_operation(d, r)
                elif head[0] == MARK:  # the replica's REPLCONF ACK reaches the primary: the WAIT answers 1
                    who = CLIENT_OF[0 if head[1] == PRODUCER else head[1]]
                    served = dict(d.step("ack", f"n{r}").served)
                    out.waits += 1
                    if served.get(who) != Int(1):
                        out.mismatches.append(f"{where}: the acknowledgement served {served}, compact WAIT -> 1")
            elif step.kind == "cut":
                r = int(step.argv[0])
                d.set_link(serving, f"n{r}", "cut")
                cut[r] = True
            elif step.kind == "repair":
                r = int(step.argv[0])
                d.step("connect", f"n{r}")
                cut[r] = False
            elif step.kind == "crash":
                d.crash(serving)
            elif step.kind == "failover":
                r = int(step.argv[0])
                if config.regime == "coordinated":
                    problem = _failover_command(d, serving, f"n{r}")
                    if problem:
                        out.mismatches.append(f"{where}: {problem}")
                        break
                    out.handovers += 1
                else:
                    d.execute(f"n{r}", 9, [b"REPLICAOF", b"NO", b"ONE"])
                for other in list(d.nodes):  # the rest leaves the deployment
                    if other != f"n{r}" and d.nodes[other].up:
                        d.crash(other)
            out.steps += 1
            s = nxt
            got, want = abstract(d, s, cut), expected(s)
            if got != want:
                out.mismatches.append(f"{where}: state: model {got}, compact {want}")
                break
    return out
