"""Generic commands around streams: keyspace, databases, connections, configuration."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import topic

scenario = topic("generic")


@scenario("PING and ECHO in RESP2 and RESP3, with arity errors", tags=["resp3"])
def ping_echo(r: Recorder) -> None:
    r.call(1, "PING")
    r.call(1, "PING", "hello")
    r.call(1, "PING", "a", "b")
    r.call(1, "ECHO", "x")
    r.call(1, "ECHO")
    r.call(2, "HELLO", "3")
    r.call(2, "PING")
    r.call(2, "PING", "hi")
    r.call(2, "ECHO", "")


@scenario("HELLO with no version, 2, 3, an unsupported version and a bad one", tags=["resp3", "environment"])
def hello(r: Recorder) -> None:
    r.call(1, "HELLO")
    r.call(1, "HELLO", "2")
    r.call(1, "HELLO", "4")
    r.call(1, "HELLO", "x")
    r.call(1, "HELLO", "3")
    r.call(1, "HELLO")
    r.call(1, "HELLO", "3", "SETNAME", "worker")
    r.call(1, "CLIENT", "GETNAME")
    r.call(1, "HELLO", "2")
    r.call(1, "XADD", "s", "NOMKSTREAM", "1-0", "f", "v")


@scenario("SELECT and SWAPDB keep streams per database", tags=["databases"])
def select_swapdb(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "SELECT", "3")
    r.call(1, "XLEN", "s")
    add(r, "s", [1, 2, 3])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(2, "XLEN", "s")
    r.call(1, "SWAPDB", "0", "3")
    r.call(1, "XLEN", "s")
    r.call(2, "XLEN", "s")
    r.call(2, "XINFO", "GROUPS", "s")
    r.call(1, "SELECT", "16")
    r.call(1, "SELECT", "x")
    r.call(1, "SWAPDB", "0", "99")
    r.call(1, "SWAPDB", "0")
    r.call(1, "DBSIZE")
    r.call(2, "DBSIZE")


@scenario("DEL, UNLINK, EXISTS, TYPE on streams and other keys", tags=["keyspace"])
def del_exists_type(r: Recorder) -> None:
    add(r, "a", [1])
    add(r, "b", [1])
    r.call(1, "SET", "str", "x")
    r.call(1, "TYPE", "a")
    r.call(1, "TYPE", "str")
    r.call(1, "TYPE", "nokey")
    r.call(1, "EXISTS", "a", "b", "a", "nokey")
    r.call(1, "DEL", "a", "nokey")
    r.call(1, "UNLINK", "b", "str")
    r.call(1, "EXISTS", "a", "b", "str")
    r.call(1, "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    r.call(1, "TYPE", "e")
    r.call(1, "EXISTS", "e")
    r.call(1, "DEL")


@scenario("RENAME moves a stream with its groups; errors for missing keys", tags=["keyspace", "rename"])
def rename(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "RENAME", "s", "t")
    r.call(1, "EXISTS", "s")
    r.call(1, "XPENDING", "t", "g")
    r.call(1, "RENAME", "nokey", "x")
    r.call(1, "SET", "str", "x")
    r.call(1, "RENAME", "str", "t")
    r.call(1, "TYPE", "t")
    r.call(1, "RENAME", "t", "t")


@scenario("KEYS and DBSIZE with streams", tags=["keyspace"])
def keys_dbsize(r: Recorder) -> None:
    r.call(1, "DBSIZE")
    r.call(1, "KEYS", "*")
    add(r, "stream:1", [1])
    r.call(1, "XGROUP", "CREATE", "stream:2", "g", "$", "MKSTREAM")
    r.call(1, "XADD", "empty", "MAXLEN", "0", "1-0", "f", "v")
    r.call(1, "XADD", "never", "NOMKSTREAM", "1-0", "f", "v")
    r.call(1, "SET", "other", "x")
    r.call(1, "DBSIZE")
    r.call(1, "KEYS", "stream:1")
    r.call(1, "KEYS", "nothing*")
    r.call(1, "KEYS", "empty")


@scenario("FLUSHDB and FLUSHALL remove streams in one or all databases", tags=["keyspace", "databases"])
def flush(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "SELECT", "1")
    add(r, "s", [1])
    r.call(1, "FLUSHDB")
    r.call(1, "DBSIZE")
    r.call(1, "SELECT", "0")
    r.call(1, "DBSIZE")
    r.call(1, "FLUSHALL")
    r.call(1, "DBSIZE")
    r.call(1, "FLUSHDB", "BOGUS")
    r.call(1, "FLUSHALL", "SYNC")


@scenario("SET/GET and WRONGTYPE in both directions; SET replaces a stream", tags=["keyspace", "errors"])
def set_get(r: Recorder) -> None:
    r.call(1, "SET", "k", "v")
    r.call(1, "GET", "k")
    r.call(1, "GET", "nokey")
    add(r, "s", [1])
    r.call(1, "GET", "s")
    r.call(1, "XADD", "k", "1-0", "f", "v")
    r.call(1, "XRANGE", "k", "-", "+")
    r.call(1, "XREAD", "STREAMS", "k", "0")
    r.call(1, "XGROUP", "CREATE", "k", "g", "0")
    r.call(1, "XINFO", "STREAM", "k")
    r.call(1, "SET", "s", "now a string")
    r.call(1, "TYPE", "s")
    r.call(1, "XLEN", "s")
    r.call(1, "DEL", "s")
    r.call(1, "XLEN", "s")


@scenario("CLIENT ID, SETNAME and GETNAME", tags=["environment"])
def client_names(r: Recorder) -> None:
    r.call(1, "CLIENT", "ID")
    r.call(2, "CLIENT", "ID")
    r.call(1, "CLIENT", "GETNAME")
    r.call(1, "CLIENT", "SETNAME", "alice")
    r.call(1, "CLIENT", "GETNAME")
    r.call(1, "CLIENT", "SETNAME", "has space")
    r.call(1, "CLIENT", "SETNAME", "")
    r.call(1, "CLIENT", "GETNAME")
    r.call(2, "HELLO", "3")
    r.call(2, "CLIENT", "GETNAME")
    r.call(2, "CLIENT", "ID")


@scenario("CONFIG GET and SET of the stream node settings, and their effect on XINFO", tags=["config"])
def config_stream_settings(r: Recorder) -> None:
    r.call(1, "CONFIG", "GET", "stream-node-max-entries")
    r.call(1, "CONFIG", "GET", "stream-node-max-bytes")
    r.call(1, "CONFIG", "SET", "stream-node-max-entries", "2")
    r.call(1, "CONFIG", "GET", "stream-node-max-entries")
    add(r, "s", range(1, 6))
    r.call(1, "XINFO", "STREAM", "s")
    r.call(1, "CONFIG", "SET", "stream-node-max-entries", "abc")
    r.call(1, "CONFIG", "SET", "stream-node-max-entries", "-1")
    r.call(1, "CONFIG", "SET", "stream-node-max-bytes", "1")
    add(r, "t", range(1, 4))
    r.call(1, "XINFO", "STREAM", "t")
    r.call(2, "HELLO", "3")
    r.call(2, "CONFIG", "GET", "stream-node-max-bytes")
    r.call(1, "CONFIG", "SET", "stream-node-max-bytes", "0")
    r.call(1, "CONFIG", "GET", "stream-node-max-bytes")


@scenario("INFO keyspace and server sections with streams present", tags=["environment"])
def info(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "INFO", "keyspace")
    r.call(1, "INFO", "server")


@scenario("CLIENT LIST shows a blocked client", tags=["environment", "blocking"])
def client_list(r: Recorder) -> None:
    r.call(1, "CLIENT", "SETNAME", "writer")
    r.call(2, "CLIENT", "SETNAME", "reader")
    r.send(2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.is_waiting(2)
    r.call(1, "CLIENT", "LIST")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.recv(2)


@scenario("Arity errors of the stream commands", tags=["errors"])
def arity(r: Recorder) -> None:
    for cmd in (["XADD", "s", "*"], ["XLEN"], ["XRANGE", "s", "-"], ["XREVRANGE", "s"], ["XREAD", "STREAMS"],
                ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"], ["XACK", "s", "g"], ["XDEL", "s"],
                ["XTRIM", "s", "MAXLEN"], ["XPENDING", "s"], ["XCLAIM", "s", "g", "c", "0"],
                ["XAUTOCLAIM", "s", "g", "c", "0"], ["XSETID", "s"], ["XGROUP", "CREATE", "s", "g"],
                ["XGROUP", "SETID", "s", "g"], ["XGROUP", "DESTROY", "s"], ["XGROUP", "CREATECONSUMER", "s", "g"],
                ["XGROUP", "DELCONSUMER", "s", "g"], ["XINFO", "STREAM"], ["XINFO", "GROUPS"],
                ["XINFO", "CONSUMERS", "s"], ["XINFO", "HELP", "x"], ["XGROUP", "HELP", "x"], ["xadd", "s"],
                ["XGROUP"], ["XINFO"]):
        r.call(1, *cmd)


@scenario("Every stream command on a key holding a string, and GET on a stream", tags=["errors", "keyspace"])
def wrong_type_everywhere(r: Recorder) -> None:
    r.call(1, "SET", "str", "x")
    for cmd in (["XADD", "str", "*", "f", "v"], ["XLEN", "str"], ["XRANGE", "str", "-", "+"],
                ["XREVRANGE", "str", "+", "-"], ["XDEL", "str", "1-0"], ["XTRIM", "str", "MAXLEN", "0"],
                ["XREAD", "STREAMS", "str", "0"], ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"],
                ["XACK", "str", "g", "1-0"], ["XPENDING", "str", "g"], ["XPENDING", "str", "g", "-", "+", "1"],
                ["XCLAIM", "str", "g", "c", "0", "1-0"], ["XAUTOCLAIM", "str", "g", "c", "0", "0"],
                ["XSETID", "str", "1-0"], ["XGROUP", "CREATE", "str", "g", "$"], ["XGROUP", "SETID", "str", "g", "0"],
                ["XGROUP", "DESTROY", "str", "g"], ["XGROUP", "CREATECONSUMER", "str", "g", "c"],
                ["XGROUP", "DELCONSUMER", "str", "g", "c"], ["XINFO", "STREAM", "str"],
                ["XINFO", "STREAM", "str", "FULL"], ["XINFO", "GROUPS", "str"], ["XINFO", "CONSUMERS", "str", "g"]):
        r.call(1, *cmd)
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "GET", "s")
    r.call(1, "GET", "str")
