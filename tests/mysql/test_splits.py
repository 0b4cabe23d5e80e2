"""Split property: on real binlogs, the union of the reads of consecutive byte ranges equals the whole-file read,
event for event (view=events) and row for row (view=changes), for many split sizes."""

from __future__ import annotations

import pytest

from tests.support.mysql_events import FIXTURE_DIR, fixture_paths, read_table

PLAIN_FILES = [n for n in fixture_paths() if not n.endswith(".gz")]
SPLIT_SIZES = (1, 7, 64, 150, 333, 1000, 4096, 20_000)


def _split_union(name: str, view: str, size: int) -> list[dict]:
    path = FIXTURE_DIR / name
    total = path.stat().st_size
    rows: list[dict] = []
    for start in range(0, total, size):
        end = start + size if start + size < total else None
        rows.extend(read_table(path, view=view, start=start, end=end).to_pylist())
    return rows


@pytest.mark.parametrize("view", ["events", "changes"])
@pytest.mark.parametrize("name", PLAIN_FILES)
def test_union_of_splits_equals_whole_file(name: str, view: str) -> None:
    whole = read_table(FIXTURE_DIR / name, view=view).to_pylist()
    assert whole or view == "changes"
    file_size = (FIXTURE_DIR / name).stat().st_size
    sizes = [s for s in SPLIT_SIZES if file_size / s <= 400]
    for size in sizes:
        assert _split_union(name, view, size) == whole, f"split size {size}"


def test_split_starting_mid_transaction_reads_from_next_transaction() -> None:
    name = "apecloud/mysql-bin.000080"
    whole = read_table(FIXTURE_DIR / name).to_pylist()
    table_map = next(r for r in whole if r["event_type"] == "TABLE_MAP")
    part = read_table(FIXTURE_DIR / name, start=table_map["pos"]).to_pylist()
    assert part[0]["event_type"] == "GTID" and part[0]["pos"] > table_map["pos"]
    assert part == [r for r in whole if r["pos"] >= part[0]["pos"]]
