"""RESP values: the typed replies every part of xspec speaks.

A reply is a tree of the classes below. The model builds *semantic* replies
(``Map``, ``NullBulk``, ``NullArray`` ...) and :func:`for_protocol` renders them
the way Redis renders them on a RESP2 or a RESP3 connection. The same classes
carry wire replies read back from a real server, so a recorded reply and a
model reply compare with ``==``.

This module also holds the byte encoding (:func:`encode`), an incremental
parser that keeps every wire type (:class:`Parser`; hiredis folds the two RESP2
nulls together, which a conformance checker must not), and the JSON form used
by traces (:func:`to_json`, :func:`from_json`, see spec/trace-format.md "Values").
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Simple:
    """``+text``: a status reply."""

    text: str


@dataclass(frozen=True, slots=True)
class Error:
    """``-text``: the whole error line, code included (``ERR syntax error``)."""

    text: str


@dataclass(frozen=True, slots=True)
class BlobError:
    """RESP3 ``!``: a binary-safe error."""

    text: str


@dataclass(frozen=True, slots=True)
class Int:
    """``:n``. In symbolic checking ``value`` may be a time expression."""

    value: int


@dataclass(frozen=True, slots=True)
class Bulk:
    """``$n``: a binary-safe string."""

    value: bytes


@dataclass(frozen=True, slots=True)
class NullBulk:
    """The null a command means as "no string": RESP2 ``$-1``, RESP3 ``_``."""


@dataclass(frozen=True, slots=True)
class NullArray:
    """The null a command means as "no array": RESP2 ``*-1``, RESP3 ``_``."""


@dataclass(frozen=True, slots=True)
class Null:
    """RESP3 ``_`` as read off the wire."""


@dataclass(frozen=True, slots=True)
class Array:
    """``*n``."""

    items: tuple[Reply, ...]


@dataclass(frozen=True, slots=True)
class Map:
    """RESP3 ``%n``; a flat array of alternating keys and values in RESP2."""

    pairs: tuple[tuple[Reply, Reply], ...]


@dataclass(frozen=True, slots=True)
class Set:
    """RESP3 ``~n``; an array in RESP2."""

    items: tuple[Reply, ...]


@dataclass(frozen=True, slots=True)
class Push:
    """RESP3 ``>n``; an array in RESP2."""

    items: tuple[Reply, ...]


@dataclass(frozen=True, slots=True)
class Double:
    """RESP3 ``,``; a bulk string in RESP2. ``text`` is the wire text."""

    text: str


@dataclass(frozen=True, slots=True)
class Bool:
    """RESP3 ``#``; the integer 0 or 1 in RESP2."""

    value: bool


@dataclass(frozen=True, slots=True)
class BigNum:
    """RESP3 ``(``."""

    text: str


@dataclass(frozen=True, slots=True)
class Verbatim:
    """RESP3 ``=``: a three-letter format and the text; a bulk string in RESP2."""

    fmt: str
    text: bytes


@dataclass(frozen=True, slots=True)
class Attribute:
    """RESP3 ``|``: attributes annotating the reply that follows."""

    pairs: tuple[tuple[Reply, Reply], ...]
    value: Reply


def _store_in_slot(cls: type) -> None:
    """Give a one-field reply class a constructor that stores the field straight into its slot.

    A frozen dataclass's own ``__init__`` goes through ``object.__setattr__``,
    which makes building the thousands of replies a run creates a sizeable
    share of the model's time. The class stays frozen and its constructor keeps
    the field's name, so ``Bulk(b"x")`` and ``Bulk(value=b"x")`` both work.
    """
    (name,) = cls.__slots__  # type: ignore[attr-defined]
    store = cls.__dict__[name].__set__

    def __init__(self: Any, value: Any) -> None:
        store(self, value)

    __init__.__code__ = __init__.__code__.replace(co_varnames=("self", name))
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__annotations__ = {name: cls.__annotations__[name], "return": None}
    cls.__init__ = __init__  # type: ignore[misc]


for _cls in (Simple, Error, BlobError, Int, Bulk, Array, Map, Set, Push, Double, Bool, BigNum):
    _store_in_slot(_cls)

Reply = (Simple | Error | BlobError | Int | Bulk | NullBulk | NullArray | Null | Array | Map | Set
         | Push | Double | Bool | BigNum | Verbatim | Attribute)

OK = Simple("OK")
QUEUED = Simple("QUEUED")
NULL_BULK = NullBulk()
NULL_ARRAY = NullArray()
NULL = Null()
EMPTY_ARRAY = Array(())


class ProtocolError(ValueError):
    """Bytes that are not valid RESP; the message says what and where."""


# ---------------------------------------------------------------------------
# Rendering a semantic reply for a connection's protocol


def for_protocol(reply: Reply, proto: int) -> Reply:
    """Render ``reply`` as a server sends it on a RESP``proto`` connection.

    RESP2 flattens maps, turns sets and pushes into arrays, doubles and verbatim
    strings into bulk strings and booleans into 0/1; RESP3 turns both nulls into
    ``_``. Already-wire replies pass through unchanged.
    """
    if proto == 2:
        return reply if _same_in_resp2(reply) else _to_resp2(reply)
    return reply if _same_in_resp3(reply) else _to_resp3(reply)


# Most replies need no rendering at all: these checks find that out without
# building anything. They only vouch for the exact reply classes they name;
# anything else goes through the renderers below.
_RESP2_AS_IS = frozenset({Simple, Error, Int, Bulk, NullBulk, NullArray})
_RESP3_AS_IS = frozenset({Simple, Error, BlobError, Int, Bulk, Null, Double, Bool, BigNum, Verbatim, Attribute})


def _same_in_resp2(r: Reply) -> bool:
    """Whether :func:`_to_resp2` would give a reply equal to ``r``."""
    t = type(r)
    if t is Array:
        for i in r.items:  # type: ignore[union-attr]
            ti = type(i)
            if ti is Bulk:
                continue
            if ti is Array:
                # One level inline: most arrays nest once (stream entries: [id, [field, value ...]]).
                for j in i.items:  # type: ignore[union-attr]
                    tj = type(j)
                    if tj is Bulk:
                        continue
                    if tj is Array:
                        if not _same_in_resp2(j):
                            return False
                    elif tj not in _RESP2_AS_IS:
                        return False
            elif ti not in _RESP2_AS_IS:
                return False
        return True
    return t in _RESP2_AS_IS


def _same_in_resp3(r: Reply) -> bool:
    """Whether :func:`_to_resp3` would give a reply equal to ``r``."""
    t = type(r)
    if t is Array or t is Set or t is Push:
        for i in r.items:  # type: ignore[union-attr]
            ti = type(i)
            if ti is Array:
                if not _same_in_resp3(i):
                    return False
            elif ti not in _RESP3_AS_IS and not _same_in_resp3(i):
                return False
        return True
    if t is Map:
        return all(_same_in_resp3(k) and _same_in_resp3(v) for k, v in r.pairs)  # type: ignore[union-attr]
    return t in _RESP3_AS_IS


def _to_resp2(r: Reply) -> Reply:
    if isinstance(r, (Simple, Error, Int, Bulk, NullBulk, NullArray)):
        return r
    if isinstance(r, Array):
        return Array(tuple(_to_resp2(i) for i in r.items))
    if isinstance(r, Map):
        flat: list[Reply] = []
        for k, v in r.pairs:
            flat.append(_to_resp2(k))
            flat.append(_to_resp2(v))
        return Array(tuple(flat))
    if isinstance(r, (Set, Push)):
        return Array(tuple(_to_resp2(i) for i in r.items))
    if isinstance(r, Double):
        return Bulk(r.text.encode())
    if isinstance(r, Bool):
        return Int(1 if r.value else 0)
    if isinstance(r, Verbatim):
        return Bulk(r.text)
    if isinstance(r, BigNum):
        return Bulk(r.text.encode())
    if isinstance(r, BlobError):
        return Error(r.text)
    if isinstance(r, Null):
        return NULL_BULK
    if isinstance(r, Attribute):
        return _to_resp2(r.value)
    raise TypeError(f"not a reply: {r!r}")


def _to_resp3(r: Reply) -> Reply:
    if isinstance(r, (NullBulk, NullArray)):
        return NULL
    if isinstance(r, Array):
        return Array(tuple(_to_resp3(i) for i in r.items))
    if isinstance(r, Map):
        return Map(tuple((_to_resp3(k), _to_resp3(v)) for k, v in r.pairs))
    if isinstance(r, Set):
        return Set(tuple(_to_resp3(i) for i in r.items))
    if isinstance(r, Push):
        return Push(tuple(_to_resp3(i) for i in r.items))
    return r


# ---------------------------------------------------------------------------
# Encoding to bytes


def encode(reply: Reply) -> bytes:
    """The wire bytes of a (rendered) reply."""
    out: list[bytes] = []
    _encode(reply, out)
    return b"".join(out)


def _encode(r: Reply, out: list[bytes]) -> None:
    if isinstance(r, Bulk):
        out.append(b"$%d\r\n%s\r\n" % (len(r.value), r.value))
    elif isinstance(r, Int):
        out.append(b":%d\r\n" % int(r.value))
    elif isinstance(r, Array):
        out.append(b"*%d\r\n" % len(r.items))
        for i in r.items:
            _encode(i, out)
    elif isinstance(r, Simple):
        out.append(b"+" + r.text.encode() + b"\r\n")
    elif isinstance(r, Error):
        out.append(b"-" + r.text.encode() + b"\r\n")
    elif isinstance(r, NullBulk):
        out.append(b"$-1\r\n")
    elif isinstance(r, NullArray):
        out.append(b"*-1\r\n")
    elif isinstance(r, Null):
        out.append(b"_\r\n")
    elif isinstance(r, Map):
        out.append(b"%%%d\r\n" % len(r.pairs))
        for k, v in r.pairs:
            _encode(k, out)
            _encode(v, out)
    elif isinstance(r, Set):
        out.append(b"~%d\r\n" % len(r.items))
        for i in r.items:
            _encode(i, out)
    elif isinstance(r, Push):
        out.append(b">%d\r\n" % len(r.items))
        for i in r.items:
            _encode(i, out)
    elif isinstance(r, Double):
        out.append(b"," + r.text.encode() + b"\r\n")
    elif isinstance(r, Bool):
        out.append(b"#t\r\n" if r.value else b"#f\r\n")
    elif isinstance(r, BigNum):
        out.append(b"(" + r.text.encode() + b"\r\n")
    elif isinstance(r, BlobError):
        data = r.text.encode()
        out.append(b"!%d\r\n%s\r\n" % (len(data), data))
    elif isinstance(r, Verbatim):
        data = r.fmt.encode() + b":" + r.text
        out.append(b"=%d\r\n%s\r\n" % (len(data), data))
    elif isinstance(r, Attribute):
        out.append(b"|%d\r\n" % len(r.pairs))
        for k, v in r.pairs:
            _encode(k, out)
            _encode(v, out)
        _encode(r.value, out)
    else:
        raise TypeError(f"not a reply: {r!r}")


def encode_command(argv: list[bytes] | tuple[bytes, ...]) -> bytes:
    """A command as a client sends it: an array of bulk strings."""
    parts = [b"*%d\r\n" % len(argv)]
    for a in argv:
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


# ---------------------------------------------------------------------------
# Parsing bytes (replies as a client reads them)


class Parser:
    """Incremental RESP2/RESP3 reply parser that keeps every wire type.

    ``feed`` bytes, then call ``get`` until it returns ``None`` (no complete
    reply yet). Malformed input raises :class:`ProtocolError`.
    """

    _INCOMPLETE = object()

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: bytes) -> None:
        if self._pos > 65536 and self._pos * 2 > len(self._buf):
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def get(self) -> Reply | None:
        start = self._pos
        r = self._parse()
        if r is Parser._INCOMPLETE:
            self._pos = start
            return None
        return r  # type: ignore[return-value]

    def _line(self) -> bytes | object:
        end = self._buf.find(b"\r\n", self._pos)
        if end < 0:
            return Parser._INCOMPLETE
        line = bytes(self._buf[self._pos:end])
        self._pos = end + 2
        return line

    def _count(self, line: bytes) -> int:
        try:
            return int(line)
        except ValueError:
            raise ProtocolError(f"bad length {line[:40]!r}") from None

    def _blob(self, n: int) -> bytes | object:
        if len(self._buf) < self._pos + n + 2:
            return Parser._INCOMPLETE
        data = bytes(self._buf[self._pos:self._pos + n])
        if self._buf[self._pos + n:self._pos + n + 2] != b"\r\n":
            raise ProtocolError("bulk string not terminated by CRLF")
        self._pos += n + 2
        return data

    def _items(self, n: int) -> list[Any] | object:
        items = []
        for _ in range(n):
            r = self._parse()
            if r is Parser._INCOMPLETE:
                return Parser._INCOMPLETE
            items.append(r)
        return items

    def _parse(self) -> Any:
        line = self._line()
        if line is Parser._INCOMPLETE:
            return line
        assert isinstance(line, bytes)
        if not line:
            raise ProtocolError("empty line where a RESP type byte was expected")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Simple(rest.decode("utf-8", "surrogateescape"))
        if t == b"-":
            return Error(rest.decode("utf-8", "surrogateescape"))
        if t == b":":
            return Int(self._count(rest))
        if t == b"$":
            n = self._count(rest)
            if n == -1:
                return NULL_BULK
            data = self._blob(n)
            return data if data is Parser._INCOMPLETE else Bulk(data)  # type: ignore[arg-type]
        if t in (b"*", b"~", b">"):
            n = self._count(rest)
            if n == -1 and t == b"*":
                return NULL_ARRAY
            items = self._items(n)
            if items is Parser._INCOMPLETE:
                return items
            tup: tuple[Reply, ...] = tuple(items)  # type: ignore[arg-type]
            return Array(tup) if t == b"*" else Set(tup) if t == b"~" else Push(tup)
        if t in (b"%", b"|"):
            n = self._count(rest)
            items = self._items(2 * n)
            if items is Parser._INCOMPLETE:
                return items
            assert isinstance(items, list)
            pairs = tuple((items[i], items[i + 1]) for i in range(0, len(items), 2))
            if t == b"%":
                return Map(pairs)
            value = self._parse()
            if value is Parser._INCOMPLETE:
                return value
            return Attribute(pairs, value)
        if t == b"_":
            return NULL
        if t == b",":
            return Double(rest.decode())
        if t == b"#":
            if rest not in (b"t", b"f"):
                raise ProtocolError(f"bad boolean {rest!r}")
            return Bool(rest == b"t")
        if t == b"(":
            return BigNum(rest.decode())
        if t in (b"!", b"="):
            data = self._blob(self._count(rest))
            if data is Parser._INCOMPLETE:
                return data
            assert isinstance(data, bytes)
            if t == b"!":
                return BlobError(data.decode("utf-8", "surrogateescape"))
            return Verbatim(data[:3].decode(), data[4:])
        raise ProtocolError(f"unknown RESP type byte {t!r}")


# ---------------------------------------------------------------------------
# The JSON form used in traces


def arg_to_json(data: bytes) -> Any:
    """A binary-safe string as a trace writes it: text when valid UTF-8, else b64."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def arg_from_json(value: Any) -> bytes:
    """Inverse of :func:`arg_to_json`; raises ValueError on anything else."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (ValueError, TypeError) as e:
            raise ValueError(f"bad base64 {value['b64']!r}") from e
    raise ValueError(f"expected a string or {{\"b64\": ...}}, got {value!r}")


def to_json(r: Reply) -> Any:
    """The trace JSON object of a wire reply."""
    if isinstance(r, Bulk):
        return {"bulk": arg_to_json(r.value)}
    if isinstance(r, Int):
        return {"int": int(r.value)}
    if isinstance(r, Array):
        return {"array": [to_json(i) for i in r.items]}
    if isinstance(r, Simple):
        return {"simple": r.text}
    if isinstance(r, Error):
        return {"error": r.text}
    if isinstance(r, NullBulk):
        return {"null": "bulk"}
    if isinstance(r, NullArray):
        return {"null": "array"}
    if isinstance(r, Null):
        return {"null": True}
    if isinstance(r, Map):
        return {"map": [[to_json(k), to_json(v)] for k, v in r.pairs]}
    if isinstance(r, Set):
        return {"set": [to_json(i) for i in r.items]}
    if isinstance(r, Push):
        return {"push": [to_json(i) for i in r.items]}
    if isinstance(r, Double):
        return {"double": r.text}
    if isinstance(r, Bool):
        return {"bool": r.value}
    if isinstance(r, BigNum):
        return {"bignum": r.text}
    if isinstance(r, BlobError):
        return {"blob_error": r.text}
    if isinstance(r, Verbatim):
        return {"verbatim": [r.fmt, r.text.decode("utf-8", "surrogateescape")]}
    if isinstance(r, Attribute):
        return {"attribute": [[to_json(k), to_json(v)] for k, v in r.pairs], "value": to_json(r.value)}
    raise TypeError(f"not a reply: {r!r}")


def from_json(obj: Any) -> Reply:
    """Parse a trace reply object; raises ValueError naming what is wrong."""
    if type(obj) is dict and len(obj) == 1:  # the common well-formed kinds first (traces hold millions)
        (kind, v), = obj.items()
        if kind == "bulk" and type(v) is str:
            return Bulk(v.encode("utf-8"))
        if kind == "array" and type(v) is list:
            return Array(tuple([from_json(i) for i in v]))
        if kind == "int" and type(v) is int:
            return Int(v)
    if not isinstance(obj, dict) or not obj:
        raise ValueError(f"a reply must be an object with one key, got {obj!r}")
    if "attribute" in obj:
        if set(obj) != {"attribute", "value"}:
            raise ValueError(f"attribute reply needs exactly 'attribute' and 'value': {obj!r}")
        return Attribute(_pairs(obj["attribute"]), from_json(obj["value"]))
    if len(obj) != 1:
        raise ValueError(f"a reply has exactly one key, got {sorted(obj)}")
    (kind, v), = obj.items()
    if kind == "bulk":
        return Bulk(arg_from_json(v))
    if kind == "int":
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"int reply needs an integer, got {v!r}")
        return Int(v)
    if kind in ("array", "set", "push"):
        if not isinstance(v, list):
            raise ValueError(f"{kind} reply needs a list, got {v!r}")
        items = tuple(from_json(i) for i in v)
        return Array(items) if kind == "array" else Set(items) if kind == "set" else Push(items)
    if kind in ("simple", "error", "blob_error", "double", "bignum"):
        if not isinstance(v, str):
            raise ValueError(f"{kind} reply needs a string, got {v!r}")
        text_types: dict[str, type[Simple | Error | BlobError | Double | BigNum]] = {
            "simple": Simple, "error": Error, "blob_error": BlobError, "double": Double, "bignum": BigNum}
        return text_types[kind](v)
    if kind == "null":
        if v == "bulk":
            return NULL_BULK
        if v == "array":
            return NULL_ARRAY
        if v is True:
            return NULL
        raise ValueError(f"null reply is \"bulk\", \"array\" or true, got {v!r}")
    if kind == "map":
        return Map(_pairs(v))
    if kind == "bool":
        if not isinstance(v, bool):
            raise ValueError(f"bool reply needs true or false, got {v!r}")
        return Bool(v)
    if kind == "verbatim":
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v)):
            raise ValueError(f"verbatim reply needs [format, text], got {v!r}")
        return Verbatim(v[0], v[1].encode("utf-8", "surrogateescape"))
    raise ValueError(f"unknown reply type {kind!r}")


def _pairs(v: Any) -> tuple[tuple[Reply, Reply], ...]:
    if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2 for p in v):
        raise ValueError(f"expected a list of [key, value] pairs, got {v!r}")
    return tuple((from_json(k), from_json(val)) for k, val in v)


def show(r: Reply) -> str:
    """A compact human-readable rendering, for reports."""
    if isinstance(r, Bulk):
        return repr(r.value.decode("utf-8", "backslashreplace"))
    if isinstance(r, Int):
        return f"(integer) {r.value}"
    if isinstance(r, Simple):
        return r.text
    if isinstance(r, (Error, BlobError)):
        return f"(error) {r.text}"
    if isinstance(r, NullBulk):
        return "(nil bulk)"
    if isinstance(r, NullArray):
        return "(nil array)"
    if isinstance(r, Null):
        return "(null)"
    if isinstance(r, (Array, Set, Push)):
        return "[" + ", ".join(show(i) for i in r.items) + "]"
    if isinstance(r, Map):
        return "{" + ", ".join(f"{show(k)}: {show(v)}" for k, v in r.pairs) + "}"
    return repr(r)
