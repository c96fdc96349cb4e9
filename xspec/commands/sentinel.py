"""``xspec sentinel``: a Sentinel that monitors xspec or real Redis nodes (``xspec.reference.sentinel_server``)."""

from __future__ import annotations

import asyncio
import sys

import click

_HELP = """Run a Sentinel, as Redis 7.0.15's redis-sentinel behaves for its clients and the nodes it watches.

It monitors each primary given with --monitor (more with SENTINEL MONITOR), finds its replicas from INFO and
other Sentinels from the __sentinel__:hello channel, marks nodes down after --down-after-ms without a valid
PING reply, and fails over (elected by the Sentinels that see the primary down, or at once on SENTINEL
FAILOVER): it promotes the replica with the lowest replica-priority, then the highest replication offset, then
the smallest run id, repoints the others, and publishes +switch-master and the other events to subscribers.

Clients use SENTINEL get-master-addr-by-name, masters, master, replicas (slaves), sentinels, failover, reset,
ckquorum, monitor, remove, set, myid, is-master-down-by-addr, info-cache, plus INFO, ROLE, PING, HELLO, CLIENT
SETNAME/GETNAME/ID, the subscribe family, and xspec's XSPEC.CLOCK (with --clock virtual, down detection
and every timeout follow that clock, so a test decides the moment of a failover). SENTINEL CONFIG, DEBUG and SIMULATE-FAILURE, notification scripts
and TILT mode are not implemented (they answer an error naming xspec sentinel).
"""


def _monitor(ctx: click.Context, param: click.Parameter,
             values: tuple[str, ...]) -> tuple[tuple[str, str, int, int], ...]:
    import ipaddress

    out = []
    for value in values:
        parts = value.split()
        if len(parts) != 4:
            raise click.BadParameter(f"{value!r}: expected 'NAME HOST PORT QUORUM'")
        name, host, port_text, quorum_text = parts
        try:
            ipaddress.ip_address(host)
            port, quorum = int(port_text), int(quorum_text)
        except ValueError:
            raise click.BadParameter(f"{value!r}: HOST must be an IP address, PORT and QUORUM integers") from None
        if not 0 < port < 65536 or quorum < 1:
            raise click.BadParameter(f"{value!r}: PORT must be 1-65535 and QUORUM at least 1")
        out.append((name, host, port, quorum))
    return tuple(out)


@click.command("sentinel", help=_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind and to announce.")
@click.option("--port", default=26379, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: a free one, printed).")
@click.option("--monitor", "monitors", multiple=True, callback=_monitor, metavar="'NAME HOST PORT QUORUM'",
              help="A primary to monitor (repeatable), as redis-sentinel's 'sentinel monitor' line.")
@click.option("--clock", "clock", default="wall", show_default=True, type=click.Choice(["wall", "virtual"]),
              help="The clock the timings run on: the host's, or a virtual one moved by XSPEC.CLOCK SET/ADVANCE.")
@click.option("--down-after-ms", type=click.IntRange(1), default=None,
              help="down-after-milliseconds of the monitored primaries (default 30000).")
@click.option("--failover-timeout-ms", type=click.IntRange(1), default=None,
              help="failover-timeout of the monitored primaries (default 180000).")
def sentinel_command(host: str, port: int, monitors: tuple[tuple[str, str, int, int], ...], clock: str,
                     down_after_ms: int | None, failover_timeout_ms: int | None) -> None:
    from xspec.reference.clock import make_clock
    from xspec.reference.sentinel_server import SentinelServer

    async def run() -> None:
        server = SentinelServer(host, port, clock=make_clock(clock), monitors=monitors, down_after_ms=down_after_ms,
                                failover_timeout_ms=failover_timeout_ms)
        await server.start()
        click.echo(f"xspec sentinel: listening on {host}:{server.port}, monitoring "
                   f"{', '.join(m[0] for m in monitors) or 'nothing yet'}")
        await server.serve_forever()

    try:
        asyncio.run(run())
    except OSError as e:
        click.echo(f"xspec sentinel: cannot listen on {host}:{port}: {e.strerror or e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
