"""Times leave the model only through the named conversions of its time types (models/clock.py).

Under the conformance checker a time is a symbolic value, so the model must
never turn one into an ``int``, a text or a hash on its own: it converts with
``Instant.id_ms``, ``Instant.reply_ms``, ``Duration.reply_ms``,
``*.propagated_ms`` or ``*.exact_ms``, which the checker's symbolic time
implements. mypy enforces part of this (an :class:`Instant` is not an ``int``,
so it cannot go into ``Int(...)`` or a ``%d`` unconverted, and ``int()``
refuses it); this test enforces the rest, statically, over models/*.py.

How a time value is recognised (flow-insensitive, per function):

* a *time annotation* names ``Instant`` or ``Duration`` (``Instant | None`` too);
* *time attributes* are the attribute names declared with a time annotation
  anywhere in models/ (in a class body, as ``self.x: T``, or as ``self.x = p``
  in ``__init__`` with ``p: T``): ``delivery_time``, ``seen_time``, ``deadline``...;
* *time functions* are the functions and methods of models/ whose return
  annotation is a time type (``now``, ``now_ms``...);
* *time constants* are module-level names of models/ annotated with a time type
  or assigned ``Instant(...)`` / ``Duration(...)`` (``EPOCH``, ``NEVER_ACTIVE``...);
* an expression is a time when it is a call of a time function (any
  receiver), ``Instant(...)`` or ``Duration(...)``, a time constant, ``x.a``
  with ``a`` a time attribute, a name bound to a time in its function (a
  parameter or variable with a time annotation, or assigned a time), ``a + b``
  / ``a - b`` / ``-a`` with a time operand, ``max``/``min`` of a time, or a
  conditional expression with a time branch.

Forbidden on a time: being the argument of ``int``, ``str``, ``hash``,
``repr``, ``float``, ``format`` or ``bytes``; an f-string interpolation; the
right operand of ``%`` (or an item of it). Also forbidden everywhere in models/
but clock.py itself: calling a conversion on the value (``t.reply_ms()``)
instead of through the type (``Instant.reply_ms(t)``), since at run time a
concrete time is an ``int``, which has no such method.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from xspec.models.clock import Duration, Instant
from xspec.traces.check.symbolic import SymbolicClock, Time

MODELS = Path(__file__).resolve().parent.parent / "models"
TIME_TYPES = frozenset({"Instant", "Duration"})
CONVERSIONS = frozenset({"id_ms", "reply_ms", "propagated_ms", "exact_ms"})
FORBIDDEN_CALLS = frozenset({"int", "str", "hash", "repr", "float", "format", "bytes"})


def _is_time_annotation(node: ast.expr | None) -> bool:
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in TIME_TYPES:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in TIME_TYPES:
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                parsed = ast.parse(sub.value, mode="eval").body
            except SyntaxError:
                continue
            if _is_time_annotation(parsed):
                return True
    return False


def _is_time_constructor(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in TIME_TYPES


@dataclass
class TimeNames:
    """What models/ declares as times: attribute names, function names, module constants."""

    attributes: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    constants: set[str] = field(default_factory=set)


def collect_time_names(trees: list[ast.Module]) -> TimeNames:
    names = TimeNames()
    for tree in trees:
        for stmt in tree.body:  # module constants
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if _is_time_annotation(stmt.annotation) or (stmt.value is not None
                                                            and _is_time_constructor(stmt.value)):
                    names.constants.add(stmt.target.id)
            elif isinstance(stmt, ast.Assign) and _is_time_constructor(stmt.value):
                names.constants.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                            and _is_time_annotation(stmt.annotation)):
                        names.attributes.add(stmt.target.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _is_time_annotation(node.returns) and node.name not in CONVERSIONS:
                    names.functions.add(node.name)
                params = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                          if _is_time_annotation(a.annotation)}
                for sub in ast.walk(node):
                    target: ast.expr | None = None
                    if isinstance(sub, ast.AnnAssign) and _is_time_annotation(sub.annotation):
                        target = sub.target
                    elif (node.name == "__init__" and isinstance(sub, ast.Assign) and len(sub.targets) == 1
                          and isinstance(sub.value, ast.Name) and sub.value.id in params):
                        target = sub.targets[0]
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == "self"):
                        names.attributes.add(target.attr)
    return names


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


class _FunctionScan:
    """The time-bound names of one function and the violations in it."""

    def __init__(self, names: TimeNames, path: str, func: ast.AST, outer: set[str]) -> None:
        self.names = names
        self.path = path
        self.func = func
        self.bound = set(outer)
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = func.args
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                if _is_time_annotation(a.annotation):
                    self.bound.add(a.arg)
                else:
                    self.bound.discard(a.arg)  # a parameter hides an outer time of the same name
        self._bind_fixpoint()

    def _own_nodes(self) -> list[ast.AST]:
        """The nodes of this function, not those of functions nested in it."""
        out: list[ast.AST] = []
        stack = list(ast.iter_child_nodes(self.func))
        while stack:
            node = stack.pop()
            out.append(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            stack.extend(ast.iter_child_nodes(node))
        return out

    def _bind_fixpoint(self) -> None:
        nodes = self._own_nodes()
        changed = True
        while changed:
            changed = False
            for node in nodes:
                targets: list[ast.expr] = []
                if isinstance(node, ast.AnnAssign):
                    if _is_time_annotation(node.annotation) or (node.value is not None and self.is_time(node.value)):
                        targets = [node.target]
                elif isinstance(node, ast.Assign) and self.is_time(node.value):
                    targets = list(node.targets)
                elif isinstance(node, ast.NamedExpr) and self.is_time(node.value):
                    targets = [node.target]
                elif isinstance(node, ast.AugAssign) and self.is_time(node.value):
                    targets = [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id not in self.bound:
                        self.bound.add(t.id)
                        changed = True

    def is_time(self, node: ast.expr) -> bool:
        names = self.names
        if isinstance(node, ast.Name):
            return node.id in self.bound or node.id in names.constants
        if isinstance(node, ast.Attribute):
            return node.attr in names.attributes
        if isinstance(node, ast.Call):
            f = node.func
            if _is_time_constructor(node):
                return True
            if isinstance(f, ast.Name) and f.id in names.functions:
                return True
            if isinstance(f, ast.Attribute) and f.attr in names.functions:
                return True
            if isinstance(f, ast.Name) and f.id in ("max", "min"):
                return any(self.is_time(a) for a in node.args)
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return self.is_time(node.left) or self.is_time(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.is_time(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_time(node.body) or self.is_time(node.orelse)
        return False

    def violations(self, conversions_on_values: bool) -> list[Violation]:
        found = []
        for node in self._own_nodes():
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
                if any(self.is_time(a) for a in node.args):
                    found.append(Violation(self.path, line, f"{node.func.id}() of a time"))
            elif isinstance(node, ast.FormattedValue) and self.is_time(node.value):
                found.append(Violation(self.path, line, "f-string interpolation of a time"))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
                operands = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
                if any(self.is_time(o) for o in operands):
                    found.append(Violation(self.path, line, "%-formatting of a time"))
            elif (conversions_on_values and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in CONVERSIONS
                  and not (isinstance(node.func.value, ast.Name) and node.func.value.id in TIME_TYPES)):
                found.append(Violation(self.path, line, f"{node.func.attr}() called on a value, not through "
                                                        "Instant/Duration (an int has no such method)"))
        return found


def scan_module(tree: ast.Module, path: str, names: TimeNames) -> list[Violation]:
    """Every violation in one module (its top level and every function, nested ones included)."""
    conversions_on_values = Path(path).name != "clock.py"  # clock.py dispatches to the symbolic value
    found: list[Violation] = []

    def visit(func: ast.AST, outer: set[str]) -> None:
        scan = _FunctionScan(names, path, func, outer)
        found.extend(scan.violations(conversions_on_values))
        for node in scan._own_nodes():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(node, scan.bound)
            elif isinstance(node, ast.ClassDef):
                visit(node, set())

    visit(tree, set())
    return sorted(set(found), key=lambda v: (v.path, v.line, v.what))


def _model_sources() -> dict[str, str]:
    return {str(p.relative_to(MODELS.parent)): p.read_text() for p in sorted(MODELS.glob("*.py"))}


def scan_sources(sources: dict[str, str]) -> tuple[TimeNames, list[Violation]]:
    trees = {path: ast.parse(text, filename=path) for path, text in sources.items()}
    names = collect_time_names(list(trees.values()))
    found = []
    for path, tree in trees.items():
        found.extend(scan_module(tree, path, names))
    return names, found


# -- the rule holds on the model ---------------------------------------------------------------


def test_the_model_converts_times_only_through_the_named_methods() -> None:
    _, found = scan_sources(_model_sources())
    assert not found, "times converted outside Instant/Duration's methods:\n" + "\n".join(map(str, found))


def test_the_scan_recognises_the_models_times() -> None:
    names, _ = scan_sources(_model_sources())
    assert {"delivery_time", "seen_time", "active_time", "deadline", "timeout_ms",
            "timeout_read_at"} <= names.attributes
    assert {"now", "now_ms"} <= names.functions
    assert {"EPOCH", "ZERO_DURATION", "NEVER_ACTIVE"} <= names.constants


# -- the test catches violations (seeded) ------------------------------------------------------

SEEDED = """\
from xspec.models.clock import Duration, Instant

LATER = Instant(5)


class Holder:
    when: Instant | None

    def __init__(self, since: Instant) -> None:
        self.since = since


def handler(call, nack, holder, idle: Duration):
    now = call.now()
    a = int(now)  # seeded: int()
    b = str(nack.delivery_time)  # seeded: str()
    c = hash(holder.since)  # seeded: hash()
    d = repr(now - nack.seen_time)  # seeded: repr()
    e = f"idle={max(now - holder.when, idle)}"  # seeded: f-string
    f = b"%d" % (now + idle,)  # seeded: %-formatting
    g = now.reply_ms()  # seeded: reply_ms()
    h = "%s" % LATER  # seeded: %-formatting
    fine = Instant.reply_ms(now), str(nack.delivery_count), f"{len(call.argv)}", int(call.argv[1])
    return [lambda: int(idle)]  # seeded: int()
"""


def test_seeded_violations_are_each_reported() -> None:
    names, found = scan_sources({**_model_sources(), "models/seeded.py": SEEDED})
    assert {"since", "when"} <= names.attributes and "LATER" in names.constants
    expected = {(n, line.split("# seeded: ")[1]) for n, line in enumerate(SEEDED.splitlines(), 1)
                if "# seeded: " in line}
    assert len(expected) == 9
    assert {v.path for v in found} == {"models/seeded.py"}
    assert {(v.line, v.what.split(" ")[0]) for v in found} == expected


@pytest.mark.parametrize(("path", "good", "bad"), [
    ("models/streams.py", "return StreamID(Instant.id_ms(now), 0)", "return StreamID(int(now), 0)"),
    ("models/info.py", "Int(Instant.reply_ms(consumer.seen_time))", "Int(hash(consumer.seen_time))"),
    ("models/groups.py", "Int(Duration.reply_ms(max(now - nack.delivery_time, ZERO_DURATION)))",
     "Int(str(max(now - nack.delivery_time, ZERO_DURATION)))"),
    ("models/pel.py", 'b"TIME", Instant.propagated_ms(nack.delivery_time)', 'b"TIME", f"{nack.delivery_time}"'),
    ("models/streams.py", "return StreamID(Instant.id_ms(now), 0)", "return StreamID(now.id_ms(), 0)"),
])
def test_a_violation_seeded_into_the_model_fails_the_scan(path: str, good: str, bad: str) -> None:
    sources = _model_sources()
    assert sources[path].count(good) == 1, f"the seed's anchor is gone from {path}: {good!r}"
    sources[path] = sources[path].replace(good, bad)
    _, found = scan_sources(sources)
    assert [v.path for v in found] == [path]


# -- the conversions at run time -----------------------------------------------------------------


def test_on_a_concrete_clock_times_are_plain_ints() -> None:
    assert type(Instant(7)) is int and Instant(7) == 7
    assert type(Duration(3)) is int
    assert Instant.id_ms(7) == Instant.reply_ms(7) == Instant.propagated_ms(7) == Instant.exact_ms(7) == 7
    assert Duration.reply_ms(3) == Duration.propagated_ms(3) == Duration.exact_ms(3) == 3


def test_the_symbolic_time_implements_the_conversions() -> None:
    clock = SymbolicClock()
    clock.zone.choose = lambda n, complete: 0
    clock.set_window(100, 105)
    now = clock.now_ms()
    assert isinstance(now, Time)
    idle = now - 40
    assert Instant.reply_ms(now) is now and Duration.reply_ms(idle) is idle  # type: ignore[arg-type]
    assert Instant.propagated_ms(now) is now  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Instant.exact_ms(now)  # type: ignore[arg-type]
    for concrete_use in (int, str, hash, lambda t: f"{t}", lambda t: b"%d" % t):
        with pytest.raises(TypeError):
            concrete_use(now)
    assert Instant.id_ms(now) == 100  # type: ignore[arg-type]  # the earliest feasible value
    assert now == 100  # fixed from then on
