"""The committed negative replication corpus (traces/replication/negative/): recorded trace/2 files
with one reply changed, each rejected at exactly the event its manifest names (issue 12, part 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xspec.spec.trace_format import find_traces, load
from xspec.traces.check.checker import check_trace
from xspec.traces.cluster.corpus import NEGATIVE_KINDS, NEGATIVE_MANIFEST

CORPORA = Path(__file__).resolve().parent.parent / "traces" / "replication"
NEGATIVE = CORPORA / "negative"
MANIFEST = json.loads((NEGATIVE / NEGATIVE_MANIFEST).read_text(encoding="utf-8"))


def test_the_manifest_names_every_negative_trace_and_its_source() -> None:
    assert len(MANIFEST) >= 60
    servers = [e["trace"].split("/")[0] for e in MANIFEST]
    assert {s: servers.count(s) for s in set(servers)} == {"redis-7.0.15": 20, "redis-6.2.14": 20, "valkey-9.1.2": 20}
    assert {e["trace"] for e in MANIFEST} == {str(p.relative_to(NEGATIVE)) for p in find_traces([NEGATIVE])}
    assert {e["kind"] for e in MANIFEST} <= set(NEGATIVE_KINDS)
    assert len({e["kind"] for e in MANIFEST}) >= 5, "changes of several kinds: replica, resync, WAIT, failover"
    for e in MANIFEST:
        negative = (NEGATIVE / e["trace"]).read_text(encoding="utf-8").splitlines()
        source = (CORPORA / e["trace"]).read_text(encoding="utf-8").splitlines()
        assert len(negative) == len(source)
        differ = [i for i, (a, b) in enumerate(zip(negative, source, strict=True)) if json.loads(a) != json.loads(b)]
        assert differ == [0, e["event"]], e  # the header (its expectation) and the one changed reply
        assert json.loads(source[e["event"]])["reply"] == e["was"] != e["now"] == json.loads(negative[e["event"]])["reply"]
        assert load(NEGATIVE / e["trace"]).header.expect == {"verdict": "diverge", "dialect": e["dialect"],
                                                           "event": e["event"], "node": e["node"]}


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["trace"] for e in MANIFEST])
def test_a_negative_trace_is_rejected_at_exactly_its_event(entry: dict) -> None:  # type: ignore[type-arg]
    verdict = check_trace(load(NEGATIVE / entry["trace"]))
    assert verdict.status == "diverge" and verdict.event == entry["event"], verdict.describe()
    assert verdict.message.startswith(f"node {entry['node']}: "), verdict.message
    # the witness is data: the execution explaining every event before the changed one
    assert verdict.witness is not None and verdict.witness.events == entry["event"] - 1
    assert verdict.witness.divergence is not None and verdict.witness.divergence.event == entry["event"] - 1
