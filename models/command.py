"""COMMAND and its subcommands (spec/rules/command.md), answered from the dialect's measured command table
(spec/command_table.py): the real server's description of every command it has, not only of those the model
runs (COMMAND-1).

Where Redis walks its command dictionary (COMMAND, COMMAND INFO and DOCS without names, COMMAND LIST) the
order is its hash order: the replies are equal to any order of the entries (COMMAND-2).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from xspec.models.admin import _help, legacy_subcommand_refused
from xspec.models.server import HANDLERS, Call, CommandError, HandlerResult, PreRendered, command
from xspec.spec import commands as table
from xspec.spec.command_table import CommandTable, GetKeysError, MovableKeys, command_keys, load
from xspec.spec.glob import pattern_matches
from xspec.spec.help import COMMAND_HELP, COMMAND_HELP_62, COMMAND_HELP_VALKEY
from xspec.spec.ids import c_string
from xspec.spec.resp import Array, Bulk, Int, Map, NullBulk, Reply, Set, Simple, for_protocol

_HELP = {"6.2": COMMAND_HELP_62, "7.0": COMMAND_HELP, "7.2": COMMAND_HELP, "7.4": COMMAND_HELP,
         "valkey": COMMAND_HELP_VALKEY}


def _key(item: Any) -> str:
    first = item[0] if isinstance(item, tuple) else (item.items[0] if getattr(item, "items", ()) else item)
    return repr(first)


def _matched(mine: list[Any], theirs: list[Any]) -> bool:
    """Whether each of ``mine`` equals a distinct one of ``theirs`` (mine compared first, so that the
    any-order parts inside compare as such); candidates are found by their first element (a name)."""
    if len(mine) != len(theirs):
        return False
    by_key: dict[str, list[Any]] = {}
    for t in theirs:
        by_key.setdefault(_key(t), []).append(t)
    for m in mine:
        candidates = by_key.get(_key(m), [])
        for i, t in enumerate(candidates):
            if m == t:
                del candidates[i]
                break
        else:
            return False
    return True


def _pairs(items: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    return [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]


class AnyOrderEntries(Array):
    """An array of commands (or names) in any order (the command dictionary's walk)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Array and _matched(list(self.items), list(other.items))  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(len(self.items))


class AnyOrderSetEntries(Set):
    """A RESP3 set of commands in any order (a container's subcommands)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Set and _matched(list(self.items), list(other.items))  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(len(self.items))


class AnyOrderMap(Map):
    """A RESP3 map whose pairs may come in any order (a hash table's walk)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Map and _matched(list(self.pairs), list(other.pairs))  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(len(self.pairs))


class AnyOrderFlatMap(Array):
    """A map as RESP2 sends it, a flat array of keys and values, whose pairs may come in any order."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is Array and len(other.items) == len(self.items) \
            and _matched(_pairs(self.items), _pairs(other.items))  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(len(self.items))


def _any_order_map(pairs: list[tuple[Reply, Reply]], proto: int) -> Reply:
    if proto == 3:
        return AnyOrderMap(tuple(pairs))
    return AnyOrderFlatMap(tuple(x for pair in pairs for x in pair))


def _table(call: Call) -> CommandTable:
    found = load(call.server.dialect.name)
    if found is None:
        raise CommandError(f"ERR xspec model: no command table was measured for {call.server.dialect.name}")
    return found


@lru_cache(maxsize=1024)
def _rendered(dialect: str, name: str, proto: int) -> Reply:
    found = load(dialect)
    assert found is not None
    return _loose_entry(for_protocol(found.info[name], proto))


def _loose_entry(entry: Reply) -> Reply:
    """COMMAND-2: an entry whose subcommands (its tenth element) may come in any order."""
    if isinstance(entry, Array) and len(entry.items) > 9:
        subs = tuple(_loose_entry(s) for s in getattr(entry.items[9], "items", ()))
        loose = AnyOrderSetEntries(subs) if isinstance(entry.items[9], Set) else AnyOrderEntries(subs)
        return Array((*entry.items[:9], loose, *entry.items[10:]))
    return entry


@lru_cache(maxsize=1024)
def _rendered_docs(dialect: str, name: str, proto: int) -> Reply:
    found = load(dialect)
    assert found is not None and found.docs is not None
    return _loose_docs(for_protocol(found.docs[name], proto), proto)


def _loose_docs(doc: Reply, proto: int) -> Reply:
    """COMMAND-2: a docs map whose ``subcommands`` may come in any order."""
    subcommands = Bulk(b"subcommands")
    if isinstance(doc, Map):
        return Map(tuple((k, _any_order_map([(sk, _loose_docs(sv, proto)) for sk, sv in v.pairs], proto)
                          if k == subcommands and isinstance(v, Map) else v) for k, v in doc.pairs))
    if isinstance(doc, Array) and proto == 2:
        items = list(doc.items)
        for i in range(0, len(items) - 1, 2):
            if items[i] == subcommands and isinstance(items[i + 1], Array):
                sub = items[i + 1].items  # type: ignore[union-attr]
                items[i + 1] = _any_order_map([(sub[j], _loose_docs(sub[j + 1], proto))
                                               for j in range(0, len(sub) - 1, 2)], proto)
        return Array(tuple(items))
    return doc


def _entry(call: Call, name: str) -> Reply:
    return _rendered(call.server.dialect.name, name, call.client.proto)


@command("command")
def command_all(call: Call) -> HandlerResult:
    t = _table(call)  # COMMAND-2: every command, in the dictionary's order
    return PreRendered(AnyOrderEntries(tuple(_entry(call, n) for n in t.top)))


@command("command|count")
def command_count(call: Call) -> Reply:
    return Int(_table(call).count())  # COMMAND-3


def _named(call: Call, t: CommandTable, name: bytes) -> str | None:
    """``lookupCommandBySds``: ``name`` or ``container|sub``, any case (COMMAND-4); 6.2 knows no subcommands."""
    found = t.find(c_string(name))
    if found is not None and "|" in found and not call.server.dialect.subcommand_table:
        return None
    return found


@command("command|info")
def command_info(call: Call) -> HandlerResult:
    t = _table(call)
    names = call.argv[2:]
    if not names:
        if not call.server.dialect.subcommand_table:  # COMMAND-DIALECT-1: 6.2 answers nothing
            return Array(())
        return command_all(call)  # COMMAND-4: every command, as COMMAND
    out: list[Reply] = []
    for name in names:  # COMMAND-4: each as named, a null when unknown
        found = _named(call, t, name)
        out.append(for_protocol(NullBulk(), call.client.proto) if found is None else _entry(call, found))
    return PreRendered(Array(tuple(out)))


@command("command|docs")
def command_docs(call: Call) -> HandlerResult:
    t = _table(call)
    docs = t.docs or {}
    proto = call.client.proto
    dialect = call.server.dialect.name
    names = call.argv[2:]
    if not names:  # COMMAND-5: every top-level command, in the dictionary's order
        return PreRendered(_any_order_map([(Bulk(n.encode()), _rendered_docs(dialect, n, proto)) for n in t.top
                                           if n in docs], proto))
    pairs: list[tuple[Reply, Reply]] = []
    for name in names:  # COMMAND-5: the known ones, as named
        found = _named(call, t, name)
        if found is not None and found in docs:
            pairs.append((Bulk(found.encode()), _rendered_docs(dialect, found, proto)))
    if proto == 3:
        return PreRendered(Map(tuple(pairs)))
    return PreRendered(Array(tuple(x for pair in pairs for x in pair)))


@command("command|list")
def command_list(call: Call) -> HandlerResult:
    t = _table(call)
    argv = call.argv
    names = t.names()
    if len(argv) == 5 and c_string(argv[2]).lower() == b"filterby":  # COMMAND-6
        kind, value = c_string(argv[3]).lower(), argv[4]
        if kind == b"pattern":
            names = [n for n in names if pattern_matches(value, n.encode(), nocase=True)]
        elif kind == b"aclcat":
            category = c_string(value).decode("latin-1").lower()
            names = [n for n in names if category in t.categories.get(n, ())]
        elif kind == b"module":
            names = []  # no modules are loaded
        else:
            raise CommandError(table.SYNTAX)
    elif len(argv) != 2:
        raise CommandError(table.SYNTAX)
    return PreRendered(AnyOrderEntries(tuple(Bulk(n.encode()) for n in names)))


# -- GETKEYS ------------------------------------------------------------------------------------------------
def _getkeys(call: Call, with_flags: bool) -> Reply:
    argv = call.argv[2:]
    try:
        found = command_keys(_table(call), argv, call.server.dialect.subcommand_table)  # COMMAND-7
    except GetKeysError as e:
        raise CommandError(e.text) from None
    except MovableKeys as e:  # COMMAND-8
        raise CommandError(f"ERR xspec model: COMMAND GETKEYS of {e} is not modelled (COMMAND-8)") from None
    if not with_flags:
        return Array(tuple(Bulk(argv[p]) for p, _ in found))
    return Array(tuple(Array((Bulk(argv[p]), Set(tuple(Simple(f) for f in flags)))) for p, flags in found))


@command("command|getkeys")
def command_getkeys(call: Call) -> Reply:
    return _getkeys(call, False)


@command("command|getkeysandflags")
def command_getkeysandflags(call: Call) -> Reply:
    return _getkeys(call, True)


@command("command|help")
def command_help(call: Call) -> Reply:
    return _help(call, _HELP[call.server.dialect.help_texts])  # COMMAND-9


HANDLERS["command|*"] = legacy_subcommand_refused  # COMMAND-DIALECT-1: 6.2's refusals
