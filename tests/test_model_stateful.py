"""Hypothesis drives the model with random command sequences (several clients,
blocking, MULTI, clock moves, disconnects) and checks every invariant of
spec/invariants.md after every step, plus determinism of the frozen state."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from xspec.models import ManualClock, Server
from xspec.models.invariants import violations

KEYS = [b"s1", b"s2", b"str"]
GROUPS = [b"g1", b"g2"]
CONSUMERS = [b"alice", b"bob", b""]
CLIENTS = [1, 2, 3]

ids = st.builds(lambda ms, seq: b"%d-%d" % (ms, seq), st.integers(0, 6), st.integers(0, 2))
any_id = st.one_of(ids, st.sampled_from([b"0", b"-", b"+", b"$", b">", b"bad", b"(1-0", b"18446744073709551615-18446744073709551615"]))
key = st.sampled_from([b"s1"] * 4 + KEYS)  # mostly one stream, so commands meet
group = st.sampled_from([b"g1"] * 3 + GROUPS)
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

xadd = st.tuples(key, trim, st.one_of(st.just(b"*"), ids, st.sampled_from([b"*", b"3-*", b"0-0"])), fields).map(
    lambda t: [b"XADD", t[0], *t[1], t[2], *t[3]])
read_new = cmd(b"XREADGROUP", b"GROUP", group, consumer, b"COUNT", st.sampled_from([b"1", b"2", b"10"]),
               b"STREAMS", key, b">")
create = cmd(b"XGROUP", b"CREATE", key, group, st.sampled_from([b"0", b"$"]), b"MKSTREAM")

# Weighted so that sequences build real consumer-group state (entries, groups, pending
# entries owned by several consumers) before the rarer destructive commands hit it.
others = st.one_of(
    cmd(b"XCLAIM", key, group, consumer, b"0", ids),
    cmd(b"XAUTOCLAIM", key, group, consumer, b"0", b"0", b"COUNT", st.sampled_from([b"1", b"3"])),
    cmd(b"XREADGROUP", b"GROUP", group, consumer, b"STREAMS", key, b"0"),
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
commands = st.sampled_from([xadd] * 6 + [read_new] * 4 + [create] * 2 + [cmd(b"EXEC")] + [others] * 10).flatmap(
    lambda s: s)
# One step of the machine: mostly a command, sometimes the clock moves or a client disconnects.
actions = st.one_of(
    st.tuples(st.just("command"), st.sampled_from(CLIENTS), commands),
    st.tuples(st.just("tick"), st.integers(0, 4)),
    st.tuples(st.just("close"), st.sampled_from(CLIENTS)),
)
weighted_actions = st.sampled_from([0] * 8 + [1] + [2]).flatmap(lambda i: actions.branches[i])


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

    @rule(action=weighted_actions)
    def step(self, action: tuple) -> None:  # type: ignore[type-arg]
        if action[0] == "command":
            self.run(action[1], action[2])
        elif action[0] == "tick":
            self.tick(action[1])
        else:
            self.disconnect(action[1])

    def run(self, c: int, argv: list[bytes]) -> None:
        client = self.server.clients.get(c)
        if client is not None and client.blocked is not None:
            return  # a blocked client cannot send
        self.log.append(f"{c}: {b' '.join(argv)!r}")
        a, b = self._both("execute", c, argv)
        assert a == b, "the model is not deterministic"

    def tick(self, ms: int) -> None:
        self.log.append(f"clock +{ms} ms")
        self.clock.advance(ms)
        self.twin_clock.advance(ms)
        a, b = self._both("due_timeouts", self.clock.ms)
        assert a == b

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
