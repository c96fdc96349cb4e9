"""The layers of the xspec package, read from every module's imports with ``ast``.

``spec`` is the ground floor and imports nothing of xspec above it; ``models`` (the
model) and ``reference`` (the independent server) each stand on ``spec`` alone;
the checker, recorder, fuzzer and harness (``traces``), the Z3 proofs and the
explorer sit above them; the command line (``xspec.cli`` and ``xspec.commands``)
sits on top and nothing imports it. No two modules import each other, however
indirectly. Imports inside functions count: a layer crossed lazily is crossed.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent

# Which packages each package may import (itself always). The order is the layering:
# every package names only packages listed before it.
ALLOWED: dict[str, set[str]] = {
    "xspec.spec": set(),
    "xspec.models": {"xspec.spec"},
    "xspec.reference": {"xspec.spec"},
    "xspec.proofs": {"xspec.spec", "xspec.models"},
    "xspec.traces": {"xspec.spec", "xspec.models", "xspec.reference"},
    "xspec.explore": {"xspec.spec", "xspec.models", "xspec.proofs", "xspec.traces"},
    "xspec.audit": {"xspec.spec", "xspec.models", "xspec.traces"},
    "xspec.viewer": {"xspec.spec", "xspec.models", "xspec.proofs", "xspec.traces", "xspec.explore"},
}
# The command line: xspec/cli.py, xspec/__main__.py and xspec/commands/ may import anything.
CLI = ("xspec.cli", "xspec.__main__", "xspec.commands", "xspec.pytest_plugin")
# The root module holds only the version, which every layer may read.
ROOT_MODULE = "xspec"


def _package_dirs() -> dict[str, Path]:
    """The folders of the import package's subpackages, as pyproject.toml maps them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    dirs = _package_dirs()
    out: dict[str, Path] = {}
    for package, folder in dirs.items():
        # A folder mapped to a package of its own (xspec.spec = spec/) is listed under that name only.
        nested = {d for name, d in dirs.items() if name != package and d.is_relative_to(folder) and d != folder}
        for path in sorted(folder.rglob("*.py")):
            if any(path.is_relative_to(d) for d in nested) or ".venv" in path.parts:
                continue
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """The xspec modules ``module`` imports, each with the line of the import."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("xspec"):
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = module.split(".") if is_package else module.split(".")[:-1]
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith("xspec"):
                continue
            # ``from package import submodule`` imports the submodule; a name that is not a
            # module is taken from the package itself.
            names = [f"{base}.{alias.name}" for alias in node.names]
            submodules = [n for n in names if n in MODULES]
            if submodules:
                yield from ((n, node.lineno) for n in submodules)
            if len(submodules) < len(names):
                yield base, node.lineno


def _layer(module: str) -> str:
    if module == ROOT_MODULE:
        return ROOT_MODULE
    if any(module == c or module.startswith(c + ".") for c in CLI):
        return "cli"
    for package in sorted(ALLOWED, key=len, reverse=True):
        if module == package or module.startswith(package + "."):
            return package
    raise AssertionError(f"{module} belongs to no layer: add its package to ALLOWED in tests/test_layers.py")


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, path in MODULES.items():
        graph.add_node(module)
        for target, line in _imports(module, path):
            if target != module:
                graph.add_edge(module, target, line=line)
    return graph


GRAPH = _graph()


def test_every_module_belongs_to_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_the_layering_is_acyclic_as_declared() -> None:
    order = list(ALLOWED)
    for i, package in enumerate(order):
        assert ALLOWED[package] <= set(order[:i]), f"{package} may import a package declared after it"


@pytest.mark.parametrize("package", list(ALLOWED))
def test_imports_stay_in_their_layer(package: str) -> None:
    crossings = []
    for source, target, data in GRAPH.edges(data=True):
        if _layer(source) != package or target not in MODULES:
            continue
        allowed = ALLOWED[package] | {package, ROOT_MODULE}
        if _layer(target) not in allowed:
            crossings.append(f"{MODULES[source].relative_to(ROOT)}:{data['line']}: {source} imports {target}")
    assert not crossings, "imports that cross a layer:\n" + "\n".join(crossings)


def test_nothing_imports_the_command_line() -> None:
    offenders = [f"{MODULES[s].relative_to(ROOT)}:{d['line']}: {s} imports {t}"
                 for s, t, d in GRAPH.edges(data=True)
                 if _layer(t) == "cli" and _layer(s) != "cli"]
    assert not offenders, "\n".join(offenders)


def test_no_import_cycles() -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(GRAPH) if len(c) > 1]
    assert not cycles, "modules that import each other (directly or through others):\n" + "\n".join(
        ", ".join(c) for c in cycles)


def test_every_import_names_a_module_that_exists() -> None:
    # A stale name after a move would hide a crossing from the checks above.
    missing = []
    for source, target, data in GRAPH.edges(data=True):
        if target not in MODULES and target.rsplit(".", 1)[0] not in MODULES:
            missing.append(f"{MODULES[source].relative_to(ROOT)}:{data['line']}: {target}")
    assert not missing, "\n".join(missing)
