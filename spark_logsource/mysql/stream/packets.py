"""The socket side of a binlog dump: MySQL packets read in big blocks and framed without a copy per packet.

A MySQL packet (``docs/formats/mysql-replication.md`` "Replication protocol") is a 3-byte little-endian payload
length, a 1-byte sequence number and the payload; a payload of exactly 16 MiB - 1 bytes continues in the next
packet. A dump sends one event per packet, and a binlog of row changes is mostly events of a few kilobytes, so a
reader that asks the socket for each header and each payload (pymysql's packet reader) makes two system calls and
two copies per event. Here the socket is read into blocks of :data:`BLOCK` bytes, as much as it has each time, and
the payloads are handed on as views of the block: the only copies are of a packet cut by a block's end (moved to
the next block) and of the parts of a continued payload (joined).

The framer knows the end of the stream (the short ``0xfe`` packet of a non-blocking dump) and an error packet
(``0xff``): after either, nothing more is read.
"""

from __future__ import annotations

__all__ = ["BLOCK", "MAX_JOINED", "MAX_PAYLOAD", "PacketBatch", "PacketFramer", "PacketTooLarge", "is_end"]

#: A payload this long continues in the next packet.
MAX_PAYLOAD = 0xFFFFFF
#: Bytes of one socket block; a packet longer than this gets a block of its own size.
BLOCK = 1 << 20
#: A block with less room than this left is not read into again: its unframed tail moves to a new block.
MIN_ROOM = 64 << 10
_HEADER = 4
#: A payload continued over several packets longer than this is refused: no event is larger (MySQL's
#: max_allowed_packet maximum, 1 GiB, with room for headers), and joining without a bound would let a damaged or
#: hostile stream take all the memory.
MAX_JOINED = (1 << 30) + 4096


class PacketTooLarge(ValueError):
    """A continued payload past :data:`MAX_JOINED` bytes."""


def is_end(payload: bytes | memoryview) -> bool:
    """The end of a non-blocking dump: an EOF packet, ``0xfe`` and fewer than 9 bytes."""
    return len(payload) < 9 and payload[:1] == b"\xfe"


class PacketBatch(list[bytes | memoryview]):
    """The payloads one socket read completed, and their bytes in all."""

    __slots__ = ("nbytes",)

    def __init__(self) -> None:
        super().__init__()
        self.nbytes = 0


class PacketFramer:
    """Socket bytes in, packet payloads out (views of the block they were read into, or bytes when joined)."""

    __slots__ = ("_block", "_filled", "_joined", "_parsed", "_view", "done")

    def __init__(self) -> None:
        self._block = bytearray(BLOCK)
        self._view = memoryview(self._block)
        self._filled = 0
        self._parsed = 0
        # the parts of a payload continued in the next packet, joined as they come: one copy, never two at once
        self._joined = bytearray()
        #: the end or an error packet was framed: the stream has nothing more
        self.done = False

    def room(self) -> memoryview:
        """Where the next socket read goes: the free end of the block, or of a new one holding the unframed tail."""
        block, filled, parsed = self._block, self._filled, self._parsed
        tail = filled - parsed
        need = MIN_ROOM
        if tail >= _HEADER:
            need = max(need, _HEADER + (block[parsed] | block[parsed + 1] << 8 | block[parsed + 2] << 16) - tail)
        if len(block) - filled < need:
            fresh = bytearray(max(BLOCK, tail + need))
            fresh[:tail] = self._view[parsed:filled]
            self._block, self._view = fresh, memoryview(fresh)
            self._filled, self._parsed = tail, 0
        return self._view[self._filled:]

    def feed(self, n: int) -> PacketBatch:
        """The payloads completed by the ``n`` bytes just read into :meth:`room`."""
        self._filled += n
        block, view, filled = self._block, self._view, self._filled
        parsed = self._parsed
        out = PacketBatch()
        total = 0
        while filled - parsed >= _HEADER:
            length = block[parsed] | block[parsed + 1] << 8 | block[parsed + 2] << 16
            end = parsed + _HEADER + length
            if end > filled:
                break
            payload: bytes | memoryview = view[parsed + _HEADER:end]
            parsed = end
            if (length == MAX_PAYLOAD or self._joined) and len(self._joined) + length > MAX_JOINED:
                self.done = True
                raise PacketTooLarge(f"a payload continued past {MAX_JOINED} bytes")
            if length == MAX_PAYLOAD:
                self._joined += payload
                continue
            if self._joined:
                self._joined += payload
                payload, self._joined = memoryview(self._joined), bytearray()
            out.append(payload)
            total += length
            first = payload[0] if len(payload) else 0
            if first == 0xFF or (first == 0xFE and len(payload) < 9):
                self.done = True
                break
        self._parsed = parsed
        out.nbytes = total
        return out
