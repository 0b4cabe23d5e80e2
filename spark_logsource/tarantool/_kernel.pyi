"""Compiled twin of :func:`spark_logsource.tarantool.decode.rows.decode_payload_py` (``_kernel.c``), and its column
builder
(twin of :class:`spark_logsource.tarantool.decode.columns.PyColumnBuilder`)."""

import builtins
from collections.abc import Callable
from typing import Any

def decode_payload(payload: bytes, tuple_format: str, path: str, block_offset: int) -> dict[str, list[Any]]:
    """The rows of one block's payload as column lists (keys: ``rows.output_keys(tuple_format)``); raises
    :class:`~spark_logsource.errors.CorruptDataError` naming ``path`` and ``block_offset`` for bad rows."""

#: The columns of :meth:`_ColumnBuilder.take`, in order ("offset", the scalars, the four values, their Variant
#: metadata, "corrupt").
COLUMNS: tuple[str, ...]

#: (null_count, validity bitmap or None, data, offsets or None) of one column.
_Part = tuple[int, Any, Any, Any]

class _ColumnBuilder:
    """Rows of block payloads accumulated as Arrow buffers (validity, offsets, data), handed over a batch at a time."""

    def __init__(self, tuple_format: str) -> None: ...
    @property
    def rows(self) -> int:
        """Rows held."""
    @property
    def bytes(self) -> int:
        """Bytes held that count towards the batch byte cap (values, Variant metadata, corrupt messages)."""
    def add_payload(self, payload: builtins.bytes, path: str, block_offset: int) -> int:
        """Decode one block payload; the number of rows added. CorruptDataError (nothing added) for bad rows."""
    def add_corrupt(self, block_offset: int, message: str) -> None:
        """One corrupt-record row: offset and message set, every other column null."""
    def take(self, max_rows: int, max_bytes: int,
             alloc: Callable[[int], Any] | None = None) -> tuple[int, tuple[_Part | None, ...]]:
        """Remove and return the next batch's rows: (n, one part per COLUMNS entry, None where the format has none).
        Buffers are bytes, or what ``alloc(size)`` returns (an object with a writable buffer)."""

ColumnBuilder: type[_ColumnBuilder]
