"""Replaying traces on a live server (the corpus conforms on real 7.0.15, IDs are rebound, differences are
listed), and the main job, ``xspec check``, built on it."""

from __future__ import annotations

import json
import socket
import time
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import RealRedis
from xspec.commands.check import check_command
from xspec.spec.resp import Bulk, Int, encode_command
from xspec.spec.trace_format import Call, Close, Send, Trace, dump, find_traces, load
from xspec.traces import CORPUS_DIR
from xspec.traces.check.checker import check_trace
from xspec.traces.fuzz import fuzzer as fuzz
from xspec.traces.fuzz.fuzzer import CampaignResult
from xspec.traces.fuzz.generate import Step
from xspec.traces.harness import live as live_module
from xspec.traces.harness.live import Replay, Translation, run_live_replay
from xspec.traces.harness.targets import LiveTarget, parse_target
from xspec.traces.job import checkjob
from xspec.traces.job.checkjob import run_check
from xspec.traces.record.proxy import recording

pytestmark = pytest.mark.redis

CORPUS = CORPUS_DIR / "redis-7.0.15"


def _url(redis: RealRedis) -> str:
    return f"redis://{redis.host}:{redis.port}"


def test_translation_rebinds_generated_ids_and_moves_clock_times() -> None:
    t = Translation(lo_ms=1_700_000_000_000, hi_ms=1_700_000_000_500, shift_ms=1000)
    t.bind([b"XADD", b"s", b"*", b"f", b"v"], Bulk(b"1700000000100-0"), Bulk(b"1700000001107-0"))
    t.bind([b"XADD", b"s", b"5-*", b"f", b"v"], Bulk(b"5-0"), Bulk(b"5-0"))  # the same: nothing to rebind
    t.bind([b"XADD", b"s", b"7-0", b"f", b"v"], Bulk(b"7-0"), Bulk(b"8-0"))  # explicit: never rebound
    assert t.ids == {b"1700000000100-0": b"1700000001107-0"}
    assert t.arg(b"1700000000100-0") == b"1700000001107-0"
    assert t.arg(b"(1700000000100-0") == b"(1700000001107-0"
    assert t.arg(b"1700000000200-3") == b"1700000001200-3"  # an explicit ID near the clock keeps its place
    assert t.arg(b"1700000000200") == b"1700000001200"
    assert t.arg(b"1700000000200-*") == b"1700000001200-*"
    assert t.arg(b"1600000000000-0") == b"1600000000000-0"  # far from the trace's time: not a clock time
    assert t.arg(b"7-0") == b"7-0" and t.arg(b"*") == b"*"
    assert t.reply(Bulk(b"1700000000100-0")) == Bulk(b"1700000001107-0")


def test_the_whole_corpus_replays_conforming(redis: RealRedis, tmp_path: Path) -> None:
    """Every trace of the 7.0.15 corpus, replayed on a real 7.0.15, conforms (about 10 s)."""
    assert run_live_replay([CORPUS], _url(redis), None, tmp_path, True, True) == 0
    written = find_traces([tmp_path])
    assert [f.relative_to(tmp_path) for f in written] == [f.relative_to(CORPUS) for f in find_traces([CORPUS])]
    for f in written[::10]:
        trace = load(f)
        assert trace.header.extra["target"] == _url(redis) and trace.header.server_version == "7.0.15"


def _replay(redis: RealRedis, original: Trace) -> tuple[Replay, Trace]:
    """Replay ``original`` on the real server; the replay (its differences) and the live trace."""
    target = parse_target(_url(redis), allow_flush=True)
    assert isinstance(target, LiveTarget)
    try:
        replay = Replay(target, original)
        return replay, replay.run()
    finally:
        target.close()


def _model_trace(steps: list[Step]) -> Trace:
    return parse_target("model:redis-7.0").run(steps)


def test_ids_generated_by_the_original_server_are_rebound(redis: RealRedis, tmp_path: Path) -> None:
    first = [Step(1, (b"XADD", b"s", b"*", b"f", b"v")), Step(1, (b"MULTI",)), Step(1, (b"XADD", b"s", b"*", b"g", b"w")),
             Step(1, (b"EXEC",))]
    ids = [e.reply for e in _model_trace(first).events if isinstance(e, Call)]
    generated_1 = ids[0].value  # type: ignore[union-attr]
    generated_2 = ids[3].items[0].value  # type: ignore[union-attr]
    original = _model_trace(first + [Step(1, (b"XDEL", b"s", generated_1)),
                                     Step(1, (b"XRANGE", b"s", generated_2, generated_2))])
    replay, live = _replay(redis, original)
    cmds = [e.cmd for e in live.events if isinstance(e, (Call, Send))]
    replies = [e.reply for e in live.events if isinstance(e, Call)]
    live_1 = replies[0].value  # type: ignore[union-attr]
    live_2 = replies[3].items[0].value  # type: ignore[union-attr]
    assert live_1 != generated_1 and live_2 != generated_2
    assert cmds[4] == [b"XDEL", b"s", live_1] and replies[4] == Int(1)
    assert cmds[5] == [b"XRANGE", b"s", live_2, live_2]
    assert check_trace(live).status == "conform"
    assert replay.differences == []  # the original's IDs, translated, are the live ones


def test_an_id_is_rebound_even_when_its_reader_got_it_before_the_writer(redis: RealRedis, tmp_path: Path) -> None:
    """A blocked reader's reply can reach the recorder before the reply of the XADD that woke it; the ID it
    carries is bound only when the XADD's reply is read, and the replay still finds no difference."""
    t = 1_795_000_000_000_000
    xadd_id = b"1795000000001-0"
    served = {"array": [{"array": [{"bulk": "s"}, {"array": [{"array": [{"bulk": xadd_id.decode()},
                                                                        {"array": [{"bulk": "f"}, {"bulk": "v"}]}]}]}]}]}
    lines = [{"xspec": "trace/1", "server": {"name": "redis", "version": "7.0.15"}, "clock": "wall", "config": {},
              "title": "reader's reply first", "source": "recorded"},
             {"ev": "send", "c": 1, "cmd": ["XREAD", "BLOCK", "0", "STREAMS", "s", "$"], "t": t},
             {"ev": "send", "c": 2, "cmd": ["XADD", "s", "*", "f", "v"], "t": t + 1000},
             {"ev": "recv", "c": 1, "reply": served, "t": t + 1100},
             {"ev": "recv", "c": 2, "reply": {"bulk": xadd_id.decode()}, "t": t + 1200}]
    path = tmp_path / "reader-first.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    replay, live = _replay(redis, load(path))
    assert replay.translation.ids[xadd_id] != xadd_id  # the live server generated its own ID
    assert replay.differences == []
    assert check_trace(live).status == "conform"


def test_a_proxy_recording_replays_with_raw_bytes_server_closes_and_rebound_ids(redis: RealRedis,
                                                                                tmp_path: Path) -> None:
    recorded = tmp_path / "session.jsonl"
    with recording(_url(redis), recorded) as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port)) as blocked:
            blocked.sendall(encode_command([b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]))
            time.sleep(0.05)
            with socket.create_connection(("127.0.0.1", proxy.port)) as writer:
                writer.sendall(encode_command([b"XADD", b"s", b"*", b"f", b"v"]) + encode_command([b"QUIT"]))
                while writer.recv(1 << 16):
                    pass
            blocked.recv(1 << 16)
        with socket.create_connection(("127.0.0.1", proxy.port)) as bad:
            bad.sendall(encode_command([b"PING"]) + b"*1\r\n$x\r\n")
            while bad.recv(1 << 16):
                pass
        with socket.create_connection(("127.0.0.1", proxy.port)) as reader:
            reader.sendall(b"XRANGE s - +\r\n")
            reader.recv(1 << 16)
        time.sleep(0.05)
    original = load(recorded)
    assert sum(isinstance(e, Close) and e.by == "server" for e in original.events) == 2
    replay, live = _replay(redis, original)
    assert [type(e).__name__ for e in live.events] == [type(e).__name__ for e in original.events]
    assert replay.differences == []  # the XADD's ID differs, and is rebound in XRANGE's reply
    assert check_trace(live).status == "unsupported"  # raw protocol bytes: the model does not parse them


def test_replies_are_awaited_as_long_as_the_original_waited(redis: RealRedis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_module, "REPLY_WAIT", 0.2)
    original = _model_trace([Step(1, (b"XREAD", b"BLOCK", b"500", b"STREAMS", b"s", b"$")), Step(1, (b"PING",))])
    assert [type(e).__name__ for e in original.events] == ["Send", "Recv", "Call"]
    replay, live = _replay(redis, original)
    assert [type(e).__name__ for e in live.events] == ["Send", "Recv", "Call"]  # the timeout came after 0.5 s
    assert replay.differences == [] and check_trace(live).status == "conform"


def test_differences_from_the_original_are_listed_and_divergences_fail(redis: RealRedis, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    trace = load(find_traces([CORPUS / "blocking"])[0])
    edited = next(i for i, e in enumerate(trace.events) if isinstance(e, Call))
    call = trace.events[edited]
    assert isinstance(call, Call)
    call.reply = Bulk(b"not what the server said")
    path = tmp_path / "edited.jsonl"
    dump(trace, path)
    assert run_live_replay([path], _url(redis), None, tmp_path / "out", True, False) == 0
    shown = capsys.readouterr().out
    assert f"differs at event {edited + 1}" in shown and "not what the server said" in shown
    # The same server checked as Redis 6.2: 7.0's XAUTOCLAIM reply (with deleted IDs) diverges.
    autoclaim = [f for f in find_traces([CORPUS]) if f.name.startswith("xautoclaim")]
    assert autoclaim
    assert run_live_replay(autoclaim[:3], _url(redis), "redis-6.2", None, True, True) == 1
    assert "diverge at event" in capsys.readouterr().out


def test_unusable_targets_are_refused(redis: RealRedis, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = find_traces([CORPUS])[0]
    assert run_live_replay([path], "model:redis-7.0", None, None, True, True) == 2
    assert run_live_replay([path], "redis://127.0.0.1:1", None, None, True, True) == 2
    conn = redis.connection()
    try:
        conn.call([b"SET", b"precious", b"1"])
        assert run_live_replay([path], _url(redis), None, None, False, True) == 2
        assert conn.call([b"GET", b"precious"]) == Bulk(b"1")
    finally:
        conn.close()
    assert "--allow-flush" in capsys.readouterr().err


# -- the main job: xspec check ------------------------------------------------------------------------
def _small_corpus(folder: Path, edit: bool = False) -> Path:
    """Three traces of the corpus (the first one's first reply changed when ``edit``)."""
    for n, f in enumerate(find_traces([CORPUS / "xadd"])[:3]):
        trace = load(f)
        if edit and n == 0:
            call = next(e for e in trace.events if isinstance(e, Call))
            call.reply = Bulk(b"edited")
        dump(trace, folder / f.name)
    return folder


def test_check_job_reports_in_four_formats(tmp_path: Path) -> None:
    corpus = _small_corpus(tmp_path / "corpus")
    report = run_check("model:redis-7.0", None, 5, tmp_path / "report", corpora=[corpus])
    assert report.passed and len(report.corpus) == 3 and report.coverage["XADD"].calls > 0
    assert "the target is the model itself" in report.campaign_note
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert markdown.startswith("# xspec conformance report: PASS") and "| XADD |" in markdown
    assert json.loads((tmp_path / "report" / "report.json").read_text())["passed"] is True
    assert "<html>" in (tmp_path / "report" / "report.html").read_text()
    suites = ET.parse(tmp_path / "report" / "junit.xml").getroot()
    assert suites.find("testsuite").get("tests") == "3"  # type: ignore[union-attr]


def test_check_job_fails_on_a_corpus_divergence(tmp_path: Path) -> None:
    corpus = _small_corpus(tmp_path / "corpus", edit=True)
    report = run_check("model:redis-7.0", None, 5, tmp_path / "report", corpora=[corpus])
    assert not report.passed and report.divergences[0].command == "XADD"
    assert report.divergences[0].source == "corpus" and "edited" in report.divergences[0].message
    failures = ET.parse(tmp_path / "report" / "junit.xml").getroot().findall(".//failure")
    assert len(failures) == 1


def test_check_job_fuzzes_the_reference_server_by_default(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --target the reference server is started, fuzzed within the budget, and stopped."""
    monkeypatch.chdir(tmp_path)
    # The budget covers the corpus replay too, and the bundled corpus (replayed whole by test_corpus.py) takes
    # 20 s of it on a loaded 2-core machine, leaving the campaign none: three of its traces here.
    monkeypatch.setattr(checkjob, "CORPUS_DIR", _small_corpus(tmp_path / "corpus"))
    result = CliRunner().invoke(check_command, ["--budget", "10", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "the reference server (xspec serve, embedded)" in result.output and "(redis 7.0.15)" in result.output
    report = json.loads((tmp_path / "xspec-report" / "report.json").read_text())
    assert report["passed"] and report["campaign"]["steps"] > 0 and report["seconds"] < 25
    assert report["coverage"]["XADD"]["fuzz steps"] > 0


def test_check_job_fails_on_a_fuzz_divergence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def run_campaign(targets: list[str], **options: object) -> CampaignResult:
        seen.update(options, targets=targets)
        finding = types.SimpleNamespace(
            confirmed=True, signature=types.SimpleNamespace(command="XCLAIM", text=lambda: "XCLAIM: reply differs"),
            rules=["XCLAIM-6"], path=tmp_path / "x.jsonl", verdict=types.SimpleNamespace(describe=lambda: "details"))
        return CampaignResult(targets=targets, dialect=None, seed=0, steps=10, findings=[finding])  # type: ignore[list-item]

    monkeypatch.setattr(fuzz, "run_campaign", run_campaign)
    # Three corpus traces: the whole bundled corpus took the 30 s budget at load 8, and no campaign ran.
    monkeypatch.setattr(checkjob, "CORPUS_DIR", _small_corpus(tmp_path / "corpus"))
    result = CliRunner().invoke(check_command, ["--target", "model:redis-7.0+mutant:" + _a_mutant(), "--budget", "30",
                                                "--report", str(tmp_path / "r"), "-q"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert seen["targets"] == ["model:redis-7.0+mutant:" + _a_mutant()] and 0 < seen["budget_s"] <= 30  # type: ignore[operator]
    assert "XCLAIM-6" in result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["divergences"][-1]["rule"] == "XCLAIM-6" and report["campaign"]["steps"] == 10
    assert ET.parse(tmp_path / "r" / "junit.xml").getroot().findall(".//failure")


def _a_mutant() -> str:
    from xspec.models.mutants import MUTANTS
    return sorted(MUTANTS)[0]
