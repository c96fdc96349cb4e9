"""FUNCTION FLUSH and FUNCTION LIST on the always-empty function library (spec/rules/functions.md).

Scripting is outside the model: no library is ever loaded, so FLUSH only
validates its argument and propagates, and LIST only validates its options
and replies an empty array. 6.2 has no FUNCTION command (FUNCTION-DIALECT-1).
"""

from __future__ import annotations

from xspec.models.server import Call, CommandError, command
from xspec.spec.errors import FUNCTION_FLUSH_SYNTAX, error_text, subcommand_syntax
from xspec.spec.ids import c_string
from xspec.spec.resp import OK, Array, Reply

LIBRARY_NAME_MISSING = "ERR library name argument was not given"


@command("function|flush")
def function_flush(call: Call) -> Reply:
    argv = call.argv
    if len(argv) > 3:  # FUNCTION-1
        raise CommandError(subcommand_syntax(argv[1], argv[0], True))
    if len(argv) == 3 and c_string(argv[2]).lower() not in (b"sync", b"async"):  # FUNCTION-1
        raise CommandError(FUNCTION_FLUSH_SYNTAX)
    call.propagate_verbatim()  # FUNCTION-2: always a change, even of an empty library
    call.changed()  # STATS-4
    if call.server.dialect.function_flush_counts_config_get:  # STATS-DIALECT-2
        call.server.stats.command("config|get")[0] += 1
    return OK


@command("function|list")
def function_list(call: Call) -> Reply:
    argv = call.argv
    with_code = has_name = False
    i = 2
    while i < len(argv):  # FUNCTION-3: each option once, in any order
        word = c_string(argv[i]).lower()
        if not with_code and word == b"withcode":
            with_code = True
        elif not has_name and word == b"libraryname":
            if i >= len(argv) - 1:
                raise CommandError(LIBRARY_NAME_MISSING)
            has_name = True
            i += 1
        else:
            raise CommandError(f"ERR Unknown argument {error_text(argv[i])}")
        i += 1
    return Array(())  # FUNCTION-4: no library is ever loaded
