"""The README's layout table matches the tree: every package folder has a row, every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Folders that hold no part of the package or the project's own tooling.
IGNORED = {".git", ".venv", "build", "dist", "node_modules", ".mypy-tree", "__pycache__"}


def _layout_rows() -> list[tuple[list[str], str]]:
    """The table under '## Layout': the paths of each row's first cell, and its second cell."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= {"-", " ", ":"} or cells[0] == "path":
            continue
        # Module names such as `xspec.spec` say what a folder is imported as; paths have a slash.
        paths = [p for p in re.findall(r"`([^`]+)`", cells[0]) if "/" in p]
        rows.append((paths, cells[1]))
    return rows


ROWS = _layout_rows()


def _package_folders() -> list[str]:
    folders = set()
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts and not IGNORED & set(rel.parts):
            folders.add(rel.as_posix() + "/")
    return sorted(folders)


def test_the_table_has_rows() -> None:
    assert len(ROWS) >= 8


def test_every_package_folder_has_a_row() -> None:
    named = {p for paths, _ in ROWS for p in paths}
    missing = [f for f in _package_folders() if f not in named]
    assert not missing, f"package folders missing from README.md's layout table: {missing}"


def test_every_path_in_the_table_exists() -> None:
    missing = []
    for paths, what in ROWS:
        for path in paths:
            if not (ROOT / path).exists():
                missing.append(path)
        # The files and folders a row names in its description live in the row's folder.
        folder = next((p for p in paths if p.endswith("/")), None)
        if folder is None:
            continue
        for name in re.findall(r"`([\w./-]+\.(?:py|md|json|jsonl)|[\w.-]+/)`", what):
            where = ROOT / name if name.startswith(folder) else ROOT / folder / name
            if not where.exists():
                missing.append(f"{folder}{name}")
    assert not missing, f"paths in README.md's layout table that do not exist: {missing}"
