"""The reference server's FUNCTION FLUSH and FUNCTION LIST, on a library that is always empty
(spec/rules/functions.md); 6.2 has no FUNCTION (its lookup does not find it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xspec.reference.api import ReplyError
from xspec.reference.core import Context
from xspec.spec.errors import FUNCTION_FLUSH_SYNTAX, error_text, subcommand_syntax
from xspec.spec.ids import c_string
from xspec.spec.resp import EMPTY_ARRAY, OK, Reply

__all__ = ["HANDLERS"]

HANDLERS: dict[str, Callable[[Any], Any]] = {}


def function_flush(ctx: Context) -> Reply:
    argv = ctx.argv
    if len(argv) > 3:
        raise ReplyError(subcommand_syntax(argv[1], argv[0], True))  # FUNCTION-1
    if len(argv) == 3 and c_string(argv[2]).lower() not in (b"async", b"sync"):
        raise ReplyError(FUNCTION_FLUSH_SYNTAX)
    ctx.changed()  # FUNCTION-2, STATS-4: a change even of an empty library
    if ctx.dialect.function_flush_counts_config_get:  # STATS-DIALECT-2
        ctx.core.command_stats.setdefault("config|get", [0, 0, 0, 0])[0] += 1
    return OK


def function_list(ctx: Context) -> Reply:
    seen_code = seen_name = False
    args = iter(ctx.argv[2:])
    for arg in args:  # FUNCTION-3
        word = c_string(arg).lower()
        if word == b"withcode" and not seen_code:
            seen_code = True
        elif word == b"libraryname" and not seen_name:
            if next(args, None) is None:
                raise ReplyError("ERR library name argument was not given")
            seen_name = True
        else:
            raise ReplyError(f"ERR Unknown argument {error_text(arg)}")
    return EMPTY_ARRAY  # FUNCTION-4


HANDLERS["function|flush"] = function_flush
HANDLERS["function|list"] = function_list
