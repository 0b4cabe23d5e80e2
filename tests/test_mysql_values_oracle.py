"""Every column type decoded from binlogs written by a real MariaDB 10.11, compared value by value with
``mariadb-binlog -vv --base64-output=decode-rows`` (tests/oracle/mariadb_binlog.py), under
binlog_row_metadata FULL / NO_LOG, binlog_row_image FULL / MINIMAL, log_bin_compress ON and
binlog_checksum NONE."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from tests.oracle.mariadb_binlog import compare_file, walk_rows_events

TYPES_TABLE = """
CREATE TABLE t_types (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(65,30), dec3 DECIMAL(5,0) UNSIGNED, dec4 DECIMAL(20,20),
  dt DATE, tm TIME, tm3 TIME(3), tm6 TIME(6), dtm DATETIME, dtm1 DATETIME(1), dtm2 DATETIME(2), dtm3 DATETIME(3),
  dtm4 DATETIME(4), dtm5 DATETIME(5), dtm6 DATETIME(6), ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, yr YEAR,
  c CHAR(10), cbig CHAR(100) CHARACTER SET utf8mb4, vc VARCHAR(255) CHARACTER SET latin1, vcbig VARCHAR(300),
  txt TEXT, bin BINARY(8), vbin VARBINARY(300), blb BLOB, lblb LONGBLOB, e ENUM('a','b','c'), s SET('x','y','z'),
  b1 BIT(1), b10 BIT(10), b64 BIT(64), j JSON, g GEOMETRY, lat VARCHAR(20) CHARACTER SET latin1
) ENGINE=InnoDB
"""

ROWS = [
    # id, then min values
    "(1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,"
    " -3.40282e38, -1.7976931348623157e308, -99999999.99,"
    " -99999999999999999999999999999999999.999999999999999999999999999999,"
    " 0, -0.00000000000000000001,"
    " '1000-01-01', '-838:59:59', '-00:00:01.500', '-01:02:03.456789', '1000-01-01 00:00:00',"
    " '2001-02-03 04:05:06.7',"
    " '2001-02-03 04:05:06.78', '2001-02-03 04:05:06.789', '2001-02-03 04:05:06.7891',"
    " '2001-02-03 04:05:06.78912',"
    " '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999', 1901,"
    " 'a', REPEAT('é', 100), REPEAT('x', 255), REPEAT('ü', 300), 'naïve ☃ text\\n\\ttab',"
    " X'0102000000', X'00FF00',"
    " X'DEADBEEF', NULL, 'a', 'x,z', b'1', b'1010101010',"
    " b'1111111111111111111111111111111111111111111111111111111111111111',"
    " '{\"k\": [1, 2.5, null, true], \"s\": \"v\"}', ST_GeomFromText('POINT(1 2)'), 'café')",
    # max values
    "(2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807,"
    " 18446744073709551615,"
    " 3.40282e38, 1.7976931348623157e308, 99999999.99,"
    " 99999999999999999999999999999999999.999999999999999999999999999999,"
    " 99999, 0.12345678901234567890,"
    " '9999-12-31', '838:59:59', '838:59:59.999', '-00:00:00.000001', '9999-12-31 23:59:59',"
    " '1999-12-31 23:59:59.9',"
    " '1999-12-31 23:59:59.99', '1999-12-31 23:59:59.999', '1999-12-31 23:59:59.9999',"
    " '1999-12-31 23:59:59.99999',"
    " '2020-02-29 12:34:56.000001', '2038-01-19 03:14:07', '1970-01-01 00:00:01.000001', 2155,"
    " REPEAT('z', 10), 'short', '', 'x', REPEAT('long text ', 1000), X'0000000000000000', X'',"
    " '', REPEAT(X'00FF', 524288), 'c', '', b'0', b'0', b'0', '[]',"
    " ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), '')",
    # zeros and small
    "(3, 0, 1, -1, 1, -1, 1, -1, 1, -1, 1, -0.0, -0.0, 0, 0, 0, 0,"
    " '2000-01-01', '00:00:00', '-00:00:00.001', '25:00:00.5', '2000-01-01 00:00:00', NULL, NULL,"
    " NULL, NULL, NULL,"
    " NULL, NULL, NULL, 0,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL)",
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1.5, 0.1, 0.01,"
    " 0.000000000000000000000000000001, 1, 0.5,"
    " NULL, '-12:34:56', '-12:34:56.789', '-00:59:59.999999', NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL,"
    " 'it''s \\\\ q', 'x', 'y', 'z', 'w', X'41', X'4100', X'00', X'01', 'b', 'x,y,z', NULL, b'1000000000',"
    " b'1000000000000000000000000000000000000000000000000000000000000001', '\"str\"', NULL, NULL)",
]


def types_workload(server, db: str) -> None:
    server.execute(f"USE {db}")
    server.execute("SET SESSION sql_mode = ''")
    server.execute("SET SESSION time_zone = '+00:00'")
    server.execute(TYPES_TABLE)
    server.execute("INSERT INTO t_types VALUES " + ROWS[0])
    server.execute("INSERT INTO t_types VALUES " + ", ".join(ROWS[1:]))
    # zero dates (sql_mode '' allows them)
    server.execute("INSERT INTO t_types (id, dt, dtm, dtm6, ts, ts6, yr) VALUES "
                   "(5, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000',"
                   " '0000-00-00 00:00:00',"
                   " '0000-00-00 00:00:00', '0000'), (6, '2020-02-00', '2020-00-10 01:02:03', NULL,"
                   " NULL, NULL, 2000)")
    server.execute("BEGIN")
    server.execute("UPDATE t_types SET ti = ti + 1, txt = CONCAT(txt, '!'), f = 2.25 WHERE id IN (1, 3)")
    server.execute("UPDATE t_types SET e = 'b', s = 'y', j = '{\"a\": {\"b\": [1, {\"c\": null}]}}' WHERE id = 4")
    server.execute("DELETE FROM t_types WHERE id = 2")
    server.execute("COMMIT")
    server.execute("DELETE FROM t_types WHERE id > 3")

SETTINGS = {
    "full_metadata": {"binlog_row_metadata": "FULL"},
    "no_log_metadata": {"binlog_row_metadata": "NO_LOG"},
    "minimal_image": {"binlog_row_metadata": "FULL", "binlog_row_image": "MINIMAL"},
    "minimal_no_log": {"binlog_row_metadata": "NO_LOG", "binlog_row_image": "MINIMAL"},
    "compressed": {"binlog_row_metadata": "FULL", "log_bin_compress": "ON", "log_bin_compress_min_len": 10},
    "checksum_none": {"binlog_row_metadata": "NO_LOG", "binlog_checksum": "NONE"},
}
_DEFAULTS = {"binlog_row_metadata": "NO_LOG", "binlog_row_image": "FULL", "log_bin_compress": "OFF",
             "binlog_checksum": "CRC32", "log_bin_compress_min_len": 256}


@pytest.fixture(scope="module")
def workload_files(mariadb, tmp_path_factory) -> dict[str, list[Path]]:
    """One binlog per settings combination (made once for the module)."""
    files: dict[str, list[Path]] = {}
    for name, settings in SETTINGS.items():
        db = f"w_{name}"
        mariadb.execute(f"CREATE DATABASE {db}")
        files[name] = mariadb.run_workload(lambda srv, db=db: types_workload(srv, db), settings,
                                           dest=tmp_path_factory.mktemp(name))
        for key, value in _DEFAULTS.items():
            mariadb.set_global(key, value)
    return files


@pytest.mark.server
@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_value_matches_mariadb_binlog(workload_files, name):
    rows = values = 0
    for path in workload_files[name]:
        r, v = compare_file(path)
        rows, values = rows + r, values + v
    # 6 inserted rows, 3 updated (before + after), 1 + 3 deleted
    assert rows == 13
    assert values >= (13 * 48 if "minimal" not in name else 13)


@pytest.mark.server
def test_compressed_workload_uses_compressed_rows_events(workload_files):
    data = b"".join(p.read_bytes() for p in workload_files["compressed"])
    assert any(bytes([t]) in data for t in (166, 167, 168))
    types = {d.event.op for d in walk_rows_events(workload_files["compressed"][0])}
    assert types == {"insert", "update", "delete"}


@pytest.mark.server
def test_full_metadata_gives_names_signedness_and_typed_values(workload_files):
    decoded = walk_rows_events(workload_files["full_metadata"][0])
    tm = decoded[0].table_map
    assert tm.primary_key == (0,)
    assert [c.name for c in tm.columns[:3]] == ["id", "ti", "tiu"]
    first = decoded[0].event.rows[0][1]
    assert first["ti"] == -128 and first["tiu"] == 0 and first["bi"] == -(2**63)
    assert first["dec2"] == Decimal("-99999999999999999999999999999999999.999999999999999999999999999999")
    assert first["dt"] == date(1000, 1, 1)
    assert first["tm6"] == "-01:02:03.456789"
    assert first["ts6"] == datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC)
    assert first["e"] == "a" and first["s"] == "x,z"
    assert first["lat"] == "café"
    assert first["blb"] == bytes.fromhex("DEADBEEF")
    second = decoded[1].event.rows
    maxes = next(after for _, after in second if after["id"] == 2)
    assert maxes["tiu"] == 255 and maxes["biu"] == 2**64 - 1
    assert len(maxes["lblb"]) == 1 << 20


@pytest.mark.server
def test_no_log_metadata_reads_unsigned_as_signed_and_keys_by_position(workload_files):
    decoded = walk_rows_events(workload_files["no_log_metadata"][0])
    after = next(a for d in decoded for _, a in d.event.rows if a and a.get("@1") == 2)
    assert after["@3"] == -1  # TINYINT UNSIGNED 255 without signedness metadata
    assert after["@41"] == 3  # ENUM index without names
