"""``spark_logsource.register``: idempotent, and tolerant of Spark's own auto-registration of the same names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.spark import compat, data_sources, register_all

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: One real-server file (or directory) per file format.
FILE_INPUTS = {
    "tarantool-xlog": FIXTURES / "tarantool/test/xlog/reader/v13",
    "mysql-binlog": FIXTURES / "mysql-binlog/osheroff/mysql-bin.checksum-crc32",
    "memcached-tap": FIXTURES / "memcached-tap/couchbase-1.8.1-dump.tap",
    "yugabyte-wal": FIXTURES / "yugabyte-wal/wals/table-0000400000003000800000000000400e",
}
#: The live formats need a server to read; their schema is known without one (no connection at load).
LIVE_URIS = {"tarantool-replication": "tarantool://127.0.0.1:9", "mysql-replication": "mysql://cdc@127.0.0.1:9"}


def test_every_data_source_is_covered_here() -> None:
    assert {cls.name() for cls in data_sources()} == set(FILE_INPUTS) | set(LIVE_URIS)


def test_register_twice_then_read_every_format(spark: Any) -> None:
    spark_logsource.register(spark)  # the session fixture registered once already: this is the second call
    spark_logsource.register(spark)
    for name, path in FILE_INPUTS.items():
        got = spark.read.format(name).load(str(path)).count()
        assert got == spark_logsource.read(name, str(path)).num_rows, name
        assert got > 0, name
    for name, uri in LIVE_URIS.items():
        schema = spark.read.format(name).option("uri", uri).load().schema
        assert [f.name for f in schema.fields] == spark_logsource.api.make_format(name, [], {"uri": uri}) \
            .schema().names, name


class _SparkRefusal(Exception):
    """Stands for the error pyspark 4.0 raises from ``spark.dataSource.register`` for an auto-registered name
    (a captured ``AnalysisException`` whose condition is DATA_SOURCE_ALREADY_EXISTS)."""

    def __init__(self, condition: str) -> None:
        super().__init__(f"[{condition}] Data source 'x' already exists in the registry.")
        self.condition = condition

    def getCondition(self) -> str:
        return self.condition


class _Registry:
    def __init__(self, refuse: dict[str, str]) -> None:
        self.refuse = refuse
        self.registered: list[str] = []

    def register(self, cls: Any) -> None:
        if cls.name() in self.refuse:
            raise _SparkRefusal(self.refuse[cls.name()])
        self.registered.append(cls.name())


class _Session:
    def __init__(self, refuse: dict[str, str]) -> None:
        self.dataSource = _Registry(refuse)


def test_already_exists_refusal_is_kept_as_success_other_errors_are_not() -> None:
    auto = {"tarantool-xlog": compat.ALREADY_EXISTS_CONDITION, "mysql-binlog": compat.ALREADY_EXISTS_CONDITION}
    session = _Session(auto)
    register_all(session)
    register_all(session)
    names = [cls.name() for cls in data_sources()]
    assert session.dataSource.registered == [n for n in names if n not in auto] * 2
    with pytest.raises(_SparkRefusal, match="INVALID_DATA_SOURCE"):
        register_all(_Session({"memcached-tap": "INVALID_DATA_SOURCE"}))


def test_refusal_is_recognised_by_condition_or_by_message() -> None:
    assert compat.is_already_registered_error(_SparkRefusal("DATA_SOURCE_ALREADY_EXISTS"))
    assert not compat.is_already_registered_error(_SparkRefusal("DATA_SOURCE_NOT_FOUND"))
    assert compat.is_already_registered_error(RuntimeError("[DATA_SOURCE_ALREADY_EXISTS] Data source 'a' exists"))
    assert not compat.is_already_registered_error(RuntimeError("boom"))
