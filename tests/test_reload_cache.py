"""The checker's cache of AOF loads (traces/check/reload_cache.py) gives what a load from scratch gives.

Crash traces of `xspec serve` (kill -9 under load, tests/test_aof_crash.py) are checked with the cache
verifying itself: every load, whether it reuses a kept prefix or not, is compared with a plain load of
the same files into a new model (its clock readings numbered the same).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.test_aof_crash import Zygote, record_kills
from xspec.traces.check import reload_cache
from xspec.traces.check.checker import check_trace
from xspec.traces.check.reload_cache import ReloadCache


def test_loads_through_the_cache_are_loads_from_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caches: list[ReloadCache] = []
    init = ReloadCache.__init__

    def keep(self: ReloadCache, *args: Any) -> None:
        init(self, *args)
        caches.append(self)

    monkeypatch.setattr(ReloadCache, "__init__", keep)
    monkeypatch.setattr(ReloadCache, "verify", True)
    zygote = Zygote()
    try:
        for k, rewrite in enumerate(("", "finished", "running")):
            part = tmp_path / f"part{k}"
            part.mkdir()
            trace, lost = record_kills(part, 1, "always", zygote, rewrite, (0.02, 2.0), (2, 1), (20, 50))
            assert not lost
            verdict = check_trace(trace)  # a load that differs raises here
            assert verdict.status != "diverge", verdict.describe()
    finally:
        zygote.close()
    assert sum(c.hits for c in caches) > 0  # some load reused a prefix (and was checked)


def test_a_kept_prefix_is_used_only_where_its_questions_get_the_same_answers() -> None:
    """The zone's answers decide: a prefix whose comparison comes out otherwise now is not reused."""
    from xspec.traces.check.symbolic import SymbolicClock

    clock = SymbolicClock()
    cache = ReloadCache(clock, None)
    zone = clock.zone
    a = zone.new_reading(0, 100)
    buffer = io.BytesIO()
    reload_cache._Pickler(buffer, {}).dump(("kept",))
    entry = reload_cache._Entry(buffer.getvalue(), [], first=a + 1, readings=1,
                                queries=[("decide_le", (a, a + 1, 0), True)], window=(clock.lo, clock.hi))
    assert cache._reuse(entry) == ("kept",)  # readings are chained: t_a <= t_a+1 holds again
    before = len(zone.lo)
    assert before == a + 2  # the prefix's reading was made again
    wrong = reload_cache._Entry(b"", [], first=a + 1, readings=1, queries=[("decide_le", (a + 1, a, -1), True)],
                                window=(clock.lo, clock.hi))
    assert cache._reuse(wrong) is None
    assert len(zone.lo) == before  # its readings were taken back
