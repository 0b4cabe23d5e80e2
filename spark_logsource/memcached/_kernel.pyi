"""Stub of the memcached TAP kernel (``_kernel.c``): framing, ACK scan and Arrow column buffers of TAP packets.

Layouts: docs/formats/memcached-tap.md ("Framing", "TAP packets"). The Python twins are in ``protocol.py``
(framing) and ``tap.py`` (columns; numpy).
"""

from collections.abc import Callable

import pyarrow as pa

#: What the kernel reads through the buffer protocol.
_Bytes = bytes | bytearray | memoryview

def frame(data: _Bytes, pos: int, stop: int, max_body: int) -> tuple[bytes, int, bool]:
    """Starts of the whole packets in ``data[pos:stop]`` (packed int64), where framing stopped, and whether it
    stopped at a header it refuses."""

def acks(data: _Bytes, starts: _Bytes) -> tuple[bytes, int]:
    """``(opcode << 32 | opaque)`` of each ACK-flagged TAP packet (packed int64), and how many packets are not
    NOOPs."""

def columns(
    data: _Bytes, starts: _Bytes, alloc: Callable[[int], pa.Buffer]
) -> tuple[bytes, tuple[tuple[int, pa.Buffer | None, pa.Buffer, pa.Buffer | None], ...]]:
    """Rows the kernel cannot decode (packed int64) and, per column, ``(null_count, validity, values, offsets)``
    for ``pa.Array.from_buffers``."""
