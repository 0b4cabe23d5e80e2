"""view=state (Arrow API) against box.space.X:select() taken by the real tarantool at three LSNs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import spark_logsource
from spark_logsource.errors import OptionError
from tests.support.tarantool_typed import plain_row, row_mismatches

SPACES = {"users": ("id",), "kv": ("ns", "k")}


def _state(path: Path | list[str], space: str, **options) -> list[dict]:
    table = spark_logsource.read("tarantool-xlog", path if isinstance(path, list) else str(path), view="state",
                                 space=space, **options)
    return [plain_row(r) for r in table.to_pylist()]


def _check(rows: list[dict], capture, space: str) -> None:
    assert [r for r in rows if r["_corrupt_record"]] == []
    fmt = capture.formats[space]
    key_names = SPACES[space]
    ours = {tuple(r[k] for k in key_names): r for r in rows}
    assert len(ours) == len(rows) == len(capture.tuples[space]), (capture.tag, space, len(rows))
    for tup in capture.tuples[space]:
        key = tuple(tup[i] for i in range(len(key_names)))
        assert key in ours, (capture.tag, space, key)
        assert row_mismatches(ours[key], tup, fmt) == [], (capture.tag, space, key)


@pytest.mark.parametrize("space", sorted(SPACES))
def test_state_as_of_each_capture_equals_select(typed_workload, captures, space):
    for capture in captures:
        rows = _state(typed_workload.directory, space, asOfLsn=capture.lsn)
        _check(rows, capture, space)
    # without asOfLsn: the end of the log, which is the last capture
    _check(_state(typed_workload.directory, space), captures[-1], space)


def test_state_replayed_from_the_first_snapshot(typed_workload, captures, tmp_path):
    """Without the middle snapshot every capture is rebuilt by replaying the xlogs from the bootstrap snapshot."""
    for f in typed_workload.files:
        if f.suffix != ".snap" or f.name.startswith("00000000000000000000"):
            shutil.copy(f, tmp_path / f.name)
    assert len(list(tmp_path.glob("*.snap"))) == 1
    for capture in captures:
        for space in SPACES:
            _check(_state(tmp_path, space, asOfLsn=capture.lsn, statePartitions=3), capture, space)


def test_partitions_split_the_keys_and_agree(typed_workload):
    fmt = spark_logsource.api.make_format("tarantool-xlog", str(typed_workload.directory),
                                          {"view": "state", "space": "kv", "statePartitions": 3})
    splits = fmt.plan(fmt.list_files())
    assert len(splits) == 3
    per_split = [[(r["ns"], r["k"]) for r in b.to_pylist()] for s in splits for b in fmt.read_split(s)]
    keys = [k for part in per_split for k in part]
    assert len(keys) == len(set(keys))
    one = _state(typed_workload.directory, "kv", statePartitions=1)
    assert sorted(keys) == sorted((r["ns"], r["k"]) for r in one)


def test_unknown_space_and_bad_options(typed_workload):
    with pytest.raises(OptionError, match="users"):
        _state(typed_workload.directory, "no_such_space")
    with pytest.raises(OptionError, match="space"):
        spark_logsource.read("tarantool-xlog", str(typed_workload.directory), view="state")
    with pytest.raises(OptionError, match="asOfLsn"):
        spark_logsource.read("tarantool-xlog", str(typed_workload.directory), view="space", space="users",
                             asOfLsn=5)


def test_ddl_history_rename_truncate_format_change_and_drop(tarantool_workloads):
    """The ddl workload: create, format, rename, truncate, a format change that turns a string field into any,
    then drop — the typed views follow each step."""
    directory = str(tarantool_workloads["ddl"].directory)
    changes = spark_logsource.read("tarantool-xlog", directory, view="space", space="ddl_a")
    assert changes.schema.field("v").metadata == {b"variant": b"true"}  # string, then any: a variant column
    assert changes.schema.field("id").type == "int64" and "w" in changes.schema.names
    rows = [plain_row(r) for r in changes.to_pylist()]
    assert [(r["op"], r["id"], r["v"]) for r in rows] == [
        ("INSERT", 1, "x"), ("TRUNCATE", None, None), ("INSERT", 2, "after truncate")]
    assert rows[0]["seq"] < rows[1]["seq"] < rows[2]["seq"]
    first, second = rows[0]["lsn"], rows[2]["lsn"]
    # by its later name, as of each insert: the truncate between them empties the space
    assert [r["id"] for r in _state(tarantool_workloads["ddl"].directory, "ddl_a_renamed", asOfLsn=first)] == [1]
    assert [r["id"] for r in _state(tarantool_workloads["ddl"].directory, "ddl_a", asOfLsn=second - 1)] == []
    assert [r["id"] for r in _state(tarantool_workloads["ddl"].directory, "ddl_a", asOfLsn=second)] == [2]
    with pytest.raises(OptionError, match="does not exist"):  # dropped at the end of the log
        _state(tarantool_workloads["ddl"].directory, "ddl_a")
