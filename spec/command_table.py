"""Each dialect's command table as its real server describes it (spec/rules/command.md, COMMAND-1).

``spec/command_tables/<dialect>.json.gz`` holds what the dialect's real binary answered to ``COMMAND`` and
``COMMAND DOCS`` in RESP3 (trace-format JSON replies), measured by ``python -m
xspec.traces.harness.command_tables``. COMMAND's replies describe the server program, not the data set, so
the model and the reference server both answer from this data: every command the real server has, also
those neither of them runs.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from xspec.spec.resp import Array, Bulk, Int, Map, Reply, Set, Simple, from_json

TABLE_DIR = Path(__file__).parent / "command_tables"


def table_path(dialect: str) -> Path:
    return TABLE_DIR / f"{dialect}.json.gz"


@dataclass(frozen=True)
class CommandTable:
    """One dialect's table: each command's and subcommand's COMMAND INFO entry and (7.0+) docs."""

    server: str
    version: str
    info: dict[str, Reply]  # fullname (``get``, ``client|tracking``) -> its COMMAND INFO entry
    top: tuple[str, ...]  # the top-level names, as COMMAND listed them
    docs: dict[str, Reply] | None  # fullname -> its COMMAND DOCS map; None: the dialect has no DOCS
    categories: dict[str, frozenset[str]]  # fullname -> its ACL categories, without the @

    def count(self) -> int:
        return len(self.top)

    def names(self) -> list[str]:
        """Every command and subcommand, as COMMAND LIST gives them (each container before its subcommands)."""
        out: list[str] = []
        for name in self.top:
            out.append(name)
            out.extend(n for n in self.info if n.startswith(name + "|"))
        return out

    def find(self, name: bytes) -> str | None:
        """The fullname ``name`` (any case; ``container|sub`` for a subcommand) is, or None."""
        key = name.decode("latin-1").lower()
        return key if key in self.info else None


def _text(r: Reply) -> str:
    if isinstance(r, Bulk):
        return r.value.decode("latin-1")
    if isinstance(r, Simple):
        return r.text
    raise ValueError(f"not a name: {r!r}")


def _add_entry(entry: Reply, info: dict[str, Reply], categories: dict[str, frozenset[str]]) -> str:
    assert isinstance(entry, Array)
    name = _text(entry.items[0])
    info[name] = entry
    cats = entry.items[6] if len(entry.items) > 6 else Set(())
    categories[name] = frozenset(_text(c).lstrip("@") for c in getattr(cats, "items", ()))
    if len(entry.items) > 9:
        for sub in getattr(entry.items[9], "items", ()):
            _add_entry(sub, info, categories)
    return name


def _add_docs(name: str, doc: Reply, docs: dict[str, Reply]) -> None:
    docs[name] = doc
    if isinstance(doc, Map):
        for key, value in doc.pairs:
            if key == Bulk(b"subcommands") and isinstance(value, Map):
                for sub, sub_doc in value.pairs:
                    _add_docs(_text(sub), sub_doc, docs)


@cache
def load(dialect: str) -> CommandTable | None:
    """The dialect's measured table, or None when none was measured."""
    path = table_path(dialect)
    if not path.exists():
        return None
    with gzip.open(path, "rb") as f:
        data = json.loads(f.read())
    info: dict[str, Reply] = {}
    categories: dict[str, frozenset[str]] = {}
    listing = from_json(data["command"])
    top = tuple(_add_entry(e, info, categories) for e in getattr(listing, "items", ()))
    docs: dict[str, Reply] | None = None
    if data.get("docs") is not None:
        docs = {}
        measured = from_json(data["docs"])
        for key, value in getattr(measured, "pairs", ()):
            _add_docs(_text(key), value, docs)
    return CommandTable(data["server"], data["version"], info, top, docs, categories)


# -- the keys of a command (COMMAND GETKEYS) -------------------------------------------------------------------
class GetKeysError(Exception):
    """COMMAND GETKEYS refuses: ``text`` is the error reply."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class MovableKeys(Exception):
    """The command finds its keys by parsing its arguments (``movablekeys``): the measured table cannot say."""


def _field(m: object, name: bytes) -> object:
    for k, v in getattr(m, "pairs", ()):
        if k == Bulk(name):
            return v
    return None


def _int(r: object) -> int:
    return int(r.value) if isinstance(r, Int) else 0


def _flags(r: object) -> list[str]:
    return [i.text if isinstance(i, Simple) else i.value.decode() for i in getattr(r, "items", ())]


def _positions(spec: object, argv: list[bytes]) -> list[int] | None:
    """The argument positions one key specification finds (``getKeysUsingKeySpecs``); None when it cannot say."""
    argc = len(argv)
    begin, find = _field(spec, b"begin_search"), _field(spec, b"find_keys")
    btype, bspec = _field(begin, b"type"), _field(begin, b"spec")
    if btype == Bulk(b"index"):
        first = _int(_field(bspec, b"index"))
    elif btype == Bulk(b"keyword"):
        keyword = getattr(_field(bspec, b"keyword"), "value", b"").lower()
        start = _int(_field(bspec, b"startfrom"))
        first = 0
        for i in (range(start, argc) if start > 0 else range(argc + start, 0, -1)):
            if argv[i].lower() == keyword:
                first = i + 1
                break
        if not first:
            return []
    else:
        return None
    ftype, fspec = _field(find, b"type"), _field(find, b"spec")
    if ftype == Bulk(b"range"):
        lastkey, step, limit = (_int(_field(fspec, n)) for n in (b"lastkey", b"keystep", b"limit"))
        if lastkey >= 0:
            last = first + lastkey
        elif limit <= 1:
            last = argc + lastkey
        else:
            last = first + (argc - first) // limit + lastkey
        return [i for i in range(first, last + 1, max(step, 1)) if i < argc]
    if ftype == Bulk(b"keynum"):
        numidx, firstkey, step = (_int(_field(fspec, n)) for n in (b"keynumidx", b"firstkey", b"keystep"))
        if first + numidx >= argc or not argv[first + numidx].isdigit():
            return None
        count = int(argv[first + numidx])
        start = first + firstkey
        if start + (count - 1) * step >= argc:
            return None
        return [start + k * step for k in range(count)]
    return None


def command_keys(table: CommandTable, argv: list[bytes], subcommands: bool) -> list[tuple[int, list[str]]]:
    """``COMMAND GETKEYS argv...``: each key's position in ``argv`` and its flags (7.0+ key specifications;
    6.2: first, last, step, no flags). Raises :class:`GetKeysError` with Redis's error, or
    :class:`MovableKeys` for a command whose keys only its own parser finds."""
    name = table.find(argv[0])
    if name is not None and len(argv) > 1 and subcommands:
        name = table.find(argv[0] + b"|" + argv[1]) or name  # a container's subcommand, as lookupCommand finds it
    if name is None:
        raise GetKeysError("ERR Invalid command specified")
    items: tuple[Any, ...] = getattr(table.info[name], "items", ())
    arity = _int(items[1])
    if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
        raise GetKeysError("ERR Invalid number of arguments specified for command")
    found: list[tuple[int, list[str]]] = []
    if len(items) < 9 and name in ("xread", "xreadgroup"):  # 6.2's xreadGetKeys: half of what follows STREAMS
        words = [a.lower() for a in argv]
        if b"streams" in words:
            rest = len(argv) - words.index(b"streams") - 1
            if rest % 2:
                raise GetKeysError("ERR Invalid arguments specified for command")
            found = [(p, []) for p in range(len(argv) - rest, len(argv) - rest // 2)]
    elif "movablekeys" in _flags(items[2]) and (len(items) < 9 or any(
            f in ("incomplete", "variable_flags") for s in getattr(items[8], "items", ())
            for f in (x.lower() for x in _flags(_field(s, b"flags"))))):
        raise MovableKeys(name)  # only the command's own parser finds its keys
    elif len(items) < 9:  # 6.2: the first key, the last (negative: from the end) and the step
        first, last, step = _int(items[3]), _int(items[4]), _int(items[5])
        if first:
            last = last if last >= 0 else len(argv) + last
            found = [(p, []) for p in range(first, min(last, len(argv) - 1) + 1, max(step, 1))]
    else:
        for spec in getattr(items[8], "items", ()):
            positions = _positions(spec, argv)
            if positions is None:
                raise MovableKeys(name)
            found += [(p, _flags(_field(spec, b"flags"))) for p in positions]
    if not found:
        raise GetKeysError("ERR The command has no key arguments")
    return found


# -- hash orders ---------------------------------------------------------------------------------------------------
def canonical(reply: Reply) -> Reply:
    """An entry or docs map with the parts Redis lists in its dictionaries' hash order sorted: a COMMAND entry's
    subcommands (its tenth element), a docs map's ``subcommands`` (COMMAND-2). Lists of entries or pairs at
    the top are sorted too."""
    if isinstance(reply, Array) and reply.items and isinstance(reply.items[0], Array):
        return Array(tuple(sorted((canonical(e) for e in reply.items), key=repr)))
    if isinstance(reply, Array) and len(reply.items) > 9:
        subs = getattr(reply.items[9], "items", ())
        return Array((*reply.items[:9], Array(tuple(sorted((canonical(s) for s in subs), key=repr))),
                      *reply.items[10:]))
    if isinstance(reply, Map):
        return Map(tuple(sorted(((k, canonical(v)) for k, v in reply.pairs), key=repr)))
    return reply
