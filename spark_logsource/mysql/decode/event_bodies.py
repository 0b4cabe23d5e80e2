"""Decoding of every non-rows event body into a dict of named fields (the ``data`` column of view=events).

``body`` is the event after its 19-byte common header, CRC trailer removed; ``offset`` is the file offset of
the EVENT (errors point at ``offset + 19 + position in the body``). Layouts, from mysql-server
``libs/mysql/binlog/event/{control_events,statement_events,load_data_events}.cpp`` and MariaDB
``sql/log_event.cc``:

* ROTATE (4): position u64 (post-header, 8 bytes), new file name to the end.
* STOP (3): empty. XID (16): xid u64. INTVAR (5): type u8 (1 LAST_INSERT_ID, 2 INSERT_ID), value u64.
* RAND (13): seed1 u64, seed2 u64.
* USER_VAR (14): name_len u32, name, is_null u8; when not null: value type u8 (0 STRING, 1 REAL, 2 INT,
  4 DECIMAL), charset u32, value_len u32, value (REAL: double LE; INT: i64 LE; DECIMAL: precision u8, scale u8,
  binary decimal; STRING: bytes in that charset), then optionally flags u8 (1 = UNSIGNED).
* INCIDENT (26): incident u16, message (u8 length + text).
* HEARTBEAT (27): log file name (the whole body). HEARTBEAT_V2 (41): TLVs (type, packed length, value) of
  1 log_filename and 2 log_position (packed int).
* ROWS_QUERY (29): a length byte (ignored, the text may be longer than 255) then the statement to the end.
* TRANSACTION_CONTEXT (36): server_uuid_len u8, thread_id u32, gtid_specified u8, snapshot_version_len u32,
  write_set_len u32, read_set_len u32, then server_uuid, snapshot version, write-set items (u16 len + bytes),
  read-set items (u16 len + bytes).
* VIEW_CHANGE (37): view_id char[40], seq_number u64, cert_info_len u32, then cert_info_len x
  {key_len u32, key, value_len u32, value}.
* XA_PREPARE (38): one_phase u8, format_id i32, gtrid_len i32, bqual_len i32, data[gtrid_len + bqual_len].
* MariaDB ANNOTATE_ROWS (160): the statement (whole body). BINLOG_CHECKPOINT (161): name_len u32, name.
  START_ENCRYPTION (164): the file is encrypted (:class:`EncryptedBinlogError`).
* Unknown types: ``{"raw": body}``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from spark_logsource.errors import EncryptedBinlogError, TruncatedDataError
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.fde import FormatDescription
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.decode.decimal import decode_decimal_bytes
from spark_logsource.mysql.decode.gtid import (
    decode_gtid_list,
    decode_maria_gtid,
    decode_mysql_gtid,
    decode_previous_gtids,
)
from spark_logsource.mysql.decode.packed import BinlogDecodeError, read_packed_int
from spark_logsource.mysql.decode.query_event import parse_query, query_text

__all__ = ["decode_event_body"]

#: A sane cap on counted items inside one event (checked together with the bytes available).
_USER_VAR_TYPES = {0: "STRING", 1: "REAL", 2: "INT", 3: "ROW", 4: "DECIMAL"}
_BINARY_CHARSET = 63
#: Where the errors about an event as a whole point: its start, the common header before the body.
_EVENT = -HEADER_LEN


class _Body:
    """Bounded cursor over an event body; errors are at positions in the body."""

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf, self.pos, self.what = buf, 0, what

    def take(self, size: int, field: str) -> bytes:
        if size < 0 or self.pos + size > len(self.buf):
            raise BinlogDecodeError(self.pos, f"{self.what} {field} needs {size} bytes, {len(self.buf) - self.pos} "
                                              "left", TruncatedDataError)
        out = self.buf[self.pos:self.pos + size]
        self.pos += size
        return out

    def uint(self, size: int, field: str) -> int:
        return int.from_bytes(self.take(size, field), "little")

    def sint(self, size: int, field: str) -> int:
        return int.from_bytes(self.take(size, field), "little", signed=True)

    def rest(self) -> bytes:
        out = self.buf[self.pos:]
        self.pos = len(self.buf)
        return out

    def left(self) -> int:
        return len(self.buf) - self.pos


def _text(raw: bytes) -> str:
    return bytes(raw).decode("utf-8", "replace")


def _rotate(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    size = ctx["fde"].post_header_len(et.ROTATE, 8)
    position = b.uint(8, "position") if size >= 8 else None
    if size > 8:
        b.take(size - 8, "post-header")
    return {"position": position, "next_file": _text(b.rest())}


def _xid(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"xid": b.uint(8, "xid")}


def _intvar(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    kind = b.uint(1, "type")
    return {"type": kind, "name": {1: "LAST_INSERT_ID", 2: "INSERT_ID"}.get(kind), "value": b.uint(8, "value")}


def _rand(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"seed1": b.uint(8, "seed1"), "seed2": b.uint(8, "seed2")}


def _user_var(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    name_len = b.uint(4, "name length")
    name = _text(b.take(name_len, "name"))
    is_null = b.uint(1, "is_null")
    out: dict[str, Any] = {"name": name, "is_null": bool(is_null), "value": None}
    if is_null:
        return out
    kind = b.uint(1, "value type")
    charset = b.uint(4, "charset")
    value_len = b.uint(4, "value length")
    raw = b.take(value_len, "value")
    flags = b.uint(1, "flags") if b.left() else 0
    unsigned = bool(flags & 1)
    out.update({"type": _USER_VAR_TYPES.get(kind, kind), "charset": charset, "unsigned": unsigned})
    if kind == 1:
        if len(raw) != 8:
            raise BinlogDecodeError(_EVENT, f"USER_VAR REAL value of {len(raw)} bytes")
        out["value"] = struct.unpack("<d", raw)[0]
    elif kind == 2:
        if len(raw) > 8:
            raise BinlogDecodeError(_EVENT, f"USER_VAR INT value of {len(raw)} bytes")
        out["value"] = int.from_bytes(raw, "little", signed=not unsigned)
    elif kind == 4:
        if len(raw) < 2:
            raise BinlogDecodeError(_EVENT, "USER_VAR DECIMAL without precision and scale", TruncatedDataError)
        try:
            out["value"] = decode_decimal_bytes(bytes(raw[2:]), raw[0], raw[1])
        except Exception as exc:  # D's decoder raises its own value errors
            raise BinlogDecodeError(_EVENT, f"USER_VAR DECIMAL value: {exc}") from None
    elif kind == 0:
        out["value"] = bytes(raw) if charset == _BINARY_CHARSET else _text(raw)
    else:
        out["value"] = bytes(raw)
    return out


def _incident(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    incident = b.uint(2, "incident")
    message = _text(b.take(b.uint(1, "message length"), "message")) if b.left() else ""
    return {"incident": incident, "message": message}


def _heartbeat(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"log_filename": _text(b.rest()), "log_position": ctx["log_pos"]}


def _heartbeat_v2(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while b.left():
        kind, b.pos = read_packed_int(b.buf, b.pos)
        length, b.pos = read_packed_int(b.buf, b.pos)
        value = b.take(length, f"field {kind}")
        if kind == 1:
            out["log_filename"] = _text(value)
        elif kind == 2:
            try:
                out["log_position"] = read_packed_int(value, 0)[0]
            except BinlogDecodeError as exc:  # reported at the event's start, as it always was
                raise BinlogDecodeError(_EVENT + (exc.pos or 0), exc.reason, exc.kind) from None
        else:
            out.setdefault("unknown_fields", {})[str(kind)] = bytes(value)
    return out


def _rows_query(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    b.take(1, "length byte")
    return {"query": query_text(b.rest())}


def _annotate_rows(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"query": query_text(b.rest())}


def _binlog_checkpoint(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"binlog_file": _text(b.take(b.uint(4, "name length"), "name"))}


def _transaction_context(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    uuid_len = b.uint(1, "server_uuid length")
    thread_id = b.uint(4, "thread_id")
    gtid_specified = b.uint(1, "gtid_specified")
    snapshot_len = b.uint(4, "snapshot version length")
    write_count = b.uint(4, "write set length")
    read_count = b.uint(4, "read set length")
    server_uuid = _text(b.take(uuid_len, "server_uuid"))
    snapshot = bytes(b.take(snapshot_len, "snapshot version"))
    if (write_count + read_count) * 2 > b.left():
        raise BinlogDecodeError(_EVENT, f"TRANSACTION_CONTEXT claims {write_count}+{read_count} items "
                                        f"in {b.left()} bytes")
    write_set = [_text(b.take(b.uint(2, "item length"), "write set item")) for _ in range(write_count)]
    read_set = [_text(b.take(b.uint(2, "item length"), "read set item")) for _ in range(read_count)]
    return {"server_uuid": server_uuid, "thread_id": thread_id, "gtid_specified": bool(gtid_specified),
            "snapshot_version": snapshot, "write_set": write_set, "read_set": read_set}


def _view_change(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    view_id = _text(b.take(40, "view_id").split(b"\0", 1)[0])
    seq_number = b.uint(8, "seq_number")
    count = b.uint(4, "certification info count")
    if count * 8 > b.left():
        raise BinlogDecodeError(_EVENT, f"VIEW_CHANGE claims {count} certification entries")
    info = {}
    for _ in range(count):
        key = _text(b.take(b.uint(4, "key length"), "key"))
        info[key] = bytes(b.take(b.uint(4, "value length"), "value"))
    return {"view_id": view_id, "seq_number": seq_number, "certification_info": info}


def _xa_prepare(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    one_phase = b.uint(1, "one_phase")
    format_id = b.sint(4, "format_id")
    gtrid_len = b.sint(4, "gtrid length")
    bqual_len = b.sint(4, "bqual length")
    if not (0 <= gtrid_len <= 64 and 0 <= bqual_len <= 64):
        raise BinlogDecodeError(_EVENT, f"XA_PREPARE gtrid/bqual lengths {gtrid_len}/{bqual_len} (max 64)")
    gtrid = bytes(b.take(gtrid_len, "gtrid"))
    bqual = bytes(b.take(bqual_len, "bqual"))
    return {"one_phase": bool(one_phase), "format_id": format_id, "gtrid": gtrid, "bqual": bqual}


def _start_encryption(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    raise BinlogDecodeError(_EVENT, "encrypted binlog (MariaDB START_ENCRYPTION_EVENT): the events after it cannot "
                                    "be read without the server's key", EncryptedBinlogError)


def _query(b: _Body, ctx: dict[str, Any], compressed: bool = False) -> dict[str, Any]:
    fde: FormatDescription = ctx["fde"]
    return parse_query(b.buf, compressed=compressed, post_header_len=fde.post_header_len(et.QUERY, 13),
                       max_uncompressed=ctx["max_uncompressed"])


def _fde(b: _Body, ctx: dict[str, Any]) -> dict[str, Any]:
    fde: FormatDescription = ctx["fde"]
    return fde.as_dict()


_DECODERS: dict[int, Callable[[_Body, dict[str, Any]], dict[str, Any]]] = {
    et.QUERY: _query,
    et.MARIA_QUERY_COMPRESSED: lambda b, ctx: _query(b, ctx, compressed=True),
    et.STOP: lambda b, ctx: {},
    et.ROTATE: _rotate,
    et.INTVAR: _intvar,
    et.RAND: _rand,
    et.USER_VAR: _user_var,
    et.FORMAT_DESCRIPTION: _fde,
    et.XID: _xid,
    et.INCIDENT: _incident,
    et.HEARTBEAT: _heartbeat,
    et.HEARTBEAT_V2: _heartbeat_v2,
    et.IGNORABLE: lambda b, ctx: {"raw": bytes(b.rest())},
    et.ROWS_QUERY: _rows_query,
    et.GTID: lambda b, ctx: decode_mysql_gtid(b.buf),
    et.ANONYMOUS_GTID: lambda b, ctx: decode_mysql_gtid(b.buf),
    et.PREVIOUS_GTIDS: lambda b, ctx: decode_previous_gtids(b.buf),
    # MySQL 8.4 tagged GTIDs use the mysql::serialization format, not decoded here (see the module docs).
    et.GTID_TAGGED: lambda b, ctx: {"raw": bytes(b.rest()), "decoded": False},
    et.TRANSACTION_CONTEXT: _transaction_context,
    et.VIEW_CHANGE: _view_change,
    et.XA_PREPARE: _xa_prepare,
    et.MARIA_ANNOTATE_ROWS: _annotate_rows,
    et.MARIA_BINLOG_CHECKPOINT: _binlog_checkpoint,
    et.MARIA_GTID: lambda b, ctx: decode_maria_gtid(b.buf, ctx["server_id"]),
    et.MARIA_GTID_LIST: lambda b, ctx: decode_gtid_list(b.buf),
    et.MARIA_START_ENCRYPTION: _start_encryption,
}


def has_body_decoder(type_code: int) -> bool:
    return type_code in _DECODERS


def decode_event_body(type_code: int, body: bytes, *, fde: FormatDescription, server_id: int, log_pos: int,
                      max_uncompressed: int) -> dict[str, Any]:
    """Decode a non-rows, non-TABLE_MAP event body; unknown types give ``{"raw": body}``.

    Errors are :class:`BinlogDecodeError` at positions in the body (``-19``: the event's start)."""
    decoder = _DECODERS.get(type_code)
    if decoder is None:
        return {"raw": bytes(body)}
    ctx = {"fde": fde, "server_id": server_id, "log_pos": log_pos, "max_uncompressed": max_uncompressed}
    return decoder(_Body(body, et.event_type_name(type_code)), ctx)
