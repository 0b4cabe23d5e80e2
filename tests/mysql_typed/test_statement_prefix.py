"""Statements the servers log with something before the DDL: leading comments and MariaDB's ``SET STATEMENT ... FOR``
prefix. The replay reads the statement after them; without it, a layout change would be missed and later rows
named by the old layout."""

from __future__ import annotations

import pytest

from spark_logsource.mysql.table.ddl import Catalog
from spark_logsource.mysql.table.follow import is_ddl_text
from spark_logsource.mysql.table.statements import truncated_table


@pytest.mark.parametrize("prefix", [
    "SET STATEMENT max_statement_time=60 FOR ",
    "SET STATEMENT lock_wait_timeout = 5, foreign_key_checks = 0 FOR ",
    "/* a comment */ ",
    "-- a comment\n",
    "# a comment\n",
])
def test_a_prefixed_alter_changes_the_layout(prefix: str) -> None:
    catalog = Catalog()
    catalog.apply("CREATE TABLE t (id INT PRIMARY KEY, a INT)", "shop", (1, 4))
    statement = prefix + "ALTER TABLE t ADD COLUMN b VARCHAR(10)"
    assert is_ddl_text(statement)
    catalog.apply(statement, "shop", (1, 100))
    history = catalog.resolve("shop", "t")
    assert history is not None and history.versions[-1].layout is not None
    assert [c.key for c in history.versions[-1].layout.columns] == ["id", "a", "b"]


def test_a_prefixed_truncate_names_its_table() -> None:
    assert truncated_table("SET STATEMENT max_statement_time=60 FOR TRUNCATE TABLE shop.t", None) == ("shop", "t")


def test_set_statement_before_dml_is_not_ddl() -> None:
    assert not is_ddl_text("SET STATEMENT max_statement_time=60 FOR INSERT INTO t VALUES (1)")
