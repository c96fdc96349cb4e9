"""DEBUG's subcommands that are no persistence, as the reference server answers them
(spec/rules/debug.md): SLEEP, SET-ACTIVE-EXPIRE, OBJECT and HELP.

DEBUG is refused unless ``enable-debug-command`` allows it (DISPATCH-9, in the dispatcher). A
real server's DEBUG reaches into its internals, so a recorded trace that uses DEBUG stays outside
the model's scope; ``xspec serve --checked`` judges these answers.
"""

from __future__ import annotations

from xspec.models.server import Call, CommandError, command
from xspec.models.state import ListValue, SetValue, Stream, Value, ZSetValue
from xspec.spec import commands as table
from xspec.spec.ids import c_atoi, c_string
from xspec.spec.resp import OK, Array, Reply, Simple

DEBUG_HELP = ("OBJECT <key>", "    Show low level info about `key` and associated value.",
              "SET-ACTIVE-EXPIRE <0|1>", "    Setting it to 0 disables expiring keys in background.",
              "SLEEP <seconds>", "    Stop the server for <seconds>. Decimals allowed.",
              "HELP", "    Prints this help.")


def object_encoding(value: Value, ziplists: bool = False) -> str:
    """The ``encoding:`` DEBUG OBJECT shows (DEBUG-3); ``ziplists``: 6.2 names a compact sorted set so."""
    if isinstance(value, bytes):
        return "embstr"
    if isinstance(value, ListValue):
        return "quicklist"
    if isinstance(value, SetValue):
        return value.encoding
    if isinstance(value, ZSetValue):
        return "ziplist" if ziplists and value.encoding == "listpack" else value.encoding
    if isinstance(value, Stream):
        return "stream"
    return getattr(value, "encoding", "unknown")


@command("debug")
def debug(call: Call) -> Reply:
    argv = call.argv
    sub = c_string(argv[1]).lower()
    if sub == b"sleep" and len(argv) == 3:
        return OK  # DEBUG-1: the whole server stops for a while; nothing changes
    if sub == b"set-active-expire" and len(argv) == 3:
        call.server.active_expire_enabled = c_atoi(argv[2]) != 0  # DEBUG-2: atoi, as the server reads it
        return OK
    if sub == b"object" and len(argv) == 3:
        value = call.lookup(argv[2])
        if value is None:  # DEBUG-3
            raise CommandError(table.NO_SUCH_KEY)
        # DEBUG-3: the address is the host's (ENV-DEBUG-OBJECT)
        return Simple(f"Value at:0x0 refcount:1 encoding:{object_encoding(value, call.server.dialect.zset_ziplist)} serializedlength:0 lru:0 "
                      "lru_seconds_idle:0")
    if sub == b"help" and len(argv) == 2:  # DEBUG-4
        name = c_string(argv[0]).decode("latin-1").upper()
        header = f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
        return Array(tuple(Simple(line) for line in (header, *DEBUG_HELP[:-1], call.server.dialect.help_last_line)))
    from xspec.models.info import subcommand_syntax_error
    raise subcommand_syntax_error(call)  # DEBUG-4
