"""Options, pruning and pushdown of the ``yugabyte-wal`` format, on the fixture WALs."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import spark_logsource
from spark_logsource.errors import OptionError
from spark_logsource.filters import Predicate
from spark_logsource.yugabyte.format import YugabyteWalFormat
from spark_logsource.yugabyte.proto import decode, read_varint, signed64
from spark_logsource.yugabyte.reader import walk_segment
from tests.yugabyte.conftest import WAL_FIXTURES, Expected

ORDERS_T1 = "5ba68dd7a2803d1dd057e02036f41959"
ORDERS_TABLE = "00004000000030008000000000004006"


def _read(path: Any, **options: Any) -> list[dict[str, Any]]:
    return spark_logsource.read("yugabyte-wal", str(path), mode="DROPMALFORMED", **options).to_pylist()


def test_table_and_tablet_options_prune_tablets_before_reading(wal_dir: Path) -> None:
    fmt = YugabyteWalFormat({"paths": [str(wal_dir)], "tabletId": ORDERS_T1})
    tablets = fmt.tablets(fmt.list_files())
    assert [t.tablet_id for t in tablets] == [ORDERS_T1]
    assert [Path(u).name for u, _ in tablets[0].segments] == ["wal-000000001", "wal-000000002"]
    rows = _read(wal_dir, tableId=ORDERS_TABLE)
    assert {r["table_id"] for r in rows} == {ORDERS_TABLE}
    assert len({r["tablet_id"] for r in rows}) == 2
    pushed = fmt.tablets(fmt.list_files(), [Predicate("table_id", "=", "nope")])
    assert pushed == []


def test_op_types_and_index_range(wal_dir: Path, expected_segments: list[Expected]) -> None:
    rows = _read(wal_dir / f"table-{ORDERS_TABLE}" / f"tablet-{ORDERS_T1}", opTypes="write, no_op",
                 fromIndex=5, toIndex=13)
    want = sorted((e["op_id"]["term"], e["op_id"]["index"]) for x in expected_segments
                  if x.segment["tablet_id"] == ORDERS_T1 for e in x.entries
                  if e["op_type"] in ("WRITE_OP", "NO_OP") and 5 <= e["op_id"]["index"] < 13
                  and e["superseded_by"] is None)
    assert sorted((r["term"], r["index"]) for r in rows) == want and len(want) == 6
    with pytest.raises(OptionError, match="opTypes"):
        YugabyteWalFormat({"paths": [str(wal_dir)], "opTypes": "BOGUS_OP"})
    with pytest.raises(OptionError, match="view"):
        YugabyteWalFormat({"paths": [str(wal_dir)], "view": "rows"})
    with pytest.raises(OptionError, match="opTypes"):
        YugabyteWalFormat({"paths": [str(wal_dir)], "view": "writes", "opTypes": "WRITE_OP"})
    with pytest.raises(OptionError, match="unknown option"):
        YugabyteWalFormat({"paths": [str(wal_dir)], "fromIndexx": "1"})


def test_segments_outside_the_index_range_are_not_read(tmp_path: Path) -> None:
    """Damage every entry of the first (closed) segment: a range past its footer's max index never reads it."""
    src = WAL_FIXTURES / f"table-{ORDERS_TABLE}" / f"tablet-{ORDERS_T1}"
    dst = tmp_path / f"table-{ORDERS_TABLE}" / f"tablet-{ORDERS_T1}"
    shutil.copytree(src, dst)
    for p in dst.glob("*.jsonl"):
        p.unlink()
    first = dst / "wal-000000001"
    walk = walk_segment(str(first))
    assert walk.info.footer["max_replicate_index"] == 12
    data = bytearray(first.read_bytes())
    for off, _ in walk.batches:
        data[off + 14] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(spark_logsource.CorruptDataError):
        spark_logsource.read("yugabyte-wal", str(dst), mode="FAILFAST")
    rows = spark_logsource.read("yugabyte-wal", str(dst), mode="FAILFAST", fromIndex=13).to_pylist()
    assert [r["index"] for r in rows] == [13, 14, 15]
    fmt = YugabyteWalFormat({"paths": [str(dst)], "mode": "FAILFAST"})
    split, = fmt.plan(fmt.list_files(), [Predicate("index", ">", 12)])
    assert [r["index"] for b in fmt.read_split(split, [Predicate("index", ">", 12)]) for r in b.to_pylist()] == \
        [13, 14, 15]


def test_pushable_columns_depend_on_the_view(wal_dir: Path) -> None:
    ops = YugabyteWalFormat({"paths": [str(wal_dir)]})
    writes = YugabyteWalFormat({"paths": [str(wal_dir)], "view": "writes"})
    assert ops.can_push(Predicate("op_type", "=", "WRITE_OP"))
    assert not writes.can_push(Predicate("op_type", "=", "WRITE_OP"))
    assert writes.can_push(Predicate("index", ">=", 3))
    assert not ops.can_push(Predicate("details", "is_null"))


def test_hybrid_time_predicate_is_exact(wal_dir: Path, expected_segments: list[Expected]) -> None:
    hts = sorted(e["hybrid_time"]["value"] for x in expected_segments for e in x.entries)
    cut = hts[len(hts) // 2]
    fmt = YugabyteWalFormat({"paths": [str(wal_dir)], "mode": "DROPMALFORMED", "includeSuperseded": "true"})
    preds = [Predicate("hybrid_time", ">=", cut)]
    rows = [r for s in fmt.plan(fmt.list_files(), preds) for b in fmt.read_split(s, preds) for r in b.to_pylist()]
    assert rows and all(r["hybrid_time"] >= cut for r in rows)
    everything = _read(wal_dir, includeSuperseded="true")
    assert len(rows) == sum(1 for r in everything if r["hybrid_time"] >= cut)


def test_a_single_segment_file_can_be_named(wal_dir: Path) -> None:
    path = wal_dir / f"table-{ORDERS_TABLE}" / f"tablet-{ORDERS_T1}" / "wal-000000002"
    rows = _read(path)
    assert [r["index"] for r in rows] == [13, 14, 15]
    assert {r["segment_seqno"] for r in rows} == {2}


# ---- a property test of the wire reader against a tiny writer of our own (in addition to the fixtures) ------

def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_varint_round_trip(value: int) -> None:
    data = _varint(value)
    decoded, pos = read_varint(data, 0, len(data))
    assert pos == len(data) and signed64(decoded) == value


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), st.integers(min_value=0, max_value=(1 << 63) - 1),
       st.binary(max_size=40))
def test_op_id_and_footer_round_trip(term: int, index: int, junk: bytes) -> None:
    from spark_logsource.yugabyte.messages import OP_ID

    unknown = _varint((7 << 3) | 2) + _varint(len(junk)) + junk
    data = _varint(1 << 3) + _varint(term) + unknown + _varint(2 << 3) + _varint(index) + \
        _varint((9 << 3) | 1) + struct.pack("<Q", 5)
    assert decode(data, OP_ID) == {"term": term, "index": index, "field_7": junk.hex(), "field_9": 5}


def test_json_value_format_matches_the_variant_columns(wal_dir: Path) -> None:
    import json

    from spark_logsource.arrow.variant import decode_variant

    for view in ("operations", "writes"):
        as_json = _read(wal_dir, view=view, valueFormat="json", includeSuperseded="true")
        as_variant = _read(wal_dir, view=view, includeSuperseded="true")
        assert len(as_json) == len(as_variant) > 20
        for j, v in zip(as_json, as_variant, strict=True):
            for name in ("details", "doc_key", "value"):
                if name not in j:
                    continue
                if v[name] is None:
                    assert j[name] is None
                else:
                    assert json.loads(j[name]) == _plain(decode_variant(v[name]["value"], v[name]["metadata"]))


def _plain(value: Any) -> Any:
    """A decoded variant as JSON data (integers beyond int64 come back from variants as scale-0 decimals)."""
    from decimal import Decimal

    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    return value
