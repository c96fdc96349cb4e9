"""``xspec serve --checked`` judges INFO's counters (spec/rules/stats.md) and the commands the
model took over from the server: DEBUG (spec/rules/debug.md), WAIT, and CLIENT KILL, NO-EVICT,
NO-TOUCH, SETINFO, PAUSE, UNPAUSE and UNBLOCK (spec/rules/clients.md).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from tests.support import checked_run
from xspec.commands.serve import model_checker
from xspec.reference.server import ServerThread
from xspec.reference.trace import CheckedRun
from xspec.spec.resp import Bulk, Error, Int, NullArray, Simple, Verbatim
from xspec.traces.record.client import RespConnection

SCRIPT = [
    "NOSUCH", "GET", "SET k v", "LPUSH k x", "XADD s 1-1 f v", "XADD s 1-1 f v", "XGROUP CREATE s g 0",
    "XREADGROUP GROUP g a STREAMS s >", "XCLAIM s g b 0 1-1", "XAUTOCLAIM s g c 0 0", "XCLAIM s g d 0 9-9 LASTID 5-0",
    "MULTI", "SET a 1", "LPUSH a x", "EXEC", "MULTI", "GET", "EXEC",
    "INFO commandstats", "INFO errorstats", "INFO stats", "INFO persistence",
    "DEBUG SLEEP 0", "DEBUG SET-ACTIVE-EXPIRE 1", "DEBUG OBJECT k", "DEBUG OBJECT s", "DEBUG OBJECT nokey",
    "DEBUG HELP", "DEBUG NOSUCH", "CLIENT NO-EVICT on", "CLIENT NO-EVICT maybe", "CLIENT NO-TOUCH on",
    "CLIENT INFO", "CLIENT SETINFO lib-name xspec-test", "CLIENT SETINFO lib-ver 1.0", "CLIENT SETINFO bad x",
    "CLIENT SETINFO lib-name a\tb", "CLIENT PAUSE x", "CLIENT PAUSE -1", "CLIENT PAUSE 1 NOSUCH",
    "CLIENT PAUSE 1 WRITE", "CLIENT UNPAUSE", "CLIENT KILL ID 0", "CLIENT KILL TYPE nosuch", "CLIENT KILL USER x",
    "CLIENT KILL SKIPME maybe", "CLIENT KILL ID", "CLIENT UNBLOCK x", "CLIENT UNBLOCK x y",
    "CLIENT UNBLOCK 99999 ERROR", "WAIT 0 0", "WAIT x 0", "WAIT 1 -1", "WAIT 1 5", "RESET",
    "CLIENT INFO", "INFO commandstats", "INFO errorstats", "INFO stats", "INFO persistence"]


def _run(dialect: str, trace: Path) -> tuple[list[object], CheckedRun]:
    with ServerThread(dialect=dialect, checker=model_checker, enable_debug="yes", trace=str(trace)) as st:
        a, b = RespConnection("127.0.0.1", st.port), RespConnection("127.0.0.1", st.port)
        replies: list[object] = []
        try:
            victim = b.call([b"CLIENT", b"ID"])
            assert isinstance(victim, Int)
            b.send([b"BLPOP", b"q", b"0"])
            time.sleep(0.05)
            assert a.call([b"CLIENT", b"UNBLOCK", str(victim.value).encode(), b"ERROR"]) == Int(1)
            assert b.recv() == Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
            b.send([b"BRPOP", b"q", b"0"])
            time.sleep(0.05)
            for line in SCRIPT:
                replies.append(a.call([x.encode() for x in line.split(" ")]))
            replies.append(a.call([b"CLIENT", b"KILL", b"ID", str(victim.value).encode()]))
            replies.append(a.call([b"INFO", b"commandstats"]))
        finally:
            a.close()
            b.close()
        checker = checked_run(st)
        return replies, checker


@pytest.mark.parametrize("dialect", ["redis-7.0", "redis-6.2", "redis-7.2", "valkey-9.1"])
def test_the_model_agrees_with_the_server_on_counters_and_admin_commands(dialect, caplog, tmp_path):
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    replies, checker = _run(dialect, tmp_path / "serve.jsonl")
    assert checker.divergences == 0, caplog.text
    by_line = dict(zip(SCRIPT, replies, strict=False))
    assert by_line["WAIT 1 5"] == Int(0)
    assert by_line["DEBUG SLEEP 0"] == Simple("OK")
    if dialect == "valkey-9.1":
        assert by_line["CLIENT SETINFO lib-name xspec-test"] == Simple("OK")
    elif dialect == "redis-6.2":
        assert by_line["CLIENT KILL ID 0"] == Int(1)  # CLIENT-DIALECT-4: ID 0 is no filter in 6.2
    else:
        assert replies[-2] == Int(1)  # CLIENT KILL ID of the blocked client
    stats = replies[-1]
    text = stats.value if isinstance(stats, Bulk) else stats.text if isinstance(stats, Verbatim) else b""
    assert b"cmdstat_get:" in text


def test_a_wrong_count_in_the_model_is_a_divergence(caplog, monkeypatch, tmp_path):
    """The counters are judged: a model that miscounts is caught at the next INFO."""
    from xspec.models import stats
    real_error = stats.Stats.error

    def miscount(self: stats.Stats, text: str) -> None:
        real_error(self, text)
        self.total_errors += 1
    monkeypatch.setattr(stats.Stats, "error", miscount)
    caplog.set_level(logging.ERROR, logger="xspec.serve")
    with ServerThread(dialect="redis-7.0", checker=model_checker, trace=str(tmp_path / "serve.jsonl")) as st:
        a = RespConnection("127.0.0.1", st.port)
        try:
            assert isinstance(a.call([b"GET"]), Error)
            a.call([b"INFO", b"stats"])
            assert a.call([b"BLPOP", b"q", b"0.01"]) == NullArray()
        finally:
            a.close()
        checker = checked_run(st)
        assert checker.divergences == 1, caplog.text
    assert "[b'INFO', b'stats']" in caplog.text


SETINFO = ["CLIENT SETINFO lib-name redis-py", "CLIENT SETINFO LIB-VER 5.0.1", "CLIENT SETINFO lib-name a\tb",
           "CLIENT SETINFO lib-ver a\x7fb", "CLIENT SETINFO bad x", "CLIENT SETINFO lib-name", "CLIENT SETINFO lib-name ",
           "CLIENT NO-EVICT on", "CLIENT NO-TOUCH on", "CLIENT NO-EVICT off", "CLIENT UNBLOCK 1 nosuch",
           "CLIENT UNBLOCK x", "CLIENT PAUSE 0 ALL", "CLIENT UNPAUSE", "CLIENT KILL ID 1 ID 2",
           "CLIENT KILL ID 1 2 x", "CLIENT KILL TYPE normal NOT-NAME a SKIPME yes", "CLIENT KILL DB 99",
           "CLIENT KILL FLAGS z", "CLIENT KILL USER nobody", "CLIENT KILL NAME x LIB-NAME y LIB-VER z"]


def _client_fields(reply: object) -> dict[str, str]:
    text = reply.value if isinstance(reply, Bulk) else reply.text if isinstance(reply, Verbatim) else b""
    return dict(part.split("=", 1) for part in text.decode().split() if "=" in part)


@pytest.mark.redis
@pytest.mark.parametrize("dialect", ["redis-7.0", "redis-7.2", "valkey-9.1"])
def test_client_subcommands_answer_as_the_real_server(request: pytest.FixtureRequest, dialect: str):
    """CLIENT-SETINFO-1, CLIENT-NOEVICT-1, CLIENT-NOTOUCH-1, CLIENT-UNBLOCK-1, CLIENT-PAUSE-1, CLIENT-KILL-1:
    the model's replies are the real server's, and so are the flags and library fields CLIENT INFO shows."""
    from tests.model_connection import ModelServer
    from tests.real_servers import SERVER_FIXTURES
    real = request.getfixturevalue(SERVER_FIXTURES[dialect])
    conn, mine = RespConnection("127.0.0.1", real.port), ModelServer(dialect).connect()
    try:
        for line in SETINFO:
            argv = [x.encode() for x in line.split(" ")]
            assert mine.call(argv) == conn.call(argv), line
        theirs, ours = _client_fields(conn.call([b"CLIENT", b"INFO"])), _client_fields(mine.call([b"CLIENT", b"INFO"]))
        for field in ("flags", "lib-name", "lib-ver"):
            assert ours.get(field) == theirs.get(field), field
    finally:
        conn.close()
        mine.close()
