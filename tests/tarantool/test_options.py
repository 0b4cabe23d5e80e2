"""tarantool-xlog option values: ranges checked when the reader is made, corrupt rows kept by option filters."""

from __future__ import annotations

import pytest

import spark_logsource
from spark_logsource.errors import OptionError
from spark_logsource.tarantool.format import TarantoolXlogFormat

CRC_BAD = "tarantool/test/xlog/reader/crc.bad.xlog"


@pytest.mark.parametrize(("option", "value"), [("spaceId", "99999999999"), ("replicaId", "-1"),
                                               ("fromLsn", str(2**64)), ("toLsn", "-5"),
                                               ("columnNameOfCorruptRecord", "lsn"), ("types", "INSRT")])
def test_bad_values_fail_when_the_reader_is_made(option, value) -> None:
    with pytest.raises(OptionError, match=option):
        TarantoolXlogFormat({"paths": ["/nowhere"], option: value})


def test_option_filters_keep_corrupt_record_rows(fixtures_dir) -> None:
    path = str(fixtures_dir / CRC_BAD)
    full = spark_logsource.read("tarantool-xlog", path)
    corrupt = [o for o, m in zip(full.column("offset").to_pylist(), full.column("_corrupt_record").to_pylist(),
                                 strict=True) if m is not None]
    assert corrupt, "the fixture has a block with a bad checksum"
    filtered = spark_logsource.read("tarantool-xlog", path, spaceId=512, fromLsn=0)
    got = [o for o, m in zip(filtered.column("offset").to_pylist(), filtered.column("_corrupt_record").to_pylist(),
                             strict=True) if m is not None]
    assert got == corrupt
    good = [s for s, m in zip(filtered.column("space_id").to_pylist(),
                              filtered.column("_corrupt_record").to_pylist(), strict=True) if m is None]
    assert good and set(good) == {512}
