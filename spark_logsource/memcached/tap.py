"""TAP packets → rows: the schema, a per-packet reference decoder, and the bulk decoder used for reading.

Body of every TAP packet (``docs/formats/memcached-tap.md``): ``extras | engine-specific | key | value``, where
the engine-specific length is the big-endian u16 at extras[0:2] and counts in the body length but not in the
extras length. Item flags are little-endian on the wire unless the packet's TAP flags carry
NETWORK_BYTE_ORDER (0x04); the ``flags`` column holds them as the storing client set them.

:func:`decode_packet` is the readable reference (one packet → one row dict); :func:`decode_bulk` computes the
same columns for many packets at once and is what readers use: the C kernel writes the Arrow buffers of every
column (:func:`_columns_kernel`), its twin does it with numpy (:func:`_columns_numpy`). Tests hold all three equal.
"""

from __future__ import annotations

import functools
import logging
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_logsource.arrow.columns import array_from_parts, string_column
from spark_logsource.errors import CorruptDataError, DecodeError
from spark_logsource.memcached.protocol import (
    HEADER_SIZE,
    OP_TAP_CHECKPOINT_END,
    OP_TAP_CHECKPOINT_START,
    OP_TAP_CONNECT,
    OP_TAP_DELETE,
    OP_TAP_MUTATION,
    OP_TAP_OPAQUE,
    OP_TAP_VBUCKET_SET,
    REQUEST_MAGIC,
    TAP_EXTRAS,
    opcode_name,
    read_header,
    status_name,
)
from spark_logsource.native import load_kernel
from spark_logsource.options import ParseMode

log = logging.getLogger(__name__)

_KERNEL = load_kernel("spark_logsource.memcached._kernel")

TAP_FLAG_ACK = 0x01
TAP_FLAG_NO_VALUE = 0x02
TAP_FLAG_NETWORK_BYTE_ORDER = 0x04

VBUCKET_STATES = {1: "active", 2: "replica", 3: "pending", 4: "dead"}
OPAQUE_CODES = {
    0: "ENABLE_AUTO_NACK",
    1: "INITIAL_VBUCKET_STREAM",
    2: "ENABLE_CHECKPOINT_SYNC",
    3: "OPEN_CHECKPOINT",
    4: "COMPLETE_VB_FILTER_CHANGE",
    5: "CHECKPOINT_PERSISTENCE",
    7: "CLOSE_TAP_STREAM",
    8: "CLOSE_BACKFILL",
}

#: Columns in schema order (before the corrupt-record column).
COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("source", pa.string()),
    ("offset", pa.int64()),
    ("seq", pa.int64()),
    ("opcode", pa.string()),
    ("vbucket", pa.int32()),
    ("key", pa.string()),
    ("key_bytes", pa.binary()),
    ("value", pa.binary()),
    ("flags", pa.int64()),
    ("expiry", pa.int64()),
    ("cas", pa.int64()),
    ("tap_flags", pa.int32()),
    ("ttl", pa.int32()),
    ("engine_specific", pa.binary()),
    ("checkpoint_id", pa.int64()),
    ("vbucket_state", pa.string()),
    ("opaque_code", pa.string()),
)
ROW_COLUMNS = tuple(name for name, _ in COLUMNS[2:])  # what a packet decodes to (source/offset come from outside)

_TAP_OPS = frozenset(TAP_EXTRAS)
_KEYED_OPS = frozenset({OP_TAP_MUTATION, OP_TAP_DELETE})
_ITEM_OPS = frozenset({OP_TAP_MUTATION, OP_TAP_CHECKPOINT_START, OP_TAP_CHECKPOINT_END})
_CHECKPOINT_OPS = frozenset({OP_TAP_CHECKPOINT_START, OP_TAP_CHECKPOINT_END})


def tap_schema(corrupt_column: str | None) -> pa.Schema:
    fields = [pa.field(name, typ) for name, typ in COLUMNS]
    if corrupt_column is not None:
        fields.append(pa.field(corrupt_column, pa.string()))
    return pa.schema(fields)


def _code_name(table: dict[int, str], code: int) -> str:
    return table.get(code, str(code))


class ServerErrorResponse(DecodeError):
    """A response packet with a non-zero status where the server streams requests (a refused TAP_CONNECT)."""

    def __init__(self, pos: int | None, opcode: int, status: int, text: str) -> None:
        what = "TAP_CONNECT" if opcode == OP_TAP_CONNECT else opcode_name(opcode)
        super().__init__(pos, f"server answered {what} with status 0x{status:02x} {status_name(status)}: {text!r}")
        self.opcode = opcode
        self.status = status
        self.text = text


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def decode_packet(packet: bytes) -> dict[str, Any] | None:
    """The row of one whole packet (header + body), or None for a successful response (it carries no change).

    Raises :class:`DecodeError` (position relative to the packet) for a body whose parts do not fit, and
    :class:`ServerErrorResponse` for an error response.
    """
    h = read_header(packet)
    body = packet[HEADER_SIZE:HEADER_SIZE + h.bodylen]
    if len(body) != h.bodylen:
        raise DecodeError(0, f"packet is {len(packet)} bytes, its header says {HEADER_SIZE + h.bodylen}")
    if h.magic != REQUEST_MAGIC:
        if h.status == 0:
            return None
        text = body[h.extlen + h.keylen:].decode("utf-8", "replace")
        raise ServerErrorResponse(0, h.opcode, h.status, text)
    row: dict[str, Any] = dict.fromkeys(ROW_COLUMNS)
    # CAS and checkpoint ids are u64 on the wire and Spark longs here: the same 64 bits, read as signed
    row.update(seq=h.opaque, opcode=opcode_name(h.opcode), vbucket=h.vbucket, cas=_signed64(h.cas))
    nes = 0
    if h.opcode in _TAP_OPS:
        nes, tap_flags, ttl = struct.unpack_from(">HHB", body, 0)
        if h.extlen + nes + h.keylen > h.bodylen:
            raise DecodeError(HEADER_SIZE, f"engine-specific length {nes} + extras {h.extlen} + key {h.keylen} "
                                           f"exceed the body length {h.bodylen}")
        row.update(tap_flags=tap_flags, ttl=ttl)
        if h.extlen == 16:
            order = ">I" if tap_flags & TAP_FLAG_NETWORK_BYTE_ORDER else "<I"
            row["flags"] = struct.unpack_from(order, body, 8)[0]
            row["expiry"] = struct.unpack_from(">I", body, 12)[0]
        if nes:
            row["engine_specific"] = es = body[h.extlen:h.extlen + nes]
            if nes >= 4 and h.opcode == OP_TAP_OPAQUE:
                row["opaque_code"] = _code_name(OPAQUE_CODES, struct.unpack_from(">I", es)[0])
            if nes >= 4 and h.opcode == OP_TAP_VBUCKET_SET:
                row["vbucket_state"] = _code_name(VBUCKET_STATES, struct.unpack_from(">I", es)[0])
    else:
        tap_flags = 0
    kstart = h.extlen + nes
    key = body[kstart:kstart + h.keylen]
    value = body[kstart + h.keylen:]
    if h.keylen or h.opcode in _KEYED_OPS:
        try:
            row["key"] = key.decode("utf-8")
        except UnicodeDecodeError:
            row["key"] = key.decode("utf-8", "replace")
            row["key_bytes"] = key
    if h.opcode == OP_TAP_MUTATION:
        row["value"] = None if tap_flags & TAP_FLAG_NO_VALUE else value
    elif value:
        row["value"] = value
    if h.opcode in _CHECKPOINT_OPS and len(value) >= 8:
        row["checkpoint_id"] = struct.unpack_from(">q", value)[0]
    return row


def rows_to_batch(rows: Sequence[dict[str, Any]], source: str, offsets: Sequence[int | None],
                  corrupt: Sequence[str | None] | None, schema: pa.Schema) -> pa.RecordBatch:
    """A batch from reference rows (tests and the slow path); ``corrupt`` rows have every decoded column null."""
    n = len(rows)
    arrays: list[pa.Array] = [string_column(source, n), pa.array(offsets, pa.int64())]
    for name, typ in COLUMNS[2:]:
        arrays.append(pa.array([r.get(name) for r in rows], typ))
    if len(schema) > len(COLUMNS):
        arrays.append(pa.array(corrupt if corrupt is not None else [None] * n, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# --- bulk decoding ------------------------------------------------------------------------------------------------

_MAX_CODE = 16


@functools.cache
def _name_tables() -> tuple[pa.Array, pa.Array, pa.Array]:
    """The names of the opcodes, of the vbucket states and of the opaque codes, by number.

    Built on first use, not at import: the first ``pa.array`` of a process imports pandas (pyarrow checks its
    input for a pandas series), which the command line's start-up need not pay."""
    return (pa.array([opcode_name(i) for i in range(256)], pa.string()),
            pa.array([_code_name(VBUCKET_STATES, i) for i in range(_MAX_CODE)], pa.string()),
            pa.array([_code_name(OPAQUE_CODES, i) for i in range(_MAX_CODE)], pa.string()))


@dataclass(slots=True)
class BulkResult:
    """Rows of many packets: ``columns`` (schema order, without source/offset), and per-row problems.

    ``bad`` maps a row index to the :class:`DecodeError` of that packet (its columns are garbage: the caller
    replaces or drops the row); ``skip`` lists rows that carry no change (successful responses).
    """

    columns: list[pa.Array]
    bad: dict[int, DecodeError]
    skip: list[int]


def _be16(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    r: np.ndarray = (a[p].astype(np.int64) << 8) | a[p + 1]
    return r


def _be32(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    r: np.ndarray = (_be16(a, p) << 16) | _be16(a, p + 2)
    return r


def _le32(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    r: np.ndarray = ((a[p + 3].astype(np.int64) << 24) | (a[p + 2].astype(np.int64) << 16)
                     | (a[p + 1].astype(np.int64) << 8) | a[p])
    return r


def _validity(mask: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(len(mask) - np.count_nonzero(mask))
    if nulls == 0:
        return None, 0
    return pa.array(mask, pa.bool_()).buffers()[1], nulls


_GATHER_INDEX_MAX = 1 << 22  # gather with one index array up to this many bytes; longer spans are copied per row


def _gather(data: bytes | memoryview, a: np.ndarray, starts: np.ndarray, lens: np.ndarray,
            present: np.ndarray) -> pa.Array:
    """A binary column of ``data[starts[i]:starts[i]+lens[i]]``, null where ``present`` is false."""
    n = len(starts)
    lens = np.where(present, lens, 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        values = b""
    elif total <= _GATHER_INDEX_MAX:
        idx = np.repeat(starts - offsets[:-1], lens) + np.arange(total, dtype=np.int64)
        values = a[idx].tobytes()
    else:
        view = memoryview(data)
        values = b"".join([view[s:s + ln] for s, ln in zip(starts.tolist(), lens.tolist(), strict=True) if ln])
    validity, nulls = _validity(present)
    if total >= 1 << 31:
        raise ValueError("a batch of more than 2 GiB of binary data")  # callers bound chunks far below this
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(values)], null_count=nulls)


def _ints(values: np.ndarray, present: np.ndarray | None, typ: pa.DataType) -> pa.Array:
    if present is None or present.all():
        return pa.array(values, typ)
    return pa.array(values, typ, mask=~present)


def _names(dictionary: pa.Array, codes: np.ndarray, present: np.ndarray) -> pa.Array:
    if not present.any():
        return pa.nulls(len(codes), pa.string())
    idx = pa.array(codes.astype(np.int32), pa.int32(), mask=None if present.all() else ~present)
    return dictionary.take(idx)


@dataclass(slots=True)
class _Fields:
    """Every field of many packets as numpy arrays (one entry per packet), before they become Arrow columns."""

    opcode: np.ndarray
    seq: np.ndarray
    vbucket: np.ndarray
    cas: np.ndarray
    flags: np.ndarray
    expiry: np.ndarray
    tap_flags: np.ndarray
    ttl: np.ndarray
    ckpt: np.ndarray
    code: np.ndarray
    bodylen: np.ndarray
    ok: np.ndarray
    tap: np.ndarray
    item: np.ndarray
    ckpt_present: np.ndarray
    state_present: np.ndarray
    opaque_present: np.ndarray
    key: pa.Array
    value: pa.Array
    engine_specific: pa.Array


def _fields_numpy(data: bytes | memoryview, o: np.ndarray) -> _Fields:
    a = np.frombuffer(data, np.uint8)
    magic = a[o]
    opcode = a[o + 1].astype(np.int64)
    keylen = _be16(a, o + 2)
    extlen = a[o + 4].astype(np.int64)
    bodylen = _be32(a, o + 8)
    is_tap = (opcode >= OP_TAP_MUTATION) & (opcode <= OP_TAP_CHECKPOINT_END) & (extlen >= 8)
    ext_at = np.where(is_tap, o + HEADER_SIZE, o)  # keep reads inside the buffer for non-TAP packets
    nes = np.where(is_tap, _be16(a, ext_at), 0)
    tap_flags = np.where(is_tap, _be16(a, ext_at + 2), 0)
    ok = (magic == REQUEST_MAGIC) & (extlen + nes + keylen <= bodylen)
    is_item = is_tap & (extlen == 16)
    item_at = np.where(is_item, o + HEADER_SIZE + 8, o)
    net_order = (tap_flags & TAP_FLAG_NETWORK_BYTE_ORDER) != 0
    es_start = o + HEADER_SIZE + extlen
    key_start = es_start + nes
    value_start = key_start + keylen
    value_len = np.maximum(bodylen - extlen - nes - keylen, 0)
    key_present = ok & ((keylen > 0) | (opcode == OP_TAP_MUTATION) | (opcode == OP_TAP_DELETE))
    value_present = ok & np.where(opcode == OP_TAP_MUTATION, (tap_flags & TAP_FLAG_NO_VALUE) == 0, value_len > 0)
    es_present = ok & (nes > 0)
    code_at = np.where(es_present & (nes >= 4), es_start, o)
    ckpt_present = ok & ((opcode == OP_TAP_CHECKPOINT_START) | (opcode == OP_TAP_CHECKPOINT_END)) & (value_len >= 8)
    ckpt_at = np.where(ckpt_present, value_start, o)
    return _Fields(
        opcode=opcode,
        seq=_be32(a, o + 12),
        vbucket=_be16(a, o + 6),
        cas=((_be32(a, o + 16).astype(np.uint64) << np.uint64(32)) | _be32(a, o + 20).astype(np.uint64)).view(
            np.int64),
        flags=np.where(net_order, _be32(a, item_at), _le32(a, item_at)),
        expiry=_be32(a, item_at + 4),
        tap_flags=tap_flags,
        ttl=np.where(is_tap, a[ext_at + 4], 0),
        ckpt=((_be32(a, ckpt_at).astype(np.uint64) << np.uint64(32))
              | _be32(a, ckpt_at + 4).astype(np.uint64)).view(np.int64),
        code=_be32(a, code_at),
        bodylen=bodylen,
        ok=ok,
        tap=ok & is_tap,
        item=ok & is_item,
        ckpt_present=ckpt_present,
        state_present=es_present & (nes >= 4) & (opcode == OP_TAP_VBUCKET_SET),
        opaque_present=es_present & (nes >= 4) & (opcode == OP_TAP_OPAQUE),
        key=_gather(data, a, key_start, keylen, key_present),
        value=_gather(data, a, value_start, value_len, value_present),
        engine_specific=_gather(data, a, es_start, nes, es_present),
    )


#: Arrow types of the kernel's columns (``_kernel.c``, enum C_*): the decoded part of :data:`COLUMNS`.
_KERNEL_TYPES = tuple(typ for _, typ in COLUMNS[2:])


def _columns_kernel(data: bytes | memoryview, o: np.ndarray) -> tuple[list[pa.Array], list[int]]:
    """The C kernel's columns (Arrow buffers it wrote, from Arrow's memory pool) and the rows it left to Python."""
    assert _KERNEL is not None
    bad, parts = _KERNEL.columns(data, o, pa.allocate_buffer)
    n = len(o)
    columns = [array_from_parts(typ, n, part) for typ, part in zip(_KERNEL_TYPES, parts, strict=True)]
    return columns, np.frombuffer(bad, np.int64).tolist()


def _columns_numpy(data: bytes | memoryview, o: np.ndarray) -> tuple[list[pa.Array], list[int]]:
    """:func:`_columns_kernel` with numpy: every column, and the rows that are not TAP requests whose parts fit."""
    f = _fields_numpy(data, o)
    ok, code = f.ok, f.code
    opcodes, states, opaques = _name_tables()
    key_str, key_bytes = _keys(f.key)
    columns = [
        _ints(f.seq, ok, pa.int64()),
        _names(opcodes, f.opcode, ok),
        _ints(f.vbucket, ok, pa.int32()),
        key_str,
        key_bytes,
        f.value,
        _ints(f.flags, f.item, pa.int64()),
        _ints(f.expiry, f.item, pa.int64()),
        _ints(f.cas, ok, pa.int64()),
        _ints(f.tap_flags, f.tap, pa.int32()),
        _ints(f.ttl, f.tap, pa.int32()),
        f.engine_specific,
        _ints(f.ckpt, f.ckpt_present, pa.int64()),
        _names(states, np.minimum(code, _MAX_CODE - 1), f.state_present & (code < _MAX_CODE)),
        _names(opaques, np.minimum(code, _MAX_CODE - 1), f.opaque_present & (code < _MAX_CODE)),
    ]
    # codes beyond the name tables are shown as their number
    for col, present in ((-2, f.state_present), (-1, f.opaque_present)):
        big = present & (code >= _MAX_CODE)
        if big.any():
            numbers = pa.array([str(c) for c in code[big].tolist()], pa.string())
            columns[col] = pc.replace_with_mask(columns[col], pa.array(big), numbers)
    return columns, np.flatnonzero(~ok).tolist()


def decode_bulk(data: bytes | memoryview, starts: Sequence[int] | np.ndarray, *, use_kernel: bool = True) -> BulkResult:
    """Columns ``seq`` … ``opaque_code`` of the whole packets starting at ``starts`` in ``data``.

    Framing (:func:`~spark_logsource.memcached.protocol.frame`) has already checked each header; this checks the
    engine-specific length and hands odd packets (responses, lying lengths) to :func:`decode_packet`. The columns
    come from the C kernel when it is built (and ``use_kernel``), else from numpy; both give the same arrays.
    """
    o = np.ascontiguousarray(starts, np.int64)
    columns, odd = _columns_kernel(data, o) if use_kernel and _KERNEL is not None else _columns_numpy(data, o)
    bad: dict[int, DecodeError] = {}
    skip: list[int] = []
    view = memoryview(data)
    for i in odd:
        s = int(o[i])
        size = HEADER_SIZE + int.from_bytes(view[s + 8:s + 12], "big")
        try:
            row = decode_packet(bytes(view[s:s + size]))
        except DecodeError as exc:
            bad[i] = exc
            continue
        if row is None:
            skip.append(i)
    return BulkResult(columns, bad, skip)


# UTF-8 lead-byte classes: continuation bytes are -1, bytes that can never start a character 9.
_UTF8_NEED = np.zeros(256, np.int8)
_UTF8_NEED[0x80:0xC0] = -1
_UTF8_NEED[0xC0:0xC2] = 9
_UTF8_NEED[0xC2:0xE0] = 1
_UTF8_NEED[0xE0:0xF0] = 2
_UTF8_NEED[0xF0:0xF5] = 3
_UTF8_NEED[0xF5:] = 9


def invalid_utf8_rows(values: pa.Array) -> np.ndarray:
    """Indexes of the non-null values of a binary array that are not valid UTF-8 (vectorised: no row loop).

    Checks what Python's strict decoder checks: lead bytes and their count of continuation bytes (within the same
    value), no stray continuation byte, no overlong forms, no surrogates, nothing above U+10FFFF.
    """
    _, offsets_buf, data_buf = values.buffers()
    n = len(values)
    offsets = np.frombuffer(offsets_buf, np.int32, n + 1, values.offset * 4).astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    b = np.frombuffer(data_buf, np.uint8, last - first, first) if data_buf is not None and last > first \
        else np.zeros(0, np.uint8)
    high = np.flatnonzero(b >= 0x80)
    if not len(high):
        return np.zeros(0, np.int64)
    need = _UTF8_NEED[b]
    ends = np.repeat(offsets[1:] - first, np.diff(offsets))  # end of the value holding each byte
    bad = np.zeros(len(b), bool)
    leads = np.flatnonzero(need > 0)
    k = need[leads].astype(np.int64)
    bad[leads[(k == 9) | (leads + np.minimum(k, 3) >= ends[leads])]] = True
    ok = (k != 9) & (leads + k < ends[leads])
    leads, k = leads[ok], k[ok]
    claimed = np.zeros(len(b), bool)
    for j in (1, 2, 3):
        at = leads[k >= j] + j
        claimed[at] = True
        bad[at[need[at] != -1]] = True  # a claimed byte that is not a continuation byte
    bad |= (need == -1) & ~claimed  # a continuation byte no lead claimed
    second = b[np.minimum(leads + 1, len(b) - 1)]
    lead_b = b[leads]
    wrong = ((lead_b == 0xE0) & (second < 0xA0)) | ((lead_b == 0xED) & (second >= 0xA0)) \
        | ((lead_b == 0xF0) & (second < 0x90)) | ((lead_b == 0xF4) & (second >= 0x90))
    bad[leads[wrong]] = True
    positions = np.flatnonzero(bad)
    if not len(positions):
        return np.zeros(0, np.int64)
    rows = np.searchsorted(offsets - first, positions, side="right") - 1
    return np.unique(rows)


def _keys(key_bin: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``key`` (string) and ``key_bytes`` (binary, only where the key is not valid UTF-8)."""
    bad = invalid_utf8_rows(key_bin)
    if not len(bad):
        return key_bin.view(pa.string()), pa.nulls(len(key_bin), pa.binary())  # checked: valid UTF-8
    mask = np.zeros(len(key_bin), bool)
    mask[bad] = True
    raw = key_bin.take(pa.array(bad)).to_pylist()
    texts = pa.array([k.decode("utf-8", "replace") for k in raw], pa.string())
    key_str = pc.replace_with_mask(key_bin.view(pa.string()), pa.array(mask), texts)
    key_bytes = pc.replace_with_mask(pa.nulls(len(key_bin), pa.binary()), pa.array(mask), pa.array(raw, pa.binary()))
    return key_str, key_bytes


# --- batches ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """What every batch of one read looks like: ``source`` value, schema, size, corrupt-record handling."""

    source: str
    schema: pa.Schema
    batch_size: int
    mode: ParseMode

    @property
    def corrupt_column(self) -> bool:
        return len(self.schema) > len(COLUMNS)


def corrupt_batch(spec: BatchSpec, offsets: Sequence[int | None], messages: Sequence[str]) -> pa.RecordBatch:
    """Corrupt-record rows: ``source``, ``offset`` and the message set, every decoded column null."""
    n = len(messages)
    arrays: list[pa.Array] = [string_column(spec.source, n), pa.array(offsets, pa.int64())]
    arrays += [pa.nulls(n, typ) for _, typ in COLUMNS[2:]]
    arrays.append(pa.array(messages, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=spec.schema)


_CONSTANTS: dict[tuple[str | None, pa.DataType], pa.Array] = {}
_CONSTANT_BYTES = 8 << 20
_STRING = pa.string()


def _constant(value: str | None, n: int, typ: pa.DataType = _STRING) -> pa.Array:
    """``n`` copies of ``value`` (a string column), or ``n`` nulls of ``typ``: slices of one array kept per value,
    so that the chunks of a read share its buffers instead of each writing ``n`` copies (for a live DUMP, the
    ``source`` column alone is as many bytes as the keys)."""
    column = _CONSTANTS.get((value, typ))
    if column is not None and len(column) >= n:
        return column.slice(0, n)
    column = string_column(value, n) if value is not None else pa.nulls(n, typ)
    if column.nbytes <= _CONSTANT_BYTES:  # a few MiB kept at most per value, for at most 4 values
        if len(_CONSTANTS) >= 4:
            _CONSTANTS.clear()
        _CONSTANTS[(value, typ)] = column
    return column


def packet_batches(spec: BatchSpec, data: bytes | memoryview, starts: Sequence[int] | np.ndarray, base: int | None,
                   on_error: Callable[[int, DecodeError], CorruptDataError]) -> Iterator[pa.RecordBatch]:
    """Batches of the packets at ``starts`` in ``data``; ``base`` is the stream offset of ``data`` (None: live).

    A packet that cannot be decoded goes through the parse mode (``on_error`` turns its :class:`DecodeError` and
    the packet's position in ``data`` into the public error).
    """
    if not len(starts):
        return
    result = decode_bulk(data, starts)
    n = len(starts)
    o = np.asarray(starts, np.int64)
    offsets = pa.array(o + base, pa.int64()) if base is not None else _constant(None, n, pa.int64())
    columns = [_constant(spec.source, n), offsets, *result.columns]
    corrupt: pa.Array | None = _constant(None, n) if spec.corrupt_column else None
    drop: list[int] = list(result.skip)
    if result.bad:
        messages: list[str | None] = [None] * n
        for i, err in sorted(result.bad.items()):
            public = on_error(int(o[i]), err)
            if spec.mode is ParseMode.FAILFAST:
                raise public
            if spec.mode is ParseMode.DROPMALFORMED:
                log.warning("dropping malformed data: %s", public)
                drop.append(i)
            else:
                messages[i] = str(public)
        if spec.mode is ParseMode.PERMISSIVE:
            bad_mask = pa.array([m is not None for m in messages], pa.bool_())
            columns = columns[:2] + [pc.if_else(bad_mask, pa.nulls(n, c.type), c) for c in columns[2:]]
            corrupt = pa.array(messages, pa.string())
    if corrupt is not None:
        columns.append(corrupt)
    batch = pa.RecordBatch.from_arrays(columns, schema=spec.schema)
    if drop:
        keep = np.ones(n, bool)
        keep[drop] = False
        batch = batch.filter(pa.array(keep))
    for start in range(0, len(batch), spec.batch_size):
        yield batch.slice(start, spec.batch_size)
