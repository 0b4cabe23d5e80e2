"""Every column type decoded from binlogs written by a real MariaDB 10.11, compared value by value with
``mariadb-binlog -vv --base64-output=decode-rows`` (tests/support/oracle/mariadb_binlog.py), under
binlog_row_metadata FULL / NO_LOG, binlog_row_image FULL / MINIMAL, log_bin_compress ON and
binlog_checksum NONE."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from tests.support.mysql_types import DEFAULTS, SETTINGS, types_workload
from tests.support.oracle.mariadb_binlog import compare_file, walk_rows_events


@pytest.fixture(scope="module")
def workload_files(mariadb, tmp_path_factory) -> dict[str, list[Path]]:
    """One binlog per settings combination (made once for the module)."""
    files: dict[str, list[Path]] = {}
    for name, settings in SETTINGS.items():
        db = f"w_{name}"
        mariadb.execute(f"CREATE DATABASE {db}")
        files[name] = mariadb.run_workload(lambda srv, db=db: types_workload(srv, db), settings,
                                           dest=tmp_path_factory.mktemp(name))
        for key, value in DEFAULTS.items():
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
