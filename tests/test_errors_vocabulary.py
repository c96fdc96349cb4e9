"""The error texts of spec/errors.py that embed an argument, word for word as redis-server 7.0.15 sends them.

The model and the reference both build these errors with the functions tested here, so each
function is checked once against the real server, with the arguments that test the quoting: a
byte that is not UTF-8, a UTF-8 letter, CR and LF (which an error shows as spaces), a NUL (where
``%s`` stops) and an argument longer than the 128 bytes a ``%.128s`` shows.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import RealRedis
from xspec.spec import commands as table
from xspec.spec.errors import (
    CONFIG_DUPLICATE,
    CONFIG_IMMUTABLE,
    CONFIG_NOT_INTEGER,
    UNBALANCED,
    config_set_failed,
    config_unknown_parameter,
    error_text,
    exec_aborted,
    hello_bad_option,
    no_such_group_for_key,
    no_such_key_or_group,
    no_such_key_or_group_in_xreadgroup,
    no_such_user,
    prefix_overlaps_provided,
    subcommand_syntax,
    unbalanced_streams,
    unknown_client_type,
    unknown_subcommand,
    xclaim_unrecognized_option,
)
from xspec.spec.resp import Error

pytestmark = pytest.mark.redis

AWKWARD = [b"\xe9", b"\xc3\xa9", b"a\r\nb", b"a\0b", b"x" * 126 + b"\xc3\xa9\r\n"]
"""Arguments whose rendering in an error is not the argument itself."""

Case = tuple[list[bytes], Callable[[bytes], str]]

CASES: dict[str, Case] = {
    "HELLO-3": ([b"HELLO", b"3", b"{}"], hello_bad_option),
    "CLIENT-8": ([b"CLIENT", b"LIST", b"TYPE", b"{}"], unknown_client_type),
    "client-kill-user": ([b"CLIENT", b"KILL", b"USER", b"{}"], no_such_user),
    "CONFIG-5": ([b"CONFIG", b"SET", b"{}", b"1"], config_unknown_parameter),
    "XGROUP-5": ([b"XGROUP", b"SETID", b"s", b"{}", b"0"], lambda g: no_such_group_for_key(g, b"s")),
    "XINFO-7": ([b"XINFO", b"CONSUMERS", b"s", b"{}"], lambda g: no_such_group_for_key(g, b"s")),
    "XPENDING-6-key": ([b"XPENDING", b"{}", b"g"], lambda k: no_such_key_or_group(k, b"g")),
    "XPENDING-6-group": ([b"XPENDING", b"s", b"{}"], lambda g: no_such_key_or_group(b"s", g)),
    "XREADGROUP-2": ([b"XREADGROUP", b"GROUP", b"{}", b"c", b"STREAMS", b"s", b">"],
                     lambda g: no_such_key_or_group_in_xreadgroup(b"s", g)),
    "XCLAIM-5": ([b"XCLAIM", b"s", b"g", b"c", b"0", b"1-1", b"{}"], xclaim_unrecognized_option),
    "DISPATCH-1-command": ([b"{}", b"{}"], lambda a: table.unknown_command_error([a, a])),
    "DISPATCH-1-args": ([b"FOO", b"{}", b"{}{}{}"], lambda a: table.unknown_command_error([b"FOO", a, a * 3])),
    "DISPATCH-1-subcommand": ([b"XGROUP", b"{}"], lambda a: table.unknown_command_error([b"XGROUP", a])),
    "tracking-prefix": ([b"CLIENT", b"TRACKING", b"on", b"BCAST", b"PREFIX", b"{}", b"PREFIX", b"{}z"],
                        lambda p: prefix_overlaps_provided(p, p + b"z")),
}


def _reply(redis: RealRedis, argv: list[bytes]) -> object:
    c = redis.connection()
    try:
        c.call([b"XADD", b"s", b"1-1", b"f", b"v"])
        c.call([b"XGROUP", b"CREATE", b"s", b"g", b"$"])
        return c.call(argv)
    finally:
        c.close()


@pytest.mark.parametrize("arg", AWKWARD, ids=repr)
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_argument_is_quoted_as_the_real_server_quotes_it(redis: RealRedis, case: str, arg: bytes) -> None:
    template, text = CASES[case]
    argv = [a.replace(b"{}", arg) for a in template]
    assert _reply(redis, argv) == Error(text(arg))


def test_fixed_arguments(redis: RealRedis) -> None:
    """The texts whose arguments are names the server knows (XGROUP-6, CONFIG-6, CONFIG-7, EXEC-6, XREAD-4)."""
    expected = {
        (b"XGROUP", b"SETID", b"s", b"g", b"0", b"x"): subcommand_syntax(b"SETID", b"XGROUP", subcommand_table=True),
        (b"CONFIG", b"SET", b"stream-node-max-entries", b"1", b"STREAM-NODE-MAX-ENTRIES", b"2"):
            config_set_failed(b"STREAM-NODE-MAX-ENTRIES", CONFIG_DUPLICATE),
        (b"CONFIG", b"SET", b"Stream-Node-Max-Entries", b"x"):
            config_set_failed(b"stream-node-max-entries", CONFIG_NOT_INTEGER),
        (b"CONFIG", b"SET", b"Daemonize", b"yes"): config_set_failed(b"Daemonize", CONFIG_IMMUTABLE),
        (b"EXEC", b"x"): exec_aborted(table.arity_error(table.COMMANDS["exec"])),
        (b"XREAD", b"STREAMS", b"s", b"t", b"0"): unbalanced_streams(grouped=False, names_command=False),
        (b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b"t", b">"):
            unbalanced_streams(grouped=True, names_command=False),
        (b"CLIENT", b"NOSUCH\r\n"): unknown_subcommand(b"NOSUCH\r\n", "client"),
    }
    for argv, text in expected.items():
        assert _reply(redis, list(argv)) == Error(text), argv


def test_named_command_texts_differ_from_70_only_by_their_switch() -> None:
    """XREAD-DIALECT-1: the dialects that name the command keep 7.0's words otherwise."""
    assert unbalanced_streams(grouped=False, names_command=False) == UNBALANCED
    assert unbalanced_streams(grouped=True, names_command=False) == UNBALANCED
    assert unbalanced_streams(grouped=False, names_command=True) == UNBALANCED.replace("XREAD", "'xread'")
    assert unbalanced_streams(grouped=True, names_command=True) == (
        UNBALANCED.replace("XREAD", "'xreadgroup'").replace("'$'", "'>'"))
    assert subcommand_syntax(b"x", b"xgroup", subcommand_table=False).startswith("ERR Unknown subcommand")


def test_error_text_cuts_and_flattens() -> None:
    assert error_text(b"a\0b\r\n") == "a"
    assert error_text(b"a\r\nb") == "a  b"
    assert error_text(b"\xe9") == "\udce9"
    assert error_text(b"abc", 2) == "ab"
