"""The multi-node search's pruning key for a zone without difference edges (multinode._chain_order):
the readings' bounds, their order and where the implicit chain breaks between them must determine
every pairwise largest difference the zone allows, as Zone.max_diff computes it one pair at a time."""

from __future__ import annotations

import random
from typing import Any

import pytest

from xspec.traces.check.multinode import _chain_order
from xspec.traces.check.symbolic import Zone


def _gaps_from_key(bounds: list[tuple[int, int]], order: tuple[int, ...], breaks: tuple[bool, ...]) -> list[int]:
    """Every pair's largest difference, from the key alone: the bounds', capped at 0 when the chain
    runs from the earlier reading to the later one."""
    rank = {v: r for r, v in enumerate(order)}
    gaps = []
    for a in range(len(bounds)):
        for b in range(len(bounds)):
            if a == b:
                continue
            best = bounds[a][1] - bounds[b][0]
            ra, rb = rank[a], rank[b]
            if ra < rb and not any(breaks[ra:rb]):
                best = min(best, 0)
            gaps.append(best)
    return gaps


def _random_zone(rng: random.Random) -> tuple[Zone, list[int]]:
    zone = Zone()
    t = 0
    for _ in range(rng.randint(2, 12)):
        if rng.random() < 0.25:
            zone.branch_from = 0  # a branch after no reading: no edge is added
        t += rng.randint(0, 5)
        zone.new_reading(t, t + rng.randint(0, 8))
    last = len(zone.lo) - 1
    picked = rng.sample(range(1, last), rng.randint(0, last - 1))  # distinct, the latest last
    return zone, [*picked, last]


@pytest.mark.parametrize("seed", range(200))
def test_the_key_determines_every_pairwise_difference(seed: int) -> None:
    zone, variables = _random_zone(random.Random(seed))
    assert zone.edges == 0
    key: Any = _chain_order(zone, variables)
    bounds = [(zone.lo[v], zone.hi[v]) for v in variables]
    expected = [zone.max_diff(a, b) for a in variables for b in variables if a != b]
    assert _gaps_from_key(bounds, *key) == expected
