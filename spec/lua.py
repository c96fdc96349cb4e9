"""The Lua side of scripting, as each dialect's server shows it to a script (spec/rules/scripting.md).

A real Lua 5.1 (lupa's ``lupa.lua51``, the version Redis embeds) runs the scripts. This module holds
what every server that runs scripts shares as wire vocabulary: the globals a script sees, the
``redis`` table (``redis.call``/``pcall`` and their refusals, ``error_reply``, ``status_reply``,
``sha1hex``, ``setresp``, ``log``, ``set_repl``), the error words per dialect, and the two
conversions (a command's reply to a Lua value, a script's Lua result to a reply). The libraries a
script may use come from :mod:`xspec.spec.lua_libs` (lupa's Lua has none of them).

What the command runs is not here: a server gives :meth:`LuaEngine.run` a :class:`ScriptHost`
whose ``execute`` runs one command as the script's client, with the server's own checks and
effects (models/scripting.py, reference/scripting.py).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from xspec.spec.commands import CommandSpec
from xspec.spec.lua_libs import install_libraries
from xspec.spec.resp import (
    NULL_BULK,
    Array,
    BigNum,
    Bool,
    Bulk,
    Double,
    Error,
    Int,
    Map,
    Null,
    NullArray,
    NullBulk,
    Reply,
    Set,
    Simple,
    Verbatim,
    for_protocol,
)

try:  # lupa is an optional dependency: without it scripting answers that it is not available
    from lupa import lua51 as _lua51
except ImportError:  # pragma: no cover - exercised only where lupa is missing
    _lua51 = None

LUA_AVAILABLE = _lua51 is not None
LUA_MISSING = "ERR xspec: scripting needs the lupa package (its Lua 5.1 runtime)"


@dataclass(frozen=True)
class ScriptDialect:
    """What differs between the servers' scripting, measured on each real server (SCRIPT-DIALECT-*)."""

    name: str
    # 6.2: errors are strings with positions ("Error running script (call to f_<sha>): ..."),
    # no shebang, no EVAL_RO/FUNCTION, ``print`` is a global, ``error_reply`` keeps its text.
    legacy: bool
    no_args: str
    bad_argument: str
    unknown_command: str
    wrong_arity: str
    not_allowed: str
    noscript: str = "NOSCRIPT No matching script. Please use EVAL."
    # The name an uncaught error names the script by: its SHA1, or nothing (Valkey 9.1).
    names_script: bool = True
    # Numbers given to redis.call as arguments: "%.17g" (7.0, 6.2) or the shortest round trip (7.2+).
    shortest_numbers: bool = False
    # BLPOP and the other list/zset blocking commands run in scripts, as non-blocking (7.2+).
    blocking_in_scripts: bool = False
    # XREAD/XREADGROUP with BLOCK are refused inside scripts (until 7.4).
    xread_block_refused: bool = True
    # The words for a shebang naming another engine: Redis's, or Valkey's engine lookup.
    valkey_engines: bool = False
    # redis.REDIS_VERSION (7.0+)
    version: str = ""


_REDIS_70 = ScriptDialect(
    "redis-7.0", False, version="7.0.15",
    no_args="ERR Please specify at least one argument for this redis lib call",
    bad_argument="ERR Lua redis lib command arguments must be strings or integers",
    unknown_command="ERR Unknown Redis command called from script",
    wrong_arity="ERR Wrong number of args calling Redis command from script",
    not_allowed="ERR This Redis command is not allowed from script",
)
_REDIS_72 = replace(_REDIS_70, name="redis-7.2", version="7.2.4", shortest_numbers=True, blocking_in_scripts=True)
_VALKEY_81 = replace(
    _REDIS_72, name="valkey-8.1", xread_block_refused=False, valkey_engines=True,
    noscript="NOSCRIPT No matching script.",
    no_args="ERR Please specify at least one argument for this call",
    bad_argument="ERR Command arguments must be strings or integers",
    unknown_command="ERR Unknown command called from script",
    wrong_arity="ERR Wrong number of args calling command from script",
)

SCRIPT_DIALECTS: dict[str, ScriptDialect] = {d.name: d for d in (
    ScriptDialect("redis-6.2", True,
                  no_args="Please specify at least one argument for redis.call()",
                  bad_argument="Lua redis() command arguments must be strings or integers",
                  unknown_command="Unknown Redis command called from Lua script",
                  wrong_arity="Wrong number of args calling Redis command From Lua script",
                  not_allowed="This Redis command is not allowed from scripts"),
    _REDIS_70,
    _REDIS_72,
    replace(_REDIS_72, name="redis-7.4", version="7.4.1", xread_block_refused=False),
    _VALKEY_81,
    replace(_VALKEY_81, name="valkey-9.1", names_script=False,
            not_allowed="ERR This Valkey command is not allowed from script"),
)}

# SCRIPT-DIALECT-3: the blocking commands 7.2+ lets scripts run (as non-blocking); 7.0 and 6.2 flag them noscript.
BLOCKING_COMMANDS = frozenset({"blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax",
                               "bzmpop"})
SCRIPT_FLAGS = frozenset({"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"})
READONLY_SCRIPT = "ERR Write commands are not allowed from read-only scripts."
NUMKEYS_TOO_MANY = "ERR Number of keys can't be greater than number of args"
NUMKEYS_NEGATIVE = "ERR Number of keys can't be negative"
SCRIPT_FLUSH_SYNTAX = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
NOTBUSY = "NOTBUSY No scripts in execution right now."


def sha1hex(body: bytes) -> str:
    """A script's name in the cache: the lowercase hex SHA1 of its body (SCRIPT-2)."""
    return hashlib.sha1(body).hexdigest()


class ScriptError(Exception):
    """A script that cannot be loaded: the error reply's text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def parse_shebang(body: bytes, dialect: ScriptDialect) -> tuple[frozenset[str] | None, bytes]:
    """``evalExtractShebangFlags`` (SCRIPT-4): the flags a ``#!lua`` first line declares (None: no
    shebang, the compatibility mode), and the code to compile (the shebang line left empty, so
    line numbers stay). 6.2 has no shebang: the line is Lua and fails to compile."""
    if dialect.legacy or not body.startswith(b"#!"):
        return None, body
    end = body.find(b"\n")
    if end < 0:
        raise ScriptError("ERR Invalid script shebang")
    parts = body[:end].decode("latin-1").split(" ")
    parts = [p for p in parts if p]
    if parts[0] != "#!lua":
        if dialect.valkey_engines:
            raise ScriptError(f"ERR Could not find scripting engine '{parts[0][2:]}'")
        raise ScriptError(f"ERR Unexpected engine in script shebang: {parts[0]}")
    flags: set[str] = set()
    for part in parts[1:]:
        if not part.startswith("flags="):
            raise ScriptError(f"ERR Unknown lua shebang option: {part}")
        for flag in part[6:].split(","):
            if flag and flag not in SCRIPT_FLAGS:
                raise ScriptError(f"ERR Unexpected flag in script shebang: {flag}")
            if flag:
                flags.add(flag)
    return frozenset(flags), body[end:]


FLAG_ORDER = ("no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys")
BAD_LIBRARY_NAME = ("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one "
                    "character long")
RO_WITH_WRITE_FLAG = "ERR Can not execute a script with write flag using *_ro command."


def parse_library_metadata(body: bytes) -> tuple[bytes, bytes]:
    """``functionExtractLibMetaData`` (FUNCTION-LOAD-2): a library's name and the code to run (its
    first line left out, its line feed kept); ScriptError with FUNCTION LOAD's words otherwise."""
    if not body.startswith(b"#!"):
        raise ScriptError("ERR Missing library metadata")
    end = body.find(b"\n")
    if end < 0:
        raise ScriptError("ERR Invalid library metadata")
    parts = body[:end].split()
    if not parts:
        raise ScriptError("ERR Invalid library metadata")
    engine = parts[0][2:]
    name: bytes | None = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise ScriptError("ERR Invalid metadata value, name argument was given multiple times")
            name = part[5:]
            continue
        raise ScriptError(f"ERR Invalid metadata value given: {part.decode('utf-8', 'surrogateescape')}")
    if name is None:
        raise ScriptError("ERR Library name was not given")
    if not valid_name(name):
        raise ScriptError(BAD_LIBRARY_NAME)
    if engine.lower() != b"lua":
        raise ScriptError(f"ERR Engine '{engine.decode('utf-8', 'surrogateescape')}' not found")
    return name, body[end:]


def format_number(value: float, shortest: bool) -> bytes:
    """A Lua number given to redis.call as an argument (SCRIPT-DIALECT-2)."""
    if value != value or value in (math.inf, -math.inf):
        return (b"nan" if value != value else b"inf" if value > 0 else b"-inf")
    if value == int(value) and abs(value) < 1e17:
        return b"%d" % int(value)
    if shortest:
        text = repr(float(value))
        if "e" in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa.removesuffix('.0')}e{int(exponent):+03d}"
        return text.encode()
    return f"{value:.17g}".encode()


def format_double(value: float, shortest: bool) -> str:
    """The text of a ``{double=n}`` reply (addReplyDouble)."""
    if value != value:
        return "nan"
    if value in (math.inf, -math.inf):
        return "inf" if value > 0 else "-inf"
    return format_number(value, shortest).decode() if shortest else f"{value:.17g}"


def to_int64(value: float) -> int:
    """``(long long)`` of a Lua number: truncation; out of range (and NaN) is INT64_MIN on x86-64."""
    if value != value or not (-9.223372036854775808e18 <= value < 9.223372036854775808e18):
        return -(1 << 63)
    return int(value)


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


class ScriptHost(Protocol):
    """What a server gives a running script: its command table and a way to run one command."""

    def lookup(self, argv: list[bytes]) -> CommandSpec | None: ...

    def execute(self, spec: CommandSpec, argv: list[bytes]) -> Reply:
        """Run the command as the script's client; the reply as the command gives it (not rendered)."""
        ...


class RunState:
    """One script run: its host, read-only state, RESP version and replication flags."""

    __slots__ = ("host", "read_only", "resp", "repl")

    def __init__(self, host: ScriptHost, read_only: bool) -> None:
        self.host = host
        self.read_only = read_only
        self.resp = 2
        self.repl = 3  # redis.set_repl: REPL_ALL


# The Lua side. ``...`` is a table of Python callbacks; it returns the functions Python uses.
# The ``redis`` functions and the libraries are Python callables, which Lua runs as C functions:
# a script's ``return redis.call(...)`` then keeps the script's frame, as Redis's C functions do,
# and an error they raise (a Python exception carrying the Lua error value) is at the script's line.
# Frames of this chunk ("=xspec") are skipped when an error looks for the script's position.
_GLUE = r"""
local py = ...
local getinfo = debug.getinfo
local type, error, rawset, tostring, setmetatable = type, error, rawset, tostring, setmetatable
python = nil

-- The first frame, from ``level`` up, that is neither C nor this glue: the script's position.
local function where(level)
  level = level + 1
  while true do
    local i = getinfo(level, 'nSl')
    if not i then return nil end
    if i.what ~= 'C' and i.source ~= '=xspec' then return i end
    level = level + 1
  end
end
local function position()
  local i = where(2)
  if i then return i.source, i.short_src, i.currentline end
  return nil
end

local legacy = py.legacy
local unwrap = py.unwrap
local G = {}

local redis = {}
for _, name in ipairs({'call', 'pcall', 'error_reply', 'status_reply', 'sha1hex', 'setresp', 'log',
                       'set_repl'}) do
  redis[name] = py[name]
end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
if py.version then
  redis.REDIS_VERSION = py.version
  redis.REDIS_VERSION_NUM = py.version_num
end

local libs = py.libraries
local function library(lib)
  local t = {}
  for k, v in pairs(lib.functions) do t[k] = v end
  for k, v in pairs(lib.values) do t[k] = v end
  return t
end
local cjson = library(libs.cjson)
cjson.null = newproxy()
libs.set_null(cjson.null)

local names = {'xpcall', 'tostring', 'getfenv', 'setmetatable', 'next', 'assert', 'tonumber', 'rawequal',
  'collectgarbage', 'getmetatable', 'rawset', 'pcall', 'coroutine', 'type', 'select', 'unpack', 'gcinfo',
  'pairs', 'rawget', 'loadstring', 'ipairs', '_VERSION', 'setfenv', 'load', 'error', 'newproxy',
  'string', 'math', 'table'}
for _, name in ipairs(names) do G[name] = _G[name] end
if legacy then G.print = function() end end
G._G = G
G.redis = redis
G.cjson = cjson
G.cmsgpack = library(libs.cmsgpack)
G.bit = library(libs.bit)
G.struct = library(libs.struct)
setmetatable(G, {
  __index = function(t, name) error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2) end,
  __newindex = function(t, name, value) error('Attempt to modify a readonly table', 2) end,
  __metatable = false,
})

-- The error handlers: 7.0+ builds an error table with the script's position; 6.2 prefixes it.
local function handler(err)
  if type(err) == 'userdata' then err = unwrap(err) end
  local i = where(2)
  if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end
  if i then rawset(err, 'source', i.source); rawset(err, 'line', i.currentline) end
  return err
end
local legacy_handler = loadstring(
  "local where, unwrap = ...\n" ..
  "return function(err)\n" ..
  "  local i = where(2)\n" ..
  "  if type(err) == 'userdata' then\n" ..
  "    err = unwrap(err)\n" ..
  "  end\n" ..
  "  -- a table error fails below, as in 6.2\n" ..
  "  if i then\n" ..
  "    return i.source .. ':' .. i.currentline .. ': ' .. err\n" ..
  "  else\n" ..
  "    return err\n" ..
  "  end\n" ..
  "end\n", '@err_handler_def')(where, unwrap)

local function compile(code, chunk)
  local fn, message = loadstring(code, chunk)
  if not fn then return nil, message end
  setfenv(fn, G)
  return fn, nil
end

local chosen_handler = legacy and legacy_handler or handler
local function run(fn, nkeys, ...)
  local n, keys, args = select('#', ...), nil, {}
  if n == nkeys then
    keys = {...}
  else
    local all = {...}
    keys = {}
    for i = 1, nkeys do keys[i] = all[i] end
    for i = nkeys + 1, n do args[i - nkeys] = all[i] end
  end
  rawset(G, 'KEYS', keys)
  rawset(G, 'ARGV', args)
  local ok, result = xpcall(fn, chosen_handler)
  return ok, result  -- always two values: a script may return none
end

-- Function libraries (FUNCTION LOAD): a library's code sees the globals through LG, whose
-- ``redis`` is the loading API while the library loads and the whole table afterwards.
local current = {redis = redis}
local loading = {register_function = py.register_function, log = redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM}
local function missing(t, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
setmetatable(loading, {__index = missing, __newindex = function() error('Attempt to modify a readonly table', 2) end})
local LG = setmetatable({}, {
  __index = function(t, name)
    if name == 'redis' then return current.redis end
    local v = rawget(G, name)
    if v == nil then error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2) end
    return v
  end,
  __newindex = function(t, name, value) error('Attempt to modify a readonly table', 2) end,
  __metatable = false,
})
local function load_library(code)
  local fn, message = loadstring(code, '@user_function')
  if not fn then return false, 'compile', message end
  setfenv(fn, LG)
  current.redis = loading
  local ok, err = xpcall(fn, handler)
  current.redis = redis
  if not ok then return false, 'run', err end
  return true
end
local function call_function(fn, keys, args)
  local ok, result = xpcall(function() return fn(keys, args) end, handler)
  return ok, result
end

return compile, run, position, load_library, call_function
"""


class LuaRaise(Exception):
    """Raised by a Python function that Lua called: Lua sees an error whose value is ``value``."""

    def __init__(self, value: Any) -> None:
        super().__init__("lua error")
        self.value = value


def _version_num(version: str) -> int:
    major, minor, patch = (int(p) for p in version.split("."))
    return (major << 16) | (minor << 8) | patch


class LuaEngine:
    """One Lua 5.1 state with a dialect's globals; runs compiled scripts against a :class:`ScriptHost`.

    The state keeps nothing between scripts (the globals are read-only), so one engine per dialect
    serves every server of that dialect; compiled functions are kept by their code's SHA1.
    """

    def __init__(self, dialect: ScriptDialect) -> None:
        if _lua51 is None:
            raise RuntimeError(LUA_MISSING)
        self.dialect = dialect
        self.lua = _lua51.LuaRuntime(encoding=None, unpack_returned_tuples=True,
                                     register_eval=False, register_builtins=False)
        self.state: RunState | None = None
        py = self.lua.table_from({
            b"legacy": dialect.legacy,
            b"call": self._redis_call,
            b"pcall": self._redis_pcall,
            b"error_reply": lambda *args: self._single_field(b"err", args),
            b"status_reply": lambda *args: self._single_field(b"ok", args),
            b"sha1hex": self._sha1hex,
            b"setresp": self._setresp,
            b"log": self._log,
            b"set_repl": self._set_repl,
            b"register_function": self._register_function,
            b"unwrap": lambda e: e.value if isinstance(e, LuaRaise) else e,
            b"libraries": install_libraries(self.lua, self._library_error),
        })
        if dialect.version:
            py[b"version"] = dialect.version.encode()
            py[b"version_num"] = _version_num(dialect.version)
        chunk = self.lua.eval("loadstring")(_GLUE.encode(), b"=xspec")
        self.registered: list[FunctionDef] | None = None
        self._compile, self._run, self._position, self._load_library, self._call_function = chunk(py)
        self._libraries: dict[bytes, list[FunctionDef]] = {}
        self._functions: dict[tuple[bytes, bytes], Any] = {}

    # -- compiling --------------------------------------------------------------------------------
    def compile(self, code: bytes, chunk: bytes = b"@user_script") -> Any:
        """The Lua function of ``code``; ScriptError with "Error compiling script" if it does not compile."""
        found = self._functions.get((code, chunk))
        if found is not None:
            return found
        fn, message = self._compile(code, chunk)
        if fn is None:
            raise ScriptError(_one_line(f"ERR Error compiling script (new function): {_text(message)}"))
        if len(self._functions) > 10000:
            self._functions.clear()
        self._functions[(code, chunk)] = fn
        return fn

    # -- running ----------------------------------------------------------------------------------
    def run(self, fn: Any, keys: list[bytes], args: list[bytes], host: ScriptHost, *, read_only: bool,
            name: str) -> tuple[Reply, RunState]:
        """Run a compiled script: its reply (semantic; the caller renders it for its client) and the
        run's state (``repl`` flags). ``name`` is how an uncaught error names the script."""
        outer = self.state
        state = self.state = RunState(host, read_only)
        try:
            ok, result = self._run(fn, len(keys), *keys, *args)
            if ok:
                return self.to_reply(result, state.resp), state
            return Error(self._failure(result, name)), state
        finally:
            self.state = outer

    # -- function libraries -----------------------------------------------------------------------
    def load_library(self, code: bytes) -> list[FunctionDef]:
        """Run a library's code (after its ``#!lua name=…`` line, whose line feed it keeps) in the
        loading environment: the functions it registers, or ScriptError (FUNCTION-LOAD-3)."""
        found = self._libraries.get(code)
        if found is not None:
            return found
        outer = self.registered
        self.registered = []
        try:
            result = self._load_library(code)
            ok = result[0] if isinstance(result, tuple) else result
            if not ok:
                _, stage, err = result
                if stage == b"compile":
                    raise ScriptError(_one_line(f"ERR Error compiling function: {_text(err)}"))
                msg = err[b"err"] if _lua_type(err) == "table" else err
                raise ScriptError(_one_line(f"ERR Error registering functions: {_text(msg)}"))
            registered = self.registered
        finally:
            self.registered = outer
        if self.dialect.valkey_engines:  # FUNCTION-DIALECT-2: Valkey checks the names afterwards
            for f in registered:
                if not valid_name(f.name):
                    raise ScriptError("ERR Function names can only contain letters, numbers, or underscores(_) "
                                      "and must be at least one character long")
        if len(self._libraries) > 1000:
            self._libraries.clear()
        self._libraries[code] = registered
        return registered

    def _register_function(self, *args: Any) -> None:
        """``redis.register_function(name, callback)`` or ``redis.register_function{…}`` (FUNCTION-LOAD-4)."""
        api = "server.register_function" if self.dialect.valkey_engines else "redis.register_function"
        registered = self.registered
        if registered is None:
            self._raise("redis.register_function can only be called on FUNCTION LOAD command")
        assert registered is not None
        flags: list[str] = []
        description: bytes | None = None
        if len(args) == 2:
            name, callback = args
            if not isinstance(name, bytes):
                self._raise(f"first argument to {api} must be a string")
            if _lua_type(callback) != "function":
                self._raise(f"second argument to {api} must be a function")
        elif len(args) == 1:
            table = args[0]
            if _lua_type(table) != "table":
                self._raise(f"calling {api} with a single argument is only applicable to Lua table "
                            "(representing named arguments).")
            name = callback = None
            for key, value in table.items():
                if key == b"function_name":
                    if not isinstance(value, bytes):
                        self._raise(f"function_name argument given to {api} must be a string")
                    name = value
                elif key == b"description":
                    if not isinstance(value, bytes):
                        self._raise(f"description argument given to {api} must be a string")
                    description = value
                elif key == b"callback":
                    if _lua_type(value) != "function":
                        self._raise(f"callback argument given to {api} must be a function")
                    callback = value
                elif key == b"flags":
                    if _lua_type(value) != "table":
                        self._raise(f"flags argument to {api} must be a table representing function flags")
                    for _, flag in value.items():
                        if not isinstance(flag, bytes) or flag.decode("latin-1") not in SCRIPT_FLAGS:
                            self._raise("unknown flag given")
                        flags.append(flag.decode("latin-1"))
                else:
                    self._raise(f"unknown argument given to {api}")
            if name is None:
                self._raise(f"{api} must get a function name argument")
            if callback is None:
                self._raise(f"{api} must get a callback argument")
        else:
            self._raise(f"wrong number of arguments to {api}")
        assert isinstance(name, bytes)
        if not self.dialect.valkey_engines and not valid_name(name):
            self._raise("Library names can only contain letters, numbers, or underscores(_) and must be at least "
                        "one character long")  # FUNCTION-LOAD-4: Redis's words, naming libraries
        if any(f.name == name for f in registered):
            self._raise("Function already exists in the library")
        registered.append(FunctionDef(name, callback, frozenset(flags), description, tuple(flags)))

    def call_function(self, f: FunctionDef, keys: list[bytes], args: list[bytes], host: ScriptHost, *,
                      read_only: bool) -> Reply:
        """FCALL: the function called with ``(KEYS, ARGV)`` (FCALL-2)."""
        outer = self.state
        state = self.state = RunState(host, read_only)
        try:
            ok, result = self._call_function(f.callback, self.lua.table_from(keys), self.lua.table_from(args))
            if ok:
                return self.to_reply(result, state.resp)
            return Error(self._failure(result, f.name.decode("utf-8", "surrogateescape")))
        finally:
            self.state = outer

    def _failure(self, err: Any, name: str) -> str:
        """The reply of an error the script did not catch (SCRIPT-15; 6.2's, SCRIPT-DIALECT-5)."""
        if self.dialect.legacy:
            return _one_line(f"ERR Error running script (call to f_{name}): {_text(err)}")
        if _lua_type(err) != "table":
            return _one_line(f"ERR Error running script {name}, {_text(err)[:100]}")
        msg = err[b"err"]
        text = _text(msg) if isinstance(msg, (bytes, int, float)) else ""
        source, line = err[b"source"], err[b"line"]
        if source is not None and line is not None:
            shown = f"{name}, " if self.dialect.names_script else ""  # SCRIPT-DIALECT-1
            text += f" script: {shown}on {_text(source)}:{_text(line)}."
        return _one_line(text)

    # -- the redis table (SCRIPT-16) -----------------------------------------------------------------
    def _raise(self, message: str) -> Any:
        """An error of a ``redis`` function: 7.0+ an error table (``ERR`` added), 6.2 the string."""
        if self.dialect.legacy:
            raise LuaRaise(message.encode())
        raise LuaRaise(self._error_table("ERR " + message))

    def _positioned(self, message: str, short: bool) -> bytes:
        """``message`` after the script's position: ``luaL_where``'s ``user_script:1: `` (``short``),
        or 6.2's ``luaPushError`` form ``@user_script: 1: ``."""
        found = self._position()
        if not found or found[0] is None:
            return message.encode()
        source, short_src, line = found
        if short:
            return _text(short_src).encode() + b":%d: " % int(line) + message.encode()
        return _text(source).encode() + b": %d: " % int(line) + message.encode()

    def _library_error(self, message: str) -> Any:
        raise LuaRaise(self._positioned(message, True))

    def _single_field(self, field: bytes, args: tuple[Any, ...]) -> Any:
        if len(args) != 1 or not isinstance(args[0], bytes):
            if self.dialect.legacy:
                return self.lua.table_from({b"err": self._positioned("wrong number or type of arguments", False)})
            return self._error_table("ERR wrong number or type of arguments")
        text = args[0]
        if field == b"err" and not self.dialect.legacy:
            text = self._error_text(text)
        return self.lua.table_from({field: text})

    def _sha1hex(self, *args: Any) -> Any:
        if len(args) != 1:
            return self._raise("wrong number of arguments")
        value = args[0]
        data = value if isinstance(value, bytes) else _lua_number_text(value) if _is_number(value) else b""
        return hashlib.sha1(data).hexdigest().encode()

    def _setresp(self, *args: Any) -> None:
        if len(args) != 1:
            self._raise("redis.setresp() requires one argument.")
        if args[0] not in (2, 3) or isinstance(args[0], bool):
            self._raise("RESP version must be 2 or 3.")
        assert self.state is not None
        self.state.resp = int(args[0])

    def _log(self, *args: Any) -> None:
        if len(args) < 2:
            self._raise("redis.log() requires two arguments or more.")
        if not _is_number(args[0]):
            self._raise("First argument must be a number")
        if not 0 <= args[0] <= 3:
            self._raise("Invalid debug level.")

    def _set_repl(self, *args: Any) -> None:
        if len(args) != 1:
            self._raise("redis.set_repl() requires one argument.")
        if not _is_number(args[0]) or not 0 <= args[0] <= 3:
            self._raise("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
        assert self.state is not None
        self.state.repl = int(args[0])

    def _error_text(self, text: bytes) -> bytes:
        """``redis.error_reply`` in 7.0+: a text without an error code gets ``ERR``; a leading ``-`` goes."""
        s = text if text.startswith(b"-") else b"-" + text
        space = s.find(b" ")
        if space < 0:
            return b"ERR " + s[1:].strip(b"\r\n")
        return s[1:space] + b" " + s[space + 1:].strip(b"\r\n")

    def _redis_call(self, *args: Any) -> Any:  # SCRIPT-7
        """redis.call (SCRIPT-7): the converted reply; an error reply or a refusal is raised."""
        reply = self._command(args)
        if type(reply) is _Failure:
            return self._call_failed(True, reply)
        return reply

    def _redis_pcall(self, *args: Any) -> Any:  # SCRIPT-7
        """redis.pcall (SCRIPT-7): the converted reply; an error reply or a refusal as an error table."""
        reply = self._command(args)
        if type(reply) is _Failure:
            return self._call_failed(False, reply)
        return reply

    def _call_failed(self, raise_error: bool, failure: _Failure) -> Any:
        """A failed redis.call (``raise_error``) or redis.pcall: the error raised or returned as a table."""
        if failure.refusal and self.dialect.legacy:  # 6.2: a refusal carries the script's position
            message = self._positioned(failure.text, False)
        else:
            message = failure.text.encode("utf-8", "surrogateescape").rstrip(b"\r\n")
        if raise_error:
            if self.dialect.legacy:
                raise LuaRaise(message)
            raise LuaRaise(self.lua.table_from({b"err": message}))
        return self.lua.table_from({b"err": message})

    def _command(self, args: tuple[Any, ...]) -> Any:
        state = self.state
        assert state is not None
        d = self.dialect
        try:
            if not args:
                return _Failure(d.no_args, True)
            argv: list[bytes] = list(args)
            for a in args:
                if type(a) is not bytes:
                    converted = self._arguments(args)
                    if converted is None:
                        return _Failure(d.bad_argument, True)
                    argv = converted
                    break
            host = state.host
            spec = host.lookup(argv)
            if spec is None:
                return _Failure(d.unknown_command, True)
            arity = spec.arity
            if (arity != len(argv)) if arity > 0 else (len(argv) < -arity):
                return _Failure(d.wrong_arity, True)
            name = spec.fullname
            flags = spec.flags
            if "noscript" in flags and not (d.blocking_in_scripts and name in BLOCKING_COMMANDS):
                return _Failure(d.not_allowed, True)
            if state.read_only and "write" in flags:
                return _Failure(READONLY_SCRIPT, True)
            if d.xread_block_refused and (name == "xread" or name == "xreadgroup") and any(
                    a.lower() == b"block" for a in argv[1:]):
                return _Failure(f"ERR {argv[0].decode('latin-1')} command is not allowed with BLOCK option "
                                "from scripts", False)
            reply: Any = host.execute(spec, argv)
            kind = type(reply)
            if kind is Int or kind is Bulk:  # the same in both protocols (no rendering), and in Lua its value
                return reply.value
            reply = for_protocol(reply, state.resp)
            if type(reply) is Error:
                return _Failure(reply.text, False)
            return self.to_lua(reply)
        except LuaRaise:
            raise
        except Exception as e:  # a bug on the Python side must not take the Lua state down
            return _Failure(f"ERR xspec: internal error running the command: {type(e).__name__}: {e}", False)

    def _arguments(self, args: tuple[Any, ...]) -> list[bytes] | None:
        """redis.call's arguments as a command's: numbers formatted (SCRIPT-DIALECT-2); None if one is
        neither a string nor a number."""
        argv: list[bytes] = []
        for a in args:
            if type(a) is bytes:
                argv.append(a)
            elif _is_number(a):
                argv.append(format_number(float(a), self.dialect.shortest_numbers))
            else:
                return None
        return argv

    def _error_table(self, text: str) -> Any:
        data = text.encode("utf-8", "surrogateescape").rstrip(b"\r\n")
        return self.lua.table_from({b"err": data})

    # -- conversions ------------------------------------------------------------------------------
    def to_lua(self, r: Reply) -> Any:
        """A command's reply as the script sees it (SCRIPT-6)."""
        t = type(r)
        if t is Bulk:
            return r.value  # type: ignore[union-attr]
        if t is Int:
            return r.value  # type: ignore[union-attr]
        if t is NullBulk or t is NullArray:
            return False
        if t is Null:
            return None
        if t is Array or t is Set:
            table = self.lua.table()
            if t is Set:
                inner = self.lua.table()
                for item in r.items:  # type: ignore[union-attr]
                    inner[self.to_lua(item)] = True
                table[b"set"] = inner
                return table
            for i, item in enumerate(r.items, 1):  # type: ignore[union-attr]
                value = self.to_lua(item)
                if value is not None:
                    table[i] = value
            return table
        if t is Simple:
            return self.lua.table_from({b"ok": r.text.encode("utf-8", "surrogateescape")})  # type: ignore[union-attr]
        if t is Error:
            return self._error_table(str(r.text))  # type: ignore[union-attr]
        if t is Map:
            inner = self.lua.table()
            for k, v in r.pairs:  # type: ignore[union-attr]
                inner[self.to_lua(k)] = self.to_lua(v)
            return self.lua.table_from({b"map": inner})
        if t is Double:
            return self.lua.table_from({b"double": float(r.text)})  # type: ignore[union-attr]
        if t is Bool:
            return bool(r.value)  # type: ignore[union-attr]
        if t is BigNum:
            return self.lua.table_from({b"big_number": r.text.encode()})  # type: ignore[union-attr]
        if t is Verbatim:
            inner = self.lua.table_from({b"format": r.fmt.encode(), b"string": r.text})  # type: ignore[union-attr]
            return self.lua.table_from({b"verbatim_string": inner})
        raise TypeError(f"no Lua form for {r!r}")

    def to_reply(self, value: Any, resp: int) -> Reply:
        """A script's result as a reply (SCRIPT-5): ``resp`` is the script's (redis.setresp)."""
        kind = type(value)
        if kind is int:
            return Int(_clamp(value))
        if kind is bytes:
            return Bulk(value)
        if isinstance(value, bool):
            if resp == 3:
                return Bool(value)
            return Int(1) if value else NULL_BULK
        if isinstance(value, (int, float)):
            return Int(to_int64(float(value)) if isinstance(value, float) else _clamp(value))
        if _lua_type(value) != "table":
            return NULL_BULK
        err = value[b"err"]
        if isinstance(err, bytes):
            return Error(_one_line(err.decode("utf-8", "surrogateescape")))
        ok = value[b"ok"]
        if isinstance(ok, bytes):
            return Simple(_one_line(ok.decode("utf-8", "surrogateescape")))
        double = value[b"double"]
        if isinstance(double, (int, float)) and not isinstance(double, bool):
            return Double(format_double(float(double), self.dialect.shortest_numbers))
        if not self.dialect.legacy:
            big = value[b"big_number"]
            if isinstance(big, bytes):
                return BigNum(_one_line(big.decode("latin-1")))
        inner = value[b"map"]
        if _lua_type(inner) == "table":
            return Map(tuple((self.to_reply(k, resp), self.to_reply(v, resp)) for k, v in inner.items()))
        inner = value[b"set"]
        if _lua_type(inner) == "table":
            return Set(tuple(self.to_reply(k, resp) for k, _ in inner.items()))
        items: list[Reply] = []
        i = 1
        while True:
            item = value[i]
            if item is None:
                break
            items.append(self.to_reply(item, resp))
            i += 1
        return Array(tuple(items))


@dataclass(frozen=True)
class FunctionDef:
    """A function a library registered: its name, Lua callback, flags and description."""

    name: bytes
    callback: Any
    flags: frozenset[str]
    description: bytes | None
    flag_order: tuple[str, ...] = ()


def valid_name(name: bytes) -> bool:
    """``functionsVerifyName``: letters, digits and underscores, at least one."""
    return bool(name) and all(c == 0x5F or 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A for c in name)


@dataclass(frozen=True)
class _Failure:
    """A redis.call that failed: the error text; ``refusal``: refused before the command ran."""

    text: str
    refusal: bool


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _lua_number_text(v: Any) -> bytes:
    """Lua 5.1's tostring of a number ("%.14g")."""
    return b"%.14g" % v


def _clamp(n: int) -> int:
    return n if -(1 << 63) <= n < (1 << 63) else -(1 << 63)


def _lua_type(value: Any) -> str | None:
    assert _lua51 is not None
    return _lua51.lua_type(value)  # type: ignore[no-any-return]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


_ENGINES = threading.local()


def engine_for(dialect_name: str) -> LuaEngine:
    """The shared engine of a dialect in this thread (created on first use): a run keeps its state on
    the engine, so two threads (a test and a ``--checked`` server's model) must not share one."""
    engines: dict[str, LuaEngine] | None = getattr(_ENGINES, "by_dialect", None)
    if engines is None:
        engines = _ENGINES.by_dialect = {}
    found = engines.get(dialect_name)
    if found is None:
        found = engines[dialect_name] = LuaEngine(SCRIPT_DIALECTS[dialect_name])
    return found


LuaCallable = Callable[..., Any]
