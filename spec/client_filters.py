"""Valkey's CLIENT LIST and CLIENT KILL filters, parsed (CLIENT-DIALECT-3): what each filter asks for,
checked as Valkey 9.1.2 checks it. The model and the reference server each test their own
connections against the parsed filters.
"""

from __future__ import annotations

from dataclasses import dataclass

from xspec.spec import commands as table
from xspec.spec.errors import (
    client_filter_not_integer,
    client_filter_not_positive,
    client_filter_out_of_range,
    client_filter_unknown_letters,
    no_such_user,
    unknown_client_type,
)
from xspec.spec.ids import c_string, string2ll
from xspec.spec.limits import NUM_DATABASES

CLIENT_TYPES = frozenset({b"normal", b"slave", b"replica", b"pubsub", b"master", b"primary"})
FLAG_LETTERS = frozenset("bcdeirtuxABEIMNOPRSTU")
CAPA_LETTERS = frozenset("r")
ID_NOT_POSITIVE = "ERR client-id should be greater than 0"
_TEXT_FILTERS = frozenset({"addr", "laddr", "ip", "name", "lib-name", "lib-ver"})


class FilterError(ValueError):
    """A filter Valkey refuses; the text is the error reply."""


@dataclass(frozen=True)
class ClientFilter:
    """One filter: its name (``id``, ``type``, ``flags`` ...), whether NOT- negates it, and its value:
    a frozenset of IDs, the type word, the letters, a number, or the bytes to compare."""

    name: str
    negated: bool
    value: object


def _number(option: str, value: bytes, low: int, high: int | None = None) -> int:
    n = string2ll(value)
    if n is None:
        raise FilterError(client_filter_not_integer(option))
    if high is not None and not low <= n <= high:
        raise FilterError(client_filter_out_of_range(option, low, high))
    if high is None and n < low:
        raise FilterError(client_filter_not_positive(option))
    return n


def _letters(allowed: frozenset[str], what: str, value: bytes, option: str) -> str:
    letters = c_string(value).decode("latin-1")
    if not set(letters) <= allowed:
        where = "the provided filter" if not option.startswith("NOT-") else f"the {option} filter"
        raise FilterError(client_filter_unknown_letters(what, where, value))
    return letters


def _value(name: str, value: bytes, option: str) -> object:
    if name == "type":
        kind = c_string(value).lower()
        if kind not in CLIENT_TYPES:
            raise FilterError(unknown_client_type(value))
        return kind
    if name == "user":
        if value != b"default":  # the only user
            raise FilterError(no_such_user(value))
        return value
    if name == "flags":
        return _letters(FLAG_LETTERS, "flags", value, option)
    if name == "capa":
        return _letters(CAPA_LETTERS, "capa", value, option)
    if name == "db":
        return _number(option, value, 0, NUM_DATABASES - 1)
    if name in ("maxage", "idle"):
        return _number(option.lower(), value, 1)
    return value  # _TEXT_FILTERS


def parse_filters(argv: list[bytes], skipme: bool, start: int = 2) -> tuple[list[ClientFilter], bool]:
    """``argv[start:]`` as Valkey's filters, all of which a client must pass, and SKIPME (``skipme``
    its default). Each but SKIPME may be negated with ``NOT-``; a later filter of the same option
    replaces an earlier one. Raises :class:`FilterError`."""
    filters: dict[bytes, ClientFilter] = {}
    i = start
    while i < len(argv):
        opt = c_string(argv[i]).lower()
        negated = opt.startswith(b"not-")
        name = (opt[4:] if negated else opt).decode("latin-1")
        if name == "skipme" and not negated and i + 1 < len(argv):
            word = c_string(argv[i + 1]).lower()
            if word not in (b"yes", b"no"):
                raise FilterError(table.SYNTAX)
            skipme = word == b"yes"
            i += 2
            continue
        if name == "id":
            ids: set[int] = set()
            i += 1
            while i < len(argv) and (cid := string2ll(argv[i])) is not None:
                if cid <= 0:
                    raise FilterError(ID_NOT_POSITIVE)
                ids.add(cid)
                i += 1
            if not ids:
                raise FilterError(table.SYNTAX)
            value: object = frozenset(ids)
        elif (name in _TEXT_FILTERS or name in ("type", "user", "flags", "capa", "db", "maxage", "idle")) \
                and i + 1 < len(argv):
            value = _value(name, argv[i + 1], opt.decode("latin-1").upper())
            i += 2
        else:
            raise FilterError(table.SYNTAX)
        filters[opt] = ClientFilter(name, negated, value)
    return list(filters.values()), skipme
