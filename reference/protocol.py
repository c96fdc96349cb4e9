"""Reading requests and writing replies on the wire, as Redis 7.0.15 does.

Requests
--------
:func:`parse_requests` splits a client's buffered bytes into commands the way
``processInputBuffer`` does: a command starting with ``*`` is a multibulk
request, anything else an inline command (one line, split like
``sdssplitargs``). Malformed input raises :class:`RequestError` carrying
Redis's exact reply text (``Protocol error: invalid bulk length`` ...); the
server replies with it and closes the connection after the reply, having run
the commands before it.

The parser has two paths with one meaning. The fast path splits the whole
buffer at CRLF once (in C) and accepts a run of commands only where every
header is the canonical ``*n``/``$n`` text and every argument token has
exactly its declared length, which is where Redis reads the same commands.
Anything else (inline commands, CRLF inside an argument, odd bytes after an
argument, headers Redis would reject, a command cut in half) goes to the exact
path, :func:`parse_one`, which follows ``processMultibulkBuffer`` and
``processInlineBuffer`` byte by byte, including their quirks: the byte after a
header's ``\\r`` is not checked, neither are the two bytes after an argument,
and a NUL byte before a header's ``\\r`` (or an inline command's ``\\n``) hides
it, as C's ``strchr`` does.

hiredis was measured and not used for requests: it accepts as arguments what
Redis refuses (``+x``, ``(1``, ``=…`` verbatim strings inside a request, a
``~`` set at top level), and checking its output back against the bytes costs
more than this parser's fast path.

Replies
-------
:func:`encode_reply` renders a semantic reply of :mod:`xspec.spec.resp` for a
RESP2 or RESP3 connection straight to bytes (what ``for_protocol`` followed by
``encode`` give, without building the rendered tree). A reply a handler encoded
itself (:class:`~xspec.reference.api.Encoded`) is written as it is;
:func:`decoded` reads it back for what inspects replies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from xspec.reference.api import Encoded
from xspec.spec.errors import (
    PROTO_INVALID_BULK,
    PROTO_INVALID_MBULK,
    PROTO_TOO_BIG_BULK,
    PROTO_TOO_BIG_INLINE,
    PROTO_TOO_BIG_MBULK,
    PROTO_UNAUTHENTICATED_BULK,
    PROTO_UNAUTHENTICATED_MBULK,
    PROTO_UNBALANCED_QUOTES,
    PROTOCOL_ERROR,
    proto_expected_dollar,
)
from xspec.spec.ids import string2ll
from xspec.spec.resp import (
    Array,
    Attribute,
    BigNum,
    BlobError,
    Bool,
    Bulk,
    Double,
    Error,
    Int,
    Map,
    Null,
    NullArray,
    NullBulk,
    Parser,
    Push,
    Reply,
    Set,
    Simple,
    Verbatim,
)

# Redis's fixed limits (server.h).
INLINE_MAX_SIZE = 64 * 1024  # PROTO_INLINE_MAX_SIZE
INT_MAX = (1 << 31) - 1
UNAUTHENTICATED_MAX_ARGS = 10
UNAUTHENTICATED_MAX_BULK = 16384


class RequestError(Exception):
    """The bytes are not a request Redis accepts; ``text`` is the error reply (``ERR Protocol error: …``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.text = PROTOCOL_ERROR + reason
        self.raw = b""  # the buffer from the malformed request on


# ---------------------------------------------------------------------------
# Requests

# The canonical headers, for the fast path: the bulk header of each length and
# the count header -> its number (string2ll accepts exactly one spelling of
# each number; anything else takes the exact path).
_BULK_HEADER_OF_LEN: list[bytes] = [b"$%d" % n for n in range(100_000)]
_COUNT_HEADERS: dict[bytes, int] = {b"*%d" % n: n for n in range(1, 10_000)}


def parse_requests(buf: bytes, max_bulk: int, auth_required: bool,
                   out: list[list[bytes]]) -> tuple[int, int]:
    """Append to ``out`` the commands at the start of ``buf``; return ``(consumed, need)``.

    ``consumed`` is how many bytes the appended commands (and skipped empty
    requests) took. When the rest is an incomplete command, ``need`` is the
    length the rest must reach before trying again can make progress (0 when
    nothing is left). A malformed command raises :class:`RequestError` after the
    commands before it were appended; the caller runs them, then replies.
    Empty requests (``*0``, a blank inline line) are consumed and produce no
    command, as Redis skips them.
    """
    pos = 0
    end = len(buf)
    if not auth_required:
        pos = parse_fast(buf, out)
    while pos < end:
        if auth_required and out:
            break  # an unauthenticated client's limits may change with each command
        try:
            argv, pos2, need = parse_one(buf, pos, max_bulk, auth_required)
        except RequestError as e:
            e.raw = buf[pos:]
            raise
        if argv is None:
            return pos, need - pos  # from the start of what is left
        if argv:
            out.append(argv)
        pos = pos2
    return pos, 0


def parse_fast(buf: bytes, out: list[list[bytes]]) -> int:
    """The canonical multibulk commands at the start of ``buf``; returns the bytes they took.

    Two ways with one result: compiled (mypyc), a scan of the bytes with machine integers; interpreted,
    one C split at CRLF checked against the canonical headers (a scan byte by byte is slow there).
    """
    if FAST_SCAN:
        return parse_fast_scan(buf, out)
    return parse_fast_split(buf, out)


def parse_fast_split(buf: bytes, out: list[list[bytes]]) -> int:
    """:func:`parse_fast` for the interpreter: ``buf`` split at CRLF once (in C)."""
    if not buf or buf[0] != 42:  # '*'
        return 0
    toks = buf.split(b"\r\n")
    last = len(toks) - 1  # the token after the final CRLF (b"" when buf ends with one)
    n = _COUNT_HEADERS.get(toks[0])
    if n is not None and 2 * n + 1 == last and not toks[last]:  # one whole command: the commonest read
        args = toks[2:last:2]
        try:
            if [_BULK_HEADER_OF_LEN[len(a)] for a in args] == toks[1:last:2]:
                out.append(args)
                return len(buf)
        except IndexError:
            return 0
        return 0
    count_of = _COUNT_HEADERS.get
    i = 0
    append = out.append
    try:
        while i < last:
            n = count_of(toks[i])
            if n is None:
                break
            j = i + 1 + 2 * n
            if j > last:
                break
            args = toks[i + 2:j:2]
            if [_BULK_HEADER_OF_LEN[len(a)] for a in args] != toks[i + 1:j:2]:
                break
            append(args)
            i = j
    except IndexError:  # an argument longer than the table: the exact path reads it
        pass
    if i == last and not toks[last]:
        return len(buf)
    return sum(map(len, toks[:i])) + 2 * i


def _canonical_number(buf: bytes, at: int, end: int, max_digits: int) -> tuple[int, int]:
    """The number written canonically (digits, no leading zero unless it is 0) at ``at`` and ended by
    CRLF: ``(value, position after the CRLF)``; ``(-1, 0)`` when there is none of at most ``max_digits``."""
    i = at
    value = 0
    limit = min(end, at + max_digits + 1)
    while i < limit:
        ch = buf[i]
        if ch < 48 or ch > 57:
            break
        value = value * 10 + ch - 48
        i += 1
    digits = i - at
    if (digits == 0 or digits > max_digits or (digits > 1 and buf[at] == 48) or i + 1 >= end
            or buf[i] != 13 or buf[i + 1] != 10):
        return -1, 0
    return value, i + 2


def parse_fast_scan(buf: bytes, out: list[list[bytes]]) -> int:
    """:func:`parse_fast` compiled: whole commands with the canonical headers of the split way (a count
    of 1 to 9999, bulk lengths below 100000), each argument followed by CRLF."""
    end = len(buf)
    pos = 0
    while pos < end and buf[pos] == 42:  # '*'
        n, p = _canonical_number(buf, pos + 1, end, 4)
        if n <= 0:
            break
        args: list[bytes] = []
        while n > 0:
            if p >= end or buf[p] != 36:  # '$'
                break
            size, start = _canonical_number(buf, p + 1, end, 5)
            if size < 0:
                break
            stop = start + size
            if stop + 2 > end or buf[stop] != 13 or buf[stop + 1] != 10:
                break
            args.append(buf[start:stop])
            p = stop + 2
            n -= 1
        if n:
            break
        out.append(args)
        pos = p
    return pos


# Compiled by mypyc, a function has no ``__code__``: the byte scan is then the fast way.
FAST_SCAN: Final = not hasattr(parse_fast_scan, "__code__")


def parse_one(buf: bytes, pos: int, max_bulk: int,
              auth_required: bool) -> tuple[list[bytes] | None, int, int]:
    """One request at ``pos``, exactly as Redis reads it: ``(argv, next pos, need)``.

    ``argv`` is None when the request is incomplete (``need`` is then the
    buffer length worth waiting for), ``[]`` for an empty request.
    """
    if buf[pos] == 42:
        return _parse_multibulk(buf, pos, max_bulk, auth_required)
    return _parse_inline(buf, pos)


def _header_end(buf: bytes, pos: int, too_big: str) -> int:
    """The ``\\r`` ending the header line at ``pos`` as ``strchr`` finds it; -1 if not there yet."""
    cr = buf.find(b"\r", pos)
    if buf.find(b"\0", pos, len(buf) if cr < 0 else cr) >= 0:
        cr = -1  # strchr stops at the NUL: the line looks unfinished
    if cr < 0:
        if len(buf) - pos > INLINE_MAX_SIZE:
            raise RequestError(too_big)
        return -1
    if cr - pos > len(buf) - pos - 2:  # the byte after '\r' is not there yet
        return -1
    return cr


def _parse_multibulk(buf: bytes, pos: int, max_bulk: int,
                     auth_required: bool) -> tuple[list[bytes] | None, int, int]:
    cr = _header_end(buf, pos, PROTO_TOO_BIG_MBULK)
    if cr < 0:
        return None, pos, len(buf) + 1
    count = string2ll(buf[pos + 1:cr])
    if count is None or count > INT_MAX:
        raise RequestError(PROTO_INVALID_MBULK)
    if count > UNAUTHENTICATED_MAX_ARGS and auth_required:
        raise RequestError(PROTO_UNAUTHENTICATED_MBULK)
    p = cr + 2
    if count <= 0:
        return [], p, 0
    argv: list[bytes] = []
    for _ in range(count):
        if p >= len(buf):
            return None, pos, len(buf) + 1
        cr = _header_end(buf, p, PROTO_TOO_BIG_BULK)
        if cr < 0:
            return None, pos, len(buf) + 1
        if buf[p] != 36:  # '$'
            raise RequestError(proto_expected_dollar(buf[p:p + 1]))
        size = string2ll(buf[p + 1:cr])
        if size is None or size < 0 or size > max_bulk:
            raise RequestError(PROTO_INVALID_BULK)
        if size > UNAUTHENTICATED_MAX_BULK and auth_required:
            raise RequestError(PROTO_UNAUTHENTICATED_BULK)
        start = cr + 2
        if len(buf) - start < size + 2:
            return None, pos, start + size + 2
        argv.append(buf[start:start + size])
        p = start + size + 2
    return argv, p, 0


def _parse_inline(buf: bytes, pos: int) -> tuple[list[bytes] | None, int, int]:
    nl = buf.find(b"\n", pos)
    if nl < 0 or buf.find(b"\0", pos, nl) >= 0:  # strchr stops at a NUL
        if len(buf) - pos > INLINE_MAX_SIZE:
            raise RequestError(PROTO_TOO_BIG_INLINE)
        return None, pos, len(buf) + 1
    line_end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
    argv = split_args(buf[pos:line_end])
    if argv is None:
        raise RequestError(PROTO_UNBALANCED_QUOTES)
    return argv, nl + 1, 0


_SPACE = frozenset(b" \t\n\v\f\r")  # C isspace
_UNQUOTED_END = frozenset(b" \n\r\t\0")
_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_HEX = frozenset(b"0123456789abcdefABCDEF")


def split_args(line: bytes) -> list[bytes] | None:
    """``sdssplitargs``: the words of an inline command, None for unbalanced quotes.

    Words are separated by C white space; ``"..."`` understands ``\\xHH``,
    ``\\n``, ``\\r``, ``\\t``, ``\\b``, ``\\a`` and ``\\<any>``; ``'...'``
    only ``\\'``; a closing quote must be followed by white space or the end;
    a quote inside an unquoted word opens a quoted part of that word. (The
    line holds no NUL: the parser waits at one, as Redis does.)
    """
    args: list[bytes] = []
    i = 0
    n = len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return args
        word = bytearray()
        quote = 0  # the quote character of the quoted part being read, 0 outside one
        while True:
            ch = line[i] if i < n else 0
            if quote:
                if i >= n:
                    return None
                if (quote == 34 and ch == 92 and i + 3 < n and line[i + 1] == 120
                        and line[i + 2] in _HEX and line[i + 3] in _HEX):  # \xHH
                    word.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif quote == 34 and ch == 92 and i + 1 < n:
                    i += 1
                    word.append(_ESCAPES.get(line[i], line[i]))
                elif quote == 39 and ch == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    word.append(39)
                elif ch == quote:  # the closing quote must end the word
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    word.append(ch)
            elif ch in _UNQUOTED_END:
                break
            elif ch in (34, 39):
                quote = ch
            else:
                word.append(ch)
            i += 1
        args.append(bytes(word))


# ---------------------------------------------------------------------------
# Replies

_Encoder = Callable[[Any, list[bytes]], None]


# Headers of short bulk strings and arrays, made once: most replies are built from them.
# The commonest replies' classes as C statics when compiled (an imported name is a dict lookup per use).
BULK_TYPE: Final = Bulk
INT_TYPE: Final = Int

_TABLED = 4096
BULK_HEADERS: Final = [b"$%d\r\n" % n for n in range(_TABLED)]  # Final: a C static, compiled
_ARRAY_HEADERS: Final = [b"*%d\r\n" % n for n in range(_TABLED)]


def _bulk(r: Bulk, out: list[bytes]) -> None:
    v = r.value
    out.append(b"$%d\r\n%b\r\n" % (len(v), v))


def _int(r: Int, out: list[bytes]) -> None:
    out.append(b":%d\r\n" % r.value)


_SIMPLE_CACHE: dict[str, bytes] = {}  # +OK, +PONG, +QUEUED ...: encoded once


def _simple(r: Simple, out: list[bytes]) -> None:
    try:
        out.append(_SIMPLE_CACHE[r.text])
    except KeyError:
        data = b"+%b\r\n" % r.text.encode("utf-8", "surrogateescape")
        if len(_SIMPLE_CACHE) < 256:
            _SIMPLE_CACHE[r.text] = data
        out.append(data)


def _error(r: Error, out: list[bytes]) -> None:
    out.append(b"-%b\r\n" % r.text.encode("utf-8", "surrogateescape"))


def _blob_error(r: BlobError, out: list[bytes]) -> None:
    data = r.text.encode("utf-8", "surrogateescape")
    out.append(b"!%d\r\n%b\r\n" % (len(data), data))


def _big_num(r: BigNum, out: list[bytes]) -> None:
    out.append(b"(%b\r\n" % r.text.encode())


def _double(r: Double, out: list[bytes]) -> None:
    out.append(b",%b\r\n" % r.text.encode())


def _verbatim(r: Verbatim, out: list[bytes]) -> None:
    data = r.fmt.encode() + b":" + r.text
    out.append(b"=%d\r\n%b\r\n" % (len(data), data))


class Raw:
    """Bytes already in RESP, written as they are (7.0 puts the tracking client's null in a
    push it redirects, whatever the receiving connection's protocol)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Pushed:
    """A command's reply with the push messages 7.0 writes to the same connection just
    before it (``before``) and just after it (``after``): CLIENT TRACKING invalidations."""

    __slots__ = ("before", "reply", "after")

    def __init__(self, before: list[Any], reply: Any, after: list[Any]) -> None:
        self.before = before
        self.reply = reply
        self.after = after


def _make_encoders(proto: int) -> dict[type, _Encoder]:
    """The encoder of each reply class for one protocol (RESP2 flattens, RESP3 keeps types)."""
    table: dict[type, _Encoder] = {}

    def array(r: Array, out: list[bytes], headers: list[bytes] = _ARRAY_HEADERS,
              bulk_headers: list[bytes] = BULK_HEADERS) -> None:
        # The hot shape (entries: arrays of bulks and arrays) without a table lookup or a length test:
        # the tables end at _TABLED, and the rare longer ones take the IndexError branches.
        its: tuple[Any, ...] = r.items
        try:
            out.append(headers[len(its)])
        except IndexError:
            out.append(b"*%d\r\n" % len(its))
        for item in its:
            t = type(item)
            if t is Bulk:
                v = item.value
                try:
                    out += (bulk_headers[len(v)], v, b"\r\n")
                except IndexError:
                    out.append(b"$%d\r\n%b\r\n" % (len(v), v))
            elif t is Array:
                array(item, out)
            else:
                table[t](item, out)

    def items(r: Any, out: list[bytes], head: bytes) -> None:
        # RESP3's sets and pushes: their elements as an array's.
        out.append(b"%b%d\r\n" % (head, len(r.items)))
        for item in r.items:
            table[type(item)](item, out)

    def pairs(r: Any, out: list[bytes]) -> None:
        for k, v in r.pairs:
            table[type(k)](k, out)
            table[type(v)](v, out)

    def pushed(r: Pushed, out: list[bytes]) -> None:
        for item in (*r.before, r.reply, *r.after):
            table[type(item)](item, out)

    table.update({Bulk: _bulk, Int: _int, Simple: _simple, Error: _error, Array: array,
                  Verbatim: _verbatim if proto == 3 else _verbatim_as_bulk,
                  Raw: lambda r, out: out.append(r.data), Encoded: lambda r, out: out.extend(r.parts),
                  Pushed: pushed})
    if proto == 2:
        def map2(r: Map, out: list[bytes]) -> None:
            out.append(b"*%d\r\n" % (2 * len(r.pairs)))
            pairs(r, out)

        table.update({
            NullBulk: lambda r, out: out.append(b"$-1\r\n"),
            NullArray: lambda r, out: out.append(b"*-1\r\n"),
            Null: lambda r, out: out.append(b"$-1\r\n"),
            Map: map2,
            Set: array, Push: array,
            Double: lambda r, out: _bulk(Bulk(r.text.encode()), out),
            BigNum: lambda r, out: _bulk(Bulk(r.text.encode()), out),
            Bool: lambda r, out: out.append(b":1\r\n" if r.value else b":0\r\n"),
            BlobError: lambda r, out: _error(Error(r.text), out),
            Attribute: lambda r, out: table[type(r.value)](r.value, out),
        })
    else:
        def map3(r: Map, out: list[bytes]) -> None:
            out.append(b"%%%d\r\n" % len(r.pairs))
            pairs(r, out)

        def attribute(r: Attribute, out: list[bytes]) -> None:
            out.append(b"|%d\r\n" % len(r.pairs))
            pairs(r, out)
            table[type(r.value)](r.value, out)

        table.update({
            NullBulk: lambda r, out: out.append(b"_\r\n"),
            NullArray: lambda r, out: out.append(b"_\r\n"),
            Null: lambda r, out: out.append(b"_\r\n"),
            Map: map3,
            Set: lambda r, out: items(r, out, b"~"),
            Push: lambda r, out: items(r, out, b">"),
            Double: _double, BigNum: _big_num, BlobError: _blob_error,
            Bool: lambda r, out: out.append(b"#t\r\n" if r.value else b"#f\r\n"),
            Attribute: attribute,
        })
    return table


def _verbatim_as_bulk(r: Verbatim, out: list[bytes]) -> None:
    out.append(b"$%d\r\n%b\r\n" % (len(r.text), r.text))


ENCODERS: Final[dict[int, dict[type, _Encoder]]] = {2: _make_encoders(2), 3: _make_encoders(3)}


def encode_reply(reply: Reply | Encoded, proto: int) -> bytes:
    """The bytes of ``reply`` on a RESP``proto`` connection."""
    out: list[bytes] = []
    ENCODERS[proto][type(reply)](reply, out)
    return out[0] if len(out) == 1 else b"".join(out)


def encode_into(reply: Reply | Encoded, proto: int, out: list[bytes]) -> None:
    """Append the bytes of ``reply`` to ``out`` (a connection's pending output)."""
    ENCODERS[proto][type(reply)](reply, out)


def decoded(reply: Reply | Encoded) -> Reply:
    """A reply as its client received it: an :class:`Encoded` one parsed back (its bytes are in the
    client's protocol, so the result is ``for_protocol``'s form), any other as it is."""
    if not isinstance(reply, Encoded):
        return reply
    parser = Parser()
    parser.feed(b"".join(reply.parts))
    parsed = parser.get()
    assert parsed is not None and parser.get() is None, "an Encoded reply holds exactly one reply"
    return parsed
