"""Rows events straight to encoded row images: Spark Variant ``(value, metadata)`` pairs or JSON text.

This is the narrow boundary between the binlog reader and the compiled kernel ``spark_logsource.mysql._kernel``
(``_kernel.c``). :func:`encode_rows_event` takes the body of one rows event and returns, per row, the before and
after images already encoded; :func:`encode_rows_event_py` is the pure-Python reference it must equal:
:func:`spark_logsource.mysql.decode.rows.parse_rows_event` (the reference decoder, verified against
``mariadb-binlog``), then :func:`spark_logsource.arrow.variant.encode_variant` or
:func:`spark_logsource.arrow.jsontext.to_json` of each row dict.

Output (:class:`EncodedRows`): ``before`` and ``after`` are each None where the event has no such image (insert
before, delete after) or an :class:`ImageColumn` of ``n`` images as Arrow column parts — int32 end offsets and the
bytes back to back, of the images (Variant values, or JSON text as UTF-8) and, for Variant, of their metadata — so
the kernel hands over a rows event as a few bytes objects, without one Python object per row, and the batch
builder (:mod:`.batches`) joins them into Arrow arrays with ``pa.Array.from_buffers``.

How the compiled path works. The post-header, column count and column bitmaps of a well-formed uncompressed event
are read by the kernel (``rows_head``, which returns None for anything else); the rest are parsed here by rows.py's
``rows_head`` (its checks, its errors), MariaDB compressed rows events (166–171) are inflated here with
:func:`~spark_logsource.mysql.binlog.compression.mariadb_uncompress`, and for each (TABLE_MAP, present-columns bitmap)
a compact plan is built once and cached on ``TableMap.row_decoder_cache`` (and shared by equal TableMaps of
later transactions): per present column its value kind (integer width and signedness, FLOAT, DOUBLE, DECIMAL
precision/scale, DATE, YEAR, DATETIME2 / TIMESTAMP2 / TIME2 fsp, old TIMESTAMP / DATETIME / TIME, length-prefixed
text with its charset, ENUM / SET with their names, BIT, binary GEOMETRY / VECTOR, NULL), its JSON member prefix,
and for the image as a whole the sorted key order and the Variant metadata of its key set (made by
``encode_variant`` itself, so it is canonical by construction). The C kernel then decodes every row image directly
to Variant / JSON bytes, raising the same CorruptDataError subclasses at the same offsets with the same messages
as the Python decoder.

Charsets in the kernel: utf8/utf8mb3/utf8mb4 and unknown (NO_LOG metadata) are validated as UTF-8 (invalid →
bytes); binary (63) → bytes; one-byte charsets (latin1 = Python's cp1252 as column_types maps it, ascii, cp1250,
cp1251, koi8r, greek, …) through a 256-entry table made from Python's own codec (a byte the codec refuses →
bytes); any other charset (gbk, utf16, sjis, …) through CPython's codec (``PyUnicode_Decode``), as values.py does.
Zero / invalid dates and datetimes become the same strings as in values.py, in C.

Whole events go to the Python reference (correctness first; these are rare):

* PARTIAL_UPDATE_ROWS (39, MySQL JSON diffs);
* images holding a MySQL JSON column (type 245: the value is a nested document whose keys join the metadata);
* BIT columns wider than 8 bytes (only corrupt metadata makes them) and images whose column keys repeat;
* every event when the kernel is not built or ``SPARK_LOGSOURCE_PURE_PYTHON=1``.

An image with no column present while row data remains is a CorruptDataError("row image without columns") on both
paths (``parse_rows_event`` checks that every row consumes bytes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_logsource.arrow.jsontext import to_json
from spark_logsource.arrow.variant import encode_variant
from spark_logsource.errors import OptionError, UnsupportedDataError
from spark_logsource.mysql.binlog.compression import DEFAULT_MAX_UNCOMPRESSED
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.decode import column_types as ct
from spark_logsource.mysql.decode.decimal import decimal_binary_size
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.decode.rows import parse_rows_event, rows_data, rows_head
from spark_logsource.mysql.decode.tablemap import TableMap, string_length_from_meta
from spark_logsource.mysql.decode.values import column_decoder
from spark_logsource.native import import_kernel, load_kernel

__all__ = ["KERNEL_AVAILABLE", "OP_CODES", "PARTIAL_UPDATE_ROWS", "EncodedRows", "ImageColumn", "KernelEvent",
           "encode_rows_event", "encode_rows_event_c", "encode_rows_event_py", "kernel_event", "kernel_head",
           "kernel_plans", "kernel_rows", "pack_images"]

log = logging.getLogger(__name__)

#: The compiled kernel when built (tests compare it with the reference even under SPARK_LOGSOURCE_PURE_PYTHON=1).
_kernel = import_kernel("spark_logsource.mysql._kernel")
#: True when the compiled kernel imported (it may still be bypassed by SPARK_LOGSOURCE_PURE_PYTHON=1).
KERNEL_AVAILABLE = _kernel is not None

ROW_FORMATS = ("variant", "json")

PARTIAL_UPDATE_ROWS = 39
# Rows events whose head the kernel reads (rows_head): v1 and v2, not compressed (their images are inflated first).
_FAST_OPS = {23: "insert", 24: "update", 25: "delete", 30: "insert", 31: "update", 32: "delete"}
_FAST_V2 = frozenset({30, 31, 32})
#: The kernel's op numbers (OP_INSERT / OP_UPDATE / OP_DELETE in _kernel.h).
OP_CODES = {"insert": 0, "update": 1, "delete": 2}

# Value kinds of the kernel: enum mk_kind in _kernel.h, which _kernel.c exports (a test compares both).
K_NULL, K_INT, K_FLOAT, K_DOUBLE, K_DECIMAL, K_DATE, K_YEAR = 0, 1, 2, 3, 4, 5, 6
K_DATETIME2, K_TIMESTAMP2, K_TIME2, K_TIMESTAMP_OLD, K_DATETIME_OLD, K_TIME_OLD = 7, 8, 9, 10, 11, 12
K_TEXT, K_ENUM, K_SET, K_BIT = 13, 14, 15, 16
# Charset kinds of K_TEXT: enum mk_charset in _kernel.h (exported likewise).
CS_UTF8, CS_BINARY, CS_TABLE, CS_CODEC = 0, 1, 2, 3

_INT_WIDTHS = {ct.TINY: 1, ct.SHORT: 2, ct.INT24: 3, ct.LONG: 4, ct.LONGLONG: 8}
_FALLBACK = "python"
_INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class ImageColumn:
    """``n`` encoded images as Arrow column parts: ``ends`` holds the int32 (little-endian) end offset of each
    image in ``data``; ``meta_ends`` / ``meta`` the same for their Variant metadata (None for JSON text)."""

    n: int
    ends: bytes
    data: bytes
    meta_ends: bytes | None = None
    meta: bytes | None = None

    @property
    def size(self) -> int:
        """Bytes of the images and their metadata (what the batch byte cap counts)."""
        return len(self.data) + (len(self.meta) if self.meta is not None else 0)

    def images(self) -> list[bytes]:
        """The images one by one (for tests and diagnostics)."""
        return _split(self.ends, self.data, self.n)

    def metadatas(self) -> list[bytes]:
        """The Variant metadata of each image (JSON: an empty list)."""
        return [] if self.meta is None or self.meta_ends is None else _split(self.meta_ends, self.meta, self.n)


def _split(ends: bytes, data: bytes, n: int) -> list[bytes]:
    bounds = [0, *np.frombuffer(ends, dtype="<i4", count=n).tolist()]
    return [data[bounds[i]:bounds[i + 1]] for i in range(n)]


def _ends(chunks: list[bytes]) -> bytes:
    lengths = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
    ends = np.cumsum(lengths)
    if len(ends) and ends[-1] > _INT32_MAX:
        raise OverflowError("the row images of one rows event exceed 2 GiB")
    return ends.astype("<i4").tobytes()


def pack_images(images: list[bytes] | list[str], metadatas: list[bytes] | None = None) -> ImageColumn:
    """The :class:`ImageColumn` of encoded images (JSON text or Variant values with their ``metadatas``)."""
    data = [i.encode("utf-8") if isinstance(i, str) else i for i in images]
    if metadatas is None:
        return ImageColumn(len(data), _ends(data), b"".join(data))
    return ImageColumn(len(data), _ends(data), b"".join(data), _ends(metadatas), b"".join(metadatas))


@dataclass(slots=True)
class EncodedRows:
    """The rows of one rows event, encoded (see the module docstring for the shape of ``before``/``after``)."""

    table_id: int
    flags: int
    op: str
    n: int
    before: ImageColumn | None
    after: ImageColumn | None


def _check_row_format(row_format: str) -> bool:
    if row_format not in ROW_FORMATS:
        raise OptionError("rowFormat", f"must be one of {', '.join(ROW_FORMATS)}, not {row_format!r}")
    return row_format == "json"


# ---- the reference ------------------------------------------------------------------------------------------


def encode_rows_event_py(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
                         table_maps: Mapping[int, TableMap], path: str | None, offset: int, row_format: str,
                         max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> EncodedRows:
    """Reference: ``parse_rows_event`` then ``to_json`` / ``encode_variant`` of every row image."""
    as_json = _check_row_format(row_format)
    try:
        event = parse_rows_event(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                                 table_maps=table_maps, max_uncompressed=max_uncompressed)
    except BinlogDecodeError as exc:
        raise exc.at(path, offset + HEADER_LEN) from None
    n = len(event.rows)
    before = _side([b for b, _ in event.rows], as_json) if event.op != "insert" else None
    after = _side([a for _, a in event.rows], as_json) if event.op != "delete" else None
    return EncodedRows(event.table_id, event.flags, event.op, n, before, after)


def _side(images: list[dict[str, Any] | None], as_json: bool) -> ImageColumn:
    if as_json:
        return pack_images([to_json(image) for image in images])
    values: list[bytes] = []
    metadatas: list[bytes] = []
    for image in images:
        value, metadata = encode_variant(image)
        values.append(value)
        metadatas.append(metadata)
    return pack_images(values, metadatas)


# ---- plans --------------------------------------------------------------------------------------------------


def _column_spec(table_map: TableMap, index: int) -> tuple[Any, ...] | str:
    """The kernel's description of one column, ``(kind, a, b, c, names, codec, table, what)``, or _FALLBACK.

    ``what`` is the name values.py gives the value in its truncation messages; ``names`` the UTF-8 ENUM / SET
    names; ``codec`` / ``table`` the charset of K_TEXT columns (see :func:`_text_spec`).
    """
    col = table_map.columns[index]
    t = col.real_type
    meta = col.meta if isinstance(col.meta, int) else 0
    if t in _INT_WIDTHS:
        return (K_INT, _INT_WIDTHS[t], 0 if col.unsigned else 1, 0, None, None, None, "MEDIUMINT")
    if t == ct.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        return (K_DECIMAL, precision, scale, decimal_binary_size(precision, scale), None, None, None, "DECIMAL")
    simple = _SIMPLE_KINDS.get(t)
    if simple is not None:
        return (simple, min(meta, 6), 0, 0, None, None, None, ct.TYPE_NAMES[t] if t != ct.NEWDATE else "DATE")
    if t == ct.VARCHAR:
        return _text_spec(1 if meta < 256 else 2, col.charset, "VARCHAR")
    if t in (ct.STRING, ct.VAR_STRING):
        return _text_spec(1 if string_length_from_meta(meta) < 256 else 2, col.charset, "CHAR")
    if t in (ct.BLOB, ct.TINY_BLOB, ct.MEDIUM_BLOB, ct.LONG_BLOB):
        return _text_spec(meta, col.charset, "BLOB")
    if t in (ct.GEOMETRY, ct.VECTOR):
        return (K_TEXT, meta, CS_BINARY, 0, None, None, None, ct.TYPE_NAMES[t])
    if t == ct.ENUM:
        names = None if col.enum_values is None else tuple(v.encode("utf-8") for v in col.enum_values)
        return (K_ENUM, 2 if (meta & 0xFF) == 2 else 1, 0, 0, names, None, None, "ENUM")
    if t == ct.SET:
        names = None if col.set_values is None else tuple(v.encode("utf-8") for v in col.set_values)
        return (K_SET, max(1, min(meta & 0xFF, 8)), 0, 0, names, None, None, "SET")
    if t == ct.BIT:
        size = (meta >> 8) + (1 if meta & 0xFF else 0)
        return (K_BIT, size, 0, 0, None, None, None, "BIT") if size <= 8 else _FALLBACK
    return _FALLBACK  # MySQL JSON (anything column_decoder refuses was rejected before we get here)


# Types whose spec is (kind, fsp) only; fsp is ignored by the kinds without a fraction.
_SIMPLE_KINDS = {
    ct.FLOAT: K_FLOAT, ct.DOUBLE: K_DOUBLE, ct.DATE: K_DATE, ct.NEWDATE: K_DATE, ct.YEAR: K_YEAR,
    ct.DATETIME2: K_DATETIME2, ct.TIMESTAMP2: K_TIMESTAMP2, ct.TIME2: K_TIME2, ct.TIMESTAMP: K_TIMESTAMP_OLD,
    ct.DATETIME: K_DATETIME_OLD, ct.TIME: K_TIME_OLD, ct.NULL: K_NULL,
}

# Python codecs that decode byte by byte (charmap codecs and ascii): the kernel gets a 256-entry table.
_SINGLE_BYTE_CODECS = frozenset({
    "ascii", "cp1250", "cp1251", "cp1252", "cp1256", "cp1257", "cp850", "cp852", "cp866", "iso8859-2",
    "iso8859-7", "iso8859-8", "iso8859-9", "iso8859-13", "koi8-r", "koi8-u", "mac-latin2", "mac-roman", "tis-620",
})
_TABLES: dict[str, tuple[int, ...]] = {}


def _byte_table(codec: str) -> tuple[int, ...]:
    """Code point of each byte under ``codec`` (-1 where the codec refuses the byte), from Python's codec."""
    table = _TABLES.get(codec)
    if table is None:
        points = []
        for byte in range(256):
            try:
                text = bytes((byte,)).decode(codec)
            except UnicodeDecodeError:
                points.append(-1)
                continue
            if len(text) != 1 or "\ud800" <= text <= "\udfff":
                raise ValueError(f"codec {codec} is not a one-byte-one-character codec")
            points.append(ord(text))
        table = _TABLES[codec] = tuple(points)
    return table


def _text_spec(prefix: int, collation: int | None, what: str) -> tuple[Any, ...]:
    """K_TEXT spec; the charset follows values._text_converter (binary → bytes, None → UTF-8 or bytes)."""
    codec = ct.codec_for_collation(collation)
    if codec == "binary":
        return (K_TEXT, prefix, CS_BINARY, 0, None, None, None, what)
    if codec is None or codec == "utf-8":
        return (K_TEXT, prefix, CS_UTF8, 0, None, None, None, what)
    if codec in _SINGLE_BYTE_CODECS:
        return (K_TEXT, prefix, CS_TABLE, 0, None, codec, _byte_table(codec), what)
    return (K_TEXT, prefix, CS_CODEC, 0, None, codec, None, what)


def _check_columns(table_map: TableMap, path: str | None, offset: int) -> None:
    """Refuse unusable column metadata exactly as rows.py does (column_decoder's ValueError)."""
    if table_map.row_decoder_cache.get(("kernel", "checked")):
        return
    try:
        for col in table_map.columns:
            column_decoder(col)
    except ValueError as exc:
        raise UnsupportedDataError(path, offset, f"table {table_map.database}.{table_map.table}: {exc}") from None
    table_map.row_decoder_cache[("kernel", "checked")] = True


_SHARED_PLANS: dict[tuple[Any, ...], Any] = {}
_SHARED_PLANS_LIMIT = 4096


def _plan(table_map: TableMap, present: int, path: str | None, offset: int) -> Any:
    """The compiled plan of one image shape, or None when the event must take the Python path.

    Cached on the TableMap, and across TableMaps by (database, table, columns, present): every transaction has
    its own TABLE_MAP events, so a table written by many small transactions reuses one plan.
    """
    cache = table_map.row_decoder_cache
    key = ("kernel", present)
    if key in cache:
        return cache[key]
    shared_key = (table_map.database, table_map.table, table_map.columns, present)
    if shared_key in _SHARED_PLANS:
        plan = cache[key] = _SHARED_PLANS[shared_key]
        return plan
    _check_columns(table_map, path, offset)
    plan = cache[key] = _build_plan(table_map, present)
    if len(_SHARED_PLANS) >= _SHARED_PLANS_LIMIT:
        _SHARED_PLANS.clear()
    _SHARED_PLANS[shared_key] = plan
    return plan


def _build_plan(table_map: TableMap, present: int) -> Any:
    """Specs of the present columns, the key order of the Variant object, its metadata and JSON member prefixes."""
    indexes = [i for i in range(len(table_map.columns)) if present >> i & 1]
    keys = [table_map.key_for(i) for i in indexes]
    specs = [_column_spec(table_map, i) for i in indexes]
    plan = None
    if _FALLBACK not in specs and len(set(keys)) == len(keys):
        order = sorted(range(len(keys)), key=lambda j: keys[j].encode("utf-8"))
        _, metadata = encode_variant(dict.fromkeys(keys))
        json_keys = [to_json(k).encode("utf-8") + b":" for k in keys]
        assert _kernel is not None  # the compiled path only: its callers check that the kernel is built
        plan = _kernel.compile_plan(specs, order, metadata, json_keys)
    return plan


# ---- the compiled path --------------------------------------------------------------------------------------


def kernel_head(event_type: int, body: bytes | memoryview, table_id_size: int, post_header_len: int,
                table_maps: Mapping[int, TableMap]) -> tuple[str, tuple[Any, ...], TableMap] | None:
    """``(op, head, table_map)`` of a rows event whose head the kernel reads (``head`` as ``_kernel.rows_head``
    gives it) and whose TABLE_MAP is known with as many columns, else None (the Python reader decides)."""
    op = _FAST_OPS.get(event_type)
    if op is None:
        return None
    assert _kernel is not None  # the compiled path only: its callers check that the kernel is built
    head = _kernel.rows_head(body, table_id_size, post_header_len, event_type in _FAST_V2, op == "update")
    table_map = None if head is None else table_maps.get(head[0])
    if head is None or table_map is None or len(table_map.columns) != head[3]:
        return None
    return op, head, table_map


def kernel_plans(table_map: TableMap, op: str, present: int, present_after: int, path: str | None,
                 offset: int) -> tuple[Any, Any, str]:
    """The compiled plans of an event's images (before/after; None: take the Python path) and its table's label,
    looked up once per event: cached on the TableMap by op and column bitmaps."""
    cache = table_map.row_decoder_cache
    entry = cache.get((op, present, present_after))
    if entry is None:
        plan = _plan(table_map, present, path, offset)
        plan_after = _plan(table_map, present_after, path, offset) if op == "update" else plan
        entry = cache[(op, present, present_after)] = (plan, plan_after, f"{table_map.database}.{table_map.table}")
    return entry


def encode_rows_event_c(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
                        table_maps: Mapping[int, TableMap], path: str | None, offset: int, row_format: str,
                        max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> EncodedRows:
    """The compiled path (requires the kernel); same arguments, result and errors as the reference."""
    as_json = _check_row_format(row_format)
    if event_type == PARTIAL_UPDATE_ROWS:
        return encode_rows_event_py(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                                    table_maps=table_maps, path=path, offset=offset, row_format=row_format,
                                    max_uncompressed=max_uncompressed)
    ev = kernel_event(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                      table_maps=table_maps, path=path, offset=offset, max_uncompressed=max_uncompressed)
    plan, plan_after, label = kernel_plans(ev.table_map, ev.op, ev.present, ev.present_after, path, offset)
    if plan is None or plan_after is None:
        return encode_rows_event_py(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                                    table_maps=table_maps, path=path, offset=offset, row_format=row_format,
                                    max_uncompressed=max_uncompressed)
    assert _kernel is not None  # a plan is compiled by the kernel: there is one
    try:
        n, first, second = _kernel.encode_rows(ev.data, ev.pos, plan, plan_after, OP_CODES[ev.op], as_json,
                                               ev.data_base, ev.in_block, label)
    except BinlogDecodeError as exc:  # the kernel's offsets are the file's already
        raise exc.at(path, 0) from None
    return kernel_rows(ev.table_id, ev.flags, ev.op, n, first, second)


@dataclass(slots=True)
class KernelEvent:
    """What the kernel needs of a rows event: its head, and where its row images are (``data[pos:]``; offsets in
    errors are ``data_base`` + position, or ``data_base`` alone when ``in_block``: an inflated compressed event)."""

    op: str
    table_id: int
    flags: int
    present: int
    present_after: int
    table_map: TableMap
    data: bytes | memoryview
    pos: int
    data_base: int
    in_block: bool


def kernel_event(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
                 table_maps: Mapping[int, TableMap], path: str | None, offset: int,
                 max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> KernelEvent:
    """The head and row data of a rows event other than PARTIAL_UPDATE_ROWS (rows.py's errors for bad ones)."""
    fast = kernel_head(event_type, body, table_id_size, post_header_len, table_maps)
    if fast is not None:
        # the common case, read by the kernel: a well-formed uncompressed head (what rows_head returns)
        op, (table_id, flags, pos, _ncols, present, present_after), table_map = fast
        return KernelEvent(op, table_id, flags, present, present_after, table_map, body, pos, offset + 19, False)
    try:
        head = rows_head(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                         table_maps=table_maps)
        data, pos, data_at, in_block = rows_data(event_type, head, max_uncompressed=max_uncompressed)
    except BinlogDecodeError as exc:
        raise exc.at(path, offset + HEADER_LEN) from None
    return KernelEvent(head.op, head.table_id, head.flags, head.present, head.present_after, head.table_map, data,
                       pos, offset + HEADER_LEN + data_at, in_block)


def kernel_rows(table_id: int, flags: int, op: str, n: int, first: tuple[Any, ...],
                second: tuple[Any, ...] | None) -> EncodedRows:
    """The kernel's two sides as EncodedRows: ``first`` / ``second`` are the images in event order (update: before,
    after; insert: after; delete: before)."""
    images = ImageColumn(n, *first)
    if op == "insert":
        return EncodedRows(table_id, flags, op, n, None, images)
    if op == "delete":
        return EncodedRows(table_id, flags, op, n, images, None)
    return EncodedRows(table_id, flags, op, n, images, ImageColumn(n, *second))  # type: ignore[misc]


def _use_kernel() -> bool:
    # asked per file, not bound at import, so a test can flip the switch with monkeypatch
    return load_kernel("spark_logsource.mysql._kernel") is not None


def rows_encoder() -> Callable[..., EncodedRows]:
    """The implementation :func:`encode_rows_event` would use now (readers pick it once per file)."""
    return encode_rows_event_c if _use_kernel() else encode_rows_event_py


def encode_rows_event(event_type: int, body: bytes | memoryview, *, post_header_len: int, table_id_size: int,
                      table_maps: Mapping[int, TableMap], path: str | None, offset: int, row_format: str,
                      max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> EncodedRows:
    """Decode and encode one rows event body (after the 19-byte header, CRC removed).

    The compiled kernel when it is built and ``SPARK_LOGSOURCE_PURE_PYTHON`` is not ``"1"``, else the Python
    reference; both give the same result and raise the same errors (CorruptDataError subclasses carrying
    ``path`` and a file offset) for the same input.
    """
    return rows_encoder()(event_type, body, post_header_len=post_header_len, table_id_size=table_id_size,
                table_maps=table_maps, path=path, offset=offset, row_format=row_format,
                max_uncompressed=max_uncompressed)
