"""FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS/KILL, FCALL and FCALL_RO (spec/rules/functions.md).

The server keeps its libraries as values (``Server.libraries``: name -> :class:`Library`, the body
and what it registered); running a function loads the library's code into the dialect's shared
Lua engine (:mod:`xspec.spec.lua`), which keeps each code's functions once loaded. A function runs
like a script (models/scripting.py): its commands as a client of its own, its effects propagated.
6.2 has no FUNCTION or FCALL (FUNCTION-DIALECT-1).
"""

from __future__ import annotations

from dataclasses import dataclass

from xspec.models.scripting import ScriptHost, _engine, _propagate
from xspec.models.server import Call, CommandError, PreRendered, Server, command
from xspec.spec.crc64 import crc64
from xspec.spec.errors import FUNCTION_FLUSH_SYNTAX, error_text, subcommand_syntax
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.lua import (
    FLAG_ORDER,
    NOTBUSY,
    NUMKEYS_NEGATIVE,
    NUMKEYS_TOO_MANY,
    RO_WITH_WRITE_FLAG,
    FunctionDef,
    ScriptError,
    parse_library_metadata,
)
from xspec.spec.rdb import RdbFormatError, Reader, checksum_ok, encode_string, payload_version, version_accepted
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Map, Reply, Set, Simple, for_protocol

LIBRARY_NAME_MISSING = "ERR library name argument was not given"
OPCODE_FUNCTION2 = 0xF5
OPCODE_FUNCTION_PRE_GA = 0xF6


@dataclass(frozen=True)
class FunctionInfo:
    name: bytes
    flags: frozenset[str]
    description: bytes | None


@dataclass(frozen=True)
class Library:
    """A loaded library: its name, its whole body (FUNCTION LIST WITHCODE, DUMP) and its functions."""

    name: bytes
    body: bytes
    functions: tuple[FunctionInfo, ...]


def _create(call: Call, body: bytes) -> tuple[Library, list[FunctionDef]]:
    """``functionsCreateWithLibraryCtx`` up to the engine: the library and its functions (FUNCTION-LOAD-2..4)."""
    engine = _engine(call.server)
    try:
        name, code = parse_library_metadata(body)
        defs = engine.load_library(code)
    except ScriptError as e:
        raise CommandError(e.text) from None
    if not defs:
        raise CommandError("ERR No functions registered")
    infos = tuple(FunctionInfo(d.name, d.flags, d.description) for d in defs)
    return Library(name, body, infos), defs


def libraries_of(server: Server) -> dict[bytes, Library]:
    """The server's libraries by name (``Server.libraries`` is a tuple, replaced on change)."""
    return {lib.name: lib for lib in server.libraries}


def _function_owner(libraries: dict[bytes, Library], name: bytes) -> Library | None:
    lowered = name.lower()  # FCALL-1: function names are compared case-insensitively
    for lib in libraries.values():
        if any(f.name.lower() == lowered for f in lib.functions):
            return lib
    return None


def _join(current: dict[bytes, Library], new: list[Library], replace: bool) -> dict[bytes, Library]:
    """``libraryJoin``: the libraries after adding ``new`` (FUNCTION-LOAD-5, FUNCTION-RESTORE-2)."""
    joined = dict(current)
    for lib in new:
        if lib.name in joined:
            if not replace:
                raise CommandError(f"ERR Library {lib.name.decode('utf-8', 'surrogateescape')} already exists")
            del joined[lib.name]
    for lib in new:
        for f in lib.functions:
            owner = _function_owner(joined, f.name)
            if owner is not None:
                raise CommandError(f"ERR Function {f.name.decode('utf-8', 'surrogateescape')} already exists")
        joined[lib.name] = lib
    return joined


@command("function|load")
def function_load(call: Call) -> Reply:
    argv = call.argv
    replace = False
    i = 2
    while i < len(argv) - 1:  # FUNCTION-LOAD-1
        if c_string(argv[i]).lower() != b"replace":
            raise CommandError(f"ERR Unknown option given: {error_text(argv[i])}")
        replace = True
        i += 1
    server = call.server
    try:
        name, _ = parse_library_metadata(argv[i])
    except ScriptError as e:
        raise CommandError(e.text) from None
    if name in libraries_of(server) and not replace:  # FUNCTION-LOAD-5: before the code runs
        raise CommandError(f"ERR Library '{name.decode('utf-8', 'surrogateescape')}' already exists")
    lib, _ = _create(call, argv[i])
    server.libraries = tuple(_join(libraries_of(server), [lib], True).values())  # FUNCTION-LOAD-5
    call.propagate_verbatim()  # FUNCTION-2
    call.changed()
    return Bulk(lib.name)


@command("function|delete")
def function_delete(call: Call) -> Reply:
    server = call.server
    name = call.argv[2]
    if name not in libraries_of(server):
        raise CommandError("ERR Library not found")  # FUNCTION-DELETE-1
    server.libraries = tuple(lib for lib in server.libraries if lib.name != name)
    call.propagate_verbatim()
    call.changed()
    return OK


@command("function|flush")
def function_flush(call: Call) -> Reply:
    argv = call.argv
    if len(argv) > 3:  # FUNCTION-1
        raise CommandError(subcommand_syntax(argv[1], argv[0], True))
    if len(argv) == 3 and c_string(argv[2]).lower() not in (b"sync", b"async"):  # FUNCTION-1
        raise CommandError(FUNCTION_FLUSH_SYNTAX)
    call.server.libraries = ()
    call.propagate_verbatim()  # FUNCTION-2: always a change, even of an empty library
    call.changed()  # STATS-4
    if call.server.dialect.function_flush_counts_config_get:  # STATS-DIALECT-2
        call.server.stats.command("config|get")[0] += 1
    return OK


class _AnyOrderList(Array):
    """FUNCTION LIST's reply: libraries, and each library's functions, come in hash order (FUNCTION-4)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Array) and _canonical(self) == _canonical(other)

    def __hash__(self) -> int:
        return hash(_canonical(self))


def _canonical(r: object) -> object:
    if isinstance(r, (Array, Set)):
        return ("list", tuple(sorted((_canonical(i) for i in r.items), key=repr)))
    if isinstance(r, Map):
        return ("map", tuple((_canonical(k), _canonical(v)) for k, v in r.pairs))
    return r


@command("function|list")
def function_list(call: Call) -> Reply | PreRendered:
    argv = call.argv
    with_code = False
    pattern: bytes | None = None
    i = 2
    while i < len(argv):  # FUNCTION-3: each option once, in any order
        word = c_string(argv[i]).lower()
        if not with_code and word == b"withcode":
            with_code = True
        elif pattern is None and word == b"libraryname":
            if i >= len(argv) - 1:
                raise CommandError(LIBRARY_NAME_MISSING)
            pattern = argv[i + 1]
            i += 1
        else:
            raise CommandError(f"ERR Unknown argument {error_text(argv[i])}")
        i += 1
    entries: list[Reply] = []
    for lib in call.server.libraries:  # FUNCTION-4
        if pattern is not None and not pattern_matches(pattern, lib.name, nocase=True):
            continue
        functions = tuple(Map((
            (Bulk(b"name"), Bulk(f.name)),
            (Bulk(b"description"), Bulk(f.description) if f.description is not None else NULL_BULK),
            (Bulk(b"flags"), Set(tuple(Simple(flag) for flag in FLAG_ORDER if flag in f.flags))),
        )) for f in lib.functions)
        pairs: tuple[tuple[Reply, Reply], ...] = (
            (Bulk(b"library_name"), Bulk(lib.name)), (Bulk(b"engine"), Bulk(b"LUA")),
            (Bulk(b"functions"), Array(functions)))
        if with_code:
            pairs += ((Bulk(b"library_code"), Bulk(lib.body)),)
        entries.append(Map(pairs))
    rendered = for_protocol(Array(tuple(entries)), call.client.proto)
    assert isinstance(rendered, Array)
    return PreRendered(_AnyOrderList(rendered.items))


@command("function|stats")
def function_stats(call: Call) -> Reply:
    libraries = call.server.libraries  # FUNCTION-STATS-1: no function ever runs while a command arrives
    counts = Map(((Bulk(b"libraries_count"), Int(len(libraries))),
                  (Bulk(b"functions_count"), Int(sum(len(lib.functions) for lib in libraries)))))
    return Map(((Bulk(b"running_script"), NULL_BULK), (Bulk(b"engines"), Map(((Bulk(b"LUA"), counts),)))))


@command("function|kill")
def function_kill(call: Call) -> Reply:
    raise CommandError(NOTBUSY)  # FUNCTION-STATS-1


@command("function|dump")
def function_dump(call: Call) -> Reply:
    """FUNCTION-DUMP-1: each library's body as an RDB function record, then the RDB version and CRC64."""
    version = call.server.dialect.rdb_version
    body = b"".join(bytes((OPCODE_FUNCTION2,)) + encode_string(lib.body) for lib in call.server.libraries)
    body += version.to_bytes(2, "little")
    return Bulk(body + crc64(0, body).to_bytes(8, "little"))


@command("function|restore")
def function_restore(call: Call) -> Reply:
    argv = call.argv
    if len(argv) > 4:
        raise CommandError(subcommand_syntax(argv[1], argv[0], True))
    policy = b"append"
    if len(argv) == 4:
        policy = c_string(argv[3]).lower()
        if policy not in (b"append", b"replace", b"flush"):  # FUNCTION-RESTORE-1
            raise CommandError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    payload = argv[2]
    version = payload_version(payload)
    if version is None or not version_accepted(version, call.server.dialect.rdb_version) or not checksum_ok(payload):
        raise CommandError("ERR DUMP payload version or checksum are wrong")
    reader = Reader(payload[:-10])
    loaded: list[Library] = []
    try:
        while reader.pos < len(reader.buf):  # FUNCTION-RESTORE-2
            kind = reader.byte()
            if kind == OPCODE_FUNCTION_PRE_GA:
                raise CommandError("ERR Pre-GA function format not supported")
            if kind != OPCODE_FUNCTION2:
                raise CommandError("ERR given type is not a function")
            lib, _ = _create(call, reader.string())
            if any(other.name == lib.name for other in loaded):
                raise CommandError(f"ERR Library '{lib.name.decode('utf-8', 'surrogateescape')}' already exists")
            loaded.append(lib)
    except RdbFormatError:
        raise CommandError("ERR failed loading the given functions payload") from None
    server = call.server
    if policy == b"flush":
        server.libraries = tuple(_join({}, loaded, False).values())
    else:
        server.libraries = tuple(_join(libraries_of(server), loaded, policy == b"replace").values())
    call.propagate_verbatim()
    call.changed()
    return OK


def _fcall(call: Call, read_only: bool) -> Reply:
    argv = call.argv
    server = call.server
    lib = _function_owner(libraries_of(server), argv[1])
    if lib is None:
        raise CommandError("ERR Function not found")  # FCALL-1
    numkeys = parse_ll(argv[2])
    if numkeys is None:
        raise CommandError("ERR Bad number of keys provided")
    if numkeys > len(argv) - 3:
        raise CommandError(NUMKEYS_TOO_MANY)
    if numkeys < 0:
        raise CommandError(NUMKEYS_NEGATIVE)
    engine = _engine(server)
    try:
        defs = engine.load_library(parse_library_metadata(lib.body)[1])
    except ScriptError as e:
        raise CommandError(e.text) from None
    wanted = argv[1].lower()
    f = next(d for d in defs if d.name.lower() == wanted)
    no_writes = "no-writes" in f.flags
    if read_only and not no_writes:  # FCALL-2
        raise CommandError(RO_WITH_WRITE_FLAG)
    host = ScriptHost(call, engine)
    reply = engine.call_function(f, argv[3:3 + numkeys], argv[3 + numkeys:], host, read_only=no_writes)
    _propagate(call, host.ops)
    server.stats.forget()  # SCRIPT-11
    return reply


@command("fcall")
def fcall(call: Call) -> Reply:
    return _fcall(call, False)


@command("fcall_ro")
def fcall_ro(call: Call) -> Reply:
    return _fcall(call, True)
