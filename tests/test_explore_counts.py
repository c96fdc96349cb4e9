"""Pinned exploration results: the numbers of states, transitions and depth, and every verdict, of the
named configurations and the protocols.

They must not move with any change to how the explorer computes: keys, memoisation, symmetry. A change of the MODEL may move
them legitimately; then the new numbers are checked against the brute force of tests/test_explore.py
before they are pinned again.
"""

from __future__ import annotations

import pytest

from xspec.explore.config import NAMED
from xspec.explore.protocols import PROTOCOLS
from xspec.explore.report import check_protocol, explore_configuration

CONFIGURATIONS = {  # name -> (states, transitions, depth)
    "tiny": (14, 78, 5),
    "compact": (2312, 27880, 10),
    "producer": (322, 3414, 10),
}
STANDARD = (42604, 808226, 13)

HOLDS, VIOLATED = True, False
PROTOCOL_RESULTS = {  # name -> (states, transitions, depth, {property: (holds, counterexample steps)})
    "seed-consumer": (1655, 4761, 20, {
        "no message lost": (HOLDS, None), "no duplicate without a crash": (HOLDS, None),
        "every message processed and acked or dead-lettered": (HOLDS, None)}),
    "recovery-worker": (850, 2420, 29, {
        "no message lost": (HOLDS, None), "no duplicate without a crash": (HOLDS, None),
        "every message processed and acked or dead-lettered": (HOLDS, None),
        "poison pills end in the dead-letter stream": (HOLDS, None)}),
    "ack-before-processing": (19, 37, 6, {
        "no message lost": (VIOLATED, 4), "no duplicate without a crash": (HOLDS, None),
        "every message processed and acked or dead-lettered": (VIOLATED, 5)}),
    "noack-reader": (15, 31, 5, {
        "no message lost": (VIOLATED, 3), "no duplicate without a crash": (HOLDS, None),
        "every message processed and acked or dead-lettered": (VIOLATED, 5)}),
    "short-min-idle": (23, 48, 11, {
        "no message lost": (HOLDS, None), "no duplicate without a crash": (VIOLATED, 10),
        "every message processed and acked or dead-lettered": (HOLDS, None)}),
    "no-poison-limit": (15, 43, 10, {
        "no message lost": (HOLDS, None), "no duplicate without a crash": (HOLDS, None),
        "every message processed and acked or dead-lettered": (VIOLATED, 11),
        "poison pills end in the dead-letter stream": (VIOLATED, 11)}),
    "new-only-consumer": (19, 37, 6, {
        "no message lost": (HOLDS, None), "no duplicate without a crash": (HOLDS, None),
        "every message processed and acked or dead-lettered": (VIOLATED, 5)}),
}
INVARIANTS = "invariants of models/invariants.py"


def _configuration_numbers(name: str) -> tuple[int, int, int]:
    report, _ = explore_configuration(NAMED[name])
    r = report.result
    assert r.complete
    assert [(p.name, p.holds) for p in report.properties] == [(INVARIANTS, HOLDS)]
    return len(r.states), r.transitions, r.max_depth


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_named_configurations_keep_their_numbers(name: str) -> None:
    assert _configuration_numbers(name) == CONFIGURATIONS[name]


def test_every_named_configuration_is_pinned() -> None:
    assert set(NAMED) == set(CONFIGURATIONS) | {"standard"}


@pytest.mark.slow
def test_the_standard_configuration_keeps_its_numbers() -> None:
    assert _configuration_numbers("standard") == STANDARD


@pytest.mark.parametrize("name", list(PROTOCOL_RESULTS))
def test_protocols_keep_their_numbers_and_verdicts(name: str) -> None:
    report, _ = check_protocol(PROTOCOLS[name])
    r = report.result
    states, transitions, depth, verdicts = PROTOCOL_RESULTS[name]
    assert (len(r.states), r.transitions, r.max_depth) == (states, transitions, depth)
    got = {p.name: (p.holds, None if p.counterexample is None else len(p.counterexample.steps))
           for p in report.properties}
    assert got == {INVARIANTS: (HOLDS, None), **verdicts}


def test_every_protocol_is_pinned() -> None:
    assert set(PROTOCOLS) == set(PROTOCOL_RESULTS)
