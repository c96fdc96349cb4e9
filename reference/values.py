"""What the reference server's command modules share: a handler table per module, the value of a
given type at a key, and strict integer arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from xspec.reference.api import ReplyError
from xspec.spec import commands as table
from xspec.spec.ids import string2ll

Handler = Callable[[Any], Any]
H = TypeVar("H", bound=Handler)
V = TypeVar("V")


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


def integer(arg: bytes, error: str = table.NOT_INTEGER) -> int:
    """``getLongLongFromObjectOrReply``: a strict signed 64-bit integer, else ``error``."""
    value = string2ll(arg)
    if value is None:
        raise ReplyError(error)
    return value


def is_integer(arg: bytes) -> bool:
    """Whether ``arg`` is a strict signed 64-bit integer (``string2ll`` succeeds)."""
    return string2ll(arg) is not None
