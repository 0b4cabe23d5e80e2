"""GTID events of MySQL (GTID, ANONYMOUS_GTID, PREVIOUS_GTIDS) and MariaDB (GTID, GTID_LIST).

Layouts:

* MySQL GTID / ANONYMOUS_GTID (types 33/34; mysql-server ``libs/mysql/binlog/event/control_events.cpp``
  ``Gtid_event::Gtid_event``): flags u8, sid[16], gno i64, then (5.7+) lt_type u8 (2 = logical timestamps),
  last_committed i64, sequence_number i64; then (8.0.1+) immediate_commit_timestamp in 7 bytes LE whose bit 55
  says original_commit_timestamp (7 more bytes) follows; transaction_length (packed int, 8.0.2+);
  immediate_server_version u32 whose bit 31 says original_server_version (u32) follows (8.0.14+).
  Any later field (commit_group_ticket, ...) is kept as ``extra`` bytes.
* MySQL PREVIOUS_GTIDS (35; ``Previous_gtids_event`` / ``Gtid_set::add_gtid_encoding``): n_sids u64 (the top byte
  is a format marker, 0 for untagged sets), then per sid: uuid[16], n_intervals u64, intervals as
  {start u64, end_exclusive u64}.
* MariaDB GTID (162; ``sql/log_event.cc`` ``Gtid_log_event::Gtid_log_event``): seq_no u64, domain_id u32,
  flags2 u8; with FL_GROUP_COMMIT_ID (2) commit_id u64; with FL_PREPARED_XA / FL_COMPLETED_XA (0x40/0x80)
  format_id u32, gtrid_len u8, bqual_len u8, xid bytes. The server id is the event header's.
* MariaDB GTID_LIST (163; ``Gtid_list_log_event``): count u32 (low 28 bits; the top 4 are flags), then
  count x {domain_id u32, server_id u32, seq_no u64}. Trailing bytes are tolerated.

Errors are :class:`~spark_logsource.mysql.decode.packed.BinlogDecodeError` at positions in the body.
"""

from __future__ import annotations

import uuid
from typing import Any

from spark_logsource.errors import TruncatedDataError
from spark_logsource.mysql.decode.packed import BinlogDecodeError, read_packed_int

__all__ = ["decode_gtid_list", "decode_maria_gtid", "decode_mysql_gtid", "decode_previous_gtids",
           "format_uuid"]

_MARIA_FLAG_NAMES = {1: "standalone", 2: "group_commit_id", 4: "transactional", 8: "allow_parallel",
                     16: "waited", 32: "ddl", 64: "prepared_xa", 128: "completed_xa"}


def format_uuid(raw: bytes) -> str:
    """Canonical lowercase 8-4-4-4-12 text of a 16-byte server UUID (as MySQL prints SIDs)."""
    return str(uuid.UUID(bytes=bytes(raw)))


def _need(body: bytes, pos: int, size: int, what: str) -> None:
    if pos + size > len(body):
        raise BinlogDecodeError(pos, f"{what} needs {size} bytes, {len(body) - pos} left", TruncatedDataError)


def decode_mysql_gtid(body: bytes) -> dict[str, Any]:
    """Decode a GTID / ANONYMOUS_GTID body; ``gtid`` is ``uuid:gno`` (None for anonymous transactions)."""
    _need(body, 0, 25, "GTID sid/gno")
    flags = body[0]
    sid = format_uuid(body[1:17])
    gno = int.from_bytes(body[17:25], "little", signed=True)
    out: dict[str, Any] = {"flags": flags, "sid": sid, "gno": gno,
                           "gtid": f"{sid}:{gno}" if gno > 0 else None}
    pos = 25
    if pos < len(body):
        _need(body, pos, 17, "GTID logical timestamps")
        out["lt_type"] = body[pos]
        out["last_committed"] = int.from_bytes(body[pos + 1:pos + 9], "little", signed=True)
        out["sequence_number"] = int.from_bytes(body[pos + 9:pos + 17], "little", signed=True)
        pos += 17
    if pos < len(body):
        _need(body, pos, 7, "GTID immediate_commit_timestamp")
        immediate = int.from_bytes(body[pos:pos + 7], "little")
        pos += 7
        original = None
        if immediate & (1 << 55):
            immediate &= (1 << 55) - 1
            _need(body, pos, 7, "GTID original_commit_timestamp")
            original = int.from_bytes(body[pos:pos + 7], "little")
            pos += 7
        out["immediate_commit_timestamp"] = immediate
        out["original_commit_timestamp"] = immediate if original is None else original
    if pos < len(body):
        out["transaction_length"], pos = read_packed_int(body, pos)
    if pos < len(body):
        _need(body, pos, 4, "GTID immediate_server_version")
        immediate_version = int.from_bytes(body[pos:pos + 4], "little")
        pos += 4
        original_version = None
        if immediate_version & (1 << 31):
            immediate_version &= (1 << 31) - 1
            _need(body, pos, 4, "GTID original_server_version")
            original_version = int.from_bytes(body[pos:pos + 4], "little")
            pos += 4
        out["immediate_server_version"] = immediate_version
        out["original_server_version"] = immediate_version if original_version is None else original_version
    if pos < len(body):
        out["extra"] = bytes(body[pos:])
    return out


def decode_previous_gtids(body: bytes) -> dict[str, Any]:
    """Decode PREVIOUS_GTIDS into ``{"gtid_set": "uuid:1-5:7,uuid2:1-3", "sids": [...]}``."""
    _need(body, 0, 8, "PREVIOUS_GTIDS n_sids")
    raw_count = int.from_bytes(body[0:8], "little")
    if raw_count >> 56:
        return {"format": raw_count >> 56, "tagged": True, "raw": bytes(body)}
    pos = 8
    if raw_count * 24 > len(body) - pos:
        raise BinlogDecodeError(0, f"PREVIOUS_GTIDS claims {raw_count} sids in {len(body)} bytes")
    sids = []
    texts = []
    for _ in range(raw_count):
        _need(body, pos, 24, "PREVIOUS_GTIDS sid")
        sid = format_uuid(body[pos:pos + 16])
        n_intervals = int.from_bytes(body[pos + 16:pos + 24], "little")
        pos += 24
        if n_intervals * 16 > len(body) - pos:
            raise BinlogDecodeError(pos, f"PREVIOUS_GTIDS claims {n_intervals} intervals", TruncatedDataError)
        intervals = []
        for _ in range(n_intervals):
            start = int.from_bytes(body[pos:pos + 8], "little")
            end = int.from_bytes(body[pos + 8:pos + 16], "little")
            pos += 16
            intervals.append([start, end - 1])
        sids.append({"sid": sid, "intervals": intervals})
        parts = [str(a) if a == b else f"{a}-{b}" for a, b in intervals]
        texts.append(":".join([sid, *parts]))
    return {"gtid_set": ",".join(texts), "sids": sids}


def decode_maria_gtid(body: bytes, server_id: int) -> dict[str, Any]:
    """Decode a MariaDB GTID event; ``gtid`` is ``domain-server-seq``."""
    _need(body, 0, 13, "MariaDB GTID")
    seq_no = int.from_bytes(body[0:8], "little")
    domain_id = int.from_bytes(body[8:12], "little")
    flags = body[12]
    out: dict[str, Any] = {
        "gtid": f"{domain_id}-{server_id}-{seq_no}",
        "domain_id": domain_id, "server_id": server_id, "seq_no": seq_no, "flags": flags,
        "flag_names": [name for bit, name in _MARIA_FLAG_NAMES.items() if flags & bit],
    }
    pos = 13
    if flags & 2:
        _need(body, pos, 8, "MariaDB GTID commit_id")
        out["commit_id"] = int.from_bytes(body[pos:pos + 8], "little")
    elif flags & (64 | 128):
        _need(body, pos, 6, "MariaDB GTID XA id")
        format_id = int.from_bytes(body[pos:pos + 4], "little", signed=True)
        gtrid_len, bqual_len = body[pos + 4], body[pos + 5]
        _need(body, pos + 6, gtrid_len + bqual_len, "MariaDB GTID XA data")
        data = body[pos + 6:pos + 6 + gtrid_len + bqual_len]
        out["xa"] = {"format_id": format_id, "gtrid": bytes(data[:gtrid_len]), "bqual": bytes(data[gtrid_len:])}
    return out


def decode_gtid_list(body: bytes) -> dict[str, Any]:
    """Decode GTID_LIST into ``{"gtids": ["0-1-100", ...], "flags": n}``."""
    _need(body, 0, 4, "GTID_LIST count")
    word = int.from_bytes(body[0:4], "little")
    count, flags = word & 0x0FFFFFFF, word >> 28
    if count * 16 > len(body) - 4:
        raise BinlogDecodeError(4, f"GTID_LIST claims {count} GTIDs in {len(body) - 4} bytes", TruncatedDataError)
    gtids = []
    for i in range(count):
        pos = 4 + 16 * i
        domain = int.from_bytes(body[pos:pos + 4], "little")
        server = int.from_bytes(body[pos + 4:pos + 8], "little")
        seq = int.from_bytes(body[pos + 8:pos + 16], "little")
        gtids.append(f"{domain}-{server}-{seq}")
    return {"gtids": gtids, "flags": flags}
