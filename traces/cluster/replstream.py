"""Cutting a replication connection's bytes into the units a trace records.

A replica's connection to its primary carries, from the primary: the
replies to the handshake (``+PONG``, ``+OK``), the answer to ``PSYNC``
(``+FULLRESYNC <replid> <offset>`` or ``+CONTINUE <replid>``), for a full
resynchronisation the snapshot (``$<length>`` and that many bytes, or, when
diskless, ``$EOF:<40-byte mark>`` and bytes up to the mark), then the
replication stream: RESP commands. From the replica: the handshake commands
(``PING``, ``REPLCONF listening-port``/``capa``, ``PSYNC``) and, afterwards,
``REPLCONF ACK``. Either side may send a lone newline to keep the link
alive at a unit boundary; it belongs to no unit's meaning.

Each parser takes bytes as they arrive and gives back whole units, each with
its exact bytes, so that a proxy forwards exactly what it read, unit by unit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Unit:
    """A piece of the connection: ``kind`` is ``newline``, ``line``, ``snapshot`` or ``command``."""

    kind: str
    data: bytes
    argv: list[bytes] | None = None  # command
    text: str | None = None  # line, without its CRLF


class StreamError(ValueError):
    """Bytes that are not what a replication connection carries."""


def _take_command(buf: bytearray) -> tuple[list[bytes], int] | None:
    """A RESP array of bulk strings at the start of ``buf``: (argv, bytes used), or None if incomplete."""
    end = buf.find(b"\r\n")
    if end < 0:
        return None
    if buf[0:1] != b"*":
        # An inline command (space-separated, CRLF-terminated).
        return [bytes(a) for a in bytes(buf[:end]).split()], end + 2
    try:
        count = int(buf[1:end])
    except ValueError:
        raise StreamError(f"bad multibulk header {bytes(buf[:end])!r}") from None
    pos = end + 2
    argv: list[bytes] = []
    for _ in range(count):
        end = buf.find(b"\r\n", pos)
        if end < 0:
            return None
        if buf[pos:pos + 1] != b"$":
            raise StreamError(f"expected a bulk string, got {bytes(buf[pos:end])!r}")
        size = int(buf[pos + 1:end])
        start = end + 2
        if len(buf) < start + size + 2:
            return None
        argv.append(bytes(buf[start:start + size]))
        pos = start + size + 2
    return argv, pos


class PrimaryToReplica:
    """Parses what the primary sends: handshake replies, the PSYNC answer, the snapshot, then commands."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.state = "handshake"  # then "snapshot-wait", "snapshot", "stream"
        self.snapshot_left = 0  # bytes of a sized snapshot still to come
        self.eof_mark: bytes | None = None  # diskless snapshot: the mark that ends it
        self.tail = b""  # diskless: the last bytes seen, to find a mark split across reads

    def feed(self, data: bytes) -> list[Unit]:
        self.buf += data
        units: list[Unit] = []
        while self.buf:
            unit = self._next()
            if unit is None:
                break
            units.append(unit)
        return units

    def _next(self) -> Unit | None:
        buf = self.buf
        if self.state == "snapshot":
            return self._snapshot_bytes()
        if buf[0:1] == b"\n":  # a keep-alive newline, never the start of a reply or a command
            del buf[:1]
            return Unit("newline", b"\n")
        if self.state == "stream":
            got = _take_command(buf)
            if got is None:
                return None
            argv, used = got
            data = bytes(buf[:used])
            del buf[:used]
            return Unit("command", data, argv=argv)
        end = buf.find(b"\r\n")
        if end < 0:
            return None
        line = bytes(buf[:end + 2])
        del buf[:end + 2]
        text = line[:-2].decode("latin-1")
        if self.state == "handshake":
            if text.startswith("+FULLRESYNC"):
                self.state = "snapshot-wait"
            elif text.startswith("+CONTINUE"):
                self.state = "stream"
            return Unit("line", line, text=text)
        # snapshot-wait: the snapshot's header line
        if text.startswith("$EOF:"):
            self.eof_mark = text[5:].encode("latin-1")
            self.tail = b""
        elif text.startswith("$"):
            self.snapshot_left = int(text[1:])
            self.eof_mark = None
        else:
            raise StreamError(f"expected the snapshot's length, got {text!r}")
        self.state = "snapshot"
        return Unit("snapshot", line)

    def _snapshot_bytes(self) -> Unit | None:
        buf = self.buf
        if self.eof_mark is None:
            n = min(self.snapshot_left, len(buf))
            data = bytes(buf[:n])
            del buf[:n]
            self.snapshot_left -= n
            if self.snapshot_left == 0:
                self.state = "stream"
            return Unit("snapshot", data) if data or self.state == "stream" else None
        mark = self.eof_mark
        window = self.tail + bytes(buf)
        at = window.find(mark)
        if at >= 0:
            used = at + len(mark) - len(self.tail)
            data = bytes(buf[:used])
            del buf[:used]
            self.state = "stream"
            self.tail = b""
            return Unit("snapshot", data)
        # Keep the last bytes that could start the mark; forward the rest now.
        keep = len(mark) - 1
        data = bytes(buf)
        buf.clear()
        self.tail = (self.tail + data)[-keep:]
        return Unit("snapshot", data) if data else None


class ReplicaToPrimary:
    """Parses what the replica sends: commands (handshake, then REPLCONF ACK) and keep-alive newlines."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[Unit]:
        self.buf += data
        units: list[Unit] = []
        while self.buf:
            if self.buf[0:1] == b"\n":
                del self.buf[:1]
                units.append(Unit("newline", b"\n"))
                continue
            got = _take_command(self.buf)
            if got is None:
                break
            argv, used = got
            units.append(Unit("command", bytes(self.buf[:used]), argv=argv))
            del self.buf[:used]
        return units
