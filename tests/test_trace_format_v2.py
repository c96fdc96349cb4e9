"""trace/2 in xspec.spec.trace_format: one reader and one writer for both versions.

Traces written by hand from the contract (../shared/TRACE-FORMAT.md) are read,
written back in their one spelling, and every malformed line is refused with
one error naming the file and the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xspec.spec.resp import Array, Bulk, Int, Simple
from xspec.spec.resp import Push as PushReply
from xspec.spec.trace_format import (
    FORMAT,
    FORMAT_2,
    SINGLE_NODE,
    Call,
    Close,
    Connect,
    Crash,
    Header,
    Link,
    NodeSpec,
    Note,
    Pause,
    Push,
    Recv,
    ReplAck,
    ReplCmd,
    ReplSync,
    Restart,
    Resume,
    Send,
    Trace,
    TraceError,
    dump,
    dumps,
    find_traces,
    format_of,
    load,
    loads,
)

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT.parent / "shared" / "TRACE-FORMAT.md"
OWN = ROOT / "spec" / "trace-format.md"

R1 = "8f1d0e6c3b2a4f5e6d7c8b9a0f1e2d3c4b5a6978"
R2 = "0123456789abcdef0123456789abcdef01234567"

HEADER = ('{"xspec": "trace/2", "nodes": {'
          '"p": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["127.0.0.1:7001", "127.0.0.1:7101"], '
          '"config": {"save": "", "appendonly": "no", "repl-diskless-sync-delay": "0"}}, '
          '"r": {"server": {"name": "valkey", "version": "9.1.2"}, "addrs": ["127.0.0.1:7002"], '
          '"config": {"save": "", "appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "yes"}}}, '
          '"clock": "wall", "title": "every event of version 2", "source": "written", "tags": ["acked-write-lost"]}')

# A trace written by hand following the contract: every event type of version 2, in its one spelling.
EVERY_EVENT = HEADER + "\n" + "\n".join([
    '{"ev":"connect","c":1,"node":"r","t":1700000000000050}',
    '{"ev":"call","c":1,"node":"r","cmd":["REPLICAOF","127.0.0.1","7101"],"t0":1700000000000100,'
    '"t1":1700000000000200,"reply":{"simple":"OK"}}',
    f'{{"ev":"repl","from":"p","to":"r","sync":"full","replid":"{R1}","offset":0,"t":1700000000100000}}',
    '{"ev":"repl","from":"p","to":"r","ack":0,"t":1700000000150000}',
    '{"ev":"call","c":2,"node":"p","cmd":["XADD","s","1-1","f","v"],"t0":1700000000200000,'
    '"t1":1700000000200100,"reply":{"bulk":"1-1"}}',
    '{"ev":"repl","from":"p","to":"r","cmd":["SELECT","0"],"t":1700000000200200}',
    '{"ev":"repl","from":"p","to":"r","cmd":["XADD","s","1-1","f","v"],"t":1700000000200210}',
    '{"ev":"repl","from":"p","to":"r","ack":31,"fack":31,"t":1700000000200300}',
    '{"ev":"link","from":"p","to":"r","state":"held","by":"harness","t":1700000000300000}',
    '{"ev":"send","c":3,"node":"r","cmd":["XREAD","BLOCK","0","STREAMS","s","$"],"t":1700000000300100}',
    '{"ev":"link","from":"p","to":"r","state":"flowing","by":"harness","t":1700000000400000}',
    '{"ev":"link","from":"p","to":"r","state":"cut","by":"harness","t":1700000000500000}',
    f'{{"ev":"repl","from":"p","to":"r","sync":"partial","replid":"{R1}","t":1700000000600000}}',
    '{"ev":"pause","node":"p","t":1700000000700000}',
    '{"ev":"resume","node":"p","t":1700000000800000}',
    '{"ev":"call","c":4,"node":"r","cmd":["HELLO","3"],"t0":1700000000800100,"t1":1700000000800200,'
    '"reply":{"map":[[{"bulk":"server"},{"bulk":"valkey"}]]}}',
    '{"ev":"call","c":4,"node":"r","cmd":["SUBSCRIBE","ch"],"t0":1700000000800300,"t1":1700000000800400,'
    '"reply":{"push":[{"bulk":"subscribe"},{"bulk":"ch"},{"int":1}]}}',
    '{"ev":"push","c":4,"t":1700000000800500,"reply":{"push":[{"bulk":"message"},{"bulk":"ch"},{"bulk":"hi"}]}}',
    '{"ev":"crash","node":"r","t":1700000000900000}',
    '{"ev":"close","c":3,"by":"server","t":1700000000900100}',
    '{"ev":"note","text":"the replica comes back from its AOF"}',
    '{"ev":"restart","node":"r","t":1700000001000000}',
    '{"ev":"link","from":"p","to":"r","state":"cut","by":"server","t":1700000001000100}',
    f'{{"ev":"repl","from":"p","to":"r","sync":"full","replid":"{R2}","offset":52,"t":1700000001100000}}',
    '{"ev":"call","c":5,"node":"r","cmd":["XLEN","s"],"t0":1700000001200000,"t1":1700000001200100,'
    '"reply":{"int":1}}',
]) + "\n"


def test_a_hand_written_trace_with_every_event_is_read_and_written_back_in_its_one_spelling():
    trace = loads(EVERY_EVENT, "every.jsonl")
    assert format_of(trace) == FORMAT_2
    assert dumps(trace) == EVERY_EVENT
    h = trace.header
    assert h.nodes is not None and list(h.nodes) == ["p", "r"]
    assert h.nodes["r"] == NodeSpec("valkey", "9.1.2", ["127.0.0.1:7002"],
                                    {"save": "", "appendonly": "yes", "appendfsync": "always",
                                     "aof-use-rdb-preamble": "yes"})
    assert h.node_of_addr("127.0.0.1", 7101) == "p" and h.node_of_addr("127.0.0.1", "7002") == "r"
    assert h.node_of_addr("127.0.0.1", 9) is None
    kinds = [type(e) for e in trace.events]
    assert kinds == [Connect, Call, ReplSync, ReplAck, Call, ReplCmd, ReplCmd, ReplAck, Link, Send, Link, Link,
                     ReplSync, Pause, Resume, Call, Call, Push, Crash, Close, Note, Restart, Link, ReplSync, Call]
    e = trace.events
    assert e[1] == Call(1, [b"REPLICAOF", b"127.0.0.1", b"7101"], Simple("OK"), 1700000000000100,
                        1700000000000200, node="r")
    assert e[2] == ReplSync("p", "r", "full", R1, 0, t=1700000000100000)
    assert e[7] == ReplAck("p", "r", 31, 31, t=1700000000200300)
    assert e[6] == ReplCmd("p", "r", [b"XADD", b"s", b"1-1", b"f", b"v"], t=1700000000200210)
    assert e[12] == ReplSync("p", "r", "partial", R1, None, t=1700000000600000)
    assert e[17] == Push(4, PushReply((Bulk(b"message"), Bulk(b"ch"), Bulk(b"hi"))), t=1700000000800500)
    assert e[22] == Link("p", "r", "cut", "server", t=1700000001000100)
    assert e[18] == Crash("r", t=1700000000900000) and e[21] == Restart("r", t=1700000001000000)
    assert trace.client_nodes() == {1: "r", 2: "p", 3: "r", 4: "r", 5: "r"}


def test_the_file_reader_and_gzip_agree_with_the_string_reader(tmp_path):
    trace = loads(EVERY_EVENT)
    for name in ("t.jsonl", "t.jsonl.gz"):
        dump(trace, tmp_path / name)
        again = load(tmp_path / name)
        assert dumps(again) == EVERY_EVENT and again.path == str(tmp_path / name)
    assert find_traces([tmp_path]) == [tmp_path / "t.jsonl", tmp_path / "t.jsonl.gz"]


def test_node_may_be_left_out_when_the_header_has_one_node_and_is_then_written():
    text = ('{"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"}, '
            '"addrs": ["127.0.0.1:7001"], "config": {}}}, "clock": "wall"}\n'
            '{"ev":"send","c":1,"cmd":["SUBSCRIBE","ch"],"t":10}\n'
            '{"ev":"recv","c":1,"t":11,"reply":{"array":[{"bulk":"subscribe"},{"bulk":"ch"},{"int":1}]}}\n'
            '{"ev":"push","c":1,"t":12,"reply":{"array":[{"bulk":"message"},{"bulk":"ch"},{"bulk":"x"}]}}\n')
    trace = loads(text)
    assert trace.events[0] == Send(1, [b"SUBSCRIBE", b"ch"], t=10, node="a")
    assert trace.events[2] == Push(1, Array((Bulk(b"message"), Bulk(b"ch"), Bulk(b"x"))), t=12)
    written = dumps(trace)
    assert '{"ev":"send","c":1,"node":"a","cmd"' in written
    assert dumps(loads(written)) == written


def test_a_trace_1_file_reads_as_one_node():
    text = ('{"xspec": "trace/1", "server": {"name": "valkey", "version": "9.1.2"}, "clock": "wall", '
            '"config": {"stream-node-max-entries": "3"}}\n'
            '{"ev":"call","c":1,"cmd":["XLEN","s"],"t0":1,"t1":2,"reply":{"int":0}}\n')
    trace = loads(text)
    assert trace.header.nodes is None and format_of(trace) == FORMAT
    assert trace.header.node_specs() == {SINGLE_NODE: NodeSpec("valkey", "9.1.2", [],
                                                               {"stream-node-max-entries": "3"})}
    assert trace.events[0] == Call(1, [b"XLEN", b"s"], Int(0), 1, 2)
    assert trace.client_nodes() == {1: SINGLE_NODE}
    assert dumps(trace) == text


def test_the_writer_writes_trace_1_for_one_node_and_no_version_2_event():
    spec = NodeSpec("redis", "6.2.14", ["127.0.0.1:7001"], {"save": "", "appendonly": "no"})
    trace = Trace(Header(nodes={"a": spec}, title="one"), [Call(1, [b"PING"], Simple("PONG"), 1, 2, node="a")])
    text = dumps(trace)
    assert text.splitlines()[0] == ('{"xspec": "trace/1", "server": {"name": "redis", "version": "6.2.14"}, '
                                    '"clock": "wall", "config": {"save": "", "appendonly": "no"}, "title": "one"}')
    assert text.splitlines()[1] == '{"ev":"call","c":1,"cmd":["PING"],"t0":1,"t1":2,"reply":{"simple":"PONG"}}'
    # A skew, a node named by expect, a second node or a version-2 event each need trace/2.
    for changed in (Trace(Header(nodes={"a": NodeSpec(**{**spec.__dict__, "skew_ms": 5})}), trace.events),
                    Trace(Header(nodes={"a": spec}, expect={"verdict": "diverge", "event": 0, "node": "a"}),
                          trace.events),
                    Trace(Header(nodes={"a": spec, "b": NodeSpec(addrs=["127.0.0.1:7002"],
                                                                 config={"save": "", "appendonly": "no"})}),
                          trace.events),
                    Trace(Header(nodes={"a": spec}), [*trace.events, Pause("a", t=3), Resume("a", t=4)])):
        assert format_of(changed) == FORMAT_2
        assert dumps(loads(dumps(changed))) == dumps(changed)


def test_a_trace_1_header_with_a_push_is_written_as_trace_2_with_one_node():
    trace = Trace(Header(config={"stream-node-max-bytes": "0"}),
                  [Call(1, [b"HELLO", b"3"], Simple("OK"), 1, 2),
                   Push(1, PushReply((Bulk(b"invalidate"),)), t=3)])
    text = dumps(trace)
    header = json.loads(text.splitlines()[0])
    assert header["xspec"] == FORMAT_2
    assert header["nodes"] == {SINGLE_NODE: {"server": {"name": "redis", "version": "7.0.15"}, "addrs": [],
                                             "config": {"stream-node-max-bytes": "0"}}}
    again = loads(text)
    assert again.events[0] == Call(1, [b"HELLO", b"3"], Simple("OK"), 1, 2, node=SINGLE_NODE)
    assert dumps(again) == text


def test_a_version_2_client_event_without_a_node_cannot_be_written_for_several_nodes():
    two = {n: NodeSpec(addrs=[f"127.0.0.1:700{i}"], config={"save": "", "appendonly": "no"})
           for i, n in enumerate("ab")}
    with pytest.raises(ValueError, match="names no node"):
        dumps(Trace(Header(nodes=two), [Call(1, [b"PING"], Simple("PONG"), 1, 2)]))


def test_a_virtual_trace_carries_now_on_harness_events():
    text = ('{"xspec": "trace/2", "nodes": {"a": {"server": {"name": "redis", "version": "7.0.15"}, '
            '"addrs": ["h:1"], "config": {"save": "", "appendonly": "no"}, "skew_ms": -20}, '
            '"b": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:2"], '
            '"config": {"save": "", "appendonly": "no"}, "skew_ms": 15}}, "clock": "virtual", "source": "generated"}\n'
            '{"ev":"call","c":1,"node":"b","cmd":["REPLICAOF","h","1"],"now":100,"reply":{"simple":"OK"}}\n'
            f'{{"ev":"repl","from":"a","to":"b","sync":"full","replid":"{R1}","offset":0,"now":101}}\n'
            '{"ev":"crash","node":"a","now":102}\n')
    trace = loads(text)
    assert trace.header.nodes is not None and trace.header.nodes["a"].skew_ms == -20
    assert trace.events[2] == Crash("a", now=102)
    assert dumps(trace) == text


def _v2(*events: str, nodes: str | None = None, clock: str = "wall") -> str:
    nodes = nodes or ('{"p": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["127.0.0.1:7001"], '
                      '"config": {"save": "", "appendonly": "no"}}, '
                      '"r": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["127.0.0.1:7002"], '
                      '"config": {"save": "", "appendonly": "no"}}}')
    return "\n".join([f'{{"xspec": "trace/2", "nodes": {nodes}, "clock": "{clock}"}}', *events]) + "\n"


CALL_P = '{"ev":"call","c":1,"node":"p","cmd":["PING"],"t0":1,"t1":2,"reply":{"simple":"PONG"}}'
ONE_NODE = '{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["127.0.0.1:1"], "config": {}}}'

BAD = [
    # header
    ('{"xspec": "trace/2"}', 1, "missing field 'nodes'"),
    ('{"xspec": "trace/2", "nodes": {}}', 1, "missing field 'nodes'"),
    ('{"xspec": "trace/3", "nodes": {}}', 1, "not a trace/1 header"),
    (_v2().replace('"clock"', '"server": {"name": "redis", "version": "7.0.15"}, "clock"'), 1,
     "top-level 'server' belongs to trace/1"),
    (_v2(nodes='{"a": {"addrs": [], "config": {}}}'), 1, "missing field 'server'"),
    (_v2(nodes='{"a": {"server": {"name": "redis"}, "addrs": [], "config": {}}}'), 1,
     "node 'a': 'server' needs string 'name' and 'version'"),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "config": {}}}'), 1,
     "node 'a': 'addrs' must be a list"),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["localhost"], "config": {}}}'),
     1, "an address is \"host:port\""),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:70000"], "config": {}}}'),
     1, "an address is \"host:port\""),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:1"], "config": {"x": 1}}}'),
     1, "node 'a': 'config' must map"),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:1"], "config": {}, '
               '"skew_ms": 1.5}}'), 1, "'skew_ms' must be an integer"),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:1"], "config": {}}, '
               '"b": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:1"], "config": {}}}'),
     1, "address h:1 is given to nodes 'a' and 'b'"),
    (_v2(nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:1"], '
               '"config": {"save": ""}}, "b": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:2"], '
               '"config": {"save": "", "appendonly": "no"}}}'), 1, "node 'a': 'config' must name 'appendonly'"),
    (_v2('{"ev":"crash","node":"a","t":1}',
         nodes='{"a": {"server": {"name": "redis", "version": "7.0.15"}, "addrs": ["h:1"], '
               '"config": {"save": "", "appendonly": "yes"}}}'), 1,
     "'appendfsync', 'aof-use-rdb-preamble'"),
    (_v2().replace('"clock": "wall"', '"clock": "wall", "expect": {"verdict": "diverge", "node": "x"}'), 1,
     "'expect' names node 'x'"),
    (_v2().replace('"clock": "wall"', '"clock": "wall", "slack_ms": -1'), 1, "'slack_ms' must be"),
    # client events
    (_v2('{"ev":"call","c":1,"cmd":["PING"],"t0":1,"t1":2,"reply":{"simple":"PONG"}}'), 2,
     "missing field 'node' (the header has 2 nodes)"),
    (_v2(CALL_P.replace('"p"', '"q"')), 2, "'node' names 'q', which is not a node of the header (p, r)"),
    (_v2(CALL_P, CALL_P.replace('"p"', '"r"')), 3, "client 1 talks to node 'p', not 'r'"),
    (_v2('{"ev":"recv","c":7,"t":1,"reply":{"int":1}}'), 2, "client 7 has not sent anything yet"),
    (_v2(CALL_P, '{"ev":"recv","c":1,"node":"r","t":1,"reply":{"int":1}}'), 3, "client 1 talks to node 'p'"),
    (_v2(CALL_P, '{"ev":"close","c":1,"t":3,"by":"client"}', CALL_P), 4, "client 1 was closed (close)"),
    (_v2(CALL_P, '{"ev":"crash","node":"p","t":3}', CALL_P), 4, "client 1 was closed (crash)"),
    (_v2(CALL_P, '{"ev":"crash","node":"p","t":3}', '{"ev":"close","c":1,"t":4,"by":"client"}'), 4,
     "its close is by \"server\""),
    (_v2('{"ev":"push","c":1,"t":1}'), 2, "client 1 has not sent"),
    (_v2(CALL_P, '{"ev":"push","c":1,"t":1}'), 3, "missing field 'reply'"),
    (_v2('{"ev":"call","c":1,"node":"p","cmd":[],"reply":{"int":1}}'), 2, "'cmd' is an empty array"),
    (_v2('{"ev":"bogus"}'), 2, "unknown event type 'bogus'"),
    (_v2('[1]'), 2, "an event must be a JSON object"),
    # node events
    (_v2('{"ev":"crash","t":1}'), 2, "missing field 'node'"),
    (_v2('{"ev":"crash","node":"p"}'), 2, "a 'crash' event in a wall trace needs 't'"),
    (_v2('{"ev":"pause","node":"p","t":1}', clock="virtual"), 2, "in a virtual trace needs 'now'"),
    (_v2('{"ev":"crash","node":"p","t":1}', '{"ev":"crash","node":"p","t":2}'), 3, "crashed already"),
    (_v2('{"ev":"crash","node":"p","t":1}', '{"ev":"pause","node":"p","t":2}'), 3, "cannot be paused"),
    (_v2('{"ev":"pause","node":"p","t":1}', '{"ev":"pause","node":"p","t":2}'), 3, "paused already"),
    (_v2('{"ev":"resume","node":"p","t":1}'), 2, "not paused, so it cannot be resumed"),
    (_v2('{"ev":"pause","node":"p","t":1}', '{"ev":"restart","node":"p","t":2}'), 3, "paused: it cannot be restarted"),
    # links
    (_v2('{"ev":"link","from":"p","to":"p","state":"held","t":1}'), 2, "not 'p' to itself"),
    (_v2('{"ev":"link","from":"p","to":"x","state":"held","t":1}'), 2, "'to' names 'x'"),
    (_v2('{"ev":"link","to":"r","state":"held","t":1}'), 2, "missing field 'from'"),
    (_v2('{"ev":"link","from":"p","to":"r","state":"down","t":1}'), 2, "'state' must be"),
    (_v2('{"ev":"link","from":"p","to":"r","state":"cut","by":"sentinel","t":1}'), 2, "'by' must be"),
    (_v2('{"ev":"link","from":"p","to":"r","state":"held","by":"server","t":1}'), 2, "a server can only cut it"),
    # repl
    (_v2('{"ev":"repl","from":"p","to":"r","t":1}'), 2, "exactly one of 'cmd', 'sync' and 'ack', not none"),
    (_v2('{"ev":"repl","from":"p","to":"r","ack":1,"cmd":["PING"],"t":1}'), 2, "not 'cmd' and 'ack'"),
    (_v2('{"ev":"repl","from":"p","to":"r","ack":-1,"t":1}'), 2, "'ack' must not be negative"),
    (_v2('{"ev":"repl","from":"p","to":"r","ack":1,"fack":"2","t":1}'), 2, "field 'fack' has the wrong type"),
    (_v2('{"ev":"repl","from":"p","to":"r","cmd":"PING","t":1}'), 2, "field 'cmd' has the wrong type"),
    (_v2('{"ev":"repl","from":"p","to":"r","sync":"half","replid":"' + R1 + '","t":1}'), 2, "'sync' must be"),
    (_v2('{"ev":"repl","from":"p","to":"r","sync":"full","replid":"abc","offset":0,"t":1}'), 2,
     "'replid' must be 40 lowercase hexadecimal"),
    (_v2('{"ev":"repl","from":"p","to":"r","sync":"full","replid":"' + R1 + '","t":1}'), 2, "missing field 'offset'"),
    (_v2('{"ev":"repl","from":"p","to":"r","sync":"partial","replid":"' + R1 + '","offset":3,"t":1}'), 2,
     "a partial resynchronisation (+CONTINUE) has no 'offset'"),
    # version 2 events in a version 1 trace
    ('{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}}\n{"ev":"crash","node":"a","t":1}', 2,
     "a 'crash' event needs a trace/2 header"),
]


@pytest.mark.parametrize("text, line, message", BAD, ids=[f"{i}-{m[:30]}" for i, (_, _, m) in enumerate(BAD)])
def test_bad_input_is_one_error_naming_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text if text.endswith("\n") else text + "\n")
    with pytest.raises(TraceError) as err:
        load(path)
    assert err.value.path == str(path) and err.value.line == line, str(err.value)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert message in str(err.value), str(err.value)
    with pytest.raises(TraceError) as again:
        loads(text, "bad.jsonl")
    assert str(again.value) == str(err.value).replace(str(path), "bad.jsonl")


def test_a_one_node_trace_2_needs_no_persistence_settings_until_it_restarts():
    loads(_v2('{"ev":"pause","node":"a","t":1}', '{"ev":"resume","node":"a","t":2}', nodes=ONE_NODE))
    with pytest.raises(TraceError, match=r":1: node 'a': 'config' must name 'save', 'appendonly'"):
        loads(_v2('{"ev":"crash","node":"a","t":1}', '{"ev":"restart","node":"a","t":2}', nodes=ONE_NODE))


def test_a_crashed_clients_close_by_the_server_may_be_written():
    trace = loads(_v2(CALL_P, '{"ev":"crash","node":"p","t":3}', '{"ev":"close","c":1,"t":4,"by":"server"}'))
    assert trace.events[2] == Close(1, "server", t=4)
    assert isinstance(trace.events[0], Call) and trace.events[0].node == "p"


def _json_blocks(text: str) -> list[str]:
    return re.findall(r"^```json\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_pages_version_2_example_reads_and_is_written_in_its_one_spelling():
    examples = [b for b in _json_blocks(OWN.read_text(encoding="utf-8")) if b.startswith('{"xspec": "trace/2"')
                and "\n" in b.strip() and '"ev"' in b]
    assert len(examples) == 1
    trace = loads(examples[0])
    assert dumps(trace) == examples[0]
    assert {type(e) for e in trace.events} == {Call, ReplSync, ReplAck, ReplCmd}


@pytest.mark.skipif(not CONTRACT.is_file(), reason=f"no shared contract at {CONTRACT}")
def test_the_contracts_version_2_header_reads():
    blocks = [b for b in _json_blocks(CONTRACT.read_text(encoding="utf-8")) if '"trace/2"' in b]
    assert blocks
    for block in blocks:
        trace = loads(json.dumps(json.loads(block)))  # the contract prints its header over several lines
        assert trace.header.nodes is not None and len(trace.header.nodes) >= 2
        assert trace.header.nodes["a"].addrs == ["127.0.0.1:7001", "127.0.0.1:7101"]


def test_recorded_single_server_traces_still_write_back_unchanged():
    corpus = find_traces([ROOT / "traces" / "redis-7.0.15"])[:40]
    assert corpus
    for path in corpus:
        trace = load(path)
        assert trace.header.nodes is None and format_of(trace) == FORMAT
        assert dumps(trace) == path.read_text(encoding="utf-8"), path


def test_a_recv_after_a_send_on_a_single_node_needs_no_node():
    trace = loads(_v2('{"ev":"send","c":1,"cmd":["PING"],"t":1}', '{"ev":"recv","c":1,"t":2,"reply":{"simple":"PONG"}}',
                      nodes=ONE_NODE))
    assert trace.events[1] == Recv(1, Simple("PONG"), t=2)
