"""Oracle: ``mariadb-binlog -vv --base64-output=decode-rows`` output, parsed, and a comparator that renders
our decoded Python values the way mariadb-binlog prints them (MariaDB ``sql/log_event_client.cc``
``log_event_print_value``), so every value is checked against the server's own reader.

How mariadb-binlog 10.11 prints each type (found by running it; each rule below is in :func:`render`):

* integers: the signed value, then `` (unsigned)`` when negative: ``-1 (255)``;
* FLOAT ``%-20g`` (6 significant digits: lossy, so a FLOAT is only checked to that precision), DOUBLE
  ``%-.20g``; DECIMAL in plain notation with the column's scale;
* DATE ``'YYYY:MM:DD'``; TIME ``'[-]HH:MM:SS[.f]'``; DATETIME ``'YYYY-MM-DD hh:mm:ss[.f]'`` (fsp digits);
  TIMESTAMP as epoch seconds ``S[.f]`` (zero timestamp ``0[.000000]``);
* YEAR ``%04d`` of 1900 + stored byte, with no special case for the zero year: our 0 prints as ``1900``;
* strings / BLOB / GEOMETRY: the stored bytes quoted, bytes < 0x20 as ``\\xNN``, all others raw;
* ENUM: the 1-based index; SET: ``b'…'`` of the stored little-endian bytes; BIT: ``b'…'`` of nbits bits.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from spark_logsource.mysql.binlog.compression import zstd_uncompress
from spark_logsource.mysql.decode import column_types as ct
from spark_logsource.mysql.decode.packed import read_packed_int
from spark_logsource.mysql.decode.rows import RowsEvent, parse_rows_event
from spark_logsource.mysql.decode.tablemap import ColumnInfo, TableMap, parse_table_map

_AT = re.compile(rb"^# at (\d+)$")
_HEADER = re.compile(rb"^#\d{6} [ \d]\d:\d\d:\d\d server id \d+")
_OP = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `(.*)`\.`(.*)`$")
_VALUE = re.compile(rb"^###   @(\d+)=(.*) /\* (.*) meta=(\d+) nullable=(\d) is_null=(\d) \*/$")
_ROWS_HEADER = re.compile(rb"\t\w*_rows\w*: table id \d+")
_OPS = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}


@dataclass
class OracleValue:
    text: str  # the printed value, bytes mapped 1:1 to chars (latin-1)
    type_name: str
    meta: int
    nullable: bool
    is_null: bool


@dataclass
class OracleRow:
    pos: int
    db: str
    table: str
    op: str
    before: dict[str, OracleValue] = field(default_factory=dict)
    after: dict[str, OracleValue] = field(default_factory=dict)


def run_oracle(path: Path) -> dict[tuple[int, int], OracleRow]:
    """Run mariadb-binlog on ``path``; return rows keyed by (statement position, row index in statement).

    mariadb-binlog prints the rows of a statement after the headers of ALL its rows events (it buffers them
    until the event with STMT_END_F), so rows are keyed by the position of the statement's FIRST rows event
    and their index across the statement's events; :func:`compare_file` keys our rows the same way.
    """
    out = subprocess.run(["mariadb-binlog", "-vv", "--base64-output=decode-rows", str(path)],
                         capture_output=True, check=True, timeout=600).stdout
    return parse_oracle(out)


def run_remote_oracle(host: str, port: int, user: str, password: str, file: str, start: int | None = None
                      ) -> dict[tuple[int, int], OracleRow]:
    """The same as :func:`run_oracle` for one binlog ``file`` of a running server, read by mariadb-binlog itself
    over the replication protocol (``--read-from-remote-server``: its own COM_BINLOG_DUMP), from ``start``."""
    args = ["mariadb-binlog", "-vv", "--base64-output=decode-rows", "--read-from-remote-server",
            f"--host={host}", f"--port={port}", "--protocol=tcp", f"--user={user}", f"--password={password}"]
    if start is not None:
        args.append(f"--start-position={start}")
    out = subprocess.run([*args, file], capture_output=True, check=True, timeout=600).stdout
    return parse_oracle(out)


def parse_oracle(out: bytes) -> dict[tuple[int, int], OracleRow]:
    """Rows of one mariadb-binlog ``-vv`` listing, keyed as :func:`run_oracle` says."""
    positions: list[int] = []
    headers = 0
    rows: dict[tuple[int, int], OracleRow] = {}
    current: OracleRow | None = None
    target: dict[str, OracleValue] | None = None
    group_pos = -1
    group_closed = True
    row_index = 0
    for line in out.split(b"\n"):
        if (m := _AT.match(line)) is not None:
            positions.append(int(m.group(1)))
            continue
        if _HEADER.match(line):
            event_pos = positions[headers]
            headers += 1
            if _ROWS_HEADER.search(line):
                if group_closed:
                    group_pos, row_index = event_pos, 0
                group_closed = b"STMT_END_F" in line
            continue
        if (m := _OP.match(line)) is not None:
            current = OracleRow(group_pos, m.group(2).decode(), m.group(3).decode(), _OPS[m.group(1)])
            rows[(group_pos, row_index)] = current
            row_index += 1
            target = current.after if current.op == "insert" else current.before
            continue
        if line == b"### SET" and current is not None:
            target = current.after
            continue
        if line == b"### WHERE":
            continue
        if (m := _VALUE.match(line)) is not None:
            assert target is not None, line
            target[f"@{int(m.group(1))}"] = OracleValue(
                m.group(2).decode("latin-1"), m.group(3).decode(), int(m.group(4)),
                m.group(5) == b"1", m.group(6) == b"1")
    assert headers == len(positions), f"{headers} event headers but {len(positions)} '# at' lines"
    return rows


# -- our side: a minimal event walker (only for tests; the package reader is events.py) ----------------
@dataclass
class DecodedRows:
    pos: int
    table_map: TableMap
    event: RowsEvent


def _server_has_checksum_byte(version: str) -> bool:
    if "mariadb" in version.lower():
        return True
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return m is not None and tuple(map(int, m.groups())) >= (5, 6, 1)


def read_binlog_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def walk_rows_events(path: Path) -> list[DecodedRows]:
    """Decode every TABLE_MAP and rows event of a binlog file (including inside TRANSACTION_PAYLOAD)."""
    data = read_binlog_bytes(path)
    assert data[:4] == b"\xfebin", path
    fde_size = int.from_bytes(data[4 + 9:4 + 13], "little")
    fde = data[4:4 + fde_size]
    body = fde[19:]
    version = body[2:52].split(b"\0")[0].decode()
    crc_len = 0
    end_of_lens = len(body)
    if _server_has_checksum_byte(version):
        end_of_lens -= 5
        crc_len = 4 if body[-5] == 1 else 0
    post_header = body[57:end_of_lens]

    def phl(type_code: int) -> int:
        return post_header[type_code - 1] if type_code - 1 < len(post_header) else 0

    table_id_size = 4 if phl(19) == 6 else 6
    maps: dict[int, TableMap] = {}
    out: list[DecodedRows] = []

    def walk(buf: bytes, base: int, crc: int, inner: bool) -> None:
        pos = 0
        while pos + 19 <= len(buf):
            type_code = buf[pos + 4]
            size = int.from_bytes(buf[pos + 9:pos + 13], "little")
            assert 19 <= size <= len(buf) - pos, (path, base + pos, size)
            ev_body = buf[pos + 19:pos + size - crc]
            ev_pos = base + pos
            if type_code == 19:
                tm = parse_table_map(ev_body, table_id_size=table_id_size)
                maps[tm.table_id] = tm
            elif 20 <= type_code <= 25 or 30 <= type_code <= 32 or type_code == 39 or 166 <= type_code <= 171:
                ev = parse_rows_event(type_code, ev_body, post_header_len=phl(type_code),
                                      table_id_size=table_id_size, table_maps=maps)
                out.append(DecodedRows(base + pos if not inner else base, maps[ev.table_id], ev))
            elif type_code == 40:
                p = 0
                fields: dict[int, int] = {}
                while True:
                    ftype, p = read_packed_int(ev_body, p)
                    if ftype == 0:
                        break
                    flen, p = read_packed_int(ev_body, p)
                    fields[ftype] = int.from_bytes(ev_body[p:p + flen], "little")
                    p += flen
                payload = ev_body[p:]
                if fields.get(2, 0) == 0:
                    payload = zstd_uncompress(payload, str(path), ev_pos, max_size=fields.get(3, 1 << 30))
                walk(payload, ev_pos, 0, True)
            pos += size

    walk(data[4 + fde_size:], 4 + fde_size, crc_len, False)
    return out


# -- rendering our values as mariadb-binlog prints them ----------------------------------------------------
_INT_BITS = {ct.TINY: 8, ct.SHORT: 16, ct.INT24: 24, ct.LONG: 32, ct.LONGLONG: 64}


def _quote(raw: bytes) -> str:
    out = ["'"]
    for b in raw:
        out.append(chr(b) if b > 0x1F else f"\\x{b:02x}")
    out.append("'")
    return "".join(out)


def _bits(value: int, nbits: int) -> str:
    return "b'" + format(value, f"0{nbits}b") + "'"


def render(value: Any, col: ColumnInfo) -> str:
    """Our decoded value as mariadb-binlog -vv prints it for this column."""
    if value is None:
        return "NULL"
    t = col.real_type
    meta = col.meta if isinstance(col.meta, int) else 0
    if t in _INT_BITS:
        bits = _INT_BITS[t]
        signed = value - (1 << bits) if value >= 1 << (bits - 1) else value
        return f"{signed} ({signed + (1 << bits)})" if signed < 0 else str(signed)
    if t == ct.FLOAT:
        return format(value, "<20g")  # C printf "%-20g"
    if t == ct.DOUBLE:
        return format(value, ".20g")  # C printf "%-.20g"
    if t == ct.NEWDECIMAL:
        assert isinstance(value, Decimal)
        assert -value.as_tuple().exponent == (meta & 0xFF), (value, meta)
        return format(value, "f")
    if t in (ct.DATE, ct.NEWDATE):
        text = value.isoformat() if isinstance(value, date) else value
        return "'" + text.replace("-", ":") + "'"
    if t in (ct.TIME2, ct.TIME):
        return f"'{value}'"
    if t in (ct.DATETIME2, ct.DATETIME):
        if isinstance(value, datetime):
            assert value.tzinfo is None
            text = value.strftime("%Y-%m-%d %H:%M:%S")
            if meta and t == ct.DATETIME2:
                text += f".{value.microsecond // 10 ** (6 - meta):0{meta}d}"
            return f"'{text}'"
        return f"'{value}'"
    if t in (ct.TIMESTAMP2, ct.TIMESTAMP):
        fsp = meta if t == ct.TIMESTAMP2 else 0
        if isinstance(value, str):
            assert value.startswith("0000-00-00 00:00:00"), value
            return "0" + (f".{0:0{fsp}d}" if fsp else "")
        assert value.tzinfo is not None
        seconds = int(value.timestamp())
        return str(seconds) + (f".{value.microsecond // 10 ** (6 - fsp):0{fsp}d}" if fsp else "")
    if t == ct.YEAR:
        return f"{1900 if value == 0 else value:04d}"
    if t == ct.ENUM:
        if isinstance(value, str):
            return str(0 if value == "" else col.enum_values.index(value) + 1)
        return str(value)
    if t == ct.SET:
        size = meta & 0xFF
        if isinstance(value, str):
            names = col.set_values
            mask = 0
            for name in value.split(",") if value else []:
                mask |= 1 << names.index(name)
            value = mask
        return _bits(int.from_bytes(value.to_bytes(size, "little"), "big"), size * 8)
    if t == ct.BIT:
        return _bits(value, (meta >> 8) * 8 + (meta & 0xFF))
    if isinstance(value, str):
        codec = ct.codec_for_collation(col.charset)
        return _quote(value.encode(codec if codec not in (None, "binary") else "utf-8"))
    assert isinstance(value, bytes), (type(value), col)
    return _quote(value)


def compare_file(path: Path) -> tuple[int, int]:
    """Decode ``path`` with our decoders and compare every value with mariadb-binlog's output.

    Returns (rows compared, values compared); raises AssertionError listing the first mismatches.
    """
    return compare_rows(run_oracle(path), walk_rows_events(path), str(path))


def compare_rows(oracle: dict[tuple[int, int], OracleRow], ours: list[DecodedRows], where: str) -> tuple[int, int]:
    """Our decoded rows events of one binlog (``ours``, in order) against mariadb-binlog's rows of the same
    range (``oracle``), value for value; ``where`` names the binlog in the failure message."""
    mismatches: list[str] = []
    seen: set[tuple[int, int]] = set()
    values = 0
    group_pos, group_closed, group_index = -1, True, 0
    for decoded in ours:
        tm = decoded.table_map
        by_key = {tm.key_for(i): col for i, col in enumerate(tm.columns)}
        if group_closed:
            group_pos, group_index = decoded.pos, 0
        group_closed = bool(decoded.event.flags & 1)
        for before, after in decoded.event.rows:
            key = (group_pos, group_index)
            group_index += 1
            seen.add(key)
            expected = oracle.get(key)
            if expected is None:
                mismatches.append(f"{key}: row not printed by mariadb-binlog")
                continue
            assert (expected.db, expected.table, expected.op) == (tm.database, tm.table, decoded.event.op)
            for ours_image, theirs in ((before, expected.before), (after, expected.after)):
                ours_image = ours_image or {}
                ours_at = {f"@{by_key[k].index + 1}": (v, by_key[k]) for k, v in ours_image.items()}
                if set(ours_at) != set(theirs):
                    mismatches.append(f"{key}: columns {sorted(ours_at)} != {sorted(theirs)}")
                    continue
                for at, (value, col) in ours_at.items():
                    values += 1
                    printed = theirs[at]
                    if printed.meta != col.meta or printed.nullable != col.nullable:
                        mismatches.append(f"{key} {at}: meta/nullable {col.meta}/{col.nullable} != "
                                          f"{printed.meta}/{printed.nullable}")
                    got = render(value, col)
                    want = printed.text
                    if t_is_float(col):
                        got, want = got.rstrip(), want.rstrip()
                    if got != want:
                        mismatches.append(f"{key} {at} ({printed.type_name}): ours {got[:200]!r} "
                                          f"(from {value!r:.200}) != {want[:200]!r}")
    missing = set(oracle) - seen
    if missing:
        mismatches.append(f"rows printed by mariadb-binlog that we did not decode: {sorted(missing)[:10]}")
    assert not mismatches, f"{where}: {len(mismatches)} mismatches:\n" + "\n".join(mismatches[:30])
    return len(seen), values


def t_is_float(col: ColumnInfo) -> bool:
    """FLOAT is printed left-justified in 20 columns: the pad is not part of the value."""
    return col.real_type == ct.FLOAT
