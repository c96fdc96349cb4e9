"""The corpus scenarios as differential tests: each one run live on Redis 7.0.15 and checked on the model.

The scripts in ``traces/scenarios/`` are the one source of these conversations:
``python -m xspec.traces.scenarios`` records them into the corpus, and this
module runs every registered scenario on the session's real server (the
``redis`` fixture) and asserts that the model explains the recorded
conversation, so a script is checked before its trace is re-recorded.
"""

from __future__ import annotations

import pytest

from tests.conftest import RealRedis
from xspec.spec.trace_format import dumps
from xspec.traces.check.checker import check_trace
from xspec.traces.scenarios import Scenario, all_scenarios
from xspec.traces.scenarios.runner import record_scenario

SCENARIOS = all_scenarios()


@pytest.mark.redis
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.path for s in SCENARIOS])
def test_the_model_explains_the_scenario_on_real_redis(redis: RealRedis, scenario: Scenario) -> None:
    trace = record_scenario(scenario, redis.host, redis.port, redis.version)
    verdict = check_trace(trace)
    assert verdict.status == "conform", f"{verdict.describe()}\n--- trace ---\n{dumps(trace)}"
