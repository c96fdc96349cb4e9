"""Randomized differential test: generated command sequences, real Redis 7.0.15 against the model.

Each case draws a sequence from :mod:`xspec.traces.fuzz.generate` (several
clients in RESP2 and RESP3, MULTI/WATCH, blocking reads, pipelining, pauses,
valid and invalid commands over the whole stream API, small
``stream-node-max-entries``/``-bytes``), runs it on the real server through
the recorder and asks the conformance checker whether the model explains the
recorded trace, time windows included (``*`` IDs, idle times and XCLAIM TIME
are generated freely; the checker solves for the clock readings).

On a divergence the sequence is shrunk: delta debugging over the steps, then
simpler steps (client 1, not pipelined, fewer arguments). Every candidate is
re-run on the real server and re-checked, and counts when it diverges at the
same command, with the same message, at the same place in the reply. The
assertion shows the short trace with the real replies and the model's.

The default cases cycle through the generator's profiles, seeded, with the
knobs of KNOWN_DIVERGENCES switched off (well under a minute). Campaigns:

    pytest -m slow tests/test_random_differential.py          # 20k steps, every knob on
    XSPEC_DIFF_STEPS=200000 XSPEC_DIFF_SEED=3 pytest -m slow tests/test_random_differential.py

``XSPEC_FINDINGS=<dir>`` writes every minimal diverging trace there as JSONL.
"""

from __future__ import annotations

import os
import random
import subprocess
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.conftest import REDIS_VERSION, RealRedis, redis_binary, start_redis
from tests.support import Scenario
from xspec.spec.resp import show
from xspec.spec.trace_format import Call, Recv, Trace, dump
from xspec.traces.check.checker import Verdict, check_trace
from xspec.traces.fuzz.fuzzer import reply_difference
from xspec.traces.fuzz.generate import (
    PROFILES,
    Generator,
    Profile,
    Step,
    describe,
    random_config,
)
from xspec.traces.harness.targets import drive

pytestmark = pytest.mark.redis

BLOCK_WAIT = 0.005
"""Seconds a runner waits for a possibly-blocking command's reply before treating it as blocked."""

FINITE_BLOCK_MS = 1000
"""A blocked read whose timeout is at most this is waited for; a longer one is ended by closing its client."""

KNOWN_DIVERGENCES: dict[str, str] = {}
"""Divergences the model still has (what: the Profile knob that keeps it out of the default cases)."""


# -- running a sequence ----------------------------------------------------------------------------
@dataclass
class Run:
    trace: Trace
    verdict: Verdict
    step_of_event: list[int]  # for every trace event, the step that produced it


def run_steps(server: RealRedis, steps: Sequence[Step], config: dict[str, str]) -> Run:
    """Run ``steps`` on the (reset) real server (:func:`xspec.traces.harness.targets.drive`), record the trace
    and check it on the model."""
    server.reset()
    s: Scenario = server.scenario(config=config)
    step_of_event = drive(s.rec, steps)
    s.rec.close_all()
    trace = s.trace()
    return Run(trace, check_trace(trace), step_of_event)


# -- shrinking ----------------------------------------------------------------------------------
def _command_name(step: Step) -> str:
    argv = [a for a in step.argv if isinstance(a, bytes)]
    name = argv[0].decode("latin-1").upper()
    if name in ("XGROUP", "XINFO", "CONFIG") and len(argv) > 1:
        name += " " + argv[1].decode("latin-1").upper()
    return name


def signature(steps: Sequence[Step], run: Run) -> tuple[str, str, str] | None:
    """What a divergence is (command, checker message, where the replies differ), for
    telling whether a shrunk sequence still shows the same one."""
    v = run.verdict
    if v.status != "diverge" or v.event is None:
        return None
    step = steps[run.step_of_event[v.event - 1]]
    return _command_name(step), v.message.split(":")[0], reply_difference(v.got, v.allowed[0] if v.allowed else None)


def shrink(server: RealRedis, steps: list[Step], config: dict[str, str], target: tuple[str, str, str],
           budget: int = 400) -> tuple[list[Step], Run]:
    """Delta debugging (ddmin) down to a sequence that still diverges with ``target``."""
    tries = 0

    def diverges(candidate: list[Step]) -> Run | None:
        nonlocal tries
        tries += 1
        run = run_steps(server, candidate, config)
        return run if signature(candidate, run) == target else None

    # Nothing after the diverging step matters.
    best_run = run_steps(server, steps, config)
    if signature(steps, best_run) != target:
        return steps, best_run  # not reproducible: report it as it was
    assert best_run.verdict.event is not None
    cut = best_run.step_of_event[best_run.verdict.event - 1] + 1
    current = steps[:cut]
    if (r := diverges(current)) is not None:
        best_run = r
    else:
        current = steps
    n = 2
    while len(current) >= 2 and tries < budget:
        chunk = max(1, len(current) // n)
        reduced = False
        for start in range(0, len(current), chunk):
            candidate = current[:start] + current[start + chunk:]
            if not candidate:
                continue
            r = diverges(candidate)
            if r is not None:
                current, best_run = candidate, r
                n = max(n - 1, 2)
                reduced = True
                break
            if tries >= budget:
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(current), n * 2)
    # Then simpler steps: one client where several are not needed, fewer arguments.
    for i in range(len(current)):
        changed = True
        while changed:
            changed = False
            for option in _simpler(current[i]):
                if tries >= budget:
                    return current, best_run
                candidate = current[:i] + [option] + current[i + 1:]
                r = diverges(candidate)
                if r is not None:
                    current, best_run, changed = candidate, r, True
                    break
    return current, best_run


def _simpler(step: Step) -> list[Step]:
    """Variants of a step: not pipelined, sent by client 1, or without one or two adjacent arguments."""
    if not step.argv:
        return []
    options = [replace(step, pipelined=False)] if step.pipelined else []
    if step.client != 1:
        options.append(replace(step, client=1))
    for width in (2, 1):
        options += [replace(step, argv=step.argv[:j] + step.argv[j + width:])
                    for j in range(len(step.argv) - width, 0, -1)]
    return options


def render(steps: Sequence[Step], run: Run, config: dict[str, str]) -> str:
    """The minimal sequence with the real replies, and the checker's verdict."""
    lines = [f"config: {config}"]
    replies: dict[int, list[str]] = {}
    for index, e in enumerate(run.trace.events):
        if isinstance(e, (Call, Recv)):
            replies.setdefault(run.step_of_event[index], []).append(show(e.reply))
    for i, step in enumerate(steps):
        if not step.argv:
            lines.append(f"  {describe(step)}")
            continue
        got = " / ".join(replies.get(i, [])) or "(no reply read)"
        lines.append(f"  {describe(step)}   -> {got}")
    lines.append(run.verdict.describe())
    return "\n".join(lines)


def _save(run: Run, name: str) -> None:
    folder = os.environ.get("XSPEC_FINDINGS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        dump(run.trace, Path(folder) / f"{name}.jsonl")


def campaign_sequence(server: RealRedis, seed: int, length: int,
                      profile: Profile) -> tuple[str | None, str | None]:
    """Generate, run and check one sequence: (what diverged, the minimal repro as text), or (None, None)."""
    rng = random.Random(seed)
    config = random_config(rng)
    steps = Generator(rng, profile).sequence(length)
    run = run_steps(server, steps, config)
    if run.verdict.status == "conform":
        return None, None
    target = signature(steps, run)
    if target is None:  # unsupported or inconclusive: reported as it is, not shrunk
        key = f"{run.verdict.status}: {run.verdict.message[:80]}"
        return key, f"seed {seed}: {key}\n" + render(steps, run, config)
    small, small_run = shrink(server, steps, config, target)
    _save(small_run, f"seed{seed}-{target[0].replace(' ', '_').lower()}")
    key = " / ".join(target)
    return key, f"seed {seed}: {key}\n" + render(small, small_run, config)


def check_sequence(server: RealRedis, seed: int, length: int, profile: Profile) -> str | None:
    """Generate, run and check one sequence; on divergence the minimal repro as text, else None."""
    return campaign_sequence(server, seed, length, profile)[1]


# -- tests ----------------------------------------------------------------------------------------
DEFAULT_CASES = 24
DEFAULT_SEQUENCES = 6
DEFAULT_LENGTH = 80


def default_profile(n: int) -> tuple[str, Profile]:
    """The profiles in turn, with every knob of :data:`KNOWN_DIVERGENCES` switched off."""
    name = list(PROFILES)[n % len(PROFILES)]
    return name, replace(PROFILES[name], **{knob: False for knob in KNOWN_DIVERGENCES.values()})


@pytest.mark.parametrize("case", range(DEFAULT_CASES))
def test_random_sequences_conform(redis: RealRedis, case: int) -> None:
    """Seeded sequences of every profile; the model must explain each one (known divergences left out)."""
    name, profile = default_profile(case)
    for k in range(DEFAULT_SEQUENCES):
        failure = check_sequence(redis, case * 1000 + k, DEFAULT_LENGTH, profile)
        assert failure is None, f"profile {name}, {failure}"


@pytest.mark.slow
def test_random_sequences_campaign(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A large campaign over every profile, known divergences included; reports each distinct one once.

    XSPEC_DIFF_STEPS (default 20000), XSPEC_DIFF_SEED (first seed), XSPEC_DIFF_LENGTH (steps per sequence).
    The campaign runs its own server: when a sequence kills it (a server bug, not a divergence: see
    spec/corrections.md), the crash is reported with its seed and a fresh server takes over.
    """
    binary = redis_binary()
    if binary is None:
        pytest.skip("redis-server is not installed")
    budget = int(os.environ.get("XSPEC_DIFF_STEPS", "20000"))
    seed = int(os.environ.get("XSPEC_DIFF_SEED", "1000000"))
    length = int(os.environ.get("XSPEC_DIFF_LENGTH", "100"))
    names = list(PROFILES)
    found: dict[str, str] = {}
    crashes: list[str] = []
    steps = 0
    proc, port = start_redis(binary, str(tmp_path))
    try:
        while steps < budget:
            server = RealRedis("127.0.0.1", port, proc.pid, REDIS_VERSION)
            name = names[seed % len(names)]
            try:
                server.reset()
                failure_key, failure = campaign_sequence(server, seed, length, PROFILES[name])
            except (AssertionError, ConnectionError, OSError) as failure:
                try:  # a dying server closes its sockets before it has written its crash report
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    raise failure from None  # the server is alive: a genuine failure of the sequence

                crashes.append(f"seed {seed} (profile {name}): the server died (exit {proc.returncode})")
                proc, port = start_redis(binary, str(tmp_path))
                failure_key = failure = None
            if failure_key is not None and failure_key not in found:
                found[failure_key] = f"profile {name}, {failure}"
            steps += length
            seed += 1
    finally:
        proc.terminate()
        proc.wait()
    if crashes:
        warnings.warn("redis-server died during the campaign:\n" + "\n".join(crashes), stacklevel=1)
    assert not found, f"{len(found)} distinct divergences in {steps} steps:\n\n" + "\n\n".join(found.values())
