"""Hypothesis drives the model with random command sequences (several clients,
blocking, MULTI, clock moves, disconnects) and checks every invariant of
spec/invariants.md after every step, plus determinism of the frozen state."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from xspec.models import ManualClock, Server
from xspec.spec.invariants import violations

KEYS = [b"s1", b"s2", b"str"]
GROUPS = [b"g1", b"g2"]
CONSUMERS = [b"alice", b"bob", b""]
CLIENTS = [1, 2, 3]

ids = st.builds(lambda ms, seq: b"%d-%d" % (ms, seq), st.integers(0, 6), st.integers(0, 2))
any_id = st.one_of(ids, st.sampled_from([b"0", b"-", b"+", b"$", b">", b"bad", b"(1-0", b"18446744073709551615-18446744073709551615"]))
key = st.sampled_from(KEYS)
group = st.sampled_from(GROUPS)
consumer = st.sampled_from(CONSUMERS)
small = st.integers(-1, 5).map(lambda n: str(n).encode())
fields = st.lists(st.sampled_from([b"f", b"g", b"1", b""]), min_size=2, max_size=4).map(
    lambda fs: fs if len(fs) % 2 == 0 else fs[:-1])


def cmd(*parts: st.SearchStrategy[bytes] | bytes) -> st.SearchStrategy[list[bytes]]:
    return st.tuples(*(p if isinstance(p, st.SearchStrategy) else st.just(p) for p in parts)).map(list)


trim = st.one_of(
    st.just([]),
    st.tuples(st.sampled_from([b"MAXLEN", b"MINID"]), st.sampled_from([[], [b"="], [b"~"]]),
              st.one_of(small, ids)).map(lambda t: [t[0], *t[1], t[2]]),
)

commands = st.one_of(
    st.tuples(key, trim, st.one_of(ids, st.sampled_from([b"*", b"3-*", b"0-0"])), fields).map(
        lambda t: [b"XADD", t[0], *t[1], t[2], *t[3]]),
    cmd(b"XDEL", key, any_id),
    st.tuples(key, trim).map(lambda t: [b"XTRIM", t[0], *(t[1] or [b"MAXLEN", b"2"])]),
    cmd(b"XRANGE", key, any_id, any_id),
    cmd(b"XLEN", key),
    cmd(b"XSETID", key, ids),
    cmd(b"XGROUP", b"CREATE", key, group, st.sampled_from([b"0", b"$", b"2-0"]), b"MKSTREAM"),
    cmd(b"XGROUP", b"SETID", key, group, any_id),
    cmd(b"XGROUP", b"DESTROY", key, group),
    cmd(b"XGROUP", b"CREATECONSUMER", key, group, consumer),
    cmd(b"XGROUP", b"DELCONSUMER", key, group, consumer),
    cmd(b"XREADGROUP", b"GROUP", group, consumer, b"COUNT", small, b"STREAMS", key, any_id),
    cmd(b"XREADGROUP", b"GROUP", group, consumer, b"NOACK", b"STREAMS", key, b">"),
    cmd(b"XREADGROUP", b"GROUP", group, consumer, b"BLOCK", st.sampled_from([b"0", b"2"]), b"STREAMS", key, b">"),
    cmd(b"XREAD", b"BLOCK", st.sampled_from([b"0", b"3"]), b"STREAMS", key, st.sampled_from([b"$", b"0"])),
    cmd(b"XREAD", b"COUNT", small, b"STREAMS", key, key, any_id, any_id),
    cmd(b"XACK", key, group, any_id),
    cmd(b"XPENDING", key, group),
    cmd(b"XPENDING", key, group, b"IDLE", small, b"-", b"+", small, consumer),
    cmd(b"XCLAIM", key, group, consumer, small, any_id, st.sampled_from([b"JUSTID", b"FORCE", b"RETRYCOUNT", b"LASTID"]), ids),
    cmd(b"XAUTOCLAIM", key, group, consumer, small, any_id, b"COUNT", st.sampled_from([b"1", b"2", b"0"])),
    cmd(b"XINFO", b"STREAM", key, b"FULL"),
    cmd(b"XINFO", b"GROUPS", key),
    cmd(b"XINFO", b"CONSUMERS", key, group),
    cmd(b"SET", key, b"v"),
    cmd(b"DEL", key),
    cmd(b"RENAME", key, key),
    cmd(b"FLUSHALL"),
    cmd(b"MULTI"), cmd(b"EXEC"), cmd(b"DISCARD"), cmd(b"WATCH", key), cmd(b"UNWATCH"),
    cmd(b"HELLO", st.sampled_from([b"2", b"3"])),
    cmd(b"SELECT", st.sampled_from([b"0", b"1"])),
)


class ModelMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(1000)
        self.server = Server(clock=self.clock)
        self.twin_clock = ManualClock(1000)
        self.twin = Server(clock=self.twin_clock)
        self.log: list[str] = []

    def _both(self, fn_name: str, *args: object) -> tuple[object, object]:
        a = getattr(self.server, fn_name)(*args)
        b = getattr(self.twin, fn_name)(*args)
        return a, b

    @rule(c=st.sampled_from(CLIENTS), argv=commands)
    def run(self, c: int, argv: list[bytes]) -> None:
        client = self.server.clients.get(c)
        if client is not None and client.blocked is not None:
            return  # a blocked client cannot send
        self.log.append(f"{c}: {b' '.join(argv)!r}")
        a, b = self._both("execute", c, argv)
        assert a == b, "the model is not deterministic"

    @rule(ms=st.integers(0, 4))
    def tick(self, ms: int) -> None:
        self.clock.advance(ms)
        self.twin_clock.advance(ms)
        a, b = self._both("due_timeouts", self.clock.ms)
        assert a == b

    @precondition(lambda self: bool(self.server.clients))
    @rule(c=st.sampled_from(CLIENTS))
    def disconnect(self, c: int) -> None:
        self.log.append(f"{c}: close")
        self._both("close", c)

    @invariant()
    def invariants_hold(self) -> None:
        bad = violations(self.server)
        assert not bad, "\n".join(bad + ["after:"] + self.log[-10:])

    @invariant()
    def frozen_state_is_canonical(self) -> None:
        f = self.server.freeze()
        hash(f)
        assert f == self.twin.freeze()


ModelMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestModel = ModelMachine.TestCase
