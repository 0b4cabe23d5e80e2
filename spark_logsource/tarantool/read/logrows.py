"""The rows of some spaces of a WAL directory as Python values, with their place in the log (for the typed views).

The typed views (``view=space``, ``view=state``) and the catalog (``catalog.py``) need rows one by one, with
their body values decoded, and a position that orders every row of one instance's directory: ``(signature,
kind, offset, row)`` where ``signature`` is the vclock signature in the file name (``%020d.snap|.xlog``),
``kind`` 0 for a snapshot and 1 for an xlog (a snapshot holds the state *at* its signature, the xlog of the same
name what follows), ``offset`` the block offset and ``row`` the row's index in its block.  Rows are read with
the ``msgpack`` tuple format (values exactly as stored) and unpacked with Tarantool's MP_EXT types.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
import pyarrow as pa

from spark_logsource.errors import CorruptDataError
from spark_logsource.filters import Predicate, apply_predicates
from spark_logsource.io.fs import base_name, display_name, open_input
from spark_logsource.options import CommonOptions, ParseMode
from spark_logsource.tarantool.decode.mpext import ext_hook
from spark_logsource.tarantool.read.reader import XlogReadOptions, iter_file_batches, read_meta

__all__ = ["LogRow", "Position", "file_key", "iter_rows", "read_vclock", "unpack"]

Position = tuple[int, int, int, int]
_NAME = re.compile(r"^(\d+)\.(snap|xlog)(?:\.inprogress)?$")
_KIND = {"snap": 0, "xlog": 1}
_MAX_SIGNATURE = (1 << 63) - 1


def file_key(uri: str) -> tuple[int, int]:
    """``(signature, kind)`` of a Tarantool log file name; a name Tarantool would not write sorts last."""
    m = _NAME.match(base_name(uri))
    if m is None:
        return (_MAX_SIGNATURE, 1)
    return (int(m.group(1)), _KIND[m.group(2)])


def is_snapshot(uri: str) -> bool:
    return base_name(uri).split(".")[1:2] == ["snap"]


def unpack(data: bytes | None) -> Any:
    """One stored msgpack value → Python (str with surrogate escapes for invalid UTF-8, MP_EXT decoded)."""
    if data is None:
        return None
    return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=ext_hook, timestamp=3,
                           unicode_errors="surrogateescape")


@dataclass(slots=True)
class LogRow:
    """One row of a space, values decoded; ``error`` set (and the rest empty) for a bad region of the file."""

    path: str
    position: Position
    lsn: int | None = None
    replica_id: int | None = None
    tsn: int | None = None
    timestamp: int | None = None  # microseconds since the epoch
    type: str | None = None
    space_id: int | None = None
    index_id: int | None = None
    key: Any = None
    tuple: Any = None
    ops: Any = None
    index_base: int = 0
    error: CorruptDataError | None = None

    @property
    def offset(self) -> int:
        return self.position[2]


def read_vclock(uri: str) -> dict[int, int]:
    """The ``VClock:`` of a file's meta header."""
    with open_input(uri) as source:
        return read_meta(source, display_name(uri)).vclock


def iter_rows(uri: str, space_ids: Sequence[int], common: CommonOptions,
              predicates: Sequence[Predicate] = (), start: int = 0, end: int | None = None) -> Iterator[LogRow]:
    """Every row of ``space_ids`` in one file, in file order, plus one ``LogRow`` with ``error`` per bad region.

    Bad regions are always returned (whatever ``common.mode`` says): the caller applies the mode.  ``predicates``
    (on the raw columns: ``lsn``, ``replica_id``, ``type`` ...) filter good rows; ``start``/``end`` is a split's
    byte range.
    """
    path = display_name(uri)
    signature, kind = file_key(uri)
    options = XlogReadOptions(tuple_format="msgpack",
                              common=dataclasses.replace(common, mode=ParseMode.PERMISSIVE))
    corrupt = options.common.corrupt_column
    wanted = [Predicate("space_id", "in", tuple(space_ids))]
    with open_input(uri) as source:
        block, row = -1, 0
        for batch in iter_file_batches(source, path, start=start, end=end, options=options):
            # row numbers count every row of a block, so they are counted before filtering
            offsets = batch.column("offset").to_pylist()
            index_in_block = []
            for off in offsets:
                if off != block:
                    block, row = off, 0
                index_in_block.append(row)
                row += 1
            kept = apply_predicates(batch.append_column("_row", pa.array(range(len(batch)), pa.int64())),
                                    [*wanted, *predicates], keep_rows_with=corrupt)
            if not len(kept):
                continue
            # only the kept rows become Python values; timestamps stay integer microseconds (cheaper than datetime)
            cols = {name: kept.column(name).to_pylist() for name in (
                "_row", corrupt, "lsn", "replica_id", "tsn", "type", "space_id", "index_id", "key", "tuple", "ops",
                "extra")}
            cols["timestamp"] = kept.column("timestamp").cast(pa.int64()).to_pylist()
            for j, i in enumerate(cols["_row"]):
                pos = (signature, kind, offsets[i], index_in_block[i])
                if cols[corrupt][j] is not None:
                    yield LogRow(path, pos, error=CorruptDataError(path, offsets[i], _reason(cols[corrupt][j], path)))
                    continue
                extra = cols["extra"][j]
                base = 0
                if extra is not None:
                    extra = unpack(extra)
                    base = extra.get("index_base", 0) if isinstance(extra, dict) else 0
                yield LogRow(path, pos, cols["lsn"][j], cols["replica_id"][j], cols["tsn"][j], cols["timestamp"][j],
                             cols["type"][j], cols["space_id"][j], cols["index_id"][j], unpack(cols["key"][j]),
                             unpack(cols["tuple"][j]), unpack(cols["ops"][j]), base if isinstance(base, int) else 0)


def _reason(message: str, path: str) -> str:
    """The reason part of a corrupt-record message (its ``path at byte N:`` prefix is rebuilt by the error)."""
    head, sep, rest = message.partition(": ")
    return rest if sep and head.startswith(path) else message
