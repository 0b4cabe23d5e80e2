"""Stub of the Tarantool replication packet framer (``_frames.c``), the C twin of ``PacketBuffer.take_rows_py``.

Layout: docs/formats/tarantool-replication.md ("Streaming rows: SUBSCRIBE").
"""


#: What the kernel reads through the buffer protocol.
_Bytes = bytes | bytearray | memoryview

def take_rows(
    data: _Bytes, pos: int, limit: int, max_packet: int, out: bytearray, bounds: list[int]
) -> tuple[int, bool]:
    """Move up to ``limit`` complete row packets of the usual shape from ``data[pos:]`` into ``out`` (appending each
    row's end to ``bounds``); the position reached and whether it stopped at a packet of another shape."""
