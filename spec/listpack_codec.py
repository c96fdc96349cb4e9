"""Listpacks, ziplists and intsets as bytes: the compact containers inside RDB values.

Encoders write exactly what Redis's ``lpAppend``, ``ziplistPush`` and
``intsetAdd`` build: every element in its smallest encoding, strings that read
as canonical 64-bit integers stored as integers. So a container made of the
same elements, in the same order, is byte for byte the one Redis holds, and
an encoder applied to a decoder's output gives back its input (for containers
Redis wrote). Decoders return integers as ``int`` and strings as ``bytes``;
they raise :class:`CorruptContainer` on malformed input.
"""

from __future__ import annotations

import struct

from xspec.spec.listpack import as_listpack_int

Element = bytes | int

_LP_HEADER = struct.Struct("<IH")
_LP_EOF = 0xFF
_ZL_HEADER = struct.Struct("<IIH")
_INTSET_HEADER = struct.Struct("<II")
_U16_UNKNOWN = 0xFFFF  # a listpack or ziplist count this high means "count the elements"


class CorruptContainer(ValueError):
    """The bytes are not a well-formed listpack, ziplist or intset."""


# -- listpacks ---------------------------------------------------------------------------


def _lp_backlen(n: int) -> bytes:
    """lpEncodeBacklen: the size ``n`` of an element's encoding, written to be read backwards."""
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128, (n & 127) | 128))
    return bytes((n >> 28, ((n >> 21) & 127) | 128, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128,
                  (n & 127) | 128))


def _lp_int(v: int) -> bytes:
    if 0 <= v <= 127:
        return bytes((v,))
    if -4096 <= v <= 4095:
        u = v & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF))
    if -32768 <= v <= 32767:
        return b"\xf1" + (v & 0xFFFF).to_bytes(2, "little")
    if -8388608 <= v <= 8388607:
        return b"\xf2" + (v & 0xFFFFFF).to_bytes(3, "little")
    if -2147483648 <= v <= 2147483647:
        return b"\xf3" + (v & 0xFFFFFFFF).to_bytes(4, "little")
    return b"\xf4" + (v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")


# The elements of the 13-bit integers (-4096..4095, index value + 4096), the most common ones in
# streams (flags, ID deltas, counts): made once.
_SMALL_INT_ELEMENTS: tuple[bytes, ...] = tuple(
    _lp_int(v) + _lp_backlen(len(_lp_int(v))) for v in range(-4096, 4096))


def lp_element(e: Element) -> bytes:
    """One element: its encoding and its backlen."""
    if isinstance(e, int):
        if -4096 <= e <= 4095:
            return _SMALL_INT_ELEMENTS[e + 4096]
        enc = _lp_int(e)
    elif e and not (48 <= e[0] <= 57 or e[0] == 45) and len(e) < 64:
        return bytes((0x80 | len(e),)) + e + bytes((len(e) + 1,))  # a 6-bit length string: not an integer
    else:
        as_int = as_listpack_int(e)
        if as_int is not None:
            enc = _lp_int(as_int)
        else:
            n = len(e)
            if n < 64:
                enc = bytes((0x80 | n,)) + e
            elif n < 4096:
                enc = bytes((0xE0 | (n >> 8), n & 0xFF)) + e
            else:
                enc = b"\xf0" + n.to_bytes(4, "little") + e
    return enc + _lp_backlen(len(enc))


def lp_encode(elements: list[Element]) -> bytes:
    """The listpack holding ``elements``, in order."""
    body = b"".join(map(lp_element, elements))
    count = len(elements) if len(elements) < _U16_UNKNOWN else _U16_UNKNOWN
    return _LP_HEADER.pack(len(body) + 7, count) + body + b"\xff"


def lp_check_header(lp: bytes) -> None:
    """lpValidateIntegrity without deep checking: the size in the header is the size, the last byte ends it."""
    if len(lp) < 7 or _LP_HEADER.unpack_from(lp)[0] != len(lp) or lp[-1] != _LP_EOF:
        raise CorruptContainer("listpack header")


def _lp_backlen_size(n: int) -> int:
    return 1 if n <= 127 else 2 if n < 16383 else 3 if n < 2097151 else 4 if n < 268435455 else 5


def _signed(u: int, bits: int) -> int:
    return u - (1 << bits) if u >> (bits - 1) else u


def lp_decode(lp: bytes) -> list[Element]:
    """The elements of a listpack, integers as ``int``."""
    lp_check_header(lp)
    out: list[Element] = []
    p = 6
    end = len(lp) - 1
    try:
        while p < end:
            b = lp[p]
            if b < 0x80:
                value: Element = b
                size = 1
            elif b < 0xC0:
                n = b & 0x3F
                value = lp[p + 1:p + 1 + n]
                size = 1 + n
            elif b < 0xE0:
                value = _signed(((b & 0x1F) << 8) | lp[p + 1], 13)
                size = 2
            elif b < 0xF0:
                n = ((b & 0x0F) << 8) | lp[p + 1]
                value = lp[p + 2:p + 2 + n]
                size = 2 + n
            elif b == 0xF0:
                n = int.from_bytes(lp[p + 1:p + 5], "little")
                value = lp[p + 5:p + 5 + n]
                size = 5 + n
            elif 0xF1 <= b <= 0xF4:
                width = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[b]
                value = _signed(int.from_bytes(lp[p + 1:p + 1 + width], "little"), width * 8)
                size = 1 + width
            else:
                raise CorruptContainer(f"listpack encoding byte {b:#x}")
            p += size + _lp_backlen_size(size)
            if p > end:
                raise CorruptContainer("listpack element runs past the end")
            out.append(value)
    except IndexError as e:
        raise CorruptContainer("listpack element runs past the end") from e
    if p != end:
        raise CorruptContainer("listpack elements overrun the terminator")
    count = _LP_HEADER.unpack_from(lp)[1]
    if count != _U16_UNKNOWN and count != len(out):
        raise CorruptContainer("listpack count")
    return out


def as_bytes(e: Element) -> bytes:
    """An element as the string a reply shows."""
    return b"%d" % e if isinstance(e, int) else e


# -- ziplists (Redis 6.2 list nodes; older RDB types) ------------------------------------------


def _zl_string_as_int(e: bytes) -> int | None:
    # zipTryEncoding: strings of 1..31 bytes that string2ll accepts
    if not 0 < len(e) < 32:
        return None
    return as_listpack_int(e)


def _zl_encoding(e: Element) -> bytes:
    v = e if isinstance(e, int) else _zl_string_as_int(e)
    if v is not None:
        if 0 <= v <= 12:
            return bytes((0xF1 + v,))
        if -128 <= v <= 127:
            return b"\xfe" + (v & 0xFF).to_bytes(1, "little")
        if -32768 <= v <= 32767:
            return b"\xc0" + (v & 0xFFFF).to_bytes(2, "little")
        if -8388608 <= v <= 8388607:
            return b"\xf0" + (v & 0xFFFFFF).to_bytes(3, "little")
        if -2147483648 <= v <= 2147483647:
            return b"\xd0" + (v & 0xFFFFFFFF).to_bytes(4, "little")
        return b"\xe0" + (v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    assert isinstance(e, bytes)
    n = len(e)
    if n <= 0x3F:
        return bytes((n,)) + e
    if n <= 0x3FFF:
        return bytes((0x40 | (n >> 8), n & 0xFF)) + e
    return b"\x80" + n.to_bytes(4, "big") + e


def zl_encode(elements: list[Element]) -> bytes:
    """The ziplist holding ``elements``, in order (each pushed at the tail)."""
    parts: list[bytes] = []
    prev = 0
    tail = 10
    offset = 10
    for e in elements:
        prevlen = bytes((prev,)) if prev < 254 else b"\xfe" + prev.to_bytes(4, "little")
        entry = prevlen + _zl_encoding(e)
        parts.append(entry)
        tail = offset
        offset += len(entry)
        prev = len(entry)
    body = b"".join(parts)
    count = len(elements) if len(elements) < _U16_UNKNOWN else _U16_UNKNOWN
    return _ZL_HEADER.pack(len(body) + 11, tail, count) + body + b"\xff"


def zl_decode(zl: bytes) -> list[Element]:
    """The elements of a ziplist, integers as ``int``."""
    if len(zl) < 11 or _ZL_HEADER.unpack_from(zl)[0] != len(zl) or zl[-1] != 0xFF:
        raise CorruptContainer("ziplist header")
    out: list[Element] = []
    p = 10
    end = len(zl) - 1
    try:
        while p < end:
            p += 1 if zl[p] < 254 else 5
            b = zl[p]
            top = b >> 6
            if top == 0:
                n = b & 0x3F
                out.append(zl[p + 1:p + 1 + n])
                p += 1 + n
            elif top == 1:
                n = ((b & 0x3F) << 8) | zl[p + 1]
                out.append(zl[p + 2:p + 2 + n])
                p += 2 + n
            elif top == 2:
                n = int.from_bytes(zl[p + 1:p + 5], "big")
                out.append(zl[p + 5:p + 5 + n])
                p += 5 + n
            elif 0xF1 <= b <= 0xFD:
                out.append(b - 0xF1)
                p += 1
            else:
                width = {0xFE: 1, 0xC0: 2, 0xF0: 3, 0xD0: 4, 0xE0: 8}.get(b)
                if width is None:
                    raise CorruptContainer(f"ziplist encoding byte {b:#x}")
                out.append(_signed(int.from_bytes(zl[p + 1:p + 1 + width], "little"), width * 8))
                p += 1 + width
    except IndexError as e:
        raise CorruptContainer("ziplist entry runs past the end") from e
    if p != end:
        raise CorruptContainer("ziplist entries overrun the terminator")
    return out


# -- intsets -------------------------------------------------------------------------------------


def intset_encode(values: list[int]) -> bytes:
    """The intset of ``values``: sorted, in the narrowest width that holds them all."""
    ordered = sorted(set(values))
    width = 2
    if ordered and not -32768 <= ordered[0] <= ordered[-1] <= 32767:
        width = 4 if -2147483648 <= ordered[0] <= ordered[-1] <= 2147483647 else 8
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    return _INTSET_HEADER.pack(width, len(ordered)) + struct.pack(f"<{len(ordered)}{fmt}", *ordered)


def intset_decode(blob: bytes) -> list[int]:
    """The integers of an intset, in its (ascending) order."""
    if len(blob) < 8:
        raise CorruptContainer("intset header")
    width, count = _INTSET_HEADER.unpack_from(blob)
    fmt = {2: "h", 4: "i", 8: "q"}.get(width)
    if fmt is None or len(blob) != 8 + width * count:
        raise CorruptContainer("intset size")
    return list(struct.unpack_from(f"<{count}{fmt}", blob, 8))
