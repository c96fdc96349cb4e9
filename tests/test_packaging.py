"""The package imports and ships its corpora both from the editable install and from a built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import xspec
from xspec.traces import CORPUS_DIR

ROOT = Path(__file__).resolve().parent.parent
SUBPACKAGES = ["xspec.spec", "xspec.models", "xspec.reference", "xspec.traces", "xspec.traces.scenarios"]


def corpus_files(root: Path) -> list[Path]:
    return sorted((root / "redis-7.0.15").rglob("*.jsonl"))


def test_editable_install_maps_subpackages_to_the_layout_folders():
    import importlib
    for name in SUBPACKAGES:
        mod = importlib.import_module(name)
        folder = name.split(".")[1]
        assert Path(mod.__file__).parent.relative_to(ROOT).parts[0] == folder
    assert Path(xspec.__file__).parent == ROOT / "xspec"
    assert corpus_files(CORPUS_DIR), "the bundled corpus is missing"


def source_tree(dest: Path) -> Path:
    """A copy of what a clean clone has (tracked and unignored files): no stale build/ output."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for f in filter(None, files):
        src = ROOT / f.decode()
        if src.is_file():
            (dest / f.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f.decode())
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = source_tree(tmp_path_factory.mktemp("src"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(src)], check=True)
    (whl,) = out.glob("xspec-*.whl")
    return whl


def test_wheel_contains_every_module_spec_and_corpus(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    for src in ["xspec", "spec", "models", "reference", "traces"]:
        for py in (ROOT / src).glob("*.py"):
            target = "xspec/" + py.name if src == "xspec" else f"xspec/{src}/{py.name}"
            assert target in names, f"{target} missing from the wheel"
    shipped = {n for n in names if n.startswith("xspec/traces/redis-7.0.15/") and n.endswith(".jsonl")}
    assert len(shipped) == len(corpus_files(CORPUS_DIR))
    assert any(n.startswith("xspec/spec/rules/") and n.endswith(".md") for n in names)


def test_installed_wheel_imports_and_runs_check(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                    str(wheel)], check=True)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import xspec, xspec.models, xspec.spec.resp, xspec.traces.check.checker, xspec.reference;"
        "from xspec.traces import CORPUS_DIR;"
        "assert xspec.__file__.startswith(sys.argv[1]), xspec.__file__;"
        "print(len(list((CORPUS_DIR / 'redis-7.0.15').rglob('*.jsonl'))))"
    )
    r = subprocess.run([sys.executable, "-c", probe, str(target)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == len(corpus_files(CORPUS_DIR))
    r = subprocess.run([sys.executable, "-c",
                        f"import sys; sys.path.insert(0, {str(target)!r});"
                        "sys.argv = ['xspec', 'check', '-q', '--target', 'model:redis-7.0', '--report', 'report'];"
                        "from xspec.cli import main; main()"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "report" / "junit.xml").is_file()
