"""Durability and replication figures of the reference server beside Redis 7.0.15, in one run.

    python benchmarks/server.py --durability [--requests N] [--runs R] [--entries E] [--compiled-site DIR]

Called by ``benchmarks/server.py --durability`` (issue 18's performance section). Each figure is
measured on a real redis-server 7.0.15 and on ``xspec serve``, started the same way on free
loopback ports in temporary directories:

* ``appendfsync always``: XADD from 50 clients (redis-benchmark ``-c 50``) with ``appendonly yes``
  and ``appendfsync always`` on both, the servers taking turns ``--runs`` times; medians;
* RDB bytes per entry: ``--entries`` entries of two short fields added, then SAVE; the size of the
  file over the entries;
* pipelined XADD (``-P 16``) on a primary with one replica attached (a replica of the same server
  kind, linked with REPLICAOF and in sync before the load), the primaries taking turns; the same
  load on the same primaries before their replicas are linked, so that the CPU a replica costs the
  primary per command shows (the primary's and the replica's CPU per command are printed);
* full synchronisation of ``--entries`` entries: a fresh replica is pointed at a filled primary;
  the time from REPLICAOF until the replica reports the link up with the primary's offset, and the
  bytes the replica process read meanwhile (``/proc/<pid>/io`` ``rchar``: the RDB payload and the
  protocol around it, counted the same way for both servers; a 7.0 replica writes the payload to a
  file and reads it back, so its count holds it twice), and the slowest answer of the primary to
  a PING sent every 10 ms meanwhile (both primaries write the snapshot in a forked child and go on
  serving). Both primaries get ``repl-diskless-sync-delay 0`` first, so that the time is the
  synchronisation's own, without the 5 s 7.0 waits by default for more replicas, and both nodes a
  ``repl-timeout`` as long as the deadline: xspec's replica loads the snapshot in its loop, and on a
  loaded machine that can take longer than the default 60 s, after which either side drops the link
  and the sync starts again.

With ``--compiled-site DIR`` (an unzipped ``XSPEC_MYPYC=1`` wheel) the mypyc build runs beside this
environment's own as the peer ``xspec-compiled``, each figure given for both.

A figure a server cannot give (a command it refuses, a sync that does not finish within the
deadline) is printed as not measured, and the run goes on. No assertion is made.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from server import COMPILED_PEER, Conn, Peer, cpu_seconds, interleaved, peers, running

from xspec.spec.resp import Bulk, Error, Reply

SYNC_DEADLINE_S = 600.0


COMPILED_SITE: list[Path] = []  # --compiled-site, when given


def durability_peers() -> list[Peer]:
    """Redis 7.0.15 and xspec serve (and its mypyc build with --compiled-site), without fakeredis (it has
    neither persistence nor replication)."""
    return peers(skip_fakeredis=True, compiled_site=COMPILED_SITE[0] if COMPILED_SITE else None)


def with_options(peer: Peer, name: str, **options: str) -> Peer:
    """A copy of ``peer`` under ``name``, started with ``--option value`` pairs replacing or adding to its own."""
    argv = list(peer.argv)
    for option, value in options.items():
        flag = "--" + option.replace("_", "-")
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return Peer(name, argv, env=dict(peer.env))


def info_fields(conn: Conn, section: str) -> dict[str, str]:
    """One INFO section as a field -> value mapping."""
    reply = conn.call(b"INFO", section.encode())
    if not isinstance(reply, Bulk) or reply.value is None:
        raise RuntimeError(f"INFO {section} answered {reply!r}")
    fields: dict[str, str] = {}
    for line in reply.value.decode().splitlines():
        if ":" in line and not line.startswith("#"):
            key, _, value = line.partition(":")
            fields[key] = value
    return fields


def check(reply: Reply, what: str) -> Reply:
    """``reply``, or a RuntimeError naming ``what`` when the server answered an error."""
    if isinstance(reply, Error):
        raise RuntimeError(f"{what}: {reply.text}")
    return reply


def call(port: int, *argv: bytes) -> Reply:
    """One command on a connection of its own; a RuntimeError when the server answers an error."""
    c = Conn(port)
    try:
        return check(c.call(*argv), b" ".join(argv).decode())
    finally:
        c.close()


def fill(port: int, entries: int, key: bytes = b"m") -> None:
    """``entries`` entries of two short fields in stream ``key`` (pipelined)."""
    c = Conn(port)
    check(c.call(b"FLUSHALL"), "FLUSHALL")
    c.pipeline([[b"XADD", key, b"*", b"name", b"v%d" % i, b"n", b"%d" % (i % 1000)]
                for i in range(entries)], chunk=2000)
    c.close()


def rdb_bytes_per_entry(peer: Peer, entries: int) -> float:
    """Size of the RDB file SAVE writes for ``entries`` entries, per entry."""
    assert peer.workdir is not None
    fill(peer.port, entries)
    c = Conn(peer.port)
    check(c.call(b"SAVE"), "SAVE")
    dbfilename = c.call(b"CONFIG", b"GET", b"dbfilename")
    c.call(b"FLUSHALL")
    c.close()
    name = b"dump.rdb"
    if isinstance(dbfilename, list) and len(dbfilename) == 2 and isinstance(dbfilename[1], Bulk):
        name = dbfilename[1].value or name
    return (peer.workdir / name.decode()).stat().st_size / entries


def bytes_read(pid: int) -> int:
    """Bytes the process has read through read-like system calls so far (sockets included)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/<pid>/io")


def link_replica(replica: Peer, primary: Peer, deadline_s: float = SYNC_DEADLINE_S) -> float:
    """Point ``replica`` at ``primary`` and wait until it is in sync; the seconds it took."""
    c, p = Conn(replica.port), Conn(primary.port)
    started = time.monotonic()
    check(c.call(b"REPLICAOF", b"127.0.0.1", str(primary.port).encode()), "REPLICAOF")
    try:
        while time.monotonic() - started < deadline_s:
            mine = info_fields(c, "replication")
            theirs = info_fields(p, "replication")
            if (mine.get("master_link_status") == "up"
                    and mine.get("master_repl_offset") == theirs.get("master_repl_offset")):
                return time.monotonic() - started
            time.sleep(0.02)
    finally:
        c.close()
        p.close()
    raise RuntimeError(f"the replica did not reach the primary's offset within {deadline_s:.0f} s")


@contextlib.contextmanager
def pair(peer: Peer) -> Iterator[tuple[Peer, Peer]]:
    """A primary and a replica of ``peer``'s kind, running; the replica not yet linked."""
    primary = with_options(peer, peer.name)
    replica = with_options(peer, peer.name + " replica")
    with running(primary), running(replica):
        yield primary, replica


def full_sync(peer: Peer, entries: int) -> tuple[float, int, float]:
    """Seconds and bytes read by a fresh replica to synchronise with a primary holding ``entries`` entries,
    and the primary's slowest answer (seconds) to a PING sent every 10 ms meanwhile."""
    with pair(peer) as (primary, replica):
        fill(primary.port, entries)
        call(primary.port, b"CONFIG", b"SET", b"repl-diskless-sync-delay", b"0")
        for node in (primary, replica):  # REPL-17: a sync slower than the timeout would start over and over
            call(node.port, b"CONFIG", b"SET", b"repl-timeout", b"%d" % SYNC_DEADLINE_S)
        assert replica.proc is not None
        before = bytes_read(replica.proc.pid)
        slowest = [0.0]
        done = threading.Event()

        def ping() -> None:
            c = Conn(primary.port)
            try:
                while not done.is_set():
                    asked = time.monotonic()
                    c.call(b"PING")
                    slowest[0] = max(slowest[0], time.monotonic() - asked)
                    time.sleep(0.01)
            finally:
                c.close()

        pinger = threading.Thread(target=ping, daemon=True)
        pinger.start()
        try:
            seconds = link_replica(replica, primary)
        finally:
            done.set()
            pinger.join()
        return seconds, bytes_read(replica.proc.pid) - before, slowest[0]


def report_line(metric: str, figures: dict[str, float], unit: str, higher_is_better: bool) -> None:
    """One figure per server and the reference's ratio to Redis (each build's, with --compiled-site)."""
    redis = figures.get("redis-7.0.15")
    row = f"  {metric:36}" + "".join(f"  {name} {value:12.2f} {unit}" for name, value in figures.items())
    ratios = []
    for name in ("xspec-serve", COMPILED_PEER):
        ref = figures.get(name)
        if ref and redis:
            ratios.append(f"{name} {ref / redis if higher_is_better else redis / ref:5.2f}x")
    if ratios:
        row += f"   ratio {', '.join(ratios)} ({'higher' if higher_is_better else 'lower'} is better for xspec)"
    print(row, flush=True)


def measure_aof_always(args: argparse.Namespace) -> dict[str, float]:
    """Medians of XADD from 50 clients with ``appendfsync always`` on each server."""
    table = [with_options(p, p.name, appendonly="yes", appendfsync="always") for p in durability_peers()]
    with contextlib.ExitStack() as stack:
        for peer in table:
            stack.enter_context(running(peer))
        interleaved(table, args.requests, args.runs, {"xadd -c 50 always": ("q", ["-c", "50", "XADD", "q", "*",
                                                                                  "f", "v"])})
    return {p.name: p.results["xadd -c 50 always"] for p in table if "xadd -c 50 always" in p.results}


def measure_rdb_size(args: argparse.Namespace) -> dict[str, float]:
    """RDB bytes per entry on each server."""
    out: dict[str, float] = {}
    for peer in durability_peers():
        with running(peer):
            try:
                out[peer.name] = rdb_bytes_per_entry(peer, args.entries)
            except (RuntimeError, OSError) as e:
                print(f"  {peer.name}: RDB size not measured: {e}", flush=True)
    return out


XADD_P16 = ["-P", "16", "XADD", "p", "*", "f", "v"]


def measure_replicated_xadd(args: argparse.Namespace) -> tuple[dict[str, float], dict[str, float]]:
    """Medians of pipelined XADD on primaries with one replica attached, the primaries taking turns, and
    the CPU per command: ``<server>`` and ``<server> alone`` (the primary before its replica was linked),
    ``<server> replica`` (the replica applying the stream)."""
    pairs: list[tuple[Peer, Peer]] = []
    cpu: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        table = [stack.enter_context(pair(peer)) for peer in durability_peers()]
        interleaved([primary for primary, _ in table], args.requests, args.runs, {"xadd -P 16 alone": ("p", XADD_P16)})
        for primary, replica in table:
            try:
                call(primary.port, b"FLUSHALL")  # the sync before the load stays short
                link_replica(replica, primary)
            except RuntimeError as e:
                print(f"  {primary.name}: replicated XADD not measured: {e}", flush=True)
                continue
            pairs.append((primary, replica))
        replica_cpu = {primary.name: replica_seconds(replica) for primary, replica in pairs}
        commands = {primary.name: commands_processed(replica) for primary, replica in pairs}
        interleaved([primary for primary, _ in pairs], args.requests, args.runs,
                    {"xadd -P 16 replica": ("p", XADD_P16)})
        for primary, replica in pairs:
            applied = commands_processed(replica) - commands[primary.name]
            if applied > 0:
                cpu[primary.name + " replica"] = (replica_seconds(replica) - replica_cpu[primary.name]) / applied * 1e6
    for primary, _ in table:
        for metric, name in (("xadd -P 16 replica cpu us", primary.name), ("xadd -P 16 alone cpu us",
                                                                           primary.name + " alone")):
            if metric in primary.results:
                cpu[name] = primary.results[metric]
    rates = {p.name: p.results["xadd -P 16 replica"] for p, _ in pairs if "xadd -P 16 replica" in p.results}
    return rates, cpu


def replica_seconds(replica: Peer) -> float:
    """The CPU time a replica process has used so far."""
    assert replica.proc is not None
    return cpu_seconds(replica.proc.pid)


def commands_processed(peer: Peer) -> int:
    """INFO stats' total_commands_processed (a replica counts the commands its primary's stream ran)."""
    c = Conn(peer.port)
    try:
        return int(info_fields(c, "stats").get("total_commands_processed", "0"))
    finally:
        c.close()


def measure_full_sync(args: argparse.Namespace) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Seconds, megabytes read and the primary's slowest PING answer (ms) of a full synchronisation of
    ``--entries`` entries, per server."""
    seconds: dict[str, float] = {}
    transferred: dict[str, float] = {}
    slowest: dict[str, float] = {}
    for peer in durability_peers():
        try:
            seconds[peer.name], read, slowest_s = full_sync(peer, args.entries)
        except RuntimeError as e:
            print(f"  {peer.name}: full sync not measured: {e}", flush=True)
            continue
        transferred[peer.name] = read / 1e6
        slowest[peer.name] = slowest_s * 1e3
    return seconds, transferred, slowest


def run(args: argparse.Namespace) -> int:
    """Every durability and replication figure, then the summary with ratios."""
    if args.compiled_site is not None:
        COMPILED_SITE.append(args.compiled_site)
    always = measure_aof_always(args)
    rdb = measure_rdb_size(args)
    replicated, replicated_cpu = measure_replicated_xadd(args)
    sync_seconds, sync_megabytes, sync_slowest = measure_full_sync(args)
    print(f"\ndurability and replication (xspec-serve vs redis-7.0.15; {args.entries} entries)")
    report_line("xadd -c 50, appendfsync always", always, "/s", higher_is_better=True)
    report_line("rdb bytes per entry", rdb, "B", higher_is_better=False)
    report_line("xadd -P 16, one replica", replicated, "/s", higher_is_better=True)
    for server in ("xspec-serve", COMPILED_PEER, "redis-7.0.15"):
        if server in replicated_cpu:
            row = ", ".join(f"{what} {replicated_cpu[key]:.2f}" for what, key in (
                ("primary", server), ("primary without its replica", server + " alone"),
                ("replica", server + " replica")) if key in replicated_cpu)
            print(f"  {'':36}  {server} CPU us/command: {row}", flush=True)
    report_line("full sync time", sync_seconds, "s", higher_is_better=False)
    report_line("full sync bytes read by the replica", sync_megabytes, "MB", higher_is_better=False)
    report_line("full sync: primary's slowest PING", sync_slowest, "ms", higher_is_better=False)
    print("  targets: xadd -P 16 with a replica >= 0.30x Redis; the others are reported against Redis", flush=True)
    return 0


if __name__ == "__main__":
    print("run it as: python benchmarks/server.py --durability", file=sys.stderr)
    sys.exit(2)
