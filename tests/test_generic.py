"""Differential tests of the keyspace, connection and admin commands (spec/rules/generic.md, server.md).

Every scenario runs on the real 7.0.15 server and is then checked on the
model; expectations are the server's replies. Each runs in RESP2 and RESP3.
"""

from __future__ import annotations

import time

import pytest

from tests.support import scenario
from xspec.models import ManualClock, Server
from xspec.spec.environment import environment_matches
from xspec.spec.glob import pattern_matches
from xspec.spec.resp import Array, Bulk, Int, Map, Verbatim

pytestmark = pytest.mark.redis

PROTOCOLS = [2, 3]






@pytest.mark.parametrize("proto", PROTOCOLS)
def test_ping_echo_and_dispatch_errors(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "PING")  # PING-2
    s.call(1, "ping", "hello")
    s.call(1, "PING", "a", "b")  # PING-1
    s.call(1, "ECHO", "")  # ECHO-1
    s.call(1, "ECHO", "a", "b")  # DISPATCH-2
    s.call(1, "NOSUCH", "x" * 200, "y")  # DISPATCH-1: arguments cut at 128 bytes
    s.call(1, "NOSUCH", "a\r\nb")  # DISPATCH-1: CR and LF become spaces
    s.call(1, "CLIENT", "SETINFO", "LIB-NAME", "redis-py")  # what redis-py sends at connect
    s.call(1, "CLIENT", "MAINT_NOTIFICATIONS", "ON", "moving-endpoint-type", "internal-fqdn")
    s.call(1, "CLIENT")  # DISPATCH-2 on the container
    s.call(1, "CONFIG", "GET")  # DISPATCH-2 on a subcommand
    s.call(1, "GET")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_select_and_swapdb(redis, proto):
    s = scenario(redis, proto)
    for arg in ("16", "-1", "x", "1.5", " 1", "01", "99999999999"):  # SELECT-1, SELECT-2
        s.call(1, "SELECT", arg)
    s.call(1, "SET", "k", "zero")
    s.call(1, "SELECT", "1")  # SELECT-3
    s.call(1, "GET", "k")
    s.call(1, "SET", "k", "one")
    s.call(1, "SWAPDB", "x", "1")  # SWAPDB-1
    s.call(1, "SWAPDB", "0", "x")
    s.call(1, "SWAPDB", "99999999999", "x")
    s.call(1, "SWAPDB", "0", "16")  # SWAPDB-2
    s.call(1, "SWAPDB", "-1", "0")
    s.call(1, "SWAPDB", "0", "1")  # SWAPDB-3
    s.call(1, "GET", "k")
    s.call(2, "GET", "k")  # client 2 is in database 0, which now holds "one"
    s.call(1, "SWAPDB", "1", "1")
    s.call(1, "DBSIZE")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_del_unlink_exists_type_dbsize(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "SET", "a", "1")
    s.call(1, "SET", "b", "2")
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "EXISTS", "a", "a", "b", "nokey")  # EXISTS-1
    s.call(1, "TYPE", "a")  # TYPE-1
    s.call(1, "TYPE", "s")
    s.call(1, "TYPE", "nokey")
    s.call(1, "DBSIZE")  # DBSIZE-1
    s.call(1, "DEL", "a", "a", "nokey")  # DEL-1, DEL-2
    s.call(1, "UNLINK", "b", "s", "b")  # DEL-5
    s.call(1, "DEL", "nokey")
    s.call(1, "DBSIZE")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_rename(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "RENAME", "nokey", "nokey")  # RENAME-1
    s.call(1, "RENAME", "nokey", "b")
    s.call(1, "SET", "a", "1")
    s.call(1, "RENAME", "a", "a")  # RENAME-2
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "RENAME", "a", "s")  # RENAME-3: a string replaces a stream
    s.call(1, "TYPE", "s")
    s.call(1, "XADD", "t", "2-1", "f", "v")
    s.call(1, "RENAME", "t", "s")
    s.call(1, "TYPE", "s")
    s.call(1, "XLEN", "s")
    s.call(1, "EXISTS", "t", "a")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_set_get_options_and_wrongtype(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "GET", "k")  # GET-1
    s.call(1, "SET", "k", "v", "NX")  # SET-4
    s.call(1, "SET", "k", "w", "NX")
    s.call(1, "SET", "k", "w", "nx", "GET")
    s.call(1, "SET", "k", "w", "XX", "GET")  # SET-3
    s.call(1, "SET", "missing", "v", "XX")
    s.call(1, "SET", "missing", "v", "XX", "GET")
    s.call(1, "SET", "k", "x", "GET", "GET", "KEEPTTL")
    for bad in (("NX", "XX"), ("XX", "NX"), ("KEEPTTL", "EX", "1"), ("EX", "1", "KEEPTTL"), ("EX", "1", "PX", "1"),
                ("EX",), ("FOO",), ("GETX",), ("EX", "1", "EXAT", "5")):  # SET-1
        s.call(1, "SET", "k", "y", *bad)
    for bad in (("EX", "0"), ("EX", "-1"), ("EX", "x"), ("PX", "9223372036854775807"),
                ("EX", "9223372036854775"), ("EX", "9223372036854776"), ("EXAT", "0"), ("PXAT", "-5")):  # SET-2
        s.call(1, "SET", "k", "y", *bad)
    s.call(1, "SET", "k", "z", "EX", "100", "EX", "200")  # SET-1: the same expiry option twice is allowed
    s.call(1, "GET", "k")
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "GET", "s")  # GET-1
    s.call(1, "SET", "s", "v", "GET")  # SET-3: WRONGTYPE before anything else happens
    s.call(1, "SET", "s", "v", "NX")
    s.call(1, "SET", "s", "v", "EX", "0", "GET")  # SET-2 comes before SET-3
    s.call(1, "TYPE", "s")
    s.call(1, "SET", "s", "v")  # SET-5: a stream is replaced by a string
    s.call(1, "TYPE", "s")
    s.call(1, "XADD", "s", "2-1", "f", "v")
    s.call(1, "SET", "n\x00ul", "v", "GET\x00junk")  # SET-1: options compared as C strings
    s.call(1, "GET", "n\x00ul")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_flushdb_flushall(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "SET", "a", "1")
    s.call(1, "SELECT", "2")
    s.call(1, "SET", "b", "1")
    s.call(1, "FLUSHDB", "foo")  # FLUSH-1
    s.call(1, "FLUSHDB", "SYNC", "ASYNC")
    s.call(1, "FLUSHALL", "lazy")
    s.call(1, "FLUSHDB", "async")  # FLUSH-2
    s.call(1, "DBSIZE")
    s.call(1, "SELECT", "0")
    s.call(1, "DBSIZE")
    s.call(1, "FLUSHALL", "SYNC")
    s.call(1, "DBSIZE")
    s.call(1, "FLUSHALL")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_keys_patterns(redis, proto):
    s = scenario(redis, proto)
    for key in ("hello", "hallo", "hxllo", "hllo", "heeeello", "a*b", "a?b", "[x]", "x-y", "\\", "", "é", "A"):
        s.call(1, "SET", key, "1")
    for pattern in ("*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo", "a\\*b", "a[*]b",
                    "[\\]x]*", "x[-]y", "[", "[a", "\\", "*\\", "", "**", "h[", "[^", "?", "é", "[A-Z]",
                    "*l*l*o*", "[z-a]*"):  # KEYS-1, KEYS-2
        s.call(1, "KEYS", pattern)
    s.call(1, "KEYS", "a", "b")
    s.check()


def test_keys_pattern_nesting_limit():
    # KEYS-3: a '*' reached through more than 1000 nested '*' never matches (verified live)
    subject = b"a" * 1100
    assert pattern_matches(b"*a" * 1000, subject)
    assert not pattern_matches(b"*a" * 1001, subject)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_scan(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "SCAN", "0")
    for key in ("a1", "a2", "b1"):
        s.call(1, "SET", key, "1")
    s.call(1, "SCAN", "0")  # SCAN-3: fewer keys than COUNT come back in one call
    s.call(1, "SCAN", "0", "MATCH", "a*")
    s.call(1, "SCAN", "0", "MATCH", "*", "COUNT", "100")
    s.call(1, "SCAN", "0", "TYPE", "STRING", "MATCH", "b*")
    s.call(1, "SCAN", "0", "TYPE", "nosuchtype")
    s.call(1, "SCAN", "", "COUNT", "50")
    for bad in (("x",), (" 0",), ("18446744073709551616",), ("0", "COUNT", "0"), ("0", "COUNT", "x"),
                ("0", "MATCH"), ("0", "FOO", "bar"), ("0", "COUNT")):  # SCAN-1, SCAN-2
        s.call(1, "SCAN", *bad)
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_scan_type_filter_sees_streams(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "SET", "a", "1")
    s.call(1, "XADD", "s1", "1-1", "f", "v")
    s.call(1, "SCAN", "0", "TYPE", "stream")  # SCAN-2
    s.call(1, "SCAN", "0", "TYPE", "string")
    s.call(1, "SCAN", "0", "type", "STREAM", "MATCH", "s*")
    s.call(1, "KEYS", "*")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_hello_auth_reset_quit(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "HELLO")  # HELLO-7
    s.call(1, "HELLO", "4")  # HELLO-2
    s.call(1, "HELLO", "1")
    s.call(1, "HELLO", "abc")  # HELLO-1
    s.call(1, "HELLO", "2", "AUTH")  # HELLO-3
    s.call(1, "HELLO", "2", "SETNAME", "early", "FOO")  # HELLO-5: the name stays
    s.call(1, "CLIENT", "GETNAME")
    s.call(1, "HELLO", "2", "AUTH", "nobody", "pw")  # HELLO-4
    s.call(1, "HELLO", "3", "SETNAME", "a b", "AUTH", "nobody", "pw")
    s.call(1, "HELLO", "3", "AUTH", "default", "anything", "SETNAME", "named")  # HELLO-6
    s.call(1, "GET", "nokey")
    s.call(1, "CLIENT", "GETNAME")
    s.call(1, "AUTH", "pw")  # AUTH-2
    s.call(1, "AUTH", "default", "pw")  # AUTH-3
    s.call(1, "AUTH", "nobody", "pw")
    s.call(1, "AUTH", "a", "b", "c")  # AUTH-1
    s.call(1, "SELECT", "3")
    s.call(1, "MULTI")
    s.call(1, "RESET")  # RESET-1, RESET-2
    s.call(1, "GET", "nokey")
    s.call(1, "CLIENT", "GETNAME")
    s.call(1, "EXEC")
    s.call(1, "RESET", "x")
    s.call(1, "QUIT", "extra", "args")  # QUIT-1
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_client_commands(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))
    s.call(1, "CLIENT", "ID")  # CLIENT-1
    s.call(1, "CLIENT", "GETNAME")  # CLIENT-2
    s.call(1, "CLIENT", "SETNAME", "a b")  # CLIENT-3
    s.call(1, "CLIENT", "SETNAME", "caf\u00e9")
    s.call(1, "CLIENT", "SETNAME", "worker-1")
    s.call(1, "CLIENT", "GETNAME")
    s.call(1, "CLIENT", "SETNAME", "")  # CLIENT-4
    s.call(1, "CLIENT", "GETNAME")
    s.call(1, "CLIENT", "SETNAME", "w2")
    s.call(1, "SELECT", "4")
    s.call(1, "CLIENT", "INFO")  # CLIENT-5
    s.call(1, "MULTI")
    s.call(1, "SET", "a", "1")
    s.call(2, "CLIENT", "LIST")  # CLIENT-6, CLIENT-7
    s.call(1, "NOSUCH")
    s.call(1, "SET", "a", "1")
    s.call(2, "CLIENT", "LIST", "TYPE", "normal")  # CLIENT-8
    s.call(2, "CLIENT", "LIST", "TYPE", "replica")
    s.call(2, "CLIENT", "LIST", "TYPE", "foo")
    s.call(2, "CLIENT", "LIST", "ID", "x")  # CLIENT-9
    s.call(2, "CLIENT", "LIST", "ID", "999999")
    s.call(2, "CLIENT", "LIST", "ID")  # CLIENT-10
    s.call(2, "CLIENT", "LIST", "foo")
    s.call(1, "DISCARD")
    s.call(2, "WATCH", "k")
    s.call(1, "SET", "k", "1")
    s.call(1, "CLIENT", "LIST")
    s.call(1, "CLIENT", "ID", "x")
    s.call(1, "client", "HELP")  # CLIENT-11
    s.call(1, "CLIENT", "HELP", "x")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_info(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "INFO", "keyspace")  # INFO-3
    s.call(1, "SET", "a", "1")
    s.call(1, "SELECT", "5")
    s.call(1, "SET", "b", "1")
    s.call(1, "SET", "c", "1")
    s.call(1, "INFO", "KEYSPACE", "server")  # INFO-1
    s.call(1, "INFO", "nosuchsection")
    s.call(1, "INFO")  # INFO-2
    s.call(1, "INFO", "all")
    s.call(1, "INFO", "everything")
    s.call(1, "INFO", "default", "commandstats")
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_config_get_set(redis, proto):
    s = scenario(redis, proto)
    s.call(1, "CONFIG", "GET", "stream-node-max-entries")  # CONFIG-1
    s.call(1, "CONFIG", "GET", "STREAM-node-max-entries", "stream-node-max-entries")
    s.call(1, "CONFIG", "GET", "stream*")  # CONFIG-2
    s.call(1, "CONFIG", "GET", "*MAX-ENTRIES", "stream-node-max-bytes")
    s.call(1, "CONFIG", "GET", "nosuch*")
    s.call(1, "CONFIG", "GET", "[Z-a]*")
    s.call(1, "CONFIG", "GET", "maxmemory", "appendonly", "port", "save", "databases")
    s.call(1, "CONFIG", "GET", "*")
    s.call(1, "CONFIG", "SET", "stream-node-max-entries", "7")  # CONFIG-8
    s.call(1, "CONFIG", "SET", "STREAM-NODE-MAX-BYTES", "2kb")
    s.call(1, "CONFIG", "GET", "stream-node-*")
    for value in ("-1", "1.5", " 5", "05", "1k", "9223372036854775808", ""):  # CONFIG-7
        s.call(1, "CONFIG", "SET", "stream-node-max-entries", value)
    for value in ("", "kb", "5B", "5mB", "1G", "-1", "x", "+5", "1 kb", "5bb", "99999999999999999999",
                  "9223372036854775807", "18014398509481985kb", "18446744073709551615kb"):
        s.call(1, "CONFIG", "SET", "stream-node-max-bytes", value)
        s.call(1, "CONFIG", "GET", "stream-node-max-bytes")
    s.call(1, "CONFIG", "SET", "stream-node-max-entries", "3", "stream-node-max-bytes", "x")  # CONFIG-7
    s.call(1, "CONFIG", "GET", "stream-node-max-entries")
    s.call(1, "CONFIG", "SET", "stream-node-max-entries", "1", "stream-node-max-entries", "2", "foo", "1")
    s.call(1, "CONFIG", "SET", "foo", "1", "stream-node-max-entries", "1", "stream-node-max-entries", "2")
    s.call(1, "CONFIG", "SET", "stream-node-max-entries", "1", "stream-node-max-bytes")  # CONFIG-4
    s.call(1, "CONFIG", "SET", "stream-node-max-entries", "100", "stream-node-max-bytes", "4096")
    s.call(1, "CONFIG", "RESETSTAT")  # CONFIG-9
    s.call(1, "CONFIG", "NOSUCH")
    s.call(1, "Config", "help")  # CONFIG-10
    s.check()


# -- environment checks (spec/rules/environment.md) --------------------------------------
def test_environment_rules_accept_host_values_and_reject_semantic_changes():
    hello = [b"HELLO", b"3"]
    model = Map(((Bulk(b"server"), Bulk(b"redis")), (Bulk(b"version"), Bulk(b"7.0.15")), (Bulk(b"proto"), Int(3)),
                 (Bulk(b"id"), Int(1))))
    other_id = Map(model.pairs[:3] + ((Bulk(b"id"), Int(77)),))
    other_proto = Map(model.pairs[:2] + ((Bulk(b"proto"), Int(2)), (Bulk(b"id"), Int(1))))
    assert environment_matches(hello, other_id, model) is True  # ENV-HELLO
    assert environment_matches(hello, other_proto, model) is False
    assert environment_matches([b"GET", b"k"], Bulk(b"x"), Bulk(b"y")) is None
    assert environment_matches([b"XLEN", b"s"], Int(1), Int(2)) is None
    assert environment_matches([b"CLIENT", b"ID"], Int(42), Int(1)) is True  # ENV-CLIENT-ID
    assert environment_matches([b"KEYS", b"*"], Array((Bulk(b"b"), Bulk(b"a"))),
                               Array((Bulk(b"a"), Bulk(b"b")))) is True  # ENV-KEYS
    assert environment_matches([b"KEYS", b"*"], Array((Bulk(b"b"),)), Array((Bulk(b"a"), Bulk(b"b")))) is False
    scan_model = Array((Bulk(b"0"), Array((Bulk(b"a"), Bulk(b"b")))))
    assert environment_matches([b"SCAN", b"0"], Array((Bulk(b"6"), Array((Bulk(b"b"),)))), scan_model) is True
    assert environment_matches([b"SCAN", b"0"], Array((Bulk(b"0"), Array((Bulk(b"b"),)))), scan_model) is False
    assert environment_matches([b"SCAN", b"0"], Array((Bulk(b"3"), Array((Bulk(b"c"),)))), scan_model) is False
    line = ("id=5 addr=127.0.0.1:1 laddr=127.0.0.1:2 fd=8 name=w age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 "
            "multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r "
            "cmd=client|info user=default redir=-1 resp=3\n")
    server = Server(clock=ManualClock())
    server.execute(1, [b"HELLO", b"3"])
    server.execute(1, [b"CLIENT", b"SETNAME", b"w"])
    model_info = server.execute(1, [b"CLIENT", b"INFO"]).reply
    assert model_info is not None
    assert environment_matches([b"CLIENT", b"INFO"], Verbatim("txt", line.encode()), model_info) is True
    renamed = line.replace("name=w", "name=x")
    assert environment_matches([b"CLIENT", b"INFO"], Verbatim("txt", renamed.encode()), model_info) is False
    assert environment_matches([b"CLIENT", b"INFO"], Bulk(line.encode()), model_info) is False


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_flush_swapdb_and_overwrite_signal_blocked_group_readers(redis, proto):
    s = scenario(redis, proto, clients=(1, 2, 3))
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(2)
    s.call(1, "SWAPDB", "0", "1")  # SWAPDB-6: the stream leaves database 0
    s.recv(2)
    s.call(3, "SELECT", "1")
    s.call(3, "XGROUP", "CREATE", "s", "g2", "$")
    s.send(3, "XREADGROUP", "GROUP", "g2", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert s.is_waiting(3)
    s.call(1, "FLUSHALL")  # FLUSH-3
    s.recv(3)
    s.call(1, "XADD", "t", "1-1", "f", "v")
    s.call(1, "XGROUP", "CREATE", "t", "g", "$")
    s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "t", ">")
    assert s.is_waiting(2)
    s.call(1, "SET", "t", "string")  # SET-5: a stream overwritten by a string
    s.recv(2)
    s.call(1, "XADD", "u", "1-1", "f", "v")
    s.call(1, "XGROUP", "CREATE", "u", "g", "$")
    s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "u", ">")
    assert s.is_waiting(2)
    s.call(1, "RENAME", "u", "moved")  # RENAME-3: the source is deleted
    s.recv(2)
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_swapdb_serves_readers_blocked_on_a_stream_it_brings_in(redis, proto):
    s = scenario(redis, proto, clients=(1, 2, 3))
    s.call(1, "XADD", "s", "1-1", "f", "v")
    s.call(1, "XGROUP", "CREATE", "s", "g", "$")
    s.call(1, "SELECT", "1")
    s.call(1, "XADD", "s", "5-1", "f", "newer")
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.send(2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    s.send(3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    assert s.is_waiting(2) and s.is_waiting(3)
    s.call(1, "SWAPDB", "0", "1")  # SWAPDB-7
    s.recv(2)
    s.recv(3)  # the incoming stream has entries above the 1-1 that $ resolved to
    s.check()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_client_list_shows_a_blocked_client(redis, proto):
    s = scenario(redis, proto, clients=(1, 2))
    s.call(1, "CLIENT", "SETNAME", "reader")
    s.call(1, "WATCH", "k")
    s.call(2, "SET", "k", "1")
    s.send(1, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
    assert s.is_waiting(1)
    s.call(2, "CLIENT", "LIST")  # CLIENT-6: flags=bd cmd=xread
    s.call(2, "CLIENT", "LIST", "TYPE", "NORMAL")
    s.close(1)  # CONN-1
    time.sleep(0.1)  # let the server notice the closed connection before listing
    s.call(2, "CLIENT", "LIST")
    s.check()
