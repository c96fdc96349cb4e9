"""The primary's short way of feeding XADDs to the backlog and the replicas (``Replication.feed_xadd``)
against the general way (``Replication.feed_ops``, every op rendered by ``resp_command``): the same bytes,
in the same order, at the same offsets (REPL-2), in process, with and without an event loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xspec.reference.api import PreRendered
from xspec.reference.clock import VirtualClock
from xspec.reference.handlers import new_core
from xspec.reference.replication import Replication, replication_of


class Link:
    """A replica's connection: what the primary wrote to it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.short = 0  # XADDs the primary fed the short way

    def write(self, out: list[bytes]) -> None:
        for piece in out:
            self.data += piece


def primary(short_way: bool) -> tuple[Any, Replication, Any, Link]:
    """A core with a backlog and one online replica, its clock stopped; a client of it."""
    core = new_core(clock=VirtualClock(1_700_000_000_000))
    rep = replication_of(core)
    rep.ensure_first_backlog()
    rep.refresh()
    link = Link()
    replica = core.connect(None)
    replica.conn = link
    rep.attach(replica)
    if short_way:
        feed = rep.propagator.xadd_sink

        def counted(dbid: int, argv: list[bytes], new_id: bytes) -> bool:
            fed = feed(dbid, argv, new_id)
            link.short += fed
            return fed

        rep.propagator.xadd_sink = counted
    else:
        rep.propagator.xadd_sink = lambda dbid, argv, new_id: False
    return core, rep, core.connect(None), link


def shown(reply: Any) -> Any:
    """A reply to compare: EXEC's pre-rendered elements as the replies they hold."""
    if isinstance(reply, PreRendered):
        return shown(reply.reply)
    items = getattr(reply, "items", None)
    return tuple(map(shown, items)) if isinstance(items, (list, tuple)) else reply


def run(commands: list[list[bytes]], short_way: bool, loop: bool) -> tuple[Any, ...]:
    """The commands on a fresh primary; its backlog, offset, what its replica got, and each command's
    reply and the client's offset after it (WAIT-2)."""
    core, rep, c, link = primary(short_way)
    seen: list[Any] = []

    def each() -> None:
        for argv in commands:
            seen.append((shown(core.execute(c, argv)), c.woff, rep.offset))

    if loop:
        async def turn() -> None:
            each()
            await asyncio.sleep(0)  # the turn's end: the XADDs counted reach the backlog and the replica

        asyncio.run(turn())
    else:
        each()
    assert rep.backlog is not None
    return bytes(rep.backlog.data), rep.offset, bytes(link.data), seen, link.short


_words = st.sampled_from([b"f", b"", b"field", b"*", b"-", b"\r\n", b"x" * 1500, b"1-1", b"MAXLEN"])
_xadd = st.builds(
    lambda name, key, explicit, fields: [name, key, b"%d-%d" % explicit if explicit else b"*", *fields],
    st.sampled_from([b"XADD", b"xadd", b"XaDd"]),
    st.sampled_from([b"s", b"t", b"k" * 1100]),
    st.one_of(st.none(), st.tuples(st.integers(1_700_000_000_000, 1_700_000_000_002), st.integers(0, 3))),
    st.lists(st.tuples(_words, _words), min_size=1, max_size=3).map(lambda pairs: [w for p in pairs for w in p]))
_other = st.sampled_from([
    [b"SET", b"s", b"v"], [b"SELECT", b"1"], [b"SELECT", b"0"], [b"DEL", b"t"],
    [b"XADD", b"s", b"MAXLEN", b"~", b"2", b"*", b"f", b"v"], [b"XADD", b"s", b"NOMKSTREAM", b"*", b"f", b"v"],
    [b"XADD", b"s", b"*", b"f"], [b"XTRIM", b"s", b"MAXLEN", b"1"], [b"MULTI"], [b"EXEC"], [b"PUBLISH", b"c", b"m"],
])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_xadd, _xadd, _other), min_size=1, max_size=12), st.booleans())
def test_the_short_way_feeds_the_bytes_of_the_general_way(commands: list[list[bytes]], loop: bool) -> None:
    assert run(commands, True, loop)[:4] == run(commands, False, loop)[:4]


@pytest.mark.parametrize("loop", [False, True])
def test_a_run_of_xadds_is_fed_in_order_with_what_comes_between(loop: bool) -> None:
    """XADDs to one key with one field, the same and other values, then a SET and a database change between
    them: the stream is the general way's, command by command."""
    commands = [[b"XADD", b"s", b"*", b"f", b"v"] for _ in range(20)]
    commands += [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(5)] + [[b"SET", b"k", b"v"]]
    commands += [[b"XADD", b"s", b"*", b"g", b"v"], [b"SELECT", b"2"], [b"XADD", b"s", b"*", b"f", b"v"],
                 [b"XADD", b"u", b"*", b"f", b"v", b"g", b"w"], [b"XADD", b"s", b"*", b"f", b"v"]]
    short = run(commands, True, loop)
    assert short[:4] == run(commands, False, loop)[:4]
    assert short[0].count(b"XADD") == 29 and short[0] == short[2]  # the backlog holds what the replica got
    assert short[4] == 27  # all but the first (the first backlog selects the database) and the one after SELECT
