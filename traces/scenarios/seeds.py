"""The conversations of the seed documents (shared/seeds/): walkthroughs and consumer patterns."""

from __future__ import annotations

from xspec.spec.resp import Array, Bulk, Int, Reply
from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import block, bulk, items, sleep_ms
from xspec.traces.scenarios.registry import topic

scenario = topic("seeds")


def _ids(entries: Reply) -> list[bytes]:
    """The IDs of an entry list ``[[id, fields], ...]`` (or of a plain ID list)."""
    out = []
    if isinstance(entries, Array):
        for e in entries.items:
            if isinstance(e, Array) and e.items and isinstance(e.items[0], Bulk):
                out.append(e.items[0].value)
            elif isinstance(e, Bulk):
                out.append(e.value)
    return out


def _stream_entries(reply: Reply) -> Reply:
    """The entries of the first (only) stream of a RESP2 XREAD/XREADGROUP reply."""
    if isinstance(reply, Array) and reply.items:
        first = reply.items[0]
        if isinstance(first, Array) and len(first.items) == 2:
            return first.items[1]
    return Array(())


@scenario("Streams introduction: Alice and Bob in mygroup, with * IDs", tags=["walkthrough", "time"])
def alice_and_bob(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    for fruit in ("apple", "orange", "strawberry", "apricot", "banana"):
        r.call(1, "XADD", "mystream", "*", "message", fruit)
        sleep_ms(1)
    alice = _ids(_stream_entries(r.call(2, "XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", "1",
                                        "STREAMS", "mystream", ">")))
    r.call(2, "XREADGROUP", "GROUP", "mygroup", "Alice", "STREAMS", "mystream", "0")
    r.call(2, "XACK", "mystream", "mygroup", *alice)
    r.call(2, "XREADGROUP", "GROUP", "mygroup", "Alice", "STREAMS", "mystream", "0")
    bob = _ids(_stream_entries(r.call(3, "XREADGROUP", "GROUP", "mygroup", "Bob", "COUNT", "2",
                                      "STREAMS", "mystream", ">")))
    sleep_ms(20)
    r.call(1, "XPENDING", "mystream", "mygroup")
    r.call(1, "XPENDING", "mystream", "mygroup", "-", "+", "10")
    r.call(1, "XPENDING", "mystream", "mygroup", "-", "+", "10", "Bob")
    r.call(1, "XRANGE", "mystream", bob[0], bob[0])
    r.call(2, "XCLAIM", "mystream", "mygroup", "Alice", "3600000", bob[0])
    r.call(2, "XCLAIM", "mystream", "mygroup", "Alice", "10", bob[0])
    r.call(4, "XCLAIM", "mystream", "mygroup", "Lora", "10", bob[0])
    r.call(2, "XAUTOCLAIM", "mystream", "mygroup", "Alice", "10", "0-0", "COUNT", "1")
    r.call(1, "XINFO", "STREAM", "mystream")
    r.call(1, "XINFO", "GROUPS", "mystream")
    r.call(1, "XINFO", "CONSUMERS", "mystream", "mygroup")
    r.call(1, "XINFO", "HELP")


@scenario("Streams introduction: explicit IDs, 0-* and the too-small-ID error; capped stream", tags=["walkthrough"])
def explicit_ids_and_capping(r: Recorder) -> None:
    r.call(1, "XADD", "somestream", "0-1", "field", "value")
    r.call(1, "XADD", "somestream", "0-2", "foo", "bar")
    r.call(1, "XADD", "somestream", "0-1", "foo", "bar")
    r.call(1, "XADD", "somestream", "0-*", "baz", "qux")
    for i in (1, 2, 3):
        r.call(1, "XADD", "capped", "MAXLEN", "2", "*", "value", str(i))
    r.call(1, "XLEN", "capped")
    r.call(1, "XRANGE", "capped", "-", "+")
    r.call(1, "XADD", "capped", "MAXLEN", "~", "1000", "*", "value", "4")
    r.call(1, "XTRIM", "capped", "MAXLEN", "1")
    r.call(1, "XLEN", "capped")


@scenario("tail -f with XREAD BLOCK $: a consumer follows new entries as they arrive", tags=["walkthrough", "blocking", "time"])
def tail_follow(r: Recorder) -> None:
    r.call(1, "XADD", "log", "*", "line", "boot")
    last = "$"
    for i in range(3):
        block(r, 2, "XREAD", "COUNT", "100", "BLOCK", "5000", "STREAMS", "log", last)
        sleep_ms(5)
        r.call(1, "XADD", "log", "*", "line", f"event {i}")
        ids = _ids(_stream_entries(r.recv(2)))
        last = ids[-1].decode()
    r.call(2, "XREAD", "COUNT", "100", "BLOCK", "20", "STREAMS", "log", last)


@scenario("A consumer crashes before XACK and recovers its history with ID 0, then rejoins with >", tags=["recovery"])
def crash_recovery(r: Recorder) -> None:
    for i in range(1, 6):
        r.call(1, "XADD", "jobs", f"{i}-0", "job", str(i))
    r.call(1, "XGROUP", "CREATE", "jobs", "workers", "0")
    r.call(2, "XREADGROUP", "GROUP", "workers", "w1", "COUNT", "2", "STREAMS", "jobs", ">")
    r.call(2, "XACK", "jobs", "workers", "1-0")
    r.call(2, "XREADGROUP", "GROUP", "workers", "w1", "COUNT", "2", "STREAMS", "jobs", ">")
    r.close(2)
    r.note("worker w1 crashed holding 2-0, 3-0 and 4-0 unacknowledged")
    r.call(1, "XPENDING", "jobs", "workers")
    last = "0"
    while True:
        entries = _stream_entries(r.call(3, "XREADGROUP", "GROUP", "workers", "w1", "COUNT", "2",
                                         "STREAMS", "jobs", last))
        ids = _ids(entries)
        if not ids:
            break
        r.call(3, "XACK", "jobs", "workers", *ids)
        last = ids[-1].decode()
    r.call(3, "XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "jobs", ">")
    r.call(3, "XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "jobs", ">")
    r.call(1, "XPENDING", "jobs", "workers")
    r.call(1, "XINFO", "GROUPS", "jobs")


@scenario("XAUTOCLAIM recovery worker: stuck entries are reclaimed; a poison pill delivered more than 3 times goes to a dead-letter stream",
          tags=["recovery", "xautoclaim", "time"])
def poison_pill_dead_letter(r: Recorder) -> None:
    stream, group, limit, idle = "orders:events", "order-processing-group", 3, 20
    r.call(1, "XGROUP", "CREATE", stream, group, "0", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", stream, group, "0", "MKSTREAM")
    for i in range(1, 5):
        r.call(1, "XADD", stream, f"{i}-0", "order", str(i), "poison", "yes" if i == 2 else "no")
    r.call(2, "XREADGROUP", "GROUP", group, "worker-1", "STREAMS", stream, ">")
    r.close(2)
    r.note("worker-1 crashed; the recovery worker claims idle entries, crashing on order 2 each time")
    for _cycle in range(4):
        sleep_ms(idle + 10)
        cursor = "0-0"
        while True:
            reply = r.call(3, "XAUTOCLAIM", stream, group, "recovery-worker-01", str(idle), cursor, "COUNT", "10")
            if not isinstance(reply, Array) or len(reply.items) != 3:
                break
            for entry in reply.items[1].items if isinstance(reply.items[1], Array) else ():
                entry_id = _ids(Array((entry,)))[0]
                info = r.call(3, "XPENDING", stream, group, entry_id, entry_id, "1")
                count = items(items(info)[0])[3] if isinstance(info, Array) and info.items else Int(0)
                fields = entry.items[1] if isinstance(entry, Array) else Array(())
                poison = isinstance(fields, Array) and Bulk(b"yes") in fields.items
                if poison and isinstance(count, Int) and count.value > limit:
                    r.call(3, "XADD", "orders:dead-letter", "*", "id", entry_id, "deliveries", str(count.value))
                    r.call(3, "XACK", stream, group, entry_id)
                elif not poison:
                    r.call(3, "XACK", stream, group, entry_id)
            next_cursor = reply.items[0]
            cursor = next_cursor.value.decode() if isinstance(next_cursor, Bulk) else "0-0"
            if cursor == "0-0":
                break
    r.call(1, "XPENDING", stream, group)
    r.call(1, "XRANGE", "orders:dead-letter", "-", "+")
    r.call(1, "XINFO", "CONSUMERS", stream, group)


@scenario("XPENDING + XCLAIM recovery (the pre-XAUTOCLAIM two-step) with idle times", tags=["recovery", "time"])
def pending_then_claim(r: Recorder) -> None:
    for i in range(1, 4):
        r.call(1, "XADD", "s", f"{i}-0", "n", str(i))
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(2, "XREADGROUP", "GROUP", "g", "dead", "COUNT", "2", "STREAMS", "s", ">")
    sleep_ms(40)
    r.call(2, "XREADGROUP", "GROUP", "g", "alive", "STREAMS", "s", ">")
    stuck = r.call(3, "XPENDING", "s", "g", "IDLE", "30", "-", "+", "10")
    ids = [bulk(items(e)[0]) for e in items(stuck)]
    r.call(3, "XCLAIM", "s", "g", "rescuer", "30", *ids, "JUSTID")
    r.call(3, "XCLAIM", "s", "g", "rescuer", "30", *ids)
    r.call(3, "XPENDING", "s", "g")
    r.call(3, "XACK", "s", "g", *ids)
    r.call(3, "XPENDING", "s", "g", "-", "+", "10")


@scenario("Fan-out: two groups and a plain XREAD reader each see every entry", tags=["walkthrough"])
def fan_out(r: Recorder) -> None:
    r.call(1, "XGROUP", "CREATE", "s", "billing", "$", "MKSTREAM")
    r.call(1, "XGROUP", "CREATE", "s", "shipping", "$")
    for i in range(1, 4):
        r.call(1, "XADD", "s", f"{i}-0", "order", str(i))
    r.call(2, "XREADGROUP", "GROUP", "billing", "b1", "STREAMS", "s", ">")
    r.call(3, "XREADGROUP", "GROUP", "shipping", "s1", "COUNT", "1", "STREAMS", "s", ">")
    r.call(3, "XREADGROUP", "GROUP", "shipping", "s2", "STREAMS", "s", ">")
    r.call(4, "XREAD", "STREAMS", "s", "0")
    r.call(1, "XINFO", "GROUPS", "s")
