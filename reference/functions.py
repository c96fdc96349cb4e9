"""The reference server's FUNCTION subcommands, FCALL and FCALL_RO (spec/rules/functions.md).

Libraries live in the core's scripting state (``reference.scripting.Scripting.libraries``: name ->
(body, the functions it registered)), loaded into the core's own Lua engine; a function runs
through the same script client as EVAL. 6.2 has no FUNCTION or FCALL (its lookup does not find them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.reference.scripting import Scripting, run_function, scripting
from xspec.spec.crc64 import crc64
from xspec.spec.errors import FUNCTION_FLUSH_SYNTAX, error_text, subcommand_syntax
from xspec.spec.glob import pattern_matches
from xspec.spec.ids import c_string, string2ll
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
from xspec.spec.resp import EMPTY_ARRAY, NULL_BULK, OK, Array, Bulk, Int, Map, Reply, Set, Simple

__all__ = ["HANDLERS"]

HANDLERS: dict[str, Callable[[Any], Any]] = {}

Libraries = dict[bytes, tuple[bytes, list[FunctionDef]]]


def _handler(name: str) -> Callable[[Callable[[Context], Reply]], Callable[[Context], Reply]]:
    def register(fn: Callable[[Context], Reply]) -> Callable[[Context], Reply]:
        HANDLERS[name] = fn
        return fn
    return register


def _libraries(ctx: Context) -> Libraries:
    state = ctx.core.scripting
    return state.libraries if state is not None else {}


def _compile(state: Scripting, body: bytes) -> tuple[bytes, list[FunctionDef]]:
    try:
        name, code = parse_library_metadata(body)  # FUNCTION-LOAD-2
        functions = state.engine.load_library(code)  # FUNCTION-LOAD-3, FUNCTION-LOAD-4
    except ScriptError as e:
        raise ReplyError(e.text) from None
    if not functions:
        raise ReplyError("ERR No functions registered")
    return name, functions


def _owner(libraries: Libraries, function: bytes) -> bytes | None:
    wanted = function.lower()
    for name, (_, functions) in libraries.items():
        for f in functions:
            if f.name.lower() == wanted:
                return name
    return None


def _merge(into: Libraries, new: list[tuple[bytes, bytes, list[FunctionDef]]], replace: bool) -> Libraries:
    """The libraries after adding ``new`` (FUNCTION-LOAD-5, FUNCTION-RESTORE-2); errors leave ``into`` as it was."""
    merged = dict(into)
    for name, _, _ in new:
        if name in merged:
            if not replace:
                raise ReplyError(f"ERR Library {name.decode('utf-8', 'surrogateescape')} already exists")
            del merged[name]
    for name, body, functions in new:
        for f in functions:
            if _owner(merged, f.name) is not None:
                raise ReplyError(f"ERR Function {f.name.decode('utf-8', 'surrogateescape')} already exists")
        merged[name] = (body, functions)
    return merged


@_handler("function|load")
def function_load(ctx: Context) -> Reply:
    argv = ctx.argv
    replace = False
    for arg in argv[2:-1]:  # FUNCTION-LOAD-1
        if c_string(arg).lower() != b"replace":
            raise ReplyError(f"ERR Unknown option given: {error_text(arg)}")
        replace = True
    body = argv[-1] if len(argv) > 2 else b""
    state = scripting(ctx.core)
    try:
        name, _ = parse_library_metadata(body)
    except ScriptError as e:
        raise ReplyError(e.text) from None
    if name in state.libraries and not replace:
        raise ReplyError(f"ERR Library '{name.decode('utf-8', 'surrogateescape')}' already exists")
    name, functions = _compile(state, body)
    state.libraries = _merge(state.libraries, [(name, body, functions)], True)
    ctx.changed()  # FUNCTION-2: propagated verbatim
    return Bulk(name)


@_handler("function|delete")
def function_delete(ctx: Context) -> Reply:
    libraries = _libraries(ctx)
    if ctx.argv[2] not in libraries:
        raise ReplyError("ERR Library not found")  # FUNCTION-DELETE-1
    del libraries[ctx.argv[2]]
    ctx.changed()
    return OK


@_handler("function|flush")
def function_flush(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:
        raise ReplyError(subcommand_syntax(argv[1], argv[0], True))  # FUNCTION-1
    if len(argv) == 3 and c_string(argv[2]).lower() not in (b"async", b"sync"):
        raise ReplyError(FUNCTION_FLUSH_SYNTAX)
    if ctx.core.scripting is not None:
        ctx.core.scripting.libraries = {}
    ctx.changed()  # FUNCTION-2, STATS-4: a change even of an empty library
    if ctx.dialect.function_flush_counts_config_get:  # STATS-DIALECT-2
        ctx.core.command_stats.setdefault("config|get", [0, 0, 0, 0])[0] += 1
    return OK


@_handler("function|list")
def function_list(ctx: Context) -> Reply:
    seen_code = False
    pattern: bytes | None = None
    args = iter(ctx.argv[2:])
    for arg in args:  # FUNCTION-3
        word = c_string(arg).lower()
        if word == b"withcode" and not seen_code:
            seen_code = True
        elif word == b"libraryname" and pattern is None:
            pattern = next(args, None)
            if pattern is None:
                raise ReplyError("ERR library name argument was not given")
        else:
            raise ReplyError(f"ERR Unknown argument {error_text(arg)}")
    out: list[Reply] = []
    for name, (body, functions) in _libraries(ctx).items():  # FUNCTION-4
        if pattern is not None and not pattern_matches(pattern, name, nocase=True):
            continue
        listed = tuple(Map(((Bulk(b"name"), Bulk(f.name)),
                            (Bulk(b"description"), NULL_BULK if f.description is None else Bulk(f.description)),
                            (Bulk(b"flags"), Set(tuple(Simple(x) for x in FLAG_ORDER if x in f.flags)))))
                       for f in functions)
        fields: list[tuple[Reply, Reply]] = [(Bulk(b"library_name"), Bulk(name)), (Bulk(b"engine"), Bulk(b"LUA")),
                                             (Bulk(b"functions"), Array(listed))]
        if seen_code:
            fields.append((Bulk(b"library_code"), Bulk(body)))
        out.append(Map(tuple(fields)))
    return Array(tuple(out)) if out else EMPTY_ARRAY


@_handler("function|stats")
def function_stats(ctx: Context) -> Reply:
    libraries = _libraries(ctx)
    lua = Map(((Bulk(b"libraries_count"), Int(len(libraries))),
               (Bulk(b"functions_count"), Int(sum(len(fs) for _, fs in libraries.values())))))
    return Map(((Bulk(b"running_script"), NULL_BULK), (Bulk(b"engines"), Map(((Bulk(b"LUA"), lua),)))))


@_handler("function|kill")
def function_kill(ctx: Context) -> Reply:
    raise ReplyError(NOTBUSY)


@_handler("function|dump")
def function_dump(ctx: Context) -> Reply:
    version = ctx.dialect.rdb_version  # FUNCTION-DUMP-1
    data = b"".join(b"\xf5" + encode_string(body) for body, _ in _libraries(ctx).values()) + version.to_bytes(2, "little")
    return Bulk(data + crc64(0, data).to_bytes(8, "little"))


@_handler("function|restore")
def function_restore(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 4:
        raise ReplyError(subcommand_syntax(argv[1], argv[0], True))
    policy = c_string(argv[3]).lower() if len(argv) == 4 else b"append"
    if policy not in (b"append", b"replace", b"flush"):  # FUNCTION-RESTORE-1
        raise ReplyError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    payload = argv[2]
    version = payload_version(payload)
    if version is None or not checksum_ok(payload) or not version_accepted(version, ctx.dialect.rdb_version):
        raise ReplyError("ERR DUMP payload version or checksum are wrong")
    state = scripting(ctx.core)
    reader = Reader(payload[:-10])
    found: list[tuple[bytes, bytes, list[FunctionDef]]] = []
    try:
        while reader.pos < len(reader.buf):  # FUNCTION-RESTORE-2
            opcode = reader.byte()
            if opcode == 0xF6:
                raise ReplyError("ERR Pre-GA function format not supported")
            if opcode != 0xF5:
                raise ReplyError("ERR given type is not a function")
            body = reader.string()
            name, functions = _compile(state, body)
            if any(other == name for other, _, _ in found):
                raise ReplyError(f"ERR Library '{name.decode('utf-8', 'surrogateescape')}' already exists")
            found.append((name, body, functions))
    except RdbFormatError:
        raise ReplyError("ERR failed loading the given functions payload") from None
    base = {} if policy == b"flush" else state.libraries
    state.libraries = _merge(base, found, policy == b"replace")
    ctx.changed()
    return OK


def _fcall(ctx: Context, read_only: bool) -> Reply:
    argv = ctx.argv
    libraries = _libraries(ctx)
    owner = _owner(libraries, argv[1])
    if owner is None:
        raise ReplyError("ERR Function not found")  # FCALL-1
    numkeys = string2ll(argv[2])
    if numkeys is None:
        raise ReplyError("ERR Bad number of keys provided")
    if numkeys > len(argv) - 3:
        raise ReplyError(NUMKEYS_TOO_MANY)
    if numkeys < 0:
        raise ReplyError(NUMKEYS_NEGATIVE)
    wanted = argv[1].lower()
    f = next(f for f in libraries[owner][1] if f.name.lower() == wanted)
    if read_only and "no-writes" not in f.flags:
        raise ReplyError(RO_WITH_WRITE_FLAG)  # FCALL-2
    return run_function(ctx, f, argv[3:3 + numkeys], argv[3 + numkeys:])


@_handler("fcall")
def fcall(ctx: Context) -> Reply:
    return _fcall(ctx, False)


@_handler("fcall_ro")
def fcall_ro(ctx: Context) -> Reply:
    return _fcall(ctx, True)
