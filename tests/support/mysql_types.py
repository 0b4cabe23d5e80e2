"""The all-column-types MariaDB workload of the binlog value tests and its server settings."""

from __future__ import annotations

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
DEFAULTS = {"binlog_row_metadata": "NO_LOG", "binlog_row_image": "FULL", "log_bin_compress": "OFF",
             "binlog_checksum": "CRC32", "log_bin_compress_min_len": 256}
