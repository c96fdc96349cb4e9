"""What the model propagates to replicas versus the real replication stream (spec/rules/server.md PROP-*).

:class:`ReplicaTap` attaches a fake replica to the real server (``SYNC`` over
a raw socket), skips the RDB payload and reads the command stream; a
``PUBLISH`` marker (PUBLISH is propagated in 7.0) ends each capture. Other
test files reuse it::

    from tests.test_propagation import assert_propagation_matches
    assert_propagation_matches(redis, [(1, ["XADD", "s", "1-1", "f", "v"]), ...])

A script is a list of steps: ``(client, argv)`` runs a command and waits for
its reply; ``(client, argv, "send")`` sends a command that blocks, whose reply
a later step's command causes (read at the end). The same script runs on the
model, and the propagated commands must be equal, except that an integer the
model propagates as a millisecond timestamp may differ by the command's time
window (the model's clock is set to the start of each command's window).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import pytest

from tests.support import ReplicaTap
from xspec.models import ManualClock, Server
from xspec.models.server import render_op
from xspec.spec.resp import Reply
from xspec.traces.record.client import RespConnection

pytestmark = pytest.mark.redis

Step = tuple  # (client, argv) or (client, argv, "send")
_TIMESTAMP_FLOOR = 10 ** 12  # ints this large in the model's ops are clock readings
_markers = itertools.count(1)


def _argv(args: Sequence[str | bytes | int]) -> list[bytes]:
    return [a if isinstance(a, bytes) else str(a).encode() for a in args]


def run_real(redis, script: Sequence[Step]) -> tuple[list[Reply | None], list[list[bytes]], list[tuple[int, int]]]:
    """Run ``script`` on the real server with a tap attached: replies, propagated ops, time windows (ms)."""
    tap = ReplicaTap(redis.host, redis.port)
    conns: dict[int, RespConnection] = {}
    replies: list[Reply | None] = []
    windows: list[tuple[int, int]] = []
    try:
        for step in script:
            client, args = step[0], _argv(step[1])
            conn = conns.get(client) or conns.setdefault(client, RespConnection(redis.host, redis.port))
            t0 = time.time_ns() // 1_000_000
            if len(step) > 2 and step[2] == "send":
                conn.send(args)
                time.sleep(0.05)
                replies.append(None)
            else:
                replies.append(conn.call(args))
            windows.append((t0, time.time_ns() // 1_000_000 + 1))
        ops = tap.take()
    finally:
        for conn in conns.values():
            conn.close()
        tap.close()
    return replies, ops, windows


def run_model(script: Sequence[Step], windows: list[tuple[int, int]],
              config: dict[str, str] | None = None) -> list[list[bytes | int]]:
    """The model's propagated ops for ``script``, each command at the start of its window."""
    clock = ManualClock(windows[0][0] if windows else 0)
    server = Server(clock=clock, config=config)
    ops: list[list[bytes | int]] = []
    for step, (t0, _) in zip(script, windows, strict=True):
        clock.set(t0)
        ops.extend(server.execute(step[0], _argv(step[1])).propagated)
    return ops


def _same_op(real: list[bytes], model: list[bytes | int], slack: int) -> bool:
    if len(real) != len(model):
        return False
    for r, m in zip(real, model, strict=True):
        if isinstance(m, int) and m >= _TIMESTAMP_FLOOR and r.isdigit():
            if abs(int(r) - m) > slack:
                return False
        elif render_op([m])[0] != r:
            return False
    return True


def assert_propagation_matches(redis, script: Sequence[Step], config: dict[str, str] | None = None) -> None:
    """Run ``script`` on the real server and the model and compare what both propagate."""
    if config:
        conn = redis.connection()
        try:
            for k, v in config.items():
                conn.call([b"CONFIG", b"SET", k.encode(), v.encode()])
        finally:
            conn.close()
    replies, real, windows = run_real(redis, script)
    model = run_model(script, windows, config)
    slack = max(t1 - t0 for t0, t1 in windows) + 2 if windows else 0
    shown_real = [b" ".join(op).decode("latin-1") for op in real]
    shown_model = [b" ".join(render_op(op)).decode("latin-1") for op in model]
    assert len(real) == len(model) and all(_same_op(r, m, slack) for r, m in zip(real, model, strict=True)), (
        "propagation differs\n real:  " + "\n        ".join(shown_real)
        + "\n model: " + "\n        ".join(shown_model))


# -- the generic commands ---------------------------------------------------------------
def test_generic_writes_propagate_verbatim_and_only_when_they_change_something(redis):
    assert_propagation_matches(redis, [
        (1, ["SET", "a", "1"]),  # PROP-1: the first op selects its database
        (1, ["set", "a", "2", "NX"]),  # nothing changed: nothing propagated
        (1, ["SET", "a", "3", "xx", "GET"]),  # SET-6: GET dropped
        (1, ["SET", "a", "4", "GET", "get", "KEEPTTL"]),
        (1, ["SET", "a", "5", "PXAT", "99999999999999"]),  # PXAT verbatim
        (1, ["SET", "a", "6", "EX", "100", "NX"]),  # nothing changed
        (1, ["DEL", "nokey"]),  # DEL-4
        (1, ["DEL", "nokey", "a", "a"]),
        (1, ["RENAME", "nokey", "x"]),
        (1, ["SET", "b", "1"]),
        (1, ["RENAME", "b", "b"]),  # RENAME-2
        (1, ["RENAME", "b", "c"]),  # RENAME-5
        (1, ["UNLINK", "c"]),
        (1, ["GET", "c"]),
        (1, ["EXISTS", "c"]),
        (1, ["SELECT", "3"]),  # SELECT itself is never propagated
        (1, ["SET", "d", "1"]),  # PROP-2: a SELECT when the database changes
        (1, ["SWAPDB", "3", "4"]),  # SWAPDB-4
        (1, ["SWAPDB", "5", "5"]),
        (1, ["SWAPDB", "5", "99"]),
        (2, ["SET", "e", "1"]),
        (1, ["FLUSHDB", "ASYNC"]),  # FLUSH-5: even an empty database
        (1, ["FLUSHDB", "bad"]),
        (1, ["FLUSHALL"]),
        (1, ["CONFIG", "SET", "stream-node-max-entries", "100"]),  # CONFIG SET is not propagated
        (1, ["PING"]),
    ])


def test_set_with_relative_expiry_propagates_absolute_pxat(redis):
    assert_propagation_matches(redis, [
        (1, ["SET", "a", "1", "EX", "100"]),  # SET-6
        (1, ["set", "a", "2", "PX", "5000", "GET"]),
        (1, ["SET", "a", "3", "EXAT", "99999999999"]),
    ])


def test_transactions_wrap_several_ops_in_multi_exec(redis):
    assert_propagation_matches(redis, [
        (1, ["MULTI"]),
        (1, ["SET", "a", "1"]),
        (1, ["EXEC"]),  # PROP-3: one op is not wrapped
        (1, ["MULTI"]),
        (1, ["SET", "a", "1"]),
        (1, ["DEL", "nokey"]),
        (1, ["SELECT", "2"]),
        (1, ["SET", "b", "1"]),
        (1, ["EXEC"]),  # PROP-3, PROP-2: SELECT before MULTI and between databases
        (1, ["SET", "c", "1"]),
        (1, ["MULTI"]),
        (1, ["GET", "c"]),
        (1, ["EXEC"]),  # nothing to propagate
        (1, ["MULTI"]),
        (1, ["SET", "d", "1"]),
        (1, ["NOSUCH"]),
        (1, ["EXEC"]),  # aborted: nothing
        (1, ["MULTI"]),
        (1, ["SET", "e", "1"]),
        (1, ["DISCARD"]),
        (1, ["SELECT", "0"]),
        (1, ["MULTI"]),
        (1, ["SET", "f", "1"]),
        (1, ["SET", "f", "2"]),
        (1, ["SWAPDB", "0", "1"]),
        (1, ["FLUSHDB"]),
        (1, ["EXEC"]),
    ])


def test_stream_commands_in_the_replication_stream(redis):
    assert_propagation_matches(redis, [
        (1, ["XADD", "s", "1-1", "f", "v"]),
        (1, ["XADD", "s", "2", "f", "v"]),
        (1, ["XADD", "s", "3-*", "f", "v"]),
        (1, ["XADD", "nokey", "NOMKSTREAM", "*", "f", "v"]),
        (1, ["XGROUP", "CREATE", "s", "g", "0"]),
        (1, ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">"]),
        (1, ["XREADGROUP", "GROUP", "g", "c2", "NOACK", "COUNT", "1", "STREAMS", "s", ">"]),
        (1, ["XACK", "s", "g", "1-1", "99-0"]),
        (1, ["XACK", "s", "g", "98-0"]),
        (1, ["XCLAIM", "s", "g", "c3", "0", "2-0"]),
        (1, ["XAUTOCLAIM", "s", "g", "c4", "0", "0-0", "COUNT", "5"]),
        (1, ["XDEL", "s", "1-1"]),
        (1, ["XTRIM", "s", "MAXLEN", "=", "100"]),
        (1, ["XSETID", "s", "10-0"]),
        (1, ["MULTI"]),
        (1, ["XADD", "s", "11-0", "f", "m"]),
        (1, ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">"]),
        (1, ["EXEC"]),
        (1, ["XGROUP", "DESTROY", "s", "g"]),
        (1, ["DEL", "s"]),
    ])


def test_blocked_reader_served_after_the_write_that_woke_it(redis):
    assert_propagation_matches(redis, [
        (1, ["XADD", "b", "1-1", "f", "v"]),
        (1, ["XGROUP", "CREATE", "b", "g", "$"]),
        (2, ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "b", ">"], "send"),
        (1, ["XADD", "b", "2-1", "f", "v"]),  # PROP-4: the XADD, then the derived XCLAIM
    ])
