"""``xspec serve``: run the reference server (the lead registers :func:`serve_command` in xspec.cli)."""

from __future__ import annotations

import click

from xspec.reference.core import SERVED_DIALECTS


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=6379, show_default=True, type=click.IntRange(0, 65535),
              help="TCP port (0: any free port, printed at start).")
@click.option("--dialect", default="redis-7.0", show_default=True, type=click.Choice(SERVED_DIALECTS),
              help="Which server's behaviour to reproduce.")
@click.option("--clock", "clock", default="wall", show_default=True, type=click.Choice(["wall", "virtual"]),
              help="virtual: time moves only with XSPEC.CLOCK SET/ADVANCE.")
@click.option("--requirepass", default=None, help="Password of the default user (AUTH / HELLO AUTH).")
@click.option("--trace", "trace", default=None, type=click.Path(dir_okay=False),
              help="Write every connection's traffic to this trace file (TRACE-FORMAT.md).")
@click.option("--checked", is_flag=True, help="Also run every command on the model and log divergences.")
@click.option("--enable-debug-command", "enable_debug", default="no", show_default=True,
              type=click.Choice(["no", "yes", "local"]), help="As Redis's enable-debug-command.")
@click.option("--protected-mode", "protected_mode", default="yes", show_default=True,
              type=click.Choice(["yes", "no"]), help="As Redis's protected-mode.")
def serve_command(host: str, port: int, dialect: str, clock: str, requirepass: str | None, trace: str | None,
                  checked: bool, enable_debug: str, protected_mode: str) -> None:
    """Run the reference server: streams, consumer groups and basics over RESP2/RESP3, as Redis 6.2, 7.0,
    7.2, 7.4 or Valkey 9.1 answer them (--dialect)."""
    from xspec.reference.server import ReferenceServer, run_server

    server = ReferenceServer(host, port, dialect=dialect, clock=clock, requirepass=requirepass, trace=trace,
                             checked=checked, enable_debug=enable_debug, protected_mode=protected_mode)
    run_server(server, lambda p: click.echo(f"xspec serve: listening on {host}:{p} ({dialect}, {clock} clock)"))
