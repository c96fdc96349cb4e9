"""``xspec record``: run the recording proxy (:class:`xspec.traces.record.proxy.RecordingProxy`) until a signal."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click

from xspec.traces.harness.targets import TargetError, parse_endpoint
from xspec.traces.record.proxy import RecordingError, RecordingProxy, event_loop, parse_listen


async def _serve(proxy: RecordingProxy) -> None:
    """Record until Ctrl-C or SIGTERM, or until the trace file cannot be written (RecordingError)."""
    await proxy.start()
    click.echo(f"recording {proxy.listen_host}:{proxy.listen_port} -> {proxy.upstream.host}:{proxy.upstream.port}"
               f" into {proxy.out} (Ctrl-C to stop)", err=True)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, proxy.ended.set)
    await proxy.ended.wait()
    await proxy.stop()
    if proxy.failure is not None:
        raise RecordingError(f"{proxy.failure}; the proxy stopped")
    click.echo(f"{proxy.next_client - 1} connections, {proxy.commands} commands, {proxy.written} events "
               f"written to {proxy.out}", err=True)


@click.command("record")
@click.option("--listen", required=True, help="Where clients connect: HOST:PORT (port 0: any free port).")
@click.option("--upstream", required=True, help="The server: redis://[user:password@]host:port or rediss://...")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Trace file to write (.jsonl[.gz]).")
@click.option("--title", help="The trace's title.")
def record_command(listen: str, upstream: str, out: Path, title: str | None) -> None:
    """Record every conversation between clients and a server through a RESP proxy, as one trace.

    Bytes pass through unchanged; events are appended to the trace as they
    are recorded, and the proxy runs until Ctrl-C or SIGTERM.
    """
    try:
        host, port = parse_listen(listen)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--listen") from None
    try:
        endpoint = parse_endpoint(upstream)
    except TargetError as e:
        raise click.BadParameter(str(e), param_hint="--upstream") from None
    if endpoint.db:
        raise click.BadParameter("the proxy forwards clients' own SELECTs: give no /db", param_hint="--upstream")
    try:
        with asyncio.Runner(loop_factory=event_loop) as runner:
            runner.run(_serve(RecordingProxy(host, port, endpoint, out, title)))
    except (TargetError, RecordingError) as e:
        raise click.ClickException(str(e)) from None
