"""The reference server's EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (spec/rules/scripting.md).

Scripts run on lupa's Lua 5.1 with the globals, ``redis`` table and libraries of
:mod:`xspec.spec.lua`; each core has its own Lua state (the server's thread runs it). A
script's ``redis.call`` goes through :meth:`Core.run` as a client of its own (no connection,
never blocking), so the command counts, tracks and propagates as any other; the propagator
leaves out the script itself (SCRIPT-9).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xspec.reference.api import PreRendered, ReplyError
from xspec.reference.core import Client, Context, Core, FastCommand
from xspec.reference.protocol import decoded
from xspec.spec.commands import NOT_INTEGER, CommandSpec
from xspec.spec.errors import subcommand_syntax
from xspec.spec.ids import c_string, string2ll
from xspec.spec.lua import (
    LUA_AVAILABLE,
    LUA_MISSING,
    NOTBUSY,
    NUMKEYS_NEGATIVE,
    NUMKEYS_TOO_MANY,
    RO_WITH_WRITE_FLAG,
    SCRIPT_DIALECTS,
    SCRIPT_FLUSH_SYNTAX,
    FunctionDef,
    LuaEngine,
    ScriptDialect,
    ScriptError,
    parse_shebang,
    sha1hex,
)
from xspec.spec.resp import OK, Array, Bulk, Error, Int, Reply

__all__ = ["HANDLERS", "Scripting", "run_function", "scripting"]

HANDLERS: dict[str, Callable[[Any], Any]] = {}
_DIGITS = {b"%d" % n: n for n in range(10)}  # the commonest numkeys, as string2ll reads them


class Scripting:
    """A core's scripting state: its Lua engine and the script cache (SHA1 -> (body, function, flags))."""

    def __init__(self, core: Core) -> None:
        if not LUA_AVAILABLE:
            raise ReplyError(LUA_MISSING)
        self.words: ScriptDialect = SCRIPT_DIALECTS[core.dialect.name]
        self.engine = LuaEngine(self.words)
        self.cache: dict[str, tuple[bytes, Any, frozenset[str] | None]] = {}
        # FUNCTION LOAD's libraries (reference/functions.py): name -> (body, registered functions)
        self.libraries: dict[bytes, tuple[bytes, list[FunctionDef]]] = {}
        self._client: _ScriptClient | None = None

    def client(self, ctx: Context) -> _ScriptClient:
        """The script's client (one per core), starting in the caller's database (SCRIPT-10)."""
        found = self._client
        if found is None:
            found = self._client = _ScriptClient(ctx, self)
        found.client.db = ctx.client.db
        return found

    def create(self, body: bytes) -> str:
        """``luaCreateFunction``: compile and cache a script once; its SHA1 (SCRIPT-2, SCRIPT-4)."""
        sha = sha1hex(body)
        if sha in self.cache:
            return sha
        try:
            flags, code = parse_shebang(body, self.words)
            fn = self.engine.compile(code)
        except ScriptError as e:
            raise ReplyError(e.text) from None
        self.cache[sha] = (body, fn, flags)
        return sha


def scripting(core: Core) -> Scripting:
    found = core.scripting
    if found is None:
        found = core.scripting = Scripting(core)
    return found  # type: ignore[no-any-return]


class _ScriptClient:
    """``redis.call``'s side: one command at a time through the core, as the script's client."""

    def __init__(self, ctx: Context, state: Scripting) -> None:
        self.core = ctx.core
        self.engine = state.engine
        self.client = Client(0, None, True)
        self.client.ctx.core = ctx.core
        self.client.db = ctx.client.db
        self.known: dict[bytes, CommandSpec] = {}  # redis.call's first argument, as sent -> its entry
        self.plain: dict[int, FastCommand] = {}  # id of a remembered entry -> its handler and names

    def lookup(self, argv: list[bytes]) -> CommandSpec | None:
        name = argv[0]
        found = self.known.get(name)
        if found is not None:
            return found
        spec = self.core.lookup(argv)
        # Remembered as the core remembers its fast commands: an entry without subcommands is a
        # function of the name as sent (bounded, so that random names cannot grow it without end).
        if (spec is not None and not spec.subcommands and spec.container is None and len(self.known) < 1024
                and len(name) <= 32):
            handler = self.core.handler_for(spec)
            if handler is not None:
                self.known[name] = spec
                self.plain[id(spec)] = FastCommand(spec, handler)
        return spec

    def execute(self, spec: CommandSpec, argv: list[bytes]) -> Reply:
        run_state = self.engine.state
        client = self.client
        client.proto = run_state.resp if run_state is not None else 2
        core = self.core
        propagation = core.propagation
        pending = 0 if propagation is None else len(propagation.pending)
        plain = self.plain.get(id(spec))
        if plain is not None:  # Core.run with what it reads off the entry read once (SCRIPT-10: never blocks)
            name = plain.name
            reply = core._call(client, argv, spec, False, plain.handler, name, name, plain.readonly)
        else:
            reply = core.run(client, argv, spec, False)  # SCRIPT-10: a script's client never blocks
        if propagation is not None:
            if run_state is not None and run_state.repl == 0:
                del propagation.pending[pending:]  # redis.set_repl(redis.REPL_NONE)
        kind = type(reply)
        if kind is Int or kind is Bulk:
            return reply  # type: ignore[return-value]
        if reply is None:
            return Error("ERR xspec serve: a command blocked inside a script")
        if isinstance(reply, PreRendered):
            return reply.reply
        return decoded(reply)


def _run(ctx: Context, by_sha: bool, read_only: bool) -> Reply:
    argv = ctx.argv
    state = scripting(ctx.core)
    if by_sha and len(argv[1]) != 40:
        raise ReplyError(state.words.noscript)  # SCRIPT-3
    numkeys = _DIGITS.get(argv[2])
    if numkeys is None:
        numkeys = string2ll(argv[2])
    if numkeys is None:
        raise ReplyError(NOT_INTEGER)  # SCRIPT-1
    if numkeys > len(argv) - 3:
        raise ReplyError(NUMKEYS_TOO_MANY)
    if numkeys < 0:
        raise ReplyError(NUMKEYS_NEGATIVE)
    if by_sha:
        sha = argv[1].decode("latin-1").lower()
        found = state.cache.get(sha)
        if found is None:
            raise ReplyError(state.words.noscript)
    else:
        sha = state.create(argv[1])
        found = state.cache[sha]
    _body, fn, flags = found
    if flags is not None:  # SCRIPT-4: a shebang's flags decide, and EVAL_RO needs no-writes among them
        if read_only and "no-writes" not in flags:
            raise ReplyError(RO_WITH_WRITE_FLAG)
        read_only = read_only or "no-writes" in flags
    client = state.client(ctx)
    reply, _ = state.engine.run(fn, argv[3:3 + numkeys], argv[3 + numkeys:], client, read_only=read_only, name=sha)
    return reply


def run_function(ctx: Context, f: FunctionDef, keys: list[bytes], args: list[bytes]) -> Reply:
    """FCALL's run (FCALL-2): read-only when the function is flagged no-writes."""
    state = scripting(ctx.core)
    return state.engine.call_function(f, keys, args, state.client(ctx), read_only="no-writes" in f.flags)


def eval_(ctx: Context) -> Reply:
    return _run(ctx, False, False)


def evalsha(ctx: Context) -> Reply:
    return _run(ctx, True, False)


def eval_ro(ctx: Context) -> Reply:
    return _run(ctx, False, True)


def evalsha_ro(ctx: Context) -> Reply:
    return _run(ctx, True, True)


def script_load(ctx: Context) -> Reply:
    sha = scripting(ctx.core).create(ctx.argv[2])  # SCRIPT-2
    return Bulk(sha.encode())


def script_exists(ctx: Context) -> Reply:
    cache = ctx.core.scripting.cache if ctx.core.scripting is not None else {}
    return Array(tuple(Int(int(a.decode("latin-1").lower() in cache)) for a in ctx.argv[2:]))  # SCRIPT-12


def script_flush(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 3 or (len(argv) == 3 and c_string(argv[2]).lower() not in (b"sync", b"async")):
        raise ReplyError(SCRIPT_FLUSH_SYNTAX)
    if ctx.core.scripting is not None:
        ctx.core.scripting.cache.clear()  # SCRIPT-13
    return OK


def script_kill(ctx: Context) -> Reply:
    raise ReplyError(NOTBUSY)  # SCRIPT-14


def script_refused(ctx: Context) -> Reply:
    raise ReplyError(subcommand_syntax(ctx.argv[1], b"script", False))


HANDLERS.update({
    "eval": eval_, "evalsha": evalsha, "eval_ro": eval_ro, "evalsha_ro": evalsha_ro,
    "script|load": script_load, "script|exists": script_exists, "script|flush": script_flush,
    "script|kill": script_kill, "script|*": script_refused,
})
