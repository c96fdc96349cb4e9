"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (spec/rules/scripting.md).

A script runs on a real Lua 5.1 (:mod:`xspec.spec.lua`); its ``redis.call`` runs the command
here, through the model's handlers, as the script's own client: a client of its own that starts
in the caller's database, may not block (a blocking command answers at once, as inside EXEC) and
propagates what its commands change as part of the calling command (SCRIPT-9). The server keeps
only the scripts' bodies (``Server.scripts``, (SHA1, body) pairs); the compiled functions live in the
dialect's shared engine, so a model server stays a plain value that copies and pickles.
"""

from __future__ import annotations

from typing import Any

from xspec.models.server import HANDLERS, Call, CommandError, PreRendered, Server, command
from xspec.models.state import Client
from xspec.models.stats import count_call
from xspec.spec import commands as table
from xspec.spec.commands import NOT_INTEGER
from xspec.spec.errors import subcommand_syntax
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.lua import (
    LUA_AVAILABLE,
    LUA_MISSING,
    NOTBUSY,
    NUMKEYS_NEGATIVE,
    NUMKEYS_TOO_MANY,
    RO_WITH_WRITE_FLAG,
    SCRIPT_DIALECTS,
    SCRIPT_FLUSH_SYNTAX,
    LuaEngine,
    ScriptError,
    engine_for,
    parse_shebang,
    sha1hex,
)
from xspec.spec.resp import OK, Array, Bulk, Error, Int, Reply

# The script's client is no connection: it is never in Server.clients.
SCRIPT_CLIENT_ID = 0


class ScriptHost:
    """What a running script's ``redis.call`` reaches: the model's lookup and handlers."""

    def __init__(self, call: Call, engine: LuaEngine) -> None:
        self.server = call.server
        self.engine = engine
        self.client = Client(id=SCRIPT_CLIENT_ID, db=call.client.db)
        self.ops: list[tuple[int, list[bytes | int]]] = []

    def lookup(self, argv: list[bytes]) -> table.CommandSpec | None:
        return self.server.dialect.lookup(argv)

    def execute(self, spec: table.CommandSpec, argv: list[bytes]) -> Reply:
        server = self.server
        name = spec.fullname
        handler = HANDLERS.get(name)
        if handler is None:
            server.stats.forget()
            return Error(f"ERR xspec model: '{name}' is not modelled")
        before = len(self.ops)
        call = Call(server, self.client, argv, spec, self.ops, in_exec=True)  # SCRIPT-10: no blocking
        try:
            result = handler(call)
        except CommandError as e:
            result = Error(e.text)
        count_call(server, name, result)
        state = self.engine.state
        if state is not None and state.repl == 0:  # redis.set_repl(redis.REPL_NONE): nothing propagates
            del self.ops[before:]
        if isinstance(result, PreRendered):
            return result.reply
        return result  # type: ignore[return-value]  # a script's client never blocks


def _engine(server: Server) -> LuaEngine:
    if not LUA_AVAILABLE:
        raise CommandError(LUA_MISSING)
    return engine_for(server.dialect.name)


def _load(server: Server, body: bytes) -> tuple[str, Any, frozenset[str] | None]:
    """``luaCreateFunction``: the script's SHA1, compiled function and shebang flags; it joins the
    cache (SCRIPT-2, SCRIPT-3, SCRIPT-4)."""
    engine = _engine(server)
    sha = sha1hex(body)
    try:
        flags, code = parse_shebang(body, engine.dialect)
        fn = engine.compile(code)
    except ScriptError as e:
        raise CommandError(e.text) from None
    if all(cached != sha for cached, _ in server.scripts):
        server.scripts = (*server.scripts, (sha, body))
    return sha, fn, flags


def _numkeys(argv: list[bytes]) -> int:
    n = parse_ll(argv[2])
    if n is None:  # SCRIPT-1
        raise CommandError(NOT_INTEGER)
    if n > len(argv) - 3:
        raise CommandError(NUMKEYS_TOO_MANY)
    if n < 0:
        raise CommandError(NUMKEYS_NEGATIVE)
    return n


def _eval(call: Call, by_sha: bool, read_only: bool) -> Reply:
    argv = call.argv
    server = call.server
    dialect = SCRIPT_DIALECTS[server.dialect.name]
    if by_sha and len(argv[1]) != 40:  # SCRIPT-3: not a SHA1, before numkeys
        raise CommandError(dialect.noscript)
    numkeys = _numkeys(argv)
    if by_sha:
        body = dict(server.scripts).get(argv[1].decode("latin-1").lower())
        if body is None:
            raise CommandError(dialect.noscript)
    else:
        body = argv[1]
    sha, fn, flags = _load(server, body)
    engine = _engine(server)
    host = ScriptHost(call, engine)
    if read_only and flags is not None and "no-writes" not in flags:  # SCRIPT-4: a shebang without no-writes
        raise CommandError(RO_WITH_WRITE_FLAG)
    read_only = read_only or (flags is not None and "no-writes" in flags)  # SCRIPT-4
    reply, _state = engine.run(fn, argv[3:3 + numkeys], argv[3 + numkeys:], host, read_only=read_only,
                               name=sha)
    _propagate(call, host.ops)
    server.stats.forget()  # SCRIPT-11: how errors inside a script count is not modelled
    return reply


def _propagate(call: Call, ops: list[tuple[int, list[bytes | int]]]) -> None:
    """SCRIPT-9: the script's effects go out as the calling command's; 6.2 wraps them in MULTI/EXEC
    in the caller's database (unless the script runs inside EXEC), 7.0+ wraps them as any command's."""
    if not ops:
        return
    if call.server.dialect.wraps_transactions_only and not call.in_exec:  # SCRIPT-DIALECT-4
        db = call.client.db
        call.ops.append((db, [b"MULTI"]))
        call.ops.extend(ops)
        call.ops.append((db, [b"EXEC"]))
    else:
        call.ops.extend(ops)


@command("eval")
def eval_(call: Call) -> Reply:
    return _eval(call, False, False)


@command("evalsha")
def evalsha(call: Call) -> Reply:
    return _eval(call, True, False)


@command("eval_ro")
def eval_ro(call: Call) -> Reply:
    return _eval(call, False, True)


@command("evalsha_ro")
def evalsha_ro(call: Call) -> Reply:
    return _eval(call, True, True)


@command("script|load")
def script_load(call: Call) -> Reply:
    sha, _fn, _flags = _load(call.server, call.argv[2])  # SCRIPT-2
    if call.server.dialect.wraps_transactions_only:  # SCRIPT-DIALECT-4: 6.2 propagates it
        call.propagate_verbatim()
    return Bulk(sha.encode())


@command("script|exists")
def script_exists(call: Call) -> Reply:
    scripts = dict(call.server.scripts)
    return Array(tuple(Int(1 if a.decode("latin-1").lower() in scripts else 0) for a in call.argv[2:]))  # SCRIPT-12


@command("script|flush")
def script_flush(call: Call) -> Reply:
    argv = call.argv
    if len(argv) == 3 and c_string(argv[2]).lower() in (b"sync", b"async") or len(argv) == 2:
        call.server.scripts = ()  # SCRIPT-13
        if call.server.dialect.wraps_transactions_only:  # SCRIPT-DIALECT-4
            call.propagate_verbatim()
        return OK
    raise CommandError(SCRIPT_FLUSH_SYNTAX)


@command("script|kill")
def script_kill(call: Call) -> Reply:
    raise CommandError(NOTBUSY)  # SCRIPT-14: no script ever runs while a command arrives


@command("script|*")
def script_refused(call: Call) -> Reply:
    """6.2 without a subcommand table: an unknown subcommand or a wrong count."""
    raise CommandError(subcommand_syntax(call.argv[1], b"script", False))
