"""The census of what stream frameworks' own suites send (spec/census.md, traces/census/, scripts/run-framework-suite):
the committed counts are well formed and the table in spec/census.md is the one the script prints from them; the
script counts options only where a command's syntax puts them, and refuses bad input with one line."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "run-framework-suite"
CENSUS = ROOT / "traces" / "census"


def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("run_framework_suite", str(SCRIPT))
    spec = importlib.util.spec_from_loader("run_framework_suite", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_framework_suite"] = module  # dataclasses look their module up there
    loader.exec_module(module)
    return module


fw = _script()


def _files() -> list[Path]:
    return sorted(CENSUS.glob("*.json"))


def test_every_census_file_is_well_formed_and_names_a_known_suite() -> None:
    files = _files()
    assert len(files) >= 3
    for f in files:
        data = json.loads(f.read_text())
        assert data["suite"] == f.stem and data["suite"] in fw.SUITES
        assert data["server"].startswith("Redis server v=7.0.15")
        for part in ("commands", "options", "script_commands", "script_options"):
            assert all(isinstance(n, int) and n > 0 for n in data[part].values()), (f, part)
        assert sum(data["commands"].values()) > 0
        for option in data["options"]:
            assert option.split(" ", 1)[0] in data["commands"], option
        assert (CENSUS / "requirements" / f"{f.stem}.txt").is_file()


def _without_model_column(table: str) -> list[str]:
    return [line.rsplit("|", 2)[0] for line in table.splitlines() if line.startswith("|")]


def test_the_table_in_spec_census_is_the_scripts() -> None:
    text = (ROOT / "spec" / "census.md").read_text()
    start = text.index("| command |")
    table = text[start:text.index("\n\n", start)] + "\n"
    # the last column says what the model covers today; the counts are the census's
    assert _without_model_column(table) == _without_model_column(fw.census_table(_files()))


@pytest.mark.parametrize(("argv", "expected"), [
    (["XADD", "s", "MAXLEN", "~", "10", "*", "MAXLEN", "NOMKSTREAM"], {"xadd MAXLEN", "xadd ~"}),
    (["XADD", "s", "1-1", "MAXLEN", "1"], set()),  # fields named like options
    (["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "COUNT", ">"],
     {"xreadgroup GROUP", "xreadgroup COUNT", "xreadgroup STREAMS"}),
    (["SET", "k", "NX", "PX", "10"], {"set PX"}),  # the value "NX" is data
    (["ZADD", "z", "NX", "1", "XX"], {"zadd NX"}),
    (["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], {"xgroup|create MKSTREAM"}),
    (["GET", "COUNT"], set()),
])
def test_options_are_counted_where_the_syntax_puts_them(argv: list[str], expected: set[str]) -> None:
    from collections import Counter
    commands: Counter[str] = Counter()
    options: Counter[str] = Counter()
    fw.count_command(argv, commands, options)
    assert set(options) == expected and sum(commands.values()) == 1


def test_monitor_lines_give_the_scripts_commands() -> None:
    line = '1700000000.123456 [0 lua] "XADD" "bull:q:events" "MAXLEN" "~" "10000" "*" "event" "a\\"b"'
    assert fw.monitor_arguments(line)[:3] == ["XADD", "bull:q:events", "MAXLEN"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "says"), [
    (["--suite", "no-such-suite"], "unknown suite"),
    (["--suite", "faststream-0.7.4"], "give --suite-dir"),
    (["--suite", "faststream-0.7.4", "--suite-dir", "/nonexistent/dir"], "is not a folder"),
    (["--suite", "taskiq-redis-1.2.2", "--suite-dir", str(ROOT / "spec")], "is not a checkout"),
    (["--census-table", "/nonexistent.json"], "no census file"),
    (["--census-table", str(ROOT / "pyproject.toml")], "not a census file"),
    (["--suite", "walrus-0.9.8", "--json", "/nonexistent/dir/out.json"], "cannot write"),
    ([], "give --suite"),
])
def test_bad_input_gets_one_line_and_status_2(args: list[str], says: str) -> None:
    done = _run(*args)
    assert done.returncode == 2, done
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_list_names_every_suite() -> None:
    done = _run("--list")
    assert done.returncode == 0
    for name in fw.SUITES:
        assert name in done.stdout
