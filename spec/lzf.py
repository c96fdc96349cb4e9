"""LZF, the compression of RDB strings longer than 20 bytes (DUMP-2), as Redis's ``lzf_c.c`` does it.

The format: a control byte ``000LLLLL`` is followed by L+1 literal bytes;
``LLLooooo oooooooo`` copies L+2 bytes from o+1 bytes back; ``111ooooo
LLLLLLLL oooooooo`` copies L+9 bytes. Any encoder's output decodes the same,
but a DUMP is only byte-exact with the encoder Redis builds: a 65536-slot hash
of the next three bytes (liblzf's "very fast" variant: after a back-reference
only the last two positions it covers are hashed), back-references of 3 to 264
bytes at most 8192 bytes back, and the same early give-ups when the output
might not fit. Redis leaves the hash table uninitialised; this encoder starts
from an empty one, which finds the same matches unless a stale slot happens to
point at equal bytes (not seen in practice).
"""

from __future__ import annotations

_MAX_LIT = 32
_MAX_OFF = 1 << 13
_MAX_REF = (1 << 8) + (1 << 3)
_MASK32 = 0xFFFFFFFF


def _slot(h: int) -> int:
    return ((h >> 8) - h * 5) & 0xFFFF


def _literal(out: bytearray, op: int, lit: int, byte: int) -> tuple[int, int]:
    """Append one literal byte at ``op`` to the open run of ``lit`` bytes; a full run is closed
    and the next run's control byte reserved. Returns the new (op, lit). (The main loop does the
    same inline: it runs for every byte that starts no match.)"""
    out[op] = byte
    op += 1
    lit += 1
    if lit == _MAX_LIT:
        out[op - lit - 1] = lit - 1
        return op + 1, 0
    return op, lit


def _first_difference(data: bytes, a: int, b: int, lo: int, hi: int) -> int:
    """The least k in [lo, hi) with ``data[a + k] != data[b + k]``; ``hi`` when there is none and
    ``lo`` when the range is empty. Compares slices, then bytes within the first unequal one."""
    k = lo
    while k < hi:
        step = min(hi - k, 32)
        if data[a + k:a + k + step] != data[b + k:b + k + step]:
            while data[a + k] == data[b + k]:
                k += 1
            return k
        k += step
    return max(k, lo)


def compress(data: bytes, out_len: int) -> bytes | None:
    """lzf_compress into at most ``out_len`` bytes; None when it gives up (the output would not fit)."""
    n = len(data)
    if not n or out_len <= 0:
        return None
    out = bytearray(out_len + 8)
    table: dict[int, int] = {}
    ip = 0
    op = 1  # out[0] is the first literal run's control byte
    lit = 0
    end = n - 2
    h = (data[0] << 8 | data[1]) if n > 1 else 0
    while ip < end:
        h = ((h << 8) | data[ip + 2]) & _MASK32
        slot = ((h >> 8) - h * 5) & 0xFFFF
        ref = table.get(slot, 0)
        table[slot] = ip
        off = ip - ref - 1
        if (ref > 0 and off < _MAX_OFF and data[ref + 2] == data[ip + 2]
                and data[ref] == data[ip] and data[ref + 1] == data[ip + 1]):
            maxlen = min(n - ip - 2, _MAX_REF)
            if op + 4 >= out_len and op - (lit == 0) + 4 >= out_len:
                return None
            out[op - lit - 1] = (lit - 1) & 0xFF  # close the literal run
            op -= lit == 0  # no literal: drop its control byte
            # The match's length as liblzf counts it: above 16 it compares bytes 3..18 without
            # looking at maxlen, then goes on from 19 while below maxlen; else from 3 below maxlen.
            if maxlen > 16:
                length = _first_difference(data, ref, ip, 3, 19)
                if length == 19:
                    length = _first_difference(data, ref, ip, 19, maxlen)
            else:
                length = _first_difference(data, ref, ip, 3, maxlen)
            length -= 2
            ip += 1
            if length < 7:
                out[op] = (off >> 8) + (length << 5)
                op += 1
            else:
                out[op] = (off >> 8) + (7 << 5)
                out[op + 1] = length - 7
                op += 2
            out[op] = off & 0xFF
            op += 2  # and a new literal run's control byte
            lit = 0
            ip += length + 1
            if ip >= end:
                break
            ip -= 2  # hash the last two positions the reference covers
            h = data[ip] << 8 | data[ip + 1]
            for _ in range(2):
                h = ((h << 8) | data[ip + 2]) & _MASK32
                table[_slot(h)] = ip
                ip += 1
        else:
            if op >= out_len:
                return None
            out[op] = data[ip]  # a literal byte; a full run is closed and the next one's control byte kept
            op += 1
            lit += 1
            if lit == _MAX_LIT:
                out[op - lit - 1] = lit - 1
                op += 1
                lit = 0
            ip += 1
    if op + 3 > out_len:
        return None
    for byte in data[ip:]:
        op, lit = _literal(out, op, lit, byte)
    out[op - lit - 1] = (lit - 1) & 0xFF
    op -= lit == 0
    return bytes(out[:op])


class LzfError(ValueError):
    """Compressed data that does not decode to the expected length."""


def decompress(data: bytes, size: int) -> bytes:
    """lzf_decompress of ``data`` into exactly ``size`` bytes."""
    out = bytearray()
    i = 0
    n = len(data)
    while i < n:
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            run = ctrl + 1
            if i + run > n or len(out) + run > size:
                raise LzfError("literal run past the end")
            out += data[i:i + run]
            i += run
            continue
        length = ctrl >> 5
        if length == 7:
            if i >= n:
                raise LzfError("truncated back-reference")
            length += data[i]
            i += 1
        if i >= n:
            raise LzfError("truncated back-reference")
        back = ((ctrl & 0x1F) << 8 | data[i]) + 1
        i += 1
        length += 2
        start = len(out) - back
        if start < 0 or len(out) + length > size:
            raise LzfError("back-reference out of range")
        if back >= length:
            out += out[start:start + length]
        else:  # the reference overlaps what it writes: its last ``back`` bytes repeat
            out += (out[start:] * (length // back + 1))[:length]
    if len(out) != size:
        raise LzfError("decoded length differs")
    return bytes(out)
