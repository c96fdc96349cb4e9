"""Where 7.0's code writes the main thread's C ``errno`` (XADD-14).

Redis 7.0's XADD words the error for an exhausted ``ms-*`` sequence after
whatever ``errno`` earlier code left, so ``Server.errno`` must follow every
write the modelled commands make. The writers, all verified on 7.0.15:

* ``string2ull`` falling back to ``strtoull`` for an ID part (ID-7): 0, or
  ERANGE on overflow;
* ``raxNext``/``raxPrev`` running off the end of a radix tree: 0. That covers
  stream iterators walking past the last node, and the walks over PELs,
  consumers, groups and the blocked-client timeout table;
* ``strtoul``/``strtoull`` reading a SCAN cursor or a memory-size config value;
* the ACL credential check failing for an unknown user (ENOENT).

Handlers call the helpers below at the point the C code writes ``errno``.
"""

from __future__ import annotations

from errno import ERANGE
from typing import TYPE_CHECKING

from xspec.models.ordered import first_key_from
from xspec.spec.ids import c_string, canonical_id, parse_strict, string2ll, strtoull

if TYPE_CHECKING:
    from xspec.models.server import Call, Server
    from xspec.models.state import Stream
    from xspec.spec.ids import StreamID


def note_strtoull(server: Server, overflow: bool) -> None:
    """A C ``strto*`` call after ``errno = 0``: errno is 0, or ERANGE on overflow (XADD-14)."""
    server.errno = ERANGE if overflow else 0


def note_id_parse(call: Call, arg: bytes, *, allow_auto_seq: bool = False) -> None:
    """The errno that parsing ``arg`` as an ID leaves (ID-5, ID-7): a part that the strict
    signed parse refuses goes through ``strtoull``, whatever the outcome."""
    if canonical_id(arg) is not None:  # both parts pass the strict signed parse: errno untouched
        return
    if len(arg) > 127:  # ID-2: refused before any number is read
        return
    buf = c_string(arg)
    if buf in (b"-", b"+"):  # ID-3, ID-4: no number read
        return
    dash = buf.find(b"-")
    ms_part = buf if dash < 0 else buf[:dash]
    if string2ll(ms_part) is None:
        note_strtoull(call.server, strtoull(ms_part) is None)
        return  # an invalid ms part ends the parse; a valid one set errno already
    if dash < 0:
        return
    seq_part = buf[dash + 1:]
    if allow_auto_seq and seq_part == b"*":
        return
    if string2ll(seq_part) is None:
        note_strtoull(call.server, strtoull(seq_part) is None)


def strict_id(call: Call, arg: bytes) -> StreamID | None:
    """``parse_strict(arg)``, with the errno that parse leaves (``note_id_parse``)."""
    fast = canonical_id(arg)
    if fast is not None:  # both parts pass the strict signed parse: errno untouched
        return fast
    note_id_parse(call, arg)
    return parse_strict(arg)


def note_interval_parse(call: Call, arg: bytes) -> None:
    """``note_id_parse`` for a range bound, after a leading ``(`` (ID-8)."""
    note_id_parse(call, arg[1:] if len(arg) > 1 and arg[:1] == b"(" else arg)


def note_iterator_end(call: Call) -> None:
    """A radix-tree iterator ran off the end of its tree: ``raxNext``/``raxPrev`` set errno to 0."""
    call.server.errno = 0


def note_entry_lookup(call: Call, stream: Stream, entry_id: StreamID) -> None:
    """``streamEntryExists`` or a one-entry range read of ``entry_id``: the stream iterator stops
    at the entry, or at the first live entry after it; with neither it runs off the tree."""
    if entry_id not in stream.entries and first_key_from(stream.entries, entry_id, inclusive=False) is None:
        note_iterator_end(call)
