"""Scripted conversations that record the corpus.

Each topic module (``xadd``, ``blocking`` ...) registers its scenarios with
:func:`xspec.traces.scenarios.registry.topic`; :func:`all_scenarios` imports
them all. ``python -m xspec.traces.scenarios --out DIR`` starts its own
redis-server and records one trace per scenario (see ``runner``).
"""

from xspec.traces.scenarios.registry import Scenario, ScenarioError, all_scenarios

__all__ = ["Scenario", "ScenarioError", "all_scenarios"]
