"""Writing view pages: one trace, a folder of traces (with an index page), the tutorial.

Each page is one self-contained HTML file (:mod:`.html`); a folder's index links them
with their verdicts.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xspec.spec.trace_format import Trace, find_traces, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.witness import Witness
from xspec.viewer.html import write_page
from xspec.viewer.trace_data import is_multinode, trace_page_data

TUTORIAL_DIR = CORPUS_DIR / "tutorial"
FAILOVER_LESSONS = CORPUS_DIR / "replication" / "lessons"
"""The traces of spec/tutorial.md's failover chapter (trace/2: a primary and a replica)."""


@dataclass
class Written:
    """A page written: where, for which trace, its verdict and size."""

    page: Path
    source: str
    title: str
    status: str
    size: int


class NotViewable(ValueError):
    """A trace this version of the viewer cannot show."""


def write_trace_page(trace: Trace, out: Path, dialect: str | None = None, witness: Witness | None = None) -> Written:
    """The page of one trace (a recording, a divergence, a counterexample, a trace/2 trace of
    several nodes: a lane per node) at ``out``."""
    if witness is not None and is_multinode(trace):
        raise NotViewable(f"{trace.path}: a given execution is for single-server traces; a trace/2 trace of "
                          "several nodes is shown along the checker's own")
    data = trace_page_data(trace, dialect, witness)
    size = write_page(out, data, "trace.js")
    return Written(out, trace.path, str(data["title"]), str(data["verdict"]["status"]), size)


def write_page_of_file(trace_file: Path, out: Path) -> None:
    """The page of the trace in ``trace_file`` at ``out``: the check job's page writer for its report's groups."""
    write_trace_page(load(trace_file), out)


def page_name(path: Path, root: Path) -> str:
    """``claim/xclaim-ownership.html`` for ``root/claim/xclaim-ownership.jsonl``."""
    relative = path.relative_to(root) if path.is_relative_to(root) else Path(path.name)
    name = relative.name
    for suffix in (".gz", ".jsonl"):
        name = name.removesuffix(suffix)
    return str(relative.with_name(name + ".html"))


def write_folder(folder: Path, out: Path, dialect: str | None = None, title: str | None = None,
                 on_page: Callable[[Written], None] | None = None) -> list[Written]:
    """A page per trace under ``folder`` into ``out`` (same sub-folders), and ``out/index.html``;
    traces the viewer cannot show yet (:class:`NotViewable`) are left out."""
    written = []
    for f in find_traces([folder]):
        try:
            w = write_trace_page(load(f), out / page_name(f, folder), dialect)
        except NotViewable:
            continue
        written.append(w)
        if on_page is not None:
            on_page(w)
    write_index(out / "index.html", title or f"xspec view: {folder}", written)
    return written


def write_tutorial(out: Path, on_page: Callable[[Written], None] | None = None) -> list[Written]:
    """spec/tutorial.md's lessons as pages: the model's traces (``out/<lesson>.html``), the
    recordings from a real Redis (``out/recorded/<lesson>.html``) and the failover chapter's
    recordings of a primary and a replica (``out/failover/<trace>.html``), with an index."""
    written = []
    for folder, under in ((TUTORIAL_DIR, out), (FAILOVER_LESSONS, out / "failover")):
        for f in find_traces([folder]):
            w = write_trace_page(load(f), under / page_name(f, folder))
            written.append(w)
            if on_page is not None:
                on_page(w)
    write_index(out / "index.html", "Tutorial: delivery semantics of consumer groups, by counterexample", written,
                "Each lesson of spec/tutorial.md step by step: the model's trace (virtual clock), then the same "
                "commands recorded from a real Redis 7.0.15; last, the failover chapter's recordings of a primary "
                "and a replica, a lane per node.")
    return written


def write_index(path: Path, title: str, pages: list[Written], intro: str = "") -> None:
    """A plain page linking ``pages`` (relative links, so the folder can be moved)."""
    e = html.escape
    rows = "".join(
        f'<tr><td><a href="{e(os.path.relpath(w.page, path.parent))}">{e(w.title)}</a></td>'
        f"<td>{e(w.status)}</td><td><code>{e(w.source)}</code></td></tr>" for w in pages)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font:14px/1.5 system-ui,sans-serif;margin:2em}}td,th{{padding:3px 10px;text-align:left}}
code{{font-size:12px;color:#656d76}}</style></head>
<body><h1>{e(title)}</h1><p>{e(intro)}</p>
<table><tr><th>trace</th><th>verdict</th><th>file</th></tr>{rows}</table></body></html>
""", encoding="utf-8")


__all__ = ["NotViewable", "Written", "page_name", "write_folder", "write_index", "write_trace_page", "write_tutorial"]
