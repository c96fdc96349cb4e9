"""Hypothesis drives a deployment of the model (a primary and two replicas) with random stream
commands on every node, internal replication steps, link faults, crashes, restarts and
failovers, and checks every invariant across nodes (INV-REPL-*) and on each node (INV-*)
after every step."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from xspec.models import ManualClock
from xspec.models.replication import Deployment
from xspec.models.replication_invariants import offsets, violations
from xspec.spec.dialect import REDIS_62, REDIS_70, REDIS_74, VALKEY_91, Dialect

NODES = ["a", "b", "c"]
PORT = {"a": 7001, "b": 7002, "c": 7003}
CLIENT = {"a": 1, "b": 2, "c": 3}

ids = st.builds(lambda ms, seq: b"%d-%d" % (ms, seq), st.integers(0, 4), st.integers(0, 2))
commands = st.one_of(
    st.tuples(st.sampled_from([b"*", b"*", b"5-*"])).map(lambda t: [b"XADD", b"s", t[0], b"f", b"v"]),
    ids.map(lambda i: [b"XADD", b"s", i, b"f", b"v"]),
    st.just([b"XGROUP", b"CREATE", b"s", b"g", b"0", b"MKSTREAM"]),
    st.sampled_from([b"alice", b"bob"]).map(
        lambda c: [b"XREADGROUP", b"GROUP", b"g", c, b"COUNT", b"2", b"STREAMS", b"s", b">"]),
    st.sampled_from([b"alice", b"bob"]).map(
        lambda c: [b"XREADGROUP", b"GROUP", b"g", c, b"STREAMS", b"s", b"0"]),
    ids.map(lambda i: [b"XACK", b"s", b"g", i]),
    ids.map(lambda i: [b"XDEL", b"s", i]),
    ids.map(lambda i: [b"XCLAIM", b"s", b"g", b"bob", b"0", i]),
    st.just([b"XRANGE", b"s", b"-", b"+"]),
    st.just([b"XPENDING", b"s", b"g"]),
    st.just([b"MULTI"]), st.just([b"EXEC"]),
    st.just([b"WAIT", b"0", b"0"]),
    st.just([b"SAVE"]),
    st.sampled_from([[b"FAILOVER"], [b"FAILOVER", b"ABORT"], [b"FAILOVER", b"TIMEOUT", b"3"],
                     [b"FAILOVER", b"TO", b"127.0.0.1", b"7002", b"TIMEOUT", b"2", b"FORCE"],
                     [b"FAILOVER", b"TO", b"127.0.0.1", b"7003"]]),  # FAILOVER-*
    st.sampled_from([[b"WAITAOF", b"1", b"0", b"0"], [b"WAITAOF", b"0", b"1", b"0"],
                     [b"WAITAOF", b"1", b"2", b"5"]]),  # WAITAOF-* (7.2+; unknown to 6.2 and 7.0)
)
DIALECTS = [REDIS_70, REDIS_62, REDIS_74, VALKEY_91]  # each one's replication switches (REPL-DIALECT-*)
CONFIGS = [{"save": "", "appendonly": "no"}, {"save": "", "appendonly": "yes", "appendfsync": "always"},
           {"save": "", "appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "no"}]


class Replication(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(1_700_000_000_000)
        self.d: Deployment | None = None
        self.before = None

    @precondition(lambda self: self.d is None)
    @rule(config=st.sampled_from(CONFIGS), dialect=st.sampled_from(DIALECTS))
    def start(self, config: dict[str, str], dialect: Dialect) -> None:
        self.d = Deployment({n: {"dialect": dialect, "addrs": [f"127.0.0.1:{PORT[n]}"], "config": dict(config)}
                             for n in NODES}, self.clock)
        for n in ("b", "c"):
            self.d.execute(n, CLIENT[n], [b"REPLICAOF", b"127.0.0.1", b"7001"])
        self.settle()

    def settle(self) -> None:
        assert self.d is not None
        for _ in range(500):
            steps = self.d.steps()
            if not steps:
                return
            self.d.step(*steps[0])

    def _step(self, fn) -> None:  # type: ignore[no-untyped-def]
        assert self.d is not None
        self.before = offsets(self.d)
        fn()

    @precondition(lambda self: self.d is not None)
    @rule(node=st.sampled_from(NODES), argv=commands)
    def command(self, node: str, argv: list[bytes]) -> None:
        assert self.d is not None
        n = self.d.nodes[node]
        if not n.up or n.paused or n.server.clients.get(CLIENT[node]) is not None \
                and n.server.clients[CLIENT[node]].blocked is not None:
            return
        self._step(lambda: self.d.execute(node, CLIENT[node], argv))  # type: ignore[union-attr]

    @precondition(lambda self: self.d is not None)
    @rule(pick=st.integers(0, 20))
    def internal(self, pick: int) -> None:
        assert self.d is not None
        steps = self.d.steps()
        if steps:
            self._step(lambda: self.d.step(*steps[pick % len(steps)]))  # type: ignore[union-attr]

    @precondition(lambda self: self.d is not None)
    @rule()
    def settle_all(self) -> None:
        self._step(self.settle)

    @precondition(lambda self: self.d is not None)
    @rule(replica=st.sampled_from(NODES), state=st.sampled_from(["held", "flowing", "cut"]))
    def link(self, replica: str, state: str) -> None:
        assert self.d is not None
        link = self.d.links.get(replica)
        if link is not None:
            self._step(lambda: self.d.set_link(link.primary, replica, state))  # type: ignore[union-attr]

    @precondition(lambda self: self.d is not None)
    @rule(node=st.sampled_from(NODES))
    def crash_restart(self, node: str) -> None:
        assert self.d is not None
        if self.d.nodes[node].up:
            self._step(lambda: (self.d.crash(node), self.d.restart(node)))  # type: ignore[union-attr]

    @precondition(lambda self: self.d is not None)
    @rule(node=st.sampled_from(NODES))
    def promote(self, node: str) -> None:
        """A failover by hand: the node becomes primary, the others follow it."""
        assert self.d is not None
        if not all(n.up and not n.paused for n in self.d.nodes.values()):
            return

        def failover() -> None:
            assert self.d is not None
            self.d.execute(node, 100, [b"REPLICAOF", b"NO", b"ONE"])
            for other in NODES:
                if other != node:
                    self.d.execute(other, 100, [b"REPLICAOF", b"127.0.0.1", b"%d" % PORT[node]])
        self._step(failover)

    @precondition(lambda self: self.d is not None)
    @rule(ms=st.integers(0, 3))
    def tick(self, ms: int) -> None:
        self.clock.advance(ms)

    @invariant()
    def sound(self) -> None:
        if self.d is not None:
            assert violations(self.d, self.before) == []


Replication.TestCase.settings = settings(max_examples=500, stateful_step_count=12, deadline=None,
                                         suppress_health_check=list(HealthCheck))
test_replication_stateful = Replication.TestCase


@pytest.mark.slow
def test_replication_stateful_long() -> None:
    from hypothesis.stateful import run_state_machine_as_test
    run_state_machine_as_test(Replication, settings=settings(max_examples=5000, stateful_step_count=40,
                                                             deadline=None, suppress_health_check=list(HealthCheck)))
