"""``xspec serve``: run the reference server (``xspec.reference.server``), checked by the model with ``--checked``.

The reference server imports only ``xspec.spec``; what ``--checked`` compares
it with is handed in from here: :func:`model_checker` builds the model
(``xspec.models.server.Server``) as a :data:`xspec.reference.api.CheckerFactory`.
"""

from __future__ import annotations

import sys

import click

from xspec.models.clock import Instant
from xspec.models.server import Server
from xspec.reference.api import Checker, CheckerClock
from xspec.reference.core import SERVED_DIALECTS
from xspec.spec.dialect import Dialect


class _ServerReadings:
    """The model's clock in checked mode: the readings the server made, as the model's instants."""

    def __init__(self, readings: CheckerClock) -> None:
        self.readings = readings

    def now_ms(self) -> Instant:
        return Instant(self.readings.now_ms())


def model_checker(dialect: Dialect, clock: CheckerClock, config: dict[str, str]) -> Checker:
    """The model of ``dialect``, reading ``clock``, with the server's ``config``: what ``--checked`` runs."""
    server = Server(dialect, clock=_ServerReadings(clock), config=config)
    server.stats.assume_fresh()  # STATS-0: the server it shadows has just started
    return server


_HELP = """Run the reference server: streams, consumer groups and basics over RESP2/RESP3, as Redis 6.2,
7.0, 7.2, 7.4 or Valkey 9.1 answer them (--dialect).

The server also answers two commands of its own (never refused by a fault, never checked):

\b
XSPEC.CLOCK GET              the server's time, ms since the epoch (either clock)
XSPEC.CLOCK SET <ms>         --clock virtual: set it (it may go backwards)
XSPEC.CLOCK ADVANCE <ms>     --clock virtual: move it by <ms>, which may be negative
                             (SET and ADVANCE reply the new time, then time out every
                             blocked client whose deadline has passed and delete the
                             keys whose time passed, as the active expiry cycle would have)

\b
XSPEC.FAULT ERROR <kind> [COUNT <n>] [COMMAND <name>]
    the next n commands (default 1; COUNT 0: every one until CLEAR), or only
    those named <name> (xadd, xgroup|create; a container name matches its
    subcommands), are rejected with Redis's error for <kind>: READONLY,
    LOADING, OOM, BUSY, MASTERDOWN or TRYAGAIN (inside MULTI this dooms the
    transaction)
XSPEC.FAULT DELAY <ms> [CLIENT <id>]
    hold every reply (or client <id>'s) for <ms> ms, order kept; DELAY 0 ends it
XSPEC.FAULT CLOSE ALL | <id> [<id> ...]
    close those connections (ALL: all but the caller's); replies how many
XSPEC.FAULT RESTART EMPTY | KEEP
    close every connection as a restart would (EMPTY also drops all data);
    faults are cleared, configuration kept
XSPEC.FAULT CLEAR
    remove every error fault and delay
XSPEC.FAULT LIST
    the active faults, one line each

Persistence is Redis's: SAVE, BGSAVE (a forked child writes the snapshot), LASTSAVE, save points
(--save), the RDB file --dir/--dbfilename in the dialect's RDB version, loaded at start; with
--appendonly yes, Redis 7.0's multi-part AOF in --dir/--appenddirname (manifest, base, incremental
files; --appendfsync, BGREWRITEAOF, --aof-use-rdb-preamble), loaded at start; under --dialect
redis-6.2, 6.2's single file --dir/appendonly.aof, rewritten in place. The cron rewrites the AOF as it
grows (auto-aof-rewrite-percentage, auto-aof-rewrite-min-size). With --enable-debug-command, DEBUG
RELOAD and DEBUG LOADAOF as Redis has them; where Redis exits (DEBUG LOADAOF without an AOF, or of a
file it cannot load), xspec serve exits with status 1.

Replication is Redis's (REPLICAOF, PSYNC, REPLCONF, ROLE, INFO replication, WAIT, FAILOVER,
min-replicas-*, READONLY on replicas, repl-timeout on both sides, repl-diskless-sync-delay), with
real Redis as primary or replica. --replicaof HOST:PORT starts the server as a replica. --replicas N
starts a primary (on --port, or any free port with 0) and N replicas (the next ports, each with its
own folder under --dir), one address per line; each node answers:

\b
XSPEC.LINK HOLD | FLOW | CUT <replica>
    the replica's link to its primary holds what passes (nothing applied or
    acknowledged; delivered later, in order), flows again, or is cut (the
    replica reconnects a second later and resynchronises, partially if it can)
XSPEC.NODE CRASH | RESTART | PAUSE | RESUME <node>
    the node stops at once as after SIGKILL (connections closed, no save at
    exit), starts again on its port with its start-up settings and what its
    persistence kept (a replica follows its primary again), stops reading
    every connection and link and runs none of its timers (expiry, save
    points, fsync, rewrites, replication cron) as after SIGSTOP, or reads again
<node> and <replica> are names (primary, replica-1, ...) or host:port. With
--replicas, --trace records every node as one trace/2 file: these commands
are its link, crash, restart, pause and resume events.

With --trace, a trace in which XSPEC.FAULT ERROR or RESTART was used is judged
unsupported by `xspec replay` (faults are outside the model); with --checked, a
command a fault refused is not run on the model. See reference/README.md.
"""


@click.command("serve", help=_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=6379, show_default=True, type=click.IntRange(0, 65535),
              help="TCP port (0: any free port, printed at start).")
@click.option("--dialect", default="redis-7.0", show_default=True, type=click.Choice(SERVED_DIALECTS),
              help="Which server's behaviour to reproduce.")
@click.option("--clock", "clock", default="wall", show_default=True, type=click.Choice(["wall", "virtual"]),
              help="virtual: time moves only with XSPEC.CLOCK SET/ADVANCE.")
@click.option("--requirepass", default=None, help="Password of the default user (AUTH / HELLO AUTH).")
@click.option("--trace", "trace", default=None, type=click.Path(dir_okay=False),
              help="Write every connection's traffic to this trace file (spec/trace-format.md).")
@click.option("--checked", is_flag=True, help="Also run every command on the model and log divergences.")
@click.option("--enable-debug-command", "enable_debug", default="no", show_default=True,
              type=click.Choice(["no", "yes", "local"]), help="As Redis's enable-debug-command.")
@click.option("--protected-mode", "protected_mode", default="yes", show_default=True,
              type=click.Choice(["yes", "no"]), help="As Redis's protected-mode.")
@click.option("--dir", "data_dir", default=None, type=click.Path(exists=True, file_okay=False, writable=True),
              help="As Redis's dir: where the RDB file and the AOF directory are (default: the working folder).")
@click.option("--dbfilename", default=None, help="As Redis's dbfilename (default dump.rdb).")
@click.option("--save", "save_points", default=None,
              help='As Redis\'s save: "<seconds> <changes> ..." save points for BGSAVE ("" by default: none).')
@click.option("--appendonly", default=None, type=click.Choice(["yes", "no"]), help="As Redis's appendonly.")
@click.option("--appendfsync", default=None, type=click.Choice(["always", "everysec", "no"]),
              help="As Redis's appendfsync (default everysec).")
@click.option("--appenddirname", default=None, help="As Redis's appenddirname (default appendonlydir).")
@click.option("--aof-use-rdb-preamble", "aof_preamble", default=None, type=click.Choice(["yes", "no"]),
              help="As Redis's aof-use-rdb-preamble (default yes).")
@click.option("--aof-load-truncated", "aof_truncated", default=None, type=click.Choice(["yes", "no"]),
              help="As Redis's aof-load-truncated (default yes): load an AOF cut short up to its last command.")
@click.option("--replicaof", default=None, metavar="HOST:PORT",
              help="Start as a replica of the primary at HOST:PORT (as Redis's replicaof).")
@click.option("--replicas", default=0, show_default=True, type=click.IntRange(0, 16),
              help="Also start this many replicas of this server in the same process (see above).")
def serve_command(host: str, port: int, dialect: str, clock: str, requirepass: str | None, trace: str | None,
                  checked: bool, enable_debug: str, protected_mode: str, data_dir: str | None,
                  dbfilename: str | None, save_points: str | None, appendonly: str | None,
                  appendfsync: str | None, appenddirname: str | None, aof_preamble: str | None,
                  aof_truncated: str | None, replicaof: str | None, replicas: int) -> None:
    from xspec.reference.server import ReferenceServer, StartError, run_server

    config = _persistence_config(data_dir, dbfilename, save_points, appendonly, appendfsync, appenddirname,
                                 aof_preamble, aof_truncated)
    if replicaof is not None:
        primary_host, _, primary_port = replicaof.rpartition(":")
        if not primary_host or not primary_port.isdigit() or not 0 < int(primary_port) < 65536:
            click.echo(f"xspec serve: --replicaof wants HOST:PORT, not {replicaof!r}", err=True)
            sys.exit(2)
        config["replicaof"] = f"{primary_host} {primary_port}"
    if requirepass:
        config["masterauth"] = requirepass  # the replicas of --replicas authenticate as clients do
    if replicas:
        if checked or replicaof is not None:
            click.echo("xspec serve: --replicas runs neither with --checked nor with --replicaof", err=True)
            sys.exit(2)
        _serve_deployment(replicas, host, port, dialect, clock, requirepass, trace, enable_debug,
                          protected_mode, config)
        return
    server = ReferenceServer(host, port, dialect=dialect, clock=clock, requirepass=requirepass, trace=trace,
                             checker=model_checker if checked else None, enable_debug=enable_debug,
                             protected_mode=protected_mode, config=config)
    try:
        run_server(server, lambda p: click.echo(f"xspec serve: listening on {host}:{p} ({dialect}, {clock} clock)"))
    except StartError as e:
        click.echo(f"xspec serve: {e}", err=True)
        sys.exit(1)


def _serve_deployment(replicas: int, host: str, port: int, dialect: str, clock: str, requirepass: str | None,
                      trace: str | None, enable_debug: str, protected_mode: str, config: dict[str, str]) -> None:
    """``--replicas N``: a primary and N replicas in this process (``reference.replication_deployment``)."""
    from xspec.reference.replication_deployment import Deployment, run_deployment
    from xspec.reference.server import StartError

    data_dir = config.pop("dir", None)
    deployment = Deployment(replicas, host, port, trace=trace, data_dir=data_dir, dialect=dialect, clock=clock,
                            requirepass=requirepass, enable_debug=enable_debug, protected_mode=protected_mode,
                            config=config)

    def ready(addresses: list[tuple[str, str]]) -> None:
        for n, (name, address) in enumerate(addresses):
            text = f"listening on {address}" if n == 0 else f"{name} on {address}"
            click.echo(f"xspec serve: {text} ({name}, {dialect}, {clock} clock)")

    try:
        run_deployment(deployment, ready)
    except StartError as e:
        click.echo(f"xspec serve: {e}", err=True)
        sys.exit(1)
    except OSError as e:
        click.echo(f"xspec serve: cannot write the trace {trace!r}: {e.strerror}", err=True)
        sys.exit(1)


def _persistence_config(data_dir: str | None, dbfilename: str | None, save_points: str | None,
                        appendonly: str | None, appendfsync: str | None, appenddirname: str | None,
                        aof_preamble: str | None, aof_truncated: str | None) -> dict[str, str]:
    """The persistence options given, as the CONFIG parameters they set."""
    import os
    given = {"dir": os.path.abspath(data_dir) if data_dir is not None else None, "dbfilename": dbfilename,
             "save": save_points, "appendonly": appendonly, "appendfsync": appendfsync,
             "appenddirname": appenddirname, "aof-use-rdb-preamble": aof_preamble,
             "aof-load-truncated": aof_truncated}
    return {k: v for k, v in given.items() if v is not None}
