"""Stub of the YugabyteDB WAL kernel (``_kernel.c``, ``_kernel_proto.c``, ``_kernel_specs.c``, and for the writes
view ``_kernel_writes.c``, ``_kernel_tables.c``): both views' rows from entry batches, the superseded queue, and
record batches as Arrow buffers.

Layouts: docs/formats/yugabyte-wal.md ("Segment layout", "Protobuf wire format", "Rows"). The Python twins are
``messages.py`` / ``proto.py`` (decoding), ``docdb.py`` (pairs) and ``reader.py`` (the queue and the batches);
``fast.py`` drives this.
"""

from typing import Any

#: What the kernel reads through the buffer protocol.
_Bytes = bytes | bytearray | memoryview

class _Builder:
    def __init__(self, include_superseded: bool, max_pending: int, count_message: bool, writes: bool = False,
                 low: int | None = None, high: int | None = None) -> None:
        """``writes``: rows of the writes view (one per pair; entries outside ``low``..``high`` keep none)."""
    def add_context(self, head_bytes: int) -> int:
        """A number for the rows of one segment of one tablet; ``head_bytes``: its file, table and tablet ids'."""
    def decode(self, data: _Bytes, base: int, ctx: int, verify: bool) -> tuple[int, int, int | None, int | None]:
        """The entry batches of ``data`` (the segment from byte ``base``) up to the first one not taken whole:
        (where it stopped, entries added, their lowest and highest index)."""
    def add_entry(self, ctx: int, offset: int, entry_in_batch: int, term: int | None, index: int | None,
                  hybrid_time: int | None, op_type: str | None, committed_term: int | None,
                  committed_index: int | None, transaction_id: str | None, transaction_status: str | None,
                  details_value: bytes, details_metadata: bytes, committed: int | None) -> None:
        """An entry the reference decoded (supersedes, is appended, releases up to ``committed``)."""
    def add_corrupt(self, ctx: int, offset: int, message: str) -> None:
        """A corrupt-record row."""
    def add_writes(self, ctx: int, offset: int, term: int | None, index: int | None, hybrid_time: int | None,
                   transaction_id: str | None, committed: int | None, rows: list[tuple[Any, ...]]) -> None:
        """An entry the reference decoded, in the writes view: its rows as ``fast.py`` FastBuilder.add_writes
        makes them (none: the entry only takes its place in the queue)."""
    def set_catalog(self, schemas: list[tuple[Any, ...]], current: int | None) -> None:
        """The tablet's schemas (``fast.py`` FastBuilder.sync), by which the writes view names and lays out."""
    def supersede_from(self, index: int) -> None:
        """Every pending entry of an index at least ``index`` is superseded."""
    def release_all(self) -> None:
        """Every pending row is final."""
    def pending(self) -> int:
        """Rows held: pending, or released and not handed out."""
    def take(self, batch_size: int, max_bytes: int, final: bool) -> tuple[Any, ...] | None:
        """The next batch of released rows when due (``fast.py`` FastBuilder._batch reads the tuple)."""

Builder: type[_Builder]

def set_specs(specs: list[list[tuple[int, str, int, bool, int, int]]], enums: list[list[tuple[int, str]]],
              replicate: int, write_batch: int) -> None:
    """The message specs of ``messages.kernel_specs()``: the kernel decodes by these, so the twins share them."""

def crc32c(data: _Bytes) -> int:
    """CRC-32C of ``data`` (what the ``crc32c`` package computes)."""
