"""Shared helpers of the binlog event tests: read a file whole with our reader into Python rows."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from spark_logsource.mysql.read.reader import BinlogReadOptions, binlog_schema, iter_file_batches
from spark_logsource.options import CommonOptions, ParseMode

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "mysql-binlog"


def manifest() -> list[dict[str, Any]]:
    return json.loads((FIXTURE_DIR / "MANIFEST.json").read_text())


def fixture_paths() -> list[str]:
    return [entry["path"][2:] for entry in manifest()]


def read_table(path: str | Path, *, view: str = "events", row_format: str = "json", start: int = 0,
               end: int | None = None, mode: ParseMode = ParseMode.PERMISSIVE, source: Any = None,
               batch_size: int = 8192, **options: Any) -> pa.Table:
    predicates = options.pop("predicates", ())
    common = CommonOptions(mode=mode, batch_size=batch_size,
                           verify_checksums=options.pop("verify_checksums", True))
    opts = BinlogReadOptions(view=view, row_format=row_format, common=common, **options)
    batches = list(iter_file_batches(source, str(path), start=start, end=end, options=opts, predicates=predicates))
    return pa.Table.from_batches(batches, schema=binlog_schema(view, row_format, common.corrupt_column_or_none))


def read_rows(path: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
    rows = read_table(path, **kwargs).to_pylist()
    for row in rows:
        for name in ("data", "before", "after"):
            if isinstance(row.get(name), str):
                row[name] = json.loads(row[name])
    return rows


def top_level(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events of the file itself (not those inside a TRANSACTION_PAYLOAD)."""
    return [r for r in rows if not (isinstance(r.get("data"), dict) and "payload_index" in r["data"])]


def plain_copy(name: str, tmp_dir: Path) -> Path:
    """The fixture as a plain file (``.gz`` inflated into ``tmp_dir``) for tools that cannot read gzip."""
    path = FIXTURE_DIR / name
    if name.endswith(".gz"):
        out = tmp_dir / Path(name).name[:-3]
        out.write_bytes(gzip.decompress(path.read_bytes()))
        return out
    return path
