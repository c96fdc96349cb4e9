"""The libraries Redis gives scripts, for a Lua 5.1 that has none of them (spec/rules/scripting.md, SCRIPT-8).

lupa's Lua 5.1 has no ``cjson``, ``cmsgpack``, ``bit`` or ``struct``. These are Python versions that
follow the C libraries Redis embeds (lua-cjson 2.1, antirez's lua_cmsgpack, LuaBitOp 1.0, Roberto
Ierusalimschy's struct): the same encodings and the same error messages where the census's scripts
can meet them. Each function answers ``(True, values...)`` or ``(False, message)``; the Lua side
(:mod:`xspec.spec.lua`) raises the message as an error at the script's position.
"""

from __future__ import annotations

import math
import struct as _struct
from collections.abc import Callable
from typing import Any

_Result = tuple[Any, ...]


def install_libraries(lua: Any, fail: Callable[[str], Any]) -> Any:
    """The four libraries as a Lua table ``{cjson=…, cmsgpack=…, bit=…, struct=…, set_null=f}``;
    each library is ``{functions={name=f}, values={name=v}}``. ``fail(message)`` raises the Lua
    error a C library's ``luaL_error`` would (the message at the script's position)."""
    from lupa import lua51

    lua_type = lua51.lua_type
    null_box: list[Any] = []

    def is_null(value: Any) -> bool:
        return lua_type(value) == "userdata"

    def table(items: dict[Any, Any] | None = None) -> Any:
        t = lua.table()
        if items:
            for k, v in items.items():
                t[k] = v
        return t

    cjson = _CJson(lua_type, is_null, table, null_box)
    msgpack = _MsgPack(lua_type, table)

    def library(functions: dict[str, Callable[..., _Result]], values: dict[str, Any] | None = None) -> Any:
        return table({b"functions": table({k.encode(): guard(f, fail) for k, f in functions.items()}),
                      b"values": table({k.encode(): v for k, v in (values or {}).items()})})

    def set_null(value: Any) -> None:
        null_box.append(value)

    return table({
        b"cjson": library({"encode": cjson.encode, "decode": cjson.decode,
                           "encode_keep_buffer": lambda *a: (True,), "encode_max_depth": lambda *a: (True, 1000),
                           "decode_max_depth": lambda *a: (True, 1000),
                           "encode_number_precision": lambda *a: (True, 14)},
                          {"_NAME": b"cjson", "_VERSION": b"2.1.0"}),
        b"cmsgpack": library({"pack": msgpack.pack, "unpack": msgpack.unpack, "unpack_one": msgpack.unpack_one,
                              "unpack_limit": msgpack.unpack_limit},
                             {"_NAME": b"cmsgpack", "_VERSION": b"lua-cmsgpack 0.4.0"}),
        b"bit": library(_BIT_FUNCTIONS),
        b"struct": library({"pack": _struct_pack, "unpack": _struct_unpack, "size": _struct_size}),
        b"set_null": set_null,
    })


def guard(f: Callable[..., _Result], fail: Callable[[str], Any]) -> Callable[..., Any]:
    """The function as Lua calls it: its values, or the Lua error its message makes."""
    def call(*args: Any) -> Any:
        try:
            result = f(*args)
        except _LibError as e:
            return fail(str(e))
        except (TypeError, ValueError, OverflowError, RecursionError) as e:
            return fail(f"bad argument ({e})")
        return result[1:] if len(result) != 2 else result[1]
    return call


class _LibError(Exception):
    pass


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _type_name(lua_type: Callable[[Any], str | None], v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "boolean"
    if _is_number(v):
        return "number"
    if isinstance(v, bytes):
        return "string"
    return lua_type(v) or "userdata"


# -- cjson ------------------------------------------------------------------------------------------

_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x0C: b"\\f", 0x0A: b"\\n", 0x0D: b"\\r",
            0x09: b"\\t"}
_CHAR_ESCAPE = [(_ESCAPES.get(i) or (b"\\u%04x" % i if i < 0x20 or i == 0x7F else bytes([i]))) for i in range(256)]


class _CJson:
    def __init__(self, lua_type: Callable[[Any], str | None], is_null: Callable[[Any], bool],
                 table: Callable[..., Any], null_box: list[Any]) -> None:
        self.lua_type = lua_type
        self.is_null = is_null
        self.table = table
        self.null_box = null_box

    # encode
    def encode(self, *args: Any) -> _Result:
        if len(args) != 1:
            raise _LibError("bad argument #1 to 'encode' (expected 1 argument)")
        out: list[bytes] = []
        self._encode(args[0], out, 0)
        return (True, b"".join(out))

    def _encode(self, v: Any, out: list[bytes], depth: int) -> None:
        if isinstance(v, bytes):
            out.append(b'"' + b"".join(_CHAR_ESCAPE[c] for c in v) + b'"')
        elif isinstance(v, bool):
            out.append(b"true" if v else b"false")
        elif _is_number(v):
            out.append(self._number(float(v)))
        elif v is None:
            out.append(b"null")
        elif self.lua_type(v) == "table":
            depth += 1
            if depth > 1000:
                raise _LibError(f"Cannot serialise, excessive nesting ({depth})")
            length = self._array_length(v)
            if length > 0:
                out.append(b"[")
                for i in range(1, length + 1):
                    if i > 1:
                        out.append(b",")
                    self._encode(v[i], out, depth)
                out.append(b"]")
            else:
                out.append(b"{")
                first = True
                for k, item in v.items():
                    if not first:
                        out.append(b",")
                    first = False
                    if isinstance(k, bytes):
                        self._encode(k, out, depth)
                    elif _is_number(k):
                        out.append(b'"' + self._number(float(k)) + b'"')
                    else:
                        raise _LibError(
                            f"Cannot serialise {_type_name(self.lua_type, k)}: table key must be a number or string")
                    out.append(b":")
                    self._encode(item, out, depth)
                out.append(b"}")
        elif self.is_null(v):
            out.append(b"null")
        else:
            raise _LibError(f"Cannot serialise {_type_name(self.lua_type, v)}: type not supported")

    @staticmethod
    def _number(x: float) -> bytes:
        if math.isinf(x) or math.isnan(x):
            raise _LibError("Cannot serialise number: must not be NaN or Inf")
        return b"%.14g" % x

    @staticmethod
    def _array_length(t: Any) -> int:
        """lua-cjson's lua_array_length: the largest index if every key is a positive integer, else
        -1; excessively sparse arrays (largest index over 10 and over twice the count) are refused."""
        largest = items = 0
        for k, _ in t.items():
            if _is_number(k) and k >= 1 and float(k) == math.floor(k):
                largest = max(largest, int(k))
                items += 1
            else:
                return -1
        if largest > 10 and largest > items * 2:
            raise _LibError("Cannot serialise table: excessively sparse array")
        return largest

    # decode
    def decode(self, *args: Any) -> _Result:
        if len(args) != 1:
            raise _LibError("bad argument #1 to 'decode' (expected 1 argument)")
        text = args[0]
        if _is_number(text):
            text = (b"%.14g" % text)
        if not isinstance(text, bytes):
            raise _LibError(f"bad argument #1 to 'decode' (string expected, got {_type_name(self.lua_type, text)})")
        parser = _JsonParser(text, self)
        token = parser.next_token()
        value = parser.value(token, 0)
        token = parser.next_token()
        if token[0] != "T_END":
            parser.fail("the end", token)
        return (True, value)


class _JsonParser:
    def __init__(self, data: bytes, owner: _CJson) -> None:
        self.data = data
        self.pos = 0
        self.owner = owner

    def fail(self, expected: str, token: tuple[str, Any, int]) -> None:
        found = token[1] if token[0] == "T_ERROR" else token[0]
        raise _LibError(f"Expected {expected} but found {found} at character {token[2] + 1}")

    def next_token(self) -> tuple[str, Any, int]:
        data, n = self.data, len(self.data)
        while self.pos < n and data[self.pos] in b" \t\r\n":
            self.pos += 1
        start = self.pos
        if self.pos >= n or data[self.pos] == 0:
            return ("T_END", None, start)
        c = data[self.pos]
        simple = {ord("{"): "T_OBJ_BEGIN", ord("}"): "T_OBJ_END", ord("["): "T_ARR_BEGIN", ord("]"): "T_ARR_END",
                  ord(","): "T_COMMA", ord(":"): "T_COLON"}
        if c in simple:
            self.pos += 1
            return (simple[c], None, start)
        if c == ord('"'):
            return self._string(start)
        if c == ord("-") or ord("0") <= c <= ord("9"):
            j = self.pos + 1
            while j < n and data[j] in b"0123456789+-.eExXabcdefABCDEFinfINFnaNA":
                j += 1
            try:
                value = float(data[self.pos:j].decode())
            except ValueError:
                return ("T_ERROR", "invalid number", start)
            self.pos = j
            return ("T_NUMBER", value, start)
        words: tuple[tuple[bytes, str, bool | None], ...] = (
            (b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False), (b"null", "T_NULL", None))
        for word, kind, literal in words:
            if data.startswith(word, self.pos):
                self.pos += len(word)
                return (kind, literal, start)
        return ("T_ERROR", "invalid token", start)

    def _string(self, start: int) -> tuple[str, Any, int]:
        data, n = self.data, len(self.data)
        i = self.pos + 1
        out = bytearray()
        while True:
            if i >= n:
                return ("T_ERROR", "unexpected end of string", start)
            c = data[i]
            if c == ord('"'):
                break
            if c != ord("\\"):
                out.append(c)
                i += 1
                continue
            if i + 1 >= n:
                return ("T_ERROR", "unexpected end of string", start)
            e = data[i + 1]
            simple = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b", ord("f"): b"\f",
                      ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t"}
            if e in simple:
                out += simple[e]
                i += 2
                continue
            if e != ord("u"):
                return ("T_ERROR", "invalid escape code", start)
            try:
                code = int(data[i + 2:i + 6].decode(), 16) if len(data[i + 2:i + 6]) == 4 else -1
            except ValueError:
                code = -1
            if code < 0:
                return ("T_ERROR", "invalid unicode escape code", start)
            i += 6
            if 0xD800 <= code <= 0xDBFF:
                if data[i:i + 2] != b"\\u":
                    return ("T_ERROR", "invalid unicode escape code", start)
                try:
                    low = int(data[i + 2:i + 6].decode(), 16)
                except ValueError:
                    return ("T_ERROR", "invalid unicode escape code", start)
                if not 0xDC00 <= low <= 0xDFFF:
                    return ("T_ERROR", "invalid unicode escape code", start)
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            elif 0xDC00 <= code <= 0xDFFF:
                return ("T_ERROR", "invalid unicode escape code", start)
            out += chr(code).encode("utf-8", "surrogatepass")
        self.pos = i + 1
        return ("T_STRING", bytes(out), start)

    def value(self, token: tuple[str, Any, int], depth: int) -> Any:
        kind = token[0]
        if kind in ("T_STRING", "T_NUMBER", "T_BOOLEAN"):
            return token[1]
        if kind == "T_NULL":
            return self.owner.null_box[0] if self.owner.null_box else None
        if kind in ("T_OBJ_BEGIN", "T_ARR_BEGIN"):
            depth += 1
            if depth > 1000:
                raise _LibError(f"Found too many nested data structures ({depth}) at character {token[2] + 1}")
            t = self.owner.table()
            if kind == "T_ARR_BEGIN":
                token = self.next_token()
                if token[0] == "T_ARR_END":
                    return t
                i = 1
                while True:
                    t[i] = self.value(token, depth)
                    i += 1
                    token = self.next_token()
                    if token[0] == "T_ARR_END":
                        return t
                    if token[0] != "T_COMMA":
                        self.fail("comma or array end", token)
                    token = self.next_token()
            token = self.next_token()
            if token[0] == "T_OBJ_END":
                return t
            while True:
                if token[0] != "T_STRING":
                    self.fail("object key string", token)
                key = token[1]
                token = self.next_token()
                if token[0] != "T_COLON":
                    self.fail("colon", token)
                t[key] = self.value(self.next_token(), depth)
                token = self.next_token()
                if token[0] == "T_OBJ_END":
                    return t
                if token[0] != "T_COMMA":
                    self.fail("comma or object end", token)
                token = self.next_token()
        self.fail("value", token)
        return None


# -- cmsgpack ---------------------------------------------------------------------------------------

class _MsgPack:
    def __init__(self, lua_type: Callable[[Any], str | None], table: Callable[..., Any]) -> None:
        self.lua_type = lua_type
        self.table = table

    def pack(self, *args: Any) -> _Result:
        if not args:
            raise _LibError("MessagePack pack needs input.")
        out = bytearray()
        for a in args:
            self._encode(a, out, 0)
        return (True, bytes(out))

    def _encode(self, v: Any, out: bytearray, level: int) -> None:
        if isinstance(v, bool):
            out.append(0xC3 if v else 0xC2)
        elif _is_number(v):
            x = float(v)
            if not math.isinf(x) and not math.isnan(x) and -2.0**63 <= x < 2.0**63 and int(x) == x:
                self._int(int(x), out)
            else:
                f32: float | None = _struct.unpack(">f", _struct.pack(">f", x))[0] \
                    if abs(x) < 3.4e38 or math.isinf(x) or math.isnan(x) else None
                if f32 is not None and (f32 == x or (math.isnan(x) and math.isnan(f32))):
                    out += b"\xca" + _struct.pack(">f", x)
                else:
                    out += b"\xcb" + _struct.pack(">d", x)
        elif isinstance(v, bytes):
            n = len(v)
            if n < 32:
                out.append(0xA0 | n)
            elif n <= 0xFF:
                out += bytes([0xD9, n])
            elif n <= 0xFFFF:
                out += b"\xda" + n.to_bytes(2, "big")
            else:
                out += b"\xdb" + n.to_bytes(4, "big")
            out += v
        elif v is not None and self.lua_type(v) == "table" and level < 16:
            count = largest = 0
            is_array = True
            for k, _ in v.items():
                count += 1
                if not (_is_number(k) and k > 0 and float(k) == math.floor(k)):
                    is_array = False
                    break
                largest = max(largest, int(k))
            if is_array and largest == count:
                n = len(v)
                self._header(n, out, 0x90, 0xDC, 0xDD)
                for i in range(1, n + 1):
                    self._encode(v[i], out, level + 1)
            else:
                pairs = list(v.items())
                self._header(len(pairs), out, 0x80, 0xDE, 0xDF)
                for k, item in pairs:
                    self._encode(k, out, level + 1)
                    self._encode(item, out, level + 1)
        else:
            out.append(0xC0)

    @staticmethod
    def _header(n: int, out: bytearray, fix: int, c16: int, c32: int) -> None:
        if n <= 15:
            out.append(fix | n)
        elif n <= 0xFFFF:
            out += bytes([c16]) + n.to_bytes(2, "big")
        else:
            out += bytes([c32]) + n.to_bytes(4, "big")

    @staticmethod
    def _int(n: int, out: bytearray) -> None:
        if n >= 0:
            if n <= 127:
                out.append(n)
            elif n <= 0xFF:
                out += bytes([0xCC, n])
            elif n <= 0xFFFF:
                out += b"\xcd" + n.to_bytes(2, "big")
            elif n <= 0xFFFFFFFF:
                out += b"\xce" + n.to_bytes(4, "big")
            else:
                out += b"\xcf" + n.to_bytes(8, "big")
        elif n >= -32:
            out += n.to_bytes(1, "big", signed=True)
        elif n >= -128:
            out += b"\xd0" + n.to_bytes(1, "big", signed=True)
        elif n >= -32768:
            out += b"\xd1" + n.to_bytes(2, "big", signed=True)
        elif n >= -2147483648:
            out += b"\xd2" + n.to_bytes(4, "big", signed=True)
        else:
            out += b"\xd3" + n.to_bytes(8, "big", signed=True)

    def _decode(self, data: bytes, pos: int) -> tuple[Any, int]:
        if pos >= len(data):
            raise _LibError("Missing bytes in input.")
        c = data[pos]
        pos += 1

        def take(n: int) -> bytes:
            if pos + n > len(data):
                raise _LibError("Missing bytes in input.")
            return data[pos:pos + n]

        if c <= 0x7F:
            return c, pos
        if c >= 0xE0:
            return c - 256, pos
        if 0xA0 <= c <= 0xBF:
            n = c & 0x1F
            return take(n), pos + n
        if 0x90 <= c <= 0x9F:
            return self._array(data, pos, c & 0x0F)
        if 0x80 <= c <= 0x8F:
            return self._map(data, pos, c & 0x0F)
        if c == 0xC0:
            return None, pos
        if c in (0xC2, 0xC3):
            return c == 0xC3, pos
        sizes = {0xCC: (1, False), 0xCD: (2, False), 0xCE: (4, False), 0xCF: (8, False),
                 0xD0: (1, True), 0xD1: (2, True), 0xD2: (4, True), 0xD3: (8, True)}
        if c in sizes:
            n, signed = sizes[c]
            return int.from_bytes(take(n), "big", signed=signed), pos + n
        if c == 0xCA:
            return _struct.unpack(">f", take(4))[0], pos + 4
        if c == 0xCB:
            return _struct.unpack(">d", take(8))[0], pos + 8
        if c in (0xD9, 0xDA, 0xDB, 0xC4, 0xC5, 0xC6):
            width = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4}[c]
            n = int.from_bytes(take(width), "big")
            pos += width
            if pos + n > len(data):
                raise _LibError("Missing bytes in input.")
            return data[pos:pos + n], pos + n
        if c in (0xDC, 0xDD):
            width = 2 if c == 0xDC else 4
            return self._array(data, pos + width, int.from_bytes(take(width), "big"))
        if c in (0xDE, 0xDF):
            width = 2 if c == 0xDE else 4
            return self._map(data, pos + width, int.from_bytes(take(width), "big"))
        raise _LibError("Bad data format in input.")

    def _array(self, data: bytes, pos: int, n: int) -> tuple[Any, int]:
        t = self.table()
        for i in range(1, n + 1):
            value, pos = self._decode(data, pos)
            if value is not None:
                t[i] = value
        return t, pos

    def _map(self, data: bytes, pos: int, n: int) -> tuple[Any, int]:
        t = self.table()
        for _ in range(n):
            key, pos = self._decode(data, pos)
            value, pos = self._decode(data, pos)
            if key is not None:
                t[key] = value
        return t, pos

    def _unpack(self, data: Any, limit: int, offset: int) -> tuple[list[Any], int]:
        if not isinstance(data, bytes):
            raise _LibError("bad argument #1 to 'unpack' (string expected)")
        values: list[Any] = []
        pos = offset
        while pos < len(data) and (limit <= 0 or len(values) < limit):
            value, pos = self._decode(data, pos)
            values.append(value)
        return values, pos

    def unpack(self, data: Any = None, *_: Any) -> _Result:
        values, _pos = self._unpack(data, 0, 0)
        return (True, *values)

    def unpack_one(self, data: Any = None, offset: Any = 0, *_: Any) -> _Result:
        return self.unpack_limit(data, 1, offset)

    def unpack_limit(self, data: Any = None, limit: Any = 0, offset: Any = 0, *_: Any) -> _Result:
        values, pos = self._unpack(data, int(limit or 0), int(offset or 0))
        return (True, -1 if pos >= len(data) else pos, *values)


# -- bit (LuaBitOp) ---------------------------------------------------------------------------------

def _tobit(x: Any) -> int:
    if isinstance(x, bytes):
        x = float(x)
    if not _is_number(x):
        raise _LibError("bad argument #1 (number expected)")
    n = int(round(float(x))) if isinstance(x, float) else int(x)  # LuaBitOp rounds (2^52+2^51 trick)
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def _fold(op: Callable[[int, int], int]) -> Callable[..., _Result]:
    def f(*args: Any) -> _Result:
        if not args:
            raise _LibError("bad argument #1 (number expected, got no value)")
        acc = _tobit(args[0])
        for a in args[1:]:
            acc = _tobit(op(acc, _tobit(a)))
        return (True, acc)
    return f


def _shift(op: Callable[[int, int], int]) -> Callable[..., _Result]:
    def f(x: Any = None, n: Any = None, *_: Any) -> _Result:
        return (True, _tobit(op(_tobit(x) & 0xFFFFFFFF, _tobit(n) & 31)))
    return f


def _arshift(x: Any = None, n: Any = None, *_: Any) -> _Result:
    return (True, _tobit(_tobit(x) >> (_tobit(n) & 31)))


def _tohex(x: Any = None, n: Any = 8, *_: Any) -> _Result:
    v = _tobit(x) & 0xFFFFFFFF
    count = _tobit(8 if n is None else n)
    digits = "0123456789abcdef"
    if count < 0:
        count, digits = -count, "0123456789ABCDEF"
    count = min(count, 8)
    out = "".join(digits[(v >> (4 * i)) & 15] for i in reversed(range(count)))
    return (True, out.encode())


def _bswap(x: Any = None, *_: Any) -> _Result:
    v = _tobit(x) & 0xFFFFFFFF
    return (True, _tobit(int.from_bytes(v.to_bytes(4, "little"), "big")))


_BIT_FUNCTIONS: dict[str, Callable[..., _Result]] = {
    "tobit": lambda x=None, *_: (True, _tobit(x)),
    "bnot": lambda x=None, *_: (True, _tobit(~_tobit(x))),
    "band": _fold(lambda a, b: a & b),
    "bor": _fold(lambda a, b: a | b),
    "bxor": _fold(lambda a, b: a ^ b),
    "lshift": _shift(lambda a, n: a << n),
    "rshift": _shift(lambda a, n: a >> n),
    "arshift": _arshift,
    "rol": _shift(lambda a, n: (a << n) | (a >> (32 - n)) if n else a),
    "ror": _shift(lambda a, n: (a >> n) | (a << (32 - n)) if n else a),
    "bswap": _bswap,
    "tohex": _tohex,
}


# -- struct -----------------------------------------------------------------------------------------

def _struct_items(fmt: bytes) -> list[tuple[str, int, bool, int]]:
    """(option, size, little endian, alignment limit) for each item of a struct format."""
    items: list[tuple[str, int, bool, int]] = []
    little, align = True, 1
    i = 0
    while i < len(fmt):
        opt = chr(fmt[i])
        i += 1
        j = i
        while j < len(fmt) and chr(fmt[j]).isdigit():
            j += 1
        number = int(fmt[i:j]) if j > i else None
        if opt in " ":
            continue
        if opt == ">":
            little = False
        elif opt in "<=":
            little = True
        elif opt == "!":
            align = number if number is not None else 8
            i = j
        elif opt in "bB":
            items.append((opt, 1, little, align))
        elif opt in "hH":
            items.append((opt, 2, little, align))
        elif opt in "lLT":
            items.append((opt, 8, little, align))
        elif opt in "iI":
            size = number if number is not None else 4
            if size > 32:
                raise _LibError(f"integral size {size} is larger than limit of 32")
            items.append((opt, size, little, align))
            i = j
        elif opt == "f":
            items.append((opt, 4, little, align))
        elif opt == "d":
            items.append((opt, 8, little, align))
        elif opt == "c":
            items.append((opt, number if number is not None else 1, little, align))
            i = j
        elif opt in "sx":
            items.append((opt, 0 if opt == "s" else 1, little, align))
        else:
            raise _LibError(f"invalid format option '{opt}'")
    return items


def _padding(total: int, opt: str, size: int, align: int) -> int:
    if size <= 1 or opt == "c":
        return 0
    a = min(size, align)
    if a & (a - 1):
        raise _LibError("alignment must be power of 2")
    return (a - (total & (a - 1))) & (a - 1)


def _struct_pack(fmt: Any = None, *args: Any) -> _Result:
    if not isinstance(fmt, bytes):
        raise _LibError("bad argument #1 to 'pack' (string expected)")
    out = bytearray()
    values = list(args)
    for opt, size, little, align in _struct_items(fmt):
        out += b"\0" * _padding(len(out), opt, size, align)
        if opt == "x":
            out.append(0)
            continue
        if not values:
            raise _LibError(f"bad argument #{len(args) + 2} to 'pack' (number expected, got no value)")
        v = values.pop(0)
        if opt in "bBhHlLTiI":
            n = int(float(v)) if not isinstance(v, int) else v
            out += (n & ((1 << (8 * size)) - 1)).to_bytes(size, "little" if little else "big")
        elif opt in "fd":
            out += _struct.pack(("<" if little else ">") + opt, float(v))
        elif opt == "s":
            out += bytes(v) + b"\0"
        else:
            data = bytes(v) if isinstance(v, bytes) else b"%d" % v
            n = size or len(data)
            if len(data) < n:
                raise _LibError("bad argument to 'pack' (string too short)")
            out += data[:n]
    return (True, bytes(out))


def _struct_unpack(fmt: Any = None, data: Any = None, init: Any = 1, *_: Any) -> _Result:
    if not isinstance(fmt, bytes) or not isinstance(data, bytes):
        raise _LibError("bad argument to 'unpack' (string expected)")
    pos = int(init) - 1
    values: list[Any] = []
    for opt, size, little, align in _struct_items(fmt):
        pos += _padding(pos, opt, size, align)
        if opt == "x":
            pos += 1
            continue
        if opt == "s":
            end = data.find(b"\0", pos)
            if end < 0:
                raise _LibError("unfinished string in data")
            values.append(data[pos:end])
            pos = end + 1
            continue
        if opt == "c" and size == 0:
            if not values or not _is_number(values[-1]):
                raise _LibError("format 'c0' needs a previous size")
            size = int(values.pop())
        if pos + size > len(data):
            raise _LibError("bad argument #2 to 'unpack' (data string too short)")
        chunk = data[pos:pos + size]
        pos += size
        if opt in "bBhHlLTiI":
            values.append(int.from_bytes(chunk, "little" if little else "big", signed=opt in "bhli"))
        elif opt in "fd":
            values.append(_struct.unpack(("<" if little else ">") + opt, chunk)[0])
        else:
            values.append(chunk)
    return (True, *values, pos + 1)


def _struct_size(fmt: Any = None, *_: Any) -> _Result:
    if not isinstance(fmt, bytes):
        raise _LibError("bad argument #1 to 'size' (string expected)")
    total = 0
    for opt, size, _little, align in _struct_items(fmt):
        if opt == "s" or (opt == "c" and size == 0):
            raise _LibError("options 'c0' - 's' have undefined sizes")
        total += _padding(total, opt, size, align) + size
    return (True, total)
