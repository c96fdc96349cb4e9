"""Handlers of the connection and server-administration commands (spec/rules/server.md).

HELLO, AUTH, RESET, QUIT, CLIENT ID/SETNAME/GETNAME/INFO/LIST, INFO and
CONFIG GET/SET/RESETSTAT as Redis 7.0.15 answers them on a server without ACL
users or modules; the only user is ``default``, whose password is
``requirepass`` (none when it is empty).

Some replies describe the host rather than the semantics (HELLO's ``id`` and
``version``, CLIENT ID, CLIENT LIST/INFO, INFO's figures, the order of CONFIG
GET pairs). The model gives one plausible value for them and
``xspec.spec.environment`` checks the recorded reply by shape
(spec/rules/environment.md).
"""

from __future__ import annotations

from collections.abc import Callable
from errno import EINVAL, ENOENT

from xspec.models import notify
from xspec.models.cerrno import note_iterator_end, note_strtoull
from xspec.models.server import Call, CommandError, Server, command
from xspec.models.state import Client
from xspec.models.stats import commandstats_lines, errorstats_lines, stats_values
from xspec.models.transactions import discard_transaction
from xspec.spec import commands as table
from xspec.spec.config import MEMORY_UNITS
from xspec.spec.dialect import Dialect
from xspec.spec.errors import (
    AUTH_WITHOUT_PASSWORD,
    BAD_CLIENT_NAME,
    CONFIG_DUPLICATE,
    CONFIG_NOT_INTEGER,
    CONFIG_NOT_MEMORY,
    CONFIG_RANGE,
    INVALID_CLIENT_ID,
    NOPROTO,
    PROTO_NOT_INTEGER,
    WRONGPASS,
    config_invalid_argument,
    config_set_failed,
    config_unknown_parameter,
    config_unsupported_parameter,
    error_text,
    hello_bad_option,
    hello_noauth,
    unknown_client_type,
)
from xspec.spec.glob import pattern_matches
from xspec.spec.help import CLIENT_HELP, CLIENT_HELP_72, CLIENT_HELP_74, CONFIG_HELP
from xspec.spec.ids import I64_MAX, U64_MAX, c_string, parse_ll, strtoull
from xspec.spec.info import INFO_ALL_SECTIONS, INFO_DEFAULT_SECTIONS, INFO_FIELDS, INFO_SECTION_TITLES
from xspec.spec.limits import NUM_DATABASES
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Map, Reply, Simple, Verbatim


# -- HELLO, AUTH, RESET, QUIT ------------------------------------------------------
def _authenticate(call: Call, username: bytes, password: bytes) -> bool:
    """``ACLAuthenticateUser`` with only the ``default`` user (AUTH-3, AUTH-4).

    Without ``requirepass`` the user has ``nopass`` and any password works;
    with it, the password must be exactly ``requirepass``. Success
    authenticates the connection; failure leaves it as it was. An unknown user
    sets errno to ENOENT, a wrong password to EINVAL (``ACLCheckUserCredentials``,
    XADD-14).
    """
    if username != b"default":
        call.server.errno = ENOENT
        return False
    if call.server.password_required() and password != call.server.config["requirepass"].encode("latin-1"):
        call.server.errno = EINVAL
        return False
    call.server.set_authenticated(call.client.id, True)
    return True


def valid_client_name(name: bytes) -> bool:
    """``validateClientName``: printable ASCII without spaces (bytes 0x21..0x7e)."""
    return all(0x21 <= b <= 0x7E for b in name)


def set_client_name(c: Client, name: bytes) -> None:
    if not valid_client_name(name):  # CLIENT-3
        raise CommandError(BAD_CLIENT_NAME)
    c.name = name or None  # CLIENT-4: the empty name clears it


@command("hello")
def hello(call: Call) -> Reply:
    argv = call.argv
    c = call.client
    version = 0
    i = 1
    if len(argv) >= 2:
        parsed = parse_ll(argv[1])
        if parsed is None:  # HELLO-1
            raise CommandError(PROTO_NOT_INTEGER)
        if parsed < 2 or parsed > 3:  # HELLO-2
            raise CommandError(NOPROTO)
        version = parsed
        i = 2
    dialect = call.server.dialect
    # HELLO-DIALECT-2: Valkey parses every option first, then authenticates, then names
    deferred = dialect.hello_options_then_auth
    credentials: tuple[bytes, bytes] | None = None
    name: bytes | None = None
    while i < len(argv):  # HELLO-3: each option is checked and applied in turn, left to right
        opt = c_string(argv[i]).lower()
        more = len(argv) - 1 - i
        if opt == b"auth" and more >= 2:
            credentials = (argv[i + 1], argv[i + 2])
            if not deferred and not _authenticate(call, *credentials):  # HELLO-4
                raise CommandError(WRONGPASS)
            i += 3
        elif opt == b"setname" and more >= 1:
            name = argv[i + 1]
            if deferred:
                if not valid_client_name(name):  # HELLO-DIALECT-2: checked here, set at the end
                    raise CommandError(BAD_CLIENT_NAME)
            else:
                set_client_name(c, name)  # HELLO-5: kept even if a later option fails
            i += 2
        else:  # HELLO-3
            raise CommandError(hello_bad_option(argv[i]))
    if deferred and credentials is not None and not _authenticate(call, *credentials):  # HELLO-DIALECT-2
        raise CommandError(WRONGPASS)
    if c.id in call.server.unauthenticated:  # HELLO-8
        raise CommandError(hello_noauth(dialect.hello_auth_form))
    if deferred and name is not None:
        set_client_name(c, name)  # HELLO-DIALECT-2
    if version:  # HELLO-6: the reply is already in the new protocol
        c.proto = version
    modules: tuple[Reply, ...] = ()
    if dialect.lua_module:  # HELLO-DIALECT-1: Valkey lists its Lua scripting engine as a module
        modules = (Map(((Bulk(b"name"), Bulk(b"lua")), (Bulk(b"ver"), Int(1)), (Bulk(b"path"), Bulk(b"lua")),
                        (Bulk(b"args"), Array(())))),)
    return Map((  # HELLO-7; HELLO-DIALECT-1: the server's own name
        (Bulk(b"server"), Bulk(dialect.server_name.encode())),
        (Bulk(b"version"), Bulk(dialect.version.encode())),
        (Bulk(b"proto"), Int(c.proto)),
        (Bulk(b"id"), Int(c.id)),
        (Bulk(b"mode"), Bulk(b"standalone")),
        (Bulk(b"role"), Bulk(b"master")),
        (Bulk(b"modules"), Array(modules)),
    ))


@command("auth")
def auth(call: Call) -> Reply:
    argv = call.argv
    if len(argv) > 3:  # AUTH-1
        raise CommandError(table.SYNTAX)
    if len(argv) == 2 and not call.server.password_required():  # AUTH-2: the default user has no password
        raise CommandError(AUTH_WITHOUT_PASSWORD)
    username, password = (b"default", argv[1]) if len(argv) == 2 else (argv[1], argv[2])
    if not _authenticate(call, username, password):  # AUTH-3
        raise CommandError(WRONGPASS)
    return OK  # AUTH-3


@command("reset")
def reset(call: Call) -> Reply:
    """CONN-4: back to a new connection's state, keeping the client ID."""
    c = call.client
    c.db = 0  # RESET-1
    c.proto = 2
    discard_transaction(c)
    c.name = None
    if call.server.dialect.reset_clears_no_evict:  # CLIENT-NOEVICT-1: 7.0 keeps it across RESET
        c.no_evict = False
    c.no_touch = False
    # RESET-3: back to the default user, who must authenticate if it has a password
    call.server.set_authenticated(c.id, not call.server.password_required())
    return Simple("RESET")  # RESET-2: rendered in RESP2, the protocol just restored


@command("quit")
def quit_(call: Call) -> Reply:
    call.client.closed = True  # QUIT-1: the dispatcher closes the connection after the reply
    return OK


# -- CLIENT --------------------------------------------------------------------------
@command("client|id")
def client_id(call: Call) -> Reply:
    return Int(call.client.id)  # CLIENT-1


@command("client|getname")
def client_getname(call: Call) -> Reply:
    name = call.client.name
    return NULL_BULK if name is None else Bulk(name)  # CLIENT-2


@command("client|setname")
def client_setname(call: Call) -> Reply:
    set_client_name(call.client, call.argv[2])
    return OK


def client_flags(c: Client) -> str:
    """The ``flags=`` letters of CLIENT LIST, in Redis's order (CLIENT-6)."""
    letters = ""
    if c.in_multi:
        letters += "x"
    if c.blocked is not None:
        letters += "b"
    if c.tracking is not None:  # TRACKING-11: t, R (broken redirect), B (BCAST)
        letters += "t" + ("R" if c.tracking.broken else "") + ("B" if c.tracking.bcast else "")
    if c.dirty_cas:
        letters += "d"
    if c.no_evict:  # CLIENT-NOEVICT-1
        letters += "e"
    if c.no_touch:  # CLIENT-NOTOUCH-1
        letters += "T"
    return letters or "N"


def client_info_line(c: Client, dialect: Dialect | None = None) -> str:
    """One CLIENT LIST line. Figures about the connection itself are placeholders (ENV-CLIENT-LIST).

    A ``dialect`` with its own field names formats the line its way (CLIENT-DIALECT-1):
    6.2's ``cmd=`` names the container only, Valkey's ``multi=`` stays 0 once MULTI was used.
    """
    name = (c.name or b"").decode("latin-1")
    multi = len(c.multi_queue) if c.in_multi else -1
    if dialect is not None and dialect.client_list_fields:
        fields = dialect.client_list_fields
        subcommand_names = dialect.subcommand_table
        if dialect.client_multi_kept and c.multi_used and not c.in_multi:
            multi = 0
        known = {"id": str(c.id), "addr": "127.0.0.1:0", "laddr": "127.0.0.1:0", "name": name,
                 "flags": client_flags(c), "capa": "", "db": str(c.db), "multi": str(multi),
                 "watch": str(len(c.watched)), "events": "r", "user": "default", "redir": _redir(c),
                 "resp": str(c.proto), "lib-name": (c.lib_name or b"").decode("latin-1"),
                 "lib-ver": (c.lib_ver or b"").decode("latin-1"),  # CLIENT-SETINFO-1
                 "cmd": c.last_cmd if subcommand_names else c.last_cmd.split("|")[0]}
        return " ".join(f"{f}={known.get(f, '0')}" for f in fields)
    return (f"id={c.id} addr=127.0.0.1:0 laddr=127.0.0.1:0 fd=0 name={name} age=0 idle=0 "
            f"flags={client_flags(c)} db={c.db} sub=0 psub=0 ssub=0 multi={multi} qbuf=0 qbuf-free=0 "
            f"argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r "
            f"cmd={c.last_cmd} user=default redir={_redir(c)} resp={c.proto}")


def _redir(c: Client) -> str:
    """``redir=``: CLIENT TRACKING's redirect client, -1 while tracking is off (TRACKING-11)."""
    return str(c.tracking.redirect) if c.tracking is not None else "-1"


def _text(s: str) -> Verbatim:
    # addReplyVerbatim: RESP3 verbatim "txt", a bulk string in RESP2
    return Verbatim("txt", s.encode("latin-1"))


@command("client|info")
def client_info(call: Call) -> Reply:
    return _text(client_info_line(call.client, call.server.dialect) + "\n")  # CLIENT-5


_CLIENT_TYPES = {b"normal", b"slave", b"replica", b"pubsub", b"master"}


@command("client|list")
def client_list(call: Call) -> Reply:
    argv = call.argv
    clients = list(call.server.clients.values())  # CLIENT-7: in connection order
    if len(argv) == 4 and c_string(argv[2]).lower() == b"type":
        kind = c_string(argv[3]).lower()
        if kind not in _CLIENT_TYPES:  # CLIENT-8
            raise CommandError(unknown_client_type(argv[3]))
        # CLIENT-8: every modelled connection is a normal client
        chosen = clients if kind == b"normal" else []
    elif len(argv) > 3 and c_string(argv[2]).lower() == b"id":
        chosen = []
        for arg in argv[3:]:  # CLIENT-9: in argument order, unknown IDs skipped
            cid = parse_ll(arg)
            if cid is None:
                raise CommandError(INVALID_CLIENT_ID)
            found = call.server.clients.get(cid)
            if found is not None:
                chosen.append(found)
    elif len(argv) != 2:  # CLIENT-10
        raise CommandError(table.SYNTAX)
    else:
        chosen = clients
    return _text("".join(client_info_line(c, call.server.dialect) + "\n" for c in chosen))


# -- INFO ----------------------------------------------------------------------------
InfoLayout = tuple[tuple[str, ...], dict[str, str], dict[str, list[str]]]
_INFO_LAYOUTS: dict[str, InfoLayout] = {}


def info_layout(server: Server) -> InfoLayout:
    """Section names in order, their titles, and each title's fields, for the dialect (INFO-DIALECT-1)."""
    text = server.dialect.info_layout
    if text is None:
        return INFO_ALL_SECTIONS, INFO_SECTION_TITLES, INFO_FIELDS
    layout = _INFO_LAYOUTS.get(text)
    if layout is None:
        titles: dict[str, str] = {}
        fields: dict[str, list[str]] = {}
        for line in text.strip().splitlines():
            if line.startswith("# "):
                title = line[2:]
                titles[title.lower()] = title
                fields[title] = []
            else:
                fields[title].extend(line.split())
        layout = _INFO_LAYOUTS[text] = (tuple(titles), titles, fields)
    return layout


def info_sections(argv: list[bytes], all_sections: tuple[str, ...] = INFO_ALL_SECTIONS) -> list[str]:
    """``genInfoSectionDict``: the sections INFO prints, in Redis's fixed order (INFO-1)."""
    wanted: set[str] = set()
    if len(argv) == 1:
        wanted.update(INFO_DEFAULT_SECTIONS)
    for arg in argv[1:]:
        name = c_string(arg).decode("latin-1").lower()
        if name == "default":
            wanted.update(INFO_DEFAULT_SECTIONS)
        elif name in ("all", "everything"):
            wanted.update(all_sections)
        else:
            wanted.add(name)
    return [s for s in all_sections if s in wanted]


def _info_values(server: Server) -> dict[str, str]:
    """The fields whose value the model knows; every other field prints 0."""
    from xspec.models.replication import child_values
    return {
        **child_values(server),  # FORK-1, FORK-2
        "redis_version": server.dialect.version,
        "redis_mode": "standalone",
        "connected_clients": str(len(server.clients)),
        "blocked_clients": str(len(server.blocked_clients())),
        "maxmemory_policy": "noeviction",
        "role": "master",
        "connected_slaves": "0",
        "cluster_enabled": "0",
        **stats_values(server),  # STATS-1, STATS-4
        **server.dialect.info_values,  # INFO-DIALECT-1
    }


def info_text(server: Server, sections: list[str]) -> str:
    values = _info_values(server)
    _, titles, fields = info_layout(server)
    parts = []
    for section in sections:
        lines = [f"# {titles[section]}"]
        if section == "replication" and server.node is not None:  # REPL-15: a node of a deployment
            from xspec.models.replication import info_replication
            parts.append(info_replication(server))
            continue
        if section == "keyspace":  # INFO-3
            for dbid in range(NUM_DATABASES):
                if server.dbs[dbid]:
                    lines.append(f"db{dbid}:keys={len(server.dbs[dbid])},expires={len(getattr(server.dbs[dbid], 'expires', ()))},avg_ttl=0")
        elif section == "commandstats":  # STATS-2
            lines.extend(commandstats_lines(server))
        elif section == "errorstats":  # STATS-1
            lines.extend(errorstats_lines(server))
        else:
            lines.extend(f"{f}:{values.get(f, '0')}" for f in fields.get(titles[section], []))
        parts.append("".join(line + "\r\n" for line in lines))
    return "\r\n".join(parts)  # INFO-2: sections are separated by an empty line


@command("info")
def info(call: Call) -> Reply:
    if len(call.argv) > 2 and not call.server.dialect.info_multiple_sections:  # INFO-DIALECT-2
        raise CommandError(table.SYNTAX)
    sections = info_sections(call.argv, info_layout(call.server)[0])
    if "errorstats" in sections:
        note_iterator_end(call)  # XADD-14: the walk over the error-count tree ends off it
    return _text(info_text(call.server, sections))


# -- CONFIG --------------------------------------------------------------------------
# The parameters the model can change with CONFIG SET.
_SETTABLE: tuple[str, ...] = ("stream-node-max-entries", "stream-node-max-bytes", "requirepass")
_RANGE_ERROR = CONFIG_RANGE.format(0, I64_MAX)


def config_value(server: Server, name: str) -> str:
    value = server.config.get(name, server.dialect.config_known().get(name, ""))
    return notify.shown(value) if name == notify.SETTING else value  # NOTIFY-2


@command("config|get")
def config_get(call: Call) -> Reply:
    matches: dict[str, tuple[str, str]] = {}  # lowercased name -> (name as replied, value)
    for arg in call.argv[2:]:
        text = c_string(arg).decode("latin-1")
        # CONFIG-1: a plain name is looked up as given; CONFIG-DIALECT-2: 6.2 matches it as a pattern
        if call.server.dialect.config_get_plain_names and not any(ch in text for ch in "[*?"):
            if text.lower() in call.server.dialect.config_known() and text.lower() not in matches:
                matches[text.lower()] = (text, config_value(call.server, text.lower()))
            continue
        # CONFIG-2: a pattern matches names case-insensitively; CONFIG-DIALECT-3: the dialect's names
        for name in call.server.dialect.config_listed():
            if name not in matches and pattern_matches(c_string(arg), name.encode(), nocase=True):
                matches[name] = (name, config_value(call.server, name))
    # CONFIG-3: the pairs come in hash-table order, which the model does not
    # reproduce (ENV-CONFIG); they are given sorted by name.
    return Map(tuple((Bulk(n.encode("latin-1")), Bulk(v.encode("latin-1")))
                     for n, v in sorted(matches.values())))


def _parse_integer(value: bytes) -> int:
    v = parse_ll(value)
    if v is None:
        raise ValueError(CONFIG_NOT_INTEGER)
    if v < 0:
        raise ValueError(_RANGE_ERROR)
    return v


def _parse_memory(value: bytes) -> int:
    """``memtoull`` then the 0..LONG_MAX bounds, with C's unsigned wrap-around."""
    text = c_string(value)
    if text[:1] == b"-":
        raise ValueError(CONFIG_NOT_MEMORY)
    digits = len(text) - len(text.lstrip(b"0123456789"))
    unit = text[digits:].lower()
    if unit not in MEMORY_UNITS:
        raise ValueError(CONFIG_NOT_MEMORY)
    parsed = strtoull(text[:digits])
    number = U64_MAX if parsed is None else parsed[0]
    result = (number * MEMORY_UNITS[unit]) & U64_MAX
    if result > I64_MAX:
        raise ValueError(_RANGE_ERROR)
    return result


def _parse_string(value: bytes) -> str:
    return value.decode("latin-1")


_PARSERS: dict[str, Callable[[bytes], int | str]] = {
    "stream-node-max-entries": _parse_integer, "stream-node-max-bytes": _parse_memory, "requirepass": _parse_string}


def _parse_yes_no(value: bytes) -> str:
    text = c_string(value).decode("latin-1").lower()
    if text not in ("yes", "no"):
        raise ValueError("argument must be 'yes' or 'no'")
    return text


# Replication settings (spec/rules/replication.md, REPL-10, REPL-11, REPL-13); the model reads them
# from the server's configuration when it needs them.
_SETTABLE = (*_SETTABLE, notify.SETTING, "min-replicas-to-write", "min-replicas-max-lag", "replica-read-only",
             "repl-ping-replica-period", "repl-backlog-size", "replica-priority")
_PARSERS.update({"min-replicas-to-write": _parse_integer, "min-replicas-max-lag": _parse_integer,
                 "replica-read-only": _parse_yes_no, "repl-ping-replica-period": _parse_integer,
                 "repl-backlog-size": _parse_memory, "replica-priority": _parse_integer})


def _parse_between(low: int, high: int) -> Callable[[bytes], int]:
    """An integer setting within Redis's bounds (``createIntConfig``)."""
    def parse(value: bytes) -> int:
        v = parse_ll(value)
        if v is None:
            raise ValueError(CONFIG_NOT_INTEGER)
        if not low <= v <= high:
            raise ValueError(CONFIG_RANGE.format(low, high))
        return v
    return parse


# CONFIG-DIALECT-3: Redis's testing knobs, settable by name. The model keeps them for CONFIG GET only:
# how long a child takes is a step the checker places (FORK-2), whatever delay slows it down.
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_KNOBS: dict[str, Callable[[bytes], int | str]] = {
    "rdb-key-save-delay": _parse_between(_INT_MIN, _INT_MAX), "key-load-delay": _parse_between(_INT_MIN, _INT_MAX),
    "watchdog-period": _parse_between(0, _INT_MAX),
    "loading-process-events-interval-bytes": _parse_between(1024, _INT_MAX), "use-exit-on-panic": _parse_yes_no}
_SETTABLE = (*_SETTABLE, *_KNOBS)
_PARSERS.update(_KNOBS)


@command("config|set")
def config_set(call: Call) -> Reply:
    argv = call.argv
    if len(argv) % 2:  # CONFIG-4
        raise CommandError(table.SYNTAX)
    names = [c_string(a).decode("latin-1") for a in argv[2::2]]
    values = argv[3::2]
    seen: set[str] = set()
    legacy = not call.server.dialect.subcommand_table
    for n in names:  # CONFIG-5: the first unknown or repeated name is the error
        if n.lower() not in call.server.dialect.config_known():  # CONFIG-DIALECT-3
            if legacy:  # CONFIG-DIALECT-1
                raise CommandError(config_unsupported_parameter(n.encode("latin-1")))
            raise CommandError(config_unknown_parameter(n.encode("latin-1")))  # latin-1 gives back the bytes
        if n.lower() in seen:  # CONFIG-6
            raise CommandError(config_set_failed(n.encode("latin-1"), CONFIG_DUPLICATE))
        seen.add(n.lower())
    for n in names:
        if n.lower() not in _SETTABLE:
            raise CommandError(f"ERR xspec model: CONFIG SET {n} is not modelled")
    parsed: list[tuple[str, int | str]] = []
    for n, v in zip(names, values, strict=True):  # CONFIG-7: all or nothing
        if n.lower() == notify.SETTING:
            events = notify.parse(v, call.server.dialect)  # NOTIFY-2
            if events is None:
                if legacy:  # CONFIG-DIALECT-1: 6.2 gives no reason
                    raise CommandError(f"ERR Invalid argument '{error_text(v)}' for CONFIG SET '{error_text(argv[2])}'")
                raise CommandError(config_set_failed(notify.SETTING.encode(), notify.INVALID_CLASS))
            parsed.append((notify.SETTING, events))
            continue
        if _PARSERS[n.lower()] is _parse_memory:
            # XADD-14: memtoull sets errno before its strtoull; 0 and ERANGE word XADD alike.
            note_strtoull(call.server, overflow=False)
        try:
            parsed.append((n.lower(), _PARSERS[n.lower()](v)))
        except ValueError as e:
            if legacy:  # CONFIG-DIALECT-1
                raise CommandError(config_invalid_argument(v, n.encode("latin-1"), str(e))) from None
            raise CommandError(config_set_failed(n.lower().encode("latin-1"), str(e))) from None  # CONFIG-7: lower case
    for name, number in parsed:
        # CONFIG-8: CONFIG GET shows the number in bytes; an empty requirepass removes the password (AUTH-4)
        call.server.config[name] = str(number)
    return OK


@command("config|resetstat")
def config_resetstat(call: Call) -> Reply:
    call.server.stats.reset()  # CONFIG-9, STATS-1, STATS-2: the counters start again (not the dirty counter)
    return OK


# -- HELP ----------------------------------------------------------------------------
def _help(call: Call, lines: str) -> Reply:
    """``addReplyHelp``: a header naming the command as typed, in capitals, then the lines."""
    name = c_string(call.argv[0]).decode("latin-1").upper()
    header = f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    body = lines.strip("\n").split("\n")
    # HELP-DIALECT-1: the closing line is the dialect's
    return Array(tuple(Simple(line) for line in [header, *body[:-1], call.server.dialect.help_last_line]))


@command("client|help")
def client_help(call: Call) -> Reply:
    # CLIENT-11; CLIENT-DIALECT-2: 7.2 and 7.4 add lines (other dialects' texts are "unsupported")
    return _help(call, _CLIENT_HELP_TEXTS.get(call.server.dialect.help_texts, CLIENT_HELP))


_CLIENT_HELP_TEXTS = {"7.2": CLIENT_HELP_72, "7.4": CLIENT_HELP_74}


@command("config|help")
def config_help(call: Call) -> Reply:
    return _help(call, CONFIG_HELP)  # CONFIG-10


@command("client|*")
@command("config|*")
def legacy_subcommand_refused(call: Call) -> Reply:
    """6.2's CLIENT and CONFIG with an unknown subcommand or a wrong count (DISPATCH-DIALECT-1)."""
    from xspec.models.info import subcommand_syntax_error
    raise subcommand_syntax_error(call)
