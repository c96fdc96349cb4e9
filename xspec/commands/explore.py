"""``xspec explore``: exhaustive exploration of a configuration, or the check of a consumer protocol.

The walks are :mod:`xspec.explore.report`'s; on a terminal a progress line shows them going.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import networkx as nx

from xspec.commands.options import writable_file, writable_folder
from xspec.explore.abstraction import Abstraction
from xspec.explore.compact import CompactConfig, supported
from xspec.explore.compact_run import explore_compact
from xspec.explore.config import NAMED, load_configuration
from xspec.explore.engine import Result, write_dot
from xspec.explore.failover import NAMED as FAILOVER_CONFIGS
from xspec.explore.failover import REGIMES, FailoverConfig
from xspec.explore.failover_report import FailoverReport, check_failover, configurations, render_failover
from xspec.explore.labels import state_labels
from xspec.explore.protocols import PROTOCOLS
from xspec.explore.report import Report, check_protocol, explore_configuration, live_progress, render_report
from xspec.spec.trace_format import dump

if TYPE_CHECKING:
    from xspec.traces.cluster.nodes import ServerKind


@click.command("explore")
@click.option("--config", "config_spec", metavar="NAME|FILE",
              help=f"A configuration to explore: {', '.join(NAMED)}, or a JSON file.")
@click.option("--protocol", metavar="NAME",
              help=f"A consumer protocol to check: {', '.join(PROTOCOLS)}; or the delivery properties across "
                   f"failures: 'failover' (every replication configuration), a regime ({', '.join(REGIMES)}) or "
                   f"one configuration ({', '.join(FAILOVER_CONFIGS)}); or 'all' (both).")
@click.option("--list", "list_only", is_flag=True, help="List the configurations and protocols.")
@click.option("--no-symmetry", is_flag=True, help="Explore without symmetry reduction.")
@click.option("--engine", type=click.Choice(["auto", "compact", "model"]), default="auto", show_default=True,
              help="compact: the compact transition system (fast; checked against the model by refinement); "
                   "model: every step run by the executable model (the reference). auto: compact for "
                   "configurations it supports, unless a state graph is asked for.")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="Stop after this many states (marked incomplete).")
@click.option("--graphml", type=click.Path(dir_okay=False, path_type=Path), help="Write the state graph as GraphML.")
@click.option("--dot", type=click.Path(dir_okay=False, path_type=Path), help="Write the state graph as DOT.")
@click.option("--traces", "trace_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every counterexample as a virtual-clock trace into this directory (replication "
                   "configurations: a trace/2 of the path run on the model, or with --reproduce the one recorded "
                   "on the real servers, as <configuration>/<property>.jsonl).")
@click.option("--reproduce", "reproduce_on", metavar="DIALECT|BINARY",
              help="Run each replication counterexample on real servers (redis-7.0.15, redis-6.2.14, valkey-9.1.2, "
                   "... or a redis-server/valkey-server binary) and say whether they violate the same property.")
@click.option("--no-explain", is_flag=True, help="Counterexamples as numbered steps only, without state tables.")
@click.option("--view", "view_page", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the state graph as a self-contained HTML page: laid out, states labelled, violations "
                   "marked, a click shows a state and the shortest trace to it (several runs: one page each, "
                   "numbered).")
def explore_command(config_spec: str | None, protocol: str | None, list_only: bool, no_symmetry: bool,
                    engine: str, max_states: int | None, graphml: Path | None, dot: Path | None, trace_dir: Path | None,
                    no_explain: bool, view_page: Path | None, reproduce_on: str | None) -> None:
    """Walk every reachable state of a bounded configuration, or check a consumer protocol's guarantees.

    Exits 1 when an invariant is violated, or when a protocol property does not
    come out as expected (the wrong protocols are expected to violate some;
    EXPLORE-PROC-6).
    """
    if list_only:
        for c in NAMED.values():
            click.echo(f"config   {c.name:<22} {c.description}")
        for proto in PROTOCOLS.values():
            click.echo(f"protocol {proto.name:<22} {proto.description}")
        for fc in FAILOVER_CONFIGS.values():
            click.echo(f"protocol {fc.name:<22} {fc.description} (regime {fc.regime})")
        return
    if (config_spec is None) == (protocol is None):
        raise click.UsageError("give exactly one of --config and --protocol (or --list)")
    for path, option in ((graphml, "--graphml"), (dot, "--dot"), (view_page, "--view")):
        if path is not None:
            writable_file(path, option)
    if trace_dir is not None:
        writable_folder(trace_dir, "--traces")
    server = None
    if reproduce_on is not None:
        if config_spec is not None:
            raise click.UsageError("--reproduce runs the replication configurations' counterexamples: give --protocol "
                                   "failover, a regime or a replication configuration")
        from xspec.explore.reproduce import ReproduceError, server_kind
        try:
            server = server_kind(reproduce_on)
        except ReproduceError as e:
            raise click.BadParameter(str(e), param_hint="--reproduce") from None
    runs: list[tuple[Report, tuple[str, ...], Abstraction]] = []
    failover: list[FailoverConfig] = []
    if config_spec is not None:
        try:
            config = load_configuration(config_spec)
        except (ValueError, TypeError, OSError) as e:
            raise click.BadParameter(str(e), param_hint="--config") from None
        graph_wanted = graphml is not None or dot is not None or view_page is not None
        why = supported(config)
        if engine == "compact" and (why is not None or graph_wanted):
            raise click.UsageError(f"--engine compact: {'a state graph needs --engine model' if graph_wanted else why}")
        if engine == "compact" or (engine == "auto" and why is None and not graph_wanted):
            with live_progress(f"configuration {config.name}") as progress:
                report = explore_compact(CompactConfig(config, symmetry=not no_symmetry), max_states=max_states,
                                         progress=progress)
            render_report(report, CompactConfig(config).process_names, sys.stdout, explain=not no_explain)
            _write_traces(report, trace_dir)
            if not report.ok():
                sys.exit(1)
            return
        with live_progress(f"configuration {config.name}") as progress:
            report, system = explore_configuration(config, symmetry=not no_symmetry, max_states=max_states,
                                                   progress=progress)
        runs.append((report, system.process_names, system.abstraction))
    else:
        assert protocol is not None
        if protocol == "all":
            names = list(PROTOCOLS)
            failover = configurations("failover")
        elif protocol in PROTOCOLS:
            names = [protocol]
        else:
            try:
                failover = configurations(protocol)
            except KeyError:
                raise click.UsageError(f"no protocol {protocol!r} (known: {', '.join(PROTOCOLS)}, failover, "
                                       f"{', '.join(REGIMES)}, {', '.join(FAILOVER_CONFIGS)})") from None
            names = []
        if reproduce_on is not None and not failover:
            raise click.UsageError(f"--reproduce: {protocol!r} is not a replication configuration")
        if failover and (graphml is not None or dot is not None or view_page is not None):
            raise click.UsageError("the replication configurations have no state graph output")
        for name in names:
            with live_progress(f"protocol {name}") as progress:
                report, psystem = check_protocol(PROTOCOLS[name], progress=progress)
            runs.append((report, psystem.process_names, psystem.abstraction))
    ok = True
    for fc in failover:
        with live_progress(f"failover {fc.name}") as progress:
            freport = check_failover(fc, progress=progress)
        render_failover(freport, sys.stdout, counterexamples=not no_explain)
        sys.stdout.write("\n")
        if server is not None:
            ok = _reproduce(freport, server, trace_dir) and ok
        elif trace_dir is not None:
            _write_model_traces(freport, trace_dir)
    for n, (report, process_names, abstraction) in enumerate(runs, 1):
        render_report(report, process_names, sys.stdout, explain=not no_explain)
        sys.stdout.write("\n")
        ok = ok and report.ok()
        _write_traces(report, trace_dir)
        if graphml is not None or dot is not None:  # EXPLORE-4
            assert isinstance(report.result, Result)
            graph = report.result.graph(process_names, state_labels(abstraction, report.result, process_names))
            if graphml is not None:
                nx.write_graphml(graph, graphml)
                click.echo(f"wrote {graphml}")
            if dot is not None:
                write_dot(graph, str(dot))
                click.echo(f"wrote {dot}")
        if view_page is not None:
            from xspec.viewer.graph_data import graph_page_data
            from xspec.viewer.html import write_page
            page = view_page if len(runs) == 1 else view_page.with_name(f"{view_page.stem}-{n}{view_page.suffix}")
            messages = {p.name: "holds" if p.holds else f"violated: {p.message}" for p in report.properties}
            assert isinstance(report.result, Result)
            data = graph_page_data(report.title, report.result, abstraction, process_names, messages)
            write_page(page, data, "graph.js")
            click.echo(f"wrote {page}")
    if not ok:
        sys.exit(1)


def _write_traces(report: Report, trace_dir: Path | None) -> None:
    """Every counterexample of ``report`` as a trace file in ``trace_dir`` (EXPLORE-CEX-2)."""
    if trace_dir is None:
        return
    for p in report.properties:
        if p.counterexample is not None:
            slug = "-".join(report.title.split()[1:] + p.name.split())
            path = trace_dir / f"{slug}.jsonl"
            dump(p.counterexample.trace, path)
            click.echo(f"wrote {path}")


def _write_model_traces(freport: FailoverReport, trace_dir: Path) -> None:
    """Each counterexample of ``freport`` run on the model, as trace/2 ``<configuration>/<property>.jsonl``
    (EXPLORE-FAIL-10)."""
    from xspec.explore.failover_trace import model_trace
    for v in freport.verdicts:
        if v.holds:
            continue
        path = trace_dir / freport.config.name / f"{v.prop}.jsonl"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            dump(model_trace(freport.system, v.steps, f"{freport.config.name}: {v.prop} (xspec explore "
                                                      f"counterexample, run on the model)"), path)
        except OSError as e:
            raise click.ClickException(f"--traces: cannot write {path}: {e.strerror or e}") from None
        click.echo(f"  wrote {path}")


def _reproduce(freport: FailoverReport, server: ServerKind, trace_dir: Path | None) -> bool:
    """Each counterexample of ``freport`` run on real servers (EXPLORE-REPRO-*); False if one did not
    violate its property there."""
    from xspec.explore.reproduce import ReproduceError, reproduce
    ok = True
    for v in freport.verdicts:
        if v.holds:
            continue
        name = f"{freport.config.name} {v.prop}"
        try:
            r = reproduce(freport.system, v.steps, v.prop, server)
        except ReproduceError as e:
            click.echo(f"  reproduce {name} on {server.label}: failed: {e}")
            ok = False
            continue
        others = ", ".join(f"{p} (step {n})" for p, n in r.violated.items() if p != v.prop)
        if r.reproduced:
            click.echo(f"  reproduced on {server.label}: {name} violated at step {r.violated[v.prop]} of "
                       f"{len(v.steps)}{'; also ' + others if others else ''}")
        else:
            ok = False
            click.echo(f"  NOT reproduced on {server.label}: {name}{'; the real servers violated ' + others if others else ''}")
        if trace_dir is not None:
            path = trace_dir / freport.config.name / f"{v.prop}.jsonl"
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                dump(r.trace, path)
            except OSError as e:
                raise click.ClickException(f"--traces: cannot write {path}: {e.strerror or e}") from None
            click.echo(f"  wrote {path}")
    return ok
