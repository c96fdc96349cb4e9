"""Reading one trace file's lines fast, with the trace format's own checks and errors (spec/audit.md, "Ingest").

The ingest (:mod:`xspec.audit.ingest`) and the conformance step (:mod:`xspec.audit.conformance`) both read
files this way: the JSON of each line by :func:`xspec.audit.json_text.loads`, every event validated by
:mod:`xspec.spec.trace_format`, so the audit accepts exactly the files ``xspec replay`` accepts.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xspec.audit.json_text import loads
from xspec.spec import trace_format as tf


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (and restored after).

    Reading and checking a trace allocates millions of small objects that all stay alive until the file is done, so
    every collection in between walks a growing heap for nothing (a third of the CPU time); the cycles that become
    garbage are the checker's state at the end of a file, which the next collection after it frees."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for every non-empty line, with :func:`xspec.spec.trace_format.iter_lines`'s
    errors (only the JSON parser differs: :func:`loads`)."""
    p = str(path)
    n = 0
    try:
        with tf._open_text(path) as f:
            for n, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    yield n, loads(text)
                except json.JSONDecodeError as e:
                    raise tf.TraceError(p, n, f"not valid JSON ({e.msg} at column {e.colno})") from None
    except UnicodeDecodeError as e:
        raise tf.TraceError(p, n + 1, f"not UTF-8 text: {e}") from None
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise tf.TraceError(p, n + 1, f"cannot read: {e}") from None


def events_of(header: Any, path: Path, lines: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, Any, Any]]:
    """(line, event, its JSON) of a file's validated events, streamed (trace/2 through the format's version-2
    reader)."""
    name = str(path)
    if getattr(header, "nodes", None) is None:
        for n, obj in lines:
            yield n, tf.parse_event(obj, name, n), obj
    else:
        reader = tf._V2Reader(header, name)  # type: ignore[attr-defined]
        for n, obj in lines:
            yield n, reader.event(obj, n), obj


def load_trace(path: str | Path) -> tf.Trace:
    """:func:`xspec.spec.trace_format.load`'s trace, with the lines of a trace/1 file parsed by :func:`loads` (the
    same objects, faster); a trace/2 file goes to the format's own loader (its checks span lines). Raises
    :class:`~xspec.spec.trace_format.TraceError` where ``load`` does."""
    path = Path(path)
    name = str(path)
    lines = json_lines(path)
    first = next(lines, None)
    if first is None:
        raise tf.TraceError(name, 1, "empty file: a trace starts with its header line")
    header = tf.parse_header(first[1], name)
    if getattr(header, "nodes", None) is not None:
        return tf.load(path)
    return tf.Trace(header, [tf.parse_event(obj, name, n) for n, obj in lines], name)
