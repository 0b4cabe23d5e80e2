"""``view=table`` on a binlog MySQL wrote (the Sakila sample database, no row metadata): the CREATE TABLE
statements MySQL logged name every row, and each value equals the changes view's (checked against mysqlbinlog
by ``tests/mysql``), read by column position."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import spark_logsource
from spark_logsource.api import make_format
from spark_logsource.arrow.variant import decode_variant


@pytest.fixture(scope="module")
def sakila(fixtures_dir: Path) -> tuple[str, list[dict[str, Any]]]:
    path = str(fixtures_dir / "mysql-binlog" / "osheroff" / "mysql-bin.sakila.gz")
    return path, spark_logsource.read("mysql-binlog", path).to_pylist()


def _by_position(value: Any, spec: Any) -> Any:
    """The changes view's value (no metadata: ENUM index, SET bitmask) as view=table spells it (DDL names)."""
    if spec.kind == "enum" and isinstance(value, int):
        return spec.values[value - 1] if value else ""
    if spec.kind == "set" and isinstance(value, int):
        return ",".join(name for bit, name in enumerate(spec.values) if value >> bit & 1)
    return value


def test_every_sakila_table_is_named_by_its_logged_ddl(sakila: tuple[str, list[dict[str, Any]]]) -> None:
    path, changes = sakila
    tables = Counter(r["table"] for r in changes)
    assert len(tables) == 16
    for table, count in tables.items():
        fmt = make_format("mysql-binlog", path, {"view": "table", "table": f"sakila.{table}"})
        [layout] = fmt.table_view().history.layouts()
        ours = spark_logsource.read("mysql-binlog", path, view="table", table=f"sakila.{table}").to_pylist()
        theirs = [r for r in changes if r["table"] == table]
        assert len(ours) == count and all(r["_corrupt_record"] is None for r in ours)
        for o, c in zip(ours, theirs, strict=True):
            assert o["op"] == {"insert": "c", "update": "u", "delete": "d"}[c["op"]]
            assert (o["source"]["pos"], o["source"]["row_index"]) == (c["pos"], c["row_index"])
            image = decode_variant(c["after"]["value"], c["after"]["metadata"])
            for i, spec in enumerate(layout.columns):
                assert o["after"][spec.name] == _by_position(image[f"@{i + 1}"], spec), (table, spec.name)
