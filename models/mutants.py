"""Seeded bugs: deliberate, realistic mutations of the model, for testing the differential fuzzer.

A :class:`Mutant` is one small source change to one function of the model
(``<`` for ``<=``, a dropped check, an off-by-one), the kind of slip a
Redis-compatible server makes. While :func:`apply` is active the mutated
function replaces the original everywhere the model refers to it (its module,
modules that imported it, the command table, the class of a method); on exit
everything is restored. The model's files are not touched: the mutated
function is compiled from the original's source text with one exact
replacement, which must match exactly once (a mutant whose anchor text went
away fails loudly instead of testing nothing).

The fuzzer's own tests run every mutant as the target ``model:redis-7.0+mutant:<name>``
against the unmutated model; a mutant is *killed* when the fuzzer finds a
divergence and shrinks it to a short trace.

    with apply("xclaim-no-idle-check"):
        ...  # the model claims entries whatever their idle time
"""

from __future__ import annotations
import __future__

import ast
import dis
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FunctionType, ModuleType
from typing import Any

from xspec.models import groups, lag, reads, streams
from xspec.models.server import HANDLERS, Server


class MutantError(RuntimeError):
    """A mutant that no longer applies to the model's source (its anchor text is gone or ambiguous)."""


@dataclass(frozen=True)
class Mutant:
    """Replace ``old`` by ``new`` (exactly one occurrence) in ``owner.function``.

    ``owner`` is a module, or a class for a method. ``rule`` is the spec rule
    the mutation breaks, ``profile`` the generator profile that exercises it most.
    """

    name: str
    description: str
    owner: ModuleType | type
    function: str
    old: str
    new: str
    rule: str
    profile: str = "default"

    def original(self) -> FunctionType:
        fn = getattr(self.owner, self.function)
        if not isinstance(fn, FunctionType):
            raise MutantError(f"{self.name}: {self.function} is not a plain function")
        return fn

    def build(self) -> FunctionType:
        """The mutated function, compiled from the original's source with the one replacement."""
        original = self.original()
        source = textwrap.dedent(inspect.getsource(original))
        found = source.count(self.old)
        if found != 1:
            raise MutantError(f"{self.name}: {self.old!r} occurs {found} times in {self.function}, not once")
        if _instructions(self._compiled(original, source)) != _instructions(original):
            raise MutantError(f"{self.name}: the source of {self.function} changed on disk since it was imported")
        mutated = self._compiled(original, source.replace(self.old, self.new))
        mutated.__qualname__ = original.__qualname__
        mutated.__module__ = original.__module__
        return mutated

    def _compiled(self, original: FunctionType, source: str) -> FunctionType:
        """``source`` (one function definition) compiled as ``original`` was, in its module's globals."""
        tree = ast.parse(source)
        definition = tree.body[0]
        assert isinstance(definition, ast.FunctionDef)
        definition.decorator_list = []  # the command table is patched directly, not re-registered
        ast.increment_lineno(tree, original.__code__.co_firstlineno - 1)  # tracebacks point at the real lines
        code = compile(tree, inspect.getsourcefile(original) or "<mutant>", "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)
        namespace: dict[str, Any] = {}
        exec(code, original.__globals__, namespace)  # the module's live globals, as the original has
        compiled: FunctionType = namespace[self.function]
        return compiled


def _instructions(fn: FunctionType) -> list[tuple[str, str]]:
    """What a function's bytecode does, without what varies with how it was compiled: jump offsets,
    and method calls on imported modules (compiled alone, a function does not know they are modules)."""
    out = []
    for i in dis.get_instructions(fn):
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            out.append((i.opname, ""))
        elif i.opname in ("LOAD_METHOD", "LOAD_ATTR"):
            out.append(("LOAD_ATTR", i.argrepr))
        elif isinstance(i.argval, CodeType):  # a nested function or comprehension: its own instructions
            out.append((i.opname, repr(_instructions(FunctionType(i.argval, {})))))
        else:
            out.append((i.opname, i.argrepr.removeprefix("NULL + ")))
    return out


def _m(name: str, description: str, owner: ModuleType | type, function: str, old: str, new: str,
       rule: str, profile: str = "default") -> Mutant:
    return Mutant(name, description, owner, function, old, new, rule, profile)


_MUTANTS: tuple[Mutant, ...] = (
    _m("xclaim-no-idle-check", "XCLAIM claims a pending entry whatever its idle time",
       groups, "xclaim", "if nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:",
       "if False:", "XCLAIM-12", "groups"),
    _m("xclaim-min-idle-inclusive", "XCLAIM skips an entry whose idle time equals min-idle-time (<= for <)",
       groups, "xclaim", "now - nack.delivery_time < min_idle:", "now - nack.delivery_time <= min_idle:",
       "XCLAIM-12", "claims"),
    _m("xclaim-justid-counts", "XCLAIM JUSTID increments the delivery count",
       groups, "xclaim", "elif not opts.justid:", "else:", "XCLAIM-14", "claims"),
    _m("xclaim-ignores-retrycount", "XCLAIM RETRYCOUNT is parsed but not applied",
       groups, "xclaim", "nack.delivery_count = opts.retry_count", "pass", "XCLAIM-14", "claims"),
    _m("xautoclaim-forgets-deleted", "XAUTOCLAIM drops deleted entries from the PEL without listing them",
       groups, "xautoclaim", "deleted.append(_id_reply(entry_id))", "pass", "XAUTOCLAIM-7", "groups"),
    _m("xautoclaim-budget-off-by-one", "XAUTOCLAIM examines COUNT*10-1 pending entries instead of COUNT*10",
       groups, "xautoclaim", "count * AUTOCLAIM_ATTEMPTS_FACTOR", "count * AUTOCLAIM_ATTEMPTS_FACTOR - 1", "XAUTOCLAIM-6", "scan"),
    _m("xautoclaim-min-idle-inclusive", "XAUTOCLAIM skips an entry whose idle time equals min-idle-time",
       groups, "xautoclaim", "now - nack.delivery_time < min_idle:", "now - nack.delivery_time <= min_idle:",
       "XAUTOCLAIM-8", "claims"),
    _m("xautoclaim-justid-counts", "XAUTOCLAIM JUSTID increments the delivery count",
       groups, "xautoclaim", "if not justid:", "if True:", "XAUTOCLAIM-9", "groups"),
    _m("xack-keeps-consumer-pel", "XACK removes the entry from the group PEL but not from the consumer's",
       groups, "xack", "if pel.remove(group, entry_id) is not None:",
       "if group.pel.pop(entry_id, None) is not None:", "XACK-3", "groups"),
    _m("xack-counts-unknown-ids", "XACK counts IDs that were not pending",
       groups, "xack", "if pel.remove(group, entry_id) is not None:",
       "if pel.remove(group, entry_id) is not None or True:", "XACK-3", "groups"),
    _m("xpending-idle-inclusive", "XPENDING IDLE leaves out entries whose idle time equals the filter",
       groups, "_pending_entries", "now - nack.delivery_time < min_idle:",
       "now - nack.delivery_time <= min_idle:", "XPENDING-10", "claims"),
    _m("delconsumer-keeps-pending", "XGROUP DELCONSUMER leaves the consumer's entries in the group PEL",
       groups, "xgroup_delconsumer", "pel.remove(group, entry_id)", "pass", "XGROUP-14", "groups"),
    _m("destroy-leaves-readers-blocked", "XGROUP DESTROY does not wake the clients blocked on the group",
       groups, "xgroup_destroy", "call.ready(call.argv[2])", "pass", "XGROUP-12", "contention"),
    _m("lag-off-by-one", "XINFO reports a group's lag one too small",
       lag, "group_lag", "- group.entries_read)", "- group.entries_read - 1)", "LAG-3", "lag"),
    _m("noack-adds-to-pel", "XREADGROUP NOACK still adds the delivered entries to the PEL",
       reads, "deliver_new", "if not noack:", "if True:", "XREADGROUP-11", "groups"),
    _m("history-redelivery-not-counted", "Reading a consumer's history does not increment delivery counts",
       reads, "history", "pel.count_delivery(nack)", "pass", "XREADGROUP-6", "groups"),
    _m("resp3-read-reply-as-array", "XREAD/XREADGROUP answer RESP3 clients with an array instead of a map",
       reads, "streams_reply", "if call.client.proto == 2:", "if True:", "XREAD-11", "default"),
    _m("blocked-fifo-reversed", "Clients blocked on a key are served newest first instead of FIFO",
       Server, "_handle_ready", "for cid in self._serving_order(db, key):",
       "for cid in reversed(self._serving_order(db, key)):", "BLOCK-2", "contention"),
    _m("xdel-forgets-max-deleted", "XDEL does not update max-deleted-entry-id",
       streams, "xdel", "stream.max_deleted_id = max(stream.max_deleted_id, entry_id)", "pass",
       "XDEL-3", "lag"),
    _m("xrange-count-off-by-one", "XRANGE/XREVRANGE COUNT n returns n+1 entries",
       streams, "range_reply", "if count and len(out) == count:", "if count and len(out) == count + 1:",
       "XRANGE-3", "default"),
    _m("xadd-auto-seq-starts-at-one", "XADD * in a new millisecond starts the sequence at 1",
       streams, "_next_auto_id", "return StreamID(Instant.id_ms(now), 0)",
       "return StreamID(Instant.id_ms(now), 1)", "XADD-11", "clock"),
    _m("xsetid-ignores-entries-added", "XSETID ENTRIESADDED is validated but not stored",
       streams, "xsetid", "stream.entries_added = entries_added", "pass", "XSETID-5", "lag"),
)

MUTANTS: dict[str, Mutant] = {m.name: m for m in _MUTANTS}


def _referrers(original: FunctionType) -> Iterator[tuple[dict[str, Any], str]]:
    """Every (namespace, name) of the model that holds ``original``: modules and the command table."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("xspec."):
            continue
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if value is original:
                yield namespace, name
    for name, handler in list(HANDLERS.items()):
        if handler is original:
            yield HANDLERS, name


@contextmanager
def apply(name: str) -> Iterator[Mutant]:
    """Patch the model with mutant ``name`` while the block runs (not re-entrant across mutants)."""
    try:
        mutant = MUTANTS[name]
    except KeyError:
        raise MutantError(f"unknown mutant {name!r}; known: {', '.join(sorted(MUTANTS))}") from None
    original = mutant.original()
    mutated = mutant.build()
    restore: list[Callable[[], None]] = []
    if isinstance(mutant.owner, type):
        setattr(mutant.owner, mutant.function, mutated)
        restore.append(lambda: setattr(mutant.owner, mutant.function, original))
    else:
        for namespace, attr in list(_referrers(original)):
            namespace[attr] = mutated
            restore.append(lambda ns=namespace, a=attr: ns.__setitem__(a, original))  # type: ignore[misc]
    try:
        yield mutant
    finally:
        for undo in reversed(restore):
            undo()


__all__ = ["MUTANTS", "Mutant", "MutantError", "apply"]
