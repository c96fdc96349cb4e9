"""The request parser's fast paths read what the exact parser reads.

``parse_fast`` has two ways (reference/protocol.py): the split at CRLF the
interpreter runs and the byte scan the compiled build runs. On valid, damaged,
truncated and pipelined requests each must give exactly the commands the exact
parser (``parse_one``, Redis's ``processMultibulkBuffer``) gives for the bytes
it says it took, and take only whole commands.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from xspec.reference.protocol import RequestError, parse_fast_scan, parse_fast_split, parse_one
from xspec.spec.resp import encode_command

Way = Callable[[bytes, list[list[bytes]]], int]
WAYS: tuple[Way, ...] = (parse_fast_split, parse_fast_scan)

_arg = st.binary(max_size=14) | st.sampled_from([b"", b"\r\n", b"*1\r\n", b"$3\r\n", b"0", b"x" * 120])
_command = st.lists(_arg, min_size=1, max_size=4)


def _exact(buf: bytes) -> tuple[list[list[bytes]], int]:
    """The commands ``parse_one`` reads from the start of ``buf`` and the bytes they take."""
    pos = 0
    cmds: list[list[bytes]] = []
    while pos < len(buf):
        try:
            argv, nxt, _ = parse_one(buf, pos, 1 << 29, False)
        except RequestError:
            break
        if argv is None:
            break
        if argv:
            cmds.append(argv)
        pos = nxt
    return cmds, pos


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    data = bytearray(b"".join(encode_command(c) for c in draw(st.lists(_command, min_size=1, max_size=3))))
    for _ in range(draw(st.integers(0, 2))):  # damage: a header digit, a CRLF, a type byte
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.sampled_from(b"*$\r\n0159a-+ \x00"))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut] if draw(st.booleans()) else data)


@settings(max_examples=1000, deadline=None)
@given(buf=requests())
def test_each_way_takes_whole_commands_as_the_exact_parser_reads_them(buf: bytes) -> None:
    for way in WAYS:
        out: list[list[bytes]] = []
        taken = way(buf, out)
        assert 0 <= taken <= len(buf)
        assert (out, taken) == _exact(buf[:taken]), way.__name__


@settings(max_examples=200, deadline=None)
@given(cmds=st.lists(st.lists(st.binary(max_size=30).filter(lambda a: b"\r\n" not in a), min_size=1, max_size=5),
                     min_size=1, max_size=4))
def test_canonical_pipelines_are_read_whole_by_both_ways(cmds: list[list[bytes]]) -> None:
    buf = b"".join(encode_command(c) for c in cmds)
    for way in WAYS:
        out: list[list[bytes]] = []
        assert way(buf, out) == len(buf) and out == cmds, way.__name__


def test_the_limits_of_the_canonical_headers_are_the_same_in_both_ways() -> None:
    big = b"x" * 100_000  # a bulk length past the headers made once: the exact path reads it
    for buf in (encode_command([b"a"] * 10_000), encode_command([big]), b"*01\r\n$1\r\na\r\n", b"*1\r\n$01\r\na\r\n",
                b"*1\r\n$1\r\nab\r\n", b"*1\r\n$1\r\na\n\r", b"*0\r\n", b"*-1\r\n"):
        assert [way(buf, []) for way in WAYS] == [0, 0], buf[:20]
    out: list[list[bytes]] = []
    assert parse_fast_scan(b"*1\r\n$4\r\na\r\nb\r\n", out) == 14 and out == [[b"a\r\nb"]]  # read by its length
