"""The explorer (explore/): state counts against an independent brute force, symmetry
soundness, the abstraction's faithfulness, protocol verdicts, and counterexamples that replay on the
model and on the real server."""

from __future__ import annotations

import copy
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sortedcontainers import SortedList

from xspec.commands.explore import explore_command
from xspec.explore import protocols as P
from xspec.explore.abstraction import (
    BASE_MS,
    COVERED_CLIENT_FIELDS,
    COVERED_SLOTS,
    Abstraction,
    LayoutProxy,
    ThawedConsumer,
    TimeReads,
    TracedStream,
    Unsupported,
    _keys,
    _new_pel,
)
from xspec.explore.concrete import concretize
from xspec.explore.config import GROUP, STREAM, ConfigSystem, Configuration, entry_id
from xspec.explore.engine import explore
from xspec.explore.execution import Executor, initial_server
from xspec.explore.report import check_protocol, explore_configuration
from xspec.models import ManualClock, Server
from xspec.models.layout import NodeLayout
from xspec.models.ordered import LazySortedDict
from xspec.models.state import Client, Stream
from xspec.spec.ids import StreamID
from xspec.spec.resp import Array, Int
from xspec.spec.trace_format import Call, Close, Note, load
from xspec.traces.check.checker import check_trace

# -- an independent brute force -------------------------------------------------------------


def _normalised(server: Server, horizon: int, cap: int) -> Any:
    """``Server.freeze()`` with the explorer's abstraction done by hand on the frozen tuple.

    Delivery times become ages capped at ``horizon``, counts are capped, consumer
    seen/active times are dropped (only XINFO reads them).
    """
    now = server.clock.now_ms()
    dialect, dbs, clients, blocking, config, errno = server.freeze()
    new_dbs = []
    for db in dbs:
        items = []
        for k, v in db:
            if v[0] == "stream":
                groups = tuple(
                    (name, last, read,
                     tuple((i, (min(now - t, horizon), min(n, cap), owner)) for i, (t, n, owner) in pel),
                     tuple((cname, pelkeys) for cname, _, _, pelkeys in consumers))
                    for name, last, read, pel, consumers in v[6])
                v = v[:6] + (groups,) + v[7:]
            items.append((k, v))
        new_dbs.append(tuple(items))
    return (dialect, tuple(new_dbs), clients, blocking, config, errno)


def _brute_force(config: Configuration) -> int:
    """Distinct abstract states of ``config`` by BFS over deep-copied servers (no keys, no thaw, no memo)."""
    n = config.consumers
    admin = n + 1
    horizon = config.min_idle_ticks * config.tick_ms
    server = Server(clock=ManualClock(BASE_MS), config=dict(config.server_config))
    for cid in range(1, n + 2):
        server.connect(cid)
    for group_name in config.group_names:
        server.execute(admin, [b"XGROUP", b"CREATE", STREAM, group_name, b"0", b"MKSTREAM"])
    if config.prefill:
        for i in range(config.entries):
            server.execute(admin, [b"XADD", STREAM, entry_id(i + 1), b"f", b"v"])

    def moves(s: Server) -> list[tuple[int, list[bytes] | str]]:
        stream = s.dbs[0][STREAM]
        assert isinstance(stream, Stream)
        out: list[tuple[int, list[bytes] | str]] = []
        idle = b"%d" % horizon
        acts = config.actions
        for cid in range(1, n + 1):
            me = b"c%d" % cid
            for g in config.group_names:
                pel = stream.groups[g].pel
                mine = [i for i, nack in pel.items() if nack.consumer is not None and nack.consumer.name == me]
                others = [i for i in pel if i not in mine]
                if "read" in acts:
                    out.append((cid, [b"XREADGROUP", b"GROUP", g, me, b"COUNT", b"1", b"STREAMS", STREAM, b">"]))
                if "history" in acts:
                    out.append((cid, [b"XREADGROUP", b"GROUP", g, me, b"COUNT", b"1", b"STREAMS", STREAM, b"0"]))
                if "ack" in acts:
                    out.extend((cid, [b"XACK", STREAM, g, i.encode()]) for i in mine)
                if "claim" in acts:
                    out.extend((cid, [b"XCLAIM", STREAM, g, me, idle, i.encode()]) for i in others)
                if "autoclaim" in acts:
                    out.append((cid, [b"XAUTOCLAIM", STREAM, g, me, idle, b"0-0", b"COUNT", b"1"]))
            if "crash" in acts:
                out.append((cid, "crash"))
        if "delete" in config.actions:
            out.extend((admin, [b"XDEL", STREAM, i.encode()]) for i in stream.entries)
        if "add" in config.actions and stream.entries_added < config.entries:
            out.append((admin, [b"XADD", STREAM, entry_id(stream.entries_added + 1), b"f", b"v"]))
        for template in config.commands:
            senders = [(cid, b"c%d" % cid) for cid in range(1, n + 1)] if any("{consumer}" in w for w in template) \
                else [(admin, b"")]
            for cid, me in senders:
                for g in config.group_names:
                    for i in range(config.entries):
                        argv = [w.encode().replace(b"{consumer}", me).replace(b"{group}", g)
                                .replace(b"{id}", entry_id(i + 1)) for w in template]
                        if (cid, argv) not in out:
                            out.append((cid, argv))
        if "tick" in config.actions:
            out.append((0, "tick"))
        return out

    seen = {_normalised(server, horizon, config.count_cap)}
    queue = deque([server])
    while queue:
        s = queue.popleft()
        for cid, move in moves(s):
            t = copy.deepcopy(s)
            clock = t.clock
            assert isinstance(clock, ManualClock)
            if move == "tick":
                clock.advance(config.tick_ms)
            elif move == "crash":
                t.close(cid)
                t.connect(cid)
            else:
                assert isinstance(move, list)
                t.execute(cid, move)
            k = _normalised(t, horizon, config.count_cap)
            if k not in seen:
                seen.add(k)
                queue.append(t)
    return len(seen)


TINY_CONFIGS = [
    Configuration("t1", consumers=2, entries=1, actions=("read", "ack", "crash", "delete")),
    Configuration("t2", consumers=2, entries=2, actions=("read", "ack", "claim", "tick")),
    Configuration("t3", consumers=1, entries=2, prefill=False,
                  actions=("add", "read", "history", "ack", "autoclaim", "tick"), count_cap=2),
    Configuration("t4", consumers=2, entries=2, actions=("read", "ack", "autoclaim", "crash", "tick"),
                  min_idle_ticks=2),
    Configuration("t5", consumers=2, entries=1, groups=2, actions=("read", "ack", "claim", "delete")),
    Configuration("t6", consumers=2, entries=2, actions=("read", "ack", "tick"),
                  commands=(("XTRIM", "s", "MAXLEN", "1"), ("XCLAIM", "s", "{group}", "{consumer}", "100", "{id}"),
                            ("XGROUP", "DELCONSUMER", "s", "{group}", "{consumer}"))),
]


@pytest.mark.parametrize("config", TINY_CONFIGS, ids=lambda c: c.name)
def test_state_counts_match_an_independent_brute_force(config: Configuration) -> None:
    """EXPLORE-ABS-4: the explorer's count equals a brute force over concrete servers that implements
    EXPLORE-CFG-1's actions on its own."""
    result, _ = explore(ConfigSystem(config, symmetry=False))
    assert result.complete and not result.violations
    assert len(result.states) == _brute_force(config)


# -- symmetry ------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [TINY_CONFIGS[0], TINY_CONFIGS[3],
                                    Configuration("three", consumers=3, entries=2,
                                                  actions=("read", "ack", "claim", "crash", "tick"))],
                         ids=lambda c: c.name)
def test_symmetry_reduction_counts_every_orbit_once(config: Configuration) -> None:
    """EXPLORE-SYM-4."""
    full_system = ConfigSystem(config, symmetry=False)
    full, _ = explore(full_system)
    reduced_system = ConfigSystem(config, symmetry=True)
    # Keys are numbered by their abstraction: both walks share one numbering, so their keys compare.
    reduced_system.abstraction = copy.copy(full_system.abstraction)
    reduced_system.abstraction.symmetry = True
    reduced_system.executor = Executor(reduced_system.abstraction)
    reduced, _ = explore(reduced_system)
    canon = reduced_system.abstraction
    representatives = {canon.canonical(key, local)[:2] for key, local, _ in full.states}
    assert representatives == {(key, local) for key, local, _ in reduced.states}
    # Orbits counted by brute-force relabelling add up to the unreduced count.
    assert sum(len(canon.orbit(key, local)) for key, local, _ in reduced.states) == len(full.states)
    assert len(reduced.states) < len(full.states)


# -- the abstraction ----------------------------------------------------------------------------


def test_the_key_covers_every_state_field_of_the_model() -> None:
    for cls, covered in COVERED_SLOTS.items():
        assert set(cls.__slots__) == set(covered), cls.__name__  # type: ignore[attr-defined]
    assert set(Client.__dataclass_fields__) == set(COVERED_CLIENT_FIELDS)


def test_thawing_a_key_gives_back_the_state_it_came_from() -> None:
    """EXPLORE-KEY-2: keys round-trip, and two thaws of one key freeze equal."""
    system = ConfigSystem(Configuration("rt", consumers=2, entries=3), symmetry=False)
    result, _ = explore(system, max_states=400)
    a = system.abstraction
    for key, _, _ in result.states[::7]:
        server = a.thaw(key)
        assert a.key(server) == key
        twin = a.thaw(key)
        assert twin.freeze() == server.freeze()


def test_a_thawed_pel_is_what_the_model_builds_from_the_same_items() -> None:
    """EXPLORE-KEY-2: thaw builds PELs field by field; each must equal, slot by slot, what
    ``LazySortedDict.from_sorted_items`` builds, whatever the model's class comes to hold."""
    for n in (0, 1, 3, 2 * SortedList.DEFAULT_LOAD_FACTOR + 1):
        items = [(StreamID(i + 1, 0), i) for i in range(n)]
        ours, theirs = _new_pel(items), LazySortedDict.from_sorted_items(items)
        assert type(ours) is type(theirs) and dict(ours) == dict(theirs) and list(ours) == list(theirs)
        for slot in LazySortedDict.__slots__:
            mine, model = getattr(ours, slot), getattr(theirs, slot)
            assert type(mine) is type(model), slot
            assert (vars(mine) if hasattr(mine, "__dict__") else mine) == \
                (vars(model) if hasattr(model, "__dict__") else model), slot


def test_a_thawed_layout_is_copied_only_when_the_model_uses_more_than_its_disorder() -> None:
    """EXPLORE-KEY-2: a thawed stream's layout answers ``disordered`` (and what the invariants read)
    without a copy, and its key keeps the layout's number; any other use copies it into the stream,
    and a caller that kept the proxy reaches the copy."""
    system = ConfigSystem(Configuration("layout", consumers=1, entries=2), symmetry=False)
    (key, _, _), _ = system.initial()
    a = system.abstraction
    server = a.thaw(key)
    stream = server.dbs[0][STREAM]
    proxy = stream.layout
    assert isinstance(proxy, LayoutProxy)
    assert proxy.disordered is False and proxy.radix_tree_keys == 1 and len(proxy.node_sizes()) == 1
    assert proxy.real is None and a.key(server) == key
    assert proxy.first_id() == StreamID(1, 0)  # a use that copies
    assert isinstance(stream.layout, NodeLayout) and proxy.real is stream.layout
    assert server.execute(1, [b"XDEL", STREAM, b"1-0"]).reply == Int(1)
    assert proxy.radix_tree_keys == 1 and [n[1] for n in proxy.node_sizes()] == [1]  # the copy, seen through
    fresh = initial_server(a, system.setup())  # the same step on a server never thawed
    fresh.execute(1, [b"XDEL", STREAM, b"1-0"])
    assert a.key(server) == a.key(fresh)
    # Special methods are looked up on the type, past ``__getattr__``: the proxy has none to forward.
    assert {name for name in vars(NodeLayout) if name.startswith("__") and callable(vars(NodeLayout)[name])} \
        == {"__init__"}
    twin = copy.deepcopy(a.thaw(key))  # a copy of a thawed server (its layout a proxy) is a server in the key
    assert isinstance(twin.dbs[0][STREAM].layout, LayoutProxy) and a.key(twin) == key


def test_reading_a_pel_s_keys_skips_its_holes() -> None:
    """Keys read a PEL's ordered keys directly while it has no holes, and iterate it otherwise."""
    pel = _new_pel([(StreamID(i, 0), i) for i in range(1, 7)])
    assert list(_keys(pel)) == list(pel)
    for removed in (StreamID(3, 0), StreamID(1, 0), StreamID(6, 0), StreamID(4, 0)):
        pel.pop(removed)
        assert list(_keys(pel)) == list(pel)
    pel[StreamID(3, 0)] = 3
    assert list(_keys(pel)) == list(pel) == [StreamID(2, 0), StreamID(3, 0), StreamID(5, 0)]


def test_a_thawed_consumer_builds_its_pel_when_first_used() -> None:
    """EXPLORE-KEY-2: a thawed consumer's PEL is built from its items on first use, holding the group
    PEL's own entries; reading the key does not build it."""
    system = ConfigSystem(Configuration("owned", consumers=2, entries=2), symmetry=False)
    (key, _, _), _ = system.initial()
    a = system.abstraction
    read = (b"XREADGROUP", b"GROUP", GROUP, b"c1", b"COUNT", b"1", b"STREAMS", STREAM, b">")
    key = system.executor.command(key, 0, read)[1]
    server = a.thaw(key)
    group = server.dbs[0][STREAM].groups[GROUP]
    c1 = group.consumers[b"c1"]
    assert isinstance(c1, ThawedConsumer) and c1.owned is not None
    assert a.key(server) == key and c1.owned is not None
    first = StreamID(1, 0)
    assert list(c1.pel) == [first] and c1.pel[first] is group.pel[first] and c1.owned is None
    assert a.thaw(key).freeze() == server.freeze()


def test_ages_follow_the_keys_byte_order_whatever_order_the_streams_were_made_in() -> None:
    """EXPLORE-KEY-1: a key's ages are in key order, also when a later stream sorts first."""
    a = Abstraction(names=(b"c1",), classes=(0,), horizon_ms=10_000, count_cap=5)
    server = Server(clock=ManualClock(BASE_MS))
    server.connect(1)
    for stream in (b"s", b"a"):  # "s" is made (and read) first, 300 ms before "a"
        server.execute(1, [b"XGROUP", b"CREATE", stream, b"g", b"0", b"MKSTREAM"])
        server.execute(1, [b"XADD", stream, b"1-0", b"f", b"v"])
        server.execute(1, [b"XREADGROUP", b"GROUP", b"g", b"c1", b"STREAMS", stream, b">"])
        clock = server.clock
        assert isinstance(clock, ManualClock)
        clock.advance(300)
    key = a.key(server)
    assert key[1] == (300, 600)  # "a", then "s"
    thawed = a.thaw(key)
    assert a.key(thawed) == key
    executor = Executor(a)
    argv = (b"XCLAIM", b"a", b"g", b"c1", b"500", b"1-0")  # "a"'s entry is not idle enough: nothing moves
    reply, new, _ = executor.command(key, 0, argv)
    assert reply == Array(()) and new == key


def test_a_state_with_an_unauthenticated_client_is_refused_not_conflated() -> None:
    """A key does not hold which clients must still authenticate (requirepass), so such a state is
    outside the explorer's scope: the abstraction refuses it rather than thawing it authenticated."""
    a = Abstraction(names=(b"c1",), classes=(0,), horizon_ms=10_000, count_cap=5)
    server = Server(clock=ManualClock(BASE_MS))
    server.connect(1)
    server.execute(1, [b"CONFIG", b"SET", b"requirepass", b"pw"])
    a.key(server)  # the client connected before the password: still authenticated
    server.connect(2)
    assert server.execute(2, [b"XLEN", b"s"]).reply.text.startswith("NOAUTH")  # type: ignore[union-attr]
    with pytest.raises(Unsupported, match="not authenticated"):
        a.key(server)


def test_memoised_steps_agree_with_running_the_model() -> None:
    """EXPLORE-MEMO-2: memoised steps against fresh runs of the model."""
    system = ConfigSystem(Configuration("memo", consumers=2, entries=3), symmetry=False)
    result, _ = explore(system, max_states=600)
    memo = system.executor.memo
    assert memo
    a = system.abstraction
    checked = 0
    for key, _, _ in result.states[::5]:
        for proc in range(2):
            argv = (b"XCLAIM", STREAM, GROUP, b"c%d" % (proc + 1), b"100", b"1-0")
            reply, new, _ = system.executor.command(key, proc, argv)
            server = a.thaw(key)
            assert server.execute(proc + 1, list(argv)).reply == reply
            assert a.key(server) == new
            checked += 1
    assert checked > 50


def test_steps_remembered_by_the_parts_they_touched_agree_with_running_the_model() -> None:
    """EXPLORE-MEMO-4: XDEL (header only), XACK (groups only) and crashes (no stream) answered from
    states that differ elsewhere, against fresh runs of the model."""
    system = ConfigSystem(Configuration("parts", consumers=2, entries=3), symmetry=False)
    result, _ = explore(system, max_states=800)
    a = system.abstraction
    executor = Executor(a)
    steps = [(2, (b"XDEL", STREAM, b"2-0")), (0, (b"XACK", STREAM, GROUP, b"1-0")), (1, (b"XACK", STREAM, GROUP, b"3-0"))]
    calls = 0
    for key, _, _ in result.states[::3]:
        for proc, argv in steps:
            reply, new, _ = executor.command(key, proc, argv)
            server = a.thaw(key)
            assert server.execute(proc + 1, list(argv)).reply == reply
            assert a.key(server) == new
            calls += 1
        new = executor.crash(key, 0)[0]
        server = a.thaw(key)
        server.close(1)
        server.connect(1)
        assert a.key(server) == new
        calls += 1
    assert calls > 200
    assert executor.executed < calls // 3  # most came from steps remembered by parts


def test_a_thawed_stream_marks_the_parts_a_step_touches() -> None:
    """EXPLORE-MEMO-4: every field of the model's Stream is traced, as part of the header or the groups."""
    system = ConfigSystem(Configuration("marks", consumers=1, entries=1), symmetry=False)
    (key, _, _), _ = system.initial()
    for argv, touched in (((b"XDEL", STREAM, b"1-0"), (True, False)), ((b"XACK", STREAM, GROUP, b"1-0"), (False, True)),
                          ((b"XREADGROUP", b"GROUP", GROUP, b"c1", b"STREAMS", STREAM, b">"), (True, True)),
                          ((b"PING",), (False, False))):
        server = system.abstraction.thaw(key)
        stream = server.dbs[0][STREAM]
        assert isinstance(stream, TracedStream)
        TimeReads.step += 1
        server.execute(1, list(argv))
        assert (stream.header_step == TimeReads.step, stream.groups_step == TimeReads.step) == touched, argv
    assert {name for name in Stream.__slots__ if isinstance(getattr(TracedStream, name), property)} == \
        set(Stream.__slots__)


# -- counterexamples of configurations -------------------------------------------------------------


@pytest.mark.parametrize("config", [Configuration("paths", consumers=2, entries=2), TINY_CONFIGS[-1]],
                         ids=lambda c: c.name)
def test_config_paths_replay_on_the_model(config: Configuration) -> None:
    """EXPLORE-CEX-1: paths made concrete conform on the model (and end in their state: EXPLORE-ABS-4)."""
    system = ConfigSystem(config, symmetry=True)
    result, perm0 = explore(system)
    for target in range(0, len(result.states), max(1, len(result.states) // 25)):
        c = concretize(system, result, target, perm0, "path")
        assert check_trace(c.trace).status == "conform"


def test_a_seeded_model_bug_is_found_with_a_short_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """XACK that forgets to drop the entry from its owner's PEL breaks INV-7; the explorer says where.

    The invariants are checked in every state (EXPLORE-2) and the counterexample is a shortest path (EXPLORE-1).
    """
    from xspec.models import pel

    def broken_remove(group: Any, entry_id: Any) -> Any:
        return group.pel.pop(entry_id, None)

    monkeypatch.setattr(pel, "remove", broken_remove)
    report, system = explore_configuration(Configuration("bug", consumers=2, entries=1,
                                                         actions=("read", "ack")))
    inv = report.properties[0]
    assert not inv.holds and "INV-7" in inv.message
    assert inv.counterexample is not None
    assert [s.argv[0] for s in inv.counterexample.steps] == [b"XREADGROUP", b"XACK"]


# -- protocols -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def protocol_reports() -> dict[str, Any]:
    return {name: check_protocol(p)[0] for name, p in P.PROTOCOLS.items()}


def test_protocol_verdicts(protocol_reports: dict[str, Any]) -> None:
    """EXPLORE-PROC-6: every protocol gets its expected verdicts on EXPLORE-PROP-1 .. EXPLORE-PROP-4
    (liveness by EXPLORE-LIVE-2)."""
    for name, report in protocol_reports.items():
        protocol = P.PROTOCOLS[name]
        assert set(protocol.expected) == {p.name for p in report.properties if p.kind != "invariants"}, name
        for prop in report.properties:
            assert prop.as_expected, (name, prop.name, prop.holds)
        assert report.result.complete


def test_wrong_protocols_violate_with_short_counterexamples(protocol_reports: dict[str, Any]) -> None:
    """Safety counterexamples are shortest paths (EXPLORE-1); liveness ones short lassos (EXPLORE-LIVE-2)."""
    lengths = {}
    for name, report in protocol_reports.items():
        for prop in report.properties:
            if not prop.holds:
                assert prop.counterexample is not None
                lengths[(name, prop.name)] = len(prop.counterexample.steps)
    assert lengths[("ack-before-processing", P.NO_LOSS)] == 4  # add, read, XACK, crash
    assert lengths[("noack-reader", P.NO_LOSS)] == 3  # add, read NOACK, crash
    assert lengths[("short-min-idle", P.NO_DUPLICATE)] <= 10
    assert lengths[("new-only-consumer", P.ALL_DONE)] <= 6
    assert all(n <= 12 for n in lengths.values()), lengths


def test_counterexample_traces_conform_on_the_model(protocol_reports: dict[str, Any], tmp_path: Path) -> None:
    """EXPLORE-CEX-1, for protocols: safety paths and liveness lassos."""
    for report in protocol_reports.values():
        for prop in report.properties:
            if prop.counterexample is not None:
                verdict = check_trace(prop.counterexample.trace)
                assert verdict.status == "conform", verdict.describe()


def test_the_poison_limit_is_what_dead_letters_a_poison_pill() -> None:
    """EXPLORE-PROP-4 holds for the recovery worker with a limit, not without one (EXPLORE-PROC-5)."""
    def verdicts(limit: int | None) -> dict[str, bool]:
        worker = P.RecoveryWorker(b"w", 1, 200, limit)
        protocol = P.Protocol("poison", "", [P.NewOnlyConsumer(b"c1", 1), worker], messages=1,
                              poison=frozenset({1}), crash_budget=0)
        report, _ = check_protocol(protocol)
        return {p.name: p.holds for p in report.properties}

    assert verdicts(3)[P.POISON_DEAD] is True
    assert verdicts(None)[P.POISON_DEAD] is False and verdicts(None)[P.ALL_DONE] is False


def test_counterexamples_happen_on_the_real_server(redis: Any, protocol_reports: dict[str, Any]) -> None:
    """The wrong protocols' counterexamples, replayed on redis-server 7.0.15, get the same replies (EXPLORE-CEX-1)."""
    for name in ("ack-before-processing", "noack-reader", "short-min-idle"):
        for prop in protocol_reports[name].properties:
            c = prop.counterexample
            if c is None:
                continue
            redis.reset()
            s = redis.scenario(title=f"{name}: {prop.name}")
            for e in c.trace.events:
                if isinstance(e, Call):
                    got = s.call(e.c, *e.cmd)
                    if e.cmd[0] == b"XPENDING":  # the idle time is the real clock's
                        assert isinstance(got, Array) and isinstance(e.reply, Array)
                        assert [r.items[:2] + r.items[3:] for r in got.items] == \
                               [r.items[:2] + r.items[3:] for r in e.reply.items]  # type: ignore[union-attr]
                    else:
                        assert got == e.reply, (name, e.cmd)
                elif isinstance(e, Close):
                    s.close(e.c)
                elif isinstance(e, Note) and e.text.startswith("clock +"):
                    time.sleep(int(e.text.split("+")[1].split()[0]) / 1000 + 0.005)
            s.check()


# -- the command line ------------------------------------------------------------------------------


def test_cli_explores_a_configuration_and_exports(tmp_path: Path) -> None:
    """A JSON configuration (EXPLORE-CFG-2), the statistics (EXPLORE-3) and the graph exports (EXPLORE-4)."""
    config = tmp_path / "small.json"
    config.write_text('{"consumers": 2, "entries": 1, "actions": ["read", "ack", "claim", "tick"]}')
    runner = CliRunner()
    out = runner.invoke(explore_command, ["--config", str(config), "--graphml", str(tmp_path / "g.graphml"),
                                          "--dot", str(tmp_path / "g.dot")])
    assert out.exit_code == 0, out.output
    assert "configuration small:" in out.output and "states/s" in out.output
    assert "invariants of models/invariants.py: holds" in out.output
    assert (tmp_path / "g.graphml").read_text().startswith("<?xml")
    assert (tmp_path / "g.dot").read_text().startswith("digraph")


def test_cli_checks_a_protocol_and_writes_counterexamples(tmp_path: Path) -> None:
    """EXPLORE-CEX-2: numbered steps, and ``--traces`` writes traces that conform."""
    runner = CliRunner()
    out = runner.invoke(explore_command, ["--protocol", "noack-reader", "--traces", str(tmp_path), "--no-explain"])
    assert out.exit_code == 0, out.output
    assert f"{P.NO_LOSS}: violated  (as expected)" in out.output
    assert "2. c1: XREADGROUP GROUP g c1 COUNT 1 NOACK STREAMS s >" in out.output
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert traces
    for path in traces:
        assert check_trace(load(path)).status == "conform"


def test_cli_explains_counterexamples_with_the_explain_renderer() -> None:
    """EXPLORE-CEX-2: the counterexample rendered by ``xspec explain``."""
    out = CliRunner().invoke(explore_command, ["--protocol", "ack-before-processing"])
    assert out.exit_code == 0, out.output
    assert "Step by step (xspec explain):" in out.output
    assert "XACK s g 1-0" in out.output.split("Step by step (xspec explain):")[1]


def test_the_compact_configuration_is_fully_explored_and_every_invariant_holds() -> None:
    """The CI gate: the compact configuration, walked to the end (EXPLORE-1, EXPLORE-2)."""
    out = CliRunner().invoke(explore_command, ["--config", "compact", "--engine", "model"])
    assert out.exit_code == 0, out.output
    assert "configuration compact: 2,312 states" in out.output
    assert "invariants of models/invariants.py: holds" in out.output


def test_planned_successors_agree_with_running_the_model() -> None:
    """EXPLORE-MEMO-5: every successor a plan gives (from the memo or from the model) is what a fresh
    run of the model gives from the thawed state."""
    system = ConfigSystem(Configuration("plans", consumers=2, entries=3), symmetry=False)
    result, _ = explore(system, max_states=700)
    a = system.abstraction
    checked = 0
    for state in result.states[::4]:
        key = state[0]
        for step, new_state, _ in system.successors(state, a.ties(key, state[1])):
            if step.kind == "tick":
                continue
            server = a.thaw(key)
            if step.kind == "crash":
                server.close(step.proc + 1)
                server.connect(step.proc + 1)
            else:
                server.execute(step.proc + 1, list(step.argv))
            assert a.key(server) == new_state[0], (step, key)
            checked += 1
    assert checked > 300
