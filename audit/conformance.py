"""Conformance of one trace file, exactly as ``xspec replay`` decides it (spec/audit.md, "Conformance").

:func:`check_file` loads a trace with the trace format's reader and checks it with
:func:`xspec.traces.check.checker.check_trace` (or, for a trace past the split threshold, with
:func:`xspec.audit.split.check_split`, whose verdict equals the whole-trace one), and states the
outcome as a row of :data:`~xspec.audit.schema.VERDICTS`: status, event, the verdict's text as
``replay`` prints it, the header's expectation and whether it was met.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xspec.audit.trace_lines import collections_paused, load_trace
from xspec.spec.dialect import UnknownDialect
from xspec.spec.trace_format import Trace, TraceError
from xspec.traces.check.checker import Verdict, check_trace
from xspec.traces.check.report import expectation, meets

ERROR = "error"
"""The status of a trace the checker could not run on (replay prints an error line for it)."""

DEFAULT_SPLIT_MIN_EVENTS = 100_000
"""Traces with at least this many events are split into independent parts (0: never split)."""


def verdict_row(trace: Trace | None, path: str, verdict: Verdict | None, dialect: str, *, error: str | None = None,
                parts: int = 1, split: str = "whole") -> dict[str, Any]:
    """A VERDICTS row."""
    if verdict is None or trace is None:
        return {"trace": path, "status": ERROR, "events": 0 if trace is None else len(trace.events), "event": None,
                "message": error or "", "expected": None, "expected_event": None, "met": False, "parts": parts,
                "split": split}
    expected, event = expectation(trace, dialect)
    return {"trace": path, "status": verdict.status, "events": verdict.events, "event": verdict.event,
            "message": verdict.describe(), "expected": expected, "expected_event": event,
            "met": meets(verdict, expected, event), "parts": parts, "split": split}


Decide = Callable[[Trace, str], tuple[Verdict, int, str]]
"""How a big trace's verdict is reached: (verdict, number of parts, how), as :func:`xspec.audit.split.check_split`
gives them."""


def check_loaded(trace: Trace, path: str, dialect: str = "auto",
                 split_min_events: int = DEFAULT_SPLIT_MIN_EVENTS, decide: Decide | None = None) -> dict[str, Any]:
    """Check one loaded trace; never raises (a defect of the checker becomes an ``error`` row). A trace of at least
    ``split_min_events`` events is split (:func:`xspec.audit.split.check_split`), or decided by ``decide`` when given
    (the Spark job decides from parts it checked on other tasks)."""
    try:
        if split_min_events and len(trace.events) >= split_min_events or decide is not None:
            if decide is None:
                from xspec.audit.split import check_split
                decide = check_split
            verdict, parts, how = decide(trace, dialect)
            return verdict_row(trace, path, verdict, dialect, parts=parts, split=how)
        verdict = check_trace(trace, dialect)
    except UnknownDialect as e:
        verdict = Verdict("unsupported", len(trace.events), message=str(e))
    except TraceError as e:
        return verdict_row(trace, path, None, dialect, error=str(e))
    except Exception as e:  # a defect in the model or the checker: reported, the audit goes on
        where = traceback.extract_tb(e.__traceback__)[-1]
        return verdict_row(trace, path, None, dialect, error=f"{path}: internal error: {type(e).__name__}: {e} "
                                                            f"({Path(where.filename).name}:{where.lineno})")
    return verdict_row(trace, path, verdict, dialect)


def check_file(path: str, dialect: str = "auto", split_min_events: int = DEFAULT_SPLIT_MIN_EVENTS,
               decide: Decide | None = None) -> dict[str, Any] | None:
    """The VERDICTS row of one file; None when the file is malformed (the ingest quarantines it)."""
    with collections_paused():  # the trace and the model's state stay alive until the verdict (trace_lines.py says why)
        try:
            trace = load_trace(path)
        except TraceError:
            return None
        return check_loaded(trace, path, dialect, split_min_events, decide)
