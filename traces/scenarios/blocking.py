"""Blocked XREAD and XREADGROUP clients: serving, timeouts, FIFO, wake-ups by deletion."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import add, block, resp3, sleep_ms
from xspec.traces.scenarios.registry import topic

scenario = topic("blocking")


@scenario("Blocked XREAD on $ is served by XADD; every XREAD client receives the entry", tags=["xread"])
def xread_served_by_xadd(r: Recorder) -> None:
    add(r, "s", [1])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    block(r, 3, "XREAD", "BLOCK", "5000", "STREAMS", "s", "1-0")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(2)
    r.recv(3)
    block(r, 2, "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "XADD", "s", "3-0", "f", "v")
    r.recv(2)


@scenario("Blocked XREAD on a missing key is served when the key is created", tags=["xread"])
def xread_missing_key(r: Recorder) -> None:
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "0")
    r.call(1, "XADD", "nokey", "1-0", "f", "v")
    r.recv(2)
    r.recv(3)


@scenario("Blocked XREAD times out with a null array (RESP2 and RESP3)", tags=["xread", "timeout", "resp3", "time"])
def xread_timeout(r: Recorder) -> None:
    add(r, "s", [1])
    resp3(r, 3)
    block(r, 2, "XREAD", "BLOCK", "60", "STREAMS", "s", "$")
    block(r, 3, "XREAD", "BLOCK", "60", "STREAMS", "s", "$")
    r.recv(2)
    r.recv(3)
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.call(2, "XREAD", "BLOCK", "30", "STREAMS", "s", "1-0")


@scenario("Blocked XREADGROUP times out; the consumer is not created (7.0)", tags=["xreadgroup", "timeout", "time"])
def xreadgroup_timeout(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "60", "STREAMS", "s", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.recv(2)
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("Blocked XREADGROUP is served by XADD and creates its consumer then", tags=["xreadgroup"])
def xreadgroup_served(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(2)
    r.call(1, "XINFO", "CONSUMERS", "s", "g")
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("Blocked NOACK XREADGROUP is served without a pending entry", tags=["xreadgroup", "noack"])
def xreadgroup_noack_served(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.recv(2)
    r.call(1, "XPENDING", "s", "g")
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("XGROUP DESTROY wakes a blocked XREADGROUP with NOGROUP (7.0 text)", edge=(65,), tags=["xreadgroup"])
def destroy_wakes(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XGROUP", "CREATE", "s", "other", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 3, "XREADGROUP", "GROUP", "other", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 4, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "XGROUP", "DESTROY", "s", "g")
    r.recv(2)
    if r.is_waiting(3) and r.is_waiting(4):
        r.note("the other group's reader and the XREAD reader stay blocked")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(3)
    r.recv(4)


@scenario("DEL and SET unblock XREADGROUP with UNBLOCKED (7.0)", edge=(65,), tags=["xreadgroup"])
def del_and_set_wake(r: Recorder) -> None:
    add(r, "s", [1])
    add(r, "t", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XGROUP", "CREATE", "t", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "DEL", "s")
    r.recv(2)
    block(r, 3, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "t", ">")
    r.call(1, "SET", "t", "string")
    r.recv(3)


@scenario("A blocked XREAD is not woken by DEL; it waits for a new XADD or times out", edge=(66,), tags=["xread", "timeout", "time"])
def xread_survives_del(r: Recorder) -> None:
    add(r, "s", [1])
    add(r, "t", [1])
    block(r, 2, "XREAD", "BLOCK", "80", "STREAMS", "s", "$")
    r.call(1, "DEL", "s")
    r.recv(2)
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "t", "$")
    r.call(1, "DEL", "t")
    if not r.is_waiting(3):
        r.note("client 3 was woken by DEL")
    r.call(1, "XADD", "t", "1-0", "f", "v")
    if not r.is_waiting(3):
        r.note("client 3 was served by an ID not above the one it waits after")
    r.call(1, "XADD", "t", "2-0", "f", "v")
    r.recv(3)


@scenario("MULTI { XADD; XDEL } wakes a blocked XREAD on $ with an empty entry list (7.0)", edge=(67,), tags=["xread", "multi"])
def multi_xadd_xdel(r: Recorder) -> None:
    add(r, "s", [1])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.call(1, "XDEL", "s", "2-0")
    r.call(1, "EXEC")
    r.recv(2)


@scenario("Two XREADGROUP clients on one group: FIFO, one entry each", edge=(68,), tags=["xreadgroup", "fifo"])
def fifo_same_group(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "first", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 3, "XREADGROUP", "GROUP", "g", "second", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(2)
    if not r.is_waiting(3):
        r.note("the second client was served too")
    r.call(1, "XADD", "s", "3-0", "f", "v")
    r.recv(3)
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("FIFO with three clients in another blocking order; a MULTI of two XADDs", tags=["xreadgroup", "fifo", "multi"])
def fifo_three_clients(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 4, "XREADGROUP", "GROUP", "g", "c4", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 3, "XREADGROUP", "GROUP", "g", "c3", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.call(1, "EXEC")
    r.recv(4)
    r.recv(2)
    if not r.is_waiting(3):
        r.note("the third client was served too")
    r.call(1, "XADD", "s", "3-0", "f", "v")
    r.recv(3)
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("XGROUP SETID does not wake; the next XADD delivers everything after the new last ID", edge=(69,), tags=["xreadgroup"])
def setid_no_wake(r: Recorder) -> None:
    add(r, "s", [1, 2])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "SETID", "s", "g", "0")
    if not r.is_waiting(2):
        r.note("SETID woke the client")
    r.call(1, "XADD", "s", "3-0", "f", "v")
    r.recv(2)
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("A blocked XREAD without COUNT gets at most 1000 entries from one MULTI (7.0)", edge=(70,), tags=["xread", "multi"])
def count_1000(r: Recorder) -> None:
    add(r, "s", [1])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "MULTI")
    for i in range(2, 1007):
        r.call(1, "XADD", "s", f"{i}-0", "f", "v")
    r.call(1, "EXEC")
    r.recv(2)
    r.call(3, "XREAD", "STREAMS", "s", "1-0")


@scenario("Blocked on two keys, both written in one MULTI: 7.0 replies only the first signalled key", edge=(70,), tags=["xread", "multi"])
def two_keys_one_multi(r: Recorder) -> None:
    add(r, "b8", [1])
    add(r, "b1", [1])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "b8", "b1", "$", "$")
    r.call(1, "MULTI")
    r.call(1, "XADD", "b1", "2-0", "f", "v")
    r.call(1, "XADD", "b8", "2-0", "f", "v")
    r.call(1, "EXEC")
    r.recv(2)


@scenario("Blocked on several keys, one is written: only that key is in the reply (RESP3 map)", tags=["xread", "resp3"])
def several_keys_one_ready(r: Recorder) -> None:
    add(r, "a", [1])
    resp3(r, 2)
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "c", "$", "$", "0")
    r.call(1, "XADD", "c", "5-0", "f", "v")
    r.recv(2)
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")
    r.call(1, "XADD", "b", "6-0", "f", "v")
    r.recv(3)


@scenario("FLUSHALL wakes blocked XREADGROUP clients with UNBLOCKED; XREAD stays blocked", tags=["xreadgroup", "xread"])
def flushall_wakes(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "FLUSHALL")
    r.recv(2)
    if not r.is_waiting(3):
        r.note("FLUSHALL woke the XREAD client")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(3)


@scenario("FLUSHDB wakes blocked XREADGROUP clients", tags=["xreadgroup"])
def flushdb_wakes(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "FLUSHDB")
    r.recv(2)


@scenario("RENAME onto the blocked key: served if the new stream has the group, NOGROUP otherwise", tags=["xreadgroup", "rename"])
def rename_onto(r: Recorder) -> None:
    add(r, "s", [1])
    add(r, "with", [1, 2, 3])
    add(r, "without", [5])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    r.call(1, "XGROUP", "CREATE", "with", "g", "0")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "RENAME", "with", "s")
    r.recv(2)
    block(r, 3, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "RENAME", "without", "s")
    r.recv(3)
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("RENAME of a stream onto a key a blocked XREAD waits on serves it", tags=["xread", "rename"])
def rename_xread(r: Recorder) -> None:
    add(r, "src", [1, 2])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "dst", "0")
    r.call(1, "RENAME", "src", "dst")
    r.recv(2)
    block(r, 3, "XREAD", "BLOCK", "100", "STREAMS", "dst", "$")
    r.call(1, "RENAME", "dst", "elsewhere")
    r.recv(3)


@scenario("MULTI { DEL; SET } on the blocked key unblocks XREADGROUP; MULTI { DEL; XADD } recreates it without the group",
          tags=["xreadgroup", "multi"])
def multi_del_recreate(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "MULTI")
    r.call(1, "DEL", "s")
    r.call(1, "SET", "s", "now a string")
    r.call(1, "EXEC")
    r.recv(2)
    r.call(1, "TYPE", "s")
    add(r, "t", [1])
    r.call(1, "XGROUP", "CREATE", "t", "g", "$")
    block(r, 3, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "t", ">")
    r.call(1, "MULTI")
    r.call(1, "DEL", "t")
    r.call(1, "XADD", "t", "5-0", "f", "v")
    r.call(1, "EXEC")
    r.recv(3)
    r.call(1, "XINFO", "GROUPS", "t")


@scenario("A closed blocked client disappears; the next reader gets the entry", tags=["xreadgroup", "close"])
def client_closes(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "gone", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 3, "XREADGROUP", "GROUP", "g", "stays", "BLOCK", "0", "STREAMS", "s", ">")
    r.close(2)
    sleep_ms(20)
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.recv(3)
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("Blocked XREAD from an explicit ID in the future waits for an entry beyond it", tags=["xread"])
def xread_future_id(r: Recorder) -> None:
    add(r, "s", [1])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "5-0")
    r.call(1, "XADD", "s", "3-0", "f", "v")
    if not r.is_waiting(2):
        r.note("served by an entry before the ID")
    r.call(1, "XADD", "s", "6-0", "f", "v")
    r.recv(2)


@scenario("Blocked XREADGROUP on several streams is served by the one that gets data", tags=["xreadgroup"])
def xreadgroup_several_streams(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "a", "g", "$", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", "b", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "a", "b", ">", ">")
    r.call(1, "XADD", "b", "1-0", "f", "v")
    r.recv(2)
    r.call(1, "XPENDING", "b", "g")
    r.call(1, "XPENDING", "a", "g")


@scenario("Blocked XREADGROUP after the group moved past new entries (SETID +) stays blocked", tags=["xreadgroup"])
def group_ahead(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "SETID", "s", "g", "50-0")
    r.call(1, "XADD", "s", "10-0", "f", "v")
    if not r.is_waiting(2, 0.01):
        r.note("client 2 was served")
    r.recv(2)
    r.call(1, "XINFO", "GROUPS", "s")


@scenario("XREAD and XREADGROUP blocked on one key, served by one XADD", tags=["xread", "xreadgroup"])
def mixed_readers(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    resp3(r, 4)
    block(r, 4, "XREADGROUP", "GROUP", "g", "d", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.recv(2)
    r.recv(3)
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(4)


@scenario("SWAPDB brings a stream with new entries under a blocked XREAD", tags=["xread", "swapdb"])
def swapdb_serves(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "SELECT", "1")
    add(r, "s", [1, 2, 3])
    r.call(1, "SELECT", "0")
    block(r, 2, "XREAD", "BLOCK", "200", "STREAMS", "s", "1-0")
    r.call(1, "SWAPDB", "0", "1")
    r.recv(2)
    r.call(1, "XLEN", "s")


@scenario("Blocked XREAD with * IDs and a real wait before the XADD", tags=["xread", "time"])
def star_after_wait(r: Recorder) -> None:
    r.call(1, "XADD", "s", "*", "n", "0")
    block(r, 2, "XREAD", "BLOCK", "2000", "STREAMS", "s", "$")
    sleep_ms(20)
    r.call(1, "XADD", "s", "*", "n", "1")
    r.recv(2)
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "2000", "STREAMS", "s", ">")
    sleep_ms(10)
    r.call(1, "XADD", "s", "*", "n", "2")
    r.recv(2)
    sleep_ms(10)
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")


@scenario("A blocked XREAD and an XADD whose entry is trimmed at once (MAXLEN 0); NOMKSTREAM on a missing key", tags=["xread", "trim"])
def xadd_trimmed_at_once(r: Recorder) -> None:
    add(r, "s", [1])
    block(r, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    r.call(1, "XADD", "s", "MAXLEN", "0", "2-0", "f", "v")
    if r.is_waiting(2):
        r.note("client 2 stays blocked after an XADD that left the stream empty")
        r.call(1, "XADD", "s", "3-0", "f", "v")
    r.recv(2)
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
    r.call(1, "XADD", "nokey", "NOMKSTREAM", "1-0", "f", "v")
    if not r.is_waiting(3):
        r.note("client 3 was woken by an XADD NOMKSTREAM that created nothing")
    r.call(1, "XADD", "nokey", "1-0", "f", "v")
    r.recv(3)


@scenario("The COUNT of a blocked read limits what one MULTI of several XADDs delivers", tags=["xread", "xreadgroup", "multi"])
def blocked_count(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", "$")
    block(r, 3, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", ">")
    block(r, 4, "XREADGROUP", "GROUP", "g", "d", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "MULTI")
    for i in range(1, 6):
        r.call(1, "XADD", "s", f"{i}-0", "f", "v")
    r.call(1, "EXEC")
    r.recv(2)
    r.recv(3)
    r.recv(4)
    r.call(1, "XPENDING", "s", "g")


@scenario("UNLINK and RENAME of the blocked key away unblock XREADGROUP", tags=["xreadgroup", "rename"])
def unlink_and_rename_away(r: Recorder) -> None:
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "UNLINK", "s")
    r.recv(2)
    add(r, "s", [1])
    r.call(1, "XGROUP", "CREATE", "s", "g", "$")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "RENAME", "s", "t")
    r.recv(2)
    r.call(1, "XINFO", "GROUPS", "t")


@scenario("A consumer created by CREATECONSUMER while its reader is blocked; served later", tags=["xreadgroup"])
def createconsumer_while_blocked(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c")
    r.call(1, "XGROUP", "DELCONSUMER", "s", "g", "c")
    r.call(1, "XGROUP", "CREATECONSUMER", "s", "g", "c")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.recv(2)
    r.call(1, "XINFO", "CONSUMERS", "s", "g")


@scenario("Timeouts: a short-timeout reader times out while a BLOCK 0 reader waits for the XADD", tags=["xread", "timeout", "time"])
def timeouts_and_serving(r: Recorder) -> None:
    add(r, "s", [1])
    r.send(2, "XREAD", "BLOCK", "150", "STREAMS", "s", "$")
    block(r, 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    block(r, 4, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$")
    r.recv(2)
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.recv(3)
    r.recv(4)


@scenario("A blocked XREADGROUP served after a MULTI whose own group read took the first new entry", tags=["xreadgroup", "multi"])
def served_inside_multi(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "waiter", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "MULTI")
    r.call(1, "XADD", "s", "1-0", "f", "v")
    r.call(1, "XADD", "s", "2-0", "f", "v")
    r.call(1, "XREADGROUP", "GROUP", "g", "inside", "COUNT", "1", "STREAMS", "s", ">")
    r.call(1, "EXEC")
    r.recv(2)
    r.call(1, "XPENDING", "s", "g", "-", "+", "10")
