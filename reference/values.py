"""What the reference server's command modules share: a handler table per module, the value of a
given type at a key, strict integer arguments, and the random draws of HRANDFIELD and ZRANDMEMBER."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from xspec.reference.api import ReplyError
from xspec.spec import commands as table
from xspec.spec.ids import I64_MAX, c_string, string2ll
from xspec.spec.resp import Bulk, Int

Handler = Callable[[Any], Any]
H = TypeVar("H", bound=Handler)
V = TypeVar("V")
T = TypeVar("T")


def handler_table() -> tuple[dict[str, Handler], Callable[[str], Callable[[H], H]]]:
    """A module's handlers by full name, and the decorator that registers one."""
    handlers: dict[str, Handler] = {}

    def handler(name: str) -> Callable[[H], H]:
        def register(fn: H) -> H:
            handlers[name] = fn
            return fn
        return register

    return handlers, handler


def value_at(db: Mapping[bytes, Any], key: bytes, kind: type[V]) -> V | None:
    """The value at ``key`` when it is a ``kind``, None when missing; WRONGTYPE for another type."""
    value = db.get(key)
    if value is None or type(value) is kind:
        return value  # type: ignore[no-any-return]
    raise ReplyError(table.WRONGTYPE)


_SMALL_INTS: Final = tuple(Int(n) for n in range(1024))
# The reply classes and slot setters in statics: building a reply with them skips the interpreted __init__
# spec/resp.py gives them (about half a short command's handler, compiled). tests/test_reference_values_fast.py
_NEW: Final = object.__new__
_INT: Final = Int
_SET_INT: Final = Int.__dict__["value"].__set__
_BULK: Final = Bulk
_SET_BULK: Final = Bulk.__dict__["value"].__set__


def int_reply(n: int) -> Int:
    """``Int(n)``, the small ones made once (a reply object costs as much as a short command's parsing)."""
    if 0 <= n < 1024:
        return _SMALL_INTS[n]
    reply: Int = _NEW(_INT)
    _SET_INT(reply, n)
    return reply


def bulk_reply(value: bytes) -> Bulk:
    """``Bulk(value)``, built without its interpreted constructor."""
    reply: Bulk = _NEW(_BULK)
    _SET_BULK(reply, value)
    return reply


def integer(arg: bytes, error: str = table.NOT_INTEGER) -> int:
    """``getLongLongFromObjectOrReply``: a strict signed 64-bit integer, else ``error``."""
    value = string2ll(arg)
    if value is None:
        raise ReplyError(error)
    return value


def is_integer(arg: bytes) -> bool:
    """Whether ``arg`` is a strict signed 64-bit integer (``string2ll`` succeeds)."""
    return string2ll(arg) is not None


def random_count(argv: Sequence[bytes], with_word: bytes) -> tuple[int, bool]:
    """A random-member command's count and whether ``with_word`` (WITHVALUES, WITHSCORES) follows it,
    checked in the server's order: the count, its lower bound, the word, a paired count's bound
    (HASH-13, ZSET-18)."""
    n = integer(argv[2])
    if n < -I64_MAX:
        raise ReplyError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    if len(argv) > 4 or (len(argv) == 4 and c_string(argv[3]).lower() != with_word):
        raise ReplyError(table.SYNTAX)
    paired = len(argv) == 4
    if paired and abs(n) > I64_MAX // 2:
        raise ReplyError("ERR value is out of range")
    return n, paired


def random_draw(items: Sequence[T], n: int) -> list[T]:
    """``n`` distinct items (all when fewer) for a positive count; ``-n`` draws, repeats allowed, for a negative one."""
    return random.sample(items, min(n, len(items))) if n > 0 else [random.choice(items) for _ in range(-n)]
