#!/usr/bin/env bash
# Re-make samples/mysql/: small binlogs written by the Debian MariaDB 10.11 (binlog_format=ROW,
# binlog_row_metadata=FULL) from one varied workload, under four server settings:
#   full-image.000001     binlog_row_image=FULL                    (the default layout)
#   minimal-image.000001  binlog_row_image=MINIMAL                 (only the PK in before images, changed columns after)
#   compressed.000001     log_bin_compress=ON, min length 10       (QUERY_COMPRESSED, compressed rows events)
#   checksum-none.000001  binlog_checksum=NONE                     (no CRC trailers)
# The workload writes two databases (shop, crm), every column type MariaDB has, signed and unsigned edge values,
# NULLs, a 12 KB BLOB, multi-row inserts, multi-statement transactions, updates and deletes. Event timestamps are
# pinned with SET timestamp (phases one hour apart from 2023-11-14 22:13:20 UTC) and the crm statements are
# logged under server_id 2, so date-time and server-id filters have something to select. The files are not
# byte-identical between runs (the FDE carries the creation time) but their events and rows are.
#
# Usage: samples/make_mysql_samples.sh            (needs mariadbd, mariadb-install-db; run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf samples/mysql
mkdir -p samples/mysql
python3 - <<'PY'
import logging
import shutil
import tempfile
from pathlib import Path

from benchmarks.mariadb_server import open_server

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
OUT = Path("samples/mysql")
T0 = 1700000000  # 2023-11-14 22:13:20 UTC

SCHEMA = [
    "DROP DATABASE IF EXISTS shop", "DROP DATABASE IF EXISTS crm",
    "CREATE DATABASE shop CHARACTER SET utf8mb4", "CREATE DATABASE crm CHARACTER SET latin1",
    """CREATE TABLE shop.types (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
        i INT, bi BIGINT, biu BIGINT UNSIGNED, f FLOAT, d DOUBLE, dc DECIMAL(20,6), dc0 DECIMAL(5,0),
        dt DATETIME, dt3 DATETIME(3), ts TIMESTAMP(6) NULL DEFAULT NULL, tm TIME, tm2 TIME(2), dte DATE, yr YEAR,
        vc VARCHAR(100), ch CHAR(10), vb VARBINARY(20), bn BINARY(4), bl BLOB, tx TEXT, lch CHAR(100),
        en ENUM('small','medium','large'), st SET('red','green','blue'), bt BIT(10), js JSON, geo POINT,
        uu UUID, ip INET6)""",
    """CREATE TABLE shop.orders (
        id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL, qty SMALLINT NOT NULL,
        amount BIGINT, sku VARCHAR(32), price DECIMAL(12,2), created DATETIME, note TEXT)""",
    """CREATE TABLE crm.customers (
        id INT NOT NULL PRIMARY KEY, name VARCHAR(60), email VARCHAR(80), score DOUBLE, since DATE)""",
]


def at(phase: int) -> str:
    return f"SET timestamp = {T0 + 3600 * phase}"


TYPES_ROWS = [
    # id, ti, tiu, si, siu, mi, miu, i, bi, biu, f, d, dc, dc0, dt, dt3, ts, tm, tm2, dte, yr, vc, ch, vb, bn, bl,
    # tx, lch, en, st, bt, js, geo, uu, ip
    "(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, -9223372036854775808, 18446744073709551615,"
    " -1.5, 3.141592653589793, -12345678901234.123456, 99999, '1000-01-01 00:00:00', '2024-02-29 23:59:59.999',"
    " '1970-01-01 00:00:01.000001', '-838:59:59', '-01:02:03.45', '1000-01-01', 1901, 'héllo wörld ✓', 'abc',"
    " x'00ff10', x'0102', x'deadbeef', 'text\\twith\\ncontrol', REPEAT('x', 100), 'small', 'red,blue', b'1010101010',"
    " '{\"a\": [1, 2.5, null, true], \"b\": {\"c\": \"d\"}}', ST_GeomFromText('POINT(1.5 -2.25)'),"
    " '123e4567-e89b-12d3-a456-426614174000', '2001:db8::1')",
    "(2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 9223372036854775807, 0, 3.4e38, -1.7976931348623157e308,"
    " 0.000001, -99999, '9999-12-31 23:59:59', '2000-01-01 00:00:00.001', '2038-01-19 03:14:07.999999',"
    " '838:59:59', '00:00:00.01', '9999-12-31', 2155, '', '', '', x'00000000', '', '', '', 'large', '', b'0',"
    " '[]', ST_GeomFromText('POINT(0 0)'), '00000000-0000-0000-0000-000000000000', '::')",
    "(3, 0, 128, -1, 32768, -1, 8388608, -1, -1, 9223372036854775808, 0, 0, -0.5, 0, '2023-11-14 22:13:20',"
    " '2023-11-14 22:13:20.5', '2023-11-14 22:13:20.5', '12:34:56', '-00:00:00.99', '2023-11-14', 0, 'NULLs next',"
    " 'x', 'y', 'z', 'w', 'v', 'u', 'medium', 'green', b'1111111111', '\"just a string\"', NULL, NULL, '::ffff:10.0.0.1')",
]


def workload(server) -> None:
    ex = server.execute
    ex(at(0))
    for statement in SCHEMA:
        ex(statement)
    ex(at(1))
    ex("INSERT INTO shop.types VALUES " + ", ".join(TYPES_ROWS))
    ex("INSERT INTO shop.types (id) VALUES (4)")  # every other column NULL
    ex("INSERT INTO shop.types (id, bl, tx) VALUES (5, REPEAT(x'00ff', 6000), REPEAT('long text ', 500))")
    ex(at(2))
    ex("BEGIN")
    for batch in range(4):
        values = ", ".join(
            f"({100 * batch + n % 17}, {n % 9 + 1}, {n * 1000 - 50000}, 'SKU-{n:05d}', {n * 3.25 - 40:.2f},"
            f" '2023-11-{1 + n % 28:02d} {n % 24:02d}:{n % 60:02d}:00', {'NULL' if n % 5 == 0 else repr(f'note {n}')})"
            for n in range(batch * 50, batch * 50 + 50))
        ex(f"INSERT INTO shop.orders (customer_id, qty, amount, sku, price, created, note) VALUES {values}")
    ex("COMMIT")
    ex(at(3))
    ex("SET SESSION server_id = 2")
    ex("INSERT INTO crm.customers VALUES (1, 'Ann', 'ann@example.com', 4.5, '2020-01-02'),"
       " (2, 'Bob', NULL, -0.25, '2021-12-31'), (3, 'Zoë', 'zoe@example.com', NULL, NULL)")
    ex("UPDATE crm.customers SET score = score * 2 WHERE id IN (1, 2)")
    ex("SET SESSION server_id = 1")
    ex(at(4))
    ex("BEGIN")
    ex("UPDATE shop.orders SET qty = qty + 1, note = CONCAT(IFNULL(note, ''), ' (changed)') WHERE id % 4 = 0")
    ex("UPDATE shop.types SET vc = 'updated', i = i + 1, js = JSON_SET(js, '$.b.c', 'e') WHERE id = 1")
    ex("DELETE FROM crm.customers WHERE id = 3")
    ex("COMMIT")
    ex(at(5))
    ex("DELETE FROM shop.orders WHERE id > 170")
    ex("UPDATE shop.types SET tiu = 1, bl = NULL WHERE id IN (2, 5)")
    ex("DELETE FROM shop.types WHERE id = 3")
    ex(at(6))
    ex("INSERT INTO shop.orders (customer_id, qty, amount) VALUES (999, 1, NULL)")
    ex("DROP TABLE crm.customers")


VARIANTS = {
    "full-image": {"binlog_row_image": "FULL"},
    "minimal-image": {"binlog_row_image": "MINIMAL"},
    "compressed": {"log_bin_compress": "ON", "log_bin_compress_min_len": 10},
    "checksum-none": {"binlog_checksum": "NONE"},
}
DEFAULTS = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL", "log_bin_compress": "OFF",
            "log_bin_compress_min_len": 256, "binlog_checksum": "CRC32"}

with tempfile.TemporaryDirectory(prefix="mysql-samples-") as tmp:
    server = open_server(Path(tmp) / "server")
    try:
        for name, settings in VARIANTS.items():
            files = server.run_workload(workload, {**DEFAULTS, **settings}, dest=Path(tmp) / name)
            assert len(files) == 1, files
            shutil.copyfile(files[0], OUT / f"{name}.000001")
            logging.info("%s: %d bytes", name, files[0].stat().st_size)
    finally:
        server.stop()
PY
ls -l samples/mysql
du -cb samples/mysql/* | tail -1
