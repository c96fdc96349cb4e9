"""CLIENT subcommands that manage connections rather than data (spec/rules/clients.md): KILL,
NO-EVICT, NO-TOUCH (7.2+), SETINFO (7.2+), PAUSE, UNPAUSE and UNBLOCK.

What they change that a client can see is the connection's flags (CLIENT LIST ``flags=``), its
library name and version, and which connections are closed. A pause holds commands back on the
server; the model sees each command when it runs. What the model keeps of a pause is its end
(``Server.client_pause_end``): until then lazy expiry deletes nothing (EXPIRE-PAUSE-1).
"""

from __future__ import annotations

from collections.abc import Callable

from xspec.models.admin import client_flags
from xspec.models.clock import Duration
from xspec.models.replication import MAY_REPLICATE
from xspec.models.server import Call, CommandError, Server, command
from xspec.models.state import Client
from xspec.models.stats import count_unblocked
from xspec.spec import commands as table
from xspec.spec.client_filters import ClientFilter, FilterError, parse_filters
from xspec.spec.errors import (
    TIMEOUT_NEGATIVE,
    TIMEOUT_NOT_INTEGER,
    client_info_bad_characters,
    client_unrecognized_option,
    no_such_user,
    unknown_client_type,
    unknown_subcommand,
)
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import OK, Error, Int, Reply, for_protocol

CLIENT_TYPES = frozenset({b"normal", b"slave", b"replica", b"pubsub", b"master"})
KILL_ID_NOT_POSITIVE = "ERR client-id should be greater than 0"
PAUSE_MODE = "ERR CLIENT PAUSE mode must be WRITE or ALL"


def _on_off(arg: bytes) -> bool:
    word = c_string(arg).lower()
    if word not in (b"on", b"off"):
        raise CommandError(table.SYNTAX)
    return word == b"on"


def _subcommand_syntax(call: Call) -> CommandError:
    from xspec.models.info import subcommand_syntax_error
    return subcommand_syntax_error(call)


@command("client|no-evict")
def client_no_evict(call: Call) -> Reply:
    call.client.no_evict = _on_off(call.argv[2])  # CLIENT-NOEVICT-1
    return OK


@command("client|no-touch")
def client_no_touch(call: Call) -> Reply:
    if not call.server.dialect.client_no_touch:  # CLIENT-NOTOUCH-1: 7.0 has no such subcommand
        raise CommandError(unknown_subcommand(call.argv[1], "client"))
    call.client.no_touch = _on_off(call.argv[2])  # CLIENT-NOTOUCH-1
    return OK


@command("client|setinfo")
def client_setinfo(call: Call) -> Reply:
    """CLIENT-SETINFO-1: LIB-NAME or LIB-VER, printable ASCII without spaces; empty clears it."""
    attr, value = c_string(call.argv[2]).lower(), call.argv[3]
    if attr not in (b"lib-name", b"lib-ver"):
        raise CommandError(client_unrecognized_option(call.argv[2]))
    if not all(0x21 <= b <= 0x7E for b in c_string(value)):
        raise CommandError(client_info_bad_characters(attr.decode()))
    if attr == b"lib-name":
        call.client.lib_name = value or None
    else:
        call.client.lib_ver = value or None
    return OK


@command("client|pause")
def client_pause(call: Call) -> Reply:
    argv = call.argv
    timeout = parse_ll(argv[2])
    if timeout is None:  # CLIENT-PAUSE-1
        raise CommandError(TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise CommandError(TIMEOUT_NEGATIVE)
    everything = True  # CLIENT-PAUSE-1: ALL unless WRITE is given
    if len(argv) == 4:
        mode = c_string(argv[3]).lower()
        if mode not in (b"write", b"all"):  # CLIENT-PAUSE-1
            raise CommandError(PAUSE_MODE)
        everything = mode == b"all"
    elif len(argv) > 4 and call.server.dialect.client_extra_arguments_refused:  # CLIENT-DIALECT-3
        raise _subcommand_syntax(call)
    now = call.now()  # CLIENT-PAUSE-2: the pause ends at a time read now; the server holds commands until then
    if timeout > 0:  # a timeout of 0 ends at once: it leaves a pause in force as it is
        end = now + Duration(timeout)
        server = call.server
        old = server.client_pause_end
        server.client_pause_end = end if old is None else max(old, end)  # EXPIRE-PAUSE-2: the later end
        server.client_pause_all = everything or (old is not None and server.client_pause_all)
    return OK


def held_by_pause(server: Server, c: Client, spec: table.CommandSpec) -> None:
    """A command that CLIENT PAUSE holds back (every one under ALL; under WRITE those that may
    replicate, and an EXEC of one) runs only once the pause is over: the model's pause ends there
    (CLIENT-PAUSE-2, EXPIRE-PAUSE-2). The rest of a transaction that paused runs while paused."""

    def may_replicate(s: table.CommandSpec | None) -> bool:
        return s is not None and ("write" in s.flags or s.fullname in MAY_REPLICATE)

    if server.client_pause_all or may_replicate(spec) or (spec.fullname == "exec" and any(
            may_replicate(server.dialect.lookup(queued)) for queued in c.multi_queue)):
        server.client_pause_end = None
        server.client_pause_all = False


Server.pause_hold = held_by_pause


@command("client|unpause")
def client_unpause(call: Call) -> Reply:
    call.server.client_pause_end = None  # EXPIRE-PAUSE-2
    call.server.client_pause_all = False
    return OK  # CLIENT-PAUSE-2: the held commands run, each in its turn


@command("client|kill")
def client_kill(call: Call) -> Reply:
    """CLIENT-KILL-1..3: the filter form (ID, TYPE, USER, SKIPME); the address forms name what the
    model does not know (the host's addresses)."""
    argv = call.argv
    server = call.server
    if len(argv) == 3:
        raise CommandError("ERR xspec model: CLIENT KILL by address is not modelled")
    if server.dialect.client_filters_extended:  # CLIENT-DIALECT-3
        test, skipme = valkey_filter(call)
        victims = [c for c in server.clients.values() if test(c) and not (skipme and c is call.client)]
        _kill(server, call.client, victims)
        return Int(len(victims))
    if len(argv) % 2:  # CLIENT-KILL-1
        raise CommandError(table.SYNTAX)
    wanted_id: int | None = None
    kinds_match = True
    skipme = True
    for i in range(2, len(argv), 2):  # CLIENT-KILL-1: each filter checked as it comes
        opt, value = c_string(argv[i]).lower(), argv[i + 1]
        if opt == b"id":
            cid = parse_ll(value)
            positive = server.dialect.client_kill_id_positive
            if cid is None and not positive:  # CLIENT-DIALECT-4: 6.2 takes any integer
                raise CommandError(table.NOT_INTEGER)
            if cid is None or (positive and cid <= 0):
                raise CommandError(KILL_ID_NOT_POSITIVE)
            if cid != 0:  # CLIENT-DIALECT-4: 6.2's ID 0 is no filter
                wanted_id = cid
        elif opt == b"type":
            kind = c_string(value).lower()
            if kind not in CLIENT_TYPES:
                raise CommandError(unknown_client_type(value))
            kinds_match = kinds_match and kind == b"normal"  # every modelled connection is a normal one
        elif opt == b"user":
            if value != b"default":
                raise CommandError(no_such_user(value))
        elif opt in (b"addr", b"laddr"):
            raise CommandError("ERR xspec model: CLIENT KILL by address is not modelled")
        elif opt == b"skipme":
            word = c_string(value).lower()
            if word not in (b"yes", b"no"):
                raise CommandError(table.SYNTAX)
            skipme = word == b"yes"
        else:
            raise CommandError(table.SYNTAX)
    victims = [c for c in server.clients.values()
               if kinds_match and (wanted_id is None or c.id == wanted_id) and not (skipme and c is call.client)]
    _kill(server, call.client, victims)
    return Int(len(victims))  # CLIENT-KILL-2


ClientTest = Callable[[Client], bool]


def valkey_filter(call: Call) -> tuple[ClientTest, bool]:
    """CLIENT-DIALECT-3: Valkey's filters (``argv[2:]``), all of which a killed client passes, and SKIPME.
    The filters on what the model does not know (addresses, ages, idle times, capabilities) are not
    modelled."""
    try:
        filters, skipme = parse_filters(call.argv, skipme=True)
    except FilterError as e:
        raise CommandError(str(e)) from None
    tests = []
    for f in filters:
        test = _test(f)
        tests.append(_negation(test) if f.negated else test)
    return (lambda c: all(t(c) for t in tests)), skipme


def _test(f: ClientFilter) -> ClientTest:
    value = f.value
    if f.name == "id":
        return lambda c: c.id in value  # type: ignore[operator]
    if f.name == "type":
        return lambda c: value == b"normal"  # every modelled connection is a normal one
    if f.name == "user":
        return lambda c: True
    if f.name == "flags":
        return lambda c: set(value) <= set(client_flags(c))  # type: ignore[call-overload]
    if f.name == "db":
        return lambda c: c.db == value
    if f.name == "name":
        return lambda c: c.name == value
    if f.name == "lib-name":
        return lambda c: c.lib_name == value
    if f.name == "lib-ver":
        return lambda c: c.lib_ver == value
    raise CommandError(f"ERR xspec model: CLIENT KILL {f.name.upper()} is not modelled")


def _negation(test: ClientTest) -> ClientTest:
    return lambda c: not test(c)


def _kill(server: Server, me: Client, victims: list[Client]) -> None:
    """CLIENT-KILL-3: the others are closed at once; the caller after its reply."""
    for c in victims:
        if c is me:
            c.closed = True
        else:
            server.close(c.id)


UNBLOCK_REASON = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
UNBLOCKED_BY_CLIENT = "UNBLOCKED client unblocked via CLIENT UNBLOCK"


@command("client|unblock")
def client_unblock(call: Call) -> Reply:
    argv = call.argv
    error = False
    if len(argv) == 4:  # CLIENT-UNBLOCK-1: the reason before the ID
        reason = c_string(argv[3]).lower()
        if reason not in (b"timeout", b"error"):
            raise CommandError(UNBLOCK_REASON)
        error = reason == b"error"
    elif len(argv) > 4 and call.server.dialect.client_extra_arguments_refused:  # CLIENT-DIALECT-3
        raise _subcommand_syntax(call)
    cid = parse_ll(argv[2])
    if cid is None:  # CLIENT-UNBLOCK-1
        raise CommandError(table.NOT_INTEGER)
    server = call.server
    target = server.clients.get(cid)
    if target is None or target.blocked is None:  # CLIENT-UNBLOCK-2
        return Int(0)
    if call.in_exec:
        raise CommandError("ERR xspec model: CLIENT UNBLOCK inside MULTI is not modelled")
    blocked = target.blocked
    reply: Reply = Error(UNBLOCKED_BY_CLIENT) if error else blocked.timeout_reply  # CLIENT-UNBLOCK-2
    spec = server.dialect.lookup(blocked.argv)
    server._unblock(target)
    if spec is not None:
        count_unblocked(server, spec.fullname, UNBLOCKED_BY_CLIENT if error else None)  # STATS-9
    call.served = [*(call.served or ()), (target.id, for_protocol(reply, target.proto))]
    return Int(1)
