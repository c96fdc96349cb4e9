"""DUMP and RESTORE of streams and strings (spec/rules/dump.md)."""

from __future__ import annotations

from xspec.spec.crc64 import crc64
from xspec.spec.resp import Bulk, Reply
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add
from xspec.traces.scenarios.registry import ScenarioError, topic

scenario = topic("dump")

# The payloads of Redis's "Loading from legacy (Redis <= v6.2.x, rdb_ver < 10) persistence" and "... (Redis
# <= v7.0.x, rdb_ver < 11)" tests (tests/unit/type/stream-cgroups.tcl), as data. The first, of version 9:
# XADD x 1-0 .. 6-0 data a..f, XDEL x 3-0, groups g1 and g2 at 0, XREADGROUP GROUP g1 c11 COUNT 4,
# XTRIM x MAXLEN = 2. The second, of version 11 (so 7.0 refuses it): XGROUP CREATE x g $ MKSTREAM,
# XADD x 1-1 f v, XREADGROUP GROUP g Alice STREAMS x >.
LEGACY_62 = bytes.fromhex(
    "0f011000000000000000010000000000000000c3404a4057165700000023000201040101018464617461050001030100"
    "20010381610204200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a"
    "00ff02060002026731050004000000000000000100000000000000003ef783437a010000010000000000000002000000"
    "00000000003ef783437a01000001000000000000000400000000000000003ef783437a01000001000000000000000500"
    "000000000000003ef783437a0100000101036331313ef783437a01000004000000000000000100000000000000000000"
    "000000000002000000000000000000000000000000040000000000000000000000000000000500000000000000000267"
    "320000000009003d52ef6867521dfa"
)
LEGACY_70 = bytes.fromhex(
    "130110000000000000000100000000000000011d1d0000000a0001010001010181660200010201000100018176020401"
    "ff01010101010000010101670101010100000000000000010000000000000001f55a71c784010000010105416c696365"
    "f55a71c78401000001000000000000000100000000000000010b00a7a914a527ff9b9b"
)


def _bulk(reply: Reply) -> bytes:
    """The bytes of a DUMP reply (a scenario's DUMP always finds its key)."""
    if not isinstance(reply, Bulk):
        raise ScenarioError(f"DUMP replied {reply!r}")
    return reply.value


def _payload(body: bytes, version: int = 10) -> bytes:
    body += version.to_bytes(2, "little")
    return body + crc64(0, body).to_bytes(8, "little")


@scenario("DUMP of strings and a stream with deletions, RESTORE under new names, REPLACE, BUSYKEY", tags=["dump"])
def dump_and_restore(r: Recorder) -> None:
    r.call(1, "SET", "n", "12345")
    r.call(1, "SET", "long", "abcdefgh" * 8)
    add(r, "s", [1, 2, 3, 4, 5])
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "DUMP", "missing")
    for key in ("n", "long", "s"):
        payload = r.call(1, "DUMP", key)
        r.call(1, "RESTORE", key, "0", _bulk(payload))
        r.call(1, "RESTORE", key + "2", "0", _bulk(payload))
        r.call(1, "RESTORE", key, "0", _bulk(payload), "REPLACE")
    r.call(1, "XRANGE", "s2", "-", "+")
    r.call(1, "XINFO", "STREAM", "s2")
    r.call(1, "XADD", "s2", "9-0", "f", "v")
    r.call(1, "DUMP", "s2")


@scenario("DUMP and RESTORE of a stream with groups, PELs and consumers", tags=["dump"])
def dump_groups(r: Recorder) -> None:
    add(r, "s", [1, 2, 3, 4])
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    r.call(1, "XCLAIM", "s", "g", "bob", "0", "1-0", "TIME", "1700000000000", "RETRYCOUNT", "3")
    r.call(1, "XGROUP", "CREATE", "s", "h", "$")
    payload = r.call(1, "DUMP", "s")
    r.call(1, "RESTORE", "t", "0", _bulk(payload))
    r.call(1, "XINFO", "STREAM", "t", "FULL")
    r.call(1, "XPENDING", "t", "g", "-", "+", "10")
    r.call(1, "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "t", ">")


@scenario("RESTORE's checks in order: options, BUSYKEY, TTL, version and checksum, data format", tags=["dump"])
def restore_errors(r: Recorder) -> None:
    good = _payload(b"\x00\x05hello")
    r.call(1, "SET", "k", "x")
    r.call(1, "RESTORE", "k", "0", good)
    r.call(1, "RESTORE", "k", "abc", b"junk")
    r.call(1, "RESTORE", "new", "-5", good)
    r.call(1, "RESTORE", "new", "x", good)
    r.call(1, "RESTORE", "new", "0", good, "IDLETIME", "-1")
    r.call(1, "RESTORE", "new", "0", good, "FREQ", "256")
    r.call(1, "RESTORE", "new", "0", good, "FREQ", "1", "IDLETIME", "1")
    r.call(1, "RESTORE", "new", "0", good, "REPLACE", "EXTRA")
    r.call(1, "RESTORE", "new", "0", b"short")
    r.call(1, "RESTORE", "new", "0", _payload(b"\x00\x05hello", 11))
    r.call(1, "RESTORE", "new", "0", good[:-1] + b"\x00")
    r.call(1, "RESTORE", "new", "0", _payload(b"\x08\x05hello"))
    r.call(1, "RESTORE", "new", "0", _payload(b"\x0f\x01\x03abc"))
    r.call(1, "RESTORE", "new", "0", _payload(b"\x00\x09hello"))
    r.call(1, "GET", "new")
    r.call(1, "RESTORE", "gone", "1", good, "ABSTTL")
    r.call(1, "EXISTS", "gone")
    r.call(1, "RESTORE", "k", "1", good, "ABSTTL", "REPLACE")
    r.call(1, "EXISTS", "k")
    r.call(1, "RESTORE", "ttl", "100000", good, "IDLETIME", "3")
    r.call(1, "GET", "ttl")


@scenario("RESTORE of a 6.2 stream payload: counters and entries-read computed on load", tags=["dump"])
def restore_legacy(r: Recorder) -> None:
    r.call(1, "RESTORE", "x", "0", LEGACY_62)
    r.call(1, "XINFO", "STREAM", "x", "FULL")
    r.call(1, "XINFO", "GROUPS", "x")
    r.call(1, "XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "x", ">")
    r.call(1, "XINFO", "GROUPS", "x")
    r.call(1, "DUMP", "x")
