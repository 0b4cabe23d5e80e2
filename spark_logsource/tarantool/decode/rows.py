"""Decode the rows of one Tarantool xlog/snap block payload into column lists (the hot loop).

``decode_payload(payload, tuple_format, path, block_offset) -> dict[str, list]`` is implemented twice: here in
pure Python (:func:`decode_payload_py`, the reference) and in C (``spark_logsource.tarantool._kernel``).  Both
must return equal lists for every payload; ``decode_payload`` is the C one when it imports and the environment
variable ``SPARK_LOGSOURCE_PURE_PYTHON`` is not ``"1"``.  The file reader does not go through these lists: it
uses the column builders of :mod:`spark_logsource.tarantool.decode.columns`, where the kernel writes the same rows
straight
into Arrow buffers and the reference builder is :func:`decode_payload_py` followed by ``pa.array``.

Payload layout (tarantool ``src/box/xrow.c`` ``xrow_header_decode``, ``docs/formats/tarantool-xlog.md`` "Rows"): rows
back to back, each a msgpack map *header* then, unless the row is a NOP, a msgpack map *body* when bytes remain.
A NOP (type 12) has no body, except that an empty map (byte ``0x80``) right after a NOP header is taken as its
body (files before 1.10.2 wrote one; a header map is never empty, so this cannot swallow the next row).

Semantics, row by row (all integers below are Python ``int``; "uint" means a non-bool ``int`` ≥ 0):

- Header: a map whose keys are all uints.  Known keys and the type their value must have: 0x00 type, 0x01 sync,
  0x02 replica_id, 0x03 lsn, 0x05 schema_version, 0x06 server_version, 0x07 group_id, 0x08 tsn, 0x09 flags,
  0x0a stream_id: uint; 0x04 timestamp: float.  Other keys: any value.
- ``type``: header 0x00 (0 when absent) → :func:`names.type_name` (``"INSERT"``, or the decimal code).
- ``lsn`` (0 when absent; must be < 2^63), ``replica_id`` (0 when absent), ``group_id`` (0 when absent; both
  must be < 2^31): as in Tarantool's decoded ``struct xrow_header``.
- ``tsn``: the transaction id, ``(lsn - TSN) mod 2^64`` when header 0x08 (TSN) is present, else ``lsn``; must
  be < 2^63.  ``is_commit``: ``True`` when the row has no TSN, else ``bool(flags & 1)`` (flags 0 when absent).
- ``timestamp``: ``round(ts * 1e6)`` (round-half-even on the double) microseconds, ``None`` when header 0x04 is
  absent; a non-finite timestamp or one outside int64 microseconds is an error.
- Body: a map whose keys are all uints.  ``space_id`` = body 0x10, ``index_id`` = body 0x11 (uints < 2^31;
  ``None`` when absent, except that a row naming a space without an index gets ``index_id`` 0: Tarantool reads
  an absent index id as 0, the primary index).  ``key`` = body 0x20.  For UPDATE (4) body 0x21 is the
  operations: ``ops`` = body 0x21, ``tuple`` = None (and a body 0x28 of an UPDATE goes to ``extra``); for every
  other type ``tuple`` = body 0x21 and ``ops`` = body 0x28.  A value present in the file (even msgpack nil) is
  encoded; an absent one is ``None``.
- ``extra``: a dict of every other header key (those not listed as columns above: 0x01, 0x05, 0x06, 0x09,
  0x0a, ...) in file order, then every other body key in file order, named by :mod:`names`
  (``header_key_name`` / ``body_key_name(type, code)``); a body name equal to a header name already present
  becomes ``"body_" + name``.  ``None`` when there is no such key.
- Duplicate keys in one map: the last value wins, at the position of the first (Python dict semantics).
- Values: msgpack ``str`` → ``str`` decoded with ``errors="surrogateescape"`` (invalid UTF-8 survives into JSON
  as ``\\udcXX``; in variant mode such a string becomes a variant *binary* of its bytes — only when the value
  fails to encode as is, then every invalid string of that value), ``bin`` → ``bytes``, arrays →
  lists, maps → dicts, MP_EXT → :mod:`mpext`, msgpack timestamp (ext -1) → aware UTC datetime.

Output encodings of ``key``, ``tuple``, ``ops``, ``extra``:

- ``"variant"``: two lists per column, ``"<col>.value"`` and ``"<col>.metadata"`` from
  :func:`spark_logsource.arrow.variant.encode_variant` of the decoded value; ``(None, b"")`` when the value is None.
- ``"json"``: one list ``"<col>"`` of :func:`spark_logsource.arrow.jsontext.to_json` text, or None.
- ``"msgpack"``: one list ``"<col>"`` of the value's bytes exactly as stored in the payload, or None.  For
  ``extra``: a msgpack map (minimal fixmap/map16/map32 header) of the same names and order as above, each
  name packed with ``msgpack.packb(name)`` and each value as its stored bytes.

Errors: any payload that does not follow the above raises
``CorruptDataError(path, block_offset, "row N at payload byte P: <reason>")`` where N is the 0-based index of the
row in the payload and P the payload offset where that row's header begins.  The ``row N at payload byte P:``
prefix and the exception class are the contract; the reason text is informative.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import msgpack

from spark_logsource.arrow.jsontext import to_json
from spark_logsource.arrow.variant import VariantEncodeError, encode_variant
from spark_logsource.errors import CorruptDataError
from spark_logsource.native import load_kernel
from spark_logsource.tarantool.decode import names
from spark_logsource.tarantool.decode.mpext import MpExtError, ext_hook
from spark_logsource.tarantool.iproto import (
    FLAG_COMMIT,
    K_FLAGS,
    K_GROUP_ID,
    K_INDEX_ID,
    K_KEY,
    K_LSN,
    K_OPS,
    K_REPLICA_ID,
    K_SCHEMA_VERSION,
    K_SERVER_VERSION,
    K_SPACE_ID,
    K_STREAM_ID,
    K_SYNC,
    K_TIMESTAMP,
    K_TSN,
    K_TUPLE,
    K_TYPE,
    NOP,
    UPDATE,
)

__all__ = ["SCALAR_COLUMNS", "TUPLE_FORMATS", "VALUE_COLUMNS", "decode_payload", "decode_payload_py", "output_keys"]

log = logging.getLogger(__name__)

TUPLE_FORMATS = ("variant", "json", "msgpack")
SCALAR_COLUMNS = ("lsn", "replica_id", "tsn", "is_commit", "timestamp", "type", "group_id", "space_id", "index_id")
VALUE_COLUMNS = ("key", "tuple", "ops", "extra")

_INT31 = 1 << 31
_INT63 = 1 << 63
_U64 = 1 << 64

# Header keys that become columns (everything else in a header goes to ``extra``).
_HEADER_COLUMN_KEYS = frozenset((K_TYPE, K_REPLICA_ID, K_LSN, K_TIMESTAMP, K_GROUP_ID, K_TSN))
_HEADER_UINT_KEYS = frozenset((K_TYPE, K_SYNC, K_REPLICA_ID, K_LSN, K_SCHEMA_VERSION, K_SERVER_VERSION, K_GROUP_ID,
                               K_TSN, K_FLAGS, K_STREAM_ID))
_EMPTY_MAP = 0x80


class _RowError(ValueError):
    """A row that breaks the rules in the module docstring (message = the reason)."""


def output_keys(tuple_format: str) -> tuple[str, ...]:
    """The keys of the dict that ``decode_payload`` returns for ``tuple_format``, in order."""
    if tuple_format == "variant":
        value_keys = tuple(f"{c}.{part}" for c in VALUE_COLUMNS for part in ("value", "metadata"))
    elif tuple_format in ("json", "msgpack"):
        value_keys = VALUE_COLUMNS
    else:
        raise ValueError(f"tuple_format must be one of {TUPLE_FORMATS}, got {tuple_format!r}")
    return SCALAR_COLUMNS + value_keys


def _uint(value: Any, what: str, limit: int = _U64) -> int:
    if type(value) is not int or value < 0 or value >= limit:
        raise _RowError(f"{what} is not an unsigned integer below {limit}: {value!r}")
    return value


def _check_header(header: Any) -> dict[int, Any]:
    if type(header) is not dict:
        raise _RowError(f"row header is a {type(header).__name__}, not a map")
    for key, value in header.items():
        if type(key) is not int or key < 0:
            raise _RowError(f"row header key {key!r} is not an unsigned integer")
        if key in _HEADER_UINT_KEYS:
            _uint(value, f"header {names.header_key_name(key)}")
        elif key == K_TIMESTAMP and type(value) is not float:
            raise _RowError(f"header timestamp is a {type(value).__name__}, not a double")
    return header


def _check_body(body: Any) -> dict[int, Any]:
    if type(body) is not dict:
        raise _RowError(f"row body is a {type(body).__name__}, not a map")
    for key in body:
        if type(key) is not int or key < 0:
            raise _RowError(f"row body key {key!r} is not an unsigned integer")
    return body


def _timestamp_micros(ts: float) -> int:
    if not math.isfinite(ts):
        raise _RowError(f"timestamp {ts!r} is not finite")
    micros = round(ts * 1e6)
    if not -_INT63 <= micros < _INT63:
        raise _RowError(f"timestamp {ts!r} is out of range")
    return micros


def _scalars(header: dict[int, Any], body: dict[int, Any] | None) -> tuple[Any, ...]:
    """(lsn, replica_id, tsn, is_commit, timestamp, type, group_id, space_id, index_id) of one row."""
    rtype = header.get(K_TYPE, 0)
    lsn = header.get(K_LSN, 0)
    if lsn >= _INT63:
        raise _RowError(f"lsn {lsn} is out of range")
    replica_id = header.get(K_REPLICA_ID, 0)
    if replica_id >= _INT31:
        raise _RowError(f"replica_id {replica_id} is out of range")
    group_id = header.get(K_GROUP_ID, 0)
    if group_id >= _INT31:
        raise _RowError(f"group_id {group_id} is out of range")
    tsn_raw = header.get(K_TSN)
    if tsn_raw is None:
        tsn, is_commit = lsn, True
    else:
        tsn = (lsn - tsn_raw) % _U64
        if tsn >= _INT63:
            raise _RowError(f"transaction id {tsn} (lsn {lsn} - tsn {tsn_raw}) is out of range")
        is_commit = bool(header.get(K_FLAGS, 0) & FLAG_COMMIT)
    ts = header.get(K_TIMESTAMP)
    timestamp = None if ts is None else _timestamp_micros(ts)
    space_id = index_id = None
    if body is not None:
        if K_SPACE_ID in body:
            space_id = _uint(body[K_SPACE_ID], "space_id", _INT31)
        if K_INDEX_ID in body:
            index_id = _uint(body[K_INDEX_ID], "index_id", _INT31)
        elif space_id is not None:
            index_id = 0  # Tarantool's request default: the primary index
    return lsn, replica_id, tsn, is_commit, timestamp, names.type_name(rtype), group_id, space_id, index_id


def _split_values(
    rtype: int, header: dict[int, Any], body: dict[int, Any] | None
) -> tuple[Any, Any, Any, dict[str, Any] | None, tuple[bool, bool, bool]]:
    """(key, tuple, ops, extra, (has_key, has_tuple, has_ops)) of one row; works on decoded or raw values."""
    extra: dict[str, Any] = {}
    for code, value in header.items():
        if code not in _HEADER_COLUMN_KEYS:
            extra[names.header_key_name(code)] = value
    key = tup = ops = None
    has_key = has_tuple = has_ops = False
    if body is not None:
        tuple_code, ops_code = (K_OPS, K_TUPLE) if rtype == UPDATE else (K_TUPLE, K_OPS)
        header_names = set(extra)
        for code, value in body.items():
            if code == K_KEY:
                key, has_key = value, True
            elif code == K_TUPLE and tuple_code == K_TUPLE:
                tup, has_tuple = value, True
            elif code == ops_code:
                ops, has_ops = value, True
            elif code in (K_SPACE_ID, K_INDEX_ID):
                continue
            else:
                name = names.body_key_name(rtype, code)
                if name in header_names:
                    name = "body_" + name
                extra[name] = value
    return key, tup, ops, (extra or None), (has_key, has_tuple, has_ops)


def _invalid_utf8_as_bytes(value: Any) -> Any:
    """``value`` with every str that holds invalid UTF-8 (surrogate escapes) turned back into its bytes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape")
        return value
    if isinstance(value, list):
        return [_invalid_utf8_as_bytes(v) for v in value]
    if isinstance(value, dict):
        return {_invalid_utf8_as_bytes(k): _invalid_utf8_as_bytes(v) for k, v in value.items()}
    return value


def variant_of(value: Any) -> tuple[bytes, bytes]:
    """The Variant (value, metadata) of one decoded value; strings holding invalid UTF-8 become binary.

    Both implementations of :func:`decode_payload` use this for the values they do not encode themselves.
    """
    try:
        return encode_variant(value)
    except VariantEncodeError:
        return encode_variant(_invalid_utf8_as_bytes(value))


def _new_columns(tuple_format: str) -> dict[str, list[Any]]:
    return {k: [] for k in output_keys(tuple_format)}


def _append_scalars(cols: dict[str, list[Any]], scalars: tuple[Any, ...]) -> None:
    for name, value in zip(SCALAR_COLUMNS, scalars, strict=True):
        cols[name].append(value)


def _encoder(tuple_format: str) -> Callable[[dict[str, list[Any]], str, Any, bool], None]:
    """A function appending one decoded value (``present`` False = absent) to ``cols`` for column ``name``."""
    if tuple_format == "variant":

        def append_variant(cols: dict[str, list[Any]], name: str, value: Any, present: bool) -> None:
            if present:
                encoded, metadata = variant_of(value)
            else:
                encoded, metadata = None, b""
            cols[name + ".value"].append(encoded)
            cols[name + ".metadata"].append(metadata)

        return append_variant

    def append_json(cols: dict[str, list[Any]], name: str, value: Any, present: bool) -> None:
        cols[name].append(to_json(value) if present else None)

    return append_json


def _decode_rows_decoded(payload: bytes, tuple_format: str, cols: dict[str, list[Any]], state: list[int]) -> None:
    """Variant/JSON path: whole header and body maps are unpacked at once."""
    end = len(payload)
    unpacker = _unpacker(payload)
    append = _encoder(tuple_format)
    while True:
        pos = unpacker.tell()
        if pos >= end:
            return
        state[1] = pos
        header = _check_header(unpacker.unpack())
        rtype = header.get(K_TYPE, 0)
        body = None
        next_pos = unpacker.tell()
        if next_pos < end and (rtype != NOP or payload[next_pos] == _EMPTY_MAP):
            body = _check_body(unpacker.unpack())
        scalars = _scalars(header, body)
        key, tup, ops, extra, (has_key, has_tuple, has_ops) = _split_values(rtype, header, body)
        append(cols, "key", key, has_key)
        append(cols, "tuple", tup, has_tuple)
        append(cols, "ops", ops, has_ops)
        append(cols, "extra", extra, extra is not None)
        _append_scalars(cols, scalars)
        state[0] += 1


def _read_map_raw(
    unpacker: msgpack.Unpacker, payload: bytes, what: str, decode_keys: frozenset[int]
) -> tuple[dict[int, Any], dict[int, bytes]]:
    """One map read entry by entry: decoded values of ``decode_keys``, stored bytes of every value."""
    try:
        size = unpacker.read_map_header()
    except ValueError:
        raise _RowError(f"row {what} is not a map") from None
    decoded: dict[int, Any] = {}
    raw: dict[int, bytes] = {}
    for _ in range(size):
        key = unpacker.unpack()
        if type(key) is not int or key < 0:
            raise _RowError(f"row {what} key {key!r} is not an unsigned integer")
        start = unpacker.tell()
        if key in decode_keys:
            decoded[key] = unpacker.unpack()
        else:
            unpacker.skip()
            decoded.pop(key, None)
        raw[key] = payload[start : unpacker.tell()]
    return decoded, raw


def _raw_header_view(decoded: dict[int, Any], raw: dict[int, bytes]) -> dict[int, Any]:
    """Header values for the column checks: decoded ones where we decoded, raw bytes elsewhere."""
    return {k: decoded.get(k, v) for k, v in raw.items()}


def _pack_extra(extra: dict[str, bytes]) -> bytes:
    """msgpack map of names → stored value bytes (minimal map header, names via ``msgpack.packb``)."""
    n = len(extra)
    if n < 16:
        head = bytes((0x80 | n,))
    elif n < 0x10000:
        head = b"\xde" + n.to_bytes(2, "big")
    else:
        head = b"\xdf" + n.to_bytes(4, "big")
    return head + b"".join(msgpack.packb(name) + value for name, value in extra.items())


_HEADER_DECODE_KEYS = frozenset(_HEADER_UINT_KEYS | {K_TIMESTAMP})
_BODY_DECODE_KEYS = frozenset((K_SPACE_ID, K_INDEX_ID))


def _decode_rows_msgpack(payload: bytes, cols: dict[str, list[Any]], state: list[int]) -> None:
    """msgpack path: maps are walked entry by entry so the stored bytes of each value can be sliced out."""
    end = len(payload)
    unpacker = _unpacker(payload)
    while True:
        pos = unpacker.tell()
        if pos >= end:
            return
        state[1] = pos
        h_decoded, h_raw = _read_map_raw(unpacker, payload, "header", _HEADER_DECODE_KEYS)
        header = _check_header(_raw_header_view(h_decoded, h_raw))
        rtype = header.get(K_TYPE, 0)
        body_raw = None
        body_decoded: dict[int, Any] | None = None
        next_pos = unpacker.tell()
        if next_pos < end and (rtype != NOP or payload[next_pos] == _EMPTY_MAP):
            body_decoded, body_raw = _read_map_raw(unpacker, payload, "body", _BODY_DECODE_KEYS)
        scalars = _scalars(header, body_decoded)
        key, tup, ops, extra, _present = _split_values(rtype, h_raw, body_raw)
        cols["key"].append(key)
        cols["tuple"].append(tup)
        cols["ops"].append(ops)
        cols["extra"].append(None if extra is None else _pack_extra(extra))
        _append_scalars(cols, scalars)
        state[0] += 1


def _unpacker(payload: bytes) -> msgpack.Unpacker:
    unpacker = msgpack.Unpacker(
        raw=False,
        strict_map_key=False,
        ext_hook=ext_hook,
        timestamp=3,
        unicode_errors="surrogateescape",
        max_buffer_size=max(len(payload), 1),
    )
    unpacker.feed(payload)
    return unpacker


def decode_payload_py(payload: bytes, tuple_format: str, path: str, block_offset: int) -> dict[str, list[Any]]:
    """Pure-Python reference: the rows of one block payload as equal-length column lists (module docstring)."""
    cols = _new_columns(tuple_format)
    state = [0, 0]  # [row index, payload offset of the row being decoded]
    try:
        if tuple_format == "msgpack":
            _decode_rows_msgpack(bytes(payload), cols, state)
        else:
            _decode_rows_decoded(bytes(payload), tuple_format, cols, state)
    except msgpack.OutOfData:
        raise CorruptDataError(
            path, block_offset, f"row {state[0]} at payload byte {state[1]}: msgpack value truncated by the payload end"
        ) from None
    except (ValueError, TypeError, OverflowError, RecursionError, msgpack.UnpackException, MpExtError) as exc:
        raise CorruptDataError(path, block_offset, f"row {state[0]} at payload byte {state[1]}: {exc}") from None
    return cols


def _load_kernel() -> Callable[[bytes, str, str, int], dict[str, list[Any]]]:
    kernel = load_kernel("spark_logsource.tarantool._kernel")
    return decode_payload_py if kernel is None else kernel.decode_payload


#: The implementation in use: the C kernel unless :mod:`spark_logsource.native` says otherwise.
decode_payload: Callable[[bytes, str, str, int], dict[str, list[Any]]] = _load_kernel()
