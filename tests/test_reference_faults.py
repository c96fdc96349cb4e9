"""Injected faults (XSPEC.FAULT) under ``--checked`` and in a ``--trace``.

A command an error fault refused did not run: the checker (the model) must not
run it either, or the model's state drifts from the server's and later replies
are reported as divergences that are not there. A transaction the fault doomed
is discarded on both; RESTART EMPTY empties both. A trace recorded with such
faults shows errors the model cannot explain: ``xspec replay`` judges it
``unsupported`` (the fault itself is in the trace, outside the model's scope),
never ``diverge``.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import Logged
from xspec.commands.serve import model_checker
from xspec.reference.server import ServerThread
from xspec.spec.resp import Array, Bulk, Error, Int, NullBulk, Reply, Simple
from xspec.spec.trace_format import Call, load
from xspec.traces.check.checker import check_trace
from xspec.traces.record.client import RespConnection

READONLY = Error("READONLY You can't write against a read only replica.")



def _session(port: int) -> list[Reply]:
    """Faults that refuse a plain write, doom a transaction, refuse an EXEC; then a restart."""
    a = RespConnection("127.0.0.1", port)
    try:
        calls = [
            [b"XADD", b"s", b"1-1", b"f", b"v"],
            [b"XSPEC.FAULT", b"ERROR", b"READONLY", b"COMMAND", b"xadd"],
            [b"XADD", b"s", b"2-1", b"f", b"v"],  # refused: the stream keeps one entry
            [b"XLEN", b"s"],
            [b"XADD", b"s", b"2-1", b"f", b"v"],  # the fault was used up: this one runs
            [b"XSPEC.FAULT", b"ERROR", b"OOM", b"COMMAND", b"set"],
            [b"MULTI"], [b"XADD", b"s", b"3-1", b"f", b"v"], [b"SET", b"k", b"v"],  # the SET dooms it
            [b"EXEC"], [b"XLEN", b"s"], [b"GET", b"k"],
            [b"XSPEC.FAULT", b"ERROR", b"BUSY", b"COMMAND", b"exec"],
            [b"WATCH", b"s"], [b"MULTI"], [b"XADD", b"s", b"3-1", b"f", b"v"],
            [b"EXEC"],  # refused: the transaction is discarded, the watch dropped
            [b"XADD", b"s", b"4-1", b"f", b"v"], [b"XLEN", b"s"],
        ]
        replies = [a.call(argv) for argv in calls]
        replies.append(a.call([b"XSPEC.FAULT", b"RESTART", b"EMPTY"]))
    finally:
        a.close()
    b = RespConnection("127.0.0.1", port)
    try:
        replies += [b.call([b"XLEN", b"s"]), b.call([b"XADD", b"s", b"1-1", b"f", b"v"])]
    finally:
        b.close()
    return replies


def test_a_checked_server_does_not_run_what_a_fault_refused_on_the_model(tmp_path: Path) -> None:
    with Logged() as logged, ServerThread(checker=model_checker, trace=str(tmp_path / "run.jsonl")) as st:
        replies = _session(st.port)
    assert replies[2] == READONLY
    assert replies[3] == Int(1)
    assert replies[9] == Error("EXECABORT Transaction discarded because of previous errors.")
    assert replies[10:12] == [Int(2), NullBulk()]
    assert replies[16] == Error("EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. "
                                "You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
    assert replies[17:19] == [Bulk(b"4-1"), Int(3)]
    assert replies[19:] == [Simple("OK"), Int(0), Bulk(b"1-1")]
    assert logged.messages == []


def test_a_trace_with_faults_is_unsupported_not_divergent(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with ServerThread(trace=str(path)) as st:
        _session(st.port)
    trace = load(path)
    calls = [e for e in trace.events if isinstance(e, Call)]
    assert [e.cmd[:2] for e in calls if e.cmd[0] == b"XSPEC.FAULT"] == [
        [b"XSPEC.FAULT", b"ERROR"], [b"XSPEC.FAULT", b"ERROR"], [b"XSPEC.FAULT", b"ERROR"],
        [b"XSPEC.FAULT", b"RESTART"]]
    assert any(e.reply == READONLY for e in calls)  # the refused command, as the client saw it
    verdict = check_trace(trace)
    assert verdict.status == "unsupported", verdict
    assert "XSPEC.FAULT" in (verdict.message or "")


def test_faults_that_change_no_reply_leave_the_trace_checkable(tmp_path: Path) -> None:
    """DELAY and CLOSE show as timing and ``close`` events: the trace still conforms."""
    path = tmp_path / "run.jsonl"
    with ServerThread(trace=str(path)) as st:
        a = RespConnection("127.0.0.1", st.port)
        b = RespConnection("127.0.0.1", st.port)
        try:
            b_id = b.call([b"CLIENT", b"ID"])
            assert isinstance(b_id, Int)
            a.call([b"XSPEC.FAULT", b"DELAY", b"20"])
            a.call([b"XADD", b"s", b"1-1", b"f", b"v"])
            a.call([b"XSPEC.FAULT", b"DELAY", b"0"])
            assert a.call([b"XSPEC.FAULT", b"CLOSE", str(b_id.value).encode()]) == Int(1)
            assert a.call([b"XRANGE", b"s", b"-", b"+"]) == Array((Array((Bulk(b"1-1"), Array((Bulk(b"f"),
                                                                                                Bulk(b"v"))))),))
        finally:
            a.close()
            b.close()
    verdict = check_trace(load(path))
    assert verdict.status == "conform", verdict


def test_server_commands_queued_in_a_transaction_are_left_out_of_the_comparison(tmp_path: Path) -> None:
    """XSPEC.* runs inside EXEC on the server only: its reply is not compared with the model's array."""
    with Logged() as logged, ServerThread(checker=model_checker, clock="virtual") as st:
        a = RespConnection("127.0.0.1", st.port)
        try:
            replies = [a.call(argv) for argv in (
                [b"MULTI"], [b"XADD", b"s", b"1-1", b"f", b"v"], [b"XSPEC.FAULT", b"ERROR", b"OOM", b"COMMAND", b"set"],
                [b"XLEN", b"s"], [b"EXEC"], [b"SET", b"k", b"v"], [b"EXISTS", b"k"])]
        finally:
            a.close()
    assert replies[4] == Array((Bulk(b"1-1"), Simple("OK"), Int(1)))
    assert replies[5:] == [Error("OOM command not allowed when used memory > 'maxmemory'."), Int(0)]
    assert logged.messages == []
