"""The reference server's network side: an asyncio server speaking RESP2/RESP3 over TCP.

One :class:`~xspec.reference.connection.ClientConnection` (the loop's protocol,
in ``reference.connection``; uvloop's loop when uvloop is importable) per connection. Each chunk read is parsed into as many
commands as it holds (``reference.protocol``), they run one after the other on
the :class:`~xspec.reference.core.Core`, and their replies are queued; when the
loop turn's input is all handled, each connection's queued replies leave in one
write (Redis's ``beforeSleep``), so waking clients does not interrupt the work.
A blocked client stops there: the commands it pipelined after the blocking one
wait, parsed, until it is served or times out, and then run.

Fairness and flow control (Redis reads at most ``PROTO_IOBUF_LEN`` per client per
event-loop turn and answers in ``beforeSleep``; uvloop would read a ready socket up
to 32 times, 256 KB each, per turn):

* one loop turn runs at most ``TURN_COMMANDS`` commands of a client (or until
  its replies reach ``TURN_REPLY_PIECES`` pieces); the rest wait, parsed, for the
  next turn, with reading paused meanwhile, so every other ready client is served
  and the replies so far leave in between. A read of ``TURN_INPUT`` bytes or more
  also pauses reading until the next turn.
* a client whose unsent replies pass ``OUTPUT_HIGH_WATER`` (a slow reader) has
  no further command run until they drain below ``OUTPUT_LOW_WATER``. Its input
  is still read and kept (up to ``client-query-buffer-limit``, Redis's rule):
  a client that writes a whole pipeline before reading any reply (redis-py's
  pipelines do) is never left waiting on a server that waits on it.
* ``client-output-buffer-limit``'s ``normal`` class, as Redis: a client whose
  unsent replies reach the hard limit, or stay over the soft limit longer than
  its seconds, is closed without a further reply (0 0 0, the default: never).
  A hard limit above the high-water mark raises the mark to it, so a slow reader
  is closed where Redis closes it rather than held. Both are checked when
  replies are written, as Redis checks when it adds them.

Limits, with Redis's defaults and CONFIG control: ``proto-max-bulk-len`` and
the multibulk length (protocol errors), ``client-query-buffer-limit`` (a client
whose unprocessed input grows past it is closed, as Redis does, without a
reply), ``maxclients`` (``-ERR max number of clients reached``; the open-files
limit is raised at start for it, as Redis does). Protected mode: with
``protected-mode yes`` and no password, connections from outside the loopback
interface get Redis's ``-DENIED`` text and are closed.

Shutdown (:func:`run_server`): SIGTERM or SIGINT is taken by a Python-level
handler, which runs at the next bytecode even while the loop is busy inside a
callback; it stops commands from running at once and schedules
:meth:`ReferenceServer.stop` (listener, then connections, then the trace); a
second signal exits at once. ``XSPEC_SERVE_PARENT_PID`` makes the server shut
down when that process (its parent) is gone.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, cast

from xspec.reference.api import CheckerFactory
from xspec.reference.clock import make_clock
from xspec.reference.connection import ClientConnection, ServerState
from xspec.reference.core import Client, Core
from xspec.reference.handlers import new_core

RESERVED_FDS = 32  # CONFIG_MIN_RESERVED_FDS
PARENT_PID_ENV = "XSPEC_SERVE_PARENT_PID"  # shut down when this process (the parent) is gone
PARENT_DEATH_SIGNAL = signal.SIGHUP  # what the kernel sends when the parent's thread exits (PR_SET_PDEATHSIG)
PARENT_POLL_SECONDS = 0.5  # where PR_SET_PDEATHSIG is missing: how often the parent pid is looked at
SHUTDOWN_DEADLINE_SECONDS = 3  # after a shutdown signal, SIGALRM ends the process whatever it is doing
PR_SET_PDEATHSIG = 1
_MEMORY_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2, "g": 1000 ** 3,
                 "gb": 1024 ** 3}


class StartError(Exception):
    """The server cannot start: its trace file cannot be written, or it cannot listen where asked."""


def _reason(e: OSError) -> str:
    """An OSError's cause in words, without the address asyncio repeats in its text."""
    if isinstance(e, socket.gaierror) or not e.errno or e.errno < 0:
        return e.strerror or str(e)
    return os.strerror(e.errno)


class ReferenceServer:
    """The listening socket, its connections and the core behind them."""

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, *, dialect: str = "redis-7.0",
                 clock: str = "wall", requirepass: str | None = None, trace: str | None = None,
                 checker: CheckerFactory | None = None, enable_debug: str = "no",
                 protected_mode: str = "yes", config: dict[str, str] | None = None) -> None:
        self.host = host
        self.port = port
        self.core = new_core(dialect=dialect, clock=make_clock(clock), requirepass=requirepass,
                             enable_debug=enable_debug, port=port,
                             config={"protected-mode": protected_mode, "bind": host, **(config or {})})
        self.core.server = self
        self.connections: set[ClientConnection] = set()
        self.state = ServerState()  # shutdown_asap, paused, delays, before_replies (the properties below)
        self.trace_path = trace
        self.checker = checker  # --checked: what each command is checked against (``reference.trace``)
        self._server: Any = None  # asyncio's or uvloop's Server (not an asyncio.AbstractServer)
        self._stopped: asyncio.Event | None = None
        self._output_limits: tuple[str, tuple[int, int, int] | None] = ("", None)

    @property
    def shutdown_asap(self) -> bool:
        """A shutdown was asked for: no further command runs."""
        return self.state.shutdown_asap

    @shutdown_asap.setter
    def shutdown_asap(self, value: bool) -> None:
        self.state.shutdown_asap = value

    @property
    def paused(self) -> bool:
        """XSPEC.NODE PAUSE: connections read nothing until RESUME."""
        return self.state.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self.state.paused = value

    @property
    def delays(self) -> dict[int, float]:
        """Client id (0: everyone) -> seconds its replies wait (XSPEC.FAULT DELAY)."""
        return self.state.delays

    @property
    def before_replies(self) -> Callable[[], None] | None:
        """Called before any reply leaves (reference.aof: appendfsync always syncs what the commands wrote)."""
        return self.state.before_replies

    @before_replies.setter
    def before_replies(self, value: Callable[[], None] | None) -> None:
        self.state.before_replies = value

    def output_limits(self) -> tuple[int, int, int] | None:
        """``client-output-buffer-limit``'s normal class as (hard bytes, soft bytes, soft seconds);
        None when it sets no limit (Redis's default ``normal 0 0 0``) or cannot be read."""
        text = self.core.config.get("client-output-buffer-limit", "")
        if text != self._output_limits[0]:
            self._output_limits = (text, normal_output_limits(text))
        return self._output_limits[1]

    def flush_all(self) -> None:
        """The end of a loop turn: every queued reply leaves (``handleClientsWithPendingWrites``)."""
        self.state.flush_all()

    def reply_delay(self, c: Client | None) -> float:
        if not self.delays:
            return 0.0
        return self.delays.get(c.id if c is not None else 0, self.delays.get(0, 0.0))

    async def start(self) -> None:
        """Open the trace (``--trace``) and the listener; :class:`StartError` if either cannot be."""
        loop = asyncio.get_running_loop()
        self.core.timer_factory = loop.call_later
        if self.trace_path is not None or self.checker is not None:
            from xspec.reference.trace import attach_observers
            try:
                attach_observers(self.core, self.trace_path, self.checker)
            except OSError as e:
                raise StartError(f"cannot write the trace {self.trace_path!r}: {_reason(e)}") from e
        raise_open_files_limit(int(self.core.config["maxclients"]))
        from xspec.reference.aof import LoadError, start_persistence
        try:
            start_persistence(self.core)  # the data on disk, and the cron of saves and fsyncs
        except LoadError as e:
            self._close_trace()
            raise StartError(str(e)) from e
        self._stopped = asyncio.Event()
        try:
            # A ClientConnection is a protocol by its methods (the loop calls them by name), not by its base.
            self._server = await loop.create_server(lambda: cast(asyncio.Protocol, ClientConnection(self)),
                                                    self.host, self.port, reuse_address=True, backlog=511)
        except OSError as e:
            self._close_trace()
            raise StartError(f"cannot listen on {self.host}:{self.port}: {_reason(e)}") from e
        sock = self._server.sockets[0]  # a list in uvloop, a tuple in asyncio
        self.port = sock.getsockname()[1]
        self.core.config["port"] = str(self.port)
        from xspec.reference.replica_link import replicaof_setting
        from xspec.reference.replication import start_replication
        start_replication(self.core, replicaof_setting(self.core))  # the replicaof setting: follow it
        from xspec.reference.active_expiry import start_active_expiry
        start_active_expiry(self.core)  # EXPIRE-ACTIVE-1: the cron's expiry cycle

    async def serve_until_stopped(self) -> None:
        assert self._stopped is not None
        if not self.shutdown_asap:
            await self._stopped.wait()
        self.stop()  # a signal may have come before the listener was open

    def stop(self) -> None:
        """Shut down, on the server's loop (SIGTERM): the listener, then every connection, then the trace.

        Nothing here waits on a client. May be called again (it then closes what is left).
        """
        from xspec.reference.aof import finish_persistence
        finish_persistence(self.core)  # once: the AOF synced, the final RDB save when save points are set
        from xspec.reference.replication import finish_replication
        finish_replication(self.core)  # the link to the primary closes
        self.shutdown_asap = True
        if self._server is not None:
            self._server.close()
        connections, self.connections = self.connections, set()
        for conn in connections:
            conn.shut()
        self._close_trace()
        if self._stopped is not None:
            self._stopped.set()


    def _close_trace(self) -> None:
        observer = self.core.observer
        if observer is not None and hasattr(observer, "finish"):
            observer.finish()


def normal_output_limits(text: str) -> tuple[int, int, int] | None:
    """The ``normal`` class of a ``client-output-buffer-limit`` value (``class hard soft seconds ...``)."""
    words = text.lower().split()
    for i in range(0, len(words) - 3, 4):
        if words[i] == "normal":
            try:
                hard, soft = (_memory_bytes(w) for w in words[i + 1:i + 3])
                seconds = int(words[i + 3])
            except (ValueError, KeyError):
                return None
            return (hard, soft, seconds) if hard or soft else None
    return None


def _memory_bytes(word: str) -> int:
    digits = word.rstrip("kmgb")
    return int(digits) * _MEMORY_UNITS[word[len(digits):]]


def raise_open_files_limit(maxclients: int) -> int:
    """``adjustOpenFilesLimit``: make room for ``maxclients`` connections plus reserved descriptors."""
    wanted = maxclients + RESERVED_FDS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
        except (ValueError, OSError):
            return soft
    return soft


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def say(text: str) -> None:
    """A log line on stderr that never blocks: dropped when stderr is a full pipe nobody reads."""
    try:
        if select.select([], [2], [], 0)[1]:
            os.write(2, f"xspec serve (pid {os.getpid()}): {text}\n".encode())
    except (OSError, ValueError):
        pass


class ShutdownSignals:
    """SIGTERM/SIGINT handling for a server run in the main thread, as Redis's ``sigShutdownHandler``.

    A Python-level handler rather than ``loop.add_signal_handler``: the loop only runs the latter
    between its turns, and one turn can read megabytes of pipelined input (libuv reads a ready
    socket up to 32 times), so a flooded server took seconds to notice SIGTERM. The handler here
    runs at the next bytecode, even inside a command loop: it logs, sets ``shutdown_asap`` (no
    further command runs) and schedules :meth:`ReferenceServer.stop` on the loop. A second signal
    exits at once with status 1 (Redis does so for a second SIGINT: "You insist... exiting now.").
    A shutdown still running ``SHUTDOWN_DEADLINE_SECONDS`` after the signal (one command that
    does not end) is ended by SIGALRM's default action, which needs no Python code to run.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, server: ReferenceServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.previous: dict[int, Any] = {}
        self.parent_pid: int | None = None
        self.direct_parent = False  # the pid given is this process's parent (not an ancestor further up)

    def install(self) -> None:
        try:
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, self.on_signal)
            self.previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, signal.SIG_DFL)
        except ValueError:  # not the main thread: the caller stops the server itself
            self.restore()

    def restore(self) -> None:
        if self.previous:
            signal.alarm(0)
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.server.shutdown_asap:
            say("You insist... exiting now.")
            os._exit(1)
        self.begin(f"Received {signal.Signals(signum).name} scheduling shutdown...")

    def begin(self, why: str) -> None:
        """Start the shutdown: log why, stop running commands, stop the server on its loop."""
        say(why)
        self.server.shutdown_asap = True
        if self.previous:
            signal.alarm(SHUTDOWN_DEADLINE_SECONDS)
        try:
            self.loop.call_soon_threadsafe(self.server.stop)
        except RuntimeError:  # the loop is closed: the server is down already
            pass

    # -- the parent ---------------------------------------------------------------------------------
    def watch_parent(self) -> None:
        """With ``XSPEC_SERVE_PARENT_PID`` set (by the process that started this one): shut down when it is gone.

        On Linux the kernel signals us when our parent exits (PR_SET_PDEATHSIG). It does so when
        the *thread* that started us exits, so the signal is a dedicated one (SIGHUP) whose
        handler looks before shutting down. The parent is also looked at right away (it may have
        died before the request) and then every ``PARENT_POLL_SECONDS`` (where the kernel cannot
        tell us). A pid that is not our parent's (a launcher between us) is watched by pid alone.
        """
        value = os.environ.pop(PARENT_PID_ENV, "")
        if not value.isdigit() or int(value) <= 1:
            return
        self.parent_pid = int(value)
        self.direct_parent = os.getppid() == self.parent_pid
        if self.direct_parent:
            try:
                self.previous[PARENT_DEATH_SIGNAL] = signal.signal(PARENT_DEATH_SIGNAL, self.on_parent_signal)
            except ValueError:
                pass
            else:
                set_parent_death_signal(PARENT_DEATH_SIGNAL)
        self.check_parent()

    def on_parent_signal(self, signum: int, frame: FrameType | None) -> None:
        self.check_parent(poll=False)

    def parent_alive(self) -> bool:
        if os.getppid() == self.parent_pid:
            return True
        # Reparented, so a direct parent is gone; a process further up is looked up by its pid.
        return not self.direct_parent and self.parent_pid is not None and process_exists(self.parent_pid)

    def check_parent(self, poll: bool = True) -> None:
        if self.server.shutdown_asap:
            return
        if not self.parent_alive():
            self.begin(f"parent process {self.parent_pid} is gone, scheduling shutdown...")
        elif poll:
            self.loop.call_later(PARENT_POLL_SECONDS, self.check_parent)


def process_exists(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not, where /proc tells)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[-1][:1] != b"Z"
    except OSError:
        return True


def set_parent_death_signal(sig: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)`` where there is one (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def run_server(server: ReferenceServer, ready: Any = None) -> None:
    """Run until SIGTERM/SIGINT (or the parent named by ``XSPEC_SERVE_PARENT_PID`` is gone).

    ``ready`` (if given) is called with the bound port.
    """
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    signals = ShutdownSignals(server, loop)
    signals.install()

    async def serve() -> None:
        await server.start()
        # What exists now lives as long as the server: out of the collector's way. The hot paths
        # make no cycles, so young collections can be rarer (they showed at 2-3% under load).
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)
        signals.watch_parent()
        if ready is not None and not server.shutdown_asap:
            ready(server.port)
        await server.serve_until_stopped()
        say("Ready to exit, bye bye...")

    try:
        loop.run_until_complete(serve())
    finally:
        loop.close()
        signals.restore()


class ServerThread:
    """A server running in a background thread of this process (tests, benchmarks).

    ``with ServerThread(clock="virtual") as st: ...`` binds a free loopback port
    (``st.port``); :meth:`call` runs a function on the server's loop.
    """

    def __init__(self, **options: Any) -> None:
        options.setdefault("port", 0)
        config = dict(options.get("config") or {})
        # the files it writes (a disk-based full sync's RDB, a replica's, RDB-6) go to a folder of its
        # own, removed at exit, unless one is given: never another run's working directory
        self.temp_dir = None if "dir" in config else tempfile.mkdtemp(prefix="xspec-serve-")
        if self.temp_dir is not None:
            options["config"] = {**config, "dir": self.temp_dir}
        self.server = ReferenceServer(**options)
        self.loop = new_event_loop()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._run, name="xspec-serve", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
        finally:
            self._started.set()
        self.loop.run_until_complete(self.server.serve_until_stopped())
        self.loop.close()

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def core(self) -> Core:
        return self.server.core

    def call(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` on the server's thread; its result."""
        async def run() -> Any:
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        if not self._started.wait(10) or self.server._server is None:
            raise RuntimeError("the reference server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.server.stop)
        self.thread.join(10)
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def main() -> None:
    """``python -m xspec.reference.server [port]``: a quick way to run it by hand."""
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    run_server(ReferenceServer(port=port), lambda p: print(f"xspec serve listening on 127.0.0.1:{p}", flush=True))


if __name__ == "__main__":
    main()
