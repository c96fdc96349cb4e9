"""The multi-node recording harness (xspec.traces.cluster) and the replication corpora it recorded.

Live tests start real servers on loopback (a handful of scenarios, well
under a minute); the rest reads the committed corpora and feeds the
replication-stream parser bytes written by hand.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.spec.resp import Array, Bulk, Error, Int
from xspec.spec.trace_format import (
    Call,
    Close,
    Crash,
    Link,
    Pause,
    Recv,
    ReplAck,
    ReplCmd,
    ReplSync,
    Restart,
    Resume,
    Send,
    Trace,
    find_traces,
    load,
)
from xspec.traces.cluster.corpus import record, select
from xspec.traces.cluster.harness import Cluster
from xspec.traces.cluster.nodes import KNOWN_SERVERS, find_server
from xspec.traces.cluster.replstream import PrimaryToReplica, ReplicaToPrimary
from xspec.traces.cluster.scenarios import SCENARIOS, find

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "traces" / "replication"
REPLID = "0123456789abcdef0123456789abcdef01234567"


def _server(label: str):
    try:
        return find_server(label)
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def redis70():
    return _server("redis-7.0.15")


# -- the replication stream parser ------------------------------------------------------------


def _feed_in_pieces(parser, data: bytes, seed: int):
    rng = random.Random(seed)
    units, i = [], 0
    while i < len(data):
        n = rng.randint(1, 7)
        units += parser.feed(data[i:i + n])
        i += n
    return units


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("diskless", [True, False])
def test_the_primarys_side_is_cut_into_units_whatever_the_reads(seed, diskless):
    mark = bytes(range(65, 105))  # 40 different bytes, as random as a real mark for this purpose
    snapshot = b"REDIS0010" + bytes(range(60)) + bytes(range(200, 256)) + b"\r\n*1\r\n" + mark[:39]  # looks like a command and a mark
    body = b"$EOF:" + mark + b"\r\n" + snapshot + mark if diskless else b"$%d\r\n" % len(snapshot) + snapshot
    data = (b"+PONG\r\n+OK\r\n+OK\r\n\n+FULLRESYNC " + REPLID.encode() + b" 42\r\n\n\n" + body
            + b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$3\r\n1-1\r\n$1\r\nf\r\n$0\r\n\r\n"
            + b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n")
    units = _feed_in_pieces(PrimaryToReplica(), data, seed)
    assert b"".join(u.data for u in units) == data
    lines = [u.text for u in units if u.kind == "line"]
    assert lines == ["+PONG", "+OK", "+OK", f"+FULLRESYNC {REPLID} 42"]
    assert b"".join(u.data for u in units if u.kind == "snapshot") == body
    assert [u.argv for u in units if u.kind == "command"] == [
        [b"SELECT", b"0"], [b"XADD", b"s", b"1-1", b"f", b""], [b"REPLCONF", b"GETACK", b"*"]]


def test_a_partial_resynchronisation_goes_straight_to_the_stream():
    data = b"+PONG\r\n+CONTINUE " + REPLID.encode() + b"\r\n*1\r\n$4\r\nPING\r\n"
    units = PrimaryToReplica().feed(data)
    assert [u.kind for u in units] == ["line", "line", "command"] and units[2].argv == [b"PING"]


def test_the_replicas_side_is_commands_and_newlines():
    data = (b"*1\r\n$4\r\nPING\r\n\n*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$4\r\n7001\r\n"
            b"*5\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$2\r\n31\r\n$4\r\nFACK\r\n$2\r\n31\r\n")
    units = _feed_in_pieces(ReplicaToPrimary(), data, 1)
    assert b"".join(u.data for u in units) == data
    assert [u.argv for u in units if u.kind == "command"] == [
        [b"PING"], [b"REPLCONF", b"listening-port", b"7001"], [b"REPLCONF", b"ACK", b"31", b"FACK", b"31"]]


# -- live: the harness against real servers --------------------------------------------------


def _order_key(e) -> int:
    return e.t1 if isinstance(e, Call) else e.t


def _check_recorded(trace: Trace) -> None:
    """What every recorded trace promises: wall times in the file's order, calls with nothing of their node
    in between (the harness writes send/recv otherwise), and repl events on the links."""
    keys = [_order_key(e) for e in trace.events if not hasattr(e, "text")]
    assert keys == sorted(keys)
    assert any(isinstance(e, ReplSync) for e in trace.events)


def test_a_replicated_group_read_is_recorded_with_its_stream(redis70):
    trace = record(find("replicated/xreadgroup-new"), redis70)
    _check_recorded(trace)
    assert trace.header.nodes is not None and set(trace.header.nodes) == {"a", "b"}
    for spec in trace.header.nodes.values():
        assert spec.config["repl-diskless-sync-delay"] == "0" and spec.config["save"] == ""
        assert spec.addrs[1] == f"127.0.0.1:{spec.config['replica-announce-port']}"
    stream = [e.cmd for e in trace.events if isinstance(e, ReplCmd)]
    assert [b"SELECT", b"0"] in stream and [b"XGROUP", b"CREATE", b"s", b"g", b"0"] in stream
    assert any(cmd[0] == b"XCLAIM" and b"LASTID" in cmd for cmd in stream)
    sync = next(e for e in trace.events if isinstance(e, ReplSync))
    assert (sync.primary, sync.replica, sync.sync, sync.offset) == ("a", "b", "full", 0)
    assert any(isinstance(e, ReplAck) and e.replica == "b" for e in trace.events)
    replica_reads = [e for e in trace.events if isinstance(e, Call) and e.node == "b"]
    assert replica_reads[-1].cmd == [b"XLEN", b"s"] and replica_reads[-1].reply == Int(2)


def test_a_held_link_delays_the_stream_and_a_cut_resynchronises_partially(redis70):
    trace = record(find("resync/partial-after-cut"), redis70)
    _check_recorded(trace)
    links = [(e.state, e.by) for e in trace.events if isinstance(e, Link)]
    assert links == [("held", "harness"), ("cut", "harness"), ("flowing", "harness")]
    held_at = next(i for i, e in enumerate(trace.events) if isinstance(e, Link))
    flow_at = max(i for i, e in enumerate(trace.events) if isinstance(e, Link))
    assert not any(isinstance(e, ReplCmd) for e in trace.events[held_at:flow_at])
    syncs = [e.sync for e in trace.events if isinstance(e, ReplSync)]
    assert syncs == ["full", "partial"]
    assert any(isinstance(e, ReplCmd) and e.cmd[:3] == [b"XADD", b"s", b"2-1"] for e in trace.events[flow_at:])


def test_an_acknowledged_xadd_is_lost_on_promotion_and_the_old_primary_resyncs_fully(redis70):
    trace = record(find("failover/acked-xadd-lost"), redis70)
    _check_recorded(trace)
    replies = {(e.node, e.cmd[0]): e.reply for e in trace.events if isinstance(e, Call)}
    one = Array((Array((Bulk(b"1-1"), Array((Bulk(b"f"), Bulk(b"v"))))),))
    assert replies[("b", b"XRANGE")] == one and replies[("a", b"XRANGE")] == one
    assert [(e.state, e.by) for e in trace.events if isinstance(e, Link)] == [
        ("held", "harness"), ("cut", "server"), ("flowing", "harness")]
    assert [(e.primary, e.replica, e.sync) for e in trace.events if isinstance(e, ReplSync)] == [
        ("a", "b", "full"), ("b", "a", "full")]


def test_crash_restart_pause_and_resume_are_recorded(redis70):
    with Cluster(redis70, ("a", "b"), config={"appendonly": "yes", "appendfsync": "always"}) as h:
        h.replicaof("b", "a")
        p = h.client("a")
        p.call("XADD", "s", "1-1", "f", "v")
        blocked = h.client("a")
        blocked.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        assert blocked.is_waiting()
        h.pause("b")
        assert p.call("WAIT", "1", "100") == Int(0)
        h.resume("b")
        h.crash("a")
        h.restart("a")
        h.settle("b")
        assert h.client("a").call("XLEN", "s") == Int(1)
        trace = h.trace()
    _check_recorded(trace)
    kinds = [type(e) for e in trace.events if isinstance(e, (Pause, Resume, Crash, Restart, Close))]
    assert kinds == [Pause, Resume, Crash, Close, Close, Restart]
    assert {e.c for e in trace.events if isinstance(e, Close)} == {p.c, blocked.c}
    assert not any(isinstance(e, Recv) and e.c == blocked.c for e in trace.events)
    assert isinstance(trace.events[-1], (Call, ReplAck, ReplCmd, ReplSync))


@pytest.mark.parametrize("label", ["redis-6.2.14", "valkey-9.1.2"])
def test_the_other_servers_are_recorded_through_the_proxy(label):
    kind = _server(label)
    trace = record(find("wait/wait-timeout-held"), kind)
    _check_recorded(trace)
    assert trace.header.nodes is not None and trace.header.nodes["a"].server_name == kind.name
    waits = [e.reply for e in trace.events if isinstance(e, (Call, Recv)) and e.reply in (Int(0), Int(1))]
    assert waits == [Int(0), Int(1)]


def test_a_write_on_a_replica_is_recorded_as_refused(redis70):
    with Cluster(redis70, ("a", "b")) as h:
        h.replicaof("b", "a")
        reply = h.client("b").call("XADD", "s", "*", "f", "v")
    assert isinstance(reply, Error) and reply.text.startswith("READONLY")


# -- the command ---------------------------------------------------------------------------


def test_record_cluster_lists_and_refuses_bad_input(tmp_path):
    runner = CliRunner()
    r = runner.invoke(main, ["record-cluster", "--list"])
    assert r.exit_code == 0 and "failover/acked-xadd-lost" in r.output
    assert len(r.output.splitlines()) == len(SCENARIOS)
    cases = [
        (["--only", "no-such-scenario", "--out", str(tmp_path)], "no scenario matches"),
        (["--only", "wait-met"], "--out is required"),
        (["--server", "redis-9.9.9", "--out", str(tmp_path)], "redis-9.9.9"),
        (["--out", str(tmp_path / "f"), "--only", "wait-met"], "is a file"),
        (["--binary", str(tmp_path / "nope"), "--out", str(tmp_path)], "nope"),
    ]
    (tmp_path / "f").write_text("")
    for args, message in cases:
        r = runner.invoke(main, ["record-cluster", *args])
        assert r.exit_code == 2, (args, r.output)
        assert message in r.output and "Traceback" not in r.output, (args, r.output)


def test_record_cluster_refuses_an_unwritable_folder(tmp_path):
    (tmp_path / "file").write_text("")
    r = CliRunner().invoke(main, ["record-cluster", "--only", "wait/wait-met", "--out", str(tmp_path / "file" / "x")])
    assert r.exit_code == 2 and "cannot write" in r.output and "Traceback" not in r.output


def test_record_cluster_writes_a_trace(tmp_path, redis70):
    r = CliRunner().invoke(main, ["record-cluster", "--only", "wait/wait-in-multi", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    trace = load(tmp_path / "wait" / "wait-in-multi.jsonl")
    assert trace.header.tags == ["replication", "wait"]
    assert not (tmp_path / "README.md").exists()  # a partial recording leaves the README alone


# -- the committed corpora -------------------------------------------------------------------


ANOMALIES = ROOT / "spec" / "anomalies.md"


def _anomaly_tags() -> set[str]:
    text = ANOMALIES.read_text(encoding="utf-8")
    tables = text.split("## Where real servers show them", 1)[0]
    tags = {row.split("|")[-2].strip().strip("`") for row in tables.splitlines()
            if row.startswith("| ") and not row.startswith(("| anomaly", "|---"))}
    other = text.split("## Other tags", 1)[1]
    return tags | set(re.findall(r"`([a-z0-9-]+)`", other))


def test_every_scenario_tag_is_named_in_the_anomaly_vocabulary():
    known = _anomaly_tags()
    topics = {s.topic for s in SCENARIOS}
    for s in SCENARIOS:
        assert set(s.tags) - known - topics == set(), s.name


@pytest.mark.parametrize("label", KNOWN_SERVERS)
def test_each_corpus_has_sixty_traces_with_repl_events_and_a_readme(label):
    folder = CORPORA / label
    files = find_traces([folder])
    assert len(files) >= 60
    readme = (folder / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([^`]+\.jsonl)` \|", readme, re.MULTILINE))
    assert listed == {str(f.relative_to(folder)) for f in files}
    name, _, version = label.partition("-")
    for f in files:
        trace = load(f)
        assert trace.header.nodes is not None, f
        assert {(n.server_name, n.server_version) for n in trace.header.nodes.values()} == {(name, version)}, f
        assert any(isinstance(e, ReplSync) for e in trace.events), f
        assert "replication" in (trace.header.tags or []), f


def test_the_corpora_record_the_same_scenarios():
    names = [{str(f.relative_to(CORPORA / label)) for f in find_traces([CORPORA / label])} for label in KNOWN_SERVERS]
    assert all(n == {s.path for s in select(None)} for n in names)


def test_every_failover_anomaly_is_shown_on_redis_7_0():
    folder = CORPORA / "redis-7.0.15"
    shown = set()
    for f in find_traces([folder / "failover"]):
        shown |= set(load(f).header.tags or [])
    for tag in ("acked-add-lost", "acked-pending-again", "last-delivered-regressed", "two-owners",
                "delivery-count-regressed", "consumer-vanished", "deleted-entry-returned", "id-reissued", "stale-ack",
                "wait-prevents-loss", "wait-insufficient"):
        assert tag in shown, tag


def test_sends_of_a_recorded_trace_are_answered_or_closed():
    for f in find_traces([CORPORA / "redis-7.0.15"]):
        trace = load(f)
        open_sends: dict[int, int] = {}
        for e in trace.events:
            if isinstance(e, Send):
                open_sends[e.c] = open_sends.get(e.c, 0) + 1
            elif isinstance(e, Recv):
                open_sends[e.c] -= 1
                assert open_sends[e.c] >= 0, f
