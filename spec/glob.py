"""Redis's glob matcher (``stringmatchlen``) and the key selection of KEYS and SCAN built on it.

Pure functions over bytes, shared by the model and the reference server:
KEYS, SCAN's MATCH and CONFIG GET's patterns (spec/rules/generic.md KEYS-3,
CONFIG-2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from xspec.spec.ids import c_string
from xspec.spec.resp import Bulk

# stringmatchlen's protection against abusive patterns (util.c): a '*' reached
# deeper than this many nested '*' never matches.
MAX_PATTERN_NESTING = 1000


def _signed_char(b: int) -> int:
    # C's char is signed on the platforms Redis runs on: bytes >= 0x80 compare as negative
    return b - 256 if b >= 128 else b


def pattern_matches(pattern: bytes, subject: bytes, *, nocase: bool = False) -> bool:
    """Redis 7.0.15's ``stringmatchlen``, including its nesting limit.

    Glob syntax: ``*``, ``?``, ``[...]`` with ``^`` negation, ``a-z`` ranges
    (ends in either order) and ``\\`` escapes; an unterminated ``[`` matches
    as if closed at the pattern's end. A ``*`` reached through more than 1000
    nested ``*`` never matches (KEYS-3). ``nocase`` (CONFIG GET) lowers both
    sides byte by byte, except an escaped byte inside ``[...]``, and a range's
    ends are ordered before they are lowered, as C does.
    """
    state = {"skip_longer": False}
    return _match(pattern, subject, nocase, state)


def _match(pat: bytes, s: bytes, nocase: bool, state: dict[str, bool]) -> bool:
    # An explicit stack replaces C's recursion on '*', so that deep patterns do
    # not exhaust Python's recursion limit. A frame is a '*' trying subject
    # offsets for the rest of the pattern: [rest of pattern, offset, nesting].
    stack: list[list[int]] = []
    result = _match_from(pat, 0, s, 0, 0, nocase, stack)
    while True:
        if result is None:  # a '*' was reached: try its first offset
            frame = stack[-1]
            result = _match_from(pat, frame[0], s, frame[1], frame[2], nocase, stack)
            continue
        if result or not stack:
            return result
        frame = stack[-1]
        if state["skip_longer"]:
            stack.pop()
            continue
        frame[1] += 1
        if frame[1] >= len(s):
            # No offset matched the rest of the pattern, so longer matches of
            # earlier stars cannot match either (stringmatchlen's skipLongerMatches).
            state["skip_longer"] = True
            stack.pop()
            continue
        result = _match_from(pat, frame[0], s, frame[1], frame[2], nocase, stack)


def _lower(b: int) -> int:
    return b + 32 if 0x41 <= b <= 0x5A else b


def _match_from(pat: bytes, p: int, s: bytes, i: int, nesting: int, nocase: bool,
                stack: list[list[int]]) -> bool | None:
    """Match ``pat[p:]`` against ``s[i:]``; returns None after pushing a '*' frame."""
    if nesting > MAX_PATTERN_NESTING:
        return False
    plen = len(pat) - p
    slen = len(s) - i

    def at(k: int) -> int:
        return pat[k] if k < len(pat) else 0  # the sds terminator

    while plen and slen:
        ch = pat[p]
        if ch == 0x2A:  # '*'
            while plen and at(p + 1) == 0x2A:
                p += 1
                plen -= 1
            if plen == 1:
                return True
            stack.append([p + 1, i, nesting + 1])
            return None
        if ch == 0x3F:  # '?'
            i += 1
            slen -= 1
        elif ch == 0x5B:  # '['
            p += 1
            plen -= 1
            negate = at(p) == 0x5E
            if negate:
                p += 1
                plen -= 1
            matched = False
            while True:
                if at(p) == 0x5C and plen >= 2:
                    p += 1
                    plen -= 1
                    if at(p) == s[i]:
                        matched = True
                elif at(p) == 0x5D:
                    break
                elif plen == 0:
                    p -= 1
                    plen += 1
                    break
                elif plen >= 3 and at(p + 1) == 0x2D:
                    start, end = _signed_char(at(p)), _signed_char(at(p + 2))
                    subject = _signed_char(s[i])
                    if start > end:
                        start, end = end, start
                    if nocase:
                        start, end, subject = _lower(start), _lower(end), _lower(subject)
                    p += 2
                    plen -= 2
                    if start <= subject <= end:
                        matched = True
                elif at(p) == s[i] or (nocase and _lower(at(p)) == _lower(s[i])):
                    matched = True
                p += 1
                plen -= 1
            if negate:
                matched = not matched
            if not matched:
                return False
            i += 1
            slen -= 1
        else:
            if ch == 0x5C and plen >= 2:  # '\\' escapes the next byte
                p += 1
                plen -= 1
            if at(p) != s[i] and not (nocase and _lower(at(p)) == _lower(s[i])):
                return False
            i += 1
            slen -= 1
        p += 1
        plen -= 1
        if slen == 0:
            while at(p) == 0x2A:
                p += 1
                plen -= 1
            break
    return plen == 0 and slen == 0


V = TypeVar("V")


def matching_keys(db: Mapping[bytes, V], pattern: bytes | None, type_filter: bytes | None,
                  type_of: Callable[[V], str]) -> list[Bulk]:
    """The keys of ``db`` that KEYS/SCAN list: matching ``pattern`` (None: all) and, for SCAN's
    TYPE, whose ``type_of`` (TYPE's name of the value) is ``type_filter`` (None: any)."""
    out = []
    for key, value in db.items():
        if pattern is not None and not pattern_matches(pattern, key):
            continue
        if type_filter is not None and c_string(type_filter).lower() != type_of(value).encode():
            continue
        out.append(Bulk(key))
    return out
