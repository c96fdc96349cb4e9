"""CRC64 as Redis computes it for DUMP payloads and RDB files (``crc64.c``).

The "Jones" polynomial 0xad93d23594c935a9, reflected input and output, initial
value 0 and no final XOR. ``crc64(0, b"123456789")`` is 0xe9c6d914c4b8d9ca,
the check value Redis's own self-test uses.
"""

from __future__ import annotations

_POLY_REFLECTED = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 with its 64 bits in reverse order


def _table() -> tuple[int, ...]:
    out = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY_REFLECTED if crc & 1 else crc >> 1
        out.append(crc)
    return tuple(out)


_TABLE = _table()


def crc64(crc: int, data: bytes | bytearray | memoryview) -> int:
    """The CRC64 of ``data``, continuing from ``crc`` (0 to start)."""
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc
