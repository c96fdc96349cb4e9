"""Delivery guarantees across crashes, link cuts and failovers: a compact system of a primary and replicas
(spec/exploration.md, EXPLORE-FAIL-1 .. EXPLORE-FAIL-8).

The semantics are those of models/replication.py (Redis 7.0: what each command propagates, what a replica
applies, what a promotion keeps), restricted to one stream ``s`` with one group ``g`` (created and
replicated before the walk) and written as a compact transition system over tuples:

* a *node* is ``(entries, ld, pel, cons, dead)``: the payloads of entries ``T-0``, ``T-1`` ... in ID order
  (the clock stands still at ``T``, so ``XADD s *`` gives ``T-<n>`` for the n-th entry a node ever added),
  the group's last-delivered-id (an entry number, -1 for ``0-0``), its PEL as ``(entry, owner, count)``,
  its consumers as bits, and the dead-letter stream ``dlq`` as the bits of the entry numbers it holds;
* a *link* from the serving primary to each replica is ``(queue, cut)``: what the primary propagated and
  the replica has not applied (:data:`ADD`, :data:`CLAIM`, :data:`ACK`, :data:`DEAD` operations, and WAIT marks), and
  whether it is cut (nothing flows; the replica's ``PSYNC`` continues from the backlog when it is back,
  so a cut loses nothing);
* processes: a producer of ``entries`` messages, two consumers (``>`` reads, one history read each, XACK),
  optionally a recovery worker (XAUTOCLAIM ... 0 0-0 COUNT 1, at most ``worker_claims`` times; with a
  poison-pill limit it asks XPENDING for the entry's delivery count and, above the limit, moves the entry to
  the dead-letter stream ``dlq`` before its XACK, as explore/protocols.py's ``RecoveryWorker``), a monitor
  (XPENDING, XINFO CONSUMERS), and the environment (one crash of the primary, one link cut and its
  repair, one failover);
* ghosts record what clients observed, so that the seven properties are checked on each state.

Three regimes (EXPLORE-FAIL-3): ``async`` (asynchronous replication, a replica promoted with ``REPLICAOF NO
ONE`` once the primary is down or cut off from it), ``wait`` (every write followed by ``WAIT 1``; it counts
as acknowledged once a replica applied it; only a replica that applied every acknowledged write may be
promoted), and ``coordinated`` (the ``FAILOVER`` command: the primary is up and the replica caught up).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from xspec.explore.engine import Step

PROPERTIES = ("acked-add-durable", "acked-never-redelivered", "single-owner", "last-delivered-monotone",
              "delivery-count-monotone", "no-id-reuse", "consumer-persists")
"""The properties' names, exactly as issue 17 gives them (and as ``xspec explore`` prints them)."""
FLAG = {name: 1 << i for i, name in enumerate(PROPERTIES)}
MESSAGES = {
    "acked-add-durable": "an entry whose XADD was acknowledged is not on the primary that serves reads",
    "acked-never-redelivered": "an entry acknowledged by an XACK that replied 1 was delivered again",
    "single-owner": "two consumers received one entry from '>' reads",
    "last-delivered-monotone": "a '>' read showed a last-delivered-id not above one a client saw before",
    "delivery-count-monotone": "XPENDING showed a lower delivery count than before for an entry",
    "no-id-reuse": "XADD gave an ID that an earlier XADD had given to another entry",
    "consumer-persists": "a consumer XINFO CONSUMERS showed before is gone",
}

REGIMES = ("async", "wait", "coordinated")

# The ghost record each property reads (the index into the ghost; acked-add-durable is judged on each state
# from the acknowledged adds, and its record is kept).
_RECORD_OF = {"no-id-reuse": 0, "acked-never-redelivered": 2, "single-owner": 3, "last-delivered-monotone": 4,
              "delivery-count-monotone": 5, "consumer-persists": 6}
_FORGETS = sum(FLAG[name] for name in _RECORD_OF)

# Link operations: what a primary propagates (models/replication.py feeds its replicas these commands).
ADD, CLAIM, ACK, MARK, DONE, DEAD = 0, 1, 2, 3, 4, 5
PRODUCER, WORKER = -1, -2  # client ids of marks besides consumers 0, 1
DLQ_BIT = 8  # acknowledged adds: payload bits below, dead-letter entries (by entry number) from this bit on
HOLD, INSPECT, DEAD_LETTER = 0, 1, 2  # the worker's next step with what it holds: XACK, XPENDING, XADD dlq

T = 1700000000000  # the standing clock's ms: every ID is T-<n>


@dataclass(frozen=True)
class FailoverConfig:
    """A replication configuration (EXPLORE-FAIL-2)."""

    name: str
    regime: str = "async"
    replicas: int = 1
    entries: int = 2
    worker_claims: int = 0  # 0: no recovery worker
    poison_limit: int | None = None  # the worker dead-letters an entry delivered more often (None: no limit)
    history_reads: int = 1  # history reads per consumer
    crashes: int = 1
    failovers: int = 1
    cuts: int = 1
    monitor: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"regime is one of {', '.join(REGIMES)}")
        if not 1 <= self.replicas <= 2 or not 1 <= self.entries <= 3:
            raise ValueError("1 or 2 replicas, 1 to 3 entries")


def _configs() -> dict[str, FailoverConfig]:
    out: dict[str, FailoverConfig] = {}
    for regime in REGIMES:
        for base in (
            FailoverConfig("1r", regime=regime, description="primary + 1 replica, 2 consumers, producer of 2 "
                                                            "entries, <= 1 crash, 1 failover, 1 link cut"),
            FailoverConfig("2r", regime=regime, replicas=2, history_reads=0,
                           description="the same with two replicas (consumers read no history)"),
            FailoverConfig("worker", regime=regime, worker_claims=1, poison_limit=1, history_reads=0,
                           description="primary + 1 replica, 2 consumers (no history reads) and a recovery "
                                       "worker (one XAUTOCLAIM; poison-pill limit: dead-letters an entry "
                                       "delivered more than once)"),
            FailoverConfig("1r-no-history", regime=regime, history_reads=0,
                           description="primary + 1 replica; consumers never read their history"),
            FailoverConfig("1r-no-failover", regime=regime, failovers=0,
                           description="primary + 1 replica, crashes and cuts but no failover"),
        ):
            c = replace(base, name=f"{regime}-{base.name}")
            out[c.name] = c
    return out


NAMED: dict[str, FailoverConfig] = _configs()

Node = tuple[tuple[int, ...], int, tuple[tuple[int, int, int], ...], int, int]
EMPTY_NODE: Node = ((), -1, (), 0, 0)


_SWAP = (1, 0, 2)  # consumers 0 and 1 trade places; the worker (2) stays


def _swap_bits(b: int) -> int:
    return (b & ~3) | (b & 1) << 1 | (b & 2) >> 1


def _swap_node(n: Node) -> Node:
    entries, ld, pel, cons, dead = n
    return (entries, ld, tuple((seq, _SWAP[o], c) for seq, o, c in pel), _swap_bits(cons), dead)


def _swap_op(o: tuple[Any, ...]) -> tuple[Any, ...]:
    if o[0] == CLAIM:
        return (CLAIM, _SWAP[o[1]], o[2], o[3], o[4])
    if o[0] == MARK and o[1] in (1, 2):
        return (MARK, 3 - o[1], o[2])
    return o


class FailoverSystem:
    """The compact system of a :class:`FailoverConfig` (see the module docstring).

    A state is ``(nodes, serving, links, budget, locals, ghost)``:

    * ``nodes``: one :data:`Node` per server, None once it left the deployment (a crashed or demoted
      primary after a failover, the replica not promoted);
    * ``serving``: the node clients talk to; ``up``: whether it runs;
    * ``links``: per node, ``(queue, cut)`` when it replicates from the serving node, else None;
    * ``budget``: (crashes, failovers, cuts) left;
    * ``locals``: producer ``(next message, waiting)``, each consumer ``(held, waiting, history reads
      left)``, the worker ``(held, waiting, claims left, next)`` (``next``: :data:`HOLD`, :data:`INSPECT` or
      :data:`DEAD_LETTER`); ``held`` is ``(entry, payload)`` or None;
    * ``ghost``: (IDs given: payload per entry number, acknowledged adds (payload bits; dead-letter entries
      from :data:`DLQ_BIT` on), acknowledged
      entries (payload bits), first ``>`` reader per payload, highest last-delivered-id seen, highest
      delivery count seen per payload, consumers seen (bits), violated properties (bits)).
    """

    def __init__(self, config: FailoverConfig, *, symmetry: bool = True, forget: bool = True) -> None:
        self.config = config
        self.symmetry = symmetry
        self.forget = forget  # forget the ghost records of violated properties (:meth:`normal`)
        self.consumers = 2
        self.has_worker = config.worker_claims > 0
        names = ["producer", "c1", "c2"] + (["w"] if self.has_worker else []) + ["monitor", "env"]
        self.process_names = tuple(names)
        self.steps: list[Step] = []
        self._step_ids: dict[tuple[Any, ...], int] = {}
        self._sids: dict[Any, int] = {}  # a short key per step, so that a step's argv is built once
        self._blank = ((), 0, 0, (0,) * (config.entries + 1), -1, (0,) * (config.entries + 1), 0, 0)  # the ghost at first

    # -- states ----------------------------------------------------------------------------------
    def initial(self) -> tuple[Any, ...]:
        n = 1 + self.config.replicas
        nodes = (EMPTY_NODE,) * n
        links = (None,) + (((), False),) * self.config.replicas
        c = self.config
        local: tuple[Any, ...] = ((1, 0),) + ((None, 0, c.history_reads),) * self.consumers
        if self.has_worker:
            local += ((None, 0, c.worker_claims, HOLD),)
        return (nodes, 0, True, links, (c.crashes, c.failovers, c.cuts), local, self._blank)

    # -- symmetry (EXPLORE-FAIL-6) -------------------------------------------------------------------
    def canonical(self, s: Any) -> tuple[Any, None]:
        """The representative of ``s``'s orbit under swapping the two consumers and the two replicas (the
        serving node follows). Signatures decide first: the consumers are put in the order of their local
        states, the replicas in that of their data and links (each signature is unchanged by the other
        swap, so the order is a property of the orbit); among the relabellings a tie leaves, the one with the
        smallest fingerprint. No permutation is returned: paths are made concrete by replaying
        (:func:`~xspec.explore.fastwalk.replay_path`)."""
        return self._canonical(s, None)[0], None

    def canonical_keyed(self, s: Any, key: int) -> tuple[Any, int]:
        """``canonical(s)[0]`` and its fingerprint (its hash), given ``key``, the hash of ``s``: each
        candidate of the orbit is hashed once (:func:`~xspec.explore.fastwalk.walk` uses this)."""
        c, h = self._canonical(s, key)
        return c, hash(c) if h is None else h

    def _canonical(self, s: Any, key: int | None) -> tuple[Any, int | None]:
        """The representative and its hash where one is known (``key`` is that of ``s``, or None)."""
        n = self.normal(s)
        if n is not s:
            s, key = n, None
        if not self.symmetry:
            return s, key
        local, ghost = s[5], s[6]
        first, second = self._consumer_signature(local[1], ghost[6] & 1), \
            self._consumer_signature(local[2], ghost[6] >> 1 & 1)
        consumer_swaps = (False,) if first < second else (True,) if first > second else (False, True)
        replica_swaps: tuple[bool, ...] = (False,)
        if self.config.replicas == 2:
            one, two = self._replica_signature(s, 1), self._replica_signature(s, 2)
            replica_swaps = (False,) if one < two else (True,) if one > two else (False, True)
        if len(consumer_swaps) == 1 and len(replica_swaps) == 1:
            if consumer_swaps[0]:
                s, key = self._swap_consumers(s), None
            if replica_swaps[0]:
                s, key = self._swap_replicas(s), None
            return s, key
        best = None
        h = 0
        for by_replica in replica_swaps:
            base = self._swap_replicas(s) if by_replica else s
            for by_consumer in consumer_swaps:
                other = self._swap_consumers(base) if by_consumer else base
                g = key if other is s and key is not None else hash(other)
                if best is None or g < h or (g == h and repr(other) < repr(best)):
                    best, h = other, g
        return best, h

    def normal(self, s: Any) -> Any:
        """``s`` with the ghost records of the properties it has already violated forgotten (EXPLORE-FAIL-7):
        nothing reads them any more, so states differing only there behave alike for every property's
        verdict and shortest counterexample."""
        ghost = s[6]
        flags = ghost[7]
        if not flags & _FORGETS or not self.forget:
            return s
        g = list(ghost)
        for name, at in _RECORD_OF.items():
            if flags & FLAG[name]:
                g[at] = self._blank[at]
        forgotten = tuple(g)
        return s if forgotten == ghost else s[:6] + (forgotten,)

    @staticmethod
    def _consumer_signature(mine: tuple[Any, ...], seen: int) -> tuple[int, ...]:
        held = mine[0]
        return (-1, -1, mine[1], mine[2], seen) if held is None else (held[0], held[1], mine[1], mine[2], seen)

    @staticmethod
    def _replica_signature(s: Any, r: int) -> tuple[Any, ...]:
        node, link = s[0][r], s[3][r]
        data: tuple[Any, ...] = (0,) if node is None else (1, node[0], node[1], len(node[2]), node[4])
        queue: tuple[Any, ...] = (0,) if link is None else (1, len(link[0]), link[1])
        return data + queue + (int(s[1] == r),)

    canonical_fast = canonical

    def _relabellings(self, s: Any) -> list[Any]:
        out = [self._swap_consumers(s)]
        if self.config.replicas == 2:
            r = self._swap_replicas(s)
            out += [r, self._swap_consumers(r)]
        return out

    @staticmethod
    def _swap_replicas(s: Any) -> Any:
        nodes, serving, up, links, budget, local, ghost = s
        return ((nodes[0], nodes[2], nodes[1]), (0, 2, 1)[serving], up, (links[0], links[2], links[1]), budget,
                local, ghost)

    @staticmethod
    def _swap_consumers(s: Any) -> Any:
        nodes, serving, up, links, budget, local, ghost = s
        return (tuple(None if n is None else _swap_node(n) for n in nodes), serving, up,
                tuple(None if link is None else (tuple(_swap_op(o) for o in link[0]), link[1]) for link in links),
                budget, (local[0], local[2], local[1]) + local[3:],
                ghost[:3] + (tuple((0, 2, 1, 3)[o] for o in ghost[3]),) + ghost[4:6] + (_swap_bits(ghost[6]), ghost[7]))

    def violations(self, s: Any) -> Iterator[str]:
        return iter(())

    def safety(self, s: Any) -> Iterator[tuple[str, str]]:
        nodes, serving, up, links, budget, local, ghost = s
        flags = ghost[7]
        if up and not flags & FLAG["acked-add-durable"]:
            present = nodes[serving][4] << DLQ_BIT
            for payload in nodes[serving][0]:
                present |= 1 << payload
            if ghost[1] & ~present:  # an acknowledged XADD's entry is not on the primary that serves reads
                flags |= FLAG["acked-add-durable"]
        for name in PROPERTIES:
            if flags & FLAG[name]:
                yield name, MESSAGES[name]

    # -- steps -------------------------------------------------------------------------------------
    def step_id(self, who: int, kind: str, argv: tuple[bytes, ...], text: str = "") -> int:
        key = (who, kind, argv, text)
        found = self._step_ids.get(key)
        if found is None:
            found = self._step_ids[key] = len(self.steps)
            self.steps.append(Step(who, kind, argv, text))
        return found

    def _known(self, key: Any, who: int, kind: str, argv: tuple[bytes, ...], text: str = "") -> int:
        sid = self._sids[key] = self.step_id(who, kind, argv, text)
        return sid

    def expand(self, s: Any) -> list[tuple[int, Any]]:
        out: list[tuple[int, Any]] = []
        nodes, serving, up, links, budget, local, ghost = s
        c = self.config
        flags_before = ghost[7]
        if flags_before == (1 << len(PROPERTIES)) - 1:
            return out
        primary = nodes[serving] if up else None
        # the producer
        k, waiting = local[0]
        if primary is not None and not waiting and k <= c.entries:
            out.append(self._xadd(s, k))
        if waiting and c.regime == "wait":
            out.append(self._wait_timeout(s, 0))
        # consumers
        for i in range(self.consumers):
            held, waiting, history = local[1 + i]
            who = 1 + i
            if waiting:
                out.append(self._wait_timeout(s, who))
                continue
            if primary is None:
                continue
            if held is None:
                out.append(self._read(s, i))
            else:
                out.append(self._xack(s, who, held))
            if history:
                out.append(self._history(s, i))
        if self.has_worker:
            who = 1 + self.consumers
            held, waiting, claims, then = local[who]
            if waiting:
                out.append(self._wait_timeout(s, who))
            elif primary is not None:
                if held is None and claims:
                    out.append(self._autoclaim(s))
                elif held is not None and then == INSPECT:
                    out.append(self._inspect(s, held))
                elif held is not None and then == DEAD_LETTER:
                    out.append(self._dead_letter(s, held))
                elif held is not None:
                    out.append(self._xack(s, who, held))
        if primary is not None and c.monitor:
            out.append(self._xpending(s))
            out.append(self._xinfo(s))
        # replication and faults
        for r, link in enumerate(links):
            if link is None:
                continue
            queue, cut = link
            if queue and not cut:
                out.append(self._apply(s, r))
            if cut and up:
                out.append(self._repair(s, r))
            elif budget[2] and up:
                out.append(self._cut(s, r))
            if budget[1] and self._may_promote(s, r):
                out.append(self._promote(s, r))
        if budget[0] and up:
            out.append(self._crash(s))
        return out

    # helpers building successors -------------------------------------------------------------------
    def _who(self, i: int) -> int:
        return 1 + i

    def _feed(self, links: tuple[Any, ...], op: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(None if link is None else (link[0] + (op,), link[1]) for link in links)

    def _set_node(self, nodes: tuple[Any, ...], at: int, node: Node) -> tuple[Any, ...]:
        return nodes[:at] + (node,) + nodes[at + 1:]

    def _set_local(self, local: tuple[Any, ...], at: int, value: Any) -> tuple[Any, ...]:
        return local[:at] + (value,) + local[at + 1:]

    def _ghost(self, ghost: tuple[Any, ...], at: int, value: Any) -> tuple[Any, ...]:
        return ghost[:at] + (value,) + ghost[at + 1:]

    def _flag(self, ghost: tuple[Any, ...], name: str) -> tuple[Any, ...]:
        return self._ghost(ghost, 7, ghost[7] | FLAG[name])

    def _delivered(self, ghost: tuple[Any, ...], payload: int) -> tuple[Any, ...]:
        """A delivery of ``payload`` in the group: acked-never-redelivered."""
        if ghost[2] >> payload & 1:
            ghost = self._flag(ghost, "acked-never-redelivered")
        return ghost

    def _xadd(self, s: Any, k: int) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        seq = len(entries)
        sid = self._sids.get(("xadd", k))
        if sid is None:
            sid = self._known(("xadd", k), 0, "command", (b"XADD", b"s", b"*", b"p", b"%d" % k), f"-> {T}-n")
        nodes = self._set_node(nodes, serving, (entries + (k,), ld, pel, cons, dead))
        links = self._feed(links, (ADD, seq, k))
        given = ghost[0]
        if seq < len(given) and given[seq] and given[seq] != k:  # no-id-reuse
            ghost = self._flag(ghost, "no-id-reuse")
        given = given + (0,) * (seq + 1 - len(given))
        ghost = self._ghost(ghost, 0, given[:seq] + (k,) + given[seq + 1:])
        if self.config.regime == "wait" and links.count(None) < len(links):
            links = self._feed(links, (MARK, PRODUCER, k))
            local = self._set_local(local, 0, (k + 1, k))
        else:
            ghost = self._ghost(ghost, 1, ghost[1] | 1 << k)
            local = self._set_local(local, 0, (k + 1, 0))
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _read(self, s: Any, i: int) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        name = b"c%d" % (i + 1)
        sid = self._sids.get(("read", i))
        if sid is None:
            sid = self._known(("read", i), self._who(i), "command",
                              (b"XREADGROUP", b"GROUP", b"g", name, b"COUNT", b"1", b"STREAMS", b"s", b">"))
        nxt = ld + 1
        if nxt >= len(entries):
            return sid, s  # nothing new: a nil reply, no consumer created (XREADGROUP-7)
        payload = entries[nxt]
        pel = tuple(sorted([x for x in pel if x[0] != nxt] + [(nxt, i, 1)]))
        nodes = self._set_node(nodes, serving, (entries, nxt, pel, cons | 1 << i, dead))
        links = self._feed(links, (CLAIM, i, nxt, 1, nxt))
        ghost = self._delivered(ghost, payload)
        owner = ghost[3][payload]
        if owner and owner != i + 1:
            ghost = self._flag(ghost, "single-owner")
        elif not owner:
            ghost = self._ghost(ghost, 3, ghost[3][:payload] + (i + 1,) + ghost[3][payload + 1:])
        if nxt <= ghost[4]:
            ghost = self._flag(ghost, "last-delivered-monotone")
        ghost = self._ghost(ghost, 4, max(ghost[4], nxt))
        held, waiting, history = local[1 + i]
        local = self._set_local(local, 1 + i, ((nxt, payload), 0, history))
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _history(self, s: Any, i: int) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        name = b"c%d" % (i + 1)
        sid = self._sids.get(("history", i))
        if sid is None:
            sid = self._known(("history", i), self._who(i), "command",
                              (b"XREADGROUP", b"GROUP", b"g", name, b"COUNT", b"1", b"STREAMS", b"s", b"0"))
        held, waiting, history = local[1 + i]
        own = [x for x in pel if x[1] == i]
        cons |= 1 << i  # the read creates the consumer, and nothing propagates it
        if own:
            seq, _, count = own[0]
            payload = entries[seq]
            pel = tuple(x if x[0] != seq else (seq, i, count + 1) for x in pel)  # not propagated
            ghost = self._delivered(ghost, payload)
            local = self._set_local(local, 1 + i, ((seq, payload), 0, history - 1))
        else:
            local = self._set_local(local, 1 + i, (held, 0, history - 1))
        nodes = self._set_node(nodes, serving, (entries, ld, pel, cons, dead))
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _autoclaim(self, s: Any) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        who = 1 + self.consumers
        sid = self.step_id(who, "command", (b"XAUTOCLAIM", b"s", b"g", b"w", b"0", b"0-0", b"COUNT", b"1"))
        held, waiting, claims, _ = local[who]
        if not pel:
            return sid, (nodes, serving, up, links, budget, self._set_local(local, who, (None, 0, claims - 1, HOLD)),
                         ghost)
        seq, _, count = pel[0]
        payload = entries[seq]
        w = self.consumers
        pel = ((seq, w, count + 1),) + pel[1:]
        nodes = self._set_node(nodes, serving, (entries, ld, pel, cons | 1 << w, dead))
        links = self._feed(links, (CLAIM, w, seq, count + 1, ld))
        ghost = self._delivered(ghost, payload)
        then = HOLD if self.config.poison_limit is None else INSPECT
        local = self._set_local(local, who, ((seq, payload), 0, claims - 1, then))
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _inspect(self, s: Any, held: tuple[int, int]) -> tuple[int, Any]:
        """The worker's ``XPENDING s g <id> <id> 1``: above the poison-pill limit the entry is dead-lettered,
        else processed; not pending (any more, on this primary) it is dropped."""
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        who = 1 + self.consumers
        seq, _ = held
        mid = b"%d-%d" % (T, seq)
        sid = self.step_id(who, "command", (b"XPENDING", b"s", b"g", mid, mid, b"1"))
        mine = local[who]
        found = [x for x in pel if x[0] == seq]
        if not found:
            return sid, (nodes, serving, up, links, budget, self._set_local(local, who, (None, 0, mine[2], HOLD)), ghost)
        count = found[0][2]
        payload = entries[seq]
        if count < ghost[5][payload]:
            ghost = self._flag(ghost, "delivery-count-monotone")
        ghost = self._ghost(ghost, 5, ghost[5][:payload] + (max(ghost[5][payload], count),) + ghost[5][payload + 1:])
        assert self.config.poison_limit is not None
        then = DEAD_LETTER if count > self.config.poison_limit else HOLD
        return sid, (nodes, serving, up, links, budget, self._set_local(local, who, (held, 0, mine[2], then)), ghost)

    def _dead_letter(self, s: Any, held: tuple[int, int]) -> tuple[int, Any]:
        """``XADD dlq <id> id <id>``: the entry's ID in the dead-letter stream (an error, and no write, when the
        stream already holds that ID or a later one); the XACK follows."""
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        who = 1 + self.consumers
        seq, _ = held
        mid = b"%d-%d" % (T, seq)
        mine = local[who]
        if dead >> seq:  # XADD-15: the ID is not above the last one the stream generated
            sid = self.step_id(who, "command", (b"XADD", b"dlq", mid, b"id", mid), "-> error (ID not above the top)")
            return sid, (nodes, serving, up, links, budget, self._set_local(local, who, (held, 0, mine[2], HOLD)),
                         ghost)
        sid = self.step_id(who, "command", (b"XADD", b"dlq", mid, b"id", mid))
        nodes = self._set_node(nodes, serving, (entries, ld, pel, cons, dead | 1 << seq))
        links = self._feed(links, (DEAD, seq))
        if self.config.regime == "wait" and links.count(None) < len(links):
            links = self._feed(links, (MARK, who, DLQ_BIT + seq))
            local = self._set_local(local, who, (held, DLQ_BIT + seq, mine[2], HOLD))
        else:
            ghost = self._ghost(ghost, 1, ghost[1] | 1 << (DLQ_BIT + seq))
            local = self._set_local(local, who, (held, 0, mine[2], HOLD))
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _xack(self, s: Any, who: int, held: tuple[int, int]) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        seq, _ = held
        sid = self._sids.get(("xack", who, seq))
        if sid is None:
            sid = self._known(("xack", who, seq), who, "command", (b"XACK", b"s", b"g", b"%d-%d" % (T, seq)))
        mine = local[who]
        found = [x for x in pel if x[0] == seq]
        if not found:
            return sid, (nodes, serving, up, links, budget, self._set_local(local, who, (None, 0) + mine[2:]), ghost)
        acked = entries[seq]  # the entry now under that ID: a stale XACK acknowledges whatever it names
        nodes = self._set_node(nodes, serving, (entries, ld, tuple(x for x in pel if x[0] != seq), cons, dead))
        links = self._feed(links, (ACK, seq))
        if self.config.regime == "wait" and links.count(None) < len(links):
            links = self._feed(links, (MARK, who, acked))
            local = self._set_local(local, who, (None, acked) + mine[2:])
        else:
            ghost = self._ghost(ghost, 2, ghost[2] | 1 << acked)
            local = self._set_local(local, who, (None, 0) + mine[2:])
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _wait_timeout(self, s: Any, who: int) -> tuple[int, Any]:
        """WAIT 1 gives up (its timeout, or the primary's connection dropped): the write is not acknowledged."""
        nodes, serving, up, links, budget, local, ghost = s
        sid = self._sids.get(("wait", who))
        if sid is None:
            sid = self._known(("wait", who), who, "command", (b"WAIT", b"1", b"100"), "-> 0 (times out)")
        mine = local[who]
        local = self._set_local(local, who, (mine[0], 0) + mine[2:])
        # Its marks go: nothing was acknowledged, so no replica missed an acknowledged write.
        mark = (MARK, self._mark_id(who))
        links = tuple(None if link is None else (tuple(op for op in link[0] if op[:2] != mark), link[1])
                      for link in links)
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _mark_id(self, who: int) -> int:
        return PRODUCER if who == 0 else who

    def _xpending(self, s: Any) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        entries, ld, pel, cons, dead = nodes[serving]
        sid = self._sids.get("xpending")
        if sid is None:
            sid = self._known("xpending", len(self.process_names) - 2, "command", (b"XPENDING", b"s", b"g", b"-", b"+", b"10"))
        if self.forget and ghost[7] & FLAG["delivery-count-monotone"]:
            return sid, s  # what it observes is forgotten at once (EXPLORE-FAIL-7): the same state
        seen = list(ghost[5])
        for seq, _, count in pel:
            payload = entries[seq]
            if count < seen[payload]:
                ghost = self._flag(ghost, "delivery-count-monotone")
            seen[payload] = max(seen[payload], count)
        if tuple(seen) == ghost[5] and ghost is s[6]:
            return sid, s  # nothing new observed: the same state (the walk skips it without hashing)
        ghost = self._ghost(ghost, 5, tuple(seen))
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _xinfo(self, s: Any) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        cons = nodes[serving][3]
        sid = self._sids.get("xinfo")
        if sid is None:
            sid = self._known("xinfo", len(self.process_names) - 2, "command", (b"XINFO", b"CONSUMERS", b"s", b"g"))
        if self.forget and ghost[7] & FLAG["consumer-persists"]:
            return sid, s  # what it observes is forgotten at once (EXPLORE-FAIL-7): the same state
        if ghost[6] & ~cons:
            ghost = self._flag(ghost, "consumer-persists")
        elif not cons & ~ghost[6]:
            return sid, s  # nothing new observed
        ghost = self._ghost(ghost, 6, ghost[6] | cons)
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _apply(self, s: Any, r: int) -> tuple[int, Any]:
        """The replica applies the head of its link (``Deployment.apply``); a WAIT mark acknowledges."""
        nodes, serving, up, links, budget, local, ghost = s
        sid = self._sids.get(("apply", r))
        if sid is None:
            sid = self._known(("apply", r), len(self.process_names) - 1, "apply", (b"%d" % r,), f"replica {r} applies the next command")
        queue, cut = links[r]
        op = queue[0]
        links = links[:r] + ((queue[1:], cut),) + links[r + 1:]
        entries, ld, pel, cons, dead = nodes[r]
        if op[0] == ADD:
            _, seq, k = op
            assert seq == len(entries)
            nodes = self._set_node(nodes, r, (entries + (k,), ld, pel, cons, dead))
        elif op[0] == CLAIM:
            _, owner, seq, count, last = op
            pel = tuple(sorted([x for x in pel if x[0] != seq] + [(seq, owner, count)]))
            nodes = self._set_node(nodes, r, (entries, max(ld, last), pel, cons | 1 << owner, dead))
        elif op[0] == DEAD:
            nodes = self._set_node(nodes, r, (entries, ld, pel, cons, dead | 1 << op[1]))
        elif op[0] == ACK:
            nodes = self._set_node(nodes, r, (entries, ld, tuple(x for x in pel if x[0] != op[1]), cons, dead))
        elif op[0] == MARK:  # WAIT 1 returns 1: the write is acknowledged to its client
            _, mark, value = op
            who = 0 if mark == PRODUCER else mark
            mine = local[who]
            if who == 0 or value >= DLQ_BIT:  # an XADD (to s, or to the dead-letter stream)
                ghost = self._ghost(ghost, 1, ghost[1] | 1 << value)
            else:
                ghost = self._ghost(ghost, 2, ghost[2] | 1 << value)
            local = self._set_local(local, who, (mine[0], 0) + mine[2:])
            links = tuple(None if link is None else (tuple((DONE,) if o == op else o for o in link[0]), link[1])
                          for link in links)
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _cut(self, s: Any, r: int) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        sid = self._sids.get(("cut", r))
        if sid is None:
            sid = self._known(("cut", r), len(self.process_names) - 1, "cut", (b"%d" % r,), f"the link to replica {r} is cut")
        links = links[:r] + ((links[r][0], True),) + links[r + 1:]
        return sid, (nodes, serving, up, links, (budget[0], budget[1], budget[2] - 1), local, ghost)

    def _repair(self, s: Any, r: int) -> tuple[int, Any]:
        nodes, serving, up, links, budget, local, ghost = s
        sid = self.step_id(len(self.process_names) - 1, "repair", (b"%d" % r,),
                           f"replica {r} reconnects (PSYNC continues from the backlog)")
        links = links[:r] + ((links[r][0], False),) + links[r + 1:]
        return sid, (nodes, serving, up, links, budget, local, ghost)

    def _crash(self, s: Any) -> tuple[int, Any]:
        """The serving primary is killed (no persistence kept): its links go down and what they held is lost;
        clients waiting on it get an error."""
        nodes, serving, up, links, budget, local, ghost = s
        sid = self._sids.get("crash")
        if sid is None:
            sid = self._known("crash", len(self.process_names) - 1, "crash", (), "the primary crashes")
        # What the links held is lost, but not which replica missed an acknowledged write (a DONE mark):
        # the replica that acknowledged is the more advanced one, the one a failover picks.
        links = tuple(None if link is None else (tuple(op for op in link[0] if op[0] == DONE), True)
                      for link in links)
        if any(x[1] for x in local):
            local = tuple(x if not x[1] else (x[0], 0) + x[2:] for x in local)
        return sid, (nodes, serving, False, links, (budget[0] - 1, budget[1], budget[2]), local, ghost)

    def _may_promote(self, s: Any, r: int) -> bool:
        nodes, serving, up, links, budget, local, ghost = s
        queue, cut = links[r]
        regime = self.config.regime
        if regime == "coordinated":
            return up and not cut and not any(op[0] in (ADD, CLAIM, ACK, DEAD) for op in queue)
        if up and not cut:
            return False  # the primary still serves this replica: nothing promotes it
        if regime == "wait":  # the replica that acknowledged every acknowledged write
            return not any(op[0] == DONE for op in queue)
        return True

    def _promote(self, s: Any, r: int) -> tuple[int, Any]:
        """``REPLICAOF NO ONE`` (or the handover of ``FAILOVER``): replica ``r`` serves from now on with what it
        applied; the rest of the deployment leaves (one failover only)."""
        nodes, serving, up, links, budget, local, ghost = s
        what = "FAILOVER (coordinated)" if self.config.regime == "coordinated" else "REPLICAOF NO ONE"
        sid = self.step_id(len(self.process_names) - 1, "failover", (b"%d" % r,), f"replica {r}: {what}; clients follow")
        nodes = tuple(node if at == r else None for at, node in enumerate(nodes))
        links = tuple(None for _ in links)
        local = tuple(x if not x[1] else (x[0], 0) + x[2:] for x in local)
        return sid, (nodes, r, True, links, (budget[0], budget[1] - 1, budget[2]), local, ghost)
